//! The two-stage timing model of a flash SSD (spec B.0), shared by `sata-ssd` and `nvme`,
//! which differ only in their defaults (sata_ssd.rs, nvme.rs).
//!
//! DOC: a request passes three stages:
//!
//! ```text
//!   controller (serial, 1/iops_max per command)
//!     -> flash access (parallel: up to `channels` requests at once, fixed latency)
//!     -> data transfer over the shared link/flash bus (serial, bytes / bandwidth)
//! ```
//!
//! A read is decoded, read from flash, then sent to the host; a write is decoded, its data
//! taken from the host, then programmed (or acknowledged from the drive's write buffer).
//! At queue depth 1 the latency is `1/iops_max + flash + len/bandwidth`; the latency
//! parameters are given as that measured quantity for a 4 KiB request (what reviews and
//! datasheets publish: QD1 4 KiB latency), and the fixed flash term is derived from it. Under
//! load the serial stages make latency grow as `depth / iops_max` or `depth * len / bandwidth`
//! (Little's law), while the channels bound the requests in flight (the queue dispatches at
//! most `channels` at a time).
//!
//! Simplified away: garbage collection and write amplification (steady-state bandwidth is a
//! parameter), the SandForce compression (the write bandwidth is that of the data assumed),
//! read/write interference inside a die, and rare multi-millisecond stalls (B.3 tail; the
//! model has no randomness).

use super::{fmt_bytes, fmt_ns, need_positive, xfer_ns, IoDir, ParamDoc, QueueParams};
use super::{IoschedParams, Scheduler, TimingModel, NR_REQUESTS};
use crate::units::{de_bytes, de_duration_ns};
use serde::Deserialize;
use std::marker::PhantomData;

/// The defaults of one flash model and where they come from.
pub trait FlashDefaults: Clone + std::fmt::Debug {
    /// Defaults, with the same meaning as the fields of [`FlashParams`].
    const CAPACITY: u64;
    const READ_LATENCY: u64;
    const WRITE_LATENCY: u64;
    const READ_BANDWIDTH: u64;
    const WRITE_BANDWIDTH: u64;
    const CHANNELS: u32;
    const IOPS_MAX: u64;
    const MAX_SECTORS_KB: u64;
    const MAX_SEGMENTS: u32;
    const MAX_SEGMENT_SIZE: u64;
    /// Sources of the defaults, per key, for `pagesim describe`.
    const SOURCES: FlashSources;
}

/// Doc strings (meaning and source) of each parameter of one flash model.
#[derive(Clone, Copy, Debug)]
pub struct FlashSources {
    pub capacity: &'static str,
    pub read_latency: &'static str,
    pub write_latency: &'static str,
    pub read_bandwidth: &'static str,
    pub write_bandwidth: &'static str,
    pub channels: &'static str,
    pub iops_max: &'static str,
    pub max_sectors_kb: &'static str,
}

/// Parameters of a flash model; `D` supplies the defaults (`SataSsdParams`, `NvmeParams`).
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields, bound = "")]
pub struct FlashParams<D: FlashDefaults> {
    /// Device size, bytes.
    #[serde(deserialize_with = "de_bytes")]
    pub capacity: u64,
    /// Latency of one 4 KiB read at queue depth 1 (command, flash read, transfer), ns.
    #[serde(deserialize_with = "de_duration_ns")]
    pub read_latency: u64,
    /// Latency of one 4 KiB write at queue depth 1, ns.
    #[serde(deserialize_with = "de_duration_ns")]
    pub write_latency: u64,
    /// Sequential read bandwidth of the shared transfer stage, bytes per second.
    pub read_bandwidth: u64,
    /// Sequential (sustained) write bandwidth, bytes per second.
    pub write_bandwidth: u64,
    /// Requests in flight at once (flash channels/dies reachable in parallel).
    pub channels: u32,
    /// Commands per second the controller can accept (the serial stage), 4 KiB random.
    pub iops_max: u64,
    /// Largest request after merging, KiB.
    pub max_sectors_kb: u64,
    /// Most segments in one request (the driver's scatter-gather limit).
    pub max_segments: u32,
    /// Largest segment, bytes.
    #[serde(deserialize_with = "de_bytes")]
    pub max_segment_size: u64,
    /// File readahead window, KiB (`read_ahead_kb`). Default 128 (VM_MAX_READAHEAD).
    pub read_ahead_kb: u64,
    /// What the block device reports in `/sys/block/<dev>/queue/rotational`. Default false.
    /// The kernel takes it from the driver, not the media: virtio-blk never marks its queue
    /// non-rotational, so a flash-backed virtual disk reports 1, and the swap layer then
    /// treats it as a disk (cluster swap readahead instead of VMA readahead).
    #[serde(deserialize_with = "super::de_flag")]
    pub rotational: bool,
    /// Requests allocated per class before submitters wait (`nr_requests`). Default 128.
    pub nr_requests: u32,
    /// The CPU that takes the device's completion interrupts (`/proc/irq/N/effective_affinity`
    /// of a device with one hardware queue, such as virtio-blk); a task sleeping on its I/O
    /// on another CPU is woken through an IPI (`cpu.remote_wakeup_ns`). Default: none, each
    /// completion runs on the CPU of the task it wakes (blk-mq with a queue per CPU).
    pub irq_cpu: Option<u32>,
    pub scheduler: Scheduler,
    pub iosched: IoschedParams,
    #[serde(skip)]
    _defaults: PhantomData<D>,
}

