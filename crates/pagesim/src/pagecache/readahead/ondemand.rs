//! On-demand readahead as merged in 2.6.23 (Fengguang Wu; seed 004).
//!
//! Models mm/readahead.c of 2.6.23: `ondemand_readahead`, `page_cache_sync_readahead`,
//! `page_cache_async_readahead` (with `get_init_ra_size`, `get_next_ra_size`, `ra_submit`,
//! the 2.6 read-around and fadvise, shared with the other versions in readahead/mod.rs); the
//! callers in mm/filemap.c (`do_generic_mapping_read`: sync on a missing page, then async if
//! the page found afterwards carries PG_readahead; `prev_index` saved at the end of the read;
//! `filemap_fault`) and mm/fadvise.c.
//!
//! Readahead runs only when it is due: on a miss (sync) or when the reader reaches the page
//! flagged PG_readahead (async). One window `[start, start + size)`, the flag `async_size`
//! pages before its end. `ondemand_readahead` sorts the call into four cases:
//!
//! * sequential-next: the page is where the window expects the reader (`start + size -
//!   async_size`, the flag, or `start + size`, its end): push the window forward and ramp
//!   its size (`get_next_ra_size`); the whole new window is async.
//! * random: a miss that is not sequential (more than one page from the previous read's last
//!   page, and no bigger than `ra_pages`): read just the request, leave the state alone.
//! * sequential-first: a miss at page 0 (after open `prev_index` is -1), next to the previous
//!   read, or an oversize request: a new window of `get_init_ra_size(req)` at the page,
//!   async for the part beyond the request.
//! * lookahead-clueless: a flagged page that is not the window's (another reader's, or the
//!   state was overwritten): bet on the smallest window that could have flagged it; start
//!   right after the page and ramp once.
//!
//! The patch as posted in the seed (`ondemand-2.6.22-mm1`, 2.6.22-rc1-mm1, the code seed
//! 004's tables were measured with) differs in one place: its lookahead-clueless guess is
//! `min(4 * init, max)` pages instead of `get_next_ra_size(init)` (64 pages instead of 32
//! for a 4-page read with 1 MB readahead), so a stray flagged page pulls in more.
//!
//! Evicted readahead pages are read again as readahead: the reader misses inside the old
//! window, the miss is next to `prev_index`, so a fresh window starts at the miss and ramps
//! again. If the flagged page itself is evicted, the reader misses on it; that miss is at the
//! expected index, so the window moves on as the async step would have, and the page is read
//! alone.

use super::{
    fadvise_sets_ra_pages, get_init_ra_size, get_next_ra_size, read_around_2_6, Advice, FileRaState, FileReadahead,
    Lookup, PageCacheView, Readahead, VmHint, PAGE_SHIFT,
};

#[derive(Clone, Copy, Debug, Default)]
pub struct OnDemand {
    /// The seed's patch (2.6.22-rc1-mm1): the lookahead-clueless window is 4 × the initial
    /// size rather than the next size after it.
    pub seed_patch: bool,
}

/// `ondemand_readahead`.
fn ondemand_readahead<C: PageCacheView + ?Sized>(
    p: OnDemand,
    ra: &mut FileRaState,
    cache: &C,
    out: &mut Readahead,
    hit_marker: bool,
    offset: u64,
    req: u64,
) {
    let max = ra.ra_pages;
    // Unsigned: a read behind the previous one is not sequential; after open (-1) page 0 is.
    let sequential = offset.wrapping_sub(ra.prev_index()) <= 1 || req > max;

    if offset != 0 && (offset == ra.mark_index() || offset == ra.start + ra.size) {
        ra.start += ra.size;
        ra.size = get_next_ra_size(ra.size, max);
        ra.async_size = ra.size;
    } else if !hit_marker && !sequential {
        out.submit(cache, offset, req, 0);
        return;
    } else {
        ra.start = offset;
        ra.size = get_init_ra_size(req, max);
        ra.async_size = if ra.size > req { ra.size - req } else { ra.size };
        if hit_marker {
            ra.start += 1;
            ra.size = if p.seed_patch { (4 * ra.size).min(max) } else { get_next_ra_size(ra.size, max) };
        }
    }
    out.submit(cache, ra.start, ra.size, ra.async_size);
}

