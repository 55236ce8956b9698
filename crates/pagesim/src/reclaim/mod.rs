//! Page reclaim: the LRU scanning of kswapd, direct reclaim and memcg limit reclaim.
//!
//! Models mm/vmscan.c: `do_try_to_free_pages`, `balance_pgdat`, `shrink_node`,
//! `prepare_scan_count`, `shrink_lruvec`, `shrink_list`, `shrink_active_list`,
//! `shrink_inactive_list` / `shrink_folio_list`, `folio_check_references`,
//! `inactive_is_low`, `lru_note_cost`; mm/rmap.c `folio_referenced` and `try_to_unmap`;
//! mm/workingset.c (shadow entries, refault distance); mm/oom_kill.c (victim choice).
//!
//! ```text
//!  active list ──(shrink_active_list: deactivate, referenced or not)──▶ inactive head
//!  inactive tail ─(shrink_folio_list)─▶ referenced twice / in use ─▶ active head
//!                                    ─▶ referenced once ─────────▶ inactive head (KEEP)
//!                                    ─▶ dirty: swap slot, unmap, write ─▶ inactive head,
//!                                          PG_reclaim; at write end ─▶ inactive tail
//!                                    ─▶ clean: shadow entry, freed
//! ```
//!
//! Reclaim runs in steps of one priority level (one `shrink_node`), so a reclaiming thread
//! yields to I/O completions between steps, as the kernel's reclaim overlaps with the
//! interrupts that end writeback. The get_scan_count variants are in [`scan_balance`].

pub mod scan_balance;

use crate::engine::{Sim, TaskState};
use crate::mm::pte;
use crate::mm::vmstat::Counter;
use crate::mm::{int_sqrt, pg, LruList, Owner};
use crate::scenario::profile::{InactiveRule, WorkingsetMode};
use crate::swap::{Entry, Shadow};
use crate::units::JIFFY_NS;
use scan_balance::{ScanInput, SWAP_CLUSTER_MAX};

/// `DEF_PRIORITY`.
pub const DEF_PRIORITY: u32 = 12;
/// `MAX_RECLAIM_RETRIES`.
pub const MAX_RECLAIM_RETRIES: u32 = 16;

/// `struct scan_control`.
#[derive(Clone, Debug)]
pub struct ScanControl {
    pub nr_to_reclaim: u64,
    pub nr_reclaimed: u64,
    pub nr_scanned: u64,
    pub priority: u32,
    /// Memcg limit reclaim of this memcg, or global reclaim.
    pub target_memcg: Option<u16>,
    pub kswapd: bool,
    pub may_deactivate: [bool; 2],
    pub force_deactivate: bool,
    pub skipped_deactivate: bool,
    pub cache_trim_mode: bool,
    pub file_is_tiny: bool,
    pub anon_cost: u64,
    pub file_cost: u64,
    // Per shrink_node batch statistics (`sc->nr`).
    pub nr_taken: u64,
    pub nr_writeback: u64,
    pub nr_immediate: u64,
    /// Pages whose writeback this reclaim waits for before trying them again (cgroup v1
    /// limit reclaim, `shrink_folio_list` case 3), last found last.
    pub waited: Vec<u32>,
    /// A write found its device's request queue full (`get_request_wait`): the reclaimer
    /// stops here and sleeps until that device frees a request, then resumes at the same
    /// priority.
    pub wait_request: Option<u32>,
}

impl ScanControl {
    fn new(nr_to_reclaim: u64, target_memcg: Option<u16>, kswapd: bool) -> Self {
        ScanControl {
            nr_to_reclaim,
            nr_reclaimed: 0,
            nr_scanned: 0,
            priority: DEF_PRIORITY,
            target_memcg,
            kswapd,
            may_deactivate: [true, true],
            force_deactivate: false,
            skipped_deactivate: false,
            cache_trim_mode: false,
            file_is_tiny: false,
            anon_cost: 0,
            file_cost: 0,
            nr_taken: 0,
            nr_writeback: 0,
            nr_immediate: 0,
            waited: Vec::new(),
            wait_request: None,
        }
    }
    /// `try_to_free_pages`: global direct reclaim of 32 pages.
    pub fn direct() -> Self {
        Self::new(SWAP_CLUSTER_MAX, None, false)
    }
    /// `try_to_free_mem_cgroup_pages`.
    pub fn memcg(m: u16) -> Self {
        Self::new(SWAP_CLUSTER_MAX, Some(m), false)
    }
    fn global(&self) -> bool {
        self.target_memcg.is_none()
    }
}

/// Outcome of one reclaim step of a task.
pub enum Step {
    Continue,
    Blocked,
    Finished,
}

enum Verdict {
    Activate,
    Keep,
    Freed,
    /// Back to the inactive list until the reclaimer has waited for its writeback.
    Wait,
}

impl Sim {
    // ---- page allocation ------------------------------------------------------------

    /// Wakes kswapd (`wakeup_kswapd`) unless it gave up (`kswapd_failures`).
    pub fn wake_kswapd(&mut self) {
        if self.kswapd.failures >= MAX_RECLAIM_RETRIES
            || !self.kswapd.sleeping
            || self.kswapd.throttled
            || self.kswapd.napping
        {
            return;
        }
        self.kswapd.sleeping = false;
        self.kswapd.wakeups += 1;
        self.kswapd.awake_since = self.now;
        let k = self.kswapd_thread();
        self.wake(k, self.now);
    }

    fn take_frame(&mut self, memcg: u16) -> u32 {
        let f = self.frames.alloc(memcg).expect("free frame present");
        self.memcgs[memcg as usize].usage += 1;
        self.vmstat.add(Counter::PgAlloc, 1);
        f
    }

    /// Allocates a page for task `tid` (`alloc_pages` + `mem_cgroup_charge`). When memory
    /// or the memcg limit is short, starts a reclaim job in the task and returns `None`:
    /// the caller retries the access once the job has run.
    pub fn alloc_page(&mut self, tid: u32) -> Option<u32> {
        let memcg = self.tasks[tid as usize].memcg;
        let m = &self.memcgs[memcg as usize];
        if m.usage >= m.max {
            self.tasks[tid as usize].reclaim = Some(ScanControl::memcg(memcg));
            return None;
        }
        let free = self.nr_free();
        if free <= self.tun.wmark.low {
            self.wake_kswapd();
        }
        if free > self.tun.wmark.min {
            return Some(self.take_frame(memcg));
        }
        self.count(Counter::AllocStall, 0, 1);
        self.tasks[tid as usize].reclaim = Some(ScanControl::direct());
        None
    }

    /// Allocates a readahead page: never reclaims, fails below the min watermark or at
    /// the memcg limit.
    pub fn alloc_page_atomic(&mut self, memcg: u16) -> Option<u32> {
        let m = &self.memcgs[memcg as usize];
        if m.usage >= m.max {
            return None;
        }
        let free = self.nr_free();
        if free <= self.tun.wmark.low {
            self.wake_kswapd();
        }
        (free > self.tun.wmark.min).then(|| self.take_frame(memcg))
    }

