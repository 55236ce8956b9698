//! What a run reports: /proc/vmstat counters, memcg counters, times, the fault-latency
//! histogram and device statistics. The model counts; this module only collects, and
//! formats for the front ends (table, JSON).

pub mod ftrace;

use crate::engine::Sim;
use crate::engine::{RunEnd, TaskState, TimelineGauges, TimelinePoint};
pub use crate::histogram::Histogram;
use crate::mm::vmstat::{Counter, Gauge};
use crate::scenario::Scenario;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Serialize)]
pub struct TaskReport {
    pub name: String,
    /// From the task's start to its end, or to the end of the run if it did not finish
    /// (0 if it never started).
    pub elapsed_ns: u64,
    /// The task ran its whole program (`false` if it was OOM-killed or the run stopped
    /// first).
    pub completed: bool,
    pub cpu_ns: u64,
    /// Of its CPU time, the time it spun waiting for kernel locks.
    pub lock_wait_ns: u64,
    /// Time it slept in `balance_dirty_pages`, held to the dirty limits.
    pub throttled_ns: u64,
    pub faults: u64,
    pub major_faults: u64,
    pub oom_killed: bool,
    /// Each step of the program, in order.
    pub steps: Vec<StepReport>,
}

/// One step of a task's program: when it ran and what it did.
#[derive(Clone, Debug, Serialize)]
pub struct StepReport {
    pub start_ns: u64,
    /// When its last access completed; `None` if it did not finish.
    pub end_ns: Option<u64>,
    /// Accesses (mapping steps) or read calls (file steps) made.
    pub ops: u64,
    /// Bytes the step's read calls returned (file read steps; 0 otherwise).
    pub read_bytes: u64,
    /// Bytes the step's write calls wrote (file write steps; 0 otherwise).
    pub write_bytes: u64,
}

impl StepReport {
    /// Read throughput of a finished file step, bytes per second.
    pub fn read_bytes_per_s(&self) -> Option<f64> {
        let end = self.end_ns?;
        (end > self.start_ns).then(|| self.read_bytes as f64 * 1e9 / (end - self.start_ns) as f64)
    }

    /// Write throughput of a finished file step, bytes per second (buffered: the time to
    /// copy into the page cache, throttled to the device when past the dirty limits).
    pub fn write_bytes_per_s(&self) -> Option<f64> {
        let end = self.end_ns?;
        (end > self.start_ns).then(|| self.write_bytes as f64 * 1e9 / (end - self.start_ns) as f64)
    }
}

/// One interval of the run's timeline (`sample_interval`): what happened in it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Sample {
    /// End of the interval, ns.
    pub t_ns: u64,
    /// Bytes returned by read calls (file_read_pages × 4 KiB).
    pub read_bytes: u64,
    /// Device read requests dispatched and their bytes, all devices.
    pub dev_reads: u64,
    pub dev_read_bytes: u64,
    pub pgmajfault: u64,
    pub pswpin: u64,
    pub pswpout: u64,
    pub ra_evicted_unused: u64,
    /// The gauges at the interval's end, pages, under their /proc/vmstat names
    /// (`nr_free_pages`, the four LRU lists, `nr_dirty`, `nr_writeback`, `nr_swap_used`).
    #[serde(flatten)]
    pub gauges: TimelineGauges,
    /// Each memcg's memory.current at the interval's end, bytes, by name (none without
    /// memcgs).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub memcg_usage_bytes: BTreeMap<String, u64>,
}

