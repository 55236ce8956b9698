//! The simulated kernel: the machine's state, its clock and threads, and the kernel paths
//! that cross subsystems.
//!
//! Time is an integer number of nanoseconds. Threads are the tasks of the scenario,
//! kswapd and zswap's shrink worker. A runnable thread takes the CPU that frees up first
//! and runs until it blocks, until the next event is due, or for one time slice; hits
//! (present, permitted PTEs) are processed in a tight loop without events. A fault, a
//! reclaim pass or an I/O submission charges CPU time from the scenario's `[cpu]` costs.
//! Blocked threads wait for an I/O completion (page read, writeback progress) or a timeout.
//!
//! The machine's state is [`Sim`], one state struct per subsystem, each owned by its folder
//! (mm/, swap/, pagecache/, device/, reclaim/) with the operations that touch only it and
//! the policies that decide for it. The kernel's paths are mutually recursive across those
//! subsystems (a fault allocates, an allocation reclaims, reclaim writes to swap, a swap-in
//! allocates), as they are in the kernel, which keeps them all in its mm/ folder. Here they
//! are `impl Sim` methods in this folder, one file per kernel source file, named after it
//! and naming the kernel functions it models; the subsystem folders import nothing from
//! here, so the folders form a one-way graph (tests/layering.rs checks it). One access,
//! file by file:
//!
//! ```text
//!  sched.rs         the task's burst: hit loop; a miss is a fault ──────────────────┐
//!  memory.rs        handle_mm_fault: anon, wp, swap (shmem.rs, filemap.rs)          │
//!  page_alloc.rs    a frame; short: wakeup_kswapd (kswapd/), or a reclaim job of    │
//!                   the task (vmscan.rs do_try_to_free_pages)                       │
//!  swap_state.rs    swapin_readahead: the window from swap/readahead/, one          │
//!                   read_swap_cache_async per page                                  │
//!  page_io.rs       zeromap, zswap, synchronous devices: done in place; else        │
//!  block.rs         submit_bio into a device queue (device/); the task sleeps on    │
//!                   the page (sched.rs sleep_on_page)                               │
//!  event.rs         the completion event; block.rs folio_end_read wakes the         │
//!                   sleepers (sched.rs wake_page_waiters), which retry the fault ───┘
//! ```
//!
//! The other paths: rmap.rs (`folio_referenced`, `try_to_unmap`), huge_memory.rs
//! (splitting an anon large folio), vmscan.rs (LRU scanning,
//! `shrink_folio_list`, throttling), workingset.rs (shadow entries, refaults), swap.rs
//! (mm/swap.c `folio_add_lru`), oom_kill.rs, mmap.rs (mapping, munmap, brk, `exit_mmap`),
//! fork.rs (fork, exec, the job server, exit), zswap.rs (store, load,
//! the shrink worker).
//!
//! Here: the machine built from a scenario and the event loop. event.rs: the event queue;
//! sched.rs: threads, the hit loop and the page wait queues; block.rs: page I/O to and from
//! the device queues; verify.rs: the invariant checker.

mod block;
pub mod event;
pub mod ext4;
pub mod filemap;
pub mod fork;
pub mod fs_writeback;
pub mod huge_memory;
pub mod kswapd;
pub mod memcontrol;
pub mod memory;
pub mod mmap;
pub mod oom_kill;
pub mod page_alloc;
pub mod page_io;
pub mod page_writeback;
pub mod replay;
pub mod rmap;
mod sched;
pub mod shmem;
pub mod swap;
pub mod swap_state;
pub mod swapfile;
pub mod truncate;
mod verify;
pub mod vmscan;
mod watchdog;

#[cfg(test)]
mod proptests;

pub use watchdog::RunEnd;
pub mod workingset;
pub mod zswap;

use crate::device::DeviceQueue;
use crate::device::Io;
use crate::histogram::Histogram;
use crate::ids::Pfn;
use crate::ids::{FileId, Tid, VmaId};
use crate::mm::shmem::ShmemObj;
use crate::mm::vmstat::Counters;
use crate::mm::Mm;
use crate::mm::{Frames, Memcg, Watermarks};
use crate::pagecache::readahead::FileRaState;
use crate::pagecache::FileRead;
use crate::pagecache::PageCache;
use crate::pagecache::{AddressSpace, RA_WINDOW_BUCKETS};
use crate::reclaim::ScanControl;
use crate::reclaim::{Kswapd, Reclaim};
use crate::rng::Rng;
use crate::scenario::config::Target;
use crate::scenario::{AccessOp, CpuCosts, Profile, RegionKind, Scenario};
use crate::swap::{Swap, SwapArea};
use crate::workload::{BoundStep, Cursor};
use crate::writeback::Writeback;
use event::{Event, EventQueue};
use sched::{PageWaiters, Sched, NO_CPU};
pub use sched::{TimelineGauges, TimelinePoint};

