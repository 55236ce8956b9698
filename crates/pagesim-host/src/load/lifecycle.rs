//! The process lifecycle on the host: scenarios whose programs spawn, fork, wait, exec,
//! mmap, munmap, brk and pause run as real process trees.
//!
//! ```text
//!   runner ── fork ──► top-level process (its own process group)
//!                        spawn: fork ──► child ── execve(/proc/self/exe --exec-child) ──► program
//!                        fork:  fork ──► child runs its program in the inherited address space
//!                        exec:  execve(/proc/self/exe --exec-child): a new image, the same process
//!                        pause: close the "active" pipe, wait for the runner's release
//! ```
//!
//! Every process holds the write ends of the result pipe and of an "active" pipe, and the
//! read end of a "release" pipe, across fork and exec; a process that pauses closes its end
//! of the active pipe, so the runner sees EOF there exactly when every process still alive
//! is paused (the engine's `live == paused`) and then closes the release pipe. A memfd of
//! counters shared by all gives each run of a program its run index (which per-task file
//! copy it reads, as the engine's `runs_begun`) and each result record its index.
//!
//! The accesses are the engine's: a child's RNG stream is split from its parent's when it
//! starts (engine/fork.rs `new_process`), a program's steps are bound to the pages its
//! mapping has when the step starts (the engine rebinds them after brk), and exec carries the
//! stream on. What the host cannot follow is refused with a clear error: a shmem region in a
//! program that starts by exec (its mapping does not survive exec), a per-task file region,
//! and `shared_fd` steps.

use super::{join_cgroup, region_len, run_step, send_result, Backing, Mapping, StepCursor, Target, PAGE};
use crate::Error;
use pagesim::rng::Rng;
use pagesim::scenario::config::{Control, Target as StepTarget};
use pagesim::scenario::{AccessOp, RegionKind, Scenario};
use pagesim::workload::BoundStep;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The environment variable that carries an [`ExecSpec`] into a new image.
pub const EXEC_ENV: &str = "PAGESIM_LOAD_EXEC";
/// The argument pagesim-load is exec'd with to run one program of a lifecycle run.
pub const EXEC_ARG: &str = "--exec-child";
/// Record index of a record that reports a process that died without reporting itself.
pub const LOST: u32 = u32::MAX;
/// Most runs one lifecycle run reports (a record index beyond is ignored).
pub const MAX_RUNS: usize = 1 << 20;

/// What every process of a lifecycle run shares: how to load the scenario again after exec,
/// where its memcgs and files are, and the descriptors of the run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Ctx {
    pub scenario: PathBuf,
    pub sets: Vec<String>,
    pub memcgs: BTreeMap<String, PathBuf>,
    pub file_dir: Option<PathBuf>,
    /// Write end of the result pipe.
    pub results: i32,
    /// Write end of the active pipe (closed by a process that pauses).
    pub active: i32,
    /// Read end of the release pipe (EOF: paused processes exit).
    pub release: i32,
    /// The counters memfd: [next record index, runs begun of each program...].
    pub counters: i32,
    /// CLOCK_MONOTONIC of the release of the top-level processes, ns.
    pub release_mono_ns: u64,
}

/// What a new image runs: program `prog` as its run `run`, reporting as record `record`,
/// with the RNG state it carries and the children it already has.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExecSpec {
    pub ctx: Ctx,
    pub prog: usize,
    pub run: u32,
    pub record: u32,
    pub rng: [u64; 4],
    pub children: u32,
}

/// CLOCK_MONOTONIC now, ns (what `Instant` reads on Linux).
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is valid output storage for clock_gettime.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The counters memfd mapped: atomics every process of the run updates.
struct Counters {
    base: *const AtomicU32,
    len: usize,
}

