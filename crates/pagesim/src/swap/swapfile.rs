//! Models mm/swapfile.c: swap areas (`swap_info_struct`), their `swap_map` and the slot
//! allocator (`folio_alloc_swap` → `Swap::alloc`; `scan_swap_map_try_ssd_cluster` and
//! `scan_swap_map` → `SwapArea::alloc`), the reference counts (`swap_duplicate` → `dup`,
//! `swap_free` → `put`), SWAP_HAS_CACHE (`swapcache_prepare` → `prepare_cache`,
//! `put_swap_folio` → `clear_cache_bit`), freeing a slot (`swap_range_free` → `release`,
//! which logs it for zswap and zram) and `vm_swap_full`; plus the per-area swap-cache and
//! shadow arrays (filled by engine/swap_state.rs and, at eviction, engine/vmscan.rs).
//!
//! A swap slot is free iff its `swap_map` byte is 0. The byte holds the number of
//! references (page-table entries or shmem slots that point at the slot, bits 0-5) and
//! SWAP_HAS_CACHE (0x40) while a swap-cache page exists for it. The swap cache is a flat
//! array per area (slot -> frame + 1), the shadow of an evicted swap-cache page another
//! (slot -> workingset shadow).
//!
//! Slot allocation, before 6.14 (spec readahead_swap.md §3.3):
//! * non-rotational areas: 256-slot clusters; each CPU owns a current cluster and fills it
//!   in order; a CPU without one takes the head of the FIFO list of free clusters; with no
//!   free cluster left it falls back to a linear scan.
//! * rotational areas (`scan_swap_map`): runs of 256 slots allocated in order from
//!   `cluster_next`; a new run starts at the lowest free run of 256 slots, else the first
//!   free slot.
//!
//! Areas are used by priority, round-robin among equal priorities. Before the per-CPU
//! slots cache (4.11) concurrent reclaimers allocate from one cursor, so their slots
//! interleave (`set_lane`).
//!
//! The per-CPU swap slots cache (4.11–6.13) is swap/swap_slots.rs; an area defers the
//! release of a slot to it (`defer_release`). The locks the paths take are
//! engine/swapfile.rs.
//!
//! Simplifications (docs/model.md): no discard, no
//! count continuation pages (counts are small integers here). Large folios (anon mTHP,
//! 6.10+) take aligned runs of slots from clusters kept for their order (`alloc_order`);
//! order-0 slots still come from the pre-6.14 allocator above.

use super::{Entry, Shadow, Swap};
use crate::ids::DevId;
use crate::ids::Pfn;
use crate::mm::NIL;
use std::collections::VecDeque;

/// `SWAPFILE_CLUSTER`: slots per cluster.
pub const CLUSTER: u32 = 256;
/// Folio orders a swap allocation can have: up to a cluster (`SWAPFILE_CLUSTER` slots).
pub const NR_ORDERS: usize = CLUSTER.trailing_zeros() as usize + 1;
/// SWAP_HAS_CACHE bit of a swap_map byte.
pub const HAS_CACHE: u8 = 0x40;
/// Reference-count mask of a swap_map byte.
pub const COUNT_MASK: u8 = 0x3f;
/// SWAP_MAP_BAD (slot 0 holds the swap header).
pub const BAD: u8 = 0x3f;