/// Where a task is: what it waits for, if it waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// A process slot no process has taken yet (spawn and fork steps take them in turn).
    Unborn,
    NotStarted,
    Runnable,
    /// Waiting for the I/O of this frame to end (`folio_wait_locked`,
    /// `folio_wait_writeback`); it is in `Sched::page_waiters`.
    WaitPage(Pfn),
    /// Throttled in reclaim: waiting for writeback progress or a timeout; it is in
    /// `Sched::throttled`.
    Throttled,
    /// Waiting for a free request on a full device queue (`get_request_wait`); it is in
    /// `Io::req_waiters`.
    WaitRequest,
    /// In wait(2) or a job server's wait for a free job slot: until a child exits.
    WaitChild,
    /// Asleep waiting for a sleeping lock (a mutex, an rw_semaphore): until its holder
    /// hands it over (`Sim::mutex_unlock`).
    WaitLock(crate::locking::SleepLockId),
    /// A replayed thread whose futex wait returned: until the trace's other threads have
    /// replayed what the trace has before its next event (`Demux::waiting`).
    WaitThreads,
    /// In pause(2) until the run ends: its program has ended, its memory is kept.
    Paused,
    Done,
}

/// The access a task retries until it completes: a page fault in progress (the kernel's
/// `struct vm_fault` and what the fault path learnt on earlier tries). Made new for each
/// faulting access, so nothing of one fault's state leaks into the next.
#[derive(Clone, Copy, Debug)]
pub struct PendingFault {
    pub vma: VmaId,
    pub idx: u32,
    pub write: bool,
    /// pgfault was already counted.
    pub counted: bool,
    /// pgmajfault was already counted: like pgfault, once per faulting access, also when
    /// the page is evicted while the task waits and the retry reads it again.
    pub major_counted: bool,
    /// The fault already waited for a page once: its retry is a `FAULT_FLAG_TRIED` fault.
    pub tried: bool,
    /// The readahead policy was already consulted.
    pub ra_done: bool,
    /// Fault-around already ran in this attempt of a file fault. An attempt that sleeps on
    /// the page's read ends with VM_FAULT_RETRY (the mmap lock is dropped for the I/O), and
    /// the retry runs fault-around again, over the pages the read brought in.
    pub around_done: bool,
    /// A swap fault already reclaimed room for its readahead window in the task's memcg
    /// (`Sim::swapin_charge_room`).
    pub room_reclaimed: bool,
    /// `alloc_anon_folio` found no large folio: the fault's page is order 0, also when its
    /// allocation reclaims first (the kernel reclaims inside that order-0 charge and does
    /// not try the large orders again).
    pub anon_order0: bool,
    /// When the fault began (for the latency histogram).
    pub start_ns: u64,
    /// Time the fault waited for devices: asleep on a page's I/O, and the transfers of
    /// synchronous devices (pmem, zram) done in it. The rest of its latency is the
    /// kernel's.
    pub device_ns: u64,
    /// When it last went to sleep on a page's I/O (0: it is not asleep on one).
    pub slept_at: u64,
}

impl PendingFault {
    pub fn new(vma: VmaId, idx: u32, write: bool, now: u64) -> Self {
        PendingFault {
            vma,
            idx,
            write,
            counted: false,
            major_counted: false,
            tried: false,
            ra_done: false,
            around_done: false,
            room_reclaimed: false,
            anon_order0: false,
            start_ns: now,
            device_ns: 0,
            slept_at: 0,
        }
    }
}

/// What a task's step accesses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepTarget {
    /// A mapping: the VMA of the step's region in this task.
    Vma(VmaId),
    /// A mapping of region `.0` that the process does not have now (unmapped): its next
    /// access maps it again.
    Unmapped(u32),
    /// A lifecycle call (spawn, fork, wait, exec, mmap, munmap, brk): the program's step.
    Control,
    /// A file read with read(2)/pread(2), through the open file's readahead state (an
    /// index into `PageCache::ra_states`; one per open file, shared by the instances of a
    /// `shared_fd` step).
    File { file: FileId, ra: u32 },
}

