//! Models mm/zswap.c (6.x): a compressed cache in front of the swap devices.
//!
//! DOC: a page that reclaim writes to swap first has its swap slot (`folio_alloc_swap`);
//! `swap_writepage` then offers it to `zswap_store`. If zswap takes it, the page is
//! compressed into zswap's zsmalloc pool and nothing is written: the write completes at
//! once, the page is clean and reclaim frees it in the same pass. `zswpout` counts it,
//! `pswpout` does not. A swap-in (`swap_read_folio`) asks `zswap_load` before the device:
//! a hit decompresses in the faulting thread (`zswpin`, no I/O, no `pswpin`), also for
//! readahead pages of the window, which are loaded synchronously.
//!
//! ```text
//!   shrink_folio ─ pageout ─ swap_writepage ─┬─ zswap_store ok ─▶ entry in pool, page freed
//!                                            └─ rejected ───────▶ bio to the device (pswpout)
//!   do_swap_page ─ swap_read_folio ─┬─ zswap_load hit ─▶ decompress (zswpin)
//!                                   └─ miss ───────────▶ bio from the device (pswpin)
//!   pool at max_pool_percent ─▶ reject stores, queue shrink_worker: write back LRU entries
//!       (zswap_writeback_entry: swap-cache page, decompress, bio; zswpwb, pswpout) until
//!       the pool is at accept_threshold_percent of the max
//! ```
//!
//! What is modelled:
//! * `zswap_store`: the pool limit with its hysteresis (`zswap_check_limits`: full at
//!   `max_pool_percent` of RAM, accepting again below `accept_threshold_percent` of that),
//!   same-filled pages kept as a word (≤6.11), the compressed length from the page's
//!   content ([`crate::mm::compress`]), pages that do not compress below PAGE_SIZE
//!   rejected (≤6.17) or stored as they are (6.18), the zsmalloc allocation
//!   ([`crate::mm::zsmalloc`]) whose pages are taken from free memory (reclaim runs with
//!   PF_MEMALLOC, so no watermark stops it), the memcg charge of the compressed bytes
//!   (`obj_cgroup_charge_zswap`, which may exceed memory.max), the LRU of entries with the
//!   `referenced` bit (6.8+). A stale entry of the slot is dropped first.
//! * `zswap_load`: CPU of decompression; exclusive loads (6.10+, and `exclusive_loads` in
//!   6.5–6.9) erase the entry and dirty the swap-cache page, otherwise the entry stays until
//!   the slot is freed (`zswap_invalidate`).
//! * `shrink_worker`: a kernel thread of its own, queued when a store fails while the pool
//!   is full; it writes back the oldest entries (second chance for referenced ones) until
//!   the pool is at the accept threshold, or gives up after `MAX_RECLAIM_RETRIES` failures.
//!   `zswap_writeback_entry` allocates a swap-cache page (workingset refault accounting
//!   included), decompresses into it, frees the entry and writes the page with PG_reclaim
//!   (`zswpwb`, `pswpout`); a slot already in the swap cache is skipped (-EEXIST).
//!
//! Simplifications (docs/model.md): one LRU for all memcgs (the kernel keeps one per memcg
//! and node and the worker visits memcgs round-robin); no `memory.zswap.max` /
//! `memory.zswap.writeback`; the writeback page is allocated without direct reclaim (it
//! fails below the min watermark); the memory shrinker (`shrinker_enabled`) is not modelled
//! (a scenario enabling it is refused); one compressor per run (no pool switching).

use crate::engine::Sim;
use crate::ids::Pfn;
use crate::mm::compress::{self, Content, PAGE};
use crate::mm::vmstat::Counter;
use crate::mm::MAX_RECLAIM_RETRIES;
use crate::mm::{pg, NIL};
use crate::swap::zswap::{NO_ENTRY, SAME_FILLED};
use crate::swap::Entry;
use crate::units::JIFFY_NS;

