//! The buffered read path and file mmap faults.
//!
//! Models mm/filemap.c: `filemap_read` (2.6: `do_generic_mapping_read`) page by page,
//! `filemap_fault` with `do_sync_mmap_readahead` / `do_async_mmap_readahead` (2.6:
//! `filemap_nopage`), `filemap_map_pages` (fault-around, ≥3.15), `filemap_add_folio`
//! (insertion with the workingset refault check); mm/readahead.c `page_cache_ra_unbounded`,
//! `page_cache_ra_order` and `read_pages` (a window is read under one block plug, so its
//! pages merge into large requests); mm/swap.c `folio_mark_accessed`; mm/fadvise.c
//! `generic_fadvise`.
//!
//! Since 5.8 a readahead window is added to the page cache before any of it is read
//! (`Profile::ra_add_before_read_pages`): each folio is allocated, charged, inserted locked
//! and put on the LRU, and `read_pages` submits the batch (`readahead_control`'s
//! `_index`/`_nr_pages`) only at the window's end, at a page already cached, or before a
//! failed large folio falls back to single pages:
//!
//! ```text
//!   window  [ added, locked, unread  |  i: allocating (may reclaim)  |  rest ]
//!            ^ ractl._index            reclaim scans the added folios: folio_trylock
//!                                      fails, kept; pgscan counts them, nothing frees
//! ```
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
use crate::engine::page_alloc::NoRetry;
use crate::engine::page_writeback::Throttled;
use crate::engine::Sim;
use crate::ids::Pfn;
use crate::ids::{FileId, Tid, VmaId};
use crate::mm::pte;
use crate::mm::vmstat::Counter;
use crate::mm::{pg, LruList, Mm, Owner};
use crate::pagecache::readahead::{Advice, Lookup, Readahead, VmHint, NO_POS};
use crate::pagecache::PageCache;
use crate::pagecache::{file_pte, CacheView, FileRead, FileWrite, RaResume, ReadStep, FAULT_AROUND_PAGES};
use crate::profile::WorkingsetMode;
use crate::trace::Kind;

impl Sim {
    /// `filemap_add_folio` + `folio_add_lru`: frame `f`, freshly allocated, becomes the
    /// folio at page `index` of file `fi` (all its pages), locked for its read. A shadow
    /// entry in its range makes it a refault (`workingset_refault`), which may start it on
    /// the active list.
    pub(crate) fn add_to_page_cache(&mut self, f: Pfn, fi: FileId, index: u64) {
        let nr = self.mm.frames.nr_pages(f);
        let m = self.mm.frames.memcg[f];
        let (shadow, nodes) = self.pc.files[fi].insert_folio(index, nr, f, m);
        self.workingset_update_nodes(fi, nodes);
        self.mm.count(Counter::FileFolios, m, 1);
        self.mm.frames.set(f, pg::LOCKED);
        self.mm.frames.set_owner(f, Owner::File(fi), index as u32);
        if let Some(s) = shadow {
            self.workingset_refault(f, s, true);
        }
        let active = self.mm.frames.test(f, pg::ACTIVE);
        self.mm.frames.clear(f, pg::ACTIVE);
        self.lru_add_file(f, active);
    }

    /// Pages `[first, end)` of each range of file `fi` are in the page cache when the run
    /// starts (a replayed trace's `program.cached`): clean and read, on the root memcg's
    /// active file list and charged to it, as a shared library is on a machine where other
    /// processes keep it mapped: the page cache charges a folio to the memcg of whoever
    /// read it first, so the task's memcg never holds it and its limit reclaim never scans
    /// it. State before the run: no time passes and nothing is counted (pgalloc). Stops at
    /// the first page the zone cannot give (the rest starts cold).
    ///
    /// **Simplification:** the processes that keep them mapped are not modelled, so global
    /// reclaim finds the pages unreferenced after their first trip down the active list.
    pub(crate) fn add_cached_at_start(&mut self, fi: FileId, ranges: &[(u64, u64)]) {
        let counters = self.mm.vmstat.clone();
        'ranges: for &(first, end) in ranges {
            for index in first..end.min(self.pc.files[fi].i_size) {
                if self.pc.files[fi].frame(index).is_some() {
                    continue;
                }
                let Some(f) = self.alloc_folio_atomic(0, 0) else { break 'ranges };
                let (_, nodes) = self.pc.files[fi].insert_folio(index, 1, f, 0);
                self.workingset_update_nodes(fi, nodes);
                self.mm.frames.set_owner(f, Owner::File(fi), index as u32);
                self.mm.frames.set(f, pg::ACTIVE);
                let Mm { memcgs, frames, .. } = &mut self.mm;
                memcgs[0].lru.add_head(frames, f, LruList::ActiveFile);
            }
        }
        self.mm.vmstat = counters;
    }

    /// Submits the read of the folio in frame `f`, at page `index` of file `fi` (inside
    /// the plug): one bio for the whole folio.
    fn read_file_page(&mut self, fi: FileId, index: u64, f: Pfn, memcg: u16) {
        let nr = self.mm.frames.nr_pages(f);
        let (dev, off) = {
            let a = &self.pc.files[fi];
            (a.dev, a.offset_of(index))
        };
        self.submit_folio_bio(dev, off, f, IoDir::Read, nr * 4096);
        self.mm.count(Counter::PgpgIn, memcg, 4 * nr);
        // The LRU add's share of its batch is charged by the batch (engine/swap.rs).
        self.charge(self.cost.pagecache_read_ns.saturating_sub(self.cost.lru_page_ns));
    }

    /// [`Sim::submit_file_readahead`] while the caller holds a reference on folio `held`:
    /// the reclaim the window's allocations start keeps it ([`Mm::ra_pinned`]), so a window
    /// as large as the memcg does not evict the page the reader is on. `resumed`: `dec` is
    /// the rest of a window already counted, whose folios from the page given up to the
    /// rest's first page are added and not yet read. Returns whether task `tid` sleeps in
    /// its charge's `reclaim_throttle` (the window goes on after it).
    fn readahead_holding(
        &mut self,
        tid: Tid,
        held: Option<Pfn>,
        fi: FileId,
        dec: &Readahead,
        cpu: u32,
        resumed: Option<u64>,
    ) -> bool {
        self.mm.ra_pinned = held;
        let throttled = self.submit_file_readahead(tid, fi, dec, cpu, resumed);
        self.mm.ra_pinned = None;
        throttled
    }

    /// The rest of task `tid`'s readahead window that its charge's `reclaim_throttle`
    /// stopped ([`crate::pagecache::RaResume`]), once the task has slept and the rest of
    /// the charge's reclaim pass (its reclaim job) has run: the charge is tried again, and
    /// the window goes on from that folio as `page_cache_ra_unbounded` goes on after
    /// `filemap_add_folio`; a failed charge ends it. Returns whether the task sleeps again.
    pub(crate) fn readahead_resume(&mut self, tid: Tid, cpu: u32) -> bool {
        let Some(ra) = self.sched.tasks[tid].ra_resume.take() else { return false };
        let held = ra.held.and_then(|i| self.pc.files[ra.file].frame(i));
        self.readahead_holding(tid, held, ra.file, &ra.rest, cpu, Some(ra.added))
    }

    /// Task `tid` exits (or is killed) while its readahead window sleeps in a charge's
    /// `reclaim_throttle`: the charge fails (a fatal signal ends `try_charge_memcg`), so the
    /// window ends there and `read_pages` submits the folios it added before the sleep,
    /// whose waiters would otherwise wait for ever.
    pub(crate) fn readahead_abandon(&mut self, tid: Tid) {
        let Some(ra) = self.sched.tasks[tid].ra_resume.take() else { return };
        let memcg = self.sched.tasks[tid].memcg;
        self.read_pages(ra.file, ra.added, ra.resume_index(), memcg);
        self.unplug(self.pc.files[ra.file].dev);
    }

    /// `read_pages`: submits the reads of the folios a readahead added at pages
    /// `[from, to)` of file `fi` and has not read yet (the `readahead_control` batch), one
    /// bio per folio inside the caller's plug. They stay in the page cache meanwhile:
    /// locked, reclaim keeps them and truncation waits for them.
    fn read_pages(&mut self, fi: FileId, from: u64, to: u64, memcg: u16) {
        let mut i = from;
        while i < to {
            let f = self.pc.files[fi].frame(i).expect("a readahead folio stays cached until read_pages");
            debug_assert!(self.mm.frames.test(f, pg::LOCKED), "page {i} of file {fi:?} was read before read_pages");
            debug_assert_eq!(self.mm.frames.index[f] as u64, i, "the batch holds whole folios");
            self.read_file_page(fi, i, f, memcg);
            i += self.mm.frames.nr_pages(f);
        }
    }

