//! The locks of the swap paths, by kernel version (`Profile::swap_locking`, spec
//! readahead_swap.md §3.3-3.6, seed 001): slot allocation (`get_swap_page`, with the
//! per-CPU slots cache of mm/swap_slots.c in 4.11-6.13), references (`swap_free`,
//! `swapcache_prepare`), the swap cache's trees (`add_to_swap_cache`,
//! `__delete_from_swap_cache`), the writeback tag (≤4.8) and the freeing of slots
//! (`swapcache_free_entries`). Each lock is a simulated spinlock (crate::locking, taken with
//! [`Sim::spin_lock`]): its hold is the work done under it, a per-operation CPU cost; a
//! thread that finds it held spins on its CPU until it is free.
//!
//! | operation                       | ≤4.10 (`Device`)              | 4.11-6.13 (`Cluster`)                 | 6.14+ (`SwapTable`)        |
//! |---------------------------------|-------------------------------|---------------------------------------|----------------------------|
//! | allocate a slot                 | swap_avail_lock, si->lock     | per-CPU cache; refill of 64: swap_avail_lock, si->lock | cluster lock (si->lock for a new cluster) |
//! | a swap-cache insert or delete   | the area's tree_lock          | the 64 MB tree's lock                 | cluster lock               |
//! | writeback tag set, cleared      | tree_lock, tree_lock          | -                                     | -                          |
//! | swap_map change (`swapcache_prepare`, `swap_free`, `swap_duplicate`, the count read of `page_swapcount` / `folio_swapped`) | si->lock | cluster lock (si->lock on HDD) | cluster lock |
//! | a slot freed                    | (under si->lock)              | per-CPU queue; 64 at a time under si->lock | (under the cluster lock) |
//!
//! A page swapped out and faulted back by a write changes its slot's map under the lock
//! eight times under 4.8: allocated, `swap_duplicate` (`try_to_unmap`), `page_swapcount`
//! (`swap_writepage`'s `try_to_free_swap`), `swapcache_free` (leaving the swap cache after
//! the write); `swapcache_prepare`, `swap_free`, `page_swapcount` (`reuse_swap_page`),
//! `swapcache_free`.
//!
//! The holds are carved out of the per-page costs that include them (`swapin_ns`,
//! `swapout_ns`, the mapping part of a swap fault): an uncontended run on one CPU costs
//! what it did without locks. Each hold also pulls the lines of the lock's data its section
//! writes from the CPU that held it last (`SI_COUNT_LINES` and the others below). Cluster
//! locks nested under `si->lock` (a refill's scan, a batch free) are inside its hold and
//! are not taken apart.

use crate::engine::Sim;
use crate::locking::LockId;
use crate::profile::SwapLocking;
use crate::swap::swap_slots::{Activity, SWAP_SLOTS_CACHE_SIZE};
use crate::swap::swapfile::{SwapArea, SWAP_ADDRESS_SPACE_SHIFT};
use crate::swap::Entry;

/// Lines of a lock's data that a critical section writes and every holder writes, the
/// lock's own line included: they move with the lock from the CPU that held it last
/// (crate::locking). From the 64-bit layouts of the structures (docs/model.md, "Lines that
/// move with a lock"); anything else a section touches (a `swap_map` byte, a tree's leaf)
/// is in its work.
/// `swap_info_struct` (4.8): the allocation fields (`lowest_bit`, `highest_bit`,
/// `inuse_pages`, `cluster_next`) fill the line before `lock`'s; a slot allocated or freed
/// writes both, a `swap_map` byte changed under `si->lock` only the lock's.
const SI_COUNT_LINES: u32 = 2;
/// `struct address_space` (the swap cache's radix trees, ≤4.19): `tree_lock` shares its
/// line with the tree's root and the root's tags, `nrpages` is on the next line; an insert
/// or delete writes both, a writeback tag set or cleared the first.
const TREE_LINES: u32 = 2;
/// `swap_cluster_info`: the lock and the cluster's count on one line (4.11+), and from
/// 6.14 the swap table's pointer beside them.
const CLUSTER_LINES: u32 = 1;
/// `swap_avail_lock`: a lone global; one device's requeue on `swap_avail_head` changes no
/// link (a single entry).
const AVAIL_LINES: u32 = 1;

