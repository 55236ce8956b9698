//! Models include/linux/vm_event_item.h and mm/vmstat.c: the event counters of
//! /proc/vmstat under their kernel names ([`Counter`]), the state items a run reports
//! at its end ([`Gauge`]: `nr_*`, zswap's and zram's statistics), and the LRU sizes reclaim
//! reads (`node_page_state`, `lruvec_page_state`: `Mm::node_lru`, `Mm::lru_view`).
//!
//! The model only bumps [`Counter`]s; formatting lives in the report and the front ends.

use crate::mm::Mm;
use crate::mm::{self};

macro_rules! counters {
    ($($variant:ident => $name:literal),* $(,)?) => {
        /// A /proc/vmstat event counter (or memory.stat counter for a memcg).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u8)]
        pub enum Counter { $($variant),* }

        /// Number of counters.
        pub const NR_COUNTERS: usize = [$($name),*].len();

        /// The /proc/vmstat name of each counter, in enum order.
        pub const COUNTER_NAMES: [&str; NR_COUNTERS] = [$($name),*];

        impl Counter {
            /// Every counter, in enum order.
            pub const ALL: [Counter; NR_COUNTERS] = [$(Counter::$variant),*];
        }
    };
}

impl Counter {
    /// The /proc/vmstat name.
    pub fn name(self) -> &'static str {
        COUNTER_NAMES[self as usize]
    }

    /// The counter of that /proc/vmstat name.
    pub fn from_name(name: &str) -> Option<Counter> {
        COUNTER_NAMES.iter().position(|&n| n == name).map(|i| Counter::ALL[i])
    }
}

/// A state value read at the end of a run (a /proc/vmstat `nr_*` item, or a zswap/zram
/// statistic under its debugfs or sysfs name), reported beside the event counters.
macro_rules! gauges {
    ($($variant:ident => $name:literal),* $(,)?) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Gauge { $($variant),* }

        impl Gauge {
            /// Every gauge, in enum order.
            pub const ALL: [Gauge; [$($name),*].len()] = [$(Gauge::$variant),*];

            /// Its name in the report (the kernel's where it has one).
            pub fn name(self) -> &'static str {
                match self { $(Gauge::$variant => $name),* }
            }

            /// The gauge of that name.
            pub fn from_name(name: &str) -> Option<Gauge> {
                Gauge::ALL.iter().copied().find(|g| g.name() == name)
            }
        }
    };
}

gauges! {
    NrFreePages => "nr_free_pages",
    NrSwapCached => "nr_swapcached",
    NrInactiveAnon => "nr_inactive_anon",
    NrActiveAnon => "nr_active_anon",
    NrInactiveFile => "nr_inactive_file",
    NrActiveFile => "nr_active_file",
    NrFilePages => "nr_file_pages",
    NrDirty => "nr_dirty",
    NrWriteback => "nr_writeback",
    NrDirtyThreshold => "nr_dirty_threshold",
    NrDirtyBackgroundThreshold => "nr_dirty_background_threshold",
    // pagesim's: swap slots in use (SwapTotal - SwapFree of /proc/meminfo, in pages).
    NrSwapUsed => "nr_swap_used",
    // Reported only when zswap or a zram device is configured.
    NrZspages => "nr_zspages",
    // zswap's debugfs statistics; reported only when zswap is enabled.
    ZswapPoolTotalSize => "zswap_pool_total_size",
    ZswapStoredPages => "zswap_stored_pages",
    ZswapSameFilledPages => "zswap_same_filled_pages",
    ZswapPoolLimitHit => "zswap_pool_limit_hit",
    ZswapWrittenBackPages => "zswap_written_back_pages",
    ZswapRejectCompressPoor => "zswap_reject_compress_poor",
    ZswapRejectAllocFail => "zswap_reject_alloc_fail",
    ZswapRejectReclaimFail => "zswap_reject_reclaim_fail",
    // zram's mm_stat, summed over the zram devices; reported only when one is configured.
    ZramOrigDataSize => "zram_orig_data_size",
    ZramComprDataSize => "zram_compr_data_size",
    ZramMemUsedTotal => "zram_mem_used_total",
    ZramSamePages => "zram_same_pages",
    ZramHugePages => "zram_huge_pages",
}

