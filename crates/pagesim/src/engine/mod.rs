//! The simulation engine: simulated clock, event queue, threads on CPUs, I/O plumbing.
//!
//! Time is an integer number of nanoseconds. Threads are the tasks of the scenario and
//! kswapd. A runnable thread takes the CPU that frees up first and runs until it blocks,
//! until the next event is due, or for one time slice; hits (present, permitted PTEs) are
//! processed in a tight loop without events. A fault, a reclaim pass or an I/O submission
//! charges CPU time from the scenario's `[cpu]` costs. Blocked threads wait for an I/O
//! completion (page read, writeback progress) or a timeout.
//!
//! The kernel's state lives in [`Sim`]; its methods are spread over the subsystem modules
//! (`mm::fault`, `reclaim`), each naming the kernel functions it models.

pub mod event;

use crate::device::{DeviceModel, DeviceQueue, Dispatched, IoDir};
use crate::mm::vmstat::{Counter, Counters};
use crate::mm::{self, pg, pte, Frames, Memcg, Watermarks, NIL};
use crate::pagecache::filemap::{FileRead, ReadStep};
use crate::pagecache::readahead::{Advice, FileRa, FileRaState, VmHint};
use crate::pagecache::{AddressSpace, RA_WINDOW_BUCKETS};
use crate::reclaim::scan_balance::ScanBalance;
use crate::reclaim::ScanControl;
use crate::report::{Histogram, Report};
use crate::rng::Rng;
use crate::scenario::{CpuCosts, Profile, RegionKind, Scenario};
use crate::scenario::{Fadvise, Pace};
use crate::swap::readahead::SwapRa;
use crate::swap::{Swap, SwapArea};
use crate::workload::{BoundStep, Cursor};
use crate::{Error, Progress, RunOptions};
use event::{Event, EventQueue};

/// What the hit loop stopped at.
enum Next {
    /// An access that faults: (vma, page, write).
    Fault(u32, u32, bool),
    /// A file step's next read call, of this record.
    Read(u32),
    /// The task ended or the burst is over.
    Stop,
}

/// Debug builds check every invariant of the model (`Sim::verify`) as they run, spending
/// about this many item checks per event on average. What a bug breaks (a frame on two
/// lists, a count that disagrees with its map) mostly stays broken, so a check every few
/// thousand events of a large run still catches it, at a cost comparable to the simulation
/// itself: with 4096 per event, checking took 25 of the 26 seconds of the seed-000 test.
const VERIFY_ITEMS_PER_EVENT: u64 = 256;

/// A virtual memory area: one region instance mapped by one task.
#[derive(Debug)]
pub struct Vma {
    pub task: u32,
    /// The shmem object it maps, or `None` for private anonymous memory.
    pub shmem: Option<u32>,
    /// The file it maps (read-only, shared), or `None`.
    pub file: Option<u32>,
    /// Readahead state of the mapping's open file (`vmf->file->f_ra`); file VMAs only.
    pub ra: u32,
    /// madvise hint of a file VMA.
    pub hint: VmHint,
    /// MADV_WILLNEED is still to be applied (at the VMA's first fault).
    pub willneed: bool,
    pub pages: u32,
    pub pte: Vec<u32>,
    /// Index of its region in the scenario's region order (for the page content model).
    pub region: u32,
}

/// A shmem (tmpfs) object: its page cache holds frames or swap entries.
#[derive(Debug)]
pub struct ShmemObj {
    /// frame + 1, or `pte::SWAP | entry`, or 0 (hole).
    pub slots: Vec<u32>,
    /// VMAs mapping it.
    pub mappers: Vec<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    NotStarted,
    Runnable,
    /// Waiting for a page's read I/O.
    WaitPage,
    /// Throttled in reclaim: waiting for writeback progress or a timeout.
    Throttled,
    /// Waiting for a free request on a full device queue (`get_request_wait`).
    WaitRequest,
    Done,
}

#[derive(Debug)]
pub struct Task {
    pub name: String,
    pub memcg: u16,
    pub steps: Vec<BoundStep>,
    /// Global VMA id of each step's region.
    pub step_vma: Vec<u32>,
    pub cur: Cursor,
    pub rng: Rng,
    pub state: TaskState,
    pub start_ns: u64,
    pub end_ns: u64,
    pub cpu_ns: u64,
    pub faults: u64,
    pub major_faults: u64,
    pub oom_killed: bool,
    /// The access being retried after a block: (vma, page, write).
    pub pending: Option<(u32, u32, bool)>,
    /// pgfault was already counted for the pending access.
    pub fault_counted: bool,
    /// The pending access already waited for a page once: its retry is a
    /// `FAULT_FLAG_TRIED` fault.
    pub fault_tried: bool,
    /// The pending swap fault already reclaimed room for its readahead window in the
    /// task's memcg (`Sim::swapin_charge_room`).
    pub fault_room_reclaimed: bool,
    /// Fault start time of the pending access (for the latency histogram).
    pub fault_start: u64,
    /// Direct or memcg reclaim in progress.
    pub reclaim: Option<ScanControl>,
    /// Consecutive reclaim rounds without progress (`no_progress_loops`).
    pub no_progress: u32,
    /// Frame whose read this task waits for.
    pub wait_frame: u32,
    /// The read(2) in progress, if any.
    pub read: Option<FileRead>,
    /// The readahead policy was already consulted for the pending fault.
    pub ra_done: bool,
    /// Per step: the readahead state its file reads use (file steps), else `NIL`.
    pub step_ra: Vec<u32>,
    /// Per step: when it ended (0 while not ended).
    pub step_end_ns: Vec<u64>,
}

