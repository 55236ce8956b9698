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
    /// How this kernel's zswap behaves; `None` where pagesim does not model its zswap
    /// (before 5.6: zbud pool and synchronous eviction on a full pool).
    pub zswap: Option<ZswapRules>,
}

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
    fault_around_whole_folio: false,
    anon_mthp: None,
    anon_starts_active: true,
    swapbacked_activate_on_first_ref: true,
    writeback_activate: false,
    inactive_rule: InactiveRule::Legacy,
    workingset: WorkingsetMode::Off,
    watermark_scale: false,
    min_free_kbytes_max: 65_536,
    swappiness_max: 100,
    free_swap_on_write_fault: true,
    ra_read_copy: false,
    vma_ra_needs_nonrotational: true,
    ra_skip_unreferenced: false,
    swap_ra_marks_cached: true,
    ssd_cluster_alloc: true,
    swap_slots_cache: false,
    kswapd_pre_3_11: false,
    proportional_reclaim: false,
    pg_workingset: false,
    activation_ages_nonresident: false,
    memcg_stats_flush_ns: 0,
    swap_sync_io: false,
    shmem_sync_bypass: false,
    swap_zeromap: false,
    zswap: None,
};

/// Linux 3.6, seed 000's Vanilla; also the base of the 2.6.2x profiles.
const LINUX_3_6: Profile = Profile {
    name: "linux-3.6",
    description: "Linux 3.6 (seed 000's Vanilla): blind cluster swap readahead, pre-3.11 kswapd loop with \
                  congestion_wait naps, scan_swap_map slot allocation for SSDs too; otherwise as linux-3.14",
    swap_readahead: "cluster",
    ssd_cluster_alloc: false,
    kswapd_pre_3_11: true,
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
    fault_around_whole_folio: false,
    anon_mthp: None,
    anon_starts_active: false,
    swapbacked_activate_on_first_ref: false,
    writeback_activate: true,
    inactive_rule: InactiveRule::SqrtWithRefaults,
    workingset: WorkingsetMode::AnonAndFile,
    watermark_scale: true,
    min_free_kbytes_max: 262_144,
    swappiness_max: 200,
    free_swap_on_write_fault: true,
    ra_read_copy: false,
    vma_ra_needs_nonrotational: true,
    ra_skip_unreferenced: true,
    swap_ra_marks_cached: false,
    ssd_cluster_alloc: true,
    swap_slots_cache: true,
    kswapd_pre_3_11: false,
    proportional_reclaim: true,
    pg_workingset: true,
    activation_ages_nonresident: true,
    memcg_stats_flush_ns: 0,
    swap_sync_io: true,
    shmem_sync_bypass: false,
    swap_zeromap: false,
    zswap: Some(ZswapRules { exclusive_load: false, same_filled: true, store_incompressible: false, shrinker: false }),
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
                      PG_workingset pages as read-around hits (6.10); in swap: zeromap (6.12), exclusive zswap \
                      loads, no zswap same-filled pages, incompressible pages stored as they are, the zswap LRU's \
                      referenced bit, shmem swap-in bypass on synchronous devices; the 6.14 swap allocator \
                      rewrite, the end of the swap slots cache and the 6.18 swap table are not modelled apart \
                      (docs/model.md)",
        memcg_stats_flush_ns: 2_000_000_000,
        fault_around_skips_workingset: true,
        pagecache_large_folios: Some(true),
        fault_around_whole_folio: true,
        anon_mthp: Some(AnonMthp { swapout_whole: true, swapin_sync_large: true }),
        shmem_sync_bypass: true,
        swap_zeromap: true,
        zswap: Some(ZswapRules {
            exclusive_load: true,
            same_filled: false,
            store_incompressible: true,
            shrinker: true,
        }),
        ..LINUX_6_6
    },
    LINUX_3_14,
    LINUX_3_6,
    Profile {
        name: "linux-2.6.23",
        description: "Linux 2.6.23 (seed 004's on-demand kernel): on-demand file readahead; reclaim, kswapd and \
                      swap as linux-3.6 (see docs/model.md: one LRU for anon and file in 2.6.23)",
        file_readahead: "ondemand-2.6.23",
        ra_read_copy: true,
        ..LINUX_3_6
    },
    Profile {
        name: "linux-2.6.20",
        description: "Linux 2.6.20 (seed 004's baseline): current/ahead window file readahead; otherwise as \
                      linux-2.6.23",
        file_readahead: "legacy-2.6.20",
        ra_read_copy: true,
        ..LINUX_3_6
    },
];

pub fn find(name: &str) -> Option<&'static Profile> {
    PROFILES.iter().find(|p| p.name == name)
}

pub fn names() -> String {
    PROFILES.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
}
