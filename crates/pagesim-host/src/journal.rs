//! The cleanup journal: what a process still has to undo on the host, on disk, so that a
//! process killed with SIGKILL (which no handler sees) leaves behind a list another process
//! can act on.
//!
//! ```text
//!   Cleanup::undo(u) / take+run ──► write_own: JOURNAL_DIR/host-<pid>.json
//!                                   { pid, start_time, boot_id, command, entries: [undo...] }
//!                                   (written to a temp file and renamed; removed when empty)
//!   recover() ──► each host-*.json whose process is gone (no PID, or another process
//!                 under that PID: its start time differs, or the machine rebooted)
//!             ──► its undos newest first; after a reboot only those that outlive one
//!                 (files); the journal removed, or kept with what failed
//! ```
//!
//! Only a root process keeps a journal: only root can make the changes it lists (swapon,
//! cgroups, /proc/sys). `PAGESIM_JOURNAL_DIR` moves it (default `/run/pagesim`, a tmpfs
//! that a reboot empties; recovery handles a kept one too).

use crate::cleanup::Undo;
use crate::Error;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// Where journals are kept unless `PAGESIM_JOURNAL_DIR` says otherwise.
pub const DEFAULT_DIR: &str = "/run/pagesim";

/// How long recovery waits for a killed process to disappear.
const KILL_TIMEOUT: Duration = Duration::from_secs(10);

/// The journal directory.
pub fn dir() -> PathBuf {
    std::env::var_os("PAGESIM_JOURNAL_DIR").map_or_else(|| PathBuf::from(DEFAULT_DIR), PathBuf::from)
}

/// One process's journal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Journal {
    pub pid: i32,
    /// The process's start time, clock ticks after boot (/proc/PID/stat field 22): with the
    /// PID and the boot, it names the process.
    pub start_time: u64,
    /// /proc/sys/kernel/random/boot_id when the process ran.
    pub boot_id: String,
    /// The process's command line, for the report.
    pub command: String,
    /// Undos still to do, oldest first.
    pub entries: Vec<Undo>,
}

/// What recovery found for one journal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Recovered {
    pub journal: PathBuf,
    pub pid: i32,
    pub command: String,
    /// The process is still alive: nothing was touched.
    pub running: bool,
    /// The machine rebooted since: only changes that outlive a reboot were undone.
    pub rebooted: bool,
    /// Undos done, newest first, as described by [`Undo::describe`].
    pub done: Vec<String>,
    /// Undos not needed after the reboot.
    pub skipped: Vec<String>,
    /// Undos that failed, with why; the journal keeps them for another try.
    pub errors: Vec<String>,
}

fn journal_path(dir: &Path, pid: i32) -> PathBuf {
    dir.join(format!("host-{pid}.json"))
}

/// This process's journal header (entries empty), read once.
fn own() -> &'static Journal {
    static OWN: OnceLock<Journal> = OnceLock::new();
    OWN.get_or_init(|| {
        let pid = std::process::id() as i32;
        Journal {
            pid,
            start_time: process_start_time(pid).unwrap_or(0),
            boot_id: boot_id(),
            command: std::env::args().collect::<Vec<_>>().join(" "),
            entries: Vec::new(),
        }
    })
}

fn boot_id() -> String {
    crate::sysfs::read_opt(Path::new("/proc/sys/kernel/random/boot_id")).unwrap_or_default()
}

/// Start time (clock ticks after boot) of process `pid`, and whether it is a zombie; `None`
/// when there is no such process.
fn process_state(pid: i32) -> Option<(u64, bool)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces or parentheses.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is field 3 (state); starttime is field 22.
    Some((fields.get(19)?.parse().ok()?, fields.first() == Some(&"Z")))
}

/// Start time of process `pid` (see [`Journal::start_time`]).
pub fn process_start_time(pid: i32) -> Option<u64> {
    process_state(pid).map(|(t, _)| t)
}

/// Makes sure the journal can be kept, before anything is changed: a host run refuses to
/// start without one.
pub fn ready() -> Result<(), Error> {
    if !crate::is_root() {
        return Ok(());
    }
    let d = dir();
    create_dir(&d).map_err(|e| {
        Error(format!(
            "cannot keep the cleanup journal in {}: {e}; without it the swap files and cgroups of a \
             killed run could not be found again (PAGESIM_JOURNAL_DIR chooses another directory)",
            d.display()
        ))
    })
}

fn create_dir(d: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(d)
}

/// Rewrites this process's journal with `undos` (oldest first), or removes it when there
/// are none. Called by [`crate::cleanup`] with its registry locked.
pub(crate) fn write_own(undos: &[&Undo]) -> Result<(), Error> {
    if !crate::is_root() {
        return Ok(());
    }
    let d = dir();
    let path = journal_path(&d, own().pid);
    if undos.is_empty() {
        return match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(Error(format!("{}: cannot remove: {e}", path.display())))
            }
            _ => Ok(()),
        };
    }
    let j = Journal { entries: undos.iter().map(|u| (*u).clone()).collect(), ..own().clone() };
    write(&d, &path, &j)
}