    /// The `page_cache_ra_order` event of a decision that reads something: the window as
    /// the file's readahead state `ra` now has it. (pagesim traces it for every window the
    /// policy gives; the kernel's `do_page_cache_ra` of a small random read has none.)
    fn trace_ra_order(&mut self, fi: FileId, ra: u32, dec: &Readahead) {
        if self.trace.is_none() || dec.is_empty() {
            return;
        }
        let st = &self.pc.ra_states[ra as usize];
        let (index, order, size, async_size, ra_pages) =
            (st.start, st.order as u32, st.size, st.async_size, st.ra_pages);
        self.trace(Kind::PageCacheRaOrder { ino: fi.0, index, order, size, async_size, ra_pages });
    }

    /// `page_cache_ra_unbounded` for a policy's decision: allocates and reads every missing
    /// page of the windows under one plug and sets the PG_readahead marker on the folio
    /// holding the marked page. Readahead folios are allocated with __GFP_NORETRY
    /// ([`Sim::alloc_folio_noretry`]); a failed single-page allocation ends the window
    /// there, as `page_cache_ra_unbounded` stops at the first page it cannot allocate.
    ///
    /// 5.8+ (`Profile::ra_add_before_read_pages`): the folios are added to the page cache,
    /// locked, as they are allocated, and [`Sim::read_pages`] submits them when the window
    /// ends (its end, a failed allocation), at a page already cached and before a large
    /// folio's failure falls back to single pages; meanwhile the reclaim of later
    /// allocations meets them locked and keeps them. Before 5.8 each is read as it is added.
    ///
    /// With a decision of order > 0 (a mapping with large folios), the window is carved as
    /// `page_cache_ra_order` does: from its start, each folio of the decision's order, or
    /// smaller where the index is not aligned to it (the order of the index's lowest set
    /// bit) or where it would pass the window's end. A folio that would cover a page
    /// already cached (-EEXIST) or that cannot be allocated ends the large-folio loop; the
    /// rest of the window is read in single pages (`do_page_cache_ra`).
    ///
    /// For task `tid`; `resumed`: the first range is the rest of a window already counted,
    /// whose added, unread folios start at the page given. Returns whether a charge's
    /// reclaim put the task to sleep in `reclaim_throttle` (cgroup v1): the window stops at
    /// that folio, the folios it added before it stay unread (5.8+) and locked through the
    /// sleep, and its rest waits in the task's `ra_resume` ([`Sim::readahead_resume`],
    /// [`Sim::readahead_abandon`] if the task exits first).
    fn submit_file_readahead(&mut self, tid: Tid, fi: FileId, dec: &Readahead, cpu: u32, resumed: Option<u64>) -> bool {
        if dec.is_empty() {
            return false;
        }
        let memcg = self.sched.tasks[tid].memcg;
        let dev = self.pc.files[fi].dev;
        let mut throttled = false;
        let batched = self.profile.ra_add_before_read_pages;
        'windows: for (n, r) in dec.ranges().iter().enumerate() {
            let resumed = resumed.filter(|_| n == 0);
            if resumed.is_none() {
                self.mm.count(Counter::FileRaWindows, memcg, 1);
                // The window as the policy sized it, cached pages included.
                let k = r.len.max(1).next_power_of_two().trailing_zeros() as usize;
                self.pc.ra_window_hist[k.min(crate::pagecache::RA_WINDOW_BUCKETS - 1)] += 1;
            }
            let end = r.end();
            let mut order = dec.order;
            let mut i = r.start;
            // `ractl->_index`: the first page of the folios added and not read yet.
            let mut batch = resumed.unwrap_or(r.start);
            while i < end {
                let mut o = 0;
                if order > 0 {
                    o = order.min(i.trailing_zeros().min(u8::MAX as u32) as u8);
                    while o > 0 && i + (1 << o) > end {
                        o -= 1;
                    }
                    let slots = &self.pc.files[fi].slots[i as usize..(i + (1 << o)) as usize];
                    if slots.iter().any(|&s| s != 0) {
                        order = 0; // -EEXIST: the rest in single pages
                        self.read_pages(fi, batch, i, memcg);
                        batch = i;
                        continue;
                    }
                } else if self.pc.files[fi].slots[i as usize] != 0 {
                    self.read_pages(fi, batch, i, memcg);
                    i += 1;
                    batch = i;
                    continue;
                }
                let f = match self.alloc_folio_noretry(tid, memcg, cpu, o) {
                    NoRetry::Folio(f) => f,
                    NoRetry::Failed if o > 0 => {
                        order = 0;
                        self.read_pages(fi, batch, i, memcg);
                        batch = i;
                        continue;
                    }
                    NoRetry::Failed => {
                        self.read_pages(fi, batch, i, memcg);
                        break 'windows;
                    }
                    NoRetry::Throttled => {
                        let held = self.mm.ra_pinned.map(|h| self.mm.frames.index[h] as u64);
                        let rest = dec.rest_from(i, order);
                        self.sched.tasks[tid].ra_resume = Some(RaResume { file: fi, rest, held, added: batch });
                        throttled = true;
                        break 'windows;
                    }
                };
                let nr = 1u64 << o;
                self.add_to_page_cache(f, fi, i);
                self.mm.frames.set(f, pg::RA_UNUSED);
                if dec.mark.is_some_and(|m| (i..i + nr).contains(&m)) {
                    self.mm.frames.set(f, pg::READAHEAD);
                }
                self.mm.count(Counter::FileRaPages, memcg, nr);
                i += nr;
                if !batched {
                    self.read_pages(fi, batch, i, memcg);
                    batch = i;
                }
            }
            self.read_pages(fi, batch, i, memcg);
        }
        self.unplug(dev);
        throttled
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
    /// inactive list activates the folio (and ages the workingset clock by its pages, ≥3.15
    /// for file pages).
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
        let nr = self.mm.frames.nr_pages(f);
        self.mm.count(Counter::PgActivate, m, nr);
        // ≤5.7 `__activate_page` → `update_page_reclaim_stat`: an activation counts as a
        // scanned and rotated page of its type (the 3.x balance's recent_rotated); the 5.8+
        // cost model notes nothing here (the policy's note_scanned is a no-op for it).
        self.reclaim.scan_balance.note_scanned(m as usize, file as usize, nr, nr);
        let ages = match self.profile.workingset {
            WorkingsetMode::Off => false,
            WorkingsetMode::FileOnly => file,
            WorkingsetMode::AnonAndFile => true,
        };
        if ages {
            self.workingset_age_nonresident(m, nr);
        }
    }

    /// Starts a read(2) of `nr` pages at page `index` (clipped to EOF: a read at or past
    /// the end reads nothing) for task `tid`.
    pub fn file_read_begin(&mut self, tid: Tid, fi: FileId, ra: u32, index: u64, nr: u64) {
        let eof = self.pc.files[fi].i_size;
        let end = (index + nr).min(eof).max(index);
        self.charge(self.cost.read_syscall_ns);
        let prev_last = self.pc.ra_last_page[ra as usize];
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
            Some(FileRead { file: fi, ra, work, start: index, end, index, ra_done: false, waited: false, prev_last });
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
                // A flagged folio is handed over by its first page (`filemap_readahead`).
                let at = match found {
                    Lookup::Marked => self.pc.files[fi].frame(i).map_or(i, |f| self.mm.frames.index[f] as u64),
                    _ => i,
                };
                let before = self.trace.is_some().then(|| self.pc.ra_states[r.work as usize]);
                let dec = {
                    let PageCache { ra: file_ra, ra_states, files, .. } = &mut self.pc;
                    let view =
                        CacheView::new(&files[fi.idx()], &self.mm.frames, &self.io.devices, self.tun.large_folios);
                    file_ra.read_page(&mut ra_states[r.work as usize], &view, at, r.end - at, found)
                };
                if let Some(b) = before.filter(|_| found != Lookup::Cached) {
                    let prev_pos = if b.prev_pos == NO_POS { -1 } else { b.prev_pos as i64 };
                    self.trace(Kind::PageCacheRa {
                        sync: found == Lookup::Missing,
                        ino: fi.0,
                        index: at,
                        req_count: r.end - at,
                        start: b.start,
                        size: b.size,
                        async_size: b.async_size,
                        order: b.order as u32,
                        ra_pages: b.ra_pages,
                        prev_pos,
                    });
                    self.trace_ra_order(fi, r.work, &dec);
                }
                if dec.clear_mark {
                    if let Some(f) = self.pc.files[fi].frame(i) {
                        self.mm.frames.clear(f, pg::READAHEAD);
                    }
                }
                // Async readahead from a flagged folio runs while the read's folio batch holds
                // it (2.6.23+ `page_cache_async_readahead`, 6.x `filemap_readahead`); a sync
                // window starts before there is a folio to hold.
                let held = if found == Lookup::Marked { self.pc.files[fi].frame(i) } else { None };
                if self.readahead_holding(tid, held, fi, &dec, cpu, None) {
                    // Asleep in the window's charge: the window goes on when it wakes.
                    self.sched.tasks[tid].read = Some(r);
                    return ReadStep::Blocked;
                }
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
            // Uptodate: copy it out. A read marks each folio it copies from once; one
            // starting in the folio where the previous read ended does not mark it again
            // (filemap_read's `pos_same_folio`).
            self.charge(self.cost.copy_page_ns);
            self.mm.frames.clear(f, pg::RA_UNUSED);
            let nr = self.mm.frames.nr_pages(f);
            let first = if nr == 1 { i } else { self.mm.frames.index[f] as u64 };
            let entering = i == r.start || i == first;
            let same_folio = i == r.start && r.prev_last.wrapping_sub(first) < nr;
            if entering && !same_folio {
                self.mark_page_accessed(f);
            }
            self.mm.count(Counter::FileReadPages, memcg, 1);
            r.index += 1;
            r.ra_done = false;
            self.sched.tasks[tid].read = Some(r);
        }
    }

    /// Starts a write(2) of `nr` pages at page `index` (at the end of the file: `append`)
    /// for task `tid`. It takes the inode's lock first ([`Sim::file_write_step`]).
    pub fn file_write_begin(&mut self, tid: Tid, fi: FileId, index: u64, nr: u64, append: bool) {
        self.charge(self.cost.write_syscall_ns);
        let w = FileWrite { file: fi, start: index, end: index, index, nr, append, locked: false };
        self.sched.tasks[tid].write = Some(w);
    }

    /// Creates each file's `i_rwsem`.
    pub(crate) fn inode_locks_init(&mut self) {
        // The name /proc/lock_stat gives a regular file's i_rwsem (`i_mutex_key` of the
        // file system type), as `inode_init_always` sets it.
        let class = self.sched.locks.sleep_class("&sb->s_type->i_mutex_key");
        for f in &mut self.pc.files {
            f.i_rwsem = self.sched.locks.sleep_lock(class);
        }
    }

    /// `inode_lock` (`down_write(&inode->i_rwsem)`) of file `fi` for task `tid`'s write(2)
    /// or truncate: whether it holds the lock now; if not, it sleeps until the holder's
    /// call ends.
    pub(crate) fn inode_lock(&mut self, tid: Tid, fi: FileId) -> bool {
        let got = self.mutex_lock(self.pc.files[fi].i_rwsem, tid);
        if got {
            self.holds_inode(tid);
        }
        got
    }

    /// Task `tid`'s call holds its file's i_rwsem. A write(2) learns where it writes (an
    /// append, at the end of the file now), clipped to the file's extent (a full disk: the
    /// write is short).
    fn holds_inode(&mut self, tid: Tid) {
        let t = &mut self.sched.tasks[tid];
        if let Some(mut w) = t.write {
            let a = &self.pc.files[w.file];
            if w.append {
                w.start = a.i_size;
            }
            (w.index, w.end, w.locked) = (w.start, (w.start + w.nr).min(a.nr_pages).max(w.start), true);
            t.write = Some(w);
        } else if let Some(st) = t.sync.as_mut() {
            st.locked = true;
        }
    }

    /// `inode_unlock` at the end of a write(2) or truncate: the next task waiting gets the
    /// lock.
    pub(crate) fn inode_unlock(&mut self, fi: FileId) {
        if let Some(next) = self.mutex_unlock(self.pc.files[fi].i_rwsem) {
            self.holds_inode(next);
        }
    }

    /// Task `tid` exits in a write(2) or truncate: it leaves the lock's queue, or hands the
    /// lock on.
    pub(crate) fn abandon_inode_lock(&mut self, tid: Tid) {
        let t = &mut self.sched.tasks[tid];
        let file = match (t.write.take(), t.sync.take()) {
            (Some(w), _) => w.file,
            (None, Some(st)) if st.op == crate::pagecache::SyncOp::Truncate => st.file,
            _ => return,
        };
        if let Some(next) = self.mutex_abandon(self.pc.files[file].i_rwsem, tid) {
            self.holds_inode(next);
        }
    }

    /// Runs task `tid`'s write(2) (`generic_perform_write`) until it is done, blocks,
    /// needs reclaim, or the burst ends at `limit`. Per page: `write_begin` finds the page
    /// or adds a new one (the write covers it whole, so nothing is read; a page whose read
    /// is in flight is waited for), the copy, then `folio_mark_dirty` and
    /// `balance_dirty_pages_ratelimited`, which may throttle the task. Pages under
    /// writeback are written over without waiting (no stable pages, as ext4 on a plain
    /// disk).
    pub fn file_write_step(&mut self, tid: Tid, cpu: u32, limit: u64) -> ReadStep {
        loop {
            let Some(mut w) = self.sched.tasks[tid].write else { return ReadStep::Done };
            if !w.locked {
                if !self.inode_lock(tid, w.file) {
                    return ReadStep::Blocked;
                }
                continue;
            }
            if w.index >= w.end {
                self.sched.tasks[tid].write = None;
                self.inode_unlock(w.file);
                return ReadStep::Done;
            }
            if self.sched.now >= limit {
                return ReadStep::Yield;
            }
            let (fi, i) = (w.file, w.index);
            let f = match self.pc.files[fi].frame(i) {
                Some(f) if self.mm.frames.test(f, pg::LOCKED) => {
                    self.wait_file_page(tid, f);
                    return ReadStep::Blocked;
                }
                Some(f) => f,
                None => {
                    // grab_cache_page_write_begin: a new page-cache page, uptodate once
                    // the copy fills it.
                    let Some(f) = self.alloc_page(tid) else { return ReadStep::Retry };
                    self.add_to_page_cache(f, fi, i);
                    self.mm.frames.clear(f, pg::LOCKED);
                    f
                }
            };
            self.charge(self.cost.copy_page_ns);
            self.mm.frames.clear(f, pg::RA_UNUSED);
            if self.wb.rules.write_marks_accessed {
                self.mark_page_accessed(f);
            }
            self.folio_mark_dirty(f, fi, Some(tid));
            let memcg = self.sched.tasks[tid].memcg;
            self.mm.count(Counter::FileWritePages, memcg, 1);
            // generic_write_end: a copy past the end extends i_size.
            let a = &mut self.pc.files[fi];
            a.i_size = a.i_size.max(i + 1);
            w.index += 1;
            self.sched.tasks[tid].write = Some(w);
            let wb = self.current_wb(tid, fi);
            if self.balance_dirty_pages_ratelimited(tid, cpu, wb) && self.balance_dirty_pages(tid) == Throttled::Sleeps
            {
                return ReadStep::Blocked;
            }
        }
    }

    /// `posix_fadvise(fd, 0, 0, advice)` on readahead state `ra` of file `fi`. Returns
    /// whether task `tid` sleeps in the charge of a WILLNEED window (`reclaim_throttle`);
    /// the window goes on before the task's next read or fault.
    pub fn file_fadvise(&mut self, tid: Tid, cpu: u32, fi: FileId, ra: u32, advice: Advice) -> bool {
        let dec = {
            let PageCache { ra: file_ra, ra_states, files, .. } = &mut self.pc;
            let view = CacheView::new(&files[fi.idx()], &self.mm.frames, &self.io.devices, self.tun.large_folios);
            file_ra.fadvise(&mut ra_states[ra as usize], &view, advice)
        };
        self.submit_file_readahead(tid, fi, &dec, cpu, None)
    }

    /// `filemap_map_pages` (fault-around): maps the cached, uptodate pages of the aligned
    /// `fault_around_bytes` window around `idx` that are not mapped yet. Folios flagged
    /// PG_readahead are left for a real fault to trigger the async readahead. Prefaulted
    /// PTEs are young like the faulting one: x86 leaves `arch_wants_old_prefaulted_pte`
    /// false and its page protections carry _PAGE_ACCESSED, so reclaim finds every page
    /// fault-around mapped referenced once (arm64 with a hardware access flag maps them
    /// old from 5.12; x86's 4.8-rc "make faultaround produce old ptes" was reverted). From 6.18
    /// ("map entire large folio faultaround") a large folio that lies inside the VMA is
    /// mapped whole, its pages outside the window included.
    ///
    /// Every uptodate page it goes over counts as a read-around hit, mapped now or already
    /// (5.x-6.x count before the PTE check), except, from 6.10, pages with PG_workingset
    /// (recently evicted and faulted back: read-around there is wasted); the hits are taken
    /// off the file's `mmap_miss` (saturating at 0). On random faults over a file that
    /// read-around keeps partly cached, this keeps `mmap_miss` far below MMAP_LOTSAMISS, so
    /// every miss reads a whole `ra_pages` window.
    fn do_fault_around(&mut self, vma: VmaId, fi: FileId, idx: u32) -> bool {
        let (whole, skip_workingset) =
            (self.profile.fault_around_whole_folio, self.profile.fault_around_skips_workingset);
        let Mm { vmas, frames, .. } = &mut self.mm;
        let v = &mut vmas[vma];
        let (pages, ra, pgoff) = (v.pages as u64, v.ra, v.pgoff as u64);
        let file = &self.pc.files[fi];
        // The aligned window, inside the VMA (`do_fault_around` clips it to vm_start).
        let start = ((idx as u64) & !(FAULT_AROUND_PAGES - 1)).max(pgoff);
        let end = (start + FAULT_AROUND_PAGES).min(pages);
        let target = idx as u64;
        let mut mapped_target = false;
        let mut hits = 0u32;
        let mut i = start;
        // One read of each folio's flags decides it (this walk runs on every fault).
        while let Some((at, f)) = file.next_cached(i, end) {
            i = at;
            let flags = frames.flags[f];
            let (first, nr) = (frames.index[f] as u64, 1u64 << (flags >> pg::ORDER_SHIFT));
            let (lo, hi) =
                if whole && v.holds_folio(first, nr) { (first, first + nr) } else { (i, (first + nr).min(end)) };
            i = (first + nr).max(i + 1);
            if flags & (pg::LOCKED | pg::READAHEAD) != 0 {
                continue;
            }
            if !(skip_workingset && flags & pg::WORKINGSET != 0) {
                hits += (hi - lo) as u32;
            }
            mapped_target |= map_folio_ptes(&mut v.pte, f, lo..hi, target);
            frames.flags[f] = flags & !pg::RA_UNUSED;
        }
        let state = &mut self.pc.ra_states[ra as usize];
        state.mmap_miss = state.mmap_miss.saturating_sub(hits);
        mapped_target
    }

    /// `filemap_fault` for task `tid` on page `idx` of file VMA `vma` (read-only).
    pub fn filemap_fault(&mut self, tid: Tid, cpu: u32, vma: VmaId, fi: FileId, idx: u32) -> Fault {
        // A window of this fault whose charge slept in reclaim_throttle goes on first; then
        // the fault takes its page, without asking the policy again.
        let resumed = self.sched.tasks[tid].ra_resume.is_some();
        if self.readahead_resume(tid, cpu) {
            return Fault::Blocked;
        }
        if std::mem::take(&mut self.mm.vmas[vma].willneed) {
            // MADV_WILLNEED given at mmap time: nothing of the mapping was touched before
            // this first fault, so this is where it takes effect.
            let v = &self.mm.vmas[vma];
            let (index, nr) = (v.pgoff as u64, (v.pages - v.pgoff) as u64);
            let ra = v.ra;
            if self.file_fadvise(tid, cpu, fi, ra, Advice::WillNeed { index, nr }) {
                return Fault::Blocked;
            }
        }
        if self.profile.fault_around && !self.pending_fault(tid).around_done {
            self.pending_fault(tid).around_done = true;
            if self.do_fault_around(vma, fi, idx) {
                return Fault::Done;
            }
        }
        let i = idx as u64;
        let mut found = self.pc.files[fi].lookup(&self.mm.frames, i);
        if !self.pending_fault(tid).ra_done {
            self.pending_fault(tid).ra_done = true;
            if found == Lookup::Missing {
                // 6.x filemap_fault: a page not in the page cache is a major fault.
                self.major_fault(tid);
            }
            let v = &self.mm.vmas[vma];
            let hint = match v.hint {
                VmHint::Normal | VmHint::Random if v.exec && self.profile.exec_mmap_readahead => {
                    VmHint::Exec { vma_end: v.pages as u64 }
                }
                h => h,
            };
            let ra = v.ra;
            let dec = {
                let PageCache { ra: file_ra, ra_states, files, .. } = &mut self.pc;
                let view = CacheView::new(&files[fi.idx()], &self.mm.frames, &self.io.devices, self.tun.large_folios);
                file_ra.fault(&mut ra_states[ra as usize], &view, i, found, hint)
            };
            self.trace_ra_order(fi, ra, &dec);
            if dec.clear_mark {
                if let Some(f) = self.pc.files[fi].frame(i) {
                    self.mm.frames.clear(f, pg::READAHEAD);
                }
            }
            // filemap_fault holds the flagged folio it found (do_async_mmap_readahead).
            let held = if found == Lookup::Marked { self.pc.files[fi].frame(i) } else { None };
            if self.readahead_holding(tid, held, fi, &dec, cpu, None) {
                return Fault::Blocked;
            }
            found = self.pc.files[fi].lookup(&self.mm.frames, i);
        } else if found == Lookup::Missing && !resumed {
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
            // The attempt ends (VM_FAULT_RETRY); the retry begins with fault-around.
            self.pending_fault(tid).around_done = false;
            self.wait_file_page(tid, f);
            return Fault::Blocked;
        }
        self.mm.frames.clear(f, pg::RA_UNUSED);
        self.finish_fault(vma, f, idx);
        Fault::Done
    }

    /// `finish_fault`: maps page `idx` of file VMA `vma`; from 6.18, if its folio is large
    /// and lies inside the VMA, the folio's other unmapped pages too (all young, as above).
    fn finish_fault(&mut self, vma: VmaId, f: Pfn, idx: u32) {
        let (first, nr) = (self.mm.frames.index[f] as u64, self.mm.frames.nr_pages(f));
        let v = &mut self.mm.vmas[vma];
        if nr > 1 && self.profile.fault_around_whole_folio && v.holds_folio(first, nr) {
            map_folio_ptes(&mut v.pte, f, first..first + nr, idx as u64);
        }
        v.pte[idx as usize] = file_pte(f, true);
    }

    /// The madvise hint of a file VMA as the readahead policies take it.
    pub fn vm_hint(m: Option<crate::scenario::Madvise>) -> VmHint {
        match m {
            None | Some(crate::scenario::Madvise::Normal | crate::scenario::Madvise::Willneed) => VmHint::Normal,
            Some(crate::scenario::Madvise::Sequential) => VmHint::Sequential,
            Some(crate::scenario::Madvise::Random) => VmHint::Random,
        }
    }

    /// `__filemap_remove_folio` from reclaim: the clean folio leaves the page cache, a
    /// shadow entry takes its slots (≥3.15), and a readahead folio nobody used counts as
    /// readahead thrashing, all its pages.
    pub fn page_cache_delete(&mut self, f: Pfn, fi: FileId) {
        let idx = self.mm.frames.index[f] as u64;
        let nr = self.mm.frames.nr_pages(f);
        let m = self.mm.frames.memcg[f];
        if self.mm.frames.test_clear(f, pg::RA_UNUSED) {
            self.mm.count(Counter::RaEvictedUnused, m, nr);
        }
        let shadow = (self.profile.workingset != WorkingsetMode::Off).then(|| self.workingset_eviction(f));
        let nodes = self.pc.files[fi].delete_folio(idx, nr, f, shadow);
        self.workingset_update_nodes(fi, nodes);
        self.mm.frames.set_owner(f, Owner::None, 0);
    }
}

