//! Memory: page frames, LRU lists, lruvecs, memory cgroups, the zone and its watermarks.
//!
//! Models include/linux/mm_types.h / page-flags.h (the per-frame state),
//! include/linux/mmzone.h (lruvecs, watermarks), mm/page_alloc.c's watermark set-up
//! (`__setup_per_zone_wmarks`, `init_per_zone_wmark_min`) and the memcg page counter of
//! mm/memcontrol.c. This folder holds the state and what touches only it: lru.rs (the
//! intrusive lists), memcontrol.rs (memcgs and their counters), mmap.rs (`struct
//! vm_area_struct`), shmem.rs (shmem objects), vmstat.rs (counters and gauges), zsmalloc.rs.
//! Data the layers above share: pte.rs (the packed page-table entry), swapops.rs (the swap
//! entry), shadow.rs (the shadow entry of an evicted page), compress.rs (page content and the
//! compressors zswap and zram use). The kernel paths over this state (faults, allocation,
//! rmap, OOM, `exit_mmap`) cross into swap, the page cache and reclaim, so they are in
//! engine/, one file per kernel source file (engine/memory.rs, engine/page_alloc.rs, ...).
//!
//! Frames live in flat arrays indexed by a `u32` frame number (struct-of-arrays): the
//! flags, the LRU links, the owner (which VMA or shmem object maps it, and at which page
//! index), the swap entry of a swap-cache page and the memcg that is charged for it.
//! LRU lists are intrusive doubly linked lists through `next`/`prev`:
//!
//! ```text
//!   head (newest) <-> ... <-> tail (oldest)      reclaim isolates from the tail
//! ```
//!
//! A large folio (page cache readahead on the profiles that allocate them) is one frame
//! standing for `1 << order` pages: one LRU entry, one set of flags, counted in pages
//! wherever the kernel counts pages (list sizes, memcg usage, free memory, vmstat). Its
//! file pages all point at that frame, as a multi-index entry of the kernel's xarray does.
//!
//! Simplifications (docs/model.md): one NUMA node with one zone; per-CPU LRU add batches
//! (pagevecs) are not modelled, pages reach their list at once; a large folio needs no
//! contiguous free block (no buddy allocator, no fragmentation).

pub mod compress;
pub mod lru;
pub mod memcontrol;
pub mod mmap;
pub mod pte;
pub mod shadow;
pub mod shmem;
pub mod swapops;
pub mod vmstat;
pub mod zbud;
pub mod zsmalloc;

use crate::ids::Pfn;
use crate::ids::{AnonId, FileId, VmaId};

pub use lru::{Lru, LruList, NR_LRU_LISTS};

