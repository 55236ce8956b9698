//! Models block/elevator.c: the I/O schedulers a queue can be switched to by name
//! (`elv_register`, `elevator_find`, the `queue/scheduler` sysfs file).
//!
//! DOC: the kernel keeps a list of registered schedulers and `queue/scheduler` selects one by
//! its name. Here [`SCHEDULERS`] is that list: the device's `scheduler` key takes one of its
//! names, and `pagesim describe` lists it. Each scheduler is one file implementing
//! `ElevatorOps` (the kernel's `struct elevator_mq_ops`, reduced to what timing needs:
//! which scheduler queue a request joins, which queued request goes next, and the
//! notifications of insertion, dispatch, completion and the scheduler's own timer); the
//! request queue (queue.rs) calls them through `Elevator` and does the rest (plugging,
//! merging, request allocation, the device's channels). A scheduler's tunables are resolved
//! from the device's `iosched` table (iosched.rs), and `Elevator::new` builds it from them
//! (`elevator_init_mq`).
//!
//! Adding a scheduler: its file, its line in [`SCHEDULERS`], its tunables in iosched.rs, and
//! its variant in the `elevators!` list and in `Elevator::new` below.

use super::cfq::Cfq;
use super::iosched::Iosched;
use super::mq_deadline::MqDeadline;
use super::noop::Noop;
use super::{queue::Pending, DeviceModel, IoDir};
use serde::Deserialize;

crate::registry::registry! {
    /// The I/O scheduler of a device (`/sys/block/<dev>/queue/scheduler`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
    pub enum Scheduler;

    /// Every I/O scheduler, by the name the `scheduler` key takes.
    pub const SCHEDULERS = [
        Fifo => "none", "blk-mq none: dispatch in arrival order";
        MqDeadline => "mq-deadline",
            "block/mq-deadline.c: sector-sorted one-way elevator with FIFO deadlines per direction";
        Cfq => "cfq", "block/cfq-iosched.c: per-process time slices with idling (the default of 2.6.18-4.x)";
    ];
}

/// The operations of an I/O scheduler (`struct elevator_mq_ops`). `pending` is the queue's
/// index of queued requests per scheduler queue (by sector and in arrival order), which
/// the scheduler reads and the queue maintains.
pub(super) trait ElevatorOps {
    /// The scheduler queue a new request from I/O context `ctx` joins (CFQ's
    /// `cfq_get_queue`; one queue per direction for the others). Requests merge only
    /// within a scheduler queue.
    fn classify(&mut self, dir: IoDir, ctx: u32, now: u64) -> u32;

    /// The queued request to dispatch next, if any (`dispatch_request`).
    fn select(&mut self, pending: &Pending, now: u64, nr_queued: usize) -> Option<u32>;

    /// A request was queued in scheduler queue `q` (`insert_requests`).
    fn queued(&mut self, _q: u32, _offset: u64, _len: u64, _now: u64, _pending: &Pending) {}

    /// The request chosen by `select` left for the device; it ends at byte `end`.
    fn dispatched(&mut self, _q: u32, _dir: IoDir, _end: u64, _now: u64, _pending: &Pending) {}

    /// A request of scheduler queue `q`, started at `start_ns`, completed (`completed_request`).
    fn completed(&mut self, _q: u32, _start_ns: u64, _now: u64, _pending: &Pending) {}

    /// When the scheduler's own timer fires (CFQ's idle window), if armed.
    fn timer_at(&self) -> Option<u64> {
        None
    }

    /// The scheduler's timer fired at `now`.
    fn timer(&mut self, _now: u64, _pending: &Pending) {}
}

/// Generates [`Elevator`], the closed set of schedulers a queue dispatches through without
/// `Box<dyn>`, with one forwarding method per [`ElevatorOps`] operation.
macro_rules! elevators {
    ($($(#[$doc:meta])* $Variant:ident($Type:ty)),* $(,)?) => {
        /// A device queue's I/O scheduler.
        #[derive(Debug)]
        pub(super) enum Elevator {
            $($(#[$doc])* $Variant($Type)),*
        }

        impl Elevator {
            #[inline]
            pub(super) fn classify(&mut self, dir: IoDir, ctx: u32, now: u64) -> u32 {
                match self { $(Elevator::$Variant(e) => e.classify(dir, ctx, now)),* }
            }
            #[inline]
            pub(super) fn select(&mut self, pending: &Pending, now: u64, nr_queued: usize) -> Option<u32> {
                match self { $(Elevator::$Variant(e) => e.select(pending, now, nr_queued)),* }
            }
            #[inline]
            pub(super) fn queued(&mut self, q: u32, offset: u64, len: u64, now: u64, pending: &Pending) {
                match self { $(Elevator::$Variant(e) => e.queued(q, offset, len, now, pending)),* }
            }
            #[inline]
            pub(super) fn dispatched(&mut self, q: u32, dir: IoDir, end: u64, now: u64, pending: &Pending) {
                match self { $(Elevator::$Variant(e) => e.dispatched(q, dir, end, now, pending)),* }
            }
            #[inline]
            pub(super) fn completed(&mut self, q: u32, start_ns: u64, now: u64, pending: &Pending) {
                match self { $(Elevator::$Variant(e) => e.completed(q, start_ns, now, pending)),* }
            }
            #[inline]
            pub(super) fn timer_at(&self) -> Option<u64> {
                match self { $(Elevator::$Variant(e) => e.timer_at()),* }
            }
            #[inline]
            pub(super) fn timer(&mut self, now: u64, pending: &Pending) {
                match self { $(Elevator::$Variant(e) => e.timer(now, pending)),* }
            }
        }
    };
}

elevators! {
    Fifo(Noop),
    MqDeadline(MqDeadline),
    /// Boxed: CFQ's state is much larger than the others'.
    Cfq(Box<Cfq>),
}

impl<E: ElevatorOps + ?Sized> ElevatorOps for Box<E> {
    fn classify(&mut self, dir: IoDir, ctx: u32, now: u64) -> u32 {
        (**self).classify(dir, ctx, now)
    }
    fn select(&mut self, pending: &Pending, now: u64, nr_queued: usize) -> Option<u32> {
        (**self).select(pending, now, nr_queued)
    }
    fn queued(&mut self, q: u32, offset: u64, len: u64, now: u64, pending: &Pending) {
        (**self).queued(q, offset, len, now, pending)
    }
    fn dispatched(&mut self, q: u32, dir: IoDir, end: u64, now: u64, pending: &Pending) {
        (**self).dispatched(q, dir, end, now, pending)
    }
    fn completed(&mut self, q: u32, start_ns: u64, now: u64, pending: &Pending) {
        (**self).completed(q, start_ns, now, pending)
    }
    fn timer_at(&self) -> Option<u64> {
        (**self).timer_at()
    }
    fn timer(&mut self, now: u64, pending: &Pending) {
        (**self).timer(now, pending)
    }
}

impl Elevator {
    /// The scheduler with its resolved tunables, for a queue in front of `model`
    /// (`elevator_init_mq` + the scheduler's `init_sched`). Also says whether front merges
    /// are tried at submission (mq-deadline's `front_merges`; always for the others).
    pub(super) fn new(iosched: Iosched, model: &DeviceModel) -> (Elevator, bool) {
        match iosched {
            Iosched::None => (Elevator::Fifo(Noop), true),
            Iosched::Deadline(p) => (Elevator::MqDeadline(MqDeadline::new(p)), p.front_merges),
            Iosched::Cfq(p) => {
                (Elevator::Cfq(Box::new(Cfq::new(p, !model.rotational(), model.tagged_queueing()))), true)
            }
        }
    }
}
