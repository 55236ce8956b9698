//! Models mm/rmap.c: `folio_referenced` (test and clear the accessed bits of every PTE
//! that maps a page), `folio_mapped`, and `try_to_unmap` (replace each PTE by the page's
//! swap entry, or clear it for a clean file page), for the reclaim code of
//! engine/vmscan.rs. A page is found from its owner (`Owner`: the anon VMA and index,
//! the shmem object, or the file and its mapping VMAs) instead of the kernel's anon_vma
//! and i_mmap trees. A file or shmem page is looked for only in the VMAs whose range
//! covers its index (the kernel's `vma_address` check): a region may map only the start of
//! its file, and readahead caches pages beyond it.

use crate::engine::Sim;
use crate::ids::VmaId;
use crate::ids::{FileId, Pfn};
use crate::mm::swapops::Entry;
use crate::mm::{pg, pte, Owner};

impl Sim {
    /// `folio_referenced`: test-and-clear the young bit of every PTE mapping `f`; returns
    /// the number of mappings (VMAs) in which it was young. A large file folio is looked
    /// for at each of its pages, and counts once per VMA however many of its PTEs were young
    /// (`folio_referenced_one` counts a VMA, not a PTE).
    #[cfg(test)]
    pub(crate) fn folio_referenced(&mut self, f: Pfn) -> u32 {
        self.folio_referenced_flags(f, None).0
    }

    /// `folio_referenced` with the `vm_flags` it gathers: also whether one of the mappings
    /// in which the folio was young is VM_EXEC (a program's text). Limit reclaim of memcg
    /// `target` looks only at the mappings of the processes in its subtree
    /// (`invalid_folio_referenced_vma`: `mm_match_cgroup`): a page another cgroup's process
    /// uses looks unreferenced to it.
    pub(crate) fn folio_referenced_flags(&mut self, f: Pfn, target: Option<u16>) -> (u32, bool) {
        let idx = self.mm.frames.index[f] as usize;
        let nr = self.mm.frames.nr_pages(f) as usize;
        let mut n = 0;
        let mut exec = false;
        let mut check = |vma: &mut crate::mm::mmap::Vma| {
            let ptes = &mut vma.pte;
            let mut young = false;
            if nr == 1 {
                let Some(pte) = ptes.get_mut(idx) else { return };
                let e = *pte;
                if pte::is_present(e) && pte::frame(e) == Some(f) && e & pte::YOUNG != 0 {
                    *pte = e & !pte::YOUNG;
                    young = true;
                }
            } else {
                let end = (idx + nr).min(ptes.len());
                let Some(ptes) = ptes.get_mut(idx..end) else { return };
                for pte in ptes {
                    let e = *pte;
                    if pte::is_present(e) && pte::frame(e) == Some(f) && e & pte::YOUNG != 0 {
                        *pte = e & !pte::YOUNG;
                        young = true;
                    }
                }
            }
            n += young as u32;
            exec |= young && vma.exec;
        };
        let owner = self.mm.frames.owner(f);
        let tasks = &self.sched.tasks;
        let crate::mm::Mm { vmas, anon_vmas, shmem, subtrees, .. } = &mut self.mm;
        let scope: &[u16] = target.map_or(&[], |m| &subtrees[m as usize]);
        let mappers: &[crate::ids::VmaId] = match owner {
            Owner::None => &[],
            Owner::Anon(a) => &anon_vmas[a].mappers,
            Owner::Shmem(o) => &shmem[o as usize].mappers,
            Owner::File(a) => &self.pc.files[a.idx()].mappers,
        };
        for &v in mappers {
            if target.is_some() && !scope.contains(&tasks[vmas[v].task].memcg) {
                continue;
            }
            check(&mut vmas[v]);
        }
        (n, exec)
    }

