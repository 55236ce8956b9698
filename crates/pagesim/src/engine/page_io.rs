//! Models mm/page_io.c: `swap_writepage` (and `__swap_writepage`, which submits the write
//! bio through engine/block.rs), and the parts of `swap_writepage` and `swap_read_folio`
//! that do not end in an asynchronous bio: the zeromap (6.12+), zswap ([`super::zswap`]),
//! and devices whose I/O the submitting thread does itself (zram always; pmem and brd with `SWP_SYNCHRONOUS_IO`,
//! 4.15+: `swap_writepage_bdev_sync`, `swap_read_folio_bdev_sync`). Also the swap-cache
//! bypass for such devices (mm/memory.c `do_swap_page` when `SWP_SYNCHRONOUS_IO &&
//! __swap_count(entry) == 1`, mm/shmem.c `shmem_swap_alloc_folio`), and what happens when a
//! swap slot is freed (`swap_range_free`: `zswap_invalidate`, `swap_slot_free_notify`).
//!
//! DOC: the order in which a swapped-out page looks for a home, and a swapped-in page for
//! its data, is the kernel's:
//!
//! ```text
//!   write: zero page & zeromap (swpout_zero) ─▶ zswap_store (zswpout) ─▶ device (pswpout)
//!   read:  zeromap bit (swpin_zero) ─▶ zswap_load (zswpin) ─▶ device (pswpin)
//! ```
//!
//! Everything but an asynchronous device completes before the call returns: the page is
//! clean (write) or uptodate (read) at once, its CPU cost charged to the running thread
//! (kswapd, a reclaiming task, the faulting task). Reclaim then frees a written page in the
//! same pass (`shrink_folio_list`: "a synchronous write - probably a ramdisk").
//!
//! The bypass (`swap_sync_io` profiles): a swap-cache miss on a synchronous device whose slot
//! has one reference reads into a private page (no swap cache, no readahead, no
//! `swap_ra`/`swap_ra_hit`), with shadow-entry refault accounting, maps it exclusively and
//! frees the slot: the page has no swap copy any more, so it is written (compressed) again
//! when reclaimed. Still a major fault.
//!
//! Also the frames zsmalloc pools take (`zs_alloc_pages`, `zs_free_pages`), the content
//! model's set-up (`setup`, `swap_note_content`), the invariants and gauges of compressed
//! swap (`verify_compressed`, `compressed_gauges`).
//!
//! Freed slots: [`crate::swap::SwapArea`] logs the slots it frees when something keeps
//! per-slot data (zswap, zram); the log is drained here at every entry point, so an entry
//! or object never outlives its slot by more than one swap operation.

use crate::device::{DeviceQueue, IoDir, MmStat, Stored};
use crate::engine::memory::Fault;
use crate::engine::Sim;
use crate::ids::Pfn;
use crate::ids::{Tid, VmaId};
use crate::mm::compress::{self, Content, PageContent, RegionContent};
use crate::mm::pte;
use crate::mm::vmstat::{Counter, Gauge};
use crate::mm::{pg, Mm, Owner};
use crate::scenario::config::Config;
use crate::scenario::Profile;
use crate::swap::zswap::Zswap;
use crate::swap::{Entry, SwapArea};

/// Builds zswap and the content model for a run and marks the swap areas whose freed slots
/// must be reported (zswap enabled, or the area is on zram).
pub fn setup(
    c: &Config,
    profile: &Profile,
    areas: &mut [SwapArea],
    devices: &[DeviceQueue],
    managed_pages: u64,
    nr_memcgs: usize,
    seed: u64,
) -> (Zswap, PageContent) {
    let area_slots: Vec<u32> = areas.iter().map(|a| a.nslots).collect();
    let zswap = Zswap::new(&c.zswap, profile.zswap, &area_slots, managed_pages, nr_memcgs);
    let regions: Vec<RegionContent> = c.region.iter().map(|r| r.content()).collect();
    let any_backend = areas.iter().any(|a| devices[a.dev.idx()].model().swap_backend().is_some());
    let zero_pages = profile.swap_zeromap && regions.iter().any(|r| r.zero > 0.0);
    let active = zswap.enabled || any_backend || zero_pages;
    for a in areas.iter_mut() {
        a.track_release = zswap.enabled || devices[a.dev.idx()].model().swap_backend().is_some();
    }
    (zswap, PageContent::new(regions, seed, &area_slots, active))
}

