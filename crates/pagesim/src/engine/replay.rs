//! Runs a captured program (replay.rs reads its trace) through the model: each access goes
//! through the page tables and the fault path as a synthetic program's does, each read(2),
//! write(2) and fsync(2) through the page cache, readahead and writeback, munmap through
//! `do_vmi_munmap`, fork through `copy_process` (the child replays its own part of the
//! trace), exec through `exit_mmap`, exit through `do_exit`. The CPU time between two
//! events is the instructions the process executed between them, at the task's time per
//! instruction.
//!
//! Each thread of the trace replays in a task of its own: a clone with CLONE_THREAD
//! starts a task that shares its process's address space (`Sim::new_thread`), and a thread
//! whose futex wait returned waits until the others have replayed what came before its
//! next event in the trace (`Ev::Sync`). What the kernel does that the trace does not show
//! is not replayed (docs/model.md, "Replay").

use crate::engine::sched::Next;
use crate::engine::{Sim, TaskState};
use crate::ids::{FileId, Tid};
use crate::mm::pte;
use crate::pagecache::readahead::Advice;
use crate::pagecache::SyncOp;
use crate::replay::Ev;
use crate::scenario::config::TraceProgram;

/// A process replaying its part of a trace.
#[derive(Debug)]
pub struct Replaying {
    /// Its program (the task that replays the trace).
    pub prog: u32,
    /// Its thread in the trace ([`crate::replay::TraceInfo::tasks`]).
    pub slot: u32,
    /// CPU time per instruction, ps.
    ps_per_insn: u64,
    /// Instructions it ran, and the CPU time charged for them, ns.
    insns: u64,
    charged_ns: u64,
    region_base: u32,
    /// The trace's files' extents.
    extents: std::sync::Arc<[u32]>,
    /// Per file it read, its readahead state (a process's descriptors of one file share
    /// it; a thread's are its leader's).
    ra: Vec<(u32, u32)>,
}

impl Replaying {
    pub fn new(prog: u32, slot: u32, tp: &TraceProgram) -> Box<Replaying> {
        Box::new(Replaying {
            prog,
            slot,
            ps_per_insn: (tp.ns_per_insn * 1000.0).round().max(1.0) as u64,
            insns: 0,
            charged_ns: 0,
            region_base: tp.region_base,
            extents: tp.extents.clone(),
            ra: Vec::new(),
        })
    }

    /// The replay of thread `slot`, a child process this one forked or a thread it cloned:
    /// the same trace and CPU speed, its own clock and readahead states.
    fn child(&self, slot: u32) -> Box<Replaying> {
        Box::new(Replaying { slot, insns: 0, charged_ns: 0, extents: self.extents.clone(), ra: Vec::new(), ..*self })
    }

    /// The CPU time `insns` more instructions take, ns (what is left of a nanosecond is
    /// carried to the next).
    fn cpu_ns(&mut self, insns: u64) -> u64 {
        self.insns += insns;
        let total = match self.insns.checked_mul(self.ps_per_insn) {
            Some(ps) => ps / 1000,
            None => (self.insns as u128 * self.ps_per_insn as u128 / 1000) as u64,
        };
        let ns = total - self.charged_ns;
        self.charged_ns = total;
        ns
    }
}

impl Ev {
    fn insns(&self) -> u64 {
        match *self {
            Ev::Access { insns, .. }
            | Ev::FileIo { insns, .. }
            | Ev::Fsync { insns, .. }
            | Ev::Fadvise { insns, .. }
            | Ev::Truncate { insns, .. }
            | Ev::Release { insns, .. }
            | Ev::Evict { insns, .. }
            | Ev::Unmap { insns, .. }
            | Ev::Fork { insns, .. }
            | Ev::Clone { insns, .. }
            | Ev::Wait { insns }
            | Ev::Exec { insns }
            | Ev::Exit { insns }
            | Ev::ExitGroup { insns }
            | Ev::Other { insns } => insns,
            Ev::Sync { .. } => 0,
        }
    }
}

/// How many events ahead of the one it runs a replaying task asks for the cache lines of an
/// access (`Sim::prefetch_access`).
const PREFETCH_AHEAD: usize = 4;

/// Asks for the cache lines an access to page `idx` of a mapping with PTEs `pte` reads: its
/// PTE and, in a mapping of `file`, the page's page-cache slot and shadow entry and (with
/// fault-around) the slots of its window. A hint only.
#[inline]
fn prefetch_page(pte: &[u32], file: Option<&crate::pagecache::AddressSpace>, around: bool, idx: u32) {
    if let Some(e) = pte.get(idx as usize) {
        crate::prefetch::prefetch(e);
    }
    if let Some(file) = file {
        file.prefetch(idx as u64);
        if around {
            let start = idx as u64 & !(crate::pagecache::FAULT_AROUND_PAGES - 1);
            file.prefetch_slots(start, start + crate::pagecache::FAULT_AROUND_PAGES);
        }
    }
}

impl Sim {
    /// The page cache of the trace's file `file` in the replaying task `tid`'s scenario.
    fn replay_file(&self, tid: Tid, file: u32) -> FileId {
        FileId(self.sched.tasks[tid].trace.as_ref().expect("a replaying task").extents[file as usize])
    }

    /// The readahead state of the replaying task `tid` for the trace's file `file` (page
    /// cache `fi`): one per process and file (its descriptors of the file, in all its
    /// threads, share it).
    fn replay_ra(&mut self, tid: Tid, file: u32, fi: FileId) -> u32 {
        let leader = self.mm_task(tid);
        let r = self.sched.tasks[leader].trace.as_ref().expect("a replaying task");
        if let Some(&(_, ra)) = r.ra.iter().find(|&&(f, _)| f == file) {
            return ra;
        }
        let ra = self.new_ra_state(fi);
        self.sched.tasks[leader].trace.as_mut().expect("a replaying task").ra.push((file, ra));
        ra
    }

    /// Whether the threads of trace `prog` other than `slot` have taken every event the
    /// trace has before record `seq` (or ended).
    fn trace_passed(&self, prog: u32, slot: u32, seq: u64) -> bool {
        let d = self.replays[prog as usize].as_ref().expect("a replayed trace");
        d.tids.iter().enumerate().all(|(s, t)| {
            s as u32 == slot || t.is_none_or(|t| self.sched.tasks[t].state == TaskState::Done || d.head(s as u32) > seq)
        })
    }

