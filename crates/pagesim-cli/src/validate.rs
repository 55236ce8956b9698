//! `pagesim validate SCENARIO...`: runs each scenario on the host kernel (pagesim-host,
//! N cold repeats) and in the simulator configured like that kernel, and compares the
//! counters.
//!
//! ```text
//!   scenario + --set ──► run_on_host (memcg limit, swap file, pagesim-load) ──► HostRuns
//!        │                     │ HostTunables (the host as it was before setup)
//!        │                     ▼
//!        └──► + host overrides (kernel.profile, vm.*, vma_ra_enabled, the swap device
//!             model) ──► pagesim::run_file ──► Report
//!   comparison: counter | kernel median (min-max) | pagesim | relative error
//!   acceptance: over the suite, pairs with kernel median > 1000 within 15%
//! ```
//!
//! The host's swap file lives on whatever device holds the work directory, so every
//! scenario device that holds swap is replaced by the model of that device: its queue
//! settings read from /sys/block/<dev>/queue, its timing from the measurement in
//! docs/model.md (`pagesim validate --probe` repeats it). Tunables the scenario sets itself
//! are set on the host by pagesim-host and stay as they are; the others come from the host.

use crate::out::{Out, Stop};
use pagesim_host::probe::DeviceProbe;
use pagesim_host::{HostOptions, HostRuns, HostTunables};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The counters of the acceptance statistic (issue 5).
pub const ACCEPTANCE_COUNTERS: &[&str] = &[
    "pswpin",
    "pswpout",
    "pgmajfault",
    "swap_ra",
    "swap_ra_hit",
    "pgpgin",
    "pgpgout",
    "workingset_refault_anon",
    "workingset_refault_file",
    "pgsteal_anon",
    "pgsteal_file",
];

/// In the statistic too for a scenario that writes files (issue 17): the writeback counters.
pub const WRITE_COUNTERS: &[&str] =
    &["nr_dirtied", "nr_written", "pgscan_file", "nr_vmscan_write", "nr_vmscan_immediate_reclaim", "pgrotated"];

/// Whether scenario `sc` writes to files (write or pwrite steps, writes to a writable file
/// mapping, whole-file calls, a replayed trace whose program grew or wrote a file).
pub fn writes_files(sc: &pagesim::Scenario) -> bool {
    use pagesim::scenario::AccessOp;
    let traces_write = sc.config.task.iter().filter_map(|t| t.trace.as_ref()).any(|tp| tp.info.writes);
    traces_write
        || sc.file.task.iter().flat_map(|t| &t.step).any(|s| match s.op {
            Some(AccessOp::Write) => s.file.is_some() || sc.file.region.get(&s.region).is_some_and(|r| r.writable),
            Some(op) => op != AccessOp::Read && op != AccessOp::Pread,
            None => false,
        })
}

/// Printed for understanding, not part of the statistic.
const INFO_COUNTERS: &[&str] = &[
    "pgfault",
    "pgscan_anon",
    "pgscan_file",
    "pgscan_kswapd",
    "pgscan_direct",
    "pgactivate",
    "pgdeactivate",
    "workingset_activate_anon",
    "workingset_restore_anon",
    "workingset_activate_file",
    // Shadow nodes the shadow shrinker freed: their pages read back are not refaults.
    "workingset_nodereclaim",
    "zswpin",
    "zswpout",
    "zswpwb",
    "oom_kill",
    // Anon mTHP (sysfs per-size stats summed), for scenarios that turn it on.
    "mthp_anon_fault_alloc",
    "mthp_anon_fault_fallback",
    "mthp_anon_fault_fallback_charge",
    "mthp_swpout",
    "mthp_swpout_fallback",
    "mthp_swpin",
    "mthp_swpin_fallback",
    "mthp_swpin_fallback_charge",
    "mthp_split",
];

/// Counters the host's memory.stat also has, under the same name on v1 and v2 (pgfault and
/// pgmajfault are translated by `MemoryStat::get`). When every task runs in a memcg these are
/// taken from the memcgs, which other activity on the machine does not reach.
const MEMCG_COUNTERS: &[&str] = &["pgfault", "pgmajfault", "workingset_refault_anon", "workingset_refault_file"];

/// Only pairs whose kernel median is above this count in the statistic.
pub const MIN_KERNEL_VALUE: f64 = 1000.0;
/// A pair agrees when pagesim is within this relative error of the kernel's median.
pub const TOLERANCE: f64 = 0.15;
/// The statistic passes at this fraction of agreeing pairs.
pub const REQUIRED_FRACTION: f64 = 0.80;

/// Requests of each size the disk probe at the start of `pagesim validate` measures
/// (`host_disk_timing`): a few seconds.
const DISK_PROBE_REQUESTS: u64 = 400;

/// Timing of the host's swap device, a virtio-blk disk of a Firecracker VM (ext4 on
/// /dev/vda), as the flash model's keys. Measured with O_DIRECT requests at random offsets
/// of a 1 GiB file (`pagesim validate --probe`; the table is in docs/model.md, "The
/// validation host's disk"): a 4 KiB read takes 49 us at queue depth 1, a 1 MiB read 820 us
/// (1.35 GB/s for the extra bytes); 16 reads in flight give 60-67k IOPS, the serial stage
/// (the hypervisor's I/O thread) at about 15 us per request; a 4 KiB write takes 50-140 us
/// (median 88 us) and a 1 MiB write 225-310 us, the hypervisor's cache absorbing writes at
/// 3.4-7.5 GB/s. No seek: random and sequential offsets cost the same. The two latencies are
/// measured again at the start of every `pagesim validate` ([`host_disk_timing`]).
pub const HOST_DISK_TIMING: &[(&str, &str)] = &[
    ("model", "\"nvme\""),
    ("read_latency", "\"50us\""),
    ("write_latency", "\"85us\""),
    ("read_bandwidth", "1350000000"),
    ("write_bandwidth", "5000000000"),
    ("channels", "4"),
    ("iops_max", "65000"),
];

/// The host disk's timing for a run, as pagesim's keys.
#[derive(Clone, Debug, Default)]
pub struct DiskTiming {
    /// The disk model's keys (`device.NAME.*`).
    pub device: Vec<(&'static str, String)>,
    /// The CPU taking the disk's completion interrupts (`device.NAME.irq_cpu`), if one does.
    pub irq_cpu: Option<u32>,
    /// The wakeup of a reader on another CPU (`cpu.remote_wakeup_ns`), when measured.
    pub remote_wakeup_ns: Option<u64>,
}

/// The host disk's timing for this run: [`HOST_DISK_TIMING`], with the queue-depth-1 latency
/// of 4 KiB reads and writes measured now (`probe`), when it was. The disk of a VM drifts
/// (its 4 KiB read took 49 us when the constants were measured, 67 us on another day), and
/// a swap fault without readahead waits for one such read: the fixed figure made page-cluster
/// 0 runs 20-30 % faster in pagesim than on the host on a slow day. The model's latency is
/// the request's time less its transfer at the model's bandwidth. The probe also gives the
/// disk's interrupt CPU and what waking a reader on another CPU adds (the IPI to an idle
/// vCPU: 25-55 us on this VM, more than the device's own 4 KiB read some days).
pub fn host_disk_timing(probe: Option<&DeviceProbe>) -> DiskTiming {
    DiskTiming {
        device: host_disk_keys(probe),
        irq_cpu: probe.and_then(|p| p.irq_cpu),
        remote_wakeup_ns: probe.and_then(|p| p.remote_wakeup_ns()),
    }
}

fn host_disk_keys(probe: Option<&DeviceProbe>) -> Vec<(&'static str, String)> {
    let bw = |k: &str| {
        HOST_DISK_TIMING.iter().find(|(key, _)| *key == k).and_then(|(_, v)| v.parse::<f64>().ok()).unwrap_or(1e9)
    };
    HOST_DISK_TIMING
        .iter()
        .map(|&(k, v)| {
            let measured = match k {
                "read_latency" => probe.and_then(|p| p.get(false, 4096, 1)).map(|r| (r, bw("read_bandwidth"))),
                "write_latency" => probe.and_then(|p| p.get(true, 4096, 1)).map(|r| (r, bw("write_bandwidth"))),
                _ => None,
            };
            match measured {
                Some((r, bw)) => {
                    let us = (r.median_ns as f64 - 4096.0 / bw * 1e9).max(1000.0) / 1000.0;
                    (k, format!("\"{us:.0}us\""))
                }
                None => (k, v.to_string()),
            }
        })
        .collect()
}

/// `pagesim validate`'s command line.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Scenario files to run on the host and in pagesim (at least one, unless --probe)
    #[arg(value_name = "SCENARIO", required_unless_present_any = ["probe", "cleanup"])]
    files: Vec<PathBuf>,
    /// Runs of each scenario on the host, each from a cold state
    ///
    /// The table shows the kernel's median, minimum and maximum over them.
    #[arg(long, short = 'n', value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    repeats: u32,
    /// Also write everything to FILE as JSON
    ///
    /// The host's tunables and disk, each scenario's overrides, host runs, pagesim report and
    /// comparison, the acceptance statistic, and whether the machine was left as found.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Override a scenario field: KEY=VALUE, may be repeated
    ///
    /// As `pagesim run --set`. Applied to the host run, and in pagesim after the host's
    /// settings, so it wins over them.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Seed of the host runs' random accesses, which pagesim then uses too [default: the
    /// scenario's]
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Exit with status 1 when the acceptance statistic is below 80%
    ///
    /// The statistic: the fraction of (scenario, counter) pairs with a kernel median above
    /// 1000 for which pagesim is within 15% of the median.
    #[arg(long)]
    check: bool,
    /// Measure the disk that holds the swap files first, and print its latencies and IOPS
    ///
    /// O_DIRECT requests at random offsets of a 1 GiB file in the temp directory: 4 KiB reads
    /// at queue depths 1, 4 and 16, reads and writes of 4 KiB to 1 MiB at depth 1. The
    /// measurement behind pagesim's model of the validation host's disk (docs/model.md).
    /// Without SCENARIOs only this runs.
    #[arg(long)]
    probe: bool,
    /// Only undo what earlier validate runs left on the host, and say what
    ///
    /// A validate killed with SIGKILL (or by the OOM killer) cannot clean up: its swap
    /// files stay on, its memory cgroups and tunables stay as it set them. Each run keeps a
    /// journal of what it still has to undo (/run/pagesim/host-PID.json, or in
    /// $PAGESIM_JOURNAL_DIR); every validate first does what the journals of processes that
    /// are no longer alive list, newest first. This option does only that.
    #[arg(long, conflicts_with_all = ["files", "probe"])]
    cleanup: bool,
}

