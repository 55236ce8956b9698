//! Models mm/swap_state.c: the swap cache (`add_to_swap_cache`, `delete_from_swap_cache`
//! as `folio_free_swap` uses it, `swap_cache_get_folio` with its readahead-hit accounting)
//! and the reading side of swap-in readahead: `swapin_readahead` reads the window the
//! policy gave (`swap_cluster_readahead`'s slots or `swap_vma_readahead`'s PTEs) under one
//! block plug, one `read_swap_cache_async` per page, which reads in place when it can
//! (engine/page_io.rs `swap_read_folio_sync`: zeromap, zswap, a synchronous device) and else
//! submits the bio (engine/block.rs `submit_bio`). Which window to read is decided by the
//! policies of swap/readahead/. A page leaving the swap cache at eviction is removed in
//! engine/vmscan.rs (`__remove_mapping`). The swap cache is a per-slot array in each area
//! (`SwapArea::cache`), not the kernel's xarray split into 64 MB trees.

use crate::device::IoDir;
use crate::engine::memory::Fault;
use crate::engine::Sim;
use crate::ids::Pfn;
use crate::ids::Tid;
use crate::mm::vmstat::Counter;
use crate::mm::{pg, pte, Owner};
use crate::swap::readahead::{FaultCtx, Window};
use crate::swap::{Entry, BAD};

impl Sim {
    /// `add_to_swap_cache` at freshly allocated slots: one for a page, `1 << order`
    /// consecutive ones from `entry` for a large folio (each page its own slot).
    pub fn add_to_swap_cache(&mut self, f: Pfn, entry: Entry) {
        let nr = self.mm.frames.nr_pages(f) as usize;
        self.swap_cache_insert_lock(entry);
        let a = self.swap.area(entry);
        let s = entry.slot() as usize;
        a.cache[s..s + nr].fill(f.slot());
        self.mm.frames.set(f, pg::SWAPCACHE);
        self.mm.frames.swap[f] = entry.0;
        self.swap_note_content(f, entry);
    }

    /// Takes folio `f` out of the swap cache: its slots lose SWAP_HAS_CACHE (and are freed
    /// when no reference is left, `put_swap_folio`), each keeping `shadow` if given
    /// (`__remove_mapping`). Returns the folio's first entry.
    pub(crate) fn swap_cache_del_folio(&mut self, f: Pfn, shadow: Option<crate::swap::Shadow>) -> Entry {
        let entry = Entry(self.mm.frames.swap[f]);
        let nr = self.mm.frames.nr_pages(f) as u32;
        self.swap_cache_delete_lock(entry);
        self.mm.frames.clear(f, pg::SWAPCACHE);
        self.mm.frames.swap[f] = 0;
        let a = self.swap.area(entry);
        for slot in entry.slot()..entry.slot() + nr {
            if let Some(sh) = shadow {
                a.set_shadow(slot, sh);
            }
            a.clear_cache_bit(slot);
        }
        self.swap_slot_freed(entry);
        entry
    }

    /// The swap-in half of `__read_swap_cache_async`: new page `f` takes SWAP_HAS_CACHE at
    /// `entry` and enters the swap cache with `flags` (PG_swapbacked and the caller's), its
    /// shadow entry, if any, is tested for a refault, and it goes on the LRU (active when
    /// the refault says so).
    pub fn swap_cache_add_new(&mut self, f: Pfn, entry: Entry, flags: u16) {
        let slot = entry.slot();
        self.swapcache_prepare_lock(entry);
        let ok = self.swap.area(entry).prepare_cache(slot);
        debug_assert!(ok, "slot {slot} could not take SWAP_HAS_CACHE");
        self.add_to_swap_cache(f, entry);
        self.mm.frames.set(f, pg::SWAPBACKED | flags);
        self.mm.frames.set_owner(f, Owner::None, 0);
        if let Some(shadow) = self.swap.area(entry).take_shadow(slot) {
            self.workingset_refault(f, shadow, false);
        }
        let active = self.mm.frames.test(f, pg::ACTIVE);
        self.mm.frames.clear(f, pg::ACTIVE);
        self.lru_add(f, active);
    }

    /// `folio_swapped`: a PTE (or shmem slot) still references one of the folio's slots, so
    /// the swap cache must keep it (`folio_free_swap` refuses).
    pub(crate) fn folio_swapped(&self, f: Pfn) -> bool {
        let entry = Entry(self.mm.frames.swap[f]);
        let nr = self.mm.frames.nr_pages(f) as u32;
        let a = self.swap.area_ref(entry);
        (entry.slot()..entry.slot() + nr).any(|s| a.count(s) > 0)
    }

    /// `folio_free_swap`: drop a page from the swap cache; the page becomes the only copy.
    pub fn delete_from_swap_cache(&mut self, f: Pfn) {
        self.swap_cache_del_folio(f, None);
        self.mm.frames.set(f, pg::DIRTY);
    }