/// One swap area (`swap_info_struct`) on a block device.
#[derive(Debug)]
pub struct SwapArea {
    /// Index of the block device in the engine's device table.
    pub dev: DevId,
    /// Byte offset of slot 0 on the device.
    pub base: u64,
    pub prio: i32,
    pub rotational: bool,
    /// Slots come from per-CPU clusters (`scan_swap_map_try_ssd_cluster`).
    pub cluster_alloc: bool,
    /// A block device (SWP_BLKDEV), not a swap file: only these give large folios a run of
    /// slots (`cluster_alloc_swap_entry` refuses order > 0 on a file).
    pub blkdev: bool,
    /// Slots including the header (`si->max`).
    pub nslots: u32,
    pub map: Vec<u8>,
    /// Swap cache: frame + 1, or 0.
    pub cache: Vec<u32>,
    /// Shadow entries (packed + 1), or 0.
    shadow: Vec<u64>,
    /// Slots in use (map != 0), header excluded.
    pub inuse: u32,
    // Non-rotational allocator.
    cluster_used: Vec<u16>,
    free_clusters: VecDeque<u32>,
    cluster_on_free_list: Vec<bool>,
    cpu_cluster: Vec<(u32, u32)>,
    /// Large (mTHP) allocations, 6.10+: the order a cluster was taken for (0: order-0 or
    /// free), and each CPU's current cluster per order (`percpu_cluster->next[order]`),
    /// `NR_ORDERS` entries a CPU.
    cluster_order: Vec<u8>,
    cpu_order_cluster: Vec<(u32, u32)>,
    /// Per order: no cluster of that order had an aligned free run at the last look, and
    /// no slot of one was freed since (spares the nonfull scan while swap is full).
    order_exhausted: [bool; NR_ORDERS],
    /// Log the slots freed into `released` (zswap or zram keep data per slot).
    pub track_release: bool,
    /// Slots freed since the owner of per-slot data last looked (`swap_range_free`).
    pub released: Vec<u32>,
    // Rotational allocator (scan_swap_map) and the non-rotational fallback scan.
    cluster_next: u32,
    cluster_nr: u32,
    /// Allocators sharing `cluster_next` at this moment, and which of them allocates.
    lanes: u32,
    lane: u32,
    /// Per lane, where its next slot is looked for while several allocate at once.
    lane_next: Vec<u32>,
    /// A slot whose map byte reaches 0 is not freed but reserved (SWAP_HAS_CACHE, no page)
    /// and logged in `deferred`, for the per-CPU slots cache to free in a batch (4.11-6.13,
    /// `__swap_entry_free` → `free_swap_slot`).
    pub defer_release: bool,
    pub deferred: Vec<u32>,
    /// The locks of this area (engine/swapfile.rs).
    pub locks: AreaLocks,
}

/// The locks of a swap area, by the profile's [`crate::profile::SwapLocking`]: the device's
/// `si->lock`, the swap cache's tree locks (one per area, or one per 64 MB), the cluster
/// locks (none before 4.11).
#[derive(Debug, Default)]
pub struct AreaLocks {
    pub si: crate::locking::LockId,
    pub tree: Vec<crate::locking::LockId>,
    pub cluster: Vec<crate::locking::LockId>,
}

/// `SWAP_ADDRESS_SPACE_SHIFT`: 4.11+ split the swap cache into trees of 2^14 slots (64 MB).
pub const SWAP_ADDRESS_SPACE_SHIFT: u32 = 14;

impl SwapArea {
    /// `cluster_alloc`: use the per-CPU cluster allocator (non-rotational, ≥3.12) rather
    /// than `scan_swap_map`'s runs.
    pub fn new(
        dev: DevId,
        base: u64,
        size_bytes: u64,
        prio: i32,
        rotational: bool,
        cluster_alloc: bool,
        ncpus: u32,
    ) -> Self {
        let nslots = (size_bytes / 4096) as u32;
        let nclusters = nslots.div_ceil(CLUSTER);
        let mut map = vec![0u8; nslots as usize];
        map[0] = BAD;
        let mut cluster_used = vec![0u16; nclusters as usize];
        cluster_used[0] = 1;
        // A partial last cluster is never handed out whole; its slots come from the scan.
        let full = nslots / CLUSTER;
        let free_clusters: VecDeque<u32> = (1..full).collect();
        let mut cluster_on_free_list = vec![false; nclusters as usize];
        for &c in &free_clusters {
            cluster_on_free_list[c as usize] = true;
        }
        SwapArea {
            dev,
            base,
            prio,
            rotational,
            cluster_alloc,
            blkdev: true,
            nslots,
            map,
            cache: vec![0; nslots as usize],
            shadow: vec![0; nslots as usize],
            inuse: 0,
            cluster_used,
            free_clusters,
            cluster_on_free_list,
            cpu_cluster: vec![(NIL, 0); ncpus as usize],
            cluster_order: vec![0; nclusters as usize],
            cpu_order_cluster: vec![(NIL, 0); ncpus as usize * NR_ORDERS],
            order_exhausted: [false; NR_ORDERS],
            track_release: false,
            released: Vec::new(),
            cluster_next: 1,
            cluster_nr: 0,
            lanes: 1,
            lane: 0,
            lane_next: vec![1],
            defer_release: false,
            deferred: Vec::new(),
            locks: AreaLocks::default(),
        }
    }

    /// Usable slots (header excluded).
    pub fn pages(&self) -> u32 {
        self.nslots - 1
    }

    pub fn nr_free(&self) -> u32 {
        self.pages() - self.inuse
    }

    #[inline]
    pub fn count(&self, slot: u32) -> u8 {
        self.map[slot as usize] & COUNT_MASK
    }