/// kswapd's state.
#[derive(Debug, Default)]
pub struct Kswapd {
    pub running: bool,
    pub sleeping: bool,
    pub throttled: bool,
    /// In `congestion_wait` (pre-3.11 balance_pgdat's nap): wakeups do not reach it.
    pub napping: bool,
    pub sc: Option<ScanControl>,
    pub failures: u32,
    pub cpu_ns: u64,
    pub awake_since: u64,
    pub awake_ns: u64,
    pub wakeups: u64,
}

/// One page I/O in flight (the tag handed to the device queue).
#[derive(Clone, Copy, Debug)]
pub struct PageIo {
    pub frame: u32,
    pub dir: IoDir,
}

/// Resolved tunables of a run.
#[derive(Debug, Clone)]
pub struct Tunables {
    pub swappiness: u32,
    pub page_cluster: u32,
    pub vma_ra_enabled: bool,
    /// The memory controller is on the cgroup v1 hierarchy (`kernel.cgroup_version = 1`).
    pub memcg_v1: bool,
    pub wmark: Watermarks,
    pub managed_pages: u64,
}

/// The whole simulated machine and kernel.
pub struct Sim {
    pub now: u64,
    pub events: EventQueue,
    pub profile: &'static Profile,
    pub cost: CpuCosts,
    pub tun: Tunables,
    pub frames: Frames,
    pub memcgs: Vec<Memcg>,
    pub vmstat: Counters,
    pub swap: Swap,
    pub swap_ra: SwapRa,
    pub scan_balance: ScanBalance,
    /// zswap (mm/zswap.c), the content of swapped pages, and the frames that zsmalloc pools
    /// (zswap's, zram's) hold.
    pub zswap: crate::swap::zswap::Zswap,
    pub content: crate::swap::compress::PageContent,
    pub zs_frames: Vec<u32>,
    pub vmas: Vec<Vma>,
    pub shmem: Vec<ShmemObj>,
    /// Files and their page caches.
    pub files: Vec<AddressSpace>,
    /// The file readahead policy.
    pub file_ra: FileRa,
    /// Open files' readahead states (`struct file_ra_state`), indexed by `Vma::ra` and
    /// `Task::step_ra`.
    pub ra_states: Vec<FileRaState>,
    /// Per readahead state: the last page its previous read returned (`u64::MAX` none).
    pub ra_last_page: Vec<u64>,
    /// `ra_states[ra_read_copies + tid]` is task `tid`'s copy of the state its read(2)
    /// works on, where the profile has `ra_read_copy` (≤2.6.23).
    pub ra_read_copies: u32,
    pub tasks: Vec<Task>,
    pub kswapd: Kswapd,
    pub devices: Vec<DeviceQueue>,
    pub device_names: Vec<String>,
    pub ios: Vec<PageIo>,
    free_ios: Vec<u32>,
    /// Per-CPU time at which the CPU is free.
    pub cpu_free: Vec<u64>,
    /// Per-thread wakeup token: an event with a stale token is ignored.
    tokens: Vec<u32>,
    /// Pages under writeback, and writebacks completed (for throttling).
    pub nr_writeback: u64,
    pub nr_written: u64,
    /// Written count at which throttled threads are released.
    throttle_target: u64,
    /// 3.x `zone->pages_scanned`, reset when a page is freed.
    pub pages_scanned: u64,
    /// PGDAT_WRITEBACK.
    pub pgdat_writeback: bool,
    /// Time of the next periodic memcg stats flush (`Profile::memcg_stats_flush_ns`).
    pub next_stats_flush: u64,
    pub fault_hist: Histogram,
    /// File readahead windows by size: bucket k counts windows of up to 2^k pages.
    pub ra_window_hist: [u64; RA_WINDOW_BUCKETS],
    pub ops_done: u64,
    pub ops_total: u64,
    scratch_dispatch: Vec<Dispatched>,
    scratch_tags: Vec<u32>,
    /// Per device, the time its scheduler timer event was queued for.
    dev_timer: Vec<Option<u64>>,
    /// Threads sleeping for a request of a full device queue: (thread, device), in order.
    req_waiters: Vec<(u32, u32)>,
    /// The thread running now: the submitting context of its I/O.
    io_ctx: u32,
    /// Reused buffer for pages isolated by shrink_inactive_list.
    pub isolate_buf: Vec<u32>,
    time_limit: u64,
    /// Timeline points every `sample_every` ns (none when 0).
    pub timeline: Vec<crate::report::TimelinePoint>,
    sample_every: u64,
}

impl Sim {
    /// Thread id of kswapd (tasks are 0..n).
    #[inline]
    pub fn kswapd_thread(&self) -> u32 {
        self.tasks.len() as u32
    }

    /// Thread id of zswap's shrink worker (`zswap_shrink_work`).
    #[inline]
    pub fn zswap_worker_thread(&self) -> u32 {
        self.tasks.len() as u32 + 1
    }

