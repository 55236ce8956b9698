//! The resolved scenario: parsed and checked once, every default applied, every name looked
//! up.
//!
//! DOC: a scenario file says what it wants and leaves the rest to defaults and to the kernel
//! profile. `Config::resolve` turns the parsed [`ScenarioFile`] into the configuration a
//! run uses: defaults from [`super::defaults`], the profile's policies looked up in their
//! registries, memcg, region and file names turned into indices, swap areas and files placed
//! on their devices, the kernel's reserve, the managed pages and the watermarks computed.
//! Every check a run depends on is made here, so `pagesim check` (which loads a scenario and
//! stops) rejects all that `pagesim run` would, and `engine::Sim::new` builds the machine
//! without looking anything up again.
//!
//! A `Config` serializes as a scenario of the same schema with every default written out
//! (what `pagesim-host` hands its load generator): [`super::Scenario::from_json`] of that
//! JSON resolves to the same `Config`. What is derived from the keys (indices, extents,
//! watermarks, the device models) is not serialized. Device tables are kept as written: their
//! parameters' defaults live in their timing models (device/), which rebuild the same model
//! from the same table.

use super::{defaults, profile, CpuCosts, Profile, ScenarioFile};
use super::{AccessOp, Fadvise, Madvise, Pace, Pattern, RegionKind};
use crate::device::DeviceModel;
use crate::ids::DevId;
use crate::mm::{self, pte, Watermarks};
use crate::pagecache::readahead::FileRa;
use crate::reclaim::scan_balance::ScanBalance;
use crate::registry::Entry;
use crate::swap::readahead::SwapRa;
use crate::swap::zswap::ZswapParams;
use crate::Error;
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;