/// Maps the pages `pages` of folio `f` where nothing is mapped yet in the file VMA's PTEs
/// `ptes`, young (`set_pte_range` on x86). Returns whether page `target` was mapped here.
#[inline]
fn map_folio_ptes(ptes: &mut [u32], f: Pfn, pages: std::ops::Range<u64>, target: u64) -> bool {
    let e = file_pte(f, true);
    let mut mapped_target = false;
    for (p, pte) in pages.clone().zip(&mut ptes[pages.start as usize..pages.end as usize]) {
        if *pte == pte::NONE {
            *pte = e;
            mapped_target |= p == target;
        }
    }
    mapped_target
}

#[cfg(test)]
mod tests {
    use crate::engine::page_alloc::NoRetry;
    use crate::engine::TaskState;
    use crate::ids::{FileId, Tid};
    use crate::mm::vmstat::Counter;

    /// Fills memcg `memcg` with read page-cache folios of file `fi` from page 0 on, as
    /// many as it holds: active if `active`, dirty from page `dirty_from` on. Returns how
    /// many.
    fn fill_memcg_with_file(s: &mut crate::engine::Sim, memcg: u16, fi: FileId, active: bool, dirty_from: u64) -> u64 {
        let mut index = 0;
        while let Some(f) = s.alloc_folio_atomic(memcg, 0) {
            if active {
                s.mm.frames.set(f, crate::mm::pg::ACTIVE);
            }
            s.add_to_page_cache(f, fi, index);
            s.mm.frames.clear(f, crate::mm::pg::LOCKED);
            if index >= dirty_from {
                s.folio_mark_dirty(f, fi, None);
            }
            index += 1;
        }
        index
    }