/// 3.x `struct zswap_header` (the swap entry) stored in front of each object.
const ZSWAP_HEADER: u32 = 8;

impl Sim {
    /// Drops the entry at global index `gi`: frees its object, uncharges its memcg, unlinks
    /// it (`zswap_entry_free`).
    fn zswap_erase(&mut self, gi: usize) {
        let z = &mut self.swap.zswap;
        let v = std::mem::replace(&mut z.len[gi], NO_ENTRY);
        debug_assert_ne!(v, NO_ENTRY);
        z.stored_pages -= 1;
        if z.rules.zbud_evict {
            // zbud_free: the page goes with its last buddy.
            let h = std::mem::replace(&mut z.handle[gi], NIL);
            let freed = z.zbud.free(h) as u64;
            self.zs_free_pages(freed);
            return;
        }
        z.lru_del(gi);
        let freed = if v == SAME_FILLED {
            z.same_filled_pages -= 1;
            0
        } else {
            let len = v as u32 - 1;
            let m = z.memcg[gi] as usize;
            let before = z.memcg_pages(m);
            z.memcg_bytes[m] -= len as u64;
            let after = z.memcg_pages(m);
            self.mm.memcg_charge(m as u16, -((before - after) as i64));
            self.swap.zswap.pool.free(len)
        };
        self.zs_free_pages(freed);
    }

    /// `zswap_invalidate`: the swap slot was freed; its entry goes with it.
    pub fn zswap_invalidate(&mut self, e: Entry) {
        if self.swap.zswap.has(e) {
            let gi = self.swap.zswap.gidx(e);
            self.zswap_erase(gi);
        }
    }

    /// `zswap_store` of page `f` at `entry` with content `c`. Returns true if zswap took the
    /// page (the caller then writes nothing and counts `zswpout`). Charges the compression
    /// to the running thread.
    pub fn zswap_store(&mut self, f: Pfn, entry: Entry, c: Content) -> bool {
        // A stale entry of this slot is dropped whatever happens (check_old).
        self.zswap_invalidate(entry);
        if !self.swap.zswap.enabled {
            return false;
        }
        let stored = self.zswap_try_store(f, entry, c);
        if !stored && self.swap.zswap.reached_full {
            self.zswap_queue_shrink();
        }
        stored
    }

    fn zswap_try_store(&mut self, f: Pfn, entry: Entry, c: Content) -> bool {
        if self.swap.zswap.rules.zbud_evict {
            return self.zswap_frontswap_store(f, entry, c);
        }
        if self.swap.zswap.check_limits() {
            return false;
        }
        let m = self.mm.frames.memcg[f];
        let comp = self.swap.zswap.comp;
        let len = match comp.compressed_len(c) {
            None if self.swap.zswap.rules.same_filled => None,
            // 6.12+: zero pages never get here (zeromap); without the same-filled check a zero
            // page compresses like a word page.
            None => Some(comp.word_len),
            Some(l) => Some(l),
        };
        let code = match len {
            None => {
                // zswap_is_folio_same_filled: a scan of the page, no compression.
                self.charge(compress::PAGE_COPY_NS / 4);
                self.swap.zswap.same_filled_pages += 1;
                SAME_FILLED
            }
            Some(l) => {
                self.charge(comp.compress_ns(l));
                let l = if l >= PAGE {
                    if !self.swap.zswap.rules.store_incompressible {
                        self.swap.zswap.reject_compress_poor += 1;
                        return false;
                    }
                    PAGE
                } else {
                    l
                };
                let grew = self.swap.zswap.pool.alloc(l);
                if !self.zs_alloc_pages(grew) {
                    self.swap.zswap.pool.free(l);
                    self.swap.zswap.reject_alloc_fail += 1;
                    return false;
                }
                let z = &mut self.swap.zswap;
                let before = z.memcg_pages(m as usize);
                z.memcg_bytes[m as usize] += l as u64;
                let after = z.memcg_pages(m as usize);
                self.mm.memcg_charge(m, (after - before) as i64);
                l as u16 + 1
            }
        };
        let z = &mut self.swap.zswap;
        let gi = z.gidx(entry);
        z.len[gi] = code;
        z.memcg[gi] = m;
        z.referenced[gi] = true;
        z.lru_add_newest(gi);
        z.stored_pages += 1;
        true
    }

