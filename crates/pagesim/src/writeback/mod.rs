//! Dirty pages and their writeback: the dirty limits, the flusher's inode queues, the
//! order in which the flusher picks inodes, and the state of dirty throttling.
//!
//! Models the state of include/linux/backing-dev-defs.h `struct bdi_writeback` (the inode
//! lists `b_dirty`, `b_io`, `b_more_io`, the work list, the bandwidth estimates) and the
//! writeback fields of `struct inode` (`dirtied_when`, `i_state`'s I_DIRTY_PAGES), with the
//! list operations of fs/fs-writeback.c that touch only them (`__mark_inode_dirty`'s list
//! move, `redirty_tail`, `requeue_io`, `queue_io` / `move_expired_inodes`). The paths that
//! write pages (`wb_writeback`, `writeback_sb_inodes`, `write_cache_pages`, pageout from
//! reclaim, `balance_dirty_pages`) submit I/O and wake threads, so they are in
//! engine/fs_writeback.rs and engine/page_writeback.rs.
//!
//! DOC: one flusher per wb: each backing device has its root wb, and with cgroup writeback
//! (≥4.2 on the cgroup v2 hierarchy) each memcg has one more per device, with its own inode
//! lists, works, bandwidth estimates and share of the memcg's completions; an inode belongs
//! to the wb of the memcg of the task that first dirtied it (`inode_attach_wb`; the kernel's
//! switch of an inode to the memcg that now dirties most of it is not modelled). A file's
//! inode is on at most one of the three lists of its wb:
//!
//! ```text
//!   b_dirty    head: newest dirtied ... tail: oldest dirtied   (__mark_inode_dirty adds at
//!              the head; dirtied_when does not change while the inode stays dirty)
//!   b_io       the dispatch queue, consumed from the tail       (queue_io fills it)
//!   b_more_io  inodes that still had dirty pages when their chunk ran out (requeue_io)
//! ```
//!
//! `queue_io(cutoff)` moves `b_more_io` and the inodes of `b_dirty` dirtied at or before
//! `cutoff` (walking from the oldest, stopping at the first younger one) to `b_io`. Which
//! cutoff a round uses, and whether a round refills `b_io` that still holds inodes, is the
//! [`order`] policy: the 2.6.35 flusher, Wu Fengguang's "write older pages first" series
//! (the seed's `flusholdest`), and the modern flusher.

pub mod order;
pub mod thresholds;
pub mod throttle;

use std::collections::VecDeque;

use crate::ids::{DevId, FileId, WbId};
pub use order::{WbOrder, WritebackOrder};
pub use thresholds::{DirtyLimits, DirtySysctls, Dirtyable, Limit, MemoryState};

/// Which list of its wb an inode is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WbList {
    None,
    Dirty,
    Io,
    MoreIo,
}

/// The writeback state of one file's inode.
#[derive(Clone, Copy, Debug)]
pub struct Inode {
    /// When it went from clean to dirty (`inode->dirtied_when`), ns; meaningful while
    /// dirty.
    pub dirtied_when: u64,
    /// I_DIRTY_PAGES: it has dirty pages (set by the first page dirtied, cleared when
    /// writeback leaves none).
    pub dirty: bool,
    pub list: WbList,
    /// The wb it belongs to (`inode->i_wb`), from its first dirtying on.
    pub wb: Option<WbId>,
}

/// Why the flusher is writing (`enum wb_reason`, and the kind of `struct wb_writeback_work`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkKind {
    /// Periodic writeback of expired inodes (`wb_check_old_data_flush`, `for_kupdate`).
    Kupdate,
    /// Over the background threshold (`wb_check_background_flush`, `for_background`).
    Background,
    /// `wakeup_flusher_threads` from reclaim (`WB_REASON_VMSCAN`, and the seed's
    /// flushforward kick), for `nr_pages`.
    Vmscan,
    /// 4.15+ `wb_check_start_all`: the one writeback of all dirty pages that a request to
    /// write everything (reclaim's, `WB_REASON_VMSCAN`) left pending in the wb's
    /// WB_start_all bit ([`Wb::start_all`]); the bit is cleared when it ends.
    StartAll,
    /// sync(2) or a dirtier's explicit request (`WB_SYNC_NONE` over all inodes).
    Sync,
    /// 2.6.35 `balance_dirty_pages`: a throttled dirtier writes its device's inodes itself
    /// (`writeback_inodes_wbc`), through the flusher's lists.
    Throttle,
}

