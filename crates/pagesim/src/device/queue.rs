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
//! it is queued. Requests then go to idle channels (tags) in the order the scheduler picks:
//!
//! - `none`: arrival order (blk-mq without an elevator);
//! - `mq-deadline`: see [`super::mq_deadline`];
//! - `cfq`: see [`super::cfq`].
//!
//! A page I/O that merges neither with the plug nor with a queued request of the same
//! scheduler queue (`elv_merge` at submission) allocates a request (`get_request`). The
//! queue counts allocated requests per class, sync (reads) and async (writes), from
//! allocation to completion (`rl->count[]`): at `nr_requests` the class is full and a
//! submitter must sleep until one completes (`get_request_wait`); from 7/8 of it the queue
//! is congested until the count falls below 13/16 (`blk_queue_congestion_threshold`). Every
//! async request freed below that threshold ends a `congestion_wait(BLK_RW_ASYNC)`
//! (`clear_bdi_congested` wakes its queue unconditionally). A request merged away at
//! insertion is freed at once.
//!
//! A disk ([`DeviceModel::serves_one_at_a_time`]) holds the requests dispatched to it and
//! works on one at a time, choosing the next itself ([`DeviceModel::pick`], NCQ reordering);
//! a request's completion time is fixed when the drive starts it. The other models time a
//! request when it is dispatched, each channel independently.
//!
//! Each request carries the caller's tags (one per page I/O); a completion returns them.
//! Request ids (`rid`) index a slab that holds queued and in-flight requests alike, so a
//! request is never moved between containers. Pending requests are indexed per scheduler
//! queue: the direction for `none` and mq-deadline, the CFQ queue (a process's sync queue,
//! or the shared async queue) for cfq, so merges stay within a CFQ queue as
//! `cfq_allow_merge` requires.
//!
//! Simplifications: with `none`, blk-mq only tries to merge with the few most recent requests
//! of the submitting CPU's software queue; we merge with any queued contiguous request. A
//! single add larger than `max_sectors_kb` is not split (the engine adds one page at a time).
//! A plug merges only with its last request (3.x tried every plugged request). A full class blocks
//! submitters only between reclaim batches (the engine's caller decides), and the
//! "batching" allowance of the process that fills the queue (32 more requests for 20 ms) is
//! not modelled.

use super::elevator::Elevator;
use super::{DeviceModel, DriveCmd, IoDir};
use crate::profile::PlugRules;

/// Class of a request for allocation limits (`BLK_RW_ASYNC` = 0, `BLK_RW_SYNC` = 1).
const ASYNC: usize = 0;
const SYNC: usize = 1;

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
    /// Requests started in the other direction than the previous one: on a disk each is
    /// a move of the head between the read and the write streams.
    pub dir_switches: u64,
    /// Time with at least one request in service, nanoseconds. Closed periods only;
    /// [`DeviceQueue::busy_ns_at`] adds the one still running.
    pub busy_ns: u64,
    /// Dispatched request sizes: bucket k counts sizes in (2^(k-1), 2^k] pages, k = 0..15.
    pub size_hist: [u64; 16],
    /// Sum over dispatched reads of the time from unplug to dispatch, nanoseconds.
    pub read_wait_ns: u64,
    /// Sum over dispatched writes of the time from unplug to dispatch, nanoseconds.
    pub write_wait_ns: u64,
    /// Sum over started reads of the device service time (a disk's from when it starts the
    /// command, without its time in the drive's queue), nanoseconds.
    pub read_service_ns: u64,
    /// Sum over dispatched writes of the device service time, nanoseconds.
    pub write_service_ns: u64,
    /// Times a class (sync or async) of requests became full (`nr_requests` allocated).
    pub queue_full: u64,
    /// Times the async class became congested (7/8 of `nr_requests`).
    pub congested: u64,
    /// Time the read (sync) class spent congested, ns: meanwhile non-blocking readahead
    /// (2.6.20's ahead window, 2.6.23's async readahead) is skipped. Closed periods only;
    /// [`DeviceQueue::read_congested_ns_at`] adds the one still running.
    pub read_congested_ns: u64,
    /// Times the scheduler left the disk idle waiting for a process (CFQ's idle window).
    pub idle_arms: u64,
}

#[derive(Clone, Debug)]
struct Request {
    dir: IoDir,
    /// Scheduler queue (index into [`Pending`]).
    q: u32,
    offset: u64,
    len: u64,
    /// Scatter-gather segments: one per page I/O (a folio is physically contiguous; two
    /// folios are taken never to be), or more for a folio larger than `max_segment_size`.
    segs: u32,
    tags: Vec<u32>,
    /// Allocation time (`rq->start_time`).
    start_ns: u64,
    /// Unplug time; the FIFO deadline is this plus the direction's expiry.
    insert_ns: u64,
    /// Arrival order, breaking ties among equal `insert_ns`.
    seq: u64,
}

impl Request {
    fn end(&self) -> u64 {
        self.offset + self.len
    }
    /// Takes the sectors, segments and tags of `other`, which follows or precedes it on disk.
    fn take(&mut self, other: &mut Request, spare: &mut Vec<Vec<u32>>) {
        self.offset = self.offset.min(other.offset);
        self.len += other.len;
        self.segs += other.segs;
        self.tags.append(&mut other.tags);
        spare.push(std::mem::take(&mut other.tags));
    }
    /// `rq_is_sync`: reads (swap and page-cache writeback write asynchronously).
    fn class(&self) -> usize {
        match self.dir {
            IoDir::Read => SYNC,
            IoDir::Write => ASYNC,
        }
    }
    fn fifo_key(&self, rid: u32) -> (u64, u64, u32) {
        (self.insert_ns, self.seq, rid)
    }
}

