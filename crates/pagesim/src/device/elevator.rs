//! Models block/elevator.c: the I/O schedulers a queue can be switched to by name
//! (`elv_register`, `elevator_find`, the `queue/scheduler` sysfs file).
//!
//! DOC: the kernel keeps a list of registered schedulers and `queue/scheduler` selects one by
//! its name. Here [`SCHEDULERS`] is that list: the device's `scheduler` key takes one of its
//! names, and `pagesim describe` lists it. Only the names are registered: each scheduler's
//! tunables are resolved from the device's `iosched` table in iosched.rs, and the request
//! queue (queue.rs) calls the hooks each one has, since none, mq-deadline and CFQ share no
//! common set of elevator operations in this model (crate::registry explains why this kind
//! is not dispatched through a trait).

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
