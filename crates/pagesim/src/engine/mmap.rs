//! Models mm/mmap.c and the unmapping half of mm/memory.c: a process's VMAs (mm/mmap.rs)
//! made (`mmap_region`), resized (`brk`), and torn down (`do_vmi_munmap`, and `exit_mmap`
//! when the process exits, execs or is killed). Tearing down is `zap_pte_range`:
//!
//! - a private anon page is freed with its last mapping (a page forked copy-on-write stays
//!   while another VMA of its anon_vma maps it; one under I/O stays unmapped for reclaim to
//!   drop);
//! - a swap entry drops its reference (`free_swap_and_cache`; the slot is freed with its
//!   last one, and an unmapped swap-cache page of the slot with it);
//! - a page in the swap cache leaves it and is freed (`free_swap_cache`) unless I/O holds
//!   it or another process's swap entry refers to it;
//! - a shared page (shmem, file) stays in its cache: a dirty PTE dirties it
//!   (`folio_mark_dirty`) and a young one marks it accessed (`folio_mark_accessed`, not
//!   for a VM_SEQ_READ mapping), so the pages a program used are referenced when it exits.
//!
//! VMA slots, anon_vmas and readahead states are reused after a teardown, so a run that
//! starts thousands of processes holds only the live ones' page tables.

use crate::engine::{Sim, StepTarget};
use crate::ids::{AnonId, FileId, Tid, VmaId};
use crate::mm::mmap::{AnonVma, VmHint, Vma};
use crate::mm::swapops::Entry;
use crate::mm::{pg, pte, Mm, Owner};
use crate::pagecache::readahead::FileRaState;
use crate::scenario::RegionKind;

impl Sim {
    /// A readahead state for a new open file or file mapping of `fi` (`file_ra_state_init`:
    /// the bdi's `ra_pages` and `io_pages`).
    pub(crate) fn new_ra_state(&mut self, fi: FileId) -> u32 {
        let m = self.io.devices[self.pc.files[fi].dev].model();
        let ra = FileRaState::new(m.ra_pages(), m.io_pages());
        match self.pc.free_ra.pop() {
            Some(i) => {
                self.pc.ra_states[i as usize] = ra;
                self.pc.ra_last_page[i as usize] = u64::MAX;
                i
            }
            None => {
                self.pc.ra_states.push(ra);
                self.pc.ra_last_page.push(u64::MAX);
                (self.pc.ra_states.len() - 1) as u32
            }
        }
    }

    /// `mmap_region`: region `r` mapped into task `tid` with `pages` PTEs (the region's
    /// size, a heap's brk size, or for a file region mapped at an offset that offset plus
    /// its size: [`Vma::pgoff`]); a private anon region gets a new anon_vma, a shared one
    /// joins its object's or file's mappers.
    pub(crate) fn map_region(&mut self, tid: Tid, r: u32, pages: u32) -> VmaId {
        let reg = &self.procs.regions[r as usize];
        let (kind, extent, madvise, exec) = (reg.kind, reg.extent, reg.madvise, reg.exec);
        let pgoff = if extent.is_some() { reg.pgoff as u32 } else { 0 };
        let id = self.mm.free_vmas.pop().unwrap_or(VmaId(self.mm.vmas.len() as u32));
        let shmem = if kind == RegionKind::Shmem { self.procs.shmem_of[r as usize] } else { None };
        if let Some(o) = shmem {
            self.mm.shmem[o as usize].mappers.push(id);
        }
        let file = extent.map(FileId);
        let mut ra = crate::mm::NIL;
        if let Some(fi) = file {
            self.pc.files[fi].mappers.push(id);
            ra = self.new_ra_state(fi);
        }
        let anon = (kind == RegionKind::Anon).then(|| {
            let a = AnonVma { mappers: vec![id], region: r, key: id.0 };
            match self.mm.free_anon.pop() {
                Some(a_id) => {
                    self.mm.anon_vmas[a_id] = a;
                    a_id
                }
                None => {
                    self.mm.anon_vmas.push(a);
                    AnonId(self.mm.anon_vmas.len() as u32 - 1)
                }
            }
        });
        let vma = Vma {
            task: tid,
            shmem,
            file,
            ra,
            hint: Sim::vm_hint(madvise),
            willneed: madvise == Some(crate::scenario::Madvise::Willneed),
            pages,
            pte: vec![pte::NONE; pages as usize],
            pgoff,
            region: r,
            anon,
            exec,
            live: true,
        };
        if id.idx() == self.mm.vmas.len() {
            self.mm.vmas.push(vma);
        } else {
            self.mm.vmas[id] = vma;
        }
        self.sched.tasks[tid].mm.push((r, id));
        id
    }