/// A scenario resolved for a run (see the module documentation).
#[derive(Clone, Debug, Serialize)]
pub struct Config {
    /// Name shown in reports: the file's `name`, else the file name without extension.
    pub name: String,
    pub seed: u64,
    pub machine: Machine,
    pub kernel: Kernel,
    pub vm: Vm,
    pub cpu: CpuCosts,
    /// Block devices, in name order; [`Swap::dev`], [`File::dev`] index this.
    #[serde(serialize_with = "by_name")]
    pub device: Vec<Device>,
    /// Swap areas, in swapon order.
    pub swap: Vec<Swap>,
    #[serde(serialize_with = "zswap_params")]
    pub zswap: ZswapParams,
    /// Memory cgroups in name order; memcg `i` of the run is `memcg[i - 1]` (0 is the root).
    #[serde(serialize_with = "by_name")]
    pub memcg: Vec<Memcg>,
    /// Files in name order.
    #[serde(serialize_with = "by_name")]
    pub file: Vec<File>,
    /// Regions in name order; a VMA's `region` indexes this.
    #[serde(serialize_with = "by_name")]
    pub region: Vec<Region>,
    pub task: Vec<Task>,
    /// Stop the run at this simulated time, ns; `None`: when every task has finished.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<u64>,
    /// Interval of the report's timeline, ns; `None`: no timeline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample_interval: Option<u64>,
    /// No completed operation for this long (ns) while the machine is busy stops the run as
    /// livelocked; `None`: never.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watchdog: Option<u64>,
    /// Where every file's data is: the shared files in name order, then each process's own
    /// copies of `per_task` files, by process and in the order its steps first read them
    /// (the engine's page caches, in this order).
    #[serde(skip)]
    pub extents: Vec<Extent>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// Installed RAM, bytes.
    pub ram: u64,
    pub cpus: u32,
    /// Sockets and SMT threads per core (`cpus` = sockets × cores × threads).
    pub sockets: u32,
    pub threads_per_core: u32,
    /// Memory the page allocator never gets, bytes: less than `ram`.
    pub kernel_reserved: u64,
    /// Pages the page allocator manages: (ram − kernel_reserved) / 4 KiB, at most what a
    /// packed PTE can address.
    #[serde(skip)]
    pub managed_pages: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Kernel {
    #[serde(serialize_with = "profile_name")]
    pub profile: &'static Profile,
    /// The swap-in readahead policy: the scenario's choice, else the profile's.
    #[serde(serialize_with = "entry_name")]
    pub swap_readahead: &'static Entry<SwapRa>,
    /// The get_scan_count variant.
    #[serde(serialize_with = "entry_name")]
    pub scan_balance: &'static Entry<ScanBalance>,
    /// The file readahead policy.
    #[serde(serialize_with = "entry_name")]
    pub file_readahead: &'static Entry<FileRa>,
    /// The flusher's inode order.
    #[serde(serialize_with = "entry_name")]
    pub writeback_order: &'static Entry<crate::writeback::WbOrder>,
    pub vma_ra_enabled: bool,
    /// 1 or 2.
    pub cgroup_version: u32,
    /// The files' page cache takes large folios.
    pub large_folios: bool,
    /// When the periodic memcg stats flush first runs, ns (`kernel.memcg_stats_flush_phase`);
    /// `None` where the profile's reclaim reads exact values (no flush to place).
    #[serde(rename = "memcg_stats_flush_phase", skip_serializing_if = "Option::is_none")]
    pub memcg_stats_flush_phase_ns: Option<u64>,
    /// Anon mTHP sizes turned on, in KiB, ascending (`kernel.anon_mthp`).
    #[serde(rename = "anon_mthp", serialize_with = "kib_sizes")]
    pub anon_mthp_kb: Vec<u64>,
}

impl Kernel {
    /// The anon mTHP orders turned on, as a bit mask (bit n: order n).
    pub fn anon_mthp_orders(&self) -> u16 {
        self.anon_mthp_kb.iter().fold(0, |m, kb| m | 1 << (kb / 4).trailing_zeros())
    }
}

/// Serializes sizes in KiB as the scenario spells them (`["16KB", "64KB"]`).
fn kib_sizes<S: serde::Serializer>(kb: &[u64], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(kb.iter().map(|k| format!("{k}KB")))
}

/// Reads `kernel.anon_mthp`: each size a power of two from 16 KiB (order 2: the kernel has
/// no order-1 anon folios) to 1 MiB (PMD-sized THP, mapped by one PMD entry, is not
/// modelled). Returns the sizes in KiB, ascending, without repeats.
fn resolve_anon_mthp(sizes: &[String], profile: &Profile) -> Result<Vec<u64>, String> {
    if !sizes.is_empty() && profile.anon_mthp.is_none() {
        return Err(format!("profile {} predates anonymous mTHP (6.8)", profile.name));
    }
    let mut kb = Vec::new();
    for s in sizes {
        let b = crate::units::parse_bytes(s).map_err(|e| format!("size {s:?}: {e}"))?;
        if b == 2 << 20 {
            return Err(format!(
                "{s}: PMD-sized THP is not modelled (pagesim maps large anon folios with PTEs); use 16KB to 1MB"
            ));
        }
        if b == 8 << 10 {
            return Err(format!("{s}: the kernel has no order-1 anon folios; the smallest anon mTHP size is 16KB"));
        }
        if !b.is_power_of_two() || !(16 << 10..=1 << 20).contains(&b) {
            return Err(format!("{s}: expected a power of two from 16KB to 1MB"));
        }
        kb.push(b >> 10);
    }
    kb.sort_unstable();
    kb.dedup();
    Ok(kb)
}

#[derive(Clone, Debug, Serialize)]
pub struct Vm {
    pub swappiness: u32,
    #[serde(rename = "page-cluster")]
    pub page_cluster: u32,
    /// kB: the scenario's, else the kernel's default for the managed pages.
    pub min_free_kbytes: u64,
    /// `None` on a profile without it (≤4.5: low and high are min + min/4 and min + min/2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watermark_scale_factor: Option<u64>,
    /// The zone's watermarks, pages; `high` leaves more than half the managed pages above it.
    #[serde(skip)]
    pub watermarks: Watermarks,
    /// The `vm.dirty_*` sysctls (serialized under their own keys).
    #[serde(flatten)]
    pub dirty: crate::writeback::DirtySysctls,
}

/// A block device: its timing model, and its table as the scenario wrote it.
#[derive(Clone, Debug, Serialize)]
pub struct Device {
    #[serde(skip)]
    pub name: String,
    #[serde(skip)]
    pub model: DeviceModel,
    #[serde(flatten)]
    pub table: toml::Table,
}

#[derive(Clone, Debug, Serialize)]
pub struct Swap {
    pub device: String,
    #[serde(skip)]
    pub dev: DevId,
    /// Bytes, header page included.
    pub size: u64,
    /// `swapon -p`.
    pub priority: i32,
    /// A swap file on the device's filesystem rather than a swap partition (no SWP_BLKDEV).
    pub file: bool,
    /// Where the area starts on its device, bytes: after the device's earlier areas.
    #[serde(skip)]
    pub offset: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Memcg {
    #[serde(skip)]
    pub name: String,
    /// memory.max, bytes; `None`: no limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<u64>,
    /// memory.max in pages (rounded up); `u64::MAX` without a limit.
    #[serde(skip)]
    pub max_pages: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The run's index of the parent (0: the root).
    #[serde(skip)]
    pub parent_index: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap_max: Option<u64>,
    /// memory.swap.max in pages; `u64::MAX` without a limit.
    #[serde(skip)]
    pub swap_max_pages: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swappiness: Option<u32>,
    /// memory.low, memory.min, memory.high and memory.soft_limit_in_bytes in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub low: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub high: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub soft_limit: Option<u64>,
    /// memory.use_hierarchy as resolved on cgroup v1; `None` on v2 (always hierarchical).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub use_hierarchy: Option<bool>,
}

impl Memcg {
    /// A byte setting in pages, rounded down (the kernel's `page_counter_memparse`), or
    /// `none` when absent.
    pub fn pages(bytes: Option<u64>, none: u64) -> u64 {
        bytes.map_or(none, |b| b / 4096)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct File {
    #[serde(skip)]
    pub name: String,
    pub device: String,
    #[serde(skip)]
    pub dev: DevId,
    /// Bytes at the start of the run, as written.
    pub size: u64,
    /// Bytes the extent holds (rounded up to pages): the size the file may grow to.
    pub max_size: u64,
    pub per_task: bool,
    /// The extent of a shared file; `None` for a per-task file (each reader has its own).
    #[serde(skip)]
    pub extent: Option<u32>,
    /// One of a replayed trace's files (made again from the trace, not written out).
    #[serde(skip)]
    pub from_trace: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct Region {
    #[serde(skip)]
    pub name: String,
    pub kind: RegionKind,
    /// Mapping size, bytes: a file region's defaults to its file's.
    pub size: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The extent a file region maps.
    #[serde(skip)]
    pub extent: Option<u32>,
    /// The file page a file region's first page maps: a replayed trace's mapping made at a
    /// file offset (a program's text and read-only data, mapped by the loader at their
    /// offsets in the ELF file); 0 for a scenario's regions, which map their file from its
    /// start.
    #[serde(skip)]
    pub pgoff: u64,
    /// A file region's hint; `None` for anon and shmem regions, which take none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub madvise: Option<Madvise>,
    /// A file region mapped writable.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub writable: bool,
    /// A file region that is a program's text (VM_EXEC).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub exec: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compress_ratio: Option<f64>,
    pub compress_sigma: f64,
    pub incompressible_percent: f64,
    pub zero_percent: f64,
    /// One of a replayed trace's mappings (made again from the trace, not written out).
    #[serde(skip)]
    pub from_trace: bool,
}

impl Config {
    /// The host memory a run of this configuration allocates, bytes: an estimate on the
    /// high side, from what `Sim::new` builds (per-frame arrays, page tables, page-cache and
    /// swap arrays, the threads). A run refuses to start when it exceeds the memory allowed
    /// (`RunOptions::max_memory`), instead of aborting the process half-way.
    pub fn memory_estimate(&self) -> u64 {
        // flags, LRU list, two links, owner, index, swap entry, memcg, free list: 29 bytes.
        const PER_FRAME: u64 = 32;
        // Swap map, swap-cache and shadow slots, page content, zswap's per-slot entry.
        const PER_SWAP_SLOT: u64 = 32;
        // A page-cache slot and its shadow.
        const PER_FILE_PAGE: u64 = 8;
        const PER_PTE: u64 = 4;
        const PER_TASK: u64 = 1024;
        const PER_STEP: u64 = 256;
        const FIXED: u64 = 16 << 20;
        let pages = |bytes: u64| bytes.div_ceil(4096);
        let frames = self.machine.managed_pages * PER_FRAME;
        let swap: u64 = self.swap.iter().map(|s| pages(s.size) * PER_SWAP_SLOT).sum();
        let files: u64 = self.extents.iter().map(|e| e.pages * PER_FILE_PAGE).sum();
        let shmem: u64 =
            self.region.iter().filter(|r| r.kind == RegionKind::Shmem).map(|r| pages(r.size) * PER_PTE).sum();
        let mut tasks = 0u64;
        for t in &self.task {
            let mut regions: Vec<u32> = t
                .step
                .iter()
                .filter_map(|s| match &s.target {
                    Target::Region { index, .. } => Some(*index),
                    Target::Control(c) if c.region.is_some() => Some(c.region_index),
                    Target::File(_) | Target::Control(_) => None,
                })
                .collect();
            regions.sort_unstable();
            regions.dedup();
            let ptes: u64 = regions.iter().map(|&r| pages(self.region[r as usize].size) * PER_PTE).sum();
            // Every run has its task slot; page tables exist only while a process lives.
            tasks += t.runs as u64 * (PER_TASK + t.step.len() as u64 * PER_STEP) + t.at_once as u64 * ptes;
        }
        FIXED + frames + swap + files + shmem + tasks
    }
}

impl Region {
    /// The region's page content model (what compression and zero-page detection see).
    pub fn content(&self) -> crate::mm::compress::RegionContent {
        crate::mm::compress::RegionContent {
            ratio: self.compress_ratio,
            sigma: self.compress_sigma,
            incompressible: self.incompressible_percent / 100.0,
            zero: self.zero_percent / 100.0,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Task {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memcg: Option<String>,
    /// The run's memcg index: 0 for the root, `1 + i` for `Config::memcg[i]`.
    #[serde(skip)]
    pub memcg_index: u16,
    /// 0 for a program other tasks start (which takes no count, start or stagger).
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub count: u32,
    /// ns.
    #[serde(skip_serializing_if = "is_zero")]
    pub start: u64,
    /// ns.
    #[serde(skip_serializing_if = "is_zero")]
    pub stagger: u64,
    /// The CPUs its processes may run on, sorted; `None`: any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<Vec<u32>>,
    pub step: Vec<Step>,
    /// Started by other tasks' spawn or fork steps, not at the start of the run (`count`,
    /// `start` and `stagger` do not apply).
    #[serde(skip)]
    pub spawned: bool,
    /// Processes that run this program over the run, at most: the `count` it starts with,
    /// and those that other programs start (spawn, fork) or turn into it (exec). Its
    /// per-task files have one copy per run, in the order the runs begin.
    #[serde(skip)]
    pub runs: u32,
    /// Processes that may run this program at the same time, at most.
    #[serde(skip)]
    pub at_once: u32,
    /// A captured program replayed instead of steps (`program = { trace = ... }`).
    #[serde(rename = "program", skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceProgram>,
}

/// A task that replays a trace: what the scan of the trace found, and where its files and
/// mappings are among the scenario's.
#[derive(Clone, Debug, Serialize)]
pub struct TraceProgram {
    /// The trace file, as found (relative to the scenario's directory, made absolute).
    pub trace: String,
    /// The device its files are on.
    pub device: String,
    pub ns_per_insn: f64,
    /// Another tool's trace format; `None`: pagesim's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// The fraction of another tool's trace's pages replayed (SHARDS); `None`: all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample: Option<f64>,
    /// `Config::file[file_base + i]` is the trace's file `i`.
    #[serde(skip)]
    pub file_base: u32,
    /// `Config::region[region_base + i]` is the trace's mapping `i`.
    #[serde(skip)]
    pub region_base: u32,
    /// The extent (the engine's page cache) of the trace's file `i`.
    #[serde(skip)]
    pub extents: std::sync::Arc<[u32]>,
    /// Pages cached at the start, charged to the root memcg (`program.cached`): the trace's
    /// file and its page ranges `[first, end)`, ascending and disjoint.
    #[serde(skip)]
    pub cached: Vec<(u32, Vec<(u64, u64)>)>,
    #[serde(skip)]
    pub info: std::sync::Arc<crate::replay::TraceInfo>,
}

/// One step of a workload program, with the keys its target and pattern take and no others.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    #[serde(flatten)]
    pub target: Target,
    #[serde(flatten)]
    pub pattern: PatternParams,
    #[serde(flatten)]
    pub amount: Amount,
    pub op: AccessOp,
    pub then_next: f64,
    /// ns.
    pub think: u64,
}

/// What a step works on.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum Target {
    /// Accesses to a mapping of `Config::region[index]`.
    Region {
        region: String,
        #[serde(skip)]
        index: u32,
    },
    /// read(2)/pread(2) calls on a file.
    File(FileStep),
    /// A process lifecycle call (spawn, fork, wait, exec, mmap, munmap, brk).
    Control(Control),
}

/// A lifecycle step's operands; which ones it has depends on its `op`.
#[derive(Clone, Debug, Serialize)]
pub struct Control {
    /// spawn, fork, exec: the program the new process runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// `Config::task[task_index]`.
    #[serde(skip)]
    pub task_index: u32,
    /// mmap, munmap, brk: the region.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// `Config::region[region_index]`.
    #[serde(skip)]
    pub region_index: u32,
    /// spawn, fork: processes started; 1 for the others.
    #[serde(skip_serializing_if = "is_one")]
    pub count: u32,
    /// spawn: the most children running at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jobs: Option<u32>,
    /// brk: the heap's size, bytes (median with a sigma).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub size_sigma: f64,
}

fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
}

fn is_one(v: &u32) -> bool {
    *v == 1
}

#[derive(Clone, Debug, Serialize)]
pub struct FileStep {
    pub file: String,
    /// `Config::file[index]`.
    #[serde(skip)]
    pub index: u32,
    /// Per process of the task (instance k of `count`), the extent it reads: the file's, or
    /// the process's own copy of a `per_task` file.
    #[serde(skip)]
    pub extents: Vec<u32>,
    /// Bytes per call, a multiple of 4 KiB.
    pub record: u64,
    #[serde(flatten)]
    pub rate: Option<Rate>,
    pub shared_fd: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fadvise: Option<Fadvise>,
    /// fsync(2) after every this many write calls; 0: never.
    #[serde(skip_serializing_if = "is_zero")]
    pub fsync_every: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

/// A file step's streaming rate and how it is held.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Rate {
    /// Bytes per second, > 0.
    pub rate: u64,
    pub pace: Pace,
}

/// A step's pattern with the parameters that pattern takes.
#[derive(Clone, Copy, Debug, Serialize)]
#[serde(tag = "pattern", rename_all = "lowercase")]
pub enum PatternParams {
    Seq,
    Reverse,
    Random,
    Stride {
        /// Pages (units).
        stride: u64,
    },
    Zipf {
        zipf_s: f64,
        /// Bytes per hot cluster; `None`: one unit.
        #[serde(skip_serializing_if = "Option::is_none")]
        cluster: Option<u64>,
    },
    Special {
        special_pct: u32,
        special_res: u32,
        special_iter: u32,
    },
}

impl PatternParams {
    pub fn kind(&self) -> Pattern {
        match self {
            PatternParams::Seq => Pattern::Seq,
            PatternParams::Reverse => Pattern::Reverse,
            PatternParams::Random => Pattern::Random,
            PatternParams::Stride { .. } => Pattern::Stride,
            PatternParams::Zipf { .. } => Pattern::Zipf,
            PatternParams::Special { .. } => Pattern::Special,
        }
    }
}

/// How many accesses (or read calls) a step makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Amount {
    /// Passes over the units: `passes × units` (every pattern).
    Passes(u64),
    /// This many (random, zipf and special only).
    Accesses(u64),
}

/// One file's data on a device: a shared file, or one process's copy of a per-task file.
#[derive(Clone, Debug)]
pub struct Extent {
    /// The page cache's name: the file's, `NAME.TID` for process TID's copy.
    pub name: String,
    /// `Config::file[file]`.
    pub file: u32,
    /// The process that owns a per-task copy (its index in the run's task order).
    pub owner: Option<u32>,
    pub dev: DevId,
    /// Bytes from the start of the device.
    pub offset: u64,
    /// Pages the extent holds (the file's `max_size`).
    pub pages: u64,
    /// The file's size at the start, pages (`i_size` rounded up).
    pub size_pages: u64,
}

impl Config {
    /// The region named `name`.
    pub fn region(&self, name: &str) -> Option<&Region> {
        self.region.binary_search_by(|r| r.name.as_str().cmp(name)).ok().map(|i| &self.region[i])
    }

    /// Pages of the region or file a step works on.
    pub fn step_pages(&self, st: &Step) -> u32 {
        match &st.target {
            Target::Region { index, .. } => self.region[*index as usize].size.div_ceil(4096) as u32,
            Target::Control(_) => 1,
            Target::File(f) => {
                let fc = &self.file[f.index as usize];
                let max = fc.max_size.div_ceil(4096);
                // An append fills the room past the start size; the other calls range over
                // all the space (reads past the end find nothing).
                if st.op == AccessOp::Append {
                    (max - fc.size.div_ceil(4096)) as u32
                } else {
                    max as u32
                }
            }
        }
    }

    /// Resolves a parsed scenario. `table` is the same scenario as a TOML table (overrides
    /// applied), for the device tables; errors name `origin`, the key and what was expected.
    pub(super) fn resolve(file: &ScenarioFile, table: &toml::Table, origin: &str) -> Result<Config, Error> {
        let err = |key: &str, msg: String| Error(format!("{origin}: {key}: {msg}"));
        let pname = file.kernel.profile.as_deref().unwrap_or(defaults::PROFILE);
        let profile = profile::find(pname).ok_or_else(|| {
            err("kernel.profile", format!("unknown profile \"{pname}\"; expected one of: {}", profile::names()))
        })?;
        let k = &file.kernel;
        let kernel = Kernel {
            profile,
            swap_readahead: policy(
                crate::swap::readahead::REGISTRY,
                "kernel.swap_readahead",
                k.swap_readahead.as_deref(),
                profile.swap_readahead,
            )
            .map_err(|(key, m)| err(key, m))?,
            scan_balance: policy(
                crate::reclaim::scan_balance::REGISTRY,
                "kernel.scan_balance",
                k.scan_balance.as_deref(),
                profile.scan_balance,
            )
            .map_err(|(key, m)| err(key, m))?,
            file_readahead: policy(
                crate::pagecache::readahead::REGISTRY,
                "kernel.file_readahead",
                k.file_readahead.as_deref(),
                profile.file_readahead,
            )
            .map_err(|(key, m)| err(key, m))?,
            writeback_order: policy(
                crate::writeback::order::REGISTRY,
                "kernel.writeback_order",
                k.writeback_order.as_deref(),
                profile.writeback.order,
            )
            .map_err(|(key, m)| err(key, m))?,
            vma_ra_enabled: k.vma_ra_enabled.unwrap_or(defaults::VMA_RA_ENABLED),
            cgroup_version: k.cgroup_version.unwrap_or(defaults::CGROUP_VERSION),
            large_folios: k.large_folios.unwrap_or(profile.pagecache_large_folios == Some(true)),
            memcg_stats_flush_phase_ns: (profile.memcg_stats_flush_ns > 0)
                .then(|| k.memcg_stats_flush_phase.unwrap_or(profile.memcg_stats_flush_ns / 2)),
            anon_mthp_kb: resolve_anon_mthp(k.anon_mthp.as_deref().unwrap_or_default(), profile)
                .map_err(|m| err("kernel.anon_mthp", m))?,
        };
        if k.memcg_stats_flush_phase.is_some() && profile.memcg_stats_flush_ns == 0 {
            return Err(err(
                "kernel.memcg_stats_flush_phase",
                format!("profile {}'s reclaim reads exact memcg statistics: there is no flush to place", profile.name),
            ));
        }
        if kernel.memcg_stats_flush_phase_ns.is_some_and(|p| p >= profile.memcg_stats_flush_ns) {
            return Err(err(
                "kernel.memcg_stats_flush_phase",
                format!(
                    "expected less than the flush period, {} ms, got {} ms",
                    profile.memcg_stats_flush_ns / 1_000_000,
                    kernel.memcg_stats_flush_phase_ns.unwrap_or(0) / 1_000_000
                ),
            ));
        }
        if kernel.large_folios && profile.pagecache_large_folios.is_none() {
            return Err(err(
                "kernel.large_folios",
                format!("profile {} predates large folios in the page cache (5.18)", profile.name),
            ));
        }
        if !(1..=2).contains(&kernel.cgroup_version) {
            return Err(err("kernel.cgroup_version", format!("expected 1 or 2, got {}", kernel.cgroup_version)));
        }

        let machine = resolve_machine(file).map_err(|(key, m)| err(key, m))?;
        let vm = resolve_vm(file, profile, machine.managed_pages).map_err(|(key, m)| err(key, m))?;
        if let Some(i) = file.sample_interval.filter(|&i| i < defaults::MIN_SAMPLE_INTERVAL_NS) {
            return Err(err(
                "sample_interval",
                format!("expected at least 1ms (the timeline's finest interval), got {i} ns"),
            ));
        }
        if file.cpu.timeslice_ns == 0 {
            return Err(err("cpu.timeslice_ns", "must be greater than 0".into()));
        }

        let device_tables = table.get("device").and_then(|v| v.as_table());
        let mut device = Vec::new();
        for (name, d) in &file.device {
            let key = format!("device.{name}");
            let model = DeviceModel::new(d).map_err(|e| err(&key, e))?;
            if let Some(c) = model.queue_params().irq_cpu.filter(|&c| c >= machine.cpus) {
                return Err(err(
                    &format!("{key}.irq_cpu"),
                    format!("expected a CPU number below machine.cpus = {}, got {c}", machine.cpus),
                ));
            }
            let table = device_tables
                .and_then(|t| t.get(name))
                .and_then(|v| v.as_table())
                .ok_or_else(|| err(&key, "expected a table".into()))?;
            device.push(Device { name: name.clone(), model, table: table.clone() });
        }
        // Bytes of each device taken so far: swap areas first, then files.
        let mut dev_used = vec![0u64; device.len()];
        let mut swap = Vec::new();
        for (i, s) in file.swap.iter().enumerate() {
            let key = format!("swap[{i}]");
            let Some(d) = index_of(&file.device, &s.device) else {
                return Err(err(&format!("{key}.device"), format!("no device named \"{}\"", s.device)));
            };
            if s.size < 2 * 4096 {
                return Err(err(&format!("{key}.size"), "a swap area needs at least 2 pages".into()));
            }
            if s.size / 4096 >= 1 << 27 {
                return Err(err(&format!("{key}.size"), "at most 512GiB per swap area".into()));
            }
            let cap = device[d].model.capacity_bytes();
            if dev_used[d] + s.size > cap {
                return Err(err(
                    &format!("{key}.size"),
                    format!(
                        "swap areas on \"{}\" need {} bytes but the device holds {cap}",
                        s.device,
                        dev_used[d] + s.size
                    ),
                ));
            }
            if s.file && device[d].model.swap_backend().is_some() {
                return Err(err(
                    &format!("{key}.file"),
                    format!("\"{}\" is a zram device: swap on it is the block device, not a file", s.device),
                ));
            }
            let priority = s.priority.unwrap_or(defaults::swap_priority(i));
            swap.push(Swap {
                device: s.device.clone(),
                dev: DevId(d as u32),
                size: s.size,
                priority,
                file: s.file,
                offset: dev_used[d],
            });
            dev_used[d] += s.size;
        }
        if file.swap.len() > 15 {
            return Err(err("swap", "at most 15 swap areas".into()));
        }

        let mut files = Vec::new();
        for (name, fc) in &file.file {
            let key = format!("file.{name}");
            let Some(d) = index_of(&file.device, &fc.device) else {
                return Err(err(&format!("{key}.device"), format!("no device named \"{}\"", fc.device)));
            };
            let max_size = fc.max_size.unwrap_or(fc.size);
            if max_size == 0 {
                return Err(err(
                    &format!("{key}.size"),
                    "must be greater than 0 (or give max_size for a file that appends fill)".into(),
                ));
            }
            if fc.size > max_size {
                return Err(err(
                    &format!("{key}.max_size"),
                    format!("{max_size} bytes is less than the file's size ({})", fc.size),
                ));
            }
            if max_size / 4096 >= 1 << 28 {
                let k = if fc.max_size.is_some() { "max_size" } else { "size" };
                return Err(err(&format!("{key}.{k}"), "at most 1TiB per file".into()));
            }
            files.push(File {
                name: name.clone(),
                device: fc.device.clone(),
                dev: DevId(d as u32),
                size: fc.size,
                max_size,
                per_task: fc.per_task,
                extent: None,
                from_trace: false,
            });
        }
        // The shared files, one extent each after the swap areas of their device.
        let mut placer = Placer { device: &device, used: dev_used, extents: Vec::new() };
        for (i, f) in files.iter_mut().enumerate() {
            if !f.per_task {
                let e =
                    placer.place(f, i as u32, f.name.clone(), None).map_err(|m| err(&format!("file.{}", f.name), m))?;
                f.extent = Some(e);
            }
        }

        // Tasks that replay a trace: its files go on the task's device, after the named ones.
        let mut traces: Vec<Option<TraceProgram>> = Vec::new();
        for (i, t) in file.task.iter().enumerate() {
            let Some(spec) = &t.program else {
                traces.push(None);
                continue;
            };
            let key = format!("task[{i}].program");
            let path = {
                let p = std::path::Path::new(&spec.trace);
                let beside = std::path::Path::new(origin).parent().map(|d| d.join(p));
                match beside {
                    Some(b) if p.is_relative() && b.exists() => b,
                    _ => p.to_path_buf(),
                }
            };
            let info = match spec.format.as_deref() {
                None | Some("pgt") if spec.sample.is_some() => {
                    return Err(err(
                        &format!("{key}.sample"),
                        "sampling applies to another tool's trace (give format); a capture replays whole".into(),
                    ))
                }
                None | Some("pgt") => crate::replay::TraceInfo::scan(&path.to_string_lossy()),
                Some(f) => {
                    crate::tracefile::format(f).map_err(|m| err(&format!("{key}.format"), m))?;
                    let sample = spec.sample.unwrap_or(1.0);
                    if !(sample > 0.0 && sample <= 1.0) {
                        return Err(err(
                            &format!("{key}.sample"),
                            format!("expected a fraction in (0, 1], got {sample}"),
                        ));
                    }
                    crate::replay::TraceInfo::scan_refs_shared(&path.to_string_lossy(), f, sample)
                }
            }
            .map_err(|e| err(&format!("{key}.trace"), e.to_string()))?;
            let d = match &spec.device {
                Some(name) => index_of(&file.device, name)
                    .ok_or_else(|| err(&format!("{key}.device"), format!("no device named \"{name}\"")))?,
                None => {
                    let names: Vec<&String> = file.device.keys().collect();
                    let no_swap: Vec<usize> =
                        (0..names.len()).filter(|&d| !file.swap.iter().any(|s| &s.device == names[d])).collect();
                    match (no_swap.as_slice(), names.len()) {
                        ([d], _) => *d,
                        (_, 1) => 0,
                        _ => return Err(err(
                            &format!("{key}.device"),
                            "give the device the trace's files are on: the scenario has no single device without swap"
                                .into(),
                        )),
                    }
                }
            };
            let file_base = files.len() as u32;
            let mut extents = Vec::new();
            for (path, size, max) in &info.files {
                let f = File {
                    name: format!("{}:{path}", t.name),
                    device: device[d].name.clone(),
                    dev: DevId(d as u32),
                    size: *size,
                    max_size: (*max).max(4096),
                    per_task: false,
                    extent: None,
                    from_trace: true,
                };
                let fi = files.len() as u32;
                files.push(f);
                let name = files[fi as usize].name.clone();
                let e =
                    placer.place(&files[fi as usize], fi, name, None).map_err(|m| err(&format!("{key}.trace"), m))?;
                files[fi as usize].extent = Some(e);
                extents.push(e);
            }
            let ns_per_insn = spec.ns_per_insn.or(info.header.ns_per_insn).unwrap_or(defaults::NS_PER_INSN);
            if !(ns_per_insn > 0.0 && ns_per_insn < 1e6) {
                return Err(err(&format!("{key}.ns_per_insn"), format!("expected a time above 0, got {ns_per_insn}")));
            }
            let mut cached = Vec::new();
            for (name, ranges) in &spec.cached {
                let key = format!("{key}.cached.\"{name}\"");
                let Some(f) = info.files.iter().position(|(p, _, _)| p == name) else {
                    return Err(err(&key, "not a file of the trace".into()));
                };
                let pages = info.files[f].2.max(info.files[f].1).div_ceil(4096);
                let mut r: Vec<(u64, u64)> = ranges.iter().map(|&[a, b]| (a, b)).collect();
                r.sort_unstable();
                for (i, &(a, b)) in r.iter().enumerate() {
                    if a >= b || b > pages {
                        return Err(err(
                            &key,
                            format!("expected ranges [first, end) of its {pages} pages, got [{a}, {b}]"),
                        ));
                    }
                    if i > 0 && a < r[i - 1].1 {
                        return Err(err(&key, format!("ranges overlap at page {a}")));
                    }
                }
                cached.push((f as u32, r));
            }
            let found = std::fs::canonicalize(&path).unwrap_or(path);
            traces.push(Some(TraceProgram {
                trace: found.to_string_lossy().into_owned(),
                device: device[d].name.clone(),
                format: spec.format.clone().filter(|f| f != "pgt"),
                sample: spec.sample.filter(|&x| x < 1.0),
                ns_per_insn,
                file_base,
                region_base: 0,
                extents: extents.into(),
                cached,
                info: std::sync::Arc::new(info),
            }));
        }

        let mut region = resolve_regions(file, &files).map_err(|(key, m)| err(&key, m))?;
        // A trace's mappings, after the named regions.
        for (t, tp) in file.task.iter().zip(traces.iter_mut()) {
            let Some(tp) = tp else { continue };
            tp.region_base = region.len() as u32;
            for (n, inst) in tp.info.instances.iter().enumerate() {
                let mapped = crate::replay::maps_file(inst).map(|f| &files[(tp.file_base + f) as usize]);
                let pages = inst.pages.max(1);
                region.push(Region {
                    name: format!("{}:{n}", t.name),
                    kind: if mapped.is_some() { RegionKind::File } else { RegionKind::Anon },
                    size: pages * 4096,
                    file: mapped.map(|f| f.name.clone()),
                    extent: mapped.and_then(|f| f.extent),
                    pgoff: match inst.backing {
                        crate::tracefile::pgt::Backing::File { pgoff, .. } if mapped.is_some() => pgoff,
                        _ => 0,
                    },
                    // Another tool's trace asks for pages, not for what is around them.
                    madvise: mapped.map(|_| match tp.info.format {
                        Some(_) => crate::scenario::Madvise::Random,
                        None => crate::scenario::Madvise::Normal,
                    }),
                    writable: mapped.is_some() && inst.writable,
                    exec: inst.exec,
                    compress_ratio: None,
                    compress_sigma: 0.0,
                    incompressible_percent: 0.0,
                    zero_percent: 0.0,
                    from_trace: true,
                });
            }
        }
        file.zswap.validate(profile).map_err(|(key, msg)| err(key, msg))?;

        if file.task.is_empty() {
            return Err(err("task", "a scenario needs at least one [[task]]".into()));
        }
        // Tasks are programs, named by the steps that start them.
        for (i, t) in file.task.iter().enumerate() {
            if let Some(j) = file.task[..i].iter().position(|p| p.name == t.name) {
                return Err(err(&format!("task[{i}].name"), format!("task[{j}] has the same name, \"{}\"", t.name)));
            }
        }
        // Programs other tasks start (spawn, fork, exec) do not start with the run.
        let started_by_others: Vec<bool> = file
            .task
            .iter()
            .map(|t| {
                file.task.iter().flat_map(|p| &p.step).any(|s| {
                    matches!(s.op, Some(AccessOp::Spawn | AccessOp::Fork | AccessOp::Exec))
                        && s.task.as_deref() == Some(t.name.as_str())
                })
            })
            .collect();
        let mut task = Vec::new();
        for (i, t) in file.task.iter().enumerate() {
            let key = format!("task[{i}]");
            let spawned = started_by_others[i];
            if spawned {
                let given =
                    table.get("task").and_then(|v| v.as_array()).and_then(|a| a.get(i)).and_then(|v| v.as_table());
                for k in ["count", "start", "stagger"] {
                    if given.is_some_and(|g| g.contains_key(k)) {
                        return Err(err(
                            &format!("{key}.{k}"),
                            format!(
                                "task \"{}\" is started by other tasks' spawn, fork or exec steps, which give its count and start",
                                t.name
                            ),
                        ));
                    }
                }
            }
            let memcg_index = match &t.memcg {
                None => 0,
                Some(m) => match index_of(&file.memcg, m) {
                    Some(i) => 1 + i as u16,
                    None => return Err(err(&format!("{key}.memcg"), format!("no memcg named \"{m}\""))),
                },
            };
            if !(1..=defaults::MAX_TASK_COUNT).contains(&t.count) {
                return Err(err(
                    &format!("{key}.count"),
                    format!("expected 1..={} processes, got {}", defaults::MAX_TASK_COUNT, t.count),
                ));
            }
            match (&t.program, t.step.is_empty()) {
                (None, true) => {
                    return Err(err(
                        &format!("{key}.step"),
                        "a task needs at least one [[task.step]], or a program = { trace = \"FILE\" }".into(),
                    ))
                }
                (Some(_), false) => {
                    return Err(err(
                        &format!("{key}.step"),
                        "a task that replays a trace (program) has no steps".into(),
                    ))
                }
                (Some(_), true) if spawned || t.count != 1 => {
                    return Err(err(
                        &format!("{key}.count"),
                        "a task that replays a trace runs once (its trace has every process it started)".into(),
                    ))
                }
                _ => {}
            }
            let cpus = match &t.cpus {
                None => None,
                Some(list) => {
                    let mut cpus = list.clone();
                    cpus.sort_unstable();
                    cpus.dedup();
                    let n = machine.cpus;
                    if cpus.is_empty() || cpus.len() != list.len() || cpus.last().is_some_and(|&c| c >= n) {
                        return Err(err(
                            &format!("{key}.cpus"),
                            format!("expected distinct CPU numbers 0..{}, at least one, got {list:?}", n - 1),
                        ));
                    }
                    Some(cpus)
                }
            };
            let step = t
                .step
                .iter()
                .enumerate()
                .map(|(j, s)| resolve_step(file, s, &format!("{key}.step[{j}]"), &files))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|(key, m)| err(&key, m))?;
            if let Some(j) = step.iter().position(|st| st.op == AccessOp::Pause) {
                if spawned || j + 1 != step.len() {
                    return Err(err(
                        &format!("{key}.step[{j}].op"),
                        "pause ends the program of a task the run starts with (a server that stays up): \
                         it must be its last step, and not in a program other tasks start"
                            .into(),
                    ));
                }
            }
            // A mapped file keeps its size: a fault past the end would be SIGBUS, which the
            // model does not have.
            for (j, st) in step.iter().enumerate() {
                let Target::File(fs) = &st.target else { continue };
                if !matches!(st.op, AccessOp::Append | AccessOp::Truncate) {
                    continue;
                }
                let fname = &files[fs.index as usize].name;
                if let Some(r) = region.iter().find(|r| r.file.as_deref() == Some(fname.as_str())) {
                    return Err(err(
                        &format!("{key}.step[{j}].op"),
                        format!(
                            "file \"{fname}\" is mapped by region \"{}\"; a mapped file cannot change size",
                            r.name
                        ),
                    ));
                }
            }
            task.push(Task {
                name: t.name.clone(),
                memcg: t.memcg.clone(),
                memcg_index,
                count: t.count,
                start: t.start,
                stagger: t.stagger,
                cpus,
                step,
                spawned,
                runs: 0,
                at_once: 0,
                trace: traces[i].clone(),
            });
        }
        program_runs(&mut task).map_err(|(key, m)| err(&key, m))?;
        // A trace's threads and processes are all its task's runs.
        for t in &mut task {
            if let Some(tp) = &t.trace {
                t.runs = tp.info.tasks.len() as u32;
                t.at_once = t.runs;
            }
        }
        // Each run's own copies of per-task files: the processes the run starts with, in
        // the engine's process order, then the later runs of each program in task order.
        let mut pid = 0u32;
        for later in [false, true] {
            for t in &mut task {
                let runs = if later { t.count..t.runs } else { 0..t.count };
                for _ in runs {
                    let mut own: BTreeMap<u32, u32> = BTreeMap::new();
                    for st in &mut t.step {
                        let Target::File(fs) = &mut st.target else { continue };
                        let f = &files[fs.index as usize];
                        let e = match (f.extent, own.get(&fs.index)) {
                            (Some(e), _) | (None, Some(&e)) => e,
                            (None, None) => {
                                let e = placer
                                    .place(f, fs.index, format!("{}.{pid}", f.name), Some(pid))
                                    .map_err(|m| err(&format!("file.{}", f.name), m))?;
                                own.insert(fs.index, e);
                                e
                            }
                        };
                        fs.extents.push(e);
                    }
                    pid += 1;
                }
            }
        }

        let memcg = resolve_memcgs(file, kernel.cgroup_version, kernel.profile).map_err(|(key, m)| err(&key, m))?;
        let extents = placer.extents;
        let name = file.name.clone().unwrap_or_else(|| {
            std::path::Path::new(origin).file_stem().map_or(origin.to_string(), |s| s.to_string_lossy().into_owned())
        });
        Ok(Config {
            name,
            seed: file.seed,
            machine,
            kernel,
            vm,
            cpu: file.cpu.clone(),
            device,
            swap,
            zswap: ZswapParams {
                ever_enabled: Some(file.zswap.enabled || file.zswap.ever_enabled.unwrap_or(false)),
                ..file.zswap.clone()
            },
            memcg,
            file: files,
            region,
            task,
            time_limit: file.time_limit,
            sample_interval: file.sample_interval,
            watchdog: match file.watchdog {
                None => Some(defaults::WATCHDOG_NS),
                Some(0) => None,
                w => w,
            },
            extents,
        })
    }
}

/// The memory cgroups as a tree: each names its parent (default the root), the tree has no
/// cycle; swappiness is a v1 file and swap.max a v2 one. A child's limit may exceed its
/// parent's (no kernel version refuses it: the parent's limit applies to both). Errors are
/// (key, message).
fn resolve_memcgs(file: &ScenarioFile, cgroup_version: u32, profile: &Profile) -> Result<Vec<Memcg>, (String, String)> {
    let names: Vec<&String> = file.memcg.keys().collect();
    let mut out = Vec::new();
    for (name, m) in &file.memcg {
        let key = format!("memcg.{name}");
        let parent_index = match &m.parent {
            None => 0,
            Some(p) => match names.iter().position(|n| *n == p) {
                Some(i) => 1 + i as u16,
                None => return Err((format!("{key}.parent"), format!("no memcg named \"{p}\""))),
            },
        };
        if let Some(s) = m.swappiness {
            if cgroup_version != 1 {
                return Err((
                    format!("{key}.swappiness"),
                    "memory.swappiness is a cgroup v1 file: give kernel.cgroup_version = 1, or use vm.swappiness"
                        .into(),
                ));
            }
            if s > 100 {
                return Err((format!("{key}.swappiness"), format!("expected 0..100, got {s}")));
            }
        }
        if m.swap_max.is_some() && cgroup_version != 2 {
            return Err((
                format!("{key}.swap_max"),
                "memory.swap.max is a cgroup v2 file (v1 limits memory+swap instead, not modelled)".into(),
            ));
        }
        for (file_key, set) in [("low", m.low), ("min", m.min), ("high", m.high)] {
            if set.is_none() {
                continue;
            }
            if cgroup_version != 2 {
                return Err((
                    format!("{key}.{file_key}"),
                    format!("memory.{file_key} is a cgroup v2 file: give kernel.cgroup_version = 2"),
                ));
            }
            if !profile.memcg_v2_protection {
                return Err((
                    format!("{key}.{file_key}"),
                    format!("memory.{file_key} is not modelled on {} (cgroup v2's protection and throttling are modelled as of 5.4+)", profile.name),
                ));
            }
        }
        if m.soft_limit.is_some() && cgroup_version != 1 {
            return Err((
                format!("{key}.soft_limit"),
                "memory.soft_limit_in_bytes is a cgroup v1 file: give kernel.cgroup_version = 1, or use memory.low"
                    .into(),
            ));
        }
        if m.use_hierarchy.is_some() && cgroup_version != 1 {
            return Err((
                format!("{key}.use_hierarchy"),
                "memory.use_hierarchy is a cgroup v1 file (v2 is always hierarchical)".into(),
            ));
        }
        if m.use_hierarchy == Some(false) && profile.memcg_v1_always_hierarchical {
            return Err((
                format!("{key}.use_hierarchy"),
                format!("{} is always hierarchical (5.11 deprecated use_hierarchy = 0)", profile.name),
            ));
        }
        out.push(Memcg {
            use_hierarchy: None,
            low: m.low,
            min: m.min,
            high: m.high,
            soft_limit: m.soft_limit,
            name: name.clone(),
            max: m.max,
            max_pages: m.max.map_or(u64::MAX, |b| b.div_ceil(4096)),
            parent: m.parent.clone(),
            parent_index,
            swap_max: m.swap_max,
            swap_max_pages: m.swap_max.map_or(u64::MAX, |b| b / 4096),
            swappiness: m.swappiness,
        });
    }
    // use_hierarchy: v2 always; v1 as set, else the parent's (the root's: the profile's).
    // A v1 memcg cannot turn it off below a parent that has it (the kernel's EINVAL).
    if cgroup_version == 1 {
        let mut resolved: Vec<Option<bool>> = vec![None; out.len()];
        for _ in 0..=out.len() {
            for i in 0..out.len() {
                let p = out[i].parent_index as usize;
                let parent = if p == 0 { Some(profile.memcg_v1_always_hierarchical) } else { resolved[p - 1] };
                let Some(parent) = parent else { continue };
                let own = file.memcg[&out[i].name].use_hierarchy;
                if parent && own == Some(false) {
                    return Err((
                        format!("memcg.{}.use_hierarchy", out[i].name),
                        format!("its parent \"{}\" uses hierarchy, so it must too", out[p - 1].name),
                    ));
                }
                resolved[i] = Some(own.unwrap_or(parent) || parent);
            }
        }
        for (m, r) in out.iter_mut().zip(resolved) {
            // Unresolved only inside a cycle, which the check below reports.
            m.use_hierarchy = Some(r.unwrap_or(true));
        }
    }
    // Each memcg's ancestors end at the root: a walk up longer than the tree is a cycle.
    for (i, m) in out.iter().enumerate() {
        let mut cur = m.parent_index;
        let mut path = vec![m.name.as_str()];
        for _ in 0..=out.len() {
            if cur == 0 {
                break;
            }
            let p = &out[cur as usize - 1];
            path.push(p.name.as_str());
            if cur as usize - 1 == i {
                return Err((
                    format!("memcg.{}.parent", m.name),
                    format!("the memcgs' parents form a cycle: {}", path.join(" -> ")),
                ));
            }
            cur = p.parent_index;
        }
    }
    Ok(out)
}

/// The most processes a run may start over its course.
pub const MAX_PROCESSES: u64 = 1 << 20;

/// How many processes run each program (`Task::runs`): a task that starts with the run
/// has its `count` (a started-by-others task has `count` 0), and every spawn, fork or exec
/// step adds its count times its own program's runs. The programs must not start each
/// other in a cycle. Errors are (key, message).
fn program_runs(task: &mut [Task]) -> Result<(), (String, String)> {
    // (step, program started, processes it starts, of which at once).
    let edges = |p: usize| -> Vec<(usize, usize, u64, u64)> {
        task[p]
            .step
            .iter()
            .enumerate()
            .filter_map(|(j, s)| match (&s.target, s.op) {
                (Target::Control(c), AccessOp::Spawn | AccessOp::Fork | AccessOp::Exec) => {
                    let at_once = c.jobs.unwrap_or(c.count);
                    Some((j, c.task_index as usize, c.count as u64, at_once as u64))
                }
                _ => None,
            })
            .collect()
    };
    // Topological order by depth-first search; a task met again on the path is a cycle.
    let n = task.len();
    let mut state = vec![0u8; n]; // 0 new, 1 on the path, 2 done
    let mut order = Vec::with_capacity(n);
    fn visit(
        p: usize,
        edges: &dyn Fn(usize) -> Vec<(usize, usize, u64, u64)>,
        task: &[Task],
        state: &mut [u8],
        path: &mut Vec<usize>,
        order: &mut Vec<usize>,
    ) -> Result<(), (String, String)> {
        state[p] = 1;
        path.push(p);
        for (j, q, _, _) in edges(p) {
            if state[q] == 1 {
                let from = path.iter().position(|&x| x == q).unwrap_or(0);
                let names: Vec<&str> = path[from..].iter().chain([&q]).map(|&x| task[x].name.as_str()).collect();
                return Err((
                    format!("task[{p}].step[{j}].task"),
                    format!("programs start each other in a cycle: {}", names.join(" -> ")),
                ));
            }
            if state[q] == 0 {
                visit(q, edges, task, state, path, order)?;
            }
        }
        path.pop();
        state[p] = 2;
        order.push(p);
        Ok(())
    }
    for p in 0..n {
        if state[p] == 0 {
            visit(p, &edges, task, &mut state, &mut Vec::new(), &mut order)?;
        }
    }
    // `order` has every program after the programs it starts: walk it backwards.
    let mut runs: Vec<u64> = task.iter().map(|t| if t.spawned { 0 } else { t.count as u64 }).collect();
    let mut at_once = runs.clone();
    for &p in order.iter().rev() {
        for (_, q, count, now) in edges(p) {
            runs[q] = runs[q].saturating_add(count.saturating_mul(runs[p]));
            at_once[q] = at_once[q].saturating_add(now.saturating_mul(at_once[p]));
        }
    }
    let total: u64 = runs.iter().fold(0u64, |a, &r| a.saturating_add(r));
    if total > MAX_PROCESSES {
        return Err(("task".into(), format!("the programs start {total} processes; at most {MAX_PROCESSES}")));
    }
    for ((t, r), a) in task.iter_mut().zip(runs).zip(at_once) {
        t.runs = r as u32;
        t.at_once = a.min(r) as u32;
        if t.spawned {
            t.count = 0;
        }
    }
    Ok(())
}

/// Lays files out on their devices, each in one contiguous extent after what the device
/// already holds.
struct Placer<'a> {
    device: &'a [Device],
    used: Vec<u64>,
    extents: Vec<Extent>,
}

impl Placer<'_> {
    /// Places (a copy of) `f`; returns its extent, or why it does not fit.
    fn place(&mut self, f: &File, file: u32, name: String, owner: Option<u32>) -> Result<u32, String> {
        let d = f.dev.idx();
        let bytes = f.max_size.div_ceil(4096) * 4096;
        let cap = self.device[d].model.capacity_bytes();
        let need = self.used[d] + bytes;
        if need > cap {
            return Err(format!("device \"{}\" holds {cap} bytes; its swap areas and files need {need}", f.device));
        }
        let (offset, pages, size_pages) = (self.used[d], bytes / 4096, f.size.div_ceil(4096));
        self.extents.push(Extent { name, file, owner, dev: f.dev, offset, pages, size_pages });
        self.used[d] = need;
        Ok((self.extents.len() - 1) as u32)
    }
}

/// Position of `name` among the keys of `map` (name order).
fn index_of<V>(map: &BTreeMap<String, V>, name: &str) -> Option<usize> {
    map.keys().position(|k| k == name)
}

/// The policy of one kind: the scenario's `[kernel]` choice, else the profile's, from the
/// kind's registry. Errors are (key, message).
fn policy<T>(
    registry: &'static [Entry<T>],
    key: &'static str,
    given: Option<&str>,
    by_profile: &'static str,
) -> Result<&'static Entry<T>, (&'static str, String)> {
    let name = given.unwrap_or(by_profile);
    registry.iter().find(|e| e.name == name).ok_or_else(|| {
        let names: Vec<&str> = registry.iter().map(|e| e.name).collect();
        (key, format!("unknown policy \"{name}\"; expected one of: {}", names.join(", ")))
    })
}

