//! Block devices: timing models and the request queue in front of them.
//!
//! Models the part of the block layer that matters for memory management: a request
//! (a contiguous run of sectors, read or write) is queued, merged with contiguous
//! neighbours (the block plug and the elevator's back/front merge, `blk_attempt_plug_merge`,
//! `elv_merge`), dispatched by an I/O scheduler (`none`, `mq-deadline` or `cfq`), and serviced
//! by a timing model that says how long the device is busy with it.
//!
//! ```text
//!   add() ──► plug ──unplug()──► scheduler queue ──dispatch──► channel 0..k ──► complete()
//!             (merge with last)  (back/front merge,             (timing model:
//!                                 none: FIFO,                    service_ns)
//!                                 mq-deadline: elevator,
//!                                 cfq: per-process slices)
//! ```
//!
//! A timing model is one file; [`DeviceModel`] dispatches to it through a closed enum and
//! [`MODELS`] is the registry. Every parameter is named, has a unit, a default and a source,
//! and is listed by [`describe`] and in docs/model.md (section Devices).
//!
//! A model may also be a swap backend that keeps swapped pages itself ([`SwapBackend`]:
//! zram), which engine/page_io.rs uses instead of timed requests. The block layer's state in
//! a run is `Io` (the queues and the page I/O in flight, [`PageIo`]), driven by
//! engine/block.rs.
//!
//! Keys shared by every model describe the request queue, as in `/sys/block/<dev>/queue/`:
//! `max_sectors_kb`, `nr_requests`, `scheduler` and the `iosched` table of the scheduler's
//! tunables ([`IoschedParams`]).

mod cfq;
pub mod elevator;
mod flash;
mod hdd;
mod iosched;
mod mq_deadline;
mod noop;
mod nvme;
mod pmem;
mod queue;
mod ram;
mod sata_ssd;
mod zram;

pub use cfq::CfqParams;
pub use elevator::{Scheduler, SCHEDULERS};
pub use flash::{Flash, FlashDefaults, FlashParams};
pub use hdd::{DriveCmd, Hdd, HddParams};
pub use iosched::{Iosched, IoschedParams};
pub use mq_deadline::DeadlineParams;
pub use nvme::{NvmeDefaults, NvmeParams};
pub use pmem::{Pmem, PmemParams};
pub use queue::{DeviceQueue, DeviceStats, Dispatched};
pub use ram::{Ram, RamParams};
pub use sata_ssd::{SataSsdDefaults, SataSsdParams};
pub use zram::{OverLimit, Stored, Zram, ZramParams};

use crate::ids::DevId;
use crate::ids::Pfn;
use crate::mm::compress::{Compressor, Content};
use serde::Deserialize;

crate::ids::index_by!(DeviceQueue, crate::ids::DevId);

/// One folio's I/O in flight (the tag handed to the device queue).
#[derive(Clone, Copy, Debug)]
pub struct PageIo {
    pub frame: Pfn,
    pub dir: IoDir,
    /// Requests of this I/O not completed yet: a large folio bigger than the device's
    /// largest request goes out as several (the block layer's `bio_split`).
    pub parts: u32,
}

/// The block layer of the machine: its device queues and the page I/O in flight.
pub(crate) struct Io {
    pub(crate) devices: Vec<DeviceQueue>,
    /// Device names, in the same order (the scenario's, sorted).
    pub(crate) names: Vec<String>,
    /// Page I/O by tag, and the free tags.
    pub(crate) ios: Vec<PageIo>,
    pub(crate) free_ios: Vec<u32>,
    /// Reused buffers for what a queue dispatched and completed.
    pub(crate) scratch_dispatch: Vec<Dispatched>,
    pub(crate) scratch_tags: Vec<u32>,
    /// Per device, the time its scheduler timer event was queued for.
    pub(crate) dev_timer: Vec<Option<u64>>,
    /// Threads sleeping for a request of a full device queue: (thread, device), in order.
    pub(crate) req_waiters: Vec<(crate::ids::Tid, DevId)>,
    /// The thread running now: the submitting context of its I/O.
    pub(crate) ctx: crate::ids::Tid,
    /// Folio I/O to synchronous (bio-based) devices in the running thread's plug, in the
    /// order submitted: the filesystem's bios under construction, done by that thread when
    /// it releases the plug (`Sim::unplug`).
    pub(crate) sync_plug: Vec<SyncIo>,
}