impl Sim {
    /// Takes `n` frames for zsmalloc pools. Reclaim and swap I/O run with PF_MEMALLOC, so
    /// no watermark stops them; only an empty free list does. Wakes kswapd below low.
    pub fn zs_alloc_pages(&mut self, n: u64) -> bool {
        if self.mm.frames.nr_free() < n {
            return false;
        }
        for _ in 0..n {
            let f = self.mm.frames.alloc(0).expect("free frame present");
            self.mm.zs_frames.push(f);
            self.mm.vmstat.add(Counter::PgAlloc, 1);
        }
        if n > 0 && self.mm.nr_free() <= self.tun.wmark.low {
            self.wake_kswapd();
        }
        true
    }

    /// Returns `n` zsmalloc frames to the free pages.
    pub fn zs_free_pages(&mut self, n: u64) {
        for _ in 0..n {
            let f = self.mm.zs_frames.pop().expect("zsmalloc frame to free");
            self.mm.frames.free(f);
            self.mm.pages_scanned = 0;
            self.mm.vmstat.add(Counter::PgFree, 1);
        }
    }

    /// Remembers the content of page `f`, entering the swap cache at `entry` while its
    /// owner is still known (from `add_to_swap_cache`).
    pub fn swap_note_content(&mut self, f: Pfn, entry: Entry) {
        if !self.swap.content.active {
            return;
        }
        let (key, region) = match self.mm.frames.owner(f) {
            Owner::Anon(a) => (self.mm.anon_vmas[a].key, self.mm.anon_vmas[a].region),
            Owner::Shmem(o) => {
                // The object's region (its mappers may all have exited: the pages stay).
                let region = self.procs.shmem_of.iter().position(|&x| x == Some(o)).expect("a shmem region") as u32;
                (o | 1 << 31, region)
            }
            // File pages never enter the swap cache.
            Owner::File(_) | Owner::None => return,
        };
        let idx = self.mm.frames.index[f];
        for k in 0..self.mm.frames.nr_pages(f) as u32 {
            self.swap.content.record(entry.offset(k), key, region, idx + k);
        }
    }

    /// `swap_range_free` for the slots freed since the last call: zswap entries and zram
    /// objects go with them.
    pub fn swap_slots_released(&mut self) {
        for a in 0..self.swap.areas.len() {
            if self.swap.areas[a].released.is_empty() {
                continue;
            }
            let mut slots = std::mem::take(&mut self.swap.areas[a].released);
            let dev = self.swap.areas[a].dev;
            for &s in &slots {
                let e = Entry::new(a as u32, s);
                self.zswap_invalidate(e);
                self.swap.content.clear(e);
                let off = self.swap.areas[a].offset_of(s);
                if let Some(b) = self.io.devices[dev].model_mut().swap_backend_mut() {
                    let freed = b.free(off);
                    self.zs_free_pages(freed);
                }
            }
            slots.clear();
            self.swap.areas[a].released = slots;
        }
    }

    /// Whether I/O to `entry`'s device is done by the submitting thread: zram, and the
    /// other drivers that complete a request in the submitter (pmem, brd: `->rw_page`
    /// 3.16-6.2, bio-based drivers in every version). Whether swap-in then also skips the
    /// swap cache is the profile's (`swap_sync_bypass`, ≥4.15).
    pub fn swap_dev_sync(&self, entry: Entry) -> bool {
        let m = self.io.devices[self.swap.area_ref(entry).dev].model();
        m.swap_backend().is_some() || m.synchronous_io()
    }

    /// `do_swap_page`'s test for the bypass: a synchronous device and one reference.
    pub fn swap_sync_bypass(&self, entry: Entry) -> bool {
        self.profile.swap_sync_io
            && self.io.devices[self.swap.area_ref(entry).dev].model().synchronous_io()
            && self.swap.area_ref(entry).count(entry.slot()) == 1
    }

