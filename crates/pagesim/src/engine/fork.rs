//! Models the process lifecycle of kernel/fork.c, fs/exec.c and kernel/exit.c: a process
//! starting a program (`execve`: the old address space torn down, the program's mappings
//! made), `fork` (`copy_process` → `dup_mmap` → `copy_page_range`: private anon pages
//! shared read-only and copy-on-write, swap entries duplicated; shared file and shmem
//! mappings are made again and filled by faults, as the kernel skips copying their PTEs),
//! `make -jN`'s job server (fork and exec of each job, at most N running), `wait`, and
//! `do_exit` (`exit_mmap`, then the parent is woken). The lifecycle steps of a program
//! (workload/) run here; engine/mmap.rs makes and tears down the mappings.
//!
//! Every process has a slot (`Tid`) fixed at the start of the run: those the run starts
//! with, then one per child that spawn and fork steps will start, taken in the order they
//! start (`Programs::next_slot`).

use crate::engine::{Sim, StepTarget, Task, TaskState};
use crate::ids::{Tid, VmaId};
use crate::mm::swapops::Entry;
use crate::mm::{pte, Owner};
use crate::scenario::config::{Control, Target};
use crate::scenario::AccessOp;
use crate::workload::BoundStep;

/// What a lifecycle step did.
pub(crate) enum Ctl {
    /// It is done: the task goes on with its next step.
    Done,
    /// The task waits for a child to exit.
    Waits,
    /// The task runs a new program from its first step (exec).
    Exec,
}

impl Sim {
    /// Binds program `prog` to task `tid` as its next run: its steps, the files they open
    /// (run r reads run r's copies of per-task files), and its mappings, made now in the
    /// order the steps first name them (a region the process already maps, inherited by a
    /// fork, is kept).
    pub(crate) fn start_program(&mut self, tid: Tid, prog: u32) {
        let p = &mut self.procs.progs[prog as usize];
        let run = p.runs_begun as usize;
        p.runs_begun += 1;
        if let Some(cpus) = &p.cpus {
            self.sched.tasks[tid].cpus = Some(cpus.clone());
        }
        let nsteps = p.steps.len();
        let mut steps = Vec::with_capacity(nsteps);
        let mut targets = Vec::with_capacity(nsteps);
        for j in 0..nsteps {
            let st = &self.procs.progs[prog as usize].steps[j];
            let (target, pages) = match &st.target {
                Target::File(fs) => {
                    let (fi, shared_fd) = (crate::ids::FileId(fs.extents[run]), fs.shared_fd);
                    let shared = shared_fd.then(|| self.procs.progs[prog as usize].shared_ra[j]).flatten();
                    let ra = match shared {
                        Some(ra) => ra,
                        None => {
                            let ra = self.new_ra_state(fi);
                            if shared_fd {
                                self.procs.progs[prog as usize].shared_ra[j] = Some(ra);
                            }
                            ra
                        }
                    };
                    (StepTarget::File { file: fi, ra }, self.procs.progs[prog as usize].step_pages[j])
                }
                &Target::Region { index: r, .. } => {
                    let v = match self.sched.tasks[tid].vma_of(r) {
                        Some(v) => v,
                        None => {
                            let pages = self.procs.regions[r as usize].size.div_ceil(4096) as u32;
                            self.map_region(tid, r, pages)
                        }
                    };
                    (StepTarget::Vma(v), self.mm.vmas[v].pages)
                }
                Target::Control(_) => (StepTarget::Control, 1),
            };
            steps.push(BoundStep::new(&self.procs.progs[prog as usize].steps[j], pages));
            targets.push(target);
        }
        let now = self.sched.now;
        let t = &mut self.sched.tasks[tid];
        t.prog = prog;
        t.steps = steps;
        t.targets = targets;
        t.step_end_ns = vec![0; nsteps];
        t.cur = crate::workload::Cursor { step_start_ns: now, ..Default::default() };
    }

    /// Rebinds the steps of task `tid` from the current one on that access region `r` to
    /// its mapping `v` of `pages` pages (after brk, or a mapping made again).
    fn rebind_region_steps(&mut self, tid: Tid, r: u32, v: VmaId) {
        let pages = self.mm.vmas[v].pages;
        let t = &self.sched.tasks[tid];
        let prog = t.prog as usize;
        let from = t.cur.step;
        for j in from..t.steps.len() {
            let st = &self.procs.progs[prog].steps[j];
            if !matches!(st.target, Target::Region { index, .. } if index == r) {
                continue;
            }
            let t = &mut self.sched.tasks[tid];
            t.targets[j] = StepTarget::Vma(v);
            if t.steps[j].pages != pages && (j > from || t.cur.done == 0) {
                t.steps[j] = BoundStep::new(st, pages);
            }
        }
    }

