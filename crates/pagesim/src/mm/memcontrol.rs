//! Models the parts of mm/memcontrol.c that reclaim and the counters read: event counting
//! into a memcg and the node at once (`count_memcg_events` + `count_vm_events`), and the
//! rstat flush of memcg statistics (`mem_cgroup_flush_stats`) on the profiles whose
//! reclaim reads flushed rather than exact values. The memcg itself (`struct mem_cgroup`:
//! its LRU lists, usage, limit, workingset state) is [`crate::mm::Memcg`] in mm/mod.rs; the
//! per-lruvec balance statistics belong to the scan-balance policies (reclaim/scan_balance/).
//! Charging is in engine/page_alloc.rs, the swap-in charge in engine/memory.rs
//! (`swapin_charge_room`), zswap's in engine/zswap.rs.

use crate::mm::vmstat::Counter;
use crate::mm::{FlushedStats, Mm};

impl Mm {
    /// The periodic memcg stats flush (mm/memcontrol.c `flush_memcg_stats_dwork`): every
    /// `memcg_stats_flush_ns` the values reclaim reads are brought up to date. The flusher
    /// runs on its own clock, so its phase relative to a workload's start is arbitrary: the
    /// first flush comes at half a period, its expected time. Run lazily by the readers:
    /// the first read after a flush time takes the values of that moment (reads happen at
    /// every reclaim step, so that is soon after it). Before the first flush they read zero,
    /// as for a memcg created just before the workload.
    /// `period` is the profile's `memcg_stats_flush_ns` (0: reclaim reads exact values,
    /// nothing to flush), `now` the time of the read.
    pub fn mem_cgroup_flush_stats(&mut self, now: u64, period: u64) {
        if period == 0 || now < self.next_stats_flush {
            return;
        }
        let phase = period / 2;
        self.next_stats_flush = phase + ((now - phase) / period + 1) * period;
        for m in 0..self.memcgs.len() {
            let lru = self.lru_exact(m as u16);
            let (a, f) = self.ws_activate_exact(m);
            self.memcgs[m].flushed = FlushedStats { lru, ws_activate: [a, f] };
        }
    }

    /// WORKINGSET_ACTIVATE_{ANON,FILE} of memcg `m` (the node's for the root) as they are now.
    pub fn ws_activate_exact(&self, m: usize) -> (u64, u64) {
        if m == 0 {
            (self.vmstat.get(Counter::WorkingsetActivateAnon), self.vmstat.get(Counter::WorkingsetActivateFile))
        } else {
            let e = &self.memcgs[m].events;
            (e.get(Counter::WorkingsetActivateAnon), e.get(Counter::WorkingsetActivateFile))
        }
    }

    /// The NR_WRITEBACK accounting of `folio_start_writeback` (`start`) and
    /// `folio_end_writeback` for folio `f`, in the node and its memcg.
    pub(crate) fn account_writeback(&mut self, f: crate::ids::Pfn, start: bool) {
        let nr = self.frames.nr_pages(f);
        let m = &mut self.memcgs[self.frames.memcg[f] as usize];
        if start {
            self.nr_writeback += nr;
            m.nr_writeback += nr;
        } else {
            self.nr_writeback -= nr;
            m.nr_writeback -= nr;
        }
    }

    /// Counts an event globally and in a memcg.
    #[inline]
    pub fn count(&mut self, c: Counter, memcg: u16, n: u64) {
        self.vmstat.add(c, n);
        if memcg != 0 {
            self.memcgs[memcg as usize].events.add(c, n);
        }
    }
}
