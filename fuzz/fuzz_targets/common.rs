//! What every target does with a scenario that resolves: run it, bounded, and check what
//! the report must satisfy. A panic anywhere (the engine's invariant checker runs in these
//! builds, which keep debug assertions) is a crash for the fuzzer.

use pagesim::{Counter, RunOptions, Scenario};

/// At most this much host memory per run, so that the fuzzer explores instead of paging.
pub const MAX_MEMORY: u64 = 256 << 20;

/// Overrides that bound a run whatever the input says: a short simulated time and a watchdog
/// well inside it.
pub const BOUNDS: [&str; 2] = ["time_limit=\"30ms\"", "watchdog=\"10ms\""];

/// Resolves `text` with `sets` and the bounds; runs it if it resolves and fits.
pub fn bounded_run(text: &str, sets: &[String]) {
    let mut all: Vec<String> = sets.to_vec();
    all.extend(BOUNDS.iter().map(|s| s.to_string()));
    let Ok(sc) = Scenario::from_toml(text, "fuzz.toml", &all) else { return };
    run_checked(&sc);
}

/// Runs a resolved scenario (if it fits) and checks the report's invariants.
pub fn run_checked(sc: &Scenario) {
    if sc.config.memory_estimate() > MAX_MEMORY {
        // `check` already refuses it with the figure; nothing to run.
        assert!(pagesim::check_memory(sc, Some(MAX_MEMORY)).is_err());
        return;
    }
    let r = match pagesim::run(sc, RunOptions { max_memory: Some(MAX_MEMORY), ..Default::default() }) {
        Ok(r) => r,
        // `check` accepting what `run` rejects is a bug: the run must not fail on validation.
        Err(e) => panic!("a scenario that resolved failed to run: {e}"),
    };
    let c = |k| r.counter(k);
    assert!(c(Counter::PgMajFault) <= c(Counter::PgFault), "pgmajfault > pgfault");
    assert!(r.ops_done <= r.ops_total);
    // A burst in progress at the limit runs to its end, and the run ends there: past the
    // limit, only the time limit (or completion in that burst) can have ended it.
    assert!(
        r.elapsed_ns <= 30_000_000 || r.completed || r.stop_reason.as_deref() == Some("time_limit"),
        "elapsed {} past the time limit, stopped by {:?}",
        r.elapsed_ns,
        r.stop_reason
    );
    assert_eq!(r.completed, r.stop_reason.is_none());
    assert!(r.tasks.iter().all(|t| t.elapsed_ns <= r.elapsed_ns));
}