    /// How many more operations task `tid`'s steps over heap region `r`, up to its next brk,
    /// make at a drawn heap of `drawn` bytes than at the `nominal` size the run's total
    /// counted them at (`workload::program_ops`).
    fn brk_ops_delta(&self, tid: Tid, r: u32, nominal: u64, drawn: u64) -> i64 {
        let t = &self.sched.tasks[tid];
        let steps = &self.procs.progs[t.prog as usize].steps;
        let pages = |b: u64| b.div_ceil(4096).max(1) as u32;
        let mut delta = 0i64;
        for st in &steps[t.cur.step + 1..] {
            match &st.target {
                Target::Region { index, .. } if *index == r => {
                    delta +=
                        BoundStep::new(st, pages(drawn)).total as i64 - BoundStep::new(st, pages(nominal)).total as i64;
                }
                Target::Control(c) if st.op == AccessOp::Brk && c.region_index == r => break,
                _ => {}
            }
        }
        delta
    }

    /// Maps region `r` again for task `tid`'s current step (it was unmapped).
    pub(crate) fn remap_for_step(&mut self, tid: Tid, r: u32) {
        let pages = self.procs.regions[r as usize].size.div_ceil(4096) as u32;
        let v = self.map_region(tid, r, pages);
        self.rebind_region_steps(tid, r, v);
    }

    /// Runs task `tid`'s current step, a lifecycle call.
    pub(crate) fn run_control(&mut self, tid: Tid) -> Ctl {
        let t = &self.sched.tasks[tid];
        let st = &self.procs.progs[t.prog as usize].steps[t.cur.step];
        let Target::Control(c) = &st.target else { unreachable!("a lifecycle step") };
        let (op, c): (AccessOp, Control) = (st.op, c.clone());
        match op {
            AccessOp::Spawn => {
                // make's job server: a job starts whenever fewer than `jobs` run.
                let jobs = c.jobs.unwrap_or(c.count);
                while self.sched.tasks[tid].spawned < c.count && self.sched.tasks[tid].children < jobs {
                    self.sched.tasks[tid].spawned += 1;
                    self.new_process(tid, c.task_index, false);
                }
                let t = &mut self.sched.tasks[tid];
                if t.spawned == c.count && t.children == 0 {
                    t.spawned = 0;
                    return Ctl::Done;
                }
                t.state = TaskState::WaitChild;
                self.block(tid);
                Ctl::Waits
            }
            AccessOp::Fork => {
                for _ in 0..c.count {
                    self.new_process(tid, c.task_index, true);
                }
                Ctl::Done
            }
            AccessOp::Wait => {
                if self.sched.tasks[tid].children == 0 {
                    return Ctl::Done;
                }
                self.sched.tasks[tid].state = TaskState::WaitChild;
                self.block(tid);
                Ctl::Waits
            }
            AccessOp::Exec => {
                self.charge(self.cost.exec_ns);
                self.exit_mmap(tid);
                self.start_program(tid, c.task_index);
                Ctl::Exec
            }
            AccessOp::Mmap => {
                if self.sched.tasks[tid].vma_of(c.region_index).is_none() {
                    self.remap_for_step(tid, c.region_index);
                }
                Ctl::Done
            }
            AccessOp::Munmap => {
                self.munmap_region(tid, c.region_index);
                Ctl::Done
            }
            AccessOp::Brk => {
                let size = c.size.expect("a brk step has a size");
                let max = self.procs.regions[c.region_index as usize].size;
                let bytes = if c.size_sigma > 0.0 {
                    // A lognormal draw of median `size`: exp(sigma z).
                    let z = self.sched.tasks[tid].rng.normal();
                    ((size as f64 * (c.size_sigma * z).exp()) as u64).clamp(1, max)
                } else {
                    size
                };
                let v = self.brk(tid, c.region_index, bytes.div_ceil(4096) as u32);
                self.rebind_region_steps(tid, c.region_index, v);
                if bytes != size {
                    // The run's operation count took the heap at its median size.
                    let delta = self.brk_ops_delta(tid, c.region_index, size, bytes);
                    self.sched.ops_total = self.sched.ops_total.saturating_add_signed(delta);
                }
                Ctl::Done
            }
            AccessOp::Pause => {
                let now = self.sched.now;
                let t = &mut self.sched.tasks[tid];
                t.state = TaskState::Paused;
                t.end_ns = now;
                t.step_end_ns[t.cur.step] = now;
                t.cur.done = 1;
                self.sched.paused += 1;
                self.block(tid);
                Ctl::Waits
            }
            _ => unreachable!("not a lifecycle call: {op:?}"),
        }
    }

