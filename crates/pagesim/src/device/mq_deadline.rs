//! Models block/mq-deadline.c: the dispatch decision of the deadline I/O scheduler.
//!
//! DOC: mq-deadline keeps, per direction, the queued requests twice: sorted by sector and in
//! arrival order (a FIFO whose head carries a deadline, arrival + `read_expire` or
//! `write_expire`). Each dispatch decision:
//!
//! ```text
//!   1. batch:     the last direction still has a request at or after the position the last
//!                 dispatch of that direction ended, and fewer than fifo_batch were sent in
//!                 this batch  -> send it (one-way elevator, ascending sectors)
//!   2. direction: reads pending -> reads, unless writes are pending and reads were already
//!                 preferred writes_starved times in a row -> writes
//!   3. request:   in that direction, if the FIFO head's deadline has passed, or nothing lies
//!                 at or after the last position -> the FIFO head (oldest); else the next
//!                 request in sector order. A new batch starts.
//! ```
//!
//! So reads are favoured, writes are never starved for more than `writes_starved` read
//! batches, and an expired request jumps the sector order once its direction is served.
//!
//! What we leave out: the I/O priority classes and their aging (5.14+; all requests are
//! best-effort here), zoned-device write locking, and `async_depth`. Merging lives in the
//! queue ([`super::DeviceQueue`]); `front_merges` is read from here.

use super::elevator::ElevatorOps;
use super::{queue::Pending, IoDir};

/// Tunables of mq-deadline, as in `/sys/block/<dev>/queue/iosched/` (parsed from the
/// device's `iosched` table, [`super::IoschedParams`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeadlineParams {
    /// FIFO deadline of a read, ns. Default 500 ms (`read_expire`, HZ / 2).
    pub read_expire: u64,
    /// FIFO deadline of a write, ns. Default 5 s (`write_expire`, 5 * HZ).
    pub write_expire: u64,
    /// Read batches chosen over pending writes before writes must go. Default 2.
    pub writes_starved: u32,
    /// Requests per batch in sector order. Default 16.
    pub fifo_batch: u32,
    /// Allow front merges with queued requests. Default true (`front_merges` = 1).
    pub front_merges: bool,
}

impl Default for DeadlineParams {
    fn default() -> Self {
        // block/mq-deadline.c: read_expire, write_expire, writes_starved, fifo_batch
        DeadlineParams {
            read_expire: 500_000_000,
            write_expire: 5_000_000_000,
            writes_starved: 2,
            fifo_batch: 16,
            front_merges: true,
        }
    }
}

/// Dispatch state of mq-deadline (`struct deadline_data`, one priority level).
#[derive(Clone, Debug)]
pub(super) struct MqDeadline {
    p: DeadlineParams,
    /// Direction of the current batch (`last_dir`).
    last_dir: IoDir,
    /// Requests sent in the current batch (`batching`).
    batching: u32,
    /// Times reads were chosen while writes waited (`starved`).
    starved: u32,
    /// Per direction, the byte offset where the last dispatched request ended (`latest_pos`).
    latest_pos: [u64; 2],
}

impl MqDeadline {
    pub(super) fn new(p: DeadlineParams) -> Self {
        MqDeadline { p, last_dir: IoDir::Read, batching: 0, starved: 0, latest_pos: [0; 2] }
    }

    fn expire(&self, dir: IoDir) -> u64 {
        match dir {
            IoDir::Read => self.p.read_expire,
            IoDir::Write => self.p.write_expire,
        }
    }

    /// First queued request of `dir` at or after the elevator position (`deadline_from_pos`).
    fn next_request(&self, q: &Pending, dir: IoDir) -> Option<u32> {
        let pos = self.latest_pos[dir.index()];
        q.sorted[dir.index()].range((pos, 0)..).next().map(|&(_, rid)| rid)
    }

    /// The FIFO head of `dir` has reached its deadline (`deadline_check_fifo`).
    fn fifo_expired(&self, q: &Pending, dir: IoDir, now: u64) -> bool {
        q.fifo[dir.index()].first().is_some_and(|&(inserted, _, _)| now >= inserted.saturating_add(self.expire(dir)))
    }

    /// Chooses the next request to dispatch (`__dd_dispatch_request`), or `None` if nothing
    /// is queued. The caller removes it from `q` and reports its end with [`Self::dd_dispatched`].
    fn dd_dispatch_request(&mut self, q: &Pending, now: u64) -> Option<u32> {
        if let Some(rid) = self.next_request(q, self.last_dir) {
            if self.batching < self.p.fifo_batch {
                self.batching += 1;
                return Some(rid);
            }
        }
        let reads = !q.fifo[IoDir::Read.index()].is_empty();
        let writes = !q.fifo[IoDir::Write.index()].is_empty();
        let dir = if reads {
            // Post-increment compare: reads win writes_starved times, then writes go.
            let starved = writes && {
                let s = self.starved;
                self.starved += 1;
                s >= self.p.writes_starved
            };
            if starved {
                self.starved = 0;
                IoDir::Write
            } else {
                IoDir::Read
            }
        } else if writes {
            self.starved = 0;
            IoDir::Write
        } else {
            return None;
        };
        let next = self.next_request(q, dir);
        let rid = match next {
            Some(rid) if !self.fifo_expired(q, dir, now) => rid,
            _ => q.fifo[dir.index()].first().map(|&(_, _, rid)| rid)?,
        };
        self.last_dir = dir;
        self.batching = 1;
        Some(rid)
    }

    /// Records that a request of `dir` ending at byte `end` was dispatched (`latest_pos`).
    fn dd_dispatched(&mut self, dir: IoDir, end: u64) {
        self.latest_pos[dir.index()] = end;
    }
}

impl ElevatorOps for MqDeadline {
    fn classify(&mut self, dir: IoDir, _ctx: u32, _now: u64) -> u32 {
        dir.index() as u32
    }
    fn select(&mut self, pending: &Pending, now: u64, _nr_queued: usize) -> Option<u32> {
        self.dd_dispatch_request(pending, now)
    }
    fn dispatched(&mut self, _q: u32, dir: IoDir, end: u64, _now: u64, _pending: &Pending) {
        self.dd_dispatched(dir, end)
    }
}
