//! Models block/cfq-iosched.c (CFQ, the default I/O scheduler of Linux 2.6.18 to 4.x, and
//! so of the 3.6 kernel of seed 000) as far as timing goes.
//!
//! DOC: CFQ gives each process's synchronous I/O (reads, O_SYNC writes) its own queue and
//! puts all asynchronous writes (writeback, swap-out) of one priority in one shared queue.
//! One queue at a time is *active* and owns the disk for a time slice:
//!
//! ```text
//!   sync queue of task A ─┐   service trees (SYNC, SYNC_NOIDLE, ASYNC), each ordered by
//!   sync queue of task B ─┼─► rb_key = arrival + offset; the workload type whose first
//!   async queue (shared) ─┘   queue waited longest is served for a workload slice
//!
//!   active queue: dispatches in sector order (nearest to the head, short backward seeks
//!   at twice the cost), its FIFO head once per slice if older than fifo_expire;
//!   slice = 100 ms sync / 40 ms async, started at the first completion;
//!   async: at most 16 requests per slice, never while sync requests are in flight,
//!   and only 1 in the driver for 100 ms after a sync request took over 124 ms;
//!   sync: never while async requests are in flight ("drain async before sync IO").
//!   When a sync queue with an idle window empties, the disk idles up to slice_idle (8 ms)
//!   for that process's next request instead of serving another queue.
//!   A sync request arriving while the async queue is active preempts it.
//! ```
//!
//! The idle window is dropped for a process that thinks longer than slice_idle between
//! requests or seeks more than 400 KiB (to the SYNC_NOIDLE tree, where it idles only as
//! the last queue of the tree). On non-rotational devices with command queueing CFQ does
//! not idle.
//!
//! What we leave out: cgroups (one group, no group idle and no `wait_busy`), I/O priority
//! classes (every queue is best-effort at the default priority 4, what nice 0 gives),
//! close-cooperator queue merging, REQ_PRIO/REQ_NOIDLE flags, and the hw_tag detection
//! (a device that queues commands, NCQ or NVMe, counts as queueing from the start).

use super::elevator::ElevatorOps;
use super::queue::Pending;
use super::IoDir;
use crate::units::JIFFY_NS;
use std::collections::BTreeSet;

/// One second (`HZ` jiffies), ns.
const HZ_NS: i64 = 1_000_000_000;
/// `CFQQ_SEEK_THR`: a request more than 800 sectors from the previous one is a seek.
const SEEK_THR: u64 = 800 * 512;
/// `CFQQ_CLOSE_THR`: a request within 8 MiB sectors of the head counts as close.
const CLOSE_THR: u64 = 8 * 1024 * 512;
/// `CFQQ_SECT_THR_NONROT`: on SSDs a request below 32 KiB counts as a seek.
const SECT_THR_NONROT: u64 = 2 * 32 * 512;
/// Default I/O priority of a best-effort task at nice 0 (`IOPRIO_NORM`).
const PRIO: u64 = 4;

/// Tunables of CFQ (`/sys/block/<dev>/queue/iosched/` with scheduler cfq), ns unless noted.
/// Defaults are the kernel's at HZ = 250 (pagesim's jiffy is 4 ms).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CfqParams {
    pub quantum: u32,
    pub fifo_expire_sync: u64,
    pub fifo_expire_async: u64,
    pub back_seek_max_kb: u64,
    pub back_seek_penalty: u64,
    pub slice_sync: u64,
    pub slice_async: u64,
    pub slice_async_rq: u32,
    pub slice_idle: u64,
    pub low_latency: bool,
    pub target_latency: u64,
}

impl Default for CfqParams {
    fn default() -> Self {
        // block/cfq-iosched.c tunables, in jiffies of HZ = 250.
        CfqParams {
            quantum: 8,
            fifo_expire_sync: (250 / 8) * JIFFY_NS,
            fifo_expire_async: (250 / 4) * JIFFY_NS,
            back_seek_max_kb: 16 * 1024,
            back_seek_penalty: 2,
            slice_sync: (250 / 10) * JIFFY_NS,
            slice_async: (250 / 25) * JIFFY_NS,
            slice_async_rq: 2,
            slice_idle: (250 / 125) * JIFFY_NS,
            low_latency: true,
            target_latency: (250 * 3 / 10) * JIFFY_NS,
        }
    }
}

impl CfqParams {
    pub(super) fn validate(&self) -> Result<(), String> {
        for (k, v) in [
            ("quantum", self.quantum as u64),
            ("slice_sync", self.slice_sync),
            ("slice_async", self.slice_async),
            ("slice_async_rq", self.slice_async_rq as u64),
            ("back_seek_penalty", self.back_seek_penalty),
            ("target_latency", self.target_latency),
        ] {
            if v == 0 {
                return Err(format!("iosched.{k}: expected a positive value, got 0"));
            }
        }
        Ok(())
    }
}