    /// Starts a child of task `parent` running program `prog` in the next free slot: a
    /// fork that inherits the address space (`inherit`), or a fork followed by an exec (a
    /// job server's job). The child is in the program's memcg if it names one, else in
    /// its parent's, and runs at once.
    pub(crate) fn new_process(&mut self, parent: Tid, prog: u32, inherit: bool) -> Tid {
        let tid = Tid(self.procs.next_slot);
        self.procs.next_slot += 1;
        debug_assert_eq!(self.sched.tasks[tid].state, TaskState::Unborn, "the resolution counted every child");
        let p = &mut self.procs.progs[prog as usize];
        let name = format!("{}.{}", p.name, p.children_begun);
        p.children_begun += 1;
        let memcg = if p.own_memcg { p.memcg } else { self.sched.tasks[parent].memcg };
        // The child's stream is split from its parent's (at this point of the parent's own
        // stream), so a lineage's accesses do not depend on when other processes start:
        // the host's load generator, whose processes start in the host's order, makes the
        // same ones.
        let rng = self.sched.tasks[parent].rng.split();
        self.sched.tasks[tid] = Task::new(name, memcg, self.sched.now, rng, Some(parent));
        self.sched.tasks[tid].cpus = self.sched.tasks[parent].cpus.clone();
        self.sched.tasks[parent].children += 1;
        self.sched.live += 1;
        self.charge(self.cost.fork_ns);
        if inherit {
            self.dup_mmap(parent, tid);
        } else {
            self.charge(self.cost.exec_ns);
        }
        self.start_program(tid, prog);
        self.wake_up(tid);
        tid
    }

    /// `copy_process` with CLONE_VM | CLONE_THREAD: a new thread of task `tid`'s process,
    /// running program `prog` (a replayed trace's thread). It shares the process's address
    /// space (no `dup_mmap`), memcg and CPUs; its clone, exit and join cost `cpu.clone_ns`.
    pub(crate) fn new_thread(&mut self, tid: Tid, prog: u32) -> Tid {
        let leader = self.mm_task(tid);
        let th = Tid(self.procs.next_slot);
        self.procs.next_slot += 1;
        debug_assert_eq!(self.sched.tasks[th].state, TaskState::Unborn, "the trace's scan counted every thread");
        let p = &mut self.procs.progs[prog as usize];
        let name = format!("{}.{}", p.name, p.children_begun);
        p.children_begun += 1;
        let (memcg, rng) = (self.sched.tasks[tid].memcg, self.sched.tasks[tid].rng.split());
        self.sched.tasks[th] = Task::new(name, memcg, self.sched.now, rng, None);
        self.sched.tasks[th].cpus = self.sched.tasks[tid].cpus.clone();
        self.sched.tasks[th].leader = Some(leader);
        self.sched.tasks[leader].threads += 1;
        self.sched.live += 1;
        self.charge(self.cost.clone_ns);
        self.start_program(th, prog);
        self.wake_up(th);
        th
    }

    /// The task whose address space task `tid` uses: its own, or its process leader's.
    #[inline]
    pub(crate) fn mm_task(&self, tid: Tid) -> Tid {
        self.sched.tasks[tid].leader.unwrap_or(tid)
    }

    /// The other live threads of task `tid`'s process (its leader included if it is not
    /// `tid`).
    pub(crate) fn other_threads(&self, tid: Tid) -> Vec<Tid> {
        let leader = self.mm_task(tid);
        if self.sched.tasks[leader].threads == 0 {
            return Vec::new();
        }
        (0..self.sched.tasks.len() as u32)
            .map(Tid)
            .filter(|&t| t != tid && self.mm_task(t) == leader)
            .filter(|&t| !matches!(self.sched.tasks[t].state, TaskState::Done | TaskState::Unborn))
            .collect()
    }

    /// `dup_mmap`: the child gets a VMA for each of the parent's; `copy_page_range` copies
    /// the PTEs of private anon VMAs only (the child's VMA joins the parent's anon_vma):
    /// present pages are write-protected in both and the child's PTE is old, swap entries
    /// take one more reference (`swap_duplicate`), zero-page PTEs are copied.
    fn dup_mmap(&mut self, parent: Tid, child: Tid) {
        let mm = self.sched.tasks[parent].mm.clone();
        let child_memcg = self.sched.tasks[child].memcg;
        let mut copied = 0u64;
        for (r, pv) in mm {
            let pages = self.mm.vmas[pv].pages;
            let cv = self.map_region(child, r, pages);
            let Some(a) = self.mm.vmas[pv].anon else { continue };
            // The child's VMA leaves the anon_vma map_region gave it for the parent's.
            let own = self.mm.vmas[cv].anon.replace(a).expect("an anon VMA");
            self.mm.anon_vmas[own].mappers.clear();
            self.mm.free_anon.push(own);
            self.mm.anon_vmas[a].mappers.push(cv);
            for i in 0..pages as usize {
                let e = self.mm.vmas[pv].pte[i];
                if e == pte::NONE {
                    continue;
                }
                copied += 1;
                let ce = if e & pte::SWAP != 0 {
                    let entry = Entry(e & !pte::SWAP);
                    self.swap_duplicate(entry);
                    self.mm.swap_charge(child_memcg, 1);
                    e
                } else if pte::frame(e).is_none() {
                    e // the zero page
                } else {
                    let wp = e & !pte::WRITE;
                    self.mm.vmas[pv].pte[i] = wp;
                    wp & !pte::YOUNG
                };
                self.mm.vmas[cv].pte[i] = ce;
            }
        }
        self.charge(copied * self.cost.fork_pte_ns);
    }

