//! How much of memory may be dirty: the dirty-memory sysctls and the limits the kernel
//! derives from them.
//!
//! Models mm/page-writeback.c `global_dirtyable_memory` (2.6.2x-3.x
//! `determine_dirtyable_memory`), `global_dirty_limits` / `domain_dirty_limits` (≥4.2), the
//! handlers of the six `vm.dirty_*` sysctls, and the `nr_dirty_threshold` /
//! `nr_dirty_background_threshold` items of /proc/vmstat, which are the same computation
//! made when the file is read.
//!
//! DOC: the limits are fractions of *dirtyable* memory, not of RAM: pages that are free or
//! could become page cache. What counts changed with the kernel version
//! ([`Dirtyable`]): 2.6.x counted free pages and every reclaimable LRU page (anon too, while
//! swap has room); 3.3 took the allocator's reserve (`dirty_balance_reserve`) off; 3.14
//! stopped counting anon pages and took the reserve off the free pages only. Each limit is a
//! ratio of that, or a byte count (`vm.dirty_bytes`, `vm.dirty_background_bytes`) that
//! replaces the ratio; a background limit at or above the hard limit is taken as half of it.
//! The model has one node and no highmem, so `vm.highmem_is_dirtyable` has nothing to do.

/// One dirty limit as the sysctls give it: a percentage of dirtyable memory, or bytes
/// (setting one of the pair clears the other in the kernel; a scenario gives one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Ratio(u32),
    Bytes(u64),
}

/// The `vm.dirty_*` sysctls, resolved. Serialized as the scenario's `[vm]` keys, so that a
/// resolved configuration reads back as itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirtySysctls {
    /// `vm.dirty_ratio` or `vm.dirty_bytes`: where a dirtier is throttled.
    pub dirty: Limit,
    /// `vm.dirty_background_ratio` or `vm.dirty_background_bytes`: where the flusher
    /// starts background writeback.
    pub background: Limit,
    /// `vm.dirty_expire_centisecs`, in ns: how old dirty data must be for periodic
    /// (kupdate) writeback to write it.
    pub expire_ns: u64,
    /// `vm.dirty_writeback_centisecs`, in ns: the flusher's periodic wakeup; 0 turns
    /// periodic writeback off.
    pub writeback_interval_ns: u64,
}

// The dirtyable-memory rules by version, from the research notes (docs/model.md):
// ≤3.1 free + file LRU + anon LRU while swap has room; 3.2-3.13 the same less
// dirty_balance_reserve (which can wrap in the kernel; the model saturates at 0); 3.14+
// free above the reserve + file LRU; ≥4.6 the reserve is totalreserve_pages (the same
// high watermark + lowmem reserve on one zone).

impl serde::Serialize for DirtySysctls {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(4))?;
        match self.dirty {
            Limit::Ratio(r) => m.serialize_entry("dirty_ratio", &r)?,
            Limit::Bytes(b) => m.serialize_entry("dirty_bytes", &b)?,
        }
        match self.background {
            Limit::Ratio(r) => m.serialize_entry("dirty_background_ratio", &r)?,
            Limit::Bytes(b) => m.serialize_entry("dirty_background_bytes", &b)?,
        }
        m.serialize_entry("dirty_expire_centisecs", &(self.expire_ns / CENTISEC_NS))?;
        m.serialize_entry("dirty_writeback_centisecs", &(self.writeback_interval_ns / CENTISEC_NS))?;
        m.end()
    }
}

/// One centisecond (a sysctl's unit) in ns.
pub const CENTISEC_NS: u64 = 10_000_000;

/// `dirty_bytes_min`: `vm.dirty_bytes` takes at least two pages.
pub const DIRTY_BYTES_MIN: u64 = 2 * 4096;

pub use crate::profile::Dirtyable;

/// The state of memory the limits are computed from, in pages.
#[derive(Clone, Copy, Debug, Default)]
pub struct MemoryState {
    pub free: u64,
    /// Active + inactive file pages.
    pub file: u64,
    /// Active + inactive anon pages.
    pub anon: u64,
    /// Swap has free slots (`get_nr_swap_pages() > 0`).
    pub swap_free: bool,
    /// The allocator's reserve (`totalreserve_pages`, `dirty_balance_reserve`): the high
    /// watermark plus the lowmem reserve, which one zone does not have.
    pub reserve: u64,
}

impl Dirtyable {
    /// Dirtyable pages.
    pub fn pages(self, m: &MemoryState) -> u64 {
        let anon = if m.swap_free { m.anon } else { 0 };
        match self {
            Dirtyable::FreeAndReclaimable => m.free + m.file + anon + 1,
            Dirtyable::ReclaimableLessReserve => (m.free + m.file + anon).saturating_sub(m.reserve) + 1,
            Dirtyable::FreeAboveReserveAndFile => m.free - m.free.min(m.reserve) + m.file + 1,
        }
    }
}

/// The two limits, in pages (`bg_thresh`, `thresh`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DirtyLimits {
    pub background: u64,
    pub dirty: u64,
}

