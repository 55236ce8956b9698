//! Kernel profiles: a named set of policies and behaviour switches for one kernel version.
//!
//! A profile is data, not code: each field is a version switch point listed in the spec
//! (shared/spec/reclaim_writeback.md §11, readahead_swap.md §6). Policies are looked up by
//! name in their own registries (`swap::readahead`, `reclaim::scan_balance`,
//! `pagecache::readahead`); [`crate::scenario::registries`] says which field names which kind.

/// How `inactive_is_low` decides whether to deactivate (mm/vmscan.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InactiveRule {
    /// 2.6.28–4.9: anon uses inactive × int_sqrt(10 × GB) < active (never low without swap);
    /// file uses active > inactive.
    Legacy,
    /// ≥5.5: both types use the sqrt rule at the reclaim root, and a refault since the last
    /// reclaim (`snapshot_refaults`) forces deactivation.
    SqrtWithRefaults,
}

/// Which pages get workingset (shadow-entry) refault detection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkingsetMode {
    /// ≤3.14: none.
    Off,
    /// 3.15–5.8: file pages only.
    FileOnly,
    /// ≥5.9: file and anon (swap-cache shadows).
    AnonAndFile,
}

/// The locks of the swap paths (mm/swapfile.c, mm/swap_state.c, mm/swap_slots.c), by the
/// series that changed them (spec readahead_swap.md §3.3-3.6, seed 001).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwapLocking {
    /// ≤4.10: the swap device's `si->lock` (after `swap_avail_lock` for the device list)
    /// for every slot allocated (`scan_swap_map`), referenced (`swapcache_prepare`) or
    /// released (`swap_free`, `swapcache_free`); one swap-cache radix tree per area under
    /// its `tree_lock`, which `test_set_page_writeback`/`test_clear_page_writeback` also
    /// take for the writeback tag.
    Device,
    /// 4.11-6.13 (Tim Chen, Huang Ying): `swap_map` under per-cluster locks, the swap cache
    /// split into 64 MB trees each with its own lock, no writeback tag on it (4.10), and the
    /// per-CPU slots cache: `si->lock` only for its refills of 64 slots and its batched
    /// frees of 64.
    Cluster,
    /// 6.14+ (Kairui Song): per-CPU clusters without the slots cache, slots allocated and
    /// freed under their cluster's lock (`si->lock` only to take a new cluster off the
    /// free list), and (6.18) the swap cache as a table in each cluster under the same lock.
    SwapTable,
}

/// What a kernel counts as dirtyable memory, the base of the dirty limits
/// (writeback/thresholds.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dirtyable {
    /// 2.6.2x-3.2 `determine_dirtyable_memory`: free pages plus reclaimable pages (the file
    /// LRU lists, and the anon lists while swap has free slots), plus one.
    FreeAndReclaimable,
    /// 3.3-3.13: the same less `dirty_balance_reserve` (the allocator's reserve: high
    /// watermark plus lowmem reserve), taken off the sum.
    ReclaimableLessReserve,
    /// 3.14+ `global_dirtyable_memory`: free pages above the reserve, plus the file LRU
    /// lists, plus one; anon pages never count.
    FreeAboveReserveAndFile,
}

/// Who may write a dirty file page that reclaim finds on the inactive list
/// (`shrink_page_list` / `shrink_folio_list`, spec reclaim_writeback.md §7.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReclaimFileWrites {
    /// ≤3.1: any reclaimer that may write (`may_writepage`, __GFP_FS), through `pageout`.
    AnyReclaimer,
    /// Mel Gorman's 2010 "do not writeback filesystem pages in direct reclaim" (the seed's
    /// `nodirect`): kswapd only; direct reclaim puts the page back.
    KswapdOnly,
    /// 3.2-3.10: kswapd only, at a priority below DEF_PRIORITY - 2; otherwise the page is
    /// tagged for immediate reclaim.
    KswapdHighPriority,
    /// 3.11-4.7: kswapd only, when the zone is flagged ZONE_TAIL_LRU_DIRTY.
    KswapdTailDirty,
    /// ≥4.11: kswapd only, when the node is flagged PGDAT_DIRTY and the page already has
    /// PG_reclaim (reclaim has seen it before).
    KswapdSeenTwice,
}

/// How a task that dirties pages is held to the dirty limit (`balance_dirty_pages`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirtyThrottle {
    /// ≤3.1: the dirtier writes back chunks of its device's inodes itself and sleeps in
    /// `congestion_wait` between them.
    WriteAndWait,
    /// ≥3.2 IO-less throttling: the dirtier only sleeps, for a pause computed from the
    /// dirty position against the limits and the device's estimated write bandwidth.
    IoLess,
}

/// When reclaim wakes the flusher threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlusherKick {
    /// ≤4.10 `do_try_to_free_pages`: once a direct reclaim has scanned more than 1.5 times
    /// its target, `wakeup_flusher_threads(total_scanned)`.
    ScannedOverTarget,
    /// The seed's `flushforward` (Mel Gorman, 2010): after every `shrink_page_list` batch
    /// that met dirty file pages, `wakeup_flusher_threads(nr_dirty + nr_dirty / 2)`; and the
    /// ≤4.10 rule above.
    FlushForward,
    /// ≥4.11 `shrink_inactive_list`: a batch made only of dirty pages not yet queued for
    /// writeback wakes the flushers to write everything (`WB_REASON_VMSCAN`).
    UnqueuedDirtyBatch,
}

