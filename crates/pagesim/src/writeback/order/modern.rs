//! The flusher from 3.2 on (3.14 and 6.6 read): fs/fs-writeback.c `wb_writeback`,
//! `writeback_sb_inodes`, `writeback_chunk_size`, `requeue_inode`.
//!
//! Each round recomputes its cutoff: kupdate `now - dirty_expire_interval`, background
//! `now` (inodes dirtied since the round began wait for the next); other work uses the time
//! it began. `b_io` is refilled only when empty. Each inode gets a chunk of its own (the
//! engine sizes it from the write bandwidth and the dirty limit); an inode that used its
//! whole chunk and is still dirty goes to `b_more_io`, one that stopped short goes back to
//! `b_dirty`. The flusher starts background writeback itself when dirty pages pass the
//! background threshold (`wb_check_background_flush`).

use super::{Requeue, WritebackOrder};
use crate::writeback::{WbWork, WorkKind};

#[derive(Debug, Clone, Copy, Default)]
pub struct Modern;

impl WritebackOrder for Modern {
    fn cutoff(&self, work: &WbWork, now: u64, expire_ns: u64, _oldest_dirty: Option<u64>) -> Option<u64> {
        Some(match work.kind {
            WorkKind::Kupdate => now.saturating_sub(expire_ns),
            WorkKind::Background => now,
            WorkKind::Vmscan | WorkKind::StartAll | WorkKind::Sync | WorkKind::Throttle => work.start_ns,
        })
    }

    fn queue_io_always(&self, _kind: WorkKind) -> bool {
        false
    }

    fn more_io_first(&self) -> bool {
        false
    }

    fn per_inode_chunk(&self) -> bool {
        true
    }

    fn requeue(&self, _kind: WorkKind, used_up: bool) -> Requeue {
        if used_up {
            Requeue::MoreIo
        } else {
            Requeue::DirtyTail
        }
    }

    fn checks_background(&self) -> bool {
        true
    }

    fn over_background(&self, dirty: u64, bg: u64) -> bool {
        dirty > bg
    }

    fn short_round_ends_work(&self) -> bool {
        false
    }

    fn stops_at_newer_inode(&self) -> bool {
        false
    }
}
