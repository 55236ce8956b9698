//! The parts of mm/memcontrol.c (and mm/memcontrol-v1.c) that reclaim in a task's or
//! kswapd's context rather than at a limit: cgroup v2's memory.high (`try_charge_memcg`
//! counting the pages charged above it, `mem_cgroup_handle_over_high` on the way back to
//! user space: reclaim, then a penalty sleep growing with the square of the overage), and
//! cgroup v1's soft limit (`memcg1_soft_limit_reclaim`: under global pressure the memcg
//! furthest over its soft limit is reclaimed first, at priority 0). The protection of
//! memory.min and memory.low is applied by the reclaim walk itself (engine/vmscan.rs,
//! `memcg_protected`, `apply_proportional_protection`; the effective values in
//! mm/memcontrol.rs).

use crate::engine::Sim;
use crate::ids::Tid;
use crate::reclaim::scan_balance::SWAP_CLUSTER_MAX;
use crate::reclaim::{ScanControl, Step, MAX_RECLAIM_RETRIES};
use crate::units::JIFFY_NS;
use crate::writeback::throttle::HZ;

/// `MEMCG_CHARGE_BATCH`: pages a CPU's charge stock takes from the page counter at once;
/// the memory.high check runs once per batch.
pub const MEMCG_CHARGE_BATCH: u32 = 64;
/// `MEMCG_MAX_HIGH_DELAY_JIFFIES`: the longest penalty sleep, 2 s.
const MEMCG_MAX_HIGH_DELAY_JIFFIES: u64 = 2 * HZ;
/// `MEMCG_DELAY_PRECISION_SHIFT`, `MEMCG_DELAY_SCALING_SHIFT`.
const PRECISION_SHIFT: u32 = 20;
const SCALING_SHIFT: u32 = 14;
/// `MEM_CGROUP_MAX_RECLAIM_LOOPS`: passes of soft-limit reclaim over one subtree.
const MEM_CGROUP_MAX_RECLAIM_LOOPS: u32 = 100;
/// `MEM_CGROUP_MAX_SOFT_LIMIT_RECLAIM_LOOPS`: memcgs tried when none gives a page.
const MEM_CGROUP_MAX_SOFT_LIMIT_RECLAIM_LOOPS: u32 = 2;

/// `calculate_high_delay`: the penalty in jiffies for a task that charged `nr_pages`
/// while the largest overage of its memcgs is `max_overage` ((usage - high) / high in
/// 20-bit fixed point): quadratic in the overage, in proportion to the task's share of the
/// batch.
pub fn calculate_high_delay(nr_pages: u32, max_overage: u64) -> u64 {
    if max_overage == 0 {
        return 0;
    }
    let o = max_overage as u128;
    let jiffies = (o * o * HZ as u128) >> PRECISION_SHIFT >> SCALING_SHIFT;
    (jiffies * nr_pages as u128 / MEMCG_CHARGE_BATCH as u128).min(u64::MAX as u128) as u64
}

impl Sim {
    /// The memory.high part of `try_charge_memcg` after task `tid` charged a page: while
    /// its memcg or an ancestor is above memory.high, the pages it charges are counted
    /// (`current->memcg_nr_pages_over_high`, a batch at a time in the kernel), and once a
    /// batch has gathered, `mem_cgroup_handle_over_high` runs before its next access (the
    /// kernel's `set_notify_resume`: on the way back to user space).
    pub(crate) fn charge_over_high(&mut self, tid: Tid) {
        if !self.profile.memcg_v2_protection {
            return;
        }
        let memcg = self.sched.tasks[tid].memcg;
        if self.mm.over_high(memcg).is_none() {
            return;
        }
        let t = &mut self.sched.tasks[tid];
        t.nr_pages_over_high += 1;
        if t.nr_pages_over_high >= MEMCG_CHARGE_BATCH && t.reclaim.is_none() {
            let nr = std::mem::take(&mut t.nr_pages_over_high);
            t.high_nr_pages = nr;
            t.high_retries = MAX_RECLAIM_RETRIES;
            self.reclaim_high(tid, nr as u64);
        }
    }

