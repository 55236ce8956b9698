//! Measuring the block device that holds a directory (where swap files go), to calibrate
//! the simulator's model of it: its `/sys/block/<dev>/queue/` settings, and O_DIRECT reads
//! and writes of one size at a time, at queue depth 1 and with several threads.
//!
//! ```text
//!   probe file (fresh data, fsync)  ──►  O_DIRECT pread/pwrite, page-aligned buffer
//!        4 KiB random reads, QD 1 / 4 / 16 (threads)     → latency, IOPS under load
//!        4 KiB .. 1 MiB random reads and writes, QD 1    → latency per size → bandwidth
//!        the 4 KiB QD 1 reads also on another CPU, in turns → the wakeup IPI's cost
//! ```
//!
//! A disk with one interrupt CPU (virtio-blk: [`crate::cpu::disk_irq_cpu`]) completes every
//! request there; a reader on another CPU is woken by an IPI, which on a VM wakes a halted
//! vCPU and costs tens of microseconds. The measurements are made on the interrupt CPU, so
//! that they are the device's, and the 4 KiB queue-depth-1 reads alternate, 25 at a time,
//! with as many from another CPU: the difference of the medians is that wakeup (the model's
//! `cpu.remote_wakeup_ns`). Alternating matters: the disk drifts between measurements made
//! a minute apart by more than the difference.
//!
//! O_DIRECT bypasses the guest's page cache, so each call is one request to the device
//! (what the swap layer issues). What backs the device (for a virtual disk, the
//! hypervisor's own cache) is part of what is measured: the swap file sees the same. The
//! probe file is written with real data first: reading never-written (unwritten-extent)
//! blocks would return zeros without any I/O. It lives in its own directory, removed on
//! every exit path through [`crate::cleanup`].

use crate::cleanup::{Cleanup, Undo};
use crate::sysfs;
use crate::Error;
use serde::Serialize;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The device and what was measured on it.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceProbe {
    /// `major:minor` of the whole disk holding the directory.
    pub device: Option<String>,
    /// `/sys/block/<dev>/queue/*` values that the model has keys for, as read.
    pub queue: std::collections::BTreeMap<String, String>,
    pub file_bytes: u64,
    /// The CPU taking the disk's completion interrupts, if one does; the measurements
    /// (other than the remote one) were made on it.
    #[serde(default)]
    pub irq_cpu: Option<u32>,
    pub results: Vec<ProbeResult>,
}

/// One measurement: `count` requests of `block` bytes at random aligned offsets.
#[derive(Clone, Debug, Serialize)]
pub struct ProbeResult {
    pub write: bool,
    pub block: u64,
    /// Threads issuing requests at once (the queue depth).
    pub depth: u32,
    pub count: u64,
    pub median_ns: u64,
    pub p10_ns: u64,
    pub p90_ns: u64,
    /// Requests per second over the whole measurement (all threads).
    pub iops: f64,
    /// Made on a CPU other than the disk's interrupt CPU (the completion wakes the reader
    /// through an IPI).
    #[serde(default)]
    pub remote: bool,
}

impl DeviceProbe {
    /// The measurement with these parameters, if it was made (on the interrupt CPU, when
    /// the disk has one).
    pub fn get(&self, write: bool, block: u64, depth: u32) -> Option<&ProbeResult> {
        self.results.iter().find(|r| r.write == write && r.block == block && r.depth == depth && !r.remote)
    }

    /// How much longer a 4 KiB read at queue depth 1 takes from a CPU other than the disk's
    /// interrupt CPU, ns (medians; 0 when it is not longer): the wakeup IPI.
    pub fn remote_wakeup_ns(&self) -> Option<u64> {
        let remote = self.results.iter().find(|r| r.remote && !r.write && r.block == 4096 && r.depth == 1)?;
        Some(remote.median_ns.saturating_sub(self.get(false, 4096, 1)?.median_ns))
    }

    /// Bandwidth of one direction, bytes per second, from the QD1 latencies of the smallest
    /// and the largest request: the extra bytes over the extra time (what the flash model's
    /// transfer stage is).
    pub fn bandwidth(&self, write: bool) -> Option<f64> {
        let mut qd1: Vec<&ProbeResult> = self.results.iter().filter(|r| r.write == write && r.depth == 1).collect();
        qd1.sort_by_key(|r| r.block);
        let (a, b) = (qd1.first()?, qd1.last()?);
        let dt = b.median_ns.checked_sub(a.median_ns).filter(|&d| d > 0)? as f64 / 1e9;
        Some((b.block - a.block) as f64 / dt)
    }
}

