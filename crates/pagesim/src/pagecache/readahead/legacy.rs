//! The 2.6.20 two-window readahead.
//!
//! Models mm/readahead.c of 2.6.20: `page_cache_readahead`, `get_next_ra_size` (2.6.20's),
//! `make_ahead_window`, `blockable_page_cache_readahead`,
//! `check_ra_success`, `ra_off`, `reset_ahead_window`, `handle_ra_miss`; and its callers:
//! `do_generic_mapping_read` (mm/filemap.c: one call per request, at `next_index`, then
//! `handle_ra_miss` for a page not found), `filemap_nopage` (read-around, `mmap_hit` /
//! `mmap_miss`) and `sys_fadvise64_64` (mm/fadvise.c). `get_init_ra_size`, the read-around
//! and the fadvise rules are shared with 2.6.23 in readahead/mod.rs (`get_init_ra_size`,
//! `read_around_2_6`, `fadvise_sets_ra_pages`).
//!
//! ```text
//!   ----|================|================|-----
//!       ^start           ^ahead_start     ^ahead_start+ahead_size
//!        current window    ahead window (I/O in flight while the reader walks the current)
//! ```
//!
//! The reader walks the current window; when it enters the ahead window, that becomes the
//! current window and the next ahead window is read. Nothing looks back: a readahead page
//! evicted before the reader got to it is found missing, `handle_ra_miss` sets
//! RA_FLAG_MISS, the read path reads that page alone, and the next ahead window gets the
//! current window's size less 2 pages instead of twice it (not below 16 KiB). This is the readahead thrashing the on-demand patch (seed 004) measures:
//! under memory pressure every evicted page costs a one-page synchronous read and the windows
//! shrink toward 4 pages, 16 KiB, the seed's minimum average I/O size for 2.6.20.
//!
//! A fully cached window counts its pages in `cache_hit`; 256 of them in a row turn
//! readahead off (RA_FLAG_INCACHE) until the next miss.

use super::{
    fadvise_sets_ra_pages, get_init_ra_size, read_around_2_6, Advice, FileRaState, FileReadahead, Lookup,
    PageCacheView, Readahead, VmHint, RA_FLAG_INCACHE, RA_FLAG_MISS,
};

/// `VM_MIN_READAHEAD` (16 KiB) in pages: the floor a window shrinks to after misses.
pub const VM_MIN_READAHEAD_PAGES: u64 = 4;
/// `VM_MAX_CACHE_HIT`: pages of consecutive fully cached windows that turn readahead off.
pub const VM_MAX_CACHE_HIT: u64 = 256;

#[derive(Clone, Copy, Debug, Default)]
pub struct Legacy;

/// `get_next_ra_size` (2.6.20): after a miss the window loses 2 pages (not below 16 KiB) and
/// the flag is consumed; otherwise ×4 while below max/16, else ×2; capped at `ra_pages`.
fn get_next_ra_size(ra: &mut FileRaState) -> u64 {
    let max = ra.ra_pages;
    let cur = ra.size;
    let n = if ra.legacy.flags & RA_FLAG_MISS != 0 {
        ra.legacy.flags &= !RA_FLAG_MISS;
        cur.saturating_sub(2).max(VM_MIN_READAHEAD_PAGES)
    } else if cur < max / 16 {
        4 * cur
    } else {
        2 * cur
    };
    n.min(max)
}

/// `reset_ahead_window`: drop the ahead window but keep where it ended in `ahead_size`, so
/// that the clamp of `prev_page` below still bounds the reader by it.
fn reset_ahead_window(ra: &mut FileRaState) {
    ra.legacy.ahead_size += ra.legacy.ahead_start;
    ra.legacy.ahead_start = 0;
}

/// `ra_off`: no window until the next sequential access starts one.
fn ra_off(ra: &mut FileRaState) {
    ra.start = 0;
    ra.size = 0;
    ra.legacy.flags = 0;
    reset_ahead_window(ra);
}

/// `handle_ra_miss`: a page the windows should have brought in is not in the cache.
fn handle_ra_miss(ra: &mut FileRaState) {
    ra.legacy.flags |= RA_FLAG_MISS;
    ra.legacy.flags &= !RA_FLAG_INCACHE;
    ra.legacy.cache_hit = 0;
}