    /// Allocates a page-cache readahead page (`readahead_gfp_mask`: __GFP_NORETRY). Below
    /// the min watermark or at the memcg limit it reclaims once, synchronously (one
    /// `try_to_free_pages` pass down the priorities until SWAP_CLUSTER_MAX pages are
    /// freed), and tries again; then it gives up, and the readahead window ends there. The
    /// caller's own page is allocated with [`Sim::alloc_page`], which may block in reclaim.
    pub fn alloc_page_noretry(&mut self, memcg: u16, cpu: u32) -> Option<u32> {
        if let Some(f) = self.alloc_page_atomic(memcg) {
            return Some(f);
        }
        let limited = self.memcgs[memcg as usize].usage >= self.memcgs[memcg as usize].max;
        let mut sc = if limited { ScanControl::memcg(memcg) } else { ScanControl::direct() };
        if !limited {
            self.count(Counter::AllocStall, 0, 1);
        }
        loop {
            sc.nr_scanned = 0;
            self.shrink_node(&mut sc, cpu);
            if sc.nr_reclaimed >= sc.nr_to_reclaim || sc.priority == 0 {
                break;
            }
            sc.priority -= 1;
        }
        self.snapshot_refaults(sc.target_memcg);
        self.alloc_page_atomic(memcg)
    }

    /// Tells the swap allocator which of the reclaimers running at this moment thread
    /// `th` is: kswapd while it reclaims, then the tasks in direct or memcg reclaim, in id
    /// order, at most one per CPU. Before the per-CPU slots cache (4.11) they all allocate
    /// from one cursor, so their slots interleave ([`crate::swap::SwapArea::set_lane`]).
    fn set_swap_lane(&mut self, th: u32) {
        if self.profile.swap_slots_cache {
            return;
        }
        let k = self.kswapd_thread();
        let (mut lane, mut lanes) = (0, 0);
        if th == k || (!self.kswapd.sleeping && !self.kswapd.napping && !self.kswapd.throttled) {
            lanes += 1;
        }
        for (tid, t) in self.tasks.iter().enumerate() {
            let tid = tid as u32;
            if tid == th || (t.reclaim.is_some() && t.state == TaskState::Runnable) {
                if tid == th {
                    lane = lanes;
                }
                lanes += 1;
            }
        }
        let lanes = lanes.min(self.cpu_free.len() as u32).max(1);
        self.swap.set_lane(lane, lanes);
    }

    /// One priority level of `do_try_to_free_pages` for task `tid`'s reclaim job.
    pub fn direct_reclaim_step(&mut self, tid: u32, cpu: u32) -> Step {
        let mut sc = self.tasks[tid as usize].reclaim.take().expect("reclaim job");
        if sc.waited.is_empty() {
            sc.nr_scanned = 0;
            self.set_swap_lane(tid);
            self.shrink_node(&mut sc, cpu);
        }
        if let Some(dev) = sc.wait_request.take() {
            self.tasks[tid as usize].reclaim = Some(sc);
            self.wait_for_request(tid, dev);
            return Step::Blocked;
        }
        if let Some(f) = self.retry_waited(&mut sc, cpu) {
            // folio_wait_writeback: the task sleeps until this page is written.
            self.tasks[tid as usize].reclaim = Some(sc);
            let t = &mut self.tasks[tid as usize];
            t.state = crate::engine::TaskState::WaitPage;
            t.wait_frame = f;
            self.block(tid);
            return Step::Blocked;
        }
        if sc.nr_reclaimed < sc.nr_to_reclaim && sc.priority > 0 {
            sc.priority -= 1;
            self.tasks[tid as usize].reclaim = Some(sc);
            return Step::Continue;
        }
        self.snapshot_refaults(sc.target_memcg);
        if sc.nr_reclaimed == 0 && sc.skipped_deactivate && !sc.force_deactivate {
            // The inactive:active decision was made at the root; a cgroup may have all its
            // pages active. Retry with deactivation forced.
            sc.priority = DEF_PRIORITY;
            sc.force_deactivate = true;
            sc.skipped_deactivate = false;
            self.tasks[tid as usize].reclaim = Some(sc);
            return Step::Continue;
        }
        let t = &mut self.tasks[tid as usize];
        if sc.nr_reclaimed > 0 {
            t.no_progress = 0;
            return Step::Finished;
        }
        t.no_progress += 1;
        if self.writeback_in_flight() {
            // reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK): wait for writeback progress.
            self.throttle(tid, 25 * JIFFY_NS);
            return Step::Blocked;
        }
        if self.tasks[tid as usize].no_progress > MAX_RECLAIM_RETRIES {
            self.tasks[tid as usize].no_progress = 0;
            let victim = self.oom_kill(sc.target_memcg);
            if victim == Some(tid) || victim.is_none() {
                if victim.is_none() {
                    // Nothing to kill: the task cannot make progress.
                    self.kill_task(tid);
                }
                return Step::Blocked;
            }
        }
        Step::Finished
    }

    /// The end of `folio_wait_writeback` in cgroup v1 limit reclaim (`shrink_folio_list`
    /// case 3): each waited page whose writeback has ended is tried again, as the kernel
    /// retries the same folio. Returns a page still under writeback, to wait for next.
    /// The waited pages were left at the head of their inactive list (in the kernel they stay
    /// isolated), so nothing else scans them meanwhile unless the list is very short.
    fn retry_waited(&mut self, sc: &mut ScanControl, cpu: u32) -> Option<u32> {
        while let Some(&f) = sc.waited.last() {
            if self.frames.test(f, pg::WRITEBACK) {
                return Some(f);
            }
            sc.waited.pop();
            let l = self.frames.lru[f as usize];
            if self.frames.is_free(f) || (l != LruList::InactiveAnon as u8 && l != LruList::InactiveFile as u8) {
                continue; // freed or moved by someone else meanwhile
            }
            let list = if l == LruList::InactiveAnon as u8 { LruList::InactiveAnon } else { LruList::InactiveFile };
            let m = self.frames.memcg[f as usize];
            {
                let crate::engine::Sim { memcgs, frames, .. } = self;
                memcgs[m as usize].lru.del(frames, f);
            }
            let mut pageout = 0;
            let verdict = self.shrink_folio(f, sc, cpu, &mut pageout);
            self.put_back(m, list, f, verdict, sc);
        }
        None
    }

    /// `move_folios_to_lru` / `free_unref_folios` for one page `shrink_folio` decided on,
    /// with the counters of that decision. Returns 1 if the page was freed.
    fn put_back(&mut self, m: u16, l: LruList, f: u32, verdict: Verdict, sc: &mut ScanControl) -> u64 {
        let t = l.type_idx();
        match verdict {
            Verdict::Freed => {
                self.free_frame(f);
                sc.nr_reclaimed += 1;
                let steal_item = if sc.kswapd { Counter::PgStealKswapd } else { Counter::PgStealDirect };
                if sc.global() {
                    self.vmstat.add(steal_item, 1);
                }
                if m != 0 {
                    self.memcgs[m as usize].events.add(steal_item, 1);
                }
                self.vmstat.add(if t == 1 { Counter::PgStealFile } else { Counter::PgStealAnon }, 1);
                return 1;
            }
            Verdict::Activate => {
                self.frames.set(f, pg::ACTIVE);
                let crate::engine::Sim { memcgs, frames, .. } = self;
                memcgs[m as usize].lru.add_head(frames, f, LruList::of(t == 1, true));
                self.count(Counter::PgActivate, m, 1);
                self.memcgs[m as usize].stat.recent_rotated[t] += 1;
                if !self.profile.reclaim_3x {
                    self.age_nonresident(m, 1);
                }
            }
            Verdict::Keep | Verdict::Wait => {
                let crate::engine::Sim { memcgs, frames, .. } = self;
                memcgs[m as usize].lru.add_head(frames, f, l);
            }
        }
        0
    }

    /// `snapshot_refaults`: remember WORKINGSET_ACTIVATE at the end of reclaim.
    fn snapshot_refaults(&mut self, target: Option<u16>) {
        let m = target.unwrap_or(0) as usize;
        self.flush_memcg_stats();
        let (a, f) = self.ws_activate(m);
        self.memcgs[m].stat.refaults_snapshot = [a, f];
    }

