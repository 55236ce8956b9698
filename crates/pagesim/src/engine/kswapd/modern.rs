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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{sim, SSD};

    fn pass(priority: u32, nr_to_reclaim: u64, nr_scanned: u64, nr_reclaimed: u64) -> ScanControl {
        ScanControl { priority, nr_scanned, nr_reclaimed, ..ScanControl::new(nr_to_reclaim, None, true) }
    }

    #[test]
    fn a_pass_that_falls_short_raises_the_priority_and_the_last_one_counts_a_failure() {
        let mut s = sim(SSD);
        // Scanned its target and freed pages: the same priority again.
        assert!(s.balance_pgdat_pass_end(pass(12, 32, 40, 10), 0));
        assert_eq!(s.reclaim.kswapd.sc.take().map(|sc| sc.priority), Some(12));
        // Scanned less than the target: one priority up (lower number).
        assert!(s.balance_pgdat_pass_end(pass(12, 32, 10, 10), 0));
        assert_eq!(s.reclaim.kswapd.sc.take().map(|sc| sc.priority), Some(11));
        // Scanned enough but freed nothing in this pass: up as well.
        assert!(s.balance_pgdat_pass_end(pass(12, 32, 40, 10), 10));
        assert_eq!(s.reclaim.kswapd.sc.take().map(|sc| sc.priority), Some(11));
        // The pass at priority 1 that freed nothing ends the loop with a failure.
        assert!(s.balance_pgdat_pass_end(pass(1, 32, 10, 0), 0));
        assert!(s.reclaim.kswapd.sc.is_none());
        assert_eq!(s.reclaim.kswapd.failures, 1);
    }
}
