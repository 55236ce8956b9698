//! The threads of a run on the simulated CPUs: waking and blocking a thread (a token per
//! thread makes stale wakeups no-ops), a thread burst on the CPU that frees up first (a
//! task, kswapd's `balance_pgdat` in engine/kswapd/, or zswap's shrink worker in
//! engine/zswap.rs), and a task's burst: its reclaim job (engine/vmscan.rs
//! `do_try_to_free_pages`), its read(2) in progress (engine/filemap.rs
//! `file_read_step`), then the hit loop, which executes accesses that hit (present PTE
//! with the needed permission) with no event and no allocation until one faults, a file
//! step needs a read call, or the burst ends. The fault itself is engine/memory.rs.
//!
//! A thread runs on the CPU it last ran on when it may and that CPU is idle, else on the
//! CPU it may use that frees up first (`select_task_rq_fair`: `wake_affine_idle` keeps an
//! idle `prev_cpu`, `select_idle_sibling` finds another idle one). Waking a sleeping thread
//! onto an idle CPU other than the one running the waker is an IPI (`ttwu_queue_wakelist`):
//! the thread runs `cpu.remote_wakeup_ns` later (`wake_up`). An I/O completion runs on its
//! device's interrupt CPU (`irq_cpu`), or without one on the CPU of the task it wakes.
//!
//! Also the page wait queues of mm/filemap.c (`folio_waitqueue`, `PAGE_WAIT_TABLE_BITS`):
//! a task sleeps on a page's I/O (`sleep_on_page`: `folio_wait_locked`,
//! `folio_wait_writeback`) until engine/block.rs ends that I/O and wakes it
//! (`wake_page_waiters`: `folio_wake_bit`).

use crate::engine::event::{Event, EventQueue};
use crate::engine::{PendingFault, Sim, StepTarget, Task, TaskState};
use crate::histogram::Histogram;
use crate::ids::Pfn;
use crate::ids::{Tid, VmaId};
use crate::mm::vmstat::Counter;
use crate::mm::{pte, LruList};
use crate::pagecache::readahead::Advice;
use crate::pagecache::ReadStep;
use crate::pagecache::SyncOp;
use crate::scenario::{AccessOp, Fadvise, Pace};

/// The clock, the event queue, the CPUs and the threads of a run. Thread ids: the tasks
/// are 0..n, then kswapd, then zswap's shrink worker.
pub(crate) struct Sched {
    /// Simulated time of the code running, ns: the running CPU's own clock during a thread's
    /// burst (it advances with the burst's work), an event's time otherwise. CPUs keep
    /// clocks of their own, so `now` is not monotonic across events: a burst on one CPU may
    /// end after the time of the next event, which then runs at its own time on another.
    pub(crate) now: u64,
    /// The latest time any code reached (monotonic): what the run as a whole has
    /// simulated, for the watchdog, progress and the end of the run.
    pub(crate) latest: u64,
    /// When the devices completed the last request of a completed run: later than the
    /// tasks' end when they left I/O in flight (`Sim::complete_io_in_flight`).
    pub(crate) io_end_ns: u64,
    pub(crate) events: EventQueue,
    /// Per-CPU time at which the CPU is free.
    pub(crate) cpu_free: Vec<u64>,
    /// Per thread, the CPU it last ran on ([`NO_CPU`] before its first burst).
    pub(crate) last_cpu: Vec<u32>,
    /// Per thread, when its last burst ended: a thread's time never goes back, so a wakeup
    /// from a CPU whose clock is behind runs it at this time, not the waker's.
    pub(crate) thread_free: Vec<u64>,
    /// The CPU running the code in progress: the thread's during a burst, the interrupt
    /// CPU during an I/O completion; [`NO_CPU`] when that is the woken thread's own CPU.
    pub(crate) running_on: u32,
    /// Per-thread wakeup token: an event with a stale token is ignored.
    pub(crate) tokens: Vec<u32>,
    pub(crate) tasks: Vec<Task>,
    /// Processes started and not exited, and of them those paused: the run completes when
    /// every live process is paused.
    pub(crate) live: u32,
    pub(crate) paused: u32,
    /// The scenario's `time_limit` (`u64::MAX` without one).
    pub(crate) time_limit: u64,
    /// Accesses and read calls completed, and the total the workload will make.
    pub(crate) ops_done: u64,
    pub(crate) ops_total: u64,
    /// Fault latencies (start of the fault to the access completing).
    pub(crate) fault_hist: Histogram,
    /// The kernel's part of each fault's latency: the latency less the time the fault
    /// waited for a device (slept on its I/O, or a synchronous device's transfer).
    pub(crate) fault_kernel_hist: Histogram,
    /// The same two for major faults alone (the fault read its page from a device).
    pub(crate) major_hist: Histogram,
    pub(crate) major_kernel_hist: Histogram,
    /// The kernel's locks (crate::locking) and, per thread, the time it spun on them.
    pub(crate) locks: crate::locking::Locks,
    pub(crate) lock_wait_ns: Vec<u64>,
    /// Tasks sleeping on a page's I/O, and tasks throttled in reclaim.
    pub(crate) page_waiters: PageWaiters,
    pub(crate) throttled: Vec<Tid>,
    /// Tasks in `congestion_wait` (≤2.6.36 direct reclaim).
    pub(crate) congestion_waiters: Vec<Tid>,
    /// Wakeups `run_due_interrupts` set aside while it runs the interrupts behind them
    /// (a buffer kept between calls).
    pub(crate) held_runs: Vec<(u64, u64, crate::engine::event::Event)>,
    /// Reused buffer for the tasks one wakeup releases.
    pub(crate) scratch_waiters: Vec<Tid>,
    /// Timeline points every `sample_every` ns (none when 0).
    pub(crate) timeline: Vec<TimelinePoint>,
    pub(crate) sample_every: u64,
    /// The most timeline points kept: past it the interval doubles.
    pub(crate) timeline_cap: usize,
    /// Debug builds: check every invariant after every event, not every few thousand
    /// (the property tests set it; a whole run is much slower so).
    pub(crate) verify_each_event: bool,
    /// Device requests completed (the watchdog's sign that the machine is busy).
    pub(crate) io_done: u64,
    /// The scenario's `watchdog` span, ns (`None`: no watchdog), and the machine when an
    /// operation last completed.
    pub(crate) watchdog_ns: Option<u64>,
    pub(crate) watchdog_mark: super::watchdog::Mark,
    /// When `Sim::run` started, in wall-clock time (for progress lines).
    pub(crate) run_started: Option<std::time::Instant>,
    /// How the run ended (`Completed` until it ends otherwise).
    pub(crate) end: super::RunEnd,
}

