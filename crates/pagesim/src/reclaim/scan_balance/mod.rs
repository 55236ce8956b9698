//! `get_scan_count`: how many pages to scan on each evictable LRU list at a priority.
//!
//! Models mm/vmscan.c `get_scan_count` and, for the cost model, the decisions of
//! `prepare_scan_count` (engine/vmscan.rs gathers its inputs).
//! A policy is one file; [`REGISTRY`] lists them; the engine dispatches through the
//! closed enum [`ScanBalance`]. Integer arithmetic follows the kernel exactly: the shift
//! by priority, the truncating FRACT multiply.
//!
//! The 3.x variants share the balance-mode selection and the recent_scanned/rotated
//! fraction ([`fract_3x`]) and differ only in when a list too small for this priority is
//! forced to 32 pages.
//!
//! DOC: what a variant balances by is its own state, kept per lruvec (memcg) and fed by
//! reclaim through the trait's hooks: the ≤5.7 `reclaim_stat` ([`RecentRotated`]: pages
//! added and scanned, and how many of them were rotated or activated) for the 3.x variants;
//! the 5.8+ `anon_cost`/`file_cost` (`lru_note_cost`) and the once-per-reclaim decisions of
//! `prepare_scan_count` ([`Prepared`]) for the cost model. A hook a variant does not need is
//! a no-op, so reclaim calls every hook unconditionally and no profile flag chooses code.

mod cost;
mod force_per_lru;
mod two_pass;

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

/// What `prepare_scan_count` looks at, at the reclaim root (`root`, 0 for global reclaim).
#[derive(Clone, Debug, Default)]
pub struct PrepareInput {
    pub root: usize,
    pub priority: u32,
    pub global: bool,
    /// The retry of a reclaim that skipped deactivation and freed nothing.
    pub force_deactivate: bool,
    /// WORKINGSET_ACTIVATE_{ANON,FILE} of the root now and at the end of the last reclaim.
    pub refaults: [u64; 2],
    pub refaults_snapshot: [u64; 2],
    /// `inactive_is_low` of the root's anon and file lists.
    pub inactive_low: [bool; 2],
    /// The root's lists as reclaim sees them (inactive anon, active anon, inactive file,
    /// active file).
    pub root_lists: [u64; 4],
    /// Whole-node file pages and inactive anon pages, free pages, the high watermark.
    pub node_file: u64,
    pub node_inactive_anon: u64,
    pub free: u64,
    pub high_wmark: u64,
}

/// What `prepare_scan_count` (5.5+) decides once per reclaim pass at the root, for every
/// lruvec below it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prepared {
    pub anon_cost: u64,
    pub file_cost: u64,
    /// Whether the active anon and file lists may be deactivated.
    pub may_deactivate: [bool; 2],
    pub cache_trim_mode: bool,
    pub file_is_tiny: bool,
}

/// A get_scan_count variant and the balance state it keeps per lruvec (memcg).
pub trait ScanBalancePolicy {
    /// `prepare_scan_count` at the start of a reclaim pass; `None` for kernels without it,
    /// where each lruvec decides deactivation for itself (`inactive_list_is_low`).
    fn prepare(&mut self, _inp: &PrepareInput) -> Option<Prepared> {
        None
    }

    /// Scan targets per list (inactive anon, active anon, inactive file, active file) for
    /// lruvec `m`.
    fn get_scan_count(&mut self, m: usize, inp: &ScanInput) -> [u64; 4];

    /// `nr` pages of type `t` (0 anon, 1 file) were taken from lruvec `m`'s lists by reclaim,
    /// and `rotated` pages of type `t` stayed or went active (≤5.7 `reclaim_stat`; a page
    /// added to the LRU counts as scanned, and as rotated when it starts active).
    fn note_scanned(&mut self, _m: usize, _t: usize, _nr: u64, _rotated: u64) {}

    /// `lru_note_cost` (5.8+): reclaiming type `t` in lruvec `m` cost `cost` pages of I/O or
    /// rotation; charged to `m` and its ancestors, each halving its costs when they exceed a
    /// quarter of its pages (`lruvec_pages(memcg)`).
    fn note_cost<F: Fn(usize) -> u64>(&mut self, _chain: &[usize], _t: usize, _cost: u64, _lruvec_pages: F) {}
}

/// Grows a per-lruvec table to hold lruvec `m` and returns its entry.
fn lruvec<T: Default + Clone>(v: &mut Vec<T>, m: usize) -> &mut T {
    if v.len() <= m {
        v.resize(m + 1, T::default());
    }
    &mut v[m]
}

/// The ≤5.7 per-lruvec `reclaim_stat` the 3.x variants balance by.
#[derive(Clone, Debug, Default)]
pub struct RecentRotated {
    /// `recent_scanned[anon, file]`.
    pub recent_scanned: [u64; 2],
    /// `recent_rotated[anon, file]`.
    pub recent_rotated: [u64; 2],
}

/// `RecentRotated` of every lruvec, fed by the hooks of the 3.x variants.
#[derive(Clone, Debug, Default)]
pub struct ReclaimStats(Vec<RecentRotated>);

impl ReclaimStats {
    pub fn of(&mut self, m: usize) -> &mut RecentRotated {
        lruvec(&mut self.0, m)
    }

    fn note_scanned(&mut self, m: usize, t: usize, nr: u64, rotated: u64) {
        let st = self.of(m);
        st.recent_scanned[t] += nr;
        st.recent_rotated[t] += rotated;
    }
}

crate::registry::registry! {
    /// The closed set of variants, for dispatch without `Box<dyn>`.
    #[derive(Debug, Clone)]
    pub enum ScanBalance: ScanBalancePolicy {
        fn prepare(&mut self, inp: &PrepareInput) -> Option<Prepared>;
        fn get_scan_count(&mut self, m: usize, inp: &ScanInput) -> [u64; 4];
        fn note_scanned(&mut self, m: usize, t: usize, nr: u64, rotated: u64);
        fn note_cost<F: Fn(usize) -> u64>(&mut self, chain: &[usize], t: usize, cost: u64, lruvec_pages: F);
    }

    /// Every get_scan_count variant, by the name scenarios use.
    pub const REGISTRY = [
        ForcePerLru => "force-per-lru", ForcePerLru,
            "3.0-3.15: recent_scanned/rotated fraction; each list too small for the priority is \
             force-scanned (kswapd on an unreclaimable zone, memcg reclaim)",
            ForcePerLru::default();
        TwoPass => "two-pass", TwoPass,
            "3.16-4.11: as force-per-lru, but force scan only when no list would be scanned \
             (Souhlal/Dickins, 2014)",
            TwoPass::default();
        Cost => "cost", Cost,
            "5.8+: anon_cost/file_cost balance, cache trim mode, file-is-tiny, no force scan",
            Cost::default();
    ];
}

/// 3.x balance-mode selection and FRACT fraction (3.14 `get_scan_count` up to `out:`).
/// Returns the mode and `(fraction[anon], fraction[file], denominator)`.
pub fn fract_3x(inp: &ScanInput, stat: &mut RecentRotated) -> (Mode, [u64; 2], u64) {
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
