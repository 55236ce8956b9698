//! The packed page-table entry (the x86 PTE of arch/x86/include/asm/pgtable_types.h, its
//! accessed, dirty and write bits, and the swap PTE of include/linux/swapops.h): one `u32`
//! per page of a VMA (`Vma::pte`) or per slot of a shmem object, so that a task's hit loop
//! reads one flat array.
//!
//! ```text
//!  31     30      29      28      27 .............................. 0
//! [SWAP] [YOUNG] [DIRTY] [WRITE] [frame + 1                         ]   present
//! [ 1  ] [swap entry: area and slot, crate::mm::swapops::Entry (31 bits)    ]   swapped out
//!  0 ...................................................... 0            none
//! ```
//!
//! - `SWAP` set: the low 31 bits are a swap entry; no other bit is meaningful.
//! - otherwise, non-zero: present. `YOUNG` is the accessed bit (the hardware's, cleared by
//!   `folio_referenced`), `DIRTY` the dirty bit, `WRITE` write permission (clear on a
//!   shared or copy-on-write page, where a write faults). The low 28 bits are the frame
//!   index + 1; 0 there (with `YOUNG` set) is the shared zero page a read fault maps on
//!   never-written anon memory.
//! - 0: nothing mapped (never touched, or unmapped).

use crate::ids::Pfn;

pub const NONE: u32 = 0;
pub const SWAP: u32 = 1 << 31;
pub const YOUNG: u32 = 1 << 30;
pub const DIRTY: u32 = 1 << 29;
pub const WRITE: u32 = 1 << 28;
pub const FRAME: u32 = (1 << 28) - 1;
/// The bits of a present entry other than its frame.
pub const FLAGS: u32 = YOUNG | DIRTY | WRITE;
/// Read fault on never-written anon memory maps the zero page.
pub const ZERO_PAGE: u32 = YOUNG;

#[inline]
pub fn present(f: Pfn, flags: u32) -> u32 {
    f.slot() | flags
}
#[inline]
pub fn is_present(e: u32) -> bool {
    e != NONE && e & SWAP == 0
}
/// Frame of a present entry (`None` for the zero page).
#[inline]
pub fn frame(e: u32) -> Option<Pfn> {
    Pfn::from_slot(e & FRAME)
}