    /// `reclaim_high`: task `tid` reclaims `nr` pages from the nearest of its memcg and
    /// its ancestors above memory.high (a `high` event there). The kernel goes on to each
    /// further ancestor above its high in the same call; here the penalty check that
    /// follows runs another round for any still over. Returns whether a job was started.
    fn reclaim_high(&mut self, tid: Tid, nr: u64) -> bool {
        let memcg = self.sched.tasks[tid].memcg;
        let Some(h) = self.mm.over_high(memcg) else { return false };
        self.mm.memcgs[h as usize].memory_events.high += 1;
        let mut sc = ScanControl::memcg(h);
        sc.nr_to_reclaim = nr.max(SWAP_CLUSTER_MAX);
        sc.reclaim_high = true;
        self.sched.tasks[tid].reclaim = Some(sc);
        true
    }

    /// The rest of `mem_cgroup_handle_over_high` once task `tid`'s `reclaim_high` freed
    /// `reclaimed` pages: the penalty for the overage left (capped at 2 s) is forgiven up
    /// to 10 ms; above that, reclaim goes on in SWAP_CLUSTER_MAX steps while it makes
    /// progress (or for MAX_RECLAIM_RETRIES more tries), and then the task sleeps the
    /// penalty off (`schedule_timeout_killable`, time it is charged in
    /// `Task::high_delay_ns`).
    pub(crate) fn mem_cgroup_handle_over_high_end(&mut self, tid: Tid, reclaimed: u64) -> Step {
        let memcg = self.sched.tasks[tid].memcg;
        let nr_pages = self.sched.tasks[tid].high_nr_pages;
        let overage = self.mm.mem_find_max_overage(memcg);
        let penalty = calculate_high_delay(nr_pages, overage).min(MEMCG_MAX_HIGH_DELAY_JIFFIES);
        if penalty <= HZ / 100 {
            return Step::Finished;
        }
        let t = &mut self.sched.tasks[tid];
        let retry = reclaimed > 0 || t.high_retries > 0;
        if reclaimed == 0 {
            t.high_retries = t.high_retries.saturating_sub(1);
        }
        if retry && self.reclaim_high(tid, SWAP_CLUSTER_MAX) {
            return Step::Continue;
        }
        let ns = penalty * JIFFY_NS;
        self.sched.tasks[tid].high_delay_ns += ns;
        self.block(tid);
        self.wake(tid, self.sched.now + ns);
        Step::Blocked
    }

    /// `memcg1_soft_limit_reclaim` (cgroup v1), called by kswapd before each priority pass
    /// and by global direct reclaim before it scans the node: the memcg furthest over its
    /// soft limit has its subtree reclaimed at priority 0 (`mem_cgroup_soft_reclaim`);
    /// if that freed nothing, the next furthest is tried. Returns (reclaimed, scanned).
    pub(crate) fn memcg1_soft_limit_reclaim(&mut self, cpu: u32) -> (u64, u64) {
        if !self.tun.memcg_v1 {
            return (0, 0);
        }
        let (mut reclaimed, mut scanned) = (0, 0);
        let mut tried: Vec<u16> = Vec::new();
        let mut loops = 0;
        while let Some(victim) = self.mm.largest_soft_limit_excess(&tried) {
            let (r, s) = self.mem_cgroup_soft_reclaim(victim, cpu);
            reclaimed += r;
            scanned += s;
            loops += 1;
            if reclaimed > 0 || loops > MEM_CGROUP_MAX_SOFT_LIMIT_RECLAIM_LOOPS {
                break;
            }
            tried.push(victim);
        }
        (reclaimed, scanned)
    }