/// Block sizes measured at queue depth 1.
pub const BLOCKS: [u64; 4] = [4096, 32 << 10, 128 << 10, 1 << 20];
/// Queue depths (threads) of the 4 KiB random-read measurement.
pub const DEPTHS: [u32; 3] = [1, 4, 16];

/// Probes the device holding `dir` with a `file_bytes` file (at least 64 MiB; more spreads
/// the random offsets) and `requests` requests per measurement.
pub fn probe_device(dir: &Path, file_bytes: u64, requests: u64) -> Result<DeviceProbe, Error> {
    if file_bytes < 64 << 20 || requests == 0 {
        return Err(Error("probe: the file needs at least 64 MiB and at least one request".into()));
    }
    let work = ProbeDir::create(dir)?;
    let path = work.path.join("probe.bin");
    write_probe_file(&path, file_bytes)?;
    let device = {
        use std::os::unix::fs::MetadataExt;
        let dev = std::fs::metadata(&path).map_err(|e| Error(format!("{}: {e}", path.display())))?.dev();
        let (maj, min) = crate::tunables::dev_major_minor(dev);
        disk_dir(maj, min)
    };
    let irq_cpu = device.as_ref().and_then(|(_, d)| crate::cpu::disk_irq_cpu(d, Path::new("/proc/irq")));
    // Another CPU that can run the reader, for the remote measurement.
    let other_cpu = irq_cpu.and_then(|irq| online_cpus().into_iter().find(|&c| c != irq));
    let mut queue = std::collections::BTreeMap::new();
    if let Some((_, d)) = &device {
        for k in ["rotational", "scheduler", "max_sectors_kb", "read_ahead_kb", "nr_requests", "logical_block_size"] {
            if let Some(v) = sysfs::read_opt(&d.join("queue").join(k)) {
                let v = if k == "scheduler" { sysfs::selected(&v).to_string() } else { v };
                queue.insert(k.to_string(), v);
            }
        }
    }
    let on_irq = irq_cpu.map_or(Cpus::Any, Cpus::One);
    let mut results = Vec::new();
    for &depth in &DEPTHS {
        // The 4 KiB read at depth 1 on both sides, when there are two.
        let cpus = match (depth, irq_cpu, other_cpu) {
            (1, Some(irq), Some(other)) => Cpus::Alternate { irq, other },
            _ => on_irq,
        };
        results.extend(measure(&path, file_bytes, false, 4096, depth, requests, cpus)?);
    }
    for write in [false, true] {
        for &block in &BLOCKS {
            if !write && block == 4096 {
                continue; // measured above at depth 1
            }
            let n = (requests * 4096 / block).clamp(requests.min(50), requests);
            results.extend(measure(&path, file_bytes, write, block, 1, n, on_irq)?);
        }
    }
    work.remove()?;
    Ok(DeviceProbe { device: device.map(|(id, _)| id), queue, file_bytes, irq_cpu, results })
}

/// The online CPUs (`/sys/devices/system/cpu/online`: "0-3,6"); empty if it cannot be read.
fn online_cpus() -> Vec<u32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    parse_cpu_list(&text)
}

/// A kernel CPU list ("0-3,6") as numbers; what does not parse is left out.
fn parse_cpu_list(text: &str) -> Vec<u32> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) {
            cpus.extend(a..=b.min(a.saturating_add(4095)));
        }
    }
    cpus
}

/// The whole disk's sysfs directory for `maj:min` (a partition's parent) and its id.
fn disk_dir(maj: u32, min: u32) -> Option<(String, PathBuf)> {
    let dir = Path::new(&format!("/sys/dev/block/{maj}:{min}")).canonicalize().ok()?;
    let disk = if dir.join("partition").exists() { dir.parent()?.to_path_buf() } else { dir };
    let id = sysfs::read_opt(&disk.join("dev")).unwrap_or_else(|| format!("{maj}:{min}"));
    Some((id, disk))
}