/// The kernel profile for a host kernel release (`6.18.44-fc` → the newest `linux-X.Y[.Z]`
/// profile not newer than 6.18.44).
pub fn host_profile(release: &str) -> Result<&'static str, String> {
    // (major, minor, patch): "6.18.44-fc" and "linux-2.6.23" alike; a missing patch is 0.
    let version = |s: &str| -> Option<(u32, u32, u32)> {
        let mut it = s.split(|c: char| !c.is_ascii_digit()).filter(|p| !p.is_empty());
        let (a, b) = (it.next()?.parse().ok()?, it.next()?.parse().ok()?);
        Some((a, b, it.next().and_then(|p| p.parse().ok()).unwrap_or(0)))
    };
    let host =
        version(release).ok_or_else(|| format!("cannot read a version from the kernel release \"{release}\""))?;
    pagesim::scenario::PROFILES
        .iter()
        .filter_map(|p| {
            let v = p.name.strip_prefix("linux-")?;
            // Only plain version profiles (linux-3.6, not a patched linux-3.7-hugh).
            if !v.chars().all(|c| c.is_ascii_digit() || c == '.') {
                return None;
            }
            Some((version(v)?, p.name))
        })
        .filter(|(v, _)| *v <= host)
        .max()
        .map(|(_, n)| n)
        .ok_or_else(|| format!("no kernel profile as old as the host's {release} (pagesim profiles)"))
}

/// `task.N.program.cached` for each replayed trace whose files kept pages cached on the host
/// after the harness dropped them (mapped by other processes: shared libraries), as the
/// first run measured them; a note if later runs found others.
pub fn trace_cached_overrides(host: &HostRuns) -> (Vec<Override>, Option<String>) {
    let Some(first) = host.runs.first() else { return (Vec::new(), None) };
    let quote = |p: &str| format!("\"{}\"", p.replace('\\', "\\\\").replace('"', "\\\""));
    let sets = first
        .trace_cached
        .iter()
        .map(|(task, files)| {
            let files: Vec<String> = files
                .iter()
                .map(|(path, ranges)| {
                    let r: Vec<String> = ranges.iter().map(|[a, b]| format!("[{a}, {b}]")).collect();
                    format!("{} = [{}]", quote(path), r.join(", "))
                })
                .collect();
            let pages: u64 = first.trace_cached[task].values().flatten().map(|[a, b]| b - a).sum();
            Override {
                set: format!("task.{task}.program.cached={{ {} }}", files.join(", ")),
                why: format!(
                    "measured: {pages} pages of the trace's files stayed cached after the harness dropped them \
                     (mapped by other processes), charged outside the memcg"
                ),
            }
        })
        .collect();
    let differ = host.runs.iter().any(|r| r.trace_cached != first.trace_cached).then(|| {
        "the trace files' pages cached at the start differed between host runs; pagesim takes the first run's".into()
    });
    (sets, differ)
}

/// One override the simulator gets so that it is configured like the host, and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Override {
    pub set: String,
    pub why: String,
}

/// The `--set`s that configure the simulated kernel like the host: profile, the tunables
/// the scenario leaves to the host, and the swap devices replaced by the host's disk.
/// `queue` holds the host disk's /sys/block/<dev>/queue values ([`QUEUE_KEYS`]). Also returns notes on what could not be carried over.
pub fn host_overrides(
    sc: &pagesim::Scenario,
    host: &HostTunables,
    queue: &BTreeMap<String, String>,
    timing: &DiskTiming,
    same_ram: bool,
) -> Result<(Vec<Override>, Vec<String>), String> {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    let release = host.kernel_release.as_deref().ok_or("the host's kernel release could not be read")?;
    let mut push = |set: String, why: &str| out.push(Override { set, why: why.to_string() });
    let profile = host_profile(release)?;
    push(format!("kernel.profile=\"{profile}\""), "host kernel");
    let f = &sc.file;
    if f.kernel.swap_readahead.is_some() || f.kernel.scan_balance.is_some() {
        notes.push("kernel.swap_readahead/scan_balance are the scenario's in pagesim; the host runs its own".into());
    }
    let cgroup = host.cgroup.usable.map(|v| if v == pagesim_host::CgroupVersion::V1 { "1" } else { "2" }.to_string());
    let tun: [(&str, bool, Option<String>); 4] = [
        ("kernel.cgroup_version", f.kernel.cgroup_version.is_some(), cgroup),
        ("vm.swappiness", f.vm.swappiness.is_some(), host.swappiness.map(|v| v.to_string())),
        ("vm.page-cluster", f.vm.page_cluster.is_some(), host.page_cluster.map(|v| v.to_string())),
        ("kernel.vma_ra_enabled", f.kernel.vma_ra_enabled.is_some(), host.vma_ra_enabled.map(|v| v.to_string())),
    ];
    for (key, in_scenario, value) in tun {
        match (in_scenario, value) {
            (true, _) => {}
            (false, Some(v)) => push(format!("{key}={v}"), "host value"),
            (false, None) => notes.push(format!("{key}: the host does not have it; pagesim's default applies")),
        }
    }
    // Large folios in the page cache depend on the filesystem the scenario's files are
    // written to and the kernel; pagesim follows the host's unless the scenario says.
    if !f.file.is_empty() && f.kernel.large_folios.is_none() {
        let possible = pagesim::profile::find(profile).is_some_and(|p| p.pagecache_large_folios.is_some());
        match host.pagecache_large_folios {
            Some(true) if !possible => notes.push(format!(
                "the host's page cache takes large folios, which profile {profile} predates: pagesim reads single pages"
            )),
            Some(v) if possible => push(
                format!("kernel.large_folios={v}"),
                &format!(
                    "the host's {} page cache {} large folios",
                    host.work_fs.as_deref().unwrap_or("?"),
                    if v { "takes" } else { "does not take" }
                ),
            ),
            Some(_) => {}
            None => notes.push(
                "kernel.large_folios: the work directory's filesystem could not be told; the profile's applies".into(),
            ),
        }
    }
    // zswap that was ever on since boot keeps 6.12+ from reading large folios back; the
    // host's history decides, not the scenario's zswap.enabled for this run.
    if !f.kernel.anon_mthp.as_ref().is_none_or(|s| s.is_empty()) && !f.zswap.enabled && f.zswap.ever_enabled.is_none() {
        match host.zswap.used_since_boot {
            Some(true) => push(
                "zswap.ever_enabled=true".into(),
                "the host's zswap stored pages since boot: zswap_never_enabled() is false there",
            ),
            Some(false) => {}
            None => notes.push("zswap.ever_enabled: the host's zswap history could not be read".into()),
        }
    }
    // The host's swap areas are swap files on its disk (zram: a block device): the kernel
    // gives a swap file no run of slots for a large folio.
    for (i, s) in f.swap.iter().enumerate() {
        let zram = matches!(f.device.get(&s.device), Some(pagesim::device::DeviceConfig::Zram(_)));
        if !zram && !s.file {
            push(format!("swap.{i}.file=true"), "the host's swap area is a swap file");
        }
    }
    // shmem is order 0 in pagesim, and anon memory unless the scenario sets
    // kernel.anon_mthp (pagesim-host then sets the host's sizes to the scenario's). The load
    // maps with MADV_NOHUGEPAGE otherwise, which keeps the host's THP and mTHP out of it,
    // except shmem_enabled = force.
    let has_shmem = f.region.values().any(|r| r.kind == pagesim::scenario::RegionKind::Shmem);
    if has_shmem && host.thp_shmem_enabled.as_deref() == Some("force") {
        notes.push(
            "the host's shmem_enabled is `force`: its shmem takes huge folios despite MADV_NOHUGEPAGE, \
             pagesim's shmem is order 0"
                .into(),
        );
    }
    // Watermarks are per zone of the machine's RAM: they only carry over when the scenario
    // models the host's memory. Memcg limit reclaim does not look at them.
    let wm: [(&str, bool, Option<u64>); 2] = [
        ("vm.min_free_kbytes", f.vm.min_free_kbytes.is_some(), host.min_free_kbytes),
        ("vm.watermark_scale_factor", f.vm.watermark_scale_factor.is_some(), host.watermark_scale_factor),
    ];
    for (key, in_scenario, value) in wm {
        match (in_scenario, value, same_ram) {
            (true, _, _) => {}
            (false, Some(v), true) => push(format!("{key}={v}"), "host value"),
            (false, Some(v), false) => notes.push(format!(
                "{key} = {v} on the host is not applied: the scenario's RAM is not the host's (memcg limit \
                 reclaim does not use watermarks)"
            )),
            (false, None, _) => {}
        }
    }
    // Swap files and the scenario's files live on the disk that holds the work directory;
    // a zram swap device is a real zram device on the host (pagesim-host sets it up) and
    // keeps its model.
    // A read_ahead_kb the scenario gives is set on the host disk for the run
    // (pagesim-host), so pagesim keeps it; otherwise the disk's own applies.
    let own_ra = pagesim_host::run::scenario_read_ahead_kb(sc).map_err(|e| e.0)?;
    let disks = pagesim_host::run::disk_devices(sc);
    for &d in &disks {
        let why = match (f.swap.iter().any(|s| s.device == d), f.file.values().any(|c| c.device == d)) {
            (true, true) => "swap files and the scenario's files live on the host's disk",
            (true, false) => "swap files live on the host's disk",
            _ => "the scenario's files live on the host's disk (its read_ahead_kb)",
        };
        let mut keys: Vec<String> = timing.device.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        match timing.irq_cpu {
            Some(c) if c < sc.config.machine.cpus => keys.push(format!("irq_cpu = {c}")),
            Some(c) => notes.push(format!(
                "the host disk's interrupts go to CPU {c}, which the scenario's machine.cpus = {} lacks: \
                 pagesim completes its I/O on the waiting task's CPU",
                sc.config.machine.cpus
            )),
            None => {}
        }
        for k in QUEUE_KEYS {
            if let (Some(kb), "read_ahead_kb") = (own_ra, k) {
                keys.push(format!("{k} = {kb}"));
            } else if let Some(v) = queue.get(k) {
                keys.push(if k == "scheduler" { format!("{k} = \"{v}\"") } else { format!("{k} = {v}") });
            }
        }
        push(format!("device.{d}={{ {} }}", keys.join(", ")), why);
    }
    if let Some(ns) = timing.remote_wakeup_ns.filter(|_| !disks.is_empty()) {
        push(
            format!("cpu.remote_wakeup_ns={ns}"),
            "measured: a 4 KiB read from a CPU other than the disk's interrupt CPU, less one from it",
        );
    }
    Ok((out, notes))
}

