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
//!
//! tracefs is found at /sys/kernel/tracing. Where it is not mounted (a machine that boots
//! without the mount: this project's VM mounts neither tracefs nor debugfs), it is mounted at
//! a directory of our own under the journal's (`tracefs-PID`), which leaves the machine's
//! paths as they were: tracefs is one tree however often it is mounted, so the instance is
//! the kernel's as any other. That mount is undone, and its directory removed, after the
//! instance is (the journal's recovery does the same for a process that died first).

use crate::cleanup::{Cleanup, Undo};
use crate::Error;
use std::path::{Path, PathBuf};

const TRACEFS: &str = "/sys/kernel/tracing";
const MARK: &str = "pagesim-run-start";

/// A tracefs instance recording `memcg:memcg_flush_stats`.
pub struct FlushTrace {
    dir: PathBuf,
    // Dropped in this order: the instance, then the mount it was made through (if ours).
    _remove: Cleanup,
    _mount: Option<OwnMount>,
}

/// tracefs mounted by us, and the directory it is mounted on: unmounted, then the directory
/// removed, when dropped (fields drop in order).
struct OwnMount {
    _unmount: Cleanup,
    _rmdir: Cleanup,
}

impl FlushTrace {
    /// Creates the instance and enables the event; `None` when tracefs cannot be reached
    /// (not mounted, and mounting it failed) or the kernel has no such tracepoint (before
    /// 6.10): the phase is then not measured.
    pub fn start() -> Option<FlushTrace> {
        let (root, mount) = if Path::new(TRACEFS).join("events").is_dir() {
            (PathBuf::from(TRACEFS), None)
        } else {
            let (root, m) = mount_tracefs()?;
            (root, Some(m))
        };
        if !root.join("events/memcg/memcg_flush_stats").is_dir() {
            return None;
        }
        let dir = root.join(format!("instances/pagesim-{}", std::process::id()));
        let remove = Cleanup::undo(Undo::RemoveTraceInstance { dir: dir.clone() });
        std::fs::create_dir(&dir).ok()?;
        let ft = FlushTrace { dir, _remove: remove, _mount: mount };
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

/// Mounts tracefs at `tracefs-PID` in the journal's directory; `None` if that fails (not
/// root, a kernel without tracefs). The undos are registered before each step.
fn mount_tracefs() -> Option<(PathBuf, OwnMount)> {
    let root = crate::journal::dir().join(format!("tracefs-{}", std::process::id()));
    let rmdir = Cleanup::undo(Undo::RemoveDir { path: root.clone() });
    std::fs::create_dir_all(&root).ok()?;
    let unmount = Cleanup::undo(Undo::Unmount { path: root.clone() });
    crate::sysfs::mount("tracefs", &root).ok()?;
    Some((root, OwnMount { _unmount: unmount, _rmdir: rmdir }))
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

    /// tracefs mounted by us shows the kernel's events, and dropping the guards unmounts it
    /// and removes its directory. (Needs root and a kernel with tracefs; says so otherwise.)
    #[test]
    fn our_own_tracefs_mount_is_the_kernels_tree_and_goes_away_when_dropped() {
        // SAFETY: no arguments, no side effects.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: mounting tracefs needs root");
            return;
        }
        let Some((root, mount)) = mount_tracefs() else {
            eprintln!("skipped: this kernel has no tracefs to mount");
            return;
        };
        let mounted = |p: &Path| {
            std::fs::read_to_string("/proc/self/mounts")
                .unwrap()
                .lines()
                .any(|l| l.split_whitespace().nth(1).map(crate::sysfs::unescape_octal).as_deref() == p.to_str())
        };
        assert!(mounted(&root), "{} in /proc/self/mounts", root.display());
        assert!(root.join("events").is_dir() && root.join("instances").is_dir(), "the kernel's tree");
        drop(mount);
        assert!(!mounted(&root), "unmounted");
        assert!(!root.exists(), "its directory removed");
    }
}
