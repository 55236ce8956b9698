//! When the kernel's periodic memcg stats flush runs, relative to each run's start.
//!
//! On 6.x the LRU sizes and workingset counts that memcg reclaim and the refault test read
//! are those of the last rstat flush, and the flush that keeps them fresh is a kworker's,
//! every 2 s on its own clock (`flush_memcg_stats_dwork`): its phase relative to a run's
//! start is arbitrary, and a run of a second or two depends on it (docs/model.md, "Memcg
//! statistics in reclaim"). The `memcg:memcg_flush_stats` tracepoint (6.10+) shows it:
//!
//! ```text
//!   kworker/u8:2-32004 [000] ..... 64081.461825: memcg_flush_stats: memcg_id=1 stats_updates=204 force=1 needs_flush=1
//! ```
//!
//! The periodic flush is the forced one (`force=1`); reclaim's and `memory.stat`'s are not.
//! A tracefs instance of our own (`instances/pagesim-PID`: its own buffer and event switch,
//! the machine's tracing left alone) records it; before each run the buffer is cleared and a
//! marker written (`trace_marker`), after it the first forced flush after the marker gives
//! the phase. The instance is removed when this is dropped (or by the journal's recovery).

use crate::cleanup::{Cleanup, Undo};
use crate::Error;
use std::path::{Path, PathBuf};

const TRACEFS: &str = "/sys/kernel/tracing";
const MARK: &str = "pagesim-run-start";

/// A tracefs instance recording `memcg:memcg_flush_stats`.
pub struct FlushTrace {
    dir: PathBuf,
    _remove: Cleanup,
}

impl FlushTrace {
    /// Creates the instance and enables the event; `None` when tracefs is not mounted or the
    /// kernel has no such tracepoint (before 6.10): the phase is then not measured.
    pub fn start() -> Option<FlushTrace> {
        let root = Path::new(TRACEFS);
        if !root.join("events/memcg/memcg_flush_stats").is_dir() {
            return None;
        }
        let dir = root.join(format!("instances/pagesim-{}", std::process::id()));
        let remove = Cleanup::undo(Undo::RemoveTraceInstance { dir: dir.clone() });
        std::fs::create_dir(&dir).ok()?;
        let ft = FlushTrace { dir, _remove: remove };
        crate::sysfs::write(&ft.dir.join("events/memcg/memcg_flush_stats/enable"), "1").ok()?;
        crate::sysfs::write(&ft.dir.join("tracing_on"), "1").ok()?;
        Some(ft)
    }

    /// Empties the buffer and marks a run's start.
    pub fn mark(&self) -> Result<(), Error> {
        crate::sysfs::write(&self.dir.join("trace"), "")?;
        crate::sysfs::write(&self.dir.join("trace_marker"), MARK)
    }

    /// Nanoseconds from the last [`FlushTrace::mark`] to the first periodic flush after it,
    /// if one came before now.
    pub fn first_periodic_flush(&self) -> Option<u64> {
        let text = std::fs::read_to_string(self.dir.join("trace")).ok()?;
        first_periodic_flush_in(&text)
    }
}

/// The timestamp of a trace line, in ns: the field `SECONDS.MICROS:` before the event name.
fn timestamp_ns(line: &str) -> Option<u64> {
    let ts = line.split_whitespace().find_map(|w| w.strip_suffix(':').filter(|t| t.contains('.')))?;
    let (s, us) = ts.split_once('.')?;
    Some(s.parse::<u64>().ok()? * 1_000_000_000 + format!("{us:0<9}").get(..9)?.parse::<u64>().ok()?)
}

fn first_periodic_flush_in(text: &str) -> Option<u64> {
    let mut start = None;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        if line.contains("tracing_mark_write:") && line.contains(MARK) {
            start = timestamp_ns(line);
        } else if line.contains("memcg_flush_stats:") && line.contains("force=1") {
            if let (Some(s), Some(t)) = (start, timestamp_ns(line)) {
                if t >= s {
                    return Some(t - s);
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The phase is the first forced flush after the marker: flushes before it, and reclaim's
    /// or memory.stat's unforced ones, do not count.
    #[test]
    fn the_first_forced_flush_after_the_mark_gives_the_phase() {
        let text = "# tracer: nop\n\
            kworker/u8:1-13876 [001] ..... 64079.408898: memcg_flush_stats: memcg_id=1 stats_updates=192 force=1 needs_flush=1\n\
            pagesim-31935 [000] ...1. 64080.000100: tracing_mark_write: pagesim-run-start\n\
            pagesim-31935 [000] ..... 64080.950249: memcg_flush_stats: memcg_id=73891 stats_updates=192 force=0 needs_flush=1\n\
            kworker/u8:2-32004 [000] ..... 64081.461825: memcg_flush_stats: memcg_id=1 stats_updates=204 force=1 needs_flush=1\n\
            kworker/u8:2-32004 [000] ..... 64083.509776: memcg_flush_stats: memcg_id=1 stats_updates=192 force=1 needs_flush=1\n";
        assert_eq!(first_periodic_flush_in(text), Some(1_461_725_000));
        assert_eq!(first_periodic_flush_in(&text[..text.find("kworker/u8:2").unwrap()]), None, "none yet");
        assert_eq!(timestamp_ns("x [000] ..... 12.5: e:"), Some(12_500_000_000));
    }
}