    #[inline]
    pub fn has_cache(&self, slot: u32) -> bool {
        self.map[slot as usize] & HAS_CACHE != 0
    }

    /// Byte offset of a slot on the device.
    pub fn offset_of(&self, slot: u32) -> u64 {
        self.base + slot as u64 * 4096
    }

    /// Allocates one slot for a page about to enter the swap cache (the slot gets
    /// SWAP_HAS_CACHE and no references yet).
    pub fn alloc(&mut self, cpu: u32) -> Option<u32> {
        if self.inuse >= self.pages() {
            return None;
        }
        let slot = if self.cluster_alloc { self.alloc_cluster(cpu) } else { self.alloc_rotational() }?;
        debug_assert_eq!(self.map[slot as usize], 0);
        self.map[slot as usize] = HAS_CACHE;
        self.inuse += 1;
        let c = (slot / CLUSTER) as usize;
        self.cluster_used[c] += 1;
        if self.cluster_on_free_list[c] {
            // The linear scan took a slot of a free cluster: it is no longer free.
            self.cluster_on_free_list[c] = false;
            self.free_clusters.retain(|&x| x as usize != c);
        }
        Some(slot)
    }

    /// `cluster_alloc_swap_entry` for a large folio (6.10+): `1 << order` free slots,
    /// aligned to their number, for a folio about to enter the swap cache whole. They come
    /// from this CPU's current cluster of that order, else a free cluster (which becomes
    /// one of that order), else a partly used cluster of that order (the `nonfull` list).
    /// A large allocation never takes slots from clusters of other orders: when none of
    /// these has room it fails, and reclaim splits the folio. Returns the first slot.
    pub fn alloc_order(&mut self, cpu: u32, order: u8) -> Option<u32> {
        let nr = 1u32 << order;
        let o = order as usize;
        if order == 0 || o >= NR_ORDERS || !self.blkdev || self.nr_free() < nr {
            return None;
        }
        // A rotational area has one cluster per order for every CPU (`global_cluster`).
        let cpu = if self.cluster_alloc { cpu as usize % self.cpu_cluster.len() } else { 0 };
        let pc = cpu * NR_ORDERS + o;
        let (c, next) = self.cpu_order_cluster[pc];
        let found =
            if c != NIL && self.cluster_order[c as usize] == order { self.free_run_in(c, next, nr) } else { None };
        let slot = match found {
            Some(s) => s,
            None => {
                self.cpu_order_cluster[pc] = (NIL, 0);
                let c = match self.free_clusters.pop_front() {
                    Some(fc) => {
                        self.cluster_on_free_list[fc as usize] = false;
                        self.cluster_order[fc as usize] = order;
                        fc
                    }
                    None => self.nonfull_cluster(order)?,
                };
                self.free_run_in(c, c * CLUSTER, nr).expect("a cluster with an aligned free run")
            }
        };
        let c = slot / CLUSTER;
        self.cpu_order_cluster[pc] = (c, slot + nr);
        for s in slot..slot + nr {
            debug_assert_eq!(self.map[s as usize], 0);
            self.map[s as usize] = HAS_CACHE;
        }
        self.inuse += nr;
        self.cluster_used[c as usize] += nr as u16;
        Some(slot)
    }

    /// The first run of `nr` free slots aligned to `nr` in cluster `c`, at or after `from`.
    fn free_run_in(&self, c: u32, from: u32, nr: u32) -> Option<u32> {
        self.free_run(from.max(c * CLUSTER), ((c + 1) * CLUSTER).min(self.nslots), nr, nr)
    }

    /// The first run of `nr` free slots inside [lo, hi) starting at a multiple of `align`.
    /// A window whose last used slot is at `k` cannot hold a run starting at or before `k`:
    /// the search jumps past it, so each slot is looked at about twice (a swap map is
    /// millions of slots; `scan_swap_map` looks for a free run every CLUSTER allocations).
    fn free_run(&self, lo: u32, hi: u32, nr: u32, align: u32) -> Option<u32> {
        let mut s = lo.next_multiple_of(align);
        while s + nr <= hi {
            match self.map[s as usize..(s + nr) as usize].iter().rposition(|&b| b != 0) {
                None => return Some(s),
                Some(k) => s = (s + k as u32 + 1).next_multiple_of(align),
            }
        }
        None
    }