/// RAM, CPUs, the kernel's reserve and the pages left to the page allocator.
fn resolve_machine(file: &ScenarioFile) -> Result<Machine, (&'static str, String)> {
    let m = &file.machine;
    if m.ram < 16 << 20 {
        return Err(("machine.ram", format!("expected at least 16MB, got {} bytes", m.ram)));
    }
    if m.ram > 1 << 40 {
        return Err(("machine.ram", "at most 1TiB is supported".into()));
    }
    if m.cpus == 0 || m.cpus > 1024 {
        return Err(("machine.cpus", format!("expected 1..1024, got {}", m.cpus)));
    }
    if m.sockets == 0 || !m.cpus.is_multiple_of(m.sockets) {
        return Err((
            "machine.sockets",
            format!("expected a count that divides machine.cpus = {}, got {}", m.cpus, m.sockets),
        ));
    }
    if m.threads_per_core == 0 || !(m.cpus / m.sockets).is_multiple_of(m.threads_per_core) {
        return Err((
            "machine.threads_per_core",
            format!(
                "expected a count that divides the {} CPUs of a socket, got {}",
                m.cpus / m.sockets.max(1),
                m.threads_per_core
            ),
        ));
    }
    let kernel_reserved = match m.kernel_reserved {
        Some(r) if r >= m.ram => {
            return Err((
                "machine.kernel_reserved",
                format!("{r} bytes leaves nothing of machine.ram ({} bytes) to the page allocator", m.ram),
            ))
        }
        Some(r) => r,
        None => {
            let r = defaults::kernel_reserved(m.ram);
            if r >= m.ram {
                return Err((
                    "machine.ram",
                    format!(
                        "{} bytes is less than the kernel's default reserve of ram/{} + {}MiB = {r} bytes; give more \
                         RAM or set machine.kernel_reserved",
                        m.ram,
                        defaults::KERNEL_RESERVED_RAM_DIVISOR,
                        defaults::KERNEL_RESERVED_FIXED_BYTES >> 20
                    ),
                ));
            }
            r
        }
    };
    let managed_pages = (m.ram - kernel_reserved) / 4096;
    if managed_pages > pte::FRAME as u64 - 1 {
        return Err(("machine.ram", "too large for this model".into()));
    }
    Ok(Machine {
        ram: m.ram,
        cpus: m.cpus,
        sockets: m.sockets,
        threads_per_core: m.threads_per_core,
        kernel_reserved,
        managed_pages,
    })
}

