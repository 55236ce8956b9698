//! The load generator behind `pagesim-load`: a scenario's tasks run as real processes on the
//! host, touching real memory in the order the simulator's tasks do.
//!
//! ```text
//!   pagesim-load (one thread)
//!     join --cgroup, map shared regions (shmem: MAP_SHARED|MAP_ANONYMOUS)
//!     fork one process per task instance ──► child: pin to its CPUs, join its memcg, map its private regions
//!     close the barrier pipe  ─────────────►        (MAP_PRIVATE|MAP_ANONYMOUS), wait on the
//!     poll results, reap, enforce time_limit        barrier, sleep `start`, run the steps,
//!     print a LoadReport (JSON)             ◄────── write one result record, _exit
//! ```
//!
//! Each process replays [`pagesim::workload::task_programs`]: the same bound steps and the
//! same RNG stream as the engine, so the n-th access of a task touches the same page index
//! on the host and in the simulator. An access is one 8-byte load (read) or store (write) at
//! the start of the page; stores write a non-zero value, because since Linux 6.12 the swap
//! layer does not write all-zero pages out at all (and zswap/zram store them specially).
//! Think time is spent spinning, as it is CPU time in the model. Mappings get
//! MADV_NOHUGEPAGE (the simulator models shmem as 4 KiB pages, and anon memory too unless
//! the scenario turns anon mTHP on); with `kernel.anon_mthp`, private anon mappings are left
//! to the host's mTHP sizes (which the runner sets to the scenario's) and start on a
//! boundary of the largest size, as the simulator's regions do.
//!
//! The runner forks and allocates in the children, which is only sound in a single-threaded
//! process; [`execute`] refuses to run otherwise. Children die with the runner
//! (PR_SET_PDEATHSIG), and the runner only ever signals the PIDs it forked.

pub mod lifecycle;
mod traces;
pub use traces::{drop_trace_files, TraceCached};

use crate::Error;
use pagesim::scenario::{config, AccessOp, Fadvise, Madvise, Pace, RegionKind, Scenario};
use pagesim::workload::{task_programs, TaskProgram};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Most processes one run may fork.
pub const MAX_PROCESSES: usize = 1024;
/// The page size pagesim models; the host must use the same.
const PAGE: usize = 4096;
/// Longest error text a child sends back (a pipe write of at most PIPE_BUF is atomic).
const MAX_MSG: usize = 3000;
/// A result record's fixed part: index, kind, task, run, pid (u32 each, and 4 bytes of
/// padding), then start, end, accesses and the message length (u64 each).
const RECORD: usize = 56;

#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// RNG seed; default: the scenario's.
    pub seed: Option<u64>,
    /// A cgroup directory the runner joins before forking, so every task runs in it.
    pub cgroup: Option<PathBuf>,
    /// Per scenario memcg name, the cgroup directory that memcg's tasks join.
    pub memcgs: BTreeMap<String, PathBuf>,
    /// The directory holding the scenario's `[file.NAME]` files, named by [`host_files`]
    /// (pagesim-host creates them there with [`create_files`]).
    pub file_dir: Option<PathBuf>,
    /// The scenario's file and `--set` overrides: a process that execs loads the scenario
    /// again from them (needed by scenarios with exec or spawn steps).
    pub scenario_path: Option<PathBuf>,
    pub sets: Vec<String>,
}

/// What `pagesim-load` prints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadReport {
    pub scenario: String,
    pub seed: u64,
    /// From the release of all processes until the last one was reaped, ns.
    pub wall_ns: u64,
    /// One entry per process, in the engine's task order.
    pub tasks: Vec<TaskRun>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRun {
    /// The simulator's name (`name` or `name.k`).
    pub name: String,
    /// Index in the scenario's `[[task]]` list, and instance number.
    pub task: usize,
    pub instance: u32,
    pub pid: i32,
    /// The scenario memcg the task ran in.
    pub memcg: Option<String>,
    /// First access and end of the last one, ns after release (the start delay included).
    pub start_ns: Option<u64>,
    pub end_ns: Option<u64>,
    /// `end_ns - start_ns`: the task's wall time.
    pub wall_ns: Option<u64>,
    /// Accesses made (all of the program's when it completed).
    pub accesses: Option<u64>,
    pub exit_code: Option<i32>,
    /// Signal that ended it (9 for the OOM killer or the time limit).
    pub signal: Option<i32>,
    /// Killed by the runner at the scenario's `time_limit`.
    pub time_limited: bool,
    /// What went wrong inside the process before or while it ran, if anything.
    pub error: Option<String>,
    /// Wall time of each access to a mapping that took at least [`LATENCY_MIN_NS`] (faults,
    /// and the odd interrupt), as (upper bound ns, count) buckets of pagesim's latency
    /// histogram; the faster ones are hits.
    #[serde(default)]
    pub access_latency: Vec<(u64, u64)>,
}

/// Accesses faster than this are not sent back: a hit on a mapped page costs well under it,
/// the cheapest fault about it.
pub const LATENCY_MIN_NS: u64 = 1000;
/// Latency buckets a result record holds at most (the record stays one atomic pipe write).
const MAX_LATENCY_BUCKETS: usize = 200;

impl TaskRun {
    /// The process ran its whole program and exited normally.
    pub fn completed(&self) -> bool {
        self.exit_code == Some(0) && self.error.is_none() && self.end_ns.is_some()
    }
}

/// How a scenario region is mapped on the host. A new region kind adds a variant, its mmap
/// flags and descriptor, and whether it is one object shared by all tasks (mapped before
/// fork) or instantiated per process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backing {
    /// MAP_PRIVATE|MAP_ANONYMOUS, mapped by each process that uses it.
    PrivateAnon,
    /// MAP_SHARED|MAP_ANONYMOUS (tmpfs-backed), mapped once before fork and inherited.
    SharedAnon,
    /// MAP_SHARED, PROT_READ of the region's `[file.NAME]`, opened and mapped by each process
    /// that uses it. The page cache is one for all (the file's); the open file, and with it
    /// the readahead state that fault read-around uses (`file->f_ra`), is per process, as the
    /// engine keeps one `FileRaState` per task's VMA.
    File,
    /// The same with PROT_READ|PROT_WRITE (a `writable` file region), opened read-write.
    WritableFile,
    /// MAP_PRIVATE, PROT_READ|PROT_EXEC: program text (an `exec` file region), as the
    /// loader maps a binary's text.
    ExecFile,
}

impl Backing {
    fn of(kind: RegionKind) -> Backing {
        match kind {
            RegionKind::Anon => Backing::PrivateAnon,
            RegionKind::Shmem => Backing::SharedAnon,
            RegionKind::File => Backing::File,
        }
    }

    fn shared_between_tasks(self) -> bool {
        self == Backing::SharedAnon
    }

    fn flags(self) -> libc::c_int {
        match self {
            Backing::PrivateAnon => libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            Backing::SharedAnon => libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            Backing::File | Backing::WritableFile => libc::MAP_SHARED,
            Backing::ExecFile => libc::MAP_PRIVATE,
        }
    }

    fn prot(self) -> libc::c_int {
        match self {
            Backing::PrivateAnon | Backing::SharedAnon | Backing::WritableFile => libc::PROT_READ | libc::PROT_WRITE,
            Backing::File => libc::PROT_READ,
            Backing::ExecFile => libc::PROT_READ | libc::PROT_EXEC,
        }
    }
}

/// One mmap'ed region, unmapped on drop.
struct Mapping {
    addr: *mut u8,
    len: usize,
}

impl Mapping {
    /// An anonymous mapping (private or shared) of `len` bytes. `mthp`: the scenario turns
    /// anon mTHP on (`kernel.anon_mthp`), so a private mapping is left to the host's THP
    /// settings (no MADV_NOHUGEPAGE) and starts on a boundary of its largest size, as the
    /// simulator's regions do.
    fn new(backing: Backing, len: usize, name: &str, mthp: Option<usize>) -> Result<Mapping, Error> {
        match mthp {
            Some(align) if backing == Backing::PrivateAnon => Self::map_aligned(len, name, align),
            _ => Self::map(backing, len, name, -1, None),
        }
    }

    /// A private anonymous mapping of `len` bytes starting at a multiple of `align` (mapped
    /// `align` bytes larger, the slack unmapped), without MADV_NOHUGEPAGE.
    fn map_aligned(len: usize, name: &str, align: usize) -> Result<Mapping, Error> {
        let b = Backing::PrivateAnon;
        // SAFETY: a fresh anonymous mapping at an address of the kernel's choosing.
        let raw = unsafe { libc::mmap(std::ptr::null_mut(), len + align, b.prot(), b.flags(), -1, 0) };
        if raw == libc::MAP_FAILED {
            return Err(Error(format!("region {name}: mmap of {} bytes: {}", len + align, crate::last_os_error())));
        }
        let start = raw as usize;
        let aligned = start.next_multiple_of(align);
        // SAFETY: both ranges lie inside the mapping just created, outside [aligned, +len).
        unsafe {
            if aligned > start {
                libc::munmap(raw, aligned - start);
            }
            let end = aligned + len;
            if start + len + align > end {
                libc::munmap(end as *mut libc::c_void, start + len + align - end);
            }
        }
        Ok(Mapping { addr: aligned as *mut u8, len })
    }

