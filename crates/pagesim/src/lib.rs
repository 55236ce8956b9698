//! pagesim: a deterministic, discrete-event simulator of the Linux memory-management
//! subsystem (page cache and file readahead, anonymous and shmem memory, swap, swap-in
//! readahead, zswap and zram, LRU reclaim, kswapd, memory cgroups, workingset detection)
//! over timed block devices. engine/mod.rs's header follows one access through the files.
//!
//! The library never prints and never exits: it returns a [`Report`] or an [`Error`] whose
//! message names the file, the key and what was expected.

pub mod device;
pub mod engine;
pub mod histogram;
pub mod ids;
pub mod mm;
pub mod pagecache;
pub mod profile;
pub mod reclaim;
pub mod registry;
pub mod report;
pub mod reproduce;
pub mod rng;
pub mod scenario;
pub mod swap;
#[cfg(test)]
mod testutil;
pub mod units;
pub mod workload;

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

/// Progress of a long run, handed to [`RunOptions::progress`] about every 2^20 operations.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Simulated time so far, nanoseconds.
    pub sim_ns: u64,
    /// Operations (accesses) executed so far.
    pub ops_done: u64,
    /// Operations the workload will execute in total, when known.
    pub ops_total: Option<u64>,
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
    let mut sim = engine::Sim::new(sc, seed);
    sim.run(&mut opts.progress);
    if let Some(p) = opts.progress.as_mut() {
        p(&Progress { sim_ns: sim.sched.now, ops_done: sim.sched.ops_done, ops_total: Some(sim.sched.ops_total) });
    }
    Ok(Report::from_sim(sc, seed, &sim))
}