/// Accesses at least this slow count as faults that waited (for I/O or for a page another
/// fault is bringing in) in the latency comparison; minor faults, hits and most interrupts
/// on the host stay below it.
pub const SLOW_FAULT_NS: u64 = 10_000;

/// The latency of slow faults (at least [`SLOW_FAULT_NS`]) on both sides: the host's from
/// pagesim-load's per-access timing (each run's tasks merged), pagesim's from its fault
/// histogram. Rows of (what, kernel median over runs, (min, max), pagesim): the count, the
/// median and the 99th percentile in µs.
pub fn fault_latency_rows(host: &HostRuns, sim: &Value) -> Vec<(&'static str, f64, (f64, f64), f64)> {
    use pagesim::histogram::{merge_buckets, tail_summary};
    let per_run: Vec<(u64, u64, u64)> = host
        .runs
        .iter()
        .map(|r| {
            let merged = r.load.tasks.iter().fold(Vec::new(), |m, t| merge_buckets(&m, &t.access_latency));
            tail_summary(&merged, SLOW_FAULT_NS)
        })
        .collect();
    let sim_buckets: Vec<(u64, u64)> = sim["fault_latency"]["buckets"]
        .as_array()
        .map(|a| a.iter().filter_map(|b| Some((b[0].as_u64()?, b[1].as_u64()?))).collect())
        .unwrap_or_default();
    let ps = tail_summary(&sim_buckets, SLOW_FAULT_NS);
    if per_run.is_empty() || (ps.0 == 0 && per_run.iter().all(|r| r.0 == 0)) {
        return Vec::new();
    }
    let pick = |f: fn(&(u64, u64, u64)) -> u64, scale: f64| {
        let v: Vec<u64> = per_run.iter().map(f).collect();
        let (m, lo, hi) = median_min_max(&v);
        (m / scale, (lo as f64 / scale, hi as f64 / scale))
    };
    let (n, nr) = pick(|r| r.0, 1.0);
    let (p50, p50r) = pick(|r| r.1, 1e3);
    let (p99, p99r) = pick(|r| r.2, 1e3);
    vec![
        ("faults >= 10 us (count)", n, nr, ps.0 as f64),
        ("  their median (us)", p50, p50r, ps.1 as f64 / 1e3),
        ("  their p99 (us)", p99, p99r, ps.2 as f64 / 1e3),
    ]
}

/// Median of the values (mean of the middle two for an even count), min and max.
pub fn median_min_max(v: &[u64]) -> (f64, u64, u64) {
    let mut s = v.to_vec();
    s.sort_unstable();
    let n = s.len();
    let med = if n % 2 == 1 { s[n / 2] as f64 } else { (s[n / 2 - 1] + s[n / 2]) as f64 / 2.0 };
    (med, s[0], s[n - 1])
}

/// (pagesim − kernel) / kernel; `None` when the kernel's value is 0 (unless both are).
pub fn rel_error(kernel: f64, sim: f64) -> Option<f64> {
    if kernel == 0.0 {
        (sim == 0.0).then_some(0.0)
    } else {
        Some((sim - kernel) / kernel)
    }
}

/// One row of the comparison.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    pub counter: String,
    /// Where the kernel's value comes from: "vmstat" (machine-wide) or "memcg" (the
    /// scenario's memcgs' memory.stat, summed).
    pub source: &'static str,
    pub kernel: Vec<u64>,
    pub kernel_median: f64,
    pub kernel_min: u64,
    pub kernel_max: u64,
    pub pagesim: u64,
    pub rel_error: Option<f64>,
    /// In the acceptance statistic (an acceptance counter with kernel median > 1000).
    pub counted: bool,
    pub within: bool,
}

/// The comparison rows of one scenario.
/// The phase of the kernel's periodic memcg stats flush in each host run, ns, where the
/// scenario's profile reads flushed statistics and every run measured it: a run in which no
/// flush came had it after its end (any such phase is the same to the model), clamped below
/// the profile's period.
fn flush_phases(sc: &pagesim::Scenario, host: &HostRuns) -> Option<Vec<u64>> {
    let period = sc.config.kernel.profile.memcg_stats_flush_ns;
    if period == 0 || sc.file.memcg.is_empty() || host.runs.is_empty() {
        return None;
    }
    Some(host.runs.iter().map(|r| flush_phase(r.memcg_flush_phase_ns, r.wall_ns, period)).collect())
}

/// A run's flush phase for the model: as measured, or just after the run's end (`wall_ns`)
/// if none came while it ran; below `period`.
fn flush_phase(measured: Option<u64>, wall_ns: u64, period: u64) -> u64 {
    measured.unwrap_or(wall_ns + 1_000_000).min(period - 1)
}

/// One report of several pagesim runs: each counter (and the elapsed time) their median,
/// the rest the first run's.
fn median_report(runs: &[Value]) -> Value {
    let mut out = runs[0].clone();
    let med = |get: &dyn Fn(&Value) -> Option<u64>| -> Option<u64> {
        let mut v: Vec<u64> = runs.iter().filter_map(get).collect();
        v.sort_unstable();
        (v.len() == runs.len()).then(|| v[v.len() / 2])
    };
    if let Some(counters) = runs[0]["counters"].as_object() {
        for k in counters.keys() {
            if let Some(m) = med(&|r: &Value| r["counters"][k].as_u64()) {
                out["counters"][k] = json!(m);
            }
        }
    }
    if let Some(m) = med(&|r: &Value| r["elapsed_ns"].as_u64()) {
        out["elapsed_ns"] = json!(m);
    }
    out
}

