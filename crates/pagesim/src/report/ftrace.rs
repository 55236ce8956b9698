//! mmtests' "FTrace Reclaim Statistics: vmscan" rows from a tracepoint event log.
//!
//! Computed as Documentation/trace/postprocess/trace-vmscan-postprocess.pl (2.6.36, later
//! copied into mmtests) does with `--ignore-pid`: events are attributed to the process name
//! (`comm`) that emitted them; the direct-reclaim rows add up the processes that entered
//! direct reclaim at least once (their page isolations, active lists included, their
//! `mm_vmscan_writepage` events by the FILE/ANON and SYNC/ASYNC flags, their
//! `mm_vmscan_wakeup_kswapd` events, and the time between each `direct_reclaim_begin` and
//! its `_end`); the kswapd rows add up the processes that logged `mm_vmscan_kswapd_wake`
//! (wakeups counted only from sleep, scans, writes, and the time from each wake to the
//! next sleep). Seed 003's tables print these rows.

use crate::trace::{Kind, TraceLog};
use serde::Serialize;
use std::collections::BTreeMap;

/// The rows, in the seed's order (times in ns).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct VmscanStats {
    pub direct_reclaims: u64,
    pub direct_pages_scanned: u64,
    pub direct_write_file_async: u64,
    pub direct_write_anon_async: u64,
    pub direct_write_file_sync: u64,
    pub direct_write_anon_sync: u64,
    pub wake_kswapd_requests: u64,
    pub kswapd_wakeups: u64,
    pub kswapd_pages_scanned: u64,
    pub kswapd_write_file_async: u64,
    pub kswapd_write_anon_async: u64,
    pub kswapd_write_file_sync: u64,
    pub kswapd_write_anon_sync: u64,
    pub direct_stall_ns: u64,
    pub kswapd_awake_ns: u64,
}

/// What one process name did.
#[derive(Default)]
struct Proc {
    direct_begins: u64,
    kswapd_wakes: u64,
    scanned: u64,
    /// [file async, anon async, file sync, anon sync]
    writes: [u64; 4],
    wakeup_kswapd: u64,
    direct_ns: u64,
    kswapd_ns: u64,
    /// An open direct reclaim (begin time) per tid, and kswapd's wake time.
    open: BTreeMap<u32, u64>,
    kswapd_since: Option<u64>,
}