impl Sim {
    /// Creates the swap paths' locks: `swap_avail_lock`, each area's `si->lock`, its
    /// swap-cache tree locks (one, or one per 64 MB from 4.11) and its cluster locks
    /// (4.11+ on non-rotational areas; every area from 6.14).
    pub(crate) fn swap_locks_init(&mut self) {
        let regime = self.profile.swap_locking;
        let locks = &mut self.sched.locks;
        let avail = locks.class("swap_avail_lock");
        let si = locks.class("si->lock");
        let tree = locks.class("swap_cache tree_lock");
        let cluster = locks.class("ci->lock (swap cluster)");
        self.swap.avail_lock = locks.lock(avail);
        for a in &mut self.swap.areas {
            a.locks.si = locks.lock(si);
            let trees = match regime {
                SwapLocking::Device => 1,
                SwapLocking::Cluster => (a.nslots >> SWAP_ADDRESS_SPACE_SHIFT) + 1,
                SwapLocking::SwapTable => 0,
            };
            a.locks.tree = (0..trees).map(|_| locks.lock(tree)).collect();
            let clusters = match regime {
                SwapLocking::Device => 0,
                SwapLocking::Cluster if !a.cluster_alloc => 0,
                SwapLocking::Cluster | SwapLocking::SwapTable => a.nslots.div_ceil(crate::swap::CLUSTER),
            };
            a.locks.cluster = (0..clusters).map(|_| locks.lock(cluster)).collect();
        }
        self.swap.slots = crate::swap::swap_slots::SlotsCache::new(
            self.profile.swap_slots_cache && regime == SwapLocking::Cluster,
            self.sched.cpu_free.len() as u32,
        );
    }

    /// `lock_cluster_or_swap_info`: the lock over `e`'s `swap_map` byte.
    fn swap_map_lock(&self, e: Entry) -> LockId {
        let a = self.swap.area_ref(e);
        match self.profile.swap_locking {
            SwapLocking::Device => a.locks.si,
            SwapLocking::Cluster | SwapLocking::SwapTable => {
                a.locks.cluster.get(SwapArea::cluster_of(e.slot()) as usize).copied().unwrap_or(a.locks.si)
            }
        }
    }

    /// [`Sim::swap_map_lock`] and the lines a change of `e`'s map byte moves with it: a
    /// cluster lock's; under `si->lock` the lock's own, and the line of its counts too when
    /// the change `frees` the slot (`inuse_pages`, the free-slot bounds).
    fn swap_map_lock_lines(&self, e: Entry, frees: bool) -> (LockId, u32) {
        let l = self.swap_map_lock(e);
        let lines = match (l == self.swap.area_ref(e).locks.si, frees) {
            (false, _) => CLUSTER_LINES,
            (true, true) => SI_COUNT_LINES,
            (true, false) => 1,
        };
        (l, lines)
    }

    /// [`Sim::swap_cache_lock`] and the lines a swap-cache insert or delete moves with it.
    fn swap_cache_lock_lines(&self, e: Entry) -> (LockId, u32) {
        let lines = if self.profile.swap_locking == SwapLocking::SwapTable { CLUSTER_LINES } else { TREE_LINES };
        (self.swap_cache_lock(e), lines)
    }

    /// The lock of the swap cache's tree that holds `e` (`swap_address_space(e)`'s
    /// tree_lock), or its cluster's lock for the 6.18 swap table.
    fn swap_cache_lock(&self, e: Entry) -> LockId {
        let a = self.swap.area_ref(e);
        match self.profile.swap_locking {
            SwapLocking::Device => a.locks.tree[0],
            SwapLocking::Cluster => a.locks.tree[(e.slot() >> SWAP_ADDRESS_SPACE_SHIFT) as usize],
            SwapLocking::SwapTable => a.locks.cluster[SwapArea::cluster_of(e.slot()) as usize],
        }
    }

