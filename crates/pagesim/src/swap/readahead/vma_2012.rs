//! Shaohua Li's per-VMA random-swapin detector (Sep 2012, in mmotm and linux-next for
//! 3.7, replaced by the adaptive detector before it reached mainline; seed 000 "Shaohua").
//!
//! Each anon_vma keeps a miss counter (`swapra_miss`): a swap fault that finds its page
//! in the swap cache decrements it (not below 0; only on the first try of the fault,
//! since the retry after waiting for the page's read always finds it), a swap-cache miss
//! increments it (capped at 10 × threshold). While the counter exceeds the threshold of
//! 100, readahead is skipped and only the faulting page is read; otherwise the blind
//! 2^page_cluster aligned block is read as in 3.6.
//!
//! shmem has no anon_vma (its pseudo-VMA sets it to NULL), so shmem swap-in keeps the
//! blind cluster readahead: the weakness Hugh points out in the seed.
//!
//! Models the patch's `swap_cache_hit` / `swap_cache_miss` / `swap_cache_skip_readahead`
//! in mm/internal.h and their calls in `do_swap_page` and `swapin_readahead`. We keep one
//! counter per VMA: every anon VMA in pagesim has its own anon_vma (no fork).

use super::{aligned_block, FaultCtx, SwapReadahead, Window};
use crate::ids::VmaId;

/// `SWAPRA_MISS`: above this many net misses, readahead is skipped.
const SKIP_THRESHOLD: u32 = 100;
/// The counter saturates here, so a long random phase is forgotten after a bounded
/// number of hits.
const MISS_MAX: u32 = SKIP_THRESHOLD * 10;

#[derive(Debug, Default)]
pub struct Vma2012 {
    /// `anon_vma->swapra_miss`, by VMA id.
    miss: Vec<u32>,
}

impl Vma2012 {
    fn miss(&mut self, vma: VmaId) -> &mut u32 {
        let i = vma.idx();
        if i >= self.miss.len() {
            self.miss.resize(i + 1, 0);
        }
        &mut self.miss[i]
    }
}

impl SwapReadahead for Vma2012 {
    fn window(&mut self, ctx: &FaultCtx) -> Window {
        let blind = aligned_block(ctx.slot, 1 << ctx.page_cluster, ctx.area_slots);
        let Some(vma) = ctx.anon_vma() else {
            return blind;
        };
        let m = self.miss(vma);
        if *m < MISS_MAX {
            *m += 1;
        }
        if *m > SKIP_THRESHOLD {
            Window::Target
        } else {
            blind
        }
    }

    fn on_cache_hit(&mut self, ctx: &FaultCtx, _was_readahead: bool) {
        // Any swap-cache hit counts, readahead-marked or not.
        if let (Some(vma), false) = (ctx.anon_vma(), ctx.tried) {
            let m = self.miss(vma);
            *m = m.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::swap::readahead::FaultOwner;

    fn ctx(anon: bool, owner: u32, slot: u32) -> FaultCtx {
        FaultCtx {
            owner: if anon { FaultOwner::Anon(VmaId(owner)) } else { FaultOwner::Shmem(owner) },
            index: 0,
            vma_pages: 1 << 20,
            slot,
            area_slots: 1 << 20,
            page_cluster: 3,
            rotational_swap: true,
            vma_ra_enabled: true,
            vma_ra_needs_nonrotational: true,
            tried: false,
        }
    }

    #[test]
    fn readahead_stops_after_more_than_100_net_misses_and_resumes_after_hits() {
        let mut p = Vma2012::default();
        // Misses 1..=100 leave the counter at 100, not above the threshold: blind 8 slots.
        for i in 0..100 {
            assert_eq!(p.window(&ctx(true, 0, 8000 + 64 * i)), Window::Slots { lo: 8000 + 64 * i, hi: 8007 + 64 * i });
        }
        // The 101st miss makes it 101 > 100: only the faulting page.
        assert_eq!(p.window(&ctx(true, 0, 20_003)), Window::Target);
        // Another VMA has its own counter.
        assert_eq!(p.window(&ctx(true, 1, 20_003)), Window::Slots { lo: 20_000, hi: 20_007 });
        // Two first-try hits: 101 -> 99; the next miss makes 100, not above: readahead again.
        p.on_cache_hit(&ctx(true, 0, 1), false);
        p.on_cache_hit(&ctx(true, 0, 1), true);
        assert_eq!(p.window(&ctx(true, 0, 30_005)), Window::Slots { lo: 30_000, hi: 30_007 });
    }

    #[test]
    fn retried_faults_do_not_count_as_hits_and_the_counter_saturates() {
        let mut p = Vma2012::default();
        // 1200 misses saturate at 1000.
        for i in 0..1200 {
            p.window(&ctx(true, 0, 16 * i + 16));
        }
        assert_eq!(p.miss[0], MISS_MAX);
        // The retry after waiting for the read (FAULT_FLAG_TRIED) finds the page: no credit.
        let mut c = ctx(true, 0, 5);
        c.tried = true;
        p.on_cache_hit(&c, false);
        assert_eq!(p.miss[0], MISS_MAX);
        // 899 first-try hits bring it to 101: still skipping; one more and a miss lands
        // exactly on 101 again (100 + 1), so two more hits are needed to read ahead.
        for _ in 0..899 {
            p.on_cache_hit(&ctx(true, 0, 5), false);
        }
        assert_eq!(p.miss[0], 101);
        p.on_cache_hit(&ctx(true, 0, 5), false);
        assert_eq!(p.window(&ctx(true, 0, 77)), Window::Target, "100 + 1 miss = 101 > 100");
        p.on_cache_hit(&ctx(true, 0, 5), false);
        p.on_cache_hit(&ctx(true, 0, 5), false);
        assert_ne!(p.window(&ctx(true, 0, 77)), Window::Target, "99 + 1 = 100");
    }

    #[test]
    fn shmem_keeps_blind_cluster_readahead() {
        let mut p = Vma2012::default();
        for i in 0..500 {
            assert_eq!(p.window(&ctx(false, 0, 8 * i + 9)), Window::Slots { lo: 8 * i + 8, hi: 8 * i + 15 });
        }
        assert!(p.miss.is_empty(), "shmem has no anon_vma to count in");
    }
}