impl<D: FlashDefaults> Default for FlashParams<D> {
    fn default() -> Self {
        FlashParams {
            capacity: D::CAPACITY,
            read_latency: D::READ_LATENCY,
            write_latency: D::WRITE_LATENCY,
            read_bandwidth: D::READ_BANDWIDTH,
            write_bandwidth: D::WRITE_BANDWIDTH,
            channels: D::CHANNELS,
            iops_max: D::IOPS_MAX,
            max_sectors_kb: D::MAX_SECTORS_KB,
            max_segments: D::MAX_SEGMENTS,
            max_segment_size: D::MAX_SEGMENT_SIZE,
            read_ahead_kb: 128,
            rotational: false,
            nr_requests: NR_REQUESTS,
            irq_cpu: None,
            scheduler: Scheduler::Fifo,
            iosched: IoschedParams::default(),
            _defaults: PhantomData,
        }
    }
}

impl<D: FlashDefaults> FlashParams<D> {
    pub(super) fn docs(&self) -> Vec<ParamDoc> {
        let s = D::SOURCES;
        let mut v = vec![
            ParamDoc { key: "capacity", unit: "bytes", default: fmt_bytes(self.capacity), doc: s.capacity },
            ParamDoc { key: "read_latency", unit: "duration", default: fmt_ns(self.read_latency), doc: s.read_latency },
            ParamDoc {
                key: "write_latency",
                unit: "duration",
                default: fmt_ns(self.write_latency),
                doc: s.write_latency,
            },
            ParamDoc {
                key: "read_bandwidth",
                unit: "bytes/s",
                default: self.read_bandwidth.to_string(),
                doc: s.read_bandwidth,
            },
            ParamDoc {
                key: "write_bandwidth",
                unit: "bytes/s",
                default: self.write_bandwidth.to_string(),
                doc: s.write_bandwidth,
            },
            ParamDoc { key: "channels", unit: "requests", default: self.channels.to_string(), doc: s.channels },
            ParamDoc { key: "iops_max", unit: "commands/s", default: self.iops_max.to_string(), doc: s.iops_max },
            ParamDoc {
                key: "rotational",
                unit: "bool / 0 / 1",
                default: self.rotational.to_string(),
                doc: "What the device reports in /sys/block/<dev>/queue/rotational; the swap layer \
                      uses cluster readahead and the disk slot allocator on rotational devices. \
                      virtio-blk reports 1 whatever backs it.",
            },
        ];
        let mut q = self.queue_params().docs();
        q[0].doc = s.max_sectors_kb;
        v.append(&mut q);
        v.push(super::irq_cpu_doc(self.irq_cpu));
        v
    }

    fn queue_params(&self) -> QueueParams {
        QueueParams {
            max_sectors_kb: self.max_sectors_kb,
            max_segments: self.max_segments,
            max_segment_size: self.max_segment_size,
            read_ahead_kb: self.read_ahead_kb,
            nr_requests: self.nr_requests,
            scheduler: self.scheduler,
            iosched: self.iosched,
            irq_cpu: self.irq_cpu,
        }
    }
}