/// `check_ra_success`: false when readahead just turned itself off.
fn check_ra_success(ra: &mut FileRaState, nr_to_read: u64, read_any: bool) -> bool {
    if read_any {
        ra.legacy.cache_hit = 0;
        return true;
    }
    ra.legacy.cache_hit += nr_to_read;
    if ra.legacy.cache_hit >= VM_MAX_CACHE_HIT {
        ra_off(ra);
        ra.legacy.flags |= RA_FLAG_INCACHE;
        return false;
    }
    true
}

/// `blockable_page_cache_readahead`: a non-blocking window is skipped on a congested device.
fn blockable<C: PageCacheView + ?Sized>(
    ra: &mut FileRaState,
    cache: &C,
    out: &mut Readahead,
    offset: u64,
    nr: u64,
    block: bool,
) -> bool {
    if !block && cache.read_congested() {
        return false;
    }
    let read_any = out.submit(cache, offset, nr, 0);
    check_ra_success(ra, nr, read_any)
}

/// `make_ahead_window`: the next window right after the current one. It may block on the
/// device only if forced or if the reader is already inside it.
fn make_ahead_window<C: PageCacheView + ?Sized>(
    ra: &mut FileRaState,
    cache: &C,
    out: &mut Readahead,
    force: bool,
) -> bool {
    ra.legacy.ahead_size = get_next_ra_size(ra);
    ra.legacy.ahead_start = ra.start + ra.size;
    let block = force || ra.legacy.prev_page >= ra.legacy.ahead_start;
    let ok = blockable(ra, cache, out, ra.legacy.ahead_start, ra.legacy.ahead_size, block);
    if !ok && !force {
        reset_ahead_window(ra);
    }
    ok
}

/// `page_cache_readahead`: called by the read path for a request of `req` pages at
/// `offset`; returns the page at which the read path must call again (`next_index`).
fn page_cache_readahead<C: PageCacheView + ?Sized>(
    ra: &mut FileRaState,
    cache: &C,
    out: &mut Readahead,
    mut offset: u64,
    mut req: u64,
) -> u64 {
    // A read that starts on the page the last one ended on: that page was seen already.
    if offset == ra.legacy.prev_page {
        req = req.saturating_sub(1);
        if req != 0 {
            offset += 1;
        }
    }
    // After open prev_page is -1, so a first read at page 0 counts as sequential.
    let sequential = offset == ra.legacy.prev_page.wrapping_add(1);
    ra.legacy.prev_page = offset;
    let max = ra.ra_pages;
    let newsize = req.min(max);
    if newsize == 0 || ra.legacy.flags & RA_FLAG_INCACHE != 0 {
        return ra.legacy.prev_page + 1;
    }
    ra.legacy.prev_page += newsize - 1;

    if sequential && ra.size == 0 {
        // Start of a stream: the first window; a request of a whole window or more gets the
        // ahead window at once, to have two I/Os in flight.
        ra.size = get_init_ra_size(newsize, max);
        ra.start = offset;
        if blockable(ra, cache, out, offset, ra.size, true) && req >= max {
            make_ahead_window(ra, cache, out, true);
        }
        return ra.legacy.prev_page + 1;
    }
    if !sequential {
        // Random: windows off, read just the request.
        ra_off(ra);
        blockable(ra, cache, out, offset, newsize, true);
        return ra.legacy.prev_page + 1;
    }
    let mut clamp = false;
    if ra.legacy.ahead_start == 0 && !make_ahead_window(ra, cache, out, false) {
        clamp = true;
    } else if ra.legacy.prev_page >= ra.legacy.ahead_start {
        // The reader entered the ahead window: it becomes the current one.
        ra.start = ra.legacy.ahead_start;
        ra.size = ra.legacy.ahead_size;
        make_ahead_window(ra, cache, out, false);
        clamp = true;
    }
    if clamp {
        // Call back no later than the first page after the ahead window (the kernel's
        // unsigned arithmetic: with no window at all this bound is -1 and clamps nothing).
        let end = (ra.legacy.ahead_start + ra.legacy.ahead_size).wrapping_sub(1);
        ra.legacy.prev_page = ra.legacy.prev_page.min(end);
    }
    ra.legacy.prev_page + 1
}

impl FileReadahead for Legacy {
    fn read_begin(&mut self, ra: &mut FileRaState, index: u64, _nr: u64) {
        ra.legacy.next_index = index;
    }

