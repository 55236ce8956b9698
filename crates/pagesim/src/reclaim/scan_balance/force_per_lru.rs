//! get_scan_count as in 3.0–3.15 (verified on 3.14.1): a list whose size >> priority is 0
//! is forced to min(size, 32) when force scan applies (kswapd on an unreclaimable zone,
//! or memcg reclaim), each list on its own, before the FRACT fraction is applied.

use super::{apply_mode, fract_3x, ReclaimStats, ScanBalancePolicy, ScanInput, SWAP_CLUSTER_MAX};

#[derive(Debug, Clone, Default)]
pub struct ForcePerLru {
    stats: ReclaimStats,
}

impl ScanBalancePolicy for ForcePerLru {
    fn note_scanned(&mut self, m: usize, t: usize, nr: u64, rotated: u64) {
        self.stats.note_scanned(m, t, nr, rotated);
    }

    fn get_scan_count(&mut self, m: usize, inp: &ScanInput) -> [u64; 4] {
        let force = (inp.kswapd && !inp.zone_reclaimable) || !inp.global;
        let (mode, fraction, denom) = fract_3x(inp, self.stats.of(m));
        let mut nr = [0u64; 4];
        for (lru, n) in nr.iter_mut().enumerate() {
            let size = inp.sizes[lru];
            let mut scan = size >> inp.priority;
            if scan == 0 && force {
                scan = size.min(SWAP_CLUSTER_MAX);
            }
            *n = apply_mode(mode, scan, lru >= 2, fraction, denom);
        }
        nr
    }
}
