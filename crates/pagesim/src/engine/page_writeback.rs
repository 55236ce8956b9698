//! Dirtying and writing page-cache folios, and holding dirtiers to the dirty limits.
//!
//! Models mm/page-writeback.c: `folio_mark_dirty` for a page-cache folio (with
//! `folio_account_dirtied` and the inode's `__mark_inode_dirty`), `folio_clear_dirty_for_io`
//! with `folio_start_writeback`, `write_cache_pages` (cyclic from `writeback_index`, by the
//! dirty tag), `global_dirty_limits` over the node's memory, and `balance_dirty_pages` in
//! its two forms (2.6.35's write-and-wait, 3.2+'s IO-less pauses; writeback/throttle.rs holds
//! the latter's arithmetic).
//!
//! ```text
//!   write(2) ──▶ folio_mark_dirty ──▶ nr_dirty, nr_dirtied, tag, inode on b_dirty
//!            └─▶ balance_dirty_pages_ratelimited ──(over the limits)──▶ throttle the task
//!   flusher / fsync / throttled dirtier / pageout ──▶ write_cache_pages ──▶ file_writepage
//!            ──▶ PG_writeback, nr_writeback, pgpgout ──▶ (completion) nr_written, rotation
//! ```

use crate::device::IoDir;
use crate::engine::Sim;
use crate::ids::{FileId, Pfn, Tid, WbId};
use crate::mm::vmstat::Counter;
use crate::mm::{pg, pte};
use crate::pagecache::{FileSync, ReadStep, SyncOp, Tag};
use crate::profile::DirtyThrottle;
use crate::writeback::throttle::{
    dirty_poll_interval, max_pause_ns, min_pause, update_dirty_limit, Bdp, Position, BANDWIDTH_INTERVAL_NS,
    EXCEEDED_RATELIMIT, HZ, JIFFY_NS, RATELIMIT_CALC_SHIFT,
};
use crate::writeback::{DirtyLimits, MemoryState, WbWork, WorkKind};

impl Sim {
    /// `folio_mark_dirty` on page-cache folio `f` of file `fi`: a clean folio becomes dirty
    /// and is accounted (`folio_account_dirtied`: NR_FILE_DIRTY, NR_DIRTIED, the memcg's),
    /// tagged dirty in its mapping, and its inode is marked dirty (`__mark_inode_dirty`),
    /// which arms the flusher's periodic wakeup when its device had no dirty inode. Returns
    /// whether the folio was clean.
    /// `tid` is the task that dirtied it (its share of dirtied pages grows: `task_dirty_inc`).
    pub(crate) fn folio_mark_dirty(&mut self, f: Pfn, fi: FileId, tid: Option<Tid>) -> bool {
        if self.mm.frames.test(f, pg::DIRTY) {
            return false;
        }
        self.mm.frames.set(f, pg::DIRTY);
        let (idx, nr, m) = (self.mm.frames.index[f] as u64, self.mm.frames.nr_pages(f), self.mm.frames.memcg[f]);
        self.pc.files[fi].tag_dirty(idx, nr);
        self.mm.nr_dirty += nr;
        self.mm.memcgs[m as usize].nr_dirty += nr;
        self.mm.count(Counter::NrDirtied, m, nr);
        // The inode goes to the dirtier's memcg (write(2) and page_mkwrite update the file's
        // times first, which attaches it by `current`); without a task, the page's.
        let owner = tid.map_or(m as u32, |t| self.sched.tasks[t].memcg as u32);
        let wb = self.inode_attach_wb(fi, owner);
        let w = &mut self.wb.wbs[wb.idx()];
        w.nr_reclaimable += nr;
        w.dirtied += nr;
        if let Some(t) = tid {
            let crate::writeback::Writeback { dirties, task_dirties, .. } = &mut self.wb;
            dirties.inc(&mut task_dirties[t.idx()], nr);
        }
        if self.wb.mark_inode_dirty(wb, fi, self.sched.now) {
            self.wb_wakeup_delayed(wb);
        }
        true
    }

    /// `inode_attach_wb`: the wb of file `fi`, attached when memcg `memcg` first dirties it
    /// (the memcg's wb with cgroup writeback, the device's root wb otherwise).
    pub(crate) fn inode_attach_wb(&mut self, fi: FileId, memcg: u32) -> WbId {
        if let Some(wb) = self.wb.inodes[fi.idx()].wb {
            return wb;
        }
        let wb = self.wb.wb_of(self.pc.files[fi].dev, memcg);
        self.wb.inodes[fi.idx()].wb = Some(wb);
        wb
    }

    /// The wb `balance_dirty_pages_ratelimited` throttles task `tid` against after it dirtied
    /// a page of file `fi` (`wb_get_create_current`: its own memcg's wb on the file's device,
    /// whichever wb the inode belongs to).
    pub(crate) fn current_wb(&self, tid: Tid, fi: FileId) -> WbId {
        self.wb.wb_of(self.pc.files[fi].dev, self.sched.tasks[tid].memcg as u32)
    }

    /// `inode_to_wb`: the wb of file `fi` (its device's root wb until a page dirties it).
    pub(crate) fn inode_to_wb(&self, fi: FileId) -> WbId {
        self.wb.inodes[fi.idx()].wb.unwrap_or(WbId(self.pc.files[fi].dev.0))
    }

    /// `folio_clear_dirty_for_io` + `folio_start_writeback` for dirty page-cache folio `f`
    /// of file `fi`: the dirty pages become pages under writeback.
    fn folio_start_writeback(&mut self, f: Pfn, fi: FileId) {
        // folio_mkclean: every shared mapping is write-protected and cleaned, so that the
        // next write through it faults and dirties the folio again.
        self.for_each_file_pte(f, fi, |e| *e &= !(pte::WRITE | pte::DIRTY));
        self.folio_account_cleaned(f, fi);
        let (idx, nr) = (self.mm.frames.index[f] as u64, self.mm.frames.nr_pages(f));
        self.mm.frames.set(f, pg::WRITEBACK);
        self.mm.account_writeback(f, true);
        self.pc.files[fi].tag_writeback(idx, true);
        let wb = self.inode_to_wb(fi);
        self.wb.wbs[wb.idx()].nr_writeback += nr;
    }