/// How a kernel turns the sysctls into limits.
#[derive(Clone, Copy, Debug, Default)]
pub struct LimitRules {
    /// The least `dirty_ratio` used (2.6.35-2.6.36: 5).
    pub min_dirty_ratio: u32,
    /// ≥4.2: a ratio is made a per-page fixed-point fraction first, `ratio × 4096 / 100`
    /// (20 % is 819/4096), then applied as `× pages / 4096`.
    pub ratio_per_page: bool,
}

impl DirtySysctls {
    /// `global_dirty_limits` / `domain_dirty_limits` over `dirtyable` pages: a byte limit
    /// rounded up to pages, a ratio applied with truncation; a background limit at or above
    /// the hard one becomes half of it. (Real-time tasks' boost does not apply: the model has
    /// none.)
    pub fn limits(&self, dirtyable: u64, rules: LimitRules) -> DirtyLimits {
        let pages = |l: Limit, min_ratio: u32| match l {
            Limit::Bytes(b) => b.div_ceil(4096),
            Limit::Ratio(r) if rules.ratio_per_page => (r.max(min_ratio) as u64 * 4096 / 100) * dirtyable / 4096,
            Limit::Ratio(r) => r.max(min_ratio) as u64 * dirtyable / 100,
        };
        let dirty = pages(self.dirty, rules.min_dirty_ratio);
        let mut background = pages(self.background, 0);
        if background >= dirty {
            background = dirty / 2;
        }
        DirtyLimits { background, dirty }
    }

    /// `domain_dirty_limits` of a memcg domain (≥4.2) of `avail` dirtyable pages when the
    /// global domain has `global_avail`: a byte limit cannot apply to a memcg as it is, so it
    /// becomes a per-page ratio of the global domain, `⌈bytes / global_avail⌉` (at most
    /// 4096/4096), applied to `avail`; ratios apply as per-page fractions as for the global
    /// domain.
    pub fn memcg_limits(&self, avail: u64, global_avail: u64) -> DirtyLimits {
        let per_page = |l: Limit| match l {
            Limit::Bytes(b) => b.div_ceil(global_avail.max(1)).min(4096),
            Limit::Ratio(r) => r as u64 * 4096 / 100,
        };
        let dirty = per_page(self.dirty) * avail / 4096;
        let mut background = per_page(self.background) * avail / 4096;
        if background >= dirty {
            background = dirty / 2;
        }
        DirtyLimits { background, dirty }
    }
}

/// `mdtc_calc_avail`: a memcg domain's dirtyable pages: its file pages and, of the global
/// domain's clean pages that are not its own, as many as its headroom (limit − usage)
/// allows. `dirty` and `global_dirty` are the two domains' dirty (+ writeback) pages.
pub fn memcg_avail(filepages: u64, headroom: u64, dirty: u64, global_avail: u64, global_dirty: u64) -> u64 {
    let clean = filepages - filepages.min(dirty);
    let global_clean = global_avail - global_avail.min(global_dirty);
    let other_clean = global_clean - global_clean.min(clean);
    filepages + headroom.min(other_clean)
}

