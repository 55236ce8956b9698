//! Models mm/page_alloc.c: taking a page from the zone against its watermarks and freeing
//! it, with the memcg charge of mm/memcontrol.c (`mem_cgroup_charge` / `uncharge`).
//!
//! - [`Sim::alloc_page`]: `__alloc_pages` for a faulting task. Below the low watermark it
//!   wakes kswapd (`wakeup_kswapd`, engine/kswapd/); at or under the min watermark, or at
//!   the memcg limit, it starts a reclaim job in the task (`__alloc_pages_direct_reclaim`,
//!   `try_charge_memcg`), which `engine/vmscan.rs` runs one priority level per step.
//! - [`Sim::alloc_page_atomic`]: an allocation that never reclaims (swap readahead pages).
//! - [`Sim::alloc_folio_noretry`]: `readahead_gfp_mask` (`__GFP_NORETRY`): one reclaim
//!   pass, then give up; on cgroup v1 (6.1+) the pass may sleep in `reclaim_throttle`.
//! - `Sim::alloc_folio_light`: `GFP_TRANSHUGE_LIGHT` for anon mTHP: no reclaim, no kswapd,
//!   a charge that does not reclaim; says which of the two failed.
//! - `Mm::free_frame`: `free_unref_folios` and the memcg uncharge.
//!
//! The frames of zsmalloc pools (zswap, zram) are taken and returned in engine/page_io.rs
//! (`zs_alloc_pages`, `zs_free_pages`), without watermarks (PF_MEMALLOC).
//!
//! One zone (ZONE_NORMAL): pagesim has no zone fallback, no fragmentation and no
//! compaction (docs/model.md); a large folio needs only that many free pages.

use crate::engine::Sim;
use crate::ids::Pfn;
use crate::ids::Tid;
use crate::mm::vmstat::Counter;
use crate::mm::Mm;
use crate::reclaim::{MemcgWalk, ScanControl};
use crate::units::JIFFY_NS;

impl Sim {
    /// Allocates a page for task `tid` (`alloc_pages` + `mem_cgroup_charge`). When memory
    /// or the memcg limit is short, starts a reclaim job in the task and returns `None`:
    /// the caller retries the access once the job has run.
    pub fn alloc_page(&mut self, tid: Tid) -> Option<Pfn> {
        let memcg = self.sched.tasks[tid].memcg;
        if let Some(over) = self.mm.mem_over_limit(memcg, 1) {
            self.mm.memcgs[over as usize].memory_events.max += 1;
            self.sched.tasks[tid].reclaim = Some(ScanControl::memcg(over));
            return None;
        }
        let free = self.mm.nr_free();
        if free <= self.tun.wmark.low {
            self.wake_kswapd();
        }
        if free > self.tun.wmark.min {
            let f = self.mm.take_frame(memcg);
            self.charge_over_high(tid);
            return Some(f);
        }
        self.mm.count(Counter::AllocStall, 0, 1);
        self.sched.tasks[tid].reclaim = Some(ScanControl::direct());
        None
    }

    /// Allocates a readahead page: never reclaims, fails below the min watermark or at
    /// the memcg limit.
    pub fn alloc_page_atomic(&mut self, memcg: u16) -> Option<Pfn> {
        self.alloc_folio_atomic(memcg, 0)
    }

    /// [`Sim::alloc_page_atomic`] for a folio of `1 << order` pages: the memcg must have room
    /// for all of them, and the zone must stay above its min watermark once they are taken
    /// (`__zone_watermark_ok` discounts the request's pages beyond the first).
    pub fn alloc_folio_atomic(&mut self, memcg: u16, order: u8) -> Option<Pfn> {
        let nr = 1u64 << order;
        if self.mm.mem_over_limit(memcg, nr).is_some() {
            return None;
        }
        let free = self.mm.nr_free();
        if free <= self.tun.wmark.low + (nr - 1) {
            self.wake_kswapd();
        }
        (free > self.tun.wmark.min + (nr - 1)).then(|| self.mm.take_folio(memcg, order))
    }

