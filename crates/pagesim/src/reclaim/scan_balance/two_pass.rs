//! get_scan_count as in 3.16–4.11 (Suleiman Souhlal's patch posted by Hugh Dickins,
//! seed 002): force scan only when no evictable list would be scanned at this priority.
//! The first pass computes the balanced targets without forcing; only if all are 0 does a
//! second pass force every list to min(size, 32), still scaled by the fraction.

use super::{apply_mode, fract_3x, ScanBalancePolicy, ScanInput, SWAP_CLUSTER_MAX};
use crate::mm::ReclaimStat;

#[derive(Debug, Clone, Copy)]
pub struct TwoPass;

impl ScanBalancePolicy for TwoPass {
    fn get_scan_count(&self, inp: &ScanInput, stat: &mut ReclaimStat) -> [u64; 4] {
        let force = (inp.kswapd && !inp.zone_reclaimable) || !inp.global;
        let (mode, fraction, denom) = fract_3x(inp, stat);
        let mut nr = [0u64; 4];
        for pass in 0..2 {
            let mut some = false;
            for (lru, n) in nr.iter_mut().enumerate() {
                let size = inp.sizes[lru];
                let mut scan = size >> inp.priority;
                if scan == 0 && pass == 1 && force {
                    scan = size.min(SWAP_CLUSTER_MAX);
                }
                *n = apply_mode(mode, scan, lru >= 2, fraction, denom);
                some |= *n != 0;
            }
            if some {
                break;
            }
        }
        nr
    }
}
