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
///
/// A queue of (place, node) in place order (places are a machine-wide sequence): a node
/// that leaves the list only clears its place in its file (`AddressSpace::xa_set_node_lru`),
/// and its entry here, stale from then on, is skipped when the shrinker meets it and
/// dropped when stale entries outnumber the live ones (an O(1) join and leave on the
/// page-cache paths, which run on every read and eviction).
#[derive(Clone, Debug, Default)]
pub struct ShadowNodeList {
    queue: std::collections::VecDeque<(u64, XaNode)>,
    live: u64,
    /// Scan work carried over from earlier `shrink_slab` calls (`nr_deferred`).
    pub nr_deferred: u64,
}

impl ShadowNodeList {
    /// Nodes on the list.
    pub fn len(&self) -> u64 {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Node `node` joins at the tail, at place `seq` (larger than every place before).
    pub fn push(&mut self, seq: u64, node: XaNode) {
        debug_assert!(self.queue.back().is_none_or(|&(s, _)| s < seq));
        self.queue.push_back((seq, node));
        self.live += 1;
    }

    /// A node left the list (its file no longer gives it a place here).
    pub fn left(&mut self) {
        self.live -= 1;
    }

    /// The entry at the head, live or stale: `is_live` tells (its file still gives the node
    /// that place). The first live one leaves the list and is returned.
    pub fn pop_live(&mut self, is_live: impl Fn(u64, &XaNode) -> bool) -> Option<XaNode> {
        while let Some((seq, node)) = self.queue.pop_front() {
            if is_live(seq, &node) {
                self.live -= 1;
                return Some(node);
            }
        }
        None
    }

    /// Drops the stale entries once they outnumber the live ones.
    pub fn compact(&mut self, is_live: impl Fn(u64, &XaNode) -> bool) {
        if self.queue.len() as u64 > 2 * self.live + 64 {
            self.queue.retain(|(seq, node)| is_live(*seq, node));
        }
    }

    /// The node at place `seq`, if an entry there is still queued (for the invariant
    /// checker, which asks only for places files give).
    pub fn get(&self, seq: u64) -> Option<XaNode> {
        let i = self.queue.binary_search_by_key(&seq, |&(s, _)| s).ok()?;
        Some(self.queue[i].1)
    }
}
