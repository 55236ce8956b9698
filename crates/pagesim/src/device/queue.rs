//! The request queue in front of a device: plugging, merging and dispatch.
//!
//! DOC: models block/blk-core.c, blk-merge.c and blk-mq-sched.c as far as timing goes.
//! Requests added between `blk_start_plug` and `blk_finish_plug` are held in the plug, and a
//! newcomer contiguous with the last plugged request of the same direction is merged into it
//! (`blk_attempt_plug_merge`). At unplug each held request is offered to the scheduler queue:
//! a queued (not yet dispatched) request of the same direction that ends where it starts
//! absorbs it (back merge) or, if front merges are allowed, one that starts where it ends
//! (front merge), up to `max_sectors_kb`; after a merge the grown request is merged with its
//! new neighbour if they now touch (`attempt_back_merge`, `attempt_front_merge`). Otherwise
//! it is queued. Requests then go to idle channels in the order the scheduler picks:
//!
//! - `none`: arrival order (blk-mq without an elevator);
//! - `mq-deadline`: see [`super::mq_deadline`].
//!
//! Each request carries the caller's tags (one per page I/O); a completion returns them.
//! Request ids (`rid`) index a slab that holds queued and in-flight requests alike, so a
//! request is never moved between containers.
//!
//! Simplifications: with `none`, blk-mq only tries to merge with the few most recent requests
//! of the submitting CPU's software queue; we merge with any queued contiguous request. A
//! single add larger than `max_sectors_kb` is not split (the engine adds one page at a time).

use super::mq_deadline::MqDeadline;
use super::{DeviceModel, IoDir, Scheduler};
use std::collections::BTreeSet;

/// A request handed to the device: completes at `done_ns`, identified by `rid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dispatched {
    pub rid: u32,
    pub done_ns: u64,
}

/// What a device did, for reports (iostat-like).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceStats {
    /// Read requests dispatched (iostat `r/s` numerator).
    pub reads: u64,
    /// Write requests dispatched.
    pub writes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Requests absorbed by merging (not counted in reads/writes).
    pub merges: u64,
    /// Of `merges`, those of reads (iostat `rrqm`); the rest are writes (`wrqm`).
    pub read_merges: u64,
    /// Dispatches whose direction differs from the previous dispatch: on a disk each is
    /// a move of the head between the read and the write streams.
    pub dir_switches: u64,
    /// Time with at least one request in service, nanoseconds.
    pub busy_ns: u64,
    /// Dispatched request sizes: bucket k counts sizes in (2^(k-1), 2^k] pages, k = 0..15.
    pub size_hist: [u64; 16],
    /// Sum over dispatched reads of the time from unplug to dispatch, nanoseconds.
    pub read_wait_ns: u64,
    /// Sum over dispatched writes of the time from unplug to dispatch, nanoseconds.
    pub write_wait_ns: u64,
    /// Sum over dispatched reads of the device service time, nanoseconds.
    pub read_service_ns: u64,
    /// Sum over dispatched writes of the device service time, nanoseconds.
    pub write_service_ns: u64,
}

#[derive(Clone, Debug)]
struct Request {
    dir: IoDir,
    offset: u64,
    len: u64,
    tags: Vec<u32>,
    /// Unplug time; the FIFO deadline is this plus the direction's expiry.
    insert_ns: u64,
    /// Arrival order, breaking ties among equal `insert_ns`.
    seq: u64,
}

impl Request {
    fn end(&self) -> u64 {
        self.offset + self.len
    }
    fn fifo_key(&self, rid: u32) -> (u64, u64, u32) {
        (self.insert_ns, self.seq, rid)
    }
}

/// Indexes of the queued (not yet dispatched) requests, per direction.
#[derive(Debug, Default)]
pub(super) struct Pending {
    /// (offset, rid): sector order, for merging and the elevator.
    pub(super) sorted: [BTreeSet<(u64, u32)>; 2],
    /// (insert_ns, seq, rid): arrival order, whose head carries the oldest deadline.
    pub(super) fifo: [BTreeSet<(u64, u64, u32)>; 2],
}

#[derive(Debug)]
enum Sched {
    Fifo,
    Deadline(MqDeadline),
}