    /// The file at `path`, `len` bytes from offset 0, MAP_SHARED and read-only, with the
    /// scenario's `madvise` hint. The descriptor is closed once mapped (the mapping keeps
    /// its own reference to the open file, and with it the readahead state).
    fn file(path: &Path, len: usize, name: &str, advice: Option<Madvise>, writable: bool) -> Result<Mapping, Error> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(writable)
            .open(path)
            .map_err(|e| Error(format!("region {name}: cannot open {}: {e}", path.display())))?;
        use std::os::fd::AsRawFd;
        let backing = if writable { Backing::WritableFile } else { Backing::File };
        Self::map(backing, len, name, f.as_raw_fd(), advice)
    }

    /// The file at `path` mapped as program text (`Backing::ExecFile`).
    fn exec_file(path: &Path, len: usize, name: &str) -> Result<Mapping, Error> {
        let f = std::fs::File::open(path)
            .map_err(|e| Error(format!("region {name}: cannot open {}: {e}", path.display())))?;
        use std::os::fd::AsRawFd;
        Self::map(Backing::ExecFile, len, name, f.as_raw_fd(), None)
    }

    /// `brk` on a heap mapping: it is `len` bytes from now on (mremap, which may move it;
    /// a shrink frees the pages past the new end).
    fn resize(&mut self, len: usize) -> Result<(), Error> {
        if len == self.len {
            return Ok(());
        }
        // SAFETY: resizes exactly the mapping this value owns; nothing else refers to its
        // old address (steps take the address when they start).
        let addr = unsafe { libc::mremap(self.addr.cast(), self.len, len, libc::MREMAP_MAYMOVE) };
        if addr == libc::MAP_FAILED {
            return Err(Error(format!("mremap of {} to {len} bytes: {}", self.len, crate::last_os_error())));
        }
        self.addr = addr.cast();
        self.len = len;
        Ok(())
    }

    fn map(
        backing: Backing,
        len: usize,
        name: &str,
        fd: libc::c_int,
        advice: Option<Madvise>,
    ) -> Result<Mapping, Error> {
        // SAFETY: a fresh mapping at an address of the kernel's choosing (anonymous, or of a
        // descriptor this process has open); no existing memory is affected.
        let addr = unsafe { libc::mmap(std::ptr::null_mut(), len, backing.prot(), backing.flags(), fd, 0) };
        if addr == libc::MAP_FAILED {
            return Err(Error(format!("region {name}: mmap of {len} bytes: {}", crate::last_os_error())));
        }
        let m = Mapping { addr: addr.cast(), len };
        // SAFETY: [addr, addr+len) is the mapping just created.
        if unsafe { libc::madvise(addr, len, libc::MADV_NOHUGEPAGE) } != 0 {
            return Err(Error(format!("region {name}: madvise(MADV_NOHUGEPAGE): {}", crate::last_os_error())));
        }
        let hint = match advice {
            None | Some(Madvise::Normal) => None,
            Some(Madvise::Sequential) => Some((libc::MADV_SEQUENTIAL, "MADV_SEQUENTIAL")),
            Some(Madvise::Random) => Some((libc::MADV_RANDOM, "MADV_RANDOM")),
            Some(Madvise::Willneed) => Some((libc::MADV_WILLNEED, "MADV_WILLNEED")),
        };
        if let Some((h, hname)) = hint {
            // SAFETY: [addr, addr+len) is the mapping just created; the hint changes no data.
            if unsafe { libc::madvise(addr, len, h) } != 0 {
                return Err(Error(format!("region {name}: madvise({hname}): {}", crate::last_os_error())));
            }
        }
        Ok(m)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping this value owns; nothing refers to it after drop.
        unsafe { libc::munmap(self.addr.cast(), self.len) };
    }
}

/// A pipe, both ends close-on-exec; ends are closed on drop or explicitly.
struct Pipe {
    r: libc::c_int,
    w: libc::c_int,
}

impl Pipe {
    fn new() -> Result<Pipe, Error> {
        let mut fds = [0; 2];
        // SAFETY: fds is a valid array of two c_ints for pipe2 to fill.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(Error(format!("pipe: {}", crate::last_os_error())));
        }
        Ok(Pipe { r: fds[0], w: fds[1] })
    }

    fn close_read(&mut self) {
        close(&mut self.r);
    }

    fn close_write(&mut self) {
        close(&mut self.w);
    }
}

fn close(fd: &mut libc::c_int) {
    if *fd >= 0 {
        // SAFETY: closes a descriptor this process owns, once (then marked -1).
        unsafe { libc::close(*fd) };
        *fd = -1;
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        self.close_read();
        self.close_write();
    }
}

/// A real file a scenario's `[file.NAME]` becomes on the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostFile {
    /// The scenario's file name.
    pub name: String,
    /// For a `per_task` file, the process (index in [`task_programs`] order, the engine's
    /// task id) that owns this copy.
    pub owner: Option<usize>,
    /// File name in the file directory: `file-NAME`, or `file-NAME.TID` for a per-task
    /// copy (the engine names the copy `NAME.TID`).
    pub file_name: String,
    /// Size at the start, bytes: the scenario's, rounded up to pages as the engine does, so
    /// both have the same end of file (0 for a file that appends fill).
    pub bytes: u64,
}

/// Every file the scenario reads or maps, shared files in name order, then the per-task
/// copies in task order: the engine's page caches ([`config::Config::extents`]), less a
/// replayed trace's files (the program's own).
pub fn host_files(sc: &Scenario) -> Vec<HostFile> {
    let c = &sc.config;
    c.extents
        .iter()
        // A replayed trace's files are the program's own, where it left them.
        .filter(|e| !c.file[e.file as usize].from_trace)
        .map(|e| {
            let name = c.file[e.file as usize].name.clone();
            let owner = e.owner.map(|tid| tid as usize);
            let file_name = match owner {
                None => format!("file-{name}"),
                Some(tid) => format!("file-{name}.{tid}"),
            };
            HostFile { name, owner, file_name, bytes: e.size_pages * PAGE as u64 }
        })
        .collect()
}

/// Path of file `name` as process `tid` sees it.
fn file_path(sc: &Scenario, dir: &Path, name: &str, tid: usize) -> PathBuf {
    if sc.file.file[name].per_task {
        dir.join(format!("file-{name}.{tid}"))
    } else {
        dir.join(format!("file-{name}"))
    }
}

/// Filesystem magic numbers of memory-backed filesystems (statfs f_type): their "files"
/// are page cache that is never read from a device, so they cannot stand for a disk file.
const TMPFS_MAGIC: i64 = 0x0102_1994;
const RAMFS_MAGIC: i64 = 0x8584_58f6;

/// Creates the scenario's files in `dir` ([`host_files`]): every page non-zero (its index
/// in the first word, a fixed pattern in the rest), written in 1 MiB chunks and fsync'ed,
/// so a read comes from the device once the page cache is dropped. Refuses a directory on
/// tmpfs or ramfs. Returns the files created.
pub fn create_files(sc: &Scenario, dir: &Path) -> Result<Vec<HostFile>, Error> {
    let files = host_files(sc);
    if files.is_empty() {
        return Ok(files);
    }
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(|_| Error(format!("{}: a path with a NUL byte", dir.display())))?;
    // SAFETY: a zeroed statfs is valid output storage; c is a NUL-terminated path.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: see above; statfs writes only into st.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return Err(Error(format!("statfs {}: {}", dir.display(), crate::last_os_error())));
    }
    #[allow(clippy::unnecessary_cast)]
    let magic = st.f_type as i64;
    if magic == TMPFS_MAGIC || magic == RAMFS_MAGIC {
        return Err(Error(format!(
            "{}: on tmpfs/ramfs; the scenario's files must be on a disk (file reads are compared with a device's)",
            dir.display()
        )));
    }
    let mut chunk = vec![0xa5u8; 1 << 20];
    for f in &files {
        use std::io::Write;
        let path = dir.join(&f.file_name);
        let e = |what: &str, err: std::io::Error| Error(format!("{}: {what}: {err}", path.display()));
        let mut out = std::fs::File::create(&path).map_err(|err| e("create", err))?;
        let mut off = 0u64;
        while off < f.bytes {
            let n = ((f.bytes - off) as usize).min(chunk.len());
            for (k, page) in chunk[..n].chunks_mut(PAGE).enumerate() {
                let idx = off / PAGE as u64 + k as u64 + 1;
                page[..8].copy_from_slice(&idx.to_le_bytes());
            }
            out.write_all(&chunk[..n]).map_err(|err| e("write", err))?;
            off += n as u64;
        }
        out.sync_all().map_err(|err| e("fsync", err))?;
    }
    Ok(files)
}