    /// `do_exit` of task `tid` (its program ended, or it was killed). For the last thread
    /// of its process, the address space goes (`exit_mmap`) and the parent, if it waits for
    /// a child, runs again. (A thread's exit is in `cpu.clone_ns`.)
    pub(crate) fn do_exit(&mut self, tid: Tid) {
        if self.sched.tasks[tid].leader.is_none() {
            self.charge(self.cost.exit_ns);
        }
        let t = &mut self.sched.tasks[tid];
        if t.state == TaskState::Paused {
            self.sched.paused -= 1;
        }
        self.abandon_inode_lock(tid);
        self.readahead_abandon(tid);
        let t = &mut self.sched.tasks[tid];
        t.state = TaskState::Done;
        t.reclaim = None;
        t.pending = None;
        t.end_ns = self.sched.now;
        self.block(tid);
        self.sched.live -= 1;
        let leader = self.mm_task(tid);
        if leader != tid {
            self.sched.tasks[leader].threads -= 1;
        }
        if self.sched.tasks[tid].trace.is_some() {
            self.trace_thread_exited(tid);
        }
        // A process ends with its last thread (the leader stays a zombie until then).
        let l = &self.sched.tasks[leader];
        if l.state == TaskState::Done && l.threads == 0 {
            self.release_task(leader);
        }
    }

    /// `release_task` of a process whose threads have all exited: its address space goes
    /// (`mmput` of the last user), and its parent learns of its end.
    fn release_task(&mut self, tid: Tid) {
        self.exit_mmap(tid);
        // The process has ended when its address space is gone (a parent's wait4 returns
        // then): the time exit_mmap takes is its own.
        self.sched.tasks[tid].end_ns = self.sched.now;
        if let Some(p) = self.sched.tasks[tid].parent {
            self.sched.tasks[p].children -= 1;
            // A wait4 in any thread of the parent's process returns.
            let waiter = std::iter::once(p)
                .chain(self.other_threads(p))
                .find(|&t| self.sched.tasks[t].state == TaskState::WaitChild);
            if let Some(w) = waiter {
                self.sched.tasks[w].state = TaskState::Runnable;
                self.wake_up(w);
            }
        }
    }

    /// Whether private anon page `f` belongs to one process only, so a write may reuse it
    /// (`wp_can_reuse_anon_folio`, 3.x `reuse_swap_page`): no other VMA of its anon_vma
    /// maps it and, in the swap cache, no swap entry of another process refers to its slot.
    pub(crate) fn anon_exclusive(&self, f: crate::ids::Pfn) -> bool {
        if self.mm.frames.test(f, crate::mm::pg::SWAPCACHE) {
            let e = Entry(self.mm.frames.swap[f]);
            let nr = self.mm.frames.nr_pages(f) as u32;
            if (0..nr).any(|k| self.swap.area_ref(e).count(e.slot() + k) > 0) {
                return false;
            }
        }
        !self.anon_shared(f)
    }

