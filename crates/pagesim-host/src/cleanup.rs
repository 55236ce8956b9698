//! Undo actions that run exactly once: when their guard is dropped (or closed explicitly),
//! or, if the process gets SIGINT or SIGTERM first, from the signal path.
//!
//! ```text
//!   guard created ──► register(undo) ──► REGISTRY [a, b, c]   (creation order)
//!   guard dropped ──► take own entry, run it             (normal path)
//!   SIGINT/SIGTERM ─► handler writes the signal number to a pipe (async-signal-safe)
//!                     watcher thread reads it, takes every entry, runs them newest first
//!                     (c, b, a: the load is killed before its memcg is removed, the memcg
//!                     before the swap file is switched off), then re-raises the signal with
//!                     the default action so the process dies of it as it would have.
//! ```
//!
//! Whoever takes an entry out of the registry runs it, so a guard dropped while the watcher
//! cleans up never runs its undo twice.
//!
//! Every undo of a host change is an [`Undo`]: data, not a closure, so that it can be written
//! down. While any is pending, the registry's undos are kept in a journal on disk
//! ([`crate::journal`], `/run/pagesim/host-<pid>.json`), rewritten at each registration and
//! each undo. SIGKILL (or an OOM kill, or a crash in a thread that holds a lock) gives no
//! process a chance to clean up; the journal survives, and the next `pagesim validate` (or
//! `pagesim validate --cleanup`) does what it lists for a process that is no longer alive.
//!
//! Undo actions run outside the signal handler, on an ordinary thread, so they may allocate,
//! lock and make any system call.
//!
//! Setup steps and undo actions are serialized by one reentrant lock, the *host operation
//! lock* ([`op`]): a guard holds it while it changes the host (creating a swap file from
//! `open` to `swapon`, emptying it with swapoff + swapon, writing a tunable, running its own
//! undo). The watcher takes it too, so it never runs a swap file's undo in the middle of that
//! file's swapoff/swapon in another thread. Once the signal path has begun, a thread that
//! wants the lock afresh waits for the process to die instead: otherwise a thread whose child
//! the cleanup just killed could return from `main`, and the process would exit with the
//! cleanup half done. (A thread already holding the lock finishes its step first.)

use crate::Error;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, Once};
use std::thread::ThreadId;

/// What an entry does: an undo (journaled), or in tests any closure (not journaled).
enum Action {
    Undo(Undo),
    #[cfg(test)]
    Fn(Box<dyn FnOnce() -> Result<(), String> + Send>),
}

impl Action {
    fn run(self) -> Result<(), String> {
        match self {
            Action::Undo(u) => u.run(true),
            #[cfg(test)]
            Action::Fn(f) => f(),
        }
    }

    /// The undo to keep in the journal.
    fn journaled(&self) -> Option<&Undo> {
        match self {
            Action::Undo(u) => Some(u),
            #[cfg(test)]
            Action::Fn(_) => None,
        }
    }
}

struct Entry {
    id: u64,
    what: String,
    action: Action,
}

/// One way of undoing a host change, as data: what the guards run when dropped, and what
/// [`crate::journal::recover`] runs for a process that died before it could.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "do", rename_all = "snake_case")]
pub enum Undo {
    /// Write `value` back to a sysctl or sysfs file.
    Restore { path: PathBuf, value: String },
    /// swapoff (if it is on) and delete a swap file.
    RemoveSwapFile { path: PathBuf },
    /// swapoff (if it is on) and reset a zram device, and give it back the compressor it had.
    ResetZram { dev: PathBuf, sys: PathBuf, comp_algorithm: String },
    /// Remove the zram device that was hot-added (`index`) through `control`/hot_remove.
    HotRemoveZram { control: PathBuf, index: u32 },
    /// Unload the zram module that was loaded (`modprobe -r zram`).
    UnloadZram,
    /// Wait (at most `timeout_ms`) until a memory cgroup has no process left, then rmdir it.
    RemoveCgroup { dir: PathBuf, timeout_ms: u64 },
    /// SIGKILL a process this one started, identified by PID and start time (clock ticks
    /// after boot, /proc/PID/stat field 22), so a reused PID is never hit.
    KillProcess { pid: i32, start_time: u64 },
    /// Delete a directory and what is in it.
    RemoveDir { path: PathBuf },
    /// Remove a tracefs instance (rmdir: the kernel frees its buffer and events).
    RemoveTraceInstance { dir: PathBuf },
    /// Unmount a filesystem this process mounted (tracefs where the machine had none).
    Unmount { path: PathBuf },
}

