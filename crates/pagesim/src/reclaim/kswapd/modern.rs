//! mm/vmscan.c: kswapd's priority loop from 3.11 on (`balance_pgdat` after Mel Gorman's rework):
//! reclaim toward the high watermark; raise the priority when a pass scanned less than
//! its target or freed nothing; at priority 0, snapshot the refaults and count a failure
//! if nothing was freed; and when pages at the tail were still under writeback
//! (`nr_immediate`), wait for writeback progress (`reclaim_throttle`).

use crate::engine::Sim;
use crate::reclaim::ScanControl;
use crate::units::JIFFY_NS;

impl Sim {
    /// The end of one priority pass; returns whether kswapd goes on (false: it sleeps
    /// in `reclaim_throttle`).
    pub(super) fn balance_pgdat_pass_end(&mut self, mut sc: ScanControl, before: u64) -> bool {
        let raise = sc.nr_scanned < sc.nr_to_reclaim;
        if raise || sc.nr_reclaimed == before {
            sc.priority = sc.priority.saturating_sub(1);
        }
        let immediate = sc.nr_immediate > 0;
        if sc.priority < 1 {
            self.snapshot_refaults(None);
            if sc.nr_reclaimed == 0 {
                self.reclaim.kswapd.failures += 1;
            }
        } else {
            self.reclaim.kswapd.sc = Some(sc);
        }
        if immediate && self.writeback_in_flight() {
            let k = self.kswapd_thread();
            self.reclaim_throttle(k, 25 * JIFFY_NS);
            return false;
        }
        true
    }
}
