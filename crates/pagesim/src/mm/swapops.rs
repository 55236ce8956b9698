//! Models the swap entry of include/linux/mm_types.h (`swp_entry_t`) and its accessors in
//! include/linux/swapops.h (`swp_type`, `swp_offset`): what a PTE or a shmem slot holds
//! for a page that is out on swap. Packed in 31 bits so that it fits a PTE beside
//! `pte::SWAP` (mm/pte.rs).

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
    /// The entry `k` slots on in the same area (page k of a large folio swapped out at
    /// `self`).
    #[inline]
    pub fn offset(self, k: u32) -> Entry {
        Entry::new(self.area() as u32, self.slot() + k)
    }
}
