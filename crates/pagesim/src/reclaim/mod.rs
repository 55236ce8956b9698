//! Page reclaim: the LRU scanning of kswapd, direct reclaim and memcg limit reclaim
//! (vmscan.rs), the anon/file scan balance of `get_scan_count` (scan_balance/, one policy
//! per kernel variant), and the refault detection that feeds both (workingset.rs).

pub mod scan_balance;
pub mod vmscan;
pub mod workingset;

pub use vmscan::{ScanControl, Step, DEF_PRIORITY, MAX_RECLAIM_RETRIES};
