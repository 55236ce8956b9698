//! Scenarios whose tasks replay captured traces (`program = { trace = "FILE" }`): on the host
//! the captured programs themselves run, each as it was captured (its command, in the
//! directory it ran in, its output to /dev/null), in its task's memcg, after the files the
//! trace names are dropped from the page cache (the model starts them cold).

use super::{join_cgroup, kill_and_reap, LoadOptions, LoadReport, TaskRun};
use crate::Error;
use pagesim::scenario::Scenario;
use std::time::{Duration, Instant};

/// Drops the page cache of every file a replayed trace names that is on this machine (the
/// program's input, libraries and output: written back first), so that the program starts
/// with them cold, as the model does.
pub fn drop_trace_files(sc: &Scenario) -> Result<(), Error> {
    use std::os::fd::AsRawFd;
    for t in &sc.config.task {
        let Some(tp) = &t.trace else { continue };
        for (path, _, _) in &tp.info.files {
            let Ok(file) = std::fs::File::open(path) else { continue };
            if !file.metadata().is_ok_and(|m| m.is_file()) {
                continue;
            }
            let _ = file.sync_data();
            // SAFETY: the descriptor of `file`, open for the call; no memory is touched.
            let r = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
            if r != 0 {
                let e = std::io::Error::from_raw_os_error(r);
                return Err(Error(format!("{path}: posix_fadvise(DONTNEED): {e}")));
            }
        }
    }
    Ok(())
}

/// Runs the programs the scenario's traces captured, each as it was captured (its command,
/// in its directory, its output to /dev/null), in its task's memcg, and waits for them.
pub(super) fn execute(sc: &Scenario, opts: &LoadOptions) -> Result<LoadReport, Error> {
    use std::ffi::CString;
    let seed = opts.seed.unwrap_or(sc.config.seed);
    let release = Instant::now();
    let mut pids = Vec::new();
    for t in &sc.config.task {
        let tp = t.trace.as_ref().expect("every task replays a trace");
        let h = &tp.info.header;
        let argv: Vec<CString> = h
            .command
            .iter()
            .map(|a| CString::new(a.as_bytes()).map_err(|_| Error(format!("{}: a NUL in the command", tp.trace))))
            .collect::<Result<_, _>>()?;
        if argv.is_empty() {
            return Err(Error(format!("{}: the trace names no command", tp.trace)));
        }
        let cwd = h.cwd.as_deref().map(|d| CString::new(d.as_bytes()).unwrap_or_default());
        let cg = t.memcg.as_ref().and_then(|m| opts.memcgs.get(m)).or(opts.cgroup.as_ref()).cloned();
        let null = CString::new("/dev/null").expect("no NUL");
        let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        // SAFETY: the process is single-threaded (checked by `execute`); the child only
        // joins its cgroup, changes directory, redirects and execs, or _exits.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            let e = crate::last_os_error();
            kill_and_reap(&pids);
            return Err(Error(format!("fork: {e}")));
        }
        if pid == 0 {
            // SAFETY: the child's own pid; the calls below are the child's setup before exec.
            unsafe {
                if let Some(cg) = &cg {
                    if join_cgroup(cg, libc::getpid()).is_err() {
                        libc::_exit(126);
                    }
                }
                if let Some(d) = &cwd {
                    if libc::chdir(d.as_ptr()) != 0 {
                        libc::_exit(126);
                    }
                }
                let fd = libc::open(null.as_ptr(), libc::O_RDWR);
                if fd >= 0 {
                    libc::dup2(fd, 0);
                    libc::dup2(fd, 1);
                    libc::dup2(fd, 2);
                }
                if t.start > 0 {
                    std::thread::sleep(Duration::from_nanos(t.start));
                }
                libc::execvp(ptrs[0], ptrs.as_ptr());
                libc::_exit(127);
            }
        }
        pids.push(pid);
    }
    let mut tasks = Vec::new();
    for (i, (t, &pid)) in sc.config.task.iter().zip(&pids).enumerate() {
        let mut st = 0;
        // SAFETY: waits for our own child; st is live output storage.
        while unsafe { libc::waitpid(pid, &mut st, 0) } < 0
            && crate::last_os_error().kind() == std::io::ErrorKind::Interrupted
        {}
        let end = release.elapsed().as_nanos() as u64;
        let code = libc::WIFEXITED(st).then(|| libc::WEXITSTATUS(st));
        tasks.push(TaskRun {
            name: t.name.clone(),
            task: i,
            instance: 0,
            pid,
            memcg: t.memcg.clone(),
            start_ns: Some(t.start),
            end_ns: Some(end),
            wall_ns: Some(end.saturating_sub(t.start)),
            accesses: None,
            exit_code: code,
            signal: libc::WIFSIGNALED(st).then(|| libc::WTERMSIG(st)),
            time_limited: false,
            error: match code {
                Some(126) => Some("could not join its cgroup or change to its directory".into()),
                Some(127) => Some(format!("could not run {:?}", t.trace.as_ref().map(|tp| &tp.info.header.command))),
                _ => None,
            },
            access_latency: Vec::new(),
        });
    }
    Ok(LoadReport { scenario: sc.name.clone(), seed, wall_ns: release.elapsed().as_nanos() as u64, tasks })
}
