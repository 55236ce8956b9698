//! What a run reports: /proc/vmstat counters, memcg counters, times, the fault-latency
//! histogram and device statistics. The model counts; this module only collects, and
//! formats for the front ends (table, JSON).

use crate::engine::Sim;
use crate::mm::vmstat::{Counter, COUNTER_NAMES};
use crate::scenario::Scenario;
use serde::Serialize;

/// A log-linear latency histogram (HDR-style: 8 sub-buckets per power of two), ns.
#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    sum: u128,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: vec![0; 64 * 8], total: 0, sum: 0 }
    }
}

const SUB: u32 = 8;

impl Histogram {
    fn bucket(v: u64) -> usize {
        if v < SUB as u64 {
            return v as usize;
        }
        let e = 63 - v.leading_zeros();
        let sub = ((v >> (e - 3)) & (SUB as u64 - 1)) as u32;
        ((e - 2) * SUB + sub) as usize
    }

    /// Upper bound (inclusive) of bucket `b`.
    fn upper(b: usize) -> u64 {
        let b = b as u32;
        if b < SUB {
            return b as u64;
        }
        let e = b / SUB + 2;
        let sub = (b % SUB) as u64;
        ((SUB as u64 + sub + 1) << (e - 3)) - 1
    }

    pub fn record(&mut self, v: u64) {
        self.counts[Self::bucket(v)] += 1;
        self.total += 1;
        self.sum += v as u128;
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    /// The value at quantile `q` (bucket upper bound; within 12.5%).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut acc = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            acc += c;
            if acc >= rank {
                return Self::upper(b);
            }
        }
        Self::upper(self.counts.len() - 1)
    }

    pub fn mean(&self) -> u64 {
        if self.total == 0 {
            0
        } else {
            (self.sum / self.total as u128) as u64
        }
    }

    /// Non-empty buckets as (upper bound ns, count).
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        self.counts.iter().enumerate().filter(|(_, &c)| c > 0).map(|(b, &c)| (Self::upper(b), c)).collect()
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct TaskReport {
    pub name: String,
    pub elapsed_ns: u64,
    pub cpu_ns: u64,
    pub faults: u64,
    pub major_faults: u64,
    pub oom_killed: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct MemcgReport {
    pub counters: serde_json::Map<String, serde_json::Value>,
    pub usage_bytes: u64,
    pub max_bytes: Option<u64>,
    pub swap_bytes: u64,
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
    pub busy_ns: u64,
    /// (request size upper bound in bytes, count).
    pub io_size_hist: Vec<(u64, u64)>,
}

#[derive(Clone, Debug, Serialize)]
pub struct KswapdReport {
    pub cpu_ns: u64,
    pub awake_ns: u64,
    pub wakeups: u64,
}

/// The result of one run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub scenario: String,
    pub profile: String,
    pub seed: u64,
    /// Simulated time until the last task finished, ns.
    pub elapsed_ns: u64,
    /// /proc/vmstat counters (events), plus gauges at the end of the run.
    pub counters: serde_json::Map<String, serde_json::Value>,
    pub memcg: serde_json::Map<String, serde_json::Value>,
    pub tasks: Vec<TaskReport>,
    pub kswapd: KswapdReport,
    pub fault_latency: LatencyReport,
    pub devices: Vec<DeviceReport>,
}

