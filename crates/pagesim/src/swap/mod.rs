//! Swap: swap areas and their slot allocator (swapfile.rs), the swap cache and the reading
//! side of swap-in readahead (swap_state.rs: a page read goes to swap/page_io.rs when it
//! can be done in place, else to engine/block.rs `submit_bio`), the swap-in readahead
//! policies (readahead/), the writing side and the paths that end without a bio
//! (page_io.rs: `swap_writepage`, zeromap, zswap, synchronous devices), and zswap
//! (zswap.rs). The page-content model that compression needs is mm/compress.rs.
//!
//! Here: the swap state of the machine. The swap entry (`swp_entry_t`) is
//! `crate::mm::swapops::Entry`, the shadow an evicted page leaves `crate::mm::shadow::Shadow`.

pub mod page_io;
pub mod readahead;
pub mod swap_state;
pub mod swapfile;
pub mod zswap;

pub use crate::mm::shadow::Shadow;
pub use crate::mm::swapops::Entry;
pub use swapfile::{SwapArea, BAD, CLUSTER, COUNT_MASK, HAS_CACHE};

/// The swap state of the machine: the swap areas in the order they are used (the
/// allocator's methods are in swapfile.rs), the swap-in readahead policy, zswap, and the
/// content of swapped pages (what compression sees).
pub struct Swap {
    pub(crate) areas: Vec<SwapArea>,
    /// Round-robin cursor among equal priorities.
    pub(crate) rr: usize,
    pub(crate) ra: readahead::SwapRa,
    pub(crate) zswap: zswap::Zswap,
    pub(crate) content: crate::mm::compress::PageContent,
}

impl Swap {
    pub(crate) fn new(
        areas: Vec<SwapArea>,
        ra: readahead::SwapRa,
        zswap: zswap::Zswap,
        content: crate::mm::compress::PageContent,
    ) -> Swap {
        Swap { areas, rr: 0, ra, zswap, content }
    }
}
