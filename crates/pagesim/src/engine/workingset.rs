//! Models mm/workingset.c: the shadow entry a page leaves behind when it is evicted
//! (`workingset_eviction`: the memcg and the nonresident age at eviction), the refault
//! distance when it comes back (`workingset_refault`: activate if it is smaller than the
//! workingset, count `workingset_refault_*`, `_activate_*`, `_restore_*`), and the
//! nonresident age clock (`workingset_age_nonresident`). Which rule decides activation
//! depends on the profile (`WorkingsetMode`). The shadow's packing (`pack_shadow`,
//! `unpack_shadow`) is mm/shadow.rs.
//!
//! DOC: the shadow-node shrinker. Shadow entries live in the page cache's xarray nodes (64
//! slots each). A node that comes to hold only shadows goes on its memcg's `shadow_nodes`
//! list (`workingset_update_node`); reclaim's `shrink_slab`, after each memcg's LRU pass,
//! asks the shrinker how many it may free (`count_shadow_nodes`: those beyond 1/8 of the
//! memcg's LRU pages, as its local statistics read, on 6.18 as of the last periodic
//! flush) and `do_shrink_slab` frees half that excess per call, plus work deferred from
//! earlier calls, which it carries over while the amount is below a batch of 128 and the
//! excess itself (its scan then comes in the low-priority passes of a reclaim that
//! struggles). A freed node takes its shadows with it: those pages read back later are not
//! refaults. **Simplification:** the memcg's slab pages, which add to the limit's base,
//! are not modelled; nor are nodes above level 1 (they hold pointers).

use crate::engine::Sim;
use crate::ids::{FileId, Pfn};
use crate::mm::pg;
use crate::mm::shadow::XaNode;
use crate::mm::vmstat::Counter;
use crate::profile::WorkingsetMode;
use crate::reclaim::scan_balance::SWAP_CLUSTER_MAX;
use crate::swap::Shadow;

/// Whether node `n`'s file still gives it place `seq` on its memcg's shadow-node list (an
/// entry of the list's queue is stale once the node has left, or left and come back).
#[inline]
fn listed_at(files: &[crate::pagecache::AddressSpace], seq: u64, n: &XaNode) -> bool {
    files[n.file.idx()].xa_node_lru(n.level, n.id as u64).1 == seq
}

/// `SHRINK_BATCH` (include/linux/shrinker.h): the objects a shrinker scans per call of its
/// `scan_objects`.
const SHRINK_BATCH: u64 = 128;

impl Sim {
    /// `workingset_update_node` for the nodes over leaves `blocks` of file `fi` (and their
    /// level-1 nodes): one that now holds only shadows joins its memcg's list at the tail,
    /// one that no longer does leaves it.
    pub(crate) fn workingset_update_nodes(&mut self, fi: FileId, blocks: std::ops::Range<u64>) {
        if !self.profile.shadow_node_shrinker {
            return;
        }
        let mut upper = u64::MAX;
        for b in blocks {
            // Most calls change no node's membership: told from the file alone.
            let a = &self.pc.files[fi];
            let leaf = a.xa_leaf_shadow_only(b);
            if leaf != (a.xa_node_lru(0, b).1 != 0) {
                self.shadow_node_list(fi, 0, b, leaf);
            }
            if b / 64 != upper {
                upper = b / 64;
                // A leaf node with entries under it: the level-1 node holds a pointer, not
                // only shadows (the usual case, told without a look at its 64 leaves).
                let a = &self.pc.files[fi];
                let up = !a.xa_leaf_has_entries(b) && a.xa_upper_shadow_only(upper);
                if up != (a.xa_node_lru(1, upper).1 != 0) {
                    self.shadow_node_list(fi, 1, upper, up);
                }
            }
        }
    }

    /// Puts node `(level, id)` of file `fi` on its memcg's shadow-node list (`on`) or takes
    /// it off, where it is not so already.
    #[inline]
    fn shadow_node_list(&mut self, fi: FileId, level: u8, id: u64, on: bool) {
        let (m, lru) = self.pc.files[fi].xa_node_lru(level, id);
        if on && lru == 0 {
            self.mm.shadow_node_seq += 1;
            let seq = self.mm.shadow_node_seq;
            self.mm.memcgs[m as usize].shadow_nodes.push(seq, XaNode { file: fi, id: id as u32, level });
            self.pc.files[fi].xa_set_node_lru(level, id, seq);
        } else if !on && lru != 0 {
            self.pc.files[fi].xa_set_node_lru(level, id, 0);
            self.shadow_node_left(m);
        }
    }

    /// A node left memcg `m`'s shadow-node list (its file no longer gives it a place).
    fn shadow_node_left(&mut self, m: u16) {
        let files = &self.pc.files;
        let list = &mut self.mm.memcgs[m as usize].shadow_nodes;
        list.left();
        list.compact(|seq, n| listed_at(files, seq, n));
    }

    /// Takes the nodes a truncate emptied (`AddressSpace::forget_shadows`) off their lists.
    pub(crate) fn shadow_nodes_forget(&mut self, listed: Vec<(u16, u64)>) {
        for (m, _) in listed {
            self.shadow_node_left(m);
        }
    }

