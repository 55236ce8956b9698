//! Page reclaim: its state and policies. [`ScanControl`] (`struct scan_control`), kswapd's
//! state and the version of its loop (kswapd.rs), the anon/file scan balance of
//! `get_scan_count` (scan_balance/, one policy per kernel variant), and the throttling of
//! reclaimers. The reclaim paths themselves scan LRU lists, unmap, write to swap and free,
//! so they are in engine/: vmscan.rs (direct, memcg and kswapd's LRU scanning), kswapd/
//! (`balance_pgdat`, one file per version) and workingset.rs (refault detection).

pub mod kswapd;
pub mod scan_balance;

use crate::ids::Pfn;
pub use crate::mm::MAX_RECLAIM_RETRIES;
pub use kswapd::Kswapd;
use scan_balance::{Prepared, SWAP_CLUSTER_MAX};

/// Reclaim's state: kswapd, the get_scan_count policy, and the throttling of reclaimers
/// on writeback progress (`reclaim_throttle`).
pub use crate::profile::MemcgWalk;

pub(crate) struct Reclaim {
    pub(crate) kswapd: Kswapd,
    pub(crate) kswapd_loop: kswapd::KswapdLoop,
    pub(crate) scan_balance: scan_balance::ScanBalance,
    /// Reused buffer for pages isolated by shrink_inactive_list.
    pub(crate) isolate_buf: Vec<Pfn>,
    /// Reused buffer for the lruvecs `lru_note_cost` charges (a memcg and its ancestors).
    pub(crate) cost_chain: Vec<usize>,
    /// Writebacks completed, and the count at which throttled threads are released.
    pub(crate) nr_written: u64,
    /// Pages the last reclaim step's job had freed (for `mm_vmscan_direct_reclaim_end`).
    pub(crate) job_reclaimed: u64,
    pub(crate) throttle_target: u64,
    /// `mem_cgroup_reclaim_iter`: where limit reclaim of a subtree left off, by (reclaim
    /// root, priority; the priority is 0 where the profile keeps one position per root).
    pub(crate) iter_pos: std::collections::BTreeMap<(u16, u32), u16>,
}

/// `DEF_PRIORITY`.
pub const DEF_PRIORITY: u32 = 12;

/// `struct scan_control`.
#[derive(Clone, Debug)]
pub struct ScanControl {
    pub nr_to_reclaim: u64,
    pub nr_reclaimed: u64,
    pub nr_scanned: u64,
    pub priority: u32,
    /// Memcg limit reclaim of this memcg, or global reclaim.
    pub target_memcg: Option<u16>,
    pub kswapd: bool,
    pub force_deactivate: bool,
    /// What `prepare_scan_count` decided for this pass (5.5+ scan balance), else `None`.
    pub prepared: Option<Prepared>,
    pub skipped_deactivate: bool,
    // Per shrink_node batch statistics (`sc->nr`).
    pub nr_taken: u64,
    pub nr_writeback: u64,
    pub nr_immediate: u64,
    /// File pages taken, file pages dirty or under writeback, dirty and not yet under
    /// writeback, and under writeback with PG_reclaim (`sc->nr.file_taken`, `.dirty`,
    /// `.unqueued_dirty`, `.congested`).
    pub nr_file_taken: u64,
    pub nr_dirty: u64,
    pub nr_unqueued_dirty: u64,
    pub nr_congested: u64,
    /// Pages scanned by this reclaim over all its priority levels (`total_scanned` of
    /// `do_try_to_free_pages`, for the ≤4.10 flusher kick).
    pub total_scanned: u64,
    /// The device of the file the reclaiming task is writing to, if it reclaims from
    /// inside write(2) (`current->backing_dev_info`, ≤3.x `may_write_to_queue`).
    pub own_bdi: Option<crate::ids::DevId>,
    /// A batch asked this reclaimer to throttle on writeback (`reclaim_throttle`, cgroup v1).
    pub throttle_writeback: bool,
    /// The reclaim of a readahead folio's charge (`readahead_gfp_mask`: __GFP_NORETRY). Its
    /// pass stops at the batch that asks it to throttle; once it has throttled, the rest of
    /// the pass is the task's reclaim job, which goes on at the same priority and ends as
    /// the pass does (no retry after it, no OOM: [`crate::engine::Sim::alloc_folio_noretry`]).
    pub noretry: bool,
    /// `sc->gfp_mask & __GFP_FS`: false for a readahead charge's reclaim from 5.8
    /// (`Profile::ra_alloc_nofs`, GFP_NOFS), which may not wait on or write through the
    /// filesystem (`may_enter_fs`).
    pub gfp_fs: bool,
    /// Its `mm_vmscan_direct_reclaim_begin` was traced.
    pub begun: bool,
    /// Pages whose writeback this reclaim waits for before trying them again (cgroup v1
    /// limit reclaim, `shrink_folio_list` case 3), last found last.
    pub waited: Vec<Pfn>,
    /// A write found its device's request queue full (`get_request_wait`): the reclaimer
    /// stops here and sleeps until that device frees a request, then resumes at the same
    /// priority.
    pub wait_request: Option<crate::ids::DevId>,
    /// A memcg within its memory.low was passed over (or scanned only above its low), so
    /// a reclaim that frees nothing is retried with low protection off
    /// (`sc->memcg_low_skipped`, `sc->memcg_low_reclaim`).
    pub memcg_low_skipped: bool,
    pub memcg_low_reclaim: bool,
    /// This is `reclaim_high` of memory.high (`mem_cgroup_handle_over_high`): it never
    /// ends in the OOM killer, and its end decides the task's penalty sleep.
    pub reclaim_high: bool,
    /// Soft-limit reclaim (`mem_cgroup_shrink_node`): one lruvec scanned at priority 0.
    pub soft_limit: bool,
    /// 6.12: walk the whole memcg tree rather than on from the shared round-robin position
    /// (set for the retry of a direct or limit reclaim that freed nothing).
    pub memcg_full_walk: bool,
}

