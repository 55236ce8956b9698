//! Typed ids of the things the model keeps in flat arrays, so that a device index cannot be
//! passed where a task id is expected. Each wraps the `u32` index into its table and
//! serialises as that number.

use serde::Serialize;

macro_rules! ids {
    ($($(#[$meta:meta])* $Id:ident),* $(,)?) => {$(
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
        #[serde(transparent)]
        pub struct $Id(pub u32);

        impl $Id {
            /// The index into its table.
            #[inline]
            pub fn idx(self) -> usize {
                self.0 as usize
            }
        }

        impl std::fmt::Display for $Id {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    )*};
}

ids! {
    /// A block device: its index in `Io::devices` (the scenario's devices in name order).
    DevId,
    /// A thread: the process slots are 0..n in `Sched::tasks` (the processes the run starts
    /// with, then one per child that spawn and fork steps can start), then kswapd, zswap's
    /// shrink worker and the flushers.
    Tid,
    /// A file: its index in `PageCache::files` (shared files in name order, then per-task
    /// copies in task order).
    FileId,
    /// A VMA: its index in `Mm::vmas` (one per task and region it maps).
    VmaId,
    /// An anon_vma: its index in `Mm::anon_vmas` (a private anonymous region's pages, shared
    /// by the VMAs a fork copies).
    AnonId,
    /// A page frame (the kernel's pfn): its index in the per-frame arrays of
    /// `mm::Frames`.
    Pfn,
    /// A writeback context (`struct bdi_writeback`): its index in `Writeback::wbs`, each
    /// device's root wb first (`WbId(d)` is device `d`'s), then, with cgroup writeback,
    /// one per memcg and device.
    WbId,
}

impl Pfn {
    /// "No frame": the end of an LRU list, an empty link.
    pub const NIL: Pfn = Pfn(u32::MAX);

    /// The encoding of a frame in the slot arrays of the page cache, the swap cache and
    /// shmem objects: frame + 1, so that 0 is an empty slot.
    #[inline]
    pub fn slot(self) -> u32 {
        self.0 + 1
    }

    /// The frame of a slot-array value ([`Pfn::slot`]); `None` for an empty slot.
    #[inline]
    pub fn from_slot(v: u32) -> Option<Pfn> {
        v.checked_sub(1).map(Pfn)
    }
}

/// Lets a table, a `Vec` of the things an id names, be indexed by the id:
/// `index_by!(Task, Tid)` makes `tasks[tid]` work.
macro_rules! index_by {
    ($T:ty, $Id:ty) => {
        impl std::ops::Index<$Id> for Vec<$T> {
            type Output = $T;
            #[inline]
            fn index(&self, id: $Id) -> &$T {
                &self[id.idx()]
            }
        }

        impl std::ops::IndexMut<$Id> for Vec<$T> {
            #[inline]
            fn index_mut(&mut self, id: $Id) -> &mut $T {
                &mut self[id.idx()]
            }
        }
    };
}
pub(crate) use index_by;

// The per-frame arrays of `mm::Frames` (flags, LRU, links, owner index, swap entry, memcg).
index_by!(u8, Pfn);
index_by!(u16, Pfn);
index_by!(u32, Pfn);
index_by!(Pfn, Pfn);
index_by!(bool, Pfn);