/// Version switches of dirty pages and their writeback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WritebackRules {
    /// The flusher's inode order: a name of writeback/order/'s registry.
    pub order: &'static str,
    pub dirtyable: Dirtyable,
    /// Defaults of `vm.dirty_ratio` and `vm.dirty_background_ratio`.
    pub dirty_ratio: u32,
    pub dirty_background_ratio: u32,
    /// The least `dirty_ratio` the limit computation uses (2.6.35-2.6.36: 5; removed in
    /// 2.6.37).
    pub min_dirty_ratio: u32,
    /// Ratios applied per page in fixed point, `ratio × PAGE_SIZE / 100` first (≥4.2
    /// `domain_dirty_limits`: 20 % is 819/4096), rather than `ratio × pages / 100`.
    pub ratio_per_page: bool,
    /// `write_cache_pages` reaching the end of a file wraps around to its start in the same
    /// call (≤4.19); from 4.20 it sets `writeback_index` to 0 and stops.
    pub cyclic_wraps: bool,
    /// ≤2.6.36 `do_try_to_free_pages`: after a priority below DEF_PRIORITY - 2 that scanned
    /// without freeing enough, the reclaimer sleeps in `congestion_wait(BLK_RW_ASYNC, HZ/10)`
    /// (until a device's write queue leaves congestion, or the timeout); 2.6.37 replaced it
    /// by `wait_iff_congested`. Set on the 2.6.35 profiles (the 2.6.2x ones keep 3.6's
    /// reclaim, docs/model.md).
    pub direct_congestion_wait: bool,
    /// A buffered write marks the page accessed (`mark_page_accessed` in
    /// `generic_perform_write` up to 3.15, FGP_ACCESSED in `grab_cache_page_write_begin`
    /// after); 6.1 and 6.12 write_begin (FGP_WRITEBEGIN) does not.
    pub write_marks_accessed: bool,
    /// `shrink_page_list` tags a page it finds under writeback PG_reclaim, so that it
    /// rotates to the inactive tail when the write ends, and cgroup v1 limit reclaim that
    /// meets such a page again waits for its write (3.6, "memcg: prevent OOM with too many
    /// dirty pages"). Before, only `pageout` tagged the pages it wrote itself, and reclaim
    /// kept a page under writeback without waiting (order-0 reclaim; lumpy reclaim's
    /// synchronous pass is not modelled).
    pub reclaim_marks_writeback: bool,
    /// Cgroup writeback (4.2): with the memory controller on cgroup v2, each memcg has its
    /// own wb per device and its own dirty domain, which `balance_dirty_pages` and
    /// `wb_over_bg_thresh` check beside the global one.
    pub cgroup_writeback: bool,
    /// A device's (wb's) share of the dirty limits follows its share of completed writeback
    /// as a flexible proportion aged every 3 s (3.5, "mm: Convert bdi writeback proportions
    /// to flexible proportions"), rather than a floating proportion aged by events.
    pub flex_proportions: bool,
    pub reclaim_writes: ReclaimFileWrites,
    pub throttle: DirtyThrottle,
    pub flusher_kick: FlusherKick,
    /// 4.15 (Jens Axboe, "fs-writeback: only allow one inflight and pending full flush"): a
    /// request to write everything (`wakeup_flusher_threads`, reclaim's unqueued dirty
    /// batch) only sets the wb's WB_start_all bit and wakes the flusher, which makes one
    /// writeback of all dirty pages after its queued works (`wb_check_start_all`) and
    /// clears the bit when that is done; requests meanwhile are dropped. Before, each
    /// request queued a work of its own.
    pub start_all_once: bool,
    /// 6.1 (Aneesh Kumar, "mm/cgroup/reclaim: fix dirty pages throttling on cgroup v1"):
    /// cgroup v1 limit reclaim (no `writeback_throttling_sane`) sleeps in
    /// `reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK)` in `shrink_inactive_list`, right after
    /// a batch of only unqueued dirty pages woke the flushers, whatever the allocation: the
    /// __GFP_NORETRY charge of a readahead folio too. The reclaim job throttles there on
    /// every profile that wakes the flushers so (4.11's too, which did neither for legacy
    /// memcgs: kept as it was); the readahead charge's pass only where this is set.
    pub v1_dirty_throttle: bool,
}

/// 3.14-4.10's rules.
const WRITEBACK_3_14: WritebackRules = WritebackRules {
    order: "modern",
    dirtyable: Dirtyable::FreeAboveReserveAndFile,
    dirty_ratio: 20,
    dirty_background_ratio: 10,
    min_dirty_ratio: 0,
    ratio_per_page: false,
    cyclic_wraps: true,
    direct_congestion_wait: false,
    write_marks_accessed: true,
    reclaim_marks_writeback: true,
    cgroup_writeback: false,
    flex_proportions: true,
    reclaim_writes: ReclaimFileWrites::KswapdTailDirty,
    throttle: DirtyThrottle::IoLess,
    flusher_kick: FlusherKick::ScannedOverTarget,
    start_all_once: false,
    v1_dirty_throttle: false,
};

/// 2.6.35's rules (the seed 003 baseline, `traceonly`).
const WRITEBACK_2_6_35: WritebackRules = WritebackRules {
    order: "linux-2.6.35",
    dirtyable: Dirtyable::FreeAndReclaimable,
    reclaim_writes: ReclaimFileWrites::AnyReclaimer,
    throttle: DirtyThrottle::WriteAndWait,
    min_dirty_ratio: 5,
    direct_congestion_wait: true,
    reclaim_marks_writeback: false,
    flex_proportions: false,
    ..WRITEBACK_3_14
};

