//! Models mm/memory.c: page faults on anonymous mappings and the dispatch of every fault.
//!
//! `handle_mm_fault` sends a fault to `do_anonymous_page` (first touch; a read maps the
//! shared zero page), `do_wp_page` (write to a read-only PTE: copy the zero page, or reuse
//! an exclusive page and free its swap slot), `do_swap_page` (swap-cache lookup, readahead
//! on a miss, `swap_free`, `should_try_to_free_swap`), engine/shmem.rs `shmem_fault` or
//! engine/filemap.rs `filemap_fault`. A new page comes from engine/page_alloc.rs, which may
//! start a reclaim job instead (the fault is retried after it); a swap fault first makes
//! room in the memcg for its readahead window (`swapin_charge_room`:
//! `mem_cgroup_swapin_charge_folio`). The window comes from the policy in swap/readahead/
//! and is read by engine/swap_state.rs `swapin_readahead`; the synchronous-device bypass of
//! `do_swap_page` is in engine/page_io.rs. A fault that must wait for a page's read sleeps on
//! it (`wait_page` → engine/sched.rs `sleep_on_page`) and is retried as a
//! `FAULT_FLAG_TRIED` fault.

use crate::engine::huge_memory::highest_order;
use crate::engine::{PendingFault, Sim};
use crate::ids::Pfn;
use crate::ids::{Tid, VmaId};
use crate::mm::swapops::Entry;
use crate::mm::vmstat::Counter;
use crate::mm::{pg, pte, Owner};
use crate::swap::readahead::{FaultCtx, FaultOwner};

/// Outcome of a fault.
pub enum Fault {
    /// The access can complete.
    Done,
    /// The task waits (page read in flight, throttled).
    Blocked,
    /// Run the task's reclaim job, then retry the access.
    Retry,
    /// The task was killed.
    Killed,
}

impl Sim {
    /// The fault task `tid` is handling (`struct vm_fault`).
    pub(crate) fn pending_fault(&mut self, tid: Tid) -> &mut PendingFault {
        self.sched.tasks[tid].pending.as_mut().expect("a fault in progress")
    }

    /// `handle_mm_fault` for task `tid` touching page `idx` of `vma`.
    pub fn handle_mm_fault(&mut self, tid: Tid, cpu: u32, vma: VmaId, idx: u32, write: bool) -> Fault {
        let memcg = self.sched.tasks[tid].memcg;
        if !self.pending_fault(tid).counted {
            self.pending_fault(tid).counted = true;
            self.sched.tasks[tid].faults += 1;
            self.mm.count(Counter::PgFault, memcg, 1);
            self.charge(self.cost.fault_ns);
        }
        let e = self.mm.vmas[vma].pte[idx as usize];
        if let Some(fi) = self.mm.vmas[vma].file {
            // A write to a shared file mapping: the page is found (read if need be) and
            // mapped, then made writable and dirty (do_shared_fault / wp_page_shared).
            let r = if pte::is_present(e) { Fault::Done } else { self.filemap_fault(tid, cpu, vma, fi, idx) };
            if write && matches!(r, Fault::Done) {
                self.do_page_mkwrite(tid, cpu, vma, fi, idx);
            }
            return r;
        }
        if pte::is_present(e) {
            return self.do_wp_page(tid, vma, idx, e);
        }
        match self.mm.vmas[vma].shmem {
            Some(obj) => self.shmem_fault(tid, vma, obj, idx, write),
            None if e == pte::NONE => self.do_anonymous_page(tid, vma, idx, write),
            None => self.do_swap_page(tid, vma, idx, write, Entry(e & !pte::SWAP)),
        }
    }

