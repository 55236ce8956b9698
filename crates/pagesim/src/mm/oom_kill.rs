//! Models mm/oom_kill.c: `out_of_memory` choosing a victim (`oom_badness`: the task with
//! the most resident and swapped pages, in the limited memcg or the whole machine) and
//! `oom_kill_process`, which ends the task and frees its memory (mm/mmap.rs `exit_mmap`).

use crate::engine::{Sim, TaskState};
use crate::mm::pte;
use crate::mm::vmstat::Counter;

impl Sim {
    /// `out_of_memory` / `mem_cgroup_out_of_memory`: kill the task with the most resident
    /// and swapped pages in the scope (oom_badness without adj).
    pub fn oom_kill(&mut self, scope: Option<u16>) -> Option<u32> {
        let mut best: Option<(u64, u32)> = None;
        for (tid, t) in self.sched.tasks.iter().enumerate() {
            if t.state == TaskState::Done || scope.is_some_and(|m| t.memcg != m) {
                continue;
            }
            let badness: u64 = self
                .mm
                .vmas
                .iter()
                .filter(|v| v.task == tid as u32 && v.shmem.is_none() && v.file.is_none())
                .map(|v| v.pte.iter().filter(|&&e| e != pte::NONE && e != pte::ZERO_PAGE).count() as u64)
                .sum();
            if best.is_none_or(|(b, _)| badness > b) {
                best = Some((badness, tid as u32));
            }
        }
        let (_, victim) = best?;
        let m = self.sched.tasks[victim as usize].memcg;
        self.count(Counter::OomKill, m, 1);
        self.sched.tasks[victim as usize].oom_killed = true;
        self.kill_task(victim);
        Some(victim)
    }

    /// Ends a task and releases its private memory (`exit_mmap`).
    pub fn kill_task(&mut self, tid: u32) {
        let t = &mut self.sched.tasks[tid as usize];
        t.state = TaskState::Done;
        t.end_ns = self.sched.now;
        t.reclaim = None;
        t.pending = None;
        self.block(tid);
        self.exit_mmap(tid);
    }
}