#[derive(Debug)]
pub struct Task {
    pub name: String,
    pub memcg: u16,
    pub steps: Vec<BoundStep>,
    /// Per step, what it accesses.
    pub targets: Vec<StepTarget>,
    pub cur: Cursor,
    pub rng: Rng,
    pub state: TaskState,
    pub start_ns: u64,
    pub end_ns: u64,
    pub cpu_ns: u64,
    pub faults: u64,
    pub major_faults: u64,
    pub oom_killed: bool,
    /// The faulting access being retried after a block.
    pub pending: Option<PendingFault>,
    /// Direct or memcg reclaim in progress.
    pub reclaim: Option<ScanControl>,
    /// Consecutive reclaim rounds without progress (`no_progress_loops`).
    pub no_progress: u32,
    /// The read(2) in progress, if any.
    pub read: Option<FileRead>,
    /// A readahead window stopped by its charge's `reclaim_throttle`, to go on next.
    pub ra_resume: Option<crate::pagecache::RaResume>,
    /// The write(2) in progress, if any.
    pub write: Option<crate::pagecache::FileWrite>,
    /// The whole-file call in progress (fsync, sync_file_range, truncate), if any.
    pub sync: Option<crate::pagecache::FileSync>,
    /// Dirty throttling in progress (`balance_dirty_pages`), resumed before anything else.
    pub bdp: Option<crate::writeback::throttle::Bdp>,
    /// Pages this task dirtied since it last called `balance_dirty_pages`
    /// (`current->nr_dirtied`), and the count at which it calls it (`nr_dirtied_pause`).
    pub nr_dirtied: u64,
    pub nr_dirtied_pause: u64,
    /// When its last pause in `balance_dirty_pages` was to end (`dirty_paused_when`; 0:
    /// none yet), ns.
    pub dirty_paused_when: u64,
    /// Time it slept in `balance_dirty_pages`, ns.
    pub throttled_ns: u64,
    /// Per step: when it ended (0 while not ended).
    pub step_end_ns: Vec<u64>,
    /// The CPUs it may run on (`task[].cpus`), sorted; `None`: any.
    pub cpus: Option<Box<[u32]>>,
    /// The program it runs (`Config::task` index).
    pub prog: u32,
    /// Its address space: the VMA of each region it maps, by region index (empty for a
    /// thread: its process's is its leader's).
    pub mm: Vec<(u32, VmaId)>,
    /// For a thread of another task's process (a replayed clone with CLONE_THREAD): that
    /// process's first task, whose address space it shares (`current->group_leader`).
    pub leader: Option<Tid>,
    /// For a process's first task: its other threads that have not exited. Its address
    /// space goes, and its parent learns of its end, when the last of them exits.
    pub threads: u32,
    /// The process that started it (spawn, fork); `None` for those the run starts with.
    pub parent: Option<Tid>,
    /// Its children that have not exited.
    pub children: u32,
    /// A spawn step in progress: children it has started.
    pub spawned: u32,
    /// Pages it charged while its memcg or an ancestor was above memory.high
    /// (`memcg_nr_pages_over_high`), the count its `mem_cgroup_handle_over_high` in
    /// progress started with, and the tries without progress that handler has left.
    pub nr_pages_over_high: u32,
    pub high_nr_pages: u32,
    pub high_retries: u32,
    /// Time it slept in memory.high's penalty, ns.
    pub high_delay_ns: u64,
    /// The trace process it replays, if its program is a trace (engine/replay.rs).
    pub trace: Option<Box<crate::engine::replay::Replaying>>,
}

impl Task {
    /// A process named `name` in memcg `memcg`, starting at `start_ns`; its program is
    /// bound by `Sim::start_program`.
    pub fn new(name: String, memcg: u16, start_ns: u64, rng: Rng, parent: Option<Tid>) -> Task {
        Task {
            name,
            memcg,
            steps: Vec::new(),
            targets: Vec::new(),
            cur: Cursor { step_start_ns: start_ns, ..Cursor::default() },
            rng,
            state: TaskState::NotStarted,
            start_ns,
            end_ns: 0,
            cpu_ns: 0,
            faults: 0,
            major_faults: 0,
            oom_killed: false,
            pending: None,
            reclaim: None,
            no_progress: 0,
            read: None,
            ra_resume: None,
            write: None,
            sync: None,
            bdp: None,
            nr_dirtied: 0,
            nr_dirtied_pause: crate::writeback::throttle::NR_DIRTIED_PAUSE_INIT,
            dirty_paused_when: 0,
            throttled_ns: 0,
            step_end_ns: Vec::new(),
            cpus: None,
            prog: 0,
            mm: Vec::new(),
            leader: None,
            threads: 0,
            parent,
            children: 0,
            spawned: 0,
            nr_pages_over_high: 0,
            high_nr_pages: 0,
            high_retries: 0,
            high_delay_ns: 0,
            trace: None,
        }
    }

    /// A slot no process has taken.
    fn unborn() -> Task {
        Task { state: TaskState::Unborn, ..Task::new(String::new(), 0, 0, Rng::new(0), None) }
    }

    /// The VMA of region `r` in its address space.
    #[inline]
    pub fn vma_of(&self, r: u32) -> Option<VmaId> {
        self.mm.iter().find(|&&(x, _)| x == r).map(|&(_, v)| v)
    }
}

/// Resolved tunables of a run.
#[derive(Debug, Clone)]
pub struct Tunables {
    pub swappiness: u32,
    pub page_cluster: u32,
    pub vma_ra_enabled: bool,
    /// The memory controller is on the cgroup v1 hierarchy (`kernel.cgroup_version = 1`).
    pub memcg_v1: bool,
    /// The files' page cache takes large folios (`kernel.large_folios`).
    pub large_folios: bool,
    /// Anon mTHP orders turned on (bit n: order n; `kernel.anon_mthp`).
    pub anon_orders: u16,
    pub wmark: Watermarks,
    pub managed_pages: u64,
}

/// The whole simulated machine and kernel: one state struct per subsystem, and the
/// configuration they share. A path that crosses subsystems (a fault that allocates,
/// reclaims and submits I/O) is an `impl Sim` method in the file of the kernel function it
/// models; each subsystem's own operations are methods of its state.
pub struct Sim {
    /// The kernel profile and the scenario's CPU costs and tunables (read-only in a run).
    pub(crate) profile: &'static Profile,
    pub(crate) cost: CpuCosts,
    pub(crate) tun: Tunables,
    /// The clock, the event queue, the CPUs and the threads (engine/sched.rs).
    pub(crate) sched: Sched,
    /// Frames, memcgs and their LRU lists, VMAs and shmem objects, counters (mm/).
    pub(crate) mm: Mm,
    /// Swap areas, swap cache, swap-in readahead policy, zswap, page content (swap/).
    pub(crate) swap: Swap,
    /// Files' page caches, the file readahead policy and open files' states (pagecache/).
    pub(crate) pc: PageCache,
    /// Device queues and the page I/O in flight (device/).
    pub(crate) io: Io,
    /// kswapd, the scan-balance policy and reclaim throttling (reclaim/).
    pub(crate) reclaim: Reclaim,
    /// Dirty limits, the flushers' inode queues and work (writeback/).
    pub(crate) wb: Writeback,
    /// The programs processes run, and what starting one needs (workload/).
    pub(crate) procs: crate::workload::Programs,
    /// The tracepoint event log, when the run records one.
    pub(crate) trace: Option<crate::trace::TraceLog>,
    /// Per program, the trace it replays being read (engine/replay.rs).
    pub(crate) replays: Vec<Option<crate::replay::Demux>>,
    /// Why a replay could not go on, to end the run with.
    pub(crate) replay_error: Option<String>,
}

