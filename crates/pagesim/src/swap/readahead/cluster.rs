//! Blind cluster readahead, as in 3.4–3.13 `swapin_readahead`: read the whole naturally
//! aligned block of 2^page_cluster slots around the faulting slot, whatever the access
//! pattern. Nothing is learned from hits.

use super::{aligned_block, FaultCtx, SwapReadahead, Window};

#[derive(Debug, Default)]
pub struct BlindCluster;

impl SwapReadahead for BlindCluster {
    fn window(&mut self, ctx: &FaultCtx) -> Window {
        aligned_block(ctx.slot, 1 << ctx.page_cluster, ctx.area_slots)
    }
    fn on_cache_hit(&mut self, _ctx: &FaultCtx, _was_readahead: bool) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::VmaId;
    use crate::swap::readahead::FaultOwner;

    fn ctx(slot: u32, pc: u32) -> FaultCtx {
        FaultCtx {
            owner: FaultOwner::Anon(VmaId(0)),
            index: 0,
            vma_pages: 1 << 20,
            slot,
            area_slots: 1000,
            page_cluster: pc,
            rotational_swap: false,
            vma_ra_enabled: true,
            vma_ra_needs_nonrotational: true,
            tried: false,
        }
    }

    #[test]
    fn aligned_block_around_the_fault_without_the_header() {
        let mut p = BlindCluster;
        assert_eq!(p.window(&ctx(13, 3)), Window::Slots { lo: 8, hi: 15 });
        assert_eq!(p.window(&ctx(3, 3)), Window::Slots { lo: 1, hi: 7 }, "slot 0 is the header");
        assert_eq!(p.window(&ctx(998, 4)), Window::Slots { lo: 992, hi: 999 }, "clamped to the area");
        assert_eq!(p.window(&ctx(13, 0)), Window::Target);
        // Hits change nothing: the window is blind.
        p.on_cache_hit(&ctx(13, 3), true);
        assert_eq!(p.window(&ctx(500, 3)), Window::Slots { lo: 496, hi: 503 });
    }
}