/// One unit of flusher work (`struct wb_writeback_work`).
#[derive(Clone, Copy, Debug)]
pub struct WbWork {
    pub kind: WorkKind,
    /// Pages still to write (`work->nr_pages`); `u64::MAX` for "as many as needed".
    pub nr_pages: u64,
    /// When the work began (`wb_writeback`'s start, for cutoffs computed once).
    pub start_ns: u64,
    /// Each file is written from its `writeback_index` (range_cyclic), else from its first
    /// page (2.6.35's `wakeup_flusher_threads` work).
    pub range_cyclic: bool,
}

impl WorkKind {
    /// The `reason` the writeback tracepoints print.
    pub fn reason(self) -> crate::trace::WbReason {
        match self {
            WorkKind::Kupdate => crate::trace::WbReason::Periodic,
            WorkKind::Background => crate::trace::WbReason::Background,
            WorkKind::Vmscan | WorkKind::StartAll => crate::trace::WbReason::Vmscan,
            WorkKind::Sync => crate::trace::WbReason::Sync,
            WorkKind::Throttle => crate::trace::WbReason::Throttle,
        }
    }
}

/// Whether a flusher is at work or asleep, and when it is due to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WbState {
    /// Asleep with nothing due: no dirty inode, or periodic writeback off.
    Idle,
    /// Asleep, woken at this time (a wakeup or the periodic timer).
    Pending(u64),
    /// Running, yielded, or sleeping for a device request: it looks for work again itself.
    Active,
}

/// A backing device's writeback state for one memcg (`struct bdi_writeback`): the
/// device's root wb, or a memcg's with cgroup writeback.
#[derive(Debug)]
pub struct Wb {
    pub dev: DevId,
    /// The memcg whose inodes it writes (0: the root wb).
    pub memcg: u32,
    /// Its share of its memcg's completed writeback (`wb->memcg_completions`).
    pub memcg_completions: throttle::FlexLocal,
    /// Front is the list head.
    pub b_dirty: VecDeque<FileId>,
    pub b_io: VecDeque<FileId>,
    pub b_more_io: VecDeque<FileId>,
    /// Queued works (`wb->work_list`), oldest first.
    pub work_list: VecDeque<WbWork>,
    /// The work the flusher is in the middle of.
    pub cur: Option<WbWork>,
    /// WB_start_all (4.15+): a writeback of everything is pending or under way; further
    /// requests for one are dropped until it ends.
    pub start_all: bool,
    /// When the last kupdate round ran (`wb->last_old_flush`), ns.
    pub last_old_flush: u64,
    pub state: WbState,
    /// Since it was last woken, the flusher has made its kupdate check (bit 0) and its
    /// background check (bit 1): `wb_do_writeback` makes each once per wakeup, so a flusher
    /// that finds nothing it can write (every dirty page already under writeback) sleeps
    /// instead of trying again; a wakeup while it works (`wb_wakeup` requeues its work item)
    /// allows them again.
    pub periodic_checked: u8,
    /// Write bandwidth and dirty rate-limit estimates.
    pub bw: throttle::Bandwidth,
    /// Pages of this device whose writeback ended, and pages dirtied on it (cumulative:
    /// `WB_WRITTEN`, `WB_DIRTIED`).
    pub written: u64,
    pub dirtied: u64,
    /// Its dirty pages and pages under writeback (`WB_RECLAIMABLE`, `WB_WRITEBACK`).
    pub nr_reclaimable: u64,
    pub nr_writeback: u64,
    /// A dirtier found the device over its limit (`bdi->dirty_exceeded`): dirtiers call
    /// `balance_dirty_pages` more often until one leaves it under.
    pub dirty_exceeded: bool,
    /// Its share of completed writeback (`bdi->completions`): the floating proportion's
    /// (≤3.4) and the flexible one's (≥3.5, `wb->completions`).
    pub completions: throttle::PropLocal,
    pub flex_completions: throttle::FlexLocal,
    /// The flusher thread's CPU time, ns.
    pub cpu_ns: u64,
    /// Pages written through the inode lists (by the flusher or a throttled dirtier), and
    /// that count when the flusher's current work began (for `writeback_written`).
    pub nr_submitted: u64,
    pub work_start_written: u64,
}