counters! {
    PgFault => "pgfault",
    PgMajFault => "pgmajfault",
    PswpIn => "pswpin",
    PswpOut => "pswpout",
    PgpgIn => "pgpgin",
    PgpgOut => "pgpgout",
    SwapRa => "swap_ra",
    SwapRaHit => "swap_ra_hit",
    PgScanKswapd => "pgscan_kswapd",
    PgScanDirect => "pgscan_direct",
    PgScanAnon => "pgscan_anon",
    PgScanFile => "pgscan_file",
    PgStealKswapd => "pgsteal_kswapd",
    PgStealDirect => "pgsteal_direct",
    PgStealAnon => "pgsteal_anon",
    PgStealFile => "pgsteal_file",
    PgRefill => "pgrefill",
    PgActivate => "pgactivate",
    PgDeactivate => "pgdeactivate",
    PgRotated => "pgrotated",
    PgAlloc => "pgalloc_normal",
    PgFree => "pgfree",
    WorkingsetRefaultAnon => "workingset_refault_anon",
    WorkingsetRefaultFile => "workingset_refault_file",
    WorkingsetActivateAnon => "workingset_activate_anon",
    WorkingsetActivateFile => "workingset_activate_file",
    WorkingsetRestoreAnon => "workingset_restore_anon",
    WorkingsetRestoreFile => "workingset_restore_file",
    // Page-cache xarray nodes of shadow entries the shadow shrinker freed (mm/workingset.c
    // `shadow_lru_isolate`).
    WorkingsetNodereclaim => "workingset_nodereclaim",
    AllocStall => "allocstall",
    PageOutRun => "pageoutrun",
    // 3.x balance_pgdat: kswapd skipped its congestion_wait nap because a zone was under
    // its min watermark. The naps themselves have no kernel counter; pagesim counts them
    // as kswapd_congestion_wait.
    KswapdSkipCongestionWait => "kswapd_skip_congestion_wait",
    KswapdCongestionWait => "kswapd_congestion_wait",
    // pagesim's: naps that a write request freed below the congestion-off threshold ended
    // before HZ/10 (clear_bdi_congested wakes congestion_wait; see device/queue.rs).
    KswapdCongestionWaitWoken => "kswapd_congestion_wait_woken",
    // pagesim's: ≤2.6.36 direct reclaimers' congestion_wait naps.
    DirectCongestionWait => "direct_congestion_wait",
    NrVmscanWrite => "nr_vmscan_write",
    // Dirty file pages reclaim found and tagged PG_reclaim instead of writing (3.2+).
    NrVmscanImmediateReclaim => "nr_vmscan_immediate_reclaim",
    // Pages dirtied (file pages newly dirty) and pages whose writeback ended (file and swap).
    NrDirtied => "nr_dirtied",
    NrWritten => "nr_written",
    OomKill => "oom_kill",
    ThpFaultAlloc => "thp_fault_alloc",
    KswapdLowWmarkHitQuickly => "kswapd_low_wmark_hit_quickly",
    KswapdHighWmarkHitQuickly => "kswapd_high_wmark_hit_quickly",
    // pagesim's own file readahead counters (the kernel has tracepoints, not counters):
    // readahead windows submitted and the pages they newly read; pages read(2) copied to
    // the user; pages the read or fault path read alone because no readahead brought them;
    // readahead pages evicted before anyone read or mapped them (readahead thrashing);
    // folios added to the page cache (pages read over folios: their mean size).
    FileRaWindows => "file_ra_windows",
    FileRaPages => "file_ra_pages",
    FileReadPages => "file_read_pages",
    FileReadSingle => "file_read_single",
    // pagesim's: pages write(2) copied into the page cache.
    FileWritePages => "file_write_pages",
    RaEvictedUnused => "ra_evicted_unused",
    FileFolios => "file_folios",
    // zswap: successful store, load, writeback of an entry (5.19+; zswpwb 6.8+).
    Zswpin => "zswpin",
    Zswpout => "zswpout",
    Zswpwb => "zswpwb",
    // 6.12+ zeromap: zero page read back / not written.
    SwpinZero => "swpin_zero",
    SwpoutZero => "swpout_zero",
    // Anon mTHP (6.8+): the per-size stats of /sys/kernel/mm/transparent_hugepage/
    // hugepages-<size>kB/stats/, summed over the sizes below PMD size, in folios: large
    // folios a fault took, orders a fault fell back from (allocation or charge failed;
    // a charge failure counts in both), folios swapped out whole, folios split because
    // swap had no aligned run for them, folios read back whole, orders a swap-in fell back
    // from (allocation or charge failed; a charge failure counts in both), folios split.
    MthpAnonFaultAlloc => "mthp_anon_fault_alloc",
    MthpAnonFaultFallback => "mthp_anon_fault_fallback",
    MthpAnonFaultFallbackCharge => "mthp_anon_fault_fallback_charge",
    MthpSwpout => "mthp_swpout",
    MthpSwpoutFallback => "mthp_swpout_fallback",
    MthpSwpin => "mthp_swpin",
    MthpSwpinFallback => "mthp_swpin_fallback",
    MthpSwpinFallbackCharge => "mthp_swpin_fallback_charge",
    MthpSplit => "mthp_split",
}

