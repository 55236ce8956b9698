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
    /// first flush comes at `kernel.memcg_stats_flush_phase` (default half a period). The
    /// run loop calls this before each event (`Sim::run`), so a flush takes the values of
    /// the first event at or after its time; the readers call it too (a burst may pass a
    /// flush time). Before the first flush they read zero, as for a memcg created just
    /// before the workload.
    /// `period` is the profile's `memcg_stats_flush_ns` (0: reclaim reads exact values,
    /// nothing to flush), `now` the time of the read.
    pub fn mem_cgroup_flush_stats(&mut self, now: u64, period: u64) {
        if period == 0 || now < self.next_stats_flush {
            return;
        }
        let last = self.next_stats_flush;
        self.next_stats_flush = last + ((now - last) / period + 1) * period;
        for m in 0..self.memcgs.len() {
            let lru = self.lru_exact(m as u16);
            let (a, f) = self.ws_activate_exact(m);
            let lru_local = self.memcgs[m].lru.evictable_sizes().iter().sum();
            self.memcgs[m].flushed = FlushedStats { lru, ws_activate: [a, f], lru_local };
        }
    }

    /// WORKINGSET_ACTIVATE_{ANON,FILE} of memcg `m` (the node's for the root) as they are
    /// now: its subtree's where lruvec statistics are hierarchical, else its own.
    pub fn ws_activate_exact(&self, m: usize) -> (u64, u64) {
        let of = |c: usize| {
            let e = &self.memcgs[c].events;
            (e.get(Counter::WorkingsetActivateAnon), e.get(Counter::WorkingsetActivateFile))
        };
        if m == 0 {
            (self.vmstat.get(Counter::WorkingsetActivateAnon), self.vmstat.get(Counter::WorkingsetActivateFile))
        } else if self.hierarchical_stats {
            self.subtrees[m].iter().map(|&c| of(c as usize)).fold((0, 0), |(a, f), (x, y)| (a + x, f + y))
        } else {
            of(m)
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

    /// `mem_cgroup_calculate_protection(root, m)` (`page_counter_calculate_protection`):
    /// memcg `m`'s effective memory.min and memory.low for a reclaim of `root`'s subtree.
    /// A child of the reclaim root has its own settings; deeper, a memcg's share of its
    /// parent's effective protection is in proportion to its protected usage
    /// (`min(usage, setting)`) among its siblings' when they claim more than the parent
    /// has (`effective_protection`, without the `memory_recursiveprot` mount option).
    /// The walk is in pre-order, so a parent's values are fresh when its children's are
    /// computed. The reclaim root itself is not protected (`mem_cgroup_unprotected`).
    pub fn mem_cgroup_calculate_protection(&mut self, root: u16, m: u16) {
        let mi = m as usize;
        if m == root || m == 0 || self.memcgs[mi].usage == 0 {
            return;
        }
        let parent = self.memcgs[mi].parent;
        if parent == root {
            let mc = &mut self.memcgs[mi];
            mc.emin = mc.min;
            mc.elow = mc.low;
            return;
        }
        let (mut sib_min, mut sib_low) = (0u64, 0u64);
        for c in self.memcgs.iter().skip(1).filter(|c| c.parent == parent) {
            sib_min += c.usage.min(c.min);
            sib_low += c.usage.min(c.low);
        }
        let p = &self.memcgs[parent as usize];
        let (p_emin, p_elow) = (p.emin, p.elow);
        let effective = |usage: u64, setting: u64, parent_effective: u64, siblings: u64| {
            let protected = usage.min(setting);
            if siblings > parent_effective {
                (protected as u128 * parent_effective as u128 / siblings as u128) as u64
            } else {
                protected
            }
        };
        let mc = &mut self.memcgs[mi];
        mc.emin = effective(mc.usage, mc.min, p_emin, sib_min);
        mc.elow = effective(mc.usage, mc.low, p_elow, sib_low);
    }

    /// `mem_cgroup_protection`: the (emin, elow) reclaim of `root` must respect in `m`;
    /// none for the reclaim root itself and for the root memcg.
    pub fn mem_cgroup_protection(&self, root: u16, m: u16) -> (u64, u64) {
        if m == root || m == 0 {
            return (0, 0);
        }
        let mc = &self.memcgs[m as usize];
        (mc.emin, mc.elow)
    }

    /// `mem_cgroup_below_min` / `mem_cgroup_below_low`: whether `m`'s usage is within its
    /// effective min (low) for a reclaim of `root`.
    pub fn mem_cgroup_below(&self, root: u16, m: u16) -> (bool, bool) {
        if m == root || m == 0 {
            return (false, false);
        }
        let mc = &self.memcgs[m as usize];
        (mc.emin >= mc.usage, mc.elow >= mc.usage)
    }

    /// `soft_limit_excess`: pages of `m`'s usage above its v1 soft limit.
    pub fn soft_limit_excess(&self, m: u16) -> u64 {
        let mc = &self.memcgs[m as usize];
        mc.usage.saturating_sub(mc.soft_limit)
    }

    /// `mem_cgroup_largest_soft_limit_node`: the memcg furthest over its soft limit (the
    /// kernel keeps them in a tree sorted by excess, updated as charges come and go; this
    /// reads the excess exactly), the lowest index on a tie; `None` when none is over.
    pub fn largest_soft_limit_excess(&self, skip: &[u16]) -> Option<u16> {
        (1..self.memcgs.len() as u16)
            .filter(|m| !skip.contains(m))
            .map(|m| (self.soft_limit_excess(m), m))
            .filter(|&(e, _)| e > 0)
            .max_by_key(|&(e, m)| (e, std::cmp::Reverse(m)))
            .map(|(_, m)| m)
    }

    /// The largest overage of memory.high among `m` and its ancestors, in the kernel's
    /// fixed point (`mem_find_max_overage`: (usage - high) / high << 20).
    pub fn mem_find_max_overage(&self, m: u16) -> u64 {
        self.ancestry(m)
            .map(|c| {
                let mc = &self.memcgs[c as usize];
                if mc.usage <= mc.high {
                    0
                } else {
                    let high = mc.high.max(1);
                    (((mc.usage - high) as u128) << 20).checked_div(high as u128).unwrap_or(0) as u64
                }
            })
            .max()
            .unwrap_or(0)
    }

    /// The first of `m` and its ancestors whose usage is above its memory.high.
    pub fn over_high(&self, m: u16) -> Option<u16> {
        self.ancestry(m).find(|&c| {
            let mc = &self.memcgs[c as usize];
            mc.usage > mc.high
        })
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