    /// `swap_writepage` for dirty page `f` in the swap cache at `entry` (PG_dirty already
    /// cleared), when the write does not become an asynchronous bio: zero page with a
    /// zeromap, zswap, a synchronous device. Returns false to let the caller submit the bio.
    pub fn swap_writepage_sync(&mut self, f: Pfn, entry: Entry) -> bool {
        if !self.swap.content.active && !self.swap_dev_sync(entry) {
            return false;
        }
        self.swap_slots_released();
        let m = self.mm.frames.memcg[f];
        let nr = self.mm.frames.nr_pages(f) as u32;
        // The first page's content, read once (a single page is the common case).
        let c0 = self.swap.content.get(entry);
        if self.profile.swap_zeromap {
            // swap_writeout: a folio whose every page is zero is only remembered.
            let zero = c0 == Content::Zero && (1..nr).all(|k| self.swap.content.get(entry.offset(k)) == Content::Zero);
            for k in 0..nr {
                self.swap.content.set_zeromap(entry.offset(k), zero);
            }
            if zero {
                for k in 0..nr {
                    self.zswap_invalidate(entry.offset(k));
                }
                self.mm.count(Counter::SwpoutZero, m, nr as u64);
                self.mm.count(Counter::NrVmscanWrite, m, nr as u64);
                self.charge(compress::PAGE_COPY_NS / 4 * nr as u64);
                return true;
            }
        }
        if self.zswap_store_folio(f, entry, c0) {
            self.mm.count(Counter::NrVmscanWrite, m, nr as u64);
            self.charge(self.swapout_unlocked_ns());
            // ≤4.8 frontswap: the page still goes through set_page_writeback and
            // end_page_writeback, each tagging it in the swap cache's tree.
            self.swap_writeback_tag(entry);
            self.swap_writeback_tag(entry);
            return true;
        }
        if self.swap_dev_sync(entry) {
            // A synchronous device (zram, brd, pmem) takes the folio's bio page by page.
            self.mm.count(Counter::NrVmscanWrite, m, nr as u64);
            for k in 0..nr {
                self.swap_write_to_device(f, entry.offset(k), false);
            }
            if nr > 1 {
                self.mm.count(Counter::MthpSwpout, m, 1);
            }
            return true;
        }
        false
    }

    /// `zswap_store` of folio `f`, in the swap cache at `entry` (its first page's content
    /// `c0`): every page or none (6.13+
    /// stores a large folio page by page and, if one page fails, drops the entries it made
    /// for the others). Counts `zswpout` per page stored.
    fn zswap_store_folio(&mut self, f: Pfn, entry: Entry, c0: Content) -> bool {
        let nr = self.mm.frames.nr_pages(f) as u32;
        for k in 0..nr {
            let e = entry.offset(k);
            let c = if k == 0 { c0 } else { self.swap.content.get(e) };
            if !self.zswap_store(f, e, c) {
                for j in 0..k {
                    self.zswap_invalidate(entry.offset(j));
                }
                return false;
            }
        }
        let m = self.mm.frames.memcg[f];
        self.mm.count(Counter::Zswpout, m, nr as u64);
        true
    }

    /// `__swap_writepage`: writes page `f` to `entry`'s device, synchronously if the device
    /// is, else as a bio under the current plug. `reclaim` sets PG_reclaim (zswap writeback)
    /// so the page is rotated for reclaim when the write ends. A failed zram write leaves the
    /// page dirty (`__end_swap_bio_write`).
    pub fn swap_write_to_device(&mut self, f: Pfn, entry: Entry, reclaim: bool) {
        let m = self.mm.frames.memcg[f];
        let (dev, off) = {
            let a = self.swap.area_ref(entry);
            (a.dev, a.offset_of(entry.slot()))
        };
        self.mm.count(Counter::PswpOut, m, 1);
        self.mm.count(Counter::PgpgOut, m, 4);
        self.charge(self.swapout_unlocked_ns());
        // set_page_writeback (its tag cleared by folio_end_writeback when the write ends).
        self.swap_writeback_tag(entry);
        if !self.swap_dev_sync(entry) {
            self.mm.frames.set(f, pg::WRITEBACK | if reclaim { pg::RECLAIM } else { 0 });
            self.mm.account_writeback(f, true);
            self.submit_bio(dev, off, f, IoDir::Write);
            return;
        }
        let c = self.swap.content.get(entry);
        let stored = self.io.devices[dev].model_mut().swap_backend_mut().map(|b| (b.compressor(), b.store(off, c)));
        let ns = match stored {
            Some((comp, Ok((what, len, freed, grew)))) => {
                self.zs_free_pages(freed);
                if !self.zs_alloc_pages(grew) {
                    // zs_malloc found no page: -ENOMEM, the page stays dirty.
                    if let Some(b) = self.io.devices[dev].model_mut().swap_backend_mut() {
                        b.free(off);
                    }
                    self.mm.frames.set(f, pg::DIRTY);
                }
                if what == Stored::Same {
                    compress::PAGE_COPY_NS / 4
                } else {
                    comp.compress_ns(len)
                }
            }
            Some((comp, Err(_))) => {
                self.mm.frames.set(f, pg::DIRTY);
                comp.compress_ns(comp.compressed_len(c).unwrap_or(comp.word_len))
            }
            None => {
                let now = self.sched.now;
                self.io.devices[dev].model_mut().service_ns(IoDir::Write, off, 4096, now)
            }
        };
        self.io.devices[dev].account_sync(IoDir::Write, 4096, ns);
        self.charge(ns);
        self.note_device_ns(ns);
        // The write is done: end_page_writeback clears the tag.
        self.swap_writeback_tag(entry);
        if reclaim && !self.mm.frames.test(f, pg::DIRTY) {
            // folio_end_writeback with PG_reclaim: to the inactive tail for reclaim.
            let mc = m as usize;
            let Mm { memcgs, frames, .. } = &mut self.mm;
            memcgs[mc].lru.del(frames, f);
            frames.clear(f, pg::ACTIVE);
            memcgs[mc].lru.add_tail(frames, f, crate::mm::LruList::InactiveAnon);
        }
    }

