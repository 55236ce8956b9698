//! Swap: the state of swap areas and the swap-in readahead policies. swapfile.rs: a swap
//! area, its swap map and slot allocator, its swap cache and shadow arrays; readahead/: the
//! swap-in readahead policies (which slots a fault reads); zswap.rs: zswap's pool, entries
//! and LRU. The paths over this state cross into mm and the block layer, so they are in
//! engine/: swap_state.rs (the swap cache and the reading side of swap-in readahead),
//! page_io.rs (`swap_writepage`, zeromap, zswap, synchronous devices) and zswap.rs (store,
//! load, the shrink worker). The page-content model that compression needs is mm/compress.rs.
//!
//! Here: the swap state of the machine. The swap entry (`swp_entry_t`) is
//! `crate::mm::swapops::Entry`, the shadow an evicted page leaves `crate::mm::shadow::Shadow`.

pub mod readahead;
pub mod swap_slots;
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
    /// The per-CPU swap slots caches (4.11-6.13).
    pub(crate) slots: swap_slots::SlotsCache,
    /// `swap_avail_lock`: the list of areas with free slots.
    pub(crate) avail_lock: crate::locking::LockId,
    /// Slots a refill or a free batch is working on (a buffer kept between calls).
    pub(crate) scratch: Vec<Entry>,
}

impl Swap {
    pub(crate) fn new(
        areas: Vec<SwapArea>,
        ra: readahead::SwapRa,
        zswap: zswap::Zswap,
        content: crate::mm::compress::PageContent,
    ) -> Swap {
        Swap {
            areas,
            rr: 0,
            ra,
            zswap,
            content,
            slots: swap_slots::SlotsCache::default(),
            avail_lock: crate::locking::LockId(0),
            scratch: Vec::new(),
        }
    }
}