    /// A cluster of `order` with an aligned free run (`nonfull_clusters[order]`).
    fn nonfull_cluster(&mut self, order: u8) -> Option<u32> {
        let nr = 1u32 << order;
        if self.order_exhausted[order as usize] {
            return None;
        }
        let full = self.nslots / CLUSTER;
        let c = (1..full).find(|&c| {
            self.cluster_order[c as usize] == order
                && CLUSTER - self.cluster_used[c as usize] as u32 >= nr
                && self.free_run_in(c, c * CLUSTER, nr).is_some()
        });
        self.order_exhausted[order as usize] = c.is_none();
        c
    }

    /// `scan_swap_map_try_ssd_cluster`: fill this CPU's cluster in order.
    fn alloc_cluster(&mut self, cpu: u32) -> Option<u32> {
        let cpu = cpu as usize % self.cpu_cluster.len();
        loop {
            let (mut c, mut next) = self.cpu_cluster[cpu];
            if c == NIL {
                let Some(fc) = self.free_clusters.pop_front() else { break };
                self.cluster_on_free_list[fc as usize] = false;
                c = fc;
                next = fc * CLUSTER;
            }
            let end = ((c + 1) * CLUSTER).min(self.nslots);
            while next < end {
                if self.map[next as usize] == 0 {
                    self.cpu_cluster[cpu] = (c, next + 1);
                    return Some(next);
                }
                next += 1;
            }
            self.cpu_cluster[cpu] = (NIL, 0);
        }
        self.scan_from_next()
    }

    /// Sets how many allocators share the cursor now and which one allocates next
    /// (before 3.12 every CPU allocates from the one `cluster_next` under `swap_lock`).
    /// When their number changes, every lane restarts from the cursor.
    pub fn set_lane(&mut self, lane: u32, lanes: u32) {
        let lanes = lanes.max(1);
        if lanes != self.lanes {
            if self.lanes > 1 {
                // Slots the other lanes did not get to are still free: the cursor goes on
                // from the lowest lane position, filling them first.
                self.cluster_next = self.lane_next.iter().copied().min().unwrap_or(self.cluster_next);
            }
            self.lanes = lanes;
            self.lane_next = (0..lanes).map(|k| self.cluster_next + k).collect();
        }
        self.lane = lane.min(lanes - 1);
    }

    /// `scan_swap_map`: runs of [`CLUSTER`] slots allocated in order from `cluster_next`.
    /// When a run is used up, a rotational area looks for the lowest free run of CLUSTER
    /// slots (from `lowest_bit`), a non-rotational one for the next free run after the
    /// cursor, wrapping ("we let swap pages go all over an SSD partition"); without one,
    /// allocation goes on from the first free slot (rotational: from the lowest).
    ///
    /// Several reclaimers running at once on different CPUs take slots from the shared
    /// cursor in turn, so each one's pages land in every n-th slot ("if multiple tasks are
    /// doing swap, this will cause interleave disk access", Shaohua Li's 2013 per-CPU
    /// cluster patch, merged in 3.12 for SSDs): lane k of n takes the first free slot
    /// from its own position, which then moves n slots on.
    fn alloc_rotational(&mut self) -> Option<u32> {
        if self.cluster_nr == 0 {
            self.cluster_nr = CLUSTER - 1;
            if self.nr_free() >= CLUSTER {
                let from = if self.rotational { 1 } else { self.cluster_next };
                match self.find_free_run(from) {
                    Some(run) => self.cluster_next = run,
                    None if self.rotational => self.cluster_next = 1,
                    None => {}
                }
                for (k, next) in self.lane_next.iter_mut().enumerate() {
                    *next = self.cluster_next + k as u32;
                }
            }
        } else {
            self.cluster_nr -= 1;
        }
        if self.lanes == 1 {
            let found = self.first_free_from(self.cluster_next)?;
            self.cluster_next = found + 1;
            return Some(found);
        }
        let k = self.lane as usize;
        let found = self.first_free_from(self.lane_next[k])?;
        self.lane_next[k] = found + self.lanes;
        self.cluster_next = self.cluster_next.max(found + 1);
        Some(found)
    }

    /// First run of CLUSTER free slots (unaligned) at or after `from`, wrapping to slot 1
    /// (a run does not wrap).
    fn find_free_run(&self, from: u32) -> Option<u32> {
        let from = from.clamp(1, self.nslots - 1);
        self.free_run(from, self.nslots, CLUSTER, 1).or_else(|| self.free_run(1, from, CLUSTER, 1))
    }