    /// `swap_read_folio` for page `f` at `entry` when the data is not fetched by an
    /// asynchronous bio: zeromap, zswap, a synchronous device. Returns true when `f` is
    /// uptodate; false lets the caller submit the bio.
    pub fn swap_read_folio_sync(&mut self, f: Pfn, entry: Entry, memcg: u16) -> bool {
        if !self.swap.content.active && !self.swap_dev_sync(entry) {
            return false;
        }
        self.swap_slots_released();
        if self.profile.swap_zeromap && self.swap.content.zeromap(entry) {
            self.mm.count(Counter::SwpinZero, memcg, 1);
            self.charge(self.swapin_unlocked_ns() + compress::PAGE_COPY_NS);
            return true;
        }
        if self.zswap_load(f, entry) {
            self.charge(self.swapin_unlocked_ns());
            return true;
        }
        if !self.swap_dev_sync(entry) {
            return false;
        }
        let (dev, off) = {
            let a = self.swap.area_ref(entry);
            (a.dev, a.offset_of(entry.slot()))
        };
        let now = self.sched.now;
        let model = self.io.devices[dev].model_mut();
        let ns = match model.swap_backend() {
            Some(b) => b.load_ns(off),
            None => model.service_ns(IoDir::Read, off, 4096, now),
        };
        self.io.devices[dev].account_sync(IoDir::Read, 4096, ns);
        self.mm.count(Counter::PswpIn, memcg, 1);
        self.mm.count(Counter::PgpgIn, memcg, 4);
        self.charge(self.swapin_unlocked_ns() + ns);
        self.note_device_ns(ns);
        true
    }

    /// A new private folio read back from swap without the swap cache: swap-backed, its
    /// refault decided by the shadow of `entry` (the faulting slot), on the LRU (active when
    /// the refault says so).
    fn swapin_new_folio(&mut self, f: Pfn, entry: Entry) {
        self.mm.frames.set(f, pg::SWAPBACKED);
        if let Some(shadow) = self.swap.area(entry).take_shadow(entry.slot()) {
            self.workingset_refault(f, shadow, false);
        }
        let active = self.mm.frames.test(f, pg::ACTIVE);
        self.mm.frames.clear(f, pg::ACTIVE);
        self.lru_add(f, active);
    }

    /// A new private page for a bypass swap-in of `entry`: refault accounting from the
    /// slot's shadow, on the LRU, read synchronously. `None`: reclaim first.
    fn swapin_direct(&mut self, tid: Tid, entry: Entry) -> Option<Pfn> {
        let f = self.alloc_page(tid)?;
        self.major_fault(tid);
        let memcg = self.sched.tasks[tid].memcg;
        self.swapin_new_folio(f, entry);
        let done = self.swap_read_folio_sync(f, entry, memcg);
        debug_assert!(done, "bypass read from a device that is not synchronous");
        Some(f)
    }

    /// Drops the reference a PTE or shmem slot held on `entry` (`swap_free`), for page `f`.
    fn swap_free_for(&mut self, f: Pfn, entry: Entry) {
        self.swap_free(entry);
        let m = self.mm.frames.memcg[f];
        self.mm.swap_charge(m, -1);
        self.swap_slots_released();
    }

    /// `do_swap_page` skipping the swap cache (`SWP_SYNCHRONOUS_IO`, one reference), for a
    /// single page (a large folio, [`Sim::alloc_swap_folio`], was tried first).
    pub fn do_swap_page_sync(&mut self, tid: Tid, vma: VmaId, idx: u32, write: bool, entry: Entry) -> Fault {
        let Some(f) = self.swapin_direct(tid, entry) else { return Fault::Retry };
        let a = self.mm.vmas[vma].anon.expect("an anon VMA");
        self.mm.frames.set_owner(f, Owner::Anon(a), idx);
        // The page is exclusive and has no swap copy left: writable, and dirty for reclaim.
        self.mm.frames.set(f, pg::DIRTY);
        let flags = pte::YOUNG | pte::WRITE | if write { pte::DIRTY } else { 0 };
        self.mm.vmas[vma].pte[idx as usize] = pte::present(f, flags);
        self.swap_free_for(f, entry);
        Fault::Done
    }

