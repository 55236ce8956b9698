//! The page cache of files: address spaces, the state of a read(2) in progress, and the
//! file readahead policies.
//!
//! Models include/linux/fs.h `struct address_space` (one per file: its page cache as an
//! index → page array, with workingset shadow entries where evicted pages were) and
//! `struct file_ra_state`. The readahead policies are in [`readahead`]. The paths over this
//! state (mm/filemap.c `filemap_read`, `filemap_fault`, `filemap_map_pages`, mm/swap.c
//! `folio_mark_accessed`, the page-cache half of mm/workingset.c) allocate, reclaim and
//! submit I/O, so they are in engine/filemap.rs.
//!
//! ```text
//!  file extent on its device:  [dev_offset, dev_offset + nr_pages × 4 KiB)
//!  slots[i]:   0 = hole          frame + 1 = cached page i        (frames.owner = File(id))
//!  shadow[i]:  0 = none          packed workingset shadow + 1     (only where slots[i] = 0)
//! ```
//!
//! A large folio of `nr` pages starting at index `i` (aligned to `nr`) fills `slots[i..i+nr]`
//! with the same frame, whose `Frames::index` is `i`; when it is evicted, its shadow fills
//! the same range (the kernel's multi-index xarray entries).
//!
//! Pages enter the page cache on the inactive file list, locked until their read ends;
//! reclaim drops clean file pages without I/O, leaving a shadow entry. A written page is
//! dirty until writeback (writeback/, engine/fs_writeback.rs) or reclaim's pageout writes
//! it; the mapping tags dirty folios (`dirty_tag`, the xarray's PAGECACHE_TAG_DIRTY) so that
//! writeback goes from one to the next without looking at clean pages.

pub mod readahead;

use crate::ids::DevId;
use crate::ids::FileId;
use crate::ids::Pfn;
use crate::mm::pte;
use crate::mm::shadow::Shadow;
use crate::mm::{pg, Frames};
use readahead::{Lookup, PageCacheView};

/// The page cache of the machine's files and the file readahead state.
pub(crate) struct PageCache {
    /// Files and their page caches.
    pub(crate) files: Vec<AddressSpace>,
    /// The file readahead policy.
    pub(crate) ra: readahead::FileRa,
    /// Open files' readahead states (`struct file_ra_state`), indexed by `Vma::ra` and
    /// `StepTarget::File`.
    pub(crate) ra_states: Vec<readahead::FileRaState>,
    /// Per readahead state: the last page its previous read returned (`u64::MAX` none).
    pub(crate) ra_last_page: Vec<u64>,
    /// `ra_states[ra_read_copies + tid]` is task `tid`'s copy of the state its read(2)
    /// works on, where the profile has `ra_read_copy` (≤2.6.23).
    pub(crate) ra_read_copies: u32,
    /// Readahead states of closed files and torn-down mappings, for reuse.
    pub(crate) free_ra: Vec<u32>,
    /// File readahead windows by size: bucket k counts windows of up to 2^k pages.
    pub(crate) ra_window_hist: [u64; RA_WINDOW_BUCKETS],
}

/// Buckets of `PageCache::ra_window_hist`: windows of 1 page up to 2^15 pages (128 MiB) and
/// more in the last.
pub const RA_WINDOW_BUCKETS: usize = 16;

/// One file: its place on a device and its page cache.
#[derive(Debug)]
pub struct AddressSpace {
    /// The scenario's file name (`name.k` for the copy of task instance k of a per_task file).
    pub name: String,
    /// Device index and byte offset of the file's extent.
    pub dev: DevId,
    pub dev_offset: u64,
    /// Pages the file's extent holds: the largest the file may grow to.
    pub nr_pages: u64,
    /// The file's size in pages (`i_size` rounded up): reads and readahead stop there;
    /// writes past it and appends grow it, truncate sets it to 0.
    pub i_size: u64,
    /// The inode's `i_rwsem` (`i_mutex` before 4.7): a write(2) or truncate holds it
    /// (engine/filemap.rs `inode_lock`).
    pub i_rwsem: crate::locking::SleepLockId,
    /// frame + 1 of each cached page, or 0.
    pub slots: Vec<u32>,
    /// Packed shadow + 1 of each evicted page, or 0 (`xa_value` entries in the kernel).
    shadow: Vec<u64>,
    /// VMAs mapping the file.
    pub mappers: Vec<crate::ids::VmaId>,
    /// Pages cached (`mapping->nrpages`).
    pub nrpages: u64,
    /// PAGECACHE_TAG_DIRTY and PAGECACHE_TAG_WRITEBACK: bit i set when the folio starting at
    /// page i is dirty (under writeback), so that writeback and fsync find those folios
    /// without walking the others (64 pages a word).
    tags: [Vec<u64>; 2],
    /// Dirty pages of the file.
    pub nr_dirty: u64,
    /// Where cyclic writeback resumes (`mapping->writeback_index`).
    pub writeback_index: u64,
    /// ext4's EXT4_STATE_DA_ALLOC_CLOSE: truncated to 0, its dirty pages are to be written
    /// when a descriptor of it is released (engine/ext4.rs).
    pub da_alloc_close: bool,
}