    /// Swap-cache lookup with readahead-hit accounting (`swap_cache_get_folio`).
    /// Returns the frame, or `Err(Blocked)` when its read is still in flight.
    pub(crate) fn swap_cache_get_folio(
        &mut self,
        tid: Tid,
        ctx: &FaultCtx,
        entry: Entry,
    ) -> Option<Result<Pfn, Fault>> {
        let f = self.swap.area_ref(entry).cached(entry.slot())?;
        let was_ra = self.mm.frames.test_clear(f, pg::READAHEAD);
        if was_ra {
            let m = self.sched.tasks[tid].memcg;
            self.mm.count(Counter::SwapRaHit, m, 1);
        }
        self.swap.ra.on_cache_hit(ctx, was_ra);
        if self.mm.frames.test(f, pg::LOCKED) {
            return Some(Err(self.wait_page(tid, f)));
        }
        Some(Ok(f))
    }

    /// Reads the readahead window and the target (`swap_cluster_readahead`,
    /// `swap_vma_readahead`), under one block plug.
    pub(crate) fn swapin_readahead(
        &mut self,
        tid: Tid,
        ctx: &FaultCtx,
        win: Window,
        entry: Entry,
        target: Pfn,
        vma: Option<crate::ids::VmaId>,
    ) {
        let memcg = self.sched.tasks[tid].memcg;
        let area = entry.area();
        let mut target_read = false;
        match win {
            Window::Target => {}
            Window::Slots { lo, hi } => {
                for s in lo..=hi {
                    if s == entry.slot() {
                        self.read_swap_cache_async(Entry::new(area as u32, s), memcg, Some(target));
                        target_read = true;
                    } else {
                        self.read_swap_cache_async(Entry::new(area as u32, s), memcg, None);
                    }
                }
            }
            Window::VmaPages { start, end } => {
                let v = vma.expect("VMA window for an anon fault");
                for i in start..end {
                    let e = self.mm.vmas[v].pte[i as usize];
                    if e & pte::SWAP == 0 {
                        continue;
                    }
                    let en = Entry(e & !pte::SWAP);
                    if i == ctx.index {
                        self.read_swap_cache_async(en, memcg, Some(target));
                        target_read = true;
                    } else {
                        self.read_swap_cache_async(en, memcg, None);
                    }
                }
            }
        }
        if !target_read {
            self.read_swap_cache_async(entry, memcg, Some(target));
        }
        self.unplug_all();
    }