/// Writes `j` to `path` atomically (a temp file in `d`, renamed).
fn write(d: &Path, path: &Path, j: &Journal) -> Result<(), Error> {
    let fail = |e: std::io::Error| Error(format!("cleanup journal {}: {e}", path.display()));
    create_dir(d).map_err(fail)?;
    let tmp = d.join(format!(".host-{}.json.tmp", j.pid));
    let text = serde_json::to_string_pretty(j).expect("a journal serializes");
    std::fs::write(&tmp, text).map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(fail)
}

/// [`recover_in`] on [`dir`].
pub fn recover() -> Result<Vec<Recovered>, Error> {
    recover_in(&dir())
}

/// Undoes what the journals in `d` list for processes that are no longer alive, newest
/// journal first and, within one, newest change first (a tunable changed by two killed runs
/// ends at the value the first found). Journals of live processes (this one among them) are
/// reported as running and left alone. One recovery at a time (an flock on `d/recover.lock`).
pub fn recover_in(d: &Path) -> Result<Vec<Recovered>, Error> {
    if !d.exists() {
        return Ok(Vec::new());
    }
    // Listed under the lock: another recovery may have just removed what it undid.
    let _lock = RecoverLock::take(d)?;
    let rd = std::fs::read_dir(d).map_err(|e| Error(format!("{}: {e}", d.display())))?;
    let mut journals = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("host-") && name.ends_with(".json")) {
            continue;
        }
        let path = e.path();
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            // Its owner finished (and removed it) since the listing.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error(format!("{}: {e}", path.display()))),
        };
        let j: Journal = serde_json::from_str(&text).map_err(|e| {
            Error(format!(
                "{}: not a pagesim cleanup journal ({e}); remove it if it is not one of pagesim's",
                path.display()
            ))
        })?;
        journals.push((path, j));
    }
    // Newest first: a later run's "old value" of a tunable is an earlier run's new one.
    journals.sort_by_key(|(_, j)| std::cmp::Reverse(j.start_time));
    let boot = boot_id();
    let mut out = Vec::new();
    for (path, j) in journals {
        let rebooted = j.boot_id != boot;
        let running = !rebooted && process_start_time(j.pid) == Some(j.start_time);
        let mut r = Recovered {
            journal: path.clone(),
            pid: j.pid,
            command: j.command.clone(),
            running,
            rebooted,
            done: Vec::new(),
            skipped: Vec::new(),
            errors: Vec::new(),
        };
        if running {
            out.push(r);
            continue;
        }
        let mut failed = Vec::new();
        for u in j.entries.iter().rev() {
            if rebooted && !u.survives_reboot() {
                r.skipped.push(u.describe());
                continue;
            }
            match u.run(false) {
                Ok(()) => r.done.push(u.describe()),
                Err(e) => {
                    r.errors.push(format!("{}: {e}", u.describe()));
                    failed.insert(0, u.clone());
                }
            }
        }
        if failed.is_empty() {
            std::fs::remove_file(&path).map_err(|e| Error(format!("{}: cannot remove: {e}", path.display())))?;
        } else {
            write(d, &path, &Journal { entries: failed, ..j })?;
        }
        std::fs::remove_file(d.join(format!(".host-{}.json.tmp", r.pid))).ok();
        out.push(r);
    }
    Ok(out)
}