pub fn compare(sc: &pagesim::Scenario, host: &HostRuns, sim: &Value) -> Vec<Row> {
    let all_in_memcgs = sc.file.task.iter().all(|t| t.memcg.is_some());
    let sim_counters = &sim["counters"];
    let mthp = !sc.config.kernel.anon_mthp_kb.is_empty();
    let writes = writes_files(sc);
    ACCEPTANCE_COUNTERS
        .iter()
        .map(|c| (c, true))
        .chain(WRITE_COUNTERS.iter().filter(|_| writes).map(|c| (c, true)))
        .chain(
            INFO_COUNTERS
                .iter()
                .filter(|c| mthp || !c.starts_with("mthp_"))
                .filter(|c| !(writes && WRITE_COUNTERS.contains(c)))
                .map(|c| (c, false)),
        )
        .map(|(&c, acceptance)| {
            let from_memcg = all_in_memcgs
                && MEMCG_COUNTERS.contains(&c)
                && host.runs.iter().all(|r| !r.memcg.is_empty() && r.memcg.values().all(|m| m.stat.get(c).is_some()));
            let kernel: Vec<u64> = host
                .runs
                .iter()
                .map(|r| {
                    if from_memcg {
                        r.memcg.values().filter_map(|m| m.stat.get(c)).sum()
                    } else {
                        r.vmstat.get(c).copied().unwrap_or(0)
                    }
                })
                .collect();
            let (med, lo, hi) = median_min_max(&kernel);
            let pagesim = sim_counters[c].as_u64().unwrap_or(0);
            let err = rel_error(med, pagesim as f64);
            let counted = acceptance && med > MIN_KERNEL_VALUE;
            Row {
                counter: c.to_string(),
                source: if from_memcg { "memcg" } else { "vmstat" },
                kernel,
                kernel_median: med,
                kernel_min: lo,
                kernel_max: hi,
                pagesim,
                rel_error: err,
                counted,
                within: err.is_some_and(|e| e.abs() <= TOLERANCE),
            }
        })
        .collect()
}

fn fmt_err(e: Option<f64>) -> String {
    match e {
        Some(e) => format!("{:+.1}%", e * 100.0),
        None => "n/a".into(),
    }
}

/// The comparison as a text table.
pub fn table(rows: &[Row]) -> String {
    let mut s = format!(
        "  {:<26} {:<6} {:>12} {:>25} {:>12} {:>9}\n",
        "counter", "source", "kernel med.", "(min-max)", "pagesim", "rel.err"
    );
    for r in rows {
        let mark = match (r.counted, r.within) {
            (true, true) => " ok",
            (true, false) => " OUT",
            _ => "",
        };
        s += &format!(
            "  {:<26} {:<6} {:>12} {:>25} {:>12} {:>9}{mark}\n",
            r.counter,
            r.source,
            format!("{:.0}", r.kernel_median),
            format!("({}-{})", r.kernel_min, r.kernel_max),
            r.pagesim,
            fmt_err(r.rel_error)
        );
    }
    s
}

/// The acceptance statistic over every scenario's rows: (counted pairs, pairs within).
pub fn acceptance<'a>(rows: impl Iterator<Item = &'a Row>) -> (usize, usize) {
    rows.filter(|r| r.counted).fold((0, 0), |(n, w), r| (n + 1, w + r.within as usize))
}

/// Undoes what earlier runs killed before their cleanup left behind (their journals), and
/// says what it did; `verbose` also says when there was nothing to do.
fn recover(verbose: bool, out: &mut Out) -> Result<(), Stop> {
    let found =
        pagesim_host::journal::recover().map_err(|e| format!("validate: cleaning up after earlier runs: {}", e.0))?;
    let mut failed = false;
    for r in &found {
        if r.running {
            if verbose {
                writeln!(out, "pid {} ({}) is still running; its changes are left to it", r.pid, r.command)?;
            }
            continue;
        }
        let why = if r.rebooted { "before the machine rebooted" } else { "without cleaning up" };
        writeln!(out, "cleaned up after pid {} ({}), which ended {why}:", r.pid, r.command)?;
        for d in &r.done {
            writeln!(out, "  done: {d}")?;
        }
        for d in &r.skipped {
            writeln!(out, "  not needed after the reboot: {d}")?;
        }
        for e in &r.errors {
            writeln!(out, "  FAILED: {e}")?;
        }
        if !r.errors.is_empty() {
            writeln!(out, "  (kept in {} for another try)", r.journal.display())?;
            failed = true;
        }
    }
    if verbose && found.iter().all(|r| r.running) {
        writeln!(
            out,
            "nothing left to clean up by earlier validate runs ({})",
            pagesim_host::journal::dir().display()
        )?;
    }
    if failed {
        return Err("validate: some of what earlier runs left could not be undone (above)".into());
    }
    Ok(())
}

/// What must be as it was after validation: swap areas, our cgroups, tunables (zswap's
/// parameters among them), the zram devices and their settings.
#[derive(Clone, Debug, PartialEq, Eq)]
struct HostState {
    swaps: Vec<String>,
    cgroups: Vec<String>,
    tunables: HostTunables,
    zram: Vec<String>,
}

impl HostState {
    /// Whether `after` is the machine as this found it. Whether zswap was used since boot
    /// is history, not a setting: a scenario with zswap on makes it true until the next
    /// boot, and nothing can undo that (its parameters are compared).
    fn restored_in(&self, after: &HostState) -> bool {
        let mut a = after.clone();
        a.tunables.zswap.used_since_boot = self.tunables.zswap.used_since_boot;
        *self == a
    }

    fn read(dir: &Path) -> HostState {
        let swaps = pagesim_host::swapfile::proc_swaps()
            .map(|v| v.into_iter().map(|e| e.filename).collect())
            .unwrap_or_default();
        let mut cgroups = Vec::new();
        for root in ["/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"] {
            if let Ok(rd) = std::fs::read_dir(root) {
                for e in rd.flatten() {
                    let n = e.file_name().to_string_lossy().into_owned();
                    if n.starts_with("pagesim-") {
                        cgroups.push(format!("{root}/{n}"));
                    }
                }
            }
        }
        cgroups.sort();
        let mut zram = Vec::new();
        if let Ok(rd) = std::fs::read_dir("/sys/block") {
            for e in rd.flatten() {
                let n = e.file_name().to_string_lossy().into_owned();
                if n.starts_with("zram") {
                    let v = |k: &str| std::fs::read_to_string(e.path().join(k)).unwrap_or_default().trim().to_string();
                    zram.push(format!(
                        "{n} disksize={} comp_algorithm={} mem_limit={}",
                        v("disksize"),
                        v("comp_algorithm"),
                        v("mem_limit")
                    ));
                }
            }
        }
        zram.sort();
        HostState { swaps, cgroups, tunables: HostTunables::read(dir), zram }
    }
}

fn print_host(h: &HostTunables, out: &mut Out) -> Result<(), Stop> {
    let o = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let mthp = h.mthp_sizes_on();
    writeln!(
        out,
        "host: Linux {}  cgroup {}  page-cluster {}  swappiness {}  min_free_kbytes {}  watermark_scale_factor {}",
        o(h.kernel_release.clone()),
        o(h.cgroup.usable.map(|v| format!("{v:?}").to_lowercase())),
        o(h.page_cluster.map(|v| v.to_string())),
        o(h.swappiness.map(|v| v.to_string())),
        o(h.min_free_kbytes.map(|v| v.to_string())),
        o(h.watermark_scale_factor.map(|v| v.to_string())),
    )?;
    writeln!(
        out,
        "      vma_ra_enabled {}  THP {} (shmem {})  zswap {} ({}, max_pool_percent {}, accept_threshold_percent {}, \
         shrinker_enabled {})  read_ahead_kb {} on {}\n      mTHP anon sizes on {}  work dir on {} (page cache large folios {})",
        o(h.vma_ra_enabled.map(|v| v.to_string())),
        o(h.thp_enabled.clone()),
        o(h.thp_shmem_enabled.clone()),
        o(h.zswap.enabled.map(|v| if v { "on".into() } else { "off".into() })),
        o(h.zswap.compressor.clone()),
        o(h.zswap.max_pool_percent.map(|v| v.to_string())),
        o(h.zswap.accept_threshold_percent.map(|v| v.to_string())),
        o(h.zswap.shrinker_enabled.map(|v| v.to_string())),
        o(h.read_ahead_kb.map(|v| v.to_string())),
        o(h.read_ahead_device.clone()),
        if mthp.is_empty() { "none".to_string() } else { mthp.join(",") },
        o(h.work_fs.clone()),
        o(h.pagecache_large_folios.map(|v| if v { "yes".into() } else { "no".into() })),
    )
}

