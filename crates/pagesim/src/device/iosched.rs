//! The `iosched` table of a device: the tunables of `/sys/block/<dev>/queue/iosched/`.
//!
//! DOC: which keys exist depends on the scheduler, as in sysfs: mq-deadline has
//! `read_expire`, `write_expire`, `writes_starved`, `fifo_batch`, `front_merges`; CFQ has
//! `quantum`, `fifo_expire_sync`, `fifo_expire_async`, `back_seek_max`, `back_seek_penalty`,
//! `slice_sync`, `slice_async`, `slice_async_rq`, `slice_idle`, `low_latency`,
//! `target_latency`. The table is parsed once with every key optional; [`IoschedParams::resolve`]
//! fills the selected scheduler's defaults and rejects a key that belongs to another
//! scheduler, naming it.

use super::cfq::CfqParams;
use super::{de_flag, fmt_ns, DeadlineParams, ParamDoc, Scheduler};
use crate::units::de_duration_ns;
use serde::{Deserialize, Deserializer};

fn de_opt_ns<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    de_duration_ns(d).map(Some)
}

fn de_opt_flag<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    de_flag(d).map(Some)
}

/// The `iosched` table as written; unset keys take the scheduler's defaults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IoschedParams {
    // mq-deadline (block/mq-deadline.c)
    #[serde(deserialize_with = "de_opt_ns")]
    pub read_expire: Option<u64>,
    #[serde(deserialize_with = "de_opt_ns")]
    pub write_expire: Option<u64>,
    pub writes_starved: Option<u32>,
    pub fifo_batch: Option<u32>,
    #[serde(deserialize_with = "de_opt_flag")]
    pub front_merges: Option<bool>,
    // CFQ (block/cfq-iosched.c)
    pub quantum: Option<u32>,
    #[serde(deserialize_with = "de_opt_ns")]
    pub fifo_expire_sync: Option<u64>,
    #[serde(deserialize_with = "de_opt_ns")]
    pub fifo_expire_async: Option<u64>,
    /// KiB.
    pub back_seek_max: Option<u64>,
    pub back_seek_penalty: Option<u64>,
    #[serde(deserialize_with = "de_opt_ns")]
    pub slice_sync: Option<u64>,
    #[serde(deserialize_with = "de_opt_ns")]
    pub slice_async: Option<u64>,
    pub slice_async_rq: Option<u32>,
    #[serde(deserialize_with = "de_opt_ns")]
    pub slice_idle: Option<u64>,
    #[serde(deserialize_with = "de_opt_flag")]
    pub low_latency: Option<bool>,
    #[serde(deserialize_with = "de_opt_ns")]
    pub target_latency: Option<u64>,
}

/// The tunables of the selected scheduler, defaults filled in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Iosched {
    None,
    Deadline(DeadlineParams),
    Cfq(CfqParams),
}