/// Cumulative values at a timeline point (the engine records these; the report takes
/// differences), and the gauges at that moment (the report gives them as they are).
#[derive(Clone, Debug, Default)]
pub struct TimelinePoint {
    pub t_ns: u64,
    pub read_pages: u64,
    pub dev_reads: u64,
    pub dev_read_bytes: u64,
    pub pgmajfault: u64,
    pub pswpin: u64,
    pub pswpout: u64,
    pub ra_evicted_unused: u64,
    pub gauges: TimelineGauges,
    /// Each memcg's charged pages (`Memcg::usage`), in memcg order without the root.
    pub memcg_usage: Box<[u64]>,
}

/// The /proc/vmstat gauges a timeline point takes, in pages: what `free` and `vmstat 1`
/// show over a run (free memory, the LRU lists, dirty and writeback pages, swap in use).
#[derive(Clone, Copy, Debug, Default, serde::Serialize, PartialEq, Eq)]
pub struct TimelineGauges {
    pub nr_free_pages: u64,
    pub nr_inactive_anon: u64,
    pub nr_active_anon: u64,
    pub nr_inactive_file: u64,
    pub nr_active_file: u64,
    pub nr_dirty: u64,
    pub nr_writeback: u64,
    pub nr_swap_used: u64,
}

impl TimelinePoint {
    /// The values at time `t_ns`.
    pub(crate) fn of(sim: &Sim, t_ns: u64) -> Self {
        let v = &sim.mm.vmstat;
        let lru = |l| sim.mm.node_lru(l);
        TimelinePoint {
            t_ns,
            read_pages: v.get(Counter::FileReadPages),
            dev_reads: sim.io.devices.iter().map(|d| d.stats().reads).sum(),
            dev_read_bytes: sim.io.devices.iter().map(|d| d.stats().read_bytes).sum(),
            pgmajfault: v.get(Counter::PgMajFault),
            pswpin: v.get(Counter::PswpIn),
            pswpout: v.get(Counter::PswpOut),
            ra_evicted_unused: v.get(Counter::RaEvictedUnused),
            gauges: TimelineGauges {
                nr_free_pages: sim.mm.nr_free(),
                nr_inactive_anon: lru(LruList::InactiveAnon),
                nr_active_anon: lru(LruList::ActiveAnon),
                nr_inactive_file: lru(LruList::InactiveFile),
                nr_active_file: lru(LruList::ActiveFile),
                nr_dirty: sim.mm.nr_dirty,
                nr_writeback: sim.mm.nr_writeback,
                nr_swap_used: sim.swap.total_pages() - sim.swap.free_pages(),
            },
            memcg_usage: sim.mm.memcgs.iter().skip(1).map(|m| m.usage).collect(),
        }
    }
}

/// "No CPU" in [`Sched::last_cpu`] and [`Sched::running_on`].
pub(crate) const NO_CPU: u32 = u32::MAX;

/// log2 of the number of page wait queues (mm/filemap.c `PAGE_WAIT_TABLE_BITS`).
const PAGE_WAIT_TABLE_BITS: u32 = 8;

/// Tasks sleeping until a page's I/O ends. As in the kernel (`folio_waitqueue`), a page
/// hashes to one of 256 wait queues, so an I/O completion looks at the few sleepers of
/// one queue rather than at every task; a queue holds (frame, task) pairs.
pub(crate) struct PageWaiters {
    queues: Vec<Vec<(Pfn, Tid)>>,
    /// One bit per queue, set while it holds anyone: the common I/O completion, with no
    /// one waiting, tests one word that stays in cache instead of a queue.
    occupied: [u64; (1 << PAGE_WAIT_TABLE_BITS) / 64],
}

impl Default for PageWaiters {
    fn default() -> Self {
        PageWaiters {
            queues: vec![Vec::new(); 1 << PAGE_WAIT_TABLE_BITS],
            occupied: [0; (1 << PAGE_WAIT_TABLE_BITS) / 64],
        }
    }
}

impl PageWaiters {
    fn queue(f: Pfn) -> usize {
        // hash_32 (golden-ratio multiply, top bits).
        (f.0.wrapping_mul(0x61C8_8647) >> (32 - PAGE_WAIT_TABLE_BITS)) as usize
    }

    /// Whether frame `f`'s queue holds anyone (not necessarily for `f`).
    #[inline]
    pub(crate) fn has_waiters(&self, f: Pfn) -> bool {
        let q = Self::queue(f);
        self.occupied[q / 64] & (1 << (q % 64)) != 0
    }

    pub(crate) fn add(&mut self, f: Pfn, tid: Tid) {
        let q = Self::queue(f);
        self.queues[q].push((f, tid));
        self.occupied[q / 64] |= 1 << (q % 64);
    }

    /// Moves the tasks waiting on frame `f` into `out`, in task order (the order their
    /// wakeups are queued in), each once.
    pub(crate) fn take(&mut self, f: Pfn, out: &mut Vec<Tid>) {
        let qi = Self::queue(f);
        let q = &mut self.queues[qi];
        q.retain(|&(g, tid)| {
            if g == f {
                out.push(tid);
            }
            g != f
        });
        if q.is_empty() {
            self.occupied[qi / 64] &= !(1 << (qi % 64));
        }
        out.sort_unstable();
        out.dedup();
    }
}