impl Sim {
    /// Thread id of kswapd (tasks are 0..n).
    #[inline]
    pub fn kswapd_thread(&self) -> Tid {
        Tid(self.sched.tasks.len() as u32)
    }

    /// Thread id of zswap's shrink worker (`zswap_shrink_work`).
    #[inline]
    pub fn zswap_worker_thread(&self) -> Tid {
        Tid(self.sched.tasks.len() as u32 + 1)
    }

    /// Thread id of wb `wb`'s flusher (the kernel's writeback worker for it).
    #[inline]
    pub fn flusher_thread(&self, wb: crate::ids::WbId) -> Tid {
        Tid(self.sched.tasks.len() as u32 + 2 + wb.0)
    }

    /// The wb whose flusher thread `th` is, if it is one.
    #[inline]
    pub fn flusher_of(&self, th: Tid) -> Option<crate::ids::WbId> {
        let first = self.sched.tasks.len() as u32 + 2;
        (th.0 >= first).then(|| crate::ids::WbId(th.0 - first))
    }

    /// Builds the machine from a resolved scenario ([`Scenario::config`]). It cannot fail:
    /// the resolution made every check (sizes, names, watermarks, where swap areas and
    /// files go), and `pagesim check` runs the same resolution.
    pub fn new(sc: &Scenario, seed: u64) -> Sim {
        let c = &sc.config;
        let profile = c.kernel.profile;
        let managed = c.machine.managed_pages;
        let tun = Tunables {
            swappiness: c.vm.swappiness,
            page_cluster: c.vm.page_cluster,
            vma_ra_enabled: c.kernel.vma_ra_enabled,
            memcg_v1: c.kernel.cgroup_version == 1,
            large_folios: c.kernel.large_folios,
            anon_orders: c.kernel.anon_mthp_orders(),
            wmark: c.vm.watermarks,
            managed_pages: managed,
        };
        let ncpus = c.machine.cpus;
        let nframes = managed as u32;

        // Devices, in name order, and the swap areas on them.
        let devices: Vec<DeviceQueue> =
            c.device.iter().map(|d| DeviceQueue::new(d.model.clone(), profile.block_plug)).collect();
        let device_names: Vec<String> = c.device.iter().map(|d| d.name.clone()).collect();
        let ndevices = devices.len();
        let mut areas: Vec<SwapArea> = c
            .swap
            .iter()
            .map(|s| {
                let rot = devices[s.dev].model().rotational();
                let clusters = !rot && profile.ssd_cluster_alloc;
                let mut a = SwapArea::new(s.dev, s.offset, s.size, s.priority, rot, clusters, ncpus);
                a.blkdev = !s.file;
                a
            })
            .collect();
        let (zswap, content) =
            crate::engine::page_io::setup(c, profile, &mut areas, &devices, managed, c.memcg.len() + 1, seed);

        let swap_ra = (c.kernel.swap_readahead.build)();
        let scan_balance = (c.kernel.scan_balance.build)();

        let mut memcgs = vec![Memcg::new("/", u64::MAX, nframes)];
        memcgs.extend(c.memcg.iter().map(|m| Memcg {
            parent: m.parent_index,
            swap_max: m.swap_max_pages,
            swappiness: m.swappiness,
            use_hierarchy: m.use_hierarchy.unwrap_or(true),
            min: crate::scenario::config::Memcg::pages(m.min, 0),
            low: crate::scenario::config::Memcg::pages(m.low, 0),
            high: crate::scenario::config::Memcg::pages(m.high, u64::MAX),
            soft_limit: crate::scenario::config::Memcg::pages(m.soft_limit, u64::MAX),
            ..Memcg::new(&m.name, m.max_pages, nframes)
        }));

        // Regions: shmem objects are shared; anon regions are instantiated per task.
        let mut shmem = Vec::new();
        let mut shmem_of: Vec<Option<u32>> = vec![None; c.region.len()];
        for (i, r) in c.region.iter().enumerate() {
            if r.kind == RegionKind::Shmem {
                let pages = r.size.div_ceil(4096) as u32;
                shmem_of[i] = Some(shmem.len() as u32);
                shmem.push(ShmemObj { slots: vec![0; pages as usize], mappers: Vec::new() });
            }
        }
        // Files: one page cache per extent, in the resolution's order (shared files, then
        // the per-task copies in task order).
        let files: Vec<AddressSpace> = c
            .extents
            .iter()
            .map(|e| AddressSpace::new(e.name.clone(), e.dev, e.offset, e.pages, e.size_pages))
            .collect();
        let mut rng = Rng::new(seed);
        // A slot for every process of the run: those it starts with, in task order, then
        // the children that spawn and fork steps will start (Tids are fixed: kswapd and the
        // flushers come after the last slot).
        let first: u32 = c.task.iter().map(|t| t.count).sum();
        let children: u64 = c
            .task
            .iter()
            .flat_map(|t| t.step.iter().map(move |st| (t, st)))
            .filter_map(|(t, st)| match (&st.target, st.op) {
                (Target::Control(ctl), AccessOp::Spawn | AccessOp::Fork) => Some(ctl.count as u64 * t.runs as u64),
                _ => None,
            })
            .sum();
        // A trace's threads and processes after its first are its children.
        let children = children + c.task.iter().filter(|t| t.trace.is_some()).map(|t| t.runs as u64 - 1).sum::<u64>();
        let nslots = first as usize + children as usize;
        let tasks: Vec<Task> = (0..nslots).map(|_| Task::unborn()).collect();
        // The accesses the run will make, for progress lines: each program's steps (a heap
        // at its brk size), times its runs.
        let ops_total: u64 = c
            .task
            .iter()
            .map(|t| match &t.trace {
                Some(tp) => tp.info.ops,
                None => t.runs as u64 * crate::workload::program_ops(c, t),
            })
            .sum();
        // The traces the run replays, opened again to be read as it goes.
        let mut replays = Vec::with_capacity(c.task.len());
        let mut replay_error = None;
        for t in &c.task {
            replays.push(match t.trace.as_ref().map(|tp| crate::replay::Demux::open(&tp.info)) {
                Some(Ok(d)) => Some(d),
                Some(Err(e)) => {
                    replay_error = Some(e.to_string());
                    None
                }
                None => None,
            });
        }
        let file_ra = (c.kernel.file_readahead.build)();
        let machine = crate::writeback::Machine {
            nfiles: files.len(),
            ndevs: ndevices,
            nmemcgs: memcgs.len(),
            ntasks: nslots,
            ncpus: ncpus as usize,
            total_pages: managed,
            cgwb: profile.writeback.cgroup_writeback && c.kernel.cgroup_version == 2,
        };
        let wb = Writeback::new(c.vm.dirty, profile.writeback, (c.kernel.writeback_order.build)(), machine);
        // The tasks, kswapd, zswap's shrink worker, one flusher per wb.
        let nthreads = nslots + 2 + wb.wbs.len();
        let mut sim = Sim {
            profile,
            cost: c.cpu.clone(),
            tun,
            sched: Sched {
                now: 0,
                latest: 0,
                io_end_ns: 0,
                events: EventQueue::default(),
                cpu_free: vec![0; ncpus as usize],
                last_cpu: vec![NO_CPU; nthreads],
                thread_free: vec![0; nthreads],
                running_on: NO_CPU,
                tokens: vec![0; nthreads],
                tasks,
                live: 0,
                paused: 0,
                // Not a default: the engine's encodings of "no limit" and "no timeline".
                time_limit: c.time_limit.unwrap_or(u64::MAX),
                ops_done: 0,
                ops_total,
                fault_hist: Histogram::default(),
                fault_kernel_hist: Histogram::default(),
                major_hist: Histogram::default(),
                major_kernel_hist: Histogram::default(),
                locks: crate::locking::Locks::new(crate::locking::Topology {
                    sockets: c.machine.sockets,
                    cores_per_socket: ncpus / (c.machine.sockets * c.machine.threads_per_core),
                    threads_per_core: c.machine.threads_per_core,
                    same_socket_ns: c.cpu.line_same_socket_ns,
                    cross_socket_ns: c.cpu.line_cross_socket_ns,
                }),
                lock_wait_ns: vec![0; nthreads],
                page_waiters: PageWaiters::default(),
                throttled: Vec::new(),
                congestion_waiters: Vec::new(),
                held_runs: Vec::new(),
                scratch_waiters: Vec::new(),
                timeline: Vec::new(),
                sample_every: c.sample_interval.unwrap_or(0),
                timeline_cap: crate::scenario::defaults::MAX_TIMELINE_POINTS,
                verify_each_event: false,
                io_done: 0,
                watchdog_ns: c.watchdog,
                watchdog_mark: Default::default(),
                run_started: None,
                end: RunEnd::Completed,
            },
            mm: Mm {
                frames: Frames::new(nframes),
                memcgs,
                vmstat: Counters::default(),
                vmas: Vec::new(),
                free_vmas: Vec::new(),
                anon_vmas: Vec::new(),
                free_anon: Vec::new(),
                subtrees: Vec::new(),
                hierarchical_stats: profile.memcg_hierarchical_stats,
                shmem,
                zs_frames: Vec::new(),
                region_names: c.region.iter().map(|r| r.name.clone()).collect(),
                nr_writeback: 0,
                nr_dirty: 0,
                pages_scanned: 0,
                pgdat_writeback: false,
                pgdat_dirty: false,
                next_stats_flush: c.kernel.memcg_stats_flush_phase_ns.unwrap_or(0),
                shadow_node_seq: 0,
                lru_locks: Vec::new(),
                lru_batch: Vec::new(),
                ra_pinned: None,
            },
            swap: Swap::new(areas, swap_ra, zswap, content),
            pc: PageCache {
                files,
                ra: file_ra,
                ra_last_page: Vec::new(),
                ra_read_copies: 0,
                ra_states: Vec::new(),
                free_ra: Vec::new(),
                ra_window_hist: [0; RA_WINDOW_BUCKETS],
            },
            io: Io {
                devices,
                names: device_names,
                ios: Vec::new(),
                free_ios: Vec::new(),
                scratch_dispatch: Vec::new(),
                scratch_tags: Vec::new(),
                dev_timer: vec![None; ndevices],
                req_waiters: Vec::new(),
                ctx: Tid(0),
                sync_plug: Vec::new(),
            },
            reclaim: Reclaim {
                kswapd: Kswapd { sleeping: true, ..Default::default() },
                kswapd_loop: crate::reclaim::kswapd::KswapdLoop::of(profile),
                scan_balance,
                isolate_buf: Vec::new(),
                cost_chain: Vec::new(),
                nr_written: 0,
                job_reclaimed: 0,
                throttle_target: u64::MAX,
                iter_pos: Default::default(),
            },
            wb,
            procs: crate::workload::Programs::new(c, shmem_of),
            trace: None,
            replays,
            replay_error,
        };
        sim.mm.subtrees = (0..sim.mm.memcgs.len() as u16).map(|m| sim.mm.subtree(m)).collect();
        sim.swap_locks_init();
        sim.lru_locks_init();
        sim.inode_locks_init();
        // Replayed traces' files that another memcg keeps cached (`program.cached`).
        for tp in c.task.iter().filter_map(|t| t.trace.as_ref()) {
            for (f, ranges) in &tp.cached {
                sim.add_cached_at_start(FileId(tp.extents[*f as usize]), ranges);
            }
        }
        // The processes the run starts with, in task order.
        let mut tid = Tid(0);
        for (p, t) in c.task.iter().enumerate() {
            for k in 0..t.count {
                let name = if t.count > 1 { format!("{}.{k}", t.name) } else { t.name.clone() };
                let start = t.start + k as u64 * t.stagger;
                sim.sched.tasks[tid] = Task::new(name, t.memcg_index, start, rng.split(), None);
                sim.sched.tasks[tid].cpus = t.cpus.as_deref().map(Box::from);
                sim.sched.live += 1;
                sim.start_program(tid, p as u32);
                if let Some(tp) = &t.trace {
                    sim.sched.tasks[tid].trace = Some(crate::engine::replay::Replaying::new(p as u32, 0, tp));
                    if let Some(d) = sim.replays[p].as_mut() {
                        d.tids[0] = Some(tid);
                    }
                }
                sim.sched.tasks[tid].cur.step_start_ns = start;
                tid.0 += 1;
            }
        }
        sim.procs.next_slot = tid.0;
        // One working copy of a readahead state per process slot, for kernels whose read(2)
        // works on a copy (`Profile::ra_read_copy`); overwritten at the start of each read.
        sim.pc.ra_read_copies = sim.pc.ra_states.len() as u32;
        if profile.ra_read_copy {
            for _ in 0..nslots {
                sim.pc.ra_states.push(FileRaState::new(0, 0));
                sim.pc.ra_last_page.push(u64::MAX);
            }
        }
        if sim.sched.sample_every > 0 {
            sim.sched.timeline.push(TimelinePoint::of(&sim, 0));
        }
        for tid in (0..tid.0).map(Tid) {
            let at = sim.sched.tasks[tid].start_ns;
            sim.wake(tid, at);
        }
        sim
    }

