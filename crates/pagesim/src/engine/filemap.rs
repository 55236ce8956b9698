//! The buffered read path and file mmap faults.
//!
//! Models mm/filemap.c: `filemap_read` (2.6: `do_generic_mapping_read`) page by page,
//! `filemap_fault` with `do_sync_mmap_readahead` / `do_async_mmap_readahead` (2.6:
//! `filemap_nopage`), `filemap_map_pages` (fault-around, ≥3.15), `filemap_add_folio`
//! (insertion with the workingset refault check); mm/readahead.c `read_pages` (a window is
//! read under one block plug, so its pages merge into large requests); mm/swap.c
//! `folio_mark_accessed`; mm/fadvise.c `generic_fadvise`.
//!
//! A read(2) of pages `[start, end)` runs as a resumable loop over its pages (the task's
//! [`FileRead`]), so that it can block on a page's I/O and continue where it was:
//!
//! ```text
//!   page i: lookup ──(policy not yet asked for i)──▶ policy.read_page ──▶ submit windows
//!           still missing ──▶ allocate (may reclaim: retry) ──▶ read it alone ──▶ wait
//!           locked (I/O in flight) ──▶ wait ──▶ (evicted meanwhile: ask the policy again)
//!           uptodate ──▶ copy, mark accessed ──▶ i + 1
//! ```
//!
//! Also `page_cache_delete` (`__filemap_remove_folio` with the shadow entry of
//! `workingset_eviction`), which reclaim calls for a clean file page.
//!
//! The policy decides, this file does: it never calls the policy twice for one page of
//! one read unless the page was evicted while the reader slept, which is when the kernel's
//! read path also goes back to its lookup and readahead.

use crate::device::IoDir;
use crate::engine::memory::Fault;
use crate::engine::Sim;
use crate::ids::Pfn;
use crate::ids::{FileId, Tid, VmaId};
use crate::mm::pte;
use crate::mm::vmstat::Counter;
use crate::mm::{pg, LruList, Mm, Owner};
use crate::pagecache::readahead::{Advice, Lookup, Readahead, VmHint};
use crate::pagecache::PageCache;
use crate::pagecache::{file_pte, CacheView, FileRead, ReadStep, FAULT_AROUND_PAGES};
use crate::profile::WorkingsetMode;

impl Sim {
    /// `filemap_add_folio` + `folio_add_lru`: frame `f`, freshly allocated, becomes page
    /// `index` of file `fi`, locked for its read. A shadow entry at the slot makes it a
    /// refault (`workingset_refault`), which may start it on the active list.
    fn add_to_page_cache(&mut self, f: Pfn, fi: FileId, index: u64) {
        let a = &mut self.pc.files[fi];
        debug_assert_eq!(a.slots[index as usize], 0, "page {index} of file {fi} already cached");
        a.slots[index as usize] = f.slot();
        a.nrpages += 1;
        let shadow = a.take_shadow(index);
        self.mm.frames.set(f, pg::LOCKED);
        self.mm.frames.set_owner(f, Owner::File(fi), index as u32);
        if let Some(s) = shadow {
            self.workingset_refault(f, s, true);
        }
        let active = self.mm.frames.test(f, pg::ACTIVE);
        self.mm.frames.clear(f, pg::ACTIVE);
        self.lru_add_file(f, active);
    }

    /// Submits the read of page `index` of file `fi` into frame `f` (inside the plug).
    fn read_file_page(&mut self, fi: FileId, index: u64, f: Pfn, memcg: u16) {
        let (dev, off) = {
            let a = &self.pc.files[fi];
            (a.dev, a.offset_of(index))
        };
        self.submit_bio(dev, off, f, IoDir::Read);
        self.mm.count(Counter::PgpgIn, memcg, 4);
        self.charge(self.cost.pagecache_read_ns);
    }