    /// Builds the machine from a validated scenario.
    pub fn new(sc: &Scenario, seed: u64) -> Result<Sim, Error> {
        let f = &sc.file;
        let profile = sc.profile;
        let ram = f.machine.ram;
        let reserved = f.machine.kernel_reserved.unwrap_or(ram / 64 + (32 << 20));
        let managed = (ram - reserved) / 4096;
        if managed > pte::FRAME as u64 - 1 {
            return Err(Error(format!("{}: machine.ram: too large for this model", sc.origin)));
        }
        let min_free_kb =
            f.vm.min_free_kbytes.unwrap_or_else(|| mm::default_min_free_kbytes(managed, profile.min_free_kbytes_max));
        let wsf = profile.watermark_scale.then(|| f.vm.watermark_scale_factor.unwrap_or(10));
        let wmark = mm::watermarks(managed, min_free_kb, wsf);
        if wmark.high * 2 >= managed {
            return Err(Error(format!(
                "{}: vm.min_free_kbytes: {min_free_kb} kB leaves no room above the high watermark in {managed} pages",
                sc.origin
            )));
        }
        let tun = Tunables {
            swappiness: f.vm.swappiness.unwrap_or(60),
            page_cluster: f.vm.page_cluster.unwrap_or(3),
            vma_ra_enabled: f.kernel.vma_ra_enabled.unwrap_or(true),
            memcg_v1: f.kernel.cgroup_version == Some(1),
            wmark,
            managed_pages: managed,
        };
        let ncpus = f.machine.cpus;
        let nframes = managed as u32;

        // Devices, in name order (BTreeMap), and the swap areas on them.
        let mut devices = Vec::new();
        let mut device_names = Vec::new();
        for (name, cfg) in &f.device {
            let m = DeviceModel::new(cfg).map_err(|e| Error(format!("{}: device.{name}: {e}", sc.origin)))?;
            devices.push(DeviceQueue::new(m));
            device_names.push(name.clone());
        }
        let ndevices = devices.len();
        let mut swap = Swap::default();
        let mut dev_used = vec![0u64; devices.len()];
        for (i, s) in f.swap.iter().enumerate() {
            let d = device_names.iter().position(|n| *n == s.device).expect("validated");
            let prio = s.priority.unwrap_or(-1 - i as i32);
            let rot = devices[d].model().rotational();
            let clusters = !rot && profile.ssd_cluster_alloc;
            swap.areas.push(SwapArea::new(d as u32, dev_used[d], s.size, prio, rot, clusters, ncpus));
            dev_used[d] += s.size;
        }
        let (zswap, content) =
            crate::swap::page_io::setup(f, profile, &mut swap, &devices, managed, f.memcg.len() + 1, seed);

        let ra_name = f.kernel.swap_readahead.as_deref().unwrap_or(profile.swap_readahead);
        let swap_ra = (crate::swap::readahead::find(ra_name).expect("validated").build)();
        let sb_name = f.kernel.scan_balance.as_deref().unwrap_or(profile.scan_balance);
        let scan_balance = (crate::reclaim::scan_balance::find(sb_name).expect("validated").build)();

        let mut memcgs = vec![Memcg::new("/", u64::MAX, nframes)];
        for (name, m) in &f.memcg {
            memcgs.push(Memcg::new(name, m.max.map_or(u64::MAX, |b| b.div_ceil(4096)), nframes));
        }

        // Regions: shmem objects are shared; anon regions are instantiated per task.
        let mut shmem = Vec::new();
        let mut shmem_ids = std::collections::BTreeMap::new();
        for (name, r) in &f.region {
            if r.kind == RegionKind::Shmem {
                let pages = r.size.div_ceil(4096) as u32;
                shmem_ids.insert(name.clone(), shmem.len() as u32);
                shmem.push(ShmemObj { slots: vec![0; pages as usize], mappers: Vec::new() });
            }
        }
        // Files: one extent each after the swap areas of their device; shared files in
        // name order, then the per-task copies in task order.
        let mut files: Vec<AddressSpace> = Vec::new();
        let mut file_ids = std::collections::BTreeMap::new();
        let mut place = |name: String, cfg: &crate::scenario::FileConfig, files: &mut Vec<AddressSpace>| {
            let d = device_names.iter().position(|n| *n == cfg.device).expect("validated");
            let bytes = cfg.size.div_ceil(4096) * 4096;
            let cap = devices[d].model().capacity_bytes();
            if dev_used[d] + bytes > cap {
                return Err(Error(format!(
                    "{}: file.{name}: device \"{}\" holds {cap} bytes; its swap areas and files need {}",
                    sc.origin,
                    cfg.device,
                    dev_used[d] + bytes
                )));
            }
            files.push(AddressSpace::new(name, d as u32, dev_used[d], bytes / 4096));
            dev_used[d] += bytes;
            Ok((files.len() - 1) as u32)
        };
        for (name, cfg) in &f.file {
            if !cfg.per_task {
                let id = place(name.clone(), cfg, &mut files)?;
                file_ids.insert(name.clone(), id);
            }
        }
        // A new open file's readahead state: the bdi's `ra_pages` and `io_pages`.
        let new_ra = |files: &Vec<AddressSpace>, fi: u32| {
            let m = devices[files[fi as usize].dev as usize].model();
            FileRaState::new(m.ra_pages(), m.io_pages())
        };
        let mut ra_states: Vec<FileRaState> = Vec::new();
        let mut rng = Rng::new(seed);
        let mut vmas: Vec<Vma> = Vec::new();
        let mut tasks = Vec::new();
        let mut ops_total = 0u64;
        for t in &f.task {
            let memcg =
                t.memcg.as_ref().map_or(0, |m| 1 + f.memcg.keys().position(|k| k == m).expect("validated")) as u16;
            // Readahead states of shared_fd steps, one per step for all instances.
            let mut shared_ra: Vec<Option<u32>> = vec![None; t.step.len()];
            for k in 0..t.count {
                let tid = tasks.len() as u32;
                let mut region_vma = std::collections::BTreeMap::new();
                let mut own_files = std::collections::BTreeMap::new();
                let mut steps = Vec::new();
                let mut step_vma = Vec::new();
                let mut step_ra = Vec::new();
                for (j, st) in t.step.iter().enumerate() {
                    let pages = crate::workload::step_pages(sc, st);
                    let (v, ra) = match &st.file {
                        Some(name) => {
                            let cfg = &f.file[name];
                            let fi = if cfg.per_task {
                                match own_files.get(name) {
                                    Some(&fi) => fi,
                                    None => {
                                        let fi = place(format!("{name}.{tid}"), cfg, &mut files)?;
                                        own_files.insert(name.clone(), fi);
                                        fi
                                    }
                                }
                            } else {
                                file_ids[name]
                            };
                            let ra = match shared_ra[j] {
                                Some(ra) if st.shared_fd => ra,
                                _ => {
                                    ra_states.push(new_ra(&files, fi));
                                    let ra = (ra_states.len() - 1) as u32;
                                    if st.shared_fd {
                                        shared_ra[j] = Some(ra);
                                    }
                                    ra
                                }
                            };
                            (fi, ra)
                        }
                        None => {
                            let r = &f.region[&st.region];
                            let v = *region_vma.entry(st.region.clone()).or_insert_with(|| {
                                let id = vmas.len() as u32;
                                let obj = shmem_ids.get(&st.region).copied();
                                if let Some(o) = obj {
                                    shmem[o as usize].mappers.push(id);
                                }
                                let file = r.file.as_ref().map(|name| file_ids[name]);
                                let region = f.region.keys().position(|k| *k == st.region).expect("validated") as u32;
                                let mut ra = NIL;
                                if let Some(fi) = file {
                                    files[fi as usize].mappers.push(id);
                                    ra_states.push(new_ra(&files, fi));
                                    ra = (ra_states.len() - 1) as u32;
                                }
                                vmas.push(Vma {
                                    task: tid,
                                    shmem: obj,
                                    file,
                                    ra,
                                    hint: Sim::vm_hint(r.madvise),
                                    willneed: r.madvise == Some(crate::scenario::Madvise::Willneed),
                                    pages,
                                    pte: vec![pte::NONE; pages as usize],
                                    region,
                                });
                                id
                            });
                            (v, NIL)
                        }
                    };
                    let bs = BoundStep::new(st, v, pages);
                    ops_total += bs.total;
                    steps.push(bs);
                    step_vma.push(v);
                    step_ra.push(ra);
                }
                let name = if t.count > 1 { format!("{}.{k}", t.name) } else { t.name.clone() };
                let nsteps = steps.len();
                tasks.push(Task {
                    name,
                    memcg,
                    steps,
                    step_vma,
                    cur: Cursor { step_start_ns: t.start + k as u64 * t.stagger, ..Cursor::default() },
                    rng: rng.split(),
                    state: TaskState::NotStarted,
                    start_ns: t.start + k as u64 * t.stagger,
                    end_ns: 0,
                    cpu_ns: 0,
                    faults: 0,
                    major_faults: 0,
                    oom_killed: false,
                    pending: None,
                    fault_counted: false,
                    fault_tried: false,
                    fault_room_reclaimed: false,
                    fault_start: 0,
                    reclaim: None,
                    no_progress: 0,
                    wait_frame: NIL,
                    read: None,
                    ra_done: false,
                    step_ra,
                    step_end_ns: vec![0; nsteps],
                });
            }
        }
        // One working copy of a readahead state per task, for kernels whose read(2) works
        // on a copy (`Profile::ra_read_copy`); overwritten at the start of each read.
        let ra_read_copies = ra_states.len() as u32;
        if profile.ra_read_copy && !ra_states.is_empty() {
            ra_states.extend(tasks.iter().map(|_| FileRaState::new(0, 0)));
        }
        let fra_name = f.kernel.file_readahead.as_deref().unwrap_or(profile.file_readahead);
        let file_ra = (crate::pagecache::readahead::find(fra_name).expect("validated").build)();
        // The tasks, kswapd, zswap's shrink worker.
        let nthreads = tasks.len() + 2;
        let mut sim = Sim {
            now: 0,
            events: EventQueue::default(),
            profile,
            cost: f.cpu.clone(),
            tun,
            frames: Frames::new(nframes),
            memcgs,
            vmstat: Counters::default(),
            swap,
            swap_ra,
            scan_balance,
            zswap,
            content,
            zs_frames: Vec::new(),
            vmas,
            shmem,
            files,
            file_ra,
            ra_last_page: vec![u64::MAX; ra_states.len()],
            ra_read_copies,
            ra_states,
            tasks,
            kswapd: Kswapd { sleeping: true, ..Default::default() },
            devices,
            device_names,
            ios: Vec::new(),
            free_ios: Vec::new(),
            cpu_free: vec![0; ncpus as usize],
            tokens: vec![0; nthreads],
            nr_writeback: 0,
            nr_written: 0,
            throttle_target: u64::MAX,
            pages_scanned: 0,
            pgdat_writeback: false,
            next_stats_flush: profile.memcg_stats_flush_ns / 2,
            fault_hist: Histogram::default(),
            ra_window_hist: [0; RA_WINDOW_BUCKETS],
            ops_done: 0,
            ops_total,
            scratch_dispatch: Vec::new(),
            scratch_tags: Vec::new(),
            dev_timer: vec![None; ndevices],
            req_waiters: Vec::new(),
            io_ctx: 0,
            isolate_buf: Vec::new(),
            time_limit: f.time_limit.unwrap_or(u64::MAX),
            timeline: Vec::new(),
            sample_every: f.sample_interval.unwrap_or(0),
        };
        if sim.sample_every > 0 {
            sim.timeline.push(crate::report::TimelinePoint::of(&sim, 0));
        }
        for tid in 0..sim.tasks.len() as u32 {
            let at = sim.tasks[tid as usize].start_ns;
            sim.wake(tid, at);
        }
        Ok(sim)
    }

