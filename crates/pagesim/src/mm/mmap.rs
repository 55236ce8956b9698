//! The VMA (include/linux/mm_types.h `struct vm_area_struct`, [`Vma`]): a task's region,
//! its page table and its readahead hint. Tearing VMAs down when a task exits (mm/mmap.c
//! `exit_mmap`) is engine/mmap.rs.

use crate::ids::Tid;

/// The VMA's readahead hint from `madvise` (its VM_SEQ_READ / VM_RAND_READ flags), read by
/// fault readahead (pagecache/readahead/).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum VmHint {
    #[default]
    Normal,
    /// MADV_SEQUENTIAL (VM_SEQ_READ).
    Sequential,
    /// MADV_RANDOM (VM_RAND_READ).
    Random,
}

/// A virtual memory area: one region instance mapped by one task.
#[derive(Debug)]
pub struct Vma {
    pub task: Tid,
    /// The shmem object it maps, or `None` for private anonymous memory.
    pub shmem: Option<u32>,
    /// The file it maps (read-only, shared), or `None`.
    pub file: Option<crate::ids::FileId>,
    /// Readahead state of the mapping's open file (`vmf->file->f_ra`); file VMAs only.
    pub ra: u32,
    /// madvise hint of a file VMA.
    pub hint: VmHint,
    /// MADV_WILLNEED is still to be applied (at the VMA's first fault).
    pub willneed: bool,
    pub pages: u32,
    pub pte: Vec<u32>,
    /// Index of its region in the scenario's region order (for the page content model).
    pub region: u32,
}

crate::ids::index_by!(Vma, crate::ids::VmaId);