    /// `read_pages` for a policy's decision: allocates and reads every missing page of
    /// the windows under one plug and sets the PG_readahead marker. Readahead pages are
    /// allocated with __GFP_NORETRY ([`Sim::alloc_page_noretry`]); a failed allocation
    /// ends the window there, as `page_cache_ra_unbounded` stops at the first page it
    /// cannot allocate.
    fn submit_file_readahead(&mut self, fi: FileId, dec: &Readahead, memcg: u16, cpu: u32) {
        if dec.is_empty() {
            return;
        }
        let dev = self.pc.files[fi].dev;
        'windows: for r in dec.ranges() {
            self.mm.count(Counter::FileRaWindows, memcg, 1);
            // The window as the policy sized it, cached pages included.
            let k = r.len.max(1).next_power_of_two().trailing_zeros() as usize;
            self.pc.ra_window_hist[k.min(crate::pagecache::RA_WINDOW_BUCKETS - 1)] += 1;
            for i in r.start..r.end() {
                if self.pc.files[fi].slots[i as usize] != 0 {
                    continue;
                }
                let Some(f) = self.alloc_page_noretry(memcg, cpu) else { break 'windows };
                self.add_to_page_cache(f, fi, i);
                self.mm.frames.set(f, pg::RA_UNUSED);
                if dec.mark == Some(i) {
                    self.mm.frames.set(f, pg::READAHEAD);
                }
                self.read_file_page(fi, i, f, memcg);
                self.mm.count(Counter::FileRaPages, memcg, 1);
            }
        }
        self.unplug(dev);
    }

    /// Allocates page `index` of file `fi` for task `tid` and reads it alone (the read
    /// path's and the fault path's own `filemap_read_folio`). `None`: the allocation
    /// started the task's reclaim job.
    fn read_page_alone(&mut self, tid: Tid, fi: FileId, index: u64) -> Option<Pfn> {
        let f = self.alloc_page(tid)?;
        let memcg = self.sched.tasks[tid].memcg;
        self.add_to_page_cache(f, fi, index);
        self.read_file_page(fi, index, f, memcg);
        self.mm.count(Counter::FileReadSingle, memcg, 1);
        let dev = self.pc.files[fi].dev;
        self.unplug(dev);
        Some(f)
    }

    fn wait_file_page(&mut self, tid: Tid, f: Pfn) {
        self.sleep_on_page(tid, f);
    }

    /// `folio_mark_accessed`: the first access sets PG_referenced; a second one on the
    /// inactive list activates the page (and ages the workingset clock, ≥3.15 for file
    /// pages).
    pub fn mark_page_accessed(&mut self, f: Pfn) {
        if !self.mm.frames.test(f, pg::REFERENCED) {
            self.mm.frames.set(f, pg::REFERENCED);
            return;
        }
        if self.mm.frames.test(f, pg::ACTIVE) || self.mm.frames.lru[f] == LruList::Unevictable as u8 {
            return;
        }
        let l = self.mm.frames.lru[f];
        let Some(list) = LruList::from_u8(l) else {
            // Isolated by reclaim right now: the kernel sets PG_active for putback; the
            // model's reclaim is not preemptible, so this does not happen.
            return;
        };
        let m = self.mm.frames.memcg[f];
        let file = list.is_file();
        {
            let Mm { memcgs, frames, .. } = &mut self.mm;
            memcgs[m as usize].lru.del(frames, f);
            frames.clear(f, pg::REFERENCED);
            frames.set(f, pg::ACTIVE);
            memcgs[m as usize].lru.add_head(frames, f, LruList::of(file, true));
        }
        self.mm.count(Counter::PgActivate, m, 1);
        let ages = match self.profile.workingset {
            WorkingsetMode::Off => false,
            WorkingsetMode::FileOnly => file,
            WorkingsetMode::AnonAndFile => true,
        };
        if ages {
            self.workingset_age_nonresident(m, 1);
        }
    }

    /// Starts a read(2) of `nr` pages at page `index` (clipped to EOF) for task `tid`.
    pub fn file_read_begin(&mut self, tid: Tid, fi: FileId, ra: u32, index: u64, nr: u64) {
        let eof = self.pc.files[fi].nr_pages;
        let end = (index + nr).min(eof).max(index);
        self.charge(self.cost.read_syscall_ns);
        let same_page = self.pc.ra_last_page[ra as usize] == index;
        // do_generic_mapping_read (≤2.6.23): `ra = *_ra` here, `*_ra = ra` on return.
        let work = if self.profile.ra_read_copy {
            let w = self.pc.ra_read_copies + tid.0;
            self.pc.ra_states[w as usize] = self.pc.ra_states[ra as usize];
            w
        } else {
            ra
        };
        let PageCache { ra: file_ra, ra_states, .. } = &mut self.pc;
        file_ra.read_begin(&mut ra_states[work as usize], index, end - index);
        self.sched.tasks[tid].read =
            Some(FileRead { file: fi, ra, work, start: index, end, index, ra_done: false, waited: false, same_page });
    }

