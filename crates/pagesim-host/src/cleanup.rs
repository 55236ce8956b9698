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
//! cleans up never runs its undo twice. Undo actions run outside the signal handler, on an
//! ordinary thread, so they may allocate, lock and make any system call.
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
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, Once};
use std::thread::ThreadId;

type Action = Box<dyn FnOnce() -> Result<(), String> + Send>;

struct Entry {
    id: u64,
    what: String,
    action: Action,
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
    /// Registers `action` (described by `what` in error messages) and makes sure the signal
    /// handlers are installed.
    pub(crate) fn register(what: String, action: impl FnOnce() -> Result<(), String> + Send + 'static) -> Cleanup {
        let _op = op();
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        lock(&REGISTRY).push(Entry { id, what, action: Box::new(action) });
        Cleanup { id }
    }

    fn take(&self) -> Option<Entry> {
        let mut reg = lock(&REGISTRY);
        let pos = reg.iter().position(|e| e.id == self.id)?;
        Some(reg.remove(pos))
    }

    /// Runs the action now (unless the signal path already did) and returns its error.
    pub(crate) fn run(self) -> Result<(), Error> {
        let _op = op();
        match self.take() {
            Some(e) => (e.action)().map_err(|m| Error(format!("{}: {m}", e.what))),
            None => Ok(()),
        }
    }

    /// Forgets the action without running it (the thing it would undo is already gone).
    pub(crate) fn dismiss(self) {
        let _op = op();
        drop(self.take());
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _op = op();
        if let Some(e) = self.take() {
            if let Err(m) = (e.action)() {
                lock(&ERRORS).push(format!("{}: {m}", e.what));
            }
        }
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
        for e in batch.into_iter().rev() {
            if let Err(m) = (e.action)() {
                errors.push(format!("{}: {m}", e.what));
            }
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