/// A folio's I/O to a synchronous device, held until the submitter's plug is released.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SyncIo {
    pub dev: DevId,
    pub frame: Pfn,
    pub dir: IoDir,
    pub offset: u64,
    pub len: u64,
}
/// Direction of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoDir {
    Read,
    Write,
}

impl IoDir {
    /// Index into per-direction arrays (`DD_READ` = 0, `DD_WRITE` = 1 as in mq-deadline).
    pub fn index(self) -> usize {
        match self {
            IoDir::Read => 0,
            IoDir::Write => 1,
        }
    }
}

/// `BLKDEV_MAX_RQ`: the default `nr_requests`.
pub const NR_REQUESTS: u32 = 128;

/// `BLK_MAX_SEGMENTS` and `BLK_MAX_SEGMENT_SIZE`: the segment limits of a queue whose driver
/// sets none (`blk_set_default_limits`).
pub const BLK_MAX_SEGMENTS: u32 = 128;
pub const BLK_MAX_SEGMENT_SIZE: u64 = 64 << 10;

/// The request-queue settings every model carries (`/sys/block/<dev>/queue/`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueParams {
    /// Largest request after merging, KiB (`max_sectors_kb`).
    pub max_sectors_kb: u64,
    /// Most scatter-gather segments in one request (`max_segments`): each page I/O is one,
    /// its folio being the only physically contiguous memory the model knows of.
    pub max_segments: u32,
    /// Largest segment, bytes (`max_segment_size`): a larger folio takes several.
    pub max_segment_size: u64,
    /// Default file readahead window, KiB (`read_ahead_kb`, the bdi's `ra_pages`).
    pub read_ahead_kb: u64,
    /// Requests that may be allocated per class, sync and async (`nr_requests`).
    pub nr_requests: u32,
    pub scheduler: Scheduler,
    pub iosched: IoschedParams,
    /// The CPU that takes the completion interrupts, if one does (`irq_cpu` of the models
    /// that interrupt: hdd, sata-ssd, nvme); `None`: the CPU of the task a completion wakes.
    pub irq_cpu: Option<u32>,
}

/// The `irq_cpu` key of the models whose completions are interrupts.
pub(crate) fn irq_cpu_doc(irq_cpu: Option<u32>) -> ParamDoc {
    ParamDoc {
        key: "irq_cpu",
        unit: "CPU number",
        default: irq_cpu.map_or("none".into(), |c| c.to_string()),
        doc: "CPU that takes the device's completion interrupts (/proc/irq/N/effective_affinity_list \
              of a device with one hardware queue, such as virtio-blk). A task sleeping on the \
              device's I/O on another, idle CPU then wakes cpu.remote_wakeup_ns later (the IPI). \
              none: each completion runs on the CPU of the task it wakes (a queue per CPU).",
    }
}

impl QueueParams {
    fn validate(&self) -> Result<(), String> {
        if self.max_sectors_kb < 4 {
            return Err(format!(
                "max_sectors_kb: expected an integer number of KiB of at least 4 (one page), got {}",
                self.max_sectors_kb
            ));
        }
        if self.max_sectors_kb > 1 << 22 {
            return Err(format!(
                "max_sectors_kb: expected at most {} KiB (4 GiB), got {}",
                1u64 << 22,
                self.max_sectors_kb
            ));
        }
        if self.max_segments == 0 || self.max_segments > u16::MAX as u32 {
            return Err(format!(
                "max_segments: expected a number of segments from 1 to {} (an unsigned short), got {}",
                u16::MAX,
                self.max_segments
            ));
        }
        if self.max_segment_size < 4096 || self.max_segment_size > u32::MAX as u64 {
            return Err(format!(
                "max_segment_size: expected a number of bytes from 4096 (one page) to {}, got {}",
                u32::MAX,
                self.max_segment_size
            ));
        }
        if !self.read_ahead_kb.is_multiple_of(4) || self.read_ahead_kb > 1 << 20 {
            return Err(format!(
                "read_ahead_kb: expected a multiple of 4 KiB (whole pages) up to {} KiB, got {}",
                1u64 << 20,
                self.read_ahead_kb
            ));
        }
        if self.nr_requests < 4 {
            return Err(format!("nr_requests: expected at least 4 (BLKDEV_MIN_RQ), got {}", self.nr_requests));
        }
        self.iosched.resolve(self.scheduler)?;
        Ok(())
    }

