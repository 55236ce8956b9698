//! Models a 7200 RPM SATA hard disk (spec B.1): seek curve, platter rotation, zoned
//! recording, command overhead, write settle and the drive's read-ahead segment cache.
//!
//! DOC: the cost of a request that does not continue the previous one is
//!
//! ```text
//!   command + seek(d) [+ write settle] + rotational latency + len / rate(zone)
//! ```
//!
//! - **Seek.** `seek(d) = t + A*d/N + B*sqrt(d/N)` for a move of `d` of `N` cylinders
//!   (Ruemmler & Wilkes 1994: sqrt for short seeks, linear for long ones), `seek(0) = 0`.
//!   A and B come from the datasheet's track-to-track `t`, average and full-stroke seek:
//!   vendors average over all seek pairs weighted (N+1-d), under which E[d/N] = 1/3 and
//!   E[sqrt(d/N)] = 8/15, so `B = 5(avg-t) - 5/3(full-t)` and `A = (full-t) - B`.
//! - **Zones.** Bytes per track fall linearly with the cylinder from the outer edge (LBA 0)
//!   to the inner, so the media rate is `outer_rate*(1 - (1-rho)u)` at stroke fraction `u`,
//!   `rho = inner/outer`. Inverting the cumulative capacity gives the cylinder of an LBA:
//!   `u = (1 - sqrt(1 - (1-rho^2) f)) / (1-rho)` for capacity fraction `f`.
//! - **Rotation.** The platter angle is simulated time modulo one revolution. Tracks are
//!   evenly spaced in `u`, so the number of tracks before a byte is `u * tracks` and its
//!   angle is the fractional part (no track skew). The rotational latency is the angle still
//!   to turn when the head has arrived, deterministic for given times and positions.
//! - **Read-ahead cache.** After a read, the drive keeps reading the following sectors into a
//!   cache segment (up to `cache_size / cache_segments` bytes past what the host has taken)
//!   until the next command. A read that starts inside what was read ahead needs no seek
//!   and no rotation: the cached part goes at the interface rate while the head, still
//!   streaming, reads the rest. Host command turnaround overlaps read-ahead, so back-to-back
//!   sequential reads run at the media rate.
//! - **Segments.** What a stream read (ahead) stays in its segment when another command
//!   takes the head; the drive keeps `cache_segments` of them and a new read stream takes
//!   the least recently used. A read wholly inside a segment is served from it without
//!   moving the head (a write over cached sectors invalidates them).
//! - **Look-behind.** While a read waits on its track for the first sector, the sectors
//!   passing under the head go into its segment (read on arrival), up to `look_behind`
//!   bytes and the start of the track: a read just behind a recent one can be a hit.
//! - **Sequential writes.** A write that starts where the previous write ended streams on
//!   (the drive's write cache coalesces it with the previous one): no seek, settle or
//!   rotation. Other writes pay the full positioning cost plus the settle time.
//! - **Command queueing (NCQ).** The drive holds up to `queue_depth` commands and, when free,
//!   starts the one that would finish soonest from where the head is (seek, rotation and
//!   transfer, or a cache hit: shortest access time first, rotational position ordering),
//!   unless the oldest has waited `ncq_max_wait` (command aging); [`Hdd::pick`].
//! - **Write-back cache** (`write_cache`, the WCE bit of the caching mode page that
//!   `hdparm -W` sets and the kernel reads in `sd_read_cache_type()`; off by default). Off,
//!   a write completes when the media has it (write-through). On, the drive reports a write
//!   complete once its data is in the buffer (command plus interface transfer: immediate
//!   reporting, Ruemmler & Wilkes 1994, "An introduction to disk drive modeling") and
//!   destages it afterwards: the head does the same media work (positioning, settle,
//!   transfer, the streaming of a write that continues the previous one) after the
//!   commands accepted before, in arrival order. Dirty data is
//!   bounded by `cache_size`; a write that finds it full waits until enough is destaged. A
//!   read starts when the head is free, so it waits behind the destaging backlog.
//!
//!   ```text
//!   host:  |w1|w2|w3|           |r|          (writes reported at interface speed)
//!   head:  |--w1--|--w2--|--w3--|--r--|       (media work in arrival order)
//!   ```
//!
//! Simplified away: head switches and track skew within a transfer (the media rate is the
//! sustained rate), partial cache hits (a read not wholly cached is positioned), destaging
//! out of arrival order or only in idle time (no source for a 2007-2012 desktop drive's
//! policy), reads served from dirty data in the write cache, the write cache sharing the
//! buffer with the read segments, and defect remapping.

use super::{
    fmt_bytes, fmt_ns, need_positive, xfer_ns, IoDir, IoschedParams, ParamDoc, QueueParams, Scheduler, TimingModel,
    NR_REQUESTS,
};
use crate::units::{de_bytes, de_duration_ns};
use serde::Deserialize;

pub(super) const DESCRIPTION: &str =
    "7200 RPM SATA disk: seek curve, platter rotation, zoned transfer, segmented read cache, NCQ; mq-deadline";

