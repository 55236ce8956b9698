//! Models a RAM-backed block device (drivers/block/brd.c): no positioning cost, a memory
//! copy per byte, and a fixed per-request software cost of the block layer. Like pmem, brd
//! copies in the submitting task and is `SWP_SYNCHRONOUS_IO`.

use super::{
    fmt_bytes, fmt_ns, need_positive, xfer_ns, IoDir, IoschedParams, ParamDoc, QueueParams, Scheduler, TimingModel,
    NR_REQUESTS,
};
use serde::Deserialize;

pub(super) const DESCRIPTION: &str = "RAM-backed block device (brd): software cost only";

/// Parameters of the `ram` model.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RamParams {
    /// Device size in bytes (accepts units, e.g. "16GiB"). Default 64 GiB.
    #[serde(deserialize_with = "crate::units::de_bytes")]
    pub capacity: u64,
    /// Per-request block-layer and driver cost, nanoseconds. Default 1000 (B.4: L0 about 1 us).
    #[serde(deserialize_with = "crate::units::de_duration_ns")]
    pub request_ns: u64,
    /// Copy bandwidth, bytes per second. Default 8e9 (one core's memcpy).
    pub bandwidth: u64,
    /// Largest request after merging, KiB. Default 512.
    pub max_sectors_kb: u64,
    /// Most segments in one request. Default 128 (`BLK_MAX_SEGMENTS`).
    pub max_segments: u32,
    /// Largest segment, bytes. Default 64 KiB (`BLK_MAX_SEGMENT_SIZE`).
    #[serde(deserialize_with = "crate::units::de_bytes")]
    pub max_segment_size: u64,
    /// File readahead window, KiB (`read_ahead_kb`). Default 128 (VM_MAX_READAHEAD).
    pub read_ahead_kb: u64,
    /// Requests allocated per class before submitters wait (`nr_requests`). Default 128.
    pub nr_requests: u32,
    pub scheduler: Scheduler,
    pub iosched: IoschedParams,
}

impl Default for RamParams {
    fn default() -> Self {
        RamParams {
            capacity: 64 << 30,
            request_ns: 1_000,
            bandwidth: 8_000_000_000,
            max_sectors_kb: 512,
            max_segments: super::BLK_MAX_SEGMENTS,
            max_segment_size: super::BLK_MAX_SEGMENT_SIZE,
            read_ahead_kb: 128,
            nr_requests: NR_REQUESTS,
            scheduler: Scheduler::Fifo,
            iosched: IoschedParams::default(),
        }
    }
}

impl RamParams {
    fn queue_params(&self) -> QueueParams {
        QueueParams {
            max_sectors_kb: self.max_sectors_kb,
            max_segments: self.max_segments,
            max_segment_size: self.max_segment_size,
            read_ahead_kb: self.read_ahead_kb,
            nr_requests: self.nr_requests,
            scheduler: self.scheduler,
            iosched: self.iosched,
            irq_cpu: None,
        }
    }

    pub(super) fn docs(&self) -> Vec<ParamDoc> {
        let mut v = vec![
            ParamDoc {
                key: "capacity",
                unit: "bytes",
                default: fmt_bytes(self.capacity),
                doc: "Device size (brd rd_size).",
            },
            ParamDoc {
                key: "request_ns",
                unit: "duration",
                default: fmt_ns(self.request_ns),
                doc: "Block-layer and brd driver cost per request. Default 1 us (spec B.4: a RAM \
                      block device is L0 of about 1 us).",
            },
            ParamDoc {
                key: "bandwidth",
                unit: "bytes/s",
                default: self.bandwidth.to_string(),
                doc: "Copy bandwidth of one core's memcpy. Default 8 GB/s [R].",
            },
        ];
        v.append(&mut self.queue_params().docs());
        v
    }
}

#[derive(Clone, Debug)]
pub struct Ram {
    p: RamParams,
}

impl Ram {
    pub fn new(p: RamParams) -> Result<Self, String> {
        need_positive("bandwidth", p.bandwidth, "bytes per second")?;
        p.queue_params().validate()?;
        Ok(Ram { p })
    }
}

impl TimingModel for Ram {
    fn channels(&self) -> u32 {
        1
    }

    fn capacity_bytes(&self) -> u64 {
        self.p.capacity
    }

    fn queue_params(&self) -> QueueParams {
        self.p.queue_params()
    }

    /// `SWP_SYNCHRONOUS_IO`: brd completes a bio in the submitter.
    fn synchronous_io(&self) -> bool {
        true
    }

    fn service_ns(&mut self, _dir: IoDir, _offset: u64, len: u64, _start_ns: u64) -> u64 {
        self.p.request_ns + xfer_ns(len, self.p.bandwidth)
    }
}

#[cfg(test)]
mod tests {
    use crate::device::flash::tests::{model, qd1_latency};
    use crate::device::IoDir;

    #[test]
    fn a_page_costs_the_request_overhead_plus_the_copy() {
        let m = model("model = \"ram\"");
        assert_eq!(qd1_latency(m, IoDir::Read, 4, 4096, 4096), 1_000 + 512);
    }
}