    fn docs(&self) -> Vec<ParamDoc> {
        let mut v = vec![
            ParamDoc {
                key: "max_sectors_kb",
                unit: "KiB",
                default: self.max_sectors_kb.to_string(),
                doc: "Largest request after merging (/sys/block/<dev>/queue/max_sectors_kb).",
            },
            ParamDoc {
                key: "max_segments",
                unit: "segments",
                default: self.max_segments.to_string(),
                doc: "Most scatter-gather segments in one request (/sys/block/<dev>/queue/max_segments): \
                      merging stops there. Each page I/O is one segment (two folios are never taken \
                      to be physically contiguous), so this caps a request of scattered pages, such \
                      as a swap-out, at this many pages.",
            },
            ParamDoc {
                key: "max_segment_size",
                unit: "bytes",
                default: self.max_segment_size.to_string(),
                doc: "Largest segment (/sys/block/<dev>/queue/max_segment_size): a folio larger than \
                      this takes several segments.",
            },
            ParamDoc {
                key: "read_ahead_kb",
                unit: "KiB",
                default: self.read_ahead_kb.to_string(),
                doc: "Maximum file readahead window of files on this device \
                      (/sys/block/<dev>/queue/read_ahead_kb; VM_MAX_READAHEAD = 128 KiB). \
                      0 turns file readahead off.",
            },
            ParamDoc {
                key: "nr_requests",
                unit: "requests",
                default: self.nr_requests.to_string(),
                doc: "Requests that may be allocated per class, sync (reads) and async (writes); \
                      a writer that finds its class full sleeps until one completes, and from 7/8 \
                      of it the queue is congested (/sys/block/<dev>/queue/nr_requests; \
                      BLKDEV_MAX_RQ = 128).",
            },
            ParamDoc {
                key: "scheduler",
                unit: "\"none\" | \"mq-deadline\" | \"cfq\"",
                default: self.scheduler.name().to_string(),
                doc: "I/O scheduler (/sys/block/<dev>/queue/scheduler).",
            },
        ];
        v.append(&mut IoschedParams::docs());
        v
    }
}

/// A timing model: how long the device is busy with each request, and what the driver tells
/// the block layer about the device. One file per model implements it; [`MODELS`] registers
/// it under its scenario name.
pub trait TimingModel {
    /// Requests the device services in parallel.
    fn channels(&self) -> u32;

    /// Capacity in bytes.
    fn capacity_bytes(&self) -> u64;

    /// The request-queue settings: `max_sectors_kb`, scheduler and its tunables.
    fn queue_params(&self) -> QueueParams;

    /// Time the device is busy servicing one request that starts at `start_ns`.
    /// Requests of one device must be presented in non-decreasing `start_ns` order.
    fn service_ns(&mut self, dir: IoDir, offset: u64, len: u64, start_ns: u64) -> u64;

    /// The device reports itself rotational (`queue/rotational`): disables VMA swap
    /// readahead on 4.15+.
    fn rotational(&self) -> bool {
        false
    }

    /// The drive queues several commands (SATA NCQ, NVMe): CFQ's `hw_tag`.
    fn tagged_queueing(&self) -> bool {
        false
    }

    /// The drive holds the commands it accepts and serves them one at a time in an order
    /// of its own ([`Self::pick`]), so a command's completion is known only when the drive
    /// starts it: disks. The other models time each command when it is dispatched.
    fn serves_one_at_a_time(&self) -> bool {
        false
    }

    /// Which of the held commands (in arrival order) the drive starts next at `now`.
    fn pick(&self, _cmds: &[DriveCmd], _now: u64) -> usize {
        0
    }

    /// `SWP_SYNCHRONOUS_IO`-capable device (brd, pmem, zram).
    fn synchronous_io(&self) -> bool {
        false
    }

    /// The device as a store of swapped pages (zram), if it is one.
    fn swap_backend(&self) -> Option<&dyn SwapBackend> {
        None
    }

    /// [`Self::swap_backend`], to store, load and free pages.
    fn swap_backend_mut(&mut self) -> Option<&mut dyn SwapBackend> {
        None
    }
}