impl Report {
    pub fn from_sim(sc: &Scenario, seed: u64, sim: &Sim) -> Report {
        let mut counters = serde_json::Map::new();
        for (name, v) in sim.vmstat.iter() {
            counters.insert(name.to_string(), v.into());
        }
        let swapcached = sim.swap.areas.iter().map(|a| a.cache.iter().filter(|&&c| c != 0).count() as u64).sum::<u64>();
        counters.insert("nr_free_pages".into(), sim.nr_free().into());
        counters.insert("nr_swapcached".into(), swapcached.into());
        counters.insert("nr_inactive_anon".into(), sim.node_lru(crate::mm::LruList::InactiveAnon).into());
        counters.insert("nr_active_anon".into(), sim.node_lru(crate::mm::LruList::ActiveAnon).into());
        counters.insert("nr_swap_used".into(), (sim.swap.total_pages() - sim.swap.free_pages()).into());
        sim.compressed_gauges(&mut counters);
        let mut memcg = serde_json::Map::new();
        for m in sim.memcgs.iter().skip(1) {
            let mut c = serde_json::Map::new();
            for (name, v) in m.events.iter() {
                c.insert(name.to_string(), v.into());
            }
            let r = MemcgReport {
                counters: c,
                usage_bytes: m.usage * 4096,
                max_bytes: (m.max != u64::MAX).then(|| m.max * 4096),
                swap_bytes: m.swap_usage * 4096,
            };
            memcg.insert(m.name.clone(), serde_json::to_value(r).expect("serializes"));
        }
        let tasks: Vec<TaskReport> = sim
            .tasks
            .iter()
            .map(|t| TaskReport {
                name: t.name.clone(),
                elapsed_ns: t.end_ns.saturating_sub(t.start_ns),
                cpu_ns: t.cpu_ns,
                faults: t.faults,
                major_faults: t.major_faults,
                oom_killed: t.oom_killed,
            })
            .collect();
        let elapsed_ns = sim.tasks.iter().map(|t| t.end_ns).max().unwrap_or(0);
        let devices = sim
            .devices
            .iter()
            .zip(&sim.device_names)
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
                    busy_ns: s.busy_ns,
                    io_size_hist: s
                        .size_hist
                        .iter()
                        .enumerate()
                        .filter(|(_, &c)| c > 0)
                        .map(|(k, &c)| (4096u64 << k, c))
                        .collect(),
                }
            })
            .collect();
        let h = &sim.fault_hist;
        Report {
            scenario: sc.name.clone(),
            profile: sim.profile.name.to_string(),
            seed,
            elapsed_ns,
            counters,
            memcg,
            tasks,
            kswapd: KswapdReport {
                cpu_ns: sim.kswapd.cpu_ns,
                awake_ns: sim.kswapd.awake_ns,
                wakeups: sim.kswapd.wakeups,
            },
            fault_latency: LatencyReport {
                count: h.count(),
                median_ns: h.quantile(0.5),
                p99_ns: h.quantile(0.99),
                mean_ns: h.mean(),
                buckets: h.buckets(),
            },
            devices,
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("report serializes")
    }

    /// A counter by its /proc/vmstat name.
    pub fn counter(&self, name: &str) -> u64 {
        self.counters.get(name).and_then(|v| v.as_u64()).unwrap_or(0)
    }

    /// A counter by enum.
    pub fn get(&self, c: Counter) -> u64 {
        self.counter(COUNTER_NAMES[c as usize])
    }

    /// The human table.
    pub fn to_table(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(s, "scenario {}  profile {}  seed {}", self.scenario, self.profile, self.seed);
        let _ = writeln!(s, "elapsed  {:.3} s (simulated)", self.elapsed_ns as f64 / 1e9);
        for t in &self.tasks {
            let _ = writeln!(
                s,
                "task {:<16} elapsed {:>10.3} s  cpu {:>8.3} s  faults {:>10}  major {:>10}{}",
                t.name,
                t.elapsed_ns as f64 / 1e9,
                t.cpu_ns as f64 / 1e9,
                t.faults,
                t.major_faults,
                if t.oom_killed { "  OOM-KILLED" } else { "" }
            );
        }
        let _ = writeln!(
            s,
            "kswapd   cpu {:.3} s  awake {:.3} s  wakeups {}",
            self.kswapd.cpu_ns as f64 / 1e9,
            self.kswapd.awake_ns as f64 / 1e9,
            self.kswapd.wakeups
        );
        let l = &self.fault_latency;
        let _ = writeln!(
            s,
            "fault latency  count {}  median {:.1} us  p99 {:.1} us  mean {:.1} us",
            l.count,
            l.median_ns as f64 / 1e3,
            l.p99_ns as f64 / 1e3,
            l.mean_ns as f64 / 1e3
        );
        for d in &self.devices {
            let avg = (d.read_bytes + d.write_bytes).checked_div(d.reads + d.writes).unwrap_or(0);
            let _ = writeln!(
                s,
                "device {:<10} {:<9} reads {:>9}  writes {:>9}  avg I/O {:>7} B  busy {:.3} s",
                d.name,
                d.model,
                d.reads,
                d.writes,
                avg,
                d.busy_ns as f64 / 1e9
            );
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_quantiles_are_within_a_bucket() {
        let mut h = Histogram::default();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let med = h.quantile(0.5);
        assert!((500_000..=500_000 * 9 / 8 + 1).contains(&med), "{med}");
        let p99 = h.quantile(0.99);
        assert!((990_000..=990_000 * 9 / 8 + 1).contains(&p99), "{p99}");
        assert_eq!(h.count(), 1000);
        assert_eq!(h.mean(), 500_500);
        for v in [0u64, 5, 8, 9, 100, 12345, 1 << 40] {
            let b = Histogram::bucket(v);
            assert!(Histogram::upper(b) >= v && (b == 0 || Histogram::upper(b - 1) < v), "{v}");
        }
    }
}