    /// On a synchronous, bio-based device (brd: `ram`) the folios read and written inside a
    /// plug stay locked (or under writeback) until the plug is released; then the thread
    /// does the I/O itself: consecutive folios in one direction make one bio, a gap or the
    /// other direction starts another, each bio's service time (1 us + 512 ns a page) is the
    /// thread's CPU time, and the folios end at once, with no completion event.
    #[test]
    fn a_synchronous_device_does_the_io_in_the_submitter_at_the_plugs_release() {
        use crate::mm::pg;
        let mut s = crate::testutil::sim_from(
            "[kernel]\nlarge_folios = false\n[machine]\nram = \"64MB\"\n\
             [device.d]\nmodel = \"ram\"\n[file.f]\ndevice = \"d\"\nsize = \"1MB\"\n\
             [[task]]\nname = \"r\"\n[[task.step]]\nfile = \"f\"\nop = \"read\"\npattern = \"seq\"\n",
            &[],
        );
        let (fi, dev) = (FileId(0), crate::ids::DevId(0));
        let mut frames = Vec::new();
        for index in [0, 1, 2, 7] {
            let f = s.alloc_folio_atomic(0, 0).expect("free memory");
            s.add_to_page_cache(f, fi, index);
            s.read_file_page(fi, index, f, 0);
            frames.push(f);
        }
        let events = s.sched.events.len();
        assert!(frames.iter().all(|&f| s.mm.frames.test(f, pg::LOCKED)), "held in the plug, not read yet");
        assert_eq!(s.io.devices[dev].stats().reads, 0);
        let before = s.sched.now;
        s.unplug(dev);
        assert!(frames.iter().all(|&f| !s.mm.frames.test(f, pg::LOCKED)), "read by the submitter");
        let st = s.io.devices[dev].stats();
        assert_eq!((st.reads, st.read_bytes), (2, 4 * 4096), "pages 0-2 in one bio, page 7 in another");
        assert_eq!(s.sched.now - before, 2 * 1_000 + 4 * 512, "the two bios' copies are the thread's time");
        assert_eq!(s.sched.events.len(), events, "no completion to wait for");
        // Writeback too: the written folios are clean and out of writeback at the release.
        for &f in &frames[..2] {
            assert!(s.folio_mark_dirty(f, fi, None));
            s.file_writepage(f, fi, false);
            assert!(s.mm.frames.test(f, pg::WRITEBACK));
        }
        s.unplug(dev);
        assert!(frames[..2].iter().all(|&f| !s.mm.frames.test(f, pg::WRITEBACK)));
        assert_eq!(s.io.devices[dev].stats().writes, 1, "one bio for the two pages");
        assert_eq!(s.mm.vmstat.get(Counter::NrWritten), 2);
        s.verify().unwrap();
    }

