//! File readahead: which pages of a file to read along with the ones a read(2), an mmap fault
//! or fadvise(2) asks for.
//!
//! Models mm/readahead.c (the window logic, per version: [`legacy`], [`ondemand`], [`modern`])
//! and the parts of mm/filemap.c and mm/fadvise.c that call it. Spec: readahead_swap.md §1.
//!
//! # The mechanism
//!
//! Each open file carries a `struct file_ra_state` ([`FileRaState`]): the last readahead
//! window, the maximum window `ra_pages` (32 pages = 128 KiB by default, copied from the
//! device at open) and where the previous read ended. The read path consults it and issues
//! the window as one batch of page-cache insertions and reads.
//!
//! * 2.6.20 ([`legacy`]): `page_cache_readahead` sees *every* read request. It keeps a current
//!   window and an ahead window; when the reader enters the ahead window, the ahead window
//!   becomes current and a new ahead window is read. A page found missing afterwards
//!   (`handle_ra_miss`) shrinks the next window by 2 pages; 256 pages of fully cached windows
//!   turn readahead off until the next miss.
//! * 2.6.23 on-demand ([`ondemand`]): readahead is called only when it is due: *sync* on a
//!   missing page, *async* when the reader hits the page flagged PG_readahead. One window;
//!   the flag sits `async_size` pages before its end:
//!
//! ```text
//!                  |<------------------- size ------------------->|
//!                  |                         |<--- async_size --->|
//!   ===============#=========================#=====================|========
//!                  ^start                    ^PG_readahead         ^start+size
//!   reader here -->      when it reaches the flag, the next window is read
//! ```
//!
//! * 5.x–6.18 ([`modern`]): the same two triggers, plus *context readahead* (a miss with a
//!   run of cached pages just below it is taken as a continuing stream, which serves
//!   interleaved readers of one file), a marker hit without state probes the cache for the
//!   old window's end, io_pages-sized large reads and the FADV_RANDOM mode flag.
//!
//! # What the caller (engine/filemap.rs) does
//!
//! A policy only decides; it never touches the page cache. It reads the cache through
//! [`PageCacheView`] and returns a [`Readahead`]: up to [`MAX_RANGES`] disjoint ascending page
//! ranges, clipped to EOF, each with at least one page missing from the cache, plus the one
//! page (if any) to flag PG_readahead and whether to clear the flag on the page that
//! triggered the call. engine/filemap.rs (`file_read_step`, `submit_file_readahead`,
//! `filemap_fault`, `file_fadvise`), like the kernel's read path:
//!
//! ```text
//! read(2) of pages [index, index + nr):
//!     policy.read_begin(ra, index, nr)
//!     for each page i in order, while below EOF:
//!         found = lookup(i)                        // Missing / Cached / Marked
//!         out = policy.read_page(ra, cache, i, index + nr - i, found)
//!         if out.clear_mark: clear PG_readahead on i
//!         for each range: allocate + read the pages not in the cache (one batch per range)
//!         if out.mark: set PG_readahead on that page (this call allocated it)
//!         if i is still not cached: read it alone (the read path's own readpage)
//!     policy.read_end(ra, index, pages actually read)
//! mmap fault at pgoff:      the same with policy.fault(ra, cache, pgoff, found, vm hint)
//! fadvise(2):               policy.fadvise(ra, cache, advice), ranges applied the same way
//! ```
//!
//! `found` is `Marked` only for a PG_readahead page that is not under writeback (the kernel
//! shares the bit with PG_reclaim and skips async readahead then).
//!
//! # Simplifications
//!
//! * Pages are 4 KiB and reads are whole pages, so `prev_pos` is a page boundary (a 6.x read
//!   ending inside a page leaves the kernel's `prev_pos` in that page, one page lower).
//! * An order-0 mapping: no large folios (6.x readahead on such a mapping reads order-0 pages;
//!   only the window-end alignment of `page_cache_async_ra` remains, see [`modern`]).
//! * No `max_sane_readahead` (≤4.x capped windows by half the free + inactive memory), no
//!   EIO shrink (`ra_pages /= 4`), no blk-cgroup congestion, no VM_EXEC / VM_HUGEPAGE fault
//!   variants. Device read congestion is the view's [`PageCacheView::read_congested`].
//! * One [`FileRaState`] holds every version's fields, as the kernel's struct did; the
//!   2.6.20-only ones are grouped in [`LegacyRa`] and only [`legacy`] touches them.