/// SIGKILLs process `pid` if it is still the one that started at `start_time`, and waits
/// (at most [`KILL_TIMEOUT`]) until it is gone or a zombie. Recovery uses it for a load
/// generator whose parent was killed (it normally dies with its parent: PR_SET_PDEATHSIG).
pub(crate) fn kill_if_same(pid: i32, start_time: u64) -> Result<(), String> {
    let same = || matches!(process_state(pid), Some((t, zombie)) if t == start_time && !zombie);
    if !same() {
        return Ok(());
    }
    // SAFETY: kill(2) has no memory preconditions; the start time check above makes sure the
    // PID is still the process the journal's owner started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let t = std::time::Instant::now();
    while same() {
        if t.elapsed() > KILL_TIMEOUT {
            return Err(format!("pid {pid} still alive {KILL_TIMEOUT:?} after SIGKILL"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// An exclusive flock on `recover.lock` in the journal directory, released when the file
/// is closed on drop.
struct RecoverLock {
    _file: std::fs::File,
}

impl RecoverLock {
    fn take(d: &Path) -> Result<RecoverLock, Error> {
        use std::os::fd::AsRawFd;
        let p = d.join("recover.lock");
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&p)
            .map_err(|e| Error(format!("{}: {e}", p.display())))?;
        // SAFETY: flock on an fd we own for the lifetime of `f`.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(Error(format!("{}: flock: {}", p.display(), crate::last_os_error())));
        }
        Ok(RecoverLock { _file: f })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::temp_dir;

    fn journal(pid: i32, start_time: u64, boot_id: &str, entries: Vec<Undo>) -> Journal {
        Journal { pid, start_time, boot_id: boot_id.into(), command: "pagesim validate x.toml".into(), entries }
    }

    #[test]
    fn reads_its_own_start_time() {
        let me = std::process::id() as i32;
        let t = process_start_time(me).expect("this process has a stat");
        assert_eq!(own().start_time, t);
        assert!(process_start_time(-1).is_none());
    }

    #[test]
    fn recovery_undoes_a_dead_process_newest_first_and_leaves_a_live_one() {
        let d = temp_dir("journal");
        let tunable = d.join("swappiness");
        std::fs::write(&tunable, "100\n").unwrap();
        let work = d.join("work");
        std::fs::create_dir_all(work.join("sub")).unwrap();
        let boot = boot_id();
        // A dead process (PID 0 is never a process's) that first made `work`, then changed
        // the tunable from 60, and a second dead one, newer, that changed it from 100.
        let older = journal(
            0,
            1,
            &boot,
            vec![Undo::RemoveDir { path: work.clone() }, Undo::Restore { path: tunable.clone(), value: "60".into() }],
        );
        let newer = journal(0, 2, &boot, vec![Undo::Restore { path: tunable.clone(), value: "100".into() }]);
        write(&d, &d.join("host-1.json"), &older).unwrap();
        write(&d, &d.join("host-2.json"), &newer).unwrap();
        // This process is alive: its journal is not touched.
        let me = std::process::id() as i32;
        let live = journal(me, process_start_time(me).unwrap(), &boot, vec![Undo::RemoveDir { path: work.clone() }]);
        write(&d, &journal_path(&d, me), &live).unwrap();

        let r = recover_in(&d).unwrap();
        let by_start: Vec<(bool, Vec<String>)> = r.iter().map(|r| (r.running, r.done.clone())).collect();
        assert_eq!(r.len(), 3);
        assert!(r[0].running && r[0].pid == me, "{r:?}");
        assert_eq!(
            by_start[1..],
            [
                (false, vec![format!("restore {} to \"100\"", tunable.display())]),
                (false, vec![format!("restore {} to \"60\"", tunable.display()), format!("remove {}", work.display())]),
            ]
        );
        // The older run found 60: that is what is left.
        assert_eq!(std::fs::read_to_string(&tunable).unwrap().trim(), "60");
        assert!(!work.exists());
        assert!(!d.join("host-1.json").exists() && !d.join("host-2.json").exists());
        assert!(journal_path(&d, me).exists(), "a live process's journal stays");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn after_a_reboot_only_files_are_removed_and_failures_are_kept() {
        let d = temp_dir("journal-reboot");
        let tunable = d.join("t");
        std::fs::write(&tunable, "5\n").unwrap();
        let work = d.join("work");
        std::fs::create_dir(&work).unwrap();
        let missing = d.join("no-such-dir").join("value");
        let rebooted = journal(
            0,
            1,
            "another-boot",
            vec![Undo::RemoveDir { path: work.clone() }, Undo::Restore { path: tunable.clone(), value: "9".into() }],
        );
        write(&d, &d.join("host-1.json"), &rebooted).unwrap();
        let failing = journal(0, 2, &boot_id(), vec![Undo::Restore { path: missing.clone(), value: "1".into() }]);
        write(&d, &d.join("host-2.json"), &failing).unwrap();

        let r = recover_in(&d).unwrap();
        assert_eq!(r.len(), 2);
        let (fail, reboot) = (&r[0], &r[1]);
        assert!(reboot.rebooted && !reboot.running);
        assert_eq!(reboot.done, [format!("remove {}", work.display())]);
        assert_eq!(reboot.skipped, [format!("restore {} to \"9\"", tunable.display())]);
        assert_eq!(std::fs::read_to_string(&tunable).unwrap().trim(), "5", "not restored after a reboot");
        assert!(!work.exists());
        assert_eq!(fail.errors.len(), 1, "{fail:?}");
        // The failed undo is kept for another try; the finished journal is gone.
        let kept: Journal = serde_json::from_str(&std::fs::read_to_string(d.join("host-2.json")).unwrap()).unwrap();
        assert_eq!(kept.entries, failing.entries);
        assert!(!d.join("host-1.json").exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_file_that_is_not_a_journal_is_an_error_naming_it() {
        let d = temp_dir("journal-bad");
        std::fs::write(d.join("host-7.json"), "{ not json").unwrap();
        let e = recover_in(&d).unwrap_err();
        assert!(e.0.contains("host-7.json") && e.0.contains("not a pagesim cleanup journal"), "{}", e.0);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