/// The /proc/sys/vm tunables and the watermarks they give on `managed` pages.
fn resolve_vm(file: &ScenarioFile, profile: &Profile, managed: u64) -> Result<Vm, (&'static str, String)> {
    let v = &file.vm;
    let swappiness = v.swappiness.unwrap_or(defaults::SWAPPINESS);
    if swappiness > profile.swappiness_max {
        return Err((
            "vm.swappiness",
            format!("expected 0..{} on {}, got {swappiness}", profile.swappiness_max, profile.name),
        ));
    }
    let page_cluster = v.page_cluster.unwrap_or(defaults::PAGE_CLUSTER);
    if page_cluster > 10 {
        return Err(("vm.page-cluster", format!("expected 0..10, got {page_cluster}")));
    }
    if let Some(w) = v.watermark_scale_factor {
        if !(1..=3000).contains(&w) {
            return Err(("vm.watermark_scale_factor", format!("expected 1..3000, got {w}")));
        }
    }
    let watermark_scale_factor =
        profile.watermark_scale.then(|| v.watermark_scale_factor.unwrap_or(defaults::WATERMARK_SCALE_FACTOR));
    let min_free_kbytes =
        v.min_free_kbytes.unwrap_or_else(|| mm::default_min_free_kbytes(managed, profile.min_free_kbytes_max));
    // kswapd reclaims up to the high watermark: above it must stay more than half the
    // memory. (min_free_kbytes beyond all of memory is rejected before the watermarks are
    // computed, so their arithmetic cannot overflow.)
    let watermarks = (min_free_kbytes <= managed * 4)
        .then(|| mm::watermarks(managed, min_free_kbytes, watermark_scale_factor))
        .filter(|w| w.high * 2 < managed);
    let Some(watermarks) = watermarks else {
        let msg = format!("{min_free_kbytes} kB leaves no room above the high watermark in {managed} pages");
        return Err(if v.min_free_kbytes.is_some() {
            ("vm.min_free_kbytes", msg)
        } else if let (Some(w), true) = (v.watermark_scale_factor, profile.watermark_scale) {
            ("vm.watermark_scale_factor", format!("{w} with vm.min_free_kbytes = {msg}"))
        } else {
            let key = if file.machine.kernel_reserved.is_some() { "machine.kernel_reserved" } else { "machine.ram" };
            (key, format!("too little memory left to the page allocator: the default vm.min_free_kbytes = {msg}"))
        });
    };
    let dirty = resolve_dirty(v, profile)?;
    Ok(Vm { swappiness, page_cluster, min_free_kbytes, watermark_scale_factor, watermarks, dirty })
}