/// A set kept as a sorted vector, with the part of `BTreeSet`'s interface the schedulers
/// use. A scheduler queue holds few requests (at most `nr_requests` a class, usually one or
/// two), where a binary search and a short shift cost less than a B-tree's node walk and
/// its allocations; the order, and so every answer, is the same.
#[derive(Debug, Clone)]
pub(super) struct SortedSet<T>(Vec<T>);

impl<T> Default for SortedSet<T> {
    fn default() -> Self {
        SortedSet(Vec::new())
    }
}

impl<T: Ord + Copy> SortedSet<T> {
    /// Adds `x`; false if it was there.
    pub(super) fn insert(&mut self, x: T) -> bool {
        match self.0.binary_search(&x) {
            Ok(_) => false,
            Err(i) => {
                self.0.insert(i, x);
                true
            }
        }
    }

    /// Removes `x`; false if it was not there.
    pub(super) fn remove(&mut self, x: &T) -> bool {
        match self.0.binary_search(x) {
            Ok(i) => {
                self.0.remove(i);
                true
            }
            Err(_) => false,
        }
    }

    #[cfg(test)]
    pub(super) fn retain(&mut self, f: impl FnMut(&T) -> bool) {
        self.0.retain(f);
    }

    pub(super) fn first(&self) -> Option<&T> {
        self.0.first()
    }

    pub(super) fn len(&self) -> usize {
        self.0.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The elements in `r`, in order (empty if its start is past its end).
    pub(super) fn range(&self, r: impl std::ops::RangeBounds<T>) -> std::slice::Iter<'_, T> {
        use std::ops::Bound::{Excluded, Included, Unbounded};
        let v = &self.0;
        let lo = match r.start_bound() {
            Included(x) => v.partition_point(|e| e < x),
            Excluded(x) => v.partition_point(|e| e <= x),
            Unbounded => 0,
        };
        let hi = match r.end_bound() {
            Included(x) => v.partition_point(|e| e <= x),
            Excluded(x) => v.partition_point(|e| e < x),
            Unbounded => v.len(),
        };
        v[lo..hi.max(lo)].iter()
    }
}

/// Indexes of the queued (not yet dispatched) requests, per scheduler queue.
#[derive(Debug, Default)]
pub(super) struct Pending {
    /// (offset, rid): sector order, for merging and the elevator.
    pub(super) sorted: Vec<SortedSet<(u64, u32)>>,
    /// (insert_ns, seq, rid): arrival order, whose head carries the oldest deadline.
    pub(super) fifo: Vec<SortedSet<(u64, u64, u32)>>,
}

impl Pending {
    /// Makes room for scheduler queues `0..n`.
    pub(super) fn ensure(&mut self, n: usize) {
        if self.sorted.len() < n {
            self.sorted.resize_with(n, SortedSet::default);
            self.fifo.resize_with(n, SortedSet::default);
        }
    }
}

#[derive(Debug)]
pub struct DeviceQueue {
    model: DeviceModel,
    /// The largest request: `max_sectors_kb`, or `max_segments` full segments if less.
    max_bytes: u64,
    max_segments: u32,
    max_segment_size: u64,
    plug_rules: PlugRules,
    front_merges: bool,
    sched: Elevator,
    plug: Vec<Request>,
    /// Queued and in-flight requests by rid; `None` marks a free rid.
    slab: Vec<Option<Request>>,
    free_rids: Vec<u32>,
    pending: Pending,
    nr_queued: usize,
    next_seq: u64,
    busy_channels: u32,
    busy_since: u64,
    /// Commands a disk holds (dispatched, not started), in arrival order, and whether it
    /// is serving one ([`DeviceModel::serves_one_at_a_time`]).
    drive: Vec<DriveCmd>,
    drive_busy: bool,
    last_dir: Option<IoDir>,
    spare: Vec<Vec<u32>>,
    stats: DeviceStats,
    /// `nr_requests` per class and the congestion thresholds derived from it.
    nr_requests: u32,
    congestion_on: u32,
    congestion_off: u32,
    /// Requests allocated per class (`rl->count[]`).
    allocated: [u32; 2],
    congested: [bool; 2],
    /// When the sync class last became congested.
    read_congested_since: u64,
    /// An async request was freed below the congestion-off threshold since the last
    /// [`Self::take_congestion_wakeup`] (`clear_bdi_congested` woke `congestion_wait`).
    congestion_wakeup: bool,
    /// The submitting context (a task), for per-process scheduler queues.
    ctx: u32,
    /// The CPU taking the completion interrupts, if one does.
    irq_cpu: Option<u32>,
    /// The device's own clock: the latest time it was told of. The CPUs' clocks differ by
    /// up to a step (engine/sched.rs), so a submission from a CPU that is behind happens,
    /// for the device, when the device already is.
    clock: u64,
}

impl DeviceQueue {
    /// The queue of a model whose parameters were validated (`DeviceModel::new`), with the
    /// kernel's plug flush rules.
    pub fn new(model: DeviceModel, plug_rules: PlugRules) -> Self {
        let q = model.queue_params();
        let iosched = q.iosched.resolve(q.scheduler).expect("validated by DeviceModel::new");
        let (sched, front_merges) = Elevator::new(iosched, &model);
        // blk_queue_congestion_threshold
        let nr = q.nr_requests;
        let congestion_on = (nr - nr / 8 + 1).min(nr);
        let congestion_off = (nr - nr / 8 - nr / 16).saturating_sub(1).max(1);
        let mut pending = Pending::default();
        pending.ensure(2);
        DeviceQueue {
            max_bytes: model.max_request_bytes(),
            max_segments: q.max_segments,
            max_segment_size: q.max_segment_size,
            plug_rules,
            model,
            front_merges,
            sched,
            plug: Vec::new(),
            slab: Vec::new(),
            free_rids: Vec::new(),
            pending,
            nr_queued: 0,
            next_seq: 0,
            busy_channels: 0,
            busy_since: 0,
            drive: Vec::new(),
            drive_busy: false,
            last_dir: None,
            spare: Vec::new(),
            stats: DeviceStats::default(),
            nr_requests: nr,
            congestion_on,
            congestion_off,
            allocated: [0; 2],
            congested: [false; 2],
            read_congested_since: 0,
            congestion_wakeup: false,
            ctx: 0,
            irq_cpu: q.irq_cpu,
            clock: 0,
        }
    }