    /// First free slot at or after `from`, wrapping to slot 1.
    fn first_free_from(&self, from: u32) -> Option<u32> {
        let n = self.nslots as usize;
        let start = from.clamp(1, self.nslots - 1) as usize;
        let free = |lo: usize, hi: usize| self.map[lo..hi].iter().position(|&b| b == 0).map(|k| (lo + k) as u32);
        free(start, n).or_else(|| free(1, start))
    }

    /// The non-rotational fallback scan: first free slot at or after `cluster_next`.
    fn scan_from_next(&mut self) -> Option<u32> {
        let found = self.first_free_from(self.cluster_next)?;
        self.cluster_next = found + 1;
        Some(found)
    }

    /// `swap_duplicate`: one more reference (a PTE or shmem slot now points at the slot).
    pub fn dup(&mut self, slot: u32) {
        let b = &mut self.map[slot as usize];
        debug_assert!(*b != 0 && *b & COUNT_MASK < COUNT_MASK - 1, "dup of slot {slot} with map {b:#x}");
        *b += 1;
    }

    /// `swap_free`: drops one reference; frees the slot when nothing is left.
    pub fn put(&mut self, slot: u32) {
        let b = &mut self.map[slot as usize];
        debug_assert!(*b & COUNT_MASK > 0, "put of slot {slot} with no references");
        *b -= 1;
        if *b == 0 {
            self.release_or_defer(slot);
        }
    }

    /// A slot's map byte reached 0: freed now, or reserved for the slots cache to free
    /// (`defer_release`).
    fn release_or_defer(&mut self, slot: u32) {
        if self.defer_release {
            self.map[slot as usize] = HAS_CACHE;
            self.deferred.push(slot);
        } else {
            self.release(slot);
        }
    }

    /// `swap_entry_free` of a slot the slots cache held (reserved: SWAP_HAS_CACHE, no page,
    /// no reference): it is free now.
    pub fn free_reserved(&mut self, slot: u32) {
        debug_assert_eq!(self.map[slot as usize], HAS_CACHE, "slot {slot} is not reserved");
        debug_assert_eq!(self.cache[slot as usize], 0, "slot {slot} has a page");
        self.map[slot as usize] = 0;
        self.release(slot);
    }

    /// The cluster of `slot`.
    #[inline]
    pub fn cluster_of(slot: u32) -> u32 {
        slot / CLUSTER
    }

    /// Slots of cluster `c` in use (reserved ones included).
    pub fn cluster_count(&self, c: u32) -> u16 {
        self.cluster_used[c as usize]
    }

    /// Cluster `c` has no slot in use.
    pub fn cluster_free(&self, c: u32) -> bool {
        self.cluster_used[c as usize] == 0
    }

    /// Clears SWAP_HAS_CACHE (`put_swap_folio` after `delete_from_swap_cache`); frees the
    /// slot when no reference is left.
    pub fn clear_cache_bit(&mut self, slot: u32) {
        let b = &mut self.map[slot as usize];
        debug_assert!(*b & HAS_CACHE != 0);
        *b &= !HAS_CACHE;
        self.cache[slot as usize] = 0;
        if *b == 0 {
            self.release_or_defer(slot);
        }
    }

    /// Sets SWAP_HAS_CACHE for a page entering the swap cache at an allocated slot
    /// (`swapcache_prepare`). Returns false if the slot is free or already cached.
    pub fn prepare_cache(&mut self, slot: u32) -> bool {
        let b = &mut self.map[slot as usize];
        if *b == 0 || *b == BAD || *b & HAS_CACHE != 0 {
            return false;
        }
        *b |= HAS_CACHE;
        true
    }

    /// A slot's map byte reached 0: back to the allocator (`swap_range_free`); the shadow
    /// goes with it.
    fn release(&mut self, slot: u32) {
        self.inuse -= 1;
        if self.track_release {
            self.released.push(slot);
        }
        self.shadow[slot as usize] = 0;
        let c = slot / CLUSTER;
        let order = self.cluster_order[c as usize];
        self.order_exhausted[order as usize] = false;
        let cu = &mut self.cluster_used[c as usize];
        *cu -= 1;
        let whole = (c + 1) * CLUSTER <= self.nslots;
        if *cu == 0 && whole && !self.cluster_on_free_list[c as usize] {
            // A CPU still pointing into it lets go: the cluster goes back to the free list.
            for cc in self.cpu_cluster.iter_mut().chain(self.cpu_order_cluster.iter_mut()) {
                if cc.0 == c {
                    *cc = (NIL, 0);
                }
            }
            self.cluster_order[c as usize] = 0;
            self.cluster_on_free_list[c as usize] = true;
            self.free_clusters.push_back(c);
        }
    }