    /// Runs task `tid`'s read(2) until it is done, blocks, needs reclaim, or the burst
    /// ends at `limit`. Cached pages cost no event.
    pub fn file_read_step(&mut self, tid: Tid, cpu: u32, limit: u64) -> ReadStep {
        let memcg = self.sched.tasks[tid].memcg;
        loop {
            let Some(mut r) = self.sched.tasks[tid].read else { return ReadStep::Done };
            if r.index >= r.end {
                let PageCache { ra: file_ra, ra_states, .. } = &mut self.pc;
                file_ra.read_end(&mut ra_states[r.work as usize], r.start, r.end - r.start);
                ra_states[r.ra as usize] = ra_states[r.work as usize];
                self.pc.ra_last_page[r.ra as usize] = r.end.wrapping_sub(1);
                self.sched.tasks[tid].read = None;
                return ReadStep::Done;
            }
            if self.sched.now >= limit {
                return ReadStep::Yield;
            }
            let fi = r.file;
            let i = r.index;
            let mut found = self.pc.files[fi].lookup(&self.mm.frames, i);
            if found == Lookup::Missing && r.ra_done && r.waited {
                // Evicted while the reader slept: back to the lookup and readahead.
                r.ra_done = false;
            }
            r.waited = false;
            if !r.ra_done {
                r.ra_done = true;
                let dec = {
                    let (PageCache { ra: file_ra, ra_states, files, .. }, devices) = (&mut self.pc, &self.io.devices);
                    let view = CacheView {
                        mapping: &files[fi.idx()],
                        congested: devices[files[fi.idx()].dev.idx()].read_congested(),
                    };
                    file_ra.read_page(&mut ra_states[r.work as usize], &view, i, r.end - i, found)
                };
                if dec.clear_mark {
                    if let Some(f) = self.pc.files[fi].frame(i) {
                        self.mm.frames.clear(f, pg::READAHEAD);
                    }
                }
                self.submit_file_readahead(fi, &dec, memcg, cpu);
                found = self.pc.files[fi].lookup(&self.mm.frames, i);
            }
            self.sched.tasks[tid].read = Some(r);
            let f = match found {
                Lookup::Missing => {
                    let Some(f) = self.read_page_alone(tid, fi, i) else { return ReadStep::Retry };
                    f
                }
                _ => self.pc.files[fi].frame(i).expect("cached"),
            };
            if self.mm.frames.test(f, pg::LOCKED) {
                r.waited = true;
                self.sched.tasks[tid].read = Some(r);
                self.wait_file_page(tid, f);
                return ReadStep::Blocked;
            }
            // Uptodate: copy it out. A read starting in the page where the previous one
            // ended does not mark it accessed twice (filemap_read's `pos_same_folio`).
            self.charge(self.cost.copy_page_ns);
            self.mm.frames.clear(f, pg::RA_UNUSED);
            if !(i == r.start && r.same_page) {
                self.mark_page_accessed(f);
            }
            self.mm.count(Counter::FileReadPages, memcg, 1);
            r.index += 1;
            r.ra_done = false;
            self.sched.tasks[tid].read = Some(r);
        }
    }

    /// `posix_fadvise(fd, 0, 0, advice)` on readahead state `ra` of file `fi`.
    pub fn file_fadvise(&mut self, tid: Tid, cpu: u32, fi: FileId, ra: u32, advice: Advice) {
        let memcg = self.sched.tasks[tid].memcg;
        let dec = {
            let (PageCache { ra: file_ra, ra_states, files, .. }, devices) = (&mut self.pc, &self.io.devices);
            let view =
                CacheView { mapping: &files[fi.idx()], congested: devices[files[fi.idx()].dev.idx()].read_congested() };
            file_ra.fadvise(&mut ra_states[ra as usize], &view, advice)
        };
        self.submit_file_readahead(fi, &dec, memcg, cpu);
    }