/// Workload type: the service tree a queue waits in (`enum wl_type_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Wl {
    Async = 0,
    SyncNoidle = 1,
    Sync = 2,
}

const WLS: [Wl; 3] = [Wl::Async, Wl::SyncNoidle, Wl::Sync];

/// Think-time statistics (`struct cfq_ttime`): a decaying mean of the gap between a
/// request's completion and the next request, in ns.
#[derive(Clone, Copy, Debug)]
struct Ttime {
    last_end: u64,
    samples: u64,
    total: u64,
    mean: u64,
}

impl Ttime {
    fn new(now: u64) -> Self {
        Ttime { last_end: now, samples: 0, total: 0, mean: 0 }
    }

    /// `__cfq_update_io_thinktime`: fixed-point decay of 7/8, gaps capped at 2*slice_idle.
    fn update(&mut self, now: u64, slice_idle: u64) {
        let elapsed = now.saturating_sub(self.last_end).min(2 * slice_idle);
        self.samples = (7 * self.samples + 256) / 8;
        self.total = (7 * self.total + 256 * elapsed) / 8;
        self.mean = (self.total + 128) / self.samples;
    }

    /// `sample_valid`.
    fn valid(&self) -> bool {
        self.samples > 80
    }
}

/// A CFQ queue (`struct cfq_queue`); its pending requests live in [`Pending`] under its index.
#[derive(Clone, Debug)]
struct CfqQueue {
    sync: bool,
    /// Queued in a service tree (has requests, or is active and not yet expired).
    on_rr: bool,
    tree: Option<Wl>,
    rb_key: i64,
    /// Requests in the driver.
    dispatched: u32,
    slice_new: bool,
    slice_start: u64,
    slice_end: u64,
    slice_dispatch: u32,
    slice_resid: i64,
    wait_request: bool,
    must_dispatch: bool,
    fifo_checked: bool,
    idle_window: bool,
    deep: bool,
    ttime: Ttime,
    seek_history: u32,
    last_request_pos: u64,
}

impl CfqQueue {
    fn new(sync: bool, now: u64) -> Self {
        CfqQueue {
            sync,
            on_rr: false,
            tree: None,
            rb_key: 0,
            dispatched: 0,
            slice_new: true,
            slice_start: 0,
            slice_end: 0,
            slice_dispatch: 0,
            slice_resid: 0,
            wait_request: false,
            must_dispatch: false,
            fifo_checked: false,
            idle_window: sync,
            deep: false,
            ttime: Ttime::new(now),
            seek_history: 0,
            last_request_pos: 0,
        }
    }

    /// `CFQQ_SEEKY`: more than 4 of the last 32 requests were seeks.
    fn seeky(&self) -> bool {
        self.seek_history.count_ones() > 32 / 8
    }

    /// `cfqq_type`.
    fn wl(&self) -> Wl {
        if !self.sync {
            Wl::Async
        } else if !self.idle_window {
            Wl::SyncNoidle
        } else {
            Wl::Sync
        }
    }
}

/// CFQ's dispatch state (`struct cfq_data`, one group, best-effort class).
#[derive(Clone, Debug)]
pub(super) struct Cfq {
    p: CfqParams,
    nonrot: bool,
    hw_tag: bool,
    /// Index 0 is the shared async queue; sync queues follow, one per submitting context.
    queues: Vec<CfqQueue>,
    /// Submitting context -> its sync queue.
    ctx_queue: Vec<u32>,
    trees: [BTreeSet<(i64, u32)>; 3],
    tree_ttime: [Ttime; 3],
    /// Queues in the service trees (`cfqg->nr_cfqq`).
    nr_cfqq: u32,
    busy_queues: u32,
    busy_sync_queues: u32,
    busy_queues_avg: u32,
    active: Option<u32>,
    /// A request of the active queue was dispatched in this slice (`active_cic`).
    active_cic: bool,
    serving: Wl,
    workload_expires: u64,
    /// Workload slice left when the last queue expired (`saved_wl_slice`, `saved_wl_type`).
    saved: Option<(u64, Wl)>,
    rq_in_flight: [u32; 2],
    /// End of the last dispatched request (`last_position`).
    last_position: u64,
    last_delayed_sync: i64,
    idle_timer: Option<u64>,
}

impl Cfq {
    /// `hw_tag`: the device queues commands (CFQ measures a driver depth of at least
    /// CFQ_HW_QUEUE_MIN; here taken from the device model).
    pub(super) fn new(p: CfqParams, nonrot: bool, hw_tag: bool) -> Self {
        Cfq {
            p,
            nonrot,
            hw_tag,
            queues: vec![CfqQueue::new(false, 0)],
            ctx_queue: Vec::new(),
            trees: Default::default(),
            tree_ttime: [Ttime::new(0); 3],
            nr_cfqq: 0,
            busy_queues: 0,
            busy_sync_queues: 0,
            busy_queues_avg: 0,
            active: None,
            active_cic: false,
            serving: Wl::Async,
            workload_expires: 0,
            saved: None,
            rq_in_flight: [0; 2],
            last_position: 0,
            // "we optimistically start assuming sync ops weren't delayed in last second"
            last_delayed_sync: -HZ_NS,
            idle_timer: None,
        }
    }