    /// Time `now` of a CPU, as the device sees it: never before what it has seen already.
    fn tick(&mut self, now: u64) -> u64 {
        self.clock = self.clock.max(now);
        self.clock
    }

    /// `bdi_read_congested` of 2.6-5.x: the sync (read) class is congested. Readahead that
    /// is optional (2.6.20's ahead window, 2.6.23's async readahead) is skipped while it is.
    pub fn read_congested(&self) -> bool {
        self.congested[SYNC]
    }

    /// Sets the context (task) whose I/O the following adds are.
    pub fn set_ctx(&mut self, ctx: u32) {
        self.ctx = ctx;
    }

    /// The async (write) class has `nr_requests` allocated: a writer must wait for a
    /// completion before it may allocate another (`get_request_wait`).
    pub fn write_full(&self) -> bool {
        self.allocated[ASYNC] >= self.nr_requests
    }

    /// The async class is congested (`bdi_write_congested` of the queue).
    pub fn write_congested(&self) -> bool {
        self.congested[ASYNC]
    }

    /// When the scheduler's timer (CFQ's idle window) fires, if armed.
    pub fn timer_at(&self) -> Option<u64> {
        self.sched.timer_at()
    }

    /// The scheduler's timer fired at `now`: the scheduler decides, then the queue runs.
    pub fn timer(&mut self, now: u64, out: &mut Vec<Dispatched>) {
        let now = self.tick(now);
        self.sched.timer(now, &self.pending);
        self.dispatch(now, out);
    }

    fn alloc_request(&mut self, class: usize, now: u64) {
        self.allocated[class] += 1;
        if self.allocated[class] >= self.nr_requests && self.allocated[class] - 1 < self.nr_requests {
            self.stats.queue_full += 1;
        }
        if self.allocated[class] >= self.congestion_on && !self.congested[class] {
            self.congested[class] = true;
            if class == SYNC {
                self.read_congested_since = now;
            } else {
                self.stats.congested += 1;
            }
        }
    }

    /// `__freed_request`: below the off threshold every freed request calls
    /// `blk_clear_queue_congested`, and `clear_bdi_congested` wakes the `congestion_wait`
    /// queue of that class whether or not the flag was set (2.6.35-4.x). So a sleeper in
    /// `congestion_wait(BLK_RW_ASYNC)` wakes at the first write request freed (completed, or
    /// merged away at insertion) while fewer than the off threshold are allocated, not only
    /// when a congested queue clears.
    fn free_request(&mut self, class: usize, now: u64) {
        self.allocated[class] -= 1;
        if self.allocated[class] < self.congestion_off {
            if class == SYNC && self.congested[SYNC] {
                self.stats.read_congested_ns += now - self.read_congested_since;
            }
            self.congested[class] = false;
            if class == ASYNC {
                self.congestion_wakeup = true;
            }
        }
    }

    /// Whether `clear_bdi_congested(BLK_RW_ASYNC)` ran since the last call: it wakes the
    /// `congestion_wait(BLK_RW_ASYNC)` sleepers.
    pub fn take_congestion_wakeup(&mut self) -> bool {
        std::mem::take(&mut self.congestion_wakeup)
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
        self.count_started(dir, len, service_ns);
        if self.busy_channels == 0 {
            self.stats.busy_ns += service_ns;
        }
    }

    /// The statistics of a request the device starts: count, bytes, service time, size
    /// bucket and a change of direction.
    fn count_started(&mut self, dir: IoDir, len: u64, service_ns: u64) {
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
    }

    pub fn stats(&self) -> &DeviceStats {
        &self.stats
    }

    /// `busy_ns` up to `now`, counting the busy period still going on (a disk that never
    /// drained before the end of a run would otherwise report only its earlier periods).
    pub fn busy_ns_at(&self, now: u64) -> u64 {
        let ongoing = if self.busy_channels > 0 { now.saturating_sub(self.busy_since) } else { 0 };
        self.stats.busy_ns + ongoing
    }

    /// `read_congested_ns` up to `now`, counting a congested period still going on.
    pub fn read_congested_ns_at(&self, now: u64) -> u64 {
        let ongoing = if self.congested[SYNC] { now.saturating_sub(self.read_congested_since) } else { 0 };
        self.stats.read_congested_ns + ongoing
    }

    /// Requests queued or in service.
    pub fn depth(&self) -> usize {
        self.nr_queued + self.busy_channels as usize
    }

    /// The largest request this queue builds, in bytes (`max_sectors_kb`).
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// The CPU its completions run on (`irq_cpu`); `None`: the CPU of the task each wakes.
    pub fn irq_cpu(&self) -> Option<u32> {
        self.irq_cpu
    }

    /// Submits a page-sized or larger I/O at `now` under the current plug (`submit_bio`,
    /// `blk_mq_submit_bio`): merged into the plug's last request or a queued request of the
    /// same scheduler queue, else a new request is allocated and plugged. Adding it first
    /// flushes a plug that is full or holds a large request ([`PlugRules`],
    /// `blk_add_rq_to_plug`); what that dispatches is appended to `out`.
    pub fn add(&mut self, dir: IoDir, offset: u64, len: u64, tag: u32, now: u64, out: &mut Vec<Dispatched>) {
        let now = self.tick(now);
        let q = self.sched.classify(dir, self.ctx, now);
        self.pending.ensure(q as usize + 1);
        let segs = len.div_ceil(self.max_segment_size) as u32;
        if let Some(last) = self.plug.last_mut() {
            if last.dir == dir
                && last.q == q
                && last.end() == offset
                && last.len + len <= self.max_bytes
                && last.segs + segs <= self.max_segments
            {
                last.len += len;
                last.segs += segs;
                last.tags.push(tag);
                self.count_merge(dir);
                return;
            }
        }
        let mut tags = self.spare.pop().unwrap_or_default();
        tags.push(tag);
        let mut r = Request { dir, q, offset, len, segs, tags, start_ns: now, insert_ns: 0, seq: 0 };
        if self.merge_queued(&mut r, now) {
            return;
        }
        self.alloc_request(r.class(), now);
        if self.plug_is_due() {
            self.unplug(now, out);
        }
        self.plug.push(r);
    }

