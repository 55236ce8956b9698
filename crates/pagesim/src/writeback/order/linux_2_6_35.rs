//! The 2.6.35 flusher (seed 003's baseline): fs/fs-writeback.c `wb_writeback`,
//! `writeback_inodes_wb` and `writeback_single_inode` as of 2.6.35.
//!
//! kupdate computes `older_than_this = start - dirty_expire_interval` once, when its work
//! begins, and refills `b_io` only when it is empty; every other round refills `b_io` with
//! every dirty inode. A round writes at most `MAX_WRITEBACK_PAGES`, shared by the inodes it
//! visits; an inode still dirty afterwards goes to `b_more_io` only when kupdate used up
//! the round's budget on it, else back to `b_dirty` (`redirty_tail`). A round stops at an
//! inode dirtied after it began; a short round with nothing left on `b_more_io` ends the
//! work. There is no `wb_check_background_flush`: background writeback runs only when
//! `balance_dirty_pages` queues it, while dirty pages are at or over the background limit.

use super::{Requeue, WritebackOrder};
use crate::writeback::{WbWork, WorkKind};

#[derive(Debug, Clone, Copy, Default)]
pub struct Linux2635;

impl WritebackOrder for Linux2635 {
    fn cutoff(&self, work: &WbWork, _now: u64, expire_ns: u64, _oldest_dirty: Option<u64>) -> Option<u64> {
        match work.kind {
            WorkKind::Kupdate => Some(work.start_ns.saturating_sub(expire_ns)),
            _ => None,
        }
    }

    fn queue_io_always(&self, kind: WorkKind) -> bool {
        kind != WorkKind::Kupdate
    }

    fn more_io_first(&self) -> bool {
        true
    }

    fn per_inode_chunk(&self) -> bool {
        false
    }

    fn requeue(&self, kind: WorkKind, used_up: bool) -> Requeue {
        if kind == WorkKind::Kupdate && used_up {
            Requeue::MoreIo
        } else {
            Requeue::DirtyTail
        }
    }

    fn checks_background(&self) -> bool {
        false
    }

    fn over_background(&self, dirty: u64, bg: u64) -> bool {
        dirty >= bg
    }

    fn short_round_ends_work(&self) -> bool {
        true
    }

    fn stops_at_newer_inode(&self) -> bool {
        true
    }
}
