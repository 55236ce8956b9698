//! get_scan_count as in 5.8+ (verified on 6.6): the anon/file balance follows the recent
//! cost of reclaiming each type (`anon_cost`, `file_cost`: pages written or rotated,
//! refaults of workingset pages), with swappiness as a weight; cache trim mode reclaims
//! file only while the inactive file list is not thrashing; no force scan (offline
//! memcgs aside, which pagesim does not have).

use super::{apply_mode, lruvec, Mode, PrepareInput, Prepared, ScanBalancePolicy, ScanInput};

#[derive(Debug, Clone, Default)]
pub struct Cost {
    /// Per lruvec: `anon_cost`, `file_cost`.
    cost: Vec<[u64; 2]>,
}

impl ScanBalancePolicy for Cost {
    /// `prepare_scan_count`: the root's costs; deactivation only where the root's refaults
    /// moved since the last reclaim or its inactive list is low; cache trim mode while the
    /// inactive file list can be reclaimed without deactivating; "file is tiny" when file
    /// and free pages together are under the high watermark.
    fn prepare(&mut self, inp: &PrepareInput) -> Option<Prepared> {
        let [anon_cost, file_cost] = *lruvec(&mut self.cost, inp.root);
        let may_deactivate = if inp.force_deactivate {
            [true, true]
        } else {
            [
                inp.refaults[0] != inp.refaults_snapshot[0] || inp.inactive_low[0],
                inp.refaults[1] != inp.refaults_snapshot[1] || inp.inactive_low[1],
            ]
        };
        let cache_trim_mode = (inp.root_lists[2] >> inp.priority) > 0 && !may_deactivate[1];
        let file_is_tiny = inp.global
            && inp.node_file + inp.free <= inp.high_wmark
            && !may_deactivate[0]
            && (inp.node_inactive_anon >> inp.priority) > 0;
        Some(Prepared { anon_cost, file_cost, may_deactivate, cache_trim_mode, file_is_tiny })
    }

    fn note_cost<F: Fn(usize) -> u64>(&mut self, chain: &[usize], t: usize, cost: u64, lruvec_pages: F) {
        // The lruvec, then each ancestor's up to the root's (`parent_lruvec`).
        for &c in chain {
            let size = lruvec_pages(c);
            let st = lruvec(&mut self.cost, c);
            st[t] += cost;
            if st[0] + st[1] > size / 4 {
                st[0] /= 2;
                st[1] /= 2;
            }
        }
    }

    fn get_scan_count(&mut self, _m: usize, inp: &ScanInput) -> [u64; 4] {
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