/// Drops the page cache of the scenario's files in `dir` (`posix_fadvise(POSIX_FADV_DONTNEED)`
/// of each, after `fdatasync`: clean, unmapped pages are invalidated without shadow entries,
/// as `drop_caches` does for every file), and returns how many of their pages are still
/// resident (`mincore` over a mapping of each; 0 when they are cold). Only these files: a
/// machine-wide drop makes every other process re-read its files during the measured run.
pub fn drop_file_cache(dir: &Path, files: &[HostFile]) -> Result<u64, Error> {
    use std::os::fd::AsRawFd;
    let mut resident = 0u64;
    for f in files {
        let path = dir.join(&f.file_name);
        let e = |what: &str, err: std::io::Error| Error(format!("{}: {what}: {err}", path.display()));
        let file = std::fs::File::open(&path).map_err(|err| e("open", err))?;
        file.sync_data().map_err(|err| e("fdatasync", err))?;
        let fd = file.as_raw_fd();
        // SAFETY: fd is the descriptor of `file`, open for the call; no memory is touched.
        let r = unsafe { libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_DONTNEED) };
        if r != 0 {
            return Err(e("posix_fadvise(DONTNEED)", std::io::Error::from_raw_os_error(r)));
        }
        // The file's size now (a step may have grown or truncated it).
        let len = file.metadata().map_err(|err| e("stat", err))?.len() as usize;
        if len == 0 {
            continue;
        }
        // SAFETY: a fresh read-only shared mapping of the open file, at an address of the
        // kernel's choosing; it is only passed to mincore (never touched) and unmapped below.
        let addr = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, fd, 0) };
        if addr == libc::MAP_FAILED {
            return Err(e("mmap", crate::last_os_error()));
        }
        let mut vec = vec![0u8; len.div_ceil(PAGE)];
        // SAFETY: [addr, addr+len) is the mapping just made; vec has one byte per page of it.
        let r = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
        let err = crate::last_os_error();
        // SAFETY: unmaps exactly the mapping made above.
        unsafe { libc::munmap(addr, len) };
        if r != 0 {
            return Err(e("mincore", err));
        }
        resident += vec.iter().filter(|&&b| b & 1 != 0).count() as u64;
    }
    Ok(resident)
}

/// Threads of this process (from /proc/self/status).
fn thread_count() -> Option<u32> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines().find_map(|l| l.strip_prefix("Threads:")).and_then(|v| v.trim().parse().ok())
}

fn join_cgroup(dir: &Path, pid: i32) -> Result<(), Error> {
    crate::sysfs::write(&dir.join("cgroup.procs"), &pid.to_string())
}

fn region_len(r: &config::Region) -> usize {
    r.size.div_ceil(PAGE as u64) as usize * PAGE
}

/// Runs the scenario's tasks as processes and waits for all of them. Must be called from a
/// single-threaded process (it forks and the children allocate).
pub fn execute(sc: &Scenario, opts: &LoadOptions) -> Result<LoadReport, Error> {
    if crate::page_size() != PAGE {
        return Err(Error(format!("the host's page size is {} bytes; pagesim models 4096", crate::page_size())));
    }
    if thread_count() != Some(1) {
        return Err(Error("the load generator must run in a single-threaded process (pagesim-load)".into()));
    }
    if let Some(why) = unsupported(sc) {
        return Err(Error(format!("{}: {why}", sc.origin)));
    }
    if sc.config.task.iter().any(|t| t.trace.is_some()) {
        return traces::execute(sc, opts);
    }
    let seed = opts.seed.unwrap_or(sc.config.seed);
    let progs = task_programs(sc, seed);
    if progs.len() > MAX_PROCESSES {
        return Err(Error(format!("{}: {} processes; at most {MAX_PROCESSES} are supported", sc.origin, progs.len())));
    }
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    if let Some(cg) = &opts.cgroup {
        join_cgroup(cg, me)?;
    }
    let mut shared: BTreeMap<String, Mapping> = BTreeMap::new();
    // With lifecycle steps, a program a process forks may name a shmem region the
    // top-level programs do not: the runner maps every one, and forks inherit them.
    let lifecycle = lifecycle::uses_lifecycle(sc);
    let named: Vec<&String> = progs.iter().flat_map(|p| &p.regions).collect();
    for region in &sc.config.region {
        let r = &region.name;
        let b = Backing::of(region.kind);
        if b.shared_between_tasks() && (lifecycle || named.contains(&r)) && !shared.contains_key(r) {
            shared.insert(r.clone(), Mapping::new(b, region_len(region), r, None)?);
        }
    }
    // Descriptors that all instances of a task share (`shared_fd` steps): opened before fork,
    // so the processes share one open file and its readahead state.
    let mut shared_fds: BTreeMap<(usize, usize), std::fs::File> = BTreeMap::new();
    for (tid, p) in progs.iter().enumerate() {
        for (j, st) in sc.file.task[p.task].step.iter().enumerate() {
            if let (Some(name), true) = (&st.file, st.shared_fd) {
                if shared_fds.contains_key(&(p.task, j)) {
                    continue;
                }
                let dir = opts
                    .file_dir
                    .as_deref()
                    .ok_or_else(|| Error(format!("{}: the scenario has files: give --file-dir", sc.origin)))?;
                let path = file_path(sc, dir, name, tid);
                let op = st.op.unwrap_or(AccessOp::Read);
                let f = open_for(&path, op).map_err(|e| Error(format!("{}: {e}", path.display())))?;
                shared_fds.insert((p.task, j), f);
            }
        }
    }
    if lifecycle {
        return lifecycle::execute(sc, opts, seed, &progs, &shared);
    }
    let mut barrier = Pipe::new()?;
    let mut results = Pipe::new()?;
    let mut pids: Vec<i32> = Vec::with_capacity(progs.len());
    for (i, p) in progs.iter().enumerate() {
        // SAFETY: the process is single-threaded (checked above), so the child may use the
        // allocator and std freely; it leaves only through _exit.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            let e = crate::last_os_error();
            kill_and_reap(&pids);
            return Err(Error(format!("fork: {e}")));
        }
        if pid == 0 {
            barrier.close_write();
            results.close_read();
            let r = run_child(sc, i, p, opts, &shared, &shared_fds, me, barrier.r);
            let code = if r.is_ok() { 0 } else { 3 };
            send_result(results.w, i as u32, p.task, p.instance, r);
            // SAFETY: _exit ends the child without running the parent's atexit handlers or
            // destructors (which belong to the parent).
            unsafe { libc::_exit(code) };
        }
        pids.push(pid);
    }
    barrier.close_write();
    let release = Instant::now();
    results.close_write();
    let deadline = sc.file.time_limit.map(|t| release + Duration::from_nanos(t));
    let (statuses, data, limited) = wait_all(&pids, results.r, deadline, None);
    let wall_ns = release.elapsed().as_nanos() as u64;
    drop(shared);
    drop(shared_fds);
    let tasks = task_runs(sc, &progs, &pids, &statuses, &limited, &data);
    Ok(LoadReport { scenario: sc.name.clone(), seed, wall_ns, tasks })
}

/// The runs of a load: one per process the runner forked (`progs`, their `pids` and wait
/// `statuses`, those killed at the time limit), then what the result records in `data` say
/// of them and of any run the processes started ([`parse_results`]).
fn task_runs(
    sc: &Scenario,
    progs: &[TaskProgram],
    pids: &[i32],
    statuses: &[i32],
    limited: &[i32],
    data: &[u8],
) -> Vec<TaskRun> {
    let mut tasks: Vec<TaskRun> = progs
        .iter()
        .zip(pids)
        .zip(statuses)
        .map(|((p, &pid), &st)| TaskRun {
            name: p.name.clone(),
            task: p.task,
            instance: p.instance,
            pid,
            memcg: sc.file.task[p.task].memcg.clone(),
            start_ns: None,
            end_ns: None,
            wall_ns: None,
            accesses: None,
            exit_code: libc::WIFEXITED(st).then(|| libc::WEXITSTATUS(st)),
            signal: libc::WIFSIGNALED(st).then(|| libc::WTERMSIG(st)),
            time_limited: limited.contains(&pid),
            error: None,
            access_latency: Vec::new(),
        })
        .collect();
    parse_results(sc, data, &mut tasks);
    tasks
}

type ChildResult = Result<(u64, u64, u64, Vec<(u64, u64)>), String>;

