//! VMA-based swap readahead (Huang Ying, 4.14): the window is placed in the faulting VMA's
//! virtual address space by the direction of the last two faults, clamped to the VMA and
//! to the 2 MiB PMD around the fault, and reads whatever swap slots those PTEs hold.
//!
//! Models mm/swap_state.c `swap_vma_ra_win` (the window of `swap_vma_readahead`, whose PTE
//! walk and reads are engine/swap_state.rs `swapin_readahead`). Per-VMA state (the
//! `swap_readahead_info` word: last fault address, window, hits) lives in a side table
//! indexed by VMA id. Shmem, and anon while rotational swap is active (≥4.15) or while
//! `vma_ra_enabled` is off, use the global adaptive cluster readahead instead.

use super::{swapin_nr_pages, Adaptive, FaultCtx, SwapReadahead, Window};
use crate::ids::VmaId;

/// `SWAP_RA_ORDER_CEILING` on 64-bit.
const ORDER_CEILING: u32 = 5;
/// Pages per PMD (2 MiB / 4 KiB).
const PMD_PAGES: u32 = 512;
/// `SWAP_RA_HITS_MAX`.
const HITS_MAX: u32 = 63;

#[derive(Clone, Copy, Debug, Default)]
struct RaInfo {
    /// Page index of the last fault or cache hit, +1 (0: never).
    prev: u32,
    win: u32,
    hits: u32,
}

#[derive(Debug)]
pub struct Vma {
    info: Vec<RaInfo>,
    cluster: Adaptive,
}

impl Vma {
    pub fn new() -> Self {
        Vma { info: Vec::new(), cluster: Adaptive::new() }
    }

    fn uses_vma(ctx: &FaultCtx) -> bool {
        ctx.anon_vma().is_some() && ctx.vma_ra_enabled && !(ctx.vma_ra_needs_nonrotational && ctx.rotational_swap)
    }

    fn info(&mut self, vma: VmaId) -> &mut RaInfo {
        let i = vma.idx();
        if i >= self.info.len() {
            self.info.resize(i + 1, RaInfo::default());
        }
        &mut self.info[i]
    }
}

impl Default for Vma {
    fn default() -> Self {
        Self::new()
    }
}

impl SwapReadahead for Vma {
    fn window(&mut self, ctx: &FaultCtx) -> Window {
        let Some(vma) = ctx.anon_vma().filter(|_| Self::uses_vma(ctx)) else {
            return self.cluster.window(ctx);
        };
        let max_win = 1u32 << ctx.page_cluster.min(ORDER_CEILING);
        let f = ctx.index;
        let info = self.info(vma);
        if max_win == 1 {
            return Window::Target;
        }
        // A VMA never faulted before has prev address 0 (the kernel's zero-initialised word).
        let prev = info.prev.saturating_sub(1) as u64;
        let win = swapin_nr_pages(prev, f as u64, info.hits, max_win, info.win);
        *info = RaInfo { prev: f + 1, win, hits: 0 };
        if win == 1 {
            return Window::Target;
        }
        let (left, right) = if f as u64 == prev + 1 {
            (f as i64, f as i64 + win as i64)
        } else if prev == f as u64 + 1 {
            (f as i64 - win as i64 + 1, f as i64 + 1)
        } else {
            let l = (win as i64 - 1) / 2;
            (f as i64 - l, f as i64 + win as i64 - l)
        };
        let pmd = (f / PMD_PAGES * PMD_PAGES) as i64;
        let start = left.max(0).max(pmd) as u32;
        let end = right.min(ctx.vma_pages as i64).min(pmd + PMD_PAGES as i64) as u32;
        Window::VmaPages { start, end }
    }

    fn on_cache_hit(&mut self, ctx: &FaultCtx, was_readahead: bool) {
        if let Some(vma) = ctx.anon_vma().filter(|_| Self::uses_vma(ctx)) {
            let f = ctx.index;
            let info = self.info(vma);
            let hits = if was_readahead { (info.hits + 1).min(HITS_MAX) } else { info.hits };
            *info = RaInfo { prev: f + 1, win: info.win, hits };
        } else {
            self.cluster.on_cache_hit(ctx, was_readahead);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::swap::readahead::FaultOwner;

    fn ctx(index: u32) -> FaultCtx {
        FaultCtx {
            owner: FaultOwner::Anon(VmaId(3)),
            index,
            vma_pages: 4096,
            slot: 77,
            area_slots: 1 << 20,
            page_cluster: 3,
            rotational_swap: false,
            vma_ra_enabled: true,
            vma_ra_needs_nonrotational: true,
            tried: false,
        }
    }

    #[test]
    fn sequential_faults_ramp_to_eight_forward() {
        let mut p = Vma::new();
        // Fresh VMA: no hits, not adjacent to address 0 -> 1 page.
        assert_eq!(p.window(&ctx(100)), Window::Target);
        // Adjacent, no hits -> 2 pages, forward from the fault.
        assert_eq!(p.window(&ctx(101)), Window::VmaPages { start: 101, end: 103 });
        // The readahead page is hit once: 1 + 2 = 3 -> 4 pages.
        p.on_cache_hit(&ctx(102), true);
        assert_eq!(p.window(&ctx(103)), Window::VmaPages { start: 103, end: 107 });
        for i in 104..107 {
            p.on_cache_hit(&ctx(i), true);
        }
        // 3 hits -> 5 -> 8 pages.
        assert_eq!(p.window(&ctx(107)), Window::VmaPages { start: 107, end: 115 });
    }

    #[test]
    fn backward_and_random_placement_and_pmd_clamp() {
        let mut p = Vma::new();
        p.window(&ctx(600));
        p.on_cache_hit(&ctx(600), true);
        p.on_cache_hit(&ctx(600), true);
        // Fault at 599 after 600: backward, 4 pages ending at the fault.
        assert_eq!(p.window(&ctx(599)), Window::VmaPages { start: 596, end: 600 });
        p.on_cache_hit(&ctx(598), true);
        p.on_cache_hit(&ctx(597), true);
        // Not adjacent to 597: centred (4 pages, 1 to the left) at 1000, but the PMD
        // [512, 1024) clamps the right side.
        assert_eq!(p.window(&ctx(1022)), Window::VmaPages { start: 1021, end: 1024 });
    }

    #[test]
    fn shmem_and_rotational_swap_use_the_global_cluster_window() {
        let mut p = Vma::new();
        let mut c = ctx(100);
        c.owner = FaultOwner::Shmem(0);
        assert_eq!(p.window(&c), Window::Slots { lo: 72, hi: 79 }, "first decision: seeded hits -> 8 slots");
        let mut r = ctx(100);
        r.rotational_swap = true;
        assert!(matches!(p.window(&r), Window::Slots { .. } | Window::Target));
    }
}
