//! Wu Fengguang's "writeback: try to write older pages first" (RFC, 22 July 2010, on
//! linux-next of 2.6.35-rc5; seed 003's `flusholdest`), with the two patches of his 11 July
//! series it builds on:
//! - "fix queue_io() ordering": `b_more_io` is spliced at the head of `b_io`, after the
//!   inodes `b_io` still holds, so a requeued large inode does not stand before them;
//! - "merge for_kupdate and !for_kupdate cases": every work sends an inode that used up its
//!   slice to `b_more_io` and only a blocked one back to `b_dirty` (`redirty_tail`, which
//!   may make it as young as now);
//! - "the kupdate expire timestamp should be a moving target": kupdate's cutoff is
//!   `now - dirty_expire_interval` at every `queue_io`;
//! - "sync expired inodes first in background writeback": background writeback takes
//!   expired inodes too, halving the expire interval until some inode qualifies (down to
//!   every inode), and, like kupdate, refills `b_io` only once it is empty;
//! - "try more writeback as long as something was written": a round that wrote anything
//!   is followed by another, so each refill takes the newly expired inodes.
//!
//! The rest is 2.6.35's: 1024 pages a round shared by the inodes, the round's stop at an
//! inode dirtied after it began, no `wb_check_background_flush`. Mel Gorman's tables ran
//! these on 2.6.35-rc6 with his reclaim series (docs/model.md, seed 003).

use super::{Linux2635, Modern, Requeue, WritebackOrder};
use crate::writeback::throttle::JIFFY_NS;
use crate::writeback::{WbWork, WorkKind};

#[derive(Debug, Clone, Copy, Default)]
pub struct FlushOldest;

impl WritebackOrder for FlushOldest {
    fn cutoff(&self, work: &WbWork, now: u64, expire_ns: u64, oldest_dirty: Option<u64>) -> Option<u64> {
        match work.kind {
            WorkKind::Kupdate => Some(now.saturating_sub(expire_ns)),
            WorkKind::Background => {
                // move_expired_inodes: the interval halves (in jiffies) while even the
                // oldest inode is younger than it; at 0 every inode qualifies.
                let mut interval = expire_ns / JIFFY_NS;
                let oldest = oldest_dirty?;
                while interval > 0 && oldest > now.saturating_sub(interval * JIFFY_NS) {
                    interval >>= 1;
                }
                (interval > 0).then(|| now.saturating_sub(interval * JIFFY_NS))
            }
            _ => None,
        }
    }

    fn queue_io_always(&self, kind: WorkKind) -> bool {
        !matches!(kind, WorkKind::Kupdate | WorkKind::Background)
    }

    fn more_io_first(&self) -> bool {
        false
    }

    fn per_inode_chunk(&self) -> bool {
        Linux2635.per_inode_chunk()
    }

    fn requeue(&self, kind: WorkKind, used_up: bool) -> Requeue {
        // "merge for_kupdate and !for_kupdate cases": the rule the modern flusher kept.
        Modern.requeue(kind, used_up)
    }

    fn checks_background(&self) -> bool {
        Linux2635.checks_background()
    }

    fn over_background(&self, dirty: u64, bg: u64) -> bool {
        Linux2635.over_background(dirty, bg)
    }

    fn short_round_ends_work(&self) -> bool {
        false
    }

    fn stops_at_newer_inode(&self) -> bool {
        Linux2635.stops_at_newer_inode()
    }
}