/// Checks one pair of sysctls as a scenario gives them: a ratio (0..=100) or bytes, not
/// both. Errors are (key, message).
pub fn resolve_limit(
    ratio_key: &'static str,
    ratio: Option<u32>,
    bytes_key: &'static str,
    bytes: Option<u64>,
    default_ratio: u32,
    min_bytes: u64,
) -> Result<Limit, (&'static str, String)> {
    match (ratio, bytes) {
        (Some(_), Some(_)) => Err((
            bytes_key,
            format!("give {ratio_key} or {bytes_key}, not both (the kernel keeps only the one written last)"),
        )),
        (Some(r), None) if r > 100 => Err((ratio_key, format!("expected a percentage 0..100, got {r}"))),
        (Some(r), None) => Ok(Limit::Ratio(r)),
        (None, Some(b)) if b < min_bytes => Err((
            bytes_key,
            format!("expected at least {min_bytes} bytes (0 is not allowed: give {ratio_key}), got {b}"),
        )),
        (None, Some(b)) => Ok(Limit::Bytes(b)),
        (None, None) => Ok(Limit::Ratio(default_ratio)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sysctls(dirty: Limit, background: Limit) -> DirtySysctls {
        DirtySysctls { dirty, background, expire_ns: 0, writeback_interval_ns: 0 }
    }

    /// The host's numbers (6.18): free 6,054,081 pages, reserve 49,380, file LRU 6,320 give
    /// 6,011,022 dirtyable pages, 20 % = 1,202,204 and 10 % = 601,102.
    #[test]
    fn ratios_of_dirtyable_memory_by_version() {
        let m = MemoryState { free: 6_054_081, file: 6_320, anon: 1_000, swap_free: true, reserve: 49_380 };
        assert_eq!(Dirtyable::FreeAboveReserveAndFile.pages(&m), 6_011_022);
        // 2.6.x counts anon while swap has room, and no reserve.
        assert_eq!(Dirtyable::FreeAndReclaimable.pages(&m), 6_054_081 + 6_320 + 1_000 + 1);
        assert_eq!(Dirtyable::FreeAndReclaimable.pages(&MemoryState { swap_free: false, ..m }), 6_054_081 + 6_320 + 1);
        assert_eq!(Dirtyable::ReclaimableLessReserve.pages(&m), 6_054_081 + 6_320 + 1_000 - 49_380 + 1);
        let l = sysctls(Limit::Ratio(20), Limit::Ratio(10)).limits(6_011_022, LimitRules::default());
        assert_eq!(l, DirtyLimits { dirty: 1_202_204, background: 601_102 });
    }

    /// ≥4.2 applies 819/4096 for 20 % and 409/4096 for 10 %; 2.6.35 uses at least 5 %.
    #[test]
    fn version_rounding_and_the_2_6_35_minimum() {
        let s = sysctls(Limit::Ratio(20), Limit::Ratio(10));
        let modern = LimitRules { min_dirty_ratio: 0, ratio_per_page: true };
        assert_eq!(s.limits(1_000_000, modern), DirtyLimits { dirty: 199_951, background: 99_853 });
        let s = sysctls(Limit::Ratio(2), Limit::Ratio(1));
        let old = LimitRules { min_dirty_ratio: 5, ratio_per_page: false };
        assert_eq!(s.limits(1_000, old), DirtyLimits { dirty: 50, background: 10 });
    }

    /// A memcg's domain (≥4.2, cgroup v2): its file pages plus the clean pages of the rest
    /// of memory its headroom allows; ratios apply to that, byte limits become the ratio
    /// they are of the global domain (⌈bytes / global pages⌉ per 4096).
    #[test]
    fn a_memcg_domain_takes_its_share_of_the_limits() {
        // 10,000 file pages of which 4,000 dirty, 2,000 pages of headroom, a global domain
        // of 1,000,000 with 50,000 dirty: the headroom is the smaller.
        assert_eq!(memcg_avail(10_000, 2_000, 4_000, 1_000_000, 50_000), 12_000);
        // Little clean memory left elsewhere: 60,000 clean globally, 6,000 of them its own.
        assert_eq!(memcg_avail(10_000, 100_000, 4_000, 100_000, 40_000), 10_000 + 54_000);
        let s = sysctls(Limit::Ratio(20), Limit::Ratio(10));
        assert_eq!(s.memcg_limits(12_000, 1_000_000), DirtyLimits { dirty: 2_399, background: 1_198 });
        // 32 MiB over 1,000,000 global pages: 34 per 4096 (8,192 / 1,000,000 rounded up).
        let s = sysctls(Limit::Bytes(32 << 20), Limit::Bytes(16 << 20));
        assert_eq!(
            s.memcg_limits(12_000, 1_000_000),
            DirtyLimits { dirty: 34 * 12_000 / 4096, background: 17 * 12_000 / 4096 }
        );
    }

    /// 3.14+: free pages under the reserve do not go negative, the page cache still counts.
    #[test]
    fn the_reserve_is_taken_off_free_pages_only() {
        let m = MemoryState { free: 100, file: 5_000, anon: 0, swap_free: false, reserve: 1_000 };
        assert_eq!(Dirtyable::FreeAboveReserveAndFile.pages(&m), 5_001);
        assert_eq!(Dirtyable::ReclaimableLessReserve.pages(&m), 4_101);
    }

    #[test]
    fn bytes_round_up_to_pages_and_a_background_limit_above_the_hard_one_is_halved() {
        let l = sysctls(Limit::Bytes(10 * 4096 + 1), Limit::Ratio(50)).limits(1_000, LimitRules::default());
        assert_eq!(l.dirty, 11);
        assert_eq!(l.background, 5, "500 pages ≥ 11: half of the hard limit");
        let l = sysctls(Limit::Ratio(10), Limit::Bytes(4096)).limits(1_000, LimitRules::default());
        assert_eq!(l, DirtyLimits { dirty: 100, background: 1 });
    }

    #[test]
    fn a_pair_takes_a_ratio_or_bytes() {
        let r = |ratio, bytes| resolve_limit("vm.dirty_ratio", ratio, "vm.dirty_bytes", bytes, 20, DIRTY_BYTES_MIN);
        assert_eq!(r(None, None), Ok(Limit::Ratio(20)));
        assert_eq!(r(Some(5), None), Ok(Limit::Ratio(5)));
        assert_eq!(r(None, Some(1 << 20)), Ok(Limit::Bytes(1 << 20)));
        let (key, msg) = r(Some(5), Some(1 << 20)).unwrap_err();
        assert_eq!(key, "vm.dirty_bytes");
        assert!(msg.contains("not both"), "{msg}");
        assert_eq!(r(Some(101), None).unwrap_err().0, "vm.dirty_ratio");
        let (key, msg) = r(None, Some(4096)).unwrap_err();
        assert!(key == "vm.dirty_bytes" && msg.contains("8192"), "{msg}");
    }
}