    /// Makes thread `th` runnable at `at` (superseding any earlier wakeup).
    pub fn wake(&mut self, th: u32, at: u64) {
        let tok = &mut self.tokens[th as usize];
        *tok = tok.wrapping_add(1);
        let token = *tok;
        self.events.push(at, Event::Run { thread: th, token });
    }

    /// Invalidates pending wakeups of `th` (it blocks).
    pub fn block(&mut self, th: u32) {
        let tok = &mut self.tokens[th as usize];
        *tok = tok.wrapping_add(1);
    }

    /// Runs to completion.
    pub fn run(&mut self, progress: &mut Option<crate::ProgressFn<'_>>) {
        let mut next_progress = 1u64 << 20;
        let mut verify_countdown = 1u64;
        while let Some((t, ev)) = self.events.pop() {
            if t > self.time_limit {
                self.now = self.time_limit;
                break;
            }
            while self.sample_every > 0 {
                let next = self.timeline.last().map_or(0, |p| p.t_ns) + self.sample_every;
                if t < next {
                    break;
                }
                let point = crate::report::TimelinePoint::of(self, next);
                self.timeline.push(point);
            }
            self.now = self.now.max(t);
            match ev {
                Event::Run { thread, token } => {
                    if token == self.tokens[thread as usize] {
                        self.run_thread(thread);
                    }
                }
                Event::IoDone { dev, rid } => self.io_done(dev, rid),
                Event::DevTimer { dev } => self.dev_timer_fired(dev),
            }
            if self.ops_done >= next_progress {
                next_progress = self.ops_done + (1 << 20);
                if let Some(p) = progress.as_mut() {
                    p(&Progress { sim_ns: self.now, ops_done: self.ops_done, ops_total: Some(self.ops_total) });
                }
            }
            if self.tasks.iter().all(|t| t.state == TaskState::Done) {
                break;
            }
            if cfg!(debug_assertions) {
                verify_countdown -= 1;
                if verify_countdown == 0 {
                    verify_countdown = self.verify_stride();
                    if let Err(e) = self.verify() {
                        panic!("invariant broken at t={}ns: {e}", self.now);
                    }
                }
            }
        }
    }

