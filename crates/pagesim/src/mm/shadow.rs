//! The shadow entry an evicted page leaves in its page-cache or swap-cache slot (mm/workingset.c
//! `pack_shadow` / `unpack_shadow`): which memcg evicted it, that lruvec's nonresident age
//! at the time, and whether the page was in the workingset. engine/workingset.rs makes
//! and reads them; pagecache/ and swap/ store them.

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