    /// A readahead folio's charge at a memcg limit whose pages are all active, with the
    /// statistics reclaim reads not flushed yet (linux-6.18: no deactivation, the lists
    /// look balanced): reclaim at every priority frees nothing, so `do_try_to_free_pages`
    /// retries with deactivation forced; the folio is had and active pages were moved.
    #[test]
    fn a_readahead_charge_retries_with_deactivation_forced() {
        let mut s = crate::testutil::sim_from(
            "[kernel]\nprofile = \"linux-6.18\"\nlarge_folios = false\ncgroup_version = 1\n\
             memcg_stats_flush_phase = \"1999ms\"\n[machine]\nram = \"64MB\"\n\
             [device.d]\nmodel = \"ram\"\n[file.f]\ndevice = \"d\"\nsize = \"4MB\"\n[memcg.box]\nmax = \"1MB\"\n\
             [[task]]\nname = \"r\"\nmemcg = \"box\"\n[[task.step]]\nfile = \"f\"\nop = \"read\"\npattern = \"seq\"\n",
            &[],
        );
        let (fi, box_) = (crate::ids::FileId(0), 1u16);
        let index = fill_memcg_with_file(&mut s, box_, fi, true, u64::MAX);
        assert!(index >= 250, "{index} pages fill the 1 MB memcg");
        let f = s.alloc_folio_noretry(Tid(0), box_, 0, 0);
        assert!(matches!(f, NoRetry::Folio(_)), "reclaim freed room by deactivating");
        assert!(s.mm.vmstat.get(Counter::PgDeactivate) > 0);
    }

    /// A readahead folio's charge at the limit of a 1 MB memcg full of dirty page-cache
    /// pages not yet queued for writeback, on linux-6.18. Every batch reclaim takes is such
    /// pages: each wakes the flushers, whose one start-all writeback stays pending
    /// (WB_start_all). On cgroup v1 the first batch also throttles: the pass stops there,
    /// the task sleeps in `reclaim_throttle` and the rest of the pass is its reclaim job.
    /// On cgroup v2 (`writeback_throttling_sane`) the pass goes on through every priority,
    /// meets the dirty pages again and fails.
    #[test]
    fn a_v1_readahead_charge_over_dirty_pages_sleeps_in_reclaim_throttle() {
        for v in [1, 2] {
            let mut s = crate::testutil::sim_from(
                &format!(
                    "[kernel]\nprofile = \"linux-6.18\"\nlarge_folios = false\ncgroup_version = {v}\n\
                     [machine]\nram = \"64MB\"\n[vm]\ndirty_bytes = \"32MB\"\n\
                     [device.d]\nmodel = \"nvme\"\n[file.f]\ndevice = \"d\"\nsize = \"4MB\"\n\
                     [file.g]\ndevice = \"d\"\nsize = \"4MB\"\n[memcg.box]\nmax = \"1MB\"\n\
                     [[task]]\nname = \"r\"\nmemcg = \"box\"\n\
                     [[task.step]]\nfile = \"g\"\nop = \"read\"\npattern = \"seq\"\n"
                ),
                &[],
            );
            let (fi, box_) = (FileId(0), 1u16);
            let index = fill_memcg_with_file(&mut s, box_, fi, false, 0);
            assert!(index >= 250, "{index} dirty pages fill the 1 MB memcg");
            let got = s.alloc_folio_noretry(Tid(0), box_, 0, 0);
            let immediate = s.mm.vmstat.get(Counter::NrVmscanImmediateReclaim);
            // The inodes are on the root wb (v1), or on the memcg's (v2: cgroup writeback).
            let pending = s.wb.wbs.iter().filter(|w| w.start_all).count();
            assert!(s.wb.wbs.iter().all(|w| w.work_list.is_empty()), "v{v}: no work queued");
            assert_eq!(pending, 1, "v{v}: one start-all writeback pending");
            let t = &s.sched.tasks[0];
            if v == 1 {
                assert_eq!(got, NoRetry::Throttled, "v1");
                assert_eq!(t.state, TaskState::Throttled, "v1: the task sleeps in reclaim_throttle");
                let job = t.reclaim.as_ref().expect("v1: the rest of the pass is the task's job");
                assert!(job.noretry && job.nr_reclaimed == 0);
                assert!((1..=32).contains(&immediate), "v1: the pass stopped after one batch ({immediate} pages)");
            } else {
                assert_eq!(got, NoRetry::Failed, "v2");
                assert!(t.state != TaskState::Throttled && t.reclaim.is_none(), "v2: no throttle");
                assert!(immediate > 32, "v2: the pass met {immediate} dirty pages");
            }
        }
    }