/// `MAX_RECLAIM_RETRIES` (mm/internal.h): reclaim passes without progress before the
/// allocator gives up (OOM), kswapd sleeps, or zswap's shrinker stops.
pub const MAX_RECLAIM_RETRIES: u32 = 16;
/// The memory state of the machine: page frames, memcgs with their LRU lists, the VMAs
/// and shmem objects that map frames, the node's counters and flags.
pub(crate) struct Mm {
    pub(crate) frames: Frames,
    /// Memcg 0 is the root; scenario memcgs follow in name order.
    pub(crate) memcgs: Vec<Memcg>,
    /// /proc/vmstat event counters.
    pub(crate) vmstat: vmstat::Counters,
    pub(crate) vmas: Vec<mmap::Vma>,
    /// Slots of torn-down VMAs, reused by the next mapping.
    pub(crate) free_vmas: Vec<VmaId>,
    pub(crate) anon_vmas: Vec<mmap::AnonVma>,
    /// Reclaim reads a memcg's lruvec statistics (list sizes, WORKINGSET_ACTIVATE) for its
    /// whole subtree (`Profile::memcg_hierarchical_stats`).
    pub(crate) hierarchical_stats: bool,
    /// Each memcg's subtree in pre-order (`Mm::subtree`), computed once.
    pub(crate) subtrees: Vec<Vec<u16>>,
    pub(crate) free_anon: Vec<AnonId>,
    pub(crate) shmem: Vec<shmem::ShmemObj>,
    /// Frames that zsmalloc pools (zswap's, zram's) hold.
    pub(crate) zs_frames: Vec<Pfn>,
    /// The scenario's region names, by the index `Vma::region` holds (for messages).
    pub(crate) region_names: Vec<String>,
    /// Pages under writeback (NR_WRITEBACK), swap and file.
    pub(crate) nr_writeback: u64,
    /// Dirty file pages (NR_FILE_DIRTY).
    pub(crate) nr_dirty: u64,
    /// 3.x `zone->pages_scanned`, reset when a page is freed.
    pub(crate) pages_scanned: u64,
    /// PGDAT_WRITEBACK.
    pub(crate) pgdat_writeback: bool,
    /// PGDAT_DIRTY (≥4.8), ZONE_TAIL_LRU_DIRTY (3.11-4.7): reclaim found the LRU tail full
    /// of dirty file pages nobody has queued for writeback; kswapd may write them.
    pub(crate) pgdat_dirty: bool,
    /// Time of the next periodic memcg stats flush (`Profile::memcg_stats_flush_ns`).
    pub(crate) next_stats_flush: u64,
    /// The last place given on a shadow-node list (`Memcg::shadow_nodes`).
    pub(crate) shadow_node_seq: u64,
    /// The LRU locks: one per node (here one), or one per memcg's lruvec
    /// (`Profile::lru_lock_per_lruvec`); and per CPU, the pages in its LRU-add batch.
    pub(crate) lru_locks: Vec<crate::locking::LockId>,
    pub(crate) lru_batch: Vec<u32>,
    /// The folio a read(2) or a fault holds a reference on while it starts readahead
    /// (`filemap_get_pages`' folio batch, `filemap_fault`'s folio): reclaim that the
    /// window's charges start cannot free it (`__remove_mapping`'s refcount freeze fails).
    pub(crate) ra_pinned: Option<crate::ids::Pfn>,
}
/// "No frame / no link".
pub const NIL: u32 = u32::MAX;

/// Per-frame flags (include/linux/page-flags.h).
pub mod pg {
    pub const REFERENCED: u16 = 1 << 0;
    pub const ACTIVE: u16 = 1 << 1;
    /// Page content differs from its backing store (swap slot).
    pub const DIRTY: u16 = 1 << 2;
    /// In the swap cache: `Frames::swap` holds its entry.
    pub const SWAPCACHE: u16 = 1 << 3;
    /// Brought in by readahead and not used yet (PG_readahead).
    pub const READAHEAD: u16 = 1 << 4;
    pub const WRITEBACK: u16 = 1 << 5;
    /// Read I/O in flight (PG_locked && !PG_uptodate).
    pub const LOCKED: u16 = 1 << 6;
    /// Rotate to the inactive tail when writeback ends.
    pub const RECLAIM: u16 = 1 << 7;
    pub const SWAPBACKED: u16 = 1 << 8;
    pub const WORKINGSET: u16 = 1 << 9;
    pub const UNEVICTABLE: u16 = 1 << 10;
    /// pagesim's own: brought in by file readahead and not read or mapped yet, so its
    /// eviction counts as readahead thrashing (`ra_evicted_unused`).
    pub const RA_UNUSED: u16 = 1 << 11;
    /// The top four bits hold the folio order (`Frames::order`), not a flag: kept in the
    /// flags word because every LRU move needs it and reads the flags anyway.
    pub const ORDER_SHIFT: u16 = 12;
}

/// Who a frame belongs to: an anonymous VMA, a shmem object, a file's page cache, or
/// nobody (a swap-cache page brought in by readahead and not mapped yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    None,
    /// A private anonymous page of this anon_vma.
    Anon(AnonId),
    Shmem(u32),
    File(FileId),
}

