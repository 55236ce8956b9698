//! Models mm/workingset.c: the shadow entry a page leaves behind when it is evicted
//! (`workingset_eviction`: the memcg and the nonresident age at eviction), the refault
//! distance when it comes back (`workingset_refault`: activate if it is smaller than the
//! workingset, count `workingset_refault_*`, `_activate_*`, `_restore_*`), and the
//! nonresident age clock (`workingset_age_nonresident`). Which rule decides activation
//! depends on the profile (`WorkingsetMode`). The shadow's packing (`pack_shadow`,
//! `unpack_shadow`) is mm/shadow.rs.

use crate::engine::Sim;
use crate::ids::Pfn;
use crate::mm::pg;
use crate::mm::vmstat::Counter;
use crate::profile::WorkingsetMode;
use crate::reclaim::scan_balance::SWAP_CLUSTER_MAX;
use crate::swap::Shadow;

impl Sim {
    /// `workingset_age_nonresident`: advance the clock of `m` and its ancestors.
    pub fn workingset_age_nonresident(&mut self, m: u16, n: u64) {
        self.mm.memcgs[m as usize].workingset.nonresident_age += n;
        if m != 0 {
            self.mm.memcgs[0].workingset.nonresident_age += n;
        }
    }

    /// `workingset_eviction`: the shadow of an evicted folio; the clock advances by its
    /// pages.
    pub(crate) fn workingset_eviction(&mut self, f: Pfn) -> Shadow {
        let m = self.mm.frames.memcg[f];
        let age = self.mm.memcgs[m as usize].workingset.nonresident_age;
        let nr = self.mm.frames.nr_pages(f);
        self.workingset_age_nonresident(m, nr);
        Shadow { memcg: m, age, workingset: self.mm.frames.test(f, pg::WORKINGSET) }
    }

    /// `workingset_refault` for a folio read into frame `f` at a swap slot (`file` false)
    /// or page-cache index (`file` true) that held `shadow`: counts the refault (in pages),
    /// and activates the folio if its refault distance fits in the workingset.
    pub fn workingset_refault(&mut self, f: Pfn, shadow: Shadow, file: bool) {
        if !self.profile.workingset.tracks(file) {
            return;
        }
        let m = self.mm.frames.memcg[f];
        let (refault, activate, restore) = if file {
            (Counter::WorkingsetRefaultFile, Counter::WorkingsetActivateFile, Counter::WorkingsetRestoreFile)
        } else {
            (Counter::WorkingsetRefaultAnon, Counter::WorkingsetActivateAnon, Counter::WorkingsetRestoreAnon)
        };
        let nr = self.mm.frames.nr_pages(f);
        self.mm.count(refault, m, nr);
        self.mm.mem_cgroup_flush_stats(self.sched.now, self.profile.memcg_stats_flush_ns);
        let em = if (shadow.memcg as usize) < self.mm.memcgs.len() { shadow.memcg } else { 0 };
        let distance = self.mm.memcgs[em as usize].workingset.nonresident_age.wrapping_sub(shadow.age);
        // [inactive_anon, active_anon, inactive_file, active_file]
        let s = self.lru_view(em);
        let ws = self.profile.workingset.workingset_size(s, file, self.swap.free_pages() > 0);
        if distance > ws {
            return;
        }
        self.mm.frames.set(f, pg::ACTIVE);
        self.workingset_age_nonresident(m, nr);
        self.mm.count(activate, m, nr);
        if shadow.workingset {
            self.mm.frames.set(f, pg::WORKINGSET);
            self.mm.count(restore, m, nr);
            self.lru_note_cost(m, file as usize, nr * SWAP_CLUSTER_MAX);
        }
    }
}