    /// `do_generic_mapping_read`: readahead at `next_index`, then `handle_ra_miss` if the
    /// page is still not there (the caller then reads it alone).
    fn read_page<C: PageCacheView + ?Sized>(
        &mut self,
        ra: &mut FileRaState,
        cache: &C,
        index: u64,
        req: u64,
        found: Lookup,
    ) -> Readahead {
        let mut out = Readahead::NONE;
        if index == ra.legacy.next_index {
            ra.legacy.next_index = page_cache_readahead(ra, cache, &mut out, index, req);
        }
        if found == Lookup::Missing && !out.covers(index) {
            handle_ra_miss(ra);
        }
        out
    }

    /// `prev_page` was advanced by `page_cache_readahead` itself.
    fn read_end(&mut self, _ra: &mut FileRaState, _index: u64, _nr: u64) {}

    /// `filemap_nopage`. VM_RAND_READ: the page alone. VM_SEQ_READ: `page_cache_readahead`
    /// for one page on every fault. Otherwise a miss does read-around, `ra_pages` pages
    /// centred on the fault, unless misses outnumber hits by more than MMAP_LOTSAMISS. Every
    /// fault that ends up finding its page without read-around counts an `mmap_hit`.
    fn fault<C: PageCacheView + ?Sized>(
        &mut self,
        ra: &mut FileRaState,
        cache: &C,
        pgoff: u64,
        found: Lookup,
        hint: VmHint,
    ) -> Readahead {
        let mut out = Readahead::NONE;
        if pgoff >= cache.i_size_pages() {
            return out;
        }
        match hint {
            VmHint::Random => {}
            VmHint::Sequential => {
                page_cache_readahead(ra, cache, &mut out, pgoff, 1);
                if found == Lookup::Missing && !out.covers(pgoff) {
                    handle_ra_miss(ra);
                }
            }
            // Exec mappings read around like any other before 6.17.
            VmHint::Normal | VmHint::Exec { .. } if found == Lookup::Missing => {
                read_around_2_6(ra, cache, &mut out, pgoff);
                return out;
            }
            VmHint::Normal | VmHint::Exec { .. } => {}
        }
        ra.mmap_hit = ra.mmap_hit.saturating_add(1);
        out
    }