impl AddressSpace {
    /// The page cache of a file of `i_size` pages in an extent of `nr_pages`.
    pub fn new(name: String, dev: DevId, dev_offset: u64, nr_pages: u64, i_size: u64) -> Self {
        AddressSpace {
            name,
            dev,
            dev_offset,
            nr_pages,
            i_size,
            i_rwsem: crate::locking::SleepLockId::default(),
            slots: vec![0; nr_pages as usize],
            shadow: vec![0; nr_pages as usize],
            mappers: Vec::new(),
            nrpages: 0,
            tags: [vec![0; (nr_pages as usize).div_ceil(64)], vec![0; (nr_pages as usize).div_ceil(64)]],
            nr_dirty: 0,
            writeback_index: 0,
            da_alloc_close: false,
        }
    }

    /// Sets `tag` on the folio at `index` (its first page); false if it had it.
    #[inline]
    fn set_tag(&mut self, tag: Tag, index: u64) -> bool {
        let (w, b) = ((index / 64) as usize, index % 64);
        let word = &mut self.tags[tag as usize][w];
        let had = *word & (1 << b) != 0;
        *word |= 1 << b;
        !had
    }

    /// Clears `tag` on the folio at `index`; false if it did not have it.
    #[inline]
    fn clear_tag(&mut self, tag: Tag, index: u64) -> bool {
        let (w, b) = ((index / 64) as usize, index % 64);
        let word = &mut self.tags[tag as usize][w];
        let had = *word & (1 << b) != 0;
        *word &= !(1 << b);
        had
    }

    /// The first folio with `tag` at or after `from` and before `end`, by its first page
    /// (`filemap_get_folios_tag`).
    pub fn next_tagged(&self, tag: Tag, from: u64, end: u64) -> Option<u64> {
        let end = end.min(self.nr_pages);
        let bits = &self.tags[tag as usize];
        let mut i = from;
        while i < end {
            let (w, b) = ((i / 64) as usize, i % 64);
            let word = bits[w] >> b;
            if word != 0 {
                let at = i + word.trailing_zeros() as u64;
                return (at < end).then_some(at);
            }
            i = (w as u64 + 1) * 64;
        }
        None
    }

    /// Tags the folio at `index` (its first page) dirty, of `nr` pages; false if it was.
    #[inline]
    pub fn tag_dirty(&mut self, index: u64, nr: u64) -> bool {
        let new = self.set_tag(Tag::Dirty, index);
        if new {
            self.nr_dirty += nr;
        }
        new
    }

    /// Clears the dirty tag of the folio at `index`, of `nr` pages; false if it had none.
    #[inline]
    pub fn clear_dirty_tag(&mut self, index: u64, nr: u64) -> bool {
        let had = self.clear_tag(Tag::Dirty, index);
        if had {
            self.nr_dirty -= nr;
        }
        had
    }

    /// The first dirty folio at or after `from` and before `end`.
    pub fn next_dirty(&self, from: u64, end: u64) -> Option<u64> {
        self.next_tagged(Tag::Dirty, from, end)
    }

    /// Tags the folio at `index` as under writeback (`folio_start_writeback`) or not.
    #[inline]
    pub fn tag_writeback(&mut self, index: u64, on: bool) {
        if on {
            self.set_tag(Tag::Writeback, index);
        } else {
            self.clear_tag(Tag::Writeback, index);
        }
    }

    /// Drops every shadow entry (truncate: nothing refaults after it).
    pub fn forget_shadows(&mut self) {
        self.shadow.fill(0);
    }

    /// The cached frame at `index`.
    #[inline]
    pub fn frame(&self, index: u64) -> Option<Pfn> {
        Pfn::from_slot(self.slots[index as usize])
    }

    /// The first cached page in `[from, end)` and its frame (fault-around's walk over the
    /// page cache's entries, which skips the empty ones).
    #[inline]
    pub fn next_cached(&self, from: u64, end: u64) -> Option<(u64, Pfn)> {
        let slots = self.slots.get(from as usize..end.min(self.slots.len() as u64) as usize)?;
        let at = slots.iter().position(|&s| s != 0)?;
        Some((from + at as u64, Pfn::from_slot(slots[at])?))
    }