    /// `folio_account_cleaned` with the clearing of PG_dirty and the dirty tag: dirty folio
    /// `f` of file `fi` is clean again (going under writeback, or dropped by truncate).
    pub(crate) fn folio_account_cleaned(&mut self, f: Pfn, fi: FileId) {
        let (idx, nr, m) = (self.mm.frames.index[f] as u64, self.mm.frames.nr_pages(f), self.mm.frames.memcg[f]);
        self.mm.frames.clear(f, pg::DIRTY);
        self.pc.files[fi].clear_dirty_tag(idx, nr);
        self.mm.nr_dirty -= nr;
        self.mm.memcgs[m as usize].nr_dirty -= nr;
        let wb = self.inode_to_wb(fi);
        self.wb.wbs[wb.idx()].nr_reclaimable -= nr;
    }

    /// `->writepage` of dirty page-cache folio `f`: it goes under writeback (with
    /// PG_reclaim when reclaim writes it, so that it rotates to the inactive tail when the
    /// write ends) and one bio for the folio joins the current plug of its device.
    pub(crate) fn file_writepage(&mut self, f: Pfn, fi: FileId, for_reclaim: bool) {
        self.folio_start_writeback(f, fi);
        if for_reclaim {
            self.mm.frames.set(f, pg::RECLAIM);
        }
        let nr = self.mm.frames.nr_pages(f);
        let (dev, off) = {
            let a = &self.pc.files[fi];
            (a.dev, a.offset_of(self.mm.frames.index[f] as u64))
        };
        self.submit_folio_bio(dev, off, f, IoDir::Write, nr * 4096);
        let m = self.mm.frames.memcg[f];
        self.mm.count(Counter::PgpgOut, m, 4 * nr);
        self.charge(self.cost.writepage_ns);
    }

    /// `write_cache_pages` (`do_writepages` of a simple filesystem) for file `fi`: writes
    /// up to `nr_to_write` dirty pages under one plug, by the dirty tag; folios already under
    /// writeback are skipped (WB_SYNC_NONE). `cyclic`: from `writeback_index`; reaching the
    /// end of the file, ≤4.19 wraps around to its start in the same call, later kernels set
    /// `writeback_index` to 0 and stop. Not cyclic: the whole file from its start. Stops
    /// early when the device has no free write request (the caller sleeps in
    /// `get_request_wait` and calls again). Returns the pages written.
    pub(crate) fn write_cache_pages(&mut self, fi: FileId, nr_to_write: u64, cyclic: bool) -> u64 {
        let dev = self.pc.files[fi].dev;
        let start = if cyclic { self.pc.files[fi].writeback_index } else { 0 };
        let mut written = 0u64;
        let mut done_index = start;
        let mut full = false;
        let wrap = cyclic && start > 0 && self.wb.rules.cyclic_wraps;
        let passes: &[(u64, u64)] = if wrap { &[(start, u64::MAX), (0, start)] } else { &[(start, u64::MAX)] };
        for &(from, to) in passes {
            let mut i = from;
            while written < nr_to_write && !full {
                let Some(idx) = self.pc.files[fi].next_dirty(i, to) else { break };
                let f = self.pc.files[fi].frame(idx).expect("a dirty-tagged folio is cached");
                let nr = self.mm.frames.nr_pages(f);
                i = idx + nr;
                if self.mm.frames.test(f, pg::WRITEBACK | pg::LOCKED) {
                    continue;
                }
                self.file_writepage(f, fi, false);
                written += nr;
                done_index = idx + nr;
                full = self.io.devices[dev].write_full();
            }
            if written >= nr_to_write || full {
                break;
            }
        }
        if cyclic || written < nr_to_write {
            // Short of the budget with room in the queue: the scan reached the end of the
            // file; a kernel without the wrap-around restarts at 0 next time.
            let reached_end = written < nr_to_write && !full;
            let a = &mut self.pc.files[fi];
            let restart = reached_end && !self.wb.rules.cyclic_wraps;
            a.writeback_index = if restart || done_index >= a.nr_pages { 0 } else { done_index };
        }
        self.unplug(dev);
        written
    }

    /// The memory the dirty limits are computed from, now.
    fn dirty_memory_state(&self) -> MemoryState {
        let lru = self.mm.lru_exact(0);
        MemoryState {
            free: self.mm.nr_free(),
            anon: lru[0] + lru[1],
            file: lru[2] + lru[3],
            swap_free: self.swap.areas.iter().any(|a| a.nr_free() > 0),
            reserve: self.tun.wmark.high,
        }
    }

    /// `global_dirty_limits`: the background and hard limits, in pages, now.
    pub(crate) fn global_dirty_limits(&self) -> DirtyLimits {
        let dirtyable = self.wb.rules.dirtyable.pages(&self.dirty_memory_state());
        self.wb.limits(dirtyable)
    }

    /// Dirty pages that count against the limits: `NR_FILE_DIRTY` + `NR_WRITEBACK`
    /// (+ unstable NFS pages, which the model has none of).
    pub(crate) fn dirty_and_writeback(&self) -> u64 {
        self.mm.nr_dirty + self.mm.nr_writeback
    }

    /// `wb_over_bg_thresh` for wb `wb` (2.6.35 `over_bground_thresh`): dirty pages over
    /// the background limit, or (3.2+) the wb's dirty pages over its share of it; with cgroup
    /// writeback, for a memcg's wb also while its memcg's domain is over its own background
    /// limit or the wb over its share of that.
    pub(crate) fn wb_over_bg_thresh(&mut self, wb: WbId) -> bool {
        let bg = self.global_dirty_limits().background;
        if self.wb.order.over_background(self.mm.nr_dirty, bg) {
            return true;
        }
        // wb_bg_dirty_limits of the global domain (3.2+): a wb over its share of the
        // background limit writes too (the only wb writing has all of it).
        let ioless = self.wb.rules.throttle == DirtyThrottle::IoLess;
        if ioless && self.wb.wbs[wb.idx()].nr_reclaimable > self.bdi_dirty_limit(wb, bg, None) {
            return true;
        }
        let Some(d) = self.memcg_domain(wb, false) else { return false };
        if d.dirty > d.limits.background {
            return true;
        }
        let wb_bg_thresh = self.memcg_wb_share(wb, d.limits.background);
        self.wb.wbs[wb.idx()].nr_reclaimable > wb_bg_thresh
    }