fn print_probe(p: &DeviceProbe, out: &mut Out) -> Result<(), Stop> {
    writeln!(out, "device {} queue: {:?}", p.device.as_deref().unwrap_or("?"), p.queue)?;
    if let Some(c) = p.irq_cpu {
        writeln!(out, "completion interrupts on CPU {c}: the measurements run there, \"remote\" on another CPU")?;
    }
    writeln!(
        out,
        "  {:<6} {:>8} {:>5} {:>6} {:>10} {:>10} {:>10} {:>9}",
        "op", "block", "depth", "count", "median", "p10", "p90", "IOPS"
    )?;
    for r in &p.results {
        writeln!(
            out,
            "  {:<6} {:>8} {:>5} {:>6} {:>8.1}us {:>8.1}us {:>8.1}us {:>9.0}{}",
            if r.write { "write" } else { "read" },
            r.block,
            r.depth,
            r.count,
            r.median_ns as f64 / 1e3,
            r.p10_ns as f64 / 1e3,
            r.p90_ns as f64 / 1e3,
            r.iops,
            if r.remote { "  remote" } else { "" }
        )?;
    }
    for w in [false, true] {
        if let Some(bw) = p.bandwidth(w) {
            writeln!(
                out,
                "  {} bandwidth (extra bytes / extra QD1 time): {:.0} MB/s",
                if w { "write" } else { "read" },
                bw / 1e6
            )?;
        }
    }
    Ok(())
}

/// The /sys/block/<dev>/queue settings of the host disk that the disk model takes.
const QUEUE_KEYS: [&str; 6] =
    ["rotational", "scheduler", "max_sectors_kb", "max_segments", "max_segment_size", "read_ahead_kb"];

/// The queue settings of the disk holding `dir` ([`QUEUE_KEYS`]).
fn disk_queue(dir: &Path) -> BTreeMap<String, String> {
    let mut q = BTreeMap::new();
    let Some(d) = pagesim_host::tunables::disk_dir(dir) else { return q };
    for k in QUEUE_KEYS {
        if let Ok(v) = std::fs::read_to_string(d.join("queue").join(k)) {
            q.insert(k.to_string(), pagesim_host::sysfs::selected(&v).to_string());
        }
    }
    q
}