    /// 3.11-3.14 `zswap_frontswap_store`: a full pool (`zswap_is_full`: more pages than
    /// `max_pool_percent` of RAM) first evicts its oldest zbud page (`zbud_reclaim_page`),
    /// rejecting the store when that fails; then the page is compressed (no same-filled
    /// check in 3.x) and its object, with the 8-byte `zswap_header`, goes into zbud. Nothing
    /// is charged to a memcg.
    fn zswap_frontswap_store(&mut self, f: Pfn, entry: Entry, c: Content) -> bool {
        let z = &mut self.swap.zswap;
        if z.zbud.pages_nr > z.max_pages {
            z.pool_limit_hit += 1;
            if !self.zbud_reclaim_page() {
                self.swap.zswap.reject_reclaim_fail += 1;
                return false;
            }
        }
        let comp = self.swap.zswap.comp;
        let len = comp.compressed_len(c).unwrap_or(comp.word_len);
        self.charge(comp.compress_ns(len));
        let gi = self.swap.zswap.gidx(entry);
        let Some((h, new_page)) = self.swap.zswap.zbud.alloc(len.min(PAGE) + ZSWAP_HEADER, gi as u32) else {
            self.swap.zswap.reject_compress_poor += 1;
            return false;
        };
        if new_page && !self.zs_alloc_pages(1) {
            self.swap.zswap.zbud.free(h);
            self.swap.zswap.reject_alloc_fail += 1;
            return false;
        }
        let z = &mut self.swap.zswap;
        z.len[gi] = len as u16 + 1;
        z.handle[gi] = h;
        z.memcg[gi] = self.mm.frames.memcg[f];
        z.stored_pages += 1;
        true
    }

    /// `zbud_reclaim_page(pool, 8)`: up to eight times, the oldest zbud page has each of its
    /// buddies written back (`zswap_writeback_entry`); success when a page is freed so, else
    /// the page goes back to the LRU head and the next oldest is tried. Done by the storing
    /// task, in its reclaim.
    fn zbud_reclaim_page(&mut self) -> bool {
        for _ in 0..8 {
            let Some((p, owners)) = self.swap.zswap.zbud.lru_tail() else { return false };
            for gi in owners.into_iter().filter(|&o| o != NIL) {
                self.charge(self.cost.scan_ns);
                self.zswap_writeback_entry(gi as usize);
            }
            if !self.swap.zswap.zbud.page_in_use(p) {
                return true;
            }
            self.swap.zswap.zbud.lru_rotate(p);
        }
        false
    }

    /// `zswap_load` into page `f` (in the swap cache, or a private page of a synchronous
    /// swap-in). Returns false on a miss.
    pub fn zswap_load(&mut self, f: Pfn, entry: Entry) -> bool {
        let Some(len) = self.swap.zswap.stored_len(entry) else { return false };
        let ns = if len == 0 { compress::PAGE_COPY_NS } else { self.swap.zswap.comp.decompress_ns(len) };
        self.charge(ns);
        let m = self.mm.frames.memcg[f];
        self.mm.count(Counter::Zswpin, m, 1);
        if self.swap.zswap.rules.exclusive_load && self.mm.frames.test(f, pg::SWAPCACHE) {
            // The swap cache owns the only copy now.
            let gi = self.swap.zswap.gidx(entry);
            self.zswap_erase(gi);
            self.mm.frames.set(f, pg::DIRTY);
        }
        true
    }

    /// `queue_work(shrink_wq, &zswap_shrink_work)`: a no-op while it is queued or running.
    fn zswap_queue_shrink(&mut self) {
        if !self.swap.zswap.worker_queued {
            self.swap.zswap.worker_queued = true;
            self.swap.zswap.worker_failures = 0;
            let w = self.zswap_worker_thread();
            self.wake_up(w);
        }
    }