    /// Asks for the cache lines of page `index`'s slot and shadow entry (a replay does, a
    /// few accesses before it may fault on that page).
    #[inline]
    pub fn prefetch(&self, index: u64) {
        if let (Some(slot), Some(shadow)) = (self.slots.get(index as usize), self.shadow.get(index as usize)) {
            crate::prefetch::prefetch(slot);
            crate::prefetch::prefetch(shadow);
        }
    }

    /// Asks for the cache lines of the slots of pages `[lo, hi)`, a fault-around window
    /// (16 slots: one or two lines).
    #[inline]
    pub fn prefetch_slots(&self, lo: u64, hi: u64) {
        if let Some(w) = self.slots.get(lo as usize..(hi as usize).min(self.slots.len())) {
            if let (Some(first), Some(last)) = (w.first(), w.last()) {
                crate::prefetch::prefetch(first);
                crate::prefetch::prefetch(last);
            }
        }
    }

    /// Byte offset of page `index` on the device.
    #[inline]
    pub fn offset_of(&self, index: u64) -> u64 {
        self.dev_offset + index * 4096
    }

    /// Puts frame `f` in the slots of `[index, index + nr)`, a folio of `nr` pages, and
    /// takes the shadow entries it replaces, returning the last one (`__filemap_add_folio`
    /// keeps the last shadow it meets).
    pub fn insert_folio(&mut self, index: u64, nr: u64, f: Pfn) -> Option<Shadow> {
        self.nrpages += nr;
        if nr == 1 {
            // The read path's common case, without the range loops.
            let i = index as usize;
            debug_assert_eq!(self.slots[i], 0, "page {index} of {} is already cached", self.name);
            self.slots[i] = f.slot();
            let v = std::mem::take(&mut self.shadow[i]);
            return (v != 0).then(|| Shadow::unpack(v - 1));
        }
        let range = index as usize..(index + nr) as usize;
        for slot in &mut self.slots[range.clone()] {
            debug_assert_eq!(*slot, 0, "a page of the folio at {index} of {} is already cached", self.name);
            *slot = f.slot();
        }
        let mut last = 0;
        for v in &mut self.shadow[range] {
            let v = std::mem::take(v);
            if v != 0 {
                last = v;
            }
        }
        (last != 0).then(|| Shadow::unpack(last - 1))
    }

    /// Empties the slots of the folio `f` of `nr` pages at `index`, leaving `shadow` in
    /// them where the profile keeps one (`__filemap_remove_folio`).
    pub fn delete_folio(&mut self, index: u64, nr: u64, f: Pfn, shadow: Option<Shadow>) {
        self.nrpages -= nr;
        if nr == 1 {
            let i = index as usize;
            debug_assert_eq!(self.slots[i], f.slot());
            self.slots[i] = 0;
            if let Some(s) = shadow {
                self.shadow[i] = s.pack() + 1;
            }
            return;
        }
        let range = index as usize..(index + nr) as usize;
        for slot in &mut self.slots[range.clone()] {
            debug_assert_eq!(*slot, f.slot());
            *slot = 0;
        }
        if let Some(s) = shadow {
            self.shadow[range].fill(s.pack() + 1);
        }
    }

    /// What a page-cache lookup at `index` finds (`filemap_get_folio` + the PG_readahead
    /// test of the read path, which ignores the flag while the page is under writeback:
    /// the kernel shares the bit with PG_reclaim).
    #[inline]
    pub fn lookup(&self, frames: &Frames, index: u64) -> Lookup {
        match self.frame(index) {
            None => Lookup::Missing,
            Some(f) if frames.test(f, pg::READAHEAD) && !frames.test(f, pg::WRITEBACK) => Lookup::Marked,
            Some(_) => Lookup::Cached,
        }
    }
}

/// The page-cache tags the model keeps (`PAGECACHE_TAG_DIRTY`, `PAGECACHE_TAG_WRITEBACK`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag {
    Dirty = 0,
    Writeback = 1,
}

/// A whole-file call in progress: fsync(2)/fdatasync(2) (write every dirty page, waiting for
/// pages already under writeback, then wait for all of them), sync_file_range(2) with
/// SYNC_FILE_RANGE_WRITE (start writeback of what is not under writeback yet), truncate(2)
/// (wait for the writeback in flight, then drop every page). `index` is where it goes on.
#[derive(Clone, Copy, Debug)]
pub struct FileSync {
    pub file: FileId,
    pub op: SyncOp,
    pub index: u64,
    /// fsync: its writes are submitted; it waits for them.
    pub waiting: bool,
    /// An operation of the task's own, counted when it ends; not for the fsync a write
    /// step makes after every `fsync_every` writes or the writeback a replayed close
    /// starts (`Sim::file_sync_begin`).
    pub counts: bool,
    /// Truncate: it holds the inode's `i_rwsem` (`do_truncate`'s `inode_lock`).
    pub locked: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncOp {
    Fsync,
    StartWrite,
    Truncate,
}

/// The policies' read-only view of one file's page cache.
pub struct CacheView<'a> {
    pub mapping: &'a AddressSpace,
    pub frames: &'a Frames,
    pub congested: bool,
    /// The mapping takes large folios (`Profile::pagecache_large_folios`).
    pub large_folios: bool,
}