/// The `vm.dirty_*` sysctls: each limit a ratio or bytes (not both), ratios 0..100,
/// `dirty_bytes` at least two pages (`dirty_bytes_min`), `dirty_background_bytes` at
/// least 1 (the sysctls' minimums).
fn resolve_dirty(v: &super::Vm, profile: &Profile) -> Result<crate::writeback::DirtySysctls, (&'static str, String)> {
    use crate::writeback::thresholds::{resolve_limit, CENTISEC_NS, DIRTY_BYTES_MIN};
    let rules = &profile.writeback;
    let dirty = resolve_limit(
        "vm.dirty_ratio",
        v.dirty_ratio,
        "vm.dirty_bytes",
        v.dirty_bytes,
        rules.dirty_ratio,
        DIRTY_BYTES_MIN,
    )?;
    let background = resolve_limit(
        "vm.dirty_background_ratio",
        v.dirty_background_ratio,
        "vm.dirty_background_bytes",
        v.dirty_background_bytes,
        rules.dirty_background_ratio,
        1,
    )?;
    let expire = v.dirty_expire_centisecs.unwrap_or(defaults::DIRTY_EXPIRE_CENTISECS);
    let interval = v.dirty_writeback_centisecs.unwrap_or(defaults::DIRTY_WRITEBACK_CENTISECS);
    Ok(crate::writeback::DirtySysctls {
        dirty,
        background,
        expire_ns: expire as u64 * CENTISEC_NS,
        writeback_interval_ns: interval as u64 * CENTISEC_NS,
    })
}