/// Parameters of the `hdd` model. Defaults: a 1 TB 7200 RPM SATA desktop disk of
/// 2008-2012 (the Barracuda ES.2 geometry of spec B.1).
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HddParams {
    /// Device size, bytes. Default 1,000,204,886,016 (1 TB, 1,953,525,168 sectors).
    #[serde(deserialize_with = "de_bytes")]
    pub capacity: u64,
    /// Spindle speed, revolutions per minute. Default 7200.
    pub rpm: u32,
    /// Cylinders (seek positions). Default 153,352.
    pub cylinders: u64,
    /// Seek to the adjacent cylinder, ns. Default 0.8 ms.
    #[serde(deserialize_with = "de_duration_ns")]
    pub track_to_track_seek: u64,
    /// Datasheet average seek (triangular weighting), ns. Default 8.5 ms.
    #[serde(deserialize_with = "de_duration_ns")]
    pub average_seek: u64,
    /// Seek across the whole stroke, ns. Default 16 ms.
    #[serde(deserialize_with = "de_duration_ns")]
    pub full_stroke_seek: u64,
    /// Media transfer rate at the outer edge (LBA 0), bytes per second. Default 110,592,000.
    pub outer_rate: u64,
    /// Media transfer rate at the inner edge, bytes per second. Default 74,956,800.
    pub inner_rate: u64,
    /// Host interface rate for data served from the drive cache, bytes per second.
    /// Default 300,000,000 (SATA 3 Gb/s).
    pub interface_rate: u64,
    /// Per-command controller and protocol overhead, ns. Default 0.2 ms.
    #[serde(deserialize_with = "de_duration_ns")]
    pub command_overhead: u64,
    /// Extra settle time before writing after a seek, ns. Default 0.5 ms.
    #[serde(deserialize_with = "de_duration_ns")]
    pub write_settle: u64,
    /// Drive buffer used for read caching, bytes. Default 8 MiB.
    #[serde(deserialize_with = "de_bytes")]
    pub cache_size: u64,
    /// Commands the drive accepts at once (SATA NCQ tags in use by Linux). Default 31.
    pub queue_depth: u32,
    /// Segments the buffer is split into: the drive keeps this many read streams' data,
    /// each at most `cache_size / cache_segments` bytes. Default 16.
    pub cache_segments: u32,
    /// Most the drive keeps of the sectors that pass under the head while it waits for a
    /// read's first sector (read on arrival, look-behind), bytes; 0 turns it off.
    /// Default 128 KiB.
    #[serde(deserialize_with = "de_bytes")]
    pub look_behind: u64,
    /// The drive serves its queued commands shortest access time first (rotational
    /// position ordering) instead of in arrival order. Default true.
    #[serde(deserialize_with = "super::de_flag")]
    pub ncq_reorder: bool,
    /// A queued command waiting this long is served next whatever its position (command
    /// aging), ns. Default 2.4 s.
    #[serde(deserialize_with = "de_duration_ns")]
    pub ncq_max_wait: u64,
    /// The drive reports a write complete once it is in its buffer and destages it later
    /// (write-back, WCE = 1, `hdparm -W1`); false: complete when on the media. Default false.
    #[serde(deserialize_with = "super::de_flag")]
    pub write_cache: bool,
    /// Largest request after merging, KiB. Default 512.
    pub max_sectors_kb: u64,
    /// Most segments in one request. Default 168 (`AHCI_MAX_SG`: a SATA disk behind AHCI).
    pub max_segments: u32,
    /// Largest segment, bytes. Default 64 KiB (the SCSI layer's default for AHCI).
    #[serde(deserialize_with = "de_bytes")]
    pub max_segment_size: u64,
    /// File readahead window, KiB (`read_ahead_kb`). Default 128 (VM_MAX_READAHEAD).
    pub read_ahead_kb: u64,
    /// Requests allocated per class before submitters wait (`nr_requests`). Default 128.
    pub nr_requests: u32,
    /// The CPU that takes the device's completion interrupts (`/proc/irq/N/effective_affinity`
    /// of a device with one hardware queue, such as virtio-blk); a task sleeping on its I/O
    /// on another CPU is woken through an IPI (`cpu.remote_wakeup_ns`). Default: none, each
    /// completion runs on the CPU of the task it wakes (blk-mq with a queue per CPU).
    pub irq_cpu: Option<u32>,
    /// Default mq-deadline.
    pub scheduler: Scheduler,
    pub iosched: IoschedParams,
}

impl Default for HddParams {
    fn default() -> Self {
        HddParams {
            capacity: 1_953_525_168 * 512,
            rpm: 7200,
            cylinders: 153_352,
            track_to_track_seek: 800_000,
            average_seek: 8_500_000,
            full_stroke_seek: 16_000_000,
            // 1800 and 1220 sectors per track at 120 revolutions per second (spec B.1).
            outer_rate: 1800 * 512 * 120,
            inner_rate: 1220 * 512 * 120,
            interface_rate: 300_000_000,
            command_overhead: 200_000,
            write_settle: 500_000,
            cache_size: 8 << 20,
            queue_depth: 31,
            cache_segments: 16,
            look_behind: 128 << 10,
            ncq_reorder: true,
            ncq_max_wait: 2_400_000_000,
            write_cache: false,
            max_sectors_kb: 512,
            max_segments: 168,
            max_segment_size: 64 << 10,
            read_ahead_kb: 128,
            nr_requests: NR_REQUESTS,
            irq_cpu: None,
            scheduler: Scheduler::MqDeadline,
            iosched: IoschedParams::default(),
        }
    }
}

impl HddParams {
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