    /// `alloc_swap_folio` (6.12+): the largest enabled anon mTHP order whose aligned range
    /// around `idx` lies in the VMA and holds swap entries of consecutive slots, aligned as
    /// the pages are (`thp_swap_suitable_orders`), all zero or none in the zeromap, none in
    /// the swap cache (`can_swapin_thp`); never once zswap has been on since boot
    /// (`zswap_never_enabled`, `zswap.ever_enabled`).
    /// Allocated and charged without reclaim, like an anon fault's folio: an order whose
    /// allocation or charge fails counts `swpin_fallback` (and `swpin_fallback_charge`) and
    /// the next order is tried. Returns the folio and its first page's index; `None`: a
    /// single page.
    pub(crate) fn alloc_swap_folio(&mut self, tid: Tid, vma: VmaId, idx: u32, entry: Entry) -> Option<(Pfn, u32)> {
        let mut orders = self.tun.anon_orders;
        if orders == 0 || !self.profile.anon_mthp.is_some_and(|r| r.swapin_sync_large) || self.swap.zswap.ever_enabled {
            return None;
        }
        let memcg = self.sched.tasks[tid].memcg;
        while orders != 0 {
            let order = crate::engine::huge_memory::highest_order(orders);
            orders &= !(1 << order);
            let nr = 1u32 << order;
            let k = idx % nr;
            // Aligned as the pages are, and the whole run inside the area past its header.
            let nslots = self.swap.area_ref(entry).nslots;
            if entry.slot() % nr != k || entry.slot() <= k || entry.slot() - k + nr > nslots {
                continue;
            }
            let (first, base) = (idx - k, Entry::new(entry.area() as u32, entry.slot() - k));
            let ptes = &self.mm.vmas[vma].pte;
            let Some(range) = ptes.get(first as usize..(first + nr) as usize) else { continue };
            let a = self.swap.area_ref(entry);
            let zero = self.swap.content.zeromap(base);
            let ok = range.iter().enumerate().all(|(j, &e)| {
                let en = base.offset(j as u32);
                e == pte::SWAP | en.0
                    && !a.has_cache(en.slot())
                    && a.cached(en.slot()).is_none()
                    && self.swap.content.zeromap(en) == zero
            });
            if !ok {
                continue;
            }
            if let Some(f) =
                self.alloc_mthp_folio(memcg, order, Counter::MthpSwpinFallback, Counter::MthpSwpinFallbackCharge)
            {
                return Some((f, first));
            }
        }
        None
    }

    /// Reads large folio `f` back from a synchronous device, page by page as the device
    /// serves the bio, and maps it at `first` (`do_swap_page` with a folio from
    /// `alloc_swap_folio`): the faulting entry's shadow decides the refault for the whole
    /// folio, and every slot is freed.
    pub(crate) fn swapin_large_sync(
        &mut self,
        tid: Tid,
        vma: VmaId,
        idx: u32,
        write: bool,
        f: Pfn,
        first: u32,
    ) -> Fault {
        self.major_fault(tid);
        let memcg = self.sched.tasks[tid].memcg;
        let nr = self.mm.frames.nr_pages(f) as u32;
        let base = Entry(self.mm.vmas[vma].pte[first as usize] & !pte::SWAP);
        self.swapin_new_folio(f, base.offset(idx - first));
        for k in 0..nr {
            let done = self.swap_read_folio_sync(f, base.offset(k), memcg);
            debug_assert!(done, "bypass read from a device that is not synchronous");
        }
        self.mm.count(Counter::MthpSwpin, memcg, 1);
        let a = self.mm.vmas[vma].anon.expect("an anon VMA");
        self.mm.frames.set_owner(f, Owner::Anon(a), first);
        self.mm.frames.set(f, pg::DIRTY);
        let flags = pte::YOUNG | pte::WRITE;
        for k in 0..nr {
            let dirty = if write && first + k == idx { pte::DIRTY } else { 0 };
            self.mm.vmas[vma].pte[(first + k) as usize] = pte::present(f, flags | dirty);
        }
        self.swap_free_nr(base, nr);
        self.mm.swap_charge(memcg, -(nr as i64));
        self.swap_slots_released();
        Fault::Done
    }

    /// `shmem_swapin_folio` through `shmem_swap_alloc_folio` (synchronous device, 6.14+).
    pub fn shmem_swapin_sync(&mut self, tid: Tid, vma: VmaId, obj: u32, idx: u32, write: bool, entry: Entry) -> Fault {
        let Some(f) = self.swapin_direct(tid, entry) else { return Fault::Retry };
        // Back in the shmem page cache with no swap copy: dirty, as a new tmpfs page.
        self.mm.frames.set(f, pg::DIRTY);
        self.mm.frames.set_owner(f, Owner::Shmem(obj), idx);
        self.mm.shmem[obj as usize].slots[idx as usize] = f.slot();
        let flags = pte::YOUNG | pte::WRITE | if write { pte::DIRTY } else { 0 };
        self.mm.vmas[vma].pte[idx as usize] = pte::present(f, flags);
        self.swap_free_for(f, entry);
        Fault::Done
    }

