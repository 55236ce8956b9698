//! Readahead of 5.x–6.18, in its 6.18 form, on a mapping with or without large folios.
//!
//! Models mm/readahead.c of 6.18: `page_cache_sync_ra`, `page_cache_async_ra`,
//! `ractl_max_pages`, `force_page_cache_ra`, the order-0 fallback of `page_cache_ra_order`
//! (→ `do_page_cache_ra`), using the shared `get_init_ra_size`, `get_next_ra_size` and the
//! page-cache probes `page_cache_prev_miss` (context readahead, formerly
//! `count_history_pages` / `try_context_readahead`) and `page_cache_next_miss`
//! (`PageCacheView::prev_miss`, `next_miss`) of readahead/mod.rs; the callers in mm/filemap.c
//! (`filemap_get_pages`, `filemap_read` saving `prev_pos`, `do_sync_mmap_readahead`,
//! `do_async_mmap_readahead`) and `generic_fadvise` (mm/fadvise.c).
//!
//! Same two triggers as 2.6.23, split into two functions:
//!
//! * sync (a miss): page 0, an oversize request or a miss within one page of where the last
//!   read stopped starts a window of `get_init_ra_size(req)` with `size - req` async pages
//!   (half the window when the request fills it). Any other miss asks the page cache how many
//!   pages just below it are cached (up to `max`): a run no longer than the request is a
//!   random read (just the request, state untouched); a longer run is taken as a stream
//!   whose state was lost (another reader of the file interleaved, or thrashing), so the
//!   window is the run plus the request (doubled when the run reaches page 0), capped at
//!   `max`, with async size 1.
//! * async (the flagged page): at the expected index the window moves forward and ramps;
//!   elsewhere (someone else's flag, or state overwritten by another stream) the first hole
//!   after the page tells how big the old window's async part was, and the window starts
//!   there ramped from it. No hole within `max`: nothing.
//!
//! `max` is `ra_pages`, or up to `io_pages` for a request bigger than `ra_pages`.
//!
//! Folio orders (6.17+, `ra->order`): the sync path and mmap read-around start at order 0;
//! each async step adds 2 and trims the window so that it ends on a multiple of
//! 2^min(order, ffs(max) - 1) pages. `page_cache_ra_order` clamps the order to
//! MAX_PAGECACHE_ORDER and to ilog2 of the window and stores it back; the decision carries
//! it ([`Readahead::order`]) and engine/filemap.rs carves the window into folios. On a
//! mapping without large folio support it resets the order to 0 and reads single pages, so
//! there the only trace of the order logic is the async trim to a multiple of
//! 2^min(2, ffs(max) - 1) pages (4 with `ra_pages` 32). A read continuing a stream of large
//! folios is expected back at its mark rounded down to the marked folio's first page
//! (`page_cache_async_ra`'s `expected`), which is where the read path finds the flag.
//!
//! Thrashing has no detector: evicted readahead pages make the reader miss right after its
//! previous read, which restarts the window at `get_init_ra_size(req)` and ramps it again;
//! an evicted flag just cancels one async step.

use super::{
    get_init_ra_size, get_next_ra_size, Advice, FileRaState, FileReadahead, Lookup, PageCacheView, Readahead, VmHint,
    MMAP_LOTSAMISS, PAGE_SHIFT,
};

/// `MAX_PAGECACHE_ORDER` on x86-64: the PMD order, 2 MiB folios (also ext4's cap with
/// 4 KiB blocks, `EXT4_MAX_PAGECACHE_ORDER`).
pub const MAX_PAGECACHE_ORDER: u8 = 9;

#[derive(Clone, Copy, Debug, Default)]
pub struct Modern;

/// `ractl_max_pages`: a request bigger than the window may read up to the device's
/// largest request.
fn ractl_max_pages(ra: &FileRaState, req: u64) -> u64 {
    if req > ra.ra_pages && ra.io_pages > ra.ra_pages {
        req.min(ra.io_pages)
    } else {
        ra.ra_pages
    }
}