    /// `mem_cgroup_soft_reclaim`: `root`'s subtree in pre-order, each lruvec reclaimed
    /// at priority 0 for SWAP_CLUSTER_MAX pages (`mem_cgroup_shrink_node`), until the
    /// excess is gone, or after two passes once a quarter of the excess was freed (or
    /// nothing was).
    fn mem_cgroup_soft_reclaim(&mut self, root: u16, cpu: u32) -> (u64, u64) {
        let excess = self.mm.soft_limit_excess(root);
        let (mut total, mut scanned) = (0u64, 0u64);
        let mut passes = 0;
        'walk: loop {
            for k in 0..self.mm.subtrees[root as usize].len() {
                let m = self.mm.subtrees[root as usize][k];
                let mut sc = ScanControl::memcg(m);
                sc.priority = 0;
                sc.soft_limit = true;
                self.shrink_lruvec(m, &mut sc, cpu);
                // A write that found its queue full does not make this pass sleep; the
                // pass of kswapd or direct reclaim that follows meets the queue again.
                sc.wait_request = None;
                total += sc.nr_reclaimed;
                scanned += sc.nr_scanned;
                if self.mm.soft_limit_excess(root) == 0 {
                    break 'walk;
                }
            }
            passes += 1;
            if passes >= 2 && (total == 0 || total >= excess >> 2 || passes > MEM_CGROUP_MAX_RECLAIM_LOOPS) {
                break;
            }
        }
        (total, scanned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_high_penalty_is_quadratic_in_the_overage_and_forgiven_when_small() {
        // 1 % over high: (0.01 << 20)^2 * HZ >> 34 = 0.0001 * 2^40 * 250 / 2^34 = 1.6 jiffies
        // for a whole batch: within the 10 ms (2.5 jiffies) that are forgiven.
        let one_pct = (1u64 << 20) / 100;
        assert!(calculate_high_delay(64, one_pct) <= HZ / 100);
        // 10 % over: a hundred times the penalty of 1 %.
        let ten = calculate_high_delay(64, 10 * one_pct);
        assert!((150..=170).contains(&ten), "{ten} jiffies");
        // A task that charged half a batch pays half.
        assert_eq!(calculate_high_delay(32, 10 * one_pct), ten / 2);
        assert_eq!(calculate_high_delay(64, 0), 0);
    }
}

/// memory.min, memory.low, memory.high and the v1 soft limit, end to end.
#[cfg(test)]
mod protection_tests {
    use crate::engine::Sim;
    use crate::mm::vmstat::Counter;
    use crate::scenario::Scenario;

    fn sim(text: &str) -> Sim {
        let sc = Scenario::from_toml(text, "t.toml", &[]).unwrap_or_else(|e| panic!("{e}"));
        Sim::new(&sc, 1)
    }

    /// Two children of a 6 MB parent, each task touching its own 4 MB at random 20000
    /// times after a first sequential pass, then keeping its memory until both are done:
    /// together they do not fit. `a` and `b` are extra lines for the children's tables.
    fn siblings(a: &str, b: &str) -> String {
        format!(
            "[machine]\nram = \"128MB\"\n[kernel]\nprofile = \"linux-6.6\"\n[device.d]\nmodel = \"nvme\"\n\
             [[swap]]\ndevice = \"d\"\nsize = \"64MB\"\n\
             [memcg.p]\nmax = \"6MB\"\n[memcg.a]\nparent = \"p\"\n{a}\n[memcg.b]\nparent = \"p\"\n{b}\n\
             [region.buf]\nkind = \"anon\"\nsize = \"4MB\"\n\
             [[task]]\nname = \"ta\"\nmemcg = \"a\"\n[[task.step]]\nregion = \"buf\"\npattern = \"seq\"\nop = \"write\"\n\
             [[task.step]]\nregion = \"buf\"\npattern = \"random\"\naccesses = 20000\n[[task.step]]\nop = \"pause\"\n\
             [[task]]\nname = \"tb\"\nmemcg = \"b\"\n[[task.step]]\nregion = \"buf\"\npattern = \"seq\"\nop = \"write\"\n\
             [[task.step]]\nregion = \"buf\"\npattern = \"random\"\naccesses = 20000\n[[task.step]]\nop = \"pause\"\n"
        )
    }