pub mod legacy;
pub mod modern;
pub mod ondemand;

pub use legacy::Legacy;
pub use modern::Modern;
pub use ondemand::OnDemand;

/// 4 KiB pages.
pub const PAGE_SHIFT: u32 = 12;
/// `prev_pos` after open (the kernel's -1).
pub const NO_POS: u64 = u64::MAX;
/// `VM_MAX_READAHEAD` (128 KiB) in pages: the default `ra_pages` of a device.
pub const VM_MAX_READAHEAD_PAGES: u64 = 32;
/// `MMAP_LOTSAMISS`: mmap misses beyond which fault read-around stops.
pub const MMAP_LOTSAMISS: u32 = 100;
/// Most ranges one call returns: 2.6.20's current and ahead windows opened together, or
/// 2.6.23's sync window plus the async one that its own flag on the missing page triggers.
pub const MAX_RANGES: usize = 2;

/// 2.6.20 `RA_FLAG_MISS`: a page the windows should have brought in was missing.
pub const RA_FLAG_MISS: u32 = 1;
/// 2.6.20 `RA_FLAG_INCACHE`: readahead is off because the file is in the cache.
pub const RA_FLAG_INCACHE: u32 = 2;

/// What the read path's page-cache lookup found at the page it is about to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// Not in the page cache.
    Missing,
    /// In the page cache (uptodate or still being read).
    Cached,
    /// In the page cache with PG_readahead set, and not under writeback.
    Marked,
}

/// The VMA's access hint for fault readahead: [`crate::mm::mmap::VmHint`].
pub use crate::mm::mmap::VmHint;

/// The `posix_fadvise` advice that concerns readahead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advice {
    /// POSIX_FADV_NORMAL: back to the device's `ra_pages`.
    Normal,
    /// POSIX_FADV_SEQUENTIAL: twice the device's `ra_pages`.
    Sequential,
    /// POSIX_FADV_RANDOM: no readahead (how depends on the version).
    Random,
    /// POSIX_FADV_WILLNEED (and readahead(2)): read pages `[index, index + nr)` now.
    WillNeed { index: u64, nr: u64 },
}

/// Pages `[start, start + len)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RaRange {
    pub start: u64,
    pub len: u64,
}

impl RaRange {
    pub fn end(&self) -> u64 {
        self.start + self.len
    }
}

/// What a policy decided to read. Fixed size: no allocation per call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Readahead {
    ranges: [RaRange; MAX_RANGES],
    nr_ranges: u8,
    /// The page to flag PG_readahead; it is inside one of the ranges and was not cached.
    pub mark: Option<u64>,
    /// Clear PG_readahead on the page that triggered the call (the async entry does
    /// `ClearPageReadahead` before deciding anything).
    pub clear_mark: bool,
    /// The largest folio order to read the windows in (`ra->order` as
    /// `page_cache_ra_order` clamped it); 0: single pages.
    pub order: u8,
}

impl Readahead {
    pub const NONE: Readahead = Readahead {
        ranges: [RaRange { start: 0, len: 0 }; MAX_RANGES],
        nr_ranges: 0,
        mark: None,
        clear_mark: false,
        order: 0,
    };

    /// One window of `len` single pages from `start`, without a marker (unit tests of the
    /// engine's readahead).
    #[cfg(test)]
    pub(crate) fn single_window(start: u64, len: u64) -> Readahead {
        let mut r = Readahead::NONE;
        r.ranges[0] = RaRange { start, len };
        r.nr_ranges = 1;
        r
    }

    /// The ranges to read, disjoint and ascending.
    pub fn ranges(&self) -> &[RaRange] {
        &self.ranges[..self.nr_ranges as usize]
    }