/// `force_page_cache_ra`: read `nr` pages at `index`, at most max(io_pages, ra_pages), no
/// flag, no state.
fn force_page_cache_ra<C: PageCacheView + ?Sized>(
    ra: &FileRaState,
    cache: &C,
    out: &mut Readahead,
    index: u64,
    nr: u64,
) {
    let nr = nr.min(ra.io_pages.max(ra.ra_pages));
    out.submit(cache, index, nr, 0);
}

/// `page_cache_ra_order`: read the window, flag at `async_size`. With large folios, in
/// folios of up to `ra.order`, clamped to MAX_PAGECACHE_ORDER and to ilog2 of the window
/// and stored back; without, in single pages, the order reset to 0.
fn ra_order<C: PageCacheView + ?Sized>(ra: &mut FileRaState, cache: &C, out: &mut Readahead) {
    if cache.large_folios() {
        let log2_size = ra.size.max(1).ilog2() as u8;
        ra.order = ra.order.min(MAX_PAGECACHE_ORDER).min(log2_size);
        out.order = ra.order;
    } else {
        ra.order = 0;
    }
    out.submit(cache, ra.start, ra.size, ra.async_size);
}

/// `page_cache_sync_ra`.
fn page_cache_sync_ra<C: PageCacheView + ?Sized>(
    ra: &mut FileRaState,
    cache: &C,
    out: &mut Readahead,
    index: u64,
    req: u64,
) {
    // Readahead disabled still reads the missing page, as a one-page forced readahead.
    if ra.ra_pages == 0 {
        force_page_cache_ra(ra, cache, out, index, 1);
        return;
    }
    if ra.random {
        force_page_cache_ra(ra, cache, out, index, req);
        return;
    }
    let max = ractl_max_pages(ra, req);
    // Start of file, oversize read, or a miss at (or one page past) where the last read
    // stopped.
    // The sync path starts over at order 0 (6.17).
    if index == 0 || req > max || index.wrapping_sub(ra.prev_index()) <= 1 {
        ra.start = index;
        ra.size = get_init_ra_size(req, max);
        ra.async_size = if ra.size > req { ra.size - req } else { ra.size / 2 };
        ra.order = 0;
        return ra_order(ra, cache, out);
    }
    // Context readahead: the run of cached pages just below the miss, scanning `max` pages.
    let (contig, from_start) = match cache.prev_miss(index - 1, max) {
        Some(miss) => (index - 1 - miss, false),
        None if index <= max => (index, true),
        None => (max, false),
    };
    if contig <= req {
        out.submit(cache, index, req, 0);
        return;
    }
    // Cached from page 0: a long-running stream or a whole-file read.
    let contig = if from_start { 2 * contig } else { contig };
    ra.start = index;
    ra.size = (contig + req).min(max);
    ra.async_size = 1;
    ra.order = 0;
    ra_order(ra, cache, out);
}

/// `page_cache_async_ra`, the flag already tested; it is cleared unless readahead is
/// disabled.
fn page_cache_async_ra<C: PageCacheView + ?Sized>(
    ra: &mut FileRaState,
    cache: &C,
    out: &mut Readahead,
    index: u64,
    req: u64,
) {
    if ra.ra_pages == 0 {
        return;
    }
    out.clear_mark = true;
    let max = ractl_max_pages(ra, req);
    // The expected index, rounded down to the flagged folio's size.
    let nr = cache.folio_nr_pages(index);
    if index == ra.mark_index() / nr * nr {
        ra.start += ra.size;
        ra.size = ra.size.max(get_next_ra_size(ra.size, max));
    } else {
        // Not our flag: the distance to the first hole stands for the old async size.
        let Some(start) = cache.next_miss(index + 1, max) else {
            return;
        };
        ra.start = start;
        ra.size = get_next_ra_size(start - index + req, max);
    }
    ra.order = ra.order.saturating_add(2);
    let align = 1u64 << (ra.order as u32).min(max.trailing_zeros());
    let end = ra.start + ra.size;
    let aligned_end = end / align * align;
    if aligned_end > ra.start {
        ra.size -= end - aligned_end;
    }
    ra.async_size = ra.size;
    ra_order(ra, cache, out);
}