impl IoschedParams {
    fn deadline_keys(&self) -> [(&'static str, bool); 5] {
        [
            ("read_expire", self.read_expire.is_some()),
            ("write_expire", self.write_expire.is_some()),
            ("writes_starved", self.writes_starved.is_some()),
            ("fifo_batch", self.fifo_batch.is_some()),
            ("front_merges", self.front_merges.is_some()),
        ]
    }

    fn cfq_keys(&self) -> [(&'static str, bool); 11] {
        [
            ("quantum", self.quantum.is_some()),
            ("fifo_expire_sync", self.fifo_expire_sync.is_some()),
            ("fifo_expire_async", self.fifo_expire_async.is_some()),
            ("back_seek_max", self.back_seek_max.is_some()),
            ("back_seek_penalty", self.back_seek_penalty.is_some()),
            ("slice_sync", self.slice_sync.is_some()),
            ("slice_async", self.slice_async.is_some()),
            ("slice_async_rq", self.slice_async_rq.is_some()),
            ("slice_idle", self.slice_idle.is_some()),
            ("low_latency", self.low_latency.is_some()),
            ("target_latency", self.target_latency.is_some()),
        ]
    }

    /// The tunables of `sched`, with its defaults for unset keys. A key of another
    /// scheduler is an error naming it (sysfs has no such file for this scheduler).
    pub fn resolve(&self, sched: Scheduler) -> Result<Iosched, String> {
        let foreign: Vec<&str> = match sched {
            Scheduler::Fifo => {
                self.deadline_keys().iter().chain(self.cfq_keys().iter()).filter(|k| k.1).map(|k| k.0).collect()
            }
            Scheduler::MqDeadline => self.cfq_keys().iter().filter(|k| k.1).map(|k| k.0).collect(),
            Scheduler::Cfq => self.deadline_keys().iter().filter(|k| k.1).map(|k| k.0).collect(),
        };
        if let Some(k) = foreign.first() {
            return Err(format!(
                "iosched.{k}: not a tunable of the {} scheduler (its keys: {})",
                sched.name(),
                match sched {
                    Scheduler::Fifo => "none".to_string(),
                    Scheduler::MqDeadline => self.deadline_keys().map(|k| k.0).join(", "),
                    Scheduler::Cfq => self.cfq_keys().map(|k| k.0).join(", "),
                }
            ));
        }
        Ok(match sched {
            Scheduler::Fifo => Iosched::None,
            Scheduler::MqDeadline => {
                let d = DeadlineParams::default();
                Iosched::Deadline(DeadlineParams {
                    read_expire: self.read_expire.unwrap_or(d.read_expire),
                    write_expire: self.write_expire.unwrap_or(d.write_expire),
                    writes_starved: self.writes_starved.unwrap_or(d.writes_starved),
                    fifo_batch: self.fifo_batch.unwrap_or(d.fifo_batch),
                    front_merges: self.front_merges.unwrap_or(d.front_merges),
                })
            }
            Scheduler::Cfq => {
                let d = CfqParams::default();
                let p = CfqParams {
                    quantum: self.quantum.unwrap_or(d.quantum),
                    fifo_expire_sync: self.fifo_expire_sync.unwrap_or(d.fifo_expire_sync),
                    fifo_expire_async: self.fifo_expire_async.unwrap_or(d.fifo_expire_async),
                    back_seek_max_kb: self.back_seek_max.unwrap_or(d.back_seek_max_kb),
                    back_seek_penalty: self.back_seek_penalty.unwrap_or(d.back_seek_penalty),
                    slice_sync: self.slice_sync.unwrap_or(d.slice_sync),
                    slice_async: self.slice_async.unwrap_or(d.slice_async),
                    slice_async_rq: self.slice_async_rq.unwrap_or(d.slice_async_rq),
                    slice_idle: self.slice_idle.unwrap_or(d.slice_idle),
                    low_latency: self.low_latency.unwrap_or(d.low_latency),
                    target_latency: self.target_latency.unwrap_or(d.target_latency),
                };
                p.validate()?;
                Iosched::Cfq(p)
            }
        })
    }

    /// Docs of every key with its scheduler's default.
    pub(super) fn docs() -> Vec<ParamDoc> {
        let d = DeadlineParams::default();
        let c = CfqParams::default();
        vec![
            ParamDoc {
                key: "iosched.read_expire",
                unit: "duration",
                default: fmt_ns(d.read_expire),
                doc: "mq-deadline: a read waits at most this long before its FIFO overrides \
                      sector order (block/mq-deadline.c read_expire = HZ/2).",
            },
            ParamDoc {
                key: "iosched.write_expire",
                unit: "duration",
                default: fmt_ns(d.write_expire),
                doc: "mq-deadline: FIFO deadline of a write (write_expire = 5*HZ).",
            },
            ParamDoc {
                key: "iosched.writes_starved",
                unit: "count",
                default: d.writes_starved.to_string(),
                doc: "mq-deadline: read batches preferred over pending writes before a write \
                      batch must be served (writes_starved = 2).",
            },
            ParamDoc {
                key: "iosched.fifo_batch",
                unit: "requests",
                default: d.fifo_batch.to_string(),
                doc: "mq-deadline: requests dispatched in sector order before the direction \
                      and deadlines are looked at again (fifo_batch = 16).",
            },
            ParamDoc {
                key: "iosched.front_merges",
                unit: "bool",
                default: d.front_merges.to_string(),
                doc: "mq-deadline: allow a request to be merged in front of a queued one \
                      (front_merges = 1).",
            },
            ParamDoc {
                key: "iosched.quantum",
                unit: "requests",
                default: c.quantum.to_string(),
                doc: "cfq: requests a queue may have in the driver (half of it before the \
                      slice is known to last; cfq_quantum = 8).",
            },
            ParamDoc {
                key: "iosched.fifo_expire_sync",
                unit: "duration",
                default: fmt_ns(c.fifo_expire_sync),
                doc: "cfq: age at which a sync request is served before sector order, once per \
                      slice (cfq_fifo_expire[1] = HZ/8: 124 ms at HZ=250).",
            },
            ParamDoc {
                key: "iosched.fifo_expire_async",
                unit: "duration",
                default: fmt_ns(c.fifo_expire_async),
                doc: "cfq: the same for async requests (cfq_fifo_expire[0] = HZ/4: 248 ms).",
            },
            ParamDoc {
                key: "iosched.back_seek_max",
                unit: "KiB",
                default: c.back_seek_max_kb.to_string(),
                doc: "cfq: farthest backward seek the elevator takes (cfq_back_max = 16 MiB).",
            },
            ParamDoc {
                key: "iosched.back_seek_penalty",
                unit: "factor",
                default: c.back_seek_penalty.to_string(),
                doc: "cfq: a backward seek counts this many times its distance (cfq_back_penalty = 2).",
            },
            ParamDoc {
                key: "iosched.slice_sync",
                unit: "duration",
                default: fmt_ns(c.slice_sync),
                doc: "cfq: time slice of a process's sync queue (cfq_slice_sync = HZ/10).",
            },
            ParamDoc {
                key: "iosched.slice_async",
                unit: "duration",
                default: fmt_ns(c.slice_async),
                doc: "cfq: time slice of the shared async (writeback) queue (cfq_slice_async = HZ/25).",
            },
            ParamDoc {
                key: "iosched.slice_async_rq",
                unit: "requests",
                default: c.slice_async_rq.to_string(),
                doc: "cfq: base of the async queue's dispatch budget per slice, 2*slice_async_rq*(8-prio) \
                      = 16 at the default priority (cfq_slice_async_rq = 2).",
            },
            ParamDoc {
                key: "iosched.slice_idle",
                unit: "duration",
                default: fmt_ns(c.slice_idle),
                doc: "cfq: how long the disk stays idle after a sync queue empties, waiting for \
                      that process's next request (cfq_slice_idle = HZ/125: 8 ms); 0 disables idling.",
            },
            ParamDoc {
                key: "iosched.low_latency",
                unit: "bool",
                default: c.low_latency.to_string(),
                doc: "cfq: scale slices to target_latency and ramp the async depth up after a \
                      delayed sync request (low_latency = 1).",
            },
            ParamDoc {
                key: "iosched.target_latency",
                unit: "duration",
                default: fmt_ns(c.target_latency),
                doc: "cfq: the round of all busy queues that low_latency aims at \
                      (cfq_target_latency = 300 ms).",
            },
        ]
    }
}