    /// `cpu.swapin_ns` less the work a page read does under locks, which the locks charge:
    /// its `swapcache_prepare`, its swap-cache insert, its share of an LRU-add batch, and
    /// (when it leaves the swap cache) its delete and `swapcache_free`.
    pub(crate) fn swapin_unlocked_ns(&self) -> u64 {
        let c = &self.cost;
        c.swapin_ns.saturating_sub(2 * c.swap_map_ns + 2 * c.swap_tree_ns + c.lru_page_ns)
    }

    /// `cpu.swapout_ns` less the work a page written does under locks, which the locks
    /// charge: its slot, its swap-cache insert, the reference its PTE or shmem slot takes
    /// (`swap_duplicate`), `swap_writepage`'s `page_swapcount`, the writeback tag set and
    /// cleared (≤4.8), and its delete and `swapcache_free` when it leaves the swap cache.
    pub(crate) fn swapout_unlocked_ns(&self) -> u64 {
        let c = &self.cost;
        let tags = if self.profile.swap_locking == SwapLocking::Device { 2 * c.swap_tag_ns } else { 0 };
        c.swapout_ns.saturating_sub(c.swap_slot_ns + 2 * c.swap_tree_ns + 3 * c.swap_map_ns + tags)
    }

    /// `get_swap_page` for one page on `cpu`: a slot from the per-CPU slots cache (refilled
    /// 64 at a time) when it is in use, else from the areas, under the profile's locks.
    /// `None`: swap is full.
    pub(crate) fn get_swap_page(&mut self, cpu: u32) -> Option<Entry> {
        match self.profile.swap_locking {
            SwapLocking::Device => self.get_swap_pages_one(cpu),
            SwapLocking::Cluster => {
                self.check_cache_active();
                if self.swap.slots.active {
                    if let Some(e) = self.swap.slots.pop(cpu) {
                        return Some(e);
                    }
                    if self.refill_swap_slots_cache(cpu) {
                        return self.swap.slots.pop(cpu);
                    }
                }
                self.get_swap_pages_one(cpu)
            }
            SwapLocking::SwapTable => {
                // swap_alloc_fast: this CPU's cluster under its lock; a new cluster comes
                // off the free list under si->lock first (swap_alloc_slow).
                let e = self.swap.alloc(cpu)?;
                if self.swap.area_ref(e).cluster_count(SwapArea::cluster_of(e.slot())) == 1 {
                    let si = self.swap.area_ref(e).locks.si;
                    self.spin_lock(si, self.cost.swap_map_ns, SI_COUNT_LINES);
                }
                let l = self.swap_map_lock(e);
                self.spin_lock(l, self.cost.swap_slot_ns, CLUSTER_LINES);
                Some(e)
            }
        }
    }

    /// `get_swap_pages(1)`: `swap_avail_lock` to pick the area, its `si->lock` to scan for
    /// the slot.
    fn get_swap_pages_one(&mut self, cpu: u32) -> Option<Entry> {
        self.spin_lock(self.swap.avail_lock, self.cost.swap_map_ns, AVAIL_LINES);
        let e = self.swap.alloc(cpu)?;
        let si = self.swap.area_ref(e).locks.si;
        self.spin_lock(si, self.cost.swap_slot_ns, SI_COUNT_LINES);
        Some(e)
    }

    /// `refill_swap_slots_cache`: one `get_swap_pages(64)` from the first area with room,
    /// under `swap_avail_lock` and that area's `si->lock` for the whole scan. Returns
    /// whether it got any slot.
    fn refill_swap_slots_cache(&mut self, cpu: u32) -> bool {
        self.spin_lock(self.swap.avail_lock, self.cost.swap_map_ns, AVAIL_LINES);
        let mut got = std::mem::take(&mut self.swap.scratch);
        got.clear();
        if let Some(first) = self.swap.alloc(cpu) {
            got.push(first);
            let area = first.area();
            while got.len() < SWAP_SLOTS_CACHE_SIZE {
                match self.swap.areas[area].alloc(cpu) {
                    Some(s) => got.push(Entry::new(area as u32, s)),
                    None => break,
                }
            }
            let si = self.swap.areas[area].locks.si;
            self.spin_lock(si, got.len() as u64 * self.cost.swap_slot_ns, SI_COUNT_LINES);
            self.swap.slots.refill(cpu, &got);
        }
        let any = !got.is_empty();
        got.clear();
        self.swap.scratch = got;
        any
    }