    /// The write fault of a page of shared file mapping `vma` (`do_shared_fault` /
    /// `wp_page_shared`): `->page_mkwrite` dirties the folio (`folio_mark_dirty`, no wait:
    /// no stable pages), the PTE becomes writable and dirty, and the task is due for
    /// `balance_dirty_pages` as after a write(2) (`fault_dirty_shared_page`; the task's burst
    /// runs it before its next access).
    fn do_page_mkwrite(&mut self, tid: Tid, cpu: u32, vma: VmaId, fi: crate::ids::FileId, idx: u32) {
        let e = self.mm.vmas[vma].pte[idx as usize];
        let f = pte::frame(e).expect("the fault mapped the page");
        self.folio_mark_dirty(f, fi, Some(tid));
        self.mm.vmas[vma].pte[idx as usize] = e | pte::WRITE | pte::DIRTY | pte::YOUNG;
        let wb = self.current_wb(tid, fi);
        self.balance_dirty_pages_ratelimited(tid, cpu, wb);
    }

    /// `do_anonymous_page`: a read maps the zero page; a write gets a new zeroed folio,
    /// large when an enabled mTHP order fits (`alloc_anon_folio`), and maps all its pages.
    fn do_anonymous_page(&mut self, tid: Tid, vma: VmaId, idx: u32, write: bool) -> Fault {
        if !write {
            self.mm.vmas[vma].pte[idx as usize] = pte::ZERO_PAGE;
            return Fault::Done;
        }
        let (f, first) = match self.alloc_anon_folio(tid, vma, idx) {
            Some(large) => large,
            None => match self.alloc_page(tid) {
                Some(f) => (f, idx),
                None => return Fault::Retry,
            },
        };
        self.map_new_anon_folio(vma, f, first);
        Fault::Done
    }

    /// A new zeroed anon folio `f` mapped writable at `first` and the pages after it
    /// (`folio_add_new_anon_rmap`, `folio_add_lru_vma`, `set_ptes`). x86's protections
    /// carry the accessed bit: every PTE of the folio starts young.
    fn map_new_anon_folio(&mut self, vma: VmaId, f: Pfn, first: u32) {
        let nr = self.mm.frames.nr_pages(f);
        // The LRU add's share of its batch is charged by the batch (engine/swap.rs).
        self.charge((self.cost.zero_page_ns * nr).saturating_sub(self.cost.lru_page_ns));
        self.mm.frames.set(f, pg::SWAPBACKED);
        let a = self.mm.vmas[vma].anon.expect("an anon VMA");
        self.mm.frames.set_owner(f, Owner::Anon(a), first);
        self.lru_add(f, self.profile.anon_starts_active);
        let e = pte::present(f, pte::YOUNG | pte::WRITE | pte::DIRTY);
        self.mm.vmas[vma].pte[first as usize..(first as u64 + nr) as usize].fill(e);
    }

    /// `alloc_anon_folio`: the largest enabled anon mTHP order whose naturally aligned
    /// range around `idx` lies inside the VMA with every PTE none (`pte_range_none`: a page
    /// already touched, even by a read of the zero page, rules the order out), then that
    /// order and the smaller ones in turn, each allocated as `GFP_TRANSHUGE_LIGHT`
    /// (engine/page_alloc.rs `alloc_folio_light`: no reclaim, no kswapd, a charge that does
    /// not reclaim). Each order that fails counts `anon_fault_fallback` (and
    /// `anon_fault_fallback_charge` when the charge failed). Returns the folio and its
    /// first page's index; `None` leaves the fault to an order-0 page.
    fn alloc_anon_folio(&mut self, tid: Tid, vma: VmaId, idx: u32) -> Option<(Pfn, u32)> {
        let mut orders = self.tun.anon_orders;
        if orders == 0 || std::mem::replace(&mut self.pending_fault(tid).anon_order0, true) {
            return None;
        }
        let memcg = self.sched.tasks[tid].memcg;
        let ptes = &self.mm.vmas[vma].pte;
        // thp_vma_suitable_orders, then the highest order with an all-none range: every
        // smaller order's range lies inside it.
        while orders != 0 {
            let order = highest_order(orders);
            let nr = 1u32 << order;
            let first = idx & !(nr - 1);
            let inside = (first + nr) as usize <= ptes.len();
            if inside && ptes[first as usize..(first + nr) as usize].iter().all(|&e| e == pte::NONE) {
                break;
            }
            orders &= !(1 << order);
        }
        while orders != 0 {
            let order = highest_order(orders);
            orders &= !(1 << order);
            if let Some(f) = self.alloc_mthp_folio(
                memcg,
                order,
                Counter::MthpAnonFaultFallback,
                Counter::MthpAnonFaultFallbackCharge,
            ) {
                self.mm.count(Counter::MthpAnonFaultAlloc, memcg, 1);
                return Some((f, idx & !((1u32 << order) - 1)));
            }
        }
        None
    }