#[derive(Debug)]
pub struct Profile {
    pub name: &'static str,
    pub description: &'static str,
    /// Default swap-in readahead policy (`swap::readahead` registry name).
    pub swap_readahead: &'static str,
    /// Default get_scan_count variant (`reclaim::scan_balance` registry name).
    pub scan_balance: &'static str,
    /// Default file readahead policy (`pagecache::readahead` registry name).
    pub file_readahead: &'static str,
    /// `do_fault_around` (≥3.15): a read fault on a file mapping also maps the cached,
    /// uptodate pages around it (`fault_around_bytes` = 64 KiB), without faults.
    pub fault_around: bool,
    /// Fault-around does not count pages with PG_workingset as read-around hits (6.10,
    /// "mm/filemap: don't decrease mmap_miss when folio has workingset flag").
    pub fault_around_skips_workingset: bool,
    /// Whether the page cache of regular files holds large folios (ext4 from 6.16; XFS
    /// from 5.18): readahead allocates them with the order growth of `page_cache_ra_order`,
    /// reclaim and the workingset treat each as one unit, fault-around maps whole folios
    /// (6.18). `None`: the kernel predates them (5.18), `kernel.large_folios` cannot turn
    /// them on; `Some(b)`: whether ext4, the filesystem the profile models, takes them.
    pub pagecache_large_folios: Option<bool>,
    /// The filesystem is ext4 with delayed allocation and `auto_da_alloc` (2.6.30+, on by
    /// default): a file truncated to size 0 has its dirty pages written when a descriptor
    /// of it is next released (`ext4_release_file`'s `filemap_flush`), so that a file
    /// rewritten in place reaches the disk soon after it is closed. The 2.6 profiles model
    /// the ext3 of their seeds, which has no such flush.
    pub ext4_auto_da_alloc: bool,
    /// A fault on a VM_EXEC file mapping reads forward from the fault to the end of the VMA,
    /// with no async part, even under MADV_RANDOM (6.17, `do_sync_mmap_readahead`'s
    /// `exec_folio_order` case); before, it reads around the fault as on any mapping.
    pub exec_mmap_readahead: bool,
    /// Fault-around and `finish_fault` map every page of a large folio that lies inside the
    /// VMA, beyond the `fault_around_bytes` window (6.18, "map entire large folio
    /// faultaround"); before, only the window's pages.
    pub fault_around_whole_folio: bool,
    /// Anonymous multi-size THP (6.8+): a write fault on untouched anon memory may take a
    /// large folio of an order the scenario enables (`kernel.anon_mthp`). `None`: the kernel
    /// predates anon mTHP and the key is refused.
    pub anon_mthp: Option<AnonMthp>,
    /// New anon pages start on the active list (≤5.8, `lru_cache_add_active_or_unevictable`).
    pub anon_starts_active: bool,
    /// `page_check_references` activates a referenced swap-backed page at once (≤5.8).
    pub swapbacked_activate_on_first_ref: bool,
    /// Pages found under writeback by reclaim are activated (≥4.11) instead of kept.
    pub writeback_activate: bool,
    pub inactive_rule: InactiveRule,
    pub workingset: WorkingsetMode,
    /// The shadow-node shrinker (mm/workingset.c `count_shadow_nodes`, memcg aware): the
    /// page-cache xarray nodes that hold only shadow entries, beyond 1/8 of the memcg's
    /// LRU pages, are freed with their shadows by `shrink_slab` in reclaim. Modelled for
    /// the 6.x profiles, whose limit this is; without it every shadow stays until its page
    /// refaults or the file is truncated.
    pub shadow_node_shrinker: bool,
    /// `watermark_scale_factor` exists (≥4.6); otherwise low/high = min + min/4, min/2.
    pub watermark_scale: bool,
    /// Upper clamp of the default min_free_kbytes (65536 before 5.7, 262144 after).
    pub min_free_kbytes_max: u64,
    pub swappiness_max: u32,
    /// A write fault on an exclusive swap-cache page not under writeback frees its swap
    /// slot: `reuse_swap_page` deletes it from the swap cache (2.6.29–5.x), as
    /// `should_try_to_free_swap` does in 6.x. The next swap-out allocates a fresh slot.
    pub free_swap_on_write_fault: bool,
    /// `do_generic_mapping_read` works on a copy of the file's `file_ra_state` and stores it
    /// back when the read returns (≤2.6.23; 2.6.24 made the read path use the file's state
    /// in place). Threads reading one open file at once each decide from the state as their
    /// read found it, and the last read to return overwrites the others' updates.
    pub ra_read_copy: bool,
    /// `page_cache_ra_unbounded` / `page_cache_ra_order` add every folio of a window to
    /// the page cache (charged, locked, on the LRU) before `read_pages` submits their reads
    /// (5.8, Matthew Wilcox's "mm: put readahead pages in cache earlier", with ext4's
    /// `->readahead`). Before, `__do_page_cache_readahead` allocated the window's pages off
    /// the page cache and ext4's `->readpages` (`mpage_readpages`) added each and put it in
    /// a bio as it went: reclaim met no window of locked, unread pages (modelled as reading
    /// each folio as it is added).
    pub ra_add_before_read_pages: bool,
    /// `page_cache_ra_unbounded` allocates a window's folios under `memalloc_nofs_save`
    /// (5.8, "mm: add page_cache_readahead_unbounded", with the change above: a window's
    /// folios sit locked in the page cache before their reads are submitted, and reclaim
    /// must not wait on the filesystem meanwhile), so their charge's reclaim runs with
    /// GFP_NOFS. `shrink_folio_list` reads that through `may_enter_fs`: a page-cache folio
    /// under writeback is tagged PG_reclaim and activated rather than waited for (case 2,
    /// even in cgroup v1 limit reclaim, whose case 3 would wait), and a dirty shmem folio not
    /// yet in the swap cache is kept. Before, `readahead_gfp_mask` was the mapping's mask
    /// with __GFP_NORETRY: ext4's includes __GFP_FS.
    pub ra_alloc_nofs: bool,
    /// VMA readahead falls back to cluster readahead while rotational swap is active (≥4.15).
    pub vma_ra_needs_nonrotational: bool,
    /// Readahead skips slots whose swap count is 0 (≥4.11 with the slots cache).
    pub ra_skip_unreferenced: bool,
    /// Swap readahead flags PG_readahead on every window page it finds, already cached or
    /// newly read (3.14–4.13); ≥4.14 flags only the pages it reads.
    pub swap_ra_marks_cached: bool,
    /// Non-rotational swap uses the per-cluster SSD allocator (≥3.12); before, every
    /// area uses `scan_swap_map`'s runs of 256 slots.
    pub ssd_cluster_alloc: bool,
    /// Per-CPU swap slots cache (4.11+, `swap_slots.c`): each CPU takes slots in batches
    /// of 64, so concurrent reclaimers no longer interleave slot by slot on a shared
    /// allocation cursor (pagesim then treats them as not interleaving at all).
    pub swap_slots_cache: bool,
    /// Which locks the swap paths take ([`SwapLocking`]).
    pub swap_locking: SwapLocking,
    /// One LRU lock per lruvec (≥5.11, `lruvec->lru_lock`); before, one per node
    /// (`pgdat->lru_lock`, 4.8–5.10; `zone->lru_lock` before 4.8: one node here).
    pub lru_lock_per_lruvec: bool,
    /// Pages a per-CPU LRU-add batch holds before it takes the LRU lock for all of them
    /// (`PAGEVEC_SIZE`: 14 until 5.x, 15 in the folio batches of 6.x, 31 from 6.13).
    pub lru_batch: u32,
    /// kswapd's `balance_pgdat` before 3.11: no reclaim target, and a priority loop that
    /// ends as soon as SWAP_CLUSTER_MAX pages were freed, restarting at DEF_PRIORITY. From
    /// 3.11 (Mel Gorman) kswapd reclaims up to the high watermark per pass and raises the
    /// priority while it scans less than that.
    pub kswapd_pre_3_11: bool,
    /// `shrink_lruvec` from 3.16: global direct reclaim at DEF_PRIORITY scans every list to
    /// its target (`proportional_reclaim`), and at other priorities, once nr_to_reclaim is
    /// met, stops the LRU type with less work left and scales the other down, as kswapd
    /// and memcg reclaim do. Before 3.16 global direct reclaim stops as soon as
    /// nr_to_reclaim is met.
    pub proportional_reclaim: bool,
    /// `shrink_lruvec` stops once nr_to_reclaim is met and the one proportional nudge is
    /// made (6.0, Johannes Weiner, "mm: vmscan: fix extreme overreclaim and swap floods").
    /// Before, the nudge set `scan_adjusted` and the scaled remainder of the larger LRU
    /// type was scanned to its end: at low priority, thousands of pages reclaimed (and
    /// anon pages written to swap) for a memcg charge's 64.
    pub overreclaim_fix: bool,
    /// How memcg limit reclaim walks the subtree of the memcg over its limit.
    pub memcg_walk: MemcgWalk,
    /// ≤3.15 `vmscan_swappiness`: reclaim balances by the reclaim target's swappiness
    /// (vm.swappiness in global reclaim); from 3.16 by each lruvec's memcg's.
    pub swappiness_of_target: bool,
    /// cgroup v2's memory.min, memory.low and memory.high as 5.4+ have them: effective
    /// protection down the tree (`mem_cgroup_calculate_protection`), protected memcgs
    /// skipped and then scanned in proportion to their unprotected usage
    /// (`get_scan_count`), and memory.high's reclaim and penalty sleep
    /// (`mem_cgroup_handle_over_high`). Off: the profile predates them, and the scenario
    /// keys are refused.
    pub memcg_v2_protection: bool,
    /// cgroup v1's `memory.use_hierarchy` is always 1 (5.11, "mm: memcg: deprecate the
    /// non-hierarchical mode"). Before, it is 0 at the root and each new memcg takes its
    /// parent's: nested v1 memcgs are independent unless a scenario sets it.
    pub memcg_v1_always_hierarchical: bool,
    /// `try_charge` of a `__GFP_NORETRY` charge still over the limit after its reclaim drains
    /// the per-CPU charge stocks (`drain_all_stock`) and retries, reclaiming a second time,
    /// before it gives up (3.19, Johannes Weiner's "mm: memcontrol: fix transparent huge
    /// page allocations under pressure"; 3.17-3.18's `mem_cgroup_reclaim` loop also drained
    /// and reclaimed again). Before 3.17 such a charge did not reclaim at all (modelled as
    /// one reclaim, the readahead allocation's simplification in docs/model.md).
    pub memcg_charge_drain_retry: bool,
    /// A memcg's lruvec statistics as reclaim reads them (`lruvec_page_state`: LRU sizes,
    /// WORKINGSET_ACTIVATE_*) are its subtree's (5.2, Johannes Weiner's "make cgroup stats
    /// and events query API explicitly local": the plain readers are hierarchical); before,
    /// its own. The reclaim root's refaults and list sizes decide deactivation and
    /// cache_trim_mode (`prepare_scan_count`), and `lru_note_cost` sizes each lruvec by them.
    pub memcg_hierarchical_stats: bool,
    /// Pages deactivated by reclaim get PG_workingset, so that their refault counts as a
    /// workingset refault (4.20, Johannes Weiner's psi series).
    pub pg_workingset: bool,
    /// Pages that reclaim puts back on the active list age the workingset clock
    /// (`workingset_age_nonresident` in `move_folios_to_lru`, 5.9).
    pub activation_ages_nonresident: bool,
    /// Reclaim's balance heuristics (`inactive_is_low`, the refault check of
    /// `prepare_scan_control`, `snapshot_refaults`, the refault distance in
    /// `workingset_test_recent`, `lru_note_cost`) read lruvec statistics flushed at most this
    /// often, ns; 0: exact. Since Shakeel Butt's 2024 change they flush rate-limited
    /// (`mem_cgroup_flush_stats_ratelimited`), so they are as of the periodic flusher's last
    /// run (`flush_memcg_stats_dwork`, every FLUSH_TIME = 2 s). Before, reclaim flushed them
    /// whenever enough updates were pending: exact for this model.
    pub memcg_stats_flush_ns: u64,
    /// `SWP_SYNCHRONOUS_IO` (≥4.15, Minchan Kim): on a synchronous device (zram, pmem, brd)
    /// `do_swap_page` reads a slot with swap count 1 straight into a private page, without
    /// the swap cache or readahead, and swap I/O to such a device is done by the submitting
    /// thread (`swap_read_folio_bdev_sync`, `swap_writepage_bdev_sync`). zram does its work
    /// in the submitter in every version; this switch only decides the bypass and pmem/brd.
    pub swap_sync_io: bool,
    /// shmem swap-in from a synchronous device also skips the swap cache and readahead
    /// (`shmem_swap_alloc_folio`, 6.14+).
    pub shmem_sync_bypass: bool,
    /// The swap core keeps a per-device `zeromap` (≥6.12): an all-zero page is neither
    /// written nor given to zswap (`swpout_zero`), and reading it back just zero-fills the
    /// page (`swpin_zero`).
    pub swap_zeromap: bool,
    /// How this kernel's zswap behaves; `None` before 3.11, which had none.
    pub zswap: Option<ZswapRules>,
    /// Dirty limits, the flusher, pageout of file pages, dirty throttling.
    pub writeback: WritebackRules,
    /// When the block plug sends what it holds to the device before the plug ends.
    pub block_plug: PlugRules,
}