    /// Allocates a page-cache readahead folio of `1 << order` pages for task `tid`
    /// (`readahead_gfp_mask`: __GFP_NORETRY). Below the min watermark or at the memcg limit
    /// it reclaims once (one `do_try_to_free_pages` pass down the priorities until
    /// SWAP_CLUSTER_MAX pages are freed; on 5.5+ again with deactivation forced if the
    /// pass freed nothing while the lists looked balanced), and tries again; then it gives
    /// up, and the readahead window ends there. The caller's own page is allocated with
    /// [`Sim::alloc_page`], which may block in reclaim.
    ///
    /// A memcg charge that the pass left over the limit reclaims once more before it fails
    /// (3.19+, `Profile::memcg_charge_drain_retry`): `try_charge_memcg` drains the per-CPU
    /// charge stocks (`drain_all_stock`, nothing to give back here: pagesim charges exactly)
    /// and goes back to `retry`, whose second reclaim runs before `__GFP_NORETRY` gives up.
    /// The zone's __GFP_NORETRY allocation has no such second pass
    /// (`__alloc_pages_direct_reclaim` drains the per-CPU page lists and retries the
    /// freelists only).
    ///
    /// The pass runs synchronously, unless, in cgroup v1 limit reclaim on 6.1+
    /// (`WritebackRules::v1_dirty_throttle`), a batch of only unqueued dirty pages woke the
    /// flushers: `shrink_inactive_list` then sleeps in `reclaim_throttle` (until 32 pages
    /// are written or HZ/10), and after it the pass goes on where it was. Here the pass
    /// stops at that batch, the task sleeps, and the rest of the pass is its reclaim job
    /// ([`NoRetry::Throttled`]); the caller tries the charge again after it.
    pub(crate) fn alloc_folio_noretry(&mut self, tid: Tid, memcg: u16, cpu: u32, order: u8) -> NoRetry {
        if let Some(f) = self.alloc_folio_atomic(memcg, order) {
            return NoRetry::Folio(f);
        }
        let nr = 1u64 << order;
        let over = self.mm.mem_over_limit(memcg, nr);
        let first = self.try_to_free_pages_noretry(tid, memcg, cpu, order, over);
        if first == NoRetry::Failed && over.is_some() && self.profile.memcg_charge_drain_retry {
            // try_charge_memcg: `if (!drained) { drain_all_stock(); drained = true; goto retry; }`
            // (a pass that left the memcg under its limit failed in the zone: no retry).
            if let Some(m) = self.mm.mem_over_limit(memcg, nr) {
                return self.try_to_free_pages_noretry(tid, memcg, cpu, order, Some(m));
            }
        }
        first
    }

    /// One reclaim pass of [`Sim::alloc_folio_noretry`] (`try_to_free_mem_cgroup_pages` for
    /// memcg `over` over its limit, else `try_to_free_pages`), then the allocation tried
    /// again.
    fn try_to_free_pages_noretry(&mut self, tid: Tid, memcg: u16, cpu: u32, order: u8, over: Option<u16>) -> NoRetry {
        let nr = 1u64 << order;
        let mut sc = match over {
            Some(m) => ScanControl::memcg(m),
            None => ScanControl::direct(),
        };
        if over.is_none() {
            self.mm.count(Counter::AllocStall, 0, 1);
        }
        sc.nr_to_reclaim = sc.nr_to_reclaim.max(nr);
        sc.noretry = true;
        // page_cache_ra_unbounded's memalloc_nofs_save (5.8+): the charge is GFP_NOFS.
        sc.gfp_fs = !self.profile.ra_alloc_nofs;
        if over.is_some() {
            // The job that goes on after a throttle traces the end (`do_try_to_free_pages`).
            sc.begun = true;
            self.trace(crate::trace::Kind::MemcgReclaimBegin { nofs: !sc.gfp_fs });
        }
        loop {
            sc.nr_scanned = 0;
            self.shrink_node(&mut sc, cpu);
            if std::mem::take(&mut sc.throttle_writeback) {
                debug_assert!(self.sched.tasks[tid].reclaim.is_none(), "a readahead charge is made outside reclaim");
                self.reclaim.job_reclaimed = sc.nr_reclaimed;
                if sc.nr_reclaimed < sc.nr_to_reclaim {
                    self.sched.tasks[tid].reclaim = Some(sc);
                } else {
                    self.snapshot_refaults(sc.target_memcg);
                }
                self.reclaim_throttle(tid, 25 * JIFFY_NS);
                return NoRetry::Throttled;
            }
            if sc.nr_reclaimed >= sc.nr_to_reclaim {
                break;
            }
            if sc.priority > 0 {
                sc.priority -= 1;
                continue;
            }
            // do_try_to_free_pages: nothing freed at any priority. 6.10+ walks the whole
            // memcg tree once more; 5.5+ (the deactivation decision made at the reclaim root:
            // `sc.prepared`) goes again with deactivation forced if the inactive lists looked
            // balanced (deactivation skipped).
            if sc.retry_failed_pass(self.profile.memcg_walk == MemcgWalk::RoundRobinPerRoot) {
                continue;
            }
            break;
        }
        self.snapshot_refaults(sc.target_memcg);
        if over.is_some() {
            self.trace(crate::trace::Kind::MemcgReclaimEnd { nr_reclaimed: sc.nr_reclaimed });
        }
        match self.alloc_folio_atomic(memcg, order) {
            Some(f) => NoRetry::Folio(f),
            None => NoRetry::Failed,
        }
    }
}