/// A device that keeps the swapped pages written to it itself, compressed in memory (zram):
/// swap writes and reads of it are done by the submitting thread through these calls, not
/// timed as requests, and its pool takes frames from the machine (engine/page_io.rs). The
/// offsets are byte offsets on the device, as a swap area's slots map to them.
pub trait SwapBackend {
    /// The compressor, for the CPU cost of a store.
    fn compressor(&self) -> &'static Compressor;
    /// `zram_write_page`: stores content `c` at `offset`, replacing what was there. Returns
    /// what was stored, the compressed length, the pool pages the old entry released and
    /// the pages the new one added (the caller takes and returns the frames), or the memory
    /// limit's refusal.
    fn store(&mut self, offset: u64, c: Content) -> Result<(Stored, u32, u64, u64), OverLimit>;
    /// `zram_free_page`: the pool pages released.
    fn free(&mut self, offset: u64) -> u64;
    /// `zram_read_page`: the CPU time to bring the page at `offset` back.
    fn load_ns(&self, offset: u64) -> u64;
    /// What the page at `offset` holds, if anything.
    fn stored(&self, offset: u64) -> Option<Stored>;
    /// Pages of memory its pool holds.
    fn pool_pages(&self) -> u64;
    /// Its `mm_stat`.
    fn mm_stat(&self) -> MmStat;
}

/// A swap backend's `mm_stat` (/sys/block/zramN/mm_stat): sizes in bytes, counts in pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MmStat {
    pub orig_data_size: u64,
    pub compr_data_size: u64,
    pub mem_used_total: u64,
    pub same_pages: u64,
    pub huge_pages: u64,
}

crate::registry::registry! {
    /// A timing model, dispatched through a closed enum (no `Box<dyn>` on the hot path).
    #[derive(Clone, Debug)]
    pub enum DeviceModel: TimingModel {
        fn channels(&self) -> u32;
        fn capacity_bytes(&self) -> u64;
        fn queue_params(&self) -> QueueParams;
        fn service_ns(&mut self, dir: IoDir, offset: u64, len: u64, start_ns: u64) -> u64;
        fn rotational(&self) -> bool;
        fn tagged_queueing(&self) -> bool;
        fn serves_one_at_a_time(&self) -> bool;
        fn pick(&self, cmds: &[DriveCmd], now: u64) -> usize;
        fn synchronous_io(&self) -> bool;
        fn swap_backend(&self) -> Option<&dyn SwapBackend>;
        fn swap_backend_mut(&mut self) -> Option<&mut dyn SwapBackend>;
    }

    /// One device as the scenario describes it: `[[device]] name = "...", model = "hdd", ...`.
    /// The `model` key selects the timing model; the other keys override its parameters.
    #[derive(Clone, Debug, Deserialize)]
    #[serde(tag = "model", deny_unknown_fields)]
    pub enum DeviceConfig {
        /// Every parameter of the model with its unit, default and source.
        fn docs(&self) -> Vec<ParamDoc>;
    }

    /// Registry of timing models: scenario name, one-line description, default parameters.
    pub const MODELS = [
        Hdd => "hdd", Hdd, hdd::DESCRIPTION, |p: &HddParams| Hdd::new(p.clone());
        SataSsd => "sata-ssd", Flash, sata_ssd::DESCRIPTION, |p: &SataSsdParams| Flash::new(p);
        Nvme => "nvme", Flash, nvme::DESCRIPTION, |p: &NvmeParams| Flash::new(p);
        Pmem => "pmem", Pmem, pmem::DESCRIPTION, |p: &PmemParams| Pmem::new(p.clone());
        Ram => "ram", Ram, ram::DESCRIPTION, |p: &RamParams| Ram::new(p.clone());
        Zram => "zram", Zram, zram::DESCRIPTION, |p: &ZramParams| Zram::new(p.clone());
    ];
}

impl DeviceModel {
    /// The bdi's `ra_pages`: the file readahead window in pages (`read_ahead_kb` / 4).
    pub fn ra_pages(&self) -> u64 {
        self.queue_params().read_ahead_kb / 4
    }

    /// The bdi's `io_pages`: the largest request in pages (`max_sectors_kb` / 4), which
    /// 4.10+ readahead lets an oversize read use instead of `ra_pages`
    /// (`blk_queue_max_hw_sectors` and `queue_max_sectors_store` set it).
    pub fn io_pages(&self) -> u64 {
        self.queue_params().max_sectors_kb / 4
    }

    /// Largest request after merging, in bytes: `max_sectors_kb`, or `max_segments` full
    /// segments if that is less.
    pub fn max_request_bytes(&self) -> u64 {
        let q = self.queue_params();
        (q.max_sectors_kb * 1024).min(q.max_segments as u64 * q.max_segment_size)
    }
}