impl<'a> CacheView<'a> {
    /// The view of `mapping`, congested as its device's read queue is now.
    pub fn new(
        mapping: &'a AddressSpace,
        frames: &'a Frames,
        devices: &[crate::device::DeviceQueue],
        large_folios: bool,
    ) -> Self {
        CacheView { mapping, frames, congested: devices[mapping.dev.idx()].read_congested(), large_folios }
    }
}

impl PageCacheView for CacheView<'_> {
    fn i_size_pages(&self) -> u64 {
        self.mapping.i_size
    }
    #[inline]
    fn is_cached(&self, index: u64) -> bool {
        self.mapping.slots.get(index as usize).is_some_and(|&s| s != 0)
    }
    fn read_congested(&self) -> bool {
        self.congested
    }
    fn large_folios(&self) -> bool {
        self.large_folios
    }
    fn folio_nr_pages(&self, index: u64) -> u64 {
        self.mapping.frame(index).map_or(1, |f| self.frames.nr_pages(f))
    }
}

/// A file page's PTE in a read-only shared file mapping.
#[inline]
pub fn file_pte(f: Pfn, young: bool) -> u32 {
    pte::present(f, if young { pte::YOUNG } else { 0 })
}

crate::ids::index_by!(AddressSpace, crate::ids::FileId);

#[cfg(test)]
mod tests;

/// `fault_around_bytes` (64 KiB) in pages.
pub const FAULT_AROUND_PAGES: u64 = 16;

/// A read(2) in progress: pages `[start, end)` of file `file`, read through the
/// readahead state `ra`; `index` is the next page to copy.
#[derive(Clone, Copy, Debug)]
pub struct FileRead {
    pub file: FileId,
    /// The open file's readahead state.
    pub ra: u32,
    /// The state this read decides with: `ra` itself, or the task's copy of it where
    /// the kernel's read path works on a copy (`Profile::ra_read_copy`).
    pub work: u32,
    pub start: u64,
    pub end: u64,
    pub index: u64,
    /// The policy has been asked about page `index` in this read.
    pub ra_done: bool,
    /// The reader slept on page `index`.
    pub waited: bool,
    /// The last page the previous read on this file copied (`u64::MAX`: none). If the
    /// read starts in that page's folio, it was marked accessed then.
    pub prev_last: u64,
}

/// A readahead whose folio charge sleeps in `reclaim_throttle` (cgroup v1,
/// [`crate::engine::Sim::alloc_folio_noretry`]): the rest of its decision, read once the
/// task has slept and its reclaim job has ended (`Sim::readahead_resume`).
#[derive(Clone, Copy, Debug)]
pub struct RaResume {
    pub file: FileId,
    /// The decision from the folio whose charge slept on.
    pub rest: crate::pagecache::readahead::Readahead,
    /// The page whose folio the reader holds meanwhile (async readahead), if any.
    pub held: Option<u64>,
    /// The first page of the folios the window added before the sleep and has not read
    /// (`ractl->_index`; 5.8+, `Profile::ra_add_before_read_pages`): they run up to
    /// [`RaResume::resume_index`], locked, until `read_pages`.
    pub added: u64,
}

impl RaResume {
    /// The page whose folio's charge slept: where the window goes on.
    pub fn resume_index(&self) -> u64 {
        self.rest.ranges().first().map_or(self.added, |r| r.start)
    }
}

/// A write(2) in progress: pages `[start, end)` of file `file`; `index` is the next page
/// to copy into. It copies once it holds the inode's `i_rwsem` (`locked`); an append
/// (`append`, `nr` pages) learns its place, the end of the file, then.
#[derive(Clone, Copy, Debug)]
pub struct FileWrite {
    pub file: FileId,
    pub start: u64,
    pub end: u64,
    pub index: u64,
    pub nr: u64,
    pub append: bool,
    pub locked: bool,
}

/// How far a read got in one burst.
pub enum ReadStep {
    /// Every page was copied.
    Done,
    /// Waiting for a page's I/O.
    Blocked,
    /// A page allocation started the task's reclaim job: run it, then resume.
    Retry,
    /// The burst ended; resume later.
    Yield,
}