/// A page-aligned buffer for O_DIRECT.
struct Aligned {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl Aligned {
    fn new(len: usize, fill: u8) -> Aligned {
        let layout = std::alloc::Layout::from_size_align(len, 4096).expect("valid layout");
        // SAFETY: layout has a non-zero size (len >= 4096 in every caller).
        let ptr = unsafe { std::alloc::alloc(layout) };
        assert!(!ptr.is_null(), "out of memory allocating a {len}-byte probe buffer");
        // SAFETY: ptr points to len writable bytes just allocated.
        unsafe { std::ptr::write_bytes(ptr, fill, len) };
        Aligned { ptr, layout }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: ptr was allocated with this layout and is freed once.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

fn write_probe_file(path: &Path, bytes: u64) -> Result<(), Error> {
    use std::io::Write;
    let err = |e: std::io::Error| Error(format!("{}: {e}", path.display()));
    let mut f = std::fs::File::create(path).map_err(err)?;
    // Non-zero, varying data, so nothing on the way can elide it.
    let mut chunk = vec![0u8; 1 << 20];
    for (i, b) in chunk.iter_mut().enumerate() {
        *b = (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3] | 1;
    }
    for _ in 0..bytes >> 20 {
        f.write_all(&chunk).map_err(err)?;
    }
    f.sync_all().map_err(err)
}

/// Where the probe's threads run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cpus {
    /// Wherever the scheduler puts them.
    Any,
    /// Pinned to one CPU.
    One(u32),
    /// Switching between the disk's interrupt CPU and another every [`CHUNK`] requests, so
    /// that both sides see the disk in the same state (it drifts within minutes); the
    /// latencies are kept per side.
    Alternate { irq: u32, other: u32 },
}

/// Requests on one side before an [`Cpus::Alternate`] probe switches CPUs.
const CHUNK: u64 = 25;

/// `n` requests of `block` bytes at random block-aligned offsets, split over `depth` threads,
/// each with its own O_DIRECT descriptor, run where `cpus` says (`n` on each side for
/// [`Cpus::Alternate`], which gives the interrupt CPU's result, then the other's, `remote`).
/// A fixed xorshift sequence per thread: the offsets are the same every time.
fn measure(
    path: &Path,
    file_bytes: u64,
    write: bool,
    block: u64,
    depth: u32,
    n: u64,
    cpus: Cpus,
) -> Result<Vec<ProbeResult>, Error> {
    let sides = if matches!(cpus, Cpus::Alternate { .. }) { 2 } else { 1 };
    let per_thread = n.div_ceil(depth as u64) * sides;
    let slots = file_bytes / block;
    let start = Instant::now();
    let lat: Vec<Result<[Vec<u64>; 2], Error>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..depth)
            .map(|t| {
                s.spawn(move || -> Result<[Vec<u64>; 2], Error> {
                    let f = std::fs::OpenOptions::new()
                        .read(true)
                        .write(write)
                        .custom_flags(libc::O_DIRECT)
                        .open(path)
                        .map_err(|e| Error(format!("{}: O_DIRECT open: {e}", path.display())))?;
                    let buf = Aligned::new(block as usize, 0x5a);
                    let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ (t as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d);
                    let mut out = [Vec::with_capacity(per_thread as usize), Vec::new()];
                    if let Cpus::One(c) = cpus {
                        crate::cpu::set_affinity(0, &[c])?;
                    }
                    for i in 0..per_thread {
                        let side = ((i / CHUNK) % sides) as usize;
                        if let (Cpus::Alternate { irq, other }, 0) = (cpus, i % CHUNK) {
                            crate::cpu::set_affinity(0, &[if side == 0 { irq } else { other }])?;
                        }
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let off = (x % slots) * block;
                        let t0 = Instant::now();
                        // SAFETY: buf holds `block` bytes, page-aligned as O_DIRECT needs; the
                        // descriptor is open for the whole call.
                        let r = unsafe {
                            if write {
                                libc::pwrite(f.as_raw_fd(), buf.ptr.cast(), block as usize, off as libc::off_t)
                            } else {
                                libc::pread(f.as_raw_fd(), buf.ptr.cast(), block as usize, off as libc::off_t)
                            }
                        };
                        if r != block as isize {
                            return Err(Error(format!(
                                "{}: O_DIRECT {} of {block} bytes at {off}: {}",
                                path.display(),
                                if write { "write" } else { "read" },
                                crate::last_os_error()
                            )));
                        }
                        out[side].push(t0.elapsed().as_nanos() as u64);
                    }
                    Ok(out)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(Error("probe thread panicked".into())))).collect()
    });
    let elapsed = start.elapsed().as_secs_f64();
    let mut all = [Vec::new(), Vec::new()];
    for l in lat {
        let [a, b] = l?;
        all[0].extend(a);
        all[1].extend(b);
    }
    let mut results = Vec::new();
    for (side, mut lat) in all.into_iter().enumerate().take(sides as usize) {
        lat.sort_unstable();
        let q = |f: f64| lat[((lat.len() as f64 * f) as usize).min(lat.len() - 1)];
        results.push(ProbeResult {
            write,
            block,
            depth,
            count: lat.len() as u64,
            median_ns: q(0.5),
            p10_ns: q(0.1),
            p90_ns: q(0.9),
            // Each side had the disk for about half the time.
            iops: lat.len() as f64 * sides as f64 / elapsed,
            remote: side == 1,
        });
    }
    Ok(results)
}

/// The probe's scratch directory, removed with what is in it on every exit path.
struct ProbeDir {
    path: PathBuf,
    cleanup: Cleanup,
}

impl ProbeDir {
    fn create(parent: &Path) -> Result<ProbeDir, Error> {
        let path = parent.join(format!("pagesim-probe-{}", std::process::id()));
        std::fs::create_dir(&path).map_err(|e| Error(format!("mkdir {}: {e}", path.display())))?;
        let cleanup = Cleanup::undo(Undo::RemoveDir { path: path.clone() });
        Ok(ProbeDir { path, cleanup })
    }