    /// `do_wp_page`: write to a present read-only PTE.
    fn do_wp_page(&mut self, tid: Tid, vma: VmaId, idx: u32, e: u32) -> Fault {
        match pte::frame(e) {
            // Copy-on-write of the zero page (`wp_page_copy`): always a single page.
            None => {
                let Some(f) = self.alloc_page(tid) else { return Fault::Retry };
                self.map_new_anon_folio(vma, f, idx);
                Fault::Done
            }
            Some(f) if !self.anon_exclusive(f) => {
                // wp_page_copy: a page a fork shares (mapped by another VMA of its
                // anon_vma, or still on swap for another process) is copied to a new page
                // of this process; the others keep the old one.
                let Some(g) = self.alloc_page(tid) else { return Fault::Retry };
                self.charge(self.cost.cow_copy_ns);
                self.mm.frames.set(g, pg::SWAPBACKED);
                let a = self.mm.vmas[vma].anon.expect("an anon VMA");
                self.mm.frames.set_owner(g, Owner::Anon(a), idx);
                self.lru_add(g, self.profile.anon_starts_active);
                self.mm.vmas[vma].pte[idx as usize] = pte::present(g, pte::YOUNG | pte::WRITE | pte::DIRTY);
                Fault::Done
            }
            Some(f) => {
                // wp_can_reuse_anon_folio: the page is exclusive; its swap copy is stale
                // now, so it leaves the swap cache unless writeback still holds it or
                // another page of the folio is still out on swap (`folio_swapped`).
                if self.mm.frames.test(f, pg::SWAPCACHE)
                    && !self.mm.frames.test(f, pg::WRITEBACK)
                    && !self.page_swapcount(f)
                {
                    self.delete_from_swap_cache(f);
                }
                self.mm.vmas[vma].pte[idx as usize] = e | pte::WRITE | pte::DIRTY | pte::YOUNG;
                Fault::Done
            }
        }
    }

    pub(crate) fn fault_ctx(&self, tid: Tid, owner: FaultOwner, idx: u32, pages: u32, entry: Entry) -> FaultCtx {
        FaultCtx {
            owner,
            index: idx,
            vma_pages: pages,
            slot: entry.slot(),
            area_slots: self.swap.area_ref(entry).nslots,
            page_cluster: self.tun.page_cluster,
            rotational_swap: self.swap.any_rotational(),
            vma_ra_enabled: self.tun.vma_ra_enabled,
            vma_ra_needs_nonrotational: self.profile.vma_ra_needs_nonrotational,
            tried: self.sched.tasks[tid].pending.is_some_and(|p| p.tried),
        }
    }

