//! The request queue in front of a device: plugging, merging and dispatch.
//!
//! Models block/blk-core.c and blk-merge.c as far as timing goes: requests added between
//! `blk_start_plug` and `blk_finish_plug` are held, merged when contiguous, and released
//! together; a queued request that is not yet dispatched absorbs a contiguous newcomer of
//! the same direction (back or front merge) up to `max_request_bytes`. Dispatch is FIFO
//! (the `none` scheduler) to the first idle channel.
//!
//! Each request carries the caller's tags (one per page I/O); a completion returns them.

use super::{DeviceModel, IoDir};

/// A request handed to the device: completes at `done_ns`, identified by `rid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dispatched {
    pub rid: u32,
    pub done_ns: u64,
}

/// What a device did, for reports (iostat-like).
#[derive(Clone, Debug, Default)]
pub struct DeviceStats {
    pub reads: u64,
    pub writes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Requests absorbed by merging (not counted in reads/writes).
    pub merges: u64,
    /// Time with at least one request in service, nanoseconds.
    pub busy_ns: u64,
    /// Dispatched request sizes: bucket k counts sizes in (2^(k-1), 2^k] pages, k = 0..15.
    pub size_hist: [u64; 16],
}

#[derive(Clone, Debug)]
struct Request {
    dir: IoDir,
    offset: u64,
    len: u64,
    tags: Vec<u32>,
}

#[derive(Debug)]
pub struct DeviceQueue {
    model: DeviceModel,
    plug: Vec<Request>,
    queue: std::collections::VecDeque<Request>,
    /// In-flight requests by rid; `None` marks a free rid.
    inflight: Vec<Option<Request>>,
    free_rids: Vec<u32>,
    busy_channels: u32,
    busy_since: u64,
    spare: Vec<Vec<u32>>,
    stats: DeviceStats,
}

impl DeviceQueue {
    pub fn new(model: DeviceModel) -> Self {
        DeviceQueue {
            model,
            plug: Vec::new(),
            queue: Default::default(),
            inflight: Vec::new(),
            free_rids: Vec::new(),
            busy_channels: 0,
            busy_since: 0,
            spare: Vec::new(),
            stats: DeviceStats::default(),
        }
    }

    pub fn model(&self) -> &DeviceModel {
        &self.model
    }

    pub fn stats(&self) -> &DeviceStats {
        &self.stats
    }

    /// Requests queued or in service.
    pub fn depth(&self) -> usize {
        self.queue.len() + self.busy_channels as usize
    }

    /// Adds a page-sized or larger request to the current plug (`submit_bio` under a plug).
    pub fn add(&mut self, dir: IoDir, offset: u64, len: u64, tag: u32) {
        let max = self.model.max_request_bytes();
        if let Some(last) = self.plug.last_mut() {
            if last.dir == dir && last.offset + last.len == offset && last.len + len <= max {
                last.len += len;
                last.tags.push(tag);
                self.stats.merges += 1;
                return;
            }
        }
        let mut tags = self.spare.pop().unwrap_or_default();
        tags.push(tag);
        self.plug.push(Request { dir, offset, len, tags });
    }

    /// Releases the plug (`blk_finish_plug`): queues the held requests, merging with queued
    /// ones, and dispatches to idle channels. Newly dispatched requests are appended to `out`.
    pub fn unplug(&mut self, now: u64, out: &mut Vec<Dispatched>) {
        let max = self.model.max_request_bytes();
        let plug = std::mem::take(&mut self.plug);
        for mut r in plug {
            if let Some(q) = self.queue.iter_mut().find(|q| {
                q.dir == r.dir
                    && q.len + r.len <= max
                    && (q.offset + q.len == r.offset || r.offset + r.len == q.offset)
            }) {
                q.offset = q.offset.min(r.offset);
                q.len += r.len;
                q.tags.append(&mut r.tags);
                self.stats.merges += 1;
                self.spare.push(r.tags);
            } else {
                self.queue.push_back(r);
            }
        }
        self.dispatch(now, out);
    }

    /// Completion of request `rid` at `now`: its tags are appended to `tags`; requests the
    /// freed channel dispatches are appended to `out`.
    pub fn complete(&mut self, now: u64, rid: u32, tags: &mut Vec<u32>, out: &mut Vec<Dispatched>) {
        let mut r = self.inflight[rid as usize].take().expect("completion of a request not in flight");
        self.free_rids.push(rid);
        tags.extend_from_slice(&r.tags);
        r.tags.clear();
        self.spare.push(r.tags);
        self.busy_channels -= 1;
        if self.busy_channels == 0 {
            self.stats.busy_ns += now - self.busy_since;
        }
        self.dispatch(now, out);
    }

    fn dispatch(&mut self, now: u64, out: &mut Vec<Dispatched>) {
        while self.busy_channels < self.model.channels() {
            let Some(r) = self.queue.pop_front() else { break };
            if self.busy_channels == 0 {
                self.busy_since = now;
            }
            self.busy_channels += 1;
            let service = self.model.service_ns(r.dir, r.offset, r.len, now);
            match r.dir {
                IoDir::Read => {
                    self.stats.reads += 1;
                    self.stats.read_bytes += r.len;
                }
                IoDir::Write => {
                    self.stats.writes += 1;
                    self.stats.write_bytes += r.len;
                }
            }
            let pages = r.len.div_ceil(4096).max(1);
            let bucket = (64 - (pages - 1).leading_zeros()) as usize;
            self.stats.size_hist[bucket.min(15)] += 1;
            let rid = match self.free_rids.pop() {
                Some(rid) => {
                    self.inflight[rid as usize] = Some(r);
                    rid
                }
                None => {
                    self.inflight.push(Some(r));
                    (self.inflight.len() - 1) as u32
                }
            };
            out.push(Dispatched { rid, done_ns: now + service.max(1) });
        }
    }
}