impl Undo {
    /// The description used in error messages and in what recovery reports.
    pub fn describe(&self) -> String {
        match self {
            Undo::Restore { path, value } => format!("restore {} to \"{value}\"", path.display()),
            Undo::RemoveSwapFile { path } => format!("swapoff and remove {}", path.display()),
            Undo::ResetZram { dev, .. } => format!("swapoff and reset {}", dev.display()),
            Undo::HotRemoveZram { index, .. } => format!("hot_remove zram{index}"),
            Undo::UnloadZram => "modprobe -r zram".into(),
            Undo::RemoveCgroup { dir, .. } => format!("remove memory cgroup {}", dir.display()),
            Undo::KillProcess { pid, .. } => format!("kill pagesim-load (pid {pid})"),
            Undo::RemoveDir { path } => format!("remove {}", path.display()),
            Undo::RemoveTraceInstance { dir } => format!("remove tracing instance {}", dir.display()),
            Undo::Unmount { path } => format!("unmount {}", path.display()),
        }
    }

    /// Whether the change outlives a reboot: files do; tunables, swapon, zram devices,
    /// cgroups and processes do not (undoing those after a reboot would overwrite the new
    /// boot's settings or hit someone else's device).
    pub fn survives_reboot(&self) -> bool {
        matches!(self, Undo::RemoveSwapFile { .. } | Undo::RemoveDir { .. })
    }

    /// Does it. `owner_alive`: run by the process that made the change (which may reap its
    /// own child), not by recovery after that process died.
    pub(crate) fn run(&self, owner_alive: bool) -> Result<(), String> {
        match self {
            Undo::Restore { path, value } => crate::sysfs::write(path, value).map_err(|e| e.0),
            Undo::RemoveSwapFile { path } => crate::swapfile::swapoff_and_remove(path),
            Undo::ResetZram { dev, sys, comp_algorithm } => crate::zram::reset(dev, sys, comp_algorithm),
            Undo::HotRemoveZram { control, index } => {
                crate::sysfs::write(&control.join("hot_remove"), &index.to_string()).map_err(|e| e.0)
            }
            Undo::UnloadZram => crate::zram::unload_module(),
            Undo::RemoveCgroup { dir, timeout_ms } => {
                crate::memcg::remove_when_empty(dir, std::time::Duration::from_millis(*timeout_ms))
            }
            Undo::KillProcess { pid, start_time } => {
                if owner_alive {
                    // SAFETY: signals and reaps our own child, which is not yet reaped (the
                    // owner waits with WNOWAIT while this is registered), so the PID is still
                    // ours; reaping makes sure it is gone before its memcg is waited for.
                    unsafe {
                        libc::kill(*pid, libc::SIGKILL);
                        libc::waitpid(*pid, std::ptr::null_mut(), 0);
                    }
                    Ok(())
                } else {
                    crate::journal::kill_if_same(*pid, *start_time)
                }
            }
            Undo::RemoveDir { path } => match std::fs::remove_dir_all(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.to_string()),
                _ => Ok(()),
            },
            Undo::RemoveTraceInstance { dir } => match std::fs::remove_dir(dir) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(format!("rmdir {}: {e}", dir.display())),
                _ => Ok(()),
            },
            Undo::Unmount { path } => crate::sysfs::unmount(path),
        }
    }
}

static REGISTRY: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
static ERRORS: Mutex<Vec<String>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);
/// Set by the watcher before it takes the operation lock to run the undo actions.
static SHUTTING_DOWN: AtomicBool = AtomicBool::new(false);
/// Receives the errors of a signal's cleanup just before the process dies of the signal.
pub type SignalReport = fn(&[String]);
static SIGNAL_REPORT: Mutex<Option<SignalReport>> = Mutex::new(None);

/// Owner and depth of the host operation lock.
static OP_OWNER: Mutex<(Option<ThreadId>, u32)> = Mutex::new((None, 0));
static OP_FREE: Condvar = Condvar::new();