    /// `filemap_map_pages` (fault-around): maps the cached, uptodate pages of the aligned
    /// `fault_around_bytes` window around `idx` that are not mapped yet. Pages flagged
    /// PG_readahead are left for a real fault to trigger the async readahead. Prefaulted
    /// PTEs are old (x86 `arch_wants_old_prefaulted_pte`), the faulting one young.
    ///
    /// Every uptodate page of the window counts as a read-around hit, mapped now or already
    /// (5.x-6.x count before the PTE check), except, from 6.10, pages with PG_workingset
    /// (recently evicted and faulted back: read-around there is wasted); the hits are taken
    /// off the file's `mmap_miss` (saturating at 0). On random faults over a file that
    /// read-around keeps partly cached, this keeps `mmap_miss` far below MMAP_LOTSAMISS, so
    /// every miss reads a whole `ra_pages` window.
    fn do_fault_around(&mut self, vma: VmaId, fi: FileId, idx: u32) -> bool {
        let v = &self.mm.vmas[vma];
        let (pages, ra) = (v.pages as u64, v.ra);
        let start = (idx as u64) & !(FAULT_AROUND_PAGES - 1);
        let end = (start + FAULT_AROUND_PAGES).min(pages);
        let mut mapped_target = false;
        let mut hits = 0u32;
        for i in start..end {
            let Some(f) = self.pc.files[fi].frame(i) else { continue };
            if self.mm.frames.test(f, pg::LOCKED | pg::READAHEAD) {
                continue;
            }
            if !(self.profile.fault_around_skips_workingset && self.mm.frames.test(f, pg::WORKINGSET)) {
                hits += 1;
            }
            if self.mm.vmas[vma].pte[i as usize] != pte::NONE {
                continue;
            }
            let young = i == idx as u64;
            self.mm.vmas[vma].pte[i as usize] = file_pte(f, young);
            self.mm.frames.clear(f, pg::RA_UNUSED);
            mapped_target |= young;
        }
        let state = &mut self.pc.ra_states[ra as usize];
        state.mmap_miss = state.mmap_miss.saturating_sub(hits);
        mapped_target
    }

    /// `filemap_fault` for task `tid` on page `idx` of file VMA `vma` (read-only).
    pub fn filemap_fault(&mut self, tid: Tid, cpu: u32, vma: VmaId, fi: FileId, idx: u32) -> Fault {
        let memcg = self.sched.tasks[tid].memcg;
        if std::mem::take(&mut self.mm.vmas[vma].willneed) {
            // MADV_WILLNEED given at mmap time: nothing of the mapping was touched before
            // this first fault, so this is where it takes effect.
            let nr = self.mm.vmas[vma].pages as u64;
            let ra = self.mm.vmas[vma].ra;
            self.file_fadvise(tid, cpu, fi, ra, Advice::WillNeed { index: 0, nr });
        }
        if self.profile.fault_around && !self.pending_fault(tid).ra_done && self.do_fault_around(vma, fi, idx) {
            return Fault::Done;
        }
        let i = idx as u64;
        let mut found = self.pc.files[fi].lookup(&self.mm.frames, i);
        if !self.pending_fault(tid).ra_done {
            self.pending_fault(tid).ra_done = true;
            if found == Lookup::Missing {
                // 6.x filemap_fault: a page not in the page cache is a major fault.
                self.major_fault(tid);
            }
            let (ra, hint) = (self.mm.vmas[vma].ra, self.mm.vmas[vma].hint);
            let dec = {
                let (PageCache { ra: file_ra, ra_states, files, .. }, devices) = (&mut self.pc, &self.io.devices);
                let view = CacheView {
                    mapping: &files[fi.idx()],
                    congested: devices[files[fi.idx()].dev.idx()].read_congested(),
                };
                file_ra.fault(&mut ra_states[ra as usize], &view, i, found, hint)
            };
            if dec.clear_mark {
                if let Some(f) = self.pc.files[fi].frame(i) {
                    self.mm.frames.clear(f, pg::READAHEAD);
                }
            }
            self.submit_file_readahead(fi, &dec, memcg, cpu);
            found = self.pc.files[fi].lookup(&self.mm.frames, i);
        } else if found == Lookup::Missing {
            // Evicted while the task waited for it: ask the policy again on the retry.
            self.pending_fault(tid).ra_done = false;
            return self.filemap_fault(tid, cpu, vma, fi, idx);
        }
        let f = match found {
            Lookup::Missing => {
                let Some(f) = self.read_page_alone(tid, fi, i) else { return Fault::Retry };
                f
            }
            _ => self.pc.files[fi].frame(i).expect("cached"),
        };
        if self.mm.frames.test(f, pg::LOCKED) {
            self.wait_file_page(tid, f);
            return Fault::Blocked;
        }
        self.mm.frames.clear(f, pg::RA_UNUSED);
        self.mm.vmas[vma].pte[idx as usize] = file_pte(f, true);
        Fault::Done
    }

    /// The madvise hint of a file VMA as the readahead policies take it.
    pub fn vm_hint(m: Option<crate::scenario::Madvise>) -> VmHint {
        match m {
            None | Some(crate::scenario::Madvise::Normal | crate::scenario::Madvise::Willneed) => VmHint::Normal,
            Some(crate::scenario::Madvise::Sequential) => VmHint::Sequential,
            Some(crate::scenario::Madvise::Random) => VmHint::Random,
        }
    }