    /// `check_cache_active`: the slots caches follow free swap; slots are freed through
    /// them only while they are in use, and all they hold is freed when they stop.
    fn check_cache_active(&mut self) {
        let was = self.swap.slots.active;
        let activity = self.swap.slots.check_active(self.swap.free_pages());
        let active = self.swap.slots.active;
        if active != was {
            for a in &mut self.swap.areas {
                a.defer_release = active;
            }
        }
        if activity == Activity::Deactivated {
            let mut all = std::mem::take(&mut self.swap.scratch);
            all.clear();
            self.swap.slots.drain(&mut all);
            for a in 0..self.swap.areas.len() {
                all.extend(self.swap.areas[a].deferred.drain(..).map(|s| Entry::new(a as u32, s)));
            }
            self.swapcache_free_entries(&mut all);
            self.swap.scratch = all;
        }
    }

    /// `swapcache_free_entries`: frees reserved slots, sorted by area, each area's run
    /// under one hold of its `si->lock`.
    fn swapcache_free_entries(&mut self, entries: &mut Vec<Entry>) {
        entries.sort_unstable_by_key(|e| (e.area(), e.slot()));
        let mut i = 0;
        while i < entries.len() {
            let area = entries[i].area();
            let run = entries[i..].iter().take_while(|e| e.area() == area).count();
            let si = self.swap.areas[area].locks.si;
            self.spin_lock(si, run as u64 * self.cost.swap_map_ns, SI_COUNT_LINES);
            for e in &entries[i..i + run] {
                self.swap.areas[area].free_reserved(e.slot());
            }
            i += run;
        }
        entries.clear();
        self.swap_slots_released();
    }

    /// Slots whose map byte reached 0 under the slots cache (`free_swap_slot`): queued on
    /// the running CPU, a full queue freed as a batch.
    fn free_swap_slots_deferred(&mut self, area: usize) {
        if self.swap.areas[area].deferred.is_empty() {
            return;
        }
        let cpu = self.lock_cpu();
        let mut batch = std::mem::take(&mut self.swap.scratch);
        batch.clear();
        let mut deferred = std::mem::take(&mut self.swap.areas[area].deferred);
        for &s in &deferred {
            self.swap.slots.free_slot(cpu, Entry::new(area as u32, s), &mut batch);
            if !batch.is_empty() {
                self.swapcache_free_entries(&mut batch);
            }
        }
        deferred.clear();
        self.swap.areas[area].deferred = deferred;
        self.swap.scratch = batch;
    }

    /// `swap_free`: a PTE or shmem slot drops its reference to `e`, under the lock of its
    /// `swap_map`; a slot left with nothing is freed (through the slots cache when in use).
    pub(crate) fn swap_free(&mut self, e: Entry) {
        self.swap_free_nr(e, 1);
    }

    /// `swap_free_nr`: `swap_free` of `nr` consecutive slots from `e` (one folio's),
    /// under one hold.
    pub(crate) fn swap_free_nr(&mut self, e: Entry, nr: u32) {
        let a = self.swap.area_ref(e);
        // A slot whose last reference goes is freed now, unless the slots cache defers it.
        let frees = !a.defer_release && (e.slot()..e.slot() + nr).any(|s| a.count(s) == 1 && !a.has_cache(s));
        let (l, lines) = self.swap_map_lock_lines(e, frees);
        self.spin_lock(l, nr as u64 * self.cost.swap_map_ns, lines);
        for k in 0..nr {
            self.swap.area(e).put(e.slot() + k);
        }
        self.swap_slot_freed(e);
    }