impl Wb {
    pub fn new(dev: DevId, memcg: u32) -> Self {
        Wb {
            dev,
            memcg,
            memcg_completions: throttle::FlexLocal::default(),
            b_dirty: VecDeque::new(),
            b_io: VecDeque::new(),
            b_more_io: VecDeque::new(),
            work_list: VecDeque::new(),
            cur: None,
            start_all: false,
            last_old_flush: 0,
            state: WbState::Idle,
            periodic_checked: 0,
            bw: throttle::Bandwidth::default(),
            written: 0,
            dirtied: 0,
            nr_reclaimable: 0,
            nr_writeback: 0,
            dirty_exceeded: false,
            completions: throttle::PropLocal::default(),
            flex_completions: throttle::FlexLocal::default(),
            cpu_ns: 0,
            nr_submitted: 0,
            work_start_written: 0,
        }
    }

    /// `writeback_in_progress`: the flusher has work under way or queued (a pending
    /// start-all writeback included).
    pub fn writeback_in_progress(&self) -> bool {
        self.cur.is_some() || !self.work_list.is_empty() || self.start_all
    }

    /// The device's dirty and writeback pages (`wb_dirty` of the throttle).
    pub fn wb_dirty(&self) -> u64 {
        self.nr_reclaimable + self.nr_writeback
    }

    /// `wb_has_dirty_io`: some inode is on one of the lists.
    pub fn has_dirty_io(&self) -> bool {
        !(self.b_dirty.is_empty() && self.b_io.is_empty() && self.b_more_io.is_empty())
    }

    fn list_mut(&mut self, l: WbList) -> Option<&mut VecDeque<FileId>> {
        match l {
            WbList::None => None,
            WbList::Dirty => Some(&mut self.b_dirty),
            WbList::Io => Some(&mut self.b_io),
            WbList::MoreIo => Some(&mut self.b_more_io),
        }
    }
}

/// The writeback subsystem's state.
pub(crate) struct Writeback {
    pub(crate) sysctl: DirtySysctls,
    /// The profile's version switches of writeback.
    pub(crate) rules: crate::profile::WritebackRules,
    /// Which inodes the flusher writes next.
    pub(crate) order: WbOrder,
    /// Per file (`FileId`), its inode's writeback state.
    pub(crate) inodes: Vec<Inode>,
    /// The wbs (`WbId`): each device's root wb, then with cgroup writeback one per memcg
    /// (1..) and device.
    pub(crate) wbs: Vec<Wb>,
    pub(crate) ndevs: usize,
    /// Cgroup writeback (`inode_cgwb_enabled`: ≥4.2 with the memory controller on cgroup
    /// v2): per-memcg wbs and dirty domains.
    pub(crate) cgwb: bool,
    /// Per memcg (index 0, the root, unused), its dirty domain's state (`memcg->cgwb_domain`).
    pub(crate) domains: Vec<MemcgDomain>,
    /// Devices' shares of completed writeback (`vm_completions`) and tasks' shares of pages
    /// dirtied (`vm_dirties`, per task in `task_dirties`), for the 2.6.35 limits.
    pub(crate) completions: throttle::Prop,
    /// ≥3.5: the global domain's completions as a flexible proportion
    /// (`global_wb_domain.completions`).
    pub(crate) flex_completions: throttle::FlexProp,
    pub(crate) dirties: throttle::Prop,
    pub(crate) task_dirties: Vec<throttle::PropLocal>,
    /// 2.6.35: pages dirtied on each CPU since a task there last called
    /// `balance_dirty_pages` (`bdp_ratelimits`), and the count that makes it call.
    pub(crate) bdp_ratelimits: Vec<u64>,
    pub(crate) ratelimit_pages: u64,
    /// 3.2+: the global domain's `dirty_limit` (follows the hard limit down slowly) and
    /// when it was last updated.
    pub(crate) dirty_limit: u64,
    pub(crate) dirty_limit_tstamp: u64,
}