    /// Runs event `ev`, due at `t` and taken with its sequence number `seq`
    /// ([`EventQueue::pop_entry`]): a thread's wakeup (unless a later one replaced it), a
    /// device completion or a device timer. It runs at its own time, on the CPU it concerns,
    /// whose clock may be behind the latest time another CPU's burst reached.
    pub(crate) fn dispatch(&mut self, (t, seq, ev): (u64, u64, Event)) {
        self.sched.now = t;
        // No code runs before `t` any more: lock holds that ended before it cannot delay
        // anyone.
        self.sched.locks.forget_before(t);
        match ev {
            Event::Run { thread, token } => {
                if token == self.sched.tokens[thread.idx()] {
                    self.run_thread(thread, seq, token);
                }
            }
            Event::IoDone { dev, rid } => self.io_interrupt(dev, rid),
            Event::DevTimer { dev } => self.dev_timer_fired(dev),
        }
        self.sched.latest = self.sched.latest.max(self.sched.now);
    }

    /// Runs until every task has finished, the time limit, or the watchdog; returns (and
    /// keeps, for the report) how it ended. `progress` is called about once a second of
    /// wall time.
    pub fn run(&mut self, progress: &mut Option<crate::ProgressFn<'_>>) -> RunEnd {
        let started = std::time::Instant::now();
        self.sched.run_started = Some(started);
        let mut last_progress = started;
        let mut events = 0u32;
        let mut verify_countdown = 1u64;
        let end = loop {
            let Some(entry) = self.sched.events.pop_entry() else {
                break if self.sched.live == self.sched.paused { RunEnd::Completed } else { self.deadlock() };
            };
            let t = entry.0;
            if t > self.sched.time_limit {
                self.sched.now = self.sched.time_limit;
                break RunEnd::TimeLimit;
            }
            while self.sched.sample_every > 0 {
                let next = self.sched.timeline.last().map_or(0, |p| p.t_ns) + self.sched.sample_every;
                if t < next {
                    break;
                }
                let point = TimelinePoint::of(self, next);
                self.sched.timeline.push(point);
                if self.sched.timeline.len() > self.sched.timeline_cap {
                    // Halve the resolution: points are cumulative, so keeping those at
                    // multiples of the doubled interval loses nothing but detail.
                    let every = 2 * self.sched.sample_every;
                    self.sched.timeline.retain(|p| p.t_ns % every == 0);
                    self.sched.sample_every = every;
                }
            }
            // The periodic memcg stats flush takes the values of its time.
            self.mm.mem_cgroup_flush_stats(t, self.profile.memcg_stats_flush_ns);
            self.dispatch(entry);
            if let Some(e) = self.replay_error.take() {
                break RunEnd::TraceError(e);
            }
            if self.sched.live == self.sched.paused {
                break RunEnd::Completed;
            }
            // A burst that began before the limit runs to its end (a direct reclaim pass can
            // take tens of milliseconds of CPU); the run stops there, at the time it reached,
            // and no later event runs. The watchdog does not judge time past the limit.
            if self.sched.now >= self.sched.time_limit {
                break RunEnd::TimeLimit;
            }
            if let Some(span) = self.sched.watchdog_ns {
                if let Some(end) = self.watchdog(span) {
                    break end;
                }
            }
            events = events.wrapping_add(1);
            if events.is_multiple_of(4096) {
                if let Some(p) = progress.as_mut() {
                    if last_progress.elapsed().as_millis() >= 1000 {
                        last_progress = std::time::Instant::now();
                        p(&self.progress());
                    }
                }
            }
            if cfg!(debug_assertions) {
                verify_countdown -= 1;
                if verify_countdown == 0 {
                    verify_countdown = if self.sched.verify_each_event { 1 } else { self.verify_stride() };
                    if let Err(e) = self.verify() {
                        panic!("invariant broken at t={}ns: {e}", self.sched.now);
                    }
                }
            }
        };
        // The run ends at the latest time any CPU reached; reports read it as `now`.
        self.sched.now = self.sched.now.max(self.sched.latest);
        if end == RunEnd::Completed {
            self.complete_io_in_flight();
        }
        self.sched.locks.settle();
        self.sched.end = end.clone();
        end
    }

