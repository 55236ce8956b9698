//! Models mm/oom_kill.c: `out_of_memory` choosing a victim (`oom_badness`: the task with
//! the most resident and swapped pages, in the limited memcg or the whole machine) and
//! `oom_kill_process`, which ends the task and frees its memory (engine/mmap.rs `exit_mmap`).

use crate::engine::{Sim, TaskState};
use crate::ids::Tid;
use crate::mm::pte;
use crate::mm::vmstat::Counter;

impl Sim {
    /// `out_of_memory` / `mem_cgroup_out_of_memory`: kill the task with the most resident
    /// and swapped pages in the scope (oom_badness without adj).
    pub fn oom_kill(&mut self, scope: Option<u16>) -> Option<Tid> {
        if let Some(m) = scope.filter(|&m| m != 0) {
            self.mm.memcgs[m as usize].memory_events.oom += 1;
        }
        let mut best: Option<(u64, Tid)> = None;
        for (tid, t) in self.sched.tasks.iter().enumerate() {
            let tid = Tid(tid as u32);
            let outside = scope.is_some_and(|m| !self.mm.subtrees[m as usize].contains(&t.memcg));
            if matches!(t.state, TaskState::Done | TaskState::Unborn) || outside {
                continue;
            }
            let badness: u64 =
                t.mm.iter()
                    .map(|&(_, v)| &self.mm.vmas[v])
                    .filter(|v| v.anon.is_some())
                    .map(|v| v.pte.iter().filter(|&&e| e != pte::NONE && e != pte::ZERO_PAGE).count() as u64)
                    .sum();
            if best.is_none_or(|(b, _)| badness > b) {
                best = Some((badness, tid));
            }
        }
        let (_, victim) = best?;
        let m = self.sched.tasks[victim].memcg;
        self.mm.count(Counter::OomKill, m, 1);
        self.sched.tasks[victim].oom_killed = true;
        self.kill_task(victim);
        Some(victim)
    }

    /// Ends a task (SIGKILL): it exits, releasing its private memory (`do_exit`).
    pub fn kill_task(&mut self, tid: Tid) {
        self.do_exit(tid);
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::memory::Fault;
    use crate::engine::TaskState;
    use crate::ids::{Tid, VmaId};
    use crate::mm::vmstat::Counter;
    use crate::testutil::{fault_as, sim_from};

    #[test]
    fn the_victim_is_the_task_with_the_most_pages_in_the_scope_and_its_memory_is_freed() {
        let text = "[machine]\nram = \"64MB\"\nkernel_reserved = \"4MB\"\n\
            [region.buf]\nkind = \"anon\"\nsize = \"4MB\"\n\
            [[task]]\nname = \"small\"\n[[task.step]]\nregion = \"buf\"\npattern = \"seq\"\n\
            [[task]]\nname = \"big\"\n[[task.step]]\nregion = \"buf\"\npattern = \"seq\"\n";
        let mut s = sim_from(text, &[]);
        // Task 1 ("big") maps VMA 1; give it more resident pages than task 0.
        let touch = |s: &mut crate::engine::Sim, tid: Tid, vma: VmaId, idx: u32| {
            assert!(matches!(fault_as(s, tid, vma, idx, true), Fault::Done));
        };
        touch(&mut s, Tid(0), VmaId(0), 0);
        for i in 0..5 {
            touch(&mut s, Tid(1), VmaId(1), i);
        }
        let free = s.mm.nr_free();
        assert_eq!(s.oom_kill(None), Some(Tid(1)));
        assert!(s.sched.tasks[1].oom_killed && s.sched.tasks[1].state == TaskState::Done);
        assert_eq!(s.mm.nr_free(), free + 5, "exit_mmap freed its pages");
        assert_eq!(s.mm.vmstat.get(Counter::OomKill), 1);
        assert_eq!(s.oom_kill(None), Some(Tid(0)), "a dead task is no candidate");
    }

    /// Random stores with vm.page-cluster = 0 in a memcg about 10 % smaller than the
    /// mapping, with swap to spare: reclaimable anon remains all the time, so the kernel
    /// finishes the run (measured on this machine's 6.18 kernel at 128 MB in 115 MB) and no
    /// profile may OOM-kill, whatever the seed.
    #[test]
    fn no_oom_kill_while_reclaimable_anon_remains_and_swap_has_room() {
        let text = "[machine]\nram = \"256MB\"\n[device.d]\nmodel = \"nvme\"\n[[swap]]\ndevice = \"d\"\n\
                    size = \"64MB\"\n[vm]\npage-cluster = 0\n[memcg.box]\nmax = \"29MB\"\n\
                    [region.heap]\nkind = \"anon\"\nsize = \"32MB\"\n[[task]]\nname = \"t\"\nmemcg = \"box\"\n\
                    [[task.step]]\nregion = \"heap\"\npattern = \"seq\"\nop = \"write\"\n\
                    [[task.step]]\nregion = \"heap\"\npattern = \"random\"\npasses = 4\nop = \"write\"\n";
        for profile in ["linux-6.18", "linux-6.6", "linux-3.14"] {
            for seed in 1..=3 {
                let r =
                    crate::testutil::run(text, &[&format!("kernel.profile=\"{profile}\""), &format!("seed={seed}")]);
                assert_eq!(r.counter(Counter::OomKill), 0, "{profile} seed {seed}");
                assert!(r.completed && r.tasks[0].completed, "{profile} seed {seed}: {:?}", r.stop_reason);
                assert!(r.counter(Counter::PswpIn) > 1000, "{profile} seed {seed}: it swapped");
            }
        }
    }
}