    /// The shrink worker's thread (`shrink_worker`): writes back the oldest entries until
    /// the pool is at the accept threshold, giving up after `MAX_RECLAIM_RETRIES` failures.
    /// Second-chance rotations are a few list operations and run without yielding; the
    /// thread yields at its burst limit before a writeback.
    pub fn run_zswap_shrink_worker(&mut self) {
        let limit = self.burst_limit(self.sched.now);
        loop {
            self.swap_slots_released();
            let gi = self.swap.zswap.tail;
            if self.swap.zswap.pool.pages <= self.swap.zswap.accept_pages
                || self.swap.zswap.worker_failures >= MAX_RECLAIM_RETRIES
                || gi == NIL
            {
                self.swap.zswap.worker_queued = false;
                return;
            }
            let gi = gi as usize;
            if self.swap.zswap.rules.shrinker && std::mem::take(&mut self.swap.zswap.referenced[gi]) {
                // Second chance: rotate; a walk that wrote nothing back is a failure.
                self.charge(self.cost.scan_ns);
                self.swap.zswap.lru_del(gi);
                self.swap.zswap.lru_add_newest(gi);
                self.swap.zswap.worker_failures += 1;
                continue;
            }
            if self.sched.now >= limit {
                let w = self.zswap_worker_thread();
                self.wake(w, self.sched.now);
                return;
            }
            self.charge(self.cost.scan_ns);
            if !self.zswap_writeback_entry(gi) {
                // Rotated before the attempt, so a failing entry does not block the walk.
                if self.swap.zswap.len[gi] != NO_ENTRY {
                    self.swap.zswap.lru_del(gi);
                    self.swap.zswap.lru_add_newest(gi);
                }
                self.swap.zswap.reject_reclaim_fail += 1;
                self.swap.zswap.worker_failures += 1;
                if self.mm.nr_free() <= self.tun.wmark.min {
                    // Allocation failed: let reclaim make room before the next attempt.
                    self.wake_kswapd();
                    let w = self.zswap_worker_thread();
                    self.wake(w, self.sched.now + JIFFY_NS);
                    return;
                }
            }
        }
    }