/// When a task's block plug is flushed early: a bio that merges with no plugged request
/// makes a new request, and adding it first flushes the plug if the plug is full or holds a
/// large request (`blk_add_rq_to_plug`; 2.6.39-4.9 the plug check of `blk_queue_bio`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlugRules {
    /// Requests the plug holds before the next one flushes it (`BLK_MAX_REQUEST_COUNT`:
    /// 16, 32 from 5.16, "block: bump max plugged deferred size from 16 to 32").
    pub max_requests: u32,
    /// 4.10+ (Shaohua Li, "block: immediately dispatch big size request"): the plug is
    /// also flushed when the plugged request it looks at has this many bytes
    /// (`BLK_PLUG_FLUSH_SIZE`, 128 KiB), so a stream of large requests goes out one by one
    /// instead of 16 or 32 at a time. 0: never (before 4.10).
    pub flush_bytes: u64,
    /// The request looked at is the oldest in the plug (6.13+, where the plug list became
    /// a FIFO and `rq_list_peek` returns its head) rather than the newest (4.10-6.12).
    pub flush_checks_oldest: bool,
}

/// The plug of 2.6.39-4.9: 16 requests, no size check.
pub const PLUG_LEGACY: PlugRules = PlugRules { max_requests: 16, flush_bytes: 0, flush_checks_oldest: false };