/// What one step of a process works on.
enum Target {
    /// A mapping of `pages` pages at `base`: one 8-byte load or store per access.
    Map { base: *mut u8, pages: usize },
    /// A file read in records: `fd` is the descriptor opened before fork when the step's
    /// instances share one open file (`shared_fd`), else the step opens `path` itself when
    /// it starts (a fresh `file_ra_state`, as the engine gives each file step). `pread`:
    /// pread(2) calls; otherwise read(2), seeking first when the record is not at the
    /// file position (a shared descriptor's position is shared too, so it always preads:
    /// the page cache and readahead see the same call either way, `filemap_read` with the
    /// open file's `f_ra`).
    /// `op`: read, write (pwrite), or a whole-file call (fsync, fdatasync, sync_file_range,
    /// truncate); writes open the file read-write.
    Read { path: PathBuf, fd: Option<libc::c_int>, pread: bool, op: AccessOp },
}

/// The child's work: returns (start, end, accesses) relative to its release and its access
/// latencies, or an error.
#[allow(clippy::too_many_arguments)]
fn run_child(
    sc: &Scenario,
    tid: usize,
    p: &TaskProgram,
    opts: &LoadOptions,
    shared: &BTreeMap<String, Mapping>,
    shared_fds: &BTreeMap<(usize, usize), std::fs::File>,
    parent: i32,
    barrier: libc::c_int,
) -> ChildResult {
    // SAFETY: prctl(PR_SET_PDEATHSIG) only sets a flag of this process.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    // SAFETY: getppid/getpid have no preconditions.
    let (ppid, me) = unsafe { (libc::getppid(), libc::getpid()) };
    if ppid != parent {
        return Err("the runner exited before this process started".into());
    }
    let task = &sc.file.task[p.task];
    if let Some(cpus) = &task.cpus {
        crate::cpu::set_affinity(0, cpus).map_err(|e| format!("task[{}].cpus: {e}", p.task))?;
    }
    if let Some(m) = &task.memcg {
        if let Some(dir) = opts.memcgs.get(m) {
            join_cgroup(dir, me).map_err(|e| e.0)?;
        }
    }
    let file_dir = || opts.file_dir.as_deref().ok_or_else(|| "the scenario has files: give --file-dir".to_string());
    let mut own: Vec<Mapping> = Vec::new();
    let mut bases: Vec<(*mut u8, usize)> = Vec::with_capacity(p.regions.len());
    for r in &p.regions {
        let region = sc.config.region(r).ok_or_else(|| format!("no region \"{r}\""))?;
        let m = match shared.get(r) {
            Some(m) => m,
            None => {
                let m = match Backing::of(region.kind) {
                    Backing::File => {
                        let name = region.file.as_deref().expect("validated: a file region names its file");
                        let path = file_path(sc, file_dir()?, name, tid);
                        Mapping::file(&path, region_len(region), r, region.madvise, region.writable)
                    }
                    b => Mapping::new(b, region_len(region), r, mthp_align(sc)),
                };
                own.push(m.map_err(|e| e.0)?);
                own.last().expect("just pushed")
            }
        };
        bases.push((m.addr, m.len / PAGE));
    }
    let mut targets = Vec::with_capacity(p.steps.len());
    for (j, (&target, st)) in p.targets.iter().zip(&task.step).enumerate() {
        targets.push(match &st.file {
            None => {
                let (base, pages) = bases[target as usize];
                Target::Map { base, pages }
            }
            Some(name) => {
                use std::os::fd::AsRawFd;
                let fd = shared_fds.get(&(p.task, j)).map(|f| f.as_raw_fd());
                let op = st.op.unwrap_or(AccessOp::Read);
                let pread = matches!(op, AccessOp::Pread | AccessOp::Pwrite) || fd.is_some();
                Target::Read { path: file_path(sc, file_dir()?, name, tid), fd, pread, op }
            }
        });
    }
    // The read buffer, touched now so the reads do not fault on it.
    let record_max = p.steps.iter().filter(|s| s.file).map(|s| s.record_pages as usize * PAGE).max().unwrap_or(0);
    let mut buf = vec![1u8; record_max];
    // Wait until the runner has forked everyone, then for the start delay.
    let release = wait_release(barrier, task.start + p.instance as u64 * task.stagger);
    let start = release.elapsed().as_nanos() as u64;
    let mut lat = pagesim::histogram::Histogram::default();
    let (accesses, _) = run_program(p, &targets, &mut buf, &mut lat)?;
    let end = release.elapsed().as_nanos() as u64;
    drop(own);
    Ok((start, end, accesses, latency_buckets(&lat)))
}

/// The buckets of a latency histogram a result record carries: those of accesses slower
/// than [`LATENCY_MIN_NS`], the slowest [`MAX_LATENCY_BUCKETS`] at most.
fn latency_buckets(lat: &pagesim::histogram::Histogram) -> Vec<(u64, u64)> {
    let mut buckets: Vec<(u64, u64)> = lat.buckets().into_iter().filter(|&(u, _)| u >= LATENCY_MIN_NS).collect();
    if buckets.len() > MAX_LATENCY_BUCKETS {
        buckets.drain(..buckets.len() - MAX_LATENCY_BUCKETS);
    }
    buckets
}

/// Blocks until pipe `fd` reaches EOF (every write end closed), retrying interrupted reads.
fn wait_eof(fd: libc::c_int) {
    let mut b = 0u8;
    loop {
        // SAFETY: reads at most one byte into a live local from an open descriptor.
        let n = unsafe { libc::read(fd, (&mut b as *mut u8).cast(), 1) };
        if n >= 0 || crate::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break;
        }
    }
}

/// Waits for the runner's release (EOF on `barrier`: it has forked everyone), then until
/// `delay_ns` after it (the task's start and stagger); returns the release.
fn wait_release(barrier: libc::c_int, delay_ns: u64) -> Instant {
    wait_eof(barrier);
    let release = Instant::now();
    let start_at = release + Duration::from_nanos(delay_ns);
    let now = Instant::now();
    if start_at > now {
        std::thread::sleep(start_at - now);
    }
    release
}

fn spin_for(think: Duration) {
    if !think.is_zero() {
        let until = Instant::now() + think;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }
}

/// Makes every access and read call of the program in the engine's order
/// (`BoundStep::next_index` with the previous unit, which carries over from one step to the
/// next as the engine's `Cursor::last` does); returns their number and the wrapping sum of
/// the words read (the first of each page loaded or record read), which keeps the loads
/// from being optimized away and lets a test check what was read. Each access to a mapping
/// is timed into `lat` (two vDSO clock reads, about 40 ns, around the load or store).
fn run_program(
    p: &TaskProgram,
    targets: &[Target],
    buf: &mut [u8],
    lat: &mut pagesim::histogram::Histogram,
) -> Result<(u64, u64), String> {
    let mut cur = StepCursor { rng: p.rng.clone(), last: 0, sink: 0 };
    let mut n = 0u64;
    for (step, target) in p.steps.iter().zip(targets) {
        n += run_step(step, target, &mut cur, buf, lat)?;
    }
    Ok((n, std::hint::black_box(cur.sink)))
}

/// A process's position in its access stream: its RNG, the unit its last access touched
/// (`Cursor::last`), and the sum of the words it read.
struct StepCursor {
    rng: pagesim::rng::Rng,
    last: u32,
    sink: u64,
}