    /// `do_vmi_munmap` of task `tid`'s mapping of region `r`, if it has one; its steps that
    /// access the region map it again when they run.
    pub(crate) fn munmap_region(&mut self, tid: Tid, r: u32) {
        let t = &mut self.sched.tasks[tid];
        let Some(k) = t.mm.iter().position(|&(x, _)| x == r) else { return };
        let (_, v) = t.mm.swap_remove(k);
        for target in t.targets.iter_mut() {
            if *target == StepTarget::Vma(v) {
                *target = StepTarget::Unmapped(r);
            }
        }
        self.zap_range(tid, v, 0);
        self.remove_vma(v);
    }

    /// `exit_mmap`: every mapping of task `tid` torn down.
    pub fn exit_mmap(&mut self, tid: Tid) {
        let mm = std::mem::take(&mut self.sched.tasks[tid].mm);
        for &(r, v) in &mm {
            for target in self.sched.tasks[tid].targets.iter_mut() {
                if *target == StepTarget::Vma(v) {
                    *target = StepTarget::Unmapped(r);
                }
            }
            self.zap_range(tid, v, 0);
            self.remove_vma(v);
        }
    }

    /// `brk` on task `tid`'s heap, region `r`: the mapping is `pages` long from now on; a
    /// shrink zaps the pages past the new end. (The region is mapped first if it is not.)
    pub(crate) fn brk(&mut self, tid: Tid, r: u32, pages: u32) -> VmaId {
        let Some(v) = self.sched.tasks[tid].vma_of(r) else {
            return self.map_region(tid, r, pages);
        };
        if pages < self.mm.vmas[v].pages {
            self.zap_range(tid, v, pages);
        }
        let vma = &mut self.mm.vmas[v];
        vma.pte.resize(pages as usize, pte::NONE);
        vma.pte.shrink_to_fit();
        vma.pages = pages;
        v
    }

    /// Unlinks VMA `v` (its page table zapped) from its anon_vma or shared object and frees
    /// its slot and readahead state.
    fn remove_vma(&mut self, v: VmaId) {
        let vma = &mut self.mm.vmas[v];
        vma.live = false;
        vma.pte = Vec::new();
        vma.pages = 0;
        let (anon, shmem, file, ra) = (vma.anon.take(), vma.shmem, vma.file, vma.ra);
        if let Some(a) = anon {
            let m = &mut self.mm.anon_vmas[a].mappers;
            m.retain(|&x| x != v);
            if m.is_empty() {
                self.mm.free_anon.push(a);
            }
        }
        if let Some(o) = shmem {
            self.mm.shmem[o as usize].mappers.retain(|&x| x != v);
        }
        if let Some(fi) = file {
            self.pc.files[fi].mappers.retain(|&x| x != v);
            self.pc.free_ra.push(ra);
        }
        self.mm.free_vmas.push(v);
    }