    /// `do_swap_page`.
    fn do_swap_page(&mut self, tid: Tid, vma: VmaId, idx: u32, write: bool, entry: Entry) -> Fault {
        let pages = self.mm.vmas[vma].pages;
        let ctx = self.fault_ctx(tid, FaultOwner::Anon(vma), idx, pages, entry);
        match self.swap_cache_get_folio(tid, &ctx, entry) {
            Some(Ok(f)) => {
                self.map_swapped_anon(tid, vma, idx, write, f, entry);
                return self.swapped_write(tid, vma, idx, write);
            }
            Some(Err(b)) => return b,
            None => {}
        }
        // A synchronous device's swap-in reads the target alone, bypassing the swap cache.
        let bypass = self.swap_sync_bypass(entry);
        // Its large folio (6.12+ `alloc_swap_folio`) comes first and is charged without
        // reclaim; only the order-0 fallback's charge reclaims, and the retry after that
        // reclaim takes the single page, as the kernel's fallback does.
        if bypass && !self.pending_fault(tid).room_reclaimed {
            if let Some((f, first)) = self.alloc_swap_folio(tid, vma, idx, entry) {
                return self.swapin_large_sync(tid, vma, idx, write, f, first);
            }
        }
        if self.swapin_charge_room(tid, if bypass { 1 } else { 1 << self.tun.page_cluster }) {
            return Fault::Retry;
        }
        if bypass {
            return self.do_swap_page_sync(tid, vma, idx, write, entry);
        }
        let Some(target) = self.alloc_page(tid) else { return Fault::Retry };
        self.major_fault(tid);
        let win = self.swap.ra.window(&ctx);
        self.swapin_readahead(tid, &ctx, win, entry, target, Some(vma));
        if !self.mm.frames.test(target, pg::LOCKED) {
            // Read synchronously (zswap, zeromap, a synchronous device): map it now.
            self.map_swapped_anon(tid, vma, idx, write, target, entry);
            return self.swapped_write(tid, vma, idx, write);
        }
        self.wait_page(tid, target)
    }

    /// The end of a write fault on a swapped page: one that another process still shares
    /// was mapped read-only, and the same fault copies it (`do_swap_page` → `do_wp_page`).
    fn swapped_write(&mut self, tid: Tid, vma: VmaId, idx: u32, write: bool) -> Fault {
        let e = self.mm.vmas[vma].pte[idx as usize];
        if write && e & pte::WRITE == 0 {
            return self.do_wp_page(tid, vma, idx, e);
        }
        Fault::Done
    }

    /// Makes room in the task's memcg for the pages a swap fault reads. The kernel charges
    /// every page it reads, the target and each readahead page
    /// (`mem_cgroup_swapin_charge_folio`), and a charge at the limit reclaims
    /// (`try_charge_memcg` → `try_to_free_mem_cgroup_pages`, SWAP_CLUSTER_MAX pages) before
    /// it succeeds. pagesim reclaims once per fault, before the target is allocated, when
    /// the target and a full window (2^page_cluster pages) would not fit, so that the
    /// reclaim runs as the task's reclaim job (priority by priority, yielding to I/O
    /// completions as the kernel's reclaim is interrupted by them). The same pages are
    /// reclaimed as in the kernel, up to a window's worth earlier. `window` is the number
    /// of pages the fault will read (1 when a synchronous device bypasses the swap cache,
    /// after its large folio's charge failed without reclaim).
    /// Returns true when a reclaim job was started (the access is retried after it).
    pub(crate) fn swapin_charge_room(&mut self, tid: Tid, window: u64) -> bool {
        let memcg = self.sched.tasks[tid].memcg;
        let over = self.mm.mem_over_limit(memcg, window);
        let Some(over) = over.filter(|_| !self.pending_fault(tid).room_reclaimed) else { return false };
        self.pending_fault(tid).room_reclaimed = true;
        self.sched.tasks[tid].reclaim = Some(crate::reclaim::ScanControl::memcg(over));
        true
    }

    /// Counts the fault in progress as major (`VM_FAULT_MAJOR`), once per faulting access.
    pub(crate) fn major_fault(&mut self, tid: Tid) {
        if std::mem::replace(&mut self.pending_fault(tid).major_counted, true) {
            return;
        }
        let m = self.sched.tasks[tid].memcg;
        self.sched.tasks[tid].major_faults += 1;
        self.mm.count(Counter::PgMajFault, m, 1);
    }