    /// Wakes the threads of trace `prog` waiting in an [`Ev::Sync`] that may go on.
    fn trace_wake_waiters(&mut self, prog: u32) {
        loop {
            let d = self.replays[prog as usize].as_mut().expect("a replayed trace");
            d.recheck = false;
            let d = self.replays[prog as usize].as_ref().expect("a replayed trace");
            let ready = d.waiting.iter().position(|&(seq, slot)| {
                let t = d.tids[slot as usize].expect("a waiting thread has a task");
                self.sched.tasks[t].state != TaskState::WaitThreads || self.trace_passed(prog, slot, seq)
            });
            let Some(k) = ready else { return };
            let d = self.replays[prog as usize].as_mut().expect("a replayed trace");
            let t = d.tids[d.waiting[k].1 as usize].expect("a waiting thread has a task");
            d.unwait(k);
            // One that was killed while it waited only leaves the list.
            if self.sched.tasks[t].state == TaskState::WaitThreads {
                self.sched.tasks[t].state = TaskState::Runnable;
                self.wake_up(t);
            }
        }
    }

    /// Replaying task `tid` exited: threads waiting for it may go on.
    pub(crate) fn trace_thread_exited(&mut self, tid: Tid) {
        let prog = self.sched.tasks[tid].trace.as_ref().expect("a replaying task").prog;
        if self.replays[prog as usize].as_ref().is_some_and(|d| !d.waiting.is_empty()) {
            self.trace_wake_waiters(prog);
        }
    }

    /// `de_thread` at an exec, and `zap_other_threads` at exit_group: every other thread of
    /// task `tid`'s process ends. At an exec by a thread other than the leader, that thread
    /// takes the leader's place (its pid, its parent, its address space).
    fn zap_other_threads(&mut self, tid: Tid, exec: bool) {
        let leader = self.mm_task(tid);
        for t in self.other_threads(tid) {
            if t == leader {
                continue;
            }
            self.kill_task(t);
        }
        if leader == tid || self.sched.tasks[leader].state == TaskState::Done {
            return;
        }
        if !exec {
            // exit_group: the leader too (the process ends when the caller has).
            self.kill_task(leader);
        } else {
            // The leader ends without its process ending: the exec'ing thread goes on as it.
            let mm = std::mem::take(&mut self.sched.tasks[leader].mm);
            for &(_, v) in &mm {
                self.mm.vmas[v].task = tid;
            }
            let l = &mut self.sched.tasks[leader];
            let (parent, threads, children) = (l.parent.take(), l.threads, std::mem::take(&mut l.children));
            let t = &mut self.sched.tasks[tid];
            t.mm = mm;
            t.parent = parent;
            t.children += children;
            t.leader = None;
            // The old leader ends as one of its threads (the count it had, `tid` among them),
            // with nothing left to release.
            t.threads = threads;
            let l = &mut self.sched.tasks[leader];
            l.threads = 0;
            l.leader = Some(tid);
            self.kill_task(leader);
        }
    }

    /// Asks for the cache lines an access to page `idx` of region `region` by task `tid` will
    /// read: its PTE and, in a file mapping, the page's page-cache slot and shadow entry and
    /// the slots of its fault-around window. Those are random lines of large arrays when the
    /// trace's pages are; asked for a few accesses ahead, they come while the task's
    /// accesses before run. A hint only. (Asking for the page cache's lines only when the
    /// PTE, asked for earlier, says the access will fault was no faster.)
    fn prefetch_access(&self, tid: Tid, region: u32, idx: u32) {
        let Some(v) = self.sched.tasks[self.mm_task(tid)].vma_of(region) else { return };
        let vma = &self.mm.vmas[v];
        let file = vma.file.map(|fi| &self.pc.files[fi]);
        prefetch_page(&vma.pte, file, self.profile.fault_around, vma.pgoff + idx);
    }

    /// Another tool's trace ([`crate::replay::TraceInfo::refs`]: one mapping's references,
    /// no CPU time between them): the hits among the references read (a present PTE that
    /// allows the access) taken in one tight loop, as [`Sim::replay_next`] takes each: the
    /// PTE made young (and dirty for a store), the operation counted, the cache lines of
    /// the access `PREFETCH_AHEAD` later asked for. Stops before the first that faults.
    fn replay_ref_hits(&mut self, tid: Tid, prog: u32, region_base: u32) {
        let Some(pending) = self.replays[prog as usize].as_ref().and_then(|d| d.pending_refs()) else { return };
        if pending.is_empty() {
            return;
        }
        #[cfg(test)]
        if !tests::REF_HIT_LOOP.with(|on| on.get()) {
            return;
        }
        let mm = self.mm_task(tid);
        // Not mapped yet: the first access maps it (replay_next).
        let Some(v) = self.sched.tasks[mm].vma_of(region_base) else { return };
        let vma = &mut self.mm.vmas[v];
        let file = vma.file.map(|fi| &self.pc.files[fi]);
        let around = self.profile.fault_around;
        let mut n = 0;
        for (k, &r) in pending.iter().enumerate() {
            if let Some(&a) = pending.get(k + 1 + PREFETCH_AHEAD) {
                prefetch_page(&vma.pte, file, around, crate::replay::decode_ref(a).0);
            }
            let (idx, write) = crate::replay::decode_ref(r);
            let idx = idx as usize;
            let Some(&e) = vma.pte.get(idx) else { break };
            let need = if write { pte::WRITE } else { 0 };
            if !pte::is_present(e) || e & need != need {
                break;
            }
            vma.pte[idx] = e | pte::YOUNG | if write { pte::DIRTY } else { 0 };
            n += 1;
        }
        if n > 0 {
            self.replays[prog as usize].as_mut().expect("a replay").take_refs(n);
            self.sched.ops_done += n as u64;
            #[cfg(test)]
            tests::REF_HITS_LOOPED.with(|c| c.set(c.get() + n as u64));
        }
    }