    pub fn is_empty(&self) -> bool {
        self.nr_ranges == 0
    }

    /// Page `index` is inside one of the ranges.
    pub fn covers(&self, index: u64) -> bool {
        self.ranges().iter().any(|r| r.start <= index && index < r.end())
    }

    /// What is left of this decision from page `index` on, read in folios of order `order`
    /// at most: the part of a window whose reading stopped at `index` and goes on later.
    pub fn rest_from(&self, index: u64, order: u8) -> Readahead {
        let mut rest = Readahead { order, ..Readahead::NONE };
        for r in self.ranges().iter().filter(|r| r.end() > index) {
            let start = r.start.max(index);
            rest.ranges[rest.nr_ranges as usize] = RaRange { start, len: r.end() - start };
            rest.nr_ranges += 1;
        }
        rest.mark = self.mark.filter(|&m| m >= index);
        rest
    }

    /// Queues a readahead of `size` pages from `start` whose PG_readahead marker goes
    /// `async_size` pages before its end (`ra_submit` → `__do_page_cache_readahead`: pages
    /// beyond EOF are not read; the marker is set only on a page this readahead allocates,
    /// and not at all when `async_size` is 0). The part already covered by an earlier range
    /// of this call is left out. Returns whether any page of it was missing from the cache,
    /// the kernel's `actual > 0`; a window with nothing to read is not queued.
    fn submit<C: PageCacheView + ?Sized>(&mut self, cache: &C, start: u64, size: u64, async_size: u64) -> bool {
        let end = start.saturating_add(size).min(cache.i_size_pages());
        let from = match self.ranges().last() {
            Some(prev) => {
                debug_assert!(prev.start <= start, "ranges of one call are queued in ascending order");
                start.max(prev.end())
            }
            None => start,
        };
        if from >= end || cache.next_miss(from, end - from).is_none() {
            return false;
        }
        let n = self.nr_ranges as usize;
        debug_assert!(n < MAX_RANGES, "no policy queues more than MAX_RANGES windows per call");
        if n == MAX_RANGES {
            return false;
        }
        self.ranges[n] = RaRange { start: from, len: end - from };
        self.nr_ranges += 1;
        if async_size > 0 && async_size <= size {
            let mark = start + size - async_size;
            if from <= mark && mark < end && !cache.is_cached(mark) {
                self.mark = Some(mark);
            }
        }
        true
    }
}

/// The 2.6.20 fields of `file_ra_state`, used only by [`legacy`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LegacyRa {
    /// The ahead window `[ahead_start, ahead_start + ahead_size)`; `ahead_start == 0` means
    /// none, and then `ahead_size` holds the end of the last one (`reset_ahead_window`).
    pub ahead_start: u64,
    pub ahead_size: u64,
    /// The page readahead last handed to the reader (`prev_page`); `u64::MAX` (-1) after open.
    pub prev_page: u64,
    /// [`RA_FLAG_MISS`] | [`RA_FLAG_INCACHE`].
    pub flags: u32,
    /// Pages of consecutive readahead windows found fully cached.
    pub cache_hit: u64,
    /// Where the current read calls `page_cache_readahead` next (`do_generic_mapping_read`'s
    /// local `next_index`).
    pub next_index: u64,
}

/// Per-open-file readahead state: the kernel's `struct file_ra_state` (all versions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileRaState {
    /// First page of the last readahead window (2.6.20: of the current window).
    pub start: u64,
    /// Pages in that window.
    pub size: u64,
    /// The PG_readahead marker sits `async_size` pages before the window's end.
    pub async_size: u64,
    /// Maximum window in pages (`ra_pages`); 0 disables readahead.
    pub ra_pages: u64,
    /// Where the previous read(2) was, in bytes ([`NO_POS`] after open): the start of its last
    /// page in 2.6.23 (`prev_index`), the byte after it in 6.x (`prev_pos`).
    pub prev_pos: u64,
    /// mmap faults that missed the page cache (6.x saturates at 1000).
    pub mmap_miss: u32,
    /// The folio order of the last window (`ra->order`, 6.17+), on a mapping with large
    /// folios; 0 otherwise.
    pub order: u8,
    /// mmap faults that found their page without read-around (≤2.6.30).
    pub mmap_hit: u32,
    /// FMODE_RANDOM, set by POSIX_FADV_RANDOM (≥2.6.33).
    pub random: bool,
    /// The device's `bdi->ra_pages` (`read_ahead_kb` in pages), for FADV_NORMAL/SEQUENTIAL.
    pub bdi_ra_pages: u64,
    /// The device's `bdi->io_pages` (largest request in pages; 0 if unknown).
    pub io_pages: u64,
    pub legacy: LegacyRa,
}