    pub(crate) fn wait_page(&mut self, tid: Tid, f: Pfn) -> Fault {
        self.pending_fault(tid).tried = true;
        self.sleep_on_page(tid, f);
        Fault::Blocked
    }

    /// Maps a swap-cache folio into an anon VMA after a swap fault (the end of
    /// `do_swap_page`). A large folio is mapped whole when every PTE of its range, inside
    /// the VMA, still holds its page's swap entry (6.10+); else only the faulting page.
    fn map_swapped_anon(&mut self, tid: Tid, vma: VmaId, idx: u32, write: bool, f: Pfn, entry: Entry) {
        // The mapping part of a swap fault, less its locked work: `swap_free`, and the
        // slot's count read when it may free the swap copy (below).
        let free_swap = self.swap.full() || (write && self.profile.free_swap_on_write_fault);
        let check = free_swap && self.mm.frames.test(f, pg::SWAPCACHE) && !self.mm.frames.test(f, pg::WRITEBACK);
        let locked = (1 + check as u64) * self.cost.swap_map_ns;
        self.charge((self.cost.swapin_ns / 4).saturating_sub(locked));
        let nr = self.mm.frames.nr_pages(f) as u32;
        // The folio's first page, and the pages mapped now: from `from` on, taking the
        // references of the slots from `from_entry` on.
        let (first, from, from_entry, count) = if nr > 1 {
            let base = Entry(self.mm.frames.swap[f]);
            let first = idx - (entry.slot() - base.slot());
            let whole = self.mm.vmas[vma]
                .pte
                .get(first as usize..(first + nr) as usize)
                .is_some_and(|r| r.iter().enumerate().all(|(j, &e)| e == pte::SWAP | base.offset(j as u32).0));
            if whole {
                (first, first, base, nr)
            } else {
                (first, idx, entry, 1)
            }
        } else {
            (idx, idx, entry, 1)
        };
        let a = self.mm.vmas[vma].anon.expect("an anon VMA");
        self.mm.frames.set_owner(f, Owner::Anon(a), first);
        let m = self.sched.tasks[tid].memcg;
        // swap_free: the PTEs no longer reference the slots; the swap cache keeps them.
        self.swap_free_nr(from_entry, count);
        self.mm.swap_charge(m, -(count as i64));
        // reuse_swap_page / try_to_free_swap (should_try_to_free_swap, folio_free_swap).
        if check && !self.page_swapcount(f) {
            self.delete_from_swap_cache(f);
        }
        // Only the faulting page is dirtied by a write; the others are mapped clean. A
        // page another process still shares (fork) is mapped read-only: the write then
        // copies it (`do_swap_page` → `do_wp_page`).
        let write = write && self.anon_exclusive(f);
        let flags = if write { pte::YOUNG | pte::WRITE | pte::DIRTY } else { pte::YOUNG };
        for i in from..from + count {
            let fl = if i == idx { flags } else { flags & !pte::DIRTY };
            self.mm.vmas[vma].pte[i as usize] = pte::present(f, fl);
        }
    }

