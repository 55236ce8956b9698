//! get_scan_count as in 5.8+ (verified on 6.6): the anon/file balance follows the recent
//! cost of reclaiming each type (`anon_cost`, `file_cost`: pages written or rotated,
//! refaults of workingset pages), with swappiness as a weight; cache trim mode reclaims
//! file only while the inactive file list is not thrashing; no force scan (offline
//! memcgs aside, which pagesim does not have).

use super::{apply_mode, Mode, ScanBalancePolicy, ScanInput};
use crate::mm::ReclaimStat;

#[derive(Debug, Clone, Copy)]
pub struct Cost;

impl ScanBalancePolicy for Cost {
    fn cost_based(&self) -> bool {
        true
    }

    fn get_scan_count(&self, inp: &ScanInput, _stat: &mut ReclaimStat) -> [u64; 4] {
        let swp = inp.swappiness as u64;
        let mode = if !inp.can_swap || (!inp.global && swp == 0) {
            Mode::File
        } else if inp.priority == 0 && swp > 0 {
            Mode::Equal
        } else if inp.file_is_tiny {
            Mode::Anon
        } else if inp.cache_trim_mode {
            Mode::File
        } else {
            Mode::Fract
        };
        let (fraction, denom) = if mode == Mode::Fract {
            // Each type gets at least a third of the pressure before swappiness applies.
            let total = inp.anon_cost + inp.file_cost;
            let a = total + inp.anon_cost;
            let f = total + inp.file_cost;
            let t = a + f;
            let ap = swp * (t + 1) / (a + 1);
            let fp = (200 - swp) * (t + 1) / (f + 1);
            ([ap, fp], (ap + fp).max(1))
        } else {
            ([0, 0], 1)
        };
        let mut nr = [0u64; 4];
        for (lru, n) in nr.iter_mut().enumerate() {
            let scan = inp.sizes[lru] >> inp.priority;
            *n = apply_mode(mode, scan, lru >= 2, fraction, denom);
        }
        nr
    }
}