    pub(super) fn docs(&self) -> Vec<ParamDoc> {
        let mut v = vec![
            ParamDoc {
                key: "capacity",
                unit: "bytes",
                default: fmt_bytes(self.capacity),
                doc: "Device size. Default 1 TB (IDEMA 1,953,525,168 sectors), the capacity of \
                      the B.1 geometry.",
            },
            ParamDoc {
                key: "rpm",
                unit: "rev/min",
                default: self.rpm.to_string(),
                doc: "Spindle speed. Default 7200 (8.33 ms per revolution; spec B.1).",
            },
            ParamDoc {
                key: "cylinders",
                unit: "count",
                default: self.cylinders.to_string(),
                doc: "Seek positions across the stroke. Default 153352 (Barracuda ES.2 entry of \
                      Seagate desim chs.c, spec B.1).",
            },
            ParamDoc {
                key: "track_to_track_seek",
                unit: "duration",
                default: fmt_ns(self.track_to_track_seek),
                doc: "Seek to the adjacent cylinder. Default 0.8 ms (spec B.1, ES.2).",
            },
            ParamDoc {
                key: "average_seek",
                unit: "duration",
                default: fmt_ns(self.average_seek),
                doc: "Datasheet average read seek (over all seek pairs, weight N+1-d). Default \
                      8.5 ms (spec B.1; Barracuda 7200.14 and ES.2 datasheets).",
            },
            ParamDoc {
                key: "full_stroke_seek",
                unit: "duration",
                default: fmt_ns(self.full_stroke_seek),
                doc: "Seek across the whole stroke. Default 16 ms (spec B.1, ES.2).",
            },
            ParamDoc {
                key: "outer_rate",
                unit: "bytes/s",
                default: self.outer_rate.to_string(),
                doc: "Media rate at LBA 0: 1800 sectors/track * 512 B * 120 rev/s = 110.6 MB/s \
                      (spec B.1).",
            },
            ParamDoc {
                key: "inner_rate",
                unit: "bytes/s",
                default: self.inner_rate.to_string(),
                doc: "Media rate at the last LBA: 1220 sectors/track * 512 B * 120 rev/s = 75 MB/s \
                      (spec B.1).",
            },
            ParamDoc {
                key: "interface_rate",
                unit: "bytes/s",
                default: self.interface_rate.to_string(),
                doc: "Rate of cache hits over the link. Default 300 MB/s (SATA 3 Gb/s after \
                      8b/10b coding).",
            },
            ParamDoc {
                key: "command_overhead",
                unit: "duration",
                default: fmt_ns(self.command_overhead),
                doc: "Controller and protocol time per command. Default 0.2 ms (spec B.8).",
            },
            ParamDoc {
                key: "write_settle",
                unit: "duration",
                default: fmt_ns(self.write_settle),
                doc: "Extra settle before a write after a seek. Default 0.5 ms (spec B.1, ES.2; \
                      datasheets give write seeks about 1 ms above read seeks).",
            },
            ParamDoc {
                key: "queue_depth",
                unit: "requests",
                default: self.queue_depth.to_string(),
                doc: "Commands the drive holds at once; the block layer dispatches as long as a tag \
                      is free, so requests stop merging in the elevator once dispatched. Default 31 \
                      (SATA NCQ: 32 tags, libata keeps one for internal commands); 1 gives a drive \
                      without command queueing.",
            },
            ParamDoc {
                key: "ncq_reorder",
                unit: "bool",
                default: self.ncq_reorder.to_string(),
                doc: "The drive serves its queued commands shortest access time first (seek, \
                      rotation and transfer; rotational position ordering, Intel/Seagate NCQ \
                      whitepaper 2003) instead of in arrival order. Default true.",
            },
            ParamDoc {
                key: "ncq_max_wait",
                unit: "duration",
                default: fmt_ns(self.ncq_max_wait),
                doc: "Command aging: a queued command older than this is served next, oldest \
                      first. Default 2.4 s (HGST command aging limit default, 48 x 50 ms; desktop \
                      drives publish none).",
            },
            ParamDoc {
                key: "cache_size",
                unit: "bytes",
                default: fmt_bytes(self.cache_size),
                doc: "Drive buffer used to cache reads. Default 8 MiB (spec B.1: 8-16 MB segment \
                      cache; the 2007 desktop drives of seed 004 have 8 MB).",
            },
            ParamDoc {
                key: "cache_segments",
                unit: "count",
                default: self.cache_segments.to_string(),
                doc: "Segments the buffer is split into, one per read stream, the least recently \
                      used given to a new stream; a segment (cache_size / cache_segments) bounds \
                      the read-ahead. Default 16 (Seagate mode page 08h allows 1-16; DiskSim's \
                      validated drives use 10 and 32).",
            },
            ParamDoc {
                key: "write_cache",
                unit: "bool",
                default: self.write_cache.to_string(),
                doc: "Write-back caching (the WCE bit of the caching mode page, hdparm -W): a \
                      write completes once its data is in the buffer (command + interface \
                      transfer) and the head destages it after the commands before it, in \
                      arrival order; at most cache_size bytes wait to be destaged and reads wait \
                      for the head. Default false: a write completes when the media has it \
                      (desktop drives of 2007-2012 shipped with WCE on; the default keeps the \
                      write-through model the seed tables were first run with).",
            },
            ParamDoc {
                key: "look_behind",
                unit: "bytes",
                default: fmt_bytes(self.look_behind),
                doc: "Most the drive keeps of the sectors before a read that pass under the head \
                      while it waits for the first one (read on arrival); 0 turns it off. Default \
                      128 KiB (Maxtor Atlas 10K V: 256 sectors pre-fetched before the request).",
            },
        ];
        v.append(&mut self.queue_params().docs());
        v.push(super::irq_cpu_doc(self.irq_cpu));
        v
    }
}

/// What the drive did last, for streaming and the read-ahead cache.
#[derive(Clone, Copy, Debug)]
struct Last {
    dir: IoDir,
    /// First byte the current read stream's segment holds: the request's start, or
    /// earlier when the drive read sectors passing under the head before it (look-behind).
    lo: u64,
    /// Byte just after the last request.
    end: u64,
    /// When the last request completed.
    done_ns: u64,
    /// The head is still on the last read's track, reading ahead (false after a read
    /// served from a cache segment while the head is elsewhere).
    streaming: bool,
}

/// How the drive serves one command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    /// A read inside, or continuing, what the head is reading ahead.
    Streaming,
    /// A read inside a stored cache segment (`None`: what the current stream read already).
    Cached(Option<usize>),
    /// A write starting where the previous write ended.
    WriteOn,
    /// Seek, settle and rotation; `rot_ns` is the wait for the first sector on the track.
    Positioned { rot_ns: u64 },
}

/// The cost of serving a command from a given start, without changing the drive.
#[derive(Clone, Copy, Debug)]
struct Plan {
    service_ns: u64,
    /// Positioning before the transfer starts (seek, settle, rotation): 0 for a read the
    /// cache or the streaming head serves and for a write that streams on.
    access_ns: u64,
    access: Access,
    /// The current read stream and where its read-ahead has got to when the command is decoded.
    ahead: Option<(Last, u64)>,
}

/// A command held in the drive's queue (NCQ), for [`Hdd::pick`].
#[derive(Clone, Copy, Debug)]
pub struct DriveCmd {
    pub rid: u32,
    pub dir: IoDir,
    pub offset: u64,
    pub len: u64,
    /// When the drive accepted the command.
    pub arrival_ns: u64,
}

/// A disk's timing state.
#[derive(Clone, Debug)]
pub struct Hdd {
    p: HddParams,
    /// Nanoseconds per revolution.
    rev_ns: f64,
    /// Seek curve coefficients, ns.
    seek_a: f64,
    seek_b: f64,
    /// inner_rate / outer_rate.
    rho: f64,
    /// Tracks on all surfaces: capacity / mean bytes per track.
    tracks: f64,
    /// Cylinder of the head after the last positioning.
    head_cyl: u64,
    /// When the drive finishes the commands it has accepted so far.
    free_at: u64,
    /// Stored cache segments, most recently used first: bytes `[lo, hi)` read before
    /// another command took the head away. At most `cache_segments` (one fewer while a
    /// read stream fills its own).
    segments: Vec<(u64, u64)>,
    last: Option<Last>,
    /// Writes reported complete and not yet on the media (`write_cache`), oldest first:
    /// (when the head has written it, bytes).
    dirty: std::collections::VecDeque<(u64, u64)>,
    /// Bytes in `dirty`.
    dirty_bytes: u64,
}

