//! Page reclaim: the LRU scanning of direct reclaim, memcg limit reclaim and kswapd
//! (vmscan.rs), the kswapd thread and its priority loop (kswapd/, one file per version of
//! `balance_pgdat`), the anon/file scan balance of `get_scan_count` (scan_balance/, one
//! policy per kernel variant), and the refault detection that feeds both (workingset.rs).

pub mod kswapd;
pub mod scan_balance;
pub mod vmscan;
pub mod workingset;

pub use kswapd::Kswapd;
pub use vmscan::{ScanControl, Step, DEF_PRIORITY, MAX_RECLAIM_RETRIES};

/// Reclaim's state: kswapd, the get_scan_count policy, and the throttling of reclaimers
/// on writeback progress (`reclaim_throttle`).
pub(crate) struct Reclaim {
    pub(crate) kswapd: Kswapd,
    pub(crate) kswapd_loop: kswapd::KswapdLoop,
    pub(crate) scan_balance: scan_balance::ScanBalance,
    /// Reused buffer for pages isolated by shrink_inactive_list.
    pub(crate) isolate_buf: Vec<u32>,
    /// Writebacks completed, and the count at which throttled threads are released.
    pub(crate) nr_written: u64,
    pub(crate) throttle_target: u64,
}