    /// Events between two runs of the invariant checker in debug builds: every event for
    /// up to [`VERIFY_ITEMS_PER_EVENT`] checked items (frames, swap slots, file pages), then
    /// proportionally fewer, so a check costs O(1) per event on average whatever the
    /// machine's size.
    fn verify_stride(&self) -> u64 {
        let slots: u64 = self.swap.areas.iter().map(|a| a.nslots as u64).sum();
        let file_pages: u64 = self.files.iter().map(|a| a.nr_pages).sum();
        ((self.frames.len() as u64 + slots + file_pages) / VERIFY_ITEMS_PER_EVENT).max(1)
    }

    /// Dispatches one thread burst on the CPU that frees up first.
    fn run_thread(&mut self, th: u32) {
        let (cpu, free_at) =
            self.cpu_free.iter().copied().enumerate().min_by_key(|&(i, t)| (t, i)).expect("at least one CPU");
        if free_at > self.now {
            self.wake(th, free_at);
            return;
        }
        let start = self.now;
        self.io_ctx = th;
        if th == self.kswapd_thread() {
            self.run_kswapd(cpu as u32);
            self.kswapd.cpu_ns += self.now - start;
        } else if th == self.zswap_worker_thread() {
            self.run_zswap_shrink_worker();
            self.zswap.worker_cpu_ns += self.now - start;
        } else {
            let t = &mut self.tasks[th as usize];
            if t.state == TaskState::NotStarted {
                t.state = TaskState::Runnable;
            }
            if t.state == TaskState::Done {
                return;
            }
            self.run_task(th, cpu as u32);
            self.tasks[th as usize].cpu_ns += self.now - start;
        }
        self.cpu_free[cpu] = self.now;
    }

    /// The end of this burst: the next event, or one time slice. A burst always gets to
    /// make one step, so two threads woken at the same instant cannot yield to each other
    /// forever without time advancing.
    #[inline]
    pub fn burst_limit(&self, start: u64) -> u64 {
        self.events.next_time().max(start + 1).min(start + self.cost.timeslice_ns)
    }