impl Counters {
    /// A new memfd of `nprogs + 1` counters, the record index starting at `first_record`
    /// and each program's runs at `runs[p]` (the top-level runs already taken). Returns the
    /// mapping and the descriptor (inherited across fork and exec).
    fn create(first_record: u32, runs: &[u32]) -> Result<(Counters, i32), Error> {
        let name = std::ffi::CString::new("pagesim-load-counters").expect("no NUL");
        // SAFETY: memfd_create with a NUL-terminated name; no memory is touched.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), 0) };
        if fd < 0 {
            return Err(Error(format!("memfd_create: {}", crate::last_os_error())));
        }
        let len = (runs.len() + 1) * 4;
        // SAFETY: sizes the memfd just created.
        if unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
            return Err(Error(format!("ftruncate of the counters memfd: {}", crate::last_os_error())));
        }
        let c = Counters::map(fd, runs.len() + 1)?;
        c.at(0).store(first_record, Ordering::SeqCst);
        for (p, &r) in runs.iter().enumerate() {
            c.at(1 + p).store(r, Ordering::SeqCst);
        }
        Ok((c, fd))
    }

    /// Maps the counters memfd `fd` of `n` counters.
    fn map(fd: i32, n: usize) -> Result<Counters, Error> {
        let len = n * 4;
        // SAFETY: a fresh shared mapping of the memfd, at an address of the kernel's choosing.
        let addr = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0)
        };
        if addr == libc::MAP_FAILED {
            return Err(Error(format!("mmap of the counters memfd: {}", crate::last_os_error())));
        }
        Ok(Counters { base: addr.cast(), len: n })
    }

    fn at(&self, i: usize) -> &AtomicU32 {
        assert!(i < self.len);
        // SAFETY: i < len, the mapping holds len aligned u32s that live as long as self, and
        // every process accesses them only atomically.
        unsafe { &*self.base.add(i) }
    }

    fn next_record(&self) -> u32 {
        self.at(0).fetch_add(1, Ordering::SeqCst)
    }

    fn next_run(&self, prog: usize) -> u32 {
        self.at(1 + prog).fetch_add(1, Ordering::SeqCst)
    }
}

/// Clears close-on-exec on `fd`, so a new image keeps it.
fn keep_across_exec(fd: i32) {
    if fd >= 0 {
        // SAFETY: changes only the descriptor flags of a descriptor this process owns.
        unsafe { libc::fcntl(fd, libc::F_SETFD, 0) };
    }
}

/// One process of a lifecycle run, running one program.
struct Proc<'a> {
    sc: &'a Scenario,
    ctx: Ctx,
    counters: Counters,
    /// The shmem regions the runner mapped before forking (gone after exec).
    shared: &'a BTreeMap<String, Mapping>,
    prog: usize,
    run: u32,
    record: u32,
    cur: StepCursor,
    /// Its own mappings, by region index.
    maps: BTreeMap<u32, Mapping>,
    children: u32,
    release: Instant,
    /// When this run began, ns after the release.
    start_ns: u64,
}