impl Hdd {
    pub fn new(p: HddParams) -> Result<Self, String> {
        need_positive("rpm", p.rpm as u64, "revolutions per minute")?;
        need_positive("cylinders", p.cylinders, "cylinders")?;
        need_positive("outer_rate", p.outer_rate, "bytes per second")?;
        need_positive("inner_rate", p.inner_rate, "bytes per second")?;
        need_positive("interface_rate", p.interface_rate, "bytes per second")?;
        need_positive("queue_depth", p.queue_depth as u64, "commands")?;
        need_positive("cache_segments", p.cache_segments as u64, "segments")?;
        if p.cache_size / (p.cache_segments as u64) < 4096 {
            return Err(format!(
                "cache_size: expected at least 4 KiB per segment ({} segments), got {}",
                p.cache_segments,
                fmt_bytes(p.cache_size)
            ));
        }
        if p.capacity < 4096 {
            return Err(format!("capacity: expected at least 4096 bytes, got {}", p.capacity));
        }
        if p.inner_rate > p.outer_rate {
            return Err(format!(
                "inner_rate: expected at most outer_rate ({} B/s; LBA 0 is the fast outer edge), got {}",
                p.outer_rate, p.inner_rate
            ));
        }
        if !(p.track_to_track_seek <= p.average_seek && p.average_seek <= p.full_stroke_seek) {
            return Err(format!(
                "average_seek: expected track_to_track_seek <= average_seek <= full_stroke_seek, got {} <= {} <= {}",
                fmt_ns(p.track_to_track_seek),
                fmt_ns(p.average_seek),
                fmt_ns(p.full_stroke_seek)
            ));
        }
        p.queue_params().validate()?;
        let (seek_a, seek_b) =
            seek_coefficients(p.track_to_track_seek as f64, p.average_seek as f64, p.full_stroke_seek as f64);
        let rev_ns = 60e9 / p.rpm as f64;
        let mean_track_bytes = (p.outer_rate + p.inner_rate) as f64 / 2.0 * rev_ns / 1e9;
        Ok(Hdd {
            rev_ns,
            seek_a,
            seek_b,
            rho: p.inner_rate as f64 / p.outer_rate as f64,
            tracks: p.capacity as f64 / mean_track_bytes,
            head_cyl: 0,
            free_at: 0,
            segments: Vec::with_capacity(p.cache_segments as usize + 1),
            last: None,
            dirty: std::collections::VecDeque::new(),
            dirty_bytes: 0,
            p,
        })
    }

    /// Fraction of the stroke (0 = outer edge) where byte `x` lies.
    fn stroke(&self, x: u64) -> f64 {
        let f = (x as f64 / self.p.capacity as f64).clamp(0.0, 1.0);
        let k = 1.0 - self.rho;
        if k < 1e-9 {
            f
        } else {
            (1.0 - (1.0 - (1.0 - self.rho * self.rho) * f).max(0.0).sqrt()) / k
        }
    }

    fn cylinder(&self, x: u64) -> u64 {
        ((self.stroke(x) * self.p.cylinders as f64) as u64).min(self.p.cylinders - 1)
    }

    /// Media rate at byte `x`, bytes per second.
    fn rate(&self, x: u64) -> u64 {
        let r = self.p.outer_rate as f64 * (1.0 - (1.0 - self.rho) * self.stroke(x));
        (r as u64).max(1)
    }

    /// Seek time over `d` cylinders, ns.
    pub fn seek_ns(&self, d: u64) -> u64 {
        if d == 0 {
            return 0;
        }
        let x = d as f64 / self.p.cylinders as f64;
        (self.p.track_to_track_seek as f64 + self.seek_a * x + self.seek_b * x.sqrt()).round() as u64
    }

    /// Angle of byte `x` on its track, in revolutions from the track's first byte.
    fn angle(&self, x: u64) -> f64 {
        (self.stroke(x) * self.tracks).fract()
    }

    /// Time until byte `x` passes under the head, when the head is ready at `at_ns`.
    fn rotational_ns(&self, x: u64, at_ns: u64) -> u64 {
        let head = (at_ns as f64 / self.rev_ns).fract();
        let mut turn = self.angle(x) - head;
        if turn < 0.0 {
            turn += 1.0;
        }
        (turn * self.rev_ns) as u64
    }

    /// Bytes one cache segment holds: the most the drive reads ahead past a read.
    fn segment_bytes(&self) -> u64 {
        self.p.cache_size / self.p.cache_segments as u64
    }

    /// Where the current read stream's read-ahead has got to at `ready_ns`.
    fn live_ahead(&self, ready_ns: u64) -> Option<(Last, u64)> {
        let l = self.last.filter(|l| l.dir == IoDir::Read && l.streaming)?;
        let streamed = (ready_ns.saturating_sub(l.done_ns) as u128 * self.rate(l.end) as u128 / 1_000_000_000) as u64;
        Some((l, l.end + streamed.min(self.segment_bytes())))
    }

    /// How the drive would serve a command it starts at `start_ns`: the cost model of the
    /// module documentation, without changing the drive's state.
    fn plan(&self, dir: IoDir, offset: u64, len: u64, start_ns: u64) -> Plan {
        let cmd = self.p.command_overhead;
        let ready = start_ns + cmd;
        let rate = self.rate(offset);
        let ahead = self.live_ahead(ready);
        let cached =
            |access| Plan { service_ns: cmd + xfer_ns(len, self.p.interface_rate), access_ns: 0, access, ahead };
        if dir == IoDir::Read {
            if let Some((l, a)) = ahead {
                if (l.end..=a).contains(&offset) {
                    let have = a - offset;
                    let service_ns = if len <= have {
                        cmd + xfer_ns(len, self.p.interface_rate)
                    } else if a - l.end < self.segment_bytes() {
                        // The head is still streaming: it reads the rest as the cached part goes out.
                        cmd + xfer_ns(len, self.p.interface_rate).max(xfer_ns(len - have, rate))
                    } else {
                        // Read-ahead stopped with a full segment; the head waits on the same track.
                        cmd + self.rotational_ns(a, ready) + xfer_ns(len - have, rate)
                    };
                    return Plan { service_ns, access_ns: 0, access: Access::Streaming, ahead };
                }
                if l.lo <= offset && offset + len <= l.end {
                    return cached(Access::Cached(None));
                }
            }
            if let Some(i) = self.segments.iter().position(|&(lo, hi)| lo <= offset && offset + len <= hi) {
                return cached(Access::Cached(Some(i)));
            }
        }
        if dir == IoDir::Write && self.last.is_some_and(|l| l.dir == IoDir::Write && l.end == offset) {
            return Plan { service_ns: cmd + xfer_ns(len, rate), access_ns: 0, access: Access::WriteOn, ahead };
        }
        let from = match ahead {
            Some((_, a)) => self.cylinder(a.min(self.p.capacity.saturating_sub(1))),
            None => self.head_cyl,
        };
        let seek = self.seek_ns(from.abs_diff(self.cylinder(offset)));
        let settle = if dir == IoDir::Write && seek > 0 { self.p.write_settle } else { 0 };
        let rot_ns = self.rotational_ns(offset, ready + seek + settle);
        Plan {
            service_ns: cmd + seek + settle + rot_ns + xfer_ns(len, rate),
            access_ns: seek + settle + rot_ns,
            access: Access::Positioned { rot_ns },
            ahead,
        }
    }