    /// The queue a request goes to (`cfq_get_queue`): the shared async queue, or the
    /// submitting context's sync queue (created on first use).
    fn cfq_get_queue(&mut self, sync: bool, ctx: u32, now: u64) -> u32 {
        if !sync {
            return 0;
        }
        let c = ctx as usize;
        if c >= self.ctx_queue.len() {
            self.ctx_queue.resize(c + 1, u32::MAX);
        }
        if self.ctx_queue[c] == u32::MAX {
            self.ctx_queue[c] = self.queues.len() as u32;
            self.queues.push(CfqQueue::new(true, now));
        }
        self.ctx_queue[c]
    }

    /// When the idle timer fires, if armed.
    fn idle_timer_at(&self) -> Option<u64> {
        self.idle_timer
    }

    fn empty(pending: &Pending, q: u32) -> bool {
        pending.sorted[q as usize].is_empty()
    }

    /// `cfq_prio_slice`.
    fn prio_slice(&self, sync: bool, prio: u64) -> u64 {
        let base = if sync { self.p.slice_sync } else { self.p.slice_async } as i64;
        (base + base / 5 * (4 - prio as i64)) as u64
    }

    /// `cfq_slice_offset`: later service for queues with smaller slices.
    fn slice_offset(&self, q: u32) -> i64 {
        let sync = self.queues[q as usize].sync;
        (self.nr_cfqq.saturating_sub(1) as i64) * (self.prio_slice(true, 0) as i64 - self.prio_slice(sync, PRIO) as i64)
    }

    /// `cfq_group_get_avg_queues`: follows increases fast, decreases slowly.
    fn avg_queues(&mut self) -> u32 {
        let busy = self.trees.iter().map(|t| t.len() as u32).sum::<u32>();
        let (lo, hi) = (self.busy_queues_avg.min(busy), self.busy_queues_avg.max(busy));
        self.busy_queues_avg = (3 * hi + lo + 2) / 4;
        self.busy_queues_avg
    }

    /// `cfq_scaled_cfqq_slice`.
    fn scaled_slice(&mut self, q: u32) -> u64 {
        let mut slice = self.prio_slice(self.queues[q as usize].sync, PRIO);
        if self.p.low_latency {
            let iq = self.avg_queues() as u64;
            let expect = self.p.slice_sync * iq;
            let group_slice = self.p.target_latency;
            if expect > group_slice {
                let low = slice.min(2 * self.p.slice_idle * slice / self.p.slice_sync);
                slice = (slice * group_slice / expect).max(low);
            }
        }
        slice
    }

    fn slice_used(&self, q: u32, now: u64) -> bool {
        let c = &self.queues[q as usize];
        !c.slice_new && now >= c.slice_end
    }

    fn thinktime_big(&self, t: &Ttime) -> bool {
        t.valid() && t.mean > self.p.slice_idle
    }

    /// `cfq_should_idle`.
    fn should_idle(&self, q: u32) -> bool {
        let c = &self.queues[q as usize];
        if self.p.slice_idle == 0 {
            return false;
        }
        if c.idle_window && !(self.nonrot && self.hw_tag) {
            return true;
        }
        let Some(st) = c.tree else { return false };
        self.trees[st as usize].len() == 1 && c.sync && !self.thinktime_big(&self.tree_ttime[st as usize])
    }

    /// `cfq_service_tree_add`.
    fn service_tree_add(&mut self, q: u32, add_front: bool, now: u64) {
        let st = self.queues[q as usize].wl();
        let key = if !add_front {
            let k = self.slice_offset(q) + now as i64 - self.queues[q as usize].slice_resid;
            self.queues[q as usize].slice_resid = 0;
            k
        } else {
            self.trees[st as usize].first().map_or(now as i64, |&(k, _)| k) - HZ_NS
        };
        let c = &self.queues[q as usize];
        let new = c.tree.is_none();
        if let Some(old) = c.tree {
            if old == st && c.rb_key == key {
                return;
            }
            self.trees[old as usize].remove(&(c.rb_key, q));
        }
        self.trees[st as usize].insert((key, q));
        let c = &mut self.queues[q as usize];
        c.tree = Some(st);
        c.rb_key = key;
        if !add_front && new {
            self.nr_cfqq += 1;
        }
    }

    /// `cfq_add_cfqq_rr`.
    fn add_rr(&mut self, q: u32, now: u64) {
        let c = &mut self.queues[q as usize];
        c.on_rr = true;
        self.busy_queues += 1;
        if c.sync {
            self.busy_sync_queues += 1;
        }
        self.service_tree_add(q, false, now);
    }