    /// After a slot of `e`'s area may have been freed (a reference dropped, or SWAP_HAS_CACHE
    /// of a folio leaving the swap cache): the slots cache takes deferred frees; 6.14+ moves
    /// an emptied cluster to the free list under `si->lock`.
    pub(crate) fn swap_slot_freed(&mut self, e: Entry) {
        if self.profile.swap_locking == SwapLocking::Cluster {
            self.free_swap_slots_deferred(e.area());
        } else if self.profile.swap_locking == SwapLocking::SwapTable
            && self.swap.area_ref(e).cluster_free(SwapArea::cluster_of(e.slot()))
        {
            let si = self.swap.area_ref(e).locks.si;
            self.spin_lock(si, self.cost.swap_map_ns, SI_COUNT_LINES);
        }
    }

    /// `swap_duplicate`: a PTE or shmem slot takes a reference to `e` under the lock of its
    /// `swap_map` (`try_to_unmap_one`, `swap_shmem_alloc`, `copy_pte_range` at fork).
    pub(crate) fn swap_duplicate(&mut self, e: Entry) {
        let (l, lines) = self.swap_map_lock_lines(e, false);
        self.spin_lock(l, self.cost.swap_map_ns, lines);
        self.swap.area(e).dup(e.slot());
    }

    /// `page_swapcount` (≤5.x, from `reuse_swap_page` and `try_to_free_swap`) or
    /// `folio_swapped` (6.x, from `folio_free_swap`): whether a PTE or shmem slot still
    /// references one of swap-cache folio `f`'s slots, read under the lock of their
    /// `swap_map` (one hold for a large folio's run, as `swap_page_trans_huge_swapped`).
    pub(crate) fn page_swapcount(&mut self, f: crate::ids::Pfn) -> bool {
        let e = Entry(self.mm.frames.swap[f]);
        let (l, lines) = self.swap_map_lock_lines(e, false);
        self.spin_lock(l, self.cost.swap_map_ns, lines);
        self.folio_swapped(f)
    }

    /// The swap-cache insert of `e` under its tree's lock (`__add_to_swap_cache`).
    pub(crate) fn swap_cache_insert_lock(&mut self, e: Entry) {
        let (l, lines) = self.swap_cache_lock_lines(e);
        self.spin_lock(l, self.cost.swap_tree_ns, lines);
    }

    /// The swap-cache delete of `e`'s folio under its tree's lock, then `put_swap_folio`
    /// under the lock of its `swap_map` (`__remove_mapping`, `delete_from_swap_cache`).
    pub(crate) fn swap_cache_delete_lock(&mut self, e: Entry) {
        let (l, lines) = self.swap_cache_lock_lines(e);
        self.spin_lock(l, self.cost.swap_tree_ns, lines);
        // The slot is freed with SWAP_HAS_CACHE when no PTE or shmem slot references it
        // (unless the slots cache defers it).
        let a = self.swap.area_ref(e);
        let frees = !a.defer_release && a.count(e.slot()) == 0;
        let (m, lines) = self.swap_map_lock_lines(e, frees);
        self.spin_lock(m, self.cost.swap_map_ns, lines);
    }

    /// `swapcache_prepare` of readahead or fault slot `e`, under the lock of its map.
    pub(crate) fn swapcache_prepare_lock(&mut self, e: Entry) {
        let (l, lines) = self.swap_map_lock_lines(e, false);
        self.spin_lock(l, self.cost.swap_map_ns, lines);
    }

    /// The writeback tag of swap-cache page `e` set or cleared under the tree's lock
    /// (`test_set_page_writeback`, `test_clear_page_writeback`; ≤4.8).
    pub(crate) fn swap_writeback_tag(&mut self, e: Entry) {
        if self.profile.swap_locking == SwapLocking::Device {
            // The root's tag bits share the lock's line.
            let l = self.swap_cache_lock(e);
            self.spin_lock(l, self.cost.swap_tag_ns, 1);
        }
    }

    /// Slots the slots caches hold, per area (for the invariant checks).
    pub(crate) fn swap_slots_held(&self) -> Vec<Vec<u32>> {
        let mut held: Vec<Vec<u32>> = self.swap.areas.iter().map(|a| a.deferred.clone()).collect();
        for e in self.swap.slots.held() {
            held[e.area()].push(e.slot());
        }
        held
    }
}