/// One parameter of a model, for `pagesim describe`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamDoc {
    /// Scenario key (dotted for nested tables, e.g. `iosched.read_expire`).
    pub key: &'static str,
    pub unit: &'static str,
    /// Default value as a user would write it.
    pub default: String,
    /// Meaning and source.
    pub doc: &'static str,
}

/// Every model with its description and parameters (defaults included), in registry order.
pub fn describe() -> Vec<(&'static str, &'static str, Vec<ParamDoc>)> {
    MODELS.iter().map(|m| (m.name, m.description, (m.build)().docs())).collect()
}

/// A duration as a user would write it: "500ms", "8.5ms", "80us", "7ns". The number is the
/// shortest decimal that parses back to the same nanoseconds.
pub(crate) fn fmt_ns(ns: u64) -> String {
    let (div, unit) = match ns {
        1_000_000_000.. => (1e9, "s"),
        1_000_000.. => (1e6, "ms"),
        1_000.. => (1e3, "us"),
        _ => return format!("{ns}ns"),
    };
    format!("{}{unit}", ns as f64 / div)
}

/// A size as a user would write it: "512KiB", "64GiB", or bytes when not a round multiple.
pub(crate) fn fmt_bytes(b: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if b >= 1 << shift && b & ((1 << shift) - 1) == 0 {
            return format!("{}{unit}", b >> shift);
        }
    }
    b.to_string()
}

/// serde helper for the `bool`-or-integer kernel tunables (`front_merges = 1`).
pub(crate) fn de_flag<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Flag {
        B(bool),
        I(u64),
    }
    match Flag::deserialize(d).map_err(|_| serde::de::Error::custom("expected true, false, 0 or 1"))? {
        Flag::B(b) => Ok(b),
        Flag::I(0) => Ok(false),
        Flag::I(1) => Ok(true),
        Flag::I(n) => Err(serde::de::Error::custom(format!("expected true, false, 0 or 1, got {n}"))),
    }
}

/// Checks a rate key is positive.
pub(crate) fn need_positive(key: &str, v: u64, unit: &str) -> Result<(), String> {
    if v == 0 {
        Err(format!("{key}: expected a positive number of {unit}, got 0"))
    } else {
        Ok(())
    }
}