/// Owner encoding: `u32::MAX` none; bit 31 shmem object; bit 30 file; else anon_vma id.
const OWNER_NONE: u32 = u32::MAX;
const OWNER_SHMEM: u32 = 1 << 31;
const OWNER_FILE: u32 = 1 << 30;

/// All page frames of the machine, as parallel arrays.
#[derive(Debug)]
pub struct Frames {
    pub flags: Vec<u16>,
    pub lru: Vec<u8>,
    pub next: Vec<Pfn>,
    pub prev: Vec<Pfn>,
    owner: Vec<u32>,
    pub index: Vec<u32>,
    /// Swap entry (see `swap::Entry`) of a swap-cache page; 0 otherwise.
    pub swap: Vec<u32>,
    pub memcg: Vec<u16>,
    /// Frame numbers not in use. There is one per page of memory, so there are always
    /// more than enough: a large folio takes one and holds several pages.
    free: Vec<Pfn>,
    /// Free pages (`NR_FREE_PAGES`): the frames not in use minus the extra pages that
    /// large folios hold.
    free_pages: u64,
}

impl Frames {
    pub fn new(n: u32) -> Self {
        let n_us = n as usize;
        Frames {
            flags: vec![0; n_us],
            lru: vec![lru::LRU_FREE; n_us],
            next: vec![Pfn::NIL; n_us],
            prev: vec![Pfn::NIL; n_us],
            owner: vec![OWNER_NONE; n_us],
            index: vec![0; n_us],
            swap: vec![0; n_us],
            memcg: vec![0; n_us],
            // Hand out low frame numbers first; the order only matters for determinism.
            free: (0..n).rev().map(Pfn).collect(),
            free_pages: n as u64,
        }
    }

    pub fn len(&self) -> u32 {
        self.flags.len() as u32
    }

    pub fn is_empty(&self) -> bool {
        self.flags.is_empty()
    }

    pub fn nr_free(&self) -> u64 {
        self.free_pages
    }

    /// Folio order: the frame stands for `1 << order` pages (0 for a single page).
    #[inline(always)]
    pub fn order(&self, f: Pfn) -> u8 {
        (self.flags[f] >> pg::ORDER_SHIFT) as u8
    }

    /// Pages that frame `f` stands for (`folio_nr_pages`).
    #[inline(always)]
    pub fn nr_pages(&self, f: Pfn) -> u64 {
        1 << self.order(f)
    }

    /// Takes a free page, cleared.
    pub fn alloc(&mut self, memcg: u16) -> Option<Pfn> {
        self.alloc_order(memcg, 0)
    }

    /// Takes a free folio of `1 << order` pages, cleared.
    #[inline]
    pub fn alloc_order(&mut self, memcg: u16, order: u8) -> Option<Pfn> {
        let nr = 1u64 << order;
        if self.free_pages < nr {
            return None;
        }
        let f = self.free.pop()?;
        self.free_pages -= nr;
        let i = f.idx();
        debug_assert!(order < 16);
        self.flags[i] = (order as u16) << pg::ORDER_SHIFT;
        self.lru[i] = lru::LRU_NONE;
        self.owner[i] = OWNER_NONE;
        self.swap[i] = 0;
        self.memcg[i] = memcg;
        Some(f)
    }

    /// Splits large folio `f` into single pages (`__split_folio_to_order` down to 0): `f`
    /// keeps the first page, and each other page gets a frame of its own with the same
    /// flags, owner (at its own index) and memcg, off every list like `f`. No page is
    /// allocated or freed: the frame numbers come from the spare ones that a large folio
    /// leaves (one frame number for `1 << order` pages). The new frames are appended to `out`.
    pub fn split(&mut self, f: Pfn, out: &mut Vec<Pfn>) {
        let nr = self.nr_pages(f) as u32;
        let i = f.idx();
        debug_assert!(self.lru[i] == lru::LRU_NONE && self.swap[i] == 0, "split of a listed or swap-cache folio");
        let flags = self.flags[i] & !(0xf << pg::ORDER_SHIFT);
        self.flags[i] = flags;
        for k in 1..nr {
            let g = self.free.pop().expect("a large folio leaves spare frame numbers");
            let j = g.idx();
            self.flags[j] = flags;
            self.lru[j] = self.lru[i];
            self.owner[j] = self.owner[i];
            self.index[j] = self.index[i] + k;
            self.swap[j] = 0;
            self.memcg[j] = self.memcg[i];
            out.push(g);
        }
    }