/// Makes the accesses or calls of one step (see [`run_program`]); returns their number.
fn run_step(
    step: &pagesim::workload::BoundStep,
    target: &Target,
    cur: &mut StepCursor,
    buf: &mut [u8],
    lat: &mut pagesim::histogram::Histogram,
) -> Result<u64, String> {
    let (rng, sink) = (&mut cur.rng, &mut cur.sink);
    let mut n = 0u64;
    {
        let think = Duration::from_nanos(step.think_ns);
        match target {
            &Target::Map { base, pages } if step.op == AccessOp::Msync => {
                for _ in 0..step.total {
                    // SAFETY: [base, base + pages * PAGE) is a live shared file mapping.
                    if unsafe { libc::msync(base.cast(), pages * PAGE, libc::MS_SYNC) } != 0 {
                        return Err(format!("msync: {}", crate::last_os_error()));
                    }
                    spin_for(think);
                }
            }
            &Target::Map { base, pages } => {
                for i in 0..step.total {
                    let idx = step.next_index(i, rng, cur.last);
                    cur.last = idx;
                    let idx = idx as usize;
                    assert!(idx < pages, "page index {idx} outside a region of {pages} pages");
                    let t0 = Instant::now();
                    // SAFETY: idx < pages, so the 8-byte word at the start of page idx lies
                    // inside the live mapping [base, base + pages * PAGE), which is readable
                    // (and writable unless it maps a file read-only, which the scenario then only reads)
                    // and aligned to the page.
                    unsafe {
                        let w = base.add(idx * PAGE).cast::<u64>();
                        if step.write {
                            std::ptr::write_volatile(w, i | 1);
                        } else {
                            *sink = sink.wrapping_add(std::ptr::read_volatile(w));
                        }
                    }
                    lat.record(t0.elapsed().as_nanos() as u64);
                    spin_for(think);
                }
            }
            Target::Read { path, fd, pread, op } => {
                let own = match fd {
                    Some(_) => None,
                    None => Some(open_for(path, *op).map_err(|e| format!("{}: {e}", path.display()))?),
                };
                use std::os::fd::AsRawFd;
                let fd = fd.unwrap_or_else(|| own.as_ref().expect("opened").as_raw_fd());
                if let Some(a) = step.fadvise {
                    fadvise(fd, a).map_err(|e| format!("{}: {e}", path.display()))?;
                }
                if op.is_file_sync() {
                    for _ in 0..step.total {
                        file_call(fd, *op).map_err(|e| format!("{}: {op:?}: {e}", path.display()))?;
                        spin_for(think);
                    }
                    drop(own);
                    return Ok(step.total);
                }
                let len = step.record_pages as usize * PAGE;
                let started = Instant::now();
                // pace = "steady": when the next call's interval begins at the earliest, and
                // when the previous call ended.
                let (mut next_due, mut last_end) = (started, started);
                let mut pos = 0u64;
                for i in 0..step.total {
                    let unit = step.next_index(i, rng, cur.last);
                    cur.last = unit;
                    let off = unit as u64 * len as u64;
                    if step.write {
                        buf[..8].copy_from_slice(&(i | 1).to_le_bytes());
                        write_record(fd, off, &buf[..len], *pread, &mut pos)
                            .map_err(|e| format!("{}: write of {len} bytes at {off}: {e}", path.display()))?;
                        if step.fsync_every > 0 && (i + 1) % step.fsync_every == 0 {
                            // SAFETY: fsync of a descriptor this process has open.
                            if unsafe { libc::fsync(fd) } != 0 {
                                return Err(format!("{}: fsync: {}", path.display(), crate::last_os_error()));
                            }
                        }
                    } else {
                        let got = read_record(fd, off, &mut buf[..len], *pread, &mut pos)
                            .map_err(|e| format!("{}: read of {len} bytes at {off}: {e}", path.display()))?;
                        if got >= 8 {
                            *sink = sink.wrapping_add(u64::from_le_bytes(buf[..8].try_into().expect("8 bytes")));
                        }
                    }
                    spin_for(think);
                    if step.rate > 0 {
                        // The engine's finish_access: catch-up sleeps until the bytes read so
                        // far are due; steady gives each call one interval from when it
                        // began (its due time, or the previous call's end if that was later).
                        let due = match step.pace {
                            Pace::CatchUp => started + Duration::from_nanos(rate_due_ns(i + 1, len as u64, step.rate)),
                            Pace::Steady => {
                                let began = if i == 0 { started } else { next_due.max(last_end) };
                                next_due = began + Duration::from_nanos(rate_due_ns(1, len as u64, step.rate));
                                last_end = Instant::now();
                                next_due
                            }
                        };
                        let now = Instant::now();
                        if due > now {
                            std::thread::sleep(due - now);
                        }
                    }
                }
                drop(own);
            }
        }
        n += step.total;
    }
    Ok(n)
}

/// Opens a scenario file for a step's calls: read-write for the calls that write or
/// truncate, O_APPEND for appends (each write goes at the end, whatever the offset).
fn open_for(path: &Path, op: AccessOp) -> Result<std::fs::File, std::io::Error> {
    let writes = matches!(op, AccessOp::Write | AccessOp::Pwrite | AccessOp::Append | AccessOp::Truncate);
    std::fs::OpenOptions::new().read(true).write(writes).append(op == AccessOp::Append).open(path)
}

/// A whole-file call on `fd`: fsync, fdatasync, sync_file_range(SYNC_FILE_RANGE_WRITE)
/// over the whole file, or truncate to 0 (the engine's `file_sync_step`).
fn file_call(fd: libc::c_int, op: AccessOp) -> Result<(), std::io::Error> {
    // SAFETY: each call works on a descriptor this process has open and touches no memory.
    let r = unsafe {
        match op {
            AccessOp::Fsync => libc::fsync(fd),
            AccessOp::Fdatasync => libc::fdatasync(fd),
            AccessOp::SyncFileRange => libc::sync_file_range(fd, 0, 0, libc::SYNC_FILE_RANGE_WRITE),
            AccessOp::Truncate => libc::ftruncate(fd, 0),
            _ => unreachable!("not a whole-file call: {op:?}"),
        }
    };
    if r == 0 {
        Ok(())
    } else {
        Err(crate::last_os_error())
    }
}

/// Writes `buf` at `off`: with pwrite(2), or with write(2) at the file position `pos`
/// (seeking first when it is elsewhere).
fn write_record(fd: libc::c_int, off: u64, buf: &[u8], pwrite: bool, pos: &mut u64) -> Result<(), std::io::Error> {
    if !pwrite && *pos != off {
        // SAFETY: lseek on our own descriptor.
        if unsafe { libc::lseek(fd, off as libc::off_t, libc::SEEK_SET) } < 0 {
            return Err(crate::last_os_error());
        }
    }
    let mut done = 0;
    while done < buf.len() {
        let rest = &buf[done..];
        // SAFETY: writes from a live buffer through a descriptor this process has open.
        let n = unsafe {
            if pwrite {
                libc::pwrite(fd, rest.as_ptr().cast(), rest.len(), (off + done as u64) as libc::off_t)
            } else {
                libc::write(fd, rest.as_ptr().cast(), rest.len())
            }
        };
        if n < 0 {
            let e = crate::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        done += n as usize;
    }
    *pos = off + done as u64;
    Ok(())
}

/// When `done` records of `len` bytes are due at `rate` bytes per second, ns after the
/// step's start (the engine's `finish_access`).
fn rate_due_ns(done: u64, len: u64, rate: u64) -> u64 {
    (done as u128 * len as u128 * 1_000_000_000 / rate as u128) as u64
}

/// posix_fadvise over the whole file (the engine gives WILLNEED for the whole file too).
fn fadvise(fd: libc::c_int, a: Fadvise) -> Result<(), std::io::Error> {
    let advice = match a {
        Fadvise::Normal => libc::POSIX_FADV_NORMAL,
        Fadvise::Sequential => libc::POSIX_FADV_SEQUENTIAL,
        Fadvise::Random => libc::POSIX_FADV_RANDOM,
        Fadvise::Willneed => libc::POSIX_FADV_WILLNEED,
    };
    // SAFETY: fd is a descriptor this process has open; the call changes no memory of ours.
    let r = unsafe { libc::posix_fadvise(fd, 0, 0, advice) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::from_raw_os_error(r))
    }
}

/// Reads `buf.len()` bytes at `off` (fewer at the end of the file): with pread(2), or with
/// read(2) from the file position `pos` (seeking first when it is elsewhere). Returns the
/// bytes read.
fn read_record(fd: libc::c_int, off: u64, buf: &mut [u8], pread: bool, pos: &mut u64) -> Result<usize, std::io::Error> {
    if !pread && *pos != off {
        // SAFETY: lseek on our own descriptor.
        if unsafe { libc::lseek(fd, off as libc::off_t, libc::SEEK_SET) } < 0 {
            return Err(crate::last_os_error());
        }
        *pos = off;
    }
    let mut got = 0usize;
    while got < buf.len() {
        let rest = &mut buf[got..];
        // SAFETY: reads into the live buffer `rest` of rest.len() bytes from our own fd.
        let r = unsafe {
            if pread {
                libc::pread(fd, rest.as_mut_ptr().cast(), rest.len(), (off + got as u64) as libc::off_t)
            } else {
                libc::read(fd, rest.as_mut_ptr().cast(), rest.len())
            }
        };
        if r < 0 {
            let e = crate::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            break;
        }
        got += r as usize;
    }
    if !pread {
        *pos = off + got as u64;
    }
    Ok(got)
}

/// Sends one result record, of run `run` of program `task` by this process: index, kind (0
/// ok, 1 error), task, run, pid, start, end, accesses, message length, then the message and
/// the latency buckets. One write of at most PIPE_BUF bytes, so records never interleave.
fn send_result(fd: libc::c_int, index: u32, task: usize, run: u32, r: ChildResult) {
    let mut rec = Vec::with_capacity(RECORD + MAX_MSG);
    let (kind, (s, e, a, lat), msg) = match r {
        Ok(t) => (0u32, t, String::new()),
        Err(m) => (1u32, (0, 0, 0, Vec::new()), m),
    };
    let mut msg = msg.into_bytes();
    msg.truncate(MAX_MSG);
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() } as u32;
    for v in [index, kind, task as u32, run, pid, 0] {
        rec.extend_from_slice(&v.to_le_bytes());
    }
    for v in [s, e, a, msg.len() as u64] {
        rec.extend_from_slice(&v.to_le_bytes());
    }
    rec.extend_from_slice(&msg);
    // Then the latency buckets (none with an error): their number, then (upper, count).
    rec.extend_from_slice(&(lat.len() as u64).to_le_bytes());
    for (u, c) in lat {
        rec.extend_from_slice(&u.to_le_bytes());
        rec.extend_from_slice(&c.to_le_bytes());
    }
    // SAFETY: writes the bytes of a live buffer to our own pipe's write end.
    unsafe { libc::write(fd, rec.as_ptr().cast(), rec.len()) };
}