/// A memcg's dirty domain (`struct wb_domain` of `memcg->cgwb_domain`): the memcg's wbs'
/// completions and its slowly following dirty limit.
#[derive(Debug, Default)]
pub(crate) struct MemcgDomain {
    pub(crate) completions: throttle::FlexProp,
    pub(crate) dirty_limit: u64,
    pub(crate) dirty_limit_tstamp: u64,
}

/// The machine the writeback state is for.
pub(crate) struct Machine {
    pub(crate) nfiles: usize,
    pub(crate) ndevs: usize,
    /// Memcgs, the root included.
    pub(crate) nmemcgs: usize,
    pub(crate) ntasks: usize,
    pub(crate) ncpus: usize,
    /// All of memory, pages: its dirty limit at boot gives the proportions' period.
    pub(crate) total_pages: u64,
    /// Cgroup writeback is on (the profile has it and the memcgs are on cgroup v2).
    pub(crate) cgwb: bool,
}

impl Writeback {
    /// The writeback state of machine `m`.
    pub(crate) fn new(sysctl: DirtySysctls, rules: crate::profile::WritebackRules, order: WbOrder, m: Machine) -> Self {
        let Machine { nfiles, ndevs, nmemcgs, ntasks, ncpus, total_pages, cgwb } = m;
        let per_memcg = if cgwb { nmemcgs } else { 1 };
        let wbs = (0..per_memcg as u32).flat_map(|mc| (0..ndevs as u32).map(move |d| Wb::new(DevId(d), mc))).collect();
        let mut w = Writeback {
            sysctl,
            rules,
            order,
            inodes: vec![Inode { dirtied_when: 0, dirty: false, list: WbList::None, wb: None }; nfiles],
            wbs,
            ndevs,
            cgwb,
            domains: (0..if cgwb { nmemcgs } else { 0 }).map(|_| MemcgDomain::default()).collect(),
            completions: throttle::Prop::default(),
            flex_completions: throttle::FlexProp::default(),
            dirties: throttle::Prop::default(),
            task_dirties: vec![throttle::PropLocal::default(); ntasks],
            bdp_ratelimits: vec![0; ncpus],
            ratelimit_pages: throttle::ratelimit_pages_2_6_35(total_pages, ncpus as u64),
            dirty_limit: 0,
            dirty_limit_tstamp: 0,
        };
        // calc_period_shift from the dirty limit of all memory being dirtyable.
        let shift = throttle::Prop::period_shift(w.limits(total_pages).dirty);
        w.completions.shift = shift;
        w.dirties.shift = shift;
        w
    }

    /// The wb of device `dev` for memcg `memcg`: the memcg's own with cgroup writeback,
    /// else the device's root wb.
    pub(crate) fn wb_of(&self, dev: DevId, memcg: u32) -> WbId {
        if self.cgwb {
            WbId(memcg * self.ndevs as u32 + dev.0)
        } else {
            WbId(dev.0)
        }
    }

    /// Moves inode `fi` of `wb` from its list to the head of list `to` (`list_move`).
    fn move_to_head(&mut self, wb: WbId, fi: FileId, to: WbList) {
        let from = self.inodes[fi.idx()].list;
        let w = &mut self.wbs[wb.idx()];
        if let Some(l) = w.list_mut(from) {
            let pos = l.iter().position(|&x| x == fi).expect("an inode is on the list it says");
            l.remove(pos);
        }
        if let Some(l) = w.list_mut(to) {
            l.push_front(fi);
        }
        self.inodes[fi.idx()].list = to;
    }

    /// The list move of `__mark_inode_dirty(I_DIRTY_PAGES)` for inode `fi` on `wb`, when a
    /// page of it is dirtied at `now`: a clean inode becomes dirty with `dirtied_when = now`
    /// and goes to the head of `b_dirty`; an inode already dirty keeps its time and place.
    /// Returns true when the wb had no dirty inode before: the caller arms the flusher's
    /// periodic wakeup (`wb_wakeup_delayed`).
    pub(crate) fn mark_inode_dirty(&mut self, wb: WbId, fi: FileId, now: u64) -> bool {
        let ino = self.inodes[fi.idx()];
        if ino.dirty {
            return false;
        }
        let was_idle = !self.wbs[wb.idx()].has_dirty_io();
        self.inodes[fi.idx()].dirty = true;
        self.inodes[fi.idx()].dirtied_when = now;
        if ino.list == WbList::None {
            self.move_to_head(wb, fi, WbList::Dirty);
        }
        was_idle
    }