    /// `cfq_del_cfqq_rr`.
    fn del_rr(&mut self, q: u32) {
        let c = &mut self.queues[q as usize];
        c.on_rr = false;
        if let Some(st) = c.tree.take() {
            self.trees[st as usize].remove(&(c.rb_key, q));
            self.nr_cfqq -= 1;
        }
        self.busy_queues -= 1;
        if c.sync {
            self.busy_sync_queues -= 1;
        }
    }

    /// `__cfq_slice_expired` of the active queue.
    fn slice_expired(&mut self, timed_out: bool, now: u64, pending: &Pending) {
        let Some(q) = self.active else { return };
        if self.queues[q as usize].wait_request {
            self.idle_timer = None;
        }
        if timed_out {
            let resid = if self.queues[q as usize].slice_new {
                self.scaled_slice(q) as i64
            } else {
                self.queues[q as usize].slice_end as i64 - now as i64
            };
            self.queues[q as usize].slice_resid = resid;
        }
        let c = &mut self.queues[q as usize];
        c.wait_request = false;
        // cfq_group_served: remember what is left of the workload slice.
        self.saved = (self.workload_expires > now).then(|| (self.workload_expires - now, self.serving));
        if c.on_rr && Self::empty(pending, q) {
            self.del_rr(q);
        }
        if self.queues[q as usize].on_rr {
            self.service_tree_add(q, false, now);
        }
        self.active = None;
        self.active_cic = false;
    }

    /// `choose_wl_class_and_type` (best-effort class only), after `cfq_choose_cfqg`
    /// restored the saved workload.
    fn choose_workload(&mut self, now: u64) {
        match self.saved {
            Some((left, wl)) => {
                self.workload_expires = now + left;
                self.serving = wl;
            }
            None => self.workload_expires = now.saturating_sub(1),
        }
        let busy = self.trees.iter().map(|t| t.len() as u64).sum::<u64>();
        if busy == 0 {
            self.workload_expires = now + JIFFY_NS;
            return;
        }
        if !self.trees[self.serving as usize].is_empty() && now <= self.workload_expires {
            return;
        }
        // cfq_choose_wl_type: the tree whose first queue has the lowest key.
        let mut best: Option<(i64, Wl)> = None;
        for wl in WLS {
            if let Some(&(k, _)) = self.trees[wl as usize].first() {
                if best.is_none_or(|(bk, _)| k < bk) {
                    best = Some((k, wl));
                }
            }
        }
        self.serving = best.map_or(Wl::SyncNoidle, |(_, wl)| wl);
        let count = self.trees[self.serving as usize].len() as u64;
        let group_slice = self.p.target_latency;
        let mut slice = group_slice * count / (self.busy_queues_avg as u64).max(busy);
        if self.serving == Wl::Async {
            let tmp = self.p.target_latency * count / (self.busy_queues as u64).max(1);
            slice = slice.min(tmp) * self.p.slice_async / self.p.slice_sync;
        } else {
            slice = slice.max(2 * self.p.slice_idle);
        }
        self.workload_expires = now + slice.max(2 * JIFFY_NS);
    }

    /// `__cfq_set_active_queue`.
    fn set_active(&mut self, q: Option<u32>) {
        if let Some(q) = q {
            let c = &mut self.queues[q as usize];
            c.slice_start = 0;
            c.slice_end = 0;
            c.slice_dispatch = 0;
            c.wait_request = false;
            c.must_dispatch = false;
            c.fifo_checked = false;
            c.slice_new = true;
            self.idle_timer = None;
        }
        self.active = q;
        self.active_cic = false;
    }

    /// `cfq_select_queue`: keep the active queue, idle for it, or expire it and pick the
    /// next. `None` means nothing is to be dispatched now.
    fn select_queue(&mut self, now: u64, pending: &Pending, rq_queued: usize) -> Option<u32> {
        if let Some(q) = self.active {
            if rq_queued == 0 {
                return None;
            }
            let c = &self.queues[q as usize];
            if self.slice_used(q, now) && !c.must_dispatch {
                if self.nr_cfqq == 1 && Self::empty(pending, q) && c.dispatched > 0 && self.should_idle(q) {
                    return None;
                }
            } else {
                if !Self::empty(pending, q) {
                    return Some(q);
                }
                if self.idle_timer.is_some() {
                    return None;
                }
                let c = &mut self.queues[q as usize];
                if c.seeky()
                    && c.idle_window
                    && (c.slice_new || c.slice_end as i64 - now as i64 > now as i64 - c.slice_start as i64)
                {
                    c.deep = false;
                    c.idle_window = false;
                }
                if self.queues[q as usize].dispatched > 0 && self.should_idle(q) {
                    return None;
                }
            }
            self.slice_expired(false, now, pending);
        }
        self.choose_workload(now);
        let next = if rq_queued == 0 { None } else { self.trees[self.serving as usize].first().map(|&(_, q)| q) };
        self.set_active(next);
        next
    }