    /// After the last task ended: the devices complete the requests already submitted or
    /// queued (their completions counted: `nr_written`, the end of writeback), as they do
    /// on the host in the milliseconds between a program's exit and the harness reading
    /// the counters (docs/model.md, "The end of a run"); no thread runs any more (a wakeup
    /// is dropped) and the run's time stays the last task's end.
    fn complete_io_in_flight(&mut self) {
        let (now, latest) = (self.sched.now, self.sched.latest);
        self.sched.io_end_ns = now;
        while let Some(entry) = self.sched.events.pop_entry() {
            if !matches!(entry.2, Event::Run { .. }) {
                self.dispatch(entry);
                self.sched.io_end_ns = self.sched.io_end_ns.max(self.sched.now);
            }
        }
        self.sched.now = now;
        self.sched.latest = latest;
    }

    /// Starts recording the tracepoint events (before [`Sim::run`]).
    pub fn enable_trace(&mut self) {
        let mut threads: Vec<String> = self.sched.tasks.iter().map(|t| t.name.clone()).collect();
        threads.push("kswapd0".into());
        threads.push("zswap-shrink".into());
        threads.extend(self.io.names.iter().map(|d| format!("flush-{d}")));
        self.trace = Some(crate::trace::TraceLog { threads, events: Vec::new() });
    }

