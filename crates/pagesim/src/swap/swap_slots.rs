//! Models the state of mm/swap_slots.c (4.11-6.13, Tim Chen): each CPU keeps a cache of
//! swap slots to allocate from (`slots`, refilled `SWAP_SLOTS_CACHE_SIZE` = 64 at a time by
//! one `get_swap_pages` call) and one of slots to free (`slots_ret`, handed back 64 at a
//! time to `swapcache_free_entries`, which takes each device's lock once for its run of
//! the batch). The caches are in use while free swap is above `ncpus × 5 × 64` slots and
//! are drained back when it falls under `ncpus × 2 × 64` (`check_cache_active`).
//!
//! A slot in either cache is neither free nor used: its `swap_map` byte is SWAP_HAS_CACHE
//! with no page in the swap cache and no reference, which is why readahead must skip
//! slots whose count is 0 (4.11's "skip read ahead for unreferenced swap slots").
//!
//! The paths that use the caches, and their locks, are engine/swapfile.rs.

use super::Entry;

/// `SWAP_SLOTS_CACHE_SIZE` (= `SWAP_BATCH`): slots a refill takes and a free batch holds.
pub const SWAP_SLOTS_CACHE_SIZE: usize = 64;
/// `THRESHOLD_ACTIVATE_SWAP_SLOTS_CACHE` per CPU, in slots.
const ACTIVATE_PER_CPU: u64 = 5 * SWAP_SLOTS_CACHE_SIZE as u64;
/// `THRESHOLD_DEACTIVATE_SWAP_SLOTS_CACHE` per CPU, in slots.
const DEACTIVATE_PER_CPU: u64 = 2 * SWAP_SLOTS_CACHE_SIZE as u64;

/// What [`SlotsCache::check_active`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    Unchanged,
    /// Free swap fell under the low threshold: every cached slot must be freed now
    /// ([`SlotsCache::drain`]).
    Deactivated,
}

/// The per-CPU swap slots caches.
#[derive(Debug, Default)]
pub struct SlotsCache {
    /// The profile has the cache (`swap_slot_cache_enabled`).
    pub enabled: bool,
    /// `swap_slot_cache_active`.
    pub active: bool,
    /// Per CPU: slots to allocate from, the next one last (popped from the end).
    alloc: Vec<Vec<Entry>>,
    /// Per CPU: slots waiting to be freed.
    ret: Vec<Vec<Entry>>,
    /// Refills and free batches so far (for the report and tests).
    pub refills: u64,
    pub free_batches: u64,
}

impl SlotsCache {
    pub fn new(enabled: bool, ncpus: u32) -> Self {
        let n = if enabled { ncpus as usize } else { 0 };
        SlotsCache {
            enabled,
            active: false,
            alloc: vec![Vec::new(); n],
            ret: vec![Vec::new(); n],
            refills: 0,
            free_batches: 0,
        }
    }

    /// `check_cache_active` with `nr_free` free swap slots on `ncpus` CPUs: activates the
    /// caches above the high threshold, deactivates them below the low one.
    pub fn check_active(&mut self, nr_free: u64) -> Activity {
        if !self.enabled {
            return Activity::Unchanged;
        }
        let ncpus = self.alloc.len() as u64;
        if !self.active {
            if nr_free > ncpus * ACTIVATE_PER_CPU {
                self.active = true;
            }
            return Activity::Unchanged;
        }
        if nr_free < ncpus * DEACTIVATE_PER_CPU {
            self.active = false;
            return Activity::Deactivated;
        }
        Activity::Unchanged
    }

    /// The next cached slot of `cpu` (`get_swap_page`'s fast path), if any.
    pub fn pop(&mut self, cpu: u32) -> Option<Entry> {
        self.alloc.get_mut(cpu as usize)?.pop()
    }

    /// `refill_swap_slots_cache`: `slots` (in allocation order) become `cpu`'s cache.
    pub fn refill(&mut self, cpu: u32, slots: &[Entry]) {
        let c = &mut self.alloc[cpu as usize];
        debug_assert!(c.is_empty(), "refill of a CPU cache that still has slots");
        c.extend(slots.iter().rev());
        self.refills += 1;
    }

    /// `free_swap_slot`: queues `e` on `cpu`'s free side. When the queue already holds a
    /// full batch, that batch is moved to `batch` first (the caller frees it) and the
    /// queue starts again with `e`.
    pub fn free_slot(&mut self, cpu: u32, e: Entry, batch: &mut Vec<Entry>) {
        let q = &mut self.ret[cpu as usize];
        if q.len() >= SWAP_SLOTS_CACHE_SIZE {
            batch.append(q);
            self.free_batches += 1;
        }
        q.push(e);
    }

    /// Empties every CPU's caches into `out` (`drain_slots_cache_cpu` for each CPU): the
    /// caller frees the slots.
    pub fn drain(&mut self, out: &mut Vec<Entry>) {
        for c in self.alloc.iter_mut().chain(self.ret.iter_mut()) {
            out.append(c);
        }
    }

    /// Every slot the caches hold (for the invariant checks).
    pub fn held(&self) -> impl Iterator<Item = Entry> + '_ {
        self.alloc.iter().chain(self.ret.iter()).flatten().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(s: u32) -> Entry {
        Entry::new(0, s)
    }

    /// The caches turn on above 5 × 64 free slots per CPU and off (asking for a drain)
    /// under 2 × 64, with nothing in between changing them.
    #[test]
    fn the_cache_activates_and_deactivates_with_hysteresis() {
        let mut c = SlotsCache::new(true, 2);
        assert_eq!(c.check_active(640), Activity::Unchanged);
        assert!(!c.active, "640 is not above 2 × 320");
        c.check_active(641);
        assert!(c.active);
        assert_eq!(c.check_active(256), Activity::Unchanged, "256 is not under 2 × 128");
        assert_eq!(c.check_active(255), Activity::Deactivated);
        assert!(!c.active);
        let mut off = SlotsCache::new(false, 2);
        off.check_active(1 << 30);
        assert!(!off.active, "a kernel without the cache never activates it");
    }

    /// A refill's slots come out in their allocation order, and only on their CPU.
    #[test]
    fn a_cpu_allocates_its_refill_in_order() {
        let mut c = SlotsCache::new(true, 2);
        let slots: Vec<Entry> = (1..=64).map(e).collect();
        c.refill(1, &slots);
        assert_eq!(c.pop(0), None, "CPU 0 has no slots");
        for s in 1..=64 {
            assert_eq!(c.pop(1), Some(e(s)));
        }
        assert_eq!(c.pop(1), None);
        assert_eq!(c.refills, 1);
    }

    /// Frees are returned 64 at a time: the 65th free of a CPU hands back the first 64,
    /// and a drain returns what is left on both sides.
    #[test]
    fn frees_are_returned_in_batches_of_64() {
        let mut c = SlotsCache::new(true, 2);
        let mut batch = Vec::new();
        for s in 1..=64 {
            c.free_slot(0, e(s), &mut batch);
            assert!(batch.is_empty(), "no batch before the 65th free ({s})");
        }
        c.free_slot(0, e(65), &mut batch);
        assert_eq!(batch, (1..=64).map(e).collect::<Vec<_>>());
        assert_eq!(c.free_batches, 1);
        c.refill(1, &[e(100), e(101)]);
        let mut out = Vec::new();
        c.drain(&mut out);
        out.sort_by_key(|x| x.slot());
        assert_eq!(out, vec![e(65), e(100), e(101)]);
        assert_eq!(c.held().count(), 0);
    }
}
