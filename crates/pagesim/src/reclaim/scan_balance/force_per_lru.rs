//! get_scan_count as in 3.0–3.15 (verified on 3.14.1): a list whose size >> priority is 0
//! is forced to min(size, 32) when force scan applies (kswapd on an unreclaimable zone,
//! or memcg reclaim), each list on its own, before the FRACT fraction is applied.

use super::{apply_mode, fract_3x, ScanBalancePolicy, ScanInput, SWAP_CLUSTER_MAX};
use crate::mm::ReclaimStat;

#[derive(Debug, Clone, Copy)]
pub struct ForcePerLru;

impl ScanBalancePolicy for ForcePerLru {
    fn get_scan_count(&self, inp: &ScanInput, stat: &mut ReclaimStat) -> [u64; 4] {
        let force = (inp.kswapd && !inp.zone_reclaimable) || !inp.global;
        let (mode, fraction, denom) = fract_3x(inp, stat);
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
