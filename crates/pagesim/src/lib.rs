//! pagesim: a deterministic, discrete-event simulator of the Linux memory-management
//! subsystem (page cache and file readahead, anonymous and shmem memory, swap, swap-in
//! readahead, zswap and zram, LRU reclaim, kswapd, memory cgroups, workingset detection)
//! over timed block devices. engine/mod.rs's header follows one access through the files.
//!
//! The library never prints and never exits: it returns a [`Report`] or an [`Error`] whose
//! message names the file, the key and what was expected.

pub mod cachesim;
pub mod device;
pub mod engine;
pub mod histogram;
pub mod ids;
pub mod locking;
pub mod mm;
pub mod pagecache;
pub mod prefetch;
pub mod profile;
pub mod reclaim;
pub mod registry;
pub mod replay;
pub mod report;
pub mod reproduce;
pub mod rng;
pub mod scenario;
pub mod swap;
#[cfg(test)]
mod testutil;
pub mod trace;
pub mod tracefile;
pub mod units;
pub mod workload;
pub mod writeback;

pub use mm::vmstat::{Counter, Gauge};
pub use report::Report;
pub use scenario::Scenario;

use std::fmt;

/// A user-facing error: bad scenario, bad override, bad argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// Progress of a long run, handed to [`RunOptions::progress`] about once a second of wall
/// time (also while no operation completes), and once at the end.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Simulated time so far, nanoseconds.
    pub sim_ns: u64,
    /// Operations (accesses and read calls) executed so far.
    pub ops_done: u64,
    /// Operations the workload will execute in total, when known.
    pub ops_total: Option<u64>,
    /// Wall-clock seconds since the run started.
    pub wall_s: f64,
}

impl Progress {
    /// The progress line every front end prints (CLI, Python), without a newline:
    /// `pagesim: 12.0 s wall, 3.456 s simulated, 1048576 of 4194304 operations (25%)`.
    pub fn line(&self) -> String {
        let mut line = format!(
            "pagesim: {:.1} s wall, {:.3} s simulated, {} ",
            self.wall_s,
            self.sim_ns as f64 / 1e9,
            self.ops_done
        );
        match self.ops_total.filter(|&t| t > 0) {
            Some(t) => line.push_str(&format!("of {t} operations ({:.0}%)", 100.0 * self.ops_done as f64 / t as f64)),
            None => line.push_str("operations"),
        }
        line
    }
}

/// Receives [`Progress`] during a run.
pub type ProgressFn<'a> = Box<dyn FnMut(&Progress) + 'a>;

/// How to run a scenario.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// RNG seed; `None` uses the scenario's `seed` (default 1).
    pub seed: Option<u64>,
    /// `KEY=VALUE` overrides of scenario fields (dotted paths, e.g. `vm.swappiness=100`).
    pub sets: Vec<String>,
    /// Called periodically during the run.
    pub progress: Option<ProgressFn<'a>>,
    /// Refuse to run a scenario whose host memory estimate
    /// ([`scenario::config::Config::memory_estimate`]) exceeds this many bytes. The front
    /// ends pass the host's available memory ([`host_memory_available`]) unless told
    /// otherwise; `None`: no limit.
    pub max_memory: Option<u64>,
    /// Record the tracepoint events (`Report::trace`, and the vmscan rows
    /// `Report::ftrace_vmscan` computed from them).
    pub trace_events: bool,
}

/// The host's available memory (MemAvailable of /proc/meminfo), bytes; `None` where it
/// cannot be read. The one place the library looks at the host, for the front ends'
/// default of [`RunOptions::max_memory`].
pub fn host_memory_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Refuses a scenario that needs more host memory than `max_memory`, with the figures;
/// returns what it needs, bytes.
pub fn check_memory(sc: &Scenario, max_memory: Option<u64>) -> Result<u64, Error> {
    let need = sc.config.memory_estimate();
    match max_memory {
        Some(max) if need > max => Err(Error(format!(
            "{}: this scenario needs about {} of host memory to simulate (machine.ram, swap, files, \
             regions and tasks), more than the {} allowed (the host's available memory, or \
             --max-memory / max_memory=)",
            sc.origin,
            units::format_bytes(need),
            units::format_bytes(max)
        ))),
        _ => Ok(need),
    }
}

/// Loads a scenario file, applies the overrides and runs it.
pub fn run_file(path: &std::path::Path, opts: RunOptions<'_>) -> Result<Report, Error> {
    let scenario = Scenario::load_file(path, &opts.sets)?;
    run(&scenario, opts)
}

/// Parses a scenario from TOML text (`origin` names it in messages), applies the overrides
/// and runs it.
pub fn run_toml(text: &str, origin: &str, opts: RunOptions<'_>) -> Result<Report, Error> {
    let scenario = Scenario::from_toml(text, origin, &opts.sets)?;
    run(&scenario, opts)
}

/// Runs a scenario given as a JSON value of the same shape as the TOML file (used by the
/// Python API for scenarios given as dicts).
pub fn run_json(value: &serde_json::Value, origin: &str, opts: RunOptions<'_>) -> Result<Report, Error> {
    let scenario = Scenario::from_json(value, origin, &opts.sets)?;
    run(&scenario, opts)
}

/// Runs a resolved scenario. Every error is the resolution's (when the scenario was
/// loaded); the run itself does not fail.
pub fn run(sc: &Scenario, mut opts: RunOptions<'_>) -> Result<Report, Error> {
    let seed = opts.seed.unwrap_or(sc.config.seed);
    check_memory(sc, opts.max_memory)?;
    let mut sim = engine::Sim::new(sc, seed);
    if opts.trace_events {
        sim.enable_trace();
    }
    sim.run(&mut opts.progress);
    if let Some(p) = opts.progress.as_mut() {
        p(&sim.progress());
    }
    let mut r = Report::from_sim(sc, seed, &sim);
    r.trace = sim.take_trace();
    Ok(r)
}
