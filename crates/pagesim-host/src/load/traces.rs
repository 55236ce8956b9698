//! Scenarios whose tasks replay captured traces (`program = { trace = "FILE" }`): on the host
//! the captured programs themselves run, each as it was captured (its command, in the
//! directory it ran in, its output to /dev/null), in its task's memcg, after the files the
//! trace names are dropped from the page cache (the model starts them cold).

use super::{join_cgroup, kill_and_reap, LoadOptions, LoadReport, TaskRun};
use crate::Error;
use pagesim::scenario::Scenario;
use std::time::{Duration, Instant};

/// The pages of a trace's files still cached after [`drop_trace_files`]: per task (the
/// scenario's index), per file (its path as the trace names it), ranges `[first, end)` of
/// page indices. A file other processes keep mapped (a shared library) cannot be dropped:
/// its pages stay, charged to whoever read them first, and the program finds them cached
/// without its memcg holding them (the model's `program.cached`).
pub type TraceCached = std::collections::BTreeMap<usize, std::collections::BTreeMap<String, Vec<[u64; 2]>>>;

/// Drops the page cache of every file a replayed trace names that is on this machine (the
/// program's input, libraries and output: written back first), so that the program starts
/// with them cold, as the model does; returns the pages that stayed (mapped by other
/// processes: `invalidate_mapping_pages` skips mapped folios), as `mincore` sees them.
pub fn drop_trace_files(sc: &Scenario) -> Result<TraceCached, Error> {
    use std::os::fd::AsRawFd;
    let mut cached = TraceCached::new();
    for (i, t) in sc.config.task.iter().enumerate() {
        let Some(tp) = &t.trace else { continue };
        for (path, _, _) in &tp.info.files {
            let Ok(file) = std::fs::File::open(path) else { continue };
            let Ok(meta) = file.metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            let _ = file.sync_data();
            // SAFETY: the descriptor of `file`, open for the call; no memory is touched.
            let r = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
            if r != 0 {
                let e = std::io::Error::from_raw_os_error(r);
                return Err(Error(format!("{path}: posix_fadvise(DONTNEED): {e}")));
            }
            let ranges = resident_ranges(&file, meta.len()).map_err(|e| Error(format!("{path}: mincore: {e}")))?;
            if !ranges.is_empty() {
                cached.entry(i).or_default().insert(path.clone(), ranges);
            }
        }
    }
    Ok(cached)
}

/// The pages of `file` (`len` bytes) in the page cache, as ranges `[first, end)`:
/// `mincore` over a read-only shared mapping of it (mapping faults nothing in).
fn resident_ranges(file: &std::fs::File, len: u64) -> std::io::Result<Vec<[u64; 2]>> {
    use std::os::fd::AsRawFd;
    if len == 0 {
        return Ok(Vec::new());
    }
    let pages = len.div_ceil(4096) as usize;
    // SAFETY: a new read-only mapping of an open descriptor; checked for failure below, and
    // unmapped before returning.
    let addr = unsafe {
        libc::mmap(std::ptr::null_mut(), len as usize, libc::PROT_READ, libc::MAP_SHARED, file.as_raw_fd(), 0)
    };
    if addr == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    let mut vec = vec![0u8; pages];
    // SAFETY: `addr` maps `len` bytes; `vec` has a byte for each of its pages.
    let r = unsafe { libc::mincore(addr, len as usize, vec.as_mut_ptr()) };
    let err = std::io::Error::last_os_error();
    // SAFETY: the mapping made above, not used after this.
    unsafe { libc::munmap(addr, len as usize) };
    if r != 0 {
        return Err(err);
    }
    let mut ranges: Vec<[u64; 2]> = Vec::new();
    for (p, &b) in vec.iter().enumerate() {
        if b & 1 == 0 {
            continue;
        }
        match ranges.last_mut() {
            Some(last) if last[1] == p as u64 => last[1] += 1,
            _ => ranges.push([p as u64, p as u64 + 1]),
        }
    }
    Ok(ranges)
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

#[cfg(test)]
mod tests {
    use super::resident_ranges;
    use std::os::fd::AsRawFd;

    /// `mincore` finds a file's cached pages; `POSIX_FADV_DONTNEED` drops them, except the
    /// pages some process keeps mapped (the one it touched and those fault-around mapped
    /// with it), which stay: what `drop_trace_files` reports for a shared library.
    #[test]
    fn a_mapped_page_stays_cached_when_the_file_is_dropped() {
        const PAGES: usize = 64;
        let len = (PAGES * 4096) as u64;
        let path = std::env::temp_dir().join(format!("pagesim-resident-{}", std::process::id()));
        std::fs::write(&path, vec![7u8; PAGES * 4096]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let _ = file.sync_data();
        let drop_cache = |f: &std::fs::File| {
            // SAFETY: an open descriptor; no memory is touched.
            assert_eq!(unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) }, 0);
        };
        drop_cache(&file);
        if !resident_ranges(&file, len).unwrap().is_empty() {
            // A filesystem whose pages DONTNEED does not drop (tmpfs): nothing to learn here.
            let _ = std::fs::remove_file(&path);
            return;
        }
        std::io::Read::read_to_end(&mut &file, &mut Vec::new()).unwrap();
        assert_eq!(resident_ranges(&file, len).unwrap(), vec![[0, PAGES as u64]], "read: all cached");
        // SAFETY: a read-only mapping of the open file, unmapped below.
        let addr = unsafe {
            libc::mmap(std::ptr::null_mut(), PAGES * 4096, libc::PROT_READ, libc::MAP_SHARED, file.as_raw_fd(), 0)
        };
        assert_ne!(addr, libc::MAP_FAILED);
        // SAFETY: page 40 of the mapping, which the file backs.
        let byte = unsafe { std::ptr::read_volatile((addr as *const u8).add(40 * 4096)) };
        assert_eq!(byte, 7);
        drop_cache(&file);
        let left = resident_ranges(&file, len).unwrap();
        assert!(left.iter().any(|&[a, b]| (a..b).contains(&40)), "the mapped page stays: {left:?}");
        assert!(!left.iter().any(|&[a, _]| a == 0), "an unmapped one goes: {left:?}");
        // SAFETY: the mapping made above.
        unsafe { libc::munmap(addr, PAGES * 4096) };
        let _ = std::fs::remove_file(&path);
    }
}