    /// The recorded events, if the run recorded them.
    pub fn take_trace(&mut self) -> Option<crate::trace::TraceLog> {
        self.trace.take()
    }

    /// Records event `kind` of thread `tid` now (when tracing).
    #[inline]
    pub(crate) fn trace_as(&mut self, tid: Tid, kind: crate::trace::Kind) {
        if let Some(log) = self.trace.as_mut() {
            let cpu = self.sched.last_cpu[tid.idx()];
            let cpu = if cpu == NO_CPU { 0 } else { cpu };
            log.events.push(crate::trace::Event { t_ns: self.sched.now, tid: tid.0, cpu, kind });
        }
    }

    /// Records event `kind` of the thread running now (when tracing).
    #[inline]
    pub(crate) fn trace(&mut self, kind: crate::trace::Kind) {
        if self.trace.is_some() {
            self.trace_as(self.io.ctx, kind);
        }
    }

    /// Where the run is, for a progress line (wall time from the start of [`Sim::run`]).
    pub fn progress(&self) -> crate::Progress {
        crate::Progress {
            sim_ns: self.sched.latest.max(self.sched.now),
            ops_done: self.sched.ops_done,
            ops_total: Some(self.sched.ops_total),
            wall_s: self.sched.run_started.map_or(0.0, |t| t.elapsed().as_secs_f64()),
        }
    }
}