    pub fn set_shadow(&mut self, slot: u32, s: Shadow) {
        self.shadow[slot as usize] = s.pack() + 1;
    }

    /// Takes the shadow of a slot, if any (a refault consumes it).
    pub fn take_shadow(&mut self, slot: u32) -> Option<Shadow> {
        let v = std::mem::take(&mut self.shadow[slot as usize]);
        (v != 0).then(|| Shadow::unpack(v - 1))
    }

    /// The frame caching `slot`, if any.
    #[inline]
    pub fn cached(&self, slot: u32) -> Option<Pfn> {
        Pfn::from_slot(self.cache[slot as usize])
    }
}

impl Swap {
    pub fn total_pages(&self) -> u64 {
        self.areas.iter().map(|a| a.pages() as u64).sum()
    }

    pub fn free_pages(&self) -> u64 {
        self.areas.iter().map(|a| a.nr_free() as u64).sum()
    }

    /// `vm_swap_full`: more than half of swap is in use.
    pub fn full(&self) -> bool {
        self.free_pages() * 2 < self.total_pages()
    }

    pub fn any_rotational(&self) -> bool {
        self.areas.iter().any(|a| a.rotational)
    }

    /// The allocating thread is lane `lane` of `lanes` concurrent allocators
    /// ([`SwapArea::set_lane`]).
    pub fn set_lane(&mut self, lane: u32, lanes: u32) {
        for a in &mut self.areas {
            a.set_lane(lane, lanes);
        }
    }

    /// `folio_alloc_swap` for one page: highest priority area with room, round-robin
    /// among equal priorities.
    pub fn alloc(&mut self, cpu: u32) -> Option<Entry> {
        self.alloc_from_areas(1, |a| a.alloc(cpu))
    }

    /// `folio_alloc_swap` for a large folio: `1 << order` aligned slots in one area
    /// ([`SwapArea::alloc_order`]), chosen as for a page. `None`: the folio must be split.
    pub fn alloc_order(&mut self, cpu: u32, order: u8) -> Option<Entry> {
        self.alloc_from_areas(1 << order, |a| a.alloc_order(cpu, order))
    }

    /// `take` from the highest priority area with `nr` free slots, round-robin among equal
    /// priorities, starting after the area used last.
    fn alloc_from_areas(&mut self, nr: u32, mut take: impl FnMut(&mut SwapArea) -> Option<u32>) -> Option<Entry> {
        let n = self.areas.len();
        let best = self.areas.iter().filter(|a| a.nr_free() >= nr).map(|a| a.prio).max()?;
        for k in 0..n {
            let i = (self.rr + k) % n;
            if self.areas[i].prio == best && self.areas[i].nr_free() >= nr {
                if let Some(slot) = take(&mut self.areas[i]) {
                    self.rr = (i + 1) % n;
                    return Some(Entry::new(i as u32, slot));
                }
            }
        }
        None
    }

    #[inline]
    pub fn area(&mut self, e: Entry) -> &mut SwapArea {
        &mut self.areas[e.area()]
    }