/// What the hit loop stopped at.
pub(crate) enum Next {
    /// An access that faults: (vma, page, write).
    Fault(VmaId, u32, bool),
    /// A file step's next read call, of this record.
    Read(u32),
    /// An msync(MS_SYNC) of this writable file mapping.
    Msync(VmaId),
    /// The step's region is not mapped (munmap, exec): map it.
    Remap(u32),
    /// A lifecycle call.
    Control,
    /// The program has ended: the process exits.
    Exit,
    /// The task ended or the burst is over.
    Stop,
    /// A replayed call started (a read, a write, an fsync): run it.
    Again,
    /// The replaying task sleeps (wait4 for a child).
    Sleeps,
}

impl Sim {
    /// Makes thread `th` runnable at `at` (superseding any earlier wakeup).
    pub fn wake(&mut self, th: Tid, at: u64) {
        let tok = &mut self.sched.tokens[th.idx()];
        *tok = tok.wrapping_add(1);
        let token = *tok;
        self.sched.events.push(at, Event::Run { thread: th, token });
    }

    /// Invalidates pending wakeups of `th` (it blocks).
    pub fn block(&mut self, th: Tid) {
        let tok = &mut self.sched.tokens[th.idx()];
        *tok = tok.wrapping_add(1);
    }

    /// Wakes sleeping thread `th` from the code running now (`try_to_wake_up`): at once,
    /// or `cpu.remote_wakeup_ns` later when it will run on an idle CPU other than the one
    /// running the waker (the IPI and that CPU's exit from idle).
    pub(crate) fn wake_up(&mut self, th: Tid) {
        let (now, from, cost) = (self.sched.now, self.sched.running_on, self.cost.remote_wakeup_ns);
        let remote = cost > 0 && from != NO_CPU && self.select_cpu(th, from).is_some_and(|(c, _)| c != from);
        self.wake(th, if remote { now + cost } else { now });
    }

    /// The CPU thread `th` runs on next, and when that CPU is free: the one it last ran on
    /// if it may run there and that CPU is idle; else, among the idle CPUs it may use, one
    /// on an idle core (no SMT sibling busy: `select_idle_core`), on the socket with the
    /// fewest busy CPUs (fork and load balancing spread load over the NUMA nodes,
    /// `find_idlest_group`), idle the longest, the lowest; with none idle, the CPU that
    /// frees up first (the lowest on a tie). CPU `busy` (the waker's, or [`NO_CPU`]) counts
    /// as busy.
    fn select_cpu(&self, th: Tid, busy: u32) -> Option<(u32, u64)> {
        let s = &self.sched;
        let allowed = s.tasks.get(th.idx()).and_then(|t| t.cpus.as_deref());
        let free_at = |c: u32| if c == busy { u64::MAX } else { s.cpu_free[c as usize] };
        let prev = s.last_cpu[th.idx()];
        if prev != NO_CPU && free_at(prev) <= s.now && allowed.is_none_or(|a| a.contains(&prev)) {
            return Some((prev, free_at(prev)));
        }
        let topo = &s.locks.topology;
        let ncpus = s.cpu_free.len() as u32;
        let first = |cpus: &mut dyn Iterator<Item = u32>| {
            if topo.sockets <= 1 && topo.threads_per_core <= 1 {
                return cpus.map(|c| (c, free_at(c))).min_by_key(|&(c, t)| (t, c));
            }
            // Busy CPUs per socket and per core, for the idle-core and idlest-socket choice.
            let mut socket_busy = vec![0u32; topo.sockets as usize];
            let mut core_busy = vec![false; (ncpus / topo.threads_per_core.max(1)) as usize + 1];
            for c in 0..ncpus {
                if free_at(c) > s.now {
                    let (core, socket) = s.locks.place(c);
                    socket_busy[socket as usize] += 1;
                    core_busy[core as usize] = true;
                }
            }
            cpus.map(|c| (c, free_at(c))).min_by_key(|&(c, t)| {
                if t > s.now {
                    return (1, false, 0, t, c);
                }
                let (core, socket) = s.locks.place(c);
                (0, core_busy[core as usize], socket_busy[socket as usize], t, c)
            })
        };
        match allowed {
            Some(a) => first(&mut a.iter().copied()),
            None => first(&mut (0..ncpus)),
        }
        .filter(|&(_, t)| t != u64::MAX)
    }

    /// Dispatches one thread burst on the CPU [`Self::select_cpu`] gives, for the wakeup
    /// event of sequence number `seq` and token `token`. A thread that must wait for its
    /// CPU, or for its own clock (woken from a CPU whose clock is behind), keeps its place
    /// in line: its event comes back for that time with its first sequence number, ahead
    /// of a thread that took the CPU meanwhile and queued itself again at its burst's end.
    pub(crate) fn run_thread(&mut self, th: Tid, seq: u64, token: u32) {
        if self.sched.tasks.get(th.idx()).is_some_and(|t| t.state == TaskState::Done) {
            return;
        }
        let Some((cpu, free_at)) = self.select_cpu(th, NO_CPU) else { unreachable!("a thread may use some CPU") };
        let ready = free_at.max(self.sched.thread_free[th.idx()]);
        if ready > self.sched.now {
            self.sched.events.restore((ready, seq, Event::Run { thread: th, token }));
            return;
        }
        let cpu = cpu as usize;
        self.sched.last_cpu[th.idx()] = cpu as u32;
        self.sched.running_on = cpu as u32;
        let start = self.sched.now;
        self.io.ctx = th;
        // Spinning it owes from its last burst: acquisitions of its that another CPU, behind
        // it in time, arrived ahead of (crate::locking). Its CPU time, and its lock wait.
        let owed = self.sched.locks.take_debt(th.idx() as u32);
        if owed > 0 {
            self.sched.now += owed;
            self.sched.lock_wait_ns[th.idx()] += owed;
        }
        if th == self.kswapd_thread() {
            self.balance_pgdat(cpu as u32);
            self.reclaim.kswapd.cpu_ns += self.sched.now - start;
        } else if th == self.zswap_worker_thread() {
            self.run_zswap_shrink_worker();
            self.swap.zswap.worker_cpu_ns += self.sched.now - start;
        } else if let Some(wb) = self.flusher_of(th) {
            self.wb_workfn(wb);
            self.wb.wbs[wb.idx()].cpu_ns += self.sched.now - start;
        } else {
            let t = &mut self.sched.tasks[th];
            if t.state == TaskState::NotStarted {
                t.state = TaskState::Runnable;
            }
            if let Some(p) = t.pending.as_mut().filter(|p| p.slept_at > 0) {
                // Back from a page's I/O: the fault's time asleep was the device's.
                p.device_ns += start.saturating_sub(p.slept_at);
                p.slept_at = 0;
            }
            self.run_task(th, cpu as u32);
            self.sched.tasks[th].cpu_ns += self.sched.now - start;
        }
        self.sched.cpu_free[cpu] = self.sched.now;
        self.sched.thread_free[th.idx()] = self.sched.now;
        self.sched.running_on = NO_CPU;
    }