impl Proc<'_> {
    fn now_ns(&self) -> u64 {
        self.release.elapsed().as_nanos() as u64
    }

    /// Runs the program from its first step, then exits (or pauses); never returns.
    fn run_and_exit(mut self) -> ! {
        let r = self.run_program();
        let code = match r {
            Ok(Some((accesses, lat))) => {
                let end = self.now_ns();
                send_result(
                    self.ctx.results,
                    self.record,
                    self.prog,
                    self.run,
                    Ok((self.start_ns, end, accesses, lat)),
                );
                0
            }
            // Paused: its record went out when it paused; released now.
            Ok(None) => 0,
            Err(e) => {
                send_result(self.ctx.results, self.record, self.prog, self.run, Err(e));
                3
            }
        };
        drop(self.maps);
        // SAFETY: _exit ends the process without running destructors of state the parent
        // of a fork also holds.
        unsafe { libc::_exit(code) }
    }

    /// Maps region `r` (at its full size) unless it is mapped.
    fn map_region(&mut self, r: u32) -> Result<(), String> {
        let region = &self.sc.config.region[r as usize];
        let name = region.name.clone();
        if self.maps.contains_key(&r)
            || (Backing::of(region.kind).shared_between_tasks() && self.shared.contains_key(&name))
        {
            return Ok(());
        }
        let m = match region.kind {
            RegionKind::Shmem => {
                // Every shmem region was mapped by the runner; only an exec loses them.
                return Err(format!(
                    "region {name}: a shmem region in a program started by exec or spawn is not reproduced on the \
                     host (the runner's shared mapping does not survive exec)"
                ));
            }
            RegionKind::File => {
                let fname = region.file.as_deref().expect("validated: a file region names its file");
                if self.sc.file.file[fname].per_task {
                    return Err(format!(
                        "region {name}: a per_task file region is not reproduced by the host's lifecycle runner"
                    ));
                }
                let dir = self.ctx.file_dir.as_deref().ok_or("the scenario has files: give --file-dir")?;
                let path = dir.join(format!("file-{fname}"));
                if region.exec {
                    Mapping::exec_file(&path, region_len(region), &name)
                } else {
                    Mapping::file(&path, region_len(region), &name, region.madvise, region.writable)
                }
            }
            RegionKind::Anon => {
                Mapping::new(Backing::PrivateAnon, region_len(region), &name, super::mthp_align(self.sc))
            }
        }
        .map_err(|e| e.0)?;
        self.maps.insert(r, m);
        Ok(())
    }

    /// The mapping of region `r`: (base, pages).
    fn mapping(&self, r: u32) -> (*mut u8, usize) {
        let region = &self.sc.config.region[r as usize];
        match self.maps.get(&r).or_else(|| self.shared.get(&region.name)) {
            Some(m) => (m.addr, m.len / PAGE),
            None => unreachable!("mapped before its step"),
        }
    }

    /// The path of file `name` for this run: a per-task file's copy for run `run` (the
    /// engine's `extents[run]`, owned by a process slot), else the shared file.
    fn file_path(&self, fs: &pagesim::scenario::config::FileStep) -> Result<PathBuf, String> {
        let dir = self.ctx.file_dir.as_deref().ok_or("the scenario has files: give --file-dir")?;
        let e = fs
            .extents
            .get(self.run as usize)
            .ok_or_else(|| format!("file {}: no copy for run {}", fs.file, self.run))?;
        Ok(match self.sc.config.extents[*e as usize].owner {
            Some(o) => dir.join(format!("file-{}.{o}", fs.file)),
            None => dir.join(format!("file-{}", fs.file)),
        })
    }

    /// Runs the program's steps: `Some((accesses, latency buckets))` when it ends, `None`
    /// when it paused and was released.
    #[allow(clippy::type_complexity)]
    fn run_program(&mut self) -> Result<Option<(u64, Vec<(u64, u64)>)>, String> {
        let task = &self.sc.config.task[self.prog];
        // The engine maps every region the program's steps name when the program starts.
        for st in &task.step {
            if let StepTarget::Region { index, .. } = st.target {
                self.map_region(index)?;
            }
        }
        // The read buffer: the largest record (touched now, so the reads do not fault on it).
        let record_max = task
            .step
            .iter()
            .filter(|s| matches!(s.target, StepTarget::File(_)))
            .map(|s| BoundStep::new(s, self.sc.config.step_pages(s)).record_pages as usize * PAGE)
            .max()
            .unwrap_or(0);
        let mut buf = vec![1u8; record_max];
        let mut lat = pagesim::histogram::Histogram::default();
        let mut n = 0u64;
        for j in 0..task.step.len() {
            let st = &self.sc.config.task[self.prog].step[j];
            match &st.target {
                StepTarget::Control(c) => {
                    let c = c.clone();
                    if self.control(st.op, &c, n, &lat)? {
                        return Ok(None);
                    }
                }
                StepTarget::Region { index, .. } => {
                    let index = *index;
                    if !self.maps.contains_key(&index)
                        && !self.shared.contains_key(&self.sc.config.region[index as usize].name)
                    {
                        self.map_region(index)?;
                    }
                    let (base, pages) = self.mapping(index);
                    let bound = BoundStep::new(st, pages as u32);
                    n += run_step(&bound, &Target::Map { base, pages }, &mut self.cur, &mut buf, &mut lat)?;
                }
                StepTarget::File(fs) => {
                    if fs.shared_fd {
                        return Err("shared_fd steps are not reproduced by the host's lifecycle runner".into());
                    }
                    let op = st.op;
                    let path = self.file_path(fs)?;
                    let pread = matches!(op, AccessOp::Pread | AccessOp::Pwrite);
                    let bound = BoundStep::new(st, self.sc.config.step_pages(st));
                    n += run_step(
                        &bound,
                        &Target::Read { path, fd: None, pread, op },
                        &mut self.cur,
                        &mut buf,
                        &mut lat,
                    )?;
                }
            }
        }
        let buckets = super::latency_buckets(&lat);
        std::hint::black_box(self.cur.sink);
        Ok(Some((n, buckets)))
    }

    /// Runs a lifecycle step; `Ok(true)` when the process paused and was released (it is to
    /// exit without another record).
    fn control(
        &mut self,
        op: AccessOp,
        c: &Control,
        n: u64,
        lat: &pagesim::histogram::Histogram,
    ) -> Result<bool, String> {
        match op {
            AccessOp::Spawn => {
                // make's job server: a job starts whenever fewer than `jobs` children run.
                let jobs = c.jobs.unwrap_or(c.count);
                let mut spawned = 0;
                while spawned < c.count || self.children > 0 {
                    if spawned < c.count && self.children < jobs {
                        spawned += 1;
                        self.start_child(c.task_index as usize, true)?;
                    } else {
                        self.wait_one()?;
                    }
                }
            }
            AccessOp::Fork => {
                for _ in 0..c.count {
                    self.start_child(c.task_index as usize, false)?;
                }
            }
            AccessOp::Wait => {
                while self.children > 0 {
                    self.wait_one()?;
                }
            }
            AccessOp::Exec => {
                // This run ends here; the new image is the next run of `task`.
                let end = self.now_ns();
                let buckets = super::latency_buckets(lat);
                send_result(self.ctx.results, self.record, self.prog, self.run, Ok((self.start_ns, end, n, buckets)));
                let prog = c.task_index as usize;
                let spec = ExecSpec {
                    ctx: self.ctx.clone(),
                    prog,
                    run: self.counters.next_run(prog),
                    record: self.counters.next_record(),
                    rng: self.cur.rng.state(),
                    children: self.children,
                };
                return Err(exec_self(&spec));
            }
            AccessOp::Mmap => self.map_region(c.region_index)?,
            AccessOp::Munmap => {
                self.maps.remove(&c.region_index);
            }
            AccessOp::Brk => {
                let size = c.size.expect("a brk step has a size");
                let max = self.sc.config.region[c.region_index as usize].size;
                let bytes = if c.size_sigma > 0.0 {
                    // The engine's draw: a lognormal of median `size` from the task's stream.
                    let z = self.cur.rng.normal();
                    ((size as f64 * (c.size_sigma * z).exp()) as u64).clamp(1, max)
                } else {
                    size
                };
                let len = bytes.div_ceil(PAGE as u64) as usize * PAGE;
                match self.maps.get_mut(&c.region_index) {
                    Some(m) => m.resize(len).map_err(|e| e.0)?,
                    None => {
                        self.map_region(c.region_index)?;
                        self.maps.get_mut(&c.region_index).expect("just mapped").resize(len).map_err(|e| e.0)?;
                    }
                }
            }
            AccessOp::Pause => {
                let end = self.now_ns();
                let buckets = super::latency_buckets(lat);
                send_result(self.ctx.results, self.record, self.prog, self.run, Ok((self.start_ns, end, n, buckets)));
                // No longer active: once every live process is paused, the runner releases all.
                super::close(&mut self.ctx.active);
                super::wait_eof(self.ctx.release);
                return Ok(true);
            }
            _ => unreachable!("not a lifecycle call: {op:?}"),
        }
        Ok(false)
    }

    /// Starts a child running program `prog`: a job (fork, then exec of this binary) or a
    /// fork that runs `prog` in the inherited address space. The child joins its program's
    /// memcg if the program names one, and its CPUs if it names them.
    fn start_child(&mut self, prog: usize, exec: bool) -> Result<(), String> {
        let rng = self.cur.rng.split();
        let run = self.counters.next_run(prog);
        let record = self.counters.next_record();
        // SAFETY: the process is single-threaded (every process of the run is), so the
        // child may allocate; it leaves through exec or _exit.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(format!("fork: {}", crate::last_os_error()));
        }
        if pid > 0 {
            self.children += 1;
            return Ok(());
        }
        let task = &self.sc.file.task[prog];
        let setup = || -> Result<(), String> {
            if let Some(m) = &task.memcg {
                if let Some(dir) = self.ctx.memcgs.get(m) {
                    // SAFETY: getpid has no preconditions.
                    join_cgroup(dir, unsafe { libc::getpid() }).map_err(|e| e.0)?;
                }
            }
            if let Some(cpus) = &task.cpus {
                crate::cpu::set_affinity(0, cpus).map_err(|e| format!("task[{prog}].cpus: {e}"))?;
            }
            Ok(())
        };
        if let Err(e) = setup() {
            send_result(self.ctx.results, record, prog, run, Err(e));
            // SAFETY: ends the forked child at once.
            unsafe { libc::_exit(3) };
        }
        if exec {
            let spec = ExecSpec { ctx: self.ctx.clone(), prog, run, record, rng: rng.state(), children: 0 };
            let e = exec_self(&spec);
            send_result(self.ctx.results, record, prog, run, Err(e));
            // SAFETY: ends the forked child whose exec failed.
            unsafe { libc::_exit(3) };
        }
        self.prog = prog;
        self.run = run;
        self.record = record;
        self.cur = StepCursor { rng, last: 0, sink: 0 };
        self.children = 0;
        self.start_ns = self.now_ns();
        let me = Proc {
            sc: self.sc,
            ctx: self.ctx.clone(),
            counters: Counters { base: self.counters.base, len: self.counters.len },
            shared: self.shared,
            prog,
            run,
            record,
            cur: std::mem::replace(&mut self.cur, StepCursor { rng: Rng::new(0), last: 0, sink: 0 }),
            maps: std::mem::take(&mut self.maps),
            children: 0,
            release: self.release,
            start_ns: self.start_ns,
        };
        me.run_and_exit()
    }

    /// Waits for one child to exit; a child killed by a signal (the OOM killer) is reported
    /// for it, as it could not report itself.
    fn wait_one(&mut self) -> Result<(), String> {
        let mut st = 0;
        // SAFETY: waits for any child of this process; st is a live local.
        let pid = unsafe { libc::waitpid(-1, &mut st, 0) };
        if pid < 0 {
            let e = crate::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                return Ok(());
            }
            if e.raw_os_error() == Some(libc::ECHILD) {
                self.children = 0;
                return Ok(());
            }
            return Err(format!("waitpid: {e}"));
        }
        self.children = self.children.saturating_sub(1);
        if libc::WIFSIGNALED(st) {
            let why = format!("process {pid} was killed by signal {}", libc::WTERMSIG(st));
            send_result(self.ctx.results, LOST, self.prog, 0, Err(why));
        }
        Ok(())
    }
}