/// The plug of 5.16-6.12: 32 requests, or the newest request at 128 KiB.
pub const PLUG_5_16: PlugRules = PlugRules { max_requests: 32, flush_bytes: 128 << 10, flush_checks_oldest: false };

/// Version switches of anonymous mTHP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AnonMthp {
    /// Reclaim swaps a large anon folio out whole when the swap allocator has an aligned
    /// run of slots for it (6.10, "mm: swap: allow storage of all mTHP orders"); else,
    /// as before 6.10 for every order below PMD size, it splits the folio first.
    pub swapout_whole: bool,
    /// `do_swap_page` on a synchronous device reads back a large folio when the PTEs
    /// around the fault hold contiguous swap entries (6.12, `alloc_swap_folio`).
    pub swapin_sync_large: bool,
}

/// Version switches of mm/zswap.c (spec readahead_swap.md §4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZswapRules {
    /// A load into the swap cache erases the entry and dirties the page (exclusive loads:
    /// 6.5–6.9 behind `exclusive_loads`, default off; always from 6.10). Otherwise the
    /// entry stays until the swap slot is freed and the loaded page is clean.
    pub exclusive_load: bool,
    /// Same-filled pages are kept as their word, without pool memory
    /// (`same_filled_pages_enabled`, 4.14–6.11, default on).
    pub same_filled: bool,
    /// A page that does not compress below PAGE_SIZE is stored as it is (6.18) instead of
    /// rejected (`zswap_reject_compress_poor`).
    pub store_incompressible: bool,
    /// The memory shrinker exists (`shrinker_enabled`, ≥6.8).
    pub shrinker: bool,
    /// 3.11-3.14: the pool is zbud (two objects per page) and a store that finds it full
    /// evicts its oldest page itself (`zbud_reclaim_page`, 8 tries; `reject_reclaim_fail`
    /// when none frees a page), with no accept threshold and no shrink worker. Else the
    /// 5.6+ zsmalloc pool, rejecting stores until the worker has written the pool back to
    /// `accept_threshold_percent`.
    pub zbud_evict: bool,
    /// The compressed bytes are charged to the page's memcg (5.19+, `obj_cgroup_charge_zswap`);
    /// before, the pool is kernel memory outside every memcg's limit.
    pub memcg_charge: bool,
}

