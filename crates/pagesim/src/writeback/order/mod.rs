//! Which dirty inodes the flusher writes next: the `older_than_this` cutoff of each round
//! of `wb_writeback`, when `queue_io` refills `b_io`, how the round's page budget is shared,
//! and where an inode that still has dirty pages goes after its turn.
//!
//! Models the parts of fs/fs-writeback.c `wb_writeback`, `writeback_inodes_wb`,
//! `writeback_sb_inodes` and `requeue_inode` (2.6.35: `writeback_single_inode`) that changed
//! between versions and that seed 003 is about. A policy is one file; [`REGISTRY`] lists
//! them; engine/fs_writeback.rs asks the closed enum [`WbOrder`] and does the writing.
//!
//! DOC: in 2.6.35 the flusher runs kupdate every 5 s and background writeback only when
//! `balance_dirty_pages` queues it. A background round takes every dirty inode into `b_io`
//! and a large file
//! that still has dirty pages after its 1024-page slice goes back to the *head* of
//! `b_dirty` (`redirty_tail`), made as young as now; kupdate's cutoff is fixed when its work
//! starts and `b_io` is refilled only once empty. Small files dirtied long ago can then wait
//! behind large ones until their pages reach the LRU tail, where reclaim writes them one by
//! one (`pageout`). Wu Fengguang's series (the seed's `flusholdest`) makes kupdate's cutoff
//! a moving target, has background writeback take expired inodes first, queues requeued
//! inodes after the ones already waiting, and goes on with new rounds (each refill takes the
//! newly expired inodes) while rounds write something. The modern flusher (3.2+) gives each
//! inode its own chunk sized from the write bandwidth and the dirty limit, requeues an inode
//! whose chunk ran out to `b_more_io`, and recomputes both cutoffs every round.

mod flusholdest;
mod linux_2_6_35;
mod modern;

pub use flusholdest::FlushOldest;
pub use linux_2_6_35::Linux2635;
pub use modern::Modern;

use super::{WbWork, WorkKind};

/// `MAX_WRITEBACK_PAGES` (2.6.35) and `MIN_WRITEBACK_PAGES` (3.2+): 4 MiB of pages.
pub const MAX_WRITEBACK_PAGES: u64 = 1024;

/// Where an inode that still has dirty pages goes after its turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requeue {
    /// `requeue_io`: to `b_more_io`, written again in this work's next `queue_io`.
    MoreIo,
    /// `redirty_tail`: back to the head of `b_dirty`, behind every other dirty inode.
    DirtyTail,
}

/// A flusher inode order. `now`, `expire_ns` in ns; `oldest_dirty` is the `dirtied_when` of
/// the oldest inode still on `b_dirty`.
pub trait WritebackOrder {
    /// The `older_than_this` cutoff of a round of `work` at `now`: inodes dirtied at or
    /// before it are queued; `None`: every dirty inode.
    fn cutoff(&self, work: &WbWork, now: u64, expire_ns: u64, oldest_dirty: Option<u64>) -> Option<u64>;
    /// Whether a round of `kind` calls `queue_io` though `b_io` still holds inodes.
    fn queue_io_always(&self, kind: WorkKind) -> bool;
    /// Whether `queue_io` puts `b_more_io` where it is written before what `b_io` still
    /// holds (2.6.35 splices it at the consuming end).
    fn more_io_first(&self) -> bool;
    /// Whether each inode gets a chunk of its own (3.2+ `writeback_chunk_size`) rather than
    /// the round's 1024 pages being shared by the inodes it visits (2.6.35).
    fn per_inode_chunk(&self) -> bool;
    /// Where an inode with dirty pages left goes after writing in a round of `kind`;
    /// `used_up`: it wrote its whole budget.
    fn requeue(&self, kind: WorkKind, used_up: bool) -> Requeue;
    /// Whether the flusher starts background writeback itself when dirty pages pass the
    /// background threshold (`wb_check_background_flush`, 2.6.36+); before, only
    /// `balance_dirty_pages` queues background work.
    fn checks_background(&self) -> bool;
    /// Whether `dirty` pages are over background threshold `bg` (2.6.35 compares with
    /// `>=`, later kernels with `>`).
    fn over_background(&self, dirty: u64, bg: u64) -> bool;
    /// Whether a round that wrote less than its budget and left nothing on `b_more_io` ends
    /// the work (2.6.35); later kernels go on while rounds make progress.
    fn short_round_ends_work(&self) -> bool;
    /// Whether a round stops at an inode dirtied after the round began (2.6.35's livelock
    /// guard, `wbc->wb_start`; later kernels rely on the cutoff instead).
    fn stops_at_newer_inode(&self) -> bool;
}