/// Replaces this process's image with pagesim-load running `spec` (fs/exec.c: the address
/// space is torn down, the binary's text mapped again, shared with every other process
/// running it). Returns only on failure, with the error.
pub fn exec_self(spec: &ExecSpec) -> String {
    for fd in [spec.ctx.results, spec.ctx.active, spec.ctx.release, spec.ctx.counters] {
        keep_across_exec(fd);
    }
    let json = serde_json::to_string(spec).expect("an exec spec serializes");
    let exe = std::ffi::CString::new("/proc/self/exe").expect("no NUL");
    let argv0 = std::ffi::CString::new("pagesim-load").expect("no NUL");
    let arg = std::ffi::CString::new(EXEC_ARG).expect("no NUL");
    let env = std::ffi::CString::new(format!("{EXEC_ENV}={json}")).map_err(|_| ()).expect("JSON has no NUL");
    let argv = [argv0.as_ptr(), arg.as_ptr(), std::ptr::null()];
    let envp = [env.as_ptr(), std::ptr::null()];
    // SAFETY: NUL-terminated argument and environment arrays of live CStrings.
    unsafe { libc::execve(exe.as_ptr(), argv.as_ptr(), envp.as_ptr()) };
    format!("execve /proc/self/exe: {}", crate::last_os_error())
}