    /// The dirty domain of wb `wb`'s memcg (`mdtc`: `domain_dirty_avail` and
    /// `domain_dirty_limits`), when cgroup writeback gives it one: its dirty pages (with
    /// those under writeback if `include_writeback`), dirtyable pages and limits.
    fn memcg_domain(&self, wb: WbId, include_writeback: bool) -> Option<MemcgDomainState> {
        let m = self.wb.wbs[wb.idx()].memcg;
        if !self.wb.cgwb || m == 0 {
            return None;
        }
        let global_avail = self.wb.rules.dirtyable.pages(&self.dirty_memory_state());
        let global_dirty = self.mm.nr_dirty + if include_writeback { self.mm.nr_writeback } else { 0 };
        // mem_cgroup_wb_stats: the memcg's file LRU pages, dirty and writeback pages, and
        // how far it and its ancestors are from their limits.
        let headroom = self.mm.margin(m as u16);
        let mc = &self.mm.memcgs[m as usize];
        let lru = self.mm.lru_exact(m as u16);
        let filepages = lru[2] + lru[3];
        let dirty = mc.nr_dirty + if include_writeback { mc.nr_writeback } else { 0 };
        let avail = crate::writeback::thresholds::memcg_avail(filepages, headroom, dirty, global_avail, global_dirty);
        Some(MemcgDomainState { dirty, limits: self.wb.sysctl.memcg_limits(avail, global_avail) })
    }

    /// Wb `wb`'s share of `thresh` in its memcg's domain (`__wb_calc_thresh` of an mdtc):
    /// its share of the memcg's recently completed writeback (none before its first).
    fn memcg_wb_share(&mut self, wb: WbId, thresh: u64) -> u64 {
        let (m, now) = (self.wb.wbs[wb.idx()].memcg as usize, self.sched.now);
        let crate::writeback::Writeback { wbs, domains, .. } = &mut self.wb;
        let (n, d) = domains[m].completions.fraction(&mut wbs[wb.idx()].memcg_completions, now);
        (thresh as u128 * n as u128 / d as u128) as u64
    }
}

/// A memcg's dirty domain now (`struct dirty_throttle_control` of a memcg).
#[derive(Clone, Copy, Debug)]
struct MemcgDomainState {
    dirty: u64,
    limits: DirtyLimits,
}

impl Sim {
    /// Starts task `tid`'s whole-file call `op` on file `fi`; `counts`: it is an operation
    /// of the task's own (an fsync step, a replayed fsync), not part of another (the fsync
    /// of a write step's `fsync_every`, the writeback a replayed close starts).
    pub(crate) fn file_sync_begin(&mut self, tid: Tid, fi: FileId, op: SyncOp, counts: bool) {
        self.charge(self.cost.write_syscall_ns);
        let st = FileSync { file: fi, op, index: 0, waiting: false, counts, locked: false };
        self.sched.tasks[tid].sync = Some(st);
    }

    /// Runs task `tid`'s whole-file call until it is done, blocks, or the burst ends.
    /// fsync (`file_write_and_wait_range`): a WB_SYNC_ALL pass over the dirty pages (one
    /// already under writeback is waited for, then written again), then a wait for every
    /// page under writeback (`filemap_fdatawait`). sync_file_range's SYNC_FILE_RANGE_WRITE:
    /// the pass without the waits. Truncate: mm/truncate.c (engine/truncate.rs).
    pub(crate) fn file_sync_step(&mut self, tid: Tid, limit: u64) -> ReadStep {
        loop {
            let Some(mut st) = self.sched.tasks[tid].sync else { return ReadStep::Done };
            if self.sched.now >= limit {
                return ReadStep::Yield;
            }
            let fi = st.file;
            let dev = self.pc.files[fi].dev;
            if st.op == SyncOp::Truncate && !st.locked {
                if !self.inode_lock(tid, fi) {
                    return ReadStep::Blocked;
                }
                continue;
            }
            if st.op == SyncOp::Truncate || st.waiting {
                // filemap_fdatawait: the next page under writeback, in file order.
                match self.pc.files[fi].next_tagged(Tag::Writeback, st.index, u64::MAX) {
                    Some(idx) => {
                        let f = self.pc.files[fi].frame(idx).expect("a tagged folio is cached");
                        st.index = idx;
                        self.sched.tasks[tid].sync = Some(st);
                        self.sleep_on_page(tid, f);
                        return ReadStep::Blocked;
                    }
                    None if st.op == SyncOp::Truncate => {
                        if let Some(f) = self.truncate_inode_pages(fi) {
                            // A read in flight: wait for it, then go on.
                            self.sched.tasks[tid].sync = Some(st);
                            self.sleep_on_page(tid, f);
                            return ReadStep::Blocked;
                        }
                        self.sched.tasks[tid].sync = None;
                        self.inode_unlock(fi);
                        return ReadStep::Done;
                    }
                    None => {
                        self.sched.tasks[tid].sync = None;
                        return ReadStep::Done;
                    }
                }
            }
            match self.pc.files[fi].next_dirty(st.index, u64::MAX) {
                Some(idx) => {
                    let f = self.pc.files[fi].frame(idx).expect("a dirty-tagged folio is cached");
                    if self.mm.frames.test(f, pg::WRITEBACK | pg::LOCKED) {
                        if st.op == SyncOp::StartWrite {
                            st.index = idx + self.mm.frames.nr_pages(f);
                            self.sched.tasks[tid].sync = Some(st);
                            continue;
                        }
                        // WB_SYNC_ALL: wait for the write in flight, then write it again.
                        self.unplug(dev);
                        st.index = idx;
                        self.sched.tasks[tid].sync = Some(st);
                        self.sleep_on_page(tid, f);
                        return ReadStep::Blocked;
                    }
                    self.file_writepage(f, fi, false);
                    st.index = idx + self.mm.frames.nr_pages(f);
                    self.sched.tasks[tid].sync = Some(st);
                    if self.io.devices[dev].write_full() {
                        self.unplug(dev);
                        self.get_request_wait(tid, dev);
                        return ReadStep::Blocked;
                    }
                }
                None => {
                    self.unplug(dev);
                    if st.op == SyncOp::StartWrite {
                        self.sched.tasks[tid].sync = None;
                        return ReadStep::Done;
                    }
                    st.waiting = true;
                    st.index = 0;
                    self.sched.tasks[tid].sync = Some(st);
                }
            }
        }
    }
}