    /// `cfq_may_dispatch`.
    fn may_dispatch(&self, q: u32, now: u64) -> bool {
        let c = &self.queues[q as usize];
        if self.should_idle(q) && self.rq_in_flight[0] > 0 {
            return false;
        }
        if self.rq_in_flight[1] > 0 && !c.sync {
            return false;
        }
        let mut max = (self.p.quantum / 2).max(1);
        if c.dispatched >= max {
            let promote = c.sync && self.busy_sync_queues == 1;
            let used_soon = c.slice_new || now + self.p.slice_idle * c.dispatched as u64 > c.slice_end;
            if self.busy_queues > 1 && used_soon && !promote {
                return false;
            }
            max = if self.busy_queues == 1 || promote { u32::MAX } else { self.p.quantum };
        }
        if !c.sync && self.p.low_latency {
            let since = now as i64 - self.last_delayed_sync;
            let mut depth = (since / self.p.slice_sync as i64).max(0) as u32;
            if depth == 0 && c.dispatched == 0 {
                depth = 1;
            }
            max = max.min(depth);
        }
        c.dispatched < max
    }

    /// `cfq_choose_req`: the request nearer to the head, a backward seek within
    /// back_seek_max counting back_seek_penalty times its distance.
    fn choose_req(&self, a: Option<(u64, u32)>, b: Option<(u64, u32)>, last: u64) -> Option<u32> {
        let (Some((s1, r1)), Some((s2, r2))) = (a, b) else { return a.or(b).map(|x| x.1) };
        let back_max = self.p.back_seek_max_kb * 1024;
        let dist = |s: u64| -> Option<u64> {
            if s >= last {
                Some(s - last)
            } else if s + back_max >= last {
                Some((last - s) * self.p.back_seek_penalty)
            } else {
                None
            }
        };
        Some(match (dist(s1), dist(s2)) {
            (Some(d1), Some(d2)) => {
                if d1 < d2 || (d1 == d2 && s1 >= s2) {
                    r1
                } else {
                    r2
                }
            }
            (Some(_), None) => r1,
            (None, Some(_)) => r2,
            (None, None) => {
                if s1 <= s2 {
                    r1
                } else {
                    r2
                }
            }
        })
    }

    /// The request of queue `q` to serve next (`cfq_check_fifo`, else `next_rq`).
    fn next_request(&mut self, q: u32, now: u64, pending: &Pending) -> Option<u32> {
        let c = &mut self.queues[q as usize];
        if !c.fifo_checked {
            c.fifo_checked = true;
            let expire = if c.sync { self.p.fifo_expire_sync } else { self.p.fifo_expire_async };
            if let Some(&(inserted, _, rid)) = pending.fifo[q as usize].first() {
                if now >= inserted + expire {
                    return Some(rid);
                }
            }
        }
        let sorted = &pending.sorted[q as usize];
        let last = self.last_position;
        let next = sorted.range((last, 0)..).next().or_else(|| sorted.first()).copied();
        let prev = sorted.range(..(last, 0)).next_back().copied();
        let prev = prev.filter(|p| Some(*p) != next);
        self.choose_req(next, prev, last)
    }

    /// `cfq_dispatch_requests`: the request to hand to the driver now, if any.
    fn cfq_dispatch_requests(&mut self, pending: &Pending, now: u64, rq_queued: usize) -> Option<u32> {
        if self.busy_queues == 0 {
            return None;
        }
        let q = self.select_queue(now, pending, rq_queued)?;
        if !self.may_dispatch(q, now) {
            return None;
        }
        self.next_request(q, now, pending)
    }

    /// The request chosen by [`Self::select`] (of queue `q`, ending at byte `end`) went to
    /// the driver and is no longer in `pending` (`cfq_dispatch_insert` and the rest of
    /// `cfq_dispatch_requests`).
    fn cfq_dispatch_insert(&mut self, q: u32, end: u64, now: u64, pending: &Pending) {
        let maxrq = 2 * self.p.slice_async_rq * (8 - PRIO as u32);
        let c = &mut self.queues[q as usize];
        c.dispatched += 1;
        c.slice_dispatch += 1;
        c.must_dispatch = false;
        self.rq_in_flight[c.sync as usize] += 1;
        self.last_position = end;
        if self.active == Some(q) {
            self.active_cic = true;
        }
        let c = &self.queues[q as usize];
        if self.busy_queues > 1 && !c.sync && c.slice_dispatch >= maxrq {
            self.queues[q as usize].slice_end = now + JIFFY_NS;
            self.slice_expired(false, now, pending);
        }
    }