thread_local! {
    static IS_WATCHER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic in another thread while holding the lock leaves the data intact; keep going so
    // the undo actions still run.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Holding the host operation lock (see the module doc); released on drop.
#[derive(Debug)]
pub(crate) struct Op {
    _not_send: std::marker::PhantomData<*const ()>,
}

/// Takes the host operation lock (reentrant). Also installs the signal handlers, since every
/// change to the host goes through here first.
pub(crate) fn op() -> Op {
    install_signal_handlers();
    let me = std::thread::current().id();
    let mut st = lock(&OP_OWNER);
    loop {
        match st.0 {
            Some(t) if t == me => {
                st.1 += 1;
                break;
            }
            None => {
                if SHUTTING_DOWN.load(Ordering::SeqCst) && !IS_WATCHER.with(|w| w.get()) {
                    drop(st);
                    loop {
                        std::thread::park();
                    }
                }
                *st = (Some(me), 1);
                break;
            }
            Some(_) => st = OP_FREE.wait(st).unwrap_or_else(|e| e.into_inner()),
        }
    }
    Op { _not_send: std::marker::PhantomData }
}

impl Drop for Op {
    fn drop(&mut self) {
        let mut st = lock(&OP_OWNER);
        st.1 -= 1;
        if st.1 == 0 {
            st.0 = None;
            OP_FREE.notify_all();
        }
    }
}

/// Sets a function that receives the errors of a signal's cleanup just before the process
/// dies of the signal (a program may print them; this library does not).
pub fn set_signal_report(f: SignalReport) {
    *lock(&SIGNAL_REPORT) = Some(f);
}

/// A registered undo action, owned by a guard.
#[derive(Debug)]
pub(crate) struct Cleanup {
    id: u64,
}

impl Cleanup {
    /// Registers `undo`, written to the journal before this returns, and makes sure the
    /// signal handlers are installed. Register before making the change where a half-made
    /// change is possible: every undo copes with a change that never happened.
    pub(crate) fn undo(undo: Undo) -> Cleanup {
        Self::push(undo.describe(), Action::Undo(undo))
    }

    /// Registers an arbitrary action (described by `what` in error messages), not journaled:
    /// for actions that do not change the host.
    #[cfg(test)]
    pub(crate) fn register(what: String, action: impl FnOnce() -> Result<(), String> + Send + 'static) -> Cleanup {
        Self::push(what, Action::Fn(Box::new(action)))
    }

    fn push(what: String, action: Action) -> Cleanup {
        let _op = op();
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let journaled = action.journaled().is_some();
        let mut reg = lock(&REGISTRY);
        reg.push(Entry { id, what, action });
        if journaled {
            write_journal(&reg);
        }
        Cleanup { id }
    }

    /// Takes the entry out of the registry. The journal still lists it until [`finish`]
    /// rewrites it after the action ran: a SIGKILL in between leaves it for recovery. The
    /// caller holds the operation lock, so no other thread changes the registry meanwhile.
    fn take(&self) -> Option<Entry> {
        let mut reg = lock(&REGISTRY);
        let pos = reg.iter().position(|e| e.id == self.id)?;
        Some(reg.remove(pos))
    }

    /// Runs the action now (unless the signal path already did) and returns its error.
    pub(crate) fn run(self) -> Result<(), Error> {
        let _op = op();
        match self.take() {
            Some(e) => finish(e).map_err(Error),
            None => Ok(()),
        }
    }

    /// Forgets the action without running it (the thing it would undo is already gone).
    pub(crate) fn dismiss(self) {
        let _op = op();
        if let Some(e) = self.take() {
            if e.action.journaled().is_some() {
                write_journal(&lock(&REGISTRY));
            }
        }
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _op = op();
        if let Some(e) = self.take() {
            if let Err(m) = finish(e) {
                lock(&ERRORS).push(m);
            }
        }
    }
}

/// Runs a taken entry's action, then drops it from the journal; the error names the entry.
fn finish(e: Entry) -> Result<(), String> {
    let journaled = e.action.journaled().is_some();
    let r = e.action.run().map_err(|m| format!("{}: {m}", e.what));
    if journaled {
        write_journal(&lock(&REGISTRY));
    }
    r
}

/// Mirrors the registry's undos in the journal (removed when none is left). The registry is
/// locked by the caller, so journal writes happen in registry order. A journal that cannot be
/// written is an error kept for [`take_errors`]: the run goes on, but a SIGKILL would then
/// leave changes nobody knows of.
fn write_journal(reg: &[Entry]) {
    let undos: Vec<&Undo> = reg.iter().filter_map(|e| e.action.journaled()).collect();
    if let Err(e) = crate::journal::write_own(&undos) {
        lock(&ERRORS).push(e.0);
    }
}

/// Errors of undo actions that ran in `Drop` or in the signal path, since the last call.
pub fn take_errors() -> Vec<String> {
    std::mem::take(&mut *lock(&ERRORS))
}

/// Descriptions of the undo actions still pending, oldest first.
pub fn pending() -> Vec<String> {
    lock(&REGISTRY).iter().map(|e| e.what.clone()).collect()
}

/// Runs every pending undo action, newest first, and returns their errors. This is what the
/// signal path does; a program may also call it from its own shutdown path.
pub fn run_all() -> Vec<String> {
    let _op = op();
    let mut errors = Vec::new();
    loop {
        // Entries registered while a batch runs are picked up by the next round.
        let batch = std::mem::take(&mut *lock(&REGISTRY));
        if batch.is_empty() {
            return errors;
        }
        // The journal keeps listing the batch until it is done (see `take`).
        let journaled = batch.iter().any(|e| e.action.journaled().is_some());
        for e in batch.into_iter().rev() {
            if let Err(m) = e.action.run() {
                errors.push(format!("{}: {m}", e.what));
            }
        }
        if journaled {
            write_journal(&lock(&REGISTRY));
        }
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    let fd = SIGNAL_PIPE.load(Ordering::Relaxed);
    if fd >= 0 {
        let b = sig as u8;
        // SAFETY: write(2) is async-signal-safe; `b` is a live local for the duration of the
        // call and the length is 1. A full pipe only drops a repeated signal.
        unsafe { libc::write(fd, (&b as *const u8).cast(), 1) };
    }
}

fn install_signal_handlers() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let mut fds = [0; 2];
        // SAFETY: fds is a valid array of two c_ints for pipe2 to fill.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            // Without the pipe the guards still clean up on drop; only the signal path is lost.
            return;
        }
        let (r, w) = (fds[0], fds[1]);
        SIGNAL_PIPE.store(w, Ordering::Relaxed);
        let spawned = std::thread::Builder::new().name("pagesim-host-cleanup".into()).spawn(move || watch(r));
        if spawned.is_err() {
            return;
        }
        for sig in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value; we then set a
            // handler that only calls async-signal-safe functions.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_signal as *const () as usize;
                sa.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(sig, &sa, std::ptr::null_mut());
            }
        }
    });
}