impl FileRaState {
    /// `file_ra_state_init` at open: the device's window, no history.
    pub fn new(bdi_ra_pages: u64, io_pages: u64) -> Self {
        FileRaState {
            start: 0,
            size: 0,
            async_size: 0,
            ra_pages: bdi_ra_pages,
            prev_pos: NO_POS,
            mmap_miss: 0,
            order: 0,
            mmap_hit: 0,
            random: false,
            bdi_ra_pages,
            io_pages,
            legacy: LegacyRa {
                ahead_start: 0,
                ahead_size: 0,
                prev_page: u64::MAX,
                flags: 0,
                cache_hit: 0,
                next_index: 0,
            },
        }
    }

    /// The page of `prev_pos`; `u64::MAX` (-1) after open, so that `0 - prev_index == 1`.
    pub fn prev_index(&self) -> u64 {
        if self.prev_pos == NO_POS {
            u64::MAX
        } else {
            self.prev_pos >> PAGE_SHIFT
        }
    }

    /// The page the current window's PG_readahead marker was put on: the index at which the
    /// reader is expected back (`start + size - async_size`).
    pub fn mark_index(&self) -> u64 {
        self.start.wrapping_add(self.size).wrapping_sub(self.async_size)
    }
}

impl Default for FileRaState {
    fn default() -> Self {
        Self::new(VM_MAX_READAHEAD_PAGES, 0)
    }
}

/// What a policy may ask of the file's mapping: its page cache, its size and its device.
/// Every probe is bounded and allocation-free.
pub trait PageCacheView {
    /// Pages in the file (`i_size` rounded up); nothing at or beyond is read.
    fn i_size_pages(&self) -> u64;

    /// The page at `index` is in the page cache (uptodate or not).
    fn is_cached(&self, index: u64) -> bool;

    /// `page_cache_next_miss`: the first page in `[index, index + max)` that is not cached.
    fn next_miss(&self, index: u64, max: u64) -> Option<u64> {
        (index..index.saturating_add(max)).find(|&i| !self.is_cached(i))
    }

    /// `page_cache_prev_miss`: the last page not cached scanning down from `index` over at
    /// most `max` pages, `[index + 1 - max, index]`, not below page 0.
    fn prev_miss(&self, index: u64, max: u64) -> Option<u64> {
        let lo = index.saturating_add(1).saturating_sub(max);
        (lo..=index).rev().find(|&i| !self.is_cached(i))
    }

    /// `bdi_read_congested`: optional readahead is skipped while the device's read queue is
    /// full (2.6.20 ahead windows and read-around, 2.6.23 async readahead).
    fn read_congested(&self) -> bool {
        false
    }

    /// `mapping_large_folio_support`: readahead may allocate folios of order > 0.
    fn large_folios(&self) -> bool {
        false
    }

    /// Pages of the folio cached at `index` (1 if none is).
    fn folio_nr_pages(&self, _index: u64) -> u64 {
        1
    }
}

/// `get_init_ra_size`, unchanged from 2.6.20 to 6.18: the first window for a request of
/// `req` pages. Rounded up to a power of two, then ×4 when tiny, ×2 when small, else `max`
/// (with max 32: 1..2 pages → 4, 3..4 → 8, 5..8 → 16, more → 32).
pub fn get_init_ra_size(req: u64, max: u64) -> u64 {
    let n = req.next_power_of_two();
    if n <= max / 32 {
        4 * n
    } else if n <= max / 4 {
        2 * n
    } else {
        max
    }
}