/// The regions, their sizes (a file region's defaults to its file's) and the extents file
/// regions map. Errors are (key, message).
fn resolve_regions(file: &ScenarioFile, files: &[File]) -> Result<Vec<Region>, (String, String)> {
    let mut out = Vec::new();
    for (name, r) in &file.region {
        let key = format!("region.{name}");
        let mut size = r.size;
        let mut extent = None;
        let mut madvise = None;
        match (r.kind, &r.file) {
            (RegionKind::File, None) => {
                return Err((format!("{key}.file"), "a file region names the [file.NAME] it maps".into()))
            }
            (RegionKind::File, Some(f)) => {
                let Some(fc) = files.iter().find(|c| c.name == *f) else {
                    return Err((format!("{key}.file"), format!("no file named \"{f}\"")));
                };
                let Some(e) = fc.extent else {
                    return Err((format!("{key}.file"), format!("file \"{f}\" is per_task and cannot be mapped")));
                };
                if fc.size == 0 {
                    return Err((format!("{key}.file"), format!("file \"{f}\" is empty at the start: nothing to map")));
                }
                if size == 0 {
                    size = fc.size;
                }
                if size > fc.size.next_multiple_of(4096) {
                    return Err((format!("{key}.size"), format!("maps {size} bytes but file \"{f}\" has {}", fc.size)));
                }
                if r.exec && r.writable {
                    return Err((
                        format!("{key}.writable"),
                        "a program's text (exec = true) is mapped read-only".into(),
                    ));
                }
                extent = Some(e);
                madvise = Some(r.madvise.unwrap_or(defaults::MADVISE));
            }
            (_, Some(_)) => return Err((format!("{key}.file"), "only a kind = \"file\" region maps a file".into())),
            (_, None) => {
                if r.madvise.is_some() {
                    return Err((format!("{key}.madvise"), "only file regions take a madvise hint".into()));
                }
                if r.writable {
                    return Err((
                        format!("{key}.writable"),
                        "only file regions take it (anon and shmem regions are writable)".into(),
                    ));
                }
                if r.exec {
                    return Err((format!("{key}.exec"), "only a file region is a program's text".into()));
                }
            }
        }
        out.push(Region {
            name: name.clone(),
            kind: r.kind,
            size,
            file: r.file.clone(),
            extent,
            pgoff: 0,
            madvise,
            writable: r.writable,
            exec: r.exec,
            compress_ratio: r.compress_ratio,
            compress_sigma: r.compress_sigma,
            incompressible_percent: r.incompressible_percent,
            zero_percent: r.zero_percent,
            from_trace: false,
        });
    }
    for r in &out {
        let key = format!("region.{}", r.name);
        if r.size == 0 {
            return Err((format!("{key}.size"), "must be greater than 0".into()));
        }
        if r.size / 4096 >= 1 << 28 {
            return Err((format!("{key}.size"), "at most 1TiB per region".into()));
        }
        if let Some(c) = r.compress_ratio {
            if !(c.is_finite() && (1.0..=4096.0).contains(&c)) {
                return Err((format!("{key}.compress_ratio"), format!("expected 1..4096, got {c}")));
            }
        }
        if !(r.compress_sigma.is_finite() && (0.0..=3.0).contains(&r.compress_sigma)) {
            return Err((format!("{key}.compress_sigma"), format!("expected 0..3, got {}", r.compress_sigma)));
        }
        for (k, v) in [("incompressible_percent", r.incompressible_percent), ("zero_percent", r.zero_percent)] {
            if !(v.is_finite() && (0.0..=100.0).contains(&v)) {
                return Err((format!("{key}.{k}"), format!("expected 0..100, got {v}")));
            }
        }
        if r.incompressible_percent + r.zero_percent > 100.0 {
            return Err((key, "incompressible_percent + zero_percent must not exceed 100".into()));
        }
    }
    Ok(out)
}