/// What each kernel version's workingset detection covers (`Profile::workingset`).
impl WorkingsetMode {
    /// Whether an evicted page of this type leaves a shadow entry and its refault is
    /// tested: none before 3.15, file pages from 3.15, anon pages too from 5.9.
    pub fn tracks(self, file: bool) -> bool {
        match self {
            WorkingsetMode::Off => false,
            WorkingsetMode::FileOnly => file,
            WorkingsetMode::AnonAndFile => true,
        }
    }

    /// The workingset a refault distance is compared with, from the lruvec's lists
    /// `[inactive_anon, active_anon, inactive_file, active_file]`. 3.15-5.8: the active
    /// file list. 5.9+ (`workingset_test_recent`): the active file list, the other type's
    /// inactive list, and the anon lists only while swap has room.
    pub fn workingset_size(self, lists: [u64; 4], file: bool, swap_has_room: bool) -> u64 {
        match self {
            WorkingsetMode::Off | WorkingsetMode::FileOnly => lists[3],
            WorkingsetMode::AnonAndFile => {
                let mut ws = lists[3] + if file { 0 } else { lists[2] };
                if swap_has_room {
                    ws += lists[1] + if file { lists[0] } else { 0 };
                }
                ws
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_version_tests_the_refaults_it_tracks_against_its_own_workingset() {
        assert!(!WorkingsetMode::Off.tracks(true) && !WorkingsetMode::Off.tracks(false));
        assert!(WorkingsetMode::FileOnly.tracks(true) && !WorkingsetMode::FileOnly.tracks(false));
        assert!(WorkingsetMode::AnonAndFile.tracks(false));
        let lists = [1, 10, 100, 1000];
        assert_eq!(WorkingsetMode::FileOnly.workingset_size(lists, true, true), 1000);
        // 5.9+: a file refault counts the anon lists while swap has room...
        assert_eq!(WorkingsetMode::AnonAndFile.workingset_size(lists, true, true), 1011);
        assert_eq!(WorkingsetMode::AnonAndFile.workingset_size(lists, true, false), 1000);
        // ... an anon refault the inactive file list and the active anon list.
        assert_eq!(WorkingsetMode::AnonAndFile.workingset_size(lists, false, true), 1110);
        assert_eq!(WorkingsetMode::AnonAndFile.workingset_size(lists, false, false), 1100);
    }

    /// linux-6.18's refault test reads the memcg's active file list as the last periodic
    /// stats flush left it: a memcg made at the start reads 0 until the first flush, so a
    /// 0.7 s zipf reader over a file four times its memcg activates no refault when the
    /// flush comes at the start or after the run, and some once a flush inside the run
    /// (taken at its time: more the later it comes) shows the active list it has grown.
    #[test]
    fn refaults_are_tested_against_the_active_list_of_the_last_stats_flush() {
        let scenario = "[kernel]\nprofile = \"linux-6.18\"\n[machine]\nram = \"256MB\"\ncpus = 1\n\
                        [device.d]\nmodel = \"nvme\"\n[file.f]\ndevice = \"d\"\nsize = \"64MB\"\n\
                        [memcg.box]\nmax = \"16MB\"\n[[task]]\nname = \"r\"\nmemcg = \"box\"\n\
                        [[task.step]]\nfile = \"f\"\nop = \"pread\"\npattern = \"zipf\"\npasses = 2\n";
        let activations = |phase: &str| {
            let set = format!("kernel.memcg_stats_flush_phase=\"{phase}\"");
            let r = crate::testutil::run(scenario, &[&set]);
            assert!(r.elapsed_ns > 600_000_000 && r.elapsed_ns < 1_000_000_000, "{}", r.elapsed_ns);
            r.counters["workingset_activate_file"].as_u64().unwrap()
        };
        assert_eq!(activations("0ms"), 0, "flushed at the start: an empty active list");
        assert_eq!(activations("1999ms"), 0, "no flush during the run");
        let (early, later) = (activations("50ms"), activations("200ms"));
        assert!(early > 0 && later > early, "{early} {later}");
    }
}