/// A flash SSD's timing state.
#[derive(Clone, Debug)]
pub struct Flash {
    capacity: u64,
    channels: u32,
    rotational: bool,
    queue: QueueParams,
    bandwidth: [u64; 2],
    /// Controller time per command, ns (1 / iops_max).
    command_ns: u64,
    /// Fixed flash access per direction, ns: the QD1 4 KiB latency minus the serial stages.
    media_ns: [u64; 2],
    /// When the controller can take the next command.
    controller_free: u64,
    /// When the transfer stage is next free.
    link_free: u64,
}

impl Flash {
    pub fn new<D: FlashDefaults>(p: &FlashParams<D>) -> Result<Self, String> {
        need_positive("read_bandwidth", p.read_bandwidth, "bytes per second")?;
        need_positive("write_bandwidth", p.write_bandwidth, "bytes per second")?;
        need_positive("iops_max", p.iops_max, "commands per second")?;
        need_positive("channels", p.channels as u64, "requests")?;
        need_positive("capacity", p.capacity, "bytes")?;
        let queue = p.queue_params();
        queue.validate()?;
        let command_ns = 1_000_000_000u64.div_ceil(p.iops_max);
        let mut media_ns = [0; 2];
        for (dir, key, latency, bw) in [
            (IoDir::Read, "read_latency", p.read_latency, p.read_bandwidth),
            (IoDir::Write, "write_latency", p.write_latency, p.write_bandwidth),
        ] {
            let floor = command_ns + xfer_ns(4096, bw);
            if latency < floor {
                return Err(format!(
                    "{key}: the QD1 4 KiB latency must be at least 1/iops_max + 4 KiB/bandwidth = {}, got {}",
                    fmt_ns(floor),
                    fmt_ns(latency)
                ));
            }
            media_ns[dir.index()] = latency - floor;
        }
        Ok(Flash {
            capacity: p.capacity,
            channels: p.channels,
            rotational: p.rotational,
            queue,
            bandwidth: [p.read_bandwidth, p.write_bandwidth],
            command_ns,
            media_ns,
            controller_free: 0,
            link_free: 0,
        })
    }
}

impl TimingModel for Flash {
    fn channels(&self) -> u32 {
        self.channels
    }

    fn capacity_bytes(&self) -> u64 {
        self.capacity
    }

    /// `queue/rotational` as the device reports it (the `rotational` key): a virtio disk.
    fn rotational(&self) -> bool {
        self.rotational
    }

    /// SATA NCQ and NVMe queues.
    fn tagged_queueing(&self) -> bool {
        true
    }

    fn queue_params(&self) -> QueueParams {
        self.queue
    }

    fn service_ns(&mut self, dir: IoDir, _offset: u64, len: u64, start_ns: u64) -> u64 {
        let decoded = start_ns.max(self.controller_free) + self.command_ns;
        self.controller_free = decoded;
        let transfer = xfer_ns(len, self.bandwidth[dir.index()]);
        let media = self.media_ns[dir.index()];
        let done = match dir {
            IoDir::Read => {
                let read = decoded + media;
                self.link_free = read.max(self.link_free) + transfer;
                self.link_free
            }
            IoDir::Write => {
                self.link_free = decoded.max(self.link_free) + transfer;
                self.link_free + media
            }
        };
        done - start_ns
    }
}

#[cfg(test)]
pub(super) mod tests {
    use crate::device::{DeviceConfig, DeviceModel, DeviceQueue, Dispatched, IoDir};

    pub(crate) fn model(toml_text: &str) -> DeviceModel {
        let cfg: DeviceConfig = toml::from_str(toml_text).unwrap();
        DeviceModel::new(&cfg).unwrap()
    }

