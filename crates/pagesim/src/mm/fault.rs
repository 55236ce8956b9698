//! Page faults on anonymous and shmem mappings.
//!
//! Models mm/memory.c `handle_mm_fault`, `do_anonymous_page` (first touch; a read maps
//! the shared zero page), `do_wp_page` (write to a read-only PTE: copy the zero page, or
//! reuse an exclusive page and free its swap slot), `do_swap_page` (swap-cache lookup,
//! readahead on a miss, `swap_free`, `should_try_to_free_swap`) and mm/shmem.c
//! `shmem_fault` / `shmem_swapin_folio` (shmem swap-in always drops the swap copy). The
//! readahead window comes from the policy in `swap::readahead`; reading it is here
//! (`swap_cluster_readahead`'s and `swap_vma_readahead`'s loops, `__read_swap_cache_async`).

use crate::device::IoDir;
use crate::engine::{Sim, TaskState};
use crate::mm::pte;
use crate::mm::vmstat::Counter;
use crate::mm::{pg, Owner};
use crate::swap::readahead::{FaultCtx, Window};
use crate::swap::{Entry, BAD};

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
    /// `handle_mm_fault` for task `tid` touching page `idx` of `vma`.
    pub fn handle_fault(&mut self, tid: u32, cpu: u32, vma: u32, idx: u32, write: bool) -> Fault {
        let memcg = self.tasks[tid as usize].memcg;
        if !self.tasks[tid as usize].fault_counted {
            self.tasks[tid as usize].fault_counted = true;
            self.tasks[tid as usize].faults += 1;
            self.count(Counter::PgFault, memcg, 1);
            self.charge(self.cost.fault_ns);
        }
        let e = self.vmas[vma as usize].pte[idx as usize];
        if pte::is_present(e) {
            return self.do_wp_page(tid, vma, idx, e);
        }
        if let Some(fi) = self.vmas[vma as usize].file {
            return self.filemap_fault(tid, cpu, vma, fi, idx);
        }
        match self.vmas[vma as usize].shmem {
            Some(obj) => self.shmem_fault(tid, vma, obj, idx, write),
            None if e == pte::NONE => self.do_anonymous_page(tid, vma, idx, write),
            None => self.do_swap_page(tid, vma, idx, write, Entry(e & !pte::SWAP)),
        }
    }

    /// `do_anonymous_page`: a read maps the zero page; a write gets a new zeroed page.
    fn do_anonymous_page(&mut self, tid: u32, vma: u32, idx: u32, write: bool) -> Fault {
        if !write {
            self.vmas[vma as usize].pte[idx as usize] = pte::ZERO_PAGE;
            return Fault::Done;
        }
        let Some(f) = self.alloc_page(tid) else { return Fault::Retry };
        self.charge(self.cost.zero_page_ns);
        self.frames.set(f, pg::SWAPBACKED);
        self.frames.set_owner(f, Owner::Anon(vma), idx);
        self.lru_add(f, self.profile.anon_starts_active);
        self.vmas[vma as usize].pte[idx as usize] = pte::present(f, pte::YOUNG | pte::WRITE | pte::DIRTY);
        Fault::Done
    }

    /// `do_wp_page`: write to a present read-only PTE.
    fn do_wp_page(&mut self, tid: u32, vma: u32, idx: u32, e: u32) -> Fault {
        match pte::frame(e) {
            // Copy-on-write of the zero page.
            None => {
                self.vmas[vma as usize].pte[idx as usize] = pte::NONE;
                self.do_anonymous_page(tid, vma, idx, true)
            }
            Some(f) => {
                // wp_can_reuse_anon_folio: the page is exclusive; its swap copy is stale
                // now, so it leaves the swap cache unless writeback still holds it.
                if self.frames.test(f, pg::SWAPCACHE) && !self.frames.test(f, pg::WRITEBACK) {
                    self.delete_from_swap_cache(f);
                }
                self.vmas[vma as usize].pte[idx as usize] = e | pte::WRITE | pte::DIRTY | pte::YOUNG;
                Fault::Done
            }
        }
    }

    /// `folio_free_swap`: drop a page from the swap cache; the page becomes the only copy.
    pub fn delete_from_swap_cache(&mut self, f: u32) {
        let entry = Entry(self.frames.swap[f as usize]);
        self.frames.clear(f, pg::SWAPCACHE);
        self.frames.swap[f as usize] = 0;
        self.frames.set(f, pg::DIRTY);
        self.swap.area(entry).clear_cache_bit(entry.slot());
    }

    fn fault_ctx(&self, tid: u32, anon: bool, owner: u32, idx: u32, pages: u32, entry: Entry) -> FaultCtx {
        FaultCtx {
            anon,
            owner,
            index: idx,
            vma_pages: pages,
            slot: entry.slot(),
            area_slots: self.swap.area_ref(entry).nslots,
            page_cluster: self.tun.page_cluster,
            rotational_swap: self.swap.any_rotational(),
            vma_ra_enabled: self.tun.vma_ra_enabled,
            vma_ra_needs_nonrotational: self.profile.vma_ra_needs_nonrotational,
            tried: self.tasks[tid as usize].fault_tried,
        }
    }

    /// Swap-cache lookup with readahead-hit accounting (`swap_cache_get_folio`).
    /// Returns the frame, or `Err(Blocked)` when its read is still in flight.
    fn lookup_swap_cache(&mut self, tid: u32, ctx: &FaultCtx, entry: Entry) -> Option<Result<u32, Fault>> {
        let f = self.swap.area_ref(entry).cached(entry.slot())?;
        let was_ra = self.frames.test_clear(f, pg::READAHEAD);
        if was_ra {
            let m = self.tasks[tid as usize].memcg;
            self.count(Counter::SwapRaHit, m, 1);
        }
        self.swap_ra.on_cache_hit(ctx, was_ra);
        if self.frames.test(f, pg::LOCKED) {
            return Some(Err(self.wait_page(tid, f)));
        }
        Some(Ok(f))
    }

    /// `do_swap_page`.
    fn do_swap_page(&mut self, tid: u32, vma: u32, idx: u32, write: bool, entry: Entry) -> Fault {
        let pages = self.vmas[vma as usize].pages;
        let ctx = self.fault_ctx(tid, true, vma, idx, pages, entry);
        match self.lookup_swap_cache(tid, &ctx, entry) {
            Some(Ok(f)) => {
                self.map_swapped_anon(tid, vma, idx, write, f, entry);
                return Fault::Done;
            }
            Some(Err(b)) => return b,
            None => {}
        }
        // A synchronous device's swap-in reads the target alone, bypassing the swap cache.
        let bypass = self.swap_sync_bypass(entry);
        if self.swapin_charge_room(tid, if bypass { 1 } else { 1 << self.tun.page_cluster }) {
            return Fault::Retry;
        }
        if bypass {
            return self.do_swap_page_sync(tid, vma, idx, write, entry);
        }
        let Some(target) = self.alloc_page(tid) else { return Fault::Retry };
        self.major_fault(tid);
        let win = self.swap_ra.window(&ctx);
        self.swapin(tid, &ctx, win, entry, target, Some(vma));
        if !self.frames.test(target, pg::LOCKED) {
            // Read synchronously (zswap, zeromap, a synchronous device): map it now.
            self.map_swapped_anon(tid, vma, idx, write, target, entry);
            return Fault::Done;
        }
        self.wait_page(tid, target)
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
    /// of pages the fault will read (1 when a synchronous device bypasses the swap cache).
    /// Returns true when a reclaim job was started (the access is retried after it).
    fn swapin_charge_room(&mut self, tid: u32, window: u64) -> bool {
        let t = &self.tasks[tid as usize];
        let m = &self.memcgs[t.memcg as usize];
        if t.fault_room_reclaimed || m.usage + window <= m.max {
            return false;
        }
        let memcg = t.memcg;
        let t = &mut self.tasks[tid as usize];
        t.fault_room_reclaimed = true;
        t.reclaim = Some(crate::reclaim::ScanControl::memcg(memcg));
        true
    }

    pub(crate) fn major_fault(&mut self, tid: u32) {
        let m = self.tasks[tid as usize].memcg;
        self.tasks[tid as usize].major_faults += 1;
        self.count(Counter::PgMajFault, m, 1);
    }

    fn wait_page(&mut self, tid: u32, f: u32) -> Fault {
        let t = &mut self.tasks[tid as usize];
        t.state = TaskState::WaitPage;
        t.wait_frame = f;
        t.fault_tried = true;
        self.block(tid);
        Fault::Blocked
    }

    /// Maps a swap-cache page into an anon VMA after a swap fault (the end of
    /// `do_swap_page`).
    fn map_swapped_anon(&mut self, tid: u32, vma: u32, idx: u32, write: bool, f: u32, entry: Entry) {
        self.charge(self.cost.swapin_ns / 4);
        self.frames.set_owner(f, Owner::Anon(vma), idx);
        // swap_free: the PTE no longer references the slot; the swap cache keeps it.
        self.swap.area(entry).put(entry.slot());
        let m = self.tasks[tid as usize].memcg;
        self.memcgs[m as usize].swap_usage = self.memcgs[m as usize].swap_usage.saturating_sub(1);
        let free_swap = self.swap.full() || (write && self.profile.free_swap_on_write_fault);
        if free_swap && self.frames.test(f, pg::SWAPCACHE) && !self.frames.test(f, pg::WRITEBACK) {
            self.delete_from_swap_cache(f);
        }
        let flags = if write { pte::YOUNG | pte::WRITE | pte::DIRTY } else { pte::YOUNG };
        self.vmas[vma as usize].pte[idx as usize] = pte::present(f, flags);
    }

    /// Reads the readahead window and the target (`swap_cluster_readahead`,
    /// `swap_vma_readahead`), under one block plug.
    fn swapin(&mut self, tid: u32, ctx: &FaultCtx, win: Window, entry: Entry, target: u32, vma: Option<u32>) {
        let memcg = self.tasks[tid as usize].memcg;
        let area = entry.area();
        let mut target_read = false;
        match win {
            Window::Target => {}
            Window::Slots { lo, hi } => {
                for s in lo..=hi {
                    if s == entry.slot() {
                        self.read_swap_page(Entry::new(area as u32, s), memcg, Some(target));
                        target_read = true;
                    } else {
                        self.read_swap_page(Entry::new(area as u32, s), memcg, None);
                    }
                }
            }
            Window::VmaPages { start, end } => {
                let v = vma.expect("VMA window for an anon fault") as usize;
                for i in start..end {
                    let e = self.vmas[v].pte[i as usize];
                    if e & pte::SWAP == 0 {
                        continue;
                    }
                    let en = Entry(e & !pte::SWAP);
                    if i == ctx.index {
                        self.read_swap_page(en, memcg, Some(target));
                        target_read = true;
                    } else {
                        self.read_swap_page(en, memcg, None);
                    }
                }
            }
        }
        if !target_read {
            self.read_swap_page(entry, memcg, Some(target));
        }
        self.unplug_all();
    }

    /// `__read_swap_cache_async` + `swap_read_folio` for one slot. `target` is the
    /// pre-allocated frame of the faulting page; readahead pages are allocated here
    /// without reclaim, flagged PG_readahead and counted in `swap_ra`.
    fn read_swap_page(&mut self, entry: Entry, memcg: u16, target: Option<u32>) {
        let slot = entry.slot();
        let a = self.swap.area_ref(entry);
        if let Some(f) = a.cached(slot) {
            // The fault's own lookup missed just before, so only readahead slots get here.
            debug_assert!(target.is_none(), "target slot {slot} already cached");
            // 3.14–4.13 (and Hugh's 2012 patch) flag every page of the window that
            // read_swap_cache_async returns, including ones already in the swap cache.
            if self.profile.swap_ra_marks_cached {
                self.frames.set(f, pg::READAHEAD);
            }
            return;
        }
        let b = a.map[slot as usize];
        if b == 0 || b == BAD {
            return;
        }
        if target.is_none() && self.profile.ra_skip_unreferenced && a.count(slot) == 0 {
            return;
        }
        let f = match target {
            Some(t) => t,
            None => match self.alloc_page_atomic(memcg) {
                Some(f) => f,
                None => return,
            },
        };
        self.swap_cache_add_new(f, entry, pg::LOCKED);
        if self.swap_read_folio_sync(f, entry, memcg) {
            self.frames.clear(f, pg::LOCKED);
        } else {
            let (dev, off) = {
                let a = self.swap.area_ref(entry);
                (a.dev, a.offset_of(slot))
            };
            self.submit_page_io(dev, off, f, IoDir::Read);
            self.count(Counter::PswpIn, memcg, 1);
            self.count(Counter::PgpgIn, memcg, 4);
            self.charge(self.cost.swapin_ns);
        }
        if target.is_none() {
            self.frames.set(f, pg::READAHEAD);
            self.count(Counter::SwapRa, memcg, 1);
        }
    }

    /// `shmem_fault`: page-cache hit, first touch, or swap-in.
    fn shmem_fault(&mut self, tid: u32, vma: u32, obj: u32, idx: u32, write: bool) -> Fault {
        let s = self.shmem[obj as usize].slots[idx as usize];
        let flags = pte::YOUNG | pte::WRITE | if write { pte::DIRTY } else { 0 };
        if s == 0 {
            let Some(f) = self.alloc_page(tid) else { return Fault::Retry };
            self.charge(self.cost.zero_page_ns);
            // A tmpfs page has no backing copy: it is dirty from birth.
            self.frames.set(f, pg::SWAPBACKED | pg::DIRTY);
            self.frames.set_owner(f, Owner::Shmem(obj), idx);
            self.lru_add(f, false);
            self.shmem[obj as usize].slots[idx as usize] = f + 1;
            self.vmas[vma as usize].pte[idx as usize] = pte::present(f, flags);
            return Fault::Done;
        }
        if s & pte::SWAP == 0 {
            let f = s - 1;
            self.vmas[vma as usize].pte[idx as usize] = pte::present(f, flags);
            return Fault::Done;
        }
        let entry = Entry(s & !pte::SWAP);
        let ctx = self.fault_ctx(tid, false, obj, idx, self.vmas[vma as usize].pages, entry);
        match self.lookup_swap_cache(tid, &ctx, entry) {
            Some(Ok(f)) => {
                self.charge(self.cost.swapin_ns / 4);
                // shmem_swapin_folio: the page moves back into the shmem page cache and the
                // swap copy is dropped (delete_from_swap_cache + swap_free).
                if self.frames.test(f, pg::WRITEBACK) {
                    // The copy is still being written: wait as folio_wait_writeback does.
                    return self.wait_writeback(tid, f);
                }
                self.delete_from_swap_cache(f);
                self.swap.area(entry).put(entry.slot());
                let m = self.frames.memcg[f as usize];
                self.memcgs[m as usize].swap_usage = self.memcgs[m as usize].swap_usage.saturating_sub(1);
                self.frames.set_owner(f, Owner::Shmem(obj), idx);
                self.shmem[obj as usize].slots[idx as usize] = f + 1;
                self.vmas[vma as usize].pte[idx as usize] = pte::present(f, flags);
                Fault::Done
            }
            Some(Err(b)) => b,
            None => {
                let bypass = self.profile.shmem_sync_bypass && self.swap_sync_bypass(entry);
                if self.swapin_charge_room(tid, if bypass { 1 } else { 1 << self.tun.page_cluster }) {
                    return Fault::Retry;
                }
                if bypass {
                    return self.shmem_swapin_sync(tid, vma, obj, idx, write, entry);
                }
                let Some(target) = self.alloc_page(tid) else { return Fault::Retry };
                self.major_fault(tid);
                let win = self.swap_ra.window(&ctx);
                self.swapin(tid, &ctx, win, entry, target, None);
                if !self.frames.test(target, pg::LOCKED) {
                    // Read synchronously: the retry finds it in the swap cache.
                    return Fault::Retry;
                }
                self.wait_page(tid, target)
            }
        }
    }

    /// Waits for a page's writeback to end (polled by the throttle wakeup).
    fn wait_writeback(&mut self, tid: u32, _f: u32) -> Fault {
        self.throttle(tid, crate::units::JIFFY_NS);
        Fault::Blocked
    }
}