    #[inline]
    pub fn area_ref(&self, e: Entry) -> &SwapArea {
        &self.areas[e.area()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_roundtrip() {
        let e = Entry::new(3, 12345);
        assert_eq!((e.area(), e.slot()), (3, 12345));
        assert_ne!(e.0, 0);
    }

    /// The skipping searches find what a slot-by-slot scan finds: the first run of 256 free
    /// slots from the cursor, not wrapping, else from slot 1; and the first free slot.
    #[test]
    fn free_run_and_free_slot_searches_match_a_slot_by_slot_scan() {
        let naive_run = |map: &[u8], from: u32| {
            let n = map.len() as u32;
            let from = from.clamp(1, n - 1);
            let mut run = 0;
            for s in (from..n).chain(1..from) {
                run = if s == 1 { 0 } else { run };
                run = if map[s as usize] == 0 { run + 1 } else { 0 };
                if run == CLUSTER {
                    return Some(s + 1 - CLUSTER);
                }
            }
            None
        };
        let mut rng = crate::rng::Rng::new(7);
        for case in 0..200u32 {
            let mut a = SwapArea::new(DevId(0), 0, 8 * 256 * 4096, -1, true, false, 1);
            // Used slots at a density from sparse to full, in stretches.
            let density = case % 10;
            let mut s = 1;
            while (s as usize) < a.map.len() {
                let len = 1 + rng.below(300) as u32;
                let used = rng.below(10) < density as u64;
                for k in s..(s + len).min(a.map.len() as u32) {
                    a.map[k as usize] = if used || rng.below(50) == 0 { 1 } else { 0 };
                }
                s += len;
            }
            for from in [0, 1, 2, 255, 700, 1500, a.nslots - 1, rng.below(a.nslots as u64) as u32] {
                assert_eq!(a.find_free_run(from), naive_run(&a.map, from), "case {case} from {from}");
                let n = a.nslots;
                let start = from.clamp(1, n - 1);
                let naive = (start..n).chain(1..start).find(|&s| a.map[s as usize] == 0);
                assert_eq!(a.first_free_from(from), naive, "case {case} from {from}");
            }
        }
    }

    #[test]
    fn ssd_allocator_fills_per_cpu_clusters_in_order() {
        let mut a = SwapArea::new(DevId(0), 0, 4 * 256 * 4096, -1, false, true, 2);
        // CPU 0 takes cluster 1, CPU 1 cluster 2; each fills its own in order.
        assert_eq!(a.alloc(0), Some(256));
        assert_eq!(a.alloc(1), Some(512));
        assert_eq!(a.alloc(0), Some(257));
        assert_eq!(a.alloc(1), Some(513));
        // Freeing a whole cluster puts it back at the tail of the free list.
        a.clear_cache_bit(256);
        a.clear_cache_bit(257);
        assert_eq!(a.inuse, 2);
        for _ in 0..254 {
            a.alloc(1);
        }
        // CPU 1's cluster 2 is full: it moves on to cluster 3, then to the recycled 1.
        assert_eq!(a.alloc(1), Some(768));
    }

    #[test]
    fn large_allocations_take_aligned_runs_from_clusters_of_their_order_only() {
        // Clusters 1..3 are free (cluster 0 holds the header).
        let mut a = SwapArea::new(DevId(0), 0, 4 * 256 * 4096, -1, false, true, 1);
        assert_eq!(a.alloc_order(0, 4), Some(256), "a free cluster becomes an order-4 cluster");
        assert_eq!(a.alloc_order(0, 4), Some(272), "and is filled in aligned runs");
        assert_eq!(a.alloc_order(0, 2), Some(512), "another order takes another cluster");
        assert_eq!(a.alloc(0), Some(768), "order 0 takes the last free cluster");
        assert!((256..288).all(|s| a.has_cache(s)) && a.inuse == 16 + 16 + 4 + 1);
        // Fill the order-4 cluster and free one slot of it: a single slot is no run, and the
        // free slots of the order-2 and order-0 clusters are not for order 4.
        while a.alloc_order(0, 4).is_some() {}
        assert_eq!(a.cluster_used[1], 256, "order 4 filled its own cluster only");
        a.clear_cache_bit(300);
        assert_eq!(a.alloc_order(0, 4), None, "slot 300 alone is no aligned run of 16");
        for s in 288..304 {
            if s != 300 {
                a.clear_cache_bit(s);
            }
        }
        assert_eq!(a.alloc_order(0, 4), Some(288), "a freed run of a nonfull order-4 cluster");
        // A swap file gives large folios nothing.
        let mut f = SwapArea::new(DevId(0), 0, 4 * 256 * 4096, -1, false, true, 1);
        f.blkdev = false;
        assert_eq!(f.alloc_order(0, 4), None);
        assert_eq!(f.alloc(0), Some(256));
    }

    #[test]
    fn ssd_allocator_falls_back_to_a_scan_when_clusters_run_out() {
        let mut a = SwapArea::new(DevId(0), 0, 2 * 256 * 4096, -1, false, true, 1);
        let mut got = Vec::new();
        while let Some(s) = a.alloc(0) {
            got.push(s);
        }
        assert_eq!(got.len(), 511);
        assert_eq!(a.nr_free(), 0);
        got.sort();
        got.dedup();
        assert_eq!(got.len(), 511, "no slot handed out twice");
        assert!(!got.contains(&0), "the header slot is never allocated");
    }

    #[test]
    fn rotational_allocator_allocates_runs_in_order() {
        let mut a = SwapArea::new(DevId(0), 0, 1024 * 4096, -1, true, false, 2);
        let v: Vec<u32> = (0..300).map(|i| a.alloc(i % 2).unwrap()).collect();
        assert_eq!(v, (1..301).collect::<Vec<_>>(), "sequential whatever the CPU");
    }

    #[test]
    fn a_new_run_starts_at_the_lowest_free_run_on_disks_and_after_the_cursor_on_ssds() {
        for (rotational, want) in [(true, 1), (false, 513)] {
            // scan_swap_map on both (3.6 has no SSD clusters yet).
            let mut a = SwapArea::new(DevId(0), 0, 1024 * 4096, -1, rotational, false, 1);
            for _ in 0..512 {
                a.alloc(0);
            }
            for s in 1..=300 {
                a.clear_cache_bit(s);
            }
            // The 513th allocation used up the second run of 256: a new run is looked for.
            assert_eq!(a.alloc(0), Some(want), "rotational {rotational}");
        }
        // With no free run of 256 left (slots 769-1023 are 255), a disk goes on from the
        // lowest free slot, an SSD from the cursor.
        for (rotational, want) in [(true, [2, 4]), (false, [769, 770])] {
            let mut a = SwapArea::new(DevId(0), 0, 1024 * 4096, -1, rotational, false, 1);
            for _ in 0..768 {
                a.alloc(0);
            }
            for s in (2..=600).step_by(2) {
                a.clear_cache_bit(s);
            }
            assert_eq!([a.alloc(0).unwrap(), a.alloc(0).unwrap()], want, "rotational {rotational}");
        }
    }

    #[test]
    fn concurrent_allocators_interleave_on_the_shared_cursor() {
        let mut a = SwapArea::new(DevId(0), 0, 1024 * 4096, -1, true, false, 2);
        a.set_lane(0, 2);
        let first: Vec<u32> = (0..3).map(|_| a.alloc(0).unwrap()).collect();
        a.set_lane(1, 2);
        let second: Vec<u32> = (0..3).map(|_| a.alloc(1).unwrap()).collect();
        assert_eq!((first, second), (vec![1, 3, 5], vec![2, 4, 6]), "every other slot each");
        // One allocator left: it goes on after the last slot handed out.
        a.set_lane(0, 1);
        assert_eq!(a.alloc(0), Some(7));
        // Slots a lane did not get to are taken up first when the interleaving ends.
        a.set_lane(0, 2);
        assert_eq!((a.alloc(0), a.alloc(0)), (Some(8), Some(10)));
        a.set_lane(0, 1);
        assert_eq!((a.alloc(0), a.alloc(0), a.alloc(0)), (Some(9), Some(11), Some(12)));
    }

    #[test]
    fn references_and_cache_bit_free_the_slot_together() {
        let mut a = SwapArea::new(DevId(0), 0, 1024 * 4096, -1, false, true, 1);
        let s = a.alloc(0).unwrap();
        a.dup(s); // the PTE now points at it
        assert_eq!((a.count(s), a.has_cache(s)), (1, true));
        a.set_shadow(s, Shadow { memcg: 2, age: 77, workingset: true });
        a.clear_cache_bit(s); // page reclaimed, slot keeps the data
        assert_eq!(a.inuse, 1);
        assert_eq!(a.take_shadow(s), Some(Shadow { memcg: 2, age: 77, workingset: true }));
        assert!(a.prepare_cache(s));
        a.clear_cache_bit(s);
        a.put(s); // the PTE is gone
        assert_eq!(a.inuse, 0);
        assert_eq!(a.map[s as usize], 0);
    }

    #[test]
    fn priorities_and_round_robin() {
        let mut sw = Swap::new(
            vec![
                SwapArea::new(DevId(0), 0, 64 * 4096, -1, true, false, 1),
                SwapArea::new(DevId(1), 0, 64 * 4096, 5, true, false, 1),
                SwapArea::new(DevId(2), 0, 64 * 4096, 5, true, false, 1),
            ],
            crate::swap::readahead::SwapRa::None(crate::swap::readahead::NoReadahead),
            crate::swap::zswap::Zswap::new(&Default::default(), None, &[0; 3], 0, 1),
            crate::mm::compress::PageContent::new(Vec::new(), 1, &[0; 3], false),
        );
        let a: Vec<usize> = (0..4).map(|_| sw.alloc(0).unwrap().area()).collect();
        assert_eq!(a, vec![1, 2, 1, 2]);
        while sw.areas[1].nr_free() + sw.areas[2].nr_free() > 0 {
            assert_ne!(sw.alloc(0).unwrap().area(), 0, "lower priority only when higher ones are full");
        }
        assert_eq!(sw.alloc(0).unwrap().area(), 0);
        assert!(!sw.full() || sw.free_pages() * 2 < sw.total_pages());
    }
}