/// How a `balance_dirty_pages` call ended for now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Throttled {
    /// The task goes on dirtying.
    No,
    /// The task sleeps (a pause, or a device request); its call resumes when it runs.
    Sleeps,
}

impl Sim {
    /// `balance_dirty_pages_ratelimited` after task `tid`, on `cpu`, dirtied a page of a
    /// file whose wb is `wb`: the task calls `balance_dirty_pages` when its CPU dirtied
    /// `ratelimit_pages` (8 while the device is over its limit) since a task there last
    /// called it (2.6.35), or when it dirtied `nr_dirtied_pause` pages itself (3.2+). The
    /// call is armed in the task (`Task::bdp`); returns whether it is due (the write path
    /// runs it at once; after a fault, the task's burst runs it before the next access).
    pub(crate) fn balance_dirty_pages_ratelimited(&mut self, tid: Tid, cpu: u32, wb: WbId) -> bool {
        let t = &mut self.sched.tasks[tid];
        t.nr_dirtied += 1;
        match self.wb.rules.throttle {
            DirtyThrottle::WriteAndWait => {
                let limit =
                    if self.wb.wbs[wb.idx()].dirty_exceeded { EXCEEDED_RATELIMIT } else { self.wb.ratelimit_pages };
                let c = &mut self.wb.bdp_ratelimits[cpu as usize];
                *c += 1;
                if *c < limit {
                    return false;
                }
                // sync_writeback_pages: half as much again as was dirtied.
                let n = (*c).max(self.wb.ratelimit_pages);
                *c = 0;
                t.bdp = Some(Bdp { wb, write_chunk: n + n / 2, pages_written: 0, pause_ns: JIFFY_NS });
            }
            DirtyThrottle::IoLess => {
                let limit = if self.wb.wbs[wb.idx()].dirty_exceeded {
                    t.nr_dirtied_pause.min(EXCEEDED_RATELIMIT)
                } else {
                    t.nr_dirtied_pause
                };
                if t.nr_dirtied < limit {
                    return false;
                }
                t.bdp = Some(Bdp { wb, write_chunk: 0, pages_written: 0, pause_ns: 0 });
            }
        }
        true
    }

    /// Runs (or resumes) task `tid`'s `balance_dirty_pages` call.
    pub(crate) fn balance_dirty_pages(&mut self, tid: Tid) -> Throttled {
        match self.wb.rules.throttle {
            DirtyThrottle::WriteAndWait => self.balance_dirty_pages_2_6_35(tid),
            DirtyThrottle::IoLess => self.balance_dirty_pages_ioless(tid),
        }
    }

    /// The device's (wb's) share of the global limit `thresh` (`bdi_dirty_limit`,
    /// `wb_calc_thresh`: its share of recently completed writeback), less up to an eighth
    /// for a task that dirtied most of the recent pages (`task_dirty_limit`, 2.6.35), never
    /// below half.
    fn bdi_dirty_limit(&mut self, wb: WbId, thresh: u64, tid: Option<Tid>) -> u64 {
        let now = self.sched.now;
        let crate::writeback::Writeback { wbs, completions, flex_completions, dirties, task_dirties, rules, .. } =
            &mut self.wb;
        if rules.flex_proportions {
            // __wb_calc_thresh. The run starts on a machine that has run before: while no
            // writeback at all completed (or all of it aged away), a wb has the whole limit,
            // as the only device writing has all of the share (a fresh kernel gives none).
            let (n, d) = flex_completions.fraction(&mut wbs[wb.idx()].flex_completions, now);
            if flex_completions.events == 0 {
                return thresh;
            }
            return (thresh as u128 * n as u128 / d as u128) as u64;
        }
        let (n, d) = completions.fraction(&mut wbs[wb.idx()].completions);
        // A device that completed nothing yet gets the whole limit when it is the only one
        // writing (prop's first period gives every share 0 otherwise).
        let bdi_thresh = if completions.events == 0 { thresh } else { (thresh as u128 * n as u128 / d as u128) as u64 };
        let Some(t) = tid else { return bdi_thresh };
        let (tn, td) = dirties.fraction(&mut task_dirties[t.idx()]);
        let cut = (bdi_thresh / 8) as u128 * tn as u128 / td as u128;
        (bdi_thresh - cut as u64).max(bdi_thresh / 2)
    }

