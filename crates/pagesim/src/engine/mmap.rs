//! Models mm/mmap.c `exit_mmap`: a task's VMAs (mm/mmap.rs) torn down when it exits or is
//! killed: its pages freed or unmapped, and the swap references of its swap entries dropped
//! (`zap_pte_range` → `swap_free`); a swap-cache page whose slot is left without references
//! stays for reclaim to free.

use crate::engine::Sim;
use crate::ids::Tid;
use crate::mm::swapops::Entry;
use crate::mm::{pg, pte, Mm, Owner};

impl Sim {
    /// `exit_mmap` for the anon VMAs of `tid`: folios are freed (a large one with its last
    /// PTE), swap references dropped.
    /// Pages still under I/O or in the swap cache stay as unmapped swap-cache pages for
    /// reclaim to drop.
    pub fn exit_mmap(&mut self, tid: Tid) {
        for v in 0..self.mm.vmas.len() {
            if self.mm.vmas[v].task != tid {
                continue;
            }
            // Shared mappings (shmem, files) only lose their PTEs; the pages stay cached.
            let shared = self.mm.vmas[v].shmem.is_some() || self.mm.vmas[v].file.is_some();
            for i in 0..self.mm.vmas[v].pte.len() {
                let e = std::mem::take(&mut self.mm.vmas[v].pte[i]);
                if shared {
                    continue;
                }
                if e & pte::SWAP != 0 {
                    let entry = Entry(e & !pte::SWAP);
                    let m = self.sched.tasks[tid].memcg;
                    self.mm.memcgs[m as usize].swap_usage = self.mm.memcgs[m as usize].swap_usage.saturating_sub(1);
                    self.swap.area(entry).put(entry.slot());
                } else if let Some(f) = pte::frame(e) {
                    // A large folio's other PTEs follow in this VMA: zap_pte_range takes
                    // them in one batch, and the folio goes once.
                    let last = self.mm.frames.index[f] as usize + self.mm.frames.nr_pages(f) as usize;
                    let ptes = &mut self.mm.vmas[v].pte;
                    let end = last.min(ptes.len());
                    for p in ptes.get_mut(i + 1..end).unwrap_or_default() {
                        if pte::is_present(*p) && pte::frame(*p) == Some(f) {
                            *p = pte::NONE;
                        }
                    }
                    self.mm.frames.set_owner(f, Owner::None, 0);
                    self.mm.frames.clear(f, pg::DIRTY);
                    if !self.mm.frames.test(f, pg::SWAPCACHE) && !self.mm.frames.test(f, pg::WRITEBACK | pg::LOCKED) {
                        let m = self.mm.frames.memcg[f] as usize;
                        let Mm { memcgs, frames, .. } = &mut self.mm;
                        memcgs[m].lru.del(frames, f);
                        self.mm.free_frame(f);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::memory::Fault;
    use crate::mm::pte;
    use crate::testutil::{evict, fault, sim, swapcache_page, writeout, SSD};

    #[test]
    fn exit_mmap_frees_resident_pages_and_drops_the_swap_references() {
        let mut s = sim(SSD);
        for i in 0..3 {
            assert!(matches!(fault(&mut s, i, true), Fault::Done));
        }
        let (f, e) = swapcache_page(&mut s, 5);
        writeout(&mut s, f, e);
        evict(&mut s, f, e, 5);
        assert_eq!(s.swap.area_ref(e).count(e.slot()), 1);
        let free = s.mm.nr_free();
        s.exit_mmap(crate::ids::Tid(0));
        assert_eq!(s.mm.nr_free(), free + 3, "the three resident pages are freed");
        assert_eq!(s.swap.area_ref(e).map[e.slot() as usize], 0, "the swap slot is freed");
        assert!(s.mm.vmas[0].pte.iter().all(|&p| p == pte::NONE), "no PTE is left");
        s.verify().unwrap();
    }
}