/// `get_next_ra_size` (2.6.23–6.18): the window after one of `cur` pages, ×4 while below
/// max/16, else ×2, capped at `max`. (2.6.20's variant with the miss rule is in [`legacy`].)
pub fn get_next_ra_size(cur: u64, max: u64) -> u64 {
    let n = if cur < max / 16 { 4 * cur } else { 2 * cur };
    n.min(max)
}

/// A file readahead policy: the kernel's readahead entry points for one version.
pub trait FileReadahead {
    /// A read(2)/pread(2) of pages `[index, index + nr)` starts.
    fn read_begin(&mut self, ra: &mut FileRaState, index: u64, nr: u64);

    /// The read path reached page `index` with `req` pages of the request left (`index`
    /// included) and the page-cache lookup returned `found`.
    fn read_page<C: PageCacheView + ?Sized>(
        &mut self,
        ra: &mut FileRaState,
        cache: &C,
        index: u64,
        req: u64,
        found: Lookup,
    ) -> Readahead;

    /// The read copied pages `[index, index + nr)` (`nr` may be short of the request at EOF).
    fn read_end(&mut self, ra: &mut FileRaState, index: u64, nr: u64);

    /// A fault on a file mapping at page `pgoff` (`filemap_nopage` / `filemap_fault`).
    fn fault<C: PageCacheView + ?Sized>(
        &mut self,
        ra: &mut FileRaState,
        cache: &C,
        pgoff: u64,
        found: Lookup,
        hint: VmHint,
    ) -> Readahead;

    /// `posix_fadvise` on the file (`generic_fadvise`).
    fn fadvise<C: PageCacheView + ?Sized>(&mut self, ra: &mut FileRaState, cache: &C, advice: Advice) -> Readahead;
}

crate::registry::registry! {
    /// The closed set of policies, for dispatch without `Box<dyn>`.
    #[derive(Clone, Copy, Debug)]
    pub enum FileRa: FileReadahead {
        fn read_begin(&mut self, ra: &mut FileRaState, index: u64, nr: u64);
        fn read_page<C: ?Sized + PageCacheView>(
            &mut self,
            ra: &mut FileRaState,
            cache: &C,
            index: u64,
            req: u64,
            found: Lookup,
        ) -> Readahead;
        fn read_end(&mut self, ra: &mut FileRaState, index: u64, nr: u64);
        fn fault<C: ?Sized + PageCacheView>(
            &mut self,
            ra: &mut FileRaState,
            cache: &C,
            pgoff: u64,
            found: Lookup,
            hint: VmHint,
        ) -> Readahead;
        fn fadvise<C: ?Sized + PageCacheView>(&mut self, ra: &mut FileRaState, cache: &C, advice: Advice) -> Readahead;
    }

    /// Every file readahead policy, by the name scenarios use.
    pub const REGISTRY = [
        Legacy => "legacy-2.6.20", Legacy,
            "2.6.20 current + ahead windows, called on every read; shrinks after misses, \
             off after 256 cached pages",
            Legacy;
        OnDemand => "ondemand-2.6.23", OnDemand,
            "2.6.23 on-demand readahead: sync on a miss, async on the PG_readahead page, one window",
            OnDemand { seed_patch: false };
        OnDemandMm1 => "ondemand-2.6.22-mm1", OnDemand,
            "the on-demand patch as posted (seed 004, 2.6.22-rc1-mm1): as ondemand-2.6.23 but a \
             flagged page without state reads 4x the initial window",
            OnDemand { seed_patch: true };
        Modern => "modern", Modern,
            "5.x-6.18 on-demand readahead with context readahead from cached history, \
             io_pages-sized large reads and FADV_RANDOM mode",
            Modern;
    ];
}