/// Fills `tasks` from the result records in `data`. A record of a run the runner did not
/// start (a lifecycle run: a spawned, forked or exec'd program) gets an entry of its own,
/// named `NAME.RUN`, with the exit status of a normal exit if it ended well (its parent, not
/// the runner, reaps it); a [`lifecycle::LOST`] record reports a process killed before it
/// could report.
fn parse_results(sc: &Scenario, data: &[u8], tasks: &mut Vec<TaskRun>) {
    let u32_at = |o: usize| u32::from_le_bytes(data[o..o + 4].try_into().expect("4 bytes"));
    let u64_at = |o: usize| u64::from_le_bytes(data[o..o + 8].try_into().expect("8 bytes"));
    let mut o = 0;
    while o + RECORD <= data.len() {
        let (i, kind) = (u32_at(o) as usize, u32_at(o + 4));
        let (task, run, pid) = (u32_at(o + 8) as usize, u32_at(o + 12), u32_at(o + 16) as i32);
        let (s, e, a, len) = (u64_at(o + 24), u64_at(o + 32), u64_at(o + 40), u64_at(o + 48) as usize);
        let msg_end = (o + RECORD + len).min(data.len());
        let nb = if msg_end + 8 <= data.len() { u64_at(msg_end) as usize } else { 0 };
        let lat_end = (msg_end + 8 + 16 * nb).min(data.len());
        let lat: Vec<(u64, u64)> = (msg_end + 8..lat_end)
            .step_by(16)
            .filter(|&q| q + 16 <= lat_end)
            .map(|q| (u64_at(q), u64_at(q + 8)))
            .collect();
        let index = if i == lifecycle::LOST as usize { tasks.len() } else { i };
        // Entries up to this one: runs whose record has not come yet are placeholders
        // (no name) until it does.
        while tasks.len() <= index && index < tasks.len() + lifecycle::MAX_RUNS {
            tasks.push(TaskRun {
                name: String::new(),
                task: 0,
                instance: 0,
                pid: 0,
                memcg: None,
                start_ns: None,
                end_ns: None,
                wall_ns: None,
                accesses: None,
                exit_code: None,
                signal: None,
                time_limited: false,
                error: Some("no record of this run came back".into()),
                access_latency: Vec::new(),
            });
        }
        if let Some(t) = tasks.get_mut(index).filter(|t| t.name.is_empty()) {
            let name = sc.config.task.get(task).map_or("?", |t| t.name.as_str());
            t.name = if i == lifecycle::LOST as usize { "lost".into() } else { format!("{name}.{run}") };
            (t.task, t.instance, t.pid) = (task, run, pid);
            t.memcg = sc.config.task.get(task).and_then(|t| t.memcg.clone());
            t.error = None;
            // Its parent, not the runner, reaps it: a record of a run that ended well
            // stands for a normal exit.
            t.exit_code = (kind == 0).then_some(0);
        }
        if let Some(t) = tasks.get_mut(index) {
            if kind == 0 {
                (t.start_ns, t.end_ns, t.wall_ns, t.accesses) = (Some(s), Some(e), Some(e - s), Some(a));
                t.access_latency = lat;
            } else {
                t.error = Some(String::from_utf8_lossy(&data[o + RECORD..msg_end]).into_owned());
            }
        }
        o = lat_end;
    }
}

/// A lifecycle run's process tree as the runner watches it: the read end of the active pipe
/// (EOF: every live process is paused) and the write end of the release pipe (closed then).
struct Tree<'a> {
    active: libc::c_int,
    release: &'a mut libc::c_int,
}

/// Reaps every child while draining the result pipe; past `deadline` kills the remaining
/// ones (by PID; for a lifecycle run, each top-level process's group, which holds its
/// descendants). With a process `tree`, releases the paused processes once no other is
/// left. Returns the wait statuses (in `pids` order), the result bytes and the PIDs killed
/// for the time limit.
fn wait_all(
    pids: &[i32],
    results: libc::c_int,
    deadline: Option<Instant>,
    mut tree: Option<Tree<'_>>,
) -> (Vec<i32>, Vec<u8>, Vec<i32>) {
    let mut status: Vec<Option<i32>> = vec![None; pids.len()];
    let mut data = Vec::new();
    let mut limited = Vec::new();
    let mut eof = false;
    let mut buf = vec![0u8; 1 << 16];
    while status.iter().any(Option::is_none) || !eof {
        if !eof {
            let timeout = deadline.map_or(100, |d| d.saturating_duration_since(Instant::now()).as_millis().min(100));
            let active = tree.as_ref().map_or(-1, |t| if *t.release >= 0 { t.active } else { -1 });
            let mut pfd = [
                libc::pollfd { fd: results, events: libc::POLLIN, revents: 0 },
                libc::pollfd { fd: active, events: libc::POLLIN, revents: 0 },
            ];
            // SAFETY: pfd is two valid pollfds for the duration of the call (a negative fd is
            // ignored).
            unsafe { libc::poll(pfd.as_mut_ptr(), 2, timeout as libc::c_int) };
            if pfd[0].revents & (libc::POLLIN | libc::POLLHUP) != 0 {
                // SAFETY: reads into a live buffer of buf.len() bytes.
                let n = unsafe { libc::read(results, buf.as_mut_ptr().cast(), buf.len()) };
                if n > 0 {
                    data.extend_from_slice(&buf[..n as usize]);
                } else if n == 0 {
                    eof = true;
                }
            }
            if pfd[1].revents & (libc::POLLIN | libc::POLLHUP) != 0 {
                // Nothing is ever written to the active pipe: readable means EOF, every
                // process still alive has paused. Release them.
                if let Some(t) = tree.as_mut() {
                    close(t.release);
                }
            }
        }
        // With the pipe at EOF every child has exited: block for the rest.
        let flags = if eof { 0 } else { libc::WNOHANG };
        for (k, &pid) in pids.iter().enumerate() {
            if status[k].is_some() {
                continue;
            }
            let mut st = 0;
            // SAFETY: waits for our own child `pid`; st is a live local.
            let r = unsafe { libc::waitpid(pid, &mut st, flags) };
            if r == pid || (r < 0 && crate::last_os_error().raw_os_error() == Some(libc::ECHILD)) {
                status[k] = Some(st);
            }
        }
        if let Some(d) = deadline {
            if Instant::now() >= d {
                for (k, &pid) in pids.iter().enumerate() {
                    if status[k].is_none() && !limited.contains(&pid) {
                        // The process, or its process group (itself and what it started).
                        let target = if tree.is_some() { -pid } else { pid };
                        // SAFETY: signals only a child this process forked and has not reaped
                        // (and, for a tree, the group that child leads).
                        unsafe { libc::kill(target, libc::SIGKILL) };
                        limited.push(pid);
                    }
                }
                if let Some(t) = tree.as_mut() {
                    close(t.release);
                }
            }
        }
    }
    (status.into_iter().map(|s| s.unwrap_or(0)).collect(), data, limited)
}

fn kill_and_reap(pids: &[i32]) {
    for &pid in pids {
        let mut st = 0;
        // SAFETY: signals and reaps only children this process forked and has not reaped.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, &mut st, 0);
        }
    }
}

/// What of the scenario the load generator cannot run: page content other than the one
/// word per page it stores, and a shared descriptor on per-task copies of a file (what the
/// lifecycle runner cannot follow it says when it meets it: lifecycle.rs).
pub fn unsupported(sc: &Scenario) -> Option<String> {
    if let Some(t) = sc.config.task.iter().find(|t| t.trace.as_ref().is_some_and(|tp| tp.format.is_some())) {
        return Some(format!("task \"{}\" replays another tool's trace: it has no program to run on the host", t.name));
    }
    let traces = sc.config.task.iter().filter(|t| t.trace.is_some()).count();
    if traces > 0 && traces < sc.config.task.len() {
        return Some(
            "a scenario that replays traces has no other tasks on the host (the captured programs run, \
             not the load generator)"
                .into(),
        );
    }
    for (n, r) in &sc.file.region {
        if r.compress_ratio.is_some() || r.zero_percent > 0.0 || r.incompressible_percent > 0.0 {
            return Some(format!(
                "region.{n}: page content (compress_ratio, zero_percent, incompressible_percent) is not \
                 reproduced on the host; the load generator stores one non-zero word per page (word pages)"
            ));
        }
    }
    for (i, t) in sc.file.task.iter().enumerate() {
        for (j, s) in t.step.iter().enumerate() {
            if let (Some(f), true) = (&s.file, s.shared_fd) {
                if sc.file.file[f].per_task {
                    return Some(format!(
                        "task[{i}].step[{j}]: shared_fd on the per_task file \"{f}\": each process reads its \
                         own copy, so there is no one open file to share"
                    ));
                }
            }
        }
    }
    None
}

