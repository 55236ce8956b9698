//! mm/vmscan.c: kswapd's priority loop before 3.11 (3.6 `balance_pgdat`): no reclaim target
//! (`nr_to_reclaim` = ULONG_MAX); a pass that freed SWAP_CLUSTER_MAX pages starts over at
//! DEF_PRIORITY; below DEF_PRIORITY - 2 kswapd naps in `congestion_wait` unless a zone is
//! under its min watermark. 3.11 (Mel Gorman's kswapd rework) replaced it with
//! modern.rs.

use crate::engine::Sim;
use crate::mm::vmstat::Counter;
use crate::reclaim::scan_balance::SWAP_CLUSTER_MAX;
use crate::reclaim::{ScanControl, DEF_PRIORITY};
use crate::units::JIFFY_NS;

/// Whether pre-3.11 kswapd takes its `congestion_wait` nap at the end of a priority pass.
#[derive(Debug, PartialEq, Eq)]
enum NapDecision {
    /// Priority still at DEF_PRIORITY - 2 or above, or nothing scanned: no nap.
    NotTroubled,
    /// Troubled and free memory above min: `congestion_wait(BLK_RW_ASYNC, HZ/10)`.
    Naps,
    /// Troubled, but a zone is under its min watermark (`has_under_min_watermark_zone`):
    /// kswapd keeps reclaiming (`kswapd_skip_congestion_wait`).
    SkippedUnderMin,
}

/// `balance_pgdat` (3.6): after a pass below DEF_PRIORITY - 2 that scanned something,
/// kswapd naps unless free memory fails the min watermark, which `__zone_watermark_ok`
/// does at `free <= min` already.
fn kswapd_nap_pre_3_11(sc: &ScanControl, free: u64, min: u64) -> NapDecision {
    if sc.nr_scanned == 0 || sc.priority + 2 >= DEF_PRIORITY {
        NapDecision::NotTroubled
    } else if free <= min {
        NapDecision::SkippedUnderMin
    } else {
        NapDecision::Naps
    }
}

impl Sim {
    /// The end of one priority pass of `balance_pgdat` before 3.11 (3.6).
    ///
    /// Once the pass has freed SWAP_CLUSTER_MAX pages kswapd starts over at DEF_PRIORITY
    /// ("so kswapd doesn't build up large priorities"): each restart is a small
    /// shrink_lruvec and so a small block plug, and swap-out goes to the disk in batches of
    /// tens of pages. Below DEF_PRIORITY - 2 with no zone under its min watermark, kswapd
    /// "takes a nap": `congestion_wait(BLK_RW_ASYNC, HZ/10)`, which sleeps 100 ms unless a
    /// congested device queue clears first (the engine wakes it then). Meanwhile allocations
    /// fall to the min watermark and the faulting task reclaims for itself.
    /// Returns whether kswapd goes on (false: it naps).
    pub(super) fn balance_pgdat_pass_end_pre_3_11(&mut self, mut sc: ScanControl) -> bool {
        if self.balanced() {
            return true;
        }
        let nap = match kswapd_nap_pre_3_11(&sc, self.mm.nr_free(), self.tun.wmark.min) {
            NapDecision::Naps => true,
            NapDecision::SkippedUnderMin => {
                self.mm.vmstat.add(Counter::KswapdSkipCongestionWait, 1);
                false
            }
            NapDecision::NotTroubled => false,
        };
        if sc.nr_reclaimed >= SWAP_CLUSTER_MAX {
            // loop_again: a fresh scan control at DEF_PRIORITY.
        } else if sc.priority > 0 {
            sc.priority -= 1;
            self.reclaim.kswapd.sc = Some(sc);
        } else if sc.nr_reclaimed == 0 {
            self.reclaim.kswapd.failures += 1;
        }
        if nap {
            self.mm.vmstat.add(Counter::KswapdCongestionWait, 1);
            self.reclaim.kswapd.napping = true;
            let k = self.kswapd_thread();
            self.block(k);
            // HZ/10 with HZ = 250.
            self.wake(k, self.sched.now + 25 * JIFFY_NS);
        }
        !nap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pre_3_11_kswapd_naps_below_priority_10_unless_free_memory_fails_the_min_watermark() {
        let sc = |priority, nr_scanned| ScanControl { priority, nr_scanned, ..ScanControl::new(32, None, true) };
        // DEF_PRIORITY 12: passes at 12, 11 and 10 never nap, nor one that scanned nothing.
        assert_eq!(kswapd_nap_pre_3_11(&sc(10, 100), 500, 1000), NapDecision::NotTroubled);
        assert_eq!(kswapd_nap_pre_3_11(&sc(9, 0), 5000, 1000), NapDecision::NotTroubled);
        assert_eq!(kswapd_nap_pre_3_11(&sc(9, 100), 1001, 1000), NapDecision::Naps);
        // At exactly the min watermark the zone already fails it.
        assert_eq!(kswapd_nap_pre_3_11(&sc(9, 100), 1000, 1000), NapDecision::SkippedUnderMin);
        assert_eq!(kswapd_nap_pre_3_11(&sc(0, 100), 10, 1000), NapDecision::SkippedUnderMin);
    }
}