/// `page_cache_sync_readahead`.
fn sync_readahead<C: PageCacheView + ?Sized>(
    p: OnDemand,
    ra: &mut FileRaState,
    cache: &C,
    out: &mut Readahead,
    offset: u64,
    req: u64,
) {
    if ra.ra_pages == 0 {
        return;
    }
    ondemand_readahead(p, ra, cache, out, false, offset, req);
}

/// `page_cache_async_readahead`: the flag is cleared even when the device is congested and
/// the readahead deferred; with readahead disabled it stays.
fn async_readahead<C: PageCacheView + ?Sized>(
    p: OnDemand,
    ra: &mut FileRaState,
    cache: &C,
    out: &mut Readahead,
    offset: u64,
    req: u64,
) {
    if ra.ra_pages == 0 {
        return;
    }
    out.clear_mark = true;
    if cache.read_congested() {
        return;
    }
    ondemand_readahead(p, ra, cache, out, true, offset, req);
}

/// The read path's order: a miss runs sync readahead, then the page is looked up again and,
/// if that readahead just flagged it (its window's async part covers the whole window),
/// async readahead runs at once.
fn sync_then_recheck<C: PageCacheView + ?Sized>(
    p: OnDemand,
    ra: &mut FileRaState,
    cache: &C,
    out: &mut Readahead,
    offset: u64,
    req: u64,
) {
    sync_readahead(p, ra, cache, out, offset, req);
    if out.mark == Some(offset) {
        out.mark = None;
        async_readahead(p, ra, cache, out, offset, req);
    }
}

impl FileReadahead for OnDemand {
    fn read_begin(&mut self, _ra: &mut FileRaState, _index: u64, _nr: u64) {}

    fn read_page<C: PageCacheView + ?Sized>(
        &mut self,
        ra: &mut FileRaState,
        cache: &C,
        index: u64,
        req: u64,
        found: Lookup,
    ) -> Readahead {
        let mut out = Readahead::NONE;
        match found {
            Lookup::Missing => sync_then_recheck(*self, ra, cache, &mut out, index, req),
            Lookup::Marked => async_readahead(*self, ra, cache, &mut out, index, req),
            Lookup::Cached => {}
        }
        out
    }

    /// 2.6.23 keeps the last page read (`prev_index`); stored as its byte position.
    fn read_end(&mut self, ra: &mut FileRaState, index: u64, nr: u64) {
        if nr > 0 {
            ra.prev_pos = (index + nr - 1) << PAGE_SHIFT;
        }
    }