#[cfg(test)]
mod tests {
    use crate::swap::Entry;
    use crate::testutil::sim;

    fn swap_sim(profile: &str) -> crate::engine::Sim {
        sim(&format!(
            "[kernel]\nprofile = \"{profile}\"\n[device.d]\nmodel = \"nvme\"\n[[swap]]\ndevice = \"d\"\nsize = \"256MB\"\n"
        ))
    }

    fn acquisitions(s: &crate::engine::Sim, class: &str) -> u64 {
        s.sched.locks.stats.iter().filter(|c| c.name == class).map(|c| c.acquisitions).sum()
    }

    /// 4.11's slots cache: the first allocation on a CPU takes 64 slots under one hold of
    /// si->lock, the next 63 come from the cache with no lock; the 65th refills. 4.8 takes
    /// swap_avail_lock and si->lock for every slot.
    #[test]
    fn the_slots_cache_takes_64_slots_per_refill() {
        let mut s = swap_sim("linux-4.11");
        let first = s.get_swap_page(0).expect("a slot");
        assert_eq!((s.swap.slots.refills, acquisitions(&s, "si->lock")), (1, 1));
        assert_eq!(s.swap.areas[0].inuse, 64, "the refill reserved 64 slots");
        for k in 1..64 {
            let e = s.get_swap_page(0).expect("a slot");
            assert_eq!(e.slot(), first.slot() + k, "the cache hands out its refill in order");
        }
        assert_eq!((s.swap.slots.refills, acquisitions(&s, "si->lock")), (1, 1));
        s.get_swap_page(0).expect("a slot");
        assert_eq!((s.swap.slots.refills, acquisitions(&s, "si->lock")), (2, 2));
        let mut old = swap_sim("linux-4.8");
        for _ in 0..65 {
            old.get_swap_page(0).expect("a slot");
        }
        assert_eq!(acquisitions(&old, "si->lock"), 65);
        assert_eq!(acquisitions(&old, "swap_avail_lock"), 65);
        assert_eq!(old.swap.areas[0].inuse, 65);
    }

    /// 4.11's freed slots wait in the CPU's queue, reserved, and are freed 64 at a time
    /// under one hold of si->lock; 4.8 frees each at once under si->lock.
    #[test]
    fn frees_are_returned_to_the_device_in_batches() {
        let mut s = swap_sim("linux-4.11");
        let slots: Vec<Entry> = (0..129).map(|_| s.get_swap_page(0).expect("a slot")).collect();
        for &e in &slots {
            s.swap.area(e).dup(e.slot());
            s.swap.area(e).clear_cache_bit(e.slot());
        }
        let before = acquisitions(&s, "si->lock");
        for &e in &slots[..64] {
            s.swap_free(e);
        }
        assert_eq!(acquisitions(&s, "si->lock"), before, "64 frees wait in the queue");
        assert_eq!(s.swap.areas[0].inuse, 192, "reserved, not free (129 used + 63 cached)");
        s.swap_free(slots[64]);
        assert_eq!(acquisitions(&s, "si->lock"), before + 1, "the 65th frees the first 64 at once");
        assert_eq!(s.swap.areas[0].inuse, 192 - 64);
        assert_eq!(s.swap.slots.held().count(), 63 + 1, "63 left to allocate, the 65th free queued");
    }