/// The entry of a new image (`pagesim-load --exec-child`): loads the scenario again, then
/// runs the program the spec names; never returns.
pub fn exec_child(spec_json: &str, load: impl Fn(&Path, &[String]) -> Result<Scenario, String>) -> ! {
    let fail = |m: String| -> ! {
        eprintln!("pagesim-load {EXEC_ARG}: {m}");
        // SAFETY: ends the process.
        unsafe { libc::_exit(3) }
    };
    let spec: ExecSpec = serde_json::from_str(spec_json).unwrap_or_else(|e| fail(format!("{EXEC_ENV}: {e}")));
    let sc = load(&spec.ctx.scenario, &spec.ctx.sets).unwrap_or_else(|e| {
        send_result(spec.ctx.results, spec.record, spec.prog, spec.run, Err(e.clone()));
        fail(e)
    });
    let counters = Counters::map(spec.ctx.counters, sc.config.task.len() + 1).unwrap_or_else(|e| fail(e.0));
    let now = mono_ns();
    let release = Instant::now() - Duration::from_nanos(now.saturating_sub(spec.ctx.release_mono_ns));
    let shared = BTreeMap::new();
    let start_ns = release.elapsed().as_nanos() as u64;
    let p = Proc {
        sc: &sc,
        ctx: spec.ctx.clone(),
        counters,
        shared: &shared,
        prog: spec.prog,
        run: spec.run,
        record: spec.record,
        cur: StepCursor { rng: Rng::from_state(spec.rng), last: 0, sink: 0 },
        maps: BTreeMap::new(),
        children: spec.children,
        release,
        start_ns,
    };
    p.run_and_exit()
}