    fn steal(s: &Sim, m: usize) -> u64 {
        s.mm.memcgs[m].events.get(Counter::PgStealDirect) + s.mm.memcgs[m].events.get(Counter::PgStealKswapd)
    }

    #[test]
    fn memory_low_protects_a_memcg_while_its_sibling_can_give_pages() {
        // Without protection the two are reclaimed alike.
        let mut s = sim(&siblings("", ""));
        s.run(&mut None);
        let (a0, b0) = (steal(&s, 1), steal(&s, 2));
        assert!(a0 > 200 && b0 > 200, "a {a0} b {b0}");
        // a's memory.low covers its 4 MB: the parent's reclaim takes from b only.
        for key in ["low", "min"] {
            let mut s = sim(&siblings(&format!("{key} = \"5MB\""), ""));
            s.run(&mut None);
            s.verify().unwrap();
            let (a, b) = (steal(&s, 1), steal(&s, 2));
            assert_eq!(a, 0, "{key}: a was reclaimed ({a} pages) while b had {b} to give");
            assert!(b > b0, "{key}: b gave {b} pages, {b0} unprotected");
            assert!(s.sched.tasks.iter().all(|t| !t.oom_killed), "{key}");
        }
    }

    #[test]
    fn memory_low_gives_way_when_nothing_else_can_be_reclaimed_and_memory_min_does_not() {
        // Both children protected beyond what the parent holds: with memory.low, reclaim
        // that found nothing unprotected retries taking protected pages (low events), and
        // both tasks finish; memory.min is kept, so the charge ends in the OOM killer.
        let mut s = sim(&siblings("low = \"5MB\"", "low = \"5MB\""));
        s.run(&mut None);
        s.verify().unwrap();
        assert!(steal(&s, 1) > 0 && steal(&s, 2) > 0);
        assert!(s.mm.memcgs[1].memory_events.low + s.mm.memcgs[2].memory_events.low > 0);
        assert!(s.sched.tasks.iter().all(|t| !t.oom_killed));
        let mut s = sim(&siblings("min = \"5MB\"", "min = \"5MB\""));
        s.run(&mut None);
        assert_eq!(steal(&s, 1) + steal(&s, 2), 0, "memory.min pages were reclaimed");
        assert!(s.sched.tasks.iter().any(|t| t.oom_killed), "nothing reclaimable: OOM");
        assert!(s.mm.memcgs[3].memory_events.oom > 0);
    }

    #[test]
    fn children_claiming_more_protection_than_their_parent_has_share_it_by_usage() {
        let text = siblings("low = \"8MB\"", "low = \"8MB\"").replace("max = \"6MB\"", "max = \"6MB\"\nlow = \"2MB\"");
        let mut s = sim(&text);
        let (a, b, p) = (1u16, 2u16, 3u16);
        // a uses 3 MB and b 1 MB, both within their own 8 MB low; the parent's 2 MB is
        // shared 3:1.
        s.mm.memcgs[a as usize].usage = 768;
        s.mm.memcgs[b as usize].usage = 256;
        s.mm.memcgs[p as usize].usage = 1024;
        for m in [p, a, b] {
            s.mm.mem_cgroup_calculate_protection(0, m);
        }
        assert_eq!(s.mm.memcgs[p as usize].elow, 512);
        assert_eq!((s.mm.memcgs[a as usize].elow, s.mm.memcgs[b as usize].elow), (384, 128));
        assert_eq!(s.mm.mem_cgroup_below(0, a), (false, false));
        // A reclaim of p's own subtree ignores p's protection, and its children's are
        // their own settings.
        s.mm.mem_cgroup_calculate_protection(p, a);
        assert_eq!(s.mm.mem_cgroup_protection(p, a), (0, 2048));
        assert_eq!(s.mm.mem_cgroup_below(p, a), (false, true));
        assert_eq!(s.mm.mem_cgroup_protection(p, p), (0, 0));
    }