    /// `shrink_slab` of memcg `m` at reclaim priority `priority`, for the shadow-node
    /// shrinker (the only slab cache modelled): `count_shadow_nodes` then `do_shrink_slab`
    /// with `seeks = 0` (see the module's DOC).
    pub(crate) fn shrink_shadow_nodes(&mut self, m: u16, priority: u32) {
        if !self.profile.shadow_node_shrinker {
            return;
        }
        let nodes = self.mm.memcgs[m as usize].shadow_nodes.len();
        if nodes == 0 {
            return;
        }
        let pages: u64 = if self.profile.memcg_stats_flush_ns > 0 {
            self.mm.mem_cgroup_flush_stats(self.sched.now, self.profile.memcg_stats_flush_ns);
            self.mm.memcgs[m as usize].flushed.lru_local
        } else {
            self.mm.memcgs[m as usize].lru.evictable_sizes().iter().sum()
        };
        // max_nodes = pages >> (XA_CHUNK_SHIFT - 3)
        let max_nodes = pages >> 3;
        if nodes <= max_nodes {
            return;
        }
        let freeable = nodes - max_nodes;
        let nr = std::mem::take(&mut self.mm.memcgs[m as usize].shadow_nodes.nr_deferred);
        let delta = freeable / 2;
        let mut total_scan = ((nr >> priority) + delta).min(2 * freeable);
        let mut scanned = 0;
        while total_scan >= SHRINK_BATCH || total_scan >= freeable {
            let n = total_scan.min(SHRINK_BATCH);
            for _ in 0..n {
                let files = &self.pc.files;
                let Some(node) = self.mm.memcgs[m as usize].shadow_nodes.pop_live(|seq, n| listed_at(files, seq, n))
                else {
                    break;
                };
                self.shadow_node_reclaim(m, node);
            }
            total_scan -= n;
            scanned += n;
        }
        self.mm.memcgs[m as usize].shadow_nodes.nr_deferred = (nr + delta).saturating_sub(scanned).min(2 * freeable);
    }

    /// `shadow_lru_isolate`: node `node`, off its list, is deleted with its shadows; its
    /// parent may now hold only shadows itself.
    fn shadow_node_reclaim(&mut self, m: u16, node: XaNode) {
        let (fi, id) = (node.file, node.id as u64);
        self.pc.files[fi].xa_set_node_lru(node.level, id, 0);
        self.pc.files[fi].xa_drop_node(node.level, id);
        self.mm.count(Counter::WorkingsetNodereclaim, m, 1);
        if node.level == 0 {
            let up = self.pc.files[fi].xa_upper_shadow_only(id / 64);
            self.shadow_node_list(fi, 1, id / 64, up);
        }
    }

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

    /// The shadow-node shrinker: random reads over a file 128 times its memcg leave most
    /// leaf nodes holding shadows only, far more than the 32 that 1/8 of the memcg's 256
    /// pages allow, and reclaim frees them with their shadows: few re-reads count as
    /// refaults. Two passes over a file twice the memcg leave few, dense nodes, within the
    /// limit: every page of the second pass refaults. linux-4.8 (no such shrinker modelled)
    /// keeps every shadow.
    #[test]
    fn shadow_nodes_beyond_an_eighth_of_the_memcgs_pages_go_with_their_shadows() {
        let scenario = |size: &str, pattern: &str| {
            format!(
                "[machine]\nram = \"256MB\"\ncpus = 1\n[device.d]\nmodel = \"nvme\"\n[file.f]\n\
                 device = \"d\"\nsize = \"{size}\"\n[memcg.box]\nmax = \"1MB\"\n[[task]]\nname = \"r\"\n\
                 memcg = \"box\"\n[[task.step]]\nfile = \"f\"\nop = \"pread\"\npattern = \"{pattern}\"\npasses = 2\n"
            )
        };
        let random = scenario("128MB", "random");
        let counts = |profile: &str, sc: &str| {
            let r = crate::testutil::run(sc, &[&format!("kernel.profile={profile}")]);
            let c = |k: &str| r.counters[k].as_u64().unwrap();
            (c("workingset_nodereclaim"), c("workingset_refault_file"), c("pgpgin") / 4)
        };
        let (kept_nodes, kept_refaults, kept_reads) = counts("linux-4.8", &random);
        assert_eq!(kept_nodes, 0);
        for profile in ["linux-6.6", "linux-6.18"] {
            let (freed, refaults, reads) = counts(profile, &random);
            assert!(freed > 1000, "{profile}: {freed} nodes freed");
            assert!(reads.abs_diff(kept_reads) < kept_reads / 100, "{profile}: the same reads, {reads} {kept_reads}");
            assert!(
                refaults * 10 < kept_refaults,
                "{profile}: {refaults} refaults, {kept_refaults} with every shadow kept"
            );
            let (freed, refaults, reads) = counts(profile, &scenario("2MB", "seq"));
            assert_eq!((freed, refaults, reads), (0, 512, 1024), "{profile}: 2 passes of 512 pages");
        }
    }
}