/// How a readahead folio's __GFP_NORETRY allocation ([`Sim::alloc_folio_noretry`]) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoRetry {
    Folio(Pfn),
    /// No folio, even after reclaim: the readahead window ends here.
    Failed,
    /// Its reclaim sleeps in `reclaim_throttle` (cgroup v1, 6.1+): the task is blocked, the
    /// rest of the pass is its reclaim job, and the charge is to be tried again after it.
    Throttled,
}

/// Why a `GFP_TRANSHUGE_LIGHT` folio could not be had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LightFail {
    /// The zone is at its min watermark (no reclaim, no compaction to make room).
    NoMemory,
    /// The memcg charge failed (a charge that may not block does not reclaim).
    Charge,
}

impl Sim {
    /// A large folio as an anon mTHP fault or swap-in allocates it: `GFP_TRANSHUGE_LIGHT`
    /// (`vma_thp_gfp_mask`, defrag `madvise`, a VMA without MADV_HUGEPAGE), so above the min
    /// watermark only, never reclaiming or waking kswapd, and charged to `memcg` only where
    /// it fits (`try_charge_memcg` gives up at once without `__GFP_DIRECT_RECLAIM`).
    pub(crate) fn alloc_folio_light(&mut self, memcg: u16, order: u8) -> Result<Pfn, LightFail> {
        let nr = 1u64 << order;
        if self.mm.nr_free() <= self.tun.wmark.min + (nr - 1) {
            return Err(LightFail::NoMemory);
        }
        if self.mm.mem_over_limit(memcg, nr).is_some() {
            return Err(LightFail::Charge);
        }
        Ok(self.mm.take_folio(memcg, order))
    }

    /// [`Sim::alloc_folio_light`] of an anon mTHP order, a failure counted as the kernel's
    /// per-size stats count it (`count_mthp_stat`): `fallback`, and `fallback_charge` too
    /// when the charge failed. `None`: the caller tries the next order.
    pub(crate) fn alloc_mthp_folio(
        &mut self,
        memcg: u16,
        order: u8,
        fallback: Counter,
        fallback_charge: Counter,
    ) -> Option<Pfn> {
        match self.alloc_folio_light(memcg, order) {
            Ok(f) => return Some(f),
            Err(LightFail::Charge) => self.mm.count(fallback_charge, memcg, 1),
            Err(LightFail::NoMemory) => {}
        }
        self.mm.count(fallback, memcg, 1);
        None
    }
}

impl Mm {
    /// Takes a free frame for memcg `memcg` and charges it (`rmqueue`, `mem_cgroup_charge`);
    /// the caller checked that one is free.
    fn take_frame(&mut self, memcg: u16) -> Pfn {
        self.take_folio(memcg, 0)
    }

    /// [`Mm::take_frame`] for a folio of `1 << order` pages, charged and counted in pages.
    fn take_folio(&mut self, memcg: u16, order: u8) -> Pfn {
        let f = self.frames.alloc_order(memcg, order).expect("free pages present");
        let nr = 1u64 << order;
        self.memcg_charge(memcg, nr as i64);
        self.vmstat.add(Counter::PgAlloc, nr);
        f
    }