    /// Waits for a page's writeback to end (polled by the throttle wakeup).
    pub(crate) fn wait_writeback(&mut self, tid: Tid, _f: Pfn) -> Fault {
        self.reclaim_throttle(tid, crate::units::JIFFY_NS);
        Fault::Blocked
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::LruList;
    use crate::testutil::{evict, fault, sim, swapcache_page, writeout, SSD};

    #[test]
    fn a_read_of_untouched_anon_memory_maps_the_zero_page_and_a_write_then_copies_it() {
        let mut s = sim(SSD);
        let free = s.mm.nr_free();
        assert!(matches!(fault(&mut s, 3, false), Fault::Done));
        assert_eq!(s.mm.vmas[0].pte[3], pte::ZERO_PAGE, "do_anonymous_page maps the zero page on a read");
        assert_eq!(s.mm.nr_free(), free, "no frame for a read");
        assert!(matches!(fault(&mut s, 3, true), Fault::Done));
        let f = pte::frame(s.mm.vmas[0].pte[3]).expect("do_wp_page gave the page a frame");
        assert!(s.mm.vmas[0].pte[3] & pte::WRITE != 0 && s.mm.vmas[0].pte[3] & pte::DIRTY != 0);
        assert_eq!(s.mm.nr_free(), free - 1);
        assert_eq!(s.mm.frames.owner(f), Owner::Anon(crate::ids::AnonId(0)));
        assert_eq!(s.mm.vmstat.get(Counter::PgFault), 2, "each fault counted once");
        assert_eq!(s.mm.vmstat.get(Counter::PgMajFault), 0);
        s.verify().unwrap();
    }

    #[test]
    fn a_new_anon_page_starts_on_the_list_its_kernel_puts_it_on() {
        for (profile, active) in [("linux-3.14", true), ("linux-6.6", false)] {
            let mut s = sim(&format!("[kernel]\nprofile = \"{profile}\"\n{SSD}"));
            assert!(matches!(fault(&mut s, 0, true), Fault::Done));
            let l = if active { LruList::ActiveAnon } else { LruList::InactiveAnon };
            assert_eq!(s.mm.memcgs[0].lru.size(l), 1, "{profile}: the page is on {l:?}");
        }
    }

    #[test]
    fn a_fault_below_the_min_watermark_starts_a_direct_reclaim_job_and_retries() {
        let mut s = sim(SSD);
        while s.mm.nr_free() > s.tun.wmark.min {
            s.alloc_page_atomic(0).unwrap();
        }
        let stalls = s.mm.vmstat.get(Counter::AllocStall);
        assert!(matches!(fault(&mut s, 0, true), Fault::Retry));
        assert!(s.sched.tasks[0].reclaim.as_ref().is_some_and(|sc| sc.target_memcg.is_none()), "a global job");
        assert_eq!(s.mm.vmstat.get(Counter::AllocStall), stalls + 1);
        assert_eq!(s.mm.vmas[0].pte[0], pte::NONE, "nothing mapped until the retry");
    }

    #[test]
    fn a_swap_fault_on_a_page_still_in_the_swap_cache_is_minor_and_one_out_on_the_device_is_major() {
        let mut s = sim(SSD);
        // Page 4 written out and evicted: its PTE holds the swap entry.
        let (f, e) = swapcache_page(&mut s, 4);
        writeout(&mut s, f, e);
        evict(&mut s, f, e, 4);
        // Page 5 in the swap cache, its PTE already replaced by the entry.
        let (g, e5) = swapcache_page(&mut s, 5);
        s.mm.vmas[0].pte[5] = pte::SWAP | e5.0;
        s.swap.area(e5).dup(e5.slot());
        s.mm.frames.set_owner(g, Owner::Anon(crate::ids::AnonId(0)), 5);
        assert!(matches!(fault(&mut s, 5, false), Fault::Done), "a swap-cache hit completes at once");
        assert_eq!(pte::frame(s.mm.vmas[0].pte[5]), Some(g), "the swap-cache page is mapped");
        assert_eq!(s.mm.vmstat.get(Counter::PgMajFault), 0);
        // Page 4 must be read: the fault blocks on its read, a major fault.
        assert!(matches!(fault(&mut s, 4, false), Fault::Blocked));
        assert_eq!(s.mm.vmstat.get(Counter::PgMajFault), 1);
        assert!(s.mm.vmstat.get(Counter::PswpIn) >= 1);
        assert!(matches!(s.sched.tasks[0].state, crate::engine::TaskState::WaitPage(_)), "the task sleeps on the page");
        assert!(s.sched.tasks[0].pending.is_some_and(|p| p.tried), "its retry is a FAULT_FLAG_TRIED fault");
    }
}