    /// The end of this burst: the next event, one time slice, or the run's time limit. A
    /// burst always gets to make one step, so two threads woken at the same instant cannot
    /// yield to each other forever without time advancing.
    #[inline]
    pub fn burst_limit(&self, start: u64) -> u64 {
        self.sched.events.next_time().min(self.sched.time_limit).max(start + 1).min(start + self.cost.timeslice_ns)
    }

    /// Runs task `tid` until it blocks, finishes or its burst ends.
    fn run_task(&mut self, tid: Tid, cpu: u32) {
        let start = self.sched.now;
        let mut limit = self.burst_limit(start);
        loop {
            if self.sched.now >= limit {
                self.wake(tid, self.sched.now);
                return;
            }
            // A reclaim job in progress runs first; the access is retried after it.
            if self.sched.tasks[tid].reclaim.is_some() {
                match self.do_try_to_free_pages(tid, cpu) {
                    crate::reclaim::Step::Continue => {
                        // Completions of the writes this priority level submitted are
                        // interrupts: they run before the next level (the burst ends at
                        // the first event due).
                        limit = limit.min(self.burst_limit(start));
                        continue;
                    }
                    crate::reclaim::Step::Blocked => return,
                    crate::reclaim::Step::Finished => {}
                }
            }
            // A readahead window stopped by its charge's reclaim_throttle goes on (a fault's
            // own, in the fault's retry).
            if self.sched.tasks[tid].pending.is_none() && self.readahead_resume(tid, cpu) {
                return;
            }
            if self.sched.tasks[tid].bdp.is_some() {
                // A balance_dirty_pages call it slept in goes on (2.6.35: it writes and
                // sleeps again; 3.2+: over the limit it looks again).
                if self.balance_dirty_pages(tid) == crate::engine::page_writeback::Throttled::Sleeps {
                    return;
                }
                continue;
            }
            // A file call in progress: a whole-file call, a write(2), a read(2).
            let t = &self.sched.tasks[tid];
            let call = if let Some(st) = t.sync {
                Some((self.file_sync_step(tid, limit), st.counts))
            } else if t.write.is_some() {
                Some((self.file_write_step(tid, cpu, limit), true))
            } else if t.read.is_some() {
                Some((self.file_read_step(tid, cpu, limit), true))
            } else {
                None
            };
            if let Some((step, counts)) = call {
                match step {
                    ReadStep::Done => {
                        if counts && self.finish_access(tid) {
                            return;
                        }
                    }
                    ReadStep::Blocked => return,
                    ReadStep::Retry => {}
                    ReadStep::Yield => {
                        self.wake(tid, self.sched.now);
                        return;
                    }
                }
                continue;
            }
            let (vma, idx, write) = match self.sched.tasks[tid].pending {
                Some(p) => (p.vma, p.idx, p.write),
                None => {
                    // The hit loop: no event, no allocation per access (a replayed
                    // trace's events, for a task that replays one).
                    let next = if self.sched.tasks[tid].trace.is_some() {
                        self.replay_next(tid, cpu, limit)
                    } else {
                        self.hit_loop(tid, limit)
                    };
                    match next {
                        Next::Again => continue,
                        Next::Sleeps => return,
                        Next::Fault(vma, idx, write) => (vma, idx, write),
                        Next::Read(unit) => {
                            if self.start_read(tid, cpu, unit) {
                                return;
                            }
                            continue;
                        }
                        Next::Msync(v) => {
                            let fi = self.mm.vmas[v].file.expect("msync maps a file");
                            self.file_sync_begin(tid, fi, SyncOp::Fsync, true);
                            continue;
                        }
                        Next::Remap(r) => {
                            self.remap_for_step(tid, r);
                            continue;
                        }
                        Next::Control => {
                            match self.run_control(tid) {
                                crate::engine::fork::Ctl::Done => {
                                    if self.finish_access(tid) {
                                        return;
                                    }
                                }
                                crate::engine::fork::Ctl::Waits => return,
                                crate::engine::fork::Ctl::Exec => {}
                            }
                            continue;
                        }
                        Next::Exit => {
                            self.do_exit(tid);
                            return;
                        }
                        Next::Stop => {
                            if self.sched.tasks[tid].state == TaskState::Done || self.sched.now >= limit {
                                if self.sched.tasks[tid].state != TaskState::Done {
                                    self.wake(tid, self.sched.now);
                                }
                                return;
                            }
                            continue;
                        }
                    }
                }
            };
            let t = &mut self.sched.tasks[tid];
            if t.pending.is_none() {
                t.pending = Some(PendingFault::new(vma, idx, write, self.sched.now));
            }
            match self.handle_mm_fault(tid, cpu, vma, idx, write) {
                crate::engine::memory::Fault::Done => {
                    let t = &mut self.sched.tasks[tid];
                    let p = t.pending.take().expect("the fault in progress");
                    let lat = self.sched.now - p.start_ns;
                    self.sched.fault_hist.record(lat);
                    let kernel = lat.saturating_sub(p.device_ns);
                    self.sched.fault_kernel_hist.record(kernel);
                    if p.major_counted {
                        self.sched.major_hist.record(lat);
                        self.sched.major_kernel_hist.record(kernel);
                    }
                    if self.finish_access(tid) {
                        return;
                    }
                }
                crate::engine::memory::Fault::Blocked => return,
                crate::engine::memory::Fault::Retry => continue,
                crate::engine::memory::Fault::Killed => return,
            }
        }
    }