    /// `redirty_tail`: inode `fi` goes back to the head of `b_dirty`; if it is older than the
    /// newest inode there, its `dirtied_when` becomes `now` so that `b_dirty` stays in
    /// time order.
    pub(crate) fn redirty_tail(&mut self, wb: WbId, fi: FileId, now: u64) {
        if let Some(&newest) = self.wbs[wb.idx()].b_dirty.front() {
            if newest != fi && self.inodes[fi.idx()].dirtied_when < self.inodes[newest.idx()].dirtied_when {
                self.inodes[fi.idx()].dirtied_when = now;
            }
        }
        self.move_to_head(wb, fi, WbList::Dirty);
    }

    /// `requeue_io`: inode `fi` still has dirty pages after its chunk: to `b_more_io`.
    pub(crate) fn requeue_io(&mut self, wb: WbId, fi: FileId) {
        self.move_to_head(wb, fi, WbList::MoreIo);
    }

    /// `inode_io_list_del`: inode `fi` is clean; it leaves the lists.
    pub(crate) fn inode_clean(&mut self, wb: WbId, fi: FileId) {
        self.inodes[fi.idx()].dirty = false;
        self.move_to_head(wb, fi, WbList::None);
    }

    /// `queue_io`: `b_more_io` joins `b_io` (where the policy says), then the inodes of
    /// `b_dirty` dirtied at or before `cutoff` (`None`: all of them) move to `b_io`, oldest
    /// first (`move_expired_inodes`), so that the oldest is consumed first. Returns how
    /// many inodes came from `b_dirty`.
    pub(crate) fn queue_io(&mut self, wb: WbId, cutoff: Option<u64>) -> usize {
        let more_io_first = self.order.more_io_first();
        let Writeback { wbs, inodes, .. } = self;
        let w = &mut wbs[wb.idx()];
        let more: Vec<FileId> = w.b_more_io.drain(..).collect();
        if more_io_first {
            // Spliced at the tail of b_io: retried before what b_io held.
            for fi in more.into_iter().rev() {
                w.b_io.push_back(fi);
            }
        } else {
            // Spliced at the head: after what b_io held.
            for fi in more.into_iter().rev() {
                w.b_io.push_front(fi);
            }
        }
        for &fi in w.b_io.iter() {
            inodes[fi.idx()].list = WbList::Io;
        }
        // move_expired_inodes: from the oldest (tail) while expired, each to the head of a
        // temporary list, which is spliced at the head of b_io: the oldest ends nearest the
        // tail end of the moved run.
        let mut moved = 0;
        let mut tmp: VecDeque<FileId> = VecDeque::new();
        while let Some(&fi) = w.b_dirty.back() {
            if cutoff.is_some_and(|c| inodes[fi.idx()].dirtied_when > c) {
                break;
            }
            w.b_dirty.pop_back();
            inodes[fi.idx()].list = WbList::Io;
            tmp.push_front(fi);
            moved += 1;
        }
        for fi in tmp.into_iter().rev() {
            w.b_io.push_front(fi);
        }
        moved
    }

    /// The background and hard limits over `dirtyable` pages.
    pub(crate) fn limits(&self, dirtyable: u64) -> DirtyLimits {
        let rules = thresholds::LimitRules {
            min_dirty_ratio: self.rules.min_dirty_ratio,
            ratio_per_page: self.rules.ratio_per_page,
        };
        self.sysctl.limits(dirtyable, rules)
    }

    /// Inodes with dirty pages (the inode part of `get_nr_dirty_pages`).
    pub(crate) fn nr_dirty_inodes(&self) -> u64 {
        self.inodes.iter().filter(|i| i.dirty).count() as u64
    }

    /// The oldest `dirtied_when` on `b_dirty` (its tail), if any.
    pub(crate) fn oldest_dirty(&self, wb: WbId) -> Option<u64> {
        self.wbs[wb.idx()].b_dirty.back().map(|fi| self.inodes[fi.idx()].dirtied_when)
    }