    /// Free pages of the zone.
    #[inline]
    pub fn nr_free(&self) -> u64 {
        self.frames.nr_free()
    }

    /// Frees a frame (all the pages of its folio) that is off every list and unmapped;
    /// uncharges its memcg.
    pub fn free_frame(&mut self, f: Pfn) {
        let m = self.frames.memcg[f];
        let nr = self.frames.nr_pages(f);
        self.memcg_charge(m, -(nr as i64));
        self.frames.free(f);
        self.pages_scanned = 0;
        self.vmstat.add(Counter::PgFree, nr);
    }
}

#[cfg(test)]
mod tests {
    use crate::ids::Tid;
    use crate::mm::vmstat::Counter;
    use crate::testutil::{sim, sim_from, SSD};

    #[test]
    fn allocation_wakes_kswapd_below_low_and_reclaims_directly_at_min() {
        let mut s = sim(SSD);
        assert!(s.reclaim.kswapd.sleeping);
        while s.mm.nr_free() > s.tun.wmark.low + 1 {
            s.alloc_page_atomic(0).unwrap();
        }
        assert!(s.reclaim.kswapd.sleeping, "above low: kswapd sleeps on");
        s.alloc_page(Tid(0)).unwrap();
        s.alloc_page(Tid(0)).unwrap();
        assert!(!s.reclaim.kswapd.sleeping, "at low: wakeup_kswapd");
        while s.mm.nr_free() > s.tun.wmark.min + 1 {
            s.alloc_page_atomic(0).unwrap();
        }
        s.alloc_page(Tid(0)).unwrap();
        assert_eq!(s.alloc_page_atomic(0), None, "an atomic allocation fails at min");
        assert_eq!(s.alloc_page(Tid(0)), None, "a task's allocation starts its reclaim instead");
        assert!(s.sched.tasks[0].reclaim.as_ref().is_some_and(|sc| sc.target_memcg.is_none() && !sc.kswapd));
        assert_eq!(s.mm.vmstat.get(Counter::AllocStall), 1);
    }

    /// A 1 MB memcg (`box`, memcg 1) of 64 MB RAM filled with page-cache pages of a 4 MB file
    /// on an SSD, by `profile` with `kernel` added to its [kernel] table: what the noretry
    /// charges' tests reclaim from.
    fn memcg_full_of_page_cache(profile: &str, kernel: &str) -> crate::engine::Sim {
        use crate::ids::FileId;
        let mut s = sim_from(
            &format!(
                "[kernel]\nprofile = \"{profile}\"\n{kernel}[machine]\nram = \"64MB\"\n{SSD}\n\
                 [file.f]\ndevice = \"d\"\nsize = \"4MB\"\n[memcg.box]\nmax = \"1MB\"\n\
                 [[task]]\nname = \"r\"\nmemcg = \"box\"\n[[task.step]]\nfile = \"f\"\nop = \"read\"\n\
                 pattern = \"seq\"\n"
            ),
            &[],
        );
        let mut index = 0;
        while let Some(f) = s.alloc_folio_atomic(1, 0) {
            s.add_to_page_cache(f, FileId(0), index);
            index += 1;
        }
        s
    }

    /// A readahead folio's charge in a 1 MB memcg holding only locked page-cache folios
    /// (a window's, added and not read yet): reclaim frees nothing. From 3.19
    /// `try_charge_memcg` drains the per-CPU stocks and reclaims a second time before the
    /// __GFP_NORETRY charge fails, so the failed charge scans about twice what one pass does;
    /// on linux-3.14 it reclaims once (pagesim's one pass for the kernel's none).
    #[test]
    fn a_failed_noretry_memcg_charge_reclaims_again_after_the_drain_from_3_19() {
        use crate::engine::page_alloc::NoRetry;
        let setup = |profile: &str| memcg_full_of_page_cache(profile, "");
        for (profile, passes) in [("linux-6.18", 2), ("linux-4.8", 2), ("linux-3.14", 1)] {
            let mut one = setup(profile);
            let over = one.mm.mem_over_limit(1, 1);
            assert_eq!(one.try_to_free_pages_noretry(Tid(0), 1, 0, 0, over), NoRetry::Failed, "{profile}");
            let pass = one.mm.vmstat.get(Counter::PgScanFile);
            assert!(pass > 0, "{profile}: the pass scanned the locked folios");
            let mut s = setup(profile);
            assert_eq!(s.alloc_folio_noretry(Tid(0), 1, 0, 0), NoRetry::Failed, "{profile}");
            // The second pass's batches are cut a page or so differently: about twice.
            let scanned = s.mm.vmstat.get(Counter::PgScanFile);
            assert!(scanned.abs_diff(passes * pass) <= passes, "{profile}: {scanned} scanned, {pass} a pass");
            assert_eq!(s.mm.vmstat.get(Counter::PgStealFile), 0, "{profile}");
        }
    }