    fn fadvise<C: PageCacheView + ?Sized>(&mut self, ra: &mut FileRaState, cache: &C, advice: Advice) -> Readahead {
        fadvise_sets_ra_pages(ra, cache, advice)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{ra, singles, Ev, Sim};
    use super::*;

    const P: &str = "legacy-2.6.20";

    #[test]
    fn one_page_sequential_reads_from_zero() {
        let mut s = Sim::new(P, 1024);
        // read 0: prev_page -1 -> sequential, no window -> current [0, init(1)=4).
        // read 1: no ahead window -> ahead = next(4): 4 < 32/16? no -> 8, at 0+4: [4, 12).
        // read 4: prev_page 4 >= ahead_start 4 -> current = [4, 12), ahead next(8)=16 at 12.
        // read 12: current [12, 28), ahead next(16)=32 at 28: [28, 60).
        // read 28: current [28, 60), ahead min(2*32, 32)=32 at 60: [60, 92).
        let expected = vec![
            ra(0, &[(0, 4)], None),
            ra(1, &[(4, 12)], None),
            ra(4, &[(12, 28)], None),
            ra(12, &[(28, 60)], None),
            ra(28, &[(60, 92)], None),
        ];
        assert_eq!(s.reads(0..=28), expected);
        assert_eq!((s.ra.start, s.ra.size, s.ra.legacy.ahead_start, s.ra.legacy.ahead_size), (28, 32, 60, 32));
    }

    #[test]
    fn sixteen_kib_sequential_reads() {
        let mut s = Sim::new(P, 1024);
        let mut got = Vec::new();
        for i in (0..32).step_by(4) {
            got.extend(s.read(i, 4));
        }
        // [0,4): current [0, init(4)=8) (4 <= 32/4 -> 2*4); next call at page 4.
        // [4,8): ahead next(8)=16 at 8: [8, 24); prev_page 7 < 8.
        // [8,12): prev_page 11 >= 8 -> current [8, 24), ahead next(16)=32 at 24: [24, 56).
        // [12..24): prev_page 15, 19, 23 < 24: nothing.
        // [24,28): prev_page 27 >= 24 -> current [24, 56), ahead 32 at 56: [56, 88).
        let expected =
            vec![ra(0, &[(0, 8)], None), ra(4, &[(8, 24)], None), ra(8, &[(24, 56)], None), ra(24, &[(56, 88)], None)];
        assert_eq!(got, expected);
    }

    #[test]
    fn random_reads_read_just_the_request_and_kill_the_windows() {
        let mut s = Sim::new(P, 1024);
        // read 100 first: 100 != -1 + 1 -> random: ra_off, read min(1, 32) = 1 page.
        // read 500: 500 != 101 -> random again.
        // read 501: sequential with no window -> current [501, 505).
        // read 502: ahead next(4)=8 at 505: [505, 513).
        let expected = vec![
            ra(100, &[(100, 101)], None),
            ra(500, &[(500, 501)], None),
            ra(501, &[(501, 505)], None),
            ra(502, &[(505, 513)], None),
        ];
        assert_eq!(s.reads([100, 500, 501, 502]), expected);
        // A seek back into the middle of nowhere: windows off again, one page read.
        assert_eq!(s.reads([300]), vec![ra(300, &[(300, 301)], None)]);
        assert_eq!((s.ra.start, s.ra.size, s.ra.legacy.ahead_start), (0, 0, 0));
    }

    #[test]
    fn oversize_read_opens_both_windows_and_calls_back_at_the_ahead_window() {
        let mut s = Sim::new(P, 1024);
        // read [0, 64): newsize = min(64, 32) = 32, prev_page 0 + 31 = 31; current
        // [0, init(32)=32); req 64 >= 32 -> forced ahead next(32)=32 at 32: [32, 64); next_index 32.
        // page 32: 32 == 31 + 1 sequential, prev_page 32 + 31 = 63 >= ahead_start 32 ->
        // current [32, 64), ahead 32 at 64: [64, 96); prev_page min(63, 64 + 32 - 1) = 63.
        let expected = vec![ra(0, &[(0, 32), (32, 64)], None), ra(32, &[(64, 96)], None)];
        assert_eq!(s.read(0, 64), expected);
        assert_eq!((s.ra.start, s.ra.size, s.ra.legacy.ahead_start, s.ra.legacy.prev_page), (32, 32, 64, 63));

        // A request of exactly ra_pages also gets both: req 32 >= max 32.
        let mut s = Sim::new(P, 1024);
        assert_eq!(s.read(0, 32), vec![ra(0, &[(0, 32), (32, 64)], None)]);
    }

    #[test]
    fn unaligned_reads_overlapping_one_page_stay_sequential() {
        let mut s = Sim::new(P, 1024);
        // 16 KiB reads at byte 2048 + 16 KiB * k cover pages [4k, 4k + 5): each starts on the
        // page the previous one ended on.
        // [0,5): current [0, init(5) = 16) (8 <= 32/4 -> 2 * 8); prev_page 4.
        // [4,9): offset 4 == prev_page: req 5 - 1 = 4 from page 5; 5 == 4 + 1 sequential;
        //   prev_page 8; ahead next(16) = 32 at 16: [16, 48).
        // [8,13): the same skip: prev_page 12 < 16. [12,17): prev_page 16 >= 16: current
        //   [16, 48), ahead 32 at 48: [48, 80).
        let mut got = Vec::new();
        for k in 0..4 {
            got.extend(s.read(4 * k, 5));
        }
        assert_eq!(got, vec![ra(0, &[(0, 16)], None), ra(4, &[(16, 48)], None), ra(12, &[(48, 80)], None)]);
    }

    #[test]
    fn a_congested_device_defers_the_ahead_window_until_the_reader_needs_it() {
        let mut s = Sim::new(P, 1024);
        assert_eq!(s.reads([0]), vec![ra(0, &[(0, 4)], None)]);
        s.cache.congested = true;
        // reads 1..3: ahead window [4, 12) would not block (prev_page < 4): skipped on the
        // congested device, the ahead window reset each time.
        // read 4: prev_page 4 >= 4, the reader needs it: it blocks, [4, 12) is read; then the
        // reader is in it: current [4, 12), the next ahead [12, 28) is non-blocking: skipped.
        assert_eq!(s.reads(1..=4), vec![ra(4, &[(4, 12)], None)]);
        assert_eq!((s.ra.start, s.ra.size, s.ra.legacy.ahead_start), (4, 8, 0));
        // No longer congested: read 5 opens the ahead window next(8) = 16 at 12.
        s.cache.congested = false;
        assert_eq!(s.reads([5]), vec![ra(5, &[(12, 28)], None)]);
    }

    #[test]
    fn evicted_readahead_pages_are_read_one_by_one_and_shrink_the_windows() {
        let mut s = Sim::new(P, 1024);
        s.reads(0..=4);
        // Now current [4, 12), ahead [12, 28), pages 0..28 cached. Reclaim takes 5..28.
        s.evict(5..28);
        let mut expected = Vec::new();
        // reads 5..=11: prev_page < ahead_start 12, no readahead; the page is missing ->
        // handle_ra_miss (RA_FLAG_MISS) and a one-page read each.
        expected.extend(singles(5..=11));
        // read 12: enters the ahead window: current [12, 28); ahead size with MISS set:
        // max(16 - 2, 4) = 14 at 28: [28, 42). Page 12 itself is gone: MISS again, read alone.
        expected.push(ra(12, &[(28, 42)], None));
        expected.extend(singles(12..=27));
        // read 28: current [28, 42) (size 14); MISS -> ahead max(14 - 2, 4) = 12: [42, 54).
        expected.push(ra(28, &[(42, 54)], None));
        // read 42: current [42, 54); no miss since -> ahead 2 * 12 = 24: [54, 78).
        expected.push(ra(42, &[(54, 78)], None));
        assert_eq!(s.reads(5..=42), expected);
    }

    #[test]
    fn a_miss_takes_two_pages_off_the_next_window_down_to_16_kib() {
        // Without MISS: 16 -> 2 * 16 = 32.
        let mut ra = FileRaState { size: 16, ..FileRaState::default() };
        assert_eq!(get_next_ra_size(&mut ra), 32);
        // With MISS: 16 -> 16 - 2 = 14, and the flag is consumed.
        ra.legacy.flags = RA_FLAG_MISS;
        assert_eq!(get_next_ra_size(&mut ra), 14);
        assert_eq!(ra.legacy.flags, 0);
        // 5 -> max(3, 4) = 4; 4 -> max(2, 4) = 4: the 16 KiB floor.
        for size in [5, 4] {
            ra.size = size;
            ra.legacy.flags = RA_FLAG_MISS;
            assert_eq!(get_next_ra_size(&mut ra), VM_MIN_READAHEAD_PAGES);
        }
    }

    #[test]
    fn readahead_turns_off_after_256_cached_pages_until_a_miss() {
        let mut s = Sim::new(P, 1024);
        s.fill(0..1024);
        // Every window is fully cached; cache_hit adds the window sizes:
        // read 0: current 4 -> 4; ahead windows at reads 1, 4, 12 of 8, 16, 32 -> 12, 28, 60;
        // then 32 more at reads 28, 60, 92, 124, 156, 188 -> 92, 124, 156, 188, 220, 252.
        assert_eq!(s.reads(0..=219), vec![]);
        assert_eq!((s.ra.legacy.cache_hit, s.ra.legacy.flags, s.ra.size), (252, 0, 32));
        // read 220 enters [220, 252): ahead [252, 284) is cached too: 252 + 32 = 284 >= 256
        // -> ra_off and RA_FLAG_INCACHE.
        assert_eq!(s.reads([220]), vec![]);
        assert_eq!((s.ra.legacy.cache_hit, s.ra.legacy.flags, s.ra.size), (284, RA_FLAG_INCACHE, 0));
        // reset_ahead_window keeps the end of the dropped ahead window: 252 + 32.
        assert_eq!((s.ra.legacy.ahead_start, s.ra.legacy.ahead_size), (0, 284));
        // Off: even a miss gets no readahead; the page is read alone and handle_ra_miss
        // clears INCACHE. The next read, sequential with no window, starts [501, 505).
        s.evict(500..503);
        assert_eq!(s.reads([500]), vec![Ev::Single(500)]);
        assert_eq!(s.ra.legacy.flags & RA_FLAG_INCACHE, 0);
        assert_eq!(s.reads([501]), vec![ra(501, &[(501, 505)], None)]);
    }

    #[test]
    fn fadvise_random_sequential_willneed() {
        let mut s = Sim::new(P, 1024);
        // RANDOM: ra_pages = 0 -> newsize = min(req, 0) = 0 at every page: no readahead,
        // each page read alone, called back at the next page.
        assert_eq!(s.fadvise(Advice::Random), vec![]);
        assert_eq!(s.read(0, 4), singles(0..=3));
        assert_eq!(s.ra.size, 0);

        let mut s = Sim::new(P, 1024);
        // SEQUENTIAL: ra_pages = 2 * 32 = 64. 16 KiB reads: init(4, 64) = 8 (4 <= 64/4);
        // then next: 8 < 64/16 = 4? no -> 16, 32, and 64 where max 32 gave 32.
        s.fadvise(Advice::Sequential);
        assert_eq!(s.ra.ra_pages, 64);
        let mut got = Vec::new();
        for i in (0..32).step_by(4) {
            got.extend(s.read(i, 4));
        }
        let expected =
            vec![ra(0, &[(0, 8)], None), ra(4, &[(8, 24)], None), ra(8, &[(24, 56)], None), ra(24, &[(56, 120)], None)];
        assert_eq!(got, expected);
        s.fadvise(Advice::Normal);
        assert_eq!(s.ra.ra_pages, 32);

        // WILLNEED: the whole range, the window untouched.
        let mut s = Sim::new(P, 1024);
        assert_eq!(s.fadvise(Advice::WillNeed { index: 100, nr: 200 }), vec![ra(100, &[(100, 300)], None)]);
        assert_eq!((s.ra.size, s.ra.legacy.prev_page), (0, u64::MAX));
    }

    #[test]
    fn mmap_read_around_and_lotsamiss() {
        let mut s = Sim::new(P, 8192);
        // Miss at 100: mmap_miss 1 <= 0 + 100 -> ra_pages = 32 pages from 100 - 32/2 = 84.
        assert_eq!(s.fault(100, VmHint::Normal), vec![ra(100, &[(84, 116)], None)]);
        // Hit at 101: mmap_hit 1.
        assert_eq!(s.fault(101, VmHint::Normal), vec![]);
        assert_eq!((s.ra.mmap_miss, s.ra.mmap_hit), (1, 1));

        let mut s = Sim::new(P, 8192);
        // Faults 64 pages apart all miss; fault k has mmap_miss k + 1 against mmap_hit 0.
        for k in 0..99 {
            assert_eq!(s.fault(k * 64, VmHint::Normal).len(), 1);
        }
        // k = 99: mmap_miss 100 <= 100 -> read-around [6336 - 16, 6336 + 16).
        assert_eq!(s.fault(6336, VmHint::Normal), vec![ra(6336, &[(6320, 6352)], None)]);
        // k = 100: 101 > 0 + 100 -> the page alone, and the retried lookup counts a hit.
        assert_eq!(s.fault(6400, VmHint::Normal), vec![Ev::Single(6400)]);
        // k = 101: 102 > 1 + 100 -> still alone.
        assert_eq!(s.fault(6464, VmHint::Normal), vec![Ev::Single(6464)]);
        assert_eq!((s.ra.mmap_miss, s.ra.mmap_hit), (102, 2));
        // Hits raise the bar: 6400 is cached now (hit 3); the next miss, 103 <= 3 + 100,
        // reads around again: [6528 - 16, 6528 + 16).
        s.fault(6400, VmHint::Normal);
        assert_eq!(s.fault(6528, VmHint::Normal), vec![ra(6528, &[(6512, 6544)], None)]);
        // MADV_RANDOM: never any readahead.
        assert_eq!(s.fault(7000, VmHint::Random), vec![Ev::Single(7000)]);
    }

    #[test]
    fn mmap_sequential_hint_runs_the_read_windows_one_page_per_fault() {
        let mut s = Sim::new(P, 1024);
        // page_cache_readahead(pgoff, 1) per fault: [0, 4), then the ahead window [4, 12).
        let got: Vec<Ev> = (0..3).flat_map(|i| s.fault(i, VmHint::Sequential)).collect();
        assert_eq!(got, vec![ra(0, &[(0, 4)], None), ra(1, &[(4, 12)], None)]);
    }
}