    /// WORKINGSET_ACTIVATE_{ANON,FILE} of memcg `m` as reclaim reads them
    /// (`lruvec_page_state`): flushed values when the profile flushes periodically.
    fn ws_activate(&self, m: usize) -> (u64, u64) {
        if self.profile.memcg_stats_flush_ns > 0 {
            let w = self.memcgs[m].flushed.ws_activate;
            return (w[0], w[1]);
        }
        self.ws_activate_exact(m)
    }

    fn ws_activate_exact(&self, m: usize) -> (u64, u64) {
        if m == 0 {
            (self.vmstat.get(Counter::WorkingsetActivateAnon), self.vmstat.get(Counter::WorkingsetActivateFile))
        } else {
            let e = &self.memcgs[m].events;
            (e.get(Counter::WorkingsetActivateAnon), e.get(Counter::WorkingsetActivateFile))
        }
    }

    // ---- kswapd ---------------------------------------------------------------------

    fn balanced(&self) -> bool {
        self.nr_free() > self.tun.wmark.high
    }

    fn kswapd_sleep(&mut self) {
        self.kswapd.sleeping = true;
        self.kswapd.awake_ns += self.now - self.kswapd.awake_since;
        // clear_pgdat_congested
        self.pgdat_writeback = false;
    }

    /// kswapd's thread: `balance_pgdat` one priority level at a time.
    pub fn run_kswapd(&mut self, cpu: u32) {
        self.kswapd.throttled = false;
        self.kswapd.napping = false;
        let limit = self.burst_limit(self.now);
        loop {
            if self.now >= limit {
                let k = self.kswapd_thread();
                self.wake(k, self.now);
                return;
            }
            let mut sc = match self.kswapd.sc.take() {
                Some(sc) => sc,
                None => {
                    if self.balanced() || self.kswapd.failures >= MAX_RECLAIM_RETRIES {
                        self.kswapd_sleep();
                        return;
                    }
                    self.vmstat.add(Counter::PageOutRun, 1);
                    // Before 3.11 kswapd reclaims with no target (ULONG_MAX) and ends a
                    // priority loop as soon as it has freed SWAP_CLUSTER_MAX pages.
                    let w =
                        if self.profile.kswapd_pre_3_11 { u64::MAX } else { self.tun.wmark.high.max(SWAP_CLUSTER_MAX) };
                    ScanControl::new(w, None, true)
                }
            };
            if self.balanced() {
                self.kswapd.failures = 0;
                continue;
            }
            // kswapd_age_node: background aging of anon lists.
            if self.swap.free_pages() > 0 {
                self.flush_memcg_stats();
                for m in 0..self.memcgs.len() as u16 {
                    if self.inactive_is_low(m, false) {
                        self.shrink_active_list(m, LruList::ActiveAnon, SWAP_CLUSTER_MAX, &mut sc);
                    }
                }
            }
            sc.nr_scanned = 0;
            let before = sc.nr_reclaimed;
            let k = self.kswapd_thread();
            self.set_swap_lane(k);
            self.shrink_node(&mut sc, cpu);
            if let Some(dev) = sc.wait_request.take() {
                self.kswapd.sc = Some(sc);
                let k = self.kswapd_thread();
                self.wait_for_request(k, dev);
                return;
            }
            if self.profile.kswapd_pre_3_11 {
                self.kswapd_priority_step_pre_3_11(sc);
                if self.kswapd.napping {
                    return;
                }
                continue;
            }
            let raise = sc.nr_scanned < sc.nr_to_reclaim;
            if raise || sc.nr_reclaimed == before {
                sc.priority = sc.priority.saturating_sub(1);
            }
            let immediate = sc.nr_immediate > 0;
            if sc.priority < 1 {
                self.snapshot_refaults(None);
                if sc.nr_reclaimed == 0 {
                    self.kswapd.failures += 1;
                }
            } else {
                self.kswapd.sc = Some(sc);
            }
            if immediate && self.writeback_in_flight() {
                let k = self.kswapd_thread();
                self.throttle(k, 25 * JIFFY_NS);
                return;
            }
        }
    }

    /// The end of one priority pass of `balance_pgdat` before 3.11 (3.6).
    ///
    /// Once the pass has freed SWAP_CLUSTER_MAX pages kswapd starts over at DEF_PRIORITY
    /// ("so kswapd doesn't build up large priorities"): each restart is a small
    /// shrink_lruvec and so a small block plug, and swap-out goes to the disk in batches of
    /// tens of pages. Below DEF_PRIORITY - 2 with no zone under its min watermark, kswapd
    /// "takes a nap": `congestion_wait(BLK_RW_ASYNC, HZ/10)`, which sleeps 100 ms unless a
    /// congested device queue clears first (the engine wakes it then). Meanwhile allocations
    /// fall to the min watermark and the faulting task reclaims for itself.
    fn kswapd_priority_step_pre_3_11(&mut self, mut sc: ScanControl) {
        if self.balanced() {
            return;
        }
        let nap = match kswapd_nap_pre_3_11(&sc, self.nr_free(), self.tun.wmark.min) {
            NapDecision::Naps => true,
            NapDecision::SkippedUnderMin => {
                self.vmstat.add(Counter::KswapdSkipCongestionWait, 1);
                false
            }
            NapDecision::NotTroubled => false,
        };
        if sc.nr_reclaimed >= SWAP_CLUSTER_MAX {
            // loop_again: a fresh scan control at DEF_PRIORITY.
        } else if sc.priority > 0 {
            sc.priority -= 1;
            self.kswapd.sc = Some(sc);
        } else if sc.nr_reclaimed == 0 {
            self.kswapd.failures += 1;
        }
        if nap {
            self.vmstat.add(Counter::KswapdCongestionWait, 1);
            self.kswapd.napping = true;
            let k = self.kswapd_thread();
            self.block(k);
            // HZ/10 with HZ = 250.
            self.wake(k, self.now + 25 * JIFFY_NS);
        }
    }

    // ---- shrink_node / shrink_lruvec ------------------------------------------------

    /// Lists of memcg `m` as the reclaim root sees them (`lruvec_page_state`): the node
    /// totals for the root (hierarchical stats), the memcg's own lists otherwise; as of the
    /// last stats flush when the profile flushes periodically.
    fn lru_view(&self, m: u16) -> [u64; 4] {
        if self.profile.memcg_stats_flush_ns > 0 {
            return self.memcgs[m as usize].flushed.lru;
        }
        self.lru_exact(m)
    }

    fn lru_exact(&self, m: u16) -> [u64; 4] {
        let mut s = [0u64; 4];
        for (i, l) in LruList::EVICTABLE.iter().enumerate() {
            s[i] = if m == 0 { self.node_lru(*l) } else { self.memcgs[m as usize].lru.size(*l) };
        }
        s
    }

    /// `inactive_is_low` for memcg `m`'s lruvec (hierarchical view at the root).
    pub fn inactive_is_low(&self, m: u16, file: bool) -> bool {
        let s = self.lru_view(m);
        let (inactive, active) = if file { (s[2], s[3]) } else { (s[0], s[1]) };
        match self.profile.inactive_rule {
            InactiveRule::Legacy => {
                if file {
                    return active > inactive;
                }
                if self.swap.total_pages() == 0 {
                    return false;
                }
                let gb = (inactive + active) >> 18;
                let ratio = if gb > 0 { int_sqrt(10 * gb) } else { 1 };
                inactive * ratio < active
            }
            InactiveRule::SqrtWithRefaults => {
                let gb = (inactive + active) >> 18;
                let ratio = if gb > 0 { int_sqrt(10 * gb) } else { 1 };
                inactive * ratio < active
            }
        }
    }