    /// Checks that every dirty inode is on exactly one list of its wb and that each list
    /// holds only inodes that say they are on it (for `Sim::verify`).
    pub(crate) fn verify(&self) -> Result<(), String> {
        for (d, w) in self.wbs.iter().enumerate() {
            for (l, list) in [(WbList::Dirty, &w.b_dirty), (WbList::Io, &w.b_io), (WbList::MoreIo, &w.b_more_io)] {
                for &fi in list {
                    if self.inodes[fi.idx()].list != l {
                        return Err(format!("inode {fi:?} on {l:?} of wb {d} says {:?}", self.inodes[fi.idx()].list));
                    }
                }
            }
        }
        let on_lists: usize = self.wbs.iter().map(|w| w.b_dirty.len() + w.b_io.len() + w.b_more_io.len()).sum();
        let listed = self.inodes.iter().filter(|i| i.list != WbList::None).count();
        if on_lists != listed {
            return Err(format!("{on_lists} inodes on the wb lists, {listed} say they are on one"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wb(files: usize) -> Writeback {
        let s = DirtySysctls {
            dirty: Limit::Ratio(20),
            background: Limit::Ratio(10),
            expire_ns: 30,
            writeback_interval_ns: 5,
        };
        let rules = crate::profile::find("linux-6.6").unwrap().writeback;
        let m = Machine { nfiles: files, ndevs: 1, nmemcgs: 1, ntasks: 1, ncpus: 1, total_pages: 1 << 16, cgwb: false };
        Writeback::new(s, rules, order::find("modern").map(|e| (e.build)()).unwrap(), m)
    }

    const D: WbId = WbId(0);

    #[test]
    fn a_dirty_inode_keeps_its_first_dirtying_time_and_b_dirty_stays_in_time_order() {
        let mut w = wb(3);
        assert!(w.mark_inode_dirty(D, FileId(0), 10), "the first dirty inode arms the flusher");
        assert!(!w.mark_inode_dirty(D, FileId(1), 20));
        assert!(!w.mark_inode_dirty(D, FileId(0), 30), "redirtying changes nothing");
        assert_eq!(w.inodes[0].dirtied_when, 10);
        assert_eq!(w.wbs[0].b_dirty, [FileId(1), FileId(0)]);
        assert_eq!(w.oldest_dirty(D), Some(10));
        w.verify().unwrap();
    }

    /// queue_io with a cutoff moves the expired inodes only, oldest at the consuming end.
    #[test]
    fn queue_io_moves_expired_inodes_oldest_to_be_written_first() {
        let mut w = wb(4);
        for (i, t) in [(0, 10), (1, 20), (2, 30), (3, 40)] {
            w.mark_inode_dirty(D, FileId(i), t);
        }
        assert_eq!(w.queue_io(D, Some(25)), 2);
        assert_eq!(w.wbs[0].b_io.back(), Some(&FileId(0)), "the oldest is consumed first");
        assert_eq!(w.wbs[0].b_io, [FileId(1), FileId(0)]);
        assert_eq!(w.wbs[0].b_dirty, [FileId(3), FileId(2)]);
        assert_eq!(w.queue_io(D, None), 2);
        assert_eq!(w.wbs[0].b_io, [FileId(3), FileId(2), FileId(1), FileId(0)]);
        w.verify().unwrap();
    }

    #[test]
    fn redirty_tail_keeps_b_dirty_sorted_and_requeue_io_parks_the_inode() {
        let mut w = wb(3);
        w.mark_inode_dirty(D, FileId(0), 10);
        w.mark_inode_dirty(D, FileId(1), 20);
        w.queue_io(D, None);
        w.mark_inode_dirty(D, FileId(2), 30);
        // Inode 0 (dirtied at 10) goes back behind inode 2 (30): it is made as new as now.
        w.redirty_tail(D, FileId(0), 50);
        assert_eq!(w.inodes[0].dirtied_when, 50);
        assert_eq!(w.wbs[0].b_dirty, [FileId(0), FileId(2)]);
        w.requeue_io(D, FileId(1));
        assert_eq!(w.wbs[0].b_more_io, [FileId(1)]);
        assert!(w.wbs[0].b_io.is_empty());
        w.inode_clean(D, FileId(1));
        assert!(w.wbs[0].b_more_io.is_empty() && !w.inodes[1].dirty);
        w.verify().unwrap();
    }
}
