//! [`run_on_host`]: runs a scenario on the host kernel N times, from a cold state each time,
//! and measures each run.
//!
//! ```text
//!   checks     root; RAM model vs host (or every task in a limited memcg); no foreign swap;
//!              a usable memory cgroup; 4 KiB pages
//!   setup      work dir ─► tunables the scenario sets (vm.*, vma_ra_enabled, its disk's
//!              read_ahead_kb) ─► zswap
//!              parameters as the scenario's [zswap] ─► one swap file per [[swap]], or a zram
//!              device for a `model = "zram"` one (scenario size, priorities shifted to 0..
//!              keeping order) ─► the scenario's [file.NAME]s (written, fsync'ed)
//!   each run   swapoff+swapon every swap file, zram reset and set up again (empty), sync;
//!              the scenario's files dropped from the page cache (FADV_DONTNEED)
//!              ─► memcgs
//!              ─► vmstat + DAMON before ─► pagesim-load ─► vmstat + DAMON after,
//!              memory.stat ─► remove the memcgs (wait until empty)
//!   teardown   swap files off and deleted, zram devices reset (hot-removed if added),
//!              zswap parameters and tunables restored, work dir removed
//! ```
//!
//! Every setup step is a guard registered with [`crate::cleanup`], so an error, a panic or
//! SIGINT/SIGTERM undoes what was done, newest first (the load generator is killed by PID
//! before its memcg is waited for). The pending undos are also in [`crate::journal`]'s file,
//! which [`crate::journal::recover`] acts on after a SIGKILL.

use crate::cleanup::{Cleanup, Undo};
use crate::load::{replay_json, LoadReport, MAX_PROCESSES};
use crate::measure::{meminfo, DamonStats, Vmstat};
use crate::memcg::{CgroupMount, CgroupVersion, Memcg, MemoryStat, EMPTY_TIMEOUT};
use crate::swapfile::{proc_swaps, SwapFile};
use crate::tunable::{drop_caches, Tunable};
use crate::tunables::HostTunables;
use crate::zram::{Zram, ZramIndex};
use crate::Error;
use pagesim::device::DeviceConfig;
use pagesim::scenario::RegionKind;
use pagesim::Scenario;
use serde::Serialize;
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// How far (as a fraction of MemTotal) the scenario's usable memory may be from the host's
/// for the two to count as the same RAM model.
pub const RAM_TOLERANCE: f64 = 0.05;

#[derive(Clone, Debug)]
pub struct HostOptions {
    /// Runs, each from a cold state. At least 1.
    pub repeats: u32,
    /// RNG seed; default: the scenario's.
    pub seed: Option<u64>,
    /// Directory in which the run's own directory (swap files, replay scenario, load
    /// output) is created; default: the system temp dir. Its filesystem must support swap
    /// files (ext4 and xfs do; tmpfs does not).
    pub work_dir: Option<PathBuf>,
    /// The pagesim-load binary; default: beside the current executable (or its parent
    /// directory, for test binaries in target/*/deps), then $PATH.
    pub loader: Option<PathBuf>,
    /// Directory under which memcgs are created; default: the root of the memory hierarchy.
    pub cgroup_parent: Option<PathBuf>,
    /// Run even though other swap areas are active. The kernel may then swap to them too, so
    /// per-area results are not comparable.
    pub allow_foreign_swap: bool,
}

impl Default for HostOptions {
    fn default() -> Self {
        HostOptions {
            repeats: 1,
            seed: None,
            work_dir: None,
            loader: None,
            cgroup_parent: None,
            allow_foreign_swap: false,
        }
    }
}

/// Everything a host run produced.
#[derive(Clone, Debug, Serialize)]
pub struct HostRuns {
    pub scenario: String,
    pub seed: u64,
    /// The host's settings before setup.
    pub host: HostTunables,
    pub setup: HostSetup,
    pub runs: Vec<HostRun>,
}