pub fn run(a: Args, out: &mut Out) -> Result<(), Stop> {
    if !pagesim_host::is_root() {
        return Err("validate: needs root (it creates swap files and memory cgroups and changes vm tunables); \
                    run it with sudo"
            .into());
    }
    pagesim_host::cleanup::set_signal_report(|errors| {
        for e in errors {
            eprintln!("pagesim validate: cleanup: {e}");
        }
    });
    recover(a.cleanup, out)?;
    if a.cleanup {
        return Ok(());
    }
    let work_dir = std::env::temp_dir();
    if a.probe {
        let p = pagesim_host::probe::probe_device(&work_dir, 1 << 30, 2000).map_err(|e| e.0)?;
        print_probe(&p, out)?;
        if a.files.is_empty() {
            return Ok(());
        }
    }
    // Every scenario is read before anything runs: a typo fails at once. It is read under
    // the host kernel's profile, which the run applies anyway: keys that older profiles
    // refuse (kernel.anon_mthp) are checked against the kernel they run on.
    let before = HostState::read(&work_dir);
    let mut sets = Vec::new();
    if let Some(release) = before.tunables.kernel_release.as_deref() {
        sets.push(format!("kernel.profile=\"{}\"", host_profile(release)?));
    }
    sets.extend(a.sets.iter().cloned());
    let mut scenarios = Vec::new();
    for f in &a.files {
        scenarios.push(pagesim::Scenario::load_file(f, &sets).map_err(|e| e.0)?);
    }
    print_host(&before.tunables, out)?;
    let queue = disk_queue(&work_dir);
    writeln!(
        out,
        "swap files on {} (the disk holding {}): {:?}",
        before.tunables.read_ahead_device.as_deref().unwrap_or("?"),
        work_dir.display(),
        queue
    )?;

    // The disk's latency today, for its model in pagesim (`host_disk_timing`).
    let uses_disk = scenarios.iter().any(|sc| !pagesim_host::run::disk_devices(sc).is_empty());
    let probe = if uses_disk {
        match pagesim_host::probe::probe_device(&work_dir, 64 << 20, DISK_PROBE_REQUESTS) {
            Ok(p) => Some(p),
            Err(e) => {
                writeln!(out, "disk probe failed ({e}): the disk's model keeps its measured constants")?;
                None
            }
        }
    } else {
        None
    };
    let timing = host_disk_timing(probe.as_ref());
    if let Some(p) = &probe {
        let med = |w| p.get(w, 4096, 1).map(|r| format!("{:.0} us", r.median_ns as f64 / 1e3)).unwrap_or("?".into());
        writeln!(
            out,
            "disk now: 4 KiB at queue depth 1, read {}, write {} (the disk model's latencies)",
            med(false),
            med(true)
        )?;
        if let (Some(c), Some(w)) = (timing.irq_cpu, timing.remote_wakeup_ns) {
            writeln!(
                out,
                "  completions interrupt CPU {c}; a reader on another CPU waits {:.0} us more (cpu.remote_wakeup_ns)",
                w as f64 / 1e3
            )?;
        }
    }
    let meminfo = pagesim_host::measure::meminfo().map_err(|e| e.0)?;
    let mut results = Vec::new();
    let mut all_rows = Vec::new();
    let mut failed = Vec::new();
    for (path, sc) in a.files.iter().zip(&scenarios) {
        writeln!(out, "\n== {} ({})  {} repeats", sc.name, path.display(), a.repeats)?;
        let opts =
            HostOptions { repeats: a.repeats, seed: a.seed, work_dir: Some(work_dir.clone()), ..Default::default() };
        let host = match pagesim_host::run_on_host_with(sc, &opts) {
            Ok(h) => h,
            Err(e) => {
                writeln!(out, "  host run failed: {e}")?;
                failed.push(format!("{}: {e}", sc.name));
                results.push(json!({ "scenario": sc.name, "file": path, "error": e.0 }));
                continue;
            }
        };
        let same_ram = pagesim_host::run::same_ram(sc, &meminfo);
        let (mut overrides, mut notes) = host_overrides(sc, &host.host, &queue, &timing, same_ram)?;
        let (cached, differ) = trace_cached_overrides(&host);
        overrides.extend(cached);
        notes.extend(differ);
        // The user's --sets come last and win (they were applied to the host run too).
        let mut sets: Vec<String> = overrides.iter().map(|o| o.set.clone()).collect();
        sets.extend(a.sets.iter().cloned());
        let run_sim = |extra: Option<String>| {
            let mut sets = sets.clone();
            sets.extend(extra);
            pagesim::run_file(
                path,
                pagesim::RunOptions {
                    seed: Some(host.seed),
                    sets,
                    progress: None,
                    max_memory: pagesim::host_memory_available(),
                    trace_events: false,
                },
            )
            .map(|r| r.to_json())
            .map_err(|e| format!("{}: simulator: {e}", path.display()))
        };
        // Where reclaim reads flushed memcg statistics, each host run had the kernel's
        // periodic flush at its own phase: pagesim runs once per host run, at that run's
        // phase, and its counters are the medians (as the kernel's are).
        let phases = flush_phases(sc, &host);
        let sim = match &phases {
            Some(ph) => {
                let runs: Vec<Value> = ph
                    .iter()
                    .map(|&p| run_sim(Some(format!("kernel.memcg_stats_flush_phase={p}"))))
                    .collect::<Result<_, _>>()?;
                median_report(&runs)
            }
            None => run_sim(None)?,
        };
        for o in &overrides {
            writeln!(out, "  pagesim --set {}   ({})", o.set, o.why)?;
        }
        if let Some(ph) = &phases {
            let ms: Vec<String> = ph.iter().map(|p| format!("{:.0} ms", *p as f64 / 1e6)).collect();
            let how = if host.runs.iter().all(|r| r.memcg_flush_traced) {
                "measured: the kernel's first periodic memcg stats flush after each run's start, \
                 memcg:memcg_flush_stats"
            } else {
                "NOT measured: tracefs is not at /sys/kernel/tracing or has no memcg:memcg_flush_stats; \
                 assumed just after each run's end"
            };
            writeln!(
                out,
                "  pagesim --set kernel.memcg_stats_flush_phase=[{}]   ({how}; one pagesim run per host run, medians)",
                ms.join(", ")
            )?;
        }
        for n in &notes {
            writeln!(out, "  note: {n}")?;
        }
        let rows = compare(sc, &host, &sim);
        write!(out, "{}", table(&rows))?;
        let wall: Vec<u64> = host.runs.iter().map(|r| r.load.wall_ns).collect();
        let (wm, wlo, whi) = median_min_max(&wall);
        let sim_s = sim["elapsed_ns"].as_u64().unwrap_or(0) as f64 / 1e9;
        writeln!(
            out,
            "  {:<26} {:<6} {:>12} {:>25} {:>12} {:>9}",
            "elapsed (s)",
            "load",
            format!("{:.3}", wm / 1e9),
            format!("({:.3}-{:.3})", wlo as f64 / 1e9, whi as f64 / 1e9),
            format!("{sim_s:.3}"),
            fmt_err(rel_error(wm / 1e9, sim_s))
        )?;
        let latency = fault_latency_rows(&host, &sim);
        for (what, kernel, (lo, hi), pagesim) in &latency {
            writeln!(
                out,
                "  {:<26} {:<6} {:>12} {:>25} {:>12} {:>9}",
                what,
                "load",
                format!("{kernel:.1}"),
                format!("({lo:.1}-{hi:.1})"),
                format!("{pagesim:.1}"),
                fmt_err(rel_error(*kernel, *pagesim))
            )?;
        }
        let incomplete: usize = host.runs.iter().map(|r| r.load.tasks.iter().filter(|t| !t.completed()).count()).sum();
        if incomplete > 0 {
            writeln!(out, "  warning: {incomplete} task runs did not complete on the host (OOM or time limit)")?;
        }
        let damon: Vec<String> = host
            .runs
            .iter()
            .map(|r| format!("{} -> {} (+{})", r.damon_sz_applied_before, r.damon_sz_applied_after, r.damon_sz_applied))
            .collect();
        writeln!(out, "  DAMON sz_applied before -> after, per run: {}", damon.join(", "))?;
        // Other I/O on the machine during the run: vmstat's pgpgin/pgpgout are machine-wide.
        let noise: Vec<String> = host
            .runs
            .iter()
            .map(|r| {
                let g = |k: &str| r.vmstat.get(k).copied().unwrap_or(0) as i64;
                format!("{}/{}", g("pgpgin") - 4 * g("pswpin"), g("pgpgout") - 4 * g("pswpout"))
            })
            .collect();
        writeln!(out, "  non-swap block I/O on the machine during each run, KiB in/out: {}", noise.join(", "))?;
        let (n, w) = acceptance(rows.iter());
        writeln!(out, "  {w} of {n} counted pairs within {:.0}%", TOLERANCE * 100.0)?;
        results.push(json!({
            "scenario": sc.name,
            "file": path,
            "overrides": overrides,
            "notes": notes,
            "comparison": rows,
            "fault_latency": latency
                .iter()
                .map(|(what, k, (lo, hi), p)| json!({"what": what, "kernel_median": k, "kernel_min": lo, "kernel_max": hi, "pagesim": p}))
                .collect::<Vec<_>>(),
            "host": host,
            "pagesim": sim,
        }));
        all_rows.extend(rows);
    }

    let after = HostState::read(&work_dir);
    let restored = before.restored_in(&after);
    let (n, w) = acceptance(all_rows.iter());
    let fraction = if n == 0 { 0.0 } else { w as f64 / n as f64 };
    writeln!(
        out,
        "\nacceptance: {w} of {n} (scenario, counter) pairs with kernel median > {MIN_KERNEL_VALUE:.0} are within {:.0}%: \
         {:.1}% (required {:.0}%)",
        TOLERANCE * 100.0,
        fraction * 100.0,
        REQUIRED_FRACTION * 100.0
    )?;
    let out_rows: Vec<&Row> = all_rows.iter().filter(|r| r.counted && !r.within).collect();
    if !out_rows.is_empty() {
        let names: Vec<String> = out_rows.iter().map(|r| format!("{} {}", r.counter, fmt_err(r.rel_error))).collect();
        writeln!(out, "outside: {}", names.join(", "))?;
    }
    if restored {
        writeln!(
        out,
            "machine left as found: no swap areas added, no pagesim cgroups, tunables and zswap as before, zram devices \
             as before"
        )?;
    } else {
        writeln!(out, "MACHINE NOT AS FOUND: before {before:?}\nafter {after:?}")?;
    }
    if let Some(p) = &a.json {
        let doc = json!({
            "host": before.tunables,
            "disk_queue": queue,
            "host_disk_timing": timing.device.iter().map(|(k, v)| (k.to_string(), v.clone())).collect::<BTreeMap<_, _>>(),
            "host_disk_irq_cpu": timing.irq_cpu,
            "host_remote_wakeup_ns": timing.remote_wakeup_ns,
            "disk_probe": probe,
            "repeats": a.repeats,
            "scenarios": results,
            "acceptance": {
                "counters": ACCEPTANCE_COUNTERS,
                "write_counters": WRITE_COUNTERS,
                "min_kernel_value": MIN_KERNEL_VALUE,
                "tolerance": TOLERANCE,
                "pairs": n,
                "within": w,
                "fraction": fraction,
                "required": REQUIRED_FRACTION,
            },
            "machine_restored": restored,
        });
        std::fs::write(p, serde_json::to_string_pretty(&doc).expect("json"))
            .map_err(|e| format!("{}: {e}", p.display()))?;
    }
    let leftovers = pagesim_host::cleanup::take_errors();
    for e in &leftovers {
        writeln!(out, "cleanup error: {e}")?;
    }
    if !failed.is_empty() || !restored || !leftovers.is_empty() || (a.check && fraction < REQUIRED_FRACTION) {
        out.flush()?;
        std::process::exit(1);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(extra: &str) -> pagesim::Scenario {
        let text = format!(
            "[machine]\nram = \"1GB\"\n{extra}\n[device.d]\nmodel = \"hdd\"\n[[swap]]\ndevice = \"d\"\nsize = \"64MB\"\n\
             [memcg.box]\nmax = \"32MB\"\n[region.r]\nkind = \"anon\"\nsize = \"48MB\"\n\
             [[task]]\nname = \"t\"\nmemcg = \"box\"\n[[task.step]]\nregion = \"r\"\npattern = \"seq\"\n"
        );
        pagesim::Scenario::from_toml(&text, "s.toml", &[]).unwrap()
    }

    /// The `--set`s validate gives pagesim for `sc` on host `h` (fixed disk constants).
    fn sets(sc: &pagesim::Scenario, h: &HostTunables) -> Vec<String> {
        host_overrides(sc, h, &BTreeMap::new(), &host_disk_timing(None), false)
            .unwrap()
            .0
            .into_iter()
            .map(|o| o.set)
            .collect()
    }

    fn host() -> HostTunables {
        HostTunables {
            kernel_release: Some("6.18.44-fc-v595".into()),
            page_cluster: Some(2),
            swappiness: Some(100),
            min_free_kbytes: Some(67584),
            watermark_scale_factor: Some(10),
            vma_ra_enabled: Some(false),
            work_fs: Some("ext4".into()),
            pagecache_large_folios: Some(true),
            cgroup: pagesim_host::tunables::CgroupInfo {
                usable: Some(pagesim_host::CgroupVersion::V1),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// zswap's first use since boot (a scenario with zswap on) leaves the machine as found;
    /// zswap left enabled, or a swap area left behind, does not.
    #[test]
    fn zswap_used_since_boot_is_history_not_a_change() {
        let state = |used: bool, enabled: bool| HostState {
            swaps: Vec::new(),
            cgroups: Vec::new(),
            tunables: HostTunables {
                zswap: pagesim_host::tunables::Zswap {
                    used_since_boot: Some(used),
                    enabled: Some(enabled),
                    ..Default::default()
                },
                ..host()
            },
            zram: Vec::new(),
        };
        let before = state(false, false);
        assert!(before.restored_in(&state(true, false)));
        assert!(!before.restored_in(&state(true, true)));
        let swap_left = HostState { swaps: vec!["/tmp/x".into()], ..state(false, false) };
        assert!(!before.restored_in(&swap_left));
    }

    /// The host's swap areas are files (large folios are split before swap-out there), and
    /// for a scenario with anon mTHP the host's zswap history since boot decides whether
    /// large folios can be read back.
    #[test]
    fn swap_areas_are_files_and_zswap_history_follows_the_host_for_anon_mthp() {
        let plain = scenario("");
        assert!(sets(&plain, &host()).contains(&"swap.0.file=true".to_string()));
        let used = HostTunables {
            zswap: pagesim_host::tunables::Zswap { used_since_boot: Some(true), ..Default::default() },
            ..host()
        };
        assert!(!sets(&plain, &used).iter().any(|s| s.starts_with("zswap.ever_enabled")), "no mTHP: not needed");
        let mthp = scenario("[kernel]\nprofile = \"linux-6.18\"\nanon_mthp = [\"64KB\"]");
        assert!(sets(&mthp, &used).contains(&"zswap.ever_enabled=true".to_string()));
        let fresh = HostTunables {
            zswap: pagesim_host::tunables::Zswap { used_since_boot: Some(false), ..Default::default() },
            ..host()
        };
        assert!(!sets(&mthp, &fresh).iter().any(|s| s.starts_with("zswap.ever_enabled")));
        let z = "[device.z]\nmodel = \"zram\"\n[[swap]]\ndevice = \"z\"\nsize = \"16MB\"";
        // The zram area comes first here: it stays a block device, the disk's is a file.
        let two = sets(&scenario(z), &host());
        assert!(
            !two.contains(&"swap.0.file=true".to_string()) && two.contains(&"swap.1.file=true".to_string()),
            "{two:?}"
        );
    }

    /// A probe's 4 KiB queue-depth-1 measurement with median `ns` (on another CPU than the
    /// disk's interrupt CPU when `remote`).
    fn qd1_4k(write: bool, ns: u64, remote: bool) -> pagesim_host::probe::ProbeResult {
        pagesim_host::probe::ProbeResult {
            write,
            block: 4096,
            depth: 1,
            count: 400,
            median_ns: ns,
            p10_ns: ns,
            p90_ns: ns,
            iops: 1e9 / ns as f64,
            remote,
        }
    }

    /// The disk model takes the 4 KiB queue-depth-1 latencies measured at the start of the
    /// run, less the transfer at the model's bandwidth; without a probe, the constants.
    #[test]
    fn the_disk_model_takes_the_latencies_measured_now() {
        let probe = DeviceProbe {
            device: None,
            queue: BTreeMap::new(),
            file_bytes: 64 << 20,
            irq_cpu: None,
            results: vec![qd1_4k(false, 67_000, false), qd1_4k(true, 88_000, false)],
        };
        let get = |t: &DiskTiming, k: &str| t.device.iter().find(|(key, _)| *key == k).unwrap().1.clone();
        let t = host_disk_timing(Some(&probe));
        // 4096 B at 1.35 GB/s is 3 us, at 5 GB/s 1 us.
        assert_eq!((get(&t, "read_latency"), get(&t, "write_latency")), ("\"64us\"".into(), "\"87us\"".into()));
        assert_eq!(get(&t, "read_bandwidth"), "1350000000");
        let fixed = host_disk_timing(None);
        assert_eq!(get(&fixed, "read_latency"), "\"50us\"");
        assert_eq!((t.irq_cpu, t.remote_wakeup_ns), (None, None), "a disk without one interrupt CPU");
    }

    /// A disk whose completions interrupt one CPU: the model gets that CPU, and the wakeup
    /// of a reader elsewhere is the remote read's extra time; both only for a machine that
    /// has the CPU and a scenario that uses the disk.
    #[test]
    fn the_disk_interrupt_cpu_and_the_remote_wakeup_come_from_the_probe() {
        let probe = DeviceProbe {
            device: None,
            queue: BTreeMap::new(),
            file_bytes: 64 << 20,
            irq_cpu: Some(1),
            results: vec![qd1_4k(false, 62_000, false), qd1_4k(false, 110_000, true)],
        };
        let t = host_disk_timing(Some(&probe));
        assert_eq!((t.irq_cpu, t.remote_wakeup_ns), (Some(1), Some(48_000)));
        let two = scenario("cpus = 2");
        let (o, _) = host_overrides(&two, &host(), &BTreeMap::new(), &t, false).unwrap();
        let set: Vec<&str> = o.iter().map(|o| o.set.as_str()).collect();
        assert!(set.iter().any(|s| s.starts_with("device.d=") && s.contains("irq_cpu = 1")), "{set:?}");
        assert!(set.contains(&"cpu.remote_wakeup_ns=48000"), "{set:?}");
        let one = scenario("cpus = 1");
        let (o, notes) = host_overrides(&one, &host(), &BTreeMap::new(), &t, false).unwrap();
        assert!(!o.iter().any(|o| o.set.contains("irq_cpu")), "a one-CPU machine has no CPU 1");
        assert!(notes.iter().any(|n| n.contains("CPU 1")), "{notes:?}");
    }

    /// A scenario with files takes the host's large-folio setting (its filesystem on its
    /// kernel) unless it gives its own; one without files does not need it.
    #[test]
    fn large_folios_follow_the_host_filesystem_for_scenarios_with_files() {
        let text = "[machine]\nram = \"1GB\"\n[device.d]\nmodel = \"nvme\"\n[file.f]\ndevice = \"d\"\n\
                    size = \"1MB\"\n[memcg.box]\nmax = \"64MB\"\n[[task]]\nname = \"t\"\nmemcg = \"box\"\n\
                    [[task.step]]\nfile = \"f\"\npattern = \"seq\"\nop = \"read\"\n";
        let sc = pagesim::Scenario::from_toml(text, "f.toml", &[]).unwrap();
        assert!(sets(&sc, &host()).contains(&"kernel.large_folios=true".to_string()));
        let no = HostTunables { pagecache_large_folios: Some(false), ..host() };
        assert!(sets(&sc, &no).contains(&"kernel.large_folios=false".to_string()));
        let own = pagesim::Scenario::from_toml(text, "f.toml", &["kernel.large_folios=false".into()]).unwrap();
        assert!(!sets(&own, &host()).iter().any(|s| s.starts_with("kernel.large_folios")), "the scenario's stays");
        assert!(!sets(&scenario(""), &host()).iter().any(|s| s.starts_with("kernel.large_folios")), "no files");
        // XFS on 5.19 takes them, but the nearest profile (linux-3.14) predates them: a note.
        let old = HostTunables { kernel_release: Some("5.19.2".into()), ..host() };
        let (o, notes) = host_overrides(&sc, &old, &BTreeMap::new(), &host_disk_timing(None), false).unwrap();
        assert!(!o.iter().any(|o| o.set.starts_with("kernel.large_folios")), "{o:?}");
        assert!(notes.iter().any(|n| n.contains("predates")), "{notes:?}");
    }

    #[test]
    fn the_host_profile_is_the_newest_not_newer_than_the_host_kernel() {
        assert_eq!(host_profile("6.18.44-fc-v595").unwrap(), "linux-6.18");
        assert_eq!(host_profile("6.12.1").unwrap(), "linux-6.6");
        assert_eq!(host_profile("3.6.0-generic").unwrap(), "linux-3.6");
        assert_eq!(host_profile("3.13.1").unwrap(), "linux-3.6");
        assert_eq!(host_profile("3.14.1").unwrap(), "linux-3.14");
        assert_eq!(host_profile("2.6.32").unwrap(), "linux-2.6.23");
        assert!(host_profile("2.6.19").is_err());
        assert!(host_profile("weird").is_err());
    }

    #[test]
    fn host_values_fill_what_the_scenario_leaves_open_and_the_swap_device_becomes_the_host_disk() {
        let queue: BTreeMap<String, String> = [
            ("rotational", "1"),
            ("scheduler", "mq-deadline"),
            ("max_sectors_kb", "4096"),
            ("max_segments", "254"),
            ("max_segment_size", "4294967295"),
            ("read_ahead_kb", "8192"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let sc = scenario("[vm]\nswappiness = 30");
        let (o, notes) = host_overrides(&sc, &host(), &queue, &host_disk_timing(None), false).unwrap();
        let sets: Vec<&str> = o.iter().map(|o| o.set.as_str()).collect();
        assert!(sets[0].starts_with("kernel.profile=\"linux-6."), "{sets:?}");
        assert!(sets.contains(&"vm.page-cluster=2") && sets.contains(&"kernel.vma_ra_enabled=false"), "{sets:?}");
        assert!(sets.contains(&"kernel.cgroup_version=1"), "{sets:?}");
        assert!(!sets.iter().any(|s| s.starts_with("vm.swappiness")), "the scenario's own value stays: {sets:?}");
        assert!(!sets.iter().any(|s| s.starts_with("vm.min_free_kbytes")), "RAM differs: {sets:?}");
        assert!(notes.iter().any(|n| n.contains("min_free_kbytes")), "{notes:?}");
        // The overrides make a valid scenario whose swap device is the rotational flash disk.
        let all: Vec<String> = o.iter().map(|o| o.set.clone()).collect();
        let base = "[machine]\nram = \"1GB\"\n[device.d]\nmodel = \"hdd\"\nrpm = 5400\n[[swap]]\ndevice = \"d\"\n\
                    size = \"64MB\"\n[region.r]\nkind = \"anon\"\nsize = \"1MB\"\n[[task]]\nname = \"t\"\n\
                    [[task.step]]\nregion = \"r\"\npattern = \"seq\"\n";
        let s = pagesim::Scenario::from_toml(base, "b.toml", &all).unwrap();
        let dev = pagesim::device::DeviceModel::new(&s.file.device["d"]).unwrap();
        assert_eq!(dev.name(), "nvme");
        assert!(dev.rotational(), "virtio disks report rotational = 1");
        assert_eq!(dev.max_request_bytes(), 4096 * 1024);
        assert_eq!(dev.queue_params().max_segments, 254, "a swap-out request holds at most 254 pages");
        assert_eq!(dev.queue_params().read_ahead_kb, 8192, "the host disk's read_ahead_kb");
        assert_eq!(s.file.vm.page_cluster, Some(2));
        // Same RAM: the watermarks carry over.
        let (o, _) = host_overrides(&sc, &host(), &queue, &host_disk_timing(None), true).unwrap();
        assert!(o.iter().any(|o| o.set == "vm.min_free_kbytes=67584"));
    }

    #[test]
    fn file_devices_become_the_host_disk_and_zram_keeps_its_model() {
        let queue: BTreeMap<String, String> = [("read_ahead_kb".to_string(), "8192".to_string())].into();
        let text = "[machine]\nram = \"1GB\"\n[device.z]\nmodel = \"zram\"\n[device.f]\nmodel = \"hdd\"\n\
                    [[swap]]\ndevice = \"z\"\nsize = \"64MB\"\n[file.data]\ndevice = \"f\"\nsize = \"8MB\"\n\
                    [memcg.box]\nmax = \"32MB\"\n[[task]]\nname = \"t\"\nmemcg = \"box\"\n[[task.step]]\n\
                    file = \"data\"\nop = \"read\"\npattern = \"seq\"\n";
        let sc = pagesim::Scenario::from_toml(text, "f.toml", &[]).unwrap();
        let (o, _) = host_overrides(&sc, &host(), &queue, &host_disk_timing(None), false).unwrap();
        let devs: Vec<&str> = o.iter().filter(|o| o.set.starts_with("device.")).map(|o| o.set.as_str()).collect();
        assert_eq!(devs.len(), 1, "{devs:?}");
        assert!(devs[0].starts_with("device.f={ model = \"nvme\"") && devs[0].contains("read_ahead_kb = 8192"));
        let all: Vec<String> = o.iter().map(|o| o.set.clone()).collect();
        let s = pagesim::Scenario::from_toml(text, "f.toml", &all).unwrap();
        let dev = pagesim::device::DeviceModel::new(&s.file.device["f"]).unwrap();
        assert_eq!((dev.name(), dev.queue_params().read_ahead_kb), ("nvme", 8192));
        assert_eq!(pagesim::device::DeviceModel::new(&s.file.device["z"]).unwrap().name(), "zram");
    }

    /// A read_ahead_kb the scenario gives its disk is set on the host for the run, so
    /// pagesim keeps it instead of taking the host disk's; two disk devices that disagree
    /// cannot both be the one host disk.
    #[test]
    fn a_read_ahead_kb_the_scenario_gives_is_kept() {
        let queue: BTreeMap<String, String> = [("read_ahead_kb".to_string(), "8192".to_string())].into();
        let text = "[machine]\nram = \"1GB\"\n[device.f]\nmodel = \"nvme\"\nread_ahead_kb = 128\n\
                    [file.data]\ndevice = \"f\"\nsize = \"8MB\"\n[memcg.box]\nmax = \"32MB\"\n\
                    [[task]]\nname = \"t\"\nmemcg = \"box\"\n[[task.step]]\nfile = \"data\"\nop = \"read\"\n\
                    pattern = \"seq\"\n";
        let sc = pagesim::Scenario::from_toml(text, "f.toml", &[]).unwrap();
        assert_eq!(pagesim_host::run::scenario_read_ahead_kb(&sc).unwrap(), Some(128));
        let (o, _) = host_overrides(&sc, &host(), &queue, &host_disk_timing(None), false).unwrap();
        let all: Vec<String> = o.iter().map(|o| o.set.clone()).collect();
        let s = pagesim::Scenario::from_toml(text, "f.toml", &all).unwrap();
        let dev = pagesim::device::DeviceModel::new(&s.file.device["f"]).unwrap();
        assert_eq!(dev.queue_params().read_ahead_kb, 128);
        // Without it, the host disk's.
        let plain = text.replace("read_ahead_kb = 128\n", "");
        let sc = pagesim::Scenario::from_toml(&plain, "f.toml", &[]).unwrap();
        assert_eq!(pagesim_host::run::scenario_read_ahead_kb(&sc).unwrap(), None);
        // Given by --set, the same.
        let sc = pagesim::Scenario::from_toml(&plain, "f.toml", &["device.f.read_ahead_kb=512".into()]).unwrap();
        assert_eq!(pagesim_host::run::scenario_read_ahead_kb(&sc).unwrap(), Some(512));
        // A swap device on the same disk with another value.
        let two = format!(
            "{text}[device.s]\nmodel = \"nvme\"\nread_ahead_kb = 256\n[[swap]]\ndevice = \"s\"\nsize = \"64MB\"\n"
        );
        let sc = pagesim::Scenario::from_toml(&two, "f.toml", &[]).unwrap();
        let e = pagesim_host::run::scenario_read_ahead_kb(&sc).unwrap_err().0;
        assert!(e.contains("device.f.read_ahead_kb = 128") && e.contains("device.s.read_ahead_kb = 256"), "{e}");
    }

    #[test]
    fn statistics_and_the_acceptance_count() {
        assert_eq!(median_min_max(&[5, 1, 3]), (3.0, 1, 5));
        assert_eq!(median_min_max(&[4, 1, 3, 10]), (3.5, 1, 10));
        assert_eq!(rel_error(100.0, 115.0), Some(0.15));
        assert_eq!(rel_error(0.0, 0.0), Some(0.0));
        assert_eq!(rel_error(0.0, 3.0), None);
        let row = |kernel: f64, sim: u64, acc: bool| {
            let e = rel_error(kernel, sim as f64);
            Row {
                counter: "x".into(),
                source: "vmstat",
                kernel: vec![],
                kernel_median: kernel,
                kernel_min: 0,
                kernel_max: 0,
                pagesim: sim,
                rel_error: e,
                counted: acc && kernel > MIN_KERNEL_VALUE,
                within: e.is_some_and(|e| e.abs() <= TOLERANCE),
            }
        };
        let rows = [row(2000.0, 2200, true), row(2000.0, 3000, true), row(900.0, 0, true), row(5000.0, 5000, false)];
        assert_eq!(acceptance(rows.iter()), (2, 1), "only acceptance counters above 1000 count");
        let t = table(&rows);
        assert!(t.contains("+10.0% ok") && t.contains("+50.0% OUT"), "{t}");
    }

    /// `pagesim validate ARGS...` as clap parses it.
    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        use clap::Parser;
        let cli = crate::Cli::try_parse_from(["pagesim", "validate"].iter().chain(args))?;
        match cli.command {
            crate::Command::Validate(a) => Ok(a),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn arguments() {
        use clap::error::ErrorKind;
        let a = parse(&["a.toml", "--repeats", "5", "b.toml"]).unwrap();
        assert_eq!((a.files.len(), a.repeats), (2, 5));
        assert_eq!(parse(&["a.toml"]).unwrap().repeats, 3, "the default");
        assert_eq!(parse(&["-n", "0", "a.toml"]).unwrap_err().kind(), ErrorKind::ValueValidation);
        assert_eq!(parse(&[]).unwrap_err().kind(), ErrorKind::MissingRequiredArgument);
        let a = parse(&["--probe"]).unwrap();
        assert!(a.probe && a.files.is_empty());
        let e = parse(&["--frob"]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UnknownArgument);
        assert!(e.to_string().contains("--frob"), "{e}");
        let a = parse(&["--set", "vm.swappiness=10", "--set=machine.ram=1GB", "a.toml"]).unwrap();
        assert_eq!(a.sets, ["vm.swappiness=10", "machine.ram=1GB"]);
    }

    /// A measured flush phase is kept, a run without one gets a phase after its end, and
    /// either stays below the period; pagesim's counters over several runs are the medians.
    #[test]
    fn flush_phases_and_median_reports() {
        assert_eq!(flush_phase(Some(300_000_000), 900_000_000, 2_000_000_000), 300_000_000);
        assert_eq!(flush_phase(None, 900_000_000, 2_000_000_000), 901_000_000);
        assert_eq!(flush_phase(None, 5_000_000_000, 2_000_000_000), 1_999_999_999);
        assert_eq!(flush_phase(Some(2_150_000_000), 900_000_000, 2_000_000_000), 1_999_999_999);
        let runs = [
            json!({ "counters": { "pgpgin": 72, "pgfault": 5 }, "elapsed_ns": 3, "name": "a" }),
            json!({ "counters": { "pgpgin": 113, "pgfault": 5 }, "elapsed_ns": 1, "name": "b" }),
            json!({ "counters": { "pgpgin": 100, "pgfault": 6 }, "elapsed_ns": 2, "name": "c" }),
        ];
        let m = median_report(&runs);
        assert_eq!((m["counters"]["pgpgin"].as_u64(), m["counters"]["pgfault"].as_u64()), (Some(100), Some(5)));
        assert_eq!((m["elapsed_ns"].as_u64(), m["name"].as_str()), (Some(2), Some("a")));
    }

    #[test]
    fn the_check_help_states_the_acceptance_thresholds() {
        use clap::CommandFactory;
        let mut cmd = crate::Cli::command();
        let help = cmd.find_subcommand_mut("validate").unwrap().render_long_help().to_string();
        for n in [REQUIRED_FRACTION * 100.0, TOLERANCE * 100.0, MIN_KERNEL_VALUE] {
            assert!(help.contains(&format!("{n:.0}")), "{n} is not in\n{help}");
        }
    }
}