    /// Asks for the cache lines reclaim will read of folio `f`: the PTE of its first page in
    /// each VMA that may map it and, for a page-cache folio, its page-cache slot and shadow
    /// entry. Reclaim asks for them for every folio it has just isolated, then decides the
    /// folios one after the other: these lines (random ones of large arrays, as the folios
    /// at the LRU's tail were faulted in long ago) come in parallel rather than one miss
    /// per folio (asked for two folios ahead instead, they came too late to help). A hint.
    pub(crate) fn prefetch_folio_rmap(&self, f: Pfn) {
        let idx = self.mm.frames.index[f] as usize;
        let mappers: &[VmaId] = match self.mm.frames.owner(f) {
            Owner::None => &[],
            Owner::Anon(a) => &self.mm.anon_vmas[a].mappers,
            Owner::Shmem(o) => &self.mm.shmem[o as usize].mappers,
            Owner::File(a) => {
                self.pc.files[a.idx()].prefetch(idx as u64);
                &self.pc.files[a.idx()].mappers
            }
        };
        for &v in mappers {
            if let Some(e) = self.mm.vmas[v].pte.get(idx) {
                crate::prefetch::prefetch(e);
            }
        }
    }

    pub(crate) fn folio_mapped(&self, f: Pfn) -> bool {
        let idx = self.mm.frames.index[f] as usize;
        let nr = self.mm.frames.nr_pages(f) as usize;
        let maps = |v: VmaId| {
            let ptes = &self.mm.vmas[v].pte;
            ptes.get(idx..(idx + nr).min(ptes.len()))
                .is_some_and(|p| p.iter().any(|&e| pte::is_present(e) && pte::frame(e) == Some(f)))
        };
        match self.mm.frames.owner(f) {
            Owner::None => false,
            Owner::Anon(a) => self.mm.anon_vmas[a].mappers.iter().any(|&v| maps(v)),
            Owner::Shmem(o) => self.mm.shmem[o as usize].mappers.iter().any(|&v| maps(v)),
            Owner::File(a) => self.pc.files[a.idx()].mappers.iter().any(|&v| maps(v)),
        }
    }

    /// `page_vma_mapped_walk` over the mappings of page-cache folio `f` of file `fi`: `op`
    /// on every PTE that maps one of its pages.
    pub(crate) fn for_each_file_pte(&mut self, f: Pfn, fi: FileId, mut op: impl FnMut(&mut u32)) {
        let (idx, nr) = (self.mm.frames.index[f] as usize, self.mm.frames.nr_pages(f) as usize);
        for k in 0..self.pc.files[fi].mappers.len() {
            let ptes = &mut self.mm.vmas[self.pc.files[fi].mappers[k]].pte;
            let end = (idx + nr).min(ptes.len());
            for e in ptes.get_mut(idx..end).unwrap_or_default() {
                if pte::is_present(*e) && pte::frame(*e) == Some(f) {
                    op(e);
                }
            }
        }
    }