/// One step, checked and resolved; `key` is `task[i].step[j]`. A step names a region or a
/// file; file steps read; each key appears only on the steps and patterns that take it.
/// Errors are (key, message). The extents of a file step are filled in by the caller.
fn resolve_step(file: &ScenarioFile, s: &super::Step, key: &str, files: &[File]) -> Result<Step, (String, String)> {
    let e = |k: &str, m: &str| Err((format!("{key}{k}"), m.to_string()));
    if let Some(op) = s.op.filter(|op| op.is_lifecycle()) {
        return resolve_control(file, s, op, key);
    }
    for (k, given) in [
        ("task", s.task.is_some()),
        ("count", s.count.is_some()),
        ("jobs", s.jobs.is_some()),
        ("size", s.size.is_some()),
        ("size_sigma", s.size_sigma.is_some()),
    ] {
        if given {
            return e(&format!(".{k}"), "only the lifecycle steps (spawn, fork, exec, brk) take this key");
        }
    }
    if let Some(then_next) = s.then_next {
        if !(0.0..=1.0).contains(&then_next) {
            return e(".then_next", &format!("expected a probability in 0..1, got {then_next}"));
        }
    }
    if let Some(c) = s.cluster {
        if c == 0 || !c.is_multiple_of(4096) {
            return e(".cluster", &format!("expected a positive multiple of 4 KiB, got {c} bytes"));
        }
        if s.pattern != Some(Pattern::Zipf) {
            return e(".cluster", "only the zipf pattern takes a cluster size");
        }
    }
    let op;
    let target = match &s.file {
        None => {
            if s.region.is_empty() {
                return e("", "a step names a region (accesses to a mapping) or a file (read calls)");
            }
            if s.op.is_some_and(|op| !matches!(op, AccessOp::Read | AccessOp::Write | AccessOp::Msync)) {
                return e(
                    ".op",
                    "pread, pwrite and the whole-file calls are for file steps; a region step does read, write or msync",
                );
            }
            for (k, given) in [
                ("record", s.record.is_some()),
                ("rate", s.rate.is_some()),
                ("pace", s.pace.is_some()),
                ("shared_fd", s.shared_fd),
                ("fadvise", s.fadvise.is_some()),
                ("fsync_every", s.fsync_every.is_some()),
            ] {
                if given {
                    return e(&format!(".{k}"), "only file steps (file = \"NAME\") take this key");
                }
            }
            op = s.op.unwrap_or(defaults::OP);
            if let Some(r) = file.region.get(&s.region) {
                let shared_file = r.kind == RegionKind::File && r.writable;
                if r.kind == RegionKind::File && !r.writable && op == AccessOp::Write {
                    return e(
                        ".op",
                        &format!(
                            "region \"{}\" is mapped read-only: give op = \"read\", or writable = true on the region",
                            s.region
                        ),
                    );
                }
                if op == AccessOp::Msync && !shared_file {
                    return e(".op", "msync is for a writable file region (kind = \"file\", writable = true)");
                }
                if op == AccessOp::Msync {
                    for (k, given) in [
                        ("pattern", s.pattern.is_some_and(|p| p != Pattern::Seq)),
                        ("accesses", s.accesses.is_some()),
                        ("then_next", s.then_next.is_some_and(|t| t != 0.0)),
                    ] {
                        if given {
                            return e(&format!(".{k}"), "msync takes no such key; give passes for several calls");
                        }
                    }
                }
            }
            None
        }
        Some(name) => {
            if !s.region.is_empty() {
                return e("", "give region or file, not both");
            }
            let Some(index) = files.iter().position(|f| f.name == *name) else {
                let known: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
                return e(".file", &format!("no file named \"{name}\" (files: {})", known.join(", ")));
            };
            let fc = &files[index];
            op = match s.op {
                Some(op) => op,
                None => {
                    return e(".op", "a file step names its call: op = \"read\", \"pread\", \"write\" or \"pwrite\"")
                }
            };
            if op == AccessOp::Msync {
                return e(".op", "msync is for a region step on a writable file mapping; a file step calls fsync");
            }
            let whole_file = op.is_file_sync();
            if whole_file {
                for (k, given) in [
                    ("pattern", s.pattern.is_some_and(|p| p != Pattern::Seq)),
                    ("record", s.record.is_some()),
                    ("rate", s.rate.is_some()),
                    ("fadvise", s.fadvise.is_some()),
                    ("accesses", s.accesses.is_some()),
                    ("then_next", s.then_next.is_some_and(|t| t != 0.0)),
                ] {
                    if given {
                        return e(&format!(".{k}"), "a whole-file call (fsync, fdatasync, sync_file_range, truncate) takes no such key; give passes for several calls");
                    }
                }
            }
            let writes = matches!(op, AccessOp::Write | AccessOp::Pwrite | AccessOp::Append);
            if s.fsync_every.is_some() && !writes {
                return e(".fsync_every", "only a write step calls fsync after its writes");
            }
            if s.fsync_every == Some(0) {
                return e(".fsync_every", "must be at least 1 (leave it out for no fsync)");
            }
            let record = s.record.unwrap_or(defaults::RECORD_BYTES);
            if record == 0 || !record.is_multiple_of(4096) {
                return e(".record", &format!("expected a positive multiple of 4 KiB, got {record} bytes"));
            }
            if record > fc.max_size.next_multiple_of(4096) {
                return e(".record", &format!("{record} bytes is more than file \"{name}\" holds ({})", fc.max_size));
            }
            if op == AccessOp::Append {
                if fc.max_size.div_ceil(4096) - fc.size.div_ceil(4096) < record / 4096 {
                    return e(
                        ".op",
                        &format!(
                            "file \"{name}\" has no room to append a record: give it max_size above its size ({} bytes)",
                            fc.size
                        ),
                    );
                }
                if s.pattern.is_some_and(|p| p != Pattern::Seq) || s.then_next.is_some_and(|t| t != 0.0) {
                    return e(".pattern", "an append writes at the file's end: it takes no pattern");
                }
            }
            if s.rate == Some(0) {
                return e(".rate", "must be greater than 0 bytes per second");
            }
            if s.pace.is_some() && s.rate.is_none() {
                return e(".pace", "only a step with a rate is paced: give rate = \"100KB\" or drop pace");
            }
            Some(Target::File(FileStep {
                file: name.clone(),
                index: index as u32,
                extents: Vec::new(),
                record,
                rate: s.rate.map(|rate| Rate { rate, pace: s.pace.unwrap_or(defaults::PACE) }),
                shared_fd: s.shared_fd,
                fadvise: s.fadvise,
                fsync_every: s.fsync_every.unwrap_or(0),
            }))
        }
    };
    if let Some(z) = s.zipf_s {
        if !(z > 0.0 && z < 10.0) {
            return e(".zipf_s", &format!("expected 0 < s < 10, got {z}"));
        }
    }
    for (k, v, range) in [
        ("special_pct", s.special_pct, 1..=100),
        ("special_res", s.special_res, 0..=99),
        ("special_iter", s.special_iter, 1..=1000),
    ] {
        if let Some(v) = v {
            if s.pattern != Some(Pattern::Special) {
                return e(&format!(".{k}"), "only the special pattern takes this key");
            }
            if !range.contains(&v) {
                return e(&format!(".{k}"), &format!("expected {}..={}, got {v}", range.start(), range.end()));
            }
        }
    }
    if s.passes == Some(0) || s.accesses == Some(0) {
        return e("", "passes and accesses must be at least 1");
    }
    if s.passes.is_some() && s.accesses.is_some() {
        return e("", "give passes or accesses, not both");
    }
    let target = match target {
        Some(t) => t,
        None => {
            let Some(index) = index_of(&file.region, &s.region) else {
                let known: Vec<&str> = file.region.keys().map(|k| k.as_str()).collect();
                return e(".region", &format!("no region named \"{}\" (regions: {})", s.region, known.join(", ")));
            };
            if s.stride == Some(0) {
                return e(".stride", "must be at least 1");
            }
            Target::Region { region: s.region.clone(), index: index as u32 }
        }
    };
    let whole_file = op.is_file_sync();
    let pattern = match s.pattern {
        None if whole_file || op == AccessOp::Append => Pattern::Seq,
        None => return e(".pattern", "missing: give seq, reverse, random, zipf, stride or special"),
        Some(p) => p,
    };
    let kind = pattern;
    let pattern = match pattern {
        Pattern::Seq => PatternParams::Seq,
        Pattern::Reverse => PatternParams::Reverse,
        Pattern::Random => PatternParams::Random,
        Pattern::Stride => PatternParams::Stride { stride: s.stride.unwrap_or(defaults::STRIDE_PAGES) },
        Pattern::Zipf => PatternParams::Zipf { zipf_s: s.zipf_s.unwrap_or(defaults::ZIPF_S), cluster: s.cluster },
        Pattern::Special => PatternParams::Special {
            special_pct: s.special_pct.unwrap_or(defaults::SPECIAL_PCT),
            special_res: s.special_res.unwrap_or(defaults::SPECIAL_RES),
            special_iter: s.special_iter.unwrap_or(defaults::SPECIAL_ITER),
        },
    };
    // Sequential patterns make passes; the random ones a number of accesses, passes × units
    // unless given.
    // (An append makes `accesses` calls, or fills the file's room once per pass.)
    let amount = match (kind, s.accesses) {
        (Pattern::Random | Pattern::Zipf | Pattern::Special, Some(a)) => Amount::Accesses(a),
        (_, Some(a)) if op == AccessOp::Append => Amount::Accesses(a),
        (_, Some(_)) => {
            return e(".accesses", "a seq, reverse or stride pattern makes passes over the whole: give passes")
        }
        _ => Amount::Passes(s.passes.unwrap_or(defaults::PASSES)),
    };
    Ok(Step { target, pattern, amount, op, then_next: s.then_next.unwrap_or(defaults::THEN_NEXT), think: s.think })
}