/// `filemap_nopage`'s read-around on a miss (2.6.20, kept by 2.6.23's `filemap_fault`),
/// shared by [`legacy`] and [`ondemand`]: the miss counts in `mmap_miss`; unless misses
/// outnumber hits by more than MMAP_LOTSAMISS, `ra_pages` pages centred on the fault are
/// read (no flag, window untouched, skipped on a congested device). Past that limit the
/// fault reads its page alone and counts an `mmap_hit`, as one that found its page does.
fn read_around_2_6<C: PageCacheView + ?Sized>(ra: &mut FileRaState, cache: &C, out: &mut Readahead, pgoff: u64) {
    ra.mmap_miss = ra.mmap_miss.saturating_add(1);
    if ra.mmap_miss > ra.mmap_hit.saturating_add(MMAP_LOTSAMISS) {
        ra.mmap_hit = ra.mmap_hit.saturating_add(1);
        return;
    }
    let n = ra.ra_pages;
    if n > 0 && !cache.read_congested() {
        out.submit(cache, pgoff.saturating_sub(n / 2), n, 0);
    }
}

/// `generic_fadvise` before 2.6.33, shared by [`legacy`] and [`ondemand`]: FADV_RANDOM sets
/// `ra_pages` to 0, WILLNEED reads the whole range (`force_page_cache_readahead`; the
/// kernel's `max_sane_readahead` cap by free memory is not modelled) without touching the
/// window.
fn fadvise_sets_ra_pages<C: PageCacheView + ?Sized>(ra: &mut FileRaState, cache: &C, advice: Advice) -> Readahead {
    let mut out = Readahead::NONE;
    match advice {
        Advice::Normal => ra.ra_pages = ra.bdi_ra_pages,
        Advice::Sequential => ra.ra_pages = 2 * ra.bdi_ra_pages,
        Advice::Random => ra.ra_pages = 0,
        Advice::WillNeed { index, nr } => {
            out.submit(cache, index, nr, 0);
        }
    }
    out
}

/// A fake engine for the policies' tests: the page cache of one file as two bitmaps, and
/// the read, fault and fadvise loops of the module docs.
#[cfg(test)]
pub(crate) mod testkit {
    use super::*;

    pub struct FakeCache {
        pub cached: Vec<bool>,
        pub marked: Vec<bool>,
        pub congested: bool,
    }

    impl FakeCache {
        /// A file of `nr_pages` pages, none cached.
        pub fn new(nr_pages: u64) -> FakeCache {
            let n = nr_pages as usize;
            FakeCache { cached: vec![false; n], marked: vec![false; n], congested: false }
        }

        pub fn fill(&mut self, range: std::ops::Range<u64>) {
            for i in range {
                self.cached[i as usize] = true;
            }
        }
    }

    impl PageCacheView for FakeCache {
        fn i_size_pages(&self) -> u64 {
            self.cached.len() as u64
        }
        fn is_cached(&self, index: u64) -> bool {
            self.cached.get(index as usize).copied().unwrap_or(false)
        }
        fn read_congested(&self) -> bool {
            self.congested
        }
    }

    /// One I/O decision seen by the fake engine.
    #[derive(Debug, PartialEq, Eq)]
    pub enum Ev {
        /// The policy, called at page `at`, read `windows` (`(start, end)`, half-open) and
        /// flagged `mark` PG_readahead.
        Ra { at: u64, windows: Vec<(u64, u64)>, mark: Option<u64> },
        /// The page was still missing after readahead and was read alone.
        Single(u64),
    }

    pub fn ra(at: u64, windows: &[(u64, u64)], mark: Option<u64>) -> Ev {
        Ev::Ra { at, windows: windows.to_vec(), mark }
    }

    pub fn singles(pages: std::ops::RangeInclusive<u64>) -> Vec<Ev> {
        pages.map(Ev::Single).collect()
    }

    pub struct Sim {
        pub policy: FileRa,
        pub ra: FileRaState,
        pub cache: FakeCache,
    }

    impl Sim {
        /// A cold file of `nr_pages` pages on a device with `ra_pages` = 32, no io_pages.
        pub fn new(policy: &str, nr_pages: u64) -> Sim {
            let policy = (find(policy).expect("registered policy").build)();
            Sim { policy, ra: FileRaState::new(VM_MAX_READAHEAD_PAGES, 0), cache: FakeCache::new(nr_pages) }
        }