    /// Runs task `tid` until it blocks, finishes or its burst ends.
    fn run_task(&mut self, tid: u32, cpu: u32) {
        let limit = self.burst_limit(self.now);
        loop {
            if self.now >= limit {
                self.wake(tid, self.now);
                return;
            }
            // A reclaim job in progress runs first; the access is retried after it.
            if self.tasks[tid as usize].reclaim.is_some() {
                match self.direct_reclaim_step(tid, cpu) {
                    crate::reclaim::Step::Continue => continue,
                    crate::reclaim::Step::Blocked => return,
                    crate::reclaim::Step::Finished => {}
                }
            }
            if self.tasks[tid as usize].read.is_some() {
                match self.file_read_step(tid, cpu, limit) {
                    ReadStep::Done => {
                        if self.finish_access(tid) {
                            return;
                        }
                        continue;
                    }
                    ReadStep::Blocked => return,
                    ReadStep::Retry => continue,
                    ReadStep::Yield => {
                        self.wake(tid, self.now);
                        return;
                    }
                }
            }
            let (vma, idx, write) = match self.tasks[tid as usize].pending {
                Some(p) => p,
                None => {
                    // The hit loop: no event, no allocation per access.
                    match self.hit_loop(tid, limit) {
                        Next::Fault(vma, idx, write) => (vma, idx, write),
                        Next::Read(unit) => {
                            self.start_read(tid, cpu, unit);
                            continue;
                        }
                        Next::Stop => {
                            if self.tasks[tid as usize].state == TaskState::Done || self.now >= limit {
                                if self.tasks[tid as usize].state != TaskState::Done {
                                    self.wake(tid, self.now);
                                }
                                return;
                            }
                            continue;
                        }
                    }
                }
            };
            let t = &mut self.tasks[tid as usize];
            if t.pending.is_none() {
                t.pending = Some((vma, idx, write));
                t.fault_counted = false;
                t.fault_tried = false;
                t.ra_done = false;
                t.fault_room_reclaimed = false;
                t.fault_start = self.now;
            }
            match self.handle_fault(tid, cpu, vma, idx, write) {
                crate::mm::fault::Fault::Done => {
                    let t = &mut self.tasks[tid as usize];
                    t.pending = None;
                    let lat = self.now - t.fault_start;
                    self.fault_hist.record(lat);
                    if self.finish_access(tid) {
                        return;
                    }
                }
                crate::mm::fault::Fault::Blocked => return,
                crate::mm::fault::Fault::Retry => continue,
                crate::mm::fault::Fault::Killed => return,
            }
        }
    }

    /// Starts the read(2) of record `unit` of the task's current file step; the step's
    /// first read opens the file (its `posix_fadvise` is given then).
    fn start_read(&mut self, tid: u32, cpu: u32, unit: u32) {
        let t = &self.tasks[tid as usize];
        let si = t.cur.step;
        let step = &t.steps[si];
        let (fi, ra) = (t.step_vma[si], t.step_ra[si]);
        let nr = step.record_pages as u64;
        if t.cur.done == 0 {
            if let Some(a) = step.fadvise {
                let nr_pages = self.files[fi as usize].nr_pages;
                let advice = match a {
                    Fadvise::Normal => Advice::Normal,
                    Fadvise::Sequential => Advice::Sequential,
                    Fadvise::Random => Advice::Random,
                    Fadvise::Willneed => Advice::WillNeed { index: 0, nr: nr_pages },
                };
                self.file_fadvise(tid, cpu, fi, ra, advice);
            }
        }
        self.file_read_begin(tid, fi, ra, unit as u64 * nr, nr);
    }

    /// Executes accesses that hit until one faults, a file step needs a read call, the
    /// task ends, or the burst limit is reached.
    #[inline]
    fn hit_loop(&mut self, tid: u32, limit: u64) -> Next {
        let access_ns = self.cost.access_ns;
        let Sim { tasks, vmas, now, ops_done, .. } = self;
        let t = &mut tasks[tid as usize];
        loop {
            if *now >= limit {
                return Next::Stop;
            }
            let Some(step) = t.steps.get(t.cur.step) else {
                t.state = TaskState::Done;
                t.end_ns = *now;
                return Next::Stop;
            };
            if t.cur.done >= step.total {
                t.step_end_ns[t.cur.step] = *now;
                t.cur.step += 1;
                t.cur.done = 0;
                t.cur.step_start_ns = *now;
                continue;
            }
            let idx = step.next_index(t.cur.done, &mut t.rng, t.cur.last);
            t.cur.last = idx;
            if step.file {
                return Next::Read(idx);
            }
            let vma = t.step_vma[t.cur.step];
            let write = step.write;
            let think = step.think_ns;
            let ptes = &mut vmas[vma as usize].pte;
            let e = ptes[idx as usize];
            let ok = pte::is_present(e) && (!write || e & pte::WRITE != 0);
            if !ok {
                return Next::Fault(vma, idx, write);
            }
            ptes[idx as usize] = e | pte::YOUNG | if write { pte::DIRTY } else { 0 };
            t.cur.done += 1;
            *ops_done += 1;
            *now += access_ns + think;
        }
    }

    /// Accounts the access (or read call) that just completed outside the hit loop. A
    /// step with a `rate` then sleeps until its bytes are due; returns whether the task
    /// went to sleep.
    fn finish_access(&mut self, tid: u32) -> bool {
        let t = &mut self.tasks[tid as usize];
        let step = &t.steps[t.cur.step];
        let think = step.think_ns;
        let rate = step.rate;
        let bytes = step.record_pages as u64 * 4096;
        t.cur.done += 1;
        self.ops_done += 1;
        self.now += self.cost.access_ns + think;
        if rate == 0 {
            return false;
        }
        let interval = |n: u64| ((n as u128 * bytes as u128 * 1_000_000_000) / rate as u128) as u64;
        let due = match step.pace {
            Pace::CatchUp => t.cur.step_start_ns + interval(t.cur.done),
            Pace::Steady => {
                // The call just finished began when its interval was due, or when the
                // previous call ended if that was later (step start for the first call).
                let began =
                    if t.cur.done == 1 { t.cur.step_start_ns } else { t.cur.next_due_ns.max(t.cur.last_end_ns) };
                t.cur.next_due_ns = began + interval(1);
                t.cur.last_end_ns = self.now;
                t.cur.next_due_ns
            }
        };
        if due <= self.now {
            return false;
        }
        self.block(tid);
        self.wake(tid, due);
        true
    }