/// The largest anon mTHP size the scenario turns on, in bytes (`None`: anon mTHP off).
fn mthp_align(sc: &Scenario) -> Option<usize> {
    sc.config.kernel.anon_mthp_kb.last().map(|kb| *kb as usize * 1024)
}

/// The scenario as the load generator reads it: the resolved configuration
/// ([`config::Config`]) serialized, a scenario of the same schema with every default written
/// out, which [`Scenario::from_json`] resolves to the same configuration. `run_on_host` hands
/// the load generator this file, so overrides applied to the scenario, and the defaults of
/// the pagesim that resolved it, reach it exactly.
pub fn replay_json(sc: &Scenario) -> serde_json::Value {
    serde_json::to_value(&sc.config).expect("a resolved configuration serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCENARIO: &str = r#"
        seed = 9
        time_limit = "5s"
        [machine]
        ram = "256MB"
        [memcg.box]
        max = "48MB"
        [memcg.free]
        [device.d]
        model = "nvme"
        [[swap]]
        device = "d"
        size = "64MB"
        [region.heap]
        kind = "anon"
        size = "1MB"
        [region.shared]
        kind = "shmem"
        size = "200KB"
        [[task]]
        name = "w"
        count = 2
        memcg = "box"
        start = "3ms"
        [[task.step]]
        region = "heap"
        pattern = "zipf"
        zipf_s = 0.7
        accesses = 300
        op = "read"
        [[task.step]]
        region = "shared"
        pattern = "stride"
        stride = 5
        passes = 2
        think = "1us"
        [[task]]
        name = "r"
        memcg = "free"
        [[task.step]]
        region = "shared"
        pattern = "random"
        passes = 3
    "#;

    fn streams(sc: &Scenario) -> Vec<(String, Vec<u32>)> {
        task_programs(sc, sc.file.seed)
            .into_iter()
            .map(|p| {
                let mut rng = p.rng.clone();
                let v = p.steps.iter().flat_map(|s| (0..s.total).map(|i| s.index(i, &mut rng)).collect::<Vec<_>>());
                (p.name.clone(), v.collect())
            })
            .collect()
    }

    #[test]
    fn the_replay_file_makes_the_same_accesses() {
        let sc = Scenario::from_toml(SCENARIO, "s.toml", &["seed=11".into()]).unwrap();
        let replay = Scenario::from_json(&replay_json(&sc), "replay.json", &[]).unwrap();
        assert_eq!(replay.name, "s");
        assert_eq!(replay.file.seed, 11, "overrides reach the load generator");
        assert_eq!(replay.file.time_limit, Some(5_000_000_000));
        assert_eq!(replay.file.memcg["box"].max, Some(48 << 20));
        assert_eq!(replay.file.task[0].start, 3_000_000);
        assert_eq!(replay.file.task[0].memcg.as_deref(), Some("box"));
        assert_eq!(streams(&sc), streams(&replay));
        assert_eq!(replay.file.task[0].step[1].think, 1000);
    }

    /// With anon mTHP on, a private region starts on a boundary of the largest size (as the
    /// engine's regions do: their folios are aligned to the region's start) and is usable.
    #[test]
    fn an_mthp_region_is_mapped_on_a_boundary_of_its_largest_size() {
        for align in [64 << 10, 1 << 20] {
            let m = Mapping::new(Backing::PrivateAnon, 300 * PAGE, "r", Some(align)).unwrap();
            assert_eq!(m.addr as usize % align, 0);
            // SAFETY: the mapping is 300 pages, writable.
            unsafe {
                m.addr.write(1);
                m.addr.add(300 * PAGE - 1).write(2);
            }
        }
    }

    #[test]
    fn the_program_touches_the_engines_pages_in_the_engines_order() {
        let text = "seed = 5\n[machine]\nram = \"64MB\"\n[region.r]\nkind = \"anon\"\nsize = \"400KB\"\n\
                    [[task]]\nname = \"z\"\n[[task.step]]\nregion = \"r\"\npattern = \"zipf\"\naccesses = 500\n";
        let sc = Scenario::from_toml(text, "z.toml", &[]).unwrap();
        let p = &task_programs(&sc, 5)[0];
        let pages = 100;
        let m = Mapping::new(Backing::PrivateAnon, pages * PAGE, "r", None).unwrap();
        assert_eq!(
            run_program(p, &[Target::Map { base: m.addr, pages }], &mut [], &mut Default::default()).unwrap().0,
            500
        );
        // Each store writes (access number | 1), so every page holds its last writer's number.
        let mut expect = vec![0u64; pages];
        let mut rng = p.rng.clone();
        for i in 0..500 {
            expect[p.steps[0].index(i, &mut rng) as usize] = i | 1;
        }
        let got: Vec<u64> = (0..pages)
            // SAFETY: page k < pages lies inside the live mapping m.
            .map(|k| unsafe { std::ptr::read_volatile(m.addr.add(k * PAGE).cast::<u64>()) })
            .collect();
        assert_eq!(got, expect);
        assert!(expect.iter().filter(|&&v| v == 0).count() > 10, "zipf leaves cold pages untouched");
    }

    const FILE_SCENARIO: &str = r#"
        seed = 3
        [machine]
        ram = "256MB"
        [device.d]
        model = "nvme"
        [file.big]
        device = "d"
        size = "400KB"
        [file.own]
        device = "d"
        size = "10000"
        per_task = true
        [region.m]
        kind = "file"
        file = "big"
        madvise = "random"
        [[task]]
        name = "r"
        count = 2
        stagger = "2ms"
        [[task.step]]
        file = "big"
        op = "pread"
        pattern = "random"
        accesses = 300
        record = "16KB"
        then_next = 0.3
        fadvise = "random"
        shared_fd = true
        [[task.step]]
        region = "m"
        pattern = "zipf"
        accesses = 200
        op = "read"
        [[task.step]]
        file = "own"
        op = "read"
        pattern = "reverse"
        passes = 2
        rate = "1MB"
        pace = "steady"
        [[task]]
        name = "z"
        [[task.step]]
        file = "big"
        op = "read"
        pattern = "zipf"
        cluster = "32KB"
        accesses = 100
    "#;

    #[test]
    fn the_replay_file_keeps_files_and_file_steps() {
        let sc = Scenario::from_toml(FILE_SCENARIO, "f.toml", &[]).unwrap();
        let replay = Scenario::from_json(&replay_json(&sc), "replay.json", &[]).unwrap();
        assert_eq!(streams(&sc), streams(&replay));
        // The replay resolves to the same configuration, file steps' keys, extents and all.
        let (a, b) = (&sc.config, &replay.config);
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        assert_eq!(b.task[0].stagger, 2_000_000);
        assert_eq!((b.file[1].name.as_str(), b.file[1].size, b.file[1].per_task), ("own", 10000, true));
        let m = b.region("m").unwrap();
        assert_eq!((m.file.as_deref(), m.madvise), (Some("big"), Some(Madvise::Random)));
        let config::Target::File(read) = &b.task[0].step[2].target else { panic!("step 2 reads a file") };
        assert_eq!((read.record, read.rate.map(|r| (r.rate, r.pace))), (4096, Some((1 << 20, Pace::Steady))));
        // Shared files first, then each reading process's own copy, named as the engine does.
        let names: Vec<(String, u64)> = host_files(&sc).into_iter().map(|f| (f.file_name, f.bytes)).collect();
        let want = [("file-big", 409600), ("file-own.0", 12288), ("file-own.1", 12288)];
        assert_eq!(names, want.map(|(n, b)| (n.to_string(), b)));
        assert!(unsupported(&sc).is_none());
        let shared_own = FILE_SCENARIO.replace(
            "[[task.step]]\n        file = \"own\"",
            "[[task.step]]\n        shared_fd = true\n        file = \"own\"",
        );
        let bad = Scenario::from_toml(&shared_own, "f.toml", &[]).unwrap();
        assert!(unsupported(&bad).unwrap().contains("shared_fd on the per_task file"), "{:?}", unsupported(&bad));
        let data = FILE_SCENARIO.replace("madvise = \"random\"", "madvise = \"random\"\n        [region.x]\n        kind = \"anon\"\n        size = \"1MB\"\n        compress_ratio = 2.5");
        let data = Scenario::from_toml(&data, "f.toml", &[]).unwrap();
        assert!(unsupported(&data).unwrap().contains("region.x: page content"));
    }

    #[test]
    fn file_reads_fetch_the_engines_records_in_the_engines_order() {
        let sc = Scenario::from_toml(FILE_SCENARIO, "f.toml", &[]).unwrap();
        let dir = crate::testutil::temp_dir("files");
        // The data as create_files writes it (which refuses tmpfs, where a test dir may be).
        for f in host_files(&sc) {
            let mut data = vec![0xa5u8; f.bytes as usize];
            for (k, page) in data.chunks_mut(PAGE).enumerate() {
                page[..8].copy_from_slice(&(k as u64 + 1).to_le_bytes());
            }
            std::fs::write(dir.join(&f.file_name), data).unwrap();
        }
        let progs = task_programs(&sc, sc.file.seed);
        // Task "z": zipf over 32 KiB clusters of 4 KiB records, read(2) with seeks.
        let p = &progs[2];
        let target = Target::Read { path: file_path(&sc, &dir, "big", 2), fd: None, pread: false, op: AccessOp::Read };
        let mut buf = vec![0u8; 4096];
        let (n, sum) = run_program(p, std::slice::from_ref(&target), &mut buf, &mut Default::default()).unwrap();
        // Record u starts at page u, whose first word is u + 1.
        let mut rng = p.rng.clone();
        let mut last = 0;
        let want: u64 = (0..100)
            .map(|i| {
                last = p.steps[0].next_index(i, &mut rng, last);
                last as u64 + 1
            })
            .sum();
        assert_eq!((n, sum), (100, want));
        // Task "r.1": random 16 KiB preads with then_next; only its first step, on its own.
        let p = &progs[1];
        let one = TaskProgram { steps: p.steps[..1].to_vec(), ..p.clone() };
        let target = Target::Read { path: file_path(&sc, &dir, "big", 1), fd: None, pread: true, op: AccessOp::Pread };
        let mut buf = vec![0u8; 16384];
        let (n, sum) = run_program(&one, std::slice::from_ref(&target), &mut buf, &mut Default::default()).unwrap();
        let mut rng = p.rng.clone();
        let mut last = 0;
        let mut next = 0;
        let want: u64 = (0..300)
            .map(|i| {
                let u = one.steps[0].next_index(i, &mut rng, last);
                next += (i > 0 && u == last + 1) as u32;
                last = u;
                u as u64 * 4 + 1
            })
            .sum();
        assert_eq!((n, sum), (300, want));
        assert!(next > 60, "then_next = 0.3 continues some reads: {next}");
        // Reverse over the per-task copy (3 pages in records of one page), paced at 1 MiB/s:
        // the n-th 4 KiB read is due n x 4096 / 2^20 s after the step's start.
        let st = &p.steps[2];
        assert_eq!(st.rate, 1 << 20);
        assert_eq!(rate_due_ns(6, 4096, st.rate), 23_437_500);
        let own = TaskProgram { steps: vec![st.clone()], ..p.clone() };
        let target = Target::Read { path: file_path(&sc, &dir, "own", 1), fd: None, pread: false, op: AccessOp::Read };
        let (n, sum) = run_program(&own, std::slice::from_ref(&target), &mut buf, &mut Default::default()).unwrap();
        assert_eq!((n, sum), (6, 2 * (3 + 2 + 1)));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn create_files_writes_every_page_non_zero_and_refuses_tmpfs() {
        let sc = Scenario::from_toml(FILE_SCENARIO, "f.toml", &[]).unwrap();
        let dir = crate::testutil::temp_dir("create");
        match create_files(&sc, &dir) {
            Ok(files) => {
                assert_eq!(files.len(), 3);
                let data = std::fs::read(dir.join("file-big")).unwrap();
                assert_eq!(data.len(), 409600);
                assert!(data.chunks(PAGE).all(|p| p.iter().all(|&b| b != 0) || p[..8] != [0; 8]));
                assert_eq!(u64::from_le_bytes(data[PAGE * 7..PAGE * 7 + 8].try_into().unwrap()), 8);
                // Just read, so cached; dropped, the files are cold.
                assert_eq!(drop_file_cache(&dir, &files).unwrap(), 0);
            }
            Err(e) => assert!(e.0.contains("on tmpfs/ramfs"), "{e}"),
        }
        if Path::new("/dev/shm").is_dir() {
            let shm = Path::new("/dev/shm").join(format!("pagesim-host-test-{}", std::process::id()));
            std::fs::create_dir_all(&shm).unwrap();
            let r = create_files(&sc, &shm);
            std::fs::remove_dir_all(&shm).unwrap();
            assert!(r.unwrap_err().0.contains("on tmpfs/ramfs"));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn result_records_round_trip() {
        let sc = Scenario::from_toml(
            "[machine]\nram = \"64MB\"\n[region.r]\nkind = \"anon\"\nsize = \"1MB\"\n\
             [[task]]\nname = \"t\"\n[[task.step]]\nregion = \"r\"\npattern = \"seq\"\n\
             [[task]]\nname = \"job\"\n[[task.step]]\nregion = \"r\"\npattern = \"seq\"\n",
            "t.toml",
            &[],
        )
        .unwrap();
        let p = Pipe::new().unwrap();
        send_result(p.w, 1, 0, 1, Ok((10, 30, 7, vec![(1151, 3), (81919, 2)])));
        send_result(p.w, 0, 0, 0, Err("mmap failed".into()));
        send_result(p.w, 2, 0, 2, Ok((5, 6, 1, Vec::new())));
        // A run the runner did not start (index 4: index 3 never reports), and a process
        // its parent reports killed.
        send_result(p.w, 4, 1, 7, Ok((40, 50, 9, Vec::new())));
        send_result(p.w, lifecycle::LOST, 1, 0, Err("process 9 was killed by signal 9".into()));
        let mut buf = vec![0u8; 4096];
        // SAFETY: reading from our own pipe into a live buffer.
        let n = unsafe { libc::read(p.r, buf.as_mut_ptr().cast(), buf.len()) };
        let mut tasks: Vec<TaskRun> = (0..3)
            .map(|i| TaskRun {
                name: format!("t{i}"),
                task: 0,
                instance: i,
                pid: 0,
                memcg: None,
                start_ns: None,
                end_ns: None,
                wall_ns: None,
                accesses: None,
                exit_code: Some(0),
                signal: None,
                time_limited: false,
                error: None,
                access_latency: Vec::new(),
            })
            .collect();
        parse_results(&sc, &buf[..n as usize], &mut tasks);
        assert_eq!((tasks[1].start_ns, tasks[1].wall_ns, tasks[1].accesses), (Some(10), Some(20), Some(7)));
        assert_eq!(tasks[1].access_latency, [(1151, 3), (81919, 2)], "the latency buckets follow the record");
        assert_eq!((tasks[2].accesses, tasks[2].access_latency.len()), (Some(1), 0), "the next record still parses");
        assert!(tasks[1].completed());
        assert_eq!(tasks[0].error.as_deref(), Some("mmap failed"));
        assert!(!tasks[0].completed());
        // The lifecycle run got an entry of its own, named for its program and run, with
        // the pid that sent it; the one that never reported stays an error.
        assert_eq!(tasks.len(), 6);
        assert_eq!((tasks[4].name.as_str(), tasks[4].task, tasks[4].accesses), ("job.7", 1, Some(9)));
        // SAFETY: getpid has no preconditions.
        assert_eq!(tasks[4].pid, unsafe { libc::getpid() });
        assert!(tasks[4].completed());
        assert!(!tasks[3].completed() && tasks[3].error.as_deref() == Some("no record of this run came back"));
        assert!(tasks[5].error.as_deref().unwrap().contains("killed by signal 9") && !tasks[5].completed());
    }

    /// An append step opens the file O_APPEND: two steps of appends grow an empty file by
    /// their records, whatever offsets the pattern gives; the host file starts at the
    /// scenario's start size, not its max_size.
    #[test]
    fn appends_grow_the_host_file() {
        let text = "[machine]\nram = \"64MB\"\n[device.d]\nmodel = \"nvme\"\n[file.f]\ndevice = \"d\"\n\
                    size = 0\nmax_size = \"1MB\"\n[[task]]\nname = \"t\"\n\
                    [[task.step]]\nfile = \"f\"\nop = \"append\"\nrecord = \"8KB\"\naccesses = 3\n";
        let sc = Scenario::from_toml(text, "a.toml", &[]).unwrap();
        let files = host_files(&sc);
        assert_eq!(files[0].bytes, 0);
        let dir = crate::testutil::temp_dir("append");
        std::fs::write(dir.join(&files[0].file_name), b"").unwrap();
        let progs = task_programs(&sc, sc.file.seed);
        let target =
            || Target::Read { path: file_path(&sc, &dir, "f", 0), fd: None, pread: false, op: AccessOp::Append };
        let mut buf = vec![0u8; 8192];
        let steps = [progs[0].steps[0].clone(), progs[0].steps[0].clone()];
        let p = TaskProgram { steps: steps.to_vec(), ..progs[0].clone() };
        let (n, _) = run_program(&p, &[target(), target()], &mut buf, &mut Default::default()).unwrap();
        assert_eq!(n, 6);
        assert_eq!(std::fs::metadata(dir.join(&files[0].file_name)).unwrap().len(), 6 * 8192);
    }
}