    /// `__filemap_remove_folio` from reclaim: the clean page leaves the page cache, a
    /// shadow entry takes its slot (≥3.15), and a readahead page nobody used counts as
    /// readahead thrashing.
    pub fn page_cache_delete(&mut self, f: Pfn, fi: FileId) {
        let idx = self.mm.frames.index[f] as u64;
        let m = self.mm.frames.memcg[f];
        if self.mm.frames.test_clear(f, pg::RA_UNUSED) {
            self.mm.count(Counter::RaEvictedUnused, m, 1);
        }
        let shadow = (self.profile.workingset != WorkingsetMode::Off).then(|| self.workingset_eviction(f));
        let a = &mut self.pc.files[fi];
        debug_assert_eq!(a.slots[idx as usize], f.slot());
        a.slots[idx as usize] = 0;
        a.nrpages -= 1;
        if let Some(s) = shadow {
            a.set_shadow(idx, s);
        }
        self.mm.frames.set_owner(f, Owner::None, 0);
    }
}

#[cfg(test)]
mod tests {
    use crate::mm::vmstat::Counter;

    /// Random faults on a 16 MB mapping in a 2 MB memcg: a page the fault read can be
    /// reclaimed before the sleeping task maps it, and the retry reads it again. That is
    /// still one faulting access, so one pgfault and at most one pgmajfault (the retry
    /// used to count a second major fault).
    #[test]
    fn a_fault_retried_after_its_page_was_evicted_counts_one_major_fault() {
        let text = "[machine]\nram = \"64MB\"\nkernel_reserved = \"4MB\"\n\
                    [device.d]\nmodel = \"nvme\"\n[file.data]\ndevice = \"d\"\nsize = \"16MB\"\n\
                    [memcg.box]\nmax = \"2MB\"\n\
                    [region.map]\nkind = \"file\"\nfile = \"data\"\nmadvise = \"random\"\n\
                    [[task]]\nname = \"t\"\nmemcg = \"box\"\n\
                    [[task.step]]\nregion = \"map\"\npattern = \"seq\"\npasses = 2\nop = \"read\"\n";
        let r = crate::testutil::run(text, &[]);
        let (faults, major) = (r.counter(Counter::PgFault), r.counter(Counter::PgMajFault));
        assert_eq!(faults, 2 * 4096, "one fault per access: no readahead, nothing stays cached");
        assert_eq!(major, faults, "every access reads its page, once");
        assert_eq!((r.tasks[0].faults, r.tasks[0].major_faults), (faults, major));
    }

    /// Random faults over a 64 MB mapping in a 16 MB memcg, read_ahead_kb = 1 MiB. On the
    /// 6.x profiles fault-around counts the cached pages around each fault as read-around
    /// hits, which keeps `mmap_miss` under MMAP_LOTSAMISS: every major fault reads a whole
    /// window, as this machine's kernel does (docs/validation.md, file-mmap-random). Without
    /// that feedback, read-around stops after about 100 misses and a fault reads 4 KiB.
    #[test]
    fn random_mmap_faults_keep_read_around_on_where_fault_around_counts_hits() {
        let text = "[machine]\nram = \"256MB\"\n\
                    [device.d]\nmodel = \"nvme\"\nread_ahead_kb = 1024\n\
                    [file.data]\ndevice = \"d\"\nsize = \"64MB\"\n\
                    [memcg.box]\nmax = \"16MB\"\n\
                    [region.map]\nkind = \"file\"\nfile = \"data\"\n\
                    [[task]]\nname = \"t\"\nmemcg = \"box\"\n\
                    [[task.step]]\nregion = \"map\"\npattern = \"random\"\naccesses = 3000\nop = \"read\"\n";
        // KiB read per major fault.
        let per_fault = |profile: &str| {
            let r = crate::testutil::run(text, &[&format!("kernel.profile=\"{profile}\"")]);
            let major = r.counter(Counter::PgMajFault);
            assert!(major > 1000, "{profile}: {major} major faults");
            r.counter(Counter::PgpgIn) / major
        };
        for profile in ["linux-6.6", "linux-6.18"] {
            let kib = per_fault(profile);
            assert!(kib >= 900, "{profile}: {kib} KiB per major fault, want whole 1024 KiB windows");
        }
    }
}