/// zswap of 3.11-3.14: frontswap, zbud, eviction on store, entries kept on load.
const ZSWAP_3_14: ZswapRules = ZswapRules {
    exclusive_load: false,
    same_filled: false,
    store_incompressible: false,
    shrinker: false,
    zbud_evict: true,
    memcg_charge: false,
};

/// How limit reclaim walks the subtree of the memcg over its limit (`shrink_zone` /
/// `shrink_node_memcgs` over `mem_cgroup_iter`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemcgWalk {
    /// 3.x: from where the last walk of this root and priority stopped, to the end of the
    /// subtree, stopping as soon as `nr_to_reclaim` is met (a fresh walk at the end starts
    /// again at the root).
    RoundRobin,
    /// 6.1: the whole subtree every time, from the root.
    Full,
    /// 6.12: as `RoundRobin` with one position per root whatever the priority.
    RoundRobinPerRoot,
}

pub const DEFAULT_PROFILE: &str = "linux-6.6";

/// Linux 3.14, also the base that linux-3.6 differs from.
const LINUX_3_14: Profile = Profile {
    name: "linux-3.14",
    description: "Linux 3.14: recent_scanned/rotated scan balance with per-LRU force scan, anon starts \
                  active, no workingset detection, adaptive cluster swap readahead",
    swap_readahead: "adaptive",
    scan_balance: "force-per-lru",
    file_readahead: "ondemand-2.6.23",
    fault_around: false,
    fault_around_skips_workingset: false,
    pagecache_large_folios: None,
    ext4_auto_da_alloc: true,
    fault_around_whole_folio: false,
    exec_mmap_readahead: false,
    anon_mthp: None,
    anon_starts_active: true,
    swapbacked_activate_on_first_ref: true,
    writeback_activate: false,
    inactive_rule: InactiveRule::Legacy,
    workingset: WorkingsetMode::Off,
    shadow_node_shrinker: false,
    watermark_scale: false,
    min_free_kbytes_max: 65_536,
    swappiness_max: 100,
    free_swap_on_write_fault: true,
    ra_read_copy: false,
    ra_add_before_read_pages: false,
    ra_alloc_nofs: false,
    vma_ra_needs_nonrotational: true,
    ra_skip_unreferenced: false,
    swap_ra_marks_cached: true,
    ssd_cluster_alloc: true,
    swap_slots_cache: false,
    swap_locking: SwapLocking::Device,
    lru_lock_per_lruvec: false,
    lru_batch: 14,
    kswapd_pre_3_11: false,
    proportional_reclaim: false,
    overreclaim_fix: false,
    memcg_walk: MemcgWalk::RoundRobin,
    swappiness_of_target: true,
    memcg_v2_protection: false,
    memcg_v1_always_hierarchical: false,
    memcg_charge_drain_retry: false,
    memcg_hierarchical_stats: false,
    pg_workingset: false,
    activation_ages_nonresident: false,
    memcg_stats_flush_ns: 0,
    swap_sync_io: false,
    shmem_sync_bypass: false,
    swap_zeromap: false,
    zswap: Some(ZSWAP_3_14),
    writeback: WRITEBACK_3_14,
    block_plug: PLUG_LEGACY,
};

/// Linux 3.6, seed 000's Vanilla; also the base of the 2.6.2x profiles.
const LINUX_3_6: Profile = Profile {
    name: "linux-3.6",
    description: "Linux 3.6 (seed 000's Vanilla): blind cluster swap readahead, pre-3.11 kswapd loop with \
                  congestion_wait naps, scan_swap_map slot allocation for SSDs too; otherwise as linux-3.14",
    swap_readahead: "cluster",
    ssd_cluster_alloc: false,
    kswapd_pre_3_11: true,
    writeback: WritebackRules {
        dirtyable: Dirtyable::ReclaimableLessReserve,
        reclaim_writes: ReclaimFileWrites::KswapdHighPriority,
        ..WRITEBACK_3_14
    },
    // zswap came with 3.11.
    zswap: None,
    ..LINUX_3_14
};