    /// `zap_pte_range` over VMA `v`'s pages from `from` to its end (see the module comment).
    fn zap_range(&mut self, tid: Tid, v: VmaId, from: u32) {
        let (anon, file, shmem, hint) = {
            let vma = &self.mm.vmas[v];
            (vma.anon, vma.file, vma.shmem, vma.hint)
        };
        let memcg = self.sched.tasks[tid].memcg;
        let mut freed = 0u64;
        for i in from as usize..self.mm.vmas[v].pte.len() {
            let e = std::mem::take(&mut self.mm.vmas[v].pte[i]);
            if e & pte::SWAP != 0 {
                // Shmem objects hold their own swap entries; a PTE holds one only for anon.
                let entry = Entry(e & !pte::SWAP);
                self.mm.swap_charge(memcg, -1);
                self.swap_free(entry);
                // free_swap_and_cache: the last reference gone, an unmapped swap-cache page
                // of the slot goes too.
                if self.swap.area_ref(entry).count(entry.slot()) == 0 {
                    if let Some(f) = self.swap.area_ref(entry).cached(entry.slot()) {
                        if !self.folio_mapped(f) {
                            freed += self.free_swap_cache(f);
                        }
                    }
                }
                continue;
            }
            let Some(f) = pte::frame(e) else { continue };
            if anon.is_none() {
                // A shared page: its PTE's dirty and accessed bits go to the page.
                if e & pte::DIRTY != 0 {
                    match file {
                        Some(fi) => {
                            self.folio_mark_dirty(f, fi, None);
                        }
                        None => self.mm.frames.set(f, pg::DIRTY),
                    }
                }
                if e & pte::YOUNG != 0 && hint != VmHint::Sequential && (file.is_some() || shmem.is_some()) {
                    self.mark_page_accessed(f);
                }
                continue;
            }
            // A large folio's other PTEs follow in this VMA: zap_pte_range takes them in
            // one batch, and the folio goes once.
            let last = self.mm.frames.index[f] as usize + self.mm.frames.nr_pages(f) as usize;
            let ptes = &mut self.mm.vmas[v].pte;
            let end = last.min(ptes.len());
            for p in ptes.get_mut(i + 1..end).unwrap_or_default() {
                if pte::is_present(*p) && pte::frame(*p) == Some(f) {
                    *p = pte::NONE;
                }
            }
            if self.anon_mapped_elsewhere(f, v) {
                continue;
            }
            self.mm.frames.set_owner(f, Owner::None, 0);
            self.mm.frames.clear(f, pg::DIRTY);
            if self.mm.frames.test(f, pg::SWAPCACHE) {
                // free_pages_and_swap_cache → free_swap_cache: it leaves the swap cache
                // unless I/O holds it or another process's swap entry still needs it.
                freed += self.free_swap_cache(f);
            } else if !self.mm.frames.test(f, pg::WRITEBACK | pg::LOCKED) {
                freed += self.mm.frames.nr_pages(f);
                let m = self.mm.frames.memcg[f] as usize;
                let Mm { memcgs, frames, .. } = &mut self.mm;
                memcgs[m].lru.del(frames, f);
                self.mm.free_frame(f);
            }
        }
        self.charge(freed * self.cost.unmap_page_ns);
        // Slots freed with their last reference take their zswap entries and zram objects
        // with them (`swap_range_free`).
        self.swap_slots_released();
    }

    /// `free_swap_cache` / `__try_to_reclaim_swap` for unmapped swap-cache folio `f`: it
    /// leaves the swap cache and is freed unless it is under I/O or a slot of it still has
    /// a reference (another process's swap entry). Returns the pages freed.
    fn free_swap_cache(&mut self, f: crate::ids::Pfn) -> u64 {
        if self.mm.frames.test(f, pg::WRITEBACK | pg::LOCKED) || self.page_swapcount(f) {
            return 0;
        }
        self.swap_cache_del_folio(f, None);
        let nr = self.mm.frames.nr_pages(f);
        let m = self.mm.frames.memcg[f] as usize;
        let Mm { memcgs, frames, .. } = &mut self.mm;
        memcgs[m].lru.del(frames, f);
        self.mm.free_frame(f);
        nr
    }

    /// Whether a VMA other than `v` of anon page `f`'s anon_vma still maps one of its pages
    /// (`folio_mapped` after this VMA's PTEs went).
    pub(crate) fn anon_mapped_elsewhere(&self, f: crate::ids::Pfn, v: VmaId) -> bool {
        let Owner::Anon(a) = self.mm.frames.owner(f) else { return false };
        let (idx, nr) = (self.mm.frames.index[f] as usize, self.mm.frames.nr_pages(f) as usize);
        self.mm.anon_vmas[a].mappers.iter().filter(|&&w| w != v).any(|&w| {
            let ptes = &self.mm.vmas[w].pte;
            ptes.get(idx..(idx + nr).min(ptes.len()))
                .is_some_and(|p| p.iter().any(|&e| pte::is_present(e) && pte::frame(e) == Some(f)))
        })
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
        assert!(s.mm.vmas[0].pte.is_empty() && !s.mm.vmas[0].live, "the VMA is gone");
        assert!(s.sched.tasks[0].mm.is_empty(), "nothing is mapped");
        assert_eq!(s.mm.free_vmas, [crate::ids::VmaId(0)], "its slot waits for reuse");
        s.verify().unwrap();
    }

    #[test]
    fn brk_shrink_frees_the_pages_past_the_new_end_and_grow_adds_empty_ones() {
        let mut s = sim(SSD);
        for i in 0..8 {
            assert!(matches!(fault(&mut s, i, true), Fault::Done));
        }
        let free = s.mm.nr_free();
        let v = s.brk(crate::ids::Tid(0), 0, 4);
        assert_eq!(s.mm.vmas[v].pte.len(), 4);
        assert_eq!(s.mm.nr_free(), free + 4, "pages 4..8 are freed");
        s.brk(crate::ids::Tid(0), 0, 16);
        assert!(s.mm.vmas[v].pte[4..].iter().all(|&e| e == pte::NONE), "grown pages start empty");
        assert!(s.mm.vmas[v].pte[..4].iter().all(|&e| pte::is_present(e)), "the first four stay");
        s.verify().unwrap();
    }
}