    /// The replaying task `tid`'s events until one faults, starts a file call, sleeps or
    /// ends the process, or the burst limit: the replay's [`Sim::hit_loop`].
    pub(crate) fn replay_next(&mut self, tid: Tid, cpu: u32, limit: u64) -> Next {
        loop {
            if self.sched.now >= limit {
                return Next::Stop;
            }
            let r = self.sched.tasks[tid].trace.as_mut().expect("a replaying task");
            let (prog, slot, region_base) = (r.prog, r.slot, r.region_base);
            self.replay_ref_hits(tid, prog, region_base);
            let ev = match self.replays[prog as usize].as_mut().map(|d| d.next(slot)) {
                Some(Ok(Some(ev))) => ev,
                Some(Ok(None)) | None => return Next::Exit,
                Some(Err(e)) => {
                    self.replay_error.get_or_insert(e.to_string());
                    return Next::Exit;
                }
            };
            if self.replays[prog as usize].as_ref().is_some_and(|d| d.recheck) {
                self.trace_wake_waiters(prog);
            }
            if let Some(Ev::Access { inst, idx, .. }) =
                self.replays[prog as usize].as_ref().and_then(|d| d.peek(slot, PREFETCH_AHEAD))
            {
                self.prefetch_access(tid, region_base + inst, idx);
            }
            let r = self.sched.tasks[tid].trace.as_mut().expect("a replaying task");
            let ns = r.cpu_ns(ev.insns());
            self.sched.now += ns;
            match ev {
                Ev::Access { inst, idx, write, .. } => {
                    let region = region_base + inst;
                    let mm = self.mm_task(tid);
                    let vma = match self.sched.tasks[mm].vma_of(region) {
                        Some(v) => v,
                        None => {
                            let reg = &self.procs.regions[region as usize];
                            let pages = reg.pgoff as u32 + reg.size.div_ceil(4096) as u32;
                            self.map_region(mm, region, pages)
                        }
                    };
                    // A file mapping's page `idx` is file page `pgoff + idx` (the program's
                    // text at its offset in the ELF file), and its PTEs are indexed so.
                    let idx = self.mm.vmas[vma].pgoff + idx;
                    let e = self.mm.vmas[vma].pte[idx as usize];
                    let need = if write { pte::WRITE } else { 0 };
                    if !pte::is_present(e) || e & need != need {
                        return Next::Fault(vma, idx, write);
                    }
                    // Its time is in the instructions before it (the native run's CPU time
                    // per instruction covers its loads and stores).
                    self.mm.vmas[vma].pte[idx as usize] = e | pte::YOUNG | if write { pte::DIRTY } else { 0 };
                    self.sched.ops_done += 1;
                }
                Ev::FileIo { file, page, pages, write, .. } => {
                    let fi = self.replay_file(tid, file);
                    if write {
                        self.file_write_begin(tid, fi, page, pages as u64, false);
                    } else {
                        let ra = self.replay_ra(tid, file, fi);
                        self.file_read_begin(tid, fi, ra, page, pages as u64);
                    }
                    return Next::Again;
                }
                Ev::Fadvise { file, advice, page, pages, .. } => {
                    let fi = self.replay_file(tid, file);
                    let nr = if pages == 0 { self.pc.files[fi].i_size.saturating_sub(page) } else { pages };
                    // POSIX_FADV_NORMAL, RANDOM, SEQUENTIAL, WILLNEED; DONTNEED and NOREUSE
                    // are not modelled (docs/model.md, "Traces").
                    let advice = match advice {
                        0 => Some(Advice::Normal),
                        1 => Some(Advice::Random),
                        2 => Some(Advice::Sequential),
                        3 => Some(Advice::WillNeed { index: page, nr }),
                        _ => None,
                    };
                    if let Some(advice) = advice {
                        let ra = self.replay_ra(tid, file, fi);
                        if self.file_fadvise(tid, cpu, fi, ra, advice) {
                            return Next::Sleeps;
                        }
                    }
                }
                Ev::Fsync { file, .. } => {
                    let fi = self.replay_file(tid, file);
                    self.file_sync_begin(tid, fi, SyncOp::Fsync, true);
                    return Next::Again;
                }
                Ev::Truncate { file, .. } => {
                    let fi = self.replay_file(tid, file);
                    self.ext4_truncate(tid, fi);
                    return Next::Again;
                }
                Ev::Release { file, .. } => {
                    let fi = self.replay_file(tid, file);
                    if self.ext4_release_file(tid, fi) {
                        return Next::Again;
                    }
                }
                Ev::Evict { file, .. } => {
                    let fi = self.replay_file(tid, file);
                    self.evict_inode(tid, fi);
                    return Next::Again;
                }
                Ev::Unmap { inst, .. } => self.munmap_region(self.mm_task(tid), region_base + inst),
                Ev::Fork { child, .. } | Ev::Clone { child, .. } => {
                    // A process's children are its leader's, whichever thread forked them.
                    let c = match ev {
                        Ev::Fork { .. } => self.new_process(self.mm_task(tid), prog, true),
                        _ => self.new_thread(tid, prog),
                    };
                    let own = self.sched.tasks[tid].trace.as_ref().expect("a replaying task").child(child);
                    self.sched.tasks[c].trace = Some(own);
                    self.replays[prog as usize].as_mut().expect("a replayed trace").tids[child as usize] = Some(c);
                    // The burst ends here so that the child runs beside its parent on
                    // another CPU from now on rather than after the parent's slice
                    // (`wake_up_new_task` puts it on an idle CPU); on a busy machine the
                    // parent goes on first (the child's wakeup is queued behind it).
                    self.wake(tid, self.sched.now);
                    self.wake_up(c);
                    return Next::Sleeps;
                }
                Ev::Wait { .. } => {
                    if self.sched.tasks[self.mm_task(tid)].children > 0 {
                        self.sched.tasks[tid].state = TaskState::WaitChild;
                        self.block(tid);
                        return Next::Sleeps;
                    }
                }
                Ev::Sync { seq } => {
                    if !self.trace_passed(prog, slot, seq) {
                        self.replays[prog as usize].as_mut().expect("a replayed trace").wait(seq, slot);
                        self.sched.tasks[tid].state = TaskState::WaitThreads;
                        self.block(tid);
                        // Its own next event is at `seq` now: an earlier waiter may go on
                        // (or itself, when every other thread waits for a later record).
                        self.trace_wake_waiters(prog);
                        return Next::Sleeps;
                    }
                }
                Ev::Exec { .. } => {
                    self.zap_other_threads(tid, true);
                    self.charge(self.cost.exec_ns);
                    self.exit_mmap(self.mm_task(tid));
                }
                Ev::Exit { .. } => return Next::Exit,
                Ev::ExitGroup { .. } => {
                    self.zap_other_threads(tid, false);
                    return Next::Exit;
                }
                Ev::Other { .. } => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::ids::Tid;
    use crate::mm::vmstat::Counter;
    use crate::tracefile::pgt::{nr, File, Header, Record, Stream, Writer};

    thread_local! {
        /// `replay_ref_hits` takes hits in its loop (off: each goes through replay_next).
        pub(super) static REF_HIT_LOOP: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
        /// The hits it took so.
        pub(super) static REF_HITS_LOOPED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    /// A trace pagesim capture could have written of a program that maps 64 anonymous
    /// pages and writes each, forks a child that writes pages 5 and 6 and exits, waits for
    /// it, then reads 256 KiB of a 1 MiB file, fsyncs it (and stdout) and exits; written to
    /// a file of its own.
    fn fork_trace() -> String {
        let base = 0x1000_0000u64 / 4096;
        let sys =
            |stream, nr, args, ret, file| Record::Syscall { stream, nr, insns: 1000, time_ns: 0, args, ret, file };
        let mut recs = vec![Record::Stream(Stream { pid: 100, tid: 100, parent: 1, image: 0, start_ns: 0 })];
        recs.push(sys(0, nr::MMAP, [0, 64 * 4096, 3, 0x22, u64::MAX, 0], 0x1000_0000, None));
        for i in 0..64 {
            recs.push(Record::Access { stream: 0, vpn: base + i, write: true, insns: 100 });
        }
        recs.push(sys(0, nr::FORK, [0; 6], 101, None));
        recs.push(Record::Stream(Stream { pid: 101, tid: 101, parent: 100, image: 0, start_ns: 5 }));
        recs.push(sys(1, nr::FORK, [0; 6], 0, None));
        recs.push(Record::Access { stream: 1, vpn: base + 5, write: true, insns: 10 });
        recs.push(Record::Access { stream: 1, vpn: base + 6, write: true, insns: 10 });
        recs.push(sys(1, nr::EXIT_GROUP, [0; 6], 0, None));
        recs.push(sys(0, nr::WAIT4, [u64::MAX, 0, 0, 0, 0, 0], 101, None));
        recs.push(Record::File(File { path: "/data/in".into(), size: 1 << 20, ino: 7 }));
        recs.push(sys(0, nr::OPENAT, [0; 6], 3, Some(0)));
        recs.push(sys(0, nr::READ, [3, 0, 256 << 10, 0, 0, 0], 256 << 10, None));
        // An fsync of the file is an operation; one of stdout (not a file here) is not.
        recs.push(sys(0, nr::FSYNC, [3, 0, 0, 0, 0, 0], 0, None));
        recs.push(sys(0, nr::FSYNC, [1, 0, 0, 0, 0, 0], 0, None));
        recs.push(sys(0, nr::EXIT_GROUP, [0; 6], 0, None));
        let tag = format!("fork-{:?}", std::thread::current().id());
        write_trace(&tag, Some(0.5), &recs).to_string_lossy().into_owned()
    }

    /// Writes records `recs` as a trace with `ns_per_insn` in its header, in a directory of
    /// its own named by `tag` (the caller removes it); returns the trace's path.
    fn write_trace(tag: &str, ns_per_insn: Option<f64>, recs: &[Record]) -> std::path::PathBuf {
        let header = Header { k: 1, command: vec!["t".into()], ns_per_insn, tool: "test".into(), cwd: None };
        let mut w = Writer::new(Vec::new(), &header).unwrap();
        for r in recs {
            w.record(r).unwrap();
        }
        let dir = std::env::temp_dir().join(format!("pagesim-replay-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.pgt");
        std::fs::write(&path, w.finish().unwrap()).unwrap();
        path
    }

    fn scenario(trace: &str) -> String {
        format!(
            "[machine]\nram = \"64MB\"\n[device.d]\nmodel = \"nvme\"\n\
             [[task]]\nname = \"prog\"\nprogram = {{ trace = \"{trace}\" }}\n"
        )
    }

    /// The replay makes the process tree the trace recorded (the child started by its
    /// parent's fork, the parent waiting for it), faults each page the program wrote once,
    /// copies the two pages the child wrote after the fork, reads the file through the
    /// page cache, and does every operation of the trace.
    #[test]
    fn a_replayed_fork_makes_the_same_process_tree_and_faults() {
        let trace = fork_trace();
        let mut s = crate::testutil::sim_from(&scenario(&trace), &[]);
        let before = s.mm.vmstat.get(Counter::PgFault);
        assert_eq!(s.run(&mut None), crate::engine::RunEnd::Completed);
        let _ = std::fs::remove_dir_all(std::path::Path::new(&trace).parent().unwrap());
        let (p, c) = (&s.sched.tasks[Tid(0)], &s.sched.tasks[Tid(1)]);
        assert_eq!((p.name.as_str(), c.name.as_str()), ("prog", "prog.0"));
        assert_eq!(c.parent, Some(Tid(0)));
        assert_eq!((p.state, c.state), (crate::engine::TaskState::Done, crate::engine::TaskState::Done));
        assert!(c.end_ns <= p.end_ns, "the parent waited for its child");
        // 64 first touches, two copy-on-write faults in the child.
        assert_eq!(s.mm.vmstat.get(Counter::PgFault) - before, 66);
        assert_eq!((p.faults, c.faults), (64, 2), "the child's writes copy");
        // 256 KiB read with its readahead.
        assert!(s.mm.vmstat.get(Counter::PgpgIn) >= 256, "{}", s.mm.vmstat.get(Counter::PgpgIn));
        assert_eq!(s.sched.ops_done, s.sched.ops_total);
        assert_eq!(s.sched.ops_total, 64 + 2 + 1 + 1);
    }

    /// A trace of a process of two threads: the main one maps 64 anonymous pages and clones
    /// a thread (tid 101) that writes each of them, slowly, and exits; the main thread then
    /// (after a futex wait that returned, its join) reads each page and the process exits.
    /// With `reads_first`, the main thread's reads come first in the trace instead (it ran
    /// before the thread did), without a wait.
    fn thread_records(reads_first: bool) -> Vec<Record> {
        let base = 0x1000_0000u64 / 4096;
        let sys =
            |stream, nr, args, ret, file| Record::Syscall { stream, nr, insns: 1000, time_ns: 0, args, ret, file };
        let mut recs = vec![Record::Stream(Stream { pid: 100, tid: 100, parent: 1, image: 0, start_ns: 0 })];
        recs.push(sys(0, nr::MMAP, [0, 64 * 4096, 3, 0x22, u64::MAX, 0], 0x1000_0000, None));
        // CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM...
        recs.push(sys(0, nr::CLONE, [0x3d0f00, 0, 0, 0, 0, 0], 101, None));
        let reads: Vec<Record> =
            (0..64).map(|i| Record::Access { stream: 0, vpn: base + i, write: false, insns: 10 }).collect();
        if reads_first {
            recs.extend(reads.iter().cloned());
        }
        recs.push(Record::Stream(Stream { pid: 100, tid: 101, parent: 1, image: 0, start_ns: 5 }));
        for i in 0..64 {
            recs.push(Record::Access { stream: 1, vpn: base + i, write: true, insns: 100_000 });
        }
        recs.push(sys(1, nr::EXIT, [0; 6], 0, None));
        if !reads_first {
            // FUTEX_WAIT | FUTEX_PRIVATE_FLAG on the thread's tid word, woken.
            recs.push(sys(0, nr::FUTEX, [0x7000, 128, 101, 0, 0, 0], 0, None));
            recs.extend(reads);
        }
        recs.push(sys(0, nr::EXIT_GROUP, [0; 6], 0, None));
        recs
    }

    /// A cloned thread replays in a task of its own that shares its process's address
    /// space: the pages it writes are the main thread's, which reads them after its join
    /// without a fault of its own. Where the trace has the main thread's reads before the
    /// thread's writes, it reads them first (faults of its own), and its exit still waits
    /// for the thread's (the trace has it after).
    #[test]
    fn a_replayed_thread_shares_the_address_space_and_a_join_waits_for_it() {
        let s = run_records("threads-join", &thread_records(false), &[]);
        let (m, t) = (&s.sched.tasks[Tid(0)], &s.sched.tasks[Tid(1)]);
        assert_eq!((m.name.as_str(), t.name.as_str()), ("prog", "prog.0"));
        assert_eq!((t.leader, t.parent, m.threads), (Some(Tid(0)), None, 0));
        assert_eq!((m.state, t.state), (crate::engine::TaskState::Done, crate::engine::TaskState::Done));
        assert_eq!((m.faults, t.faults), (0, 64), "one address space: the main thread's reads hit");
        assert!(t.end_ns <= m.end_ns, "the main thread joined the thread");
        assert!(t.mm.is_empty() && m.mm.is_empty(), "the address space was the leader's, and went at the end");
        assert_eq!(s.sched.ops_done, s.sched.ops_total);
        assert_eq!(s.sched.ops_total, 128);

        let s = run_records("threads-reads-first", &thread_records(true), &[]);
        let (m, t) = (&s.sched.tasks[Tid(0)], &s.sched.tasks[Tid(1)]);
        assert_eq!(m.faults, 64, "the main thread read first");
        assert_eq!(s.sched.ops_done, s.sched.ops_total, "its exit_group waited for the thread's exit");
        assert!(t.end_ns <= m.end_ns);
    }

    /// A thread idle for more than `GAP` records of the others (here the main thread's
    /// 4 x GAP loads between the thread's two stores) does not have them read ahead and
    /// queued when it asks for its next event: it waits for the main thread to get there,
    /// so the queues stay under the gap, and every event is still replayed.
    #[test]
    fn a_thread_idle_for_a_long_gap_waits_instead_of_queueing_the_others_events() {
        let base = 0x1000_0000u64 / 4096;
        let gap = crate::replay::GAP;
        let sys = |stream, nr, args, ret| Record::Syscall { stream, nr, insns: 10, time_ns: 0, args, ret, file: None };
        let mut recs = vec![Record::Stream(Stream { pid: 100, tid: 100, parent: 1, image: 0, start_ns: 0 })];
        recs.push(sys(0, nr::MMAP, [0, 64 * 4096, 3, 0x22, u64::MAX, 0], 0x1000_0000));
        recs.push(sys(0, nr::CLONE, [0x3d0f00, 0, 0, 0, 0, 0], 101));
        recs.push(Record::Stream(Stream { pid: 100, tid: 101, parent: 1, image: 0, start_ns: 5 }));
        recs.push(Record::Access { stream: 1, vpn: base, write: true, insns: 10 });
        for i in 0..4 * gap {
            recs.push(Record::Access { stream: 0, vpn: base + 1 + i % 8, write: false, insns: 10 });
        }
        recs.push(Record::Access { stream: 1, vpn: base + 20, write: true, insns: 10 });
        recs.push(sys(1, nr::EXIT, [0; 6], 0));
        recs.push(sys(0, nr::EXIT_GROUP, [0; 6], 0));
        let s = run_records("threads-gap", &recs, &["machine.cpus=2"]);
        assert_eq!(s.sched.ops_done, s.sched.ops_total);
        assert_eq!(s.sched.ops_total, 2 + 4 * gap);
        let peak = s.replays[0].as_ref().unwrap().peak_queued as u64;
        assert!(peak < 2 * gap, "{peak} events queued at once");
    }

    /// An exec by a thread that is not the leader (`de_thread`) while the leader still runs:
    /// the leader ends there (the rest of its events not replayed), and the thread goes on as
    /// the process with its address space (the exec tears it down) until its own exit; the
    /// run ends with both done and nothing mapped.
    #[test]
    fn an_exec_by_another_thread_takes_the_leaders_place() {
        let base = 0x1000_0000u64 / 4096;
        let sys = |stream, nr, args, ret| Record::Syscall { stream, nr, insns: 10, time_ns: 0, args, ret, file: None };
        let mut recs = vec![
            Record::Stream(Stream { pid: 100, tid: 100, parent: 1, image: 0, start_ns: 0 }),
            sys(0, nr::MMAP, [0, 64 * 4096, 3, 0x22, u64::MAX, 0], 0x1000_0000),
            sys(0, nr::CLONE, [0x3d0f00, 0, 0, 0, 0, 0], 101),
        ];
        // The leader computes on while the thread runs beside it on the other CPU.
        recs.extend((1..33).map(|i| Record::Access { stream: 0, vpn: base + i, write: true, insns: 1_000_000 }));
        recs.extend([
            Record::Stream(Stream { pid: 100, tid: 101, parent: 1, image: 0, start_ns: 5 }),
            Record::Access { stream: 1, vpn: base, write: true, insns: 10 },
            sys(1, nr::EXECVE, [0; 6], 0),
            sys(1, nr::EXIT_GROUP, [0; 6], 0),
        ]);
        let s = run_records("threads-exec", &recs, &["machine.cpus=2"]);
        let (m, t) = (&s.sched.tasks[Tid(0)], &s.sched.tasks[Tid(1)]);
        assert_eq!((m.state, t.state), (crate::engine::TaskState::Done, crate::engine::TaskState::Done));
        assert_eq!((t.leader, m.leader), (None, Some(Tid(1))), "the thread took the leader's place");
        assert_eq!((m.threads, t.threads), (0, 0));
        assert!(m.mm.is_empty() && t.mm.is_empty());
        assert_eq!(t.faults, 1);
        assert!(s.sched.ops_done < s.sched.ops_total, "the leader ended before its last accesses");
        assert_eq!(s.sched.live, 0);
    }

    /// exit_group ends the process's other threads (`zap_other_threads`): a thread still
    /// reading a file when the main thread exits ends there, the rest of its events not
    /// replayed, and the process's address space goes once both have ended.
    #[test]
    fn exit_group_ends_the_other_threads() {
        let sys = |stream, nr, args, ret, file| Record::Syscall { stream, nr, insns: 10, time_ns: 0, args, ret, file };
        let recs = vec![
            Record::Stream(Stream { pid: 100, tid: 100, parent: 1, image: 0, start_ns: 0 }),
            Record::File(File { path: "/data/f".into(), size: 8 << 20, ino: 9 }),
            sys(0, nr::OPENAT, [0; 6], 3, Some(0)),
            sys(0, nr::CLONE, [0x3d0f00, 0, 0, 0, 0, 0], 101, None),
            Record::Stream(Stream { pid: 100, tid: 101, parent: 1, image: 0, start_ns: 5 }),
            // 8 MiB in 1 MiB reads: the thread waits for the device.
            sys(1, nr::PREAD64, [3, 0, 1 << 20, 0, 0, 0], 1 << 20, None),
            sys(1, nr::PREAD64, [3, 0, 1 << 20, 1 << 20, 0, 0], 1 << 20, None),
            sys(1, nr::PREAD64, [3, 0, 1 << 20, 2 << 20, 0, 0], 1 << 20, None),
            sys(1, nr::PREAD64, [3, 0, 1 << 20, 3 << 20, 0, 0], 1 << 20, None),
            sys(0, nr::EXIT_GROUP, [0; 6], 0, None),
        ];
        let s = run_records("threads-exit-group", &recs, &["device.d.read_latency=\"5ms\""]);
        let (m, t) = (&s.sched.tasks[Tid(0)], &s.sched.tasks[Tid(1)]);
        assert_eq!((m.state, t.state), (crate::engine::TaskState::Done, crate::engine::TaskState::Done));
        assert!(s.sched.ops_done < s.sched.ops_total, "{} of {}", s.sched.ops_done, s.sched.ops_total);
        assert!(t.end_ns <= m.end_ns + 1, "{} {}", t.end_ns, m.end_ns);
        assert_eq!(s.sched.live, 0);
    }

    /// A trace task's errors name its key: a trace that is not there, steps besides the
    /// trace, a count, a device the scenario does not have.
    #[test]
    fn a_trace_task_is_checked() {
        let load =
            |text: &str| crate::scenario::Scenario::from_toml(text, "test.toml", &[]).err().map(|e| e.to_string());
        let e = load(&scenario("/nonexistent/t.pgt")).unwrap();
        assert!(e.contains("task[0].program.trace") && e.contains("/nonexistent/t.pgt"), "{e}");
        let trace = fork_trace();
        let e = load(&(scenario(&trace) + "[[task.step]]\nregion = \"a\"\n")).unwrap();
        assert!(e.contains("task[0].step") && e.contains("no steps"), "{e}");
        let e = load(&scenario(&trace).replace("name = \"prog\"", "name = \"prog\"\ncount = 2")).unwrap();
        assert!(e.contains("task[0].count") && e.contains("runs once"), "{e}");
        let e = load(&scenario(&trace).replace("\" }", "\", device = \"x\" }")).unwrap();
        assert!(e.contains("task[0].program.device") && e.contains("no device named \"x\""), "{e}");
        assert!(load(&scenario(&trace)).is_none());
        // Written out (what the host's load generator reads), it resolves to itself: the
        // trace's files and mappings are made again, not written twice.
        let sc = crate::scenario::Scenario::from_toml(&scenario(&trace), "test.toml", &[]).unwrap();
        let v = serde_json::to_value(&sc.config).unwrap();
        let again = crate::scenario::Scenario::from_json(&v, "again.json", &[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(serde_json::to_value(&again.config).unwrap(), v);
        assert_eq!(
            (again.config.file.len(), again.config.region.len()),
            (sc.config.file.len(), sc.config.region.len())
        );
        let _ = std::fs::remove_dir_all(std::path::Path::new(&trace).parent().unwrap());
    }

    /// Another tool's trace replays as loads of its pages through one file's mapping: each
    /// distinct page is read from the device once while the memory holds them all (a major
    /// fault each, no read-around), and stores dirty the file.
    #[test]
    fn a_page_trace_loads_each_distinct_page_once_when_it_fits() {
        let dir = std::env::temp_dir().join(format!("pagesim-replay-refs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.csv");
        // Pages 100..110 of space "a" (a CSV page number), twice, the second pass storing.
        let mut text = String::new();
        for pass in 0..2 {
            for p in 100..110 {
                text += &format!("{},{},{p}\n", pass * 10 + p, if pass == 0 { "r" } else { "w" });
            }
        }
        std::fs::write(&path, text).unwrap();
        let sc = format!(
            "[machine]\nram = \"64MB\"\n[device.d]\nmodel = \"nvme\"\n\
             [[task]]\nname = \"t\"\nprogram = {{ trace = \"{}\", format = \"plain\" }}\n",
            path.display()
        );
        let mut s = crate::testutil::sim_from(&sc, &[]);
        assert_eq!(s.run(&mut None), crate::engine::RunEnd::Completed);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(s.mm.vmstat.get(Counter::PgMajFault), 10, "one read per distinct page");
        assert_eq!((s.sched.ops_done, s.sched.ops_total), (20, 20));
        assert!(s.mm.vmstat.get(Counter::NrDirtied) >= 10, "the stores dirtied the file's pages");
    }

    /// The hits of another tool's trace taken in `replay_ref_hits`' loop change nothing
    /// against taking each as an event: a trace of loads and stores over 3,000 pages, a
    /// few hot, in a memcg of 200 pages (reclaim reads the young bits the hits set,
    /// writeback the dirty ones), gives the same counters either way.
    #[test]
    fn a_page_traces_hits_in_one_loop_change_nothing() {
        let dir = std::env::temp_dir().join(format!("pagesim-replay-hits-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.csv");
        let mut rng = crate::rng::Rng::new(7);
        let mut text = String::new();
        for t in 0..20_000u64 {
            let r = rng.below(100);
            let page = if r < 60 { rng.below(40) } else { rng.below(3000) };
            text += &format!("{t},{},{page}\n", if rng.below(4) == 0 { "w" } else { "r" });
        }
        std::fs::write(&path, text).unwrap();
        let sc = format!(
            "[machine]\nram = \"64MB\"\n[device.d]\nmodel = \"nvme\"\n[memcg.m]\nmax = \"800KB\"\n\
             [[task]]\nname = \"t\"\nmemcg = \"m\"\nprogram = {{ trace = \"{}\", format = \"plain\" }}\n",
            path.display()
        );
        let run = |looped: bool| {
            REF_HIT_LOOP.with(|on| on.set(looped));
            let mut s = crate::testutil::sim_from(&sc, &[]);
            assert_eq!(s.run(&mut None), crate::engine::RunEnd::Completed);
            REF_HIT_LOOP.with(|on| on.set(true));
            (s.mm.vmstat.clone(), s.sched.ops_done, s.sched.now, REF_HITS_LOOPED.with(|n| n.replace(0)))
        };
        let (each, looped) = (run(false), run(true));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(each.3, 0);
        assert!(looped.3 > 5_000, "{} hits taken in the loop", looped.3);
        assert!(each.0.get(Counter::WorkingsetRefaultFile) > 100, "reclaim evicted pages read again");
        assert!(each.0.get(Counter::NrDirtied) > 100, "the stores dirtied pages");
        for c in Counter::ALL {
            assert_eq!(each.0.get(c), looped.0.get(c), "{}", c.name());
        }
        assert_eq!((each.1, each.2), (looped.1, looped.2), "operations and elapsed time");
    }

    /// A trace's posix_fadvise reaches the file's readahead state: after POSIX_FADV_RANDOM
    /// a 64 KiB read(2) reads those 16 pages and no more; without it, readahead reads past
    /// them.
    #[test]
    fn fadvise_random_turns_the_files_readahead_off() {
        let pgpgin = |advise: bool| {
            let sys = |nr, args, ret, file| Record::Syscall { stream: 0, nr, insns: 10, time_ns: 0, args, ret, file };
            let mut recs = vec![
                Record::Stream(Stream { pid: 5, tid: 5, parent: 1, image: 0, start_ns: 0 }),
                Record::File(File { path: "/data/f".into(), size: 4 << 20, ino: 9 }),
                sys(nr::OPENAT, [0; 6], 3, Some(0)),
            ];
            if advise {
                recs.push(sys(nr::FADVISE64, [3, 0, 0, 1, 0, 0], 0, None));
            }
            recs.push(sys(nr::READ, [3, 0, 64 << 10, 0, 0, 0], 64 << 10, None));
            recs.push(sys(nr::EXIT_GROUP, [0; 6], 0, None));
            run_records(&format!("fadv-{advise}"), &recs, &[]).mm.vmstat.get(Counter::PgpgIn)
        };
        assert_eq!(pgpgin(true), 64, "POSIX_FADV_RANDOM: the read's own pages (KiB)");
        assert!(pgpgin(false) > 64, "readahead past the read without the advice");
    }

    /// A mapping made at a file offset maps the file from that page on: a load of the
    /// second page of 4 pages mapped at offset 4 MiB of an 8 MiB file reads file page 1025
    /// (and its read-around), not page 1 (a program's text, mapped by the loader at its
    /// offset in the ELF file, is those pages of the file, not its header's).
    #[test]
    fn a_mapping_at_a_file_offset_maps_the_files_pages_from_there() {
        let sys = |nr, args, ret, file| Record::Syscall { stream: 0, nr, insns: 10, time_ns: 0, args, ret, file };
        let addr = 0x7000_0000u64;
        let recs = vec![
            Record::Stream(Stream { pid: 5, tid: 5, parent: 1, image: 0, start_ns: 0 }),
            Record::File(File { path: "/data/prog".into(), size: 8 << 20, ino: 9 }),
            sys(nr::OPENAT, [0; 6], 3, Some(0)),
            // PROT_READ | PROT_EXEC, MAP_PRIVATE, fd 3, offset 1024 pages.
            sys(nr::MMAP, [0, 4 * 4096, 5, 2, 3, 1024 * 4096], addr as i64, None),
            Record::Access { stream: 0, vpn: addr / 4096 + 1, write: false, insns: 10 },
            sys(nr::EXIT_GROUP, [0; 6], 0, None),
        ];
        let s = run_records("pgoff", &recs, &[]);
        let file = &s.pc.files[crate::ids::FileId(0)];
        assert!(file.frame(1025).is_some(), "the page the load names is cached");
        assert!(file.frame(1).is_none(), "the file's start is not read");
        assert_eq!(s.mm.vmstat.get(Counter::PgMajFault), 1);
    }

    /// Writes records `recs` as a trace ([`write_trace`]), runs a one-task scenario
    /// replaying it with `sets` to its end and returns the simulation.
    fn run_records(tag: &str, recs: &[Record], sets: &[&str]) -> crate::engine::Sim {
        let path = write_trace(tag, None, recs);
        let mut s = crate::testutil::sim_from(&scenario(&path.to_string_lossy()), sets);
        assert_eq!(s.run(&mut None), crate::engine::RunEnd::Completed);
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
        s
    }

    /// Runs a trace of one process making the file calls `calls` (each a system call record
    /// with its number, arguments, result and file) on file 0, `/data/out`, under `profile`.
    fn run_file_calls(tag: &str, profile: &str, calls: &[(u32, [u64; 6], i64, Option<u32>)]) -> crate::engine::Sim {
        let mut recs = vec![
            Record::Stream(Stream { pid: 5, tid: 5, parent: 1, image: 0, start_ns: 0 }),
            Record::File(File { path: "/data/out".into(), size: 0, ino: 9 }),
        ];
        for &(nr, args, ret, file) in calls {
            recs.push(Record::Syscall { stream: 0, nr, insns: 10, time_ns: 0, args, ret, file });
        }
        run_records(tag, &recs, &[&format!("kernel.profile=\"{profile}\"")])
    }

    const OPEN: (u32, [u64; 6], i64, Option<u32>) = (nr::OPENAT, [0, 0, 0o1101, 0, 0, 0], 3, Some(0));
    const WRITE_1M: (u32, [u64; 6], i64, Option<u32>) = (nr::WRITE, [3, 0, 1 << 20, 0, 0, 0], 1 << 20, None);
    const TRUNCATE: (u32, [u64; 6], i64, Option<u32>) = (nr::FTRUNCATE, [3, 0, 0, 0, 0, 0], 0, None);
    const CLOSE: (u32, [u64; 6], i64, Option<u32>) = (nr::CLOSE, [3, 0, 0, 0, 0, 0], 0, None);
    const EXIT: (u32, [u64; 6], i64, Option<u32>) = (nr::EXIT_GROUP, [0; 6], 0, None);

    /// ext4's auto_da_alloc: a file rewritten from size 0 (an open with O_TRUNC of a file
    /// that existed, written as open + ftruncate(fd, 0)) has its 256 dirty pages submitted
    /// for writeback when its descriptor closes, explicitly or at the exit; a file only
    /// created, or the 2.6 profiles' ext3, leaves them dirty for the flusher (far below its
    /// thresholds in this 64 MB machine, within the 30 s expiry).
    #[test]
    fn a_file_truncated_then_written_is_flushed_when_its_last_descriptor_closes() {
        let dirty = |s: &crate::engine::Sim| s.pc.files.iter().map(|f| f.nr_dirty).sum::<u64>();
        let s = run_file_calls("da1", "linux-6.18", &[OPEN, TRUNCATE, WRITE_1M, CLOSE, EXIT]);
        assert_eq!((dirty(&s), s.mm.vmstat.get(Counter::PgpgOut)), (0, 1024), "written at the close (KiB)");
        let s = run_file_calls("da2", "linux-6.18", &[OPEN, TRUNCATE, WRITE_1M, EXIT]);
        assert_eq!((dirty(&s), s.mm.vmstat.get(Counter::PgpgOut)), (0, 1024), "written at the exit's close");
        let s = run_file_calls("da3", "linux-6.18", &[OPEN, WRITE_1M, CLOSE, EXIT]);
        assert_eq!((dirty(&s), s.mm.vmstat.get(Counter::PgpgOut)), (256, 0), "never truncated: left dirty");
        let s = run_file_calls("da4", "linux-2.6.35", &[OPEN, TRUNCATE, WRITE_1M, CLOSE, EXIT]);
        assert_eq!((dirty(&s), s.mm.vmstat.get(Counter::PgpgOut)), (256, 0), "ext3: no flush on close");
        // A second descriptor (dup) keeps the description open: closing the first releases
        // nothing (the mark stays for the pages written after it), the exit does.
        let dup = (nr::DUP, [3, 0, 0, 0, 0, 0], 4, None);
        let write4 = (nr::WRITE, [4, 0, 1 << 20, 0, 0, 0], 1 << 20, None);
        let s = run_file_calls("da5", "linux-6.18", &[OPEN, TRUNCATE, dup, CLOSE, write4, EXIT]);
        assert_eq!(dirty(&s), 0, "written when the dup closed at the exit");
    }

    /// An unlinked file's pages go when nothing has it open any more, dirty ones unwritten
    /// (the kernel's eviction of the inode): at the unlink if it is closed, else at the
    /// last close.
    #[test]
    fn an_unlinked_file_loses_its_pages_at_its_last_close() {
        let cached = |s: &crate::engine::Sim| s.pc.files.iter().map(|f| f.nrpages).sum::<u64>();
        let unlink = (nr::UNLINK, [0; 6], 0, Some(0));
        let s = run_file_calls("ul1", "linux-6.18", &[OPEN, WRITE_1M, CLOSE, EXIT]);
        assert_eq!(cached(&s), 256, "kept: not unlinked");
        let s = run_file_calls("ul2", "linux-6.18", &[OPEN, WRITE_1M, CLOSE, unlink, EXIT]);
        assert_eq!((cached(&s), s.mm.vmstat.get(Counter::PgpgOut)), (0, 0), "dropped at the unlink, unwritten");
        assert_eq!(s.mm.vmstat.get(Counter::NrDirtied), 256);
        // Unlinked while open, its pages stay until the close; a read then still hits.
        let read = (nr::PREAD64, [3, 0, 1 << 20, 0, 0, 0], 1 << 20, None);
        let s = run_file_calls("ul3", "linux-6.18", &[OPEN, WRITE_1M, unlink, read, EXIT]);
        assert_eq!((cached(&s), s.mm.vmstat.get(Counter::PgpgIn)), (0, 0), "read from the cache, dropped at the exit");
        let s = run_file_calls("ul4", "linux-6.18", &[OPEN, WRITE_1M, unlink, CLOSE]);
        assert_eq!(cached(&s), 0, "dropped at the close");
    }
}
