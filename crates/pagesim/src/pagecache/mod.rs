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
    /// The xarray's leaf nodes, one per 64 pages (`XA_CHUNK_SHIFT` = 6), as far as the
    /// shadow-node shrinker needs them (mm/workingset.c): what each holds and where it is
    /// on its memcg's shadow-node list.
    xa_leaves: Vec<XaLeaf>,
    /// The level-1 nodes above them, one per 4096 pages (files of more than 64 pages: a
    /// smaller file's tree is one leaf): the memcg each is charged to and its place on that
    /// memcg's shadow-node list.
    xa_upper: Vec<XaUpper>,
}

/// One leaf node's range of 64 slots. Its entries are order-0..5 folios and their shadows;
/// a folio of order 6 or more, and its shadow, is stored in the level-1 node instead (one
/// slot per 64 pages: `l1_order`), and the range then has no leaf node.
#[derive(Clone, Copy, Debug, Default)]
struct XaLeaf {
    /// Slots holding a page, and slots holding a shadow entry.
    pages: u8,
    shadows: u8,
    /// 0, or the order (≥ 6) of the level-1 entry, a page or a shadow, covering the range.
    l1_order: u8,
    /// The memcg the node was allocated in (its slab object's charge: the list it goes on).
    memcg: u16,
    /// Its place on that memcg's shadow-node list (`ShadowNodeList`), 0 when not on it.
    lru: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct XaUpper {
    memcg: u16,
    lru: u64,
}

/// Pages under one leaf node, and under one level-1 node (64 leaves).
pub const XA_LEAF_PAGES: u64 = 64;
pub const XA_L1_PAGES: u64 = 64 * 64;

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
            xa_leaves: vec![XaLeaf::default(); (nr_pages as usize).div_ceil(XA_LEAF_PAGES as usize)],
            xa_upper: vec![XaUpper::default(); (nr_pages as usize).div_ceil(XA_L1_PAGES as usize)],
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

