//! kswapd's state ([`Kswapd`]) and the version of its `balance_pgdat` loop
//! (`KswapdLoop`, read from the profile once). The loop itself is engine/kswapd/.

use super::scan_balance::SWAP_CLUSTER_MAX;
use super::ScanControl;
use crate::profile::Profile;

/// The version of `balance_pgdat`'s priority loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KswapdLoop {
    /// 3.6's: no target, restart at DEF_PRIORITY after SWAP_CLUSTER_MAX pages, naps.
    Pre311,
    /// 3.11+: reclaim to the high watermark, raise priority when a pass falls short.
    Modern,
}

impl KswapdLoop {
    pub(crate) fn of(profile: &Profile) -> KswapdLoop {
        if profile.kswapd_pre_3_11 {
            KswapdLoop::Pre311
        } else {
            KswapdLoop::Modern
        }
    }

    /// `sc.nr_to_reclaim` of a new `balance_pgdat` scan control: before 3.11 none
    /// (ULONG_MAX; a pass ends once SWAP_CLUSTER_MAX pages are freed), then the high
    /// watermark.
    pub(crate) fn nr_to_reclaim(self, high_wmark: u64) -> u64 {
        match self {
            KswapdLoop::Pre311 => u64::MAX,
            KswapdLoop::Modern => high_wmark.max(SWAP_CLUSTER_MAX),
        }
    }
}

/// kswapd's state.
#[derive(Debug, Default)]
pub struct Kswapd {
    pub running: bool,
    pub sleeping: bool,
    pub throttled: bool,
    /// In `congestion_wait` (pre-3.11 balance_pgdat's nap): wakeups do not reach it.
    pub napping: bool,
    pub sc: Option<ScanControl>,
    pub failures: u32,
    pub cpu_ns: u64,
    pub awake_since: u64,
    pub awake_ns: u64,
    pub wakeups: u64,
}