    /// `prepare_scan_count` (≥5.5): balance inputs computed once at the reclaim root.
    fn prepare_scan_count(&mut self, sc: &mut ScanControl) {
        let root = sc.target_memcg.unwrap_or(0);
        let st = &self.memcgs[root as usize].stat;
        sc.anon_cost = st.cost[0];
        sc.file_cost = st.cost[1];
        let snap = st.refaults_snapshot;
        if sc.force_deactivate {
            sc.may_deactivate = [true, true];
        } else {
            let (ra, rf) = self.ws_activate(root as usize);
            sc.may_deactivate[0] = ra != snap[0] || self.inactive_is_low(root, false);
            sc.may_deactivate[1] = rf != snap[1] || self.inactive_is_low(root, true);
        }
        let s = self.lru_view(root);
        sc.cache_trim_mode = (s[2] >> sc.priority) > 0 && !sc.may_deactivate[1];
        sc.file_is_tiny = if sc.global() {
            let file = self.node_lru(LruList::InactiveFile) + self.node_lru(LruList::ActiveFile);
            file + self.nr_free() <= self.tun.wmark.high
                && !sc.may_deactivate[0]
                && (self.node_lru(LruList::InactiveAnon) >> sc.priority) > 0
        } else {
            false
        };
    }

    /// The periodic memcg stats flush (mm/memcontrol.c `flush_memcg_stats_dwork`): every
    /// `memcg_stats_flush_ns` the values reclaim reads are brought up to date. The flusher
    /// runs on its own clock, so its phase relative to a workload's start is arbitrary: the
    /// first flush comes at half a period, its expected time. Run lazily by the readers:
    /// the first read after a flush time takes the values of that moment (reads happen at
    /// every reclaim step, so that is soon after it). Before the first flush they read zero,
    /// as for a memcg created just before the workload.
    pub fn flush_memcg_stats(&mut self) {
        let period = self.profile.memcg_stats_flush_ns;
        if period == 0 || self.now < self.next_stats_flush {
            return;
        }
        let phase = period / 2;
        self.next_stats_flush = phase + ((self.now - phase) / period + 1) * period;
        for m in 0..self.memcgs.len() {
            let lru = self.lru_exact(m as u16);
            let (a, f) = self.ws_activate_exact(m);
            self.memcgs[m].flushed = crate::mm::FlushedStats { lru, ws_activate: [a, f] };
        }
    }

    /// `shrink_node`: every lruvec in the reclaim scope.
    pub fn shrink_node(&mut self, sc: &mut ScanControl, cpu: u32) {
        self.flush_memcg_stats();
        if self.scan_balance.cost_based() {
            self.prepare_scan_count(sc);
        }
        sc.nr_taken = 0;
        sc.nr_writeback = 0;
        sc.nr_immediate = 0;
        let before = sc.nr_reclaimed;
        match sc.target_memcg {
            Some(m) => self.shrink_lruvec(m, sc, cpu),
            None => {
                for m in 0..self.memcgs.len() as u16 {
                    self.shrink_lruvec(m, sc, cpu);
                    if sc.wait_request.is_some() {
                        break;
                    }
                }
            }
        }
        if sc.nr_reclaimed > before {
            self.kswapd.failures = 0;
        }
        if sc.kswapd && sc.nr_writeback > 0 && sc.nr_writeback == sc.nr_taken {
            self.pgdat_writeback = true;
        }
    }