        pub fn lookup(&self, i: u64) -> Lookup {
            match (self.cache.cached[i as usize], self.cache.marked[i as usize]) {
                (false, _) => Lookup::Missing,
                (true, false) => Lookup::Cached,
                (true, true) => Lookup::Marked,
            }
        }

        fn apply(&mut self, at: u64, out: &Readahead, log: &mut Vec<Ev>) {
            if out.clear_mark {
                self.cache.marked[at as usize] = false;
            }
            let mut allocated = Vec::new();
            for r in out.ranges() {
                for i in r.start..r.end() {
                    if !self.cache.cached[i as usize] {
                        self.cache.cached[i as usize] = true;
                        allocated.push(i);
                    }
                }
            }
            if let Some(m) = out.mark {
                assert!(allocated.contains(&m), "mark {m} is not on a page this readahead allocated");
                self.cache.marked[m as usize] = true;
            }
            if !out.is_empty() {
                let windows = out.ranges().iter().map(|r| (r.start, r.end())).collect();
                log.push(Ev::Ra { at, windows, mark: out.mark });
            } else {
                assert_eq!(out.mark, None);
            }
        }

        fn read_alone_if_missing(&mut self, i: u64, log: &mut Vec<Ev>) {
            if !self.cache.cached[i as usize] {
                self.cache.cached[i as usize] = true;
                log.push(Ev::Single(i));
            }
        }

        /// A read(2) of pages `[index, index + nr)`.
        pub fn read(&mut self, index: u64, nr: u64) -> Vec<Ev> {
            let mut log = Vec::new();
            self.policy.read_begin(&mut self.ra, index, nr);
            for i in index..index + nr {
                let found = self.lookup(i);
                let out = self.policy.read_page(&mut self.ra, &self.cache, i, index + nr - i, found);
                self.apply(i, &out, &mut log);
                self.read_alone_if_missing(i, &mut log);
            }
            self.policy.read_end(&mut self.ra, index, nr);
            log
        }

        /// One-page reads of each page in turn.
        pub fn reads(&mut self, pages: impl IntoIterator<Item = u64>) -> Vec<Ev> {
            pages.into_iter().flat_map(|i| self.read(i, 1)).collect()
        }

        pub fn fault(&mut self, pgoff: u64, hint: VmHint) -> Vec<Ev> {
            let mut log = Vec::new();
            let found = self.lookup(pgoff);
            let out = self.policy.fault(&mut self.ra, &self.cache, pgoff, found, hint);
            self.apply(pgoff, &out, &mut log);
            self.read_alone_if_missing(pgoff, &mut log);
            log
        }

        pub fn fadvise(&mut self, advice: Advice) -> Vec<Ev> {
            let mut log = Vec::new();
            let out = self.policy.fadvise(&mut self.ra, &self.cache, advice);
            let at = if let Advice::WillNeed { index, .. } = advice { index } else { 0 };
            self.apply(at, &out, &mut log);
            log
        }

        /// Reclaim drops pages `range` (their PG_readahead flags go with them).
        pub fn evict(&mut self, range: std::ops::Range<u64>) {
            for i in range {
                self.cache.cached[i as usize] = false;
                self.cache.marked[i as usize] = false;
            }
        }

        /// Pages `range` are in the cache already (read through another file descriptor).
        pub fn fill(&mut self, range: std::ops::Range<u64>) {
            self.cache.fill(range);
        }