    /// Returns a frame (already off every list) and its pages to the free pool.
    pub fn free(&mut self, f: Pfn) {
        let i = f.idx();
        debug_assert_eq!(self.lru[i], lru::LRU_NONE);
        self.free_pages += self.nr_pages(f);
        self.lru[i] = lru::LRU_FREE;
        self.flags[i] = 0;
        self.owner[i] = OWNER_NONE;
        self.swap[i] = 0;
        self.free.push(f);
    }

    #[inline]
    pub fn owner(&self, f: Pfn) -> Owner {
        let o = self.owner[f];
        if o == OWNER_NONE {
            Owner::None
        } else if o & OWNER_SHMEM != 0 {
            Owner::Shmem(o & !OWNER_SHMEM)
        } else if o & OWNER_FILE != 0 {
            Owner::File(FileId(o & !OWNER_FILE))
        } else {
            Owner::Anon(AnonId(o))
        }
    }

    #[inline]
    pub fn set_owner(&mut self, f: Pfn, o: Owner, index: u32) {
        self.owner[f] = match o {
            Owner::None => OWNER_NONE,
            Owner::Anon(v) => v.0,
            Owner::Shmem(s) => s | OWNER_SHMEM,
            Owner::File(a) => a.0 | OWNER_FILE,
        };
        self.index[f] = index;
    }

    #[inline]
    pub fn test(&self, f: Pfn, flag: u16) -> bool {
        self.flags[f] & flag != 0
    }
    #[inline]
    pub fn set(&mut self, f: Pfn, flag: u16) {
        self.flags[f] |= flag;
    }
    #[inline]
    pub fn clear(&mut self, f: Pfn, flag: u16) {
        self.flags[f] &= !flag;
    }
    /// Test-and-clear.
    #[inline]
    pub fn test_clear(&mut self, f: Pfn, flag: u16) -> bool {
        let was = self.flags[f] & flag != 0;
        self.flags[f] &= !flag;
        was
    }

    /// Is frame `f` on the free pool?
    pub fn is_free(&self, f: Pfn) -> bool {
        self.lru[f] == lru::LRU_FREE
    }
}

/// Per-lruvec workingset state (the scan-balance policies keep their own state).
#[derive(Clone, Debug, Default)]
pub struct WorkingsetStat {
    /// Workingset clock (`nonresident_age`, `inactive_age` in 3.15).
    pub nonresident_age: u64,
    /// WORKINGSET_ACTIVATE_{ANON,FILE} at the end of the last reclaim (`snapshot_refaults`).
    pub refaults_snapshot: [u64; 2],
}