    /// `zswap_writeback_entry`: moves the entry at `gi` to the backing device through a new
    /// swap-cache page. False when the slot is already in the swap cache, has no reference
    /// left (freed into the slots cache, 4.11-6.13: its entry goes when the slot is freed,
    /// and `__read_swap_cache_async` refuses a slot whose count is 0), or no page could be
    /// had.
    fn zswap_writeback_entry(&mut self, gi: usize) -> bool {
        let entry = self.swap.zswap.entry_of(gi as u32);
        let slot = entry.slot();
        let a = self.swap.area_ref(entry);
        if a.cached(slot).is_some() || a.count(slot) == 0 {
            return false;
        }
        let m = self.swap.zswap.memcg[gi];
        let Some(f) = self.alloc_page_atomic(m) else { return false };
        let len = self.swap.zswap.stored_len(entry).expect("entry present");
        self.swap_cache_add_new(f, entry, 0);
        self.charge(if len == 0 { compress::PAGE_COPY_NS } else { self.swap.zswap.comp.decompress_ns(len) });
        self.zswap_erase(gi);
        self.swap.zswap.written_back_pages += 1;
        self.mm.count(Counter::Zswpwb, m, 1);
        // __swap_writepage: straight to the device, PG_reclaim so the page is reclaimed
        // as soon as the write ends.
        self.swap_write_to_device(f, entry, true);
        self.unplug_all();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::memory::Fault;
    use crate::mm::compress::{PageContent, RegionContent};
    use crate::mm::pte;
    use crate::testutil::{evict, fault, sim, swapcache_page, writeout};

    fn zswap_sim(profile: &str, zswap: &str) -> Sim {
        sim(&format!(
            "[kernel]\nprofile = \"{profile}\"\n[zswap]\nenabled = true\n{zswap}\n\
             [device.d]\nmodel = \"sata-ssd\"\n[[swap]]\ndevice = \"d\"\nsize = \"16MB\"\n"
        ))
    }

    fn content(s: &mut Sim, c: RegionContent) {
        s.swap.content = PageContent::new(vec![c], 1, &[s.swap.areas[0].nslots], true);
    }

    #[test]
    fn zswap_of_3_14_packs_two_objects_per_zbud_page_and_charges_no_memcg() {
        let mut s = zswap_sim("linux-3.14", "");
        for i in 0..5 {
            let (f, e) = swapcache_page(&mut s, i);
            assert!(writeout(&mut s, f, e), "stored");
            evict(&mut s, f, e, i);
        }
        assert_eq!((s.swap.zswap.stored_pages, s.swap.zswap.pool_pages()), (5, 3), "two word pages per zbud page");
        assert_eq!(s.mm.zs_frames.len(), 3, "the pool's pages come from free memory");
        assert_eq!(s.swap.zswap.memcg_pages(0), 0, "3.x charges the pool to no memcg");
        // A load keeps the entry (no exclusive loads in 3.x).
        assert!(matches!(fault(&mut s, 2, false), Fault::Done));
        assert_eq!(s.swap.zswap.stored_pages, 5);
        s.verify().unwrap();
    }

    #[test]
    fn a_full_3_14_pool_makes_the_storing_task_write_back_its_oldest_page() {
        // max_pool_percent = 0: the pool is full as soon as it holds a page.
        let mut s = zswap_sim("linux-3.14", "max_pool_percent = 0\n");
        let (f, e) = swapcache_page(&mut s, 1);
        assert!(writeout(&mut s, f, e));
        evict(&mut s, f, e, 1);
        assert_eq!(s.swap.zswap.pool_pages(), 1);
        let (g, e2) = swapcache_page(&mut s, 2);
        assert!(writeout(&mut s, g, e2), "stored after the eviction made room");
        let z = &s.swap.zswap;
        assert_eq!((z.pool_limit_hit, z.written_back_pages, z.reject_reclaim_fail), (1, 1, 0));
        assert!(!z.has(e) && z.has(e2), "the old object went to the disk, the new one is in the pool");
        assert_eq!(z.pool_pages(), 1);
        assert_eq!(s.mm.vmstat.get(Counter::PswpOut), 1, "the written-back page is a swap write");
        let wb = s.swap.area_ref(e).cached(e.slot()).expect("written back through the swap cache");
        assert!(s.mm.frames.test(wb, pg::WRITEBACK | pg::RECLAIM));
        assert!(!s.swap.zswap.worker_queued, "3.x has no shrink worker");
        s.verify().unwrap();
    }

    #[test]
    fn a_store_writes_nothing_and_a_load_reads_nothing() {
        let mut s = zswap_sim("linux-6.6", "");
        let (f, e) = swapcache_page(&mut s, 7);
        let free = s.mm.nr_free();
        assert!(writeout(&mut s, f, e));
        assert!(!s.mm.frames.test(f, pg::WRITEBACK | pg::DIRTY), "stored: clean, no I/O in flight");
        assert_eq!((s.mm.vmstat.get(Counter::Zswpout), s.mm.vmstat.get(Counter::PswpOut)), (1, 0));
        assert_eq!((s.swap.zswap.stored_pages, s.swap.zswap.pool.pages, s.mm.nr_free()), (1, 1, free - 1));
        assert_eq!(s.swap.zswap.stored_len(e), Some(44), "lzo, word page");
        assert_eq!(s.io.devices[0].stats().writes, 0);
        evict(&mut s, f, e, 7);
        assert!(matches!(fault(&mut s, 7, false), Fault::Done), "loaded synchronously");
        assert_eq!((s.mm.vmstat.get(Counter::Zswpin), s.mm.vmstat.get(Counter::PswpIn)), (1, 0));
        assert_eq!(s.mm.vmstat.get(Counter::PgMajFault), 1, "a zswap load is still a major fault");
        assert_eq!(s.io.devices[0].stats().reads, 0);
        s.verify().unwrap();
    }

    #[test]
    fn a_6_18_load_frees_the_entry_and_a_6_6_load_keeps_it_until_the_slot_goes() {
        for (profile, exclusive) in [("linux-6.18", true), ("linux-6.6", false)] {
            let mut s = zswap_sim(profile, "");
            let (f, e) = swapcache_page(&mut s, 2);
            assert!(writeout(&mut s, f, e));
            evict(&mut s, f, e, 2);
            // A read fault: the page is mapped read-only from the swap cache.
            assert!(matches!(fault(&mut s, 2, false), Fault::Done));
            let g = pte::frame(s.mm.vmas[0].pte[2]).unwrap();
            assert!(s.mm.frames.test(g, pg::SWAPCACHE), "{profile}");
            assert_eq!(s.swap.zswap.has(e), !exclusive, "{profile}");
            assert_eq!(s.mm.frames.test(g, pg::DIRTY), exclusive, "{profile}: the only copy is in memory");
            assert_eq!(s.swap.zswap.pool.pages, !exclusive as u64, "{profile}");
            // Freeing the slot (the page leaves the swap cache, the PTE no longer points at it)
            // takes a kept entry with it.
            s.delete_from_swap_cache(g);
            s.swap_slots_released();
            assert!(!s.swap.zswap.has(e), "{profile}");
            assert_eq!((s.swap.zswap.stored_pages, s.mm.zs_frames.len()), (0, 0), "{profile}");
            s.verify().unwrap();
        }
    }

    /// Evicts page `idx` to swap, then unmaps it as munmap would: its PTE is cleared and
    /// drops its reference on the slot (freed at the next `swap_slots_released`).
    fn evict_and_unmap(s: &mut Sim, f: Pfn, e: Entry, idx: u32) {
        evict(s, f, e, idx);
        s.mm.vmas[0].pte[idx as usize] = pte::NONE;
        s.swap.area(e).put(e.slot());
    }

    #[test]
    fn a_full_pool_rejects_until_it_is_below_the_accept_threshold() {
        // 60 MB managed = 15360 pages; 1% = 153 pages, accept below 90% of that = 137.
        let mut s = zswap_sim("linux-6.18", "max_pool_percent = 1");
        content(&mut s, RegionContent { incompressible: 1.0, ..Default::default() });
        let mut stored = Vec::new();
        for idx in 0..153 {
            let (f, e) = swapcache_page(&mut s, idx);
            assert!(writeout(&mut s, f, e), "page {idx} fits");
            stored.push((f, e, idx));
        }
        assert_eq!(s.swap.zswap.pool.pages, 153, "6.18 stores an incompressible page as it is: a page each");
        let (f, e) = swapcache_page(&mut s, 200);
        s.mm.frames.clear(f, pg::DIRTY);
        assert!(!s.swap_writepage_sync(f, e), "full: the page goes to the device");
        assert_eq!((s.swap.zswap.pool_limit_hit, s.swap.zswap.stored_pages), (1, 153));
        // Dropping entries to 138 pages (above the threshold) keeps it refusing...
        for &(g, ge, idx) in &stored[..15] {
            evict_and_unmap(&mut s, g, ge, idx);
        }
        s.swap_slots_released();
        assert_eq!(s.swap.zswap.pool.pages, 138);
        assert!(!s.zswap_store(f, e, Content::Word));
        // ... and at 137 it accepts again.
        let (g, ge, idx) = stored[15];
        evict_and_unmap(&mut s, g, ge, idx);
        s.swap_slots_released();
        assert_eq!(s.swap.zswap.pool.pages, 137);
        assert!(s.zswap_store(f, e, Content::Word));
        assert_eq!(s.swap.zswap.pool_limit_hit, 1, "counted only when the pool is at its maximum");
    }

    #[test]
    fn pages_that_do_not_compress_are_rejected_on_6_6() {
        let mut s = zswap_sim("linux-6.6", "");
        content(&mut s, RegionContent { incompressible: 1.0, ..Default::default() });
        let (f, e) = swapcache_page(&mut s, 1);
        s.mm.frames.clear(f, pg::DIRTY);
        assert!(!s.swap_writepage_sync(f, e), "to the device");
        assert_eq!((s.swap.zswap.reject_compress_poor, s.swap.zswap.stored_pages), (1, 0));
    }

    #[test]
    fn compressed_bytes_are_charged_to_the_pages_memcg() {
        let mut s = zswap_sim("linux-6.6", "");
        content(&mut s, RegionContent { ratio: Some(2.0), ..Default::default() });
        let mut last = (Pfn(0), Entry(0));
        for idx in 0..3 {
            let (f, e) = swapcache_page(&mut s, idx);
            assert!(writeout(&mut s, f, e));
            last = (f, e);
        }
        // Three pages of 2048 bytes (lzo at ratio 2): 6144 bytes, charged as 2 pages.
        assert_eq!(s.swap.zswap.memcg_pages(0), 2);
        s.verify().unwrap();
        let (f, e) = last;
        evict_and_unmap(&mut s, f, e, 2);
        s.swap_slots_released();
        assert_eq!(s.swap.zswap.memcg_pages(0), 1);
        s.verify().unwrap();
    }

    #[test]
    fn the_shrink_worker_writes_the_oldest_entries_back_to_the_device() {
        let mut s = zswap_sim("linux-6.18", "max_pool_percent = 1");
        content(&mut s, RegionContent { incompressible: 1.0, ..Default::default() });
        let mut entries = Vec::new();
        for idx in 0..154 {
            let (f, e) = swapcache_page(&mut s, idx);
            let stored = writeout(&mut s, f, e);
            assert_eq!(stored, idx < 153, "page {idx}");
            if stored {
                evict(&mut s, f, e, idx);
                entries.push(e);
            }
        }
        assert!(s.swap.zswap.worker_queued, "the failed store queued the worker");
        // One queued work item, run to its end (its thread yields at every burst limit).
        let work = |s: &mut Sim| {
            for _ in 0..10_000 {
                s.run_zswap_shrink_worker();
                if !s.swap.zswap.worker_queued {
                    return;
                }
            }
            panic!("the shrink work does not end");
        };
        work(&mut s);
        // Every entry is referenced once stored: the first walk rotates 16 of them to the
        // newest end and gives up (MAX_RECLAIM_RETRIES failures) without writing any back.
        assert_eq!((s.swap.zswap.written_back_pages, s.swap.zswap.worker_failures), (0, 16));
        // Once the whole LRU has had its second chance, the oldest entries go.
        let mut runs = 0;
        while s.swap.zswap.pool.pages > 137 {
            s.zswap_queue_shrink();
            work(&mut s);
            runs += 1;
            assert!(runs < 50, "the worker makes no progress");
        }
        assert_eq!(s.swap.zswap.pool.pages, 137);
        let wb = s.swap.zswap.written_back_pages;
        assert_eq!(s.mm.vmstat.get(Counter::Zswpwb), wb);
        assert_eq!(s.mm.vmstat.get(Counter::PswpOut), wb, "written back to the device");
        assert_eq!(wb, 16, "down to the accept threshold: 153 - 137");
        // The oldest went first, each now a swap-cache page under writeback.
        for e in &entries[..16] {
            let f = s.swap.area_ref(*e).cached(e.slot()).expect("in the swap cache");
            assert!(s.mm.frames.test(f, pg::WRITEBACK | pg::RECLAIM));
            assert!(!s.swap.zswap.has(*e));
        }
        assert!(s.swap.zswap.has(entries[16]));
        s.verify().unwrap();
    }
}