    /// Stores what the current read stream holds as a cache segment (most recent first):
    /// another command stops its read-ahead.
    fn store_stream(&mut self, ahead: Option<(Last, u64)>) {
        if let Some((l, a)) = ahead {
            let lo = l.lo.max(a.saturating_sub(self.segment_bytes()));
            self.segments.insert(0, (lo, a));
            self.segments.truncate(self.p.cache_segments as usize);
        }
        if let Some(l) = self.last.as_mut() {
            l.streaming = false;
        }
    }

    /// Bytes before `offset` on its track that pass under the head during a rotational
    /// wait of `rot_ns` (zero-latency read: the drive reads them into the segment).
    fn look_behind(&self, offset: u64, rot_ns: u64) -> u64 {
        let rate = self.rate(offset);
        let passed = (rot_ns as u128 * rate as u128 / 1_000_000_000) as u64;
        let on_track = (self.angle(offset) * rate as f64 * self.rev_ns / 1e9) as u64;
        passed.min(on_track).min(self.p.look_behind).min(self.segment_bytes()).min(offset)
    }

    /// The head serves a command once it has finished those before it: the cost model of
    /// the module documentation. Returns when the media work is done.
    fn serve(&mut self, dir: IoDir, offset: u64, len: u64, issue_ns: u64) -> u64 {
        let start_ns = issue_ns.max(self.free_at);
        let plan = self.plan(dir, offset, len, start_ns);
        let done_ns = start_ns + plan.service_ns;
        self.free_at = done_ns;
        match plan.access {
            Access::Streaming => {
                let (l, _) = plan.ahead.expect("a streaming hit has a stream");
                self.last = Some(Last { end: offset + len, done_ns, ..l });
                self.head_cyl = self.cylinder((offset + len).min(self.p.capacity.saturating_sub(1)));
            }
            Access::Cached(seg) => {
                // Served from the cache; the head stays where it is and the segment is kept,
                // now the most recently used, ahead of the stream this command stopped.
                let hit = seg.map(|i| self.segments.remove(i));
                self.store_stream(plan.ahead);
                if let Some(s) = hit {
                    self.segments.insert(0, s);
                }
            }
            Access::WriteOn | Access::Positioned { .. } => {
                self.store_stream(plan.ahead);
                let mut lo = offset;
                match dir {
                    IoDir::Write => {
                        // Writing over cached sectors invalidates them.
                        self.segments.retain(|&(slo, shi)| offset >= shi || offset + len <= slo);
                    }
                    IoDir::Read => {
                        // The new stream takes a segment: the least recently used goes.
                        self.segments.truncate(self.p.cache_segments as usize - 1);
                        if let Access::Positioned { rot_ns } = plan.access {
                            lo -= self.look_behind(offset, rot_ns);
                        }
                    }
                }
                let end = offset + len;
                self.head_cyl = self.cylinder(end.min(self.p.capacity.saturating_sub(1)));
                self.last = Some(Last { dir, lo, end, done_ns, streaming: true });
            }
        }
        done_ns
    }

    /// When a write of `len` bytes arriving at `t` finds room among the dirty bytes still to
    /// be destaged (`cache_size` at most): at `t`, or when enough of the oldest are on the
    /// media. A write larger than the whole buffer waits until it is empty.
    fn accept_at(&self, len: u64, t: u64) -> u64 {
        let (mut held, mut at) = (self.dirty_bytes, t);
        for &(destaged, n) in &self.dirty {
            if destaged > at && held + len <= self.p.cache_size {
                break;
            }
            at = at.max(destaged);
            held -= n;
        }
        at
    }

    /// A write under `write_cache`: reported once its data is in the buffer, destaged by the
    /// head after the commands accepted before it. Returns when it is reported.
    fn write_back(&mut self, offset: u64, len: u64, issue_ns: u64) -> u64 {
        let accept = self.accept_at(len, issue_ns);
        while let Some(&(destaged, n)) = self.dirty.front() {
            if destaged > accept {
                break;
            }
            self.dirty.pop_front();
            self.dirty_bytes -= n;
        }
        let reported = accept + self.p.command_overhead + xfer_ns(len, self.p.interface_rate);
        let destaged = self.serve(IoDir::Write, offset, len, reported);
        self.dirty.push_back((destaged, len));
        self.dirty_bytes += len;
        reported
    }
}

impl TimingModel for Hdd {
    fn channels(&self) -> u32 {
        self.p.queue_depth
    }

    fn capacity_bytes(&self) -> u64 {
        self.p.capacity
    }

    fn queue_params(&self) -> QueueParams {
        self.p.queue_params()
    }

    /// Time from `issue_ns` until the request completes (for a write with `write_cache`,
    /// until the drive reports it); the drive starts it when it has finished the commands it
    /// started before (the request queue starts one at a time, in the order [`Hdd::pick`]
    /// gives).
    fn service_ns(&mut self, dir: IoDir, offset: u64, len: u64, issue_ns: u64) -> u64 {
        let done_ns = if dir == IoDir::Write && self.p.write_cache {
            self.write_back(offset, len, issue_ns)
        } else {
            self.serve(dir, offset, len, issue_ns)
        };
        done_ns - issue_ns
    }

    /// The command the drive serves next among those it holds (`cmds`, in arrival order),
    /// when it is free at `now`. With `ncq_reorder`, shortest access time first
    /// (rotational position ordering): the command whose first sector the head reaches
    /// soonest (seek and rotation; none for a cache hit or a streaming read), the oldest
    /// among equals, except that a command older than `ncq_max_wait` goes first. Otherwise
    /// arrival order. With `write_cache` a write needs no head: its access time is the wait
    /// for room in the buffer.
    fn pick(&self, cmds: &[DriveCmd], now: u64) -> usize {
        if !self.p.ncq_reorder || cmds.len() < 2 || now.saturating_sub(cmds[0].arrival_ns) >= self.p.ncq_max_wait {
            return 0;
        }
        let start = now.max(self.free_at);
        let mut best = (u64::MAX, 0);
        for (i, c) in cmds.iter().enumerate() {
            let t = if c.dir == IoDir::Write && self.p.write_cache {
                self.accept_at(c.len, now) - now
            } else {
                start - now + self.plan(c.dir, c.offset, c.len, start).access_ns
            };
            if t < best.0 {
                best = (t, i);
            }
        }
        best.1
    }