    /// 2.6.35 `balance_dirty_pages`: while the device is over its share of the limit and
    /// the system past the midpoint between the background and hard limits, the task writes
    /// up to `write_chunk` pages of the device's inodes itself (as the flusher would, through
    /// the same inode lists), then sleeps 1, 2, 4 ... jiffies (at most HZ/10) until the
    /// device is under its limit or the task has done its share. At the end it starts
    /// background writeback if dirty pages are over the background limit.
    fn balance_dirty_pages_2_6_35(&mut self, tid: Tid) -> Throttled {
        let mut st = self.sched.tasks[tid].bdp.expect("a balance_dirty_pages call");
        let wb = st.wb;
        // One turn of the kernel's loop: the task's wakeups resume it here.
        'turn: {
            let limits = self.global_dirty_limits();
            let bdi_thresh = self.bdi_dirty_limit(wb, limits.dirty, Some(tid));
            let w = &self.wb.wbs[wb.idx()];
            let bdi_rec = w.nr_reclaimable;
            if w.wb_dirty() <= bdi_thresh || self.dirty_and_writeback() < (limits.background + limits.dirty) / 2 {
                break 'turn;
            }
            self.wb.wbs[wb.idx()].dirty_exceeded = true;
            if bdi_rec > bdi_thresh && st.pages_written < st.write_chunk {
                let now = self.sched.now;
                let mut work = WbWork {
                    kind: WorkKind::Throttle,
                    nr_pages: st.write_chunk - st.pages_written,
                    start_ns: now,
                    range_cyclic: true,
                };
                let before = work.nr_pages;
                let full = self.writeback_inodes_wb(wb, &mut work);
                st.pages_written += before - work.nr_pages;
                if let Some(d) = full {
                    // Its own writes filled the queue: it sleeps for a request and goes on.
                    self.sched.tasks[tid].bdp = Some(st);
                    self.get_request_wait(tid, d);
                    return Throttled::Sleeps;
                }
            }
            let bdi_thresh = self.bdi_dirty_limit(wb, limits.dirty, Some(tid));
            if self.wb.wbs[wb.idx()].wb_dirty() <= bdi_thresh || st.pages_written >= st.write_chunk {
                break 'turn;
            }
            // io_schedule_timeout(pause)
            let pause = st.pause_ns;
            st.pause_ns = (st.pause_ns * 2).min(HZ / 10 * JIFFY_NS);
            self.sched.tasks[tid].bdp = Some(st);
            return self.dirty_throttle_pause(tid, wb, self.dirty_and_writeback(), limits.dirty, pause);
        }
        self.sched.tasks[tid].bdp = None;
        let limits = self.global_dirty_limits();
        let bdi_thresh = self.bdi_dirty_limit(wb, limits.dirty, Some(tid));
        let w = &mut self.wb.wbs[wb.idx()];
        if w.wb_dirty() < bdi_thresh {
            w.dirty_exceeded = false;
        }
        if !w.writeback_in_progress() && self.mm.nr_dirty > limits.background {
            self.wb_start_background_writeback(wb);
        }
        Throttled::No
    }
}

impl Sim {
    /// The throttle's view of the dirty pages against the global limits for wb `wb`
    /// (`gdtc`).
    fn dirty_position(&mut self, wb: WbId) -> Position {
        let limits = self.global_dirty_limits();
        let wb_thresh = self.bdi_dirty_limit(wb, limits.dirty, None);
        let w = &self.wb.wbs[wb.idx()];
        Position {
            dirty: self.dirty_and_writeback(),
            bg_thresh: limits.background,
            thresh: limits.dirty,
            limit: limits.dirty.max(self.wb.dirty_limit),
            wb_dirty: w.wb_dirty(),
            wb_thresh,
        }
    }

    /// The same against wb `wb`'s memcg domain (`mdtc`), when cgroup writeback gives it one:
    /// the memcg's dirty + writeback pages, its limits, its slowly following limit, and the
    /// wb's share of its limit.
    fn memcg_dirty_position(&mut self, wb: WbId) -> Option<Position> {
        let d = self.memcg_domain(wb, true)?;
        let wb_thresh = self.memcg_wb_share(wb, d.limits.dirty);
        let m = self.wb.wbs[wb.idx()].memcg as usize;
        Some(Position {
            dirty: d.dirty,
            bg_thresh: d.limits.background,
            thresh: d.limits.dirty,
            limit: d.limits.dirty.max(self.wb.domains[m].dirty_limit),
            wb_dirty: self.wb.wbs[wb.idx()].wb_dirty(),
            wb_thresh,
        })
    }

    /// `__wb_update_bandwidth` from `balance_dirty_pages`: at most every 200 ms, the
    /// domains' dirty limits, the wb's dirty rate limit (against the global domain, then the
    /// memcg's) and its write bandwidth.
    fn wb_update_bandwidth_throttled(&mut self, wb: WbId, pos: &Position, mpos: Option<&Position>) {
        let now = self.sched.now;
        if now.saturating_sub(self.wb.dirty_limit_tstamp) >= BANDWIDTH_INTERVAL_NS {
            self.wb.dirty_limit = update_dirty_limit(self.wb.dirty_limit, pos.thresh, pos.dirty);
            self.wb.dirty_limit_tstamp = now;
        }
        // The CPUs' clocks differ by up to a step: a stamp set ahead of this CPU is no time.
        let elapsed = now.saturating_sub(self.wb.wbs[wb.idx()].bw.bw_time_stamp);
        if let Some(mp) = mpos.filter(|_| elapsed >= BANDWIDTH_INTERVAL_NS) {
            // Inside __wb_update_bandwidth, which runs once the wb's estimate is stale.
            let d = &mut self.wb.domains[self.wb.wbs[wb.idx()].memcg as usize];
            if now.saturating_sub(d.dirty_limit_tstamp) >= BANDWIDTH_INTERVAL_NS {
                d.dirty_limit = update_dirty_limit(d.dirty_limit, mp.thresh, mp.dirty);
                d.dirty_limit_tstamp = now;
            }
        }
        let w = &mut self.wb.wbs[wb.idx()];
        if elapsed >= BANDWIDTH_INTERVAL_NS {
            // Before the write bandwidth update moves the stamps this reads.
            w.bw.update_dirty_ratelimit(pos, w.dirtied, elapsed);
            if let Some(mp) = mpos {
                w.bw.update_dirty_ratelimit(mp, w.dirtied, elapsed);
            }
        }
        self.wb_update_bandwidth(wb);
    }