    /// Every change of a slot's references takes the lock of its `swap_map` (the source
    /// review of 4.8's swapfile.c for seed 001): `try_to_unmap`'s `swap_duplicate` once; a
    /// read fault back through the swap cache its `swap_free`; a write fault also the
    /// count read of `reuse_swap_page` (`page_swapcount`; 6.x `folio_swapped`) and the
    /// `swapcache_free` of the page leaving the swap cache (under 6.18 the swap cache's
    /// delete is under the same cluster lock: one more).
    #[test]
    fn unmap_and_a_write_fault_take_the_swap_map_lock_for_each_reference_change() {
        use crate::engine::memory::Fault;
        use crate::mm::pg;
        for (profile, class, delete) in [("linux-4.8", "si->lock", 0), ("linux-6.18", "ci->lock (swap cluster)", 1)] {
            for (write, taken) in [(false, 1), (true, 3 + delete)] {
                let mut s = swap_sim(profile);
                let (f, e) = crate::testutil::swapcache_page(&mut s, 3);
                let before = acquisitions(&s, class);
                s.try_to_unmap(f);
                assert_eq!(acquisitions(&s, class), before + 1, "{profile}: swap_duplicate");
                assert_eq!(s.swap.areas[0].count(e.slot()), 1, "{profile}: the PTE's reference");
                let before = acquisitions(&s, class);
                assert!(matches!(crate::testutil::fault(&mut s, 3, write), Fault::Done));
                assert_eq!(acquisitions(&s, class) - before, taken, "{profile}, write {write}");
                assert_eq!(s.mm.frames.test(f, pg::SWAPCACHE), !write, "{profile}: a write frees the copy");
            }
        }
    }

    /// The lines a section pulls from the CPU that held the lock last, under 4.8: a
    /// swap-cache insert two (`tree_lock` with the tree's root, and `nrpages`), a
    /// `swapcache_prepare` one (the lock's), an allocation two (the lock's and the line of
    /// the area's counts). From the other core of a flat 2-CPU machine, 45 ns a line.
    #[test]
    fn each_swap_operation_pulls_the_lines_its_section_writes() {
        let mut s = sim("cpus = 2\n[kernel]\nprofile = \"linux-4.8\"\n[device.d]\nmodel = \"nvme\"\n[[swap]]\ndevice = \"d\"\nsize = \"256MB\"\n");
        let hold = |s: &crate::engine::Sim, class: &str| -> u64 {
            s.sched.locks.stats.iter().filter(|c| c.name == class).map(|c| c.hold_total_ns).sum()
        };
        let e = Entry::new(0, 10);
        let on = |s: &mut crate::engine::Sim, cpu: u32, op: &dyn Fn(&mut crate::engine::Sim)| {
            s.sched.running_on = cpu;
            op(s);
        };
        on(&mut s, 0, &|s| s.swap_cache_insert_lock(e));
        let before = hold(&s, "swap_cache tree_lock");
        on(&mut s, 1, &|s| s.swap_cache_insert_lock(e));
        assert_eq!(hold(&s, "swap_cache tree_lock") - before, s.cost.swap_tree_ns + 2 * 45);
        on(&mut s, 0, &|s| s.swapcache_prepare_lock(e));
        let before = hold(&s, "si->lock");
        on(&mut s, 1, &|s| s.swapcache_prepare_lock(e));
        assert_eq!(hold(&s, "si->lock") - before, s.cost.swap_map_ns + 45);
        let before = hold(&s, "si->lock");
        on(&mut s, 0, &|s| {
            s.get_swap_page(0).expect("a slot");
        });
        assert_eq!(hold(&s, "si->lock") - before, s.cost.swap_slot_ns + 2 * 45);
    }

    /// 4.11 splits the swap cache into 64 MB trees: slots 16,384 apart take different tree
    /// locks, slots in one 64 MB range the same; 4.8 has one tree (one lock) per area, and
    /// 6.18 keeps the swap cache under each 256-slot cluster's lock.
    #[test]
    fn swap_cache_trees_are_split_by_64mb_from_4_11() {
        let s = swap_sim("linux-4.11");
        let (a, b, c) = (Entry::new(0, 100), Entry::new(0, 16_000), Entry::new(0, 16_384 + 100));
        assert_eq!(s.swap_cache_lock(a), s.swap_cache_lock(b));
        assert_ne!(s.swap_cache_lock(a), s.swap_cache_lock(c));
        let old = swap_sim("linux-4.8");
        assert_eq!(old.swap_cache_lock(a), old.swap_cache_lock(c));
        let new = swap_sim("linux-6.18");
        assert_ne!(new.swap_cache_lock(a), new.swap_cache_lock(Entry::new(0, 300)), "another cluster");
        assert_eq!(new.swap_cache_lock(a), new.swap_map_lock(a), "the cluster's lock");
    }
}