    fn rotational(&self) -> bool {
        true
    }

    /// NCQ: the drive holds several commands when `queue_depth` > 1.
    fn tagged_queueing(&self) -> bool {
        self.p.queue_depth > 1
    }

    fn serves_one_at_a_time(&self) -> bool {
        true
    }
}

/// Seek-curve coefficients (A, B) in ns from track-to-track `t`, average and full-stroke
/// seek under the vendors' triangular weighting (spec B.1). If the fit gives A < 0 the curve
/// is pure sqrt fitted to the average (B = 15/8 (avg-t)); if B < 0, pure linear (A = 3(avg-t)).
fn seek_coefficients(t: f64, avg: f64, full: f64) -> (f64, f64) {
    let b = 5.0 * (avg - t) - 5.0 / 3.0 * (full - t);
    let a = (full - t) - b;
    if a < 0.0 {
        (0.0, 15.0 / 8.0 * (avg - t))
    } else if b < 0.0 {
        (3.0 * (avg - t), 0.0)
    } else {
        (a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: u64 = 4096;

    fn hdd() -> Hdd {
        Hdd::new(HddParams::default()).unwrap()
    }

    fn lcg(state: &mut u64) -> u64 {
        *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *state >> 11
    }

    #[test]
    fn seek_curve_matches_the_spec_fit_and_grows_with_distance() {
        let (a, b) = seek_coefficients(0.8, 8.5, 16.0);
        assert!((a - 2.03).abs() < 0.01 && (b - 13.17).abs() < 0.01, "A={a} B={b}");
        let h = hdd();
        assert_eq!(h.seek_ns(0), 0);
        assert!((h.seek_ns(1) as i64 - 800_000).abs() < 50_000, "{}", h.seek_ns(1));
        assert!((h.seek_ns(153_352) as i64 - 16_000_000).abs() < 1_000);
        let mut prev = 0;
        for d in [1, 10, 100, 1_000, 10_000, 50_000, 100_000, 153_352] {
            let s = h.seek_ns(d);
            assert!(s > prev, "seek({d}) = {s} not above {prev}");
            prev = s;
        }
    }

    #[test]
    fn seek_averages_to_the_datasheet_figure_under_triangular_weighting() {
        let h = hdd();
        let n = h.p.cylinders;
        let (mut sum, mut weight) = (0.0, 0.0);
        for d in 1..=n {
            let w = (n + 1 - d) as f64;
            sum += w * h.seek_ns(d) as f64;
            weight += w;
        }
        let avg = sum / weight;
        assert!((avg / 8.5e6 - 1.0).abs() < 0.01, "average seek {avg} ns");
    }

    #[test]
    fn degenerate_seek_specs_fall_back_to_one_term() {
        // avg high relative to full: pure sqrt keeps the average.
        let (a, b) = seek_coefficients(1.0, 10.0, 12.0);
        assert_eq!(a, 0.0);
        assert!((b - 15.0 / 8.0 * 9.0).abs() < 1e-9);
        // avg low relative to full: pure linear keeps the average.
        let (a, b) = seek_coefficients(1.0, 2.0, 20.0);
        assert_eq!(b, 0.0);
        assert!((a - 3.0).abs() < 1e-9);
    }

    #[test]
    fn zoned_rate_falls_from_outer_to_inner_and_lba_maps_to_the_stroke() {
        let h = hdd();
        assert_eq!(h.rate(0), 110_592_000);
        let inner = h.rate(h.p.capacity - 1);
        assert!((inner as i64 - 74_956_800).abs() < 1_000, "{inner}");
        // Outer tracks hold more: half the capacity lies in less than half the stroke.
        let mid = h.stroke(h.p.capacity / 2);
        assert!(mid > 0.40 && mid < 0.5, "{mid}");
        assert_eq!(h.cylinder(0), 0);
        assert_eq!(h.cylinder(h.p.capacity - 1), h.p.cylinders - 1);
    }

    #[test]
    fn sequential_128k_reads_run_at_the_outer_media_rate() {
        let mut h = hdd();
        let len = 128 << 10;
        let mut now = 0;
        let n = 2_000;
        for i in 0..n {
            now += h.service_ns(IoDir::Read, i * len, len, now);
        }
        let rate = (n * len) as f64 / (now as f64 / 1e9);
        assert!((rate / 110.592e6 - 1.0).abs() < 0.03, "{rate:.4e} B/s");
    }

    #[test]
    fn sequential_reads_at_the_inner_edge_run_at_the_inner_rate() {
        let mut h = hdd();
        let len = 128 << 10;
        let base = h.p.capacity - 2_000 * len;
        let mut now = 0;
        for i in 0..2_000 {
            now += h.service_ns(IoDir::Read, base + i * len, len, now);
        }
        let rate = (2_000 * len) as f64 / (now as f64 / 1e9);
        assert!((rate / 74.96e6 - 1.0).abs() < 0.03, "{rate:.4e} B/s");
    }

    #[test]
    fn random_4k_reads_give_about_80_iops() {
        let mut h = hdd();
        let mut seed = 7;
        let mut now = 0;
        let n = 5_000;
        for _ in 0..n {
            let off = lcg(&mut seed) % (h.p.capacity / PAGE) * PAGE;
            now += h.service_ns(IoDir::Read, off, PAGE, now);
        }
        let iops = n as f64 / (now as f64 / 1e9);
        // 1 / (0.2 ms command + ~8 ms seek + 4.17 ms half a turn) is about 80.
        assert!((70.0..=95.0).contains(&iops), "{iops}");
    }

    #[test]
    fn rotational_latency_averages_half_a_revolution() {
        let h = hdd();
        let mut seed = 3;
        let n = 20_000;
        let mut sum = 0;
        for _ in 0..n {
            let off = lcg(&mut seed) % (h.p.capacity / PAGE) * PAGE;
            let at = lcg(&mut seed) % 1_000_000_000_000;
            sum += h.rotational_ns(off, at);
        }
        let mean = sum as f64 / n as f64;
        assert!((mean / (h.rev_ns / 2.0) - 1.0).abs() < 0.03, "{mean}");
    }

    #[test]
    fn rereading_a_sector_just_read_is_a_cache_hit() {
        let mut h = hdd();
        let first = h.service_ns(IoDir::Read, 1 << 30, PAGE, 0);
        let again = h.service_ns(IoDir::Read, 1 << 30, PAGE, first);
        assert_eq!(again, 200_000 + xfer_ns(PAGE, 300_000_000));
    }

    #[test]
    fn a_sector_just_behind_the_head_waits_almost_a_full_turn_without_look_behind() {
        let p = HddParams { look_behind: 0, ..HddParams::default() };
        let mut h = Hdd::new(p).unwrap();
        // A byte half a track into its track, so the page before it is on the same track.
        let mut x = 1u64 << 30;
        while !(0.4..0.6).contains(&h.angle(x)) {
            x += 64 * PAGE;
        }
        let first = h.service_ns(IoDir::Read, x, PAGE, 0);
        let behind = h.service_ns(IoDir::Read, x - PAGE, PAGE, first);
        // It passed under the head just before the first read and must come round again.
        assert!(behind > (0.9 * h.rev_ns) as u64, "{behind}");
        assert!(behind < 200_000 + h.rev_ns as u64 + 100_000, "{behind}");
        // With look-behind the drive kept it while waiting for the first read's sector,
        // unless it arrived on the track just in time.
        let mut h = hdd();
        let first = h.service_ns(IoDir::Read, x, PAGE, 0);
        let behind = h.service_ns(IoDir::Read, x - PAGE, PAGE, first);
        let rot = h.rotational_ns(x, 200_000 + h.seek_ns(h.cylinder(x)));
        if rot > xfer_ns(PAGE, h.rate(x)) {
            assert_eq!(behind, 200_000 + xfer_ns(PAGE, 300_000_000));
        }
    }

    #[test]
    fn look_behind_serves_most_of_a_backward_read() {
        // iozone's reverse read: 64 KiB records from the end of 64 MiB back to the start.
        let run = |look_behind| {
            let mut h = Hdd::new(HddParams { look_behind, ..HddParams::default() }).unwrap();
            let len = 64 << 10;
            let (mut now, mut hits) = (0, 0);
            for i in (0..1024u64).rev() {
                let s = h.service_ns(IoDir::Read, (1 << 30) + i * len, len, now);
                hits += usize::from(s < 1_000_000);
                now += s;
            }
            (hits, now)
        };
        let (hits_off, t_off) = run(0);
        let (hits_on, t_on) = run(128 << 10);
        assert_eq!(hits_off, 0, "without look-behind every backward read is positioned");
        // Up to 128 KiB before each positioned read is kept: one or two of every three
        // reads are hits.
        assert!(hits_on > 1024 / 3, "{hits_on} hits");
        assert!(t_on * 3 < t_off * 2, "look-behind {t_on} ns vs none {t_off} ns");
    }

    #[test]
    fn cache_segments_keep_interleaved_streams() {
        // Three sequential readers far apart take turns, 16 KiB each, 1 ms apart: with 16
        // segments every stream's read-ahead survives the others' commands (about 110 KB
        // read ahead per turn, so one read in eight or so is positioned again); with one
        // segment each new stream takes the only segment and every read is positioned.
        let run = |cache_segments| {
            let mut h = Hdd::new(HddParams { cache_segments, ..HddParams::default() }).unwrap();
            let len = 16 << 10;
            let (mut now, mut hits) = (0, 0);
            for k in 0..100u64 {
                for stream in 0..3u64 {
                    let s = h.service_ns(IoDir::Read, stream * (100 << 30) + k * len, len, now);
                    hits += usize::from(s < 1_000_000);
                    now += s + 1_000_000;
                }
            }
            hits
        };
        let hits = run(16);
        assert!(hits >= 240, "segments: {hits} hits of 300");
        assert_eq!(run(1), 0);
    }

    #[test]
    fn a_new_stream_evicts_the_least_recently_used_segment() {
        let p = HddParams { cache_segments: 2, ..HddParams::default() };
        let mut h = Hdd::new(p).unwrap();
        let len = 16 << 10;
        let mut now = 0;
        let mut read = |h: &mut Hdd, at: u64| {
            let s = h.service_ns(IoDir::Read, at, len, now);
            now += s + 2_000_000;
            s
        };
        read(&mut h, 0); // stream A
        read(&mut h, 100 << 30); // stream B: A stored
        assert!(read(&mut h, len) < 1_000_000, "A's read-ahead kept"); // A used: B stored, A most recent
        read(&mut h, 200 << 30); // stream C takes the least recently used segment: B's
        assert!(read(&mut h, 2 * len) < 1_000_000, "A kept");
        assert!(read(&mut h, (100 << 30) + len) > 1_000_000, "B evicted");
    }

    #[test]
    fn ncq_picks_the_shortest_access_and_ages_the_oldest() {
        let mut h = hdd();
        let t0 = h.service_ns(IoDir::Read, 0, PAGE, 0);
        let cmd = |rid, offset, arrival_ns| DriveCmd { rid, dir: IoDir::Read, offset, len: PAGE, arrival_ns };
        // The head is at the outer edge: a command at the far edge arrived first, one nearby second.
        let cmds = [cmd(0, 900 << 30, 0), cmd(1, 10 << 20, 0)];
        assert_eq!(h.pick(&cmds, t0), 1, "the near command first");
        // The far command has waited longer than ncq_max_wait: it goes first.
        assert_eq!(h.pick(&cmds, t0 + 2_400_000_000), 0);
        // Without reordering, arrival order.
        let fifo = Hdd::new(HddParams { ncq_reorder: false, ..HddParams::default() }).unwrap();
        assert_eq!(fifo.pick(&cmds, t0), 0);
        // A cache hit beats any positioning: the read-ahead after the first read.
        let cmds = [cmd(0, 10 << 20, 0), cmd(1, PAGE, 0)];
        assert_eq!(h.pick(&cmds, t0), 1);
    }

    #[test]
    fn read_ahead_cache_serves_a_follow_on_read_without_positioning() {
        let mut h = hdd();
        let t0 = h.service_ns(IoDir::Read, 1 << 30, 32 << 10, 0);
        // 5 ms later the drive has read ahead about 550 KB: the next 32 KiB is a cache hit.
        let hit = h.service_ns(IoDir::Read, (1 << 30) + (32 << 10), 32 << 10, t0 + 5_000_000);
        assert_eq!(hit, 200_000 + xfer_ns(32 << 10, 300_000_000));
        // A write elsewhere moves the head; the stream is gone.
        let mut h = hdd();
        let t0 = h.service_ns(IoDir::Read, 1 << 30, 32 << 10, 0);
        let w = h.service_ns(IoDir::Write, 1 << 20, PAGE, t0);
        let miss = h.service_ns(IoDir::Read, (1 << 30) + (32 << 10), 32 << 10, t0 + w);
        assert!(miss > 1_000_000, "{miss}");
    }

    #[test]
    fn random_writes_pay_the_settle_time_and_sequential_writes_stream() {
        let total = |dir| {
            let mut h = hdd();
            let mut seed = 11;
            let mut now = 0;
            for _ in 0..2_000 {
                let off = lcg(&mut seed) % (1 << 38) / PAGE * PAGE;
                now += h.service_ns(dir, off, PAGE, now);
            }
            now
        };
        let (tr, tw) = (total(IoDir::Read), total(IoDir::Write));
        // 0.5 ms more per write, give or take the rotational noise.
        assert!(tw > tr + 2_000 * 300_000, "writes {tw} vs reads {tr}");
        let mut h = hdd();
        let first = h.service_ns(IoDir::Write, 0, 64 << 10, 0);
        let next = h.service_ns(IoDir::Write, 64 << 10, 64 << 10, first + 1_000_000);
        assert_eq!(next, 200_000 + xfer_ns(64 << 10, 110_592_000));
    }

    #[test]
    fn same_requests_same_times() {
        let run = || {
            let mut h = hdd();
            let mut seed = 5;
            let mut now = 0;
            let mut v = Vec::new();
            for i in 0..500 {
                let dir = if i % 3 == 0 { IoDir::Write } else { IoDir::Read };
                let off = lcg(&mut seed) % (1 << 36) / PAGE * PAGE;
                let s = h.service_ns(dir, off, PAGE * (1 + i % 8), now);
                now += s + lcg(&mut seed) % 3_000_000;
                v.push(s);
            }
            v
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn queued_commands_run_one_after_another_in_arrival_order() {
        let mut h = hdd();
        // Two 4 KiB reads far apart issued at the same instant: the second one's time
        // includes the first one's service (NCQ tags, no reordering in the drive).
        let a = h.service_ns(IoDir::Read, 100 << 30, PAGE, 0);
        let b = h.service_ns(IoDir::Read, 500 << 30, PAGE, 0);
        assert!(b > a, "second command waits for the first: {a} vs {b}");
        let mut alone = hdd();
        alone.service_ns(IoDir::Read, 100 << 30, PAGE, 0);
        let b_alone = alone.service_ns(IoDir::Read, 500 << 30, PAGE, a);
        assert_eq!(b, a + b_alone, "queued = wait for the drive + own service");
    }

    #[test]
    fn write_cache_reports_writes_from_the_buffer_and_reads_wait_for_the_destage() {
        let reported = xfer_ns(PAGE, 300_000_000) + 200_000;
        let run = |write_cache| {
            let mut h = Hdd::new(HddParams { write_cache, ..HddParams::default() }).unwrap();
            let (mut seed, mut now, mut writes) = (13, 0, Vec::new());
            for _ in 0..20 {
                let off = lcg(&mut seed) % (1 << 38) / PAGE * PAGE;
                let s = h.service_ns(IoDir::Write, off, PAGE, now);
                writes.push(s);
                now += s;
            }
            let read = h.service_ns(IoDir::Read, 1 << 39, PAGE, now);
            (writes, now, read)
        };
        let (writes, t_cached, read) = run(true);
        assert!(writes.iter().all(|&s| s == reported), "{writes:?}");
        let (writes, t_through, read_alone) = run(false);
        assert!(writes.iter().all(|&s| s > 700_000), "{writes:?}");
        assert!(t_through > 10 * t_cached);
        // The head still does the twenty positioned writes, in the same order: the read
        // ends about when it ends behind write-through writes, not a read's time after the
        // last report.
        let (cached_end, through_end) = (t_cached + read, t_through + read_alone);
        assert!(cached_end.abs_diff(through_end) < through_end / 10, "{cached_end} vs {through_end}");
    }

    #[test]
    fn a_full_write_cache_makes_the_next_write_wait_for_the_destage() {
        // 64 KiB of buffer holds 16 random 4 KiB writes; the 17th waits for the oldest.
        let p = HddParams { write_cache: true, cache_size: 64 << 10, cache_segments: 1, ..HddParams::default() };
        let mut h = Hdd::new(p).unwrap();
        let (mut seed, mut now) = (17, 0);
        let mut took = Vec::new();
        for _ in 0..17 {
            let off = lcg(&mut seed) % (1 << 38) / PAGE * PAGE;
            let s = h.service_ns(IoDir::Write, off, PAGE, now);
            took.push(s);
            now += s;
        }
        let fast = 200_000 + xfer_ns(PAGE, 300_000_000);
        assert!(took[..16].iter().all(|&s| s == fast), "{took:?}");
        assert!(took[16] > fast + 500_000, "{took:?}");
    }

    #[test]
    fn with_write_cache_the_drive_takes_a_queued_write_before_a_far_read() {
        let h = Hdd::new(HddParams { write_cache: true, ..HddParams::default() }).unwrap();
        let cmds = [
            DriveCmd { rid: 0, dir: IoDir::Read, offset: 10 << 20, len: PAGE, arrival_ns: 0 },
            DriveCmd { rid: 1, dir: IoDir::Write, offset: 900 << 30, len: PAGE, arrival_ns: 0 },
        ];
        assert_eq!(h.pick(&cmds, 0), 1, "the far write only needs the buffer");
        assert_eq!(hdd().pick(&cmds, 0), 0, "write-through: the nearer read first");
    }

    #[test]
    fn read_ahead_data_survives_an_interleaved_write() {
        // Read 32 KiB, let the drive read ahead for 5 ms, write far away, then read on
        // where the first read ended: served from the cache segment at interface speed.
        let mut h = hdd();
        let t0 = h.service_ns(IoDir::Read, 0, 8 * PAGE, 0);
        let t1 = t0 + 5_000_000;
        let w = h.service_ns(IoDir::Write, 200 << 30, 32 * PAGE, t1);
        let t2 = t1 + w;
        let r = h.service_ns(IoDir::Read, 8 * PAGE, 8 * PAGE, t2);
        let cmd = HddParams::default().command_overhead;
        assert!(r < cmd + 200_000, "cached follow-on read took {r} ns");
        // Beyond what was read ahead before the write, the head has to come back.
        let far = h.service_ns(IoDir::Read, 64 << 20, 8 * PAGE, t2 + r);
        assert!(far > cmd + 1_000_000, "uncached read took only {far} ns");
    }
}