    #[test]
    fn a_protected_memcg_over_its_low_is_scanned_in_proportion_to_its_excess() {
        // a's low covers half its 4 MB: it is reclaimed, but less than unprotected b.
        let mut s = sim(&siblings("low = \"2MB\"", ""));
        s.run(&mut None);
        s.verify().unwrap();
        let (a, b) = (steal(&s, 1), steal(&s, 2));
        assert!(a > 0 && a * 2 < b, "a {a} b {b}");
    }

    /// One task writing 8 MB twice in a memcg with memory.high = 4 MB and no limit; `swap`
    /// says whether there is swap to reclaim the anon pages to.
    fn high(swap: bool) -> String {
        let swap = if swap { "[[swap]]\ndevice = \"d\"\nsize = \"64MB\"\n" } else { "" };
        format!(
            "[machine]\nram = \"128MB\"\n[kernel]\nprofile = \"linux-6.18\"\n[device.d]\nmodel = \"nvme\"\n{swap}\
             [memcg.a]\nhigh = \"4MB\"\n[region.buf]\nkind = \"anon\"\nsize = \"8MB\"\n\
             [[task]]\nname = \"t\"\nmemcg = \"a\"\n[[task.step]]\nregion = \"buf\"\npattern = \"seq\"\nop = \"write\"\npasses = 2\n\
             [[task.step]]\nop = \"pause\"\n"
        )
    }

    #[test]
    fn memory_high_makes_the_task_reclaim_and_sleeps_it_when_reclaim_cannot_keep_up() {
        // With swap the task reclaims itself back towards high: no limit, no OOM. Pages
        // its last rounds wrote to the nvme are still under writeback when the overage
        // left is small enough for its penalty (≤ 10 ms) to be forgiven, so it may end
        // somewhat above high, never far.
        let mut s = sim(&high(true));
        s.run(&mut None);
        s.verify().unwrap();
        let a = &s.mm.memcgs[1];
        assert!(a.memory_events.high > 0 && a.memory_events.max == 0);
        assert!(a.usage <= 1024 * 3 / 2, "usage {} pages over high 1024", a.usage);
        assert!(a.events.get(Counter::PgStealDirect) > 1024, "it swapped what it wrote above high");
        let t = &s.sched.tasks[0];
        assert!(!t.oom_killed);
        // Without swap nothing can be reclaimed: the task is throttled, up to 2 s per
        // batch, but never killed, and its memcg ends above high.
        let mut s = sim(&high(false));
        s.run(&mut None);
        let t = &s.sched.tasks[0];
        assert!(!t.oom_killed);
        assert!(t.high_delay_ns >= 1_000_000_000, "penalty {} ns", t.high_delay_ns);
        assert!(s.mm.memcgs[1].usage >= 2048);
    }

    /// cgroup v1 on 3.14: two memcgs each writing 24 MB of anon into 48 MB of RAM; `a`
    /// extra lines for the first one's table.
    fn soft(a: &str) -> String {
        format!(
            "[machine]\nram = \"48MB\"\n[kernel]\nprofile = \"linux-3.14\"\ncgroup_version = 1\n\
             [device.d]\nmodel = \"nvme\"\n[[swap]]\ndevice = \"d\"\nsize = \"64MB\"\n\
             [memcg.a]\n{a}\n[memcg.b]\n[region.buf]\nkind = \"anon\"\nsize = \"24MB\"\n\
             [[task]]\nname = \"ta\"\nmemcg = \"a\"\n[[task.step]]\nregion = \"buf\"\npattern = \"seq\"\nop = \"write\"\npasses = 2\n\
             [[task.step]]\nop = \"pause\"\n\
             [[task]]\nname = \"tb\"\nmemcg = \"b\"\n[[task.step]]\nregion = \"buf\"\npattern = \"seq\"\nop = \"write\"\npasses = 2\n\
             [[task.step]]\nop = \"pause\"\n"
        )
    }