    /// Submits `n` requests of `len` bytes at once (each its own unplug, so each may still
    /// merge with queued neighbours when `stride == len`), runs to completion, returns
    /// (elapsed ns, mean latency ns).
    pub(crate) fn run_batch(m: DeviceModel, dir: IoDir, n: u64, len: u64, stride: u64) -> (u64, u64) {
        let mut q = DeviceQueue::new(m, crate::profile::PLUG_LEGACY);
        let mut inflight: Vec<Dispatched> = Vec::new();
        for i in 0..n {
            q.add(dir, i * stride, len, i as u32, 0, &mut inflight);
            q.unplug(0, &mut inflight);
        }
        let (mut end, mut total_latency) = (0, 0);
        while !inflight.is_empty() {
            inflight.sort_by_key(|d| (d.done_ns, d.rid));
            let d = inflight.remove(0);
            let mut tags = Vec::new();
            q.complete(d.done_ns, d.rid, &mut tags, &mut inflight);
            total_latency += d.done_ns * tags.len() as u64;
            end = d.done_ns;
        }
        (end, total_latency / n)
    }

    /// Issues `n` requests one after another at queue depth 1; returns mean latency, ns.
    pub(crate) fn qd1_latency(mut m: DeviceModel, dir: IoDir, n: u64, len: u64, stride: u64) -> u64 {
        let mut now = 0;
        for i in 0..n {
            now += m.service_ns(dir, (i * stride) % (m.capacity_bytes() - len), len, now);
        }
        now / n
    }

    #[test]
    fn qd1_4k_latency_is_the_configured_latency() {
        for (name, r, w) in [("sata-ssd", 100_000, 80_000), ("nvme", 80_000, 20_000)] {
            let m = model(&format!("model = \"{name}\""));
            assert_eq!(qd1_latency(m.clone(), IoDir::Read, 100, 4096, 7_777 * 4096), r, "{name}");
            assert_eq!(qd1_latency(m, IoDir::Write, 100, 4096, 7_777 * 4096), w, "{name}");
        }
    }

    #[test]
    fn larger_requests_add_only_transfer_time() {
        let m = model("model = \"sata-ssd\"");
        let l4 = qd1_latency(m.clone(), IoDir::Read, 1, 4096, 0);
        let l128 = qd1_latency(m, IoDir::Read, 1, 128 << 10, 0);
        let want = crate::device::xfer_ns(124 << 10, 280_000_000);
        assert!(l128 - l4 >= want - 1 && l128 - l4 <= want + 1, "{} vs {want}", l128 - l4);
    }

    #[test]
    fn sequential_throughput_reaches_the_bandwidth() {
        for (name, dir, bw) in
            [("sata-ssd", IoDir::Read, 280e6), ("sata-ssd", IoDir::Write, 270e6), ("nvme", IoDir::Read, 3.5e9)]
        {
            let n = 2048;
            let len = 128 << 10;
            let (elapsed, _) = run_batch(model(&format!("model = \"{name}\"")), dir, n, len, len);
            let got = (n * len) as f64 / (elapsed as f64 / 1e9);
            assert!((got / bw - 1.0).abs() < 0.03, "{name} {dir:?}: {got:.3e} B/s vs {bw:.3e}");
        }
    }

    #[test]
    fn random_4k_throughput_is_capped_by_iops_max_or_channels() {
        // Controller-bound: with many channels the serial stage sets the rate.
        let m = model("model = \"nvme\"\niops_max = 100000\nchannels = 64");
        let (elapsed, _) = run_batch(m, IoDir::Read, 10_000, 4096, 1 << 20);
        let iops = 10_000.0 / (elapsed as f64 / 1e9);
        assert!((iops / 100_000.0 - 1.0).abs() < 0.02, "{iops}");
        // Channel-bound: k requests in flight, each held for the QD1 latency (Little's law).
        let m = model("model = \"sata-ssd\"\niops_max = 1000000");
        let (elapsed, _) = run_batch(m, IoDir::Read, 10_000, 4096, 1 << 20);
        let iops = 10_000.0 / (elapsed as f64 / 1e9);
        let want = 4.0 / 100e-6;
        assert!((iops / want - 1.0).abs() < 0.1, "{iops} vs {want}");
    }

    #[test]
    fn latency_grows_with_queue_depth() {
        let m = model("model = \"nvme\"");
        let qd1 = qd1_latency(m.clone(), IoDir::Read, 1000, 4096, 1 << 20);
        let (_, deep) = run_batch(m, IoDir::Read, 1000, 4096, 1 << 20);
        assert!(deep > 10 * qd1, "1000 queued requests wait: {deep} vs {qd1}");
    }
}