    /// Whether frame `f`, a private anon page, is mapped by more than one VMA of its
    /// anon_vma (a fork shares it).
    pub(crate) fn anon_shared(&self, f: crate::ids::Pfn) -> bool {
        let Owner::Anon(a) = self.mm.frames.owner(f) else { return false };
        let (idx, nr) = (self.mm.frames.index[f] as usize, self.mm.frames.nr_pages(f) as usize);
        let mut n = 0;
        for &w in &self.mm.anon_vmas[a].mappers {
            let ptes = &self.mm.vmas[w].pte;
            if ptes
                .get(idx..(idx + nr).min(ptes.len()))
                .is_some_and(|p| p.iter().any(|&e| pte::is_present(e) && pte::frame(e) == Some(f)))
            {
                n += 1;
                if n > 1 {
                    return true;
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::memory::Fault;
    use crate::engine::TaskState;
    use crate::ids::{Tid, VmaId};
    use crate::mm::{pg, pte, LruList};
    use crate::testutil::{fault_as, run, sim_from};

    /// A parent with a 1 MB heap it has written, and a child program that forks from it.
    const FORK: &str = "[machine]\nram = \"64MB\"\nkernel_reserved = \"4MB\"\n\
        [device.d]\nmodel = \"nvme\"\n[[swap]]\ndevice = \"d\"\nsize = \"16MB\"\n\
        [region.heap]\nkind = \"anon\"\nsize = \"1MB\"\n\
        [[task]]\nname = \"parent\"\n[[task.step]]\nregion = \"heap\"\npattern = \"seq\"\nop = \"write\"\n\
        [[task.step]]\nop = \"fork\"\ntask = \"child\"\n\
        [[task]]\nname = \"child\"\n[[task.step]]\nregion = \"heap\"\npattern = \"seq\"\nop = \"read\"\n";

    fn frame(s: &crate::engine::Sim, v: VmaId, i: usize) -> Option<crate::ids::Pfn> {
        pte::frame(s.mm.vmas[v].pte[i])
    }

    #[test]
    fn fork_shares_private_pages_copy_on_write() {
        let mut s = sim_from(FORK, &[]);
        let parent = Tid(0);
        let pv = s.sched.tasks[parent].vma_of(0).unwrap();
        for i in 0..16 {
            assert!(matches!(fault_as(&mut s, parent, pv, i, true), Fault::Done));
        }
        // An evicted page: the child must take a swap reference to it.
        let (f5, e5) = (frame(&s, pv, 5).unwrap(), s.swap.alloc(0).unwrap());
        s.add_to_swap_cache(f5, e5);
        s.try_to_unmap(f5);
        let used = s.mm.memcgs[0].usage;
        let child = s.new_process(parent, 1, true);
        let cv = s.sched.tasks[child].vma_of(0).unwrap();
        assert_eq!(s.mm.memcgs[0].usage, used, "a fork allocates no page");
        assert_eq!(s.mm.vmas[cv].anon, s.mm.vmas[pv].anon, "one anon_vma for both");
        for i in [0, 7, 15] {
            assert_eq!(frame(&s, cv, i), frame(&s, pv, i), "page {i} is shared");
            assert_eq!(s.mm.vmas[pv].pte[i] & pte::WRITE, 0, "and write-protected in the parent");
            assert_eq!(s.mm.vmas[cv].pte[i] & (pte::WRITE | pte::YOUNG), 0, "and old in the child");
        }
        assert_eq!(s.swap.area_ref(e5).count(e5.slot()), 2, "the swap entry has a reference per process");
        // The child writes page 3: it gets its own copy; the parent keeps the old page.
        let old = frame(&s, pv, 3);
        assert!(matches!(fault_as(&mut s, child, cv, 3, true), Fault::Done));
        assert_ne!(frame(&s, cv, 3), old, "the writer has a new page");
        assert_eq!(frame(&s, pv, 3), old, "the other process keeps the old one");
        assert_eq!(s.mm.memcgs[0].usage, used + 1);
        // The parent writes page 3 now: it is the only mapper left, so the page is reused.
        assert!(matches!(fault_as(&mut s, parent, pv, 3, true), Fault::Done));
        assert_eq!(frame(&s, pv, 3), old, "reused in place");
        assert_eq!(s.mm.memcgs[0].usage, used + 1);
        // Both processes see page 7 referenced through their own PTE.
        s.mm.vmas[cv].pte[7] |= pte::YOUNG;
        assert_eq!(s.folio_referenced(frame(&s, pv, 7).unwrap()), 2, "one reference per mapping process");
        s.verify().unwrap();
        // The child exits: the shared pages stay for the parent, its own copy goes.
        s.do_exit(child);
        assert_eq!(s.mm.memcgs[0].usage, used, "only the child's copy was freed");
        assert_eq!(s.swap.area_ref(e5).count(e5.slot()), 1);
        assert!(pte::is_present(s.mm.vmas[pv].pte[7]));
        s.verify().unwrap();
    }

    #[test]
    fn exit_frees_private_memory_and_swap_and_the_run_ends_with_nothing_charged() {
        // Four jobs, two at a time, each dirtying 24 MB in a 16 MB memcg: they swap, and
        // when each exits its pages and slots go.
        let text = "[machine]\nram = \"128MB\"\n[device.d]\nmodel = \"nvme\"\n[[swap]]\ndevice = \"d\"\n\
            size = \"128MB\"\n[memcg.box]\nmax = \"16MB\"\n\
            [region.heap]\nkind = \"anon\"\nsize = \"24MB\"\n\
            [[task]]\nname = \"make\"\nmemcg = \"box\"\n[[task.step]]\nop = \"spawn\"\ntask = \"job\"\n\
            count = 4\njobs = 2\n\
            [[task]]\nname = \"job\"\n[[task.step]]\nregion = \"heap\"\npattern = \"seq\"\nop = \"write\"\n\
            passes = 2\n";
        let sc = crate::scenario::Scenario::from_toml(text, "t.toml", &[]).unwrap();
        let mut s = crate::engine::Sim::new(&sc, 1);
        s.run(&mut None);
        assert_eq!(s.sched.live, 0);
        assert!(s.mm.vmstat.get(crate::mm::vmstat::Counter::PswpOut) > 0, "the jobs swapped");
        let box_ = &s.mm.memcgs[1];
        assert_eq!(box_.swap_usage, 0, "no swap entry is left");
        // Pages still in the swap cache (reclaim drops them later) are all that may stay.
        let lru: u64 = [LruList::ActiveAnon, LruList::InactiveAnon].iter().map(|&l| box_.lru.size(l)).sum();
        let cached = (0..s.mm.frames.flags.len() as u32)
            .map(crate::ids::Pfn)
            .filter(|&f| !s.mm.frames.is_free(f) && s.mm.frames.test(f, pg::SWAPCACHE))
            .count() as u64;
        assert!(lru <= cached, "{lru} anon pages left, {cached} of them swap cache");
        assert!(s.mm.vmas.iter().all(|v| !v.live), "no mapping is left");
        // The job server: four jobs, never more than two at once, the parent last.
        let jobs: Vec<_> = s.sched.tasks.iter().filter(|t| t.name.starts_with("job.")).collect();
        assert_eq!(jobs.len(), 4);
        for j in &jobs {
            let running = jobs.iter().filter(|k| k.start_ns <= j.start_ns && j.start_ns < k.end_ns).count();
            assert!(running <= 2, "{} starts with {running} jobs running", j.name);
            assert_eq!(j.state, TaskState::Done);
        }
        let make = &s.sched.tasks[0];
        assert!(jobs.iter().all(|j| j.end_ns <= make.end_ns), "make waits for its jobs");
        s.verify().unwrap();
    }

    /// A program's text, shared: every job that execs it maps the same page-cache pages.
    const TEXT: &str = "[machine]\nram = \"128MB\"\n[device.d]\nmodel = \"nvme\"\n\
        [file.cc1]\ndevice = \"d\"\nsize = \"4MB\"\n\
        [region.text]\nkind = \"file\"\nfile = \"cc1\"\nexec = true\n\
        [region.heap]\nkind = \"anon\"\nsize = \"1MB\"\n\
        [[task]]\nname = \"make\"\n[[task.step]]\nop = \"spawn\"\ntask = \"cc\"\ncount = 6\njobs = 3\n\
        [[task]]\nname = \"cc\"\n[[task.step]]\nregion = \"text\"\npattern = \"seq\"\nop = \"read\"\n\
        [[task.step]]\nregion = \"heap\"\npattern = \"seq\"\nop = \"write\"\n";

    #[test]
    fn exec_text_is_shared_by_every_process_that_runs_the_program() {
        let r = run(TEXT, &[]);
        let c = |k| r.counter(k);
        use crate::mm::vmstat::Counter;
        // The text is read from the device once: 1024 pages, by the first job (and
        // readahead); the other five map the cached pages (minor faults).
        assert!(r.devices[0].read_bytes <= 4 << 20, "text read {} bytes", r.devices[0].read_bytes);
        assert!(c(Counter::PgMajFault) < 1024 / 4, "{} major faults", c(Counter::PgMajFault));
        assert_eq!(r.tasks.iter().filter(|t| t.name.starts_with("cc.")).count(), 6);
        assert!(r.tasks.iter().all(|t| t.completed));
    }

    #[test]
    fn exec_replaces_the_address_space_and_the_program() {
        let text = "[machine]\nram = \"64MB\"\n[region.a]\nkind = \"anon\"\nsize = \"1MB\"\n\
            [region.b]\nkind = \"anon\"\nsize = \"2MB\"\n\
            [[task]]\nname = \"sh\"\n[[task.step]]\nregion = \"a\"\npattern = \"seq\"\nop = \"write\"\n\
            [[task.step]]\nop = \"exec\"\ntask = \"prog\"\n\
            [[task]]\nname = \"prog\"\n[[task.step]]\nregion = \"b\"\npattern = \"seq\"\nop = \"write\"\n";
        let sc = crate::scenario::Scenario::from_toml(text, "t.toml", &[]).unwrap();
        let mut s = crate::engine::Sim::new(&sc, 1);
        let free = s.mm.nr_free();
        s.run(&mut None);
        let t = &s.sched.tasks[0];
        assert_eq!(t.prog, 1, "the process runs the exec'd program");
        assert_eq!(t.steps.len(), 1);
        assert_eq!(t.step_end_ns.len(), 1);
        assert_eq!(s.mm.nr_free(), free, "a's pages went at the exec, b's at the exit");
        assert_eq!(s.sched.tasks.len(), 1, "an exec takes no new slot");
    }

    #[test]
    fn munmap_frees_a_region_and_the_next_access_maps_it_empty() {
        let text = "[machine]\nram = \"64MB\"\n[region.a]\nkind = \"anon\"\nsize = \"1MB\"\n\
            [[task]]\nname = \"t\"\n[[task.step]]\nregion = \"a\"\npattern = \"seq\"\nop = \"write\"\n\
            [[task.step]]\nop = \"munmap\"\nregion = \"a\"\n\
            [[task.step]]\nregion = \"a\"\npattern = \"seq\"\nop = \"read\"\n";
        let r = run(text, &[]);
        use crate::mm::vmstat::Counter;
        // 256 write faults, then 256 read faults on the new, empty mapping (zero page).
        assert_eq!(r.counter(Counter::PgFault), 512);
        assert_eq!(r.tasks[0].steps[2].ops, 256);
    }

    #[test]
    fn brk_with_a_sigma_draws_each_process_its_own_heap_size() {
        let text = "[machine]\nram = \"256MB\"\n[region.heap]\nkind = \"anon\"\nsize = \"64MB\"\n\
            [[task]]\nname = \"make\"\n[[task.step]]\nop = \"spawn\"\ntask = \"cc\"\ncount = 8\n\
            [[task]]\nname = \"cc\"\n[[task.step]]\nop = \"brk\"\nregion = \"heap\"\nsize = \"4MB\"\n\
            size_sigma = 0.7\n[[task.step]]\nregion = \"heap\"\npattern = \"seq\"\nop = \"write\"\n";
        let r = run(text, &[]);
        let sizes: Vec<u64> = r.tasks.iter().filter(|t| t.name.starts_with("cc.")).map(|t| t.steps[1].ops).collect();
        assert_eq!(sizes.len(), 8);
        assert!(sizes.iter().all(|&p| (1..=16384).contains(&p)), "{sizes:?}");
        let distinct: std::collections::BTreeSet<_> = sizes.iter().collect();
        assert!(distinct.len() >= 6, "sizes differ: {sizes:?}");
        let mean = sizes.iter().sum::<u64>() as f64 / 8.0;
        assert!((300.0..4000.0).contains(&mean), "around 1024 pages: {mean}");
        let r2 = run(text, &["machine.ram=\"512MB\""]);
        let again: Vec<u64> = r2.tasks.iter().filter(|t| t.name.starts_with("cc.")).map(|t| t.steps[1].ops).collect();
        assert_eq!(sizes, again, "the draws are the seed's");
        // The run's operation count follows the draws (it first counts each heap at its
        // median; fuzzing found a run that did more operations than its total).
        assert!(r.completed && r.ops_done == r.ops_total, "{} of {}", r.ops_done, r.ops_total);
        let text = text.replace(
            "size_sigma = 0.7\n[[task.step]]\nregion = \"heap\"\npattern = \"seq\"\nop = \"write\"\n",
            "size_sigma = 1\n[[task.step]]\nregion = \"heap\"\npattern = \"seq\"\nop = \"read\"\npasses = 2\n\
             [[task.step]]\nop = \"brk\"\nregion = \"heap\"\nsize = \"1MB\"\n[[task.step]]\nregion = \"heap\"\n\
             pattern = \"seq\"\nop = \"write\"\n",
        );
        let r = run(&text, &[]);
        assert!(r.completed && r.ops_done == r.ops_total, "two brks: {} of {}", r.ops_done, r.ops_total);
    }

    #[test]
    fn a_paused_server_keeps_its_memory_until_the_others_end() {
        let text = "[machine]\nram = \"64MB\"\n[region.a]\nkind = \"anon\"\nsize = \"1MB\"\n\
            [region.b]\nkind = \"anon\"\nsize = \"4MB\"\n\
            [[task]]\nname = \"server\"\n[[task.step]]\nregion = \"a\"\npattern = \"seq\"\nop = \"write\"\n\
            [[task.step]]\nop = \"pause\"\n\
            [[task]]\nname = \"client\"\n[[task.step]]\nregion = \"b\"\npattern = \"seq\"\nop = \"write\"\n\
            passes = 20\nthink = \"10us\"\n";
        let sc = crate::scenario::Scenario::from_toml(text, "t.toml", &[]).unwrap();
        let mut s = crate::engine::Sim::new(&sc, 1);
        assert_eq!(s.run(&mut None), crate::engine::RunEnd::Completed);
        let (server, client) = (&s.sched.tasks[0], &s.sched.tasks[1]);
        assert_eq!((server.state, client.state), (TaskState::Paused, TaskState::Done));
        assert!(server.end_ns < client.end_ns, "the server's program ended first");
        assert_eq!(s.mm.memcgs[0].usage, 256, "the server's 1 MB is still charged, the client's 4 MB gone");
        let r = run(text, &[]);
        assert!(r.tasks.iter().all(|t| t.completed));
        assert_eq!(r.elapsed_ns, r.tasks[1].elapsed_ns, "the run ends with the client");
    }

    /// A shmem object outlives every process that mapped it: its pages are swapped out
    /// later with no mapper left (the page content's key came from a mapper and panicked,
    /// found by fuzzing).
    #[test]
    fn shmem_pages_left_by_exited_processes_are_swapped_out() {
        let text = "[machine]\nram = \"64MB\"\n[device.d]\nmodel = \"zram\"\n[[swap]]\ndevice = \"d\"\n\
            size = \"64MB\"\n[memcg.box]\nmax = \"8MB\"\n\
            [region.shm]\nkind = \"shmem\"\nsize = \"6MB\"\ncompress_ratio = 2.0\n\
            [region.heap]\nkind = \"anon\"\nsize = \"6MB\"\n\
            [[task]]\nname = \"writer\"\nmemcg = \"box\"\n[[task.step]]\nregion = \"shm\"\npattern = \"seq\"\n\
            op = \"write\"\n\
            [[task]]\nname = \"later\"\nmemcg = \"box\"\nstart = \"1s\"\n[[task.step]]\nregion = \"heap\"\n\
            pattern = \"seq\"\nop = \"write\"\npasses = 2\n";
        let r = run(text, &[]);
        assert!(r.tasks.iter().all(|t| t.completed));
        assert!(r.counter(crate::mm::vmstat::Counter::PswpOut) > 0, "the orphaned shmem pages were swapped out");
    }

    #[test]
    fn exec_text_gets_another_trip_on_the_active_list_and_other_file_pages_do_not() {
        // Two files on the active list, each page mapped and referenced: one through an
        // exec mapping, one through a plain one.
        let text = "[machine]\nram = \"64MB\"\n[device.d]\nmodel = \"nvme\"\n\
            [file.bin]\ndevice = \"d\"\nsize = \"256KB\"\n[file.data]\ndevice = \"d\"\nsize = \"256KB\"\n\
            [region.text]\nkind = \"file\"\nfile = \"bin\"\nexec = true\n\
            [region.map]\nkind = \"file\"\nfile = \"data\"\n\
            [[task]]\nname = \"t\"\n[[task.step]]\nregion = \"text\"\npattern = \"seq\"\nop = \"read\"\n\
            [[task.step]]\nregion = \"map\"\npattern = \"seq\"\nop = \"read\"\n";
        let mut s = sim_from(text, &[]);
        let t = Tid(0);
        // Regions in name order: map is 0, text is 1.
        let (tv, mv) = (s.sched.tasks[t].vma_of(1).unwrap(), s.sched.tasks[t].vma_of(0).unwrap());
        assert!(s.mm.vmas[tv].exec && !s.mm.vmas[mv].exec);
        for i in 0..64 {
            for v in [tv, mv] {
                while !matches!(fault_as(&mut s, t, v, i, false), Fault::Done) {
                    crate::testutil::complete_io(&mut s);
                }
            }
        }
        // Every page active and young.
        let m = 0u16;
        for f in (0..s.mm.frames.flags.len() as u32).map(crate::ids::Pfn) {
            if s.mm.frames.is_free(f) || s.mm.frames.lru[f] != LruList::InactiveFile as u8 {
                continue;
            }
            let crate::mm::Mm { memcgs, frames, .. } = &mut s.mm;
            memcgs[0].lru.del(frames, f);
            frames.set(f, pg::ACTIVE);
            memcgs[0].lru.add_head(frames, f, LruList::ActiveFile);
        }
        for v in [tv, mv] {
            for e in s.mm.vmas[v].pte.iter_mut().filter(|e| pte::is_present(**e)) {
                *e |= pte::YOUNG;
            }
        }
        let n = s.mm.memcgs[0].lru.size(LruList::ActiveFile);
        let mut sc = crate::reclaim::ScanControl::direct();
        s.shrink_active_list(m, LruList::ActiveFile, n, &mut sc);
        let on = |s: &crate::engine::Sim, v: VmaId, l: LruList| {
            s.mm.vmas[v].pte.iter().filter_map(|&e| pte::frame(e)).filter(|&f| s.mm.frames.lru[f] == l as u8).count()
        };
        assert_eq!(on(&s, tv, LruList::ActiveFile), 64, "the text stays active");
        assert_eq!(on(&s, mv, LruList::InactiveFile), 64, "the data is deactivated though referenced");
        s.verify().unwrap();
    }
}