    /// A new request of queue `q` entered `pending` (`cfq_add_rq_rb` + `cfq_rq_enqueued`).
    fn cfq_rq_enqueued(&mut self, q: u32, offset: u64, len: u64, now: u64, pending: &Pending) {
        if !self.queues[q as usize].on_rr {
            self.add_rr(q, now);
        }
        let slice_idle = self.p.slice_idle;
        let nonrot = self.nonrot;
        let c = &mut self.queues[q as usize];
        if c.sync {
            c.ttime.update(now, slice_idle);
            if let Some(st) = c.tree {
                self.tree_ttime[st as usize].update(now, slice_idle);
            }
        }
        // cfq_update_io_seektime
        let c = &mut self.queues[q as usize];
        let sdist = if c.last_request_pos != 0 { c.last_request_pos.abs_diff(offset) } else { 0 };
        c.seek_history <<= 1;
        c.seek_history |= if nonrot { (len < SECT_THR_NONROT) as u32 } else { (sdist > SEEK_THR) as u32 };
        // cfq_update_idle_window
        if c.sync {
            if pending.sorted[q as usize].len() >= 4 {
                c.deep = true;
            }
            if slice_idle == 0 || (!c.deep && c.seeky()) {
                c.idle_window = false;
            } else if c.ttime.valid() {
                c.idle_window = c.ttime.mean <= slice_idle;
            }
        }
        c.last_request_pos = offset + len;
        if self.active == Some(q) {
            let busy = self.busy_queues;
            let c = &mut self.queues[q as usize];
            if c.wait_request {
                if len > 4096 || busy > 1 {
                    self.idle_timer = None;
                    c.wait_request = false;
                } else {
                    c.must_dispatch = true;
                }
            }
        } else if self.should_preempt(q, offset, now, pending) {
            self.preempt(q, now, pending);
        }
    }

    /// `cfq_should_preempt`.
    fn should_preempt(&self, q: u32, offset: u64, now: u64, pending: &Pending) -> bool {
        let Some(a) = self.active else { return false };
        let (new, act) = (&self.queues[q as usize], &self.queues[a as usize]);
        if new.sync && !act.sync {
            return true;
        }
        if self.slice_used(a, now) {
            return true;
        }
        let a_empty = Self::empty(pending, a);
        if self.serving == Wl::SyncNoidle
            && new.wl() == Wl::SyncNoidle
            && self.trees[Wl::SyncNoidle as usize].len() == 2
            && a_empty
        {
            return true;
        }
        if a_empty && !self.should_idle(a) {
            return true;
        }
        if !self.active_cic || !act.wait_request {
            return false;
        }
        offset.abs_diff(self.last_position) <= CLOSE_THR
    }

    /// `cfq_preempt_queue`.
    fn preempt(&mut self, q: u32, now: u64, pending: &Pending) {
        let old = self.active.map(|a| self.queues[a as usize].wl());
        self.slice_expired(true, now, pending);
        if old != Some(self.queues[q as usize].wl()) {
            self.saved = None;
        }
        self.service_tree_add(q, true, now);
        let c = &mut self.queues[q as usize];
        c.slice_end = 0;
        c.slice_new = true;
    }

    /// A request of queue `q`, allocated at `start_ns`, completed (`cfq_completed_request`).
    fn cfq_completed_request(&mut self, q: u32, start_ns: u64, now: u64, pending: &Pending) {
        let c = &mut self.queues[q as usize];
        c.dispatched -= 1;
        let sync = c.sync;
        self.rq_in_flight[sync as usize] -= 1;
        if sync {
            c.ttime.last_end = now;
            let st = c.tree.unwrap_or(c.wl());
            self.tree_ttime[st as usize].last_end = now;
            if start_ns + self.p.fifo_expire_sync <= now {
                self.last_delayed_sync = now as i64;
            }
        }
        if self.active != Some(q) {
            return;
        }
        if self.queues[q as usize].slice_new {
            let slice = self.scaled_slice(q);
            let c = &mut self.queues[q as usize];
            c.slice_start = now;
            c.slice_end = now + slice;
            c.slice_new = false;
        }
        if self.slice_used(q, now) {
            self.slice_expired(true, now, pending);
        } else if sync && Self::empty(pending, q) {
            self.arm_slice_timer(now);
        }
    }

    /// `cfq_arm_slice_timer`: idle the disk for the active sync queue's next request.
    fn arm_slice_timer(&mut self, now: u64) {
        let Some(q) = self.active else { return };
        if self.nonrot && self.hw_tag {
            return;
        }
        if !self.should_idle(q) {
            return;
        }
        let c = &self.queues[q as usize];
        if c.dispatched > 0 {
            return;
        }
        if c.ttime.valid() && (c.slice_end as i64 - now as i64) < c.ttime.mean as i64 {
            return;
        }
        self.queues[q as usize].wait_request = true;
        self.idle_timer = Some(now + self.p.slice_idle);
    }