/// A memory cgroup: its LRU lists (one node), its page counter and its events.
#[derive(Debug)]
pub struct Memcg {
    pub name: String,
    pub lru: Lru,
    pub workingset: WorkingsetStat,
    /// Charged pages: its own and its descendants' (the page counter is hierarchical); the
    /// root's counts only the pages charged to the root itself.
    pub usage: u64,
    /// memory.max (v2) / limit_in_bytes (v1) in pages; `u64::MAX` for none.
    pub max: u64,
    /// Pages of swap charged (memory.swap.current), hierarchical as `usage`.
    pub swap_usage: u64,
    /// memory.swap.max in pages (`u64::MAX`: none).
    pub swap_max: u64,
    /// The parent memcg (the root's is itself, 0).
    pub parent: u16,
    /// v1 `memory.use_hierarchy`: its children's charges and limits count in it, and its
    /// limit reclaim walks its subtree. Without it (3.x's default) its children are
    /// independent memcgs that merely sit below it. Always set on cgroup v2.
    pub use_hierarchy: bool,
    /// v1 memory.swappiness; `None`: vm.swappiness.
    pub swappiness: Option<u32>,
    /// v2 memory.min and memory.low in pages (0: none), and the effective protection
    /// reclaim last computed for them (`memory.emin`, `memory.elow`; see
    /// `Mm::mem_cgroup_calculate_protection`).
    pub min: u64,
    pub low: u64,
    pub emin: u64,
    pub elow: u64,
    /// v2 memory.high in pages (`u64::MAX`: none).
    pub high: u64,
    /// memory.events.
    pub memory_events: MemoryEvents,
    /// v1 memory.soft_limit_in_bytes in pages (`u64::MAX`: none).
    pub soft_limit: u64,
    pub events: vmstat::Counters,
    /// WORKINGSET_ACTIVATE_{ANON,FILE} (memory.stat's workingset_activate_*), cumulative.
    pub ws_activate: [u64; 2],
    /// The lruvec statistics as reclaim's heuristics read them, when the profile flushes
    /// them periodically (`Profile::memcg_stats_flush_ns`).
    pub flushed: FlushedStats,
    /// Dirty file pages and pages under writeback charged to it (memory.stat `file_dirty`,
    /// `file_writeback`; v1 `dirty`, `writeback`).
    pub nr_dirty: u64,
    pub nr_writeback: u64,
    /// Its page-cache xarray nodes that hold only shadow entries, for the shadow shrinker
    /// (`Profile::shadow_node_shrinker`).
    pub shadow_nodes: shadow::ShadowNodeList,
}

/// A memcg's memory.events (cgroup v2; v1 counts no such events): `low` when reclaim
/// took pages of a memcg within its memory.low, `high` when a task's charge had to
/// reclaim for memory.high, `max` when a charge met the memory.max limit, `oom` when the
/// limit reclaim failed and the OOM killer ran.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct MemoryEvents {
    pub low: u64,
    pub high: u64,
    pub max: u64,
    pub oom: u64,
}

/// `lruvec_page_state` values as of the last memcg stats flush (mm/memcontrol.c rstat):
/// the four evictable LRU sizes (hierarchical for the root) and WORKINGSET_ACTIVATE_{ANON,FILE}.
#[derive(Clone, Debug, Default)]
pub struct FlushedStats {
    pub lru: [u64; 4],
    pub ws_activate: [u64; 2],
    /// The memcg's own LRU pages, all lists (`lruvec_page_state_local` of NR_LRU_BASE + i,
    /// which the shadow shrinker reads).
    pub lru_local: u64,
}

impl Memcg {
    pub fn new(name: &str, max_pages: u64, nframes: u32) -> Self {
        Memcg {
            name: name.to_string(),
            lru: Lru::new(nframes),
            workingset: WorkingsetStat::default(),
            usage: 0,
            max: max_pages,
            swap_usage: 0,
            swap_max: u64::MAX,
            parent: 0,
            use_hierarchy: true,
            swappiness: None,
            min: 0,
            low: 0,
            emin: 0,
            elow: 0,
            high: u64::MAX,
            memory_events: MemoryEvents::default(),
            soft_limit: u64::MAX,
            events: vmstat::Counters::default(),
            ws_activate: [0; 2],
            flushed: FlushedStats::default(),
            nr_dirty: 0,
            nr_writeback: 0,
            shadow_nodes: shadow::ShadowNodeList::default(),
        }
    }

    /// `mem_cgroup_margin` of this memcg alone: pages that can still be charged to it.
    pub fn margin(&self) -> u64 {
        self.max.saturating_sub(self.usage)
    }
}