crate::registry::registry! {
    /// The closed set of orders, for dispatch without `Box<dyn>`.
    #[derive(Debug, Clone)]
    pub enum WbOrder: WritebackOrder {
        fn cutoff(&self, work: &WbWork, now: u64, expire_ns: u64, oldest_dirty: Option<u64>) -> Option<u64>;
        fn queue_io_always(&self, kind: WorkKind) -> bool;
        fn more_io_first(&self) -> bool;
        fn per_inode_chunk(&self) -> bool;
        fn requeue(&self, kind: WorkKind, used_up: bool) -> Requeue;
        fn checks_background(&self) -> bool;
        fn over_background(&self, dirty: u64, bg: u64) -> bool;
        fn short_round_ends_work(&self) -> bool;
        fn stops_at_newer_inode(&self) -> bool;
    }

    /// Every flusher order, by the name scenarios use (`kernel.writeback_order`).
    pub const REGISTRY = [
        Linux2635 => "linux-2.6.35", Linux2635,
            "2.6.35: kupdate's cutoff fixed at its start, background takes every inode, 1024 pages a round \
             shared by the inodes, a large inode left dirty goes back to b_dirty's head",
            Linux2635;
        FlushOldest => "flusholdest", FlushOldest,
            "2.6.35 with Wu Fengguang's \"write older pages first\" (seed 003): kupdate's cutoff moves with the \
             clock, background writes expired inodes first, b_more_io after what b_io holds, rounds go on while \
             they write",
            FlushOldest;
        Modern => "modern", Modern,
            "3.2+: a chunk per inode from the write bandwidth and the dirty limit, kupdate and background \
             cutoffs recomputed every round, an inode whose chunk ran out goes to b_more_io",
            Modern;
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(kind: WorkKind, start_ns: u64) -> WbWork {
        WbWork { kind, nr_pages: u64::MAX, start_ns, range_cyclic: true }
    }

    /// The three orders on the rules seed 003 compares them by.
    #[test]
    fn kupdate_cutoffs_move_with_the_clock_except_in_2_6_35() {
        let (old, oldest, modern) =
            (WbOrder::Linux2635(Linux2635), WbOrder::FlushOldest(FlushOldest), WbOrder::Modern(Modern));
        let k = work(WorkKind::Kupdate, 100);
        assert_eq!(old.cutoff(&k, 500, 30, None), Some(70), "fixed at the work's start");
        assert_eq!(oldest.cutoff(&k, 500, 30, None), Some(470));
        assert_eq!(modern.cutoff(&k, 500, 30, None), Some(470));
    }

    #[test]
    fn background_writeback_takes_expired_inodes_first_only_under_flusholdest() {
        let b = work(WorkKind::Background, 100);
        let (old, oldest, modern) =
            (WbOrder::Linux2635(Linux2635), WbOrder::FlushOldest(FlushOldest), WbOrder::Modern(Modern));
        let ms = 1_000_000;
        let (now, expire) = (100_000 * ms, 30_000 * ms);
        assert_eq!(old.cutoff(&b, now, expire, Some(10)), None);
        assert_eq!(oldest.cutoff(&b, now, expire, Some(10)), Some(now - expire), "an expired inode exists");
        // The oldest was dirtied 20 s ago: 30 s halves to 15 s, which it passes.
        assert_eq!(oldest.cutoff(&b, now, expire, Some(now - 20_000 * ms)), Some(now - 15_000 * ms));
        assert_eq!(oldest.cutoff(&b, now, expire, Some(now)), None, "none old enough: all of them");
        assert_eq!(modern.cutoff(&b, now, expire, Some(10)), Some(now));
    }

    #[test]
    fn a_large_inode_left_dirty_goes_back_to_b_dirty_in_2_6_35_background_writeback() {
        let old = WbOrder::Linux2635(Linux2635);
        assert_eq!(old.requeue(WorkKind::Background, true), Requeue::DirtyTail);
        assert_eq!(old.requeue(WorkKind::Kupdate, true), Requeue::MoreIo);
        assert_eq!(old.requeue(WorkKind::Kupdate, false), Requeue::DirtyTail);
        let modern = WbOrder::Modern(Modern);
        assert_eq!(modern.requeue(WorkKind::Background, true), Requeue::MoreIo);
        assert!(modern.per_inode_chunk() && !old.per_inode_chunk());
    }

    /// 2.6.35's flusher leaves background writeback to balance_dirty_pages and counts the
    /// threshold itself as over.
    #[test]
    fn only_later_flushers_start_background_writeback_themselves() {
        let (old, oldest, modern) =
            (WbOrder::Linux2635(Linux2635), WbOrder::FlushOldest(FlushOldest), WbOrder::Modern(Modern));
        assert!(!old.checks_background() && !oldest.checks_background() && modern.checks_background());
        assert!(old.queue_io_always(WorkKind::Background) && !oldest.queue_io_always(WorkKind::Background));
        assert!(old.more_io_first() && !oldest.more_io_first());
        assert_eq!(oldest.requeue(WorkKind::Background, true), Requeue::MoreIo);
        assert!(!oldest.short_round_ends_work());
        assert!(old.over_background(100, 100) && !modern.over_background(100, 100));
        assert!(old.short_round_ends_work() && !modern.short_round_ends_work());
        assert!(old.stops_at_newer_inode() && !modern.stops_at_newer_inode());
    }
}