    /// `shrink_lruvec`: scan the lists of memcg `m` in batches of 32 toward the targets of
    /// get_scan_count, then rebalance active/inactive anon.
    fn shrink_lruvec(&mut self, m: u16, sc: &mut ScanControl, cpu: u32) {
        let lru = &self.memcgs[m as usize].lru;
        let sizes = [
            lru.size(LruList::InactiveAnon),
            lru.size(LruList::ActiveAnon),
            lru.size(LruList::InactiveFile),
            lru.size(LruList::ActiveFile),
        ];
        let file_low = self.inactive_is_low(m, true);
        let inp = ScanInput {
            sizes,
            priority: sc.priority,
            swappiness: self.tun.swappiness,
            can_swap: self.swap.free_pages() > 0,
            global: sc.global(),
            kswapd: sc.kswapd,
            zone_reclaimable: self.pages_scanned
                < 6 * (self.node_lru(LruList::InactiveAnon)
                    + self.node_lru(LruList::ActiveAnon)
                    + self.node_lru(LruList::InactiveFile)
                    + self.node_lru(LruList::ActiveFile)),
            free: self.nr_free(),
            high_wmark: self.tun.wmark.high,
            node_file: self.node_lru(LruList::InactiveFile) + self.node_lru(LruList::ActiveFile),
            inactive_file_low: file_low,
            anon_cost: sc.anon_cost,
            file_cost: sc.file_cost,
            may_deactivate_anon: sc.may_deactivate[0],
            may_deactivate_file: sc.may_deactivate[1],
            cache_trim_mode: sc.cache_trim_mode,
            file_is_tiny: sc.file_is_tiny,
        };
        let sb = self.scan_balance;
        let mut nr = sb.get_scan_count(&inp, &mut self.memcgs[m as usize].stat);
        let targets = nr;
        let legacy = self.profile.reclaim_3x;
        let proportional = !legacy && sc.global() && !sc.kswapd && sc.priority == DEF_PRIORITY;
        let mut scan_adjusted = false;
        let mut reclaimed = 0u64;
        'scan: while nr[0] > 0 || nr[2] > 0 || nr[3] > 0 {
            for (li, l) in LruList::EVICTABLE.iter().enumerate() {
                if nr[li] > 0 {
                    let k = nr[li].min(SWAP_CLUSTER_MAX);
                    nr[li] -= k;
                    reclaimed += self.shrink_list(m, *l, k, sc, cpu);
                    if sc.wait_request.is_some() {
                        break 'scan;
                    }
                }
            }
            if reclaimed < sc.nr_to_reclaim || scan_adjusted || proportional {
                continue;
            }
            if legacy && sc.global() && !sc.kswapd {
                break;
            }
            let nr_file = nr[2] + nr[3];
            let nr_anon = nr[0] + nr[1];
            if nr_file == 0 || nr_anon == 0 {
                break;
            }
            // Stop the type with less work left; scale the other by the same fraction.
            let (small, big, pct) = if nr_file > nr_anon {
                (0, 2, nr_anon * 100 / (targets[0] + targets[1] + 1))
            } else {
                (2, 0, nr_file * 100 / (targets[2] + targets[3] + 1))
            };
            nr[small] = 0;
            nr[small + 1] = 0;
            for l in [big, big + 1] {
                let scanned = targets[l] - nr[l];
                nr[l] = targets[l] * (100 - pct) / 100;
                nr[l] -= nr[l].min(scanned);
            }
            scan_adjusted = true;
        }
        sc.nr_reclaimed += reclaimed;
        if self.swap.free_pages() > 0 && self.inactive_is_low(m, false) {
            self.shrink_active_list(m, LruList::ActiveAnon, SWAP_CLUSTER_MAX, sc);
        }
        // The block plug of shrink_lruvec ends here: queued swap writes go out merged.
        self.unplug_all();
    }

    /// `shrink_list`.
    fn shrink_list(&mut self, m: u16, l: LruList, k: u64, sc: &mut ScanControl, cpu: u32) -> u64 {
        if l.is_active() {
            let t = l.type_idx();
            let deactivate = if self.scan_balance.cost_based() {
                sc.may_deactivate[t]
            } else {
                self.inactive_is_low(m, l.is_file())
            };
            if deactivate {
                self.shrink_active_list(m, l, k, sc);
            } else {
                sc.skipped_deactivate = true;
            }
            return 0;
        }
        self.shrink_inactive_list(m, l, k, sc, cpu)
    }

    // ---- rmap -----------------------------------------------------------------------

    /// `folio_referenced`: test-and-clear the young bit of every PTE mapping `f`; returns
    /// the number of mappings that were young.
    fn page_referenced(&mut self, f: u32) -> u32 {
        let idx = self.frames.index[f as usize] as usize;
        let mut n = 0;
        let mut check = |ptes: &mut Vec<u32>| {
            let e = ptes[idx];
            if pte::is_present(e) && pte::frame(e) == Some(f) && e & pte::YOUNG != 0 {
                ptes[idx] = e & !pte::YOUNG;
                n += 1;
            }
        };
        match self.frames.owner(f) {
            Owner::None => {}
            Owner::Anon(v) => check(&mut self.vmas[v as usize].pte),
            Owner::Shmem(o) => {
                for &v in &self.shmem[o as usize].mappers {
                    check(&mut self.vmas[v as usize].pte);
                }
            }
            Owner::File(a) => {
                for &v in &self.files[a as usize].mappers {
                    check(&mut self.vmas[v as usize].pte);
                }
            }
        }
        n
    }

    fn is_mapped(&self, f: u32) -> bool {
        let idx = self.frames.index[f as usize] as usize;
        let maps = |v: u32| {
            let e = self.vmas[v as usize].pte[idx];
            pte::is_present(e) && pte::frame(e) == Some(f)
        };
        match self.frames.owner(f) {
            Owner::None => false,
            Owner::Anon(v) => maps(v),
            Owner::Shmem(o) => self.shmem[o as usize].mappers.iter().any(|&v| maps(v)),
            Owner::File(a) => self.files[a as usize].mappers.iter().any(|&v| maps(v)),
        }
    }

    /// `try_to_unmap`: anon PTEs become swap entries (one more swap reference each);
    /// shmem and file PTEs are cleared. PTE dirty bits move to the page.
    fn try_to_unmap(&mut self, f: u32) {
        let idx = self.frames.index[f as usize] as usize;
        match self.frames.owner(f) {
            Owner::File(a) => {
                // Read-only mappings: no dirty bit to carry over.
                for i in 0..self.files[a as usize].mappers.len() {
                    let v = self.files[a as usize].mappers[i] as usize;
                    let e = self.vmas[v].pte[idx];
                    if pte::is_present(e) && pte::frame(e) == Some(f) {
                        self.vmas[v].pte[idx] = pte::NONE;
                    }
                }
            }
            Owner::None => {}
            Owner::Anon(v) => {
                let e = self.vmas[v as usize].pte[idx];
                if pte::is_present(e) && pte::frame(e) == Some(f) {
                    if e & pte::DIRTY != 0 {
                        self.frames.set(f, pg::DIRTY);
                    }
                    let entry = Entry(self.frames.swap[f as usize]);
                    self.vmas[v as usize].pte[idx] = pte::SWAP | entry.0;
                    self.swap.area(entry).dup(entry.slot());
                    let m = self.frames.memcg[f as usize];
                    self.memcgs[m as usize].swap_usage += 1;
                }
                self.frames.set_owner(f, Owner::None, 0);
            }
            Owner::Shmem(o) => {
                for i in 0..self.shmem[o as usize].mappers.len() {
                    let v = self.shmem[o as usize].mappers[i] as usize;
                    let e = self.vmas[v].pte[idx];
                    if pte::is_present(e) && pte::frame(e) == Some(f) {
                        if e & pte::DIRTY != 0 {
                            self.frames.set(f, pg::DIRTY);
                        }
                        self.vmas[v].pte[idx] = pte::NONE;
                    }
                }
            }
        }
    }

    // ---- the lists ------------------------------------------------------------------

    /// `shrink_active_list`: deactivate up to `k` pages from the tail of an active list.
    /// A referenced page is counted as rotated but still deactivated (only exec-mapped
    /// file pages, which pagesim does not have, stay active).
    pub fn shrink_active_list(&mut self, m: u16, l: LruList, k: u64, _sc: &mut ScanControl) {
        let t = l.type_idx();
        let inactive = LruList::of(l.is_file(), false);
        let mut taken = 0u64;
        let mut rotated = 0u64;
        for _ in 0..k {
            let Some(f) = ({
                let crate::engine::Sim { memcgs, frames, .. } = self;
                memcgs[m as usize].lru.pop_tail(frames, l)
            }) else {
                break;
            };
            taken += 1;
            if self.page_referenced(f) > 0 {
                rotated += 1;
            }
            self.frames.clear(f, pg::ACTIVE);
            if !self.profile.reclaim_3x {
                self.frames.set(f, pg::WORKINGSET);
            }
            let crate::engine::Sim { memcgs, frames, .. } = self;
            memcgs[m as usize].lru.add_head(frames, f, inactive);
        }
        self.charge(taken * self.cost.scan_ns);
        self.count(Counter::PgRefill, m, taken);
        self.count(Counter::PgDeactivate, m, taken);
        let st = &mut self.memcgs[m as usize].stat;
        st.recent_scanned[t] += taken;
        st.recent_rotated[t] += rotated;
    }

    /// `shrink_inactive_list` + `shrink_folio_list`: isolate `k` pages from the tail and
    /// decide each one. Returns the pages freed.
    fn shrink_inactive_list(&mut self, m: u16, l: LruList, k: u64, sc: &mut ScanControl, cpu: u32) -> u64 {
        let t = l.type_idx();
        let mut isolated = std::mem::take(&mut self.isolate_buf);
        isolated.clear();
        {
            let crate::engine::Sim { memcgs, frames, .. } = self;
            for _ in 0..k {
                match memcgs[m as usize].lru.pop_tail(frames, l) {
                    Some(f) => isolated.push(f),
                    None => break,
                }
            }
        }
        let nr_taken = isolated.len() as u64;
        sc.nr_scanned += nr_taken;
        sc.nr_taken += nr_taken;
        self.pages_scanned += nr_taken;
        let scan_item = if sc.kswapd { Counter::PgScanKswapd } else { Counter::PgScanDirect };
        if sc.global() {
            self.vmstat.add(scan_item, nr_taken);
        }
        if m != 0 {
            self.memcgs[m as usize].events.add(scan_item, nr_taken);
        }
        self.vmstat.add(if t == 1 { Counter::PgScanFile } else { Counter::PgScanAnon }, nr_taken);
        self.memcgs[m as usize].stat.recent_scanned[t] += nr_taken;
        self.charge(nr_taken * self.cost.scan_ns);

        let mut reclaimed = 0u64;
        let mut pageout = 0u64;
        let mut activated = 0u64;
        for &f in &isolated {
            match self.shrink_folio(f, sc, cpu, &mut pageout) {
                Verdict::Freed => {
                    reclaimed += 1;
                    self.free_frame(f);
                }
                Verdict::Activate => {
                    activated += 1;
                    self.frames.set(f, pg::ACTIVE);
                    let crate::engine::Sim { memcgs, frames, .. } = self;
                    memcgs[m as usize].lru.add_head(frames, f, LruList::of(t == 1, true));
                    if !self.profile.reclaim_3x {
                        // move_folios_to_lru: activations age the workingset clock.
                        self.age_nonresident(m, 1);
                    }
                }
                Verdict::Keep | Verdict::Wait => {
                    let crate::engine::Sim { memcgs, frames, .. } = self;
                    memcgs[m as usize].lru.add_head(frames, f, l);
                }
            }
        }
        self.isolate_buf = isolated;
        if pageout > 0 {
            // get_request_wait: a write found its queue full; sleep before the next batch.
            sc.wait_request = self.write_full_device();
        }
        self.count(Counter::PgActivate, m, activated);
        self.memcgs[m as usize].stat.recent_rotated[t] += activated;
        let steal_item = if sc.kswapd { Counter::PgStealKswapd } else { Counter::PgStealDirect };
        if sc.global() {
            self.vmstat.add(steal_item, reclaimed);
        }
        if m != 0 {
            self.memcgs[m as usize].events.add(steal_item, reclaimed);
        }
        self.vmstat.add(if t == 1 { Counter::PgStealFile } else { Counter::PgStealAnon }, reclaimed);
        if self.scan_balance.cost_based() {
            self.lru_note_cost(m, t, pageout * SWAP_CLUSTER_MAX + (nr_taken - reclaimed));
        }
        reclaimed
    }

    /// `shrink_folio_list` for one isolated page.
    fn shrink_folio(&mut self, f: u32, sc: &mut ScanControl, cpu: u32, pageout: &mut u64) -> Verdict {
        let keep_or_activate = if self.profile.writeback_activate { Verdict::Activate } else { Verdict::Keep };
        if self.frames.test(f, pg::WRITEBACK) {
            if sc.kswapd && self.frames.test(f, pg::RECLAIM) && self.pgdat_writeback {
                sc.nr_immediate += 1;
            } else if !sc.global() && self.tun.memcg_v1 && self.frames.test(f, pg::RECLAIM) {
                // Case 3: limit reclaim on cgroup v1 has no writeback throttling
                // (!writeback_throttling_sane), so it waits for the writeback of a page it
                // wrote itself and tries the page again, rather than activating it.
                sc.waited.push(f);
                return Verdict::Wait;
            } else {
                self.frames.set(f, pg::RECLAIM);
                sc.nr_writeback += 1;
            }
            return keep_or_activate;
        }
        if self.frames.test(f, pg::LOCKED) {
            return Verdict::Keep;
        }
        // folio_check_references
        let rp = self.page_referenced(f);
        let rf = self.frames.test_clear(f, pg::REFERENCED);
        if rp > 0 {
            if self.profile.swapbacked_activate_on_first_ref && self.frames.test(f, pg::SWAPBACKED) {
                return Verdict::Activate;
            }
            self.frames.set(f, pg::REFERENCED);
            if rf || rp > 1 {
                return Verdict::Activate;
            }
            return Verdict::Keep;
        }
        let owner = self.frames.owner(f);
        // add_to_swap for anonymous pages not yet in the swap cache.
        if matches!(owner, Owner::Anon(_)) && !self.frames.test(f, pg::SWAPCACHE) {
            let Some(entry) = self.swap.alloc(cpu) else {
                return Verdict::Activate;
            };
            self.add_to_swap_cache(f, entry);
            self.frames.set(f, pg::DIRTY);
        }
        if self.is_mapped(f) {
            self.try_to_unmap(f);
        }
        self.charge(self.cost.reclaim_ns);
        if self.frames.test(f, pg::DIRTY) {
            if let Owner::Shmem(o) = owner {
                // shmem_writepage: move the page from the shmem page cache to swap.
                if !self.frames.test(f, pg::SWAPCACHE) {
                    let Some(entry) = self.swap.alloc(cpu) else {
                        return Verdict::Activate;
                    };
                    self.add_to_swap_cache(f, entry);
                    let idx = self.frames.index[f as usize] as usize;
                    self.shmem[o as usize].slots[idx] = pte::SWAP | entry.0;
                    self.swap.area(entry).dup(entry.slot());
                    let mc = self.frames.memcg[f as usize];
                    self.memcgs[mc as usize].swap_usage += 1;
                    self.frames.set_owner(f, Owner::None, 0);
                }
            }
            self.swap_writepage(f);
            *pageout += 1;
            // A write that completed at once (zswap, zeromap, a synchronous device) leaves
            // the page clean: it is freed below, in this pass.
            if self.frames.test(f, pg::WRITEBACK | pg::DIRTY) {
                return Verdict::Keep;
            }
        }
        // Clean: __remove_mapping.
        if self.frames.test(f, pg::SWAPCACHE) {
            let entry = Entry(self.frames.swap[f as usize]);
            if self.profile.workingset == WorkingsetMode::AnonAndFile {
                let s = self.workingset_eviction(f);
                self.swap.area(entry).set_shadow(entry.slot(), s);
            }
            self.frames.clear(f, pg::SWAPCACHE);
            self.frames.swap[f as usize] = 0;
            self.swap.area(entry).clear_cache_bit(entry.slot());
        } else if let Owner::Shmem(o) = owner {
            let idx = self.frames.index[f as usize] as usize;
            self.shmem[o as usize].slots[idx] = 0;
        } else if let Owner::File(a) = owner {
            self.page_cache_delete(f, a);
        }
        Verdict::Freed
    }

    /// `add_to_swap_cache` at a freshly allocated slot.
    pub fn add_to_swap_cache(&mut self, f: u32, entry: Entry) {
        let a = self.swap.area(entry);
        a.cache[entry.slot() as usize] = f + 1;
        self.frames.set(f, pg::SWAPCACHE);
        self.frames.swap[f as usize] = entry.0;
        self.swap_note_content(f, entry);
    }

    /// The swap-in half of `__read_swap_cache_async`: new page `f` takes SWAP_HAS_CACHE at
    /// `entry` and enters the swap cache with `flags` (PG_swapbacked and the caller's), its
    /// shadow entry, if any, is tested for a refault, and it goes on the LRU (active when
    /// the refault says so).
    pub fn swap_cache_add_new(&mut self, f: u32, entry: Entry, flags: u16) {
        let slot = entry.slot();
        let ok = self.swap.area(entry).prepare_cache(slot);
        debug_assert!(ok, "slot {slot} could not take SWAP_HAS_CACHE");
        self.add_to_swap_cache(f, entry);
        self.frames.set(f, pg::SWAPBACKED | flags);
        self.frames.set_owner(f, Owner::None, 0);
        if let Some(shadow) = self.swap.area(entry).take_shadow(slot) {
            self.workingset_refault(f, shadow, false);
        }
        let active = self.frames.test(f, pg::ACTIVE);
        self.frames.clear(f, pg::ACTIVE);
        self.lru_add(f, active);
    }

    /// `swap_writepage` from `pageout`: the page goes under writeback with PG_reclaim.
    fn swap_writepage(&mut self, f: u32) {
        let entry = Entry(self.frames.swap[f as usize]);
        self.frames.clear(f, pg::DIRTY);
        // Zeromap, zswap, synchronous devices (swap/page_io.rs).
        if self.swap_writepage_sync(f, entry) {
            return;
        }
        self.frames.set(f, pg::WRITEBACK | pg::RECLAIM);
        self.nr_writeback += 1;
        let (dev, off) = {
            let a = self.swap.area_ref(entry);
            (a.dev, a.offset_of(entry.slot()))
        };
        self.submit_page_io(dev, off, f, crate::device::IoDir::Write);
        let m = self.frames.memcg[f as usize];
        self.count(Counter::PswpOut, m, 1);
        self.count(Counter::PgpgOut, m, 4);
        self.count(Counter::NrVmscanWrite, m, 1);
        self.charge(self.cost.swapout_ns);
    }

    // ---- workingset -----------------------------------------------------------------

    /// `workingset_age_nonresident`: advance the clock of `m` and its ancestors.
    pub fn age_nonresident(&mut self, m: u16, n: u64) {
        self.memcgs[m as usize].stat.nonresident_age += n;
        if m != 0 {
            self.memcgs[0].stat.nonresident_age += n;
        }
    }

    /// `workingset_eviction`: the shadow of an evicted page.
    pub(crate) fn workingset_eviction(&mut self, f: u32) -> Shadow {
        let m = self.frames.memcg[f as usize];
        let age = self.memcgs[m as usize].stat.nonresident_age;
        self.age_nonresident(m, 1);
        Shadow { memcg: m, age, workingset: self.frames.test(f, pg::WORKINGSET) }
    }

    /// `workingset_refault` for a page read into frame `f` at a swap slot (`file` false)
    /// or page-cache index (`file` true) that held `shadow`: counts the refault, and
    /// activates the page if its refault distance fits in the workingset.
    pub fn workingset_refault(&mut self, f: u32, shadow: Shadow, file: bool) {
        let tracked = match self.profile.workingset {
            WorkingsetMode::Off => false,
            WorkingsetMode::FileOnly => file,
            WorkingsetMode::AnonAndFile => true,
        };
        if !tracked {
            return;
        }
        let m = self.frames.memcg[f as usize];
        let (refault, activate, restore) = if file {
            (Counter::WorkingsetRefaultFile, Counter::WorkingsetActivateFile, Counter::WorkingsetRestoreFile)
        } else {
            (Counter::WorkingsetRefaultAnon, Counter::WorkingsetActivateAnon, Counter::WorkingsetRestoreAnon)
        };
        self.count(refault, m, 1);
        self.flush_memcg_stats();
        let em = if (shadow.memcg as usize) < self.memcgs.len() { shadow.memcg } else { 0 };
        let distance = self.memcgs[em as usize].stat.nonresident_age.wrapping_sub(shadow.age);
        // [inactive_anon, active_anon, inactive_file, active_file]
        let s = self.lru_view(em);
        let ws = if self.profile.workingset == WorkingsetMode::FileOnly {
            // 3.15-5.8: the refault fits if it is within the active file list.
            s[3]
        } else {
            // >=5.9 workingset_test_recent: the other type's inactive list counts too,
            // and anon lists only while swap has room.
            let mut ws = s[3] + if file { 0 } else { s[2] };
            if self.swap.free_pages() > 0 {
                ws += s[1] + if file { s[0] } else { 0 };
            }
            ws
        };
        if distance > ws {
            return;
        }
        self.frames.set(f, pg::ACTIVE);
        self.age_nonresident(m, 1);
        self.count(activate, m, 1);
        if shadow.workingset {
            self.frames.set(f, pg::WORKINGSET);
            self.count(restore, m, 1);
            self.lru_note_cost(m, file as usize, SWAP_CLUSTER_MAX);
        }
    }

    /// `lru_note_cost`: add reclaim cost to `m` and its ancestors, halving both costs when
    /// they exceed a quarter of the lruvec.
    fn lru_note_cost(&mut self, m: u16, t: usize, cost: u64) {
        let mut cur = Some(m);
        while let Some(c) = cur {
            let size: u64 = self.lru_view(c).iter().sum();
            let st = &mut self.memcgs[c as usize].stat;
            st.cost[t] += cost;
            if st.cost[0] + st.cost[1] > size / 4 {
                st.cost[0] /= 2;
                st.cost[1] /= 2;
            }
            cur = if c == 0 { None } else { Some(0) };
        }
    }

    // ---- OOM and exit ---------------------------------------------------------------

    /// `out_of_memory` / `mem_cgroup_out_of_memory`: kill the task with the most resident
    /// and swapped pages in the scope (oom_badness without adj).
    pub fn oom_kill(&mut self, scope: Option<u16>) -> Option<u32> {
        let mut best: Option<(u64, u32)> = None;
        for (tid, t) in self.tasks.iter().enumerate() {
            if t.state == TaskState::Done || scope.is_some_and(|m| t.memcg != m) {
                continue;
            }
            let badness: u64 = self
                .vmas
                .iter()
                .filter(|v| v.task == tid as u32 && v.shmem.is_none() && v.file.is_none())
                .map(|v| v.pte.iter().filter(|&&e| e != pte::NONE && e != pte::ZERO_PAGE).count() as u64)
                .sum();
            if best.is_none_or(|(b, _)| badness > b) {
                best = Some((badness, tid as u32));
            }
        }
        let (_, victim) = best?;
        let m = self.tasks[victim as usize].memcg;
        self.count(Counter::OomKill, m, 1);
        self.tasks[victim as usize].oom_killed = true;
        self.kill_task(victim);
        Some(victim)
    }

    /// Ends a task and releases its private memory (`exit_mmap`).
    pub fn kill_task(&mut self, tid: u32) {
        let t = &mut self.tasks[tid as usize];
        t.state = TaskState::Done;
        t.end_ns = self.now;
        t.reclaim = None;
        t.pending = None;
        self.block(tid);
        self.exit_mmap(tid);
    }

    /// `exit_mmap` for the anon VMAs of `tid`: pages are freed, swap references dropped.
    /// Pages still under I/O or in the swap cache stay as unmapped swap-cache pages for
    /// reclaim to drop.
    pub fn exit_mmap(&mut self, tid: u32) {
        for v in 0..self.vmas.len() {
            if self.vmas[v].task != tid {
                continue;
            }
            // Shared mappings (shmem, files) only lose their PTEs; the pages stay cached.
            let shared = self.vmas[v].shmem.is_some() || self.vmas[v].file.is_some();
            for i in 0..self.vmas[v].pte.len() {
                let e = std::mem::take(&mut self.vmas[v].pte[i]);
                if shared {
                    continue;
                }
                if e & pte::SWAP != 0 {
                    let entry = Entry(e & !pte::SWAP);
                    let m = self.tasks[tid as usize].memcg;
                    self.memcgs[m as usize].swap_usage = self.memcgs[m as usize].swap_usage.saturating_sub(1);
                    self.swap.area(entry).put(entry.slot());
                } else if let Some(f) = pte::frame(e) {
                    self.frames.set_owner(f, Owner::None, 0);
                    self.frames.clear(f, pg::DIRTY);
                    if !self.frames.test(f, pg::SWAPCACHE) && !self.frames.test(f, pg::WRITEBACK | pg::LOCKED) {
                        let m = self.frames.memcg[f as usize] as usize;
                        let crate::engine::Sim { memcgs, frames, .. } = self;
                        memcgs[m].lru.del(frames, f);
                        self.free_frame(f);
                    }
                }
            }
        }
    }

    // ---- invariants -----------------------------------------------------------------

    /// Checks the model's invariants: every frame free or on exactly the list its memcg
    /// counts; list lengths match; memcg usage matches charged frames; swap-cache pages
    /// and slots agree; every slot's reference count equals the PTEs and shmem slots that
    /// point at it; `inuse` matches the map.
    pub fn verify(&self) -> Result<(), String> {
        let n = self.frames.len();
        let mut seen = vec![false; n as usize];
        let mut charged = vec![0u64; self.memcgs.len()];
        // zsmalloc's frames are off the LRU and charged to no memcg (they are in frame
        // memcg 0, taken back out below); zswap charges compressed bytes as pages instead.
        for &f in &self.zs_frames {
            if seen[f as usize] || self.frames.memcg[f as usize] != 0 {
                return Err(format!("zsmalloc frame {f} listed twice or charged to a memcg"));
            }
            seen[f as usize] = true;
        }
        for (mi, c) in charged.iter_mut().enumerate() {
            *c = self.zswap.memcg_pages(mi);
        }
        for (mi, m) in self.memcgs.iter().enumerate() {
            for l in [
                LruList::InactiveAnon,
                LruList::ActiveAnon,
                LruList::InactiveFile,
                LruList::ActiveFile,
                LruList::Unevictable,
            ] {
                let mut cnt = 0;
                for f in m.lru.walk(&self.frames, l) {
                    if seen[f as usize] {
                        return Err(format!("frame {f} on two lists"));
                    }
                    seen[f as usize] = true;
                    cnt += 1;
                    if self.frames.lru[f as usize] != l as u8 || self.frames.memcg[f as usize] as usize != mi {
                        return Err(format!("frame {f}: lru/memcg fields disagree with list {l:?} of memcg {mi}"));
                    }
                    if self.frames.test(f, pg::ACTIVE) != l.is_active() {
                        return Err(format!("frame {f}: PG_active disagrees with list {l:?}"));
                    }
                }
                if cnt != m.lru.size(l) {
                    return Err(format!("memcg {mi} list {l:?}: {cnt} frames, counter says {}", m.lru.size(l)));
                }
            }
        }
        for f in 0..n {
            let on_list = seen[f as usize];
            let free = self.frames.is_free(f);
            if on_list == free {
                return Err(format!("frame {f}: free={free} on_list={on_list}"));
            }
            if !free {
                charged[self.frames.memcg[f as usize] as usize] += 1;
            }
        }
        charged[0] -= self.zs_frames.len() as u64;
        for (mi, m) in self.memcgs.iter().enumerate() {
            if m.usage != charged[mi] {
                return Err(format!("memcg {mi}: usage {} but {} frames charged", m.usage, charged[mi]));
            }
        }
        // Swap references from page tables and shmem objects.
        let mut refs: Vec<Vec<u8>> = self.swap.areas.iter().map(|a| vec![0u8; a.nslots as usize]).collect();
        for v in &self.vmas {
            for &e in &v.pte {
                if e & pte::SWAP != 0 {
                    let en = Entry(e & !pte::SWAP);
                    refs[en.area()][en.slot() as usize] += 1;
                }
            }
        }
        for o in &self.shmem {
            for &e in &o.slots {
                if e & pte::SWAP != 0 {
                    let en = Entry(e & !pte::SWAP);
                    refs[en.area()][en.slot() as usize] += 1;
                }
            }
        }
        for (ai, a) in self.swap.areas.iter().enumerate() {
            let mut inuse = 0;
            for s in 1..a.nslots {
                let b = a.map[s as usize];
                if b != 0 {
                    inuse += 1;
                }
                if a.count(s) != refs[ai][s as usize] {
                    return Err(format!(
                        "swap {ai} slot {s}: count {} but {} references",
                        a.count(s),
                        refs[ai][s as usize]
                    ));
                }
                match a.cached(s) {
                    Some(f) => {
                        if !a.has_cache(s)
                            || !self.frames.test(f, pg::SWAPCACHE)
                            || self.frames.swap[f as usize] != Entry::new(ai as u32, s).0
                        {
                            return Err(format!("swap {ai} slot {s}: swap cache and frame {f} disagree"));
                        }
                    }
                    None => {
                        if a.has_cache(s) {
                            return Err(format!("swap {ai} slot {s}: SWAP_HAS_CACHE without a page"));
                        }
                    }
                }
            }
            if inuse != a.inuse {
                return Err(format!("swap {ai}: inuse {} but {inuse} slots in use", a.inuse));
            }
        }
        for (ai, a) in self.files.iter().enumerate() {
            let mut cached = 0;
            for (i, &s) in a.slots.iter().enumerate() {
                if s == 0 {
                    continue;
                }
                cached += 1;
                let f = s - 1;
                if self.frames.is_free(f)
                    || self.frames.owner(f) != Owner::File(ai as u32)
                    || self.frames.index[f as usize] as usize != i
                {
                    return Err(format!("file {ai} page {i}: frame {f} does not point back"));
                }
                if self.frames.lru[f as usize] != LruList::InactiveFile as u8
                    && self.frames.lru[f as usize] != LruList::ActiveFile as u8
                {
                    return Err(format!("file {ai} page {i}: frame {f} is not on a file LRU list"));
                }
            }
            if cached != a.nrpages {
                return Err(format!("file {ai}: nrpages {} but {cached} pages cached", a.nrpages));
            }
        }
        for f in 0..n {
            if let Owner::File(a) = self.frames.owner(f) {
                let i = self.frames.index[f as usize] as usize;
                if self.files.get(a as usize).is_none_or(|m| m.slots[i] != f + 1) {
                    return Err(format!("frame {f}: owned by file {a} page {i}, which does not hold it"));
                }
            }
            if !self.frames.is_free(f) && self.frames.test(f, pg::SWAPCACHE) {
                let en = Entry(self.frames.swap[f as usize]);
                if self.swap.area_ref(en).cached(en.slot()) != Some(f) {
                    return Err(format!("frame {f}: PG_swapcache but slot does not point back"));
                }
            }
        }
        self.verify_compressed()
    }
}