impl Mm {
    /// The page counter a charge to memcg `c` goes on to: its parent's, if the parent
    /// uses hierarchy and is not the root; 0 otherwise.
    #[inline]
    fn counter_parent(&self, c: u16) -> u16 {
        let p = self.memcgs[c as usize].parent;
        if p != 0 && self.memcgs[p as usize].use_hierarchy {
            p
        } else {
            0
        }
    }

    /// Memcg `m` and the ancestors below the root its page counter is linked to, nearest
    /// first (the page counters a charge to `m` goes through; the chain stops below a
    /// v1 parent without use_hierarchy).
    #[inline]
    pub fn ancestry(&self, m: u16) -> impl Iterator<Item = u16> + '_ {
        std::iter::successors((m != 0).then_some(m), move |&c| {
            let p = self.counter_parent(c);
            (p != 0).then_some(p)
        })
    }

    /// Memcg `m` and all its ancestors below the root, hierarchy or not (settings a memcg
    /// takes from its parent when it is created, such as v1 swappiness).
    pub fn parents(&self, m: u16) -> impl Iterator<Item = u16> + '_ {
        std::iter::successors((m != 0).then_some(m), move |&c| {
            let p = self.memcgs[c as usize].parent;
            (p != 0).then_some(p)
        })
    }

    /// `page_counter_charge`/`uncharge` of `nr` pages (negative: uncharge) to memcg `m`:
    /// its usage and every ancestor's (the root's only when `m` is the root).
    #[inline]
    pub fn memcg_charge(&mut self, m: u16, nr: i64) {
        if m == 0 {
            self.memcgs[0].usage = self.memcgs[0].usage.wrapping_add_signed(nr);
            return;
        }
        let mut c = m;
        while c != 0 {
            let mc = &mut self.memcgs[c as usize];
            mc.usage = mc.usage.wrapping_add_signed(nr);
            c = self.counter_parent(c);
        }
    }

    /// The swap charge of `nr` pages (negative: uncharge) to memcg `m` and its ancestors.
    #[inline]
    pub fn swap_charge(&mut self, m: u16, nr: i64) {
        let mut c = m;
        loop {
            let mc = &mut self.memcgs[c as usize];
            mc.swap_usage = mc.swap_usage.saturating_add_signed(nr);
            if c == 0 {
                break;
            }
            c = self.counter_parent(c);
            if c == 0 {
                break;
            }
        }
    }

    /// `try_charge`'s `mem_over_limit`: the first of `m` and its ancestors that `nr` more
    /// pages would put over its limit (the memcg whose subtree must reclaim), if any.
    #[inline]
    pub fn mem_over_limit(&self, m: u16, nr: u64) -> Option<u16> {
        self.ancestry(m).find(|&c| {
            let mc = &self.memcgs[c as usize];
            mc.usage + nr > mc.max
        })
    }

    /// `mem_cgroup_margin` of `m` with its ancestors' limits: pages that can still be charged.
    pub fn margin(&self, m: u16) -> u64 {
        self.ancestry(m).map(|c| self.memcgs[c as usize].margin()).min().unwrap_or(u64::MAX)
    }

    /// `mem_cgroup_get_nr_swap_pages`: whether `m` (and every ancestor) may still charge
    /// swap (memory.swap.max).
    pub fn may_swap(&self, m: u16) -> bool {
        self.ancestry(m).all(|c| {
            let mc = &self.memcgs[c as usize];
            mc.swap_usage < mc.swap_max
        })
    }

    /// Memcg `m`'s subtree in pre-order, `m` first (`mem_cgroup_iter`'s order); only `m`
    /// for a v1 memcg without use_hierarchy (the root's walk covers every memcg).
    pub fn subtree(&self, m: u16) -> Vec<u16> {
        let mut out = vec![m];
        if m != 0 && !self.memcgs[m as usize].use_hierarchy {
            return out;
        }
        let mut i = 0;
        // Depth first: each memcg's children, in index order, right after it.
        while i < out.len() {
            let c = out[i];
            let kids: Vec<u16> =
                (1..self.memcgs.len() as u16).filter(|&k| k != c && self.memcgs[k as usize].parent == c).collect();
            for (j, k) in kids.into_iter().enumerate() {
                out.insert(i + 1 + j, k);
            }
            i += 1;
        }
        out
    }
}