    /// `__read_swap_cache_async` + `swap_read_folio` for one slot. `target` is the
    /// pre-allocated frame of the faulting page; readahead pages are allocated here
    /// without reclaim, flagged PG_readahead and counted in `swap_ra`.
    fn read_swap_cache_async(&mut self, entry: Entry, memcg: u16, target: Option<Pfn>) {
        let slot = entry.slot();
        let a = self.swap.area_ref(entry);
        if let Some(f) = a.cached(slot) {
            // The fault's own lookup missed just before, so only readahead slots get here.
            debug_assert!(target.is_none(), "target slot {slot} already cached");
            // 3.14–4.13 (and Hugh's 2012 patch) flag every page of the window that
            // read_swap_cache_async returns, including ones already in the swap cache.
            if self.profile.swap_ra_marks_cached {
                self.mm.frames.set(f, pg::READAHEAD);
            }
            return;
        }
        let b = a.map[slot as usize];
        if b == BAD {
            return;
        }
        if target.is_none() && self.profile.ra_skip_unreferenced {
            // 4.11+: the slot's count, read under its lock (`__swp_swapcount`), before a
            // page is allocated; a free slot or one the slots cache holds is skipped.
            self.swapcache_prepare_lock(entry);
            if self.swap.area_ref(entry).count(slot) == 0 {
                return;
            }
        } else if b == 0 {
            // Before: the page is allocated first and `swapcache_prepare` finds the slot
            // free under its lock (-ENOENT); the page is freed again.
            self.swapcache_prepare_lock(entry);
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
            self.mm.frames.clear(f, pg::LOCKED);
        } else {
            let (dev, off) = {
                let a = self.swap.area_ref(entry);
                (a.dev, a.offset_of(slot))
            };
            self.submit_bio(dev, off, f, IoDir::Read);
            self.mm.count(Counter::PswpIn, memcg, 1);
            self.mm.count(Counter::PgpgIn, memcg, 4);
            self.charge(self.swapin_unlocked_ns());
        }
        if target.is_none() {
            self.mm.frames.set(f, pg::READAHEAD);
            self.mm.count(Counter::SwapRa, memcg, 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::memory::Fault;
    use crate::mm::vmstat::Counter;
    use crate::mm::{pg, pte};
    use crate::testutil::{evict, fault, sim, swapcache_page, writeout};

    #[test]
    fn a_swap_fault_reads_its_cluster_and_a_later_hit_on_a_readahead_page_counts_once() {
        // 3.6-style blind cluster readahead: page_cluster 3 reads the aligned 8 slots.
        let mut s = sim("[kernel]\nprofile = \"linux-3.14\"\nswap_readahead = \"cluster\"\n\
             [device.d]\nmodel = \"sata-ssd\"\n[[swap]]\ndevice = \"d\"\nsize = \"16MB\"\n");
        let mut entries = Vec::new();
        for i in 0..8 {
            // Written (the data is not modelled: cleaning the page is the write) and evicted.
            let (f, e) = swapcache_page(&mut s, i);
            assert!(!writeout(&mut s, f, e), "an SSD write is a bio, not done in place");
            evict(&mut s, f, e, i);
            entries.push(e);
        }
        assert!(entries.windows(2).all(|w| w[1].slot() == w[0].slot() + 1), "consecutive slots");
        assert!(matches!(fault(&mut s, 3, false), Fault::Blocked), "the target's read is in flight");
        let ra = s.mm.vmstat.get(Counter::SwapRa);
        assert!(ra >= 6, "the other pages of the aligned cluster were read ahead ({ra})");
        let e5 = entries[5];
        let f5 = s.swap.area_ref(e5).cached(e5.slot()).expect("slot 5 is in the swap cache");
        assert!(s.mm.frames.test(f5, pg::READAHEAD));
        // Page 5's read completes; its fault is a swap-cache hit on a readahead page.
        s.mm.frames.clear(f5, pg::LOCKED);
        s.sched.tasks[0].pending = None;
        assert!(matches!(fault(&mut s, 5, false), Fault::Done));
        assert_eq!(s.mm.vmstat.get(Counter::SwapRaHit), 1);
        assert!(!s.mm.frames.test(f5, pg::READAHEAD), "the flag is tested and cleared");
        assert_eq!(pte::frame(s.mm.vmas[0].pte[5]), Some(f5));
        s.verify().unwrap();
    }

    /// 4.11 (patch 4 of the swap series): readahead reads a slot's count under its lock
    /// before it allocates a page, and skips a slot that a slots cache holds (freed,
    /// reserved with SWAP_HAS_CACHE, no reference). Without the check the window would try
    /// to read the reserved slots (a debug build stops at their SWAP_HAS_CACHE, a release
    /// build reads them: 7 pages read ahead instead of 5), as the kernel before the patch
    /// spun on them.
    #[test]
    fn readahead_skips_the_slots_a_slots_cache_holds_from_4_11() {
        let mut s = sim("[kernel]\nprofile = \"linux-4.11\"\nswap_readahead = \"cluster\"\n\
             [device.d]\nmodel = \"sata-ssd\"\n[[swap]]\ndevice = \"d\"\nsize = \"64MB\"\n");
        // A first allocation turns the slots cache on (free swap far above its threshold).
        // (Its slot goes back unused: referenced once and freed into the return queue.)
        let first = s.get_swap_page(0).expect("a slot");
        assert!(s.swap.slots.active && s.swap.areas[0].defer_release);
        s.swap.area(first).dup(first.slot());
        s.swap.area(first).clear_cache_bit(first.slot());
        s.swap_free(first);
        let mut entries = Vec::new();
        for i in 0..8 {
            let (f, e) = swapcache_page(&mut s, i);
            writeout(&mut s, f, e);
            evict(&mut s, f, e, i);
            entries.push(e);
        }
        assert!(entries.windows(2).all(|w| w[1].slot() == w[0].slot() + 1), "consecutive slots");
        assert_eq!(entries[0].slot() % 8, 0, "one aligned cluster of 8");
        // Pages 2 and 5 are unmapped: their slots go to the CPU's return queue, reserved.
        for i in [2, 5] {
            s.mm.vmas[0].pte[i] = 0;
            s.mm.memcgs[0].swap_usage -= 1;
            s.swap_free(entries[i]);
            let e = entries[i];
            assert_eq!(s.swap.area_ref(e).count(e.slot()), 0);
            assert!(s.swap.area_ref(e).has_cache(e.slot()), "reserved, not free");
            assert!(s.swap.slots.held().any(|h| h == e), "held by the slots cache");
        }
        assert!(matches!(fault(&mut s, 3, false), Fault::Blocked));
        let ra = s.mm.vmstat.get(Counter::SwapRa);
        let cached = |s: &crate::engine::Sim, i: usize| s.swap.area_ref(entries[i]).cached(entries[i].slot()).is_some();
        assert_eq!(ra, 5, "slots 0, 1, 4, 6, 7 read ahead, the held 2 and 5 skipped");
        assert!(!cached(&s, 2) && !cached(&s, 5));
        assert!(cached(&s, 4) && cached(&s, 7));
        s.verify().unwrap();
    }
}
