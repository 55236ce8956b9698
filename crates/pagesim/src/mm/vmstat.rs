//! Models include/linux/vm_event_item.h and mm/vmstat.c: the event counters of
//! /proc/vmstat, under their kernel names.
//!
//! The model only bumps [`Counter`]s; formatting lives in the report and the front ends.

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
    };
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
    NrVmscanWrite => "nr_vmscan_write",
    OomKill => "oom_kill",
    ThpFaultAlloc => "thp_fault_alloc",
    KswapdLowWmarkHitQuickly => "kswapd_low_wmark_hit_quickly",
    KswapdHighWmarkHitQuickly => "kswapd_high_wmark_hit_quickly",
    // pagesim's own file readahead counters (the kernel has tracepoints, not counters):
    // readahead windows submitted and the pages they newly read; pages read(2) copied to
    // the user; pages the read or fault path read alone because no readahead brought them;
    // readahead pages evicted before anyone read or mapped them (readahead thrashing).
    FileRaWindows => "file_ra_windows",
    FileRaPages => "file_ra_pages",
    FileReadPages => "file_read_pages",
    FileReadSingle => "file_read_single",
    RaEvictedUnused => "ra_evicted_unused",
    // zswap: successful store, load, writeback of an entry (5.19+; zswpwb 6.8+).
    Zswpin => "zswpin",
    Zswpout => "zswpout",
    Zswpwb => "zswpwb",
    // 6.12+ zeromap: zero page read back / not written.
    SwpinZero => "swpin_zero",
    SwpoutZero => "swpout_zero",
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
