//! `get_scan_count`: how many pages to scan on each evictable LRU list at a priority.
//!
//! Models mm/vmscan.c `get_scan_count` (and `prepare_scan_count` for the cost model).
//! A policy is one file; [`REGISTRY`] lists them; the engine dispatches through the
//! closed enum [`ScanBalance`]. Integer arithmetic follows the kernel exactly: the shift
//! by priority, the truncating FRACT multiply.
//!
//! The 3.x variants share the balance-mode selection and the recent_scanned/rotated
//! fraction ([`fract_3x`]) and differ only in when a list too small for this priority is
//! forced to 32 pages.

mod cost;
mod force_per_lru;
mod two_pass;

use crate::mm::ReclaimStat;

pub use cost::Cost;
pub use force_per_lru::ForcePerLru;
pub use two_pass::TwoPass;

/// `SWAP_CLUSTER_MAX`.
pub const SWAP_CLUSTER_MAX: u64 = 32;

/// What `get_scan_count` looks at. Sizes are in the kernel's list order
/// (inactive anon, active anon, inactive file, active file).
#[derive(Clone, Debug, Default)]
pub struct ScanInput {
    pub sizes: [u64; 4],
    pub priority: u32,
    pub swappiness: u32,
    /// sc->may_swap and free swap exists (`can_reclaim_anon_pages`).
    pub can_swap: bool,
    /// Global (root) reclaim, not memcg limit reclaim.
    pub global: bool,
    pub kswapd: bool,
    /// 3.x `zone_reclaimable` (pages_scanned < 6 × reclaimable).
    pub zone_reclaimable: bool,
    /// Free pages and the zone's high watermark.
    pub free: u64,
    pub high_wmark: u64,
    /// Whole-node file pages (for the "file is tiny" tests).
    pub node_file: u64,
    /// `inactive_list_is_low(file)` by the 3.x rule.
    pub inactive_file_low: bool,
    /// ≥5.5 `prepare_scan_count` results at the reclaim root.
    pub anon_cost: u64,
    pub file_cost: u64,
    pub may_deactivate_anon: bool,
    pub may_deactivate_file: bool,
    pub cache_trim_mode: bool,
    pub file_is_tiny: bool,
}

/// The balance mode (`enum scan_balance`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Equal,
    Fract,
    File,
    Anon,
}

/// A get_scan_count variant.
pub trait ScanBalancePolicy {
    /// Scan targets per list (inactive anon, active anon, inactive file, active file).
    fn get_scan_count(&self, inp: &ScanInput, stat: &mut ReclaimStat) -> [u64; 4];

    /// Whether the policy reads the ≥5.5 `prepare_scan_count` inputs (`anon_cost`,
    /// `file_cost`, `may_deactivate_*`, cache trim mode), which reclaim then computes.
    fn cost_based(&self) -> bool {
        false
    }
}

crate::registry::registry! {
    /// The closed set of variants, for dispatch without `Box<dyn>`.
    #[derive(Debug, Clone, Copy)]
    pub enum ScanBalance: ScanBalancePolicy {
        fn get_scan_count(&self, inp: &ScanInput, stat: &mut ReclaimStat) -> [u64; 4];
        fn cost_based(&self) -> bool;
    }

    /// Every get_scan_count variant, by the name scenarios use.
    pub const REGISTRY = [
        ForcePerLru => "force-per-lru", ForcePerLru,
            "3.0-3.15: recent_scanned/rotated fraction; each list too small for the priority is \
             force-scanned (kswapd on an unreclaimable zone, memcg reclaim)",
            ForcePerLru;
        TwoPass => "two-pass", TwoPass,
            "3.16-4.11: as force-per-lru, but force scan only when no list would be scanned \
             (Souhlal/Dickins, 2014)",
            TwoPass;
        Cost => "cost", Cost,
            "5.8+: anon_cost/file_cost balance, cache trim mode, file-is-tiny, no force scan",
            Cost;
    ];
}

/// 3.x balance-mode selection and FRACT fraction (3.14 `get_scan_count` up to `out:`).
/// Returns the mode and `(fraction[anon], fraction[file], denominator)`.
pub fn fract_3x(inp: &ScanInput, stat: &mut ReclaimStat) -> (Mode, [u64; 2], u64) {
    let file = inp.sizes[2] + inp.sizes[3];
    let anon = inp.sizes[0] + inp.sizes[1];
    let mode = if !inp.can_swap || (!inp.global && inp.swappiness == 0) {
        Mode::File
    } else if inp.priority == 0 && inp.swappiness > 0 {
        Mode::Equal
    } else if inp.global && file + inp.free <= inp.high_wmark {
        Mode::Anon
    } else if !inp.inactive_file_low {
        Mode::File
    } else {
        Mode::Fract
    };
    if mode != Mode::Fract {
        return (mode, [0, 0], 1);
    }
    let anon_prio = inp.swappiness as u64;
    let file_prio = 200 - anon_prio;
    // Keep recent_* a rolling average: halve when a quarter of the list was scanned.
    if stat.recent_scanned[0] > anon / 4 {
        stat.recent_scanned[0] /= 2;
        stat.recent_rotated[0] /= 2;
    }
    if stat.recent_scanned[1] > file / 4 {
        stat.recent_scanned[1] /= 2;
        stat.recent_rotated[1] /= 2;
    }
    let ap = anon_prio * (stat.recent_scanned[0] + 1) / (stat.recent_rotated[0] + 1);
    let fp = file_prio * (stat.recent_scanned[1] + 1) / (stat.recent_rotated[1] + 1);
    (Mode::Fract, [ap, fp], ap + fp + 1)
}

/// Applies the mode to one list's scan count (the `switch (scan_balance)` of the kernel).
pub fn apply_mode(mode: Mode, scan: u64, file: bool, fraction: [u64; 2], denom: u64) -> u64 {
    match mode {
        Mode::Equal => scan,
        Mode::Fract => scan * fraction[file as usize] / denom,
        Mode::File => {
            if file {
                scan
            } else {
                0
            }
        }
        Mode::Anon => {
            if file {
                0
            } else {
                scan
            }
        }
    }
}

#[cfg(test)]
mod tests;