    /// `blk_add_rq_to_plug`'s check before a new request joins the plug: it holds
    /// `max_requests`, or (4.10+) the request it looks at has reached `flush_bytes`.
    fn plug_is_due(&self) -> bool {
        let rules = self.plug_rules;
        let looked_at = if rules.flush_checks_oldest { self.plug.first() } else { self.plug.last() };
        self.plug.len() >= rules.max_requests as usize
            || looked_at.is_some_and(|r| rules.flush_bytes > 0 && r.len >= rules.flush_bytes)
    }

    /// Releases the plug (`blk_finish_plug`): queues the held requests, merging with queued
    /// ones, and dispatches to idle channels. Newly dispatched requests are appended to `out`.
    pub fn unplug(&mut self, now: u64, out: &mut Vec<Dispatched>) {
        let now = self.tick(now);
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
        let now = self.tick(now);
        let mut r = self.slab[rid as usize].take().expect("completion of a request not in flight");
        self.free_rids.push(rid);
        tags.extend_from_slice(&r.tags);
        r.tags.clear();
        self.free_request(r.class(), now);
        let armed = self.sched.timer_at().is_some();
        self.sched.completed(r.q, r.start_ns, now, &self.pending);
        if !armed && self.sched.timer_at().is_some() {
            self.stats.idle_arms += 1;
        }
        self.spare.push(r.tags);
        self.drive_busy = false;
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

    /// Merges `r` into a queued request of its scheduler queue that it continues (back
    /// merge) or precedes (front merge), coalescing the grown request with its new
    /// neighbour (`elv_merge`, `attempt_back_merge`, `attempt_front_merge`). Returns false
    /// (and leaves `r` alone) when no queued request touches it.
    fn merge_queued(&mut self, r: &mut Request, now: u64) -> bool {
        let d = r.q as usize;
        // Back merge: the queued request just before r in sector order ends where r starts.
        let prev = self.pending.sorted[d].range(..(r.offset, 0)).next_back().map(|&(_, rid)| rid);
        if let Some(rid) = prev.filter(|&p| self.mergeable(self.req(p), r)) {
            let q = self.slab[rid as usize].as_mut().expect("queued");
            q.take(r, &mut self.spare);
            self.count_merge(r.dir);
            let next = self.pending.sorted[d].range((self.req(rid).end(), 0)..).next().map(|&(_, n)| n);
            if let Some(n) = next.filter(|&n| self.mergeable(self.req(rid), self.req(n))) {
                self.absorb(rid, n, now);
            }
            return true;
        }
        // Front merge: the queued request starting where r ends takes r in front of it.
        if self.front_merges {
            let next = self.pending.sorted[d].range((r.end(), 0)..).next().copied();
            if let Some((off, rid)) = next.filter(|&(_, n)| self.mergeable(r, self.req(n))) {
                self.pending.sorted[d].remove(&(off, rid));
                let q = self.slab[rid as usize].as_mut().expect("queued");
                q.take(r, &mut self.spare);
                self.pending.sorted[d].insert((q.offset, rid));
                self.count_merge(r.dir);
                let prev = self.pending.sorted[d].range(..(self.req(rid).offset, 0)).next_back().map(|&(_, p)| p);
                if let Some(p) = prev.filter(|&p| self.mergeable(self.req(p), self.req(rid))) {
                    self.absorb(p, rid, now);
                }
                return true;
            }
        }
        false
    }

    /// Offers a plugged request to the scheduler queue: merge it (freeing the request) or
    /// queue it.
    ///
    /// At insertion only back merges are tried (`elv_attempt_insert_merge`): into a queued
    /// request ending where `r` starts, and then the grown request into one ending where
    /// it starts, and so on.
    fn insert(&mut self, mut r: Request, now: u64) {
        let class = r.class();
        let d = r.q as usize;
        let prev = self.pending.sorted[d].range(..(r.offset, 0)).next_back().map(|&(_, rid)| rid);
        if let Some(mut cur) = prev.filter(|&p| self.mergeable(self.req(p), &r)) {
            let q = self.slab[cur as usize].as_mut().expect("queued");
            q.take(&mut r, &mut self.spare);
            self.count_merge(r.dir);
            self.free_request(class, now);
            loop {
                let start = self.req(cur).offset;
                let before = self.pending.sorted[d].range(..(start, 0)).next_back().map(|&(_, rid)| rid);
                match before.filter(|&b| self.mergeable(self.req(b), self.req(cur))) {
                    Some(b) => {
                        self.absorb(b, cur, now);
                        cur = b;
                    }
                    None => break,
                }
            }
            return;
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
        let (q, offset, len) = (r.q, r.offset, r.len);
        self.slab[rid as usize] = Some(r);
        self.nr_queued += 1;
        self.sched.queued(q, offset, len, now, &self.pending);
    }

    /// Request `b` starts where `a` ends and the two fit in one request: `max_sectors_kb`
    /// and `max_segments` (`ll_back_merge_fn`, `ll_merge_requests_fn`).
    fn mergeable(&self, a: &Request, b: &Request) -> bool {
        a.end() == b.offset && a.len + b.len <= self.max_bytes && a.segs + b.segs <= self.max_segments
    }

    /// Queued request `keep` absorbs the queued request `gone` that follows it on disk; `keep`
    /// inherits the older FIFO position (`dd_merged_requests`).
    fn absorb(&mut self, keep: u32, gone: u32, now: u64) {
        let mut g = self.unqueue(gone);
        self.slab[gone as usize] = None;
        self.free_rids.push(gone);
        self.free_request(g.class(), now);
        let d = g.q as usize;
        let k = self.slab[keep as usize].as_mut().expect("queued");
        k.take(&mut g, &mut self.spare);
        if (g.insert_ns, g.seq) < (k.insert_ns, k.seq) {
            let old = k.fifo_key(keep);
            k.insert_ns = g.insert_ns;
            k.seq = g.seq;
            let new = k.fifo_key(keep);
            self.pending.fifo[d].remove(&old);
            self.pending.fifo[d].insert(new);
        }
        self.count_merge(g.dir);
    }

    /// Removes a queued request from the scheduler's indexes, leaving it in the slab; returns
    /// a copy of its fields with the tags moved out.
    fn unqueue(&mut self, rid: u32) -> Request {
        let r = self.slab[rid as usize].as_mut().expect("queued");
        let d = r.q as usize;
        self.pending.sorted[d].remove(&(r.offset, rid));
        self.pending.fifo[d].remove(&r.fifo_key(rid));
        self.nr_queued -= 1;
        Request { tags: std::mem::take(&mut r.tags), ..*r }
    }

    /// The scheduler's choice among queued requests.
    fn select(&mut self, now: u64) -> Option<u32> {
        self.sched.select(&self.pending, now, self.nr_queued)
    }

    fn dispatch(&mut self, now: u64, out: &mut Vec<Dispatched>) {
        while self.busy_channels < self.model.channels() {
            let Some(rid) = self.select(now) else { break };
            let r = self.slab[rid as usize].as_ref().expect("queued");
            let (dir, q, offset, len, insert_ns) = (r.dir, r.q, r.offset, r.len, r.insert_ns);
            let d = q as usize;
            self.pending.sorted[d].remove(&(offset, rid));
            self.pending.fifo[d].remove(&r.fifo_key(rid));
            self.nr_queued -= 1;
            self.sched.dispatched(q, dir, offset + len, now, &self.pending);
            if self.busy_channels == 0 {
                self.busy_since = now;
            }
            self.busy_channels += 1;
            let s = &mut self.stats;
            match dir {
                IoDir::Read => s.read_wait_ns += now - insert_ns,
                IoDir::Write => s.write_wait_ns += now - insert_ns,
            }
            if self.model.serves_one_at_a_time() {
                self.drive.push(DriveCmd { rid, dir, offset, len, arrival_ns: now });
            } else {
                self.start(rid, dir, offset, len, now, out);
            }
        }
        if !self.drive_busy && !self.drive.is_empty() {
            let i = self.model.pick(&self.drive, now);
            let c = self.drive.remove(i);
            self.drive_busy = true;
            self.start(c.rid, c.dir, c.offset, c.len, now, out);
        }
    }

    /// The device starts request `rid` at `now`: its completion time and the statistics.
    fn start(&mut self, rid: u32, dir: IoDir, offset: u64, len: u64, now: u64, out: &mut Vec<Dispatched>) {
        let service = self.model.service_ns(dir, offset, len, now).max(1);
        self.count_started(dir, len, service);
        out.push(Dispatched { rid, done_ns: now + service });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{DeviceConfig, DeviceModel};

    const PAGE: u64 = 4096;

    proptest::proptest! {
        /// SortedSet answers as BTreeSet does: inserts, removes and ranges of both bounds.
        #[test]
        fn a_sorted_set_answers_as_a_btree_set(
            ops in proptest::collection::vec((0u8..3, 0u64..40, 0u64..40), 1..200)
        ) {
            let (mut s, mut b) = (SortedSet::default(), std::collections::BTreeSet::new());
            for (op, x, y) in ops {
                match op {
                    0 => proptest::prop_assert_eq!(s.insert(x), b.insert(x)),
                    1 => proptest::prop_assert_eq!(s.remove(&x), b.remove(&x)),
                    _ => {
                        let (lo, hi) = (x.min(y), x.max(y));
                        proptest::prop_assert!(s.range(lo..hi).eq(b.range(lo..hi)));
                        proptest::prop_assert!(s.range(..lo).next_back() == b.range(..lo).next_back());
                        proptest::prop_assert!(s.range(hi..).next() == b.range(hi..).next());
                        proptest::prop_assert!(s.range(lo..=hi).eq(b.range(lo..=hi)));
                    }
                }
                proptest::prop_assert_eq!((s.len(), s.first()), (b.len(), b.first()));
            }
        }
    }

    fn queue(toml_text: &str) -> DeviceQueue {
        let cfg: DeviceConfig = toml::from_str(toml_text).unwrap();
        DeviceQueue::new(DeviceModel::new(&cfg).unwrap(), crate::profile::PLUG_LEGACY)
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
            q.add(IoDir::Read, 100 * PAGE + i * PAGE, PAGE, i as u32, 0, &mut Vec::new());
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
            q.add(IoDir::Write, i * PAGE, PAGE, i as u32, 0, &mut Vec::new());
        }
        q.add(IoDir::Read, 8 * PAGE, PAGE, 8, 0, &mut Vec::new());
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
        q.add(IoDir::Read, 1 << 30, PAGE, 99, 0, &mut Vec::new());
        q.unplug(0, &mut out);
        assert_eq!(out.len(), 1);
        // Pages 0, 2 (separate requests), then 1 (back merge into 0, then coalesce with 2),
        // then page 3 arriving later; finally a front merge of page 9 into 10.
        for (t, page) in [(1u64, 0u64), (2, 2), (3, 1), (4, 3), (5, 10), (6, 9)] {
            q.add(IoDir::Read, page * PAGE, PAGE, page as u32, 0, &mut Vec::new());
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
            q.add(IoDir::Read, page * PAGE * 1000, PAGE, i as u32, 0, &mut Vec::new());
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
        q.add(IoDir::Read, 500_000 * PAGE, PAGE, 0, 0, &mut Vec::new());
        q.unplug(0, &mut out);
        for (i, page) in [900_000u64, 100_000, 700_000, 300_000, 600_000].iter().enumerate() {
            q.add(IoDir::Read, page * PAGE, PAGE, i as u32 + 1, 0, &mut Vec::new());
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
        q.add(IoDir::Read, 0, PAGE, 0, 0, &mut Vec::new());
        q.unplug(0, &mut out);
        // Writes queued first, reads after: reads still go first, but only writes_starved
        // (2) batches in a row before a write batch.
        for i in 0..3u64 {
            q.add(IoDir::Write, (10 + i) * 1000 * PAGE, PAGE, 100 + i as u32, 0, &mut Vec::new());
            q.unplug(1, &mut out);
        }
        for i in 0..6u64 {
            q.add(IoDir::Read, (20 + i) * 1000 * PAGE, PAGE, 200 + i as u32, 0, &mut Vec::new());
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
        q.add(IoDir::Write, 0, PAGE, 0, 0, &mut Vec::new());
        q.unplug(0, &mut out);
        // An old write far down the disk, then younger writes just above the head position.
        q.add(IoDir::Write, 900_000 * PAGE, PAGE, 1, 0, &mut Vec::new());
        q.unplug(0, &mut out);
        for i in 0..3u64 {
            q.add(IoDir::Write, (10 + i) * 1000 * PAGE, PAGE, 2 + i as u32, 0, &mut Vec::new());
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
        q.add(IoDir::Write, 0, PAGE, 0, 0, &mut Vec::new());
        q.unplug(0, &mut out);
        q.add(IoDir::Write, 900_000 * PAGE, PAGE, 1, 0, &mut Vec::new());
        q.unplug(0, &mut out);
        for i in 0..3u64 {
            q.add(IoDir::Write, (10 + i) * 1000 * PAGE, PAGE, 2 + i as u32, 0, &mut Vec::new());
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
            q.add(IoDir::Read, i * 100_000 * PAGE, PAGE, i as u32, 0, &mut Vec::new());
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

    #[test]
    fn read_congestion_time_runs_from_7_8_of_nr_requests_until_below_the_off_threshold() {
        // nr_requests 16: congested at 16 - 2 + 1 = 15 allocated, cleared below 16 - 2 - 1 - 1 = 12.
        let mut q = queue("model = \"hdd\"\nnr_requests = 16");
        let mut out = Vec::new();
        for i in 0..14u64 {
            q.add(IoDir::Read, i * 100_000 * PAGE, PAGE, i as u32, 1_000, &mut Vec::new());
        }
        assert!(!q.read_congested(), "14 allocated: below the on threshold");
        q.add(IoDir::Read, 14 * 100_000 * PAGE, PAGE, 14, 1_000, &mut Vec::new());
        assert!(q.read_congested());
        q.unplug(1_000, &mut out);
        assert_eq!(q.stats().read_congested_ns, 0, "the period is still running");
        assert_eq!(q.read_congested_ns_at(5_000), 4_000);
        // Completions free requests: 14, 13, 12 allocated keep it congested, 11 clears it.
        let mut tags = Vec::new();
        let mut cleared_at = 0;
        for k in 0..4 {
            out.sort_by_key(|d| (d.done_ns, d.rid));
            let d = out.remove(0);
            q.complete(d.done_ns, d.rid, &mut tags, &mut out);
            assert_eq!(q.read_congested(), k < 3, "after {} completions", k + 1);
            cleared_at = d.done_ns;
        }
        assert_eq!(q.stats().read_congested_ns, cleared_at - 1_000);
        assert_eq!(q.read_congested_ns_at(u64::MAX / 2), cleared_at - 1_000, "no period running");
    }

    #[test]
    fn busy_time_includes_the_period_still_running() {
        // A queueing disk holds both commands: after the first completes the second is
        // still in the drive, so the disk has not drained and busy_ns has nothing yet.
        let mut q = queue("model = \"hdd\"");
        let mut out = Vec::new();
        q.add(IoDir::Read, 0, PAGE, 0, 0, &mut Vec::new());
        q.add(IoDir::Read, 500_000 * PAGE, PAGE, 1, 0, &mut Vec::new());
        q.unplug(1_000, &mut out);
        let first = out.remove(0);
        let mut tags = Vec::new();
        q.complete(first.done_ns, first.rid, &mut tags, &mut out);
        assert_eq!(q.stats().busy_ns, 0);
        let mid = out[0].done_ns - 1;
        assert_eq!(q.busy_ns_at(mid), mid - 1_000, "busy since the unplug");
        // Once drained, the period is closed and counted once.
        drain(&mut q, first.done_ns, out);
        let s = q.stats();
        assert_eq!(s.busy_ns, s.read_service_ns);
        assert_eq!(q.busy_ns_at(u64::MAX / 2), s.busy_ns);
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
                q.add(dir, base + k * PAGE, PAGE, step, 0, &mut Vec::new());
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
    fn writes_allocate_requests_up_to_nr_requests_and_congestion_has_hysteresis() {
        // queue_depth 1: all but the first request stay queued.
        let mut q = queue("model = \"hdd\"\nqueue_depth = 1\nnr_requests = 16");
        let mut out = Vec::new();
        // 16 scattered writes: one request each (on = 16 - 2 + 1 = 15, off = 16 - 2 - 1 - 1 = 12).
        for i in 0..16u64 {
            q.add(IoDir::Write, i * 1000 * PAGE, PAGE, i as u32, 0, &mut out);
            q.unplug(0, &mut out);
            assert_eq!(q.write_full(), i == 15, "after {} requests", i + 1);
            assert_eq!(q.write_congested(), i >= 14, "after {} requests", i + 1);
        }
        assert_eq!(q.stats().queue_full, 1);
        // A write continuing a queued request merges into it: no new request.
        q.add(IoDir::Write, 5 * 1000 * PAGE + PAGE, PAGE, 99, 0, &mut out);
        q.unplug(0, &mut out);
        assert_eq!(q.allocated[ASYNC], 16);
        // Reads are counted apart.
        q.add(IoDir::Read, 77 * PAGE, PAGE, 100, 0, &mut out);
        q.unplug(0, &mut out);
        assert_eq!(q.allocated, [16, 1]);
        // Completions free requests; congestion clears only below the off threshold.
        let mut tags = Vec::new();
        let mut t = 0;
        let mut cleared_at = None;
        for n in 0..6 {
            out.sort_by_key(|d| (d.done_ns, d.rid));
            let d = out.remove(0);
            t = t.max(d.done_ns);
            q.complete(t, d.rid, &mut tags, &mut out);
            if q.take_congestion_wakeup() {
                cleared_at.get_or_insert(n);
            }
        }
        assert!(!q.write_full());
        assert_eq!(cleared_at, Some(4), "16 -> 11 write requests: the first count below 12");
        assert!(!q.write_congested());
    }

    #[test]
    fn every_write_freed_below_the_off_threshold_wakes_congestion_wait() {
        // 3.x clear_bdi_congested wakes congestion_wait(BLK_RW_ASYNC) from every
        // __freed_request below the off threshold, whether or not the queue was congested.
        let mut q = queue("model = \"hdd\"\nqueue_depth = 1\nnr_requests = 16");
        let mut out = Vec::new();
        let mut tags = Vec::new();
        // Three scattered writes: never congested (on = 15).
        for i in 0..3u64 {
            q.add(IoDir::Write, i * 1000 * PAGE, PAGE, i as u32, 0, &mut out);
        }
        q.unplug(0, &mut out);
        assert!(!q.write_congested() && !q.take_congestion_wakeup(), "allocating wakes nobody");
        let d = out.remove(0);
        q.complete(d.done_ns, d.rid, &mut tags, &mut out);
        assert!(q.take_congestion_wakeup(), "2 of 16 allocated: the completion wakes the sleepers");
        assert!(!q.take_congestion_wakeup(), "taken once");
        // A read completion wakes the sync queue, not congestion_wait(BLK_RW_ASYNC).
        q.add(IoDir::Read, 1 << 30, PAGE, 50, 0, &mut out);
        q.unplug(0, &mut out);
        while let Some(d) = out.pop() {
            let read = q.req(d.rid).dir == IoDir::Read;
            q.complete(d.done_ns, d.rid, &mut tags, &mut out);
            if read {
                assert!(!q.take_congestion_wakeup());
            }
            q.take_congestion_wakeup();
        }
        // 14 allocated (at or above off = 12): completions down to 12 wake nobody, 11 does.
        for i in 0..14u64 {
            q.add(IoDir::Write, (100 + i) * 1000 * PAGE, PAGE, 100 + i as u32, 0, &mut out);
        }
        q.unplug(0, &mut out);
        let mut woke = Vec::new();
        for _ in 0..3 {
            out.sort_by_key(|d| (d.done_ns, d.rid));
            let d = out.remove(0);
            q.complete(d.done_ns, d.rid, &mut tags, &mut out);
            woke.push(q.take_congestion_wakeup());
        }
        assert_eq!(woke, [false, false, true], "14 -> 13, 12, 11 allocated");
    }

    #[test]
    fn a_plugged_request_merges_backward_into_queued_ones_at_insertion() {
        let mut q = queue("model = \"hdd\"\nqueue_depth = 1");
        let mut out = Vec::new();
        q.add(IoDir::Write, 1 << 30, PAGE, 99, 0, &mut out);
        q.unplug(0, &mut out);
        // Pages 1, 0 and 2 each start a plugged request (none touches the plug's last one).
        for page in [1u64, 0, 2] {
            q.add(IoDir::Write, page * PAGE, PAGE, page as u32, 1, &mut out);
        }
        assert_eq!(q.allocated[ASYNC], 4);
        q.unplug(1, &mut out);
        // [1] is queued, [0] is queued beside it (no front merge at insertion), then [2]
        // merges into [1] and [1, 2] into [0]: elv_attempt_insert_merge's backward chain.
        assert_eq!(q.depth(), 2, "the write in service and one request [0, 3)");
        assert_eq!(q.allocated[ASYNC], 2, "merged requests are freed");
        let order = drain(&mut q, 1, out);
        assert_eq!(order[1].0, 0);
        assert_eq!(order[1].2.len(), 3);
    }

    #[test]
    fn a_plug_holding_16_requests_is_flushed_before_the_next() {
        let mut q = queue("model = \"sata-ssd\"");
        let mut out = Vec::new();
        for i in 0..16u64 {
            q.add(IoDir::Write, i * 10 * PAGE, PAGE, i as u32, 0, &mut out);
        }
        assert!(out.is_empty(), "16 requests stay plugged");
        q.add(IoDir::Write, 200 * PAGE, PAGE, 16, 0, &mut out);
        assert_eq!(out.len(), 4, "the flushed 16 went to the 4 channels");
        assert_eq!(q.depth(), 16);
        q.unplug(0, &mut out);
        assert_eq!(q.depth(), 17);
    }

    fn queue_with(toml_text: &str, rules: PlugRules) -> DeviceQueue {
        let cfg: DeviceConfig = toml::from_str(toml_text).unwrap();
        DeviceQueue::new(DeviceModel::new(&cfg).unwrap(), rules)
    }

    #[test]
    fn scattered_pages_merge_up_to_max_segments_and_a_large_folio_takes_several() {
        // 4 MiB requests by max_sectors_kb, but 8 segments: eight page I/Os at most.
        let mut q = queue("model = \"sata-ssd\"\nmax_sectors_kb = 4096\nmax_segments = 8");
        assert_eq!(q.max_bytes(), 8 * (64 << 10), "8 segments of 64 KiB bound a split folio");
        let mut out = Vec::new();
        for i in 0..20u64 {
            q.add(IoDir::Write, i * PAGE, PAGE, i as u32, 0, &mut out);
        }
        q.unplug(0, &mut out);
        let order = drain(&mut q, 0, out);
        let sizes: Vec<usize> = order.iter().map(|(_, _, tags)| tags.len()).collect();
        assert_eq!(sizes, vec![8, 8, 4], "20 contiguous pages in requests of 8 segments");
        // A 256 KiB folio is four 64 KiB segments: two of them fill a request of 8.
        let mut q = queue("model = \"sata-ssd\"\nmax_sectors_kb = 4096\nmax_segments = 8");
        let mut out = Vec::new();
        for i in 0..3u64 {
            q.add(IoDir::Read, i * 64 * PAGE, 64 * PAGE, i as u32, 0, &mut out);
        }
        q.unplug(0, &mut out);
        let order = drain(&mut q, 0, out);
        let sizes: Vec<usize> = order.iter().map(|(_, _, tags)| tags.len()).collect();
        assert_eq!(sizes, vec![2, 1]);
        // NVMe's segments have no size limit: 8 of them do not bound a request.
        let q = queue("model = \"nvme\"\nmax_sectors_kb = 4096\nmax_segments = 8");
        assert_eq!(q.max_bytes(), 4096 << 10);
    }

    #[test]
    fn from_4_10_a_plug_holding_a_request_of_128_kib_is_flushed_before_the_next() {
        let rules = crate::profile::PLUG_5_16;
        let mut q = queue_with("model = \"sata-ssd\"\nmax_segments = 32", rules);
        let mut out = Vec::new();
        // 31 contiguous pages: one plugged request of 124 KiB.
        for i in 0..31u64 {
            q.add(IoDir::Write, i * PAGE, PAGE, i as u32, 0, &mut out);
        }
        // A page elsewhere: the plugged request is under 128 KiB, so both stay plugged, and
        // the next page joins the new request.
        q.add(IoDir::Write, 1000 * PAGE, PAGE, 31, 0, &mut out);
        q.add(IoDir::Write, 1001 * PAGE, PAGE, 32, 0, &mut out);
        assert!(out.is_empty() && q.depth() == 0);
        // 30 scattered pages: the newest plugged request, the one looked at (4.10-6.12), is
        // small each time, so nothing goes out until 32 requests are held.
        for i in 0..30u64 {
            q.add(IoDir::Write, (2000 + 10 * i) * PAGE, PAGE, 33 + i as u32, 0, &mut out);
        }
        assert!(out.is_empty(), "32 requests plugged, none of 128 KiB at the tail");
        q.add(IoDir::Write, 5000 * PAGE, PAGE, 99, 0, &mut out);
        assert!(!out.is_empty(), "the 33rd request flushes a plug of 32 (BLK_MAX_REQUEST_COUNT from 5.16)");

        // A stream of contiguous pages on a device whose requests hold 64 pages: each full
        // request goes out as soon as the next begins, instead of 16 or 32 at a time.
        for (rules, held) in [(crate::profile::PLUG_LEGACY, 16), (crate::profile::PLUG_5_16, 1)] {
            let mut q = queue_with("model = \"sata-ssd\"\nmax_segments = 64", rules);
            let mut out = Vec::new();
            let mut first_out = None;
            for i in 0..(64 * 20u64) {
                q.add(IoDir::Write, i * PAGE, PAGE, i as u32, 0, &mut out);
                if first_out.is_none() && !out.is_empty() {
                    first_out = Some(i);
                }
            }
            assert_eq!(first_out, Some(64 * held), "{rules:?}: the first flush comes with request {}", held + 1);
        }
    }

    #[test]
    fn from_6_13_the_size_check_looks_at_the_oldest_plugged_request() {
        // A full 128 KiB request, then small scattered ones: 6.13+ looks at the oldest (full)
        // and flushes at the next new request; 4.10-6.12 at the newest (small) and does not.
        for (oldest, flushed) in [(true, true), (false, false)] {
            let rules = PlugRules { flush_checks_oldest: oldest, ..crate::profile::PLUG_5_16 };
            let mut q = queue_with("model = \"sata-ssd\"\nmax_segments = 32", rules);
            let mut out = Vec::new();
            for i in 0..32u64 {
                q.add(IoDir::Write, i * PAGE, PAGE, i as u32, 0, &mut out);
            }
            q.add(IoDir::Write, 1000 * PAGE, PAGE, 32, 0, &mut out);
            assert!(!out.is_empty(), "the full request is newest here: both rules flush");
            out.clear();
            // The small request is now the oldest, a full one follows it.
            for i in 0..32u64 {
                q.add(IoDir::Write, (2000 + i) * PAGE, PAGE, 40 + i as u32, 0, &mut out);
            }
            assert!(out.is_empty());
            q.add(IoDir::Write, 3000 * PAGE, PAGE, 99, 0, &mut out);
            assert_eq!(out.is_empty(), flushed, "oldest = {oldest}");
        }
    }

    #[test]
    fn same_inputs_give_the_same_dispatches_and_stats() {
        for name in crate::device::MODELS.iter().map(|m| m.name) {
            let a = mixed_run(name);
            let b = mixed_run(name);
            assert!(!a.0.is_empty());
            assert_eq!(a, b, "{name}");
        }
    }
}
