//! Swap: swap areas and their slot allocator (swapfile.rs), the swap cache and the reading
//! side of swap-in readahead (swap_state.rs), the swap-in readahead policies (readahead/),
//! the page I/O that does not go through a bio (page_io.rs: zeromap, zswap, synchronous
//! devices), zswap (zswap.rs) and the page-content model that compression needs
//! (compress.rs).
//!
//! Here: the swap entry (`swp_entry_t`: area and slot) and the workingset shadow that an
//! evicted page leaves in its swap-cache or page-cache slot.

pub mod compress;
pub mod page_io;
pub mod readahead;
pub mod swap_state;
pub mod swapfile;
pub mod zswap;

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
    pub(crate) content: compress::PageContent,
}

impl Swap {
    pub(crate) fn new(
        areas: Vec<SwapArea>,
        ra: readahead::SwapRa,
        zswap: zswap::Zswap,
        content: compress::PageContent,
    ) -> Swap {
        Swap { areas, rr: 0, ra, zswap, content }
    }
}

const AREA_SHIFT: u32 = 27;
const SLOT_MASK: u32 = (1 << AREA_SHIFT) - 1;

/// A swap entry: area (4 bits) and slot offset (27 bits). Never 0: slot 0 is the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Entry(pub u32);

impl Entry {
    #[inline]
    pub fn new(area: u32, slot: u32) -> Entry {
        debug_assert!(area < 16 && slot > 0 && slot <= SLOT_MASK);
        Entry(area << AREA_SHIFT | slot)
    }
    #[inline]
    pub fn area(self) -> usize {
        ((self.0 >> AREA_SHIFT) & 0xf) as usize
    }
    #[inline]
    pub fn slot(self) -> u32 {
        self.0 & SLOT_MASK
    }
}

/// A workingset shadow entry (`pack_shadow`): the eviction memcg, the lruvec's
/// nonresident age at eviction, and whether the page was in the workingset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shadow {
    pub memcg: u16,
    pub age: u64,
    pub workingset: bool,
}

impl Shadow {
    pub(crate) fn pack(self) -> u64 {
        (self.age << 17) | ((self.memcg as u64) << 1) | self.workingset as u64
    }
    pub(crate) fn unpack(v: u64) -> Shadow {
        Shadow { memcg: ((v >> 1) & 0xffff) as u16, age: v >> 17, workingset: v & 1 != 0 }
    }
}