    /// Pages held by zsmalloc pools: zswap's and every zram device's.
    pub fn zs_pool_pages(&self) -> u64 {
        let zram: u64 = self.io.devices.iter().filter_map(|d| d.model().swap_backend()).map(|b| b.pool_pages()).sum();
        self.swap.zswap.pool_pages() + zram
    }

    /// Invariants of compressed swap: the pools' frames, zswap's entries, no entry or zram
    /// object of a free slot still unreported.
    pub fn verify_compressed(&self) -> Result<(), String> {
        self.swap.zswap.verify()?;
        if self.mm.zs_frames.len() as u64 != self.zs_pool_pages() {
            return Err(format!(
                "zsmalloc holds {} frames, its pools {} pages",
                self.mm.zs_frames.len(),
                self.zs_pool_pages()
            ));
        }
        for (ai, a) in self.swap.areas.iter().enumerate() {
            let zram = self.io.devices[a.dev].model().swap_backend();
            for s in 1..a.nslots {
                if a.map[s as usize] != 0 || a.released.contains(&s) {
                    continue;
                }
                let e = Entry::new(ai as u32, s);
                if self.swap.zswap.has(e) {
                    return Err(format!("swap {ai} slot {s}: free, but zswap holds an entry"));
                }
                if zram.is_some_and(|z| z.stored(a.offset_of(s)).is_some()) {
                    return Err(format!("swap {ai} slot {s}: free, but zram holds its page"));
                }
            }
        }
        Ok(())
    }

    /// zswap's and zram's gauges at the end of a run, under the kernel's names (debugfs
    /// zswap statistics, zram `mm_stat` summed over zram devices, vmstat `nr_zspages`).
    pub fn compressed_gauges(&self, out: &mut serde_json::Map<String, serde_json::Value>) {
        let z = &self.swap.zswap;
        let any_backend = self.io.devices.iter().any(|d| d.model().swap_backend().is_some());
        if !z.enabled && !any_backend {
            return;
        }
        out.insert(Gauge::NrZspages.name().into(), self.zs_pool_pages().into());
        if z.enabled {
            out.insert(Gauge::ZswapPoolTotalSize.name().into(), (z.pool_pages() * compress::PAGE as u64).into());
            out.insert(Gauge::ZswapStoredPages.name().into(), z.stored_pages.into());
            out.insert(Gauge::ZswapSameFilledPages.name().into(), z.same_filled_pages.into());
            out.insert(Gauge::ZswapPoolLimitHit.name().into(), z.pool_limit_hit.into());
            out.insert(Gauge::ZswapWrittenBackPages.name().into(), z.written_back_pages.into());
            out.insert(Gauge::ZswapRejectCompressPoor.name().into(), z.reject_compress_poor.into());
            out.insert(Gauge::ZswapRejectAllocFail.name().into(), z.reject_alloc_fail.into());
            out.insert(Gauge::ZswapRejectReclaimFail.name().into(), z.reject_reclaim_fail.into());
        }
        if any_backend {
            let mut sum = MmStat::default();
            for s in self.io.devices.iter().filter_map(|d| d.model().swap_backend()).map(|b| b.mm_stat()) {
                sum.orig_data_size += s.orig_data_size;
                sum.compr_data_size += s.compr_data_size;
                sum.mem_used_total += s.mem_used_total;
                sum.same_pages += s.same_pages;
                sum.huge_pages += s.huge_pages;
            }
            out.insert(Gauge::ZramOrigDataSize.name().into(), sum.orig_data_size.into());
            out.insert(Gauge::ZramComprDataSize.name().into(), sum.compr_data_size.into());
            out.insert(Gauge::ZramMemUsedTotal.name().into(), sum.mem_used_total.into());
            out.insert(Gauge::ZramSamePages.name().into(), sum.same_pages.into());
            out.insert(Gauge::ZramHugePages.name().into(), sum.huge_pages.into());
        }
    }