        /// The window as `(start, size, async_size)`.
        pub fn window(&self) -> (u64, u64, u64) {
            (self.ra.start, self.ra.size, self.ra.async_size)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testkit::*;
    use super::*;

    #[test]
    fn registry_names_find_and_build_each_policy() {
        assert_eq!(names(), "legacy-2.6.20, ondemand-2.6.23, ondemand-2.6.22-mm1, modern");
        assert!(find("cluster").is_none());
        assert!(matches!((find("legacy-2.6.20").unwrap().build)(), FileRa::Legacy(_)));
        assert!(matches!((find("ondemand-2.6.23").unwrap().build)(), FileRa::OnDemand(_)));
        assert!(matches!((find("modern").unwrap().build)(), FileRa::Modern(_)));
        assert!(REGISTRY.iter().all(|r| !r.description.is_empty()));
    }

    #[test]
    fn window_sizes_by_hand() {
        // get_init_ra_size with max 32: roundup_pow_of_two(req) = n;
        // n <= 32/32 = 1 -> 4n; n <= 32/4 = 8 -> 2n; else 32.
        let init: Vec<u64> = [1, 2, 3, 4, 5, 8, 9, 32, 100].iter().map(|&r| get_init_ra_size(r, 32)).collect();
        assert_eq!(init, vec![4, 4, 8, 8, 16, 16, 32, 32, 32]);
        // With max 64 (FADV_SEQUENTIAL): 1 -> n=1 <= 2 -> 4; 2 -> 2 <= 2 -> 8; 4 -> 4 <= 16 -> 8.
        assert_eq!(get_init_ra_size(2, 64), 8);
        assert_eq!(get_init_ra_size(4, 64), 8);
        assert_eq!(get_init_ra_size(32, 64), 64);
        // get_next_ra_size with max 32: cur < 32/16 = 2 -> 4 cur, else 2 cur, capped at 32.
        let next: Vec<u64> = [1, 2, 3, 4, 8, 16, 24, 32].iter().map(|&c| get_next_ra_size(c, 32)).collect();
        assert_eq!(next, vec![4, 4, 6, 8, 16, 32, 32, 32]);
    }

    #[test]
    fn every_policy_opens_a_four_page_window_on_a_first_one_page_read_at_zero() {
        // init(1, 32) = 4 in every version. 2.6.20 has no marker; 2.6.23 and 6.18 set
        // async_size = 4 - 1 = 3 and flag page 0 + 4 - 3 = 1.
        for (name, mark) in [("legacy-2.6.20", None), ("ondemand-2.6.23", Some(1)), ("modern", Some(1))] {
            let mut s = Sim::new(name, 1024);
            assert_eq!(s.read(0, 1), vec![ra(0, &[(0, 4)], mark)], "{name}");
        }
    }

    #[test]
    fn submit_clips_to_eof_skips_cached_windows_and_never_marks_a_cached_page() {
        let mut cache = FakeCache::new(10);
        cache.fill(4..6);
        let mut out = Readahead::NONE;
        // [8, 16) clipped to the 10-page file: [8, 10); marker 16 - 4 = 12 is beyond EOF.
        assert!(out.submit(&cache, 8, 8, 4));
        assert_eq!(out.ranges(), &[RaRange { start: 8, len: 2 }]);
        assert_eq!(out.mark, None);
        // [4, 6) is all cached: nothing to read, nothing queued.
        let mut out = Readahead::NONE;
        assert!(!out.submit(&cache, 4, 2, 1));
        assert!(out.is_empty());
        // [2, 8) with marker at 8 - 3 = 5: page 5 is cached, so no marker (not allocated here).
        assert!(out.submit(&cache, 2, 6, 3));
        assert_eq!(out.mark, None);
        // A second window overlapping the first is trimmed to start where the first ended.
        assert!(out.submit(&cache, 3, 6, 0));
        assert_eq!(out.ranges(), &[RaRange { start: 2, len: 6 }, RaRange { start: 8, len: 1 }]);
    }

    #[test]
    fn prev_miss_and_next_miss_scan_the_stated_bounds() {
        let mut cache = FakeCache::new(64);
        cache.fill(10..20);
        // Down from 19 over 32 pages: 19..10 cached, 9 missing.
        assert_eq!(cache.prev_miss(19, 32), Some(9));
        // Down from 19 over 5 pages [15, 19]: all cached.
        assert_eq!(cache.prev_miss(19, 5), None);
        // Up from 10 over 10 pages [10, 20): all cached; over 11 pages page 20 is missing.
        assert_eq!(cache.next_miss(10, 10), None);
        assert_eq!(cache.next_miss(10, 11), Some(20));
        cache.fill(0..10);
        // Down from 19 over 32 pages reaches page 0 with everything cached.
        assert_eq!(cache.prev_miss(19, 32), None);
    }
}