/// A set of counters (global /proc/vmstat, or one memcg's memory.stat events).
#[derive(Clone, Debug)]
pub struct Counters(pub [u64; NR_COUNTERS]);

impl Default for Counters {
    fn default() -> Self {
        Counters([0; NR_COUNTERS])
    }
}

impl Counters {
    #[inline]
    pub fn add(&mut self, c: Counter, n: u64) {
        self.0[c as usize] += n;
    }
    #[inline]
    pub fn get(&self, c: Counter) -> u64 {
        self.0[c as usize]
    }
    /// Name/value pairs in the kernel's order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        COUNTER_NAMES.iter().copied().zip(self.0.iter().copied())
    }
}

impl Mm {
    /// Total of one LRU list over all memcgs (the node's view, `node_page_state`).
    pub fn node_lru(&self, l: mm::LruList) -> u64 {
        self.memcgs.iter().map(|m| m.lru.size(l)).sum()
    }

    /// Lists of memcg `m` as the reclaim root sees them (`lruvec_page_state`): the node
    /// totals for the root (hierarchical stats), the memcg's own lists otherwise; as of the
    /// last stats flush where `flushed` (profiles whose reclaim reads flushed stats).
    pub fn lru_view(&self, m: u16, flushed: bool) -> [u64; 4] {
        if flushed {
            return self.memcgs[m as usize].flushed.lru;
        }
        self.lru_exact(m)
    }

    /// Lists of memcg `m` (the node's for the root) as they are now: its subtree's where the
    /// profile's lruvec statistics are hierarchical (`Mm::hierarchical_stats`), else its own.
    pub fn lru_exact(&self, m: u16) -> [u64; 4] {
        let mut s = [0u64; 4];
        // One pass over the memcgs summed (reclaim and every refault read these).
        let mut add = |c: usize| {
            let own = self.memcgs[c].lru.evictable_sizes();
            for (t, x) in s.iter_mut().zip(own) {
                *t += x;
            }
        };
        if m == 0 {
            (0..self.memcgs.len()).for_each(&mut add);
        } else if self.hierarchical_stats {
            self.subtrees[m as usize].iter().for_each(|&c| add(c as usize));
        } else {
            add(m as usize);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        let mut seen = std::collections::BTreeSet::new();
        for c in Counter::ALL {
            assert!(seen.insert(c.name()), "{} twice", c.name());
            assert_eq!(Counter::from_name(c.name()), Some(c));
        }
        for g in Gauge::ALL {
            assert!(seen.insert(g.name()), "{} is both a counter and a gauge, or twice", g.name());
            assert_eq!(Gauge::from_name(g.name()), Some(g));
        }
        assert_eq!(Counter::from_name("pgfualt"), None);
        assert_eq!(Counter::PswpIn.name(), "pswpin");
    }
}