/// What was set up for the scenario.
#[derive(Clone, Debug, Serialize)]
pub struct HostSetup {
    pub cgroup: Option<CgroupMount>,
    pub swap: Vec<SwapSetup>,
    pub tunables: Vec<TunableChange>,
    /// Scenario memcg name to memory limit, bytes (`None`: unlimited).
    pub memcg_limits: BTreeMap<String, Option<u64>>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SwapSetup {
    pub path: String,
    pub bytes: u64,
    /// The scenario's priority (default -1, -2, ... in swapon order).
    pub scenario_priority: i32,
    /// The priority given to swapon (scenario priorities shifted so the lowest is 0).
    pub host_priority: i32,
    /// Size as /proc/swaps reports it (header page excluded), kB.
    pub size_kb: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct TunableChange {
    pub path: String,
    pub old: String,
    pub new: String,
}

/// One run of the load.
#[derive(Clone, Debug, Serialize)]
pub struct HostRun {
    /// pagesim-load's lifetime (exec, setup, fork, all tasks), ns.
    pub wall_ns: u64,
    /// The load generator's report: per-task wall times and exit status.
    pub load: LoadReport,
    /// /proc/vmstat after minus before (machine-wide; saturating).
    pub vmstat: BTreeMap<String, u64>,
    /// Per scenario memcg, its counters at the end of the run.
    pub memcg: BTreeMap<String, MemcgRun>,
    /// Bytes DAMON schemes paged out (or otherwise applied to) during the run, all schemes.
    pub damon_sz_applied: u64,
    /// Total `sz_applied` of all schemes before and after the run (cumulative since each
    /// scheme started), so a reader sees the background daemon's activity around the run.
    pub damon_sz_applied_before: u64,
    pub damon_sz_applied_after: u64,
    /// The same per scheme (`kdamond/context/scheme`).
    pub damon: BTreeMap<String, u64>,
    pub damon_refresh_errors: Vec<String>,
    /// Nanoseconds from the run's start to the kernel's first periodic memcg stats flush
    /// after it (`flushtrace`), where the tracepoint exists and one came during the run.
    pub memcg_flush_phase_ns: Option<u64>,
    /// The flush was traced (tracefs at /sys/kernel/tracing with `memcg:memcg_flush_stats`):
    /// without, `memcg_flush_phase_ns` is `None` whether or not a flush came.
    pub memcg_flush_traced: bool,
    /// The pages of replayed traces' files still cached when the run started, after the
    /// harness dropped them (`load::drop_trace_files`): per task index, per path, ranges
    /// `[first, end)` of pages. Empty for a scenario without traces.
    pub trace_cached: crate::load::TraceCached,
}

#[derive(Clone, Debug, Serialize)]
pub struct MemcgRun {
    pub path: String,
    pub stat: MemoryStat,
    pub peak_bytes: Option<u64>,
    pub failcnt: Option<u64>,
}

/// [`run_on_host_with`] with default options and `repeats` runs.
pub fn run_on_host(scenario: &Scenario, repeats: u32) -> Result<HostRuns, Error> {
    run_on_host_with(scenario, &HostOptions { repeats, ..Default::default() })
}

/// Sets up what the scenario asks for, runs it `opts.repeats` times with pagesim-load from a
/// cold state, measures every run and undoes the setup. Refuses (with an error saying why)
/// when not root, when the scenario's RAM model does not match the host and some task is not
/// in a memcg with a limit, when other swap areas are active, and when the host cannot give
/// the scenario what it needs.
pub fn run_on_host_with(sc: &Scenario, opts: &HostOptions) -> Result<HostRuns, Error> {
    let origin = &sc.origin;
    if !crate::is_root() {
        // SAFETY: geteuid has no preconditions.
        let uid = unsafe { libc::geteuid() };
        return Err(Error(format!(
            "{origin}: running a scenario on the host needs root (swapon, cgroups, drop_caches); running as uid {uid}"
        )));
    }
    if opts.repeats == 0 {
        return Err(Error("repeats must be at least 1".into()));
    }
    if let Some(why) = crate::load::unsupported(sc) {
        return Err(Error(format!("{origin}: {why}")));
    }
    if crate::page_size() != 4096 {
        return Err(Error(format!("the host's page size is {} bytes; pagesim models 4096", crate::page_size())));
    }
    let nproc: u64 = sc.file.task.iter().map(|t| t.count as u64).sum();
    if nproc > MAX_PROCESSES as u64 {
        return Err(Error(format!("{origin}: {nproc} task processes; the host runner supports {MAX_PROCESSES}")));
    }
    check_memory_model(sc, &meminfo()?)?;
    let foreign = proc_swaps()?;
    if !foreign.is_empty() && !opts.allow_foreign_swap {
        let names: Vec<&str> = foreign.iter().map(|e| e.filename.as_str()).collect();
        return Err(Error(format!(
            "other swap areas are active ({}); the kernel would swap to them too. Switch them off or set \
             allow_foreign_swap (pagesim-host never touches swap areas it did not create)",
            names.join(", ")
        )));
    }
    let mount = if sc.file.memcg.is_empty() { None } else { Some(CgroupMount::detect()?) };
    let loader = find_loader(opts.loader.as_deref())?;
    let seed = opts.seed.unwrap_or(sc.config.seed);

    // Before the first change: a host run that could not be cleaned up after a SIGKILL
    // does not start.
    crate::journal::ready()?;
    let work = WorkDir::create(opts.work_dir.as_deref())?;
    let host = HostTunables::read(&work.path);
    let mut tunables = set_tunables(sc)?;
    tunables.extend(set_read_ahead(sc, &work.path)?);
    let zswap = crate::tunable::Zswap::apply(Path::new(crate::tunable::ZSWAP_PARAMETERS), &sc.file.zswap)?;
    let prios: Vec<i32> = sc.config.swap.iter().map(|s| s.priority).collect();
    let lowest = prios.iter().copied().min().unwrap_or(0);
    let mut swaps = Vec::new();
    let mut swap_setup = Vec::new();
    let mut zram_taken = Vec::new();
    for (i, s) in sc.file.swap.iter().enumerate() {
        let host_priority = prios[i] - lowest;
        let sw = match sc.file.device.get(&s.device) {
            Some(DeviceConfig::Zram(z)) => {
                let slot = ZramIndex::acquire(&zram_taken)?;
                zram_taken.push(slot.index);
                let mut sw =
                    HostSwap::Zram { slot, dev: None, params: z.clone(), bytes: s.size, priority: host_priority };
                sw.empty()?;
                sw
            }
            _ => HostSwap::File(SwapFile::create(&work.path.join(format!("swap{i}")), s.size, Some(host_priority))?),
        };
        swap_setup.push(SwapSetup {
            path: sw.path().display().to_string(),
            bytes: s.size,
            scenario_priority: prios[i],
            host_priority,
            size_kb: sw.size_kb()?,
        });
        swaps.push(sw);
    }
    // The scenario's files, once for all runs: written and fsync'ed now, dropped from the
    // page cache before each run (`needs_cold_page_cache`).
    let files = crate::load::create_files(sc, &work.path)?;
    let replay = work.path.join("scenario.json");
    let text = serde_json::to_string_pretty(&replay_json(sc)).expect("scenario JSON serializes");
    std::fs::write(&replay, text).map_err(|e| Error(format!("{}: {e}", replay.display())))?;

    // When the kernel's periodic memcg stats flush comes in each run (it decides what a
    // short run's memcg reclaim reads).
    let flush_trace = if mount.is_some() { crate::flushtrace::FlushTrace::start() } else { None };
    let mut runs = Vec::new();
    for r in 0..opts.repeats {
        for s in &mut swaps {
            s.empty()?;
        }
        // Write out what other processes dirtied before the measured run starts: the
        // flusher would otherwise write it during the run, into the machine-wide pgpgout.
        // SAFETY: sync(2) has no arguments and no failure mode.
        unsafe { libc::sync() };
        // The scenario's files cold: their pages dropped, theirs only; drop_caches (every
        // file of the machine) only if some stayed resident.
        if needs_cold_page_cache(sc) && crate::load::drop_file_cache(&work.path, &files)? > 0 {
            drop_caches()?;
        }
        // A replayed trace's files (the program's own: its input, its libraries) cold too,
        // as the model starts them; what other processes keep mapped stays (measured).
        let trace_cached = crate::load::drop_trace_files(sc)?;
        let mut cgs: Vec<Memcg> = Vec::new();
        if let Some(m) = &mount {
            let root = opts.cgroup_parent.as_deref().unwrap_or(&m.root);
            let swappiness = crate::sysfs::read_u64(Path::new("/proc/sys/vm/swappiness"));
            // Parents before their children, each in its parent's directory (the scenario's
            // tree); removed in the reverse order below.
            for i in memcg_creation_order(sc) {
                let c = &sc.config.memcg[i];
                let parent = match c.parent_index {
                    0 => root.to_path_buf(),
                    p => {
                        let pname = &sc.config.memcg[p as usize - 1].name;
                        cgs.iter().find(|g| g.name() == pname).expect("parents first").path().to_path_buf()
                    }
                };
                let cg = Memcg::create_in(m, &parent, &c.name, EMPTY_TIMEOUT)?;
                cg.set_limits(c.max, None)?;
                // v1 groups copy their parent's swappiness when created; make it vm.swappiness.
                if let (CgroupVersion::V1, Some(s)) = (m.version, swappiness) {
                    cg.set_swappiness(s as u32)?;
                }
                if let Some(soft) = c.soft_limit {
                    cg.set_soft_limit(soft)?;
                }
                cg.set_v2_protection(c.low, c.min, c.high)?;
                cgs.push(cg);
            }
        }
        if let Some(ft) = &flush_trace {
            ft.mark()?;
        }
        let vm0 = Vmstat::read()?;
        let damon0 = DamonStats::read();
        let t0 = Instant::now();
        let file_dir = (!files.is_empty()).then_some(work.path.as_path());
        let load = run_loader(&loader, &replay, seed, &cgs, &work.path, file_dir, r)?;
        let wall_ns = t0.elapsed().as_nanos() as u64;
        let vm1 = Vmstat::read()?;
        let damon1 = DamonStats::read();
        let mut memcg = BTreeMap::new();
        for cg in &cgs {
            memcg.insert(
                cg.name().to_string(),
                MemcgRun {
                    path: cg.path().display().to_string(),
                    stat: cg.stat()?,
                    peak_bytes: cg.peak_bytes(),
                    failcnt: cg.failcnt(),
                },
            );
        }
        for cg in cgs.into_iter().rev() {
            cg.remove()?;
        }
        let mut damon_refresh_errors = damon0.refresh_errors.clone();
        damon_refresh_errors.extend(damon1.refresh_errors.iter().cloned());
        runs.push(HostRun {
            wall_ns,
            load,
            vmstat: vm0.delta(&vm1),
            memcg,
            damon_sz_applied: damon1.sz_applied().saturating_sub(damon0.sz_applied()),
            damon_sz_applied_before: damon0.sz_applied(),
            damon_sz_applied_after: damon1.sz_applied(),
            damon: damon0.sz_applied_delta(&damon1),
            damon_refresh_errors,
            memcg_flush_phase_ns: flush_trace.as_ref().and_then(|ft| ft.first_periodic_flush()),
            memcg_flush_traced: flush_trace.is_some(),
            trace_cached,
        });
    }

    // Teardown in reverse order, collecting errors: results are worthless if the host is
    // left changed without anyone noticing.
    let changes = tunables
        .iter()
        .chain(zswap.tunables())
        .map(|t| TunableChange { path: t.path().display().to_string(), old: t.old().into(), new: t.value().into() })
        .collect();
    let mut errors = Vec::new();
    for s in swaps.into_iter().rev() {
        errors.extend(s.remove().into_iter().map(|e| e.0));
    }
    errors.extend(zswap.disable().err().map(|e| e.0));
    for t in tunables.into_iter().rev() {
        errors.extend(t.restore().err().map(|e| e.0));
    }
    errors.extend(work.remove().err().map(|e| e.0));
    if !errors.is_empty() {
        return Err(Error(format!("the runs finished but cleanup failed: {}", errors.join("; "))));
    }
    Ok(HostRuns {
        scenario: sc.name.clone(),
        seed,
        host,
        setup: HostSetup {
            cgroup: mount,
            swap: swap_setup,
            tunables: changes,
            memcg_limits: sc.file.memcg.iter().map(|(n, m)| (n.clone(), m.max)).collect(),
        },
        runs,
    })
}

/// A swap area of the host run: a swap file on the work directory's disk, or a zram device
/// (the scenario's `model = "zram"` device), set up afresh for each run.
enum HostSwap {
    File(SwapFile),
    Zram { slot: ZramIndex, dev: Option<Zram>, params: pagesim::device::ZramParams, bytes: u64, priority: i32 },
}

impl HostSwap {
    /// Empties the area before a run: a swap file is switched off and on again; a zram
    /// device is switched off, reset (its pool freed) and set up again (compressor,
    /// disksize = the swap area's size, mem_limit, swap header, swapon).
    fn empty(&mut self) -> Result<(), Error> {
        match self {
            HostSwap::File(f) => f.empty(),
            HostSwap::Zram { slot, dev, params, bytes, priority } => {
                if let Some(d) = dev.take() {
                    d.remove()?;
                }
                let d = Zram::create(slot.index, *bytes, Some(&params.comp_algorithm), Some(*priority))?;
                if params.mem_limit > 0 {
                    d.set_mem_limit(params.mem_limit)?;
                }
                *dev = Some(d);
                Ok(())
            }
        }
    }

    fn path(&self) -> PathBuf {
        match self {
            HostSwap::File(f) => f.path().to_path_buf(),
            HostSwap::Zram { slot, .. } => PathBuf::from(format!("/dev/zram{}", slot.index)),
        }
    }

    /// Size as /proc/swaps reports it, kB.
    fn size_kb(&self) -> Result<u64, Error> {
        match self {
            HostSwap::File(f) => Ok(f.entry()?.map_or(0, |e| e.size_kb)),
            HostSwap::Zram { .. } => {
                let p = self.path().display().to_string();
                Ok(proc_swaps()?.into_iter().find(|e| e.filename == p).map_or(0, |e| e.size_kb))
            }
        }
    }

    /// swapoff and delete the file, or swapoff, reset and release the zram device.
    fn remove(self) -> Vec<Error> {
        match self {
            HostSwap::File(f) => f.remove().err().into_iter().collect(),
            HostSwap::Zram { slot, dev, .. } => {
                let mut errors: Vec<Error> = dev.and_then(|d| d.remove().err()).into_iter().collect();
                errors.extend(slot.release().err());
                errors
            }
        }
    }
}

/// The scenario's memcgs (indices into `Config::memcg`), each after its parent.
fn memcg_creation_order(sc: &Scenario) -> Vec<usize> {
    let ms = &sc.config.memcg;
    let mut out: Vec<usize> = Vec::with_capacity(ms.len());
    while out.len() < ms.len() {
        let before = out.len();
        for (i, m) in ms.iter().enumerate() {
            let ready = m.parent_index == 0 || out.contains(&(m.parent_index as usize - 1));
            if ready && !out.contains(&i) {
                out.push(i);
            }
        }
        assert!(out.len() > before, "the scenario's memcg tree has no cycle (refused when it is read)");
    }
    out
}

/// The memory limit that binds memcg `m`'s tasks: its own or its nearest limited
/// ancestor's (on v1 the host is 5.11+: always hierarchical).
fn binding_limit(sc: &Scenario, m: &str) -> Option<u64> {
    let ms = &sc.config.memcg;
    let mut cur = ms.iter().position(|c| c.name == m)?;
    loop {
        if let Some(max) = ms[cur].max {
            return Some(max);
        }
        match ms[cur].parent_index {
            0 => return None,
            p => cur = p as usize - 1,
        }
    }
}

/// The host cannot change its RAM: a scenario either models about the host's memory, or
/// confines every task to a memcg with a limit that the host can honour.
pub fn check_memory_model(sc: &Scenario, meminfo: &BTreeMap<String, u64>) -> Result<(), Error> {
    let f = &sc.file;
    let total = meminfo.get("MemTotal").copied().ok_or_else(|| Error("/proc/meminfo: no MemTotal".into()))? * 1024;
    let available = meminfo.get("MemAvailable").copied().unwrap_or(total / 1024) * 1024;
    let usable = usable_ram(sc);
    let same_ram = same_ram(sc, meminfo);
    if !same_ram {
        // A program other processes start without naming a memcg runs in its starter's.
        let unlimited: Vec<&str> = sc
            .config
            .task
            .iter()
            .filter(|t| !(t.spawned && t.memcg.is_none()))
            .filter(|t| t.memcg.as_ref().and_then(|m| binding_limit(sc, m)).is_none())
            .map(|t| t.name.as_str())
            .collect();
        if !unlimited.is_empty() {
            return Err(Error(format!(
                "{}: machine.ram = {} MiB models about {} MiB of usable memory, but this host has {} MiB \
                 (MemTotal). The host's RAM cannot be changed: put every task in a [memcg.NAME] with a max \
                 (tasks without a limit: {})",
                sc.origin,
                f.machine.ram >> 20,
                usable >> 20,
                total >> 20,
                unlimited.join(", ")
            )));
        }
    }
    // Limits nested in a limited memcg are within its.
    let limits: u64 = sc
        .config
        .memcg
        .iter()
        .filter(|m| {
            m.parent_index == 0 || binding_limit(sc, &sc.config.memcg[m.parent_index as usize - 1].name).is_none()
        })
        .filter_map(|m| m.max)
        .sum();
    if !same_ram && limits > available {
        return Err(Error(format!(
            "{}: the memcg limits add up to {} MiB but only {} MiB are available (MemAvailable): the limits \
             would not bind and the host would reclaim globally",
            sc.origin,
            limits >> 20,
            available >> 20
        )));
    }
    Ok(())
}

/// Whether a run must start with the scenario's files out of the page cache. Only file
/// data cares: anonymous and shmem regions start empty anyway (swap is emptied before each
/// run). The files are dropped one by one (`load::drop_file_cache`), not with drop_caches:
/// a machine-wide drop makes every other process on the machine re-read its files from disk
/// during the measured run, which lands in the machine-wide pgpgin (170-560 MB more in a
/// 0.15-0.35 s file run while other engineers built, against 0-5 MB now).
pub fn needs_cold_page_cache(sc: &Scenario) -> bool {
    !sc.file.file.is_empty()
        || sc.file.region.values().any(|r| match r.kind {
            RegionKind::Anon | RegionKind::Shmem => false,
            RegionKind::File => true,
        })
}

/// The memory the scenario's page allocator manages: RAM less the kernel's reserve.
fn usable_ram(sc: &Scenario) -> u64 {
    let m = &sc.config.machine;
    m.ram - m.kernel_reserved
}

/// Whether the scenario models about the host's memory (its usable RAM within
/// [`RAM_TOLERANCE`] of MemTotal); then RAM-wide settings such as the watermarks carry over.
pub fn same_ram(sc: &Scenario, meminfo: &BTreeMap<String, u64>) -> bool {
    let Some(total) = meminfo.get("MemTotal").map(|kb| kb * 1024) else { return false };
    (usable_ram(sc) as f64 - total as f64).abs() <= RAM_TOLERANCE * total as f64
}

/// Sets the tunables the scenario gives explicitly; the rest stay as the host has them.
fn set_tunables(sc: &Scenario) -> Result<Vec<Tunable>, Error> {
    let vm = &sc.file.vm;
    let mut out = Vec::new();
    let sysctls = [
        ("vm.swappiness", vm.swappiness.map(u64::from)),
        ("vm.page-cluster", vm.page_cluster.map(u64::from)),
        ("vm.min_free_kbytes", vm.min_free_kbytes),
        ("vm.watermark_scale_factor", vm.watermark_scale_factor),
        ("vm.dirty_expire_centisecs", vm.dirty_expire_centisecs.map(u64::from)),
        ("vm.dirty_writeback_centisecs", vm.dirty_writeback_centisecs.map(u64::from)),
    ];
    for (key, v) in sysctls {
        if let Some(v) = v {
            out.push(Tunable::sysctl(key, &v.to_string())?);
        }
    }
    // The dirty limits, each a ratio or bytes (the scenario gives one of a pair).
    for (ratio_key, ratio, bytes_key, bytes) in [
        ("vm.dirty_ratio", vm.dirty_ratio, "vm.dirty_bytes", vm.dirty_bytes),
        (
            "vm.dirty_background_ratio",
            vm.dirty_background_ratio,
            "vm.dirty_background_bytes",
            vm.dirty_background_bytes,
        ),
    ] {
        let root = Path::new("/");
        if let Some(b) = bytes {
            out.push(Tunable::dirty_limit(root, ratio_key, bytes_key, true, &b.to_string())?);
        } else if let Some(r) = ratio {
            out.push(Tunable::dirty_limit(root, ratio_key, bytes_key, false, &r.to_string())?);
        }
    }
    if let Some(on) = sc.file.kernel.vma_ra_enabled {
        out.push(Tunable::set("/sys/kernel/mm/swap/vma_ra_enabled", if on { "true" } else { "false" })?);
    }
    if sc.file.kernel.anon_mthp.is_some() {
        out.extend(set_anon_mthp(sc, Path::new(THP_DIR))?);
    }
    Ok(out)
}

/// /sys/kernel/mm/transparent_hugepage.
pub const THP_DIR: &str = "/sys/kernel/mm/transparent_hugepage";

/// `kernel.anon_mthp` on the host: every anon `hugepages-<size>kB/enabled` under `thp_dir` set to
/// `always` for the scenario's sizes and `never` for the others (PMD size included: the
/// simulator has no PMD-mapped THP). A size the host does not offer is an error.
fn set_anon_mthp(sc: &Scenario, thp_dir: &Path) -> Result<Vec<Tunable>, Error> {
    let want = &sc.config.kernel.anon_mthp_kb;
    // Only the anon sizes have `enabled` (hugepages-8kB is there for shmem and files).
    let sizes: Vec<_> =
        crate::tunables::mthp_size_dirs(thp_dir).into_iter().filter(|(_, d)| d.join("enabled").exists()).collect();
    if sizes.is_empty() {
        return Err(Error(format!(
            "{}: kernel.anon_mthp: {} has no hugepages-<size>kB directories (anon mTHP needs Linux 6.8+ with THP)",
            sc.origin,
            thp_dir.display()
        )));
    }
    if let Some(kb) = want.iter().find(|kb| !sizes.iter().any(|(s, _)| s == *kb)) {
        return Err(Error(format!("{}: kernel.anon_mthp: the host has no {kb}kB mTHP size", sc.origin)));
    }
    let mut out = Vec::new();
    for (kb, dir) in sizes {
        let v = if want.contains(&kb) { "always" } else { "never" };
        out.push(Tunable::set(dir.join("enabled"), v)?);
    }
    Ok(out)
}

/// The devices of the scenario that live on the work directory's disk on the host: those
/// holding swap files (not zram) and the scenario's files.
pub fn disk_devices(sc: &Scenario) -> Vec<&str> {
    let f = &sc.file;
    let mut v: Vec<&str> = f
        .swap
        .iter()
        .filter(|s| !matches!(f.device.get(&s.device), Some(DeviceConfig::Zram(_))))
        .map(|s| s.device.as_str())
        .chain(f.file.values().map(|c| c.device.as_str()))
        // A replayed trace's files are on its task's device.
        .chain(sc.config.task.iter().filter_map(|t| t.trace.as_ref()).map(|tp| tp.device.as_str()))
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// `read_ahead_kb` that the scenario itself gives its disk devices (`None`: it leaves the
/// disk's as it is). Every one of them is the same host disk, so they must agree.
pub fn scenario_read_ahead_kb(sc: &Scenario) -> Result<Option<u64>, Error> {
    let mut found: Option<(u64, &str)> = None;
    for d in disk_devices(sc) {
        let Some(v) = sc.given(&format!("device.{d}.read_ahead_kb")) else { continue };
        let kb = v.as_integer().and_then(|k| u64::try_from(k).ok()).ok_or_else(|| {
            Error(format!("{}: device.{d}.read_ahead_kb: expected a number of KiB, found {v}", sc.origin))
        })?;
        match found {
            Some((k, other)) if k != kb => {
                return Err(Error(format!(
                    "{}: device.{other}.read_ahead_kb = {k} and device.{d}.read_ahead_kb = {kb}: on the host both \
                     are the disk holding the work directory, which has one read_ahead_kb",
                    sc.origin
                )))
            }
            _ => found = Some((kb, d)),
        }
    }
    Ok(found.map(|(k, _)| k))
}

/// Sets the read_ahead_kb of the disk holding `work` to the scenario's, if it gives one
/// (restored afterwards like any tunable).
fn set_read_ahead(sc: &Scenario, work: &Path) -> Result<Option<Tunable>, Error> {
    let Some(kb) = scenario_read_ahead_kb(sc)? else { return Ok(None) };
    let disk = crate::tunables::disk_dir(work).ok_or_else(|| {
        Error(format!("{}: the scenario sets read_ahead_kb, but {} is on no block device", sc.origin, work.display()))
    })?;
    Tunable::set(disk.join("queue/read_ahead_kb"), &kb.to_string()).map(Some)
}

/// The run's own scratch directory; removed (with what is left in it) at the end.
struct WorkDir {
    path: PathBuf,
    cleanup: Cleanup,
}

impl WorkDir {
    fn create(parent: Option<&Path>) -> Result<WorkDir, Error> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let _op = crate::cleanup::op();
        let parent = parent.map_or_else(std::env::temp_dir, Path::to_path_buf);
        let path = parent.join(format!("pagesim-host-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
        std::fs::create_dir(&path).map_err(|e| Error(format!("mkdir {}: {e}", path.display())))?;
        // An active swap file cannot be unlinked (EPERM), so this never pulls a swap area away.
        let cleanup = Cleanup::undo(Undo::RemoveDir { path: path.clone() });
        Ok(WorkDir { path, cleanup })
    }

    fn remove(self) -> Result<(), Error> {
        self.cleanup.run()
    }
}

fn find_loader(given: Option<&Path>) -> Result<PathBuf, Error> {
    if let Some(p) = given {
        return if p.is_file() { Ok(p.to_path_buf()) } else { Err(Error(format!("{}: no such loader", p.display()))) };
    }
    let name = "pagesim-load";
    let mut dirs = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        if let Some(d) = exe.parent() {
            dirs.push(d.to_path_buf());
            if let Some(up) = d.parent() {
                dirs.push(up.to_path_buf());
            }
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file()).ok_or_else(|| {
        Error(format!("cannot find {name} beside this program or in $PATH (build it: cargo build -p pagesim-host)"))
    })
}

/// Runs pagesim-load once and parses its report. It dies with the calling thread
/// (PR_SET_PDEATHSIG), and the signal path kills it by PID.
fn run_loader(
    loader: &Path,
    scenario: &Path,
    seed: u64,
    cgs: &[Memcg],
    work: &Path,
    file_dir: Option<&Path>,
    run: u32,
) -> Result<LoadReport, Error> {
    let out_path = work.join(format!("load-{run}.json"));
    let err_path = work.join(format!("load-{run}.err"));
    let io = |p: &Path| std::fs::File::create(p).map_err(|e| Error(format!("{}: {e}", p.display())));
    let mut cmd = Command::new(loader);
    cmd.arg(scenario).arg("--seed").arg(seed.to_string());
    for cg in cgs {
        cmd.arg("--memcg").arg(format!("{}={}", cg.name(), cg.path().display()));
    }
    if let Some(d) = file_dir {
        cmd.arg("--file-dir").arg(d);
    }
    cmd.stdin(Stdio::null()).stdout(io(&out_path)?).stderr(io(&err_path)?);
    // SAFETY: the closure runs in the child between fork and exec and only calls prctl,
    // which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    // Start and register under the operation lock, so a signal cannot fall in between.
    let op = crate::cleanup::op();
    let mut child = cmd.spawn().map_err(|e| Error(format!("{}: cannot start: {e}", loader.display())))?;
    let pid = child.id() as i32;
    // Not yet reaped, so its /proc entry is there to give the start time that the journal
    // identifies it by.
    let start_time = crate::journal::process_start_time(pid).unwrap_or(0);
    let kill = Cleanup::undo(Undo::KillProcess { pid, start_time });
    drop(op);
    // Wait without reaping: while `kill` is registered the PID stays ours (a zombie cannot be
    // reused), so the signal path can never hit an unrelated process.
    loop {
        // SAFETY: a zeroed siginfo_t is valid output storage for waitid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waits for our own child; info is live output storage.
        let r = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT) };
        if r == 0 || crate::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break;
        }
    }
    kill.dismiss();
    let status = child.wait().map_err(|e| Error(format!("waiting for pagesim-load: {e}")))?;
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    // Exit 1 means some task did not complete (e.g. OOM-killed): still a measurement.
    if !(status.success() || status.code() == Some(1)) {
        return Err(Error(format!("pagesim-load failed ({status}): {}", stderr.trim())));
    }
    serde_json::from_str(&stdout).map_err(|e| Error(format!("pagesim-load printed no report ({e}): {}", stderr.trim())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(memcg: &str, task_memcg: &str) -> Scenario {
        let text = format!(
            "[machine]\nram = \"512MB\"\n{memcg}\n[region.r]\nkind = \"anon\"\nsize = \"1MB\"\n\
             [[task]]\nname = \"t\"\n{task_memcg}\n[[task.step]]\nregion = \"r\"\npattern = \"seq\"\n"
        );
        Scenario::from_toml(&text, "s.toml", &[]).unwrap()
    }

    fn host(total_mib: u64, avail_mib: u64) -> BTreeMap<String, u64> {
        [("MemTotal".to_string(), total_mib << 10), ("MemAvailable".to_string(), avail_mib << 10)].into()
    }

    #[test]
    fn anon_mthp_sets_the_scenarios_sizes_to_always_and_every_other_anon_size_to_never() {
        use crate::testutil::{fake_file, temp_dir};
        let d = temp_dir("thp");
        for size in ["16kB", "32kB", "64kB", "2048kB"] {
            fake_file(&d, &format!("hugepages-{size}/enabled"), "always inherit madvise [never]\n");
        }
        // Order 1 exists for shmem and files only: no `enabled`.
        fake_file(&d, "hugepages-8kB/shmem_enabled", "always inherit [never]\n");
        let text = "[machine]\nram = \"512MB\"\n[kernel]\nprofile = \"linux-6.18\"\nanon_mthp = [\"16KB\", \"64KB\"]\n\
                    [region.r]\nkind = \"anon\"\nsize = \"1MB\"\n[[task]]\nname = \"t\"\n\
                    [[task.step]]\nregion = \"r\"\npattern = \"seq\"\n";
        let sc = Scenario::from_toml(text, "s.toml", &[]).unwrap();
        let read = |size: &str| {
            std::fs::read_to_string(d.join(format!("hugepages-{size}/enabled"))).unwrap().trim().to_string()
        };
        {
            let set = set_anon_mthp(&sc, &d).unwrap();
            assert_eq!(set.len(), 4, "every anon size, none for 8kB");
            assert_eq!([read("16kB"), read("64kB")], ["always", "always"]);
            assert_eq!([read("32kB"), read("2048kB")], ["never", "never"], "the others off, PMD size too");
        }
        assert!(read("64kB").contains("never"), "restored when the tunables go");
        let big = Scenario::from_toml(text, "s.toml", &["kernel.anon_mthp=[\"128KB\"]".into()]).unwrap();
        let e = set_anon_mthp(&big, &d).unwrap_err();
        assert!(e.0.contains("no 128kB"), "{e}");
        let e = set_anon_mthp(&sc, &d.join("none")).unwrap_err();
        assert!(e.0.contains("6.8"), "{e}");
    }

    #[test]
    fn a_small_ram_model_needs_every_task_in_a_limited_memcg() {
        let plain = scenario("", "");
        let e = check_memory_model(&plain, &host(24_000, 23_000)).unwrap_err();
        assert!(e.0.contains("machine.ram = 512 MiB") && e.0.contains("tasks without a limit: t"), "{e}");
        // 512 MB RAM minus the default reserve (8 + 32 MiB) is about a 472 MiB host.
        check_memory_model(&plain, &host(480, 400)).unwrap();
        let unlimited = scenario("[memcg.box]", "memcg = \"box\"");
        assert!(check_memory_model(&unlimited, &host(24_000, 23_000)).is_err());
        let limited = scenario("[memcg.box]\nmax = \"48MB\"", "memcg = \"box\"");
        check_memory_model(&limited, &host(24_000, 23_000)).unwrap();
        let e = check_memory_model(&limited, &host(24_000, 40)).unwrap_err();
        assert!(e.0.contains("would not bind"), "{e}");
    }

    #[test]
    fn only_file_data_needs_a_cold_page_cache() {
        assert!(!needs_cold_page_cache(&scenario("", "")), "anon regions start empty anyway");
        let text = "[machine]\nram = \"512MB\"\n[device.d]\nmodel = \"nvme\"\n[file.data]\ndevice = \"d\"\n\
                    size = \"1MB\"\n[region.r]\nkind = \"file\"\nfile = \"data\"\nsize = \"1MB\"\n\
                    [[task]]\nname = \"t\"\n[[task.step]]\nregion = \"r\"\npattern = \"seq\"\nop = \"read\"\n";
        let sc = Scenario::from_toml(text, "f.toml", &[]).unwrap();
        assert!(needs_cold_page_cache(&sc));
    }

    #[test]
    fn refuses_without_root() {
        if crate::is_root() {
            return; // The root path is exercised by the integration test.
        }
        let e = run_on_host(&scenario("", ""), 1).unwrap_err();
        assert!(e.0.contains("needs root"), "{e}");
    }
}