impl ScanControl {
    pub(crate) fn new(nr_to_reclaim: u64, target_memcg: Option<u16>, kswapd: bool) -> Self {
        ScanControl {
            nr_to_reclaim,
            nr_reclaimed: 0,
            nr_scanned: 0,
            priority: DEF_PRIORITY,
            target_memcg,
            kswapd,
            force_deactivate: false,
            prepared: None,
            skipped_deactivate: false,
            nr_taken: 0,
            nr_writeback: 0,
            nr_immediate: 0,
            nr_file_taken: 0,
            nr_dirty: 0,
            nr_unqueued_dirty: 0,
            nr_congested: 0,
            total_scanned: 0,
            own_bdi: None,
            throttle_writeback: false,
            noretry: false,
            gfp_fs: true,
            begun: false,
            waited: Vec::new(),
            wait_request: None,
            memcg_low_skipped: false,
            memcg_low_reclaim: false,
            reclaim_high: false,
            soft_limit: false,
            memcg_full_walk: false,
        }
    }
    /// `do_try_to_free_pages`' retry (5.5+, with the inactive:active decision made at the
    /// reclaim root: `prepared`): a pass that freed nothing while it skipped deactivation
    /// (the lists looked balanced) starts again from the first priority with deactivation
    /// forced. Returns whether it does. Before 5.5 each lruvec decided for itself, and a
    /// pass that freed nothing was not retried.
    pub(crate) fn retry_forcing_deactivation(&mut self) -> bool {
        if self.prepared.is_none() || self.nr_reclaimed > 0 || !self.skipped_deactivate || self.force_deactivate {
            return false;
        }
        self.priority = DEF_PRIORITY;
        self.force_deactivate = true;
        self.skipped_deactivate = false;
        true
    }

    /// `do_try_to_free_pages`' retries once a pass down the priorities freed nothing, in
    /// its order: 6.10+ (`full_walk`: `MemcgWalk::RoundRobinPerRoot`, "mm: vmscan: restore
    /// incremental cgroup iteration") once more over the whole memcg tree
    /// (`memcg_full_walk`), then with deactivation forced
    /// ([`ScanControl::retry_forcing_deactivation`]), then with memory.low protection off
    /// (`memcg_low_skipped`). Returns whether the reclaim starts again at DEF_PRIORITY. Every
    /// caller takes them: the reclaim of a charge, of a page allocation, and of a readahead
    /// folio's __GFP_NORETRY charge alike.
    pub(crate) fn retry_failed_pass(&mut self, full_walk: bool) -> bool {
        if self.nr_reclaimed == 0 && full_walk && !self.memcg_full_walk {
            self.priority = DEF_PRIORITY;
            self.memcg_full_walk = true;
            return true;
        }
        if self.retry_forcing_deactivation() {
            return true;
        }
        if self.nr_reclaimed == 0 && self.memcg_low_skipped {
            // Untapped memory.low reserves: rather than fail, retry taking them too.
            self.priority = DEF_PRIORITY;
            self.force_deactivate = false;
            self.memcg_low_reclaim = true;
            self.memcg_low_skipped = false;
            return true;
        }
        false
    }

    /// `try_to_free_pages`: global direct reclaim of 32 pages.
    pub fn direct() -> Self {
        Self::new(SWAP_CLUSTER_MAX, None, false)
    }
    /// `try_to_free_mem_cgroup_pages`.
    pub fn memcg(m: u16) -> Self {
        Self::new(SWAP_CLUSTER_MAX, Some(m), false)
    }
    pub(crate) fn global(&self) -> bool {
        self.target_memcg.is_none()
    }

    /// The pass stops after this batch: a write found its device's queue full, or the
    /// readahead charge's pass is to sleep in `reclaim_throttle`.
    pub(crate) fn stops(&self) -> bool {
        self.wait_request.is_some() || (self.noretry && self.throttle_writeback)
    }
}

/// Outcome of one reclaim step of a task.
pub enum Step {
    Continue,
    Blocked,
    Finished,
}