    /// 3.2+ IO-less `balance_dirty_pages`: below the freerun point the task goes on (and
    /// calls again after about √(pages to the limit)); above it, background writeback is
    /// started and the task sleeps for the time its pages take at `dirty_ratelimit ×
    /// pos_ratio`, less the time it ran since its last pause, within [min_pause, max_pause].
    /// Over the hard limit (`pos_ratio` 0) it sleeps `max_pause` and looks again. With
    /// cgroup writeback the memcg's domain is checked too: the task runs free only below
    /// both freerun points, and the domain with the lower `pos_ratio` sets its pace.
    fn balance_dirty_pages_ioless(&mut self, tid: Tid) -> Throttled {
        let wb = self.sched.tasks[tid].bdp.expect("a balance_dirty_pages call").wb;
        let now = self.sched.now;
        let pos = self.dirty_position(wb);
        let mpos = self.memcg_dirty_position(wb);
        // Background writeback starts at the background limit, throttling at freerun.
        if self.mm.nr_dirty > pos.bg_thresh && !self.wb.wbs[wb.idx()].writeback_in_progress() {
            self.wb_start_background_writeback(wb);
        }
        let t = &mut self.sched.tasks[tid];
        if pos.dirty <= pos.freerun() && mpos.is_none_or(|m| m.dirty <= m.freerun()) {
            t.dirty_paused_when = now;
            t.nr_dirtied = 0;
            let m_intv = mpos.map_or(u64::MAX, |m| dirty_poll_interval(m.dirty, m.thresh));
            t.nr_dirtied_pause = dirty_poll_interval(pos.dirty, pos.thresh).min(m_intv);
            t.bdp = None;
            return Throttled::No;
        }
        if !self.wb.wbs[wb.idx()].writeback_in_progress() {
            self.wb_start_background_writeback(wb);
        }
        let exceeded = |p: &Position| p.wb_dirty > p.wb_thresh && p.dirty > p.thresh;
        self.wb.wbs[wb.idx()].dirty_exceeded = exceeded(&pos) || mpos.as_ref().is_some_and(exceeded);
        self.wb_update_bandwidth_throttled(wb, &pos, mpos.as_ref());
        let bw = &self.wb.wbs[wb.idx()].bw;
        let (avg_bw, dirty_ratelimit) = (bw.avg_write_bw, bw.dirty_ratelimit);
        // The stricter domain (sdtc).
        let mut pos_ratio = pos.pos_ratio(avg_bw);
        let mut sdtc = pos;
        if let Some(m) = mpos {
            let r = m.pos_ratio(avg_bw);
            if r < pos_ratio {
                (pos_ratio, sdtc) = (r, m);
            }
        }
        let pos = sdtc;
        let task_ratelimit = ((dirty_ratelimit as u128 * pos_ratio as u128) >> RATELIMIT_CALC_SHIFT) as u64;
        let max_pause = max_pause_ns(avg_bw, pos.wb_dirty);
        let (min_pause, next_pause_pages) = min_pause(avg_bw, dirty_ratelimit, task_ratelimit, max_pause);
        let t = &mut self.sched.tasks[tid];
        let pages_dirtied = t.nr_dirtied;
        let mut pause: i128;
        if task_ratelimit == 0 {
            pause = max_pause as i128;
        } else {
            let period = (1_000_000_000u128 * pages_dirtied as u128 / task_ratelimit as u128) as u64;
            pause = period as i128;
            if t.dirty_paused_when > 0 {
                pause -= now as i128 - t.dirty_paused_when as i128;
            }
            if pause < min_pause as i128 {
                // Too short to sleep: carry the debt into the next call.
                if pause < -1_000_000_000 {
                    t.dirty_paused_when = now;
                    t.nr_dirtied = 0;
                } else if period > 0 {
                    t.dirty_paused_when += period;
                    t.nr_dirtied = 0;
                } else if t.nr_dirtied_pause <= pages_dirtied {
                    t.nr_dirtied_pause += pages_dirtied;
                }
                t.bdp = None;
                return Throttled::No;
            }
        }
        let mut now = now;
        if pause > max_pause as i128 {
            // For an occasional dropped task_ratelimit: the debt beyond max_pause is
            // forgiven up to another max_pause.
            now += (pause as u64 - max_pause).min(max_pause);
            pause = max_pause as i128;
        }
        let pause = pause as u64;
        t.dirty_paused_when = now + pause;
        t.nr_dirtied = 0;
        t.nr_dirtied_pause = next_pause_pages.max(1);
        // Over the limit (no rate at all), the task looks again after its pause.
        if task_ratelimit > 0 {
            t.bdp = None;
        }
        self.dirty_throttle_pause(tid, wb, pos.dirty, pos.limit, pause)
    }

    /// Task `tid` sleeps `pause` in `balance_dirty_pages` on wb `wb` (`io_schedule_timeout`),
    /// with `dirty` pages against `limit`: counted in its throttled time and traced.
    fn dirty_throttle_pause(&mut self, tid: Tid, wb: WbId, dirty: u64, limit: u64, pause: u64) -> Throttled {
        self.sched.tasks[tid].throttled_ns += pause;
        let dev = self.wb.wbs[wb.idx()].dev.0;
        self.trace(crate::trace::Kind::BalanceDirtyPages { dev, dirty, limit, pause_ns: pause });
        self.block(tid);
        self.wake(tid, self.sched.now + pause);
        Throttled::Sleeps
    }
}

#[cfg(test)]
mod tests {
    use crate::ids::WbId;
    use crate::mm::pte;
    use crate::mm::vmstat::Counter;
    use crate::testutil::sim_from;

    /// A 128 MB file written to a disk, on `profile`, with `[vm]` keys `vm`.
    fn write_128mb(profile: &str, vm: &str) -> crate::engine::Sim {
        let mut s = sim_from(
            &format!(
                "[kernel]\nprofile = \"{profile}\"\n[machine]\nram = \"512MB\"\n[vm]\n{vm}\n\
                 [device.d]\nmodel = \"hdd\"\n[file.f]\ndevice = \"d\"\nsize = \"128MB\"\n\
                 [[task]]\nname = \"w\"\n[[task.step]]\nfile = \"f\"\nop = \"write\"\npattern = \"seq\"\n"
            ),
            &[],
        );
        s.run(&mut None);
        s
    }