    /// Starts the read(2) or write(2) of record `unit` of the task's current file step; the
    /// step's first call opens the file (its `posix_fadvise` is given then). Returns whether
    /// the task sleeps (in the charge of the WILLNEED window; the call starts after it).
    fn start_read(&mut self, tid: Tid, cpu: u32, unit: u32) -> bool {
        let t = &self.sched.tasks[tid];
        let si = t.cur.step;
        let step = &t.steps[si];
        let StepTarget::File { file: fi, ra } = t.targets[si] else { unreachable!("a read is started by a file step") };
        let nr = step.record_pages as u64;
        let op = step.op;
        let mut sleeps = false;
        if t.cur.done == 0 {
            if let Some(a) = step.fadvise {
                let nr_pages = self.pc.files[fi].i_size;
                let advice = match a {
                    Fadvise::Normal => Advice::Normal,
                    Fadvise::Sequential => Advice::Sequential,
                    Fadvise::Random => Advice::Random,
                    Fadvise::Willneed => Advice::WillNeed { index: 0, nr: nr_pages },
                };
                sleeps = self.file_fadvise(tid, cpu, fi, ra, advice);
            }
        }
        match op {
            AccessOp::Fsync | AccessOp::Fdatasync => self.file_sync_begin(tid, fi, SyncOp::Fsync, true),
            AccessOp::SyncFileRange => self.file_sync_begin(tid, fi, SyncOp::StartWrite, true),
            AccessOp::Truncate => self.file_sync_begin(tid, fi, SyncOp::Truncate, true),
            AccessOp::Write | AccessOp::Pwrite => self.file_write_begin(tid, fi, unit as u64 * nr, nr, false),
            // O_APPEND: the position is the end of the file when the write holds i_rwsem.
            AccessOp::Append => self.file_write_begin(tid, fi, 0, nr, true),
            AccessOp::Read | AccessOp::Pread => self.file_read_begin(tid, fi, ra, unit as u64 * nr, nr),
            AccessOp::Msync => unreachable!("msync is a region step"),
            AccessOp::Spawn
            | AccessOp::Fork
            | AccessOp::Wait
            | AccessOp::Exec
            | AccessOp::Mmap
            | AccessOp::Munmap
            | AccessOp::Brk
            | AccessOp::Pause => unreachable!("a lifecycle call is a control step"),
        }
        sleeps
    }

    /// Executes accesses that hit until one faults, a file step needs a read call, the
    /// task ends, or the burst limit is reached.
    #[inline]
    fn hit_loop(&mut self, tid: Tid, limit: u64) -> Next {
        let access_ns = self.cost.access_ns;
        let (Sched { tasks, now, ops_done, .. }, vmas) = (&mut self.sched, &mut self.mm.vmas);
        let t = &mut tasks[tid];
        loop {
            if *now >= limit {
                return Next::Stop;
            }
            let Some(step) = t.steps.get(t.cur.step) else {
                return Next::Exit;
            };
            if t.cur.done >= step.total {
                t.step_end_ns[t.cur.step] = *now;
                t.cur.step += 1;
                t.cur.done = 0;
                t.cur.step_start_ns = *now;
                continue;
            }
            // The step's accesses, with what they need of a PTE and do to it hoisted out. A
            // file step's next access is a read call (the loop's first iteration returns).
            let vma = match t.targets[t.cur.step] {
                StepTarget::Vma(v) => Some(v),
                StepTarget::File { .. } => None,
                StepTarget::Unmapped(r) => return Next::Remap(r),
                StepTarget::Control => return Next::Control,
            };
            if let (Some(v), AccessOp::Msync) = (vma, step.op) {
                return Next::Msync(v);
            }
            let write = step.write;
            let need = if write { pte::WRITE } else { 0 };
            let set = pte::YOUNG | if write { pte::DIRTY } else { 0 };
            let cost = access_ns + step.think_ns;
            let ptes: &mut [u32] = vma.map_or(&mut [], |v| &mut vmas[v].pte);
            while t.cur.done < step.total && *now < limit {
                let idx = step.next_index(t.cur.done, &mut t.rng, t.cur.last);
                t.cur.last = idx;
                let Some(vma) = vma else {
                    return Next::Read(idx);
                };
                let e = ptes[idx as usize];
                if !pte::is_present(e) || e & need != need {
                    return Next::Fault(vma, idx, write);
                }
                ptes[idx as usize] = e | set;
                t.cur.done += 1;
                *ops_done += 1;
                *now += cost;
            }
        }
    }