impl Sample {
    /// Average device read request size in the interval, bytes.
    pub fn avg_read_bytes(&self) -> Option<u64> {
        self.dev_read_bytes.checked_div(self.dev_reads)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct MemcgReport {
    /// Its own events (memory.stat's non-`total_` fields; a parent's do not include its
    /// children's).
    pub counters: serde_json::Map<String, serde_json::Value>,
    /// The parent memcg, if not the root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// memory.current / usage_in_bytes: its pages and its descendants'.
    pub usage_bytes: u64,
    pub max_bytes: Option<u64>,
    pub swap_bytes: u64,
    /// memory.stat's LRU sizes of its own pages, in pages (`inactive_anon`, `active_anon`,
    /// `inactive_file`, `active_file`).
    pub lru: serde_json::Map<String, serde_json::Value>,
    /// For a memcg with children: its subtree's counters and LRU sizes summed (v1's
    /// `total_` fields; v2's memory.stat is this).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<serde_json::Map<String, serde_json::Value>>,
    /// memory.events (v2), when any is non-zero.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<crate::mm::MemoryEvents>,
    /// Time its tasks slept in memory.high's penalty (v2), ns, when non-zero.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub high_delay_ns: Option<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct LatencyReport {
    pub count: u64,
    pub median_ns: u64,
    pub p99_ns: u64,
    pub mean_ns: u64,
    pub buckets: Vec<(u64, u64)>,
}

#[derive(Clone, Debug, Serialize)]
pub struct DeviceReport {
    pub name: String,
    pub model: String,
    pub reads: u64,
    pub writes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub merges: u64,
    /// Read/write direction changes between consecutive dispatches.
    pub dir_switches: u64,
    /// Times the sync or async requests reached `nr_requests` (submitters had to wait).
    pub queue_full: u64,
    /// Times the async requests reached the congestion threshold (7/8 of nr_requests).
    pub congested: u64,
    /// Times CFQ left the disk idle for a process's next request.
    pub idle_arms: u64,
    pub busy_ns: u64,
    /// Time the read queue was congested (7/8 of `nr_requests` reads allocated), ns: the
    /// kernel skips non-blocking readahead meanwhile.
    pub read_congested_ns: u64,
    /// Sums over dispatched requests of the time from unplug to dispatch, ns (iostat's
    /// `r_await`/`w_await` less the service time): divide by `reads`/`writes`.
    pub read_wait_ns: u64,
    pub write_wait_ns: u64,
    /// Sums over started requests of the device service time, ns; a disk's from when it
    /// starts the command, without its time in the drive's own queue.
    pub read_service_ns: u64,
    pub write_service_ns: u64,
    /// (request size upper bound in bytes, count).
    pub io_size_hist: Vec<(u64, u64)>,
}

/// The kernel's locks over the run: per class, and the share of all CPU time (tasks,
/// kswapd, the workers) spent spinning on them.
#[derive(Clone, Debug, Serialize)]
pub struct LocksReport {
    /// CPU time of every thread, ns.
    pub cpu_ns: u64,
    /// Of it, time spent spinning on locks, ns.
    pub wait_ns: u64,
    /// Classes with at least one acquisition, most waited-on first.
    pub classes: Vec<crate::locking::LockStat>,
}

impl LocksReport {
    /// The share of CPU time spent waiting for locks.
    pub fn wait_share(&self) -> f64 {
        if self.cpu_ns == 0 {
            0.0
        } else {
            self.wait_ns as f64 / self.cpu_ns as f64
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct KswapdReport {
    pub cpu_ns: u64,
    pub awake_ns: u64,
    pub wakeups: u64,
}

/// The non-empty buckets of a histogram whose bucket k counts values up to `unit << k`,
/// as (that upper bound, count).
fn power_of_two_buckets(counts: &[u64], unit: u64) -> Vec<(u64, u64)> {
    counts.iter().enumerate().filter(|(_, &c)| c > 0).map(|(k, &c)| (unit << k, c)).collect()
}

/// iostat's `r_await`/`w_await`, ms (0 with no requests): mean scheduler wait plus service
/// time per request. On a disk that queues commands this leaves out the time a command
/// waits in the drive's own queue, so it is a lower bound there.
fn await_ms(total_ns: u64, requests: u64) -> f64 {
    total_ns.checked_div(requests).map_or(0.0, |ns| ns as f64 / 1e6)
}

/// The result of one run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub scenario: String,
    pub profile: String,
    pub seed: u64,
    /// Simulated time until the last task finished, or until the run was stopped, ns.
    pub elapsed_ns: u64,
    /// Every task finished (or was OOM-killed). `false`: the run was stopped first, for
    /// `stop_reason`.
    pub completed: bool,
    /// Why an unfinished run stopped: "time_limit", "livelock" (the watchdog) or "deadlock".
    pub stop_reason: Option<String>,
    /// For a livelock or deadlock: what each unfinished task was waiting on.
    pub stop_detail: Option<String>,
    /// Operations (accesses and read calls) done, of the workload's total.
    pub ops_done: u64,
    pub ops_total: u64,
    /// /proc/vmstat counters (events), plus gauges at the end of the run.
    pub counters: serde_json::Map<String, serde_json::Value>,
    pub memcg: serde_json::Map<String, serde_json::Value>,
    pub tasks: Vec<TaskReport>,
    pub kswapd: KswapdReport,
    pub fault_latency: LatencyReport,
    /// The kernel's part of each fault's latency: the latency less its time waiting for
    /// devices (asleep on a page's I/O, or a synchronous device's transfer).
    pub fault_latency_kernel: LatencyReport,
    /// The latency of major faults alone (pgmajfault's: the page was read from a device,
    /// a swap-in or a file read), and its kernel part.
    pub major_fault_latency: LatencyReport,
    pub major_fault_latency_kernel: LatencyReport,
    pub locks: LocksReport,
    pub devices: Vec<DeviceReport>,
    /// File readahead windows by the size the policy gave them: (upper bound in pages, a
    /// power of two; count), empty buckets left out. `file_ra_windows` is their total.
    pub ra_window_hist: Vec<(u64, u64)>,
    /// Per-interval activity when the scenario sets `sample_interval`.
    pub timeline: Vec<Sample>,
    /// The timeline's interval, ns: `sample_interval`, doubled as often as a long run needed
    /// to keep at most 2^20 points (0: no timeline).
    pub timeline_interval_ns: u64,
    /// mmtests' "FTrace Reclaim Statistics: vmscan" rows, when the run recorded its
    /// tracepoint events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ftrace_vmscan: Option<ftrace::VmscanStats>,
    /// The recorded events themselves (not in the JSON: `pagesim run --trace-events FILE`
    /// writes them).
    #[serde(skip)]
    pub trace: Option<crate::trace::TraceLog>,
}

impl Report {
    pub fn from_sim(sc: &Scenario, seed: u64, sim: &Sim) -> Report {
        let mut counters = serde_json::Map::new();
        for (name, v) in sim.mm.vmstat.iter() {
            counters.insert(name.to_string(), v.into());
        }
        let swapcached = sim.swap.areas.iter().map(|a| a.cache.iter().filter(|&&c| c != 0).count() as u64).sum::<u64>();
        counters.insert(Gauge::NrFreePages.name().into(), sim.mm.nr_free().into());
        counters.insert(Gauge::NrSwapCached.name().into(), swapcached.into());
        counters.insert(Gauge::NrInactiveAnon.name().into(), sim.mm.node_lru(crate::mm::LruList::InactiveAnon).into());
        counters.insert(Gauge::NrActiveAnon.name().into(), sim.mm.node_lru(crate::mm::LruList::ActiveAnon).into());
        counters.insert(Gauge::NrSwapUsed.name().into(), (sim.swap.total_pages() - sim.swap.free_pages()).into());
        counters.insert(Gauge::NrInactiveFile.name().into(), sim.mm.node_lru(crate::mm::LruList::InactiveFile).into());
        counters.insert(Gauge::NrActiveFile.name().into(), sim.mm.node_lru(crate::mm::LruList::ActiveFile).into());
        counters.insert(Gauge::NrFilePages.name().into(), sim.pc.files.iter().map(|a| a.nrpages).sum::<u64>().into());
        counters.insert(Gauge::NrDirty.name().into(), sim.mm.nr_dirty.into());
        counters.insert(Gauge::NrWriteback.name().into(), sim.mm.nr_writeback.into());
        let limits = sim.global_dirty_limits();
        counters.insert(Gauge::NrDirtyThreshold.name().into(), limits.dirty.into());
        counters.insert(Gauge::NrDirtyBackgroundThreshold.name().into(), limits.background.into());
        sim.compressed_gauges(&mut counters);
        let mut memcg = serde_json::Map::new();
        let own = |m: &crate::mm::Memcg| {
            let mut c = serde_json::Map::new();
            for (name, v) in m.events.iter() {
                c.insert(name.to_string(), v.into());
            }
            c.insert(Gauge::NrDirty.name().into(), m.nr_dirty.into());
            c.insert(Gauge::NrWriteback.name().into(), m.nr_writeback.into());
            c
        };
        let lru = |m: &crate::mm::Memcg| {
            let mut c = serde_json::Map::new();
            for (name, l) in [
                ("inactive_anon", crate::mm::LruList::InactiveAnon),
                ("active_anon", crate::mm::LruList::ActiveAnon),
                ("inactive_file", crate::mm::LruList::InactiveFile),
                ("active_file", crate::mm::LruList::ActiveFile),
            ] {
                c.insert(name.into(), m.lru.size(l).into());
            }
            c
        };
        for (i, m) in sim.mm.memcgs.iter().enumerate().skip(1) {
            let subtree = &sim.mm.subtrees[i];
            let total = (subtree.len() > 1).then(|| {
                let mut t = serde_json::Map::new();
                for &d in subtree {
                    let dm = &sim.mm.memcgs[d as usize];
                    for (k, v) in own(dm).into_iter().chain(lru(dm)) {
                        let sum = t.get(&k).and_then(|x| x.as_u64()).unwrap_or(0) + v.as_u64().unwrap_or(0);
                        t.insert(k, sum.into());
                    }
                }
                t
            });
            let e = m.memory_events;
            let delay: u64 = sim.sched.tasks.iter().filter(|t| t.memcg as usize == i).map(|t| t.high_delay_ns).sum();
            let r = MemcgReport {
                counters: own(m),
                parent: (m.parent != 0).then(|| sim.mm.memcgs[m.parent as usize].name.clone()),
                usage_bytes: m.usage * 4096,
                max_bytes: (m.max != u64::MAX).then(|| m.max * 4096),
                swap_bytes: m.swap_usage * 4096,
                lru: lru(m),
                total,
                events: (e.low + e.high + e.max + e.oom > 0).then_some(e),
                high_delay_ns: (delay > 0).then_some(delay),
            };
            memcg.insert(m.name.clone(), serde_json::to_value(r).expect("serializes"));
        }
        let tasks: Vec<TaskReport> = sim
            .sched
            .tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| t.state != TaskState::Unborn)
            .map(|(tid, t)| TaskReport {
                name: t.name.clone(),
                elapsed_ns: match t.state {
                    TaskState::Done | TaskState::Paused => t.end_ns - t.start_ns,
                    TaskState::NotStarted => 0,
                    _ => sim.sched.now.saturating_sub(t.start_ns),
                },
                completed: matches!(t.state, TaskState::Done | TaskState::Paused) && !t.oom_killed,
                cpu_ns: t.cpu_ns,
                lock_wait_ns: sim.sched.lock_wait_ns[tid],
                throttled_ns: t.throttled_ns,
                faults: t.faults,
                major_faults: t.major_faults,
                oom_killed: t.oom_killed,
                steps: step_reports(t),
            })
            .collect();
        let end = &sim.sched.end;
        let elapsed_ns = match end {
            RunEnd::Completed => sim.sched.tasks.iter().map(|t| t.end_ns).max().unwrap_or(0),
            _ => sim.sched.now,
        };
        let devices = sim
            .io
            .devices
            .iter()
            .zip(&sim.io.names)
            .map(|(d, name)| {
                let s = d.stats();
                DeviceReport {
                    name: name.clone(),
                    model: d.model().name().to_string(),
                    reads: s.reads,
                    writes: s.writes,
                    read_bytes: s.read_bytes,
                    write_bytes: s.write_bytes,
                    merges: s.merges,
                    dir_switches: s.dir_switches,
                    queue_full: s.queue_full,
                    congested: s.congested,
                    idle_arms: s.idle_arms,
                    busy_ns: d.busy_ns_at(sim.sched.now),
                    read_congested_ns: d.read_congested_ns_at(sim.sched.now),
                    read_wait_ns: s.read_wait_ns,
                    write_wait_ns: s.write_wait_ns,
                    read_service_ns: s.read_service_ns,
                    write_service_ns: s.write_service_ns,
                    io_size_hist: power_of_two_buckets(&s.size_hist, 4096),
                }
            })
            .collect();
        let h = &sim.sched.fault_hist;
        let latency = |h: &crate::histogram::Histogram| LatencyReport {
            count: h.count(),
            median_ns: h.quantile(0.5),
            p99_ns: h.quantile(0.99),
            mean_ns: h.mean(),
            buckets: h.buckets(),
        };
        let mut classes: Vec<crate::locking::LockStat> =
            sim.sched.locks.stats.iter().filter(|s| s.acquisitions > 0).cloned().collect();
        classes.sort_by(|a, b| b.wait_total_ns.cmp(&a.wait_total_ns).then_with(|| a.name.cmp(b.name)));
        let cpu_ns = sim.sched.tasks.iter().map(|t| t.cpu_ns).sum::<u64>()
            + sim.reclaim.kswapd.cpu_ns
            + sim.swap.zswap.worker_cpu_ns
            + sim.wb.wbs.iter().map(|w| w.cpu_ns).sum::<u64>();
        let locks = LocksReport { cpu_ns, wait_ns: sim.sched.lock_wait_ns.iter().sum(), classes };
        Report {
            scenario: sc.name.clone(),
            profile: sim.profile.name.to_string(),
            seed,
            elapsed_ns,
            completed: *end == RunEnd::Completed,
            stop_reason: end.reason().map(str::to_string),
            stop_detail: end.detail().map(str::to_string),
            ops_done: sim.sched.ops_done,
            ops_total: sim.sched.ops_total,
            counters,
            memcg,
            tasks,
            kswapd: KswapdReport {
                cpu_ns: sim.reclaim.kswapd.cpu_ns,
                awake_ns: sim.reclaim.kswapd.awake_ns,
                wakeups: sim.reclaim.kswapd.wakeups,
            },
            fault_latency: latency(h),
            fault_latency_kernel: latency(&sim.sched.fault_kernel_hist),
            major_fault_latency: latency(&sim.sched.major_hist),
            major_fault_latency_kernel: latency(&sim.sched.major_kernel_hist),
            locks,
            devices,
            ra_window_hist: power_of_two_buckets(&sim.pc.ra_window_hist, 1),
            timeline: sim
                .sched
                .timeline
                .windows(2)
                .map(|w| Sample::between(&w[0], &w[1], &sim.mm.memcgs[1..]))
                .collect(),
            timeline_interval_ns: sim.sched.sample_every,
            ftrace_vmscan: sim.trace.as_ref().map(|log| ftrace::VmscanStats::from_log(log, sim.sched.now)),
            trace: None,
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("report serializes")
    }

    /// An event counter (every run reports all of them).
    pub fn counter(&self, c: Counter) -> u64 {
        self.value(c.name()).expect("every counter is reported")
    }

    /// A gauge, `None` where the run has none (zswap's without zswap, zram's without zram).
    pub fn gauge(&self, g: Gauge) -> Option<u64> {
        self.value(g.name())
    }

    /// A counter or gauge by its report name, `None` for a name the run did not report.
    pub fn value(&self, name: &str) -> Option<u64> {
        self.counters.get(name).and_then(|v| v.as_u64())
    }

    /// The human table.
    pub fn to_table(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(s, "scenario {}  profile {}  seed {}", self.scenario, self.profile, self.seed);
        let _ = writeln!(s, "elapsed  {:.3} s (simulated)", self.elapsed_ns as f64 / 1e9);
        if let Some(reason) = &self.stop_reason {
            let why = match reason.as_str() {
                "time_limit" => "at the scenario's time_limit",
                "livelock" => "by the watchdog: a livelock",
                _ => "with tasks waiting and nothing left to wake them",
            };
            let _ = writeln!(
                s,
                "STOPPED {why}: {} of {} operations done; unfinished tasks' elapsed times run to the stop",
                self.ops_done, self.ops_total
            );
        }
        for t in &self.tasks {
            let _ = writeln!(
                s,
                "task {:<16} elapsed {:>10.3} s  cpu {:>8.3} s  faults {:>10}  major {:>10}{}",
                t.name,
                t.elapsed_ns as f64 / 1e9,
                t.cpu_ns as f64 / 1e9,
                t.faults,
                t.major_faults,
                if t.oom_killed {
                    "  OOM-KILLED"
                } else if !t.completed {
                    "  unfinished"
                } else {
                    ""
                }
            );
        }
        let _ = writeln!(
            s,
            "kswapd   cpu {:.3} s  awake {:.3} s  wakeups {}",
            self.kswapd.cpu_ns as f64 / 1e9,
            self.kswapd.awake_ns as f64 / 1e9,
            self.kswapd.wakeups
        );
        if let Some(v) = &self.ftrace_vmscan {
            let _ = writeln!(s, "FTrace Reclaim Statistics: vmscan");
            for (label, x) in v.rows() {
                let _ = writeln!(s, "  {label:<40} {x:>14.2}");
            }
        }
        let l = &self.fault_latency;
        let _ = writeln!(
            s,
            "fault latency  count {}  median {:.1} us  p99 {:.1} us  mean {:.1} us",
            l.count,
            l.median_ns as f64 / 1e3,
            l.p99_ns as f64 / 1e3,
            l.mean_ns as f64 / 1e3
        );
        let k = &self.fault_latency_kernel;
        let _ = writeln!(
            s,
            "  kernel part  median {:.1} us  p99 {:.1} us  mean {:.1} us",
            k.median_ns as f64 / 1e3,
            k.p99_ns as f64 / 1e3,
            k.mean_ns as f64 / 1e3
        );
        let (m, mk) = (&self.major_fault_latency, &self.major_fault_latency_kernel);
        if m.count > 0 {
            let _ = writeln!(
                s,
                "  major faults  count {}  median {:.1} us  p99 {:.1} us  kernel part median {:.1} us  p99 {:.1} us",
                m.count,
                m.median_ns as f64 / 1e3,
                m.p99_ns as f64 / 1e3,
                mk.median_ns as f64 / 1e3,
                mk.p99_ns as f64 / 1e3
            );
        }
        // A contended class: its waits spinning (µs) or asleep (ms).
        let class_line = |s: &mut String, head: &str, c: &crate::locking::LockStat| {
            let (what, unit, div) = if c.sleeping { ("asleep", "ms", 1e6) } else { ("wait", "us", 1e3) };
            let _ = writeln!(
                s,
                "{head}{:<30} acquisitions {:>10}  contentions {:>9}  {what} {:.3} s  max {:.1} {unit}",
                c.name,
                c.acquisitions,
                c.contentions,
                c.wait_total_ns as f64 / 1e9,
                c.wait_max_ns as f64 / div
            );
        };
        if self.locks.wait_ns > 0 {
            let _ = writeln!(
                s,
                "lock contention  {:.1} % of CPU time ({:.3} s of {:.3} s)",
                100.0 * self.locks.wait_share(),
                self.locks.wait_ns as f64 / 1e9,
                self.locks.cpu_ns as f64 / 1e9
            );
            for c in self.locks.classes.iter().filter(|c| c.contentions > 0 && !c.sleeping).take(5) {
                class_line(&mut s, "  ", c);
            }
        }
        for c in self.locks.classes.iter().filter(|c| c.contentions > 0 && c.sleeping) {
            class_line(&mut s, "sleeping lock ", c);
        }
        for d in &self.devices {
            let avg = (d.read_bytes + d.write_bytes).checked_div(d.reads + d.writes).unwrap_or(0);
            let _ = writeln!(
                s,
                "device {:<10} {:<9} reads {:>9}  writes {:>9}  avg I/O {:>7} B  busy {:.3} s  r_await {:.2} ms  w_await {:.2} ms",
                d.name,
                d.model,
                d.reads,
                d.writes,
                avg,
                d.busy_ns as f64 / 1e9,
                await_ms(d.read_wait_ns + d.read_service_ns, d.reads),
                await_ms(d.write_wait_ns + d.write_service_ns, d.writes),
            );
        }
        if !self.ra_window_hist.is_empty() {
            let sizes: Vec<String> = self.ra_window_hist.iter().map(|(p, c)| format!("<={p}p {c}")).collect();
            let _ = writeln!(s, "readahead windows by size (pages): {}", sizes.join("  "));
        }
        let _ = writeln!(s, "/proc/vmstat:");
        for (k, v) in &self.counters {
            let v = v.as_u64().unwrap_or(0);
            if v != 0 {
                let _ = writeln!(s, "  {k:<32} {v:>14}");
            }
        }
        for (name, m) in &self.memcg {
            let _ = writeln!(s, "memcg {name}: usage {} B  swap {} B", m["usage_bytes"], m["swap_bytes"]);
            if let Some(e) = m.get("events").and_then(|e| e.as_object()) {
                let ev: Vec<String> = e.iter().map(|(k, v)| format!("{k} {v}")).collect();
                let delay = m.get("high_delay_ns").and_then(|d| d.as_u64()).unwrap_or(0);
                let _ = writeln!(s, "  memory.events: {}  high throttle {:.3} s", ev.join("  "), delay as f64 / 1e9);
            }
            if let Some(c) = m["counters"].as_object() {
                for (k, v) in c {
                    let v = v.as_u64().unwrap_or(0);
                    if v != 0 {
                        let _ = writeln!(s, "  {k:<32} {v:>14}");
                    }
                }
            }
        }
        s
    }
}

/// The steps of a task: each starts where the previous one ended (the first at the task's
/// start); the current step of an unfinished task has done `cur.done` operations.
fn step_reports(t: &crate::engine::Task) -> Vec<StepReport> {
    let mut start = t.start_ns;
    t.steps
        .iter()
        .enumerate()
        .map(|(i, st)| {
            let finished = i < t.cur.step;
            let ops = if finished {
                st.total
            } else if i == t.cur.step {
                t.cur.done
            } else {
                0
            };
            let end_ns = finished.then_some(t.step_end_ns[i]);
            let bytes = if st.file { ops * st.record_pages as u64 * 4096 } else { 0 };
            let (read, write) = match st.op {
                crate::scenario::AccessOp::Read | crate::scenario::AccessOp::Pread => (bytes, 0),
                crate::scenario::AccessOp::Write
                | crate::scenario::AccessOp::Pwrite
                | crate::scenario::AccessOp::Append => (0, bytes),
                _ => (0, 0),
            };
            let r = StepReport { start_ns: start, end_ns, ops, read_bytes: read, write_bytes: write };
            if let Some(e) = end_ns {
                start = e;
            }
            r
        })
        .collect()
}

impl Sample {
    /// What happened between two timeline points, and the gauges at the second; `memcgs`
    /// are the memcgs whose usage the points hold (every one but the root).
    fn between(prev: &TimelinePoint, cur: &TimelinePoint, memcgs: &[crate::mm::Memcg]) -> Sample {
        Sample {
            t_ns: cur.t_ns,
            read_bytes: (cur.read_pages - prev.read_pages) * 4096,
            dev_reads: cur.dev_reads - prev.dev_reads,
            dev_read_bytes: cur.dev_read_bytes - prev.dev_read_bytes,
            pgmajfault: cur.pgmajfault - prev.pgmajfault,
            pswpin: cur.pswpin - prev.pswpin,
            pswpout: cur.pswpout - prev.pswpout,
            ra_evicted_unused: cur.ra_evicted_unused - prev.ra_evicted_unused,
            gauges: cur.gauges,
            memcg_usage_bytes: memcgs.iter().zip(&cur.memcg_usage).map(|(m, &u)| (m.name.clone(), u * 4096)).collect(),
        }
    }
}