    /// The idle timer fired (`cfq_idle_slice_timer`); the queue is run afterwards.
    fn cfq_idle_slice_timer(&mut self, now: u64, pending: &Pending) {
        if self.idle_timer.is_none_or(|t| t > now) {
            return;
        }
        self.idle_timer = None;
        let mut timed_out = true;
        if let Some(q) = self.active {
            timed_out = false;
            let c = &self.queues[q as usize];
            if c.must_dispatch {
                return;
            }
            if !self.slice_used(q, now) {
                if self.busy_queues == 0 || !Self::empty(pending, q) {
                    return;
                }
                self.queues[q as usize].deep = false;
            }
        }
        self.slice_expired(timed_out, now, pending);
    }
}

impl ElevatorOps for Cfq {
    fn classify(&mut self, dir: IoDir, ctx: u32, now: u64) -> u32 {
        self.cfq_get_queue(dir == IoDir::Read, ctx, now)
    }
    fn select(&mut self, pending: &Pending, now: u64, nr_queued: usize) -> Option<u32> {
        self.cfq_dispatch_requests(pending, now, nr_queued)
    }
    fn queued(&mut self, q: u32, offset: u64, len: u64, now: u64, pending: &Pending) {
        self.cfq_rq_enqueued(q, offset, len, now, pending)
    }
    fn dispatched(&mut self, q: u32, _dir: IoDir, end: u64, now: u64, pending: &Pending) {
        self.cfq_dispatch_insert(q, end, now, pending)
    }
    fn completed(&mut self, q: u32, start_ns: u64, now: u64, pending: &Pending) {
        self.cfq_completed_request(q, start_ns, now, pending)
    }
    fn timer_at(&self) -> Option<u64> {
        self.idle_timer_at()
    }
    fn timer(&mut self, now: u64, pending: &Pending) {
        self.cfq_idle_slice_timer(now, pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(n: usize) -> Pending {
        let mut p = Pending::default();
        p.ensure(n);
        p
    }

    fn add(p: &mut Pending, q: u32, off: u64, rid: u32, t: u64) {
        p.sorted[q as usize].insert((off, rid));
        p.fifo[q as usize].insert((t, rid as u64, rid));
    }

    fn take(p: &mut Pending, q: u32, rid: u32) {
        p.sorted[q as usize].retain(|&(_, r)| r != rid);
        p.fifo[q as usize].retain(|&(_, _, r)| r != rid);
    }

    /// A CFQ (on a rotational disk, or a queueing SSD) with one sync read, request `rid` of
    /// `len` bytes at offset 0 from task 1, queued, selected first and dispatched at time 0.
    /// Returns the scheduler, its pending requests and the read's queue.
    fn one_sync_read_dispatched(ssd: bool, rid: u32, len: u64) -> (Cfq, Pending, u32) {
        let mut c = Cfq::new(CfqParams::default(), ssd, true);
        let mut p = pending(2);
        let r = c.cfq_get_queue(true, 1, 0);
        add(&mut p, r, 0, rid, 0);
        c.cfq_rq_enqueued(r, 0, len, 0, &p);
        assert_eq!(c.cfq_dispatch_requests(&p, 0, 1), Some(rid));
        take(&mut p, r, rid);
        c.cfq_dispatch_insert(r, len, 0, &p);
        (c, p, r)
    }

    #[test]
    fn thinktime_mean_converges_to_the_gap() {
        let mut t = Ttime::new(0);
        let mut now = 0;
        for _ in 0..50 {
            t.last_end = now;
            now += 3_000_000;
            t.update(now, 8_000_000);
        }
        assert!(t.valid());
        // The kernel's fixed point settles at 249/256 of a sample, so the mean reads ~3% high.
        assert!(t.mean >= 3_000_000 && t.mean < 3_150_000, "{}", t.mean);
        // Gaps are capped at 2 * slice_idle.
        for _ in 0..50 {
            t.last_end = now;
            now += 1_000_000_000;
            t.update(now, 8_000_000);
        }
        assert!(t.mean >= 16_000_000 && t.mean < 16_800_000, "{}", t.mean);
    }

    #[test]
    fn a_sync_read_preempts_the_async_queue_and_waits_for_writes_to_drain() {
        let mut c = Cfq::new(CfqParams::default(), false, true);
        let mut p = pending(2);
        let r = c.cfq_get_queue(true, 7, 0);
        assert_eq!(r, 1);
        // Writes queued first: the async queue becomes active and dispatches.
        add(&mut p, 0, 1 << 20, 0, 0);
        c.cfq_rq_enqueued(0, 1 << 20, 4096, 0, &p);
        add(&mut p, 0, 2 << 20, 1, 0);
        c.cfq_rq_enqueued(0, 2 << 20, 4096, 0, &p);
        let first = c.cfq_dispatch_requests(&p, 0, 2).unwrap();
        assert_eq!(first, 0);
        take(&mut p, 0, first);
        c.cfq_dispatch_insert(0, (1 << 20) + 4096, 0, &p);
        // A read arrives: it preempts the async queue ...
        add(&mut p, r, 500 << 20, 2, 1000);
        c.cfq_rq_enqueued(r, 500 << 20, 32768, 1000, &p);
        assert_eq!(c.active, None, "the async slice was expired by preemption");
        // ... but waits until the write in flight has completed.
        assert_eq!(c.cfq_dispatch_requests(&p, 1000, 2), None);
        assert_eq!(c.active, Some(r));
        c.cfq_completed_request(0, 0, 5_000_000, &p);
        assert_eq!(c.cfq_dispatch_requests(&p, 5_000_000, 2), Some(2));
    }

    #[test]
    fn an_emptied_sync_queue_idles_instead_of_serving_writes() {
        let (mut c, mut p, r) = one_sync_read_dispatched(false, 0, 32768);
        // A write is queued meanwhile.
        add(&mut p, 0, 100 << 20, 1, 100);
        c.cfq_rq_enqueued(0, 100 << 20, 4096, 100, &p);
        c.cfq_completed_request(r, 0, 2_000_000, &p);
        assert_eq!(c.idle_timer_at(), Some(10_000_000), "idle for slice_idle after the read");
        assert_eq!(c.cfq_dispatch_requests(&p, 2_000_000, 1), None, "the write waits while the disk idles");
        // The reader's next request within the window is served at once.
        add(&mut p, r, 32768, 2, 3_000_000);
        c.cfq_rq_enqueued(r, 32768, 32768, 3_000_000, &p);
        assert_eq!(c.idle_timer_at(), None);
        assert_eq!(c.cfq_dispatch_requests(&p, 3_000_000, 2), Some(2));
        take(&mut p, r, 2);
        c.cfq_dispatch_insert(r, 65536, 3_000_000, &p);
        c.cfq_completed_request(r, 3_000_000, 4_000_000, &p);
        // No next read: the timer fires and the async queue gets the disk.
        let t = c.idle_timer_at().unwrap();
        c.cfq_idle_slice_timer(t, &p);
        assert_eq!(c.cfq_dispatch_requests(&p, t, 1), Some(1));
    }

    #[test]
    fn the_async_depth_ramps_up_after_a_delayed_sync_request() {
        let mut c = Cfq::new(CfqParams::default(), false, true);
        let mut p = pending(2);
        for i in 0..8u32 {
            add(&mut p, 0, (i as u64) << 20, i, 0);
            c.cfq_rq_enqueued(0, (i as u64) << 20, 4096, 0, &p);
        }
        // No delayed sync I/O in the last second: several writes go out at once.
        let mut n = 0;
        while let Some(rid) = c.cfq_dispatch_requests(&p, 0, 8 - n) {
            take(&mut p, 0, rid);
            c.cfq_dispatch_insert(0, ((rid as u64) << 20) + 4096, 0, &p);
            n += 1;
        }
        assert_eq!(n, 8, "sole queue: no dispatch limit");
        // A sync request that took longer than fifo_expire_sync throttles async to one.
        let (mut c, mut p, r) = one_sync_read_dispatched(false, 100, 4096);
        c.cfq_completed_request(r, 0, 200_000_000, &p);
        let t = c.idle_timer_at().unwrap();
        c.cfq_idle_slice_timer(t, &p);
        for i in 0..8u32 {
            add(&mut p, 0, (i as u64) << 20, i, t);
            c.cfq_rq_enqueued(0, (i as u64) << 20, 4096, t, &p);
        }
        let mut n = 0;
        while let Some(rid) = c.cfq_dispatch_requests(&p, t, 8 - n) {
            take(&mut p, 0, rid);
            c.cfq_dispatch_insert(0, ((rid as u64) << 20) + 4096, t, &p);
            n += 1;
        }
        assert_eq!(n, 1, "one async request in the driver right after a delayed sync one");
    }

    #[test]
    fn the_elevator_prefers_a_short_backward_seek_only_at_twice_the_distance() {
        let c = Cfq::new(CfqParams::default(), false, true);
        let last = 100 << 20;
        // 1 MiB ahead vs 0.4 MiB behind (0.8 MiB weighted): the backward one wins.
        assert_eq!(c.choose_req(Some((last + (1 << 20), 1)), Some((last - 400 * 1024, 2)), last), Some(2));
        // 1 MiB ahead vs 0.6 MiB behind (1.2 MiB weighted): forward wins.
        assert_eq!(c.choose_req(Some((last + (1 << 20), 1)), Some((last - 600 * 1024, 2)), last), Some(1));
        // Beyond back_seek_max behind: never chosen over a forward request.
        assert_eq!(c.choose_req(Some((last + (500 << 20), 1)), Some((last - (17 << 20), 2)), last), Some(1));
    }

    #[test]
    fn ssds_with_queueing_do_not_idle() {
        let (mut c, p, r) = one_sync_read_dispatched(true, 0, 32768);
        c.cfq_completed_request(r, 0, 100_000, &p);
        assert_eq!(c.idle_timer_at(), None);
    }
}