crate::ids::index_by!(Task, crate::ids::Tid);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::workload::{task_programs, BoundStep};

    /// Every access index of every step, in the order a process makes them.
    fn stream(steps: &[BoundStep], mut rng: Rng) -> Vec<u32> {
        steps.iter().flat_map(|s| (0..s.total).map(|i| s.index(i, &mut rng)).collect::<Vec<_>>()).collect()
    }

    #[test]
    fn task_programs_replay_the_engines_streams() {
        let text = r#"
            seed = 42
            [machine]
            ram = "64MB"
            [region.a]
            kind = "anon"
            size = "40KB"
            [region.s]
            kind = "shmem"
            size = "100KB"
            [[task]]
            name = "w"
            count = 3
            start = "1ms"
            [[task.step]]
            region = "s"
            pattern = "random"
            accesses = 50
            [[task.step]]
            region = "a"
            pattern = "zipf"
            passes = 3
            op = "read"
            [[task.step]]
            region = "s"
            pattern = "stride"
            stride = 3
            [[task]]
            name = "solo"
            [[task.step]]
            region = "a"
            pattern = "seq"
            [[task.step]]
            region = "a"
            pattern = "random"
            think = "2us"
        "#;
        let sc = Scenario::from_toml(text, "t.toml", &[]).unwrap();
        let sim = Sim::new(&sc, 42);
        let progs = task_programs(&sc, 42);
        assert_eq!(progs.len(), sim.sched.tasks.len());
        for (p, t) in progs.iter().zip(&sim.sched.tasks) {
            assert_eq!(p.name, t.name);
            assert_eq!(t.start_ns, sc.file.task[p.task].start);
            assert_eq!(p.steps.len(), t.steps.len());
            for (j, (a, b)) in p.steps.iter().zip(&t.steps).enumerate() {
                assert_eq!((a.pages, a.total, a.write, a.think_ns), (b.pages, b.total, b.write, b.think_ns));
                let region = &sc.file.task[p.task].step[j].region;
                assert_eq!(&p.regions[p.targets[j] as usize], region);
                let StepTarget::Vma(v) = t.targets[j] else { panic!("a mapping step") };
                assert_eq!(sim.mm.vmas[v].pages, a.pages);
            }
            assert_eq!(stream(&p.steps, p.rng.clone()), stream(&t.steps, t.rng.clone()), "task {}", p.name);
        }
        assert_ne!(stream(&progs[0].steps, progs[0].rng.clone()), stream(&progs[1].steps, progs[1].rng.clone()));
        assert_eq!(progs[1].regions, ["s", "a"]);
    }

    /// A long timeline halves its resolution instead of growing without bound; points stay
    /// at multiples of the (doubled) interval and the report gives the interval it used.
    #[test]
    fn a_timeline_past_its_cap_doubles_its_interval() {
        let mut sim = crate::testutil::sim_from(
            "sample_interval = \"1ms\"\n[machine]\nram = \"64MB\"\n[region.buf]\nkind = \"anon\"\n\
             size = \"1MB\"\n[[task]]\nname = \"t\"\n[[task.step]]\nregion = \"buf\"\npattern = \"seq\"\n\
             think = \"1ms\"\n",
            &[],
        );
        sim.sched.timeline_cap = 16;
        sim.run(&mut None);
        let points = &sim.sched.timeline;
        assert!(points.len() <= 16, "{} points", points.len());
        // 256 accesses 1 ms apart: 256 ms, which 16 points cover at 16 ms or more.
        let doubled = sim.sched.sample_every / 1_000_000;
        assert!(doubled.is_power_of_two() && doubled >= 16, "interval {doubled} ms");
        assert!(points.iter().all(|p| p.t_ns % sim.sched.sample_every == 0));
        assert!(points.windows(2).all(|w| w[1].t_ns - w[0].t_ns == sim.sched.sample_every));
    }

    /// A timeline sample carries the gauges as they are at its end: an anonymous region
    /// written once, in a memcg, shows its pages on the anon LRU lists and charged to the
    /// memcg, and the free pages fall by as many; nothing is dirty file data.
    #[test]
    fn a_timeline_sample_has_the_gauges_at_its_end() {
        let r = crate::testutil::run(
            "sample_interval = \"1ms\"\n[machine]\nram = \"64MB\"\n[memcg.box]\n[region.buf]\n\
             kind = \"anon\"\nsize = \"1MB\"\n[[task]]\nname = \"t\"\nmemcg = \"box\"\n[[task.step]]\n\
             region = \"buf\"\npattern = \"seq\"\nop = \"write\"\npasses = 2\nthink = \"1ms\"\n",
            &[],
        );
        let (first, last) = (&r.timeline[0].gauges, &r.timeline.last().expect("a timeline").gauges);
        let anon = |g: &TimelineGauges| g.nr_inactive_anon + g.nr_active_anon;
        // Two passes of 256 writes 1 ms apart: the first sample has seen a few page
        // faults, the last (in the second pass) all 256.
        assert!(anon(first) < 8, "{first:?}");
        assert_eq!(anon(last), 256, "{last:?}");
        assert_eq!(first.nr_free_pages - last.nr_free_pages, anon(last) - anon(first), "{first:?} {last:?}");
        assert_eq!((last.nr_dirty, last.nr_writeback, last.nr_swap_used), (0, 0, 0));
        let usage: Vec<u64> = r.timeline.iter().map(|s| s.memcg_usage_bytes["box"]).collect();
        assert!(usage.windows(2).all(|w| w[0] <= w[1]), "{usage:?}");
        assert_eq!(*usage.last().expect("samples"), 256 * 4096);
        assert_eq!(r.timeline.last().expect("samples").memcg_usage_bytes.len(), 1, "the root is not listed");
    }
}