fn watch(fd: libc::c_int) {
    let mut b = 0u8;
    loop {
        // SAFETY: reading one byte into a live local from our own pipe's read end.
        let n = unsafe { libc::read(fd, (&mut b as *mut u8).cast(), 1) };
        if n == 1 {
            break;
        }
        if n == 0 || crate::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return;
        }
    }
    let sig = b as libc::c_int;
    IS_WATCHER.with(|w| w.set(true));
    SHUTTING_DOWN.store(true, Ordering::SeqCst);
    let errors = run_all();
    if let Some(report) = *lock(&SIGNAL_REPORT) {
        report(&errors);
    }
    lock(&ERRORS).extend(errors);
    // SAFETY: restoring the default action and re-raising makes the process end the way it
    // would have without our handler (exit status "killed by SIGINT/SIGTERM").
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
    std::process::exit(128 + sig);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex as StdMutex};

    #[test]
    fn actions_run_once_newest_first_and_errors_are_kept() {
        let log = Arc::new(StdMutex::new(Vec::new()));
        let mk = |name: &'static str, fail: bool| {
            let log = log.clone();
            Cleanup::register(format!("test {name}"), move || {
                log.lock().unwrap().push(name);
                if fail {
                    Err("failed on purpose".into())
                } else {
                    Ok(())
                }
            })
        };
        let a = mk("a", false);
        let b = mk("b", true);
        let c = mk("c", false);
        assert!(pending().iter().any(|p| p == "test b"));
        let err = b.run().unwrap_err();
        assert_eq!(err.0, "test b: failed on purpose");
        drop(c);
        a.dismiss();
        assert_eq!(*log.lock().unwrap(), ["b", "c"]);
        assert!(!pending().iter().any(|p| p.starts_with("test ")));
    }
}
