//! The `none` scheduler (blk-mq without an elevator): requests go to the device in the
//! order they were queued, one scheduler queue per direction.

use super::elevator::ElevatorOps;
use super::{queue::Pending, IoDir};

/// `none`: no state; the queue's FIFO index is the order.
#[derive(Debug, Default)]
pub(super) struct Noop;

impl ElevatorOps for Noop {
    fn classify(&mut self, dir: IoDir, _ctx: u32, _now: u64) -> u32 {
        dir.index() as u32
    }

    fn select(&mut self, pending: &Pending, _now: u64, _nr_queued: usize) -> Option<u32> {
        let heads = pending.fifo.iter().filter_map(|f| f.first());
        heads.min().map(|&(_, _, rid)| rid)
    }
}