    /// With room for every page the writer runs at memory speed; held to 16 MB of dirty
    /// pages it waits for the disk: it sleeps in balance_dirty_pages and takes about the
    /// time the disk needs for the 112 MB beyond the limit.
    #[test]
    fn a_dirtier_over_the_limit_is_throttled() {
        for profile in ["linux-6.6", "linux-3.14", "linux-2.6.35"] {
            let free = write_128mb(profile, "dirty_bytes = \"400MB\"\ndirty_background_bytes = \"300MB\"");
            let t = &free.sched.tasks[0];
            assert_eq!(t.throttled_ns, 0, "{profile}");
            let held = write_128mb(profile, "dirty_bytes = \"16MB\"\ndirty_background_bytes = \"8MB\"");
            let h = &held.sched.tasks[0];
            assert!(h.throttled_ns > 0, "{profile}: never slept");
            let disk = held.io.devices[0].stats();
            let bw = disk.write_bytes as f64 / disk.write_service_ns.max(1) as f64; // bytes/ns
            let floor = (112u64 << 20) as f64 / bw;
            let elapsed = (h.end_ns - h.start_ns) as f64;
            assert!(elapsed > 0.7 * floor, "{profile}: {elapsed} ns, the disk needs {floor}");
            assert!(elapsed > 10.0 * (t.end_ns - t.start_ns) as f64, "{profile}");
            assert!(held.mm.vmstat.get(Counter::NrWritten) >= (112 << 20) / 4096, "{profile}");
        }
    }

    /// A file of `size` on an NVMe disk, with the steps `steps` (TOML) of task `w`.
    fn file_task(size: &str, steps: &str) -> crate::engine::Sim {
        let mut s = sim_from(
            &format!(
                "[machine]\nram = \"256MB\"\n[device.d]\nmodel = \"nvme\"\n[file.f]\ndevice = \"d\"\n\
                 size = \"{size}\"\n[[task]]\nname = \"w\"\n{steps}"
            ),
            &[],
        );
        s.run(&mut None);
        s.verify().unwrap();
        s
    }

    const WRITE_ALL: &str = "[[task.step]]\nfile = \"f\"\nop = \"write\"\npattern = \"seq\"\n";

    /// fsync returns once every page it found dirty is written and no write of the file is
    /// in flight; sync_file_range only starts the writes.
    #[test]
    fn fsync_writes_and_waits_sync_file_range_only_starts() {
        let s = file_task("8MB", &format!("{WRITE_ALL}[[task.step]]\nfile = \"f\"\nop = \"fsync\"\n"));
        assert_eq!((s.mm.nr_dirty, s.mm.nr_writeback), (0, 0));
        assert_eq!(s.mm.vmstat.get(Counter::NrWritten), 2048);
        let t = &s.sched.tasks[0];
        let disk = s.io.devices[0].stats();
        assert!(t.end_ns >= disk.write_service_ns / 32, "it waited for the writes");
        assert!(s.sched.io_end_ns <= t.end_ns, "nothing left in flight");
        let s = file_task("8MB", &format!("{WRITE_ALL}[[task.step]]\nfile = \"f\"\nop = \"sync_file_range\"\n"));
        assert_eq!(s.mm.nr_dirty, 0, "every dirty page went under writeback");
        // The writes complete after the task's end (the run's end lets the devices finish).
        assert_eq!(s.mm.vmstat.get(Counter::NrWritten), 2048);
        let end = s.sched.tasks[0].end_ns;
        assert!(s.sched.io_end_ns > end, "the task did not wait for the writes");
    }

    /// `fsync_every`: 10 writes with an fsync after every 4 leave 2 pages dirty; the fsyncs
    /// are not operations of their own.
    #[test]
    fn fsync_every_n_writes() {
        let s = file_task(
            "40KB",
            "[[task.step]]\nfile = \"f\"\nop = \"write\"\npattern = \"seq\"\nrecord = \"4KB\"\nfsync_every = 4\n",
        );
        assert_eq!((s.mm.nr_dirty, s.mm.vmstat.get(Counter::NrWritten)), (2, 8));
        assert_eq!(s.sched.ops_done, 10);
    }

    /// truncate drops the file's pages, dirty ones unwritten, after its writes in flight.
    #[test]
    fn truncate_drops_dirty_pages_without_writing_them() {
        let s = file_task("8MB", &format!("{WRITE_ALL}[[task.step]]\nfile = \"f\"\nop = \"truncate\"\n"));
        assert_eq!(s.pc.files[crate::ids::FileId(0)].nrpages, 0);
        assert_eq!((s.mm.nr_dirty, s.mm.nr_writeback), (0, 0));
        assert_eq!(s.mm.vmstat.get(Counter::NrWritten), 0, "nothing was due to be written");
        assert!(!s.wb.inodes[0].dirty && !s.wb.wbs[0].has_dirty_io());
    }

    /// Appends from two tasks go at the end each time, so together they fill an empty
    /// file's space in order without writing any page twice; a read then finds the pages
    /// the appends wrote and nothing past the end.
    #[test]
    fn appends_grow_the_file_and_reads_stop_at_its_end() {
        let append = "[[task.step]]\nfile = \"f\"\nop = \"append\"\nrecord = \"8KB\"\naccesses = 16\n";
        let mut s = sim_from(
            &format!(
                "[machine]\nram = \"256MB\"\n[device.d]\nmodel = \"nvme\"\n[file.f]\ndevice = \"d\"\n\
                 size = 0\nmax_size = \"1MB\"\n[[task]]\nname = \"a\"\ncount = 2\n{append}\
                 [[task]]\nname = \"r\"\nstart = \"1s\"\n[[task.step]]\nfile = \"f\"\nop = \"read\"\npattern = \"seq\"\n"
            ),
            &[],
        );
        s.run(&mut None);
        s.verify().unwrap();
        let a = &s.pc.files[crate::ids::FileId(0)];
        assert_eq!((a.i_size, a.nr_pages), (64, 256), "2 tasks x 16 appends x 2 pages");
        assert_eq!(s.mm.vmstat.get(Counter::NrDirtied), 64, "no page written twice");
        assert!((0..64).all(|i| a.frame(i).is_some()) && (64..256).all(|i| a.frame(i).is_none()));
        assert_eq!(s.mm.vmstat.get(Counter::FileReadPages), 64, "the read stops at the end of the file");
    }

