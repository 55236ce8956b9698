//! get_scan_count as in 3.16–4.11 (Suleiman Souhlal's patch posted by Hugh Dickins,
//! seed 002): force scan only when no evictable list would be scanned at this priority.
//! The first pass computes the balanced targets without forcing; only if all are 0 does a
//! second pass force every list to min(size, 32), still scaled by the fraction.

use super::{apply_mode, fract_3x, ReclaimStats, ScanBalancePolicy, ScanInput, SWAP_CLUSTER_MAX};

#[derive(Debug, Clone, Default)]
pub struct TwoPass {
    stats: ReclaimStats,
}

impl ScanBalancePolicy for TwoPass {
    fn note_scanned(&mut self, m: usize, t: usize, nr: u64, rotated: u64) {
        self.stats.note_scanned(m, t, nr, rotated);
    }

    fn get_scan_count(&mut self, m: usize, inp: &ScanInput) -> [u64; 4] {
        let force = (inp.kswapd && !inp.zone_reclaimable) || !inp.global;
        let (mode, fraction, denom) = fract_3x(inp, self.stats.of(m));
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