    #[test]
    fn global_pressure_reclaims_the_memcg_over_its_soft_limit_first() {
        let mut s = sim(&soft(""));
        s.run(&mut None);
        let (a0, b0) = (s.mm.memcgs[1].usage, s.mm.memcgs[2].usage);
        let mut s = sim(&soft("soft_limit = \"4MB\""));
        s.run(&mut None);
        s.verify().unwrap();
        let (a, b) = (s.mm.memcgs[1].usage, s.mm.memcgs[2].usage);
        // a was reclaimed down to its soft limit (1024 pages), and b kept what a gave.
        assert!(a <= 1024 && a < a0 && b > b0, "a {a0} -> {a}, b {b0} -> {b} pages");
    }
}

/// Reclaim's view of a memcg with children: its subtree's statistics (5.2+).
#[cfg(test)]
mod hierarchical_stats_tests {
    use crate::mm::vmstat::Counter;
    use crate::scenario::Scenario;

    /// A task in memcg `jobs` reads a 6 MB file twice (its pages go active), then a 10 MB
    /// one three times, under a 12 MB limit: on `jobs` itself (`nested` false) or on its
    /// parent. Returns jobs' pgdeactivate and workingset_refault_file.
    fn run(nested: bool, profile: &str) -> (u64, u64) {
        let limit = if nested {
            "[memcg.build]\nmax = \"12MB\"\n[memcg.jobs]\nparent = \"build\"\n"
        } else {
            "[memcg.jobs]\nmax = \"12MB\"\n"
        };
        let text = format!(
            "[machine]\nram = \"256MB\"\n[kernel]\nprofile = \"{profile}\"\n[device.d]\nmodel = \"nvme\"\n{limit}\
             [file.a]\ndevice = \"d\"\nsize = \"6MB\"\n[file.b]\ndevice = \"d\"\nsize = \"10MB\"\n\
             [[task]]\nname = \"t\"\nmemcg = \"jobs\"\n\
             [[task.step]]\nfile = \"a\"\nop = \"read\"\npattern = \"seq\"\npasses = 2\n\
             [[task.step]]\nfile = \"b\"\nop = \"read\"\npattern = \"seq\"\npasses = 3\n"
        );
        let sc = Scenario::from_toml(&text, "t.toml", &[]).unwrap_or_else(|e| panic!("{e}"));
        let mut s = crate::engine::Sim::new(&sc, 1);
        s.run(&mut None);
        s.verify().unwrap();
        let j = s.mm.memcgs.iter().position(|m| m.name == "jobs").unwrap();
        (s.mm.memcgs[j].events.get(Counter::PgDeactivate), s.mm.memcgs[j].events.get(Counter::WorkingsetRefaultFile))
    }

    #[test]
    fn a_parents_limit_reclaim_reads_its_childrens_lists_and_refaults() {
        // 6.x: the parent (with no pages of its own) sees its child's active file list and
        // refaults, so its limit reclaim deactivates the child's file pages exactly as the
        // child's own limit would. Read as its own (empty) lists, the parent would never
        // allow file deactivation: half as many deactivations, more refaults.
        let flat = run(false, "linux-6.6");
        assert!(flat.0 > 1500, "flat: {} pages deactivated", flat.0);
        assert_eq!(run(true, "linux-6.6"), flat);
        assert_eq!(run(true, "linux-6.18"), run(false, "linux-6.18"));
    }
}