/// A lifecycle step (spawn, fork, wait, exec, mmap, munmap, brk), checked: each takes its
/// own operands and none of the access keys. Errors are (key, message).
fn resolve_control(file: &ScenarioFile, s: &super::Step, op: AccessOp, key: &str) -> Result<Step, (String, String)> {
    let e = |k: &str, m: String| Err((format!("{key}{k}"), m));
    let name =
        |o: AccessOp| serde_json::to_value(o).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
    let opname = name(op);
    let takes_task = matches!(op, AccessOp::Spawn | AccessOp::Fork | AccessOp::Exec);
    let takes_region = matches!(op, AccessOp::Mmap | AccessOp::Munmap | AccessOp::Brk);
    for (k, given, ok) in [
        ("task", s.task.is_some(), takes_task),
        ("count", s.count.is_some(), matches!(op, AccessOp::Spawn | AccessOp::Fork)),
        ("jobs", s.jobs.is_some(), op == AccessOp::Spawn),
        ("region", !s.region.is_empty(), takes_region),
        ("size", s.size.is_some(), op == AccessOp::Brk),
        ("size_sigma", s.size_sigma.is_some(), op == AccessOp::Brk),
        ("file", s.file.is_some(), false),
        ("record", s.record.is_some(), false),
        ("rate", s.rate.is_some(), false),
        ("pace", s.pace.is_some(), false),
        ("cluster", s.cluster.is_some(), false),
        ("shared_fd", s.shared_fd, false),
        ("fadvise", s.fadvise.is_some(), false),
        ("fsync_every", s.fsync_every.is_some(), false),
        ("pattern", s.pattern.is_some_and(|p| p != Pattern::Seq), false),
        ("passes", s.passes.is_some_and(|p| p != 1), false),
        ("accesses", s.accesses.is_some(), false),
        ("then_next", s.then_next.is_some_and(|t| t != 0.0), false),
        ("stride", s.stride.is_some(), false),
        ("zipf_s", s.zipf_s.is_some(), false),
        ("special_pct", s.special_pct.is_some(), false),
        ("special_res", s.special_res.is_some(), false),
        ("special_iter", s.special_iter.is_some(), false),
        ("think", s.think != 0, false),
    ] {
        if given && !ok {
            return e(&format!(".{k}"), format!("a {opname} step takes no such key"));
        }
    }
    let mut c = Control {
        task: None,
        task_index: 0,
        region: None,
        region_index: 0,
        count: s.count.unwrap_or(1),
        jobs: None,
        size: None,
        size_sigma: 0.0,
    };
    if takes_task {
        let Some(t) = &s.task else {
            return e(".task", format!("a {opname} step names the program it starts: task = \"NAME\""));
        };
        let Some(i) = file.task.iter().position(|x| x.name == *t) else {
            let known: Vec<&str> = file.task.iter().map(|x| x.name.as_str()).collect();
            return e(".task", format!("no task named \"{t}\" to {opname} (tasks: {})", known.join(", ")));
        };
        c.task = Some(t.clone());
        c.task_index = i as u32;
    }
    if !(1..=defaults::MAX_TASK_COUNT).contains(&c.count) {
        return e(".count", format!("expected 1..={} processes, got {}", defaults::MAX_TASK_COUNT, c.count));
    }
    if let Some(j) = s.jobs {
        if j == 0 {
            return e(".jobs", "must be at least 1".into());
        }
        c.jobs = Some(j.min(c.count));
    }
    if takes_region {
        if s.region.is_empty() {
            return e(".region", format!("a {opname} step names the region it maps: region = \"NAME\""));
        }
        let Some(i) = index_of(&file.region, &s.region) else {
            let known: Vec<&str> = file.region.keys().map(|k| k.as_str()).collect();
            return e(".region", format!("no region named \"{}\" (regions: {})", s.region, known.join(", ")));
        };
        c.region = Some(s.region.clone());
        c.region_index = i as u32;
        let r = &file.region[&s.region];
        if op == AccessOp::Brk {
            if r.kind != RegionKind::Anon {
                return e(".region", format!("brk resizes an anon region (the heap); \"{}\" is not one", s.region));
            }
            let Some(size) = s.size.filter(|&b| b > 0) else {
                return e(".size", "a brk step gives the heap's new size, more than 0 bytes: size = \"16MB\"".into());
            };
            if size > r.size {
                return e(
                    ".size",
                    format!("{size} bytes is more than region \"{}\" may grow to ({} bytes)", s.region, r.size),
                );
            }
            let sigma = s.size_sigma.unwrap_or(0.0);
            if !(sigma.is_finite() && (0.0..=3.0).contains(&sigma)) {
                return e(".size_sigma", format!("expected 0..3, got {sigma}"));
            }
            c.size = Some(size);
            c.size_sigma = sigma;
        }
    }
    Ok(Step {
        target: Target::Control(c),
        pattern: PatternParams::Seq,
        amount: Amount::Passes(1),
        op,
        then_next: 0.0,
        think: 0,
    })
}

/// A list of named items as a table by name (as the scenario writes `[device.NAME]`).
trait Named {
    fn name(&self) -> &str;
    /// Made from something else the configuration holds (a trace's files and mappings):
    /// left out when it is written out, as it is made again when read.
    fn derived(&self) -> bool {
        false
    }
}

impl Named for File {
    fn name(&self) -> &str {
        &self.name
    }
    fn derived(&self) -> bool {
        self.from_trace
    }
}

impl Named for Region {
    fn name(&self) -> &str {
        &self.name
    }
    fn derived(&self) -> bool {
        self.from_trace
    }
}

macro_rules! named {
    ($($t:ty),*) => {$(
        impl Named for $t {
            fn name(&self) -> &str {
                &self.name
            }
        }
    )*};
}
named!(Device, Memcg);

fn by_name<S: Serializer, T: Named + Serialize>(items: &[T], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(items.iter().filter(|i| !i.derived()).map(|i| (i.name(), i)))
}

fn profile_name<S: Serializer>(p: &&'static Profile, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(p.name)
}

fn entry_name<S: Serializer, T>(e: &&'static Entry<T>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(e.name)
}

/// `[zswap]` as the scenario writes it. (ZswapParams is swap/'s and only deserializes; the
/// exhaustive pattern makes a new parameter a compile error here.)
fn zswap_params<S: Serializer>(z: &ZswapParams, s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Table<'a> {
        enabled: bool,
        max_pool_percent: u32,
        compressor: &'a str,
        accept_threshold_percent: u32,
        shrinker_enabled: bool,
        ever_enabled: bool,
    }
    let ZswapParams { enabled, max_pool_percent, compressor, accept_threshold_percent, shrinker_enabled, ever_enabled } =
        z;
    Table {
        enabled: *enabled,
        max_pool_percent: *max_pool_percent,
        compressor,
        accept_threshold_percent: *accept_threshold_percent,
        shrinker_enabled: *shrinker_enabled,
        ever_enabled: ever_enabled.unwrap_or(*enabled),
    }
    .serialize(s)
}