    /// A replayed trace whose library file other processes keep cached
    /// (`program.cached`): its pages are in the page cache when the run starts, charged to
    /// the root memcg, so the program's read of it reads nothing from the device and its
    /// memcg never holds them; without the key the file starts cold and the read charges its
    /// pages to the task's memcg. A path the trace does not name, or pages past its end,
    /// are refused, naming the key.
    #[test]
    fn a_traces_files_cached_by_others_start_in_the_root_memcg() {
        use crate::tracefile::pgt::{nr, File, Header, Record, Stream, Writer};
        let header = Header { k: 1, command: vec!["t".into()], ns_per_insn: None, tool: "test".into(), cwd: None };
        let mut w = Writer::new(Vec::new(), &header).unwrap();
        let sys = |nr, args, ret, file| Record::Syscall { stream: 0, nr, insns: 10, time_ns: 0, args, ret, file };
        for r in [
            Record::Stream(Stream { pid: 5, tid: 5, parent: 1, image: 0, start_ns: 0 }),
            Record::File(File { path: "/lib/libt.so".into(), size: 64 << 10, ino: 9 }),
            sys(nr::OPENAT, [0; 6], 3, Some(0)),
            sys(nr::READ, [3, 0, 64 << 10, 0, 0, 0], 64 << 10, None),
            sys(nr::EXIT_GROUP, [0; 6], 0, None),
        ] {
            w.record(&r).unwrap();
        }
        let dir = std::env::temp_dir().join(format!("pagesim-cached-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let trace = dir.join("t.pgt");
        std::fs::write(&trace, w.finish().unwrap()).unwrap();
        let scenario = |cached: &str| {
            format!(
                "[machine]\nram = \"64MB\"\n[device.d]\nmodel = \"nvme\"\n[memcg.box]\nmax = \"8MB\"\n\
                 [[task]]\nname = \"prog\"\nmemcg = \"box\"\nprogram = {{ trace = \"{}\"{cached} }}\n",
                trace.display()
            )
        };
        let run = |cached: &str| {
            let sc = crate::scenario::Scenario::from_toml(&scenario(cached), "test.toml", &[]).unwrap();
            let fi = FileId(sc.config.task[0].trace.as_ref().unwrap().extents[0]);
            let mut s = crate::testutil::sim_from(&scenario(cached), &[]);
            let at_start: Vec<u16> =
                (0..16).filter_map(|i| s.pc.files[fi].frame(i)).map(|f| s.mm.frames.memcg[f]).collect();
            assert_eq!(s.run(&mut None), crate::engine::RunEnd::Completed);
            let end: Vec<u16> = (0..16).filter_map(|i| s.pc.files[fi].frame(i)).map(|f| s.mm.frames.memcg[f]).collect();
            (at_start, end, s.mm.vmstat.get(Counter::PgpgIn), s.mm.vmstat.get(Counter::PgAlloc))
        };
        let (at_start, end, pgpgin, _) = run(", cached = { \"/lib/libt.so\" = [[0, 8], [8, 16]] }");
        assert_eq!(at_start, vec![0; 16], "cached at the start, charged to the root");
        assert_eq!((end, pgpgin), (vec![0; 16], 0), "read from the cache, still the root's");
        let (at_start, end, pgpgin, pgalloc) = run("");
        assert!(at_start.is_empty(), "cold without the key");
        assert_eq!((end, pgpgin), (vec![1; 16], 64), "read in, charged to box (memcg 1)");
        assert!(pgalloc >= 16);
        let load = |cached: &str| {
            crate::scenario::Scenario::from_toml(&scenario(cached), "test.toml", &[]).err().map(|e| e.to_string())
        };
        let e = load(", cached = { \"/lib/other.so\" = [[0, 1]] }").unwrap();
        assert!(e.contains("task[0].program.cached") && e.contains("not a file of the trace"), "{e}");
        let e = load(", cached = { \"/lib/libt.so\" = [[0, 17]] }").unwrap();
        assert!(e.contains("of its 16 pages"), "{e}");
        let e = load(", cached = { \"/lib/libt.so\" = [[0, 8], [4, 12]] }").unwrap();
        assert!(e.contains("overlap"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A 1 MB memcg on cgroup v1 full of page-cache pages under writeback that an earlier
    /// reclaim tagged PG_reclaim. Limit reclaim with __GFP_FS (a fault's or write's charge)
    /// waits for such a page's writeback (`shrink_folio_list` case 3); a readahead charge's
    /// reclaim runs under `memalloc_nofs_save` from 5.8 (GFP_NOFS: `may_enter_fs` is false),
    /// so it activates each one instead (case 2, pgactivate) and goes on, and each rotates to
    /// the inactive tail when its write ends (`folio_rotate_reclaimable`, pgrotated). On
    /// linux-4.11 the readahead charge had __GFP_FS and waits as the others do. (A disk, so
    /// that no write ends while reclaim runs.)
    #[test]
    fn a_readahead_charges_reclaim_activates_pages_under_writeback_rather_than_waiting_from_5_8() {
        use crate::mm::{pg, LruList};
        use crate::reclaim::ScanControl;
        let setup = |profile: &str| {
            let mut s = crate::testutil::sim_from(
                &format!(
                    "[kernel]\nprofile = \"{profile}\"\nlarge_folios = false\ncgroup_version = 1\n\
                     [machine]\nram = \"64MB\"\n[vm]\ndirty_bytes = \"32MB\"\n\
                     [device.d]\nmodel = \"hdd\"\n[file.f]\ndevice = \"d\"\nsize = \"4MB\"\n\
                     [memcg.box]\nmax = \"1MB\"\n\
                     [[task]]\nname = \"r\"\nmemcg = \"box\"\n\
                     [[task.step]]\nfile = \"f\"\nop = \"read\"\npattern = \"seq\"\n"
                ),
                &[],
            );
            let (fi, box_) = (FileId(0), 1u16);
            let n = fill_memcg_with_file(&mut s, box_, fi, false, 0);
            for i in 0..n {
                let f = s.pc.files[fi].frame(i).unwrap();
                s.file_writepage(f, fi, false);
                s.mm.frames.set(f, pg::RECLAIM);
            }
            assert_eq!(s.mm.nr_writeback, n, "{profile}: all under writeback (in the plug)");
            (s, n)
        };
        let activated = |s: &crate::engine::Sim| s.mm.vmstat.get(Counter::PgActivate);
        // The same pass with and without __GFP_FS.
        for gfp_fs in [true, false] {
            let (mut s, n) = setup("linux-6.18");
            let mut sc = ScanControl::memcg(1);
            sc.gfp_fs = gfp_fs;
            s.shrink_inactive_list(1, LruList::InactiveFile, n, &mut sc, 0);
            if gfp_fs {
                assert_eq!(sc.waited.len() as u64, n, "case 3: every page waited for");
                assert_eq!(activated(&s), 0);
            } else {
                assert!(sc.waited.is_empty(), "GFP_NOFS waits for nothing");
                assert_eq!((activated(&s), sc.nr_writeback), (n, n), "case 2: tagged and activated");
                assert_eq!(s.mm.memcgs[1].lru.size(LruList::ActiveFile), n);
                crate::testutil::complete_io(&mut s);
                assert_eq!(s.mm.vmstat.get(Counter::PgRotated), n, "each rotated when its write ended");
                assert_eq!(s.mm.memcgs[1].lru.size(LruList::InactiveFile), n, "to the inactive list");
            }
            s.verify().unwrap();
        }
        // The readahead charge's own reclaim, by version.
        for (profile, nofs) in [("linux-6.18", true), ("linux-4.11", false)] {
            let (mut s, n) = setup(profile);
            assert_eq!(s.alloc_folio_noretry(Tid(0), 1, 0, 0), NoRetry::Failed, "{profile}: nothing to free");
            let a = activated(&s);
            if nofs {
                assert!(a >= n, "{profile}: every page activated ({a} of {n})");
            } else {
                assert_eq!(a, 0, "{profile}: the pages were waited for, not activated");
            }
        }
    }

    /// A 1 MB memcg full of clean pages of file f, and a 512-page readahead window of file
    /// g (linux-6.18, cgroup v2, an NVMe disk): the window's charges reclaim f's pages and
    /// add g's folios, locked and unread, until g's folios are all the memcg holds. The
    /// next charge's reclaim meets only those: folio_trylock fails, each is kept, counted
    /// in pgscan and freed by nothing, so the charge fails and the window ends there. Only
    /// then does `read_pages` submit the 256 folios, in one go.
    #[test]
    fn reclaim_scans_a_windows_added_unread_folios_without_freeing_them() {
        use crate::mm::pg;
        use crate::pagecache::readahead::Readahead;
        let mut s = crate::testutil::sim_from(
            "[kernel]\nprofile = \"linux-6.18\"\nlarge_folios = false\ncgroup_version = 2\n\
             [machine]\nram = \"64MB\"\n[device.d]\nmodel = \"nvme\"\n[file.f]\ndevice = \"d\"\nsize = \"4MB\"\n\
             [file.g]\ndevice = \"d\"\nsize = \"4MB\"\n[memcg.box]\nmax = \"1MB\"\n\
             [[task]]\nname = \"r\"\nmemcg = \"box\"\n[[task.step]]\nfile = \"g\"\nop = \"read\"\npattern = \"seq\"\n",
            &[],
        );
        let (f_, g, box_) = (FileId(0), FileId(1), 1u16);
        let cached = fill_memcg_with_file(&mut s, box_, f_, false, u64::MAX);
        assert_eq!(cached, 256, "f fills the 1 MB memcg");
        assert!(!s.submit_file_readahead(Tid(0), g, &Readahead::single_window(0, 512), 0, None));
        let get = |s: &crate::engine::Sim, c| s.mm.vmstat.get(c);
        assert_eq!(get(&s, Counter::FileRaPages), 256, "the window ends at the charge that failed");
        assert_eq!(get(&s, Counter::PgStealFile), 256, "reclaim freed f's pages, none of g's");
        let scanned = get(&s, Counter::PgScanFile);
        assert!(scanned > 2 * 256, "the failed charge scanned g's locked folios too ({scanned})");
        assert_eq!(get(&s, Counter::PgpgIn), 4 * 256, "read_pages submitted the whole batch");
        assert!((0..256).all(|i| s.pc.files[g].frame(i).is_some_and(|f| s.mm.frames.test(f, pg::LOCKED))));
        crate::testutil::complete_io(&mut s);
        assert!((0..256).all(|i| s.pc.files[g].frame(i).is_some_and(|f| !s.mm.frames.test(f, pg::LOCKED))));
    }

    /// linux-6.18 on cgroup v1: a 1 MB memcg holds 64 clean pages of file f at its LRU's
    /// tail and dirty ones after them. A 512-page window of file g reclaims the clean
    /// pages and adds as many folios; the next charge meets the dirty batch and sleeps in
    /// `reclaim_throttle`, those folios still locked and unread (the kernel holds its
    /// `readahead_control` batch across the sleep). Killed asleep, the task ends the
    /// window: `read_pages` submits them and, once read, none stays locked.
    #[test]
    fn a_window_asleep_in_reclaim_throttle_holds_its_folios_unread_until_it_ends() {
        use crate::mm::pg;
        use crate::pagecache::readahead::Readahead;
        let mut s = crate::testutil::sim_from(
            "[kernel]\nprofile = \"linux-6.18\"\nlarge_folios = false\ncgroup_version = 1\n\
             [machine]\nram = \"64MB\"\n[vm]\ndirty_bytes = \"32MB\"\n\
             [device.d]\nmodel = \"nvme\"\n[file.f]\ndevice = \"d\"\nsize = \"4MB\"\n\
             [file.g]\ndevice = \"d\"\nsize = \"4MB\"\n[memcg.box]\nmax = \"1MB\"\n\
             [[task]]\nname = \"r\"\nmemcg = \"box\"\n[[task.step]]\nfile = \"g\"\nop = \"read\"\npattern = \"seq\"\n",
            &[],
        );
        let (f_, g, box_) = (FileId(0), FileId(1), 1u16);
        fill_memcg_with_file(&mut s, box_, f_, false, 64);
        assert!(s.submit_file_readahead(Tid(0), g, &Readahead::single_window(0, 512), 0, None), "throttled");
        assert_eq!(s.sched.tasks[0].state, TaskState::Throttled);
        let ra = s.sched.tasks[0].ra_resume.expect("the window waits for the charge");
        let added = ra.resume_index();
        assert!(ra.added == 0 && (32..=64).contains(&added), "folios added before the sleep: {added}");
        assert!((0..added).all(|i| s.pc.files[g].frame(i).is_some_and(|f| s.mm.frames.test(f, pg::LOCKED))));
        assert_eq!(s.mm.vmstat.get(Counter::PgpgIn), 0, "none of them submitted");
        s.kill_task(Tid(0));
        assert!(s.sched.tasks[0].ra_resume.is_none());
        assert_eq!(s.mm.vmstat.get(Counter::PgpgIn), 4 * added, "the exit submitted them");
        crate::testutil::complete_io(&mut s);
        assert!((0..added).all(|i| s.pc.files[g].frame(i).is_some_and(|f| !s.mm.frames.test(f, pg::LOCKED))));
    }

    /// A task writes 8 MB of file f through a 4 MB memcg (dirty limits far above: f stays
    /// dirty), then reads 8 MB of file g, in 64 KB read(2) calls or through a mapping, on
    /// linux-6.18. The readahead charges of the reads meet f's dirty pages. On cgroup v1 the
    /// first such batch puts the reader to sleep in `reclaim_throttle` while the flusher
    /// writes f; the rest of the pass, then the window (the fault's, in its retry), go on
    /// after it and meet pages under writeback or clean ones: a batch or two of dirty pages
    /// met in all (`nr_vmscan_immediate_reclaim`; 1,788 when the readahead pass did not
    /// throttle), fewer than on v2, which never throttles. Every page of g is read once
    /// either way.
    #[test]
    fn a_v1_reader_sleeps_while_the_flusher_cleans_the_pages_its_readahead_meets() {
        let read = "[[task.step]]\nfile = \"g\"\nop = \"read\"\npattern = \"seq\"\nrecord = \"64KB\"\n";
        let load = "[[task.step]]\nregion = \"map\"\nop = \"read\"\npattern = \"seq\"\n";
        for reader in [read, load] {
            let text = format!(
                "[kernel]\nprofile = \"linux-6.18\"\n[machine]\nram = \"256MB\"\n\
                 [vm]\ndirty_bytes = \"64MB\"\ndirty_background_bytes = \"32MB\"\n\
                 [device.d]\nmodel = \"nvme\"\n[file.f]\ndevice = \"d\"\nsize = \"8MB\"\n\
                 [file.g]\ndevice = \"d\"\nsize = \"8MB\"\n[memcg.box]\nmax = \"4MB\"\n\
                 [region.map]\nkind = \"file\"\nfile = \"g\"\n\
                 [[task]]\nname = \"t\"\nmemcg = \"box\"\n\
                 [[task.step]]\nfile = \"f\"\nop = \"write\"\npattern = \"seq\"\nrecord = \"64KB\"\n{reader}"
            );
            let immediate = |v: u32| {
                let r = crate::testutil::run(&text, &[&format!("kernel.cgroup_version={v}")]);
                assert_eq!(r.counter(Counter::PgpgIn), 4 * 2048, "v{v}: each page of g read once\n{reader}");
                r.counter(Counter::NrVmscanImmediateReclaim)
            };
            let (v1, v2) = (immediate(1), immediate(2));
            assert!(v1 <= 64 && v1 < v2, "dirty pages met: v1 {v1}, v2 {v2}\n{reader}");
        }
    }

    /// Writer `a` makes one 16 MB write(2) of a file with 4 MB of dirty pages allowed, on
    /// a disk: balance_dirty_pages throttles it, and it holds the inode's i_rwsem all the
    /// while. Writer `b`, from 1 ms, writes 4 KB of `b_file`: of the same file, it sleeps
    /// on the lock until a's write ends (its CPU time stays that of one small write), and
    /// lock_stat shows the wait; of another file, it goes ahead at once.
    #[test]
    fn a_write_sleeps_on_the_inode_lock_while_a_throttled_write_of_the_file_holds_it() {
        let run = |b_file: &str| {
            let text = format!(
                "[machine]\nram = \"256MB\"\n[vm]\ndirty_bytes = \"4MB\"\ndirty_background_bytes = \"2MB\"\n\
                 [device.d]\nmodel = \"hdd\"\n[file.f]\ndevice = \"d\"\nsize = \"16MB\"\n\
                 [file.g]\ndevice = \"d\"\nsize = \"16MB\"\n\
                 [[task]]\nname = \"a\"\n[[task.step]]\nfile = \"f\"\nop = \"write\"\npattern = \"seq\"\nrecord = \"16MB\"\n\
                 [[task]]\nname = \"b\"\nstart = \"1ms\"\n[[task.step]]\nfile = \"{b_file}\"\nop = \"pwrite\"\n\
                 pattern = \"random\"\nrecord = \"4KB\"\naccesses = 1\n"
            );
            let mut s = crate::testutil::sim_from(&text, &[]);
            s.run(&mut None);
            s.verify().unwrap();
            let stat = s.sched.locks.stats.iter().find(|c| c.name == "&sb->s_type->i_mutex_key").cloned().unwrap();
            let (a, b) = (&s.sched.tasks[0], &s.sched.tasks[1]);
            (a.end_ns, a.throttled_ns, b.end_ns, b.cpu_ns, stat)
        };
        let (a_end, a_throttled, b_end, b_cpu, stat) = run("f");
        assert!(a_throttled > 50_000_000, "a slept in balance_dirty_pages ({a_throttled} ns)");
        assert!(b_end >= a_end, "b's write ran after a's: {b_end} < {a_end}");
        assert!(b_cpu < 1_000_000, "b slept on the lock, it did not spin ({b_cpu} ns of CPU)");
        assert_eq!((stat.acquisitions, stat.contentions), (2, 1));
        assert!(stat.wait_total_ns > a_end * 9 / 10, "b waited for most of a's write: {stat:?}");
        assert!(stat.hold_max_ns > a_end - 100_000, "a held it from the start of its write to its end");
        let (_, _, b_end, _, stat) = run("g");
        assert!(b_end < 10_000_000, "another file's lock is free: b is done at once ({b_end} ns)");
        assert_eq!((stat.acquisitions, stat.contentions, stat.wait_total_ns), (2, 0, 0));
    }

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

    /// A task in a memcg of `memcg` making `accesses` loads at random pages of a read-only
    /// mapping of a `file`-sized file on an nvme disk with `ra_kb` of read_ahead_kb.
    fn mmap_random(ram: &str, ra_kb: u32, file: &str, memcg: &str, accesses: u32) -> String {
        format!(
            "[machine]\nram = \"{ram}\"\n[device.d]\nmodel = \"nvme\"\nread_ahead_kb = {ra_kb}\n\
             [file.data]\ndevice = \"d\"\nsize = \"{file}\"\n[memcg.box]\nmax = \"{memcg}\"\n\
             [region.map]\nkind = \"file\"\nfile = \"data\"\n[[task]]\nname = \"t\"\nmemcg = \"box\"\n\
             [[task.step]]\nregion = \"map\"\npattern = \"random\"\naccesses = {accesses}\nop = \"read\"\n"
        )
    }

    /// Random faults over a 64 MB mapping in a 16 MB memcg, read_ahead_kb = 1 MiB. On the
    /// 6.x profiles fault-around counts the cached pages around each fault as read-around
    /// hits, which keeps `mmap_miss` under MMAP_LOTSAMISS: every major fault reads a whole
    /// window, as this machine's kernel does (docs/validation.md, file-mmap-random). Without
    /// that feedback, read-around stops after about 100 misses and a fault reads 4 KiB.
    #[test]
    fn random_mmap_faults_keep_read_around_on_where_fault_around_counts_hits() {
        let text = mmap_random("256MB", 1024, "64MB", "16MB", 3000);
        let text = text.as_str();
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

    /// A 1 MB file read sequentially in 4 KiB read(2)s, read_ahead_kb 128 (32 pages), no
    /// memory pressure. On linux-6.18 (ext4 with large folios, 6.17's `ra->order`) the
    /// first window [0, 4) is order 0 with its mark on page 1; each async step adds 2 to the
    /// order, trims the window to a multiple of 2^min(order, 5) pages and clamps the order
    /// to ilog2 of the window: [4, 12) two order-2 folios; [12, 16) order 2; [16, 24) and
    /// [24, 32) order 3; [32, 48) and [48, 64) order 4; then order 5 (32 pages, ilog2 of
    /// the 32-page window) for good. Worked out by hand from mm/readahead.c's rules. Before
    /// large folios (linux-3.14, linux-6.6) every page is its own folio.
    #[test]
    fn sequential_reads_fill_the_page_cache_with_growing_large_folios_on_6_18_only() {
        let text = "[machine]\nram = \"64MB\"\n\
                    [device.d]\nmodel = \"nvme\"\nread_ahead_kb = 128\n\
                    [file.data]\ndevice = \"d\"\nsize = \"1MB\"\n\
                    [[task]]\nname = \"t\"\n\
                    [[task.step]]\nfile = \"data\"\npattern = \"seq\"\nop = \"read\"\nrecord = \"4KB\"\n";
        // (first page, order) of each folio over the file.
        let folios = |profile: &str| {
            let mut s = crate::testutil::sim_from(text, &[&format!("kernel.profile=\"{profile}\"")]);
            s.run(&mut None);
            s.verify().unwrap();
            let a = &s.pc.files[crate::ids::FileId(0)];
            let mut out = Vec::new();
            let mut i = 0;
            while i < a.nr_pages {
                let f = a.frame(i).unwrap_or_else(|| panic!("{profile}: page {i} not cached"));
                assert_eq!(s.mm.frames.index[f] as u64, i, "{profile}: folio at {i} starts elsewhere");
                out.push((i, s.mm.frames.order(f)));
                i += s.mm.frames.nr_pages(f);
            }
            (out, s.mm.vmstat.get(Counter::FileFolios))
        };
        let (got, added) = folios("linux-6.18");
        let mut want =
            vec![(0, 0), (1, 0), (2, 0), (3, 0), (4, 2), (8, 2), (12, 2), (16, 3), (24, 3), (32, 4), (48, 4)];
        want.extend((64..256).step_by(32).map(|i| (i, 5)));
        assert_eq!(got, want);
        assert_eq!(added, want.len() as u64, "file_folios counts folios, not pages");
        for profile in ["linux-3.14", "linux-6.6"] {
            let (got, added) = folios(profile);
            assert!(got.iter().all(|&(_, o)| o == 0), "{profile}: {got:?}");
            assert_eq!((got.len(), added), (256, 256), "{profile}");
        }
    }

    /// Two sequential passes of read(2) over a 64 MB file in a 16 MB memcg on linux-6.18:
    /// the folios are reclaimed whole and counted in pages (pgsteal_file is the pages read
    /// minus what stays cached); each leaves its shadow over all its pages, so every page
    /// of the second pass is a refault, counted once per page, as on linux-6.6 with single
    /// pages.
    #[test]
    fn large_folios_are_reclaimed_whole_and_refault_page_by_page() {
        let text = "[machine]\nram = \"256MB\"\n\
                    [device.d]\nmodel = \"nvme\"\nread_ahead_kb = 512\n\
                    [file.data]\ndevice = \"d\"\nsize = \"64MB\"\n\
                    [memcg.box]\nmax = \"16MB\"\n\
                    [[task]]\nname = \"t\"\nmemcg = \"box\"\n\
                    [[task.step]]\nfile = \"data\"\npattern = \"seq\"\nop = \"read\"\npasses = 2\n";
        for profile in ["linux-6.18", "linux-6.6"] {
            let r = crate::testutil::run(text, &[&format!("kernel.profile=\"{profile}\"")]);
            let c = |k| r.counter(k);
            let pages = 2 * 16384;
            assert_eq!(c(Counter::PgpgIn), 4 * pages, "{profile}: every page read once per pass");
            assert_eq!(c(Counter::WorkingsetRefaultFile), 16384, "{profile}: every second-pass page refaults");
            let cached = c(Counter::PgpgIn) / 4 - c(Counter::PgStealFile);
            assert!(cached <= 4096, "{profile}: {cached} pages left cached in a 16 MB memcg");
            let per_folio = c(Counter::PgpgIn) / 4 / c(Counter::FileFolios);
            if profile == "linux-6.18" {
                assert!(per_folio >= 64, "{profile}: {per_folio} pages per folio");
            } else {
                assert_eq!(per_folio, 1, "{profile}");
            }
        }
    }

    /// Sequential loads over a 32 MB file mapping, read_ahead_kb 2048: on linux-6.6 a fault
    /// maps at most the 16-page fault-around window, so there is at least one fault per 16
    /// pages; linux-6.18 maps whole large folios (fault-around and `finish_fault`). Its
    /// first read-around window (2048 pages) is order 0 and costs one fault per 16 pages
    /// as on 6.6; the async windows after it grow to 2 MB folios, mapped a folio per
    /// fault: less than half the faults of 6.6 in all.
    #[test]
    fn fault_around_maps_whole_large_folios_on_6_18() {
        let text = "[machine]\nram = \"256MB\"\n\
                    [device.d]\nmodel = \"nvme\"\nread_ahead_kb = 2048\n\
                    [file.data]\ndevice = \"d\"\nsize = \"32MB\"\n\
                    [region.map]\nkind = \"file\"\nfile = \"data\"\n\
                    [[task]]\nname = \"t\"\n\
                    [[task.step]]\nregion = \"map\"\npattern = \"seq\"\nop = \"read\"\n";
        let faults = |profile: &str| {
            let r = crate::testutil::run(text, &[&format!("kernel.profile=\"{profile}\"")]);
            r.counter(Counter::PgFault)
        };
        let pages = 8192;
        let f66 = faults("linux-6.6");
        assert!(f66 >= pages / 16, "6.6: fault-around maps 16 pages at most");
        let f618 = faults("linux-6.18");
        assert!(f618 * 2 < f66, "6.18: {f618} faults for {pages} pages, 6.6: {f66}");
    }

    /// One load of a cached file mapping: fault-around maps the 16 pages of its window,
    /// all young (x86 does not make prefaulted PTEs old), so reclaim will find each of them
    /// referenced once. The task pauses to keep its mapping to the end.
    #[test]
    fn fault_around_maps_its_window_young() {
        let text = "[machine]\nram = \"64MB\"\n[device.d]\nmodel = \"nvme\"\nread_ahead_kb = 128\n\
                    [file.data]\ndevice = \"d\"\nsize = \"1MB\"\n\
                    [region.map]\nkind = \"file\"\nfile = \"data\"\n[[task]]\nname = \"t\"\n\
                    [[task.step]]\nfile = \"data\"\npattern = \"seq\"\nop = \"read\"\n\
                    [[task.step]]\nregion = \"map\"\npattern = \"random\"\naccesses = 1\nop = \"read\"\n\
                    [[task.step]]\nop = \"pause\"\n";
        for profile in ["linux-6.6", "linux-6.18"] {
            let mut s = crate::testutil::sim_from(text, &[&format!("kernel.profile=\"{profile}\"")]);
            s.run(&mut None);
            let vma = s.mm.vmas.iter().find(|v| v.live && v.file.is_some()).expect("the mapping");
            let mapped: Vec<u32> = vma.pte.iter().copied().filter(|&e| e != crate::mm::pte::NONE).collect();
            assert!(mapped.len() >= 16, "{profile}: {} pages mapped", mapped.len());
            assert!(mapped.iter().all(|&e| e & crate::mm::pte::YOUNG != 0), "{profile}: a prefaulted PTE is old");
        }
    }

    /// Random loads over a 512 MB file mapping in a 192 MB memcg, read_ahead_kb 128. A major
    /// fault sleeps on its read and is retried (VM_FAULT_RETRY), and the retry begins with
    /// fault-around over the pages the read-around just brought in: 16 hits off `mmap_miss`
    /// for the 1 miss added, so read-around stays on and a major fault reads about its
    /// 32-page window (the host: 27.8 pages per major fault in file-mmap-random-ra128-512).
    /// Without the retry's fault-around, `mmap_miss` climbed to its cap while the cache
    /// filled, and most faults read one page.
    #[test]
    fn a_retried_major_fault_maps_the_read_around_window_and_keeps_read_around_on() {
        let text = mmap_random("1GB", 128, "512MB", "192MB", 4000);
        let text = text.as_str();
        for profile in ["linux-6.6", "linux-6.18"] {
            let r = crate::testutil::run(text, &[&format!("kernel.profile=\"{profile}\"")]);
            let major = r.counter(Counter::PgMajFault);
            let pages = r.counter(Counter::PgpgIn) / 4 / major;
            assert!(pages >= 24, "{profile}: {pages} pages read per major fault");
            assert_eq!(r.counter(Counter::FileReadSingle), 0, "{profile}: read-around never stopped");
        }
    }
}