    /// Charges CPU time to the running thread.
    #[inline]
    pub fn charge(&mut self, ns: u64) {
        self.now += ns;
    }

    // ---- memory accounting helpers ----------------------------------------------------

    /// Counts an event globally and in a memcg.
    #[inline]
    pub fn count(&mut self, c: Counter, memcg: u16, n: u64) {
        self.vmstat.add(c, n);
        if memcg != 0 {
            self.memcgs[memcg as usize].events.add(c, n);
        }
    }

    /// Free pages of the zone.
    #[inline]
    pub fn nr_free(&self) -> u64 {
        self.frames.nr_free()
    }

    /// Frees a frame that is off every list and unmapped; uncharges its memcg.
    pub fn free_frame(&mut self, f: u32) {
        let m = self.frames.memcg[f as usize];
        self.memcgs[m as usize].usage -= 1;
        self.frames.free(f);
        self.pages_scanned = 0;
        self.vmstat.add(Counter::PgFree, 1);
    }

    /// Total of one LRU list over all memcgs (the node's view).
    pub fn node_lru(&self, l: mm::LruList) -> u64 {
        self.memcgs.iter().map(|m| m.lru.size(l)).sum()
    }

    /// Adds a frame to its memcg's LRU (`folio_add_lru`).
    pub fn lru_add(&mut self, f: u32, active: bool) {
        let m = self.frames.memcg[f as usize] as usize;
        let l = mm::LruList::of(false, active);
        if active {
            self.frames.set(f, pg::ACTIVE);
        }
        let Sim { memcgs, frames, .. } = self;
        memcgs[m].lru.add_head(frames, f, l);
        // 3.x reclaim_stat: every add counts as scanned, an active add as rotated.
        let st = &mut memcgs[m].stat;
        st.recent_scanned[0] += 1;
        if active {
            st.recent_rotated[0] += 1;
        }
    }

    /// Adds a page-cache page to its memcg's file LRU (`folio_add_lru`).
    pub fn lru_add_file(&mut self, f: u32, active: bool) {
        let m = self.frames.memcg[f as usize] as usize;
        if active {
            self.frames.set(f, pg::ACTIVE);
        }
        let Sim { memcgs, frames, .. } = self;
        memcgs[m].lru.add_head(frames, f, mm::LruList::of(true, active));
        let st = &mut memcgs[m].stat;
        st.recent_scanned[1] += 1;
        if active {
            st.recent_rotated[1] += 1;
        }
    }

    // ---- I/O ------------------------------------------------------------------------

    /// Queues a page I/O on device `dev` at byte `offset` (inside the current plug).
    pub fn submit_page_io(&mut self, dev: u32, offset: u64, frame: u32, dir: IoDir) {
        let tag = match self.free_ios.pop() {
            Some(t) => {
                self.ios[t as usize] = PageIo { frame, dir };
                t
            }
            None => {
                self.ios.push(PageIo { frame, dir });
                (self.ios.len() - 1) as u32
            }
        };
        let mut out = std::mem::take(&mut self.scratch_dispatch);
        let q = &mut self.devices[dev as usize];
        q.set_ctx(self.io_ctx);
        q.add(dir, offset, 4096, tag, self.now, &mut out);
        self.device_ran(dev, &mut out);
        self.scratch_dispatch = out;
    }

    /// Releases the plug of device `dev` (`blk_finish_plug`).
    pub fn unplug(&mut self, dev: u32) {
        let mut out = std::mem::take(&mut self.scratch_dispatch);
        self.devices[dev as usize].unplug(self.now, &mut out);
        self.device_ran(dev, &mut out);
        self.scratch_dispatch = out;
    }

    /// After device `dev` ran its queue: completion events for what it dispatched, an
    /// event for its scheduler timer, a woken `congestion_wait` if its write congestion
    /// cleared, and the first thread waiting for one of its requests if there is room.
    fn device_ran(&mut self, dev: u32, out: &mut Vec<Dispatched>) {
        for d in out.drain(..) {
            self.events.push(d.done_ns, Event::IoDone { dev, rid: d.rid });
        }
        let q = &mut self.devices[dev as usize];
        let t = q.timer_at();
        if let Some(at) = t.filter(|&at| Some(at) != self.dev_timer[dev as usize]) {
            self.events.push(at, Event::DevTimer { dev });
        }
        self.dev_timer[dev as usize] = t;
        // A write request freed below the congestion-off threshold: clear_bdi_congested
        // wakes the congestion_wait queue and kswapd's nap ends.
        if q.take_congestion_wakeup() && self.kswapd.napping {
            self.kswapd.napping = false;
            self.vmstat.add(Counter::KswapdCongestionWaitWoken, 1);
            let k = self.kswapd_thread();
            self.wake(k, self.now);
        }
        if !self.devices[dev as usize].write_full() {
            if let Some(i) = self.req_waiters.iter().position(|&(_, d)| d == dev) {
                let (th, _) = self.req_waiters.remove(i);
                if th == self.kswapd_thread() {
                    self.kswapd.throttled = false;
                } else {
                    self.tasks[th as usize].state = TaskState::Runnable;
                }
                self.wake(th, self.now);
            }
        }
    }

    /// A device timer event: stale if the timer was cancelled or moved later since. (The
    /// clock may already be past the timer when a thread's burst overran the event.)
    fn dev_timer_fired(&mut self, dev: u32) {
        if self.dev_timer[dev as usize].is_none_or(|t| t > self.now) {
            return;
        }
        self.dev_timer[dev as usize] = None;
        let mut out = std::mem::take(&mut self.scratch_dispatch);
        self.devices[dev as usize].timer(self.now, &mut out);
        self.device_ran(dev, &mut out);
        self.scratch_dispatch = out;
    }