    /// `filemap_fault` (2.6.23). VM_RAND_READ: the page alone. VM_SEQ_READ: sync readahead
    /// of one page on a miss, async on a flagged page. Otherwise a miss does read-around of
    /// `ra_pages` pages centred on the fault (no flag, window state untouched, skipped on a
    /// congested device) unless misses outnumber hits by more than MMAP_LOTSAMISS; a fault
    /// that finds its page without read-around counts an `mmap_hit`.
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
        match (hint, found) {
            (VmHint::Sequential, Lookup::Missing) => sync_then_recheck(*self, ra, cache, &mut out, pgoff, 1),
            (VmHint::Sequential, Lookup::Marked) => async_readahead(*self, ra, cache, &mut out, pgoff, 1),
            // Exec mappings read around like any other before 6.17.
            (VmHint::Normal | VmHint::Exec { .. }, Lookup::Missing) => {
                read_around_2_6(ra, cache, &mut out, pgoff);
                return out;
            }
            _ => {}
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

    const P: &str = "ondemand-2.6.23";

    #[test]
    fn one_page_sequential_reads_from_zero() {
        let mut s = Sim::new(P, 1024);
        // read 0: miss, 0 - (-1) = 1 sequential-first: start 0, size init(1)=4,
        //   async 4 - 1 = 3, flag at 0 + 4 - 3 = 1.
        // read 1: flagged, 1 == start + size - async: start 4, size next(4) = 8 (4 < 2? no),
        //   async 8, flag at 4.
        // read 4: start 12, size 16, flag 12. read 12: start 28, size 32, flag 28.
        // read 28: start 60, size min(64, 32) = 32, flag 60.
        let expected = vec![
            ra(0, &[(0, 4)], Some(1)),
            ra(1, &[(4, 12)], Some(4)),
            ra(4, &[(12, 28)], Some(12)),
            ra(12, &[(28, 60)], Some(28)),
            ra(28, &[(60, 92)], Some(60)),
        ];
        assert_eq!(s.reads(0..=28), expected);
        assert_eq!(s.window(), (60, 32, 32));
    }

    #[test]
    fn sixteen_kib_sequential_reads() {
        let mut s = Sim::new(P, 1024);
        let mut got = Vec::new();
        for i in (0..32).step_by(4) {
            got.extend(s.read(i, 4));
        }
        // [0,4): miss at 0: size init(4) = 8, async 8 - 4 = 4, flag 4.
        // [4,8): flag at 4 == 0 + 8 - 4: start 8, size 16, flag 8.
        // [8,12): flag 8: start 24, size 32, flag 24. [24,28): flag 24: start 56, flag 56.
        let expected = vec![
            ra(0, &[(0, 8)], Some(4)),
            ra(4, &[(8, 24)], Some(8)),
            ra(8, &[(24, 56)], Some(24)),
            ra(24, &[(56, 88)], Some(56)),
        ];
        assert_eq!(got, expected);
    }

    #[test]
    fn random_reads_read_as_is_and_leave_the_state_alone() {
        let mut s = Sim::new(P, 1024);
        // read 100: 100 - (-1) = 101 > 1, 1 <= 32: random, one page, state untouched.
        // read 500: 500 - 100 > 1: random. read 501: 501 - 500 = 1: sequential-first:
        // [501, 505) flag 502. read 502: flag == 501 + 4 - 3: [505, 513) flag 505.
        let expected = vec![
            ra(100, &[(100, 101)], None),
            ra(500, &[(500, 501)], None),
            ra(501, &[(501, 505)], Some(502)),
            ra(502, &[(505, 513)], Some(505)),
        ];
        assert_eq!(s.reads([100, 500, 501, 502]), expected);
        // prev_index is the last page read: skipping one page (700 then 702, 702 - 700 = 2)
        // is random.
        assert_eq!(s.reads([700, 702]), vec![ra(700, &[(700, 701)], None), ra(702, &[(702, 703)], None)]);
        assert_eq!(s.window(), (505, 8, 8));
    }

    #[test]
    fn lookahead_hit_without_state_bets_on_the_smallest_window() {
        let mut s = Sim::new(P, 1024);
        // Page 208 cached and flagged by someone else; this file's state is empty.
        s.fill(208..209);
        s.cache.marked[208] = true;
        // Flagged 208, not the expected index: lookahead-clueless: size init(1) = 4,
        // async 4 - 1 = 3; start 208 + 1 = 209, size next(4) = 8 -> [209, 217), flag at
        // 209 + 8 - 3 = 214. Then 214 is the expected index: [217, 233) flag 217.
        let expected = vec![ra(208, &[(209, 217)], Some(214)), ra(214, &[(217, 233)], Some(217))];
        assert_eq!(s.reads(208..=214), expected);

        let mut s = Sim::new(P, 1024);
        // Another reader's window [200, 216) is cached with its flag at 208. The same guess
        // [209, 217) finds 209..216 cached: only 216 is read and the flag (214, cached) is
        // not set. The stream goes on at 217 by a miss at the guessed window's end,
        // 209 + 8 = 217: start 217, size next(8) = 16, async 16 -> flag on 217 itself; the
        // read path finds it flagged and pushes on: 217 == 217 + 16 - 16: [233, 265) flag 233.
        s.fill(200..216);
        s.cache.marked[208] = true;
        let expected = vec![ra(208, &[(209, 217)], None), ra(217, &[(217, 233), (233, 265)], Some(233))];
        assert_eq!(s.reads(208..=217), expected);
    }

    #[test]
    fn the_seed_patch_guesses_four_times_the_initial_window() {
        let mut s = Sim::new("ondemand-2.6.22-mm1", 1024);
        s.fill(208..209);
        s.cache.marked[208] = true;
        // As in 2.6.23, init(1) = 4 and async 4 - 1 = 3; the patch as posted guesses
        // min(4 * 4, 32) = 16 pages: [209, 225), flag at 209 + 16 - 3 = 222 (2.6.23 reads
        // [209, 217) and flags 214). The expected-index case is the same: at 222 the window
        // moves on by next(16) = 32 pages.
        let expected = vec![ra(208, &[(209, 225)], Some(222)), ra(222, &[(225, 257)], Some(225))];
        assert_eq!(s.reads(208..=222), expected);
    }

    #[test]
    fn oversize_read_keeps_two_windows_in_flight() {
        let mut s = Sim::new(P, 1024);
        // read [100, 164), 64 > 32 pages: sequential-first, size init(64) = 32, async = size
        // (32 > 64? no) -> flag on 100 itself; found flagged, 100 == 100 + 32 - 32:
        // [132, 164) flag 132. At 132: [164, 196) flag 164.
        let expected = vec![ra(100, &[(100, 132), (132, 164)], Some(132)), ra(132, &[(164, 196)], Some(164))];
        assert_eq!(s.read(100, 64), expected);

        // At page 0 the expected-index case is excluded (index != 0), so the flag on page 0
        // is taken as lookahead-clueless: start 0 + 1, size next(32) = 32 -> [1, 33): only
        // page 32 is new, its flag (1) is not. Page 33 misses at 1 + 32 = 33, the window's
        // end: [33, 65) flagged on 33 itself, then at once [65, 97) flag 65.
        let mut s = Sim::new(P, 1024);
        let expected = vec![ra(0, &[(0, 32), (32, 33)], None), ra(33, &[(33, 65), (65, 97)], Some(65))];
        assert_eq!(s.read(0, 64), expected);
    }

    #[test]
    fn evicted_readahead_pages_are_read_again_as_readahead() {
        let mut s = Sim::new(P, 1024);
        s.reads(0..=4);
        // Window [12, 28) flag 12, pages 0..28 cached. Reclaim takes 5..28.
        s.evict(5..28);
        // read 5: miss, 5 - 4 = 1 sequential, not 12 or 28 -> new window [5, 9) flag 6.
        // read 6: [9, 17) flag 9. read 9: [17, 33) flag 17. read 17: [33, 65) flag 33.
        // No page is read alone.
        let expected = vec![
            ra(5, &[(5, 9)], Some(6)),
            ra(6, &[(9, 17)], Some(9)),
            ra(9, &[(17, 33)], Some(17)),
            ra(17, &[(33, 65)], Some(33)),
        ];
        assert_eq!(s.reads(5..=17), expected);
    }

    #[test]
    fn evicting_the_flagged_page_defers_the_async_step_to_the_miss() {
        let mut s = Sim::new(P, 1024);
        s.reads(0..=1);
        // Window [4, 12) flag 4. Reclaim takes page 4 only.
        s.evict(4..5);
        // read 4: a miss at 4 == 4 + 8 - 8, the expected index: [12, 28) flag 12 as the async
        // step would have; page 4 itself is outside it and read alone.
        assert_eq!(s.reads(2..=4), vec![ra(4, &[(12, 28)], Some(12)), Ev::Single(4)]);
    }

    #[test]
    fn congestion_defers_async_readahead_and_the_miss_at_the_window_end_resumes() {
        let mut s = Sim::new(P, 1024);
        assert_eq!(s.reads([0]), vec![ra(0, &[(0, 4)], Some(1))]);
        s.cache.congested = true;
        // read 1: flagged, the flag is cleared, but the device is congested: nothing.
        // read 4: a miss at 0 + 4, the window's end: start 4, size next(4) = 8, async 8 ->
        // [4, 12) flagged on 4 itself; the read path finds the flag and calls async, which
        // clears it and defers again.
        assert_eq!(s.reads(1..=4), vec![ra(4, &[(4, 12)], None)]);
        assert!(!s.cache.marked[1]);
        // Uncongested: the miss at 12 = 4 + 8 ramps: [12, 28) flagged on 12, then at once
        // 12 == 12 + 16 - 16: [28, 60) flag 28.
        s.cache.congested = false;
        assert_eq!(s.reads(5..=12), vec![ra(12, &[(12, 28), (28, 60)], Some(28))]);
    }

    #[test]
    fn interleaved_streams_the_second_gets_no_readahead() {
        let mut s = Sim::new(P, 2048);
        // A reads 0, 1, 2, ...; B reads 1000, 1001, ... in turn on the same file.
        // A0: [0, 4) flag 1. B1000: 1000 - 0 > 1, not 1 or 4: random, one page.
        // A1: flag 1 == 0 + 4 - 3: [4, 12) flag 4. B1001..B1003: random each time
        // (prev_index is A's page). A4: flag 4 == 4 + 8 - 8: [12, 28) flag 12.
        let expected = vec![
            ra(0, &[(0, 4)], Some(1)),
            ra(1000, &[(1000, 1001)], None),
            ra(1, &[(4, 12)], Some(4)),
            ra(1001, &[(1001, 1002)], None),
            ra(1002, &[(1002, 1003)], None),
            ra(1003, &[(1003, 1004)], None),
            ra(4, &[(12, 28)], Some(12)),
        ];
        assert_eq!(s.reads([0, 1000, 1, 1001, 2, 1002, 3, 1003, 4]), expected);
    }

    #[test]
    fn fadvise_random_sequential_willneed() {
        let mut s = Sim::new(P, 1024);
        // RANDOM: ra_pages = 0: sync readahead does nothing; every page is read alone.
        s.fadvise(Advice::Random);
        assert_eq!(s.read(0, 4), singles(0..=3));
        assert_eq!(s.window(), (0, 0, 0));

        // A flag planted before FADV_RANDOM stays: async readahead returns before clearing it.
        let mut s = Sim::new(P, 1024);
        s.reads([0]);
        s.fadvise(Advice::Random);
        assert_eq!(s.reads([1]), vec![]);
        assert!(s.cache.marked[1]);

        let mut s = Sim::new(P, 1024);
        // SEQUENTIAL: ra_pages 64. read [0, 32): init(32, 64) = 64 (32 > 64/4),
        // async 64 - 32 = 32, flag 32.
        s.fadvise(Advice::Sequential);
        assert_eq!(s.read(0, 32), vec![ra(0, &[(0, 64)], Some(32))]);
        s.fadvise(Advice::Normal);
        assert_eq!(s.ra.ra_pages, 32);

        let mut s = Sim::new(P, 1024);
        assert_eq!(s.fadvise(Advice::WillNeed { index: 100, nr: 200 }), vec![ra(100, &[(100, 300)], None)]);
        assert_eq!(s.window(), (0, 0, 0));
    }

    #[test]
    fn mmap_read_around_and_sequential_hint() {
        let mut s = Sim::new(P, 1024);
        // Miss at 100: read-around [100 - 16, 100 + 16), no flag, window untouched.
        assert_eq!(s.fault(100, VmHint::Normal), vec![ra(100, &[(84, 116)], None)]);
        assert_eq!((s.window(), s.ra.mmap_miss, s.ra.mmap_hit), ((0, 0, 0), 1, 0));

        let mut s = Sim::new(P, 1024);
        // MADV_SEQUENTIAL: sync readahead for one page: [0, 4) flag 1; the flagged fault at 1
        // runs async readahead: [4, 12) flag 4.
        let got: Vec<Ev> = (0..2).flat_map(|i| s.fault(i, VmHint::Sequential)).collect();
        assert_eq!(got, vec![ra(0, &[(0, 4)], Some(1)), ra(1, &[(4, 12)], Some(4))]);
        // Without the hint a flagged page does nothing in 2.6.23 (and keeps its flag).
        assert_eq!(s.fault(4, VmHint::Normal), vec![]);
        assert!(s.cache.marked[4]);
    }
}