    /// Accounts the access (or read call) that just completed outside the hit loop. A
    /// step with a `rate` then sleeps until its bytes are due; returns whether the task
    /// went to sleep.
    fn finish_access(&mut self, tid: Tid) -> bool {
        if self.sched.tasks[tid].trace.is_some() {
            // A replayed access or call: its CPU time is in the trace's instructions.
            self.sched.ops_done += 1;
            return false;
        }
        let t = &mut self.sched.tasks[tid];
        let step = &t.steps[t.cur.step];
        let think = step.think_ns;
        let rate = step.rate;
        let bytes = step.record_pages as u64 * 4096;
        let fsync_every = step.fsync_every;
        t.cur.done += 1;
        self.sched.ops_done += 1;
        self.sched.now += self.cost.access_ns + think;
        if fsync_every > 0 && t.cur.done.is_multiple_of(fsync_every) {
            if let StepTarget::File { file, .. } = t.targets[t.cur.step] {
                self.file_sync_begin(tid, file, SyncOp::Fsync, false);
            }
        }
        let t = &mut self.sched.tasks[tid];
        let step = &t.steps[t.cur.step];
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
                t.cur.last_end_ns = self.sched.now;
                t.cur.next_due_ns
            }
        };
        if due <= self.sched.now {
            return false;
        }
        self.block(tid);
        self.wake(tid, due);
        true
    }

    /// Charges CPU time to the running thread.
    #[inline]
    pub fn charge(&mut self, ns: u64) {
        self.sched.now += ns;
    }

    /// A synchronous device's transfer of `ns` done by the running thread: device time of
    /// its fault in progress, if it is a task in one.
    #[inline]
    pub(crate) fn note_device_ns(&mut self, ns: u64) {
        if let Some(p) = self.sched.tasks.get_mut(self.io.ctx.idx()).and_then(|t| t.pending.as_mut()) {
            p.device_ns += ns;
        }
    }

    /// The CPU the code in progress runs on, for a lock: the running thread's, or during a
    /// completion without an interrupt CPU the CPU of the thread it interrupted.
    #[inline]
    pub(crate) fn lock_cpu(&self) -> u32 {
        match self.sched.running_on {
            NO_CPU => match self.sched.last_cpu[self.io.ctx.idx()] {
                NO_CPU => 0,
                c => c,
            },
            c => c,
        }
    }

    /// `spin_lock(id)` … `spin_unlock(id)` around `hold_ns` of work on the running CPU
    /// that writes `lines` cache lines of the lock's data (its own included, crate::locking):
    /// the CPU spins while another holds it, then pulls those lines over and does the work.
    /// The clock advances by all three; the spinning is counted as the running thread's
    /// lock wait.
    pub(crate) fn spin_lock(&mut self, id: crate::locking::LockId, hold_ns: u64, lines: u32) {
        let cpu = self.lock_cpu();
        let a = self.sched.locks.spin_lock(id, self.io.ctx.idx() as u32, cpu, self.sched.now, hold_ns, lines);
        self.sched.now = a.start + a.transfer_ns + hold_ns;
        if a.wait_ns > 0 {
            self.sched.lock_wait_ns[self.io.ctx.idx()] += a.wait_ns;
        }
    }

    /// `mutex_lock` / `down_write` of sleeping lock `id` by task `tid`: whether it holds
    /// the lock now; if not, it sleeps until [`Sim::mutex_unlock`] hands it the lock.
    pub(crate) fn mutex_lock(&mut self, id: crate::locking::SleepLockId, tid: Tid) -> bool {
        if self.sched.locks.mutex_lock(id, tid.idx() as u32, self.sched.now) {
            return true;
        }
        self.sched.tasks[tid].state = TaskState::WaitLock(id);
        self.block(tid);
        false
    }

    /// `mutex_unlock` / `up_write` of sleeping lock `id` by its holder: the first task
    /// waiting for it gets it and is woken (returned, for the caller to do what it does
    /// once it holds the lock).
    pub(crate) fn mutex_unlock(&mut self, id: crate::locking::SleepLockId) -> Option<Tid> {
        let (next, _) = self.sched.locks.mutex_unlock(id, self.sched.now)?;
        Some(self.mutex_handed(next))
    }

    /// Task `tid` exits while it holds sleeping lock `id` or waits for it: it leaves the
    /// queue, or hands the lock on as [`Sim::mutex_unlock`] does (returning the new holder).
    pub(crate) fn mutex_abandon(&mut self, id: crate::locking::SleepLockId, tid: Tid) -> Option<Tid> {
        let (next, _) = self.sched.locks.mutex_abandon(id, tid.idx() as u32, self.sched.now)?;
        Some(self.mutex_handed(next))
    }

    /// Wakes thread `next`, which was handed a sleeping lock.
    fn mutex_handed(&mut self, next: u32) -> Tid {
        let next = Tid(next);
        self.sched.tasks[next].state = TaskState::Runnable;
        self.wake_up(next);
        next
    }

    /// Puts task `tid` to sleep until the I/O of frame `f` ends (`folio_wait_locked`,
    /// `folio_wait_writeback`).
    pub(crate) fn sleep_on_page(&mut self, tid: Tid, f: Pfn) {
        let now = self.sched.now;
        if let Some(p) = self.sched.tasks[tid].pending.as_mut() {
            p.slept_at = now.max(1);
        }
        self.sched.tasks[tid].state = TaskState::WaitPage(f);
        self.sched.page_waiters.add(f, tid);
        self.block(tid);
    }

    /// Wakes the tasks sleeping on frame `f` (`folio_wake_bit`); returns whether there were
    /// any.
    #[inline]
    pub(crate) fn wake_page_waiters(&mut self, f: Pfn) -> bool {
        // Most I/O ends with no one waiting (readahead, writeback): no work then.
        self.sched.page_waiters.has_waiters(f) && self.wake_page_waiters_slow(f)
    }

    #[inline(never)]
    fn wake_page_waiters_slow(&mut self, f: Pfn) -> bool {
        let mut woken = std::mem::take(&mut self.sched.scratch_waiters);
        self.sched.page_waiters.take(f, &mut woken);
        let mut any = false;
        for &tid in &woken {
            // A task killed while it slept is no longer waiting.
            if self.sched.tasks[tid].state == TaskState::WaitPage(f) {
                self.sched.tasks[tid].state = TaskState::Runnable;
                any = true;
                self.wake_up(tid);
            }
        }
        woken.clear();
        self.sched.scratch_waiters = woken;
        any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::run;

    /// 32 MB of anon memory in a 16 MB memcg, read twice in order at page-cluster 0: each
    /// of the second pass's faults sleeps on one swap read of an nvme with `disk` keys.
    fn swap_reader(disk: &str, cpus: &str) -> String {
        format!(
            "[machine]\nram = \"256MB\"\ncpus = 2\n[kernel]\nprofile = \"linux-6.18\"\n[vm]\npage-cluster = 0\n\
             [device.d]\nmodel = \"nvme\"\nread_latency = \"60us\"\n{disk}\n[[swap]]\ndevice = \"d\"\nsize = \"64MB\"\n\
             [memcg.box]\nmax = \"16MB\"\n[region.r]\nkind = \"anon\"\nsize = \"32MB\"\n\
             [[task]]\nname = \"t\"\nmemcg = \"box\"\n{cpus}\n\
             [[task.step]]\nregion = \"r\"\npattern = \"seq\"\nop = \"write\"\n\
             [[task.step]]\nregion = \"r\"\npattern = \"seq\"\npasses = 2\nop = \"read\"\n"
        )
    }

    /// A completion on the disk's interrupt CPU wakes a task sleeping on another, idle CPU
    /// `cpu.remote_wakeup_ns` later, each time; a task on the interrupt CPU itself, or a
    /// disk without an interrupt CPU, costs nothing more.
    #[test]
    fn a_task_on_another_cpu_than_the_disk_interrupt_waits_for_the_wakeup_ipi() {
        let wake = ["cpu.remote_wakeup_ns=40000"];
        let remote = run(&swap_reader("irq_cpu = 1", "cpus = [0]"), &wake);
        let local = run(&swap_reader("irq_cpu = 1", "cpus = [1]"), &wake);
        let no_irq = run(&swap_reader("", "cpus = [0]"), &wake);
        let free = run(&swap_reader("irq_cpu = 1", "cpus = [0]"), &[]);
        let waits = local.counter(Counter::PswpIn);
        assert!(waits > 10_000, "the second pass swaps in: {waits}");
        assert_eq!(remote.counter(Counter::PswpIn), waits, "the same I/O either way");
        // Each swap-in (and each other wakeup by a completion) adds the IPI's 40 us.
        let extra = remote.elapsed_ns as i64 - local.elapsed_ns as i64;
        let per_wait = extra / waits as i64;
        assert!((38_000..=46_000).contains(&per_wait), "{per_wait} ns more per swap-in");
        assert!(
            remote.fault_latency.median_ns >= local.fault_latency.median_ns + 30_000,
            "the fault waits for the IPI: {} vs {} ns",
            remote.fault_latency.median_ns,
            local.fault_latency.median_ns
        );
        assert_eq!(no_irq.elapsed_ns, local.elapsed_ns, "no interrupt CPU: completions are local");
        assert_eq!(free.elapsed_ns, local.elapsed_ns, "remote_wakeup_ns 0: a free wakeup");
    }

    /// Processes run only on the CPUs they may use (`task[].cpus`); an unpinned one runs
    /// on the first free CPU and stays there while it is idle.
    #[test]
    fn tasks_run_only_on_the_cpus_they_may_use() {
        let text = |cpus: &str| {
            format!(
                "[machine]\nram = \"256MB\"\ncpus = 4\n[region.r]\nkind = \"anon\"\nsize = \"1MB\"\n\
                 [[task]]\nname = \"t\"\ncount = 3\n{cpus}\n\
                 [[task.step]]\nregion = \"r\"\npattern = \"seq\"\nop = \"write\"\npasses = 20\nthink = \"5us\"\n"
            )
        };
        let mut pinned = crate::testutil::sim_from(&text("cpus = [2, 3]"), &[]);
        pinned.run(&mut None);
        let ran: Vec<u32> = pinned.sched.last_cpu[..3].to_vec();
        assert!(ran.iter().all(|&c| c == 2 || c == 3), "{ran:?}");
        assert!(ran.contains(&2) && ran.contains(&3), "three processes on two CPUs use both: {ran:?}");
        let mut free = crate::testutil::sim_from(&text(""), &[]);
        free.run(&mut None);
        assert_eq!(&free.sched.last_cpu[..3], [0, 1, 2], "each process keeps the CPU it found free");
        assert_eq!(free.sched.last_cpu[3], NO_CPU, "kswapd never ran");
    }

    /// `n` processes that only compute (1 ms of accesses each, no fault after the first
    /// touch) on a machine of `cpus` CPUs.
    fn computers(n: u32, cpus: u32) -> String {
        format!(
            "[machine]\nram = \"256MB\"\ncpus = {cpus}\n[region.r]\nkind = \"anon\"\nsize = \"400KB\"\n\
             [[task]]\nname = \"t\"\ncount = {n}\n\
             [[task.step]]\nregion = \"r\"\npattern = \"seq\"\nop = \"write\"\npasses = 10\nthink = \"1us\"\n"
        )
    }

    /// On 2 sockets of 2 cores with 2 SMT threads each, four runnable threads get a core each,
    /// two on each socket (`select_idle_core`, fork balancing over the NUMA nodes), not the
    /// four SMT threads of the first two cores.
    #[test]
    fn threads_take_idle_cores_spread_over_the_sockets() {
        let text = computers(4, 8).replace("cpus = 8\n", "cpus = 8\nsockets = 2\nthreads_per_core = 2\n");
        let mut s = crate::testutil::sim_from(&text, &[]);
        assert_eq!(s.run(&mut None), crate::engine::watchdog::RunEnd::Completed);
        let cpus: Vec<u32> = (0..4).map(|t| s.sched.last_cpu[t]).collect();
        let places: Vec<(u32, u32)> = cpus.iter().map(|&c| s.sched.locks.place(c)).collect();
        let mut cores: Vec<u32> = places.iter().map(|p| p.0).collect();
        cores.sort();
        cores.dedup();
        assert_eq!(cores.len(), 4, "a core each: CPUs {cpus:?}");
        assert_eq!(places.iter().filter(|p| p.1 == 0).count(), 2, "two a socket: CPUs {cpus:?}");
        // A flat machine keeps the old choice: the CPU idle the longest, the lowest.
        let mut flat = crate::testutil::sim_from(&computers(4, 8), &[]);
        assert_eq!(flat.run(&mut None), crate::engine::watchdog::RunEnd::Completed);
        let mut first: Vec<u32> = (0..4).map(|t| flat.sched.last_cpu[t]).collect();
        first.sort();
        assert_eq!(first, [0, 1, 2, 3]);
    }

    /// Each CPU has its own clock: the work of threads on different CPUs overlaps in time.
    /// Two processes that only compute take as long on two CPUs as one alone, and twice as
    /// long on one; three on two CPUs take about one and a half times as long.
    #[test]
    fn threads_on_different_cpus_compute_at_the_same_time() {
        let alone = run(&computers(1, 2), &[]).elapsed_ns;
        assert!(alone >= 1_000_000, "1,000 accesses of 1 us each: {alone} ns");
        let two = run(&computers(2, 2), &[]);
        assert!(two.elapsed_ns <= alone + alone / 100, "two on two CPUs: {} ns, one alone {alone} ns", two.elapsed_ns);
        let one_cpu = run(&computers(2, 1), &[]).elapsed_ns;
        assert!(one_cpu >= 2 * alone - alone / 100, "two on one CPU: {one_cpu} ns, one alone {alone} ns");
        let three = run(&computers(3, 2), &[]).elapsed_ns as f64 / alone as f64;
        assert!((1.4..1.8).contains(&three), "three on two CPUs: {three:.2} times one alone");
        for t in &two.tasks {
            assert!(t.cpu_ns <= t.elapsed_ns, "{}: cpu {} ns in {} ns", t.name, t.cpu_ns, t.elapsed_ns);
        }
    }

    /// kswapd reclaims on the other CPU while the task runs: the task no longer waits for
    /// kswapd's bursts (on one CPU it does; the task still waits for the pages kswapd
    /// frees, so not all of kswapd's time is saved); its CPU time still fits in its
    /// elapsed time.
    #[test]
    fn kswapd_on_the_other_cpu_does_not_delay_the_task() {
        let text = |cpus: u32| {
            format!(
                "[machine]\nram = \"64MB\"\ncpus = {cpus}\n[kernel]\nprofile = \"linux-6.6\"\n\
                 [device.d]\nmodel = \"nvme\"\n[[swap]]\ndevice = \"d\"\nsize = \"128MB\"\n\
                 [region.r]\nkind = \"anon\"\nsize = \"80MB\"\n\
                 [[task]]\nname = \"t\"\ncpus = [0]\n\
                 [[task.step]]\nregion = \"r\"\npattern = \"seq\"\nop = \"write\"\npasses = 2\n"
            )
        };
        let two = run(&text(2), &[]);
        let one = run(&text(1), &[]);
        let k = two.kswapd.cpu_ns;
        assert!(k > 20_000_000, "kswapd reclaims: {k} ns");
        assert!(
            two.elapsed_ns + k / 3 < one.elapsed_ns,
            "two CPUs {} ns, one {} ns, kswapd's CPU time {k} ns",
            two.elapsed_ns,
            one.elapsed_ns
        );
        let t = &two.tasks[0];
        assert!(t.cpu_ns <= t.elapsed_ns, "cpu {} ns in {} ns", t.cpu_ns, t.elapsed_ns);
    }

    /// A thread's time never goes back: woken (from a CPU whose clock is behind) for a time
    /// before its own last burst ended, it runs when that burst ended, and it keeps its place
    /// among the events of that time; a thread whose CPU is busy waits for it the same way.
    #[test]
    fn a_thread_woken_before_its_own_last_burst_ended_runs_at_its_end() {
        let mut s = crate::testutil::sim_from(&computers(2, 2), &[]);
        let t = Tid(0);
        s.sched.thread_free[t.idx()] = 5_000;
        s.sched.cpu_free = vec![0, 0];
        // An event taken from the queue for time 1,000, pushed before others of time 5,000.
        s.sched.events = EventQueue::default();
        let token = s.sched.tokens[t.idx()];
        s.sched.events.push(5_000, Event::Run { thread: Tid(1), token: s.sched.tokens[1] });
        s.dispatch((1_000, 0, Event::Run { thread: t, token }));
        assert_eq!(s.sched.tasks[t].cpu_ns, 0, "it did not run at 1,000");
        let (at, seq, ev) = s.sched.events.pop_entry().unwrap();
        assert_eq!((at, seq, ev), (5_000, 0, Event::Run { thread: t, token }), "back for 5,000, first in line");
        // Its CPU busy until 7,000 (and the other too): it waits for the CPU it last ran on.
        s.sched.cpu_free = vec![7_000, 8_000];
        s.sched.last_cpu[t.idx()] = 0;
        s.dispatch((at, seq, ev));
        let mut left = Vec::new();
        while let Some(e) = s.sched.events.pop_entry() {
            left.push(e);
        }
        assert!(left.contains(&(7_000, 0, Event::Run { thread: t, token })), "back for 7,000: {left:?}");
    }

    #[test]
    fn a_page_wakes_only_its_own_waiters_in_task_order_once_each() {
        let mut w = PageWaiters::default();
        // A frame that hashes to the same queue as frame 7.
        let other = (8..).map(Pfn).find(|&g| PageWaiters::queue(g) == PageWaiters::queue(Pfn(7))).unwrap();
        for (f, tid) in [(Pfn(7), 5), (other, 1), (Pfn(7), 2), (Pfn(9), 3), (Pfn(7), 5)] {
            w.add(f, Tid(tid));
        }
        assert!(w.has_waiters(Pfn(7)) && w.has_waiters(Pfn(9)));
        assert!(!w.has_waiters((0..).map(Pfn).find(|&g| w.queues[PageWaiters::queue(g)].is_empty()).unwrap()));
        let mut out = Vec::new();
        w.take(Pfn(7), &mut out);
        assert!(w.has_waiters(Pfn(7)), "frame 7's queue still holds the other frame's waiter");
        assert_eq!(out, [Tid(2), Tid(5)], "frame 7's sleepers, in task order, each once");
        out.clear();
        w.take(Pfn(7), &mut out);
        assert!(out.is_empty(), "taken waiters are gone");
        w.take(other, &mut out);
        assert_eq!(out, [Tid(1)], "a frame sharing the queue keeps its waiter until its own I/O ends");
        assert!(!w.has_waiters(Pfn(7)), "an emptied queue is marked empty");
        out.clear();
        w.take(Pfn(9), &mut out);
        assert_eq!(out, [Tid(3)]);
    }
}