    /// The first device whose write requests are all allocated, if any.
    pub fn write_full_device(&self) -> Option<u32> {
        self.devices.iter().position(|q| q.write_full()).map(|d| d as u32)
    }

    /// Blocks thread `th` in `get_request_wait` until device `dev` frees a write request.
    pub fn wait_for_request(&mut self, th: u32, dev: u32) {
        if th == self.kswapd_thread() {
            self.kswapd.throttled = true;
        } else {
            self.tasks[th as usize].state = TaskState::WaitRequest;
        }
        self.block(th);
        self.req_waiters.push((th, dev));
    }

    /// Unplugs every device.
    pub fn unplug_all(&mut self) {
        for d in 0..self.devices.len() as u32 {
            self.unplug(d);
        }
    }

    fn io_done(&mut self, dev: u32, rid: u32) {
        let mut tags = std::mem::take(&mut self.scratch_tags);
        let mut out = std::mem::take(&mut self.scratch_dispatch);
        self.devices[dev as usize].complete(self.now, rid, &mut tags, &mut out);
        self.device_ran(dev, &mut out);
        self.scratch_dispatch = out;
        for &tag in &tags {
            let io = self.ios[tag as usize];
            self.free_ios.push(tag);
            match io.dir {
                IoDir::Read => self.read_done(io.frame),
                IoDir::Write => self.write_done(io.frame),
            }
        }
        tags.clear();
        self.scratch_tags = tags;
    }

    /// A swap read completed: the page is uptodate and unlocked; waiters wake.
    fn read_done(&mut self, f: u32) {
        self.frames.clear(f, pg::LOCKED);
        for tid in 0..self.tasks.len() {
            let t = &mut self.tasks[tid];
            if t.state == TaskState::WaitPage && t.wait_frame == f {
                t.state = TaskState::Runnable;
                t.wait_frame = NIL;
                self.wake(tid as u32, self.now);
            }
        }
    }

    /// A swap write completed (`folio_end_writeback`): a reclaimer waiting for it (cgroup v1
    /// limit reclaim, `folio_wait_writeback`) wakes; otherwise, with PG_reclaim, the page is
    /// rotated to the inactive tail for immediate reclaim (`folio_rotate_reclaimable`).
    fn write_done(&mut self, f: u32) {
        self.frames.clear(f, pg::WRITEBACK);
        self.nr_writeback -= 1;
        self.nr_written += 1;
        let mut waited = false;
        for tid in 0..self.tasks.len() {
            let t = &mut self.tasks[tid];
            if t.state == TaskState::WaitPage && t.wait_frame == f {
                t.state = TaskState::Runnable;
                t.wait_frame = NIL;
                waited = true;
                self.wake(tid as u32, self.now);
            }
        }
        if waited {
            // The waiter retries the page itself (it is not on the LRU in the kernel).
            self.frames.clear(f, pg::RECLAIM);
        } else if self.frames.test_clear(f, pg::RECLAIM) {
            let l = self.frames.lru[f as usize];
            let dirty = self.frames.test(f, pg::DIRTY);
            if l < mm::lru::NR_LRU_LISTS as u8 && l != mm::LruList::Unevictable as u8 && !dirty {
                let m = self.frames.memcg[f as usize] as usize;
                let Sim { memcgs, frames, .. } = self;
                memcgs[m].lru.del(frames, f);
                frames.clear(f, pg::ACTIVE);
                memcgs[m].lru.add_tail(frames, f, mm::LruList::InactiveAnon);
                self.count(Counter::PgRotated, m as u16, 1);
            }
        }
        if self.nr_written >= self.throttle_target {
            self.release_throttled();
        }
    }

    /// Blocks the running thread in `reclaim_throttle` until `SWAP_CLUSTER_MAX` more
    /// pages are written back or `timeout_ns` passes.
    pub fn throttle(&mut self, th: u32, timeout_ns: u64) {
        self.throttle_target = self.throttle_target.min(self.nr_written + 32);
        if th == self.kswapd_thread() {
            self.kswapd.throttled = true;
        } else {
            self.tasks[th as usize].state = TaskState::Throttled;
        }
        self.block(th);
        let at = self.now + timeout_ns;
        self.wake(th, at);
    }

    fn release_throttled(&mut self) {
        self.throttle_target = u64::MAX;
        for tid in 0..self.tasks.len() {
            if self.tasks[tid].state == TaskState::Throttled {
                self.tasks[tid].state = TaskState::Runnable;
                self.wake(tid as u32, self.now);
            }
        }
        if self.kswapd.throttled {
            self.kswapd.throttled = false;
            let k = self.kswapd_thread();
            self.wake(k, self.now);
        }
    }

    /// Whether pages are in flight that reclaim could wait for.
    pub fn writeback_in_flight(&self) -> bool {
        self.nr_writeback > 0
    }
}

/// Runs a validated scenario.
pub fn run(sc: &Scenario, mut opts: RunOptions<'_>) -> Result<Report, Error> {
    let seed = opts.seed.unwrap_or(sc.file.seed);
    let mut sim = Sim::new(sc, seed)?;
    sim.run(&mut opts.progress);
    if let Some(p) = opts.progress.as_mut() {
        p(&Progress { sim_ns: sim.now, ops_done: sim.ops_done, ops_total: Some(sim.ops_total) });
    }
    Ok(Report::from_sim(sc, seed, &sim))
}