    /// Drops every shadow entry (truncate: nothing refaults after it). Returns the nodes
    /// that were on a shadow-node list (their entries are gone, so are they).
    pub fn forget_shadows(&mut self) -> Vec<(u16, u64)> {
        self.shadow.fill(0);
        let mut listed = Vec::new();
        for l in &mut self.xa_leaves {
            if l.lru != 0 {
                listed.push((l.memcg, l.lru));
            }
            *l = XaLeaf { pages: l.pages, ..XaLeaf::default() };
        }
        for u in &mut self.xa_upper {
            if u.lru != 0 {
                listed.push((u.memcg, u.lru));
            }
            u.lru = 0;
        }
        listed
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

    /// Puts frame `f` in the slots of `[index, index + nr)`, a folio of `nr` pages charged
    /// to `memcg`, and takes the shadow entries it replaces, returning the last one
    /// (`__filemap_add_folio` keeps the last shadow it meets) and the leaf ranges (by
    /// `index >> 6`) whose nodes changed. A folio smaller than the large shadow entry it
    /// lands in splits that entry first (`xas_split`): every leaf under it gets a node full
    /// of the shadow.
    pub fn insert_folio(&mut self, index: u64, nr: u64, f: Pfn, memcg: u16) -> (Option<Shadow>, std::ops::Range<u64>) {
        self.nrpages += nr;
        let b0 = index / XA_LEAF_PAGES;
        let mut blocks = b0..(index + nr - 1) / XA_LEAF_PAGES + 1;
        if nr >= XA_LEAF_PAGES {
            for l in &mut self.xa_leaves[blocks.start as usize..blocks.end as usize] {
                // A leaf of shadows there is replaced by the level-1 entry.
                *l = XaLeaf { l1_order: nr.trailing_zeros() as u8, memcg, lru: l.lru, ..XaLeaf::default() };
            }
        } else {
            let l1_order = self.xa_leaves[b0 as usize].l1_order;
            if l1_order != 0 {
                let group = 1u64 << (l1_order - 6);
                let g0 = b0 / group * group;
                for b in g0..g0 + group {
                    let shadows = self.shadow[self.leaf_pages(b)].iter().filter(|&&v| v != 0).count() as u8;
                    self.xa_leaves[b as usize] = XaLeaf { shadows, memcg, ..XaLeaf::default() };
                }
                blocks = g0..g0 + group;
            } else if self.xa_leaves[b0 as usize].pages == 0 && self.xa_leaves[b0 as usize].shadows == 0 {
                self.xa_leaves[b0 as usize].memcg = memcg;
            }
        }
        let u = &mut self.xa_upper[(index / XA_L1_PAGES) as usize];
        if u.lru == 0 {
            u.memcg = memcg;
        }
        if nr == 1 {
            // The read path's common case, without the range loops.
            let i = index as usize;
            debug_assert_eq!(self.slots[i], 0, "page {index} of {} is already cached", self.name);
            self.slots[i] = f.slot();
            let v = std::mem::take(&mut self.shadow[i]);
            let l = &mut self.xa_leaves[b0 as usize];
            l.pages += 1;
            l.shadows -= (v != 0) as u8;
            return ((v != 0).then(|| Shadow::unpack(v - 1)), blocks);
        }
        let range = index as usize..(index + nr) as usize;
        for slot in &mut self.slots[range.clone()] {
            debug_assert_eq!(*slot, 0, "a page of the folio at {index} of {} is already cached", self.name);
            *slot = f.slot();
        }
        let mut last = 0;
        let mut taken = 0u64;
        for v in &mut self.shadow[range] {
            let v = std::mem::take(v);
            if v != 0 {
                last = v;
                taken += 1;
            }
        }
        if nr < XA_LEAF_PAGES {
            let l = &mut self.xa_leaves[b0 as usize];
            l.pages += nr as u8;
            l.shadows -= taken as u8;
        }
        ((last != 0).then(|| Shadow::unpack(last - 1)), blocks)
    }

    /// Empties the slots of the folio `f` of `nr` pages at `index`, leaving `shadow` in
    /// them where the profile keeps one (`__filemap_remove_folio`). Returns the leaf range
    /// whose nodes changed.
    pub fn delete_folio(&mut self, index: u64, nr: u64, f: Pfn, shadow: Option<Shadow>) -> std::ops::Range<u64> {
        self.nrpages -= nr;
        let b0 = index / XA_LEAF_PAGES;
        let blocks = b0..(index + nr - 1) / XA_LEAF_PAGES + 1;
        if nr >= XA_LEAF_PAGES {
            if shadow.is_none() {
                for l in &mut self.xa_leaves[blocks.start as usize..blocks.end as usize] {
                    l.l1_order = 0;
                }
            }
        } else {
            let l = &mut self.xa_leaves[b0 as usize];
            l.pages -= nr as u8;
            if shadow.is_some() {
                l.shadows += nr as u8;
            }
        }
        if nr == 1 {
            let i = index as usize;
            debug_assert_eq!(self.slots[i], f.slot());
            self.slots[i] = 0;
            if let Some(s) = shadow {
                self.shadow[i] = s.pack() + 1;
            }
            return blocks;
        }
        let range = index as usize..(index + nr) as usize;
        for slot in &mut self.slots[range.clone()] {
            debug_assert_eq!(*slot, f.slot());
            *slot = 0;
        }
        if let Some(s) = shadow {
            self.shadow[range].fill(s.pack() + 1);
        }
        blocks
    }

    /// The slots (page indices) under leaf `b`, the last leaf's cut at the file's end.
    #[inline]
    fn leaf_pages(&self, b: u64) -> std::ops::Range<usize> {
        (b * XA_LEAF_PAGES) as usize..((b + 1) * XA_LEAF_PAGES).min(self.nr_pages) as usize
    }

    /// The leaves under level-1 node `n` (64, fewer at the file's end).
    fn leaves_under(&self, n: u64) -> std::ops::Range<u64> {
        let lo = n * XA_L1_PAGES / XA_LEAF_PAGES;
        lo..(lo + XA_L1_PAGES / XA_LEAF_PAGES).min(self.xa_leaves.len() as u64)
    }

    /// Whether leaf `b`'s node holds shadow entries and nothing else
    /// (`workingset_update_node`: `node->count == node->nr_values`, not 0).
    #[inline]
    pub fn xa_leaf_shadow_only(&self, b: u64) -> bool {
        let l = &self.xa_leaves[b as usize];
        l.l1_order == 0 && l.pages == 0 && l.shadows > 0
    }

    /// Whether leaf `b` has a leaf node with entries (pages or shadows) in it: then its
    /// level-1 node holds a pointer to it.
    #[inline]
    pub fn xa_leaf_has_entries(&self, b: u64) -> bool {
        let l = &self.xa_leaves[b as usize];
        l.l1_order == 0 && (l.pages != 0 || l.shadows != 0)
    }

    /// Whether level-1 node `n` holds shadow entries and nothing else: no leaf node under
    /// it, no folio in it, at least one large folio's shadow. A file of at most 64 pages
    /// has none (its tree is one leaf, or one entry at the root).
    pub fn xa_upper_shadow_only(&self, n: u64) -> bool {
        if self.nr_pages <= XA_LEAF_PAGES {
            return false;
        }
        let mut any = false;
        for b in self.leaves_under(n) {
            let l = &self.xa_leaves[b as usize];
            if l.l1_order != 0 {
                if self.slots[(b * XA_LEAF_PAGES) as usize] != 0 {
                    return false;
                }
                any = true;
            } else if l.pages != 0 || l.shadows != 0 {
                return false;
            }
        }
        any
    }

    /// The memcg node `(level, id)` is charged to and its place on that memcg's
    /// shadow-node list (0: not on it).
    #[inline]
    pub fn xa_node_lru(&self, level: u8, id: u64) -> (u16, u64) {
        if level == 0 {
            let l = &self.xa_leaves[id as usize];
            (l.memcg, l.lru)
        } else {
            let u = &self.xa_upper[id as usize];
            (u.memcg, u.lru)
        }
    }

    #[inline]
    pub fn xa_set_node_lru(&mut self, level: u8, id: u64, lru: u64) {
        if level == 0 {
            self.xa_leaves[id as usize].lru = lru;
        } else {
            self.xa_upper[id as usize].lru = lru;
        }
    }

    /// `xa_delete_node` of a node holding only shadows (the shadow shrinker's
    /// `shadow_lru_isolate`): its shadow entries go, so those pages no longer refault.
    pub fn xa_drop_node(&mut self, level: u8, id: u64) {
        if level == 0 {
            let range = self.leaf_pages(id);
            self.shadow[range].fill(0);
            self.xa_leaves[id as usize] = XaLeaf { memcg: self.xa_leaves[id as usize].memcg, ..XaLeaf::default() };
        } else {
            for b in self.leaves_under(id) {
                if self.xa_leaves[b as usize].l1_order != 0 {
                    let range = self.leaf_pages(b);
                    self.shadow[range].fill(0);
                    self.xa_leaves[b as usize].l1_order = 0;
                }
            }
            self.xa_upper[id as usize].lru = 0;
        }
    }

    /// Checks the leaf nodes' bookkeeping against the slots (the invariant checker's):
    /// a leaf's counts are its pages and shadows, a range held by a level-1 entry has no
    /// leaf entries. With `listed`, each node that holds only shadows is on a list and no
    /// other is; returns every listed node as `(memcg, place, level, id)`.
    pub fn verify_xa(&self, listed: bool) -> Result<Vec<(u16, u64, u8, u64)>, String> {
        let mut on = Vec::new();
        for (b, l) in self.xa_leaves.iter().enumerate() {
            let range = self.leaf_pages(b as u64);
            let pages = self.slots[range.clone()].iter().filter(|&&v| v != 0).count();
            let shadows = self.shadow[range].iter().filter(|&&v| v != 0).count();
            if l.l1_order == 0 && (pages != l.pages as usize || shadows != l.shadows as usize) {
                return Err(format!(
                    "{}: leaf {b} counts {} pages and {} shadows, its slots hold {pages} and {shadows}",
                    self.name, l.pages, l.shadows
                ));
            }
            if l.l1_order != 0 && (l.pages != 0 || l.shadows != 0 || l.lru != 0) {
                return Err(format!("{}: leaf {b} is held by an order-{} entry but has a node", self.name, l.l1_order));
            }
            if listed && (l.lru != 0) != self.xa_leaf_shadow_only(b as u64) {
                return Err(format!(
                    "{}: leaf {b} on a shadow-node list: {}, holding shadows only: {}",
                    self.name,
                    l.lru != 0,
                    l.lru == 0
                ));
            }
            if l.lru != 0 {
                on.push((l.memcg, l.lru, 0, b as u64));
            }
        }
        for (n, u) in self.xa_upper.iter().enumerate() {
            if listed && (u.lru != 0) != self.xa_upper_shadow_only(n as u64) {
                return Err(format!("{}: level-1 node {n} on a shadow-node list: {}", self.name, u.lru != 0));
            }
            if u.lru != 0 {
                on.push((u.memcg, u.lru, 1, n as u64));
            }
        }
        Ok(on)
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
