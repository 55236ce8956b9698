//! The VMA (include/linux/mm_types.h `struct vm_area_struct`, [`Vma`]): a task's region,
//! its page table and its readahead hint; and the anon_vma ([`AnonVma`], include/linux/rmap.h)
//! through which reclaim finds every PTE that maps a private anonymous page. Creating and
//! tearing VMAs down (mm/mmap.c `mmap_region`, `do_vmi_munmap`, `exit_mmap`; kernel/fork.c
//! `dup_mmap`) is engine/mmap.rs and engine/fork.rs.
//!
//! The kernel gives a forked child's VMA an anon_vma of its own, chained to the parent's
//! (`anon_vma_fork`), so that a page the child faults in later is looked for only in the
//! child. pagesim gives the child's VMA the parent's anon_vma: one flat family per region
//! lineage, whose rmap walk visits every VMA of the family (each is checked for the page,
//! as `page_vma_mapped_walk` does). The walk finds the same PTEs; it visits more VMAs for a
//! page that only the child maps.

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
    /// A VM_EXEC mapping on 6.17+ (Ryan Roberts, "mm/filemap: allow arch to request folio
    /// size for exec memory"): a fault reads forward from the faulting page to at most
    /// `ra_pages` and the end of the VMA, page `vma_end`, with no async part, whatever
    /// MADV_RANDOM says. Not a madvise hint: the fault path makes it from the VMA's flags.
    Exec { vma_end: u64 },
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
    /// PTEs: one per page, indexed by the page's index in the object mapped (a file VMA's
    /// PTE `i` maps file page `i`).
    pub pages: u32,
    pub pte: Vec<u32>,
    /// A file VMA's first page (`vm_pgoff`): its PTEs below it are outside the mapping and
    /// stay empty. 0 but for a replayed trace's mapping made at a file offset.
    pub pgoff: u32,
    /// Index of its region in the scenario's region order (for the page content model).
    pub region: u32,
    /// The anon_vma of a private anonymous VMA (`AnonId`); none for shmem and file VMAs.
    pub anon: Option<crate::ids::AnonId>,
    /// VM_EXEC: a program's text.
    pub exec: bool,
    /// In use (a torn-down VMA's slot waits in `Mm::free_vmas` for reuse).
    pub live: bool,
}

impl Vma {
    /// Whether the folio of `nr` pages at file page `first` lies inside this file VMA
    /// (`[pgoff, pages)`): from 6.18 fault-around and `finish_fault` map such a folio whole.
    #[inline]
    pub fn holds_folio(&self, first: u64, nr: u64) -> bool {
        first >= self.pgoff as u64 && first + nr <= self.pages as u64
    }
}

crate::ids::index_by!(Vma, crate::ids::VmaId);

/// A private anonymous memory lineage (`struct anon_vma`): the VMAs that may map its pages,
/// the VMA that faulted first and every VMA forked from one that maps them.
#[derive(Debug, Default)]
pub struct AnonVma {
    pub mappers: Vec<crate::ids::VmaId>,
    /// The region its pages belong to, and the key of its pages' content (the id of the
    /// first VMA: page content is a function of the key and the page index).
    pub region: u32,
    pub key: u32,
}

crate::ids::index_by!(AnonVma, crate::ids::AnonId);