/// Whether the scenario has lifecycle steps (and so runs as process trees).
pub fn uses_lifecycle(sc: &Scenario) -> bool {
    sc.config.task.iter().flat_map(|t| &t.step).any(|s| s.op.is_lifecycle())
}

/// The runner of a lifecycle scenario: forks the top-level processes (each leads its own
/// process group, which holds what it starts), releases them together, releases the paused
/// ones once no other is left, and collects every run's record.
pub(super) fn execute(
    sc: &Scenario,
    opts: &super::LoadOptions,
    seed: u64,
    progs: &[super::TaskProgram],
    shared: &BTreeMap<String, Mapping>,
) -> Result<super::LoadReport, Error> {
    let execs = sc.config.task.iter().flat_map(|t| &t.step).any(|s| matches!(s.op, AccessOp::Exec | AccessOp::Spawn));
    let scenario = match &opts.scenario_path {
        Some(p) => p.clone(),
        None if execs => {
            return Err(Error(format!(
                "{}: exec and spawn steps load the scenario again in the new image: give its path (LoadOptions::scenario_path)",
                sc.origin
            )))
        }
        None => PathBuf::new(),
    };
    // Top-level programs have taken runs 0..count; record indices 0..n are theirs.
    let runs: Vec<u32> = sc.config.task.iter().map(|t| t.count).collect();
    let (counters, counters_fd) = Counters::create(progs.len() as u32, &runs)?;
    let mut barrier = super::Pipe::new()?;
    let mut results = super::Pipe::new()?;
    let mut active = super::Pipe::new()?;
    let mut release = super::Pipe::new()?;
    let ctx = Ctx {
        scenario,
        sets: opts.sets.clone(),
        memcgs: opts.memcgs.clone(),
        file_dir: opts.file_dir.clone(),
        results: results.w,
        active: active.w,
        release: release.r,
        counters: counters_fd,
        release_mono_ns: 0,
    };
    let mut pids: Vec<i32> = Vec::with_capacity(progs.len());
    for (i, p) in progs.iter().enumerate() {
        // SAFETY: the runner is single-threaded (checked by the caller), so the child may use
        // the allocator; it leaves only through exec or _exit.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            let e = crate::last_os_error();
            super::kill_and_reap(&pids);
            return Err(Error(format!("fork: {e}")));
        }
        if pid == 0 {
            barrier.close_write();
            results.close_read();
            active.close_read();
            release.close_write();
            // SAFETY: setpgid and prctl change only this process's own attributes.
            unsafe {
                libc::setpgid(0, 0);
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            }
            let mut ctx = ctx.clone();
            let r = top_level_setup(sc, p, opts, barrier.r);
            let (release_at, start_ns) = match r {
                Ok(v) => v,
                Err(e) => {
                    super::send_result(ctx.results, i as u32, p.task, p.instance, Err(e));
                    // SAFETY: ends the child.
                    unsafe { libc::_exit(3) };
                }
            };
            ctx.release_mono_ns = mono_ns() - release_at.elapsed().as_nanos() as u64;
            let proc_ = Proc {
                sc,
                ctx,
                counters: Counters { base: counters.base, len: counters.len },
                shared,
                prog: p.task,
                run: p.instance,
                record: i as u32,
                cur: StepCursor { rng: p.rng.clone(), last: 0, sink: 0 },
                maps: BTreeMap::new(),
                children: 0,
                release: release_at,
                start_ns,
            };
            proc_.run_and_exit();
        }
        pids.push(pid);
    }
    barrier.close_write();
    let released = Instant::now();
    results.close_write();
    active.close_write();
    release.close_read();
    // SAFETY: closes the runner's copy of the counters memfd (the mapping stays).
    unsafe { libc::close(counters_fd) };
    let deadline = sc.file.time_limit.map(|t| released + Duration::from_nanos(t));
    let tree = super::Tree { active: active.r, release: &mut release.w };
    let (statuses, data, limited) = super::wait_all(&pids, results.r, deadline, Some(tree));
    let wall_ns = released.elapsed().as_nanos() as u64;
    let tasks = super::task_runs(sc, progs, &pids, &statuses, &limited, &data);
    Ok(super::LoadReport { scenario: sc.name.clone(), seed, wall_ns, tasks })
}

/// A top-level process before its program: its CPUs and memcg, the wait for the release
/// (EOF on the barrier), and its start delay. Returns the release and its start, ns after.
fn top_level_setup(
    sc: &Scenario,
    p: &super::TaskProgram,
    opts: &super::LoadOptions,
    barrier: libc::c_int,
) -> Result<(Instant, u64), String> {
    let task = &sc.config.task[p.task];
    if let Some(cpus) = &task.cpus {
        crate::cpu::set_affinity(0, cpus).map_err(|e| format!("task[{}].cpus: {e}", p.task))?;
    }
    if let Some(dir) = task.memcg.as_ref().and_then(|m| opts.memcgs.get(m)) {
        // SAFETY: getpid has no preconditions.
        join_cgroup(dir, unsafe { libc::getpid() }).map_err(|e| e.0)?;
    }
    let release = super::wait_release(barrier, task.start + p.instance as u64 * task.stagger);
    Ok((release, release.elapsed().as_nanos() as u64))
}