    /// After a truncate the file is empty: a read finds nothing, a write grows it again.
    #[test]
    fn truncate_empties_the_file_until_a_write_grows_it() {
        let s = file_task(
            "64KB",
            "[[task.step]]\nfile = \"f\"\nop = \"truncate\"\n\
                 [[task.step]]\nfile = \"f\"\nop = \"read\"\npattern = \"seq\"\n\
                 [[task.step]]\nfile = \"f\"\nop = \"write\"\npattern = \"random\"\nrecord = \"4KB\"\naccesses = 1\n",
        );
        assert_eq!(s.mm.vmstat.get(Counter::FileReadPages), 0);
        assert_eq!(s.io.devices[0].stats().read_bytes, 0, "nothing read from the device");
        let a = &s.pc.files[crate::ids::FileId(0)];
        let written: Vec<u64> = (0..a.nr_pages).filter(|&i| a.frame(i).is_some()).collect();
        assert_eq!(written.len(), 1);
        assert_eq!(a.i_size, written[0] + 1, "the write past the end extended the file to it");
    }

    /// Writes through a shared file mapping dirty its pages (`page_mkwrite`); msync writes
    /// them and write-protects the mapping (`folio_mkclean`), so the next pass faults again
    /// and dirties them again.
    #[test]
    fn shared_mapping_writes_dirty_pages_and_writeback_write_protects_them() {
        let pass = "[[task.step]]\nregion = \"m\"\nop = \"write\"\npattern = \"seq\"\n\
                    [[task.step]]\nregion = \"m\"\nop = \"msync\"\n";
        let mut s = sim_from(
            &format!(
                "[machine]\nram = \"256MB\"\n[device.d]\nmodel = \"nvme\"\n[file.f]\ndevice = \"d\"\n\
                 size = \"64KB\"\n[region.m]\nkind = \"file\"\nfile = \"f\"\nwritable = true\n\
                 [[task]]\nname = \"w\"\n{pass}{pass}"
            ),
            &[],
        );
        s.run(&mut None);
        s.verify().unwrap();
        let v = |c| s.mm.vmstat.get(c);
        assert_eq!((v(Counter::NrDirtied), v(Counter::NrWritten)), (32, 32), "each pass dirties and writes 16");
        assert_eq!(v(Counter::PgFault), 32, "16 first-touch faults, then 16 write-protect faults");
        assert_eq!((s.mm.nr_dirty, s.mm.nr_writeback), (0, 0));
        assert!(s.mm.vmas[0].pte.iter().all(|&e| e & (pte::WRITE | pte::DIRTY) == 0), "clean, read-only");
    }

    /// Writers in memcgs `a` (32 MB) and `b` (512 MB), each writing 16 MB to its own file on
    /// a disk and then living on for 5 s, with periodic writeback off, on 6.6 under cgroup
    /// `version`.
    fn two_memcg_writers(version: u32) -> crate::engine::Sim {
        let writer = |name: &str| {
            format!(
                "[[task]]\nname = \"{name}\"\nmemcg = \"{name}\"\n[[task.step]]\nfile = \"{name}\"\nop = \"write\"\n\
                 pattern = \"seq\"\nrecord = \"64KB\"\n[[task.step]]\nregion = \"r\"\npattern = \"random\"\n\
                 accesses = 5\nthink = \"1s\"\n"
            )
        };
        let mut s = sim_from(
            &format!(
                "[kernel]\nprofile = \"linux-6.6\"\ncgroup_version = {version}\n[machine]\nram = \"1GB\"\n\
                 [vm]\ndirty_writeback_centisecs = 0\n[device.d]\nmodel = \"hdd\"\n\
                 [file.a]\ndevice = \"d\"\nsize = \"16MB\"\n[file.b]\ndevice = \"d\"\nsize = \"16MB\"\n\
                 [region.r]\nkind = \"anon\"\nsize = \"4KB\"\n\
                 [memcg.a]\nmax = \"32MB\"\n[memcg.b]\nmax = \"512MB\"\n{}{}",
                writer("a"),
                writer("b")
            ),
            &[],
        );
        s.run(&mut None);
        s.verify().unwrap();
        s
    }

    /// Cgroup writeback (4.2+, cgroup v2): each memcg's inodes go to its own wb, and a
    /// memcg's own dirty domain throttles its writer and starts background writeback of its
    /// wb alone; on cgroup v1 there is one wb per device and only the global domain, which
    /// 32 MB of dirty pages on 1 GB stay far below.
    #[test]
    fn cgroup_writeback_gives_each_memcg_its_wb_and_dirty_domain_on_v2_only() {
        let (fa, fb) = (crate::ids::FileId(0), crate::ids::FileId(1));
        let s = two_memcg_writers(2);
        let (wa, wb) = (s.wb.inodes[0].wb.unwrap(), s.wb.inodes[1].wb.unwrap());
        assert_eq!((s.wb.wbs[wa.idx()].memcg, s.wb.wbs[wb.idx()].memcg), (1, 2), "each memcg's own wb");
        assert!(s.sched.tasks[0].throttled_ns > 0, "a's writer was throttled at its memcg's limit");
        assert_eq!(s.sched.tasks[1].throttled_ns, 0, "b's memcg has room");
        let a_dirty = s.pc.files[fa].nr_dirty;
        assert!(s.wb.wbs[wa.idx()].written > 0 && a_dirty < 4096 / 4, "a's wb wrote a's file: {a_dirty} left dirty");
        assert_eq!(s.pc.files[fb].nr_dirty, 4096, "b's file stays dirty: b's domain is under its background limit");
        assert_eq!(s.wb.wbs[wb.idx()].written, 0);

        let s = two_memcg_writers(1);
        assert_eq!((s.wb.inodes[0].wb, s.wb.inodes[1].wb), (Some(WbId(0)), Some(WbId(0))), "the device's wb");
        assert_eq!(s.wb.wbs.len(), 1);
        assert_eq!((s.sched.tasks[0].throttled_ns, s.sched.tasks[1].throttled_ns), (0, 0));
        assert_eq!((s.pc.files[fa].nr_dirty, s.pc.files[fb].nr_dirty), (4096, 4096), "under the global limits");
    }
}
