//! A shmem (tmpfs) object (mm/shmem.c's inode and its `address_space`): its pages, each
//! present (a frame), swapped out (a swap entry) or never touched. The fault path over it,
//! `shmem_fault`, is engine/shmem.rs.

/// A shmem (tmpfs) object: its page cache holds frames or swap entries.
#[derive(Debug)]
pub struct ShmemObj {
    /// frame + 1, or `pte::SWAP | entry`, or 0 (hole).
    pub slots: Vec<u32>,
    /// VMAs mapping it.
    pub mappers: Vec<crate::ids::VmaId>,
}
