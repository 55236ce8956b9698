//! Adaptive cluster readahead (Hugh Dickins / Shaohua Li): the window is sized by the
//! readahead hits seen since the last decision.
//!
//! Models mm/swap_state.c `swapin_nr_pages` and `__swapin_nr_pages`. State is global: one
//! hit counter (starting at 4) and the previous faulting offset (tracked only while there
//! are no hits). Two forms are registered:
//!
//! * `adaptive-2012`: the patch as Hugh posted it on 14 Nov 2012 (seed 000, "HughNew"):
//!   `hits + 2`, rounded up to a power of two of at least 4, or 1/2 by offset adjacency
//!   when there were no hits, capped at `1 << page_cluster`. A random stream drops from 8
//!   to 1 at its first decision without hits.
//! * `adaptive`: the form merged in 3.14 (and factored into `__swapin_nr_pages` in 4.14),
//!   which also remembers the previous window and never shrinks below half of it
//!   ("don't shrink readahead too fast"): a random stream decays 8 → 4 → 2 → 1.

use super::{aligned_block, FaultCtx, SwapReadahead, Window};

/// `__swapin_nr_pages`: the window for a fault at `offset`, given the previous offset,
/// the hits since the last decision, the maximum and the previous window.
/// Pass `prev_win = 0` for the 2012 form without the floor.
pub fn swapin_nr_pages(prev_offset: u64, offset: u64, hits: u32, max_pages: u32, prev_win: u32) -> u32 {
    // "please don't ask what the + 2 means, it just happens to work well"
    let mut pages = hits + 2;
    if pages == 2 {
        // No hits to judge by: stay alive only for an adjacent offset.
        if offset != prev_offset + 1 && offset + 1 != prev_offset {
            pages = 1;
        }
    } else {
        let mut roundup = 4;
        while roundup < pages {
            roundup <<= 1;
        }
        pages = roundup;
    }
    pages = pages.min(max_pages);
    // Don't shrink readahead too fast.
    pages.max(prev_win / 2)
}

#[derive(Debug)]
pub struct Adaptive {
    /// `swapin_readahead_hits`.
    pub hits: u32,
    prev_offset: u64,
    /// `last_readahead_pages`: the previous window (kept only by the merged form).
    last_ra: u32,
    /// The merged form's half-window floor; off for the Nov 2012 patch.
    half_floor: bool,
}

impl Adaptive {
    /// The form merged in 3.14.
    pub fn new() -> Self {
        Adaptive { hits: 4, prev_offset: 0, last_ra: 0, half_floor: true }
    }

    /// Hugh Dickins' 14 Nov 2012 patch (seed 000), without the half-window floor.
    pub fn nov_2012() -> Self {
        Adaptive { half_floor: false, ..Self::new() }
    }
}

impl Default for Adaptive {
    fn default() -> Self {
        Self::new()
    }
}

impl SwapReadahead for Adaptive {
    fn window(&mut self, ctx: &FaultCtx) -> Window {
        let max_pages = 1u32 << ctx.page_cluster;
        if max_pages <= 1 {
            return Window::Target;
        }
        let hits = std::mem::take(&mut self.hits);
        let off = ctx.slot as u64;
        let floor_from = if self.half_floor { self.last_ra } else { 0 };
        let win = swapin_nr_pages(self.prev_offset, off, hits, max_pages, floor_from);
        if hits == 0 {
            self.prev_offset = off;
        }
        self.last_ra = win;
        aligned_block(ctx.slot, win, ctx.area_slots)
    }

    fn on_cache_hit(&mut self, _ctx: &FaultCtx, was_readahead: bool) {
        if was_readahead {
            self.hits += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::VmaId;
    use crate::swap::readahead::FaultOwner;

    fn ctx(slot: u32) -> FaultCtx {
        FaultCtx {
            owner: FaultOwner::Anon(VmaId(0)),
            index: 0,
            vma_pages: 1 << 20,
            slot,
            area_slots: 1 << 20,
            page_cluster: 3,
            rotational_swap: false,
            vma_ra_enabled: true,
            vma_ra_needs_nonrotational: true,
            tried: false,
        }
    }

    fn width(w: Window) -> u32 {
        match w {
            Window::Target => 1,
            Window::Slots { lo, hi } => hi - lo + 1,
            Window::VmaPages { start, end } => end - start,
        }
    }

    #[test]
    fn window_rule_by_hand() {
        // hits + 2, rounded up to a power of two of at least 4, capped.
        assert_eq!(swapin_nr_pages(0, 100, 4, 8, 0), 8);
        assert_eq!(swapin_nr_pages(0, 100, 1, 8, 0), 4);
        assert_eq!(swapin_nr_pages(0, 100, 3, 8, 0), 8);
        assert_eq!(swapin_nr_pages(0, 100, 7, 8, 0), 8);
        assert_eq!(swapin_nr_pages(0, 100, 7, 16, 0), 16);
        // No hits: 1 unless adjacent (then 2).
        assert_eq!(swapin_nr_pages(50, 100, 0, 8, 0), 1);
        assert_eq!(swapin_nr_pages(99, 100, 0, 8, 0), 2);
        assert_eq!(swapin_nr_pages(101, 100, 0, 8, 0), 2);
        // Never below half the previous window.
        assert_eq!(swapin_nr_pages(50, 100, 0, 8, 8), 4);
    }

    #[test]
    fn random_faults_decay_to_one_page_and_hits_regrow_the_window() {
        let mut p = Adaptive::new();
        // First fault after boot: 4 seeded hits -> 8 pages.
        assert_eq!(width(p.window(&ctx(1000))), 8);
        // Random, no hits: 8 -> 4 -> 2 -> 1 -> 1 (halving floor).
        let w: Vec<u32> = [5000, 9000, 13000, 17000, 21000].iter().map(|&s| width(p.window(&ctx(s)))).collect();
        assert_eq!(w, vec![4, 2, 1, 1, 1]);
        // Two readahead hits: 2 + 2 = 4.
        p.on_cache_hit(&ctx(0), true);
        p.on_cache_hit(&ctx(0), true);
        p.on_cache_hit(&ctx(0), false);
        assert_eq!(width(p.window(&ctx(30000))), 4);
    }

    #[test]
    fn nov_2012_form_drops_to_one_page_at_once_and_recovers_by_adjacency() {
        let mut p = Adaptive::nov_2012();
        // 4 seeded hits: 4 + 2 = 6 -> 8.
        assert_eq!(p.window(&ctx(1000)), Window::Slots { lo: 1000, hi: 1007 });
        // No hits and not adjacent to offset 0 (prev_offset is only updated without hits):
        // 1 page at once, no halving.
        assert_eq!(p.window(&ctx(5000)), Window::Target);
        // Adjacent to the previous hitless fault (5000): 2 pages, aligned block 5000..5001.
        assert_eq!(p.window(&ctx(5001)), Window::Slots { lo: 5000, hi: 5001 });
        // One readahead hit on 5000's neighbour: 1 + 2 = 3 -> 4 pages.
        p.on_cache_hit(&ctx(5000), true);
        assert_eq!(p.window(&ctx(5002)), Window::Slots { lo: 5000, hi: 5003 });
        // page_cluster = 0 means no readahead at all, whatever the hits.
        p.on_cache_hit(&ctx(0), true);
        let mut c = ctx(6000);
        c.page_cluster = 0;
        assert_eq!(p.window(&c), Window::Target);
    }
}