/// Linux 6.6 LTS, also the base of linux-6.18.
const LINUX_6_6: Profile = Profile {
    name: "linux-6.6",
    description: "Linux 6.6 LTS, classic LRU (MGLRU off): cost-based scan balance, anon starts inactive, \
                  anon+file workingset, VMA swap readahead",
    swap_readahead: "vma",
    scan_balance: "cost",
    file_readahead: "modern",
    fault_around: true,
    fault_around_skips_workingset: false,
    pagecache_large_folios: Some(false),
    ext4_auto_da_alloc: true,
    fault_around_whole_folio: false,
    exec_mmap_readahead: false,
    anon_mthp: None,
    anon_starts_active: false,
    swapbacked_activate_on_first_ref: false,
    writeback_activate: true,
    inactive_rule: InactiveRule::SqrtWithRefaults,
    workingset: WorkingsetMode::AnonAndFile,
    shadow_node_shrinker: true,
    watermark_scale: true,
    min_free_kbytes_max: 262_144,
    swappiness_max: 200,
    free_swap_on_write_fault: true,
    ra_read_copy: false,
    ra_add_before_read_pages: true,
    ra_alloc_nofs: true,
    vma_ra_needs_nonrotational: true,
    ra_skip_unreferenced: true,
    swap_ra_marks_cached: false,
    ssd_cluster_alloc: true,
    swap_slots_cache: true,
    swap_locking: SwapLocking::Cluster,
    lru_lock_per_lruvec: true,
    lru_batch: 15,
    kswapd_pre_3_11: false,
    proportional_reclaim: true,
    overreclaim_fix: true,
    memcg_walk: MemcgWalk::Full,
    swappiness_of_target: false,
    memcg_v2_protection: true,
    memcg_v1_always_hierarchical: true,
    memcg_charge_drain_retry: true,
    memcg_hierarchical_stats: true,
    pg_workingset: true,
    activation_ages_nonresident: true,
    memcg_stats_flush_ns: 0,
    swap_sync_io: true,
    shmem_sync_bypass: false,
    swap_zeromap: false,
    zswap: Some(ZswapRules {
        exclusive_load: false,
        same_filled: true,
        store_incompressible: false,
        shrinker: false,
        zbud_evict: false,
        memcg_charge: true,
    }),
    writeback: WritebackRules {
        reclaim_writes: ReclaimFileWrites::KswapdSeenTwice,
        flusher_kick: FlusherKick::UnqueuedDirtyBatch,
        start_all_once: true,
        v1_dirty_throttle: true,
        ratio_per_page: true,
        cyclic_wraps: false,
        write_marks_accessed: false,
        cgroup_writeback: true,
        ..WRITEBACK_3_14
    },
    block_plug: PLUG_5_16,
};

/// The registry of kernel profiles.
pub const PROFILES: &[Profile] = &[
    LINUX_6_6,
    Profile {
        name: "linux-6.18",
        description: "Linux 6.18 (the validation host's kernel), classic LRU: linux-6.6's mechanisms, with \
                      reclaim reading memcg stats flushed every 2 s; large folios in the page cache of files (ext4, \
                      6.16) with the readahead order growth of 6.17; anon mTHP when the scenario turns sizes on (6.8; \
                      whole-folio swap-out 6.10, large swap-in from synchronous devices 6.12); fault-around not counting \
                      PG_workingset pages as read-around hits (6.10); text faults reading forward with no async \
                      part (6.17); the block plug flushed at 32 requests or a 128 KiB oldest request; in swap: zeromap (6.12), exclusive zswap \
                      loads, no zswap same-filled pages, incompressible pages stored as they are, the zswap LRU's \
                      referenced bit, shmem swap-in bypass on synchronous devices; the locks of the 6.14 swap \
                      allocator (no slots cache, slots under their cluster's lock) and of the 6.18 swap table \
                      (docs/model.md)",
        memcg_stats_flush_ns: 2_000_000_000,
        memcg_walk: MemcgWalk::RoundRobinPerRoot,
        swap_slots_cache: false,
        swap_locking: SwapLocking::SwapTable,
        lru_batch: 31,
        fault_around_skips_workingset: true,
        pagecache_large_folios: Some(true),
        fault_around_whole_folio: true,
        exec_mmap_readahead: true,
        anon_mthp: Some(AnonMthp { swapout_whole: true, swapin_sync_large: true }),
        shmem_sync_bypass: true,
        swap_zeromap: true,
        zswap: Some(ZswapRules {
            exclusive_load: true,
            same_filled: false,
            store_incompressible: true,
            shrinker: true,
            zbud_evict: false,
            memcg_charge: true,
        }),
        block_plug: PlugRules { flush_checks_oldest: true, ..PLUG_5_16 },
        ..LINUX_6_6
    },
    LINUX_3_14,
    Profile {
        name: "linux-3.14-twopass",
        description: "linux-3.14 with seed 002's patch (Suleiman Souhlal, \"mm: only force scan in reclaim when \
                      none of the lrus are big enough\", merged for 3.16): get_scan_count forces a scan only when \
                      every list would be scanned 0 pages at this priority",
        scan_balance: "two-pass",
        ..LINUX_3_14
    },
    LINUX_3_6,
    Profile {
        name: "linux-2.6.23",
        description: "Linux 2.6.23 (seed 004's on-demand kernel): on-demand file readahead; reclaim, kswapd and \
                      swap as linux-3.6 (see docs/model.md: one LRU for anon and file in 2.6.23)",
        file_readahead: "ondemand-2.6.23",
        ra_read_copy: true,
        ext4_auto_da_alloc: false,
        writeback: WritebackRules {
            dirty_ratio: 10,
            dirty_background_ratio: 5,
            direct_congestion_wait: false,
            ..WRITEBACK_2_6_35
        },
        ..LINUX_3_6
    },
    Profile {
        name: "linux-2.6.20",
        description: "Linux 2.6.20 (seed 004's baseline): current/ahead window file readahead; otherwise as \
                      linux-2.6.23",
        file_readahead: "legacy-2.6.20",
        ra_read_copy: true,
        ext4_auto_da_alloc: false,
        writeback: WritebackRules {
            dirty_ratio: 40,
            dirty_background_ratio: 10,
            direct_congestion_wait: false,
            ..WRITEBACK_2_6_35
        },
        ..LINUX_3_6
    },
    LINUX_2_6_35,
    LINUX_4_8,
    LINUX_4_11,
    // Seed 003's four columns: Mel Gorman's "Reduce writeback from page reclaim context" V5
    // and Wu Fengguang's "write older pages first" on 2.6.35-rc6, each adding to the last.
    Profile {
        name: "linux-2.6.35-nodirect",
        description: "linux-2.6.35 with \"vmscan: do not writeback filesystem pages in direct reclaim\" (seed 003's \
                      nodirect): only kswapd writes dirty file pages from reclaim",
        writeback: WritebackRules { reclaim_writes: ReclaimFileWrites::KswapdOnly, ..WRITEBACK_2_6_35 },
        ..LINUX_2_6_35
    },
    Profile {
        name: "linux-2.6.35-flusholdest",
        description: "linux-2.6.35-nodirect with \"writeback: try to write older pages first\" (seed 003's \
                      flusholdest): every queue_io takes newly expired inodes, background writeback expired ones first",
        writeback: WritebackRules {
            reclaim_writes: ReclaimFileWrites::KswapdOnly,
            order: "flusholdest",
            ..WRITEBACK_2_6_35
        },
        ..LINUX_2_6_35
    },
    Profile {
        name: "linux-2.6.35-flushforward",
        description: "linux-2.6.35-flusholdest with \"vmscan: kick flusher threads to clean pages when reclaim is \
                      encountering dirty pages\" (seed 003's flushforward)",
        writeback: WritebackRules {
            reclaim_writes: ReclaimFileWrites::KswapdOnly,
            order: "flusholdest",
            flusher_kick: FlusherKick::FlushForward,
            ..WRITEBACK_2_6_35
        },
        ..LINUX_2_6_35
    },
];