#[derive(Debug)]
pub struct DeviceQueue {
    model: DeviceModel,
    max_bytes: u64,
    front_merges: bool,
    sched: Sched,
    plug: Vec<Request>,
    /// Queued and in-flight requests by rid; `None` marks a free rid.
    slab: Vec<Option<Request>>,
    free_rids: Vec<u32>,
    pending: Pending,
    nr_queued: usize,
    next_seq: u64,
    busy_channels: u32,
    busy_since: u64,
    last_dir: Option<IoDir>,
    spare: Vec<Vec<u32>>,
    stats: DeviceStats,
}

impl DeviceQueue {
    pub fn new(model: DeviceModel) -> Self {
        let q = model.queue_params();
        let (sched, front_merges) = match q.scheduler {
            Scheduler::Fifo => (Sched::Fifo, true),
            Scheduler::MqDeadline => (Sched::Deadline(MqDeadline::new(q.iosched)), q.iosched.front_merges),
        };
        DeviceQueue {
            max_bytes: model.max_request_bytes(),
            model,
            front_merges,
            sched,
            plug: Vec::new(),
            slab: Vec::new(),
            free_rids: Vec::new(),
            pending: Pending::default(),
            nr_queued: 0,
            next_seq: 0,
            busy_channels: 0,
            busy_since: 0,
            last_dir: None,
            spare: Vec::new(),
            stats: DeviceStats::default(),
        }
    }

    pub fn model(&self) -> &DeviceModel {
        &self.model
    }

    /// The timing model, for devices whose I/O is done by the submitting thread (zram's
    /// table, a synchronous read's service time).
    pub fn model_mut(&mut self) -> &mut DeviceModel {
        &mut self.model
    }

    /// Accounts one request that the submitting thread carried out itself, taking
    /// `service_ns` of its CPU (`submit_bio_wait` on a bio-based synchronous
    /// device: brd, pmem, zram), without queueing or merging.
    pub fn account_sync(&mut self, dir: IoDir, len: u64, service_ns: u64) {
        let st = &mut self.stats;
        match dir {
            IoDir::Read => {
                st.reads += 1;
                st.read_bytes += len;
                st.read_service_ns += service_ns;
            }
            IoDir::Write => {
                st.writes += 1;
                st.write_bytes += len;
                st.write_service_ns += service_ns;
            }
        }
        if self.last_dir.is_some_and(|d| d != dir) {
            st.dir_switches += 1;
        }
        self.last_dir = Some(dir);
        let pages = len.div_ceil(4096).max(1);
        st.size_hist[(64 - (pages - 1).leading_zeros()).min(15) as usize] += 1;
        if self.busy_channels == 0 {
            st.busy_ns += service_ns;
        }
    }

    pub fn stats(&self) -> &DeviceStats {
        &self.stats
    }

    /// Requests queued or in service.
    pub fn depth(&self) -> usize {
        self.nr_queued + self.busy_channels as usize
    }

    /// Adds a page-sized or larger request to the current plug (`submit_bio` under a plug).
    pub fn add(&mut self, dir: IoDir, offset: u64, len: u64, tag: u32) {
        if let Some(last) = self.plug.last_mut() {
            if last.dir == dir && last.end() == offset && last.len + len <= self.max_bytes {
                last.len += len;
                last.tags.push(tag);
                self.count_merge(dir);
                return;
            }
        }
        let mut tags = self.spare.pop().unwrap_or_default();
        tags.push(tag);
        self.plug.push(Request { dir, offset, len, tags, insert_ns: 0, seq: 0 });
    }

    /// Releases the plug (`blk_finish_plug`): queues the held requests, merging with queued
    /// ones, and dispatches to idle channels. Newly dispatched requests are appended to `out`.
    pub fn unplug(&mut self, now: u64, out: &mut Vec<Dispatched>) {
        let mut plug = std::mem::take(&mut self.plug);
        for r in plug.drain(..) {
            self.insert(r, now);
        }
        self.plug = plug;
        self.dispatch(now, out);
    }