/// Whether pre-3.11 kswapd takes its `congestion_wait` nap at the end of a priority pass.
#[derive(Debug, PartialEq, Eq)]
enum NapDecision {
    /// Priority still at DEF_PRIORITY - 2 or above, or nothing scanned: no nap.
    NotTroubled,
    /// Troubled and free memory above min: `congestion_wait(BLK_RW_ASYNC, HZ/10)`.
    Naps,
    /// Troubled, but a zone is under its min watermark (`has_under_min_watermark_zone`):
    /// kswapd keeps reclaiming (`kswapd_skip_congestion_wait`).
    SkippedUnderMin,
}

/// `balance_pgdat` (3.6): after a pass below DEF_PRIORITY - 2 that scanned something,
/// kswapd naps unless free memory fails the min watermark, which `__zone_watermark_ok`
/// does at `free <= min` already.
fn kswapd_nap_pre_3_11(sc: &ScanControl, free: u64, min: u64) -> NapDecision {
    if sc.nr_scanned == 0 || sc.priority + 2 >= DEF_PRIORITY {
        NapDecision::NotTroubled
    } else if free <= min {
        NapDecision::SkippedUnderMin
    } else {
        NapDecision::Naps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pre_3_11_kswapd_naps_below_priority_10_unless_free_memory_fails_the_min_watermark() {
        let sc = |priority, nr_scanned| ScanControl { priority, nr_scanned, ..ScanControl::new(32, None, true) };
        // DEF_PRIORITY 12: passes at 12, 11 and 10 never nap, nor one that scanned nothing.
        assert_eq!(kswapd_nap_pre_3_11(&sc(10, 100), 500, 1000), NapDecision::NotTroubled);
        assert_eq!(kswapd_nap_pre_3_11(&sc(9, 0), 5000, 1000), NapDecision::NotTroubled);
        assert_eq!(kswapd_nap_pre_3_11(&sc(9, 100), 1001, 1000), NapDecision::Naps);
        // At exactly the min watermark the zone already fails it.
        assert_eq!(kswapd_nap_pre_3_11(&sc(9, 100), 1000, 1000), NapDecision::SkippedUnderMin);
        assert_eq!(kswapd_nap_pre_3_11(&sc(0, 100), 10, 1000), NapDecision::SkippedUnderMin);
    }
}
