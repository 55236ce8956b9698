//! kswapd, the node's background reclaim thread (mm/vmscan.c `kswapd`, `wakeup_kswapd`,
//! `balance_pgdat`, `kswapd_try_to_sleep`): woken below the low watermark, it reclaims
//! until free memory is above the high watermark, one priority pass (one `shrink_node`)
//! per step, and sleeps; it gives up after MAX_RECLAIM_RETRIES passes that freed nothing
//! (`kswapd_failures`) until a direct reclaimer succeeds.
//!
//! What a pass aims at and what follows it changed in 3.11: `KswapdLoop` is that
//! version's choice, read from the profile once; each variant is a file (pre_3_11.rs,
//! modern.rs). The LRU scanning itself is engine/vmscan.rs.

mod modern;
mod pre_3_11;

use crate::engine::Sim;
use crate::mm::vmstat::Counter;
use crate::mm::LruList;
use crate::reclaim::kswapd::KswapdLoop;
use crate::reclaim::scan_balance::SWAP_CLUSTER_MAX;
use crate::reclaim::{ScanControl, MAX_RECLAIM_RETRIES};

impl Sim {
    /// Wakes kswapd (`wakeup_kswapd`) unless it gave up (`kswapd_failures`). The allocator
    /// calls it below the low watermark, which is when `mm_vmscan_wakeup_kswapd` is traced,
    /// awake or not; `mm_vmscan_kswapd_wake` marks kswapd leaving its sleep.
    pub fn wake_kswapd(&mut self) {
        self.trace(crate::trace::Kind::WakeupKswapd { order: 0 });
        if self.reclaim.kswapd.failures >= MAX_RECLAIM_RETRIES
            || !self.reclaim.kswapd.sleeping
            || self.reclaim.kswapd.throttled
            || self.reclaim.kswapd.napping
        {
            return;
        }
        self.reclaim.kswapd.sleeping = false;
        self.reclaim.kswapd.wakeups += 1;
        self.reclaim.kswapd.awake_since = self.sched.now;
        let k = self.kswapd_thread();
        self.trace_as(k, crate::trace::Kind::KswapdWake { order: 0 });
        self.wake_up(k);
    }

    fn balanced(&self) -> bool {
        self.mm.nr_free() > self.tun.wmark.high
    }

    fn kswapd_sleep(&mut self) {
        let k = self.kswapd_thread();
        self.trace_as(k, crate::trace::Kind::KswapdSleep);
        self.reclaim.kswapd.sleeping = true;
        self.reclaim.kswapd.awake_ns += self.sched.now.saturating_sub(self.reclaim.kswapd.awake_since);
        // clear_pgdat_congested
        self.mm.pgdat_writeback = false;
        self.mm.pgdat_dirty = false;
    }

    /// kswapd's thread: `balance_pgdat` one priority level at a time.
    pub fn balance_pgdat(&mut self, cpu: u32) {
        self.reclaim.kswapd.throttled = false;
        self.reclaim.kswapd.napping = false;
        let start = self.sched.now;
        let mut limit = self.burst_limit(start);
        loop {
            // I/O completions (interrupts) due since the last pass run before the next one.
            limit = limit.min(self.burst_limit(start));
            if self.sched.now >= limit {
                let k = self.kswapd_thread();
                self.wake(k, self.sched.now);
                return;
            }
            let mut sc = match self.reclaim.kswapd.sc.take() {
                Some(sc) => sc,
                None => {
                    if self.balanced() || self.reclaim.kswapd.failures >= MAX_RECLAIM_RETRIES {
                        self.kswapd_sleep();
                        return;
                    }
                    self.mm.vmstat.add(Counter::PageOutRun, 1);
                    let w = self.reclaim.kswapd_loop.nr_to_reclaim(self.tun.wmark.high);
                    ScanControl::new(w, None, true)
                }
            };
            if self.balanced() {
                self.reclaim.kswapd.failures = 0;
                continue;
            }
            // kswapd_age_node: background aging of anon lists.
            if self.swap.free_pages() > 0 {
                self.mm.mem_cgroup_flush_stats(self.sched.now, self.profile.memcg_stats_flush_ns);
                for m in 0..self.mm.memcgs.len() as u16 {
                    if self.inactive_is_low(m, false) {
                        self.shrink_active_list(m, LruList::ActiveAnon, SWAP_CLUSTER_MAX, &mut sc);
                    }
                }
            }
            sc.nr_scanned = 0;
            let before = sc.nr_reclaimed;
            let k = self.kswapd_thread();
            self.set_swap_lane(k);
            // Soft limit reclaim (cgroup v1) before each pass over the node.
            let (soft, _) = self.memcg1_soft_limit_reclaim(cpu);
            sc.nr_reclaimed += soft;
            self.shrink_node(&mut sc, cpu);
            if let Some(dev) = sc.wait_request.take() {
                self.reclaim.kswapd.sc = Some(sc);
                let k = self.kswapd_thread();
                self.get_request_wait(k, dev);
                return;
            }
            // The end of a priority pass: what comes next is the loop's version's.
            let go_on = match self.reclaim.kswapd_loop {
                KswapdLoop::Pre311 => self.balance_pgdat_pass_end_pre_3_11(sc),
                KswapdLoop::Modern => self.balance_pgdat_pass_end(sc, before),
            };
            if !go_on {
                return;
            }
        }
    }
}