    /// The reclaim of a readahead folio's charge is `do_try_to_free_pages`, with its
    /// retries: on 6.10+ (linux-6.18, `MemcgWalk::RoundRobinPerRoot`) a pass down the
    /// priorities that freed nothing goes down them again over the whole memcg tree
    /// (`memcg_full_walk`) before the charge gives up, so a 1 MB memcg of locked page-cache
    /// folios is scanned by two such passes; linux-6.6 walks the whole tree the first time
    /// and has no such retry.
    #[test]
    fn a_noretry_charges_reclaim_walks_the_whole_tree_again_before_it_fails_from_6_10() {
        use crate::engine::page_alloc::NoRetry;
        use crate::reclaim::ScanControl;
        let setup = |profile: &str| memcg_full_of_page_cache(profile, "large_folios = false\n");
        for (profile, passes) in [("linux-6.6", 1), ("linux-6.18", 2)] {
            // One pass down the priorities, by hand.
            let mut s = setup(profile);
            let mut sc = ScanControl::memcg(1);
            loop {
                sc.nr_scanned = 0;
                s.shrink_node(&mut sc, 0);
                if sc.priority == 0 {
                    break;
                }
                sc.priority -= 1;
            }
            let pass = s.mm.vmstat.get(Counter::PgScanFile);
            assert!(pass > 256, "{profile}: a pass scanned the locked folios ({pass})");
            let mut s = setup(profile);
            let over = s.mm.mem_over_limit(1, 1);
            assert_eq!(s.try_to_free_pages_noretry(Tid(0), 1, 0, 0, over), NoRetry::Failed, "{profile}");
            let scanned = s.mm.vmstat.get(Counter::PgScanFile);
            assert!(scanned.abs_diff(passes * pass) <= passes, "{profile}: {scanned} scanned, {pass} a pass");
        }
    }

    #[test]
    fn a_memcg_at_its_limit_reclaims_itself_and_freeing_uncharges() {
        let text = format!(
            "[machine]\nram = \"64MB\"\nkernel_reserved = \"4MB\"\n{SSD}\n[memcg.box]\nmax = \"64KB\"\n\
             [region.buf]\nkind = \"anon\"\nsize = \"4MB\"\n\
             [[task]]\nname = \"t\"\nmemcg = \"box\"\n[[task.step]]\nregion = \"buf\"\npattern = \"seq\"\n"
        );
        let mut s = sim_from(&text, &[]);
        let frames: Vec<crate::ids::Pfn> = (0..16).map(|_| s.alloc_page(Tid(0)).expect("under the limit")).collect();
        assert_eq!(s.mm.memcgs[1].usage, 16);
        assert_eq!(s.alloc_page(Tid(0)), None, "the 17th page is over max");
        assert_eq!(s.sched.tasks[0].reclaim.as_ref().and_then(|sc| sc.target_memcg), Some(1), "memcg reclaim");
        assert_eq!(s.mm.vmstat.get(crate::mm::vmstat::Counter::AllocStall), 0, "limit reclaim is no allocstall");
        let before = s.mm.nr_free();
        s.mm.free_frame(frames[0]);
        assert_eq!((s.mm.memcgs[1].usage, s.mm.nr_free()), (15, before + 1));
        assert_eq!(s.mm.vmstat.get(Counter::PgFree), 1);
    }
}