/// The row labels and values as the seed prints them (times in ms, as in Mel Gorman's V4
/// tables, whose labels say ms).
impl VmscanStats {
    pub fn rows(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("Direct reclaims", self.direct_reclaims as f64),
            ("Direct reclaim pages scanned", self.direct_pages_scanned as f64),
            ("Direct reclaim write file async I/O", self.direct_write_file_async as f64),
            ("Direct reclaim write anon async I/O", self.direct_write_anon_async as f64),
            ("Direct reclaim write file sync I/O", self.direct_write_file_sync as f64),
            ("Direct reclaim write anon sync I/O", self.direct_write_anon_sync as f64),
            ("Wake kswapd requests", self.wake_kswapd_requests as f64),
            ("Kswapd wakeups", self.kswapd_wakeups as f64),
            ("Kswapd pages scanned", self.kswapd_pages_scanned as f64),
            ("Kswapd reclaim write file async I/O", self.kswapd_write_file_async as f64),
            ("Kswapd reclaim write anon async I/O", self.kswapd_write_anon_async as f64),
            ("Kswapd reclaim write file sync I/O", self.kswapd_write_file_sync as f64),
            ("Kswapd reclaim write anon sync I/O", self.kswapd_write_anon_sync as f64),
            ("Time stalled direct reclaim (ms)", self.direct_stall_ns as f64 / 1e6),
            ("Time kswapd awake (ms)", self.kswapd_awake_ns as f64 / 1e6),
        ]
    }

    /// The rows of `log`; a reclaim or wake still open when the log ends counts until
    /// `end_ns`.
    pub fn from_log(log: &TraceLog, end_ns: u64) -> VmscanStats {
        let mut procs: BTreeMap<&str, Proc> = BTreeMap::new();
        for e in &log.events {
            let comm = log.threads.get(e.tid as usize).map_or("?", |s| s.as_str());
            let p = procs.entry(comm).or_default();
            match e.kind {
                Kind::DirectReclaimBegin { .. } => {
                    p.direct_begins += 1;
                    p.open.insert(e.tid, e.t_ns);
                }
                Kind::DirectReclaimEnd { .. } => {
                    if let Some(t) = p.open.remove(&e.tid) {
                        p.direct_ns += e.t_ns - t;
                    }
                }
                Kind::KswapdWake { .. } if p.kswapd_since.is_none() => {
                    p.kswapd_wakes += 1;
                    p.kswapd_since = Some(e.t_ns);
                }
                Kind::KswapdSleep => {
                    if let Some(t) = p.kswapd_since.take() {
                        p.kswapd_ns += e.t_ns - t;
                    }
                }
                Kind::WakeupKswapd { .. } => p.wakeup_kswapd += 1,
                Kind::LruIsolate { nr_scanned, .. } => p.scanned += nr_scanned,
                Kind::Writepage { file, sync, .. } => p.writes[(!file) as usize + 2 * sync as usize] += 1,
                _ => {}
            }
        }
        let mut s = VmscanStats::default();
        for p in procs.values_mut() {
            if p.direct_begins > 0 {
                s.direct_reclaims += p.direct_begins;
                s.direct_pages_scanned += p.scanned;
                s.direct_write_file_async += p.writes[0];
                s.direct_write_anon_async += p.writes[1];
                s.direct_write_file_sync += p.writes[2];
                s.direct_write_anon_sync += p.writes[3];
                s.wake_kswapd_requests += p.wakeup_kswapd;
                s.direct_stall_ns += p.direct_ns + p.open.values().map(|&t| end_ns.saturating_sub(t)).sum::<u64>();
            }
            if p.kswapd_wakes > 0 {
                s.kswapd_wakeups += p.kswapd_wakes;
                s.kswapd_pages_scanned += p.scanned;
                s.kswapd_write_file_async += p.writes[0];
                s.kswapd_write_anon_async += p.writes[1];
                s.kswapd_write_file_sync += p.writes[2];
                s.kswapd_write_anon_sync += p.writes[3];
                s.kswapd_awake_ns += p.kswapd_ns + p.kswapd_since.map_or(0, |t| end_ns.saturating_sub(t));
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Event;

    /// Two processes of one name; one reclaims directly twice, the other never: the direct
    /// rows count the name's events; kswapd's rows come from kswapd's events; a wake while
    /// awake is not a wakeup.
    #[test]
    fn rows_add_up_per_process_name_as_the_script_does() {
        let ev = |t_ns, tid, kind| Event { t_ns, tid, cpu: 0, kind };
        let isolate = |n| Kind::LruIsolate { active: false, nr_requested: 32, nr_scanned: n, nr_taken: n, file: true };
        let log = TraceLog {
            threads: vec!["sysbench".into(), "sysbench".into(), "cat".into(), "kswapd0".into()],
            events: vec![
                ev(0, 0, Kind::WakeupKswapd { order: 0 }),
                ev(1, 3, Kind::KswapdWake { order: 0 }),
                ev(2, 3, isolate(64)),
                ev(3, 3, Kind::Writepage { pfn: 1, file: true, sync: false }),
                ev(4, 3, Kind::KswapdWake { order: 0 }),
                ev(10, 0, Kind::DirectReclaimBegin { order: 0, may_writepage: true }),
                ev(11, 0, isolate(32)),
                ev(12, 0, Kind::Writepage { pfn: 2, file: false, sync: false }),
                ev(15, 0, Kind::DirectReclaimEnd { nr_reclaimed: 32 }),
                ev(20, 1, Kind::DirectReclaimBegin { order: 0, may_writepage: true }),
                ev(21, 1, Kind::Writepage { pfn: 3, file: true, sync: true }),
                ev(26, 1, Kind::DirectReclaimEnd { nr_reclaimed: 0 }),
                ev(30, 2, isolate(99)),
                ev(30, 2, Kind::WakeupKswapd { order: 0 }),
                ev(50, 3, Kind::KswapdSleep),
            ],
        };
        let s = VmscanStats::from_log(&log, 60);
        assert_eq!(s.direct_reclaims, 2);
        assert_eq!(s.direct_pages_scanned, 32, "cat never reclaimed directly: its scans do not count");
        assert_eq!((s.direct_write_anon_async, s.direct_write_file_sync), (1, 1));
        assert_eq!(s.wake_kswapd_requests, 1, "sysbench's, not cat's");
        assert_eq!(s.direct_stall_ns, 5 + 6);
        assert_eq!((s.kswapd_wakeups, s.kswapd_pages_scanned, s.kswapd_write_file_async), (1, 64, 1));
        assert_eq!(s.kswapd_awake_ns, 49);
    }
}