    /// Completion of request `rid` at `now`: its tags are appended to `tags`; requests the
    /// freed channel dispatches are appended to `out`.
    pub fn complete(&mut self, now: u64, rid: u32, tags: &mut Vec<u32>, out: &mut Vec<Dispatched>) {
        let mut r = self.slab[rid as usize].take().expect("completion of a request not in flight");
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

    fn count_merge(&mut self, dir: IoDir) {
        self.stats.merges += 1;
        if dir == IoDir::Read {
            self.stats.read_merges += 1;
        }
    }

    fn req(&self, rid: u32) -> &Request {
        self.slab[rid as usize].as_ref().expect("rid of a queued request")
    }

    /// Offers a plugged request to the scheduler queue: merge it or queue it.
    fn insert(&mut self, mut r: Request, now: u64) {
        let d = r.dir.index();
        // Back merge: the queued request just before r in sector order ends where r starts.
        let prev = self.pending.sorted[d].range(..(r.offset, 0)).next_back().map(|&(_, rid)| rid);
        if let Some(rid) = prev.filter(|&p| self.mergeable(p, r.offset, r.len)) {
            let q = self.slab[rid as usize].as_mut().expect("queued");
            q.len += r.len;
            q.tags.append(&mut r.tags);
            self.spare.push(r.tags);
            self.count_merge(r.dir);
            let next = self.pending.sorted[d].range((self.req(rid).end(), 0)..).next().map(|&(_, n)| n);
            if let Some(n) = next.filter(|&n| self.mergeable(rid, self.req(n).offset, self.req(n).len)) {
                self.absorb(rid, n);
            }
            return;
        }
        // Front merge: the queued request starting where r ends takes r in front of it.
        if self.front_merges {
            let next = self.pending.sorted[d].range((r.end(), 0)..).next().copied();
            if let Some((off, rid)) =
                next.filter(|&(off, n)| off == r.end() && self.req(n).len + r.len <= self.max_bytes)
            {
                self.pending.sorted[d].remove(&(off, rid));
                let q = self.slab[rid as usize].as_mut().expect("queued");
                q.offset = r.offset;
                q.len += r.len;
                q.tags.append(&mut r.tags);
                self.pending.sorted[d].insert((r.offset, rid));
                self.spare.push(r.tags);
                self.count_merge(r.dir);
                let prev = self.pending.sorted[d].range(..(r.offset, 0)).next_back().map(|&(_, p)| p);
                if let Some(p) = prev.filter(|&p| self.mergeable(p, r.offset, self.req(rid).len)) {
                    self.absorb(p, rid);
                }
                return;
            }
        }
        r.insert_ns = now;
        r.seq = self.next_seq;
        self.next_seq += 1;
        let rid = match self.free_rids.pop() {
            Some(rid) => rid,
            None => {
                self.slab.push(None);
                (self.slab.len() - 1) as u32
            }
        };
        self.pending.sorted[d].insert((r.offset, rid));
        self.pending.fifo[d].insert(r.fifo_key(rid));
        self.slab[rid as usize] = Some(r);
        self.nr_queued += 1;
    }

    /// Queued request `rid` ends at `offset` and can grow by `len` within `max_sectors_kb`.
    fn mergeable(&self, rid: u32, offset: u64, len: u64) -> bool {
        let q = self.req(rid);
        q.end() == offset && q.len + len <= self.max_bytes
    }

    /// Queued request `keep` absorbs the queued request `gone` that follows it on disk; `keep`
    /// inherits the older FIFO position (`dd_merged_requests`).
    fn absorb(&mut self, keep: u32, gone: u32) {
        let mut g = self.unqueue(gone);
        self.slab[gone as usize] = None;
        self.free_rids.push(gone);
        let d = g.dir.index();
        let k = self.slab[keep as usize].as_mut().expect("queued");
        k.len += g.len;
        k.tags.append(&mut g.tags);
        if (g.insert_ns, g.seq) < (k.insert_ns, k.seq) {
            let old = k.fifo_key(keep);
            k.insert_ns = g.insert_ns;
            k.seq = g.seq;
            let new = k.fifo_key(keep);
            self.pending.fifo[d].remove(&old);
            self.pending.fifo[d].insert(new);
        }
        self.spare.push(g.tags);
        self.count_merge(g.dir);
    }

    /// Removes a queued request from the scheduler's indexes, leaving it in the slab; returns
    /// a copy of its fields with the tags moved out.
    fn unqueue(&mut self, rid: u32) -> Request {
        let r = self.slab[rid as usize].as_mut().expect("queued");
        let d = r.dir.index();
        self.pending.sorted[d].remove(&(r.offset, rid));
        self.pending.fifo[d].remove(&r.fifo_key(rid));
        self.nr_queued -= 1;
        Request { tags: std::mem::take(&mut r.tags), ..*r }
    }

    /// The scheduler's choice among queued requests.
    fn select(&mut self, now: u64) -> Option<u32> {
        match &mut self.sched {
            Sched::Fifo => {
                let heads = self.pending.fifo.iter().filter_map(|f| f.first());
                heads.min().map(|&(_, _, rid)| rid)
            }
            Sched::Deadline(dd) => dd.select(&self.pending, now),
        }
    }

    fn dispatch(&mut self, now: u64, out: &mut Vec<Dispatched>) {
        while self.busy_channels < self.model.channels() {
            let Some(rid) = self.select(now) else { break };
            let r = self.slab[rid as usize].as_ref().expect("queued");
            let (dir, offset, len, insert_ns) = (r.dir, r.offset, r.len, r.insert_ns);
            let d = dir.index();
            self.pending.sorted[d].remove(&(offset, rid));
            self.pending.fifo[d].remove(&r.fifo_key(rid));
            self.nr_queued -= 1;
            if let Sched::Deadline(dd) = &mut self.sched {
                dd.dispatched(dir, offset + len);
            }
            if self.busy_channels == 0 {
                self.busy_since = now;
            }
            self.busy_channels += 1;
            let service = self.model.service_ns(dir, offset, len, now).max(1);
            let s = &mut self.stats;
            if self.last_dir.is_some_and(|d| d != dir) {
                s.dir_switches += 1;
            }
            self.last_dir = Some(dir);
            match dir {
                IoDir::Read => {
                    s.reads += 1;
                    s.read_bytes += len;
                    s.read_wait_ns += now - insert_ns;
                    s.read_service_ns += service;
                }
                IoDir::Write => {
                    s.writes += 1;
                    s.write_bytes += len;
                    s.write_wait_ns += now - insert_ns;
                    s.write_service_ns += service;
                }
            }
            let pages = len.div_ceil(4096).max(1);
            let bucket = (64 - (pages - 1).leading_zeros()) as usize;
            s.size_hist[bucket.min(15)] += 1;
            out.push(Dispatched { rid, done_ns: now + service });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{DeviceConfig, DeviceModel};

    const PAGE: u64 = 4096;

    fn queue(toml_text: &str) -> DeviceQueue {
        let cfg: DeviceConfig = toml::from_str(toml_text).unwrap();
        DeviceQueue::new(DeviceModel::new(&cfg).unwrap())
    }

    /// Runs the queue until it drains; returns (offset, dir, tags) in dispatch order.
    fn drain(q: &mut DeviceQueue, now: u64, first: Vec<Dispatched>) -> Vec<(u64, IoDir, Vec<u32>)> {
        let mut inflight = first;
        let mut order = Vec::new();
        let mut t = now;
        while !inflight.is_empty() {
            inflight.sort_by_key(|d| (d.done_ns, d.rid));
            let d = inflight.remove(0);
            t = t.max(d.done_ns);
            let r = q.req(d.rid);
            let (off, dir) = (r.offset, r.dir);
            let mut tags = Vec::new();
            q.complete(t, d.rid, &mut tags, &mut inflight);
            order.push((off, dir, tags));
        }
        order
    }

    #[test]
    fn eight_contiguous_page_adds_become_one_request() {
        let mut q = queue("model = \"sata-ssd\"");
        for i in 0..8 {
            q.add(IoDir::Read, 100 * PAGE + i * PAGE, PAGE, i as u32);
        }
        let mut out = Vec::new();
        q.unplug(0, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(q.stats().reads, 1);
        assert_eq!(q.stats().merges, 7);
        assert_eq!(q.stats().read_bytes, 8 * PAGE);
        assert_eq!(q.stats().size_hist[3], 1, "8 pages land in bucket (4, 8]");
        let mut tags = Vec::new();
        q.complete(out[0].done_ns, out[0].rid, &mut tags, &mut out);
        assert_eq!(tags, (0..8).collect::<Vec<u32>>());
    }

    #[test]
    fn merging_stops_at_max_sectors_kb_and_at_direction_changes() {
        let mut q = queue("model = \"sata-ssd\"\nmax_sectors_kb = 16");
        for i in 0..8 {
            q.add(IoDir::Write, i * PAGE, PAGE, i as u32);
        }
        q.add(IoDir::Read, 8 * PAGE, PAGE, 8);
        let mut out = Vec::new();
        q.unplug(0, &mut out);
        let order = drain(&mut q, 0, out);
        assert_eq!(q.stats().writes, 2);
        assert_eq!(q.stats().reads, 1);
        assert!(order.iter().all(|(_, _, tags)| tags.len() <= 4));
    }

    #[test]
    fn queued_requests_absorb_back_and_front_neighbours_and_coalesce() {
        let mut q = queue("model = \"hdd\"\nqueue_depth = 1");
        let mut out = Vec::new();
        // Keeps the single channel busy so later requests stay queued.
        q.add(IoDir::Read, 1 << 30, PAGE, 99);
        q.unplug(0, &mut out);
        assert_eq!(out.len(), 1);
        // Pages 0, 2 (separate requests), then 1 (back merge into 0, then coalesce with 2),
        // then page 3 arriving later; finally a front merge of page 9 into 10.
        for (t, page) in [(1u64, 0u64), (2, 2), (3, 1), (4, 3), (5, 10), (6, 9)] {
            q.add(IoDir::Read, page * PAGE, PAGE, page as u32);
            q.unplug(t, &mut out);
        }
        assert_eq!(q.depth(), 1 + 2, "in service + [0..4) + [9..11)");
        let order = drain(&mut q, 10, out);
        let sizes: Vec<usize> = order.iter().map(|(_, _, t)| t.len()).collect();
        assert_eq!(sizes, vec![1, 4, 2]);
        assert_eq!(order[1].0, 0);
        assert_eq!(order[2].0, 9 * PAGE);
        assert_eq!(q.stats().merges, 4);
        assert_eq!(q.stats().read_merges, 4);
    }

    #[test]
    fn none_dispatches_in_arrival_order() {
        let mut q = queue("model = \"hdd\"\nqueue_depth = 1\nscheduler = \"none\"");
        let mut out = Vec::new();
        for (i, page) in [500u64, 100, 900, 300].iter().enumerate() {
            q.add(IoDir::Read, page * PAGE * 1000, PAGE, i as u32);
            q.unplug(0, &mut out);
        }
        let order = drain(&mut q, 0, out);
        let tags: Vec<u32> = order.iter().map(|(_, _, t)| t[0]).collect();
        assert_eq!(tags, vec![0, 1, 2, 3]);
    }

    #[test]
    fn mq_deadline_serves_ascending_sectors_from_the_last_position() {
        let mut q = queue("model = \"hdd\"\nqueue_depth = 1");
        let mut out = Vec::new();
        // The first request is dispatched at once and sets the elevator position.
        q.add(IoDir::Read, 500_000 * PAGE, PAGE, 0);
        q.unplug(0, &mut out);
        for (i, page) in [900_000u64, 100_000, 700_000, 300_000, 600_000].iter().enumerate() {
            q.add(IoDir::Read, page * PAGE, PAGE, i as u32 + 1);
            q.unplug(0, &mut out);
        }
        let order = drain(&mut q, 0, out);
        let pages: Vec<u64> = order.iter().map(|(o, _, _)| o / PAGE).collect();
        // One-way elevator: up from 500000, then wrap to the oldest (FIFO head) and go up.
        assert_eq!(pages, vec![500_000, 600_000, 700_000, 900_000, 100_000, 300_000]);
    }

    #[test]
    fn mq_deadline_prefers_reads_but_writes_are_not_starved() {
        let mut q = queue("model = \"hdd\"\nqueue_depth = 1\niosched = { fifo_batch = 1 }");
        let mut out = Vec::new();
        q.add(IoDir::Read, 0, PAGE, 0);
        q.unplug(0, &mut out);
        // Writes queued first, reads after: reads still go first, but only writes_starved
        // (2) batches in a row before a write batch.
        for i in 0..3u64 {
            q.add(IoDir::Write, (10 + i) * 1000 * PAGE, PAGE, 100 + i as u32);
            q.unplug(1, &mut out);
        }
        for i in 0..6u64 {
            q.add(IoDir::Read, (20 + i) * 1000 * PAGE, PAGE, 200 + i as u32);
            q.unplug(2, &mut out);
        }
        let order = drain(&mut q, 2, out);
        let dirs: String = order.iter().skip(1).map(|(_, d, _)| if *d == IoDir::Read { 'R' } else { 'W' }).collect();
        assert_eq!(dirs, "RRWRRWRRW");
    }

    #[test]
    fn mq_deadline_serves_an_expired_request_before_sector_order() {
        let mut q = queue("model = \"hdd\"\nqueue_depth = 1\niosched = { write_expire = \"100ms\", fifo_batch = 1 }");
        let mut out = Vec::new();
        q.add(IoDir::Write, 0, PAGE, 0);
        q.unplug(0, &mut out);
        // An old write far down the disk, then younger writes just above the head position.
        q.add(IoDir::Write, 900_000 * PAGE, PAGE, 1);
        q.unplug(0, &mut out);
        for i in 0..3u64 {
            q.add(IoDir::Write, (10 + i) * 1000 * PAGE, PAGE, 2 + i as u32);
            q.unplug(200_000_000, &mut out);
        }
        // The first write completes well before; dispatch happens at 200 ms when the old
        // write (queued at 0) has passed its 100 ms deadline.
        let first = out.remove(0);
        let mut tags = Vec::new();
        q.complete(200_000_000, first.rid, &mut tags, &mut out);
        let order = drain(&mut q, 200_000_000, out);
        assert_eq!(order[0].2, vec![1], "expired write jumps the sector order");
        // Without the deadline the elevator takes the nearest sector above the position.
        let mut q = queue("model = \"hdd\"\nqueue_depth = 1\niosched = { fifo_batch = 1 }");
        let mut out = Vec::new();
        q.add(IoDir::Write, 0, PAGE, 0);
        q.unplug(0, &mut out);
        q.add(IoDir::Write, 900_000 * PAGE, PAGE, 1);
        q.unplug(0, &mut out);
        for i in 0..3u64 {
            q.add(IoDir::Write, (10 + i) * 1000 * PAGE, PAGE, 2 + i as u32);
            q.unplug(200_000_000, &mut out);
        }
        let first = out.remove(0);
        q.complete(200_000_000, first.rid, &mut tags, &mut out);
        let order = drain(&mut q, 200_000_000, out);
        assert_eq!(order[0].2, vec![2]);
    }

    #[test]
    fn stats_account_wait_service_and_busy_time() {
        let mut q = queue("model = \"hdd\"\nqueue_depth = 1");
        let mut out = Vec::new();
        for i in 0..4u64 {
            q.add(IoDir::Read, i * 100_000 * PAGE, PAGE, i as u32);
            q.unplug(0, &mut out);
        }
        drain(&mut q, 0, out);
        let s = q.stats();
        assert_eq!(s.reads, 4);
        assert!(s.read_service_ns > 0);
        assert!(s.read_wait_ns >= s.read_service_ns / 4, "later requests wait for earlier ones");
        assert_eq!(s.busy_ns, s.read_service_ns, "one channel, always busy until drained");
        assert_eq!(q.depth(), 0);
    }

    /// A small deterministic generator for test workloads (no RNG crate in the model).
    fn lcg(state: &mut u64) -> u64 {
        *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *state >> 33
    }

    fn mixed_run(model: &str) -> (Vec<Dispatched>, DeviceStats) {
        let mut q = queue(&format!("model = \"{model}\""));
        let mut seed = 42;
        let mut log = Vec::new();
        let mut inflight: Vec<Dispatched> = Vec::new();
        let mut now = 0;
        for step in 0..400u32 {
            let dir = if lcg(&mut seed) % 3 == 1 { IoDir::Write } else { IoDir::Read };
            let base = lcg(&mut seed) % 100_000 * PAGE;
            for k in 0..(1 + lcg(&mut seed) % 8) {
                q.add(dir, base + k * PAGE, PAGE, step);
            }
            let mut out = Vec::new();
            q.unplug(now, &mut out);
            log.extend_from_slice(&out);
            inflight.extend(out);
            now += lcg(&mut seed) % 2_000_000;
            inflight.sort_by_key(|d| (d.done_ns, d.rid));
            while inflight.first().is_some_and(|d| d.done_ns <= now) {
                let d = inflight.remove(0);
                let mut tags = Vec::new();
                let mut out = Vec::new();
                q.complete(d.done_ns, d.rid, &mut tags, &mut out);
                log.extend_from_slice(&out);
                inflight.extend(out);
                inflight.sort_by_key(|d| (d.done_ns, d.rid));
            }
        }
        (log, q.stats().clone())
    }

    #[test]
    fn same_inputs_give_the_same_dispatches_and_stats() {
        for (name, _) in crate::device::MODELS {
            let a = mixed_run(name);
            let b = mixed_run(name);
            assert!(!a.0.is_empty());
            assert_eq!(a, b, "{name}");
        }
    }
}
