//! Models a persistent-memory block device (drivers/nvdimm/pmem.c, `/dev/pmemN`) over
//! Intel Optane DC persistent-memory DIMMs in App Direct mode (spec B.4).
//!
//! DOC: the pmem driver has no request queue worth the name: `pmem_submit_bio` copies each
//! segment between the page and the DIMMs with the CPU (`memcpy_mcsafe` / non-temporal
//! stores) in the submitting task, and the disk is `SWP_SYNCHRONOUS_IO`, so swap-in skips the
//! swap cache and readahead for it. A request therefore costs a fixed block-layer/driver
//! software term, the media's first-access latency, and the bytes at the media bandwidth of
//! the direction (Optane DIMMs read about three times faster than they write).
//!
//! Simplified away: CPU-cache effects, the 256-byte internal access granularity of the DIMM
//! (requests are page multiples), and bandwidth scaling with the number of copying threads
//! (`channels` copies proceed in parallel, each at the per-DIMM bandwidth).

use super::{
    fmt_bytes, fmt_ns, need_positive, xfer_ns, IoDir, IoschedParams, ParamDoc, QueueParams, Scheduler, TimingModel,
    NR_REQUESTS,
};
use crate::units::{de_bytes, de_duration_ns};
use serde::Deserialize;

pub(super) const DESCRIPTION: &str =
    "Persistent memory block device (pmem, Optane DC PMem): synchronous CPU copy, read/write asymmetric";

/// Parameters of the `pmem` model.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PmemParams {
    /// Device size, bytes. Default 128 GiB (one Optane DC PMem module).
    #[serde(deserialize_with = "de_bytes")]
    pub capacity: u64,
    /// Block-layer and driver cost per request, ns. Default 1 us (spec B.4).
    #[serde(deserialize_with = "de_duration_ns")]
    pub request_ns: u64,
    /// Media latency of the first access of a read, ns. Default 305 ns.
    #[serde(deserialize_with = "de_duration_ns")]
    pub read_latency: u64,
    /// Media latency of a write reaching the persistence domain, ns. Default 100 ns.
    #[serde(deserialize_with = "de_duration_ns")]
    pub write_latency: u64,
    /// Read bandwidth of one copy, bytes per second. Default 6.6e9.
    pub read_bandwidth: u64,
    /// Write bandwidth of one copy, bytes per second. Default 2.3e9.
    pub write_bandwidth: u64,
    /// Copies in progress at once. Default 1.
    pub channels: u32,
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

impl Default for PmemParams {
    fn default() -> Self {
        PmemParams {
            capacity: 128 << 30,
            request_ns: 1_000,
            read_latency: 305,
            write_latency: 100,
            read_bandwidth: 6_600_000_000,
            write_bandwidth: 2_300_000_000,
            channels: 1,
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

impl PmemParams {
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
                doc: "Device size. Default 128 GiB, the smallest Optane DC PMem module.",
            },
            ParamDoc {
                key: "request_ns",
                unit: "duration",
                default: fmt_ns(self.request_ns),
                doc: "Block-layer and pmem driver cost per request. Default 1 us (spec B.4: a RAM \
                      or pmem block device is L0 of about 1 us).",
            },
            ParamDoc {
                key: "read_latency",
                unit: "duration",
                default: fmt_ns(self.read_latency),
                doc: "Media latency of a read's first access. Default 305 ns (Izraelevitz et al. \
                      2019, arXiv:1903.05714: random load latency of Optane DC PMM) [S].",
            },
            ParamDoc {
                key: "write_latency",
                unit: "duration",
                default: fmt_ns(self.write_latency),
                doc: "Media latency of a write reaching the ADR persistence domain. Default 100 ns \
                      (order of the store+fence latency in Izraelevitz et al. 2019) [R].",
            },
            ParamDoc {
                key: "read_bandwidth",
                unit: "bytes/s",
                default: self.read_bandwidth.to_string(),
                doc: "Read bandwidth of one copy. Default 6.6 GB/s, one Optane DC PMM \
                      (Izraelevitz et al. 2019) [S].",
            },
            ParamDoc {
                key: "write_bandwidth",
                unit: "bytes/s",
                default: self.write_bandwidth.to_string(),
                doc: "Write bandwidth of one copy. Default 2.3 GB/s, one Optane DC PMM \
                      (Izraelevitz et al. 2019) [S].",
            },
            ParamDoc {
                key: "channels",
                unit: "requests",
                default: self.channels.to_string(),
                doc: "Copies in progress at once (the driver copies in the submitting task). \
                      Default 1, as the ram model.",
            },
        ];
        v.append(&mut self.queue_params().docs());
        v
    }
}

/// A pmem device's timing.
#[derive(Clone, Debug)]
pub struct Pmem {
    p: PmemParams,
}

impl Pmem {
    pub fn new(p: PmemParams) -> Result<Self, String> {
        need_positive("read_bandwidth", p.read_bandwidth, "bytes per second")?;
        need_positive("write_bandwidth", p.write_bandwidth, "bytes per second")?;
        need_positive("channels", p.channels as u64, "requests")?;
        need_positive("capacity", p.capacity, "bytes")?;
        p.queue_params().validate()?;
        Ok(Pmem { p })
    }
}

impl TimingModel for Pmem {
    fn channels(&self) -> u32 {
        self.p.channels
    }

    fn capacity_bytes(&self) -> u64 {
        self.p.capacity
    }

    fn queue_params(&self) -> QueueParams {
        self.p.queue_params()
    }

    /// `SWP_SYNCHRONOUS_IO`: the pmem driver completes a bio in the submitter.
    fn synchronous_io(&self) -> bool {
        true
    }

    fn service_ns(&mut self, dir: IoDir, _offset: u64, len: u64, _start_ns: u64) -> u64 {
        let (latency, bw) = match dir {
            IoDir::Read => (self.p.read_latency, self.p.read_bandwidth),
            IoDir::Write => (self.p.write_latency, self.p.write_bandwidth),
        };
        self.p.request_ns + latency + xfer_ns(len, bw)
    }
}

#[cfg(test)]
mod tests {
    use crate::device::flash::tests::{model, qd1_latency};
    use crate::device::IoDir;

    #[test]
    fn a_4k_page_costs_software_plus_media_and_writes_are_slower() {
        let m = model("model = \"pmem\"");
        let r = qd1_latency(m.clone(), IoDir::Read, 10, 4096, 4096);
        let w = qd1_latency(m, IoDir::Write, 10, 4096, 4096);
        // 1 us + 305 ns + 4096 B / 6.6 GB/s = 1.93 us; 1 us + 100 ns + 4096 B / 2.3 GB/s = 2.88 us.
        assert_eq!(r, 1_000 + 305 + 621);
        assert_eq!(w, 1_000 + 100 + 1_781);
    }
}