    /// `swap_writepage` from `pageout`: the page goes under writeback with PG_reclaim.
    /// Its `try_to_free_swap` reads the slot's count under the `swap_map` lock first. (The
    /// kernel drops a page no one references from the swap cache unwritten; pagesim's pages
    /// reaching here are always referenced, by the PTE or shmem slot reclaim has just
    /// pointed at the slot.)
    pub(crate) fn swap_writepage(&mut self, f: Pfn) {
        self.page_swapcount(f);
        let entry = Entry(self.mm.frames.swap[f]);
        self.mm.frames.clear(f, pg::DIRTY);
        // Zeromap, zswap, synchronous devices (engine/page_io.rs).
        if self.swap_writepage_sync(f, entry) {
            return;
        }
        // One bio for the folio, whatever its size (split at the device's largest request).
        let nr = self.mm.frames.nr_pages(f);
        self.mm.frames.set(f, pg::WRITEBACK | pg::RECLAIM);
        self.mm.account_writeback(f, true);
        let (dev, off) = {
            let a = self.swap.area_ref(entry);
            (a.dev, a.offset_of(entry.slot()))
        };
        self.submit_folio_bio(dev, off, f, crate::device::IoDir::Write, nr * 4096);
        let m = self.mm.frames.memcg[f];
        self.mm.count(Counter::PswpOut, m, nr);
        self.mm.count(Counter::PgpgOut, m, 4 * nr);
        self.mm.count(Counter::NrVmscanWrite, m, nr);
        self.trace(crate::trace::Kind::Writepage { pfn: f.0, file: false, sync: false });
        if nr > 1 {
            self.mm.count(Counter::MthpSwpout, m, 1);
        }
        self.charge(self.swapout_unlocked_ns());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{evict, fault, sim, swapcache_page, writeout};

    const ZRAM: &str = "[device.z]\nmodel = \"zram\"\n[[swap]]\ndevice = \"z\"\nsize = \"16MB\"\n";

    /// Found by the generated fuzz target: a swap entry whose slot is below the folio size
    /// at the matching offset put the large folio's first slot on the header (slot 0), and
    /// one near the end of the area ran past it; neither can be a run of the folio's slots.
    #[test]
    fn a_large_swap_in_never_looks_at_slots_outside_the_area() {
        let mut s = sim(&format!("[kernel]\nprofile = \"linux-6.18\"\nanon_mthp = [\"64KB\"]\n{ZRAM}"));
        let last = s.swap.areas[0].nslots - 1;
        for (idx, slot) in [(1u32, 1u32), (31, last)] {
            let e = Entry::new(0, slot);
            s.mm.vmas[0].pte[idx as usize] = pte::SWAP | e.0;
            assert_eq!(s.alloc_swap_folio(crate::ids::Tid(0), VmaId(0), idx, e), None, "slot {slot}");
        }
    }

    #[test]
    fn a_zram_write_is_synchronous_and_its_pool_takes_free_memory_not_the_memcg() {
        let mut s = sim(ZRAM);
        let (f, e) = swapcache_page(&mut s, 5);
        let (free, usage) = (s.mm.nr_free(), s.mm.memcgs[0].usage);
        assert!(writeout(&mut s, f, e), "zram is written by the reclaiming thread");
        assert!(!s.mm.frames.test(f, pg::WRITEBACK | pg::DIRTY), "clean at once, nothing in flight");
        // lzo-rle word page: 41 + 8 bytes, the 64-byte class, one pool page.
        assert_eq!((s.zs_pool_pages(), s.mm.zs_frames.len()), (1, 1));
        assert_eq!(s.mm.nr_free(), free - 1, "the pool page comes out of free memory");
        assert_eq!(s.mm.memcgs[0].usage, usage, "and is charged to no memcg");
        assert_eq!((s.mm.vmstat.get(Counter::PswpOut), s.mm.vmstat.get(Counter::PgpgOut)), (1, 4));
        assert_eq!(s.io.devices[0].stats().writes, 1);
        s.verify().unwrap();
    }

    #[test]
    fn a_zram_swapin_bypasses_the_swap_cache_and_readahead_and_frees_the_slot() {
        let mut s = sim(ZRAM);
        // Two neighbours in swap too, so a readahead window would have had pages to read.
        let mut pages = Vec::new();
        for idx in 4..7 {
            let (f, e) = swapcache_page(&mut s, idx);
            assert!(writeout(&mut s, f, e));
            evict(&mut s, f, e, idx);
            pages.push(e);
        }
        s.verify().unwrap();
        let e = pages[1];
        assert!(s.swap_sync_bypass(e));
        assert!(matches!(fault(&mut s, 5, false), Fault::Done));
        let p = s.mm.vmas[0].pte[5];
        let f = pte::frame(p).expect("mapped");
        assert!(pte::is_present(p) && p & pte::WRITE != 0, "exclusive: mapped writable");
        assert!(!s.mm.frames.test(f, pg::SWAPCACHE) && s.mm.frames.test(f, pg::DIRTY), "no swap copy left");
        assert_eq!(s.swap.area_ref(e).map[e.slot() as usize], 0, "the slot is freed");
        let nr_swapcached: usize = s.swap.areas.iter().map(|a| a.cache.iter().filter(|&&c| c != 0).count()).sum();
        assert_eq!(nr_swapcached, 0);
        assert_eq!(s.mm.vmstat.get(Counter::SwapRa), 0, "no readahead");
        assert_eq!((s.mm.vmstat.get(Counter::PgMajFault), s.mm.vmstat.get(Counter::PswpIn)), (1, 1));
        let z = s.io.devices[0].model().swap_backend().unwrap().mm_stat();
        assert_eq!(z.orig_data_size, 2 * 4096, "zram freed the object with the slot");
        s.verify().unwrap();
    }

    #[test]
    fn an_old_profile_reads_zram_through_the_swap_cache() {
        // 3.14 predates SWP_SYNCHRONOUS_IO: swap cache and readahead, but zram still
        // decompresses in the faulting thread, so the fault completes without waiting.
        let mut s = sim(&format!("[kernel]\nprofile = \"linux-3.14\"\n{ZRAM}"));
        for idx in 0..8 {
            let (f, e) = swapcache_page(&mut s, idx);
            assert!(writeout(&mut s, f, e));
            evict(&mut s, f, e, idx);
        }
        assert!(!s.swap_sync_bypass(Entry(s.mm.vmas[0].pte[5] & !pte::SWAP)));
        assert!(matches!(fault(&mut s, 5, false), Fault::Done));
        let f = pte::frame(s.mm.vmas[0].pte[5]).unwrap();
        assert!(s.mm.frames.test(f, pg::SWAPCACHE));
        assert!(s.mm.vmstat.get(Counter::SwapRa) > 0, "the readahead window was read");
        assert_eq!(s.mm.vmstat.get(Counter::PswpIn), 1 + s.mm.vmstat.get(Counter::SwapRa));
        s.verify().unwrap();
    }

    #[test]
    fn a_brd_swap_on_6_18_without_compressed_swap_writes_and_reads_synchronously() {
        // Nothing looks at page contents here (no zswap, zram or zero pages), yet the zeromap
        // profile and the synchronous device take the synchronous paths.
        let mut s = sim("[kernel]\nprofile = \"linux-6.18\"\n[device.r]\nmodel = \"ram\"\n[[swap]]\ndevice = \"r\"\nsize = \"16MB\"\n");
        assert!(!s.swap.content.active);
        let (f, e) = swapcache_page(&mut s, 9);
        let before = s.sched.now;
        assert!(writeout(&mut s, f, e));
        assert!(s.sched.now > before, "the copy is charged to the writer");
        assert!(!s.mm.frames.test(f, pg::WRITEBACK | pg::DIRTY));
        assert_eq!(s.io.devices[0].stats().writes, 1);
        evict(&mut s, f, e, 9);
        assert!(matches!(fault(&mut s, 9, true), Fault::Done), "bypass read, no wait");
        assert_eq!((s.mm.vmstat.get(Counter::PswpIn), s.io.devices[0].stats().reads), (1, 1));
        s.verify().unwrap();
    }

    #[test]
    fn zero_pages_go_to_the_zeromap_on_6_18_and_to_zram_as_same_pages_on_6_6() {
        for (profile, zeromap) in [("linux-6.18", true), ("linux-6.6", false)] {
            let mut s = sim(&format!("[kernel]\nprofile = \"{profile}\"\n{ZRAM}"));
            s.swap.content = PageContent::new(
                vec![RegionContent { zero: 1.0, ..Default::default() }],
                1,
                &[s.swap.areas[0].nslots],
                true,
            );
            let (f, e) = swapcache_page(&mut s, 3);
            assert!(writeout(&mut s, f, e));
            let z = s.io.devices[0].model().swap_backend().unwrap().mm_stat();
            assert_eq!(s.mm.vmstat.get(Counter::SwpoutZero), zeromap as u64, "{profile}");
            assert_eq!(s.mm.vmstat.get(Counter::PswpOut), !zeromap as u64, "{profile}");
            assert_eq!(z.same_pages, !zeromap as u64, "{profile}");
            assert_eq!(s.zs_pool_pages(), 0, "a zero page takes no pool memory");
            evict(&mut s, f, e, 3);
            assert!(matches!(fault(&mut s, 3, false), Fault::Done));
            assert_eq!(s.mm.vmstat.get(Counter::SwpinZero), zeromap as u64, "{profile}");
            assert_eq!(s.mm.vmstat.get(Counter::PswpIn), !zeromap as u64, "{profile}");
            s.verify().unwrap();
        }
    }
}