/// The zone's watermarks, in pages (`__setup_per_zone_wmarks`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Watermarks {
    pub min: u64,
    pub low: u64,
    pub high: u64,
}

/// `init_per_zone_wmark_min`: min_free_kbytes = sqrt(16 × lowmem kB), clamped to
/// [128, clamp_max] (65536 before 5.7, 262144 after).
pub fn default_min_free_kbytes(managed_pages: u64, clamp_max: u64) -> u64 {
    let lowmem_kb = managed_pages * 4;
    int_sqrt(lowmem_kb * 16).clamp(128, clamp_max)
}

/// Watermarks from min_free_kbytes. `scale_factor` is `watermark_scale_factor` (≥4.6);
/// `None` selects the ≤4.5 rule low = min + min/4, high = min + min/2.
pub fn watermarks(managed_pages: u64, min_free_kbytes: u64, scale_factor: Option<u64>) -> Watermarks {
    let min = min_free_kbytes / 4;
    match scale_factor {
        None => Watermarks { min, low: min + min / 4, high: min + min / 2 },
        Some(wsf) => {
            let gap = (min / 4).max(managed_pages * wsf / 10_000);
            Watermarks { min, low: min + gap, high: min + 2 * gap }
        }
    }
}

/// Integer square root (the kernel's `int_sqrt`).
pub fn int_sqrt(x: u64) -> u64 {
    if x < 2 {
        return x;
    }
    let mut r = (x as f64).sqrt() as u64;
    while r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_free_kbytes_follows_the_sqrt_rule() {
        // 900 MiB: lowmem 921600 kB, sqrt(16 * 921600) = 3840 kB.
        assert_eq!(default_min_free_kbytes(230_400, 262_144), 3840);
        // Tiny and huge machines are clamped.
        assert_eq!(default_min_free_kbytes(100, 262_144), 128);
        assert_eq!(default_min_free_kbytes(1 << 40, 65_536), 65_536);
    }

    #[test]
    fn watermark_gaps() {
        let w = watermarks(230_400, 3840, Some(10));
        assert_eq!(w.min, 960);
        // gap = max(960/4, 230400*10/10000 = 230) = 240
        assert_eq!((w.low, w.high), (1200, 1440));
        let old = watermarks(230_400, 3840, None);
        assert_eq!((old.low, old.high), (1200, 1440));
        // A big machine: the scale factor dominates.
        let big = watermarks(4 << 20, 65_536, Some(10));
        assert_eq!(big.low - big.min, (4u64 << 20) * 10 / 10_000);
    }

    #[test]
    fn int_sqrt_exact() {
        for x in [0u64, 1, 2, 3, 4, 15, 16, 17, 99, 100, 1 << 40, (1 << 40) - 1] {
            let r = int_sqrt(x);
            assert!(r * r <= x && (r + 1) * (r + 1) > x, "{x}");
        }
    }

    #[test]
    fn frames_alloc_and_free() {
        let mut f = Frames::new(4);
        let a = f.alloc(0).unwrap();
        assert_eq!(a, crate::ids::Pfn(0));
        assert_eq!(f.nr_free(), 3);
        f.set_owner(a, Owner::Shmem(7), 42);
        assert_eq!(f.owner(a), Owner::Shmem(7));
        assert_eq!(f.index[a], 42);
        f.set(a, pg::DIRTY);
        assert!(f.test_clear(a, pg::DIRTY));
        assert!(!f.test(a, pg::DIRTY));
        f.free(a);
        assert!(f.is_free(a));
        assert_eq!(f.nr_free(), 4);
    }
}