    /// `try_to_unmap`: anon PTEs become swap entries (one more swap reference each, taken
    /// under the lock of its `swap_map`; the pages of a large folio take its consecutive
    /// slots);
    /// shmem and file PTEs are cleared (every page of a large file folio). PTE dirty bits
    /// move to the page.
    pub(crate) fn try_to_unmap(&mut self, f: Pfn) {
        let idx = self.mm.frames.index[f] as usize;
        match self.mm.frames.owner(f) {
            Owner::File(a) => {
                // A dirty PTE of a shared mapping passes its dirt to the folio.
                let mut dirty = false;
                self.for_each_file_pte(f, a, |pte| {
                    dirty |= *pte & pte::DIRTY != 0;
                    *pte = pte::NONE;
                });
                if dirty {
                    self.folio_mark_dirty(f, a, None);
                }
            }
            Owner::None => {}
            Owner::Anon(a) => {
                // A large folio's page k takes the folio's k-th swap slot; every VMA of the
                // anon_vma that maps the page (a fork shares it) takes a reference.
                let base = Entry(self.mm.frames.swap[f]);
                let nr = self.mm.frames.nr_pages(f) as usize;
                let m = self.mm.frames.memcg[f];
                for j in 0..self.mm.anon_vmas[a].mappers.len() {
                    let v = self.mm.anon_vmas[a].mappers[j];
                    for k in 0..nr {
                        let Some(&e) = self.mm.vmas[v].pte.get(idx + k) else { break };
                        if !pte::is_present(e) || pte::frame(e) != Some(f) {
                            continue;
                        }
                        if e & pte::DIRTY != 0 {
                            self.mm.frames.set(f, pg::DIRTY);
                        }
                        let entry = base.offset(k as u32);
                        self.mm.vmas[v].pte[idx + k] = pte::SWAP | entry.0;
                        self.swap_duplicate(entry);
                        self.mm.swap_charge(m, 1);
                    }
                }
                self.mm.frames.set_owner(f, Owner::None, 0);
            }
            Owner::Shmem(o) => {
                for i in 0..self.mm.shmem[o as usize].mappers.len() {
                    let v = self.mm.shmem[o as usize].mappers[i];
                    let e = self.mm.vmas[v].pte.get(idx).copied().unwrap_or(pte::NONE);
                    if pte::is_present(e) && pte::frame(e) == Some(f) {
                        if e & pte::DIRTY != 0 {
                            self.mm.frames.set(f, pg::DIRTY);
                        }
                        self.mm.vmas[v].pte[idx] = pte::NONE;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::memory::Fault;
    use crate::mm::vmstat::Counter;
    use crate::mm::{pg, pte};
    use crate::testutil::{fault, sim, SSD};

    #[test]
    fn folio_referenced_tests_and_clears_the_accessed_bit_and_try_to_unmap_leaves_the_swap_entry() {
        let mut s = sim(SSD);
        assert!(matches!(fault(&mut s, 2, true), Fault::Done));
        let f = pte::frame(s.mm.vmas[0].pte[2]).unwrap();
        assert_eq!(s.folio_referenced(f), 1, "young after the write");
        assert_eq!(s.folio_referenced(f), 0, "the first test cleared it");
        assert!(s.folio_mapped(f));
        let e = s.swap.alloc(0).unwrap();
        s.add_to_swap_cache(f, e);
        s.try_to_unmap(f);
        assert_eq!(s.mm.vmas[0].pte[2], pte::SWAP | e.0, "the PTE holds the swap entry");
        assert!(!s.folio_mapped(f));
        assert!(s.mm.frames.test(f, pg::DIRTY), "the PTE's dirty bit moved to the page");
        assert_eq!(s.swap.area_ref(e).count(e.slot()), 1, "one reference: the PTE");
    }

    /// A region that maps the first 4 MB of a 16 MB file, read twice in a memcg of 2 MB:
    /// readahead caches pages past the mapping's end, and reclaim's rmap walk must find
    /// that no VMA maps them (it indexed past the page table and panicked).
    #[test]
    fn reclaim_of_file_pages_beyond_a_short_mapping_finds_them_unmapped() {
        let text = "[machine]\nram = \"64MB\"\nkernel_reserved = \"4MB\"\n\
                    [device.d]\nmodel = \"nvme\"\n[file.data]\ndevice = \"d\"\nsize = \"16MB\"\n\
                    [memcg.box]\nmax = \"2MB\"\n\
                    [region.map]\nkind = \"file\"\nfile = \"data\"\nsize = \"4MB\"\n\
                    [[task]]\nname = \"t\"\nmemcg = \"box\"\n\
                    [[task.step]]\nregion = \"map\"\npattern = \"seq\"\npasses = 2\nop = \"read\"\n";
        for profile in crate::scenario::PROFILES {
            let r = crate::testutil::run(text, &[&format!("kernel.profile={}", profile.name)]);
            let (c, p) = (|k| r.counter(k), profile.name);
            assert!(c(Counter::PgStealFile) > 0, "{p}: limit reclaim dropped file pages");
            assert!(c(Counter::PgMajFault) <= c(Counter::PgFault), "{p}");
            assert!(r.tasks[0].faults > 0, "{p}: the task ran");
        }
    }
}