/// Linux 4.8 (seed 001's baseline, mmotm-2016-10-11 without the swap scalability series):
/// 3.14's reclaim with the mechanisms merged since that seed 001's workload meets.
const LINUX_4_8: Profile = Profile {
    name: "linux-4.8",
    description: "Linux 4.8 (seed 001's baseline): swap slots allocated and freed under the swap device's lock, \
                  one swap-cache radix tree per device under its tree_lock (also taken for the writeback tag), \
                  one LRU lock per node with 14-page batches; file workingset detection (3.15), fault-around \
                  (3.15), proportional reclaim (3.16), watermark_scale_factor (4.6), the memcg charge's \
                  second reclaim after draining the per-CPU stocks (3.19); reclaim and readahead otherwise as \
                  linux-3.14",
    fault_around: true,
    memcg_charge_drain_retry: true,
    workingset: WorkingsetMode::FileOnly,
    shadow_node_shrinker: false,
    watermark_scale: true,
    proportional_reclaim: true,
    ..LINUX_3_14
};

/// Linux 4.11: linux-4.8 with seed 001's series (Tim Chen, Huang Ying) and the 4.10-4.11
/// changes its workload meets.
const LINUX_4_11: Profile = Profile {
    name: "linux-4.11",
    description: "Linux 4.11 (seed 001's patched kernel): linux-4.8 with per-cluster swap_map locks, the swap \
                  cache split into 64 MB trees, the per-CPU swap slots cache (batches of 64) and readahead \
                  skipping unreferenced slots; no writeback tag in the swap cache (4.10); the 4.10 block plug \
                  (a 128 KiB request flushes it); pages under writeback activated by reclaim and the \
                  flushers woken by a batch of unqueued dirty pages (4.11)",
    ra_skip_unreferenced: true,
    swap_slots_cache: true,
    swap_locking: SwapLocking::Cluster,
    writeback_activate: true,
    writeback: WritebackRules { flusher_kick: FlusherKick::UnqueuedDirtyBatch, ..WRITEBACK_3_14 },
    block_plug: PlugRules { max_requests: 16, flush_bytes: 128 << 10, flush_checks_oldest: false },
    ..LINUX_4_8
};

/// Linux 2.6.35 (seed 003's `traceonly`: the baseline with the tracepoints only).
const LINUX_2_6_35: Profile = Profile {
    name: "linux-2.6.35",
    description: "Linux 2.6.35 (seed 003's traceonly baseline): any reclaimer writes dirty file pages through \
                  pageout, dirtiers write back and wait in balance_dirty_pages, the 2.6.35 flusher order; reclaim, \
                  kswapd, swap and readahead as linux-3.6",
    file_readahead: "ondemand-2.6.23",
    writeback: WRITEBACK_2_6_35,
    ext4_auto_da_alloc: false,
    ..LINUX_3_6
};

pub fn find(name: &str) -> Option<&'static Profile> {
    PROFILES.iter().find(|p| p.name == name)
}

pub fn names() -> String {
    PROFILES.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
}