    fn remove(self) -> Result<(), Error> {
        self.cleanup.run()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(write: bool, block: u64, median_ns: u64) -> ProbeResult {
        ProbeResult { write, block, depth: 1, count: 1, median_ns, p10_ns: 0, p90_ns: 0, iops: 0.0, remote: false }
    }

    #[test]
    fn bandwidth_is_extra_bytes_over_extra_time() {
        let p = DeviceProbe {
            device: None,
            queue: Default::default(),
            file_bytes: 0,
            irq_cpu: None,
            results: vec![r(false, 4096, 50_000), r(false, 1 << 20, 850_000), r(true, 4096, 90_000)],
        };
        let bw = p.bandwidth(false).unwrap();
        assert!((bw - (1_048_576.0 - 4096.0) / 800e-6).abs() < 1.0, "{bw}");
        assert_eq!(p.bandwidth(true), None, "one write size gives no bandwidth");
        assert_eq!(p.get(false, 4096, 1).map(|r| r.median_ns), Some(50_000));
        assert_eq!(p.remote_wakeup_ns(), None, "no remote measurement");
    }

    #[test]
    fn the_remote_wakeup_is_the_remote_read_less_the_local_one() {
        let remote = ProbeResult { remote: true, ..r(false, 4096, 115_000) };
        let p = DeviceProbe {
            device: None,
            queue: Default::default(),
            file_bytes: 0,
            irq_cpu: Some(1),
            results: vec![remote.clone(), r(false, 4096, 62_000)],
        };
        assert_eq!(p.get(false, 4096, 1).map(|r| r.median_ns), Some(62_000), "the interrupt CPU's, not the remote");
        assert_eq!(p.remote_wakeup_ns(), Some(53_000));
        let faster =
            DeviceProbe { results: vec![ProbeResult { median_ns: 60_000, ..remote }, r(false, 4096, 62_000)], ..p };
        assert_eq!(faster.remote_wakeup_ns(), Some(0), "never negative");
    }

    #[test]
    fn cpu_lists_parse_as_the_kernel_writes_them() {
        assert_eq!(parse_cpu_list("0-1\n"), [0, 1]);
        assert_eq!(parse_cpu_list("0,2-4,7"), [0, 2, 3, 4, 7]);
        assert_eq!(parse_cpu_list(""), Vec::<u32>::new());
        assert_eq!(parse_cpu_list("x,3"), [3]);
    }

    #[test]
    fn probes_the_device_of_a_directory_and_cleans_up() {
        // Runs anywhere O_DIRECT works (not on tmpfs); small, so it stays quick.
        let d = crate::testutil::temp_dir("probe");
        match probe_device(&d, 64 << 20, 40) {
            Ok(p) => {
                let remote = p.results.iter().filter(|r| r.remote).count();
                assert_eq!(remote, p.irq_cpu.map_or(0, |_| 1), "one remote read, when the disk has an interrupt CPU");
                assert_eq!(p.results.len() - remote, DEPTHS.len() + 2 * BLOCKS.len() - 1);
                assert_eq!(p.remote_wakeup_ns().is_some(), remote == 1);
                assert!(p.results.iter().all(|r| r.count > 0 && r.median_ns > 0 && r.p10_ns <= r.p90_ns));
                assert!(p.bandwidth(false).is_some_and(|b| b > 0.0));
            }
            Err(e) => assert!(e.0.contains("O_DIRECT"), "only a filesystem without O_DIRECT may refuse: {e}"),
        }
        let left: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
        assert!(left.is_empty(), "the probe directory is removed");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
