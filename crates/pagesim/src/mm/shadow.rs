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

/// An xarray node of a file's page-cache tree that holds only shadow entries (mm/workingset.c
/// `workingset_update_node` puts such nodes on the `shadow_nodes` list_lru): a leaf node
/// (the 64 slots of pages `[64·block, 64·block + 64)`) or a level-1 node (the 64 slots of
/// 64 pages each above pages `[4096·n, 4096·n + 4096)`, which hold folios of order 6 and
/// more, and their shadows, directly).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XaNode {
    pub file: crate::ids::FileId,
    /// The leaf's block (`index >> 6`), or the level-1 node's number (`index >> 12`).
    pub id: u32,
    pub level: u8,
}

/// One memcg's part of the `shadow_nodes` list_lru (list_lru is memcg aware: a node is on
/// the list of the memcg its slab object is charged to, the one that allocated it) and the
/// shadow shrinker's deferred work for that memcg (`shrinker_info`'s `nr_deferred`).
/// Nodes join at the tail when they come to hold only shadows and the shrinker walks from
/// the head, so the oldest go first.
#[derive(Clone, Debug, Default)]
pub struct ShadowNodeList {
    /// Place on the list (a machine-wide sequence number) → node.
    pub list: std::collections::BTreeMap<u64, XaNode>,
    /// Scan work carried over from earlier `shrink_slab` calls (`nr_deferred`).
    pub nr_deferred: u64,
}

impl ShadowNodeList {
    pub fn len(&self) -> u64 {
        self.list.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}