impl FileReadahead for Modern {
    fn read_begin(&mut self, _ra: &mut FileRaState, _index: u64, _nr: u64) {}

    /// `filemap_get_pages`: sync readahead on a miss, then (the batch is looked up again)
    /// async readahead if the page now carries the flag; async readahead on a flagged page.
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
            Lookup::Missing => {
                page_cache_sync_ra(ra, cache, &mut out, index, req);
                // 6.18's sync windows never flag their first page (async_size < size, or 0);
                // kept for the read path's order all the same.
                if out.mark == Some(index) {
                    out.mark = None;
                    page_cache_async_ra(ra, cache, &mut out, index, req);
                }
            }
            Lookup::Marked => page_cache_async_ra(ra, cache, &mut out, index, req),
            Lookup::Cached => {}
        }
        out
    }

    /// `filemap_read`: `prev_pos` is the byte after the last one copied.
    fn read_end(&mut self, ra: &mut FileRaState, index: u64, nr: u64) {
        if nr > 0 {
            ra.prev_pos = (index + nr) << PAGE_SHIFT;
        }
    }

    /// `filemap_fault`. A hit runs `do_async_mmap_readahead` (one miss forgiven; async
    /// readahead of `ra_pages` on a flagged page), a miss `do_sync_mmap_readahead`:
    /// VM_SEQ_READ → sync readahead of `ra_pages`; else, while misses (saturating at 1000,
    /// minus hits) stay within MMAP_LOTSAMISS, read-around: `ra_pages` pages centred on the
    /// fault with a quarter of them async, or on a VM_EXEC mapping of 6.17+ ([`VmHint::Exec`])
    /// `ra_pages` from the fault on (`exec_folio_order` is 0 on x86) up to the end of the
    /// VMA, none async. VM_RAND_READ (not on VM_EXEC) and `ra_pages == 0`: nothing.
    fn fault<C: PageCacheView + ?Sized>(
        &mut self,
        ra: &mut FileRaState,
        cache: &C,
        pgoff: u64,
        found: Lookup,
        hint: VmHint,
    ) -> Readahead {
        let mut out = Readahead::NONE;
        if pgoff >= cache.i_size_pages() || hint == VmHint::Random || ra.ra_pages == 0 {
            return out;
        }
        if found != Lookup::Missing {
            ra.mmap_miss = ra.mmap_miss.saturating_sub(1);
            if found == Lookup::Marked {
                page_cache_async_ra(ra, cache, &mut out, pgoff, ra.ra_pages);
            }
            return out;
        }
        if hint == VmHint::Sequential {
            page_cache_sync_ra(ra, cache, &mut out, pgoff, ra.ra_pages);
            return out;
        }
        if ra.mmap_miss < MMAP_LOTSAMISS * 10 {
            ra.mmap_miss += 1;
        }
        if ra.mmap_miss > MMAP_LOTSAMISS {
            return out;
        }
        if let VmHint::Exec { vma_end } = hint {
            ra.start = pgoff;
            ra.size = (pgoff + ra.ra_pages).min(vma_end.max(pgoff + 1)) - pgoff;
            ra.async_size = 0;
        } else {
            ra.start = pgoff.saturating_sub(ra.ra_pages / 2);
            ra.size = ra.ra_pages;
            ra.async_size = ra.ra_pages / 4;
        }
        ra.order = 0;
        ra_order(ra, cache, &mut out);
        out
    }

    /// `generic_fadvise` (≥2.6.33): FADV_RANDOM sets FMODE_RANDOM (sync readahead then reads
    /// just the request); NORMAL and SEQUENTIAL clear it. WILLNEED is `force_page_cache_ra`.
    fn fadvise<C: PageCacheView + ?Sized>(&mut self, ra: &mut FileRaState, cache: &C, advice: Advice) -> Readahead {
        let mut out = Readahead::NONE;
        match advice {
            Advice::Normal => {
                ra.ra_pages = ra.bdi_ra_pages;
                ra.random = false;
            }
            Advice::Sequential => {
                ra.ra_pages = 2 * ra.bdi_ra_pages;
                ra.random = false;
            }
            Advice::Random => ra.random = true,
            Advice::WillNeed { index, nr } => force_page_cache_ra(ra, cache, &mut out, index, nr),
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{ra, singles, Ev, Sim};
    use super::*;

    const P: &str = "modern";

    #[test]
    fn one_page_sequential_reads_from_zero() {
        let mut s = Sim::new(P, 1024);
        // The spec's worked example. read 0: index 0 -> start 0, size init(1) = 4,
        // async 4 - 1 = 3, flag 1. Each flag is the expected index start + size - async:
        // 1 -> start 4, size max(4, next(4) = 8) = 8, end 12 already a multiple of 4, flag 4;
        // 4 -> [12, 28) flag 12; 12 -> [28, 60) flag 28; 28 -> [60, 92) flag 60.
        let expected = vec![
            ra(0, &[(0, 4)], Some(1)),
            ra(1, &[(4, 12)], Some(4)),
            ra(4, &[(12, 28)], Some(12)),
            ra(12, &[(28, 60)], Some(28)),
            ra(28, &[(60, 92)], Some(60)),
        ];
        assert_eq!(s.reads(0..=28), expected);
    }

    #[test]
    fn sixteen_kib_sequential_reads() {
        let mut s = Sim::new(P, 1024);
        let mut got = Vec::new();
        for i in (0..32).step_by(4) {
            got.extend(s.read(i, 4));
        }
        // [0,4): size init(4) = 8, async 8 - 4 = 4, flag 4. Flag 4 == 0 + 8 - 4: [8, 24) flag 8;
        // flag 8: [24, 56) flag 24; flag 24: [56, 88) flag 56 (ends multiples of 4).
        let expected = vec![
            ra(0, &[(0, 8)], Some(4)),
            ra(4, &[(8, 24)], Some(8)),
            ra(8, &[(24, 56)], Some(24)),
            ra(24, &[(56, 88)], Some(56)),
        ];
        assert_eq!(got, expected);
    }

    #[test]
    fn random_reads_and_the_one_page_gap() {
        let mut s = Sim::new(P, 1024);
        // read 100: not page 0, 1 <= 32, 100 - (-1) > 1; page 99 not cached: run 0 <= 1:
        // random, one page. prev_pos ends at page 101.
        // read 500: 500 - 101 > 1, page 499 missing: random. prev page 501.
        // read 501: 501 - 501 = 0: start 501, size 4, async 3, flag 502.
        // read 502: expected: start 505, size max(4, 8) = 8, end 513 -> down to 512: size 7.
        let expected = vec![
            ra(100, &[(100, 101)], None),
            ra(500, &[(500, 501)], None),
            ra(501, &[(501, 505)], Some(502)),
            ra(502, &[(505, 512)], Some(505)),
        ];
        assert_eq!(s.reads([100, 500, 501, 502]), expected);
        // prev_pos is the end of the read: after 700, reading 702 (one page skipped) gives
        // 702 - 701 = 1: sequential, a new window [702, 706) flag 703.
        assert_eq!(s.reads([700, 702]), vec![ra(700, &[(700, 701)], None), ra(702, &[(702, 706)], Some(703))]);
    }

    #[test]
    fn lookahead_hit_without_state_probes_for_the_old_window() {
        let mut s = Sim::new(P, 1024);
        // Another reader's window [200, 216) with its flag at 208; empty state here.
        s.fill(200..216);
        s.cache.marked[208] = true;
        // Flagged 208, expected index 0: first hole after 208 within 32 is 216; size
        // next((216 - 208) + 1 = 9) = 18; end 216 + 18 = 234 -> down to 232: size 16,
        // async 16 -> [216, 232) flag 216. Then 216 is expected: start 232,
        // size max(16, 32) = 32 -> [232, 264) flag 232.
        let expected = vec![ra(208, &[(216, 232)], Some(216)), ra(216, &[(232, 264)], Some(232))];
        assert_eq!(s.reads(208..=216), expected);

        // No hole within max pages after the flag: nothing read, the flag is cleared.
        let mut s = Sim::new(P, 1024);
        s.fill(300..400);
        s.cache.marked[310] = true;
        assert_eq!(s.reads([310]), vec![]);
        assert!(!s.cache.marked[310]);
        assert_eq!(s.window(), (0, 0, 0));
    }

    #[test]
    fn oversize_reads_and_io_pages() {
        let mut s = Sim::new(P, 1024);
        // read [100, 164), io_pages 0: max 32; 64 > 32: start 100, size init(64) = 32,
        // async 32 / 2 = 16 (the request fills the window), flag 116.
        // 116: expected: [132, 164) flag 132; 132: [164, 196) flag 164.
        let expected = vec![
            ra(100, &[(100, 132)], Some(116)),
            ra(116, &[(132, 164)], Some(132)),
            ra(132, &[(164, 196)], Some(164)),
        ];
        assert_eq!(s.read(100, 64), expected);

        let mut s = Sim::new(P, 1024);
        s.ra.io_pages = 128;
        // io_pages 128 > ra_pages: max = min(64, 128) = 64, so 64 pages are no longer
        // oversize (64 > 64 is false); at page 100 of a fresh file (100 - (-1) > 1, page 99
        // missing: run 0 <= 64) it is a random read: the request as is, no flag, no state.
        assert_eq!(s.read(100, 64), vec![ra(100, &[(100, 164)], None)]);
        assert_eq!(s.window(), (0, 0, 0));
        // At page 0: size init(64, 64) = 64, async 64 / 2 = 32, flag 32. At 32 the rest of
        // the request is 32 <= ra_pages: max 32; size max(64, next(64, 32) = 32) = 64 keeps
        // the big window: [64, 128) flag 64.
        let mut s = Sim::new(P, 1024);
        s.ra.io_pages = 128;
        assert_eq!(s.read(0, 64), vec![ra(0, &[(0, 64)], Some(32)), ra(32, &[(64, 128)], Some(64))]);

        // A 32-page read at page 0 (the spec's 6.18 example): size 32, async 16.
        let mut s = Sim::new(P, 1024);
        assert_eq!(s.read(0, 32), vec![ra(0, &[(0, 32)], Some(16)), ra(16, &[(32, 64)], Some(32))]);
    }

    #[test]
    fn interleaved_streams_get_context_readahead() {
        let mut s = Sim::new(P, 2048);
        // A reads 0, 1, 2, ...; B reads 1000, 1001, ... in turn on the same file.
        // A0: [0, 4) flag 1.
        // B1000: page 999 not cached: run 0 <= 1: one page.
        // A1: flag 1 expected: [4, 12) flag 4.
        // B1001: run below 1001 is {1000}: 1 <= 1: one page.
        // B1002: run {1000, 1001} = 2 > 1: context window start 1002, size min(2 + 1, 32) = 3,
        //   async 1 -> [1002, 1005) flag 1004. This overwrites A's state.
        // A4: flag 4, expected is now 1004: probe: first hole after 4 is 12; size
        //   next(12 - 4 + 1 = 9) = 18, end 30 -> 28: [12, 28) flag 12.
        // B1004: flag 1004, expected 12: first hole after 1004 is 1005; size next(1 + 1) = 4,
        //   end 1009 -> 1008: [1005, 1008) flag 1005.
        let expected = vec![
            ra(0, &[(0, 4)], Some(1)),
            ra(1000, &[(1000, 1001)], None),
            ra(1, &[(4, 12)], Some(4)),
            ra(1001, &[(1001, 1002)], None),
            ra(1002, &[(1002, 1005)], Some(1004)),
            ra(4, &[(12, 28)], Some(12)),
            ra(1004, &[(1005, 1008)], Some(1005)),
        ];
        assert_eq!(s.reads([0, 1000, 1, 1001, 2, 1002, 3, 1003, 4, 1004]), expected);
    }

    #[test]
    fn context_readahead_history_from_page_zero_counts_double() {
        let mut s = Sim::new(P, 1024);
        // Pages 0..10 cached by another reader; first read here at 10: not sequential
        // (10 - (-1) > 1); the scan from 9 reaches page 0 with all cached: run 10, doubled 20;
        // size min(20 + 1, 32) = 21, async 1 -> [10, 31) flag 30.
        s.fill(0..10);
        assert_eq!(s.reads([10]), vec![ra(10, &[(10, 31)], Some(30))]);

        let mut s = Sim::new(P, 1024);
        // A run of 100 cached pages not from page 0: the scan stops after max = 32 pages:
        // run 32, size min(32 + 1, 32) = 32 -> [200, 232) flag 231.
        s.fill(100..200);
        assert_eq!(s.reads([200]), vec![ra(200, &[(200, 232)], Some(231))]);
    }

    #[test]
    fn evicted_readahead_pages_restart_the_window_and_realign() {
        let mut s = Sim::new(P, 1024);
        s.reads(0..=4);
        // Window [12, 28) flag 12, pages 0..28 cached, prev_pos at page 5. Reclaim takes 5..28.
        s.evict(5..28);
        // read 5: 5 - 5 = 0: sequential miss: [5, 9) flag 6.
        // 6: start 9, size max(4, 8) = 8, end 17 -> 16: size 7, flag 9.
        // 9: start 16, size max(7, next(7) = 14) = 14, end 30 -> 28: size 12, flag 16.
        // 16: start 28, size max(12, 24) = 24, end 52: [28, 52) flag 28.
        // 28: start 52, size max(24, min(48, 32)) = 32: [52, 84) flag 52. No page read alone.
        let expected = vec![
            ra(5, &[(5, 9)], Some(6)),
            ra(6, &[(9, 16)], Some(9)),
            ra(9, &[(16, 28)], Some(16)),
            ra(16, &[(28, 52)], Some(28)),
            ra(28, &[(52, 84)], Some(52)),
        ];
        assert_eq!(s.reads(5..=28), expected);
    }

    #[test]
    fn evicting_the_flagged_page_collapses_the_window() {
        let mut s = Sim::new(P, 1024);
        s.reads(0..=1);
        // Window [4, 12) flag 4. Reclaim takes page 4 only.
        s.evict(4..5);
        // read 4 (after 2, 3): a sequential miss (4 - 4 = 0) starts over: [4, 8) with flag
        // 4 + 4 - 3 = 5, but 5 is cached, so no flag. Nothing triggers until the miss at 12:
        // [12, 16) flag 13.
        let expected = vec![ra(4, &[(4, 8)], None), ra(12, &[(12, 16)], Some(13))];
        assert_eq!(s.reads(2..=12), expected);
    }

    #[test]
    fn fadvise_random_sequential_willneed_and_no_readahead() {
        let mut s = Sim::new(P, 1024);
        // RANDOM sets the mode: a miss reads just the request, min(4, max(0, 32)) = 4 pages,
        // no flag, no state; then 1 page.
        s.fadvise(Advice::Random);
        assert_eq!(s.read(0, 4), vec![ra(0, &[(0, 4)], None)]);
        assert_eq!(s.read(4, 1), vec![ra(4, &[(4, 5)], None)]);
        assert_eq!(s.window(), (0, 0, 0));
        // NORMAL clears it: read 5 after 4 is sequential: [5, 9) flag 6.
        s.fadvise(Advice::Normal);
        assert_eq!(s.read(5, 1), vec![ra(5, &[(5, 9)], Some(6))]);

        let mut s = Sim::new(P, 1024);
        // SEQUENTIAL: ra_pages 64: read [0, 32): init(32, 64) = 64, async 64 - 32 = 32.
        s.fadvise(Advice::Sequential);
        assert_eq!(s.read(0, 32), vec![ra(0, &[(0, 64)], Some(32))]);

        // WILLNEED is capped at max(io_pages, ra_pages): 32 pages, or 200 with io_pages 256.
        let mut s = Sim::new(P, 1024);
        assert_eq!(s.fadvise(Advice::WillNeed { index: 100, nr: 200 }), vec![ra(100, &[(100, 132)], None)]);
        let mut s = Sim::new(P, 1024);
        s.ra.io_pages = 256;
        assert_eq!(s.fadvise(Advice::WillNeed { index: 100, nr: 200 }), vec![ra(100, &[(100, 300)], None)]);

        // ra_pages 0 still reads the missing page as a one-page forced readahead (capped by
        // io_pages; with io_pages 0 too the read path reads it alone).
        let mut s = Sim::new(P, 1024);
        s.ra.ra_pages = 0;
        s.ra.io_pages = 64;
        assert_eq!(s.read(0, 2), vec![ra(0, &[(0, 1)], None), ra(1, &[(1, 2)], None)]);
        s.ra.io_pages = 0;
        assert_eq!(s.read(2, 2), singles(2..=3));

        // With ra_pages 0 a flagged page keeps its flag (async readahead returns first).
        let mut s = Sim::new(P, 1024);
        s.reads([0]);
        s.ra.ra_pages = 0;
        assert_eq!(s.reads([1]), vec![]);
        assert!(s.cache.marked[1]);
    }

    #[test]
    fn exec_mappings_read_forward_to_the_vma_end_with_no_async_part() {
        let mut s = Sim::new(P, 8192);
        // A miss at 100 of a 120-page text VMA: [100, min(100 + 32, 120)), no flag, where
        // read-around would read [84, 116) and flag 108.
        assert_eq!(s.fault(100, VmHint::Exec { vma_end: 120 }), vec![ra(100, &[(100, 120)], None)]);
        assert_eq!((s.window(), s.ra.mmap_miss), ((100, 20, 0), 1));
        // Inside the VMA: ra_pages from the fault.
        assert_eq!(s.fault(10, VmHint::Exec { vma_end: 8192 }), vec![ra(10, &[(10, 42)], None)]);
        // The misses still count towards MMAP_LOTSAMISS.
        let mut s = Sim::new(P, 8192);
        for k in 0..100 {
            assert_eq!(s.fault(k * 64, VmHint::Exec { vma_end: 8192 }).len(), 1);
        }
        assert_eq!(s.fault(6400, VmHint::Exec { vma_end: 8192 }), vec![Ev::Single(6400)]);
    }

    #[test]
    fn mmap_read_around_flag_and_lotsamiss() {
        let mut s = Sim::new(P, 8192);
        // Miss at 100: read-around start 100 - 16 = 84, size 32, async 32 / 4 = 8: flag 108.
        assert_eq!(s.fault(100, VmHint::Normal), vec![ra(100, &[(84, 116)], Some(108))]);
        assert_eq!((s.window(), s.ra.mmap_miss), ((84, 32, 8), 1));
        // Fault on the flag: one miss forgiven, async with req = ra_pages: expected 108:
        // start 116, size max(32, 32) = 32 -> [116, 148) flag 116.
        assert_eq!(s.fault(108, VmHint::Normal), vec![ra(108, &[(116, 148)], Some(116))]);
        assert_eq!(s.ra.mmap_miss, 0);

        let mut s = Sim::new(P, 8192);
        // Faults 64 pages apart all miss: mmap_miss k + 1 <= 100 for k < 100.
        for k in 0..100 {
            assert_eq!(s.fault(k * 64, VmHint::Normal).len(), 1);
        }
        // The 101st: 101 > 100: no read-around.
        assert_eq!(s.fault(6400, VmHint::Normal), vec![Ev::Single(6400)]);
        // Two hits in the last window [6320, 6352): 101 -> 99; the next miss makes it 100
        // and reads around again: [6464 - 16, 6464 + 16) flag 6448 + 24 = 6472.
        s.fault(6337, VmHint::Normal);
        s.fault(6338, VmHint::Normal);
        assert_eq!(s.fault(6464, VmHint::Normal), vec![ra(6464, &[(6448, 6480)], Some(6472))]);

        let mut s = Sim::new(P, 1024);
        // MADV_SEQUENTIAL: sync readahead of ra_pages at 0: size init(32) = 32, async 16.
        assert_eq!(s.fault(0, VmHint::Sequential), vec![ra(0, &[(0, 32)], Some(16))]);
        // MADV_RANDOM: nothing, and a flag met is left alone.
        assert_eq!(s.fault(16, VmHint::Random), vec![]);
        assert!(s.cache.marked[16]);
        assert_eq!(s.fault(500, VmHint::Random), vec![Ev::Single(500)]);
    }
}