/// Nanoseconds to move `bytes` at `rate` bytes per second.
pub(crate) fn xfer_ns(bytes: u64, rate: u64) -> u64 {
    ((bytes as u128 * 1_000_000_000u128).div_ceil(rate as u128)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(toml_text: &str) -> Result<DeviceModel, String> {
        let cfg: DeviceConfig = toml::from_str(toml_text).map_err(|e| e.to_string())?;
        DeviceModel::new(&cfg)
    }

    #[test]
    fn every_registered_model_parses_with_defaults_and_is_described() {
        let described = describe();
        assert_eq!(described.len(), MODELS.len());
        for (m, (dname, _, docs)) in MODELS.iter().zip(&described) {
            let name = &m.name;
            assert_eq!(name, dname);
            let m = parse(&format!("model = \"{name}\"")).unwrap();
            assert_eq!(m.name(), *name);
            assert!(m.capacity_bytes() > 0 && m.channels() > 0);
            // zram is bio-based: no request queue, so no queue keys.
            let queued = *name != "zram";
            assert_eq!(docs.iter().any(|d| d.key == "max_sectors_kb"), queued, "{name}");
            assert_eq!(docs.iter().any(|d| d.key == "scheduler"), queued, "{name}");
        }
    }

    #[test]
    fn only_hdd_is_rotational_and_gets_mq_deadline_by_default() {
        for name in MODELS.iter().map(|m| &m.name) {
            let m = parse(&format!("model = \"{name}\"")).unwrap();
            assert_eq!(m.rotational(), *name == "hdd");
            let want = if *name == "hdd" { Scheduler::MqDeadline } else { Scheduler::Fifo };
            assert_eq!(m.queue_params().scheduler, want, "{name}");
            assert_eq!(m.synchronous_io(), ["ram", "pmem", "zram"].contains(name), "{name}");
        }
    }

    #[test]
    fn the_scheduler_key_takes_every_registered_scheduler_and_documents_each() {
        for e in SCHEDULERS {
            let m = parse(&format!("model = \"hdd\"\nscheduler = \"{}\"", e.name)).unwrap();
            assert_eq!(m.queue_params().scheduler, (e.build)(), "{}", e.name);
        }
        // ParamDoc units are static text: this keeps the listed names those of SCHEDULERS.
        let unit = SCHEDULERS.iter().map(|e| format!("\"{}\"", e.name)).collect::<Vec<_>>().join(" | ");
        for (model, _, docs) in describe() {
            if let Some(d) = docs.iter().find(|d| d.key == "scheduler") {
                assert_eq!(d.unit, unit, "{model}");
            }
        }
    }

    #[test]
    fn overrides_reach_the_model() {
        let m = parse(
            "model = \"sata-ssd\"\nscheduler = \"mq-deadline\"\nmax_sectors_kb = 128\n\
             iosched = { read_expire = \"100ms\", fifo_batch = 4, front_merges = 0 }",
        )
        .unwrap();
        let q = m.queue_params();
        assert_eq!(q.scheduler, Scheduler::MqDeadline);
        assert_eq!(m.max_request_bytes(), 128 * 1024);
        let Ok(Iosched::Deadline(d)) = q.iosched.resolve(q.scheduler) else { panic!("mq-deadline tunables") };
        assert_eq!(d.read_expire, 100_000_000);
        assert_eq!(d.fifo_batch, 4);
        assert!(!d.front_merges);
        assert_eq!(d.write_expire, 5_000_000_000);
        assert!(!m.rotational());
        assert!(parse("model = \"nvme\"\nrotational = 1").unwrap().rotational(), "a virtio disk reports 1");
        let m = parse("model = \"hdd\"\nscheduler = \"cfq\"\nnr_requests = 64\niosched = { slice_idle = 0 }").unwrap();
        let q = m.queue_params();
        assert_eq!(q.nr_requests, 64);
        let Ok(Iosched::Cfq(c)) = q.iosched.resolve(q.scheduler) else { panic!("cfq tunables") };
        assert_eq!(c.slice_idle, 0);
        assert_eq!(c.slice_sync, 100_000_000, "unset keys take CFQ's defaults");
    }

    #[test]
    fn bad_input_is_an_error_naming_the_key() {
        let e = parse("model = \"hdd\"\nrpm = 0").unwrap_err();
        assert!(e.contains("rpm"), "{e}");
        let e = parse("model = \"hdd\"\naverage_seek = \"20ms\"").unwrap_err();
        assert!(e.contains("average_seek"), "{e}");
        let e = parse("model = \"nvme\"\nmax_sectors_kb = 1").unwrap_err();
        assert!(e.contains("max_sectors_kb"), "{e}");
        let e = parse("model = \"nvme\"\nread_latency = \"1us\"").unwrap_err();
        assert!(e.contains("read_latency"), "{e}");
        let e = parse("model = \"hdd\"\nscheduler = \"bfq\"").unwrap_err();
        assert!(e.contains("bfq") || e.contains("variant"), "{e}");
        let e = parse("model = \"hdd\"\nscheduler = \"cfq\"\niosched = { fifo_batch = 4 }").unwrap_err();
        assert!(e.contains("iosched.fifo_batch") && e.contains("cfq"), "{e}");
        let e = parse("model = \"hdd\"\niosched = { slice_idle = \"8ms\" }").unwrap_err();
        assert!(e.contains("iosched.slice_idle") && e.contains("mq-deadline"), "{e}");
        let e = parse("model = \"hdd\"\nnr_requests = 2").unwrap_err();
        assert!(e.contains("nr_requests"), "{e}");
        for bad in ["max_segments = 0", "max_segments = 70000", "max_segment_size = 512", "max_segment_size = \"8GiB\""]
        {
            let e = parse(&format!("model = \"sata-ssd\"\n{bad}")).unwrap_err();
            let key = bad.split(' ').next().unwrap();
            assert!(e.contains(key), "{bad}: {e}");
        }
        assert!(parse("model = \"hdd\"\nwarp_speed = 9").is_err());
        assert!(parse("model = \"floppy\"").is_err());
        assert!(parse("model = \"ram\"\niosched = { front_merges = 7 }").is_err());
    }

    #[test]
    fn formatting_helpers_round_trip_through_the_unit_parsers() {
        use crate::units::{parse_bytes, parse_duration_ns};
        for ns in [500_000_000, 5_000_000_000, 8_500_000, 80_000, 1_200, 7, 1_234_567, 833_333] {
            assert_eq!(parse_duration_ns(&fmt_ns(ns)).unwrap(), ns, "{}", fmt_ns(ns));
        }
        for b in [512 * 1024, 64 << 30, 1_000_204_886_016] {
            assert_eq!(parse_bytes(&fmt_bytes(b)).unwrap(), b);
        }
    }
}
