//! The scenario file: machine, kernel profile and tunables, devices, swap, memcgs, memory
//! regions and tasks with their workload programs.
//!
//! Parsing produces a [`Scenario`]: the file as written ([`ScenarioFile`]) and its resolved
//! [`Config`] (config.rs: defaults applied, names looked up, every check a run depends on
//! made); bad input fails early with an [`Error`] that names the file, the line (for TOML
//! text) and the key, and says what was expected. Every field's doc gives its unit, its
//! default (the values are in defaults.rs, written once; a device model's parameters' in its
//! file in device/, zswap's in swap/zswap.rs) and, where there is one, the kernel's sysctl
//! name (`[vm]` holds /proc/sys/vm tunables: `vm.swappiness`, `vm.page-cluster`...).
//!
//! ```toml
//! [machine]
//! ram = "900MB"
//! cpus = 2
//! [kernel]
//! profile = "linux-6.6"
//! [vm]
//! swappiness = 60
//! page-cluster = 3
//! [device.ssd]
//! model = "sata-ssd"
//! [[swap]]
//! device = "ssd"
//! size = "1GB"
//! [region.buf]
//! kind = "anon"
//! size = "1000MB"
//! [[task]]
//! name = "toucher"
//! [[task.step]]
//! region = "buf"
//! pattern = "seq"
//! passes = 5
//! op = "write"
//! ```

pub mod config;
pub mod defaults;
pub use crate::profile;
mod registries;

use crate::device::DeviceConfig;
use crate::units::{de_bytes, de_duration_ns, de_opt_bytes};
use crate::Error;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use config::Config;
pub use profile::{Profile, PROFILES};
pub use registries::{registries, RegisteredName, RegistryInfo, Selected};

/// A scenario as written in the file (before validation).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// Name shown in reports. Default: the file name.
    #[serde(default)]
    pub name: Option<String>,
    /// RNG seed, any u64: TOML's integers stop at 2^63 − 1, so a larger seed is written as
    /// a string of digits. Default [`defaults::SEED`].
    #[serde(default = "default_seed", deserialize_with = "de_seed")]
    pub seed: u64,
    pub machine: Machine,
    #[serde(default)]
    pub kernel: Kernel,
    /// /proc/sys/vm tunables.
    #[serde(default)]
    pub vm: Vm,
    /// CPU costs of kernel operations (calibration, see docs/model.md).
    #[serde(default)]
    pub cpu: CpuCosts,
    /// Block devices by name.
    #[serde(default)]
    pub device: BTreeMap<String, DeviceConfig>,
    /// Swap areas (`swapon`), in swapon order.
    #[serde(default)]
    pub swap: Vec<SwapArea>,
    /// zswap's module parameters (/sys/module/zswap/parameters).
    #[serde(default)]
    pub zswap: crate::swap::zswap::ZswapParams,
    /// Memory cgroups by name (children of the root cgroup).
    #[serde(default)]
    pub memcg: BTreeMap<String, MemcgConfig>,
    /// Files by name: each is one contiguous extent on its device, not cached at start.
    #[serde(default)]
    pub file: BTreeMap<String, FileConfig>,
    /// Memory regions by name: anon regions are private to each task that touches them,
    /// shmem regions are one object shared by all, file regions map a `[file.NAME]`.
    #[serde(default)]
    pub region: BTreeMap<String, Region>,
    #[serde(default)]
    pub task: Vec<Task>,
    /// Stop the run at this simulated time (default: when every task has finished).
    #[serde(default, deserialize_with = "de_opt_duration")]
    pub time_limit: Option<u64>,
    /// Record the report's timeline (reads, device reads, faults per interval) at this
    /// interval of simulated time. Default: no timeline.
    #[serde(default, deserialize_with = "de_opt_duration")]
    pub sample_interval: Option<u64>,
    /// Stop the run as livelocked when no task completes an operation for this long in
    /// simulated time while the machine keeps doing I/O or reclaim; 0 disables.
    #[serde(default, deserialize_with = "de_opt_duration")]
    pub watchdog: Option<u64>,
}

fn default_seed() -> u64 {
    defaults::SEED
}

/// A seed: an integer, or a string of digits for the seeds above TOML's largest integer.
fn de_seed<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Seed {
        Int(u64),
        Digits(String),
    }
    match Seed::deserialize(d).map_err(|_| {
        serde::de::Error::custom("expected a whole number from 0 to 18446744073709551615 (above 2^63 − 1, as a string)")
    })? {
        Seed::Int(v) => Ok(v),
        Seed::Digits(s) => s.trim().parse().map_err(|_| {
            serde::de::Error::custom(format!("expected a whole number from 0 to 18446744073709551615, got \"{s}\""))
        }),
    }
}

fn de_opt_duration<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    de_duration_ns(d).map(Some)
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    /// Installed RAM (`mem=`), bytes.
    #[serde(deserialize_with = "de_bytes")]
    pub ram: u64,
    /// CPUs. Default [`defaults::CPUS`].
    #[serde(default = "default_cpus")]
    pub cpus: u32,
    /// Memory the kernel keeps for itself (image, page tables, slab) before the page
    /// allocator gets the rest, bytes; less than `ram`. Default
    /// [`defaults::kernel_reserved`]: 1.5625% of RAM (the 64-byte struct page per 4 KiB
    /// page) plus 32 MiB (kernel image and early allocations).
    #[serde(default, deserialize_with = "de_opt_bytes")]
    pub kernel_reserved: Option<u64>,
    /// Sockets the CPUs are on (`cpus` divides among them). Default 1.
    #[serde(default = "one")]
    pub sockets: u32,
    /// SMT threads per core (hyper-threads; siblings are adjacent CPU numbers). Default 1.
    #[serde(default = "one")]
    pub threads_per_core: u32,
}

fn one() -> u32 {
    1
}

fn default_cpus() -> u32 {
    defaults::CPUS
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kernel {
    /// Kernel profile (`pagesim profiles`). Default [`defaults::PROFILE`].
    #[serde(default)]
    pub profile: Option<String>,
    /// Swap-in readahead policy; default: the profile's.
    #[serde(default)]
    pub swap_readahead: Option<String>,
    /// get_scan_count variant; default: the profile's.
    #[serde(default)]
    pub scan_balance: Option<String>,
    /// File readahead policy (`pagecache::readahead` registry); default: the profile's.
    #[serde(default)]
    pub file_readahead: Option<String>,
    /// The flusher's inode order (`writeback::order` registry); default: the profile's.
    #[serde(default)]
    pub writeback_order: Option<String>,
    /// `/sys/kernel/mm/swap/vma_ra_enabled`. Default [`defaults::VMA_RA_ENABLED`].
    #[serde(default)]
    pub vma_ra_enabled: Option<bool>,
    /// The cgroup hierarchy the memory controller is on: 1 (legacy) or 2. Default
    /// [`defaults::CGROUP_VERSION`]. Limit
    /// reclaim on v1 waits for the writeback of pages it wrote itself instead of
    /// activating them (`writeback_throttling_sane`).
    #[serde(default)]
    pub cgroup_version: Option<u32>,
    /// The files' page cache takes large folios (`mapping_large_folio_support`: ext4 from
    /// 6.16, XFS from 5.18; never before 5.18). Default: the profile's (true on
    /// `linux-6.18`, which models ext4). Refused as true on a profile older than 5.18.
    #[serde(default)]
    pub large_folios: Option<bool>,
    /// When the periodic memcg stats flush (`flush_memcg_stats_dwork`, every 2 s on the
    /// profiles whose reclaim reads flushed statistics: `linux-6.18`) first runs after the
    /// scenario starts: the flusher runs on its own clock, so this phase is arbitrary on a
    /// real machine; it decides what a short run's reclaim sees (docs/model.md, "Memcg
    /// statistics in reclaim"). Default: half the period, 1 s. Refused on a profile whose
    /// reclaim reads exact values, and at a whole period or more.
    #[serde(default, deserialize_with = "de_opt_duration")]
    pub memcg_stats_flush_phase: Option<u64>,
    /// Anonymous mTHP sizes turned on (`/sys/kernel/mm/transparent_hugepage/hugepages-<size>kB/enabled
    /// = always`; every other size `never`): a write fault on untouched anon memory takes a
    /// folio of the largest of them that fits (6.8+). Sizes from 16KB to 1MB, powers of two.
    /// Default none. Refused on a profile older than 6.8.
    #[serde(default)]
    pub anon_mthp: Option<Vec<String>>,
}

/// /proc/sys/vm tunables.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Vm {
    /// vm.swappiness: 0..100 (≤5.7) or 0..200. Default [`defaults::SWAPPINESS`].
    pub swappiness: Option<u32>,
    /// vm.page-cluster: log2 of the swap readahead window, 0..10. Default
    /// [`defaults::PAGE_CLUSTER`].
    /// `vm.page_cluster` is accepted too (so Python's `vm__page_cluster` reaches it).
    #[serde(rename = "page-cluster", alias = "page_cluster")]
    pub page_cluster: Option<u32>,
    /// vm.min_free_kbytes, kB. Default sqrt(16 × lowmem kB), clamped
    /// ([`crate::mm::default_min_free_kbytes`]). With the scale factor it must leave more than
    /// half the managed memory above the high watermark.
    pub min_free_kbytes: Option<u64>,
    /// vm.watermark_scale_factor, in 1/10000 of memory, 1..3000; only kernels ≥4.6 have it.
    /// Default [`defaults::WATERMARK_SCALE_FACTOR`].
    pub watermark_scale_factor: Option<u64>,
    /// vm.dirty_ratio: percent of dirtyable memory at which a dirtier is throttled, 0..100.
    /// Default: the profile's (20 from 2.6.30; 10 in 2.6.22-2.6.29; 40 before). Not with
    /// `dirty_bytes`.
    pub dirty_ratio: Option<u32>,
    /// vm.dirty_background_ratio: percent of dirtyable memory at which the flusher starts
    /// background writeback, 0..100. Default: the profile's (10; 5 in 2.6.22-2.6.29). Not
    /// with `dirty_background_bytes`.
    pub dirty_background_ratio: Option<u32>,
    /// vm.dirty_bytes: the dirty limit in bytes, at least 2 pages; replaces `dirty_ratio`.
    #[serde(default, deserialize_with = "de_opt_bytes")]
    pub dirty_bytes: Option<u64>,
    /// vm.dirty_background_bytes: the background limit in bytes, at least 1; replaces
    /// `dirty_background_ratio`.
    #[serde(default, deserialize_with = "de_opt_bytes")]
    pub dirty_background_bytes: Option<u64>,
    /// vm.dirty_expire_centisecs: age at which dirty data is written by periodic writeback.
    /// Default [`defaults::DIRTY_EXPIRE_CENTISECS`].
    pub dirty_expire_centisecs: Option<u32>,
    /// vm.dirty_writeback_centisecs: period of the flusher's periodic writeback; 0 turns
    /// it off. Default [`defaults::DIRTY_WRITEBACK_CENTISECS`].
    pub dirty_writeback_centisecs: Option<u32>,
}

/// CPU time charged for kernel and user operations, nanoseconds. Physical calibration
/// constants shared by all scenarios; sources in docs/model.md. The defaults are
/// `CpuCosts::default()`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct CpuCosts {
    /// One user access to a resident page (TLB miss and cache miss of a page walk).
    #[serde(deserialize_with = "de_duration_ns")]
    pub access_ns: u64,
    /// Fault entry and exit, page-table walk (any fault).
    #[serde(deserialize_with = "de_duration_ns")]
    pub fault_ns: u64,
    /// Allocate and zero a page (first touch of anon/shmem).
    #[serde(deserialize_with = "de_duration_ns")]
    pub zero_page_ns: u64,
    /// Copy-on-write of an anon page another process still maps (`wp_page_copy`):
    /// allocate, copy 4 KiB, move the rmap and references; what a write fault on such a
    /// page costs beyond `fault_ns`.
    #[serde(deserialize_with = "de_duration_ns")]
    pub cow_copy_ns: u64,
    /// Swap-in software path per page read (swap cache insert, bio, completion, map).
    #[serde(deserialize_with = "de_duration_ns")]
    pub swapin_ns: u64,
    /// Reclaim cost per page examined on an LRU list (isolate, rmap walk, putback).
    #[serde(deserialize_with = "de_duration_ns")]
    pub scan_ns: u64,
    /// Reclaim cost per page unmapped and freed.
    #[serde(deserialize_with = "de_duration_ns")]
    pub reclaim_ns: u64,
    /// Swap-out software path per page written (slot allocation, swap cache, bio).
    #[serde(deserialize_with = "de_duration_ns")]
    pub swapout_ns: u64,
    /// Scheduler time slice when more threads than CPUs are runnable.
    #[serde(deserialize_with = "de_duration_ns")]
    pub timeslice_ns: u64,
    /// read(2)/pread(2) system call entry, fd lookup and exit.
    #[serde(deserialize_with = "de_duration_ns")]
    pub read_syscall_ns: u64,
    /// Copy of one cached 4 KiB page to the user buffer (with its page-cache lookup).
    #[serde(deserialize_with = "de_duration_ns")]
    pub copy_page_ns: u64,
    /// Page-cache read path per page submitted (allocate, insert, LRU add, bio and its
    /// completion).
    #[serde(deserialize_with = "de_duration_ns")]
    pub pagecache_read_ns: u64,
    /// write(2)/pwrite(2) and fsync(2) entry, fd lookup and exit.
    #[serde(deserialize_with = "de_duration_ns")]
    pub write_syscall_ns: u64,
    /// Writeback path per page written (dirty-tag walk, clear for I/O, set writeback, bio
    /// and its completion), charged to the thread that writes: the flusher, a throttled
    /// dirtier, fsync, or reclaim's pageout.
    #[serde(deserialize_with = "de_duration_ns")]
    pub writepage_ns: u64,
    /// Wall time from an I/O completion on a device's interrupt CPU (`irq_cpu`) to a task
    /// sleeping on it running again on another CPU that is idle: the wakeup IPI and the
    /// idle CPU's exit (on a VM, the hypervisor waking a halted vCPU). Not CPU time of the
    /// task. Default 0 (a CPU that polls in idle); `pagesim validate` measures the host's.
    #[serde(deserialize_with = "de_duration_ns")]
    pub remote_wakeup_ns: u64,
    /// fork(2) of a process with nothing mapped: `copy_process`, `dup_mm`, the child's
    /// first schedule (with `exit_ns`, the measured fork, exit and wait).
    #[serde(deserialize_with = "de_duration_ns")]
    pub fork_ns: u64,
    /// clone(2) of a thread (CLONE_VM | CLONE_THREAD: `copy_process` without `dup_mm`), its
    /// first run, its exit and the join that waits for it, on one CPU.
    #[serde(deserialize_with = "de_duration_ns")]
    pub clone_ns: u64,
    /// Per page a fork copies (`copy_page_range`: the PTE, the rmap and swap references)
    /// and the child later tears down.
    #[serde(deserialize_with = "de_duration_ns")]
    pub fork_pte_ns: u64,
    /// execve(2) of a dynamically linked program up to its main (loader, libc mapping and
    /// relocation), beyond the faults of the program's own steps.
    #[serde(deserialize_with = "de_duration_ns")]
    pub exec_ns: u64,
    /// exit(2) and the parent's wait, without the address space (`exit_mmap` is charged
    /// per page by the work it does).
    #[serde(deserialize_with = "de_duration_ns")]
    pub exit_ns: u64,
    /// Per private page munmap(2) or exit frees (`zap_pte_range`, the batched free).
    #[serde(deserialize_with = "de_duration_ns")]
    pub unmap_page_ns: u64,
    /// Allocating one swap slot under the lock of its `swap_map` (`scan_swap_map_slots`:
    /// the map byte, the cluster's count, the area's bounds and counters). Part of
    /// `swapout_ns`.
    #[serde(deserialize_with = "de_duration_ns")]
    pub swap_slot_ns: u64,
    /// Changing one `swap_map` byte under its lock (`swapcache_prepare`, `swap_free`,
    /// `swapcache_free`; and freeing a slot, `swap_entry_free`). Part of `swapin_ns` and
    /// `swapout_ns`.
    #[serde(deserialize_with = "de_duration_ns")]
    pub swap_map_ns: u64,
    /// Inserting or deleting one swap-cache entry under its tree's lock (radix tree or
    /// xarray walk, the slot, the node counts). Part of `swapin_ns` and `swapout_ns`.
    #[serde(deserialize_with = "de_duration_ns")]
    pub swap_tree_ns: u64,
    /// Setting or clearing the writeback tag of a swap-cache page under the tree's lock
    /// (≤4.9). Part of `swapout_ns`.
    #[serde(deserialize_with = "de_duration_ns")]
    pub swap_tag_ns: u64,
    /// Moving one page on or off an LRU list under the LRU lock (list links of the page
    /// and its neighbours, the lruvec's counters). Part of `scan_ns` and of the costs of
    /// the paths that add pages.
    #[serde(deserialize_with = "de_duration_ns")]
    pub lru_page_ns: u64,
    /// Moving a modified cache line (a lock and the data it protects) to another core of
    /// the same socket.
    #[serde(deserialize_with = "de_duration_ns")]
    pub line_same_socket_ns: u64,
    /// Moving a modified cache line to a core of another socket.
    #[serde(deserialize_with = "de_duration_ns")]
    pub line_cross_socket_ns: u64,
}

impl Default for CpuCosts {
    fn default() -> Self {
        CpuCosts {
            access_ns: 60,
            fault_ns: 500,
            zero_page_ns: 700,
            cow_copy_ns: 1_250,
            swapin_ns: 2_500,
            scan_ns: 150,
            reclaim_ns: 400,
            swapout_ns: 2_000,
            timeslice_ns: 3_000_000,
            read_syscall_ns: 400,
            copy_page_ns: 600,
            pagecache_read_ns: 1_500,
            write_syscall_ns: 400,
            writepage_ns: 1_500,
            remote_wakeup_ns: 0,
            fork_ns: 100_000,
            clone_ns: 12_000,
            fork_pte_ns: 70,
            exec_ns: 650_000,
            exit_ns: 20_000,
            unmap_page_ns: 210,
            swap_slot_ns: 100,
            swap_map_ns: 60,
            swap_tree_ns: 200,
            swap_tag_ns: 60,
            lru_page_ns: 40,
            line_same_socket_ns: 45,
            line_cross_socket_ns: 115,
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwapArea {
    /// Device name (a `[device.NAME]` table).
    pub device: String,
    /// Size of the swap area, bytes (swap file or partition size, header page included).
    #[serde(deserialize_with = "de_bytes")]
    pub size: u64,
    /// `swapon -p`. Default [`defaults::swap_priority`]: -1, -2, ... in swapon order.
    #[serde(default)]
    pub priority: Option<i32>,
    /// A swap file on a filesystem of the device, rather than a swap partition (the
    /// default). The kernel gives a swap file no SWP_BLKDEV, and since 6.14 no run of slots
    /// for a large folio: large anon folios are split before they are swapped out to one.
    /// Not on a zram device (a block device of its own).
    #[serde(default)]
    pub file: bool,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemcgConfig {
    /// memory.max (v2) / memory.limit_in_bytes (v1), bytes. Default: no limit.
    #[serde(default, deserialize_with = "de_opt_bytes")]
    pub max: Option<u64>,
    /// The parent memcg (`[memcg.NAME]`); default the root. Charges and limits are
    /// hierarchical: a page charged here is charged to every ancestor, and an ancestor at
    /// its limit reclaims from its whole subtree.
    #[serde(default)]
    pub parent: Option<String>,
    /// memory.swap.max (v2), bytes: the most swap its subtree may use. Default: no limit.
    #[serde(default, deserialize_with = "de_opt_bytes")]
    pub swap_max: Option<u64>,
    /// memory.swappiness (v1 only), 0..100. Default: vm.swappiness.
    #[serde(default)]
    pub swappiness: Option<u32>,
    /// memory.low (v2), bytes: best-effort protection; reclaim passes over the memcg while
    /// its usage is within its effective low, unless nothing else can be reclaimed.
    #[serde(default, deserialize_with = "de_opt_bytes")]
    pub low: Option<u64>,
    /// memory.min (v2), bytes: hard protection; reclaim never takes its pages while its
    /// usage is within its effective min.
    #[serde(default, deserialize_with = "de_opt_bytes")]
    pub min: Option<u64>,
    /// memory.high (v2), bytes: above it the charging task reclaims from the memcg and is
    /// throttled on its way back to user space. Default: none.
    #[serde(default, deserialize_with = "de_opt_bytes")]
    pub high: Option<u64>,
    /// memory.use_hierarchy (v1): whether its children's charges count in it and its
    /// limit reclaim walks them. Default: its parent's (3.x's root: false; 5.11+: always).
    #[serde(default)]
    pub use_hierarchy: Option<bool>,
    /// memory.soft_limit_in_bytes (v1), bytes: under global memory pressure, the memcg
    /// furthest over its soft limit is reclaimed first. Default: none.
    #[serde(default, deserialize_with = "de_opt_bytes")]
    pub soft_limit: Option<u64>,
}

/// A file on a block device (`[file.NAME]`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// Device holding the file (a `[device.NAME]` table). Files are laid out one after the
    /// other after the swap areas of the device, each in one contiguous extent, and must
    /// fit on it.
    pub device: String,
    /// File size at the start of the run, bytes (rounded up to pages); 0 for a file
    /// that `append` steps fill.
    #[serde(deserialize_with = "de_bytes")]
    pub size: u64,
    /// Space the file has on its device, bytes: the size it may grow to by `append` steps
    /// and writes past its end. Default: `size`.
    #[serde(default, deserialize_with = "de_opt_bytes")]
    pub max_size: Option<u64>,
    /// Every task instance that reads the file gets its own copy (its own extent), as anon
    /// regions are per task: `count = 200` streams each read their own file. Default false.
    #[serde(default)]
    pub per_task: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RegionKind {
    /// MAP_PRIVATE|MAP_ANONYMOUS.
    Anon,
    /// MAP_SHARED|MAP_ANONYMOUS (tmpfs-backed).
    Shmem,
    /// MAP_SHARED of a `[file.NAME]`, PROT_READ, or PROT_READ|PROT_WRITE with `writable`.
    File,
}

/// `madvise` access hint of a file mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Madvise {
    Normal,
    /// MADV_SEQUENTIAL (VM_SEQ_READ).
    Sequential,
    /// MADV_RANDOM (VM_RAND_READ): no fault read-around.
    Random,
    /// MADV_WILLNEED right after mmap: the whole mapping is read ahead
    /// (`madvise_willneed` → `vfs_fadvise(POSIX_FADV_WILLNEED)`); faults then behave normally.
    Willneed,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Region {
    pub kind: RegionKind,
    /// Mapping size, bytes (rounded up to pages). Required for anon and shmem; a file
    /// region maps the whole file by default.
    #[serde(default, deserialize_with = "de_bytes")]
    pub size: u64,
    /// The file a `kind = "file"` region maps.
    #[serde(default)]
    pub file: Option<String>,
    /// madvise hint of a file region. Default [`defaults::MADVISE`].
    #[serde(default)]
    pub madvise: Option<Madvise>,
    /// A file region is mapped PROT_READ|PROT_WRITE (MAP_SHARED): its steps may write, and
    /// the writes dirty the file's pages. Default false (PROT_READ only).
    #[serde(default)]
    pub writable: bool,
    /// A file region is a program's text: mapped PROT_READ|PROT_EXEC (VM_EXEC), which
    /// reclaim keeps on the active list while it is referenced. Default false.
    #[serde(default)]
    pub exec: bool,
    /// Page content (see swap/compress.rs): mean compression ratio (lzo) of the region's
    /// data. Default: none, every page holds the one non-zero word the workload writes.
    #[serde(default)]
    pub compress_ratio: Option<f64>,
    /// Standard deviation of the log of a page's compression ratio. Default 0.
    #[serde(default)]
    pub compress_sigma: f64,
    /// Percent of pages that do not compress. Default 0.
    #[serde(default)]
    pub incompressible_percent: f64,
    /// Percent of pages that are all zero. Default 0.
    #[serde(default)]
    pub zero_percent: f64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    pub name: String,
    /// Memory cgroup name. Default: the root cgroup.
    #[serde(default)]
    pub memcg: Option<String>,
    /// Identical processes to start. Default [`defaults::TASK_COUNT`].
    #[serde(default = "default_task_count")]
    pub count: u32,
    /// Start time. Default 0.
    #[serde(default, deserialize_with = "de_duration_ns")]
    pub start: u64,
    /// Instance k of `count` starts at `start + k × stagger`. Default 0.
    #[serde(default, deserialize_with = "de_duration_ns")]
    pub stagger: u64,
    /// The CPUs its processes may run on (`sched_setaffinity`, `taskset -c`), each below
    /// `machine.cpus`. Default: any.
    #[serde(default)]
    pub cpus: Option<Vec<u32>>,
    /// The workload program, run in order.
    #[serde(default)]
    pub step: Vec<Step>,
    /// A captured program to replay instead of steps (`program = { trace = "FILE" }`).
    #[serde(default)]
    pub program: Option<ProgramSpec>,
}

/// A task's program given as a trace: `pagesim capture`'s `.pgt` file, replayed
/// (replay.rs, engine/replay.rs).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramSpec {
    /// The trace, relative to the scenario file's directory.
    pub trace: String,
    /// The device its files are on. Default: the scenario's only device that holds no
    /// swap area, else the only device.
    #[serde(default)]
    pub device: Option<String>,
    /// CPU time per instruction the program executed, ns. Default: the trace's (measured
    /// by `pagesim capture --native`), else [`defaults::NS_PER_INSN`].
    #[serde(default)]
    pub ns_per_insn: Option<f64>,
    /// Another tool's trace format (`pagesim cache --list-formats`): its pages are loaded
    /// (stored to) through a mapping of one file. Default: pagesim's own (`pgt`).
    #[serde(default)]
    pub format: Option<String>,
    /// For another tool's trace: the fraction of its pages replayed (SHARDS' spatial
    /// sampling: a page is in or out by its hash, for the whole trace). Default 1.
    #[serde(default)]
    pub sample: Option<f64>,
    /// Pages of the trace's files that are in the page cache when the run starts, charged
    /// to the root memcg rather than the task's: per file (its path as the trace names it),
    /// ranges `[first, end)` of page indices, e.g. `{ "/usr/lib/x86_64-linux-gnu/libc.so.6"
    /// = [[0, 471]] }`. On a real machine a shared library stays cached, charged to whoever
    /// read it first, while other processes map it; the task's memcg never holds it.
    /// `pagesim validate` measures it (mincore after dropping the trace's files). Default:
    /// none, every file starts cold.
    #[serde(default)]
    pub cached: std::collections::BTreeMap<String, Vec<[u64; 2]>>,
}

fn default_task_count() -> u32 {
    defaults::TASK_COUNT
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// Pages 0..n in order, `passes` times.
    Seq,
    /// Uniformly random pages.
    Random,
    /// Zipf-distributed pages (rank 0 hottest, ranks scattered over the region).
    Zipf,
    /// Every `stride`-th page, then the next offset, covering the region each pass.
    Stride,
    /// Pages n-1 down to 0, `passes` times.
    Reverse,
    /// sysbench 0.4's default "special" distribution (`rnd_func_special`, the OLTP test's
    /// row ids): `special_res` percent of the draws are uniform over the central
    /// `special_pct` percent of the units, the rest are the mean of `special_iter` uniform
    /// draws (a bell around the middle).
    Special,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AccessOp {
    /// A load from a mapping, or read(2) of a file.
    Read,
    /// A store to a mapping.
    Write,
    /// pread(2) of a file (the same page-cache path as read(2)).
    Pread,
    /// pwrite(2) of a file (the same page-cache path as write(2)).
    Pwrite,
    /// write(2) on an O_APPEND descriptor: each record goes at the file's end, which grows.
    Append,
    /// fsync(2) of a file: write its dirty pages and wait for all its writeback.
    Fsync,
    /// fdatasync(2): as fsync in this model (no inode metadata is written).
    Fdatasync,
    /// sync_file_range(2) with SYNC_FILE_RANGE_WRITE over the whole file: start writeback
    /// of its dirty pages that are not under writeback yet, without waiting.
    #[serde(rename = "sync_file_range")]
    SyncFileRange,
    /// truncate(2) to 0 (or unlink): the file's pages leave the page cache, dirty ones
    /// without being written, after the writeback in flight ends.
    Truncate,
    /// msync(MS_SYNC) of a writable file region: as fsync of the file it maps.
    Msync,
    /// A job server (`make -jN`): starts `count` processes running program `task` (each a
    /// fork followed by an exec: a fresh address space), at most `jobs` at a time, and
    /// waits until all have exited.
    Spawn,
    /// fork(2) `count` children running program `task`: each inherits the address space
    /// copy-on-write (private anon pages shared read-only, swap entries duplicated; shared
    /// file and shmem mappings are mapped again at their first fault). The parent goes on.
    Fork,
    /// wait(2) until every child this process forked or spawned has exited.
    Wait,
    /// execve(2) of program `task`: the address space is torn down (`exit_mmap`) and the
    /// process runs that program's steps.
    Exec,
    /// mmap(2) of `region` now (a region is otherwise mapped at its first access).
    Mmap,
    /// munmap(2) of `region`: its private pages and swap slots are freed; the next access
    /// maps it again, empty.
    Munmap,
    /// brk(2): the anon `region` (the heap) is `size` bytes from now on; shrinking frees the
    /// pages past the new end. The region's own size is the most it may grow to.
    Brk,
    /// pause(2): the process sleeps, keeping its memory, until the run ends (the run ends
    /// when every process has exited or paused): a server that stays up for the benchmark.
    Pause,
}

impl AccessOp {
    /// A call on a whole file rather than a walk over its records.
    pub fn is_file_sync(self) -> bool {
        matches!(
            self,
            AccessOp::Fsync | AccessOp::Fdatasync | AccessOp::SyncFileRange | AccessOp::Truncate | AccessOp::Msync
        )
    }

    /// A process lifecycle call (fork, exec, wait, mmap, munmap, brk, the job server)
    /// rather than accesses.
    pub fn is_lifecycle(self) -> bool {
        matches!(
            self,
            AccessOp::Spawn
                | AccessOp::Fork
                | AccessOp::Wait
                | AccessOp::Exec
                | AccessOp::Mmap
                | AccessOp::Munmap
                | AccessOp::Brk
                | AccessOp::Pause
        )
    }
}

/// `posix_fadvise` advice a file step gives right after opening the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Fadvise {
    Normal,
    Sequential,
    Random,
    /// POSIX_FADV_WILLNEED over the whole file.
    Willneed,
}

/// How a file step with a `rate` spaces its read calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pace {
    /// Record n is due at n × record / rate after the step started: a reader that fell
    /// behind (slow I/O) reads back to back until it has caught up (a token bucket).
    CatchUp,
    /// Each read call owns one interval of record / rate from the moment it starts and the
    /// reader sleeps out the rest of it; a read that took longer is followed at once by the
    /// next, and the time lost is never made up (a read-then-sleep loop).
    Steady,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Region name (accesses to a mapping). A step names a region or a file.
    #[serde(default)]
    pub region: String,
    /// File name: the step makes read(2)/pread(2) calls of `record` bytes on it. Each file
    /// step opens the file (a fresh `file_ra_state`) when it starts.
    #[serde(default)]
    pub file: Option<String>,
    /// Bytes per read(2) call of a file step, a multiple of 4 KiB. Default
    /// [`defaults::RECORD_BYTES`]. The pattern then chooses records instead of pages.
    #[serde(default, deserialize_with = "de_opt_bytes")]
    pub record: Option<u64>,
    /// File step: hold the reading rate at this many bytes per second by sleeping (a
    /// streaming reader). Default: as fast as possible.
    #[serde(default, deserialize_with = "de_opt_bytes")]
    pub rate: Option<u64>,
    /// How a `rate` step paces its reads. Default [`defaults::PACE`].
    #[serde(default)]
    pub pace: Option<Pace>,
    /// Probability that an access is followed at once by one to the next record/page
    /// ("sometimes two reads in a row"). Default [`defaults::THEN_NEXT`].
    #[serde(default)]
    pub then_next: Option<f64>,
    /// Zipf pattern: ranks are given to clusters of this many bytes (hot areas), and the
    /// record inside a cluster is uniform. Default: one record (page).
    #[serde(default, deserialize_with = "de_opt_bytes")]
    pub cluster: Option<u64>,
    /// File step: all instances of the task share one open file, hence one readahead
    /// state (threads of one process reading one descriptor). Default false.
    #[serde(default)]
    pub shared_fd: bool,
    /// File step: posix_fadvise right after open. Default none.
    #[serde(default)]
    pub fadvise: Option<Fadvise>,
    /// Write step on a file: call fsync(2) after every this many write calls (sysbench's
    /// `--file-fsync-freq`). Default: never.
    #[serde(default)]
    pub fsync_every: Option<u64>,
    /// Access pattern. Required, except on the whole-file calls (fsync, fdatasync,
    /// sync_file_range, truncate), which take none.
    #[serde(default)]
    pub pattern: Option<Pattern>,
    /// Passes over the region (seq, stride), or accesses = passes × pages (random, zipf).
    /// Default [`defaults::PASSES`].
    #[serde(default)]
    pub passes: Option<u64>,
    /// Number of accesses (random, zipf); alternative to `passes`.
    #[serde(default)]
    pub accesses: Option<u64>,
    /// read or write (file steps: read or pread, no default). Default [`defaults::OP`].
    #[serde(default)]
    pub op: Option<AccessOp>,
    /// Stride in pages (pattern stride). Default [`defaults::STRIDE_PAGES`].
    #[serde(default)]
    pub stride: Option<u64>,
    /// Zipf exponent s (pattern zipf). Default [`defaults::ZIPF_S`].
    #[serde(default)]
    pub zipf_s: Option<f64>,
    /// Pattern special: percent of the units that are "special" (sysbench
    /// `--oltp-dist-pct`). Default [`defaults::SPECIAL_PCT`].
    #[serde(default)]
    pub special_pct: Option<u32>,
    /// Pattern special: percent of the draws that go to the special units
    /// (`--oltp-dist-res`), 0-99; sysbench rounds the share to 1 - 1/floor(100/(100-res)).
    /// Default [`defaults::SPECIAL_RES`].
    #[serde(default)]
    pub special_res: Option<u32>,
    /// Pattern special: uniform draws averaged for the other draws (`--oltp-dist-iter`).
    /// Default [`defaults::SPECIAL_ITER`].
    #[serde(default)]
    pub special_iter: Option<u32>,
    /// CPU time between accesses (user computation). Default 0.
    #[serde(default, deserialize_with = "de_duration_ns")]
    pub think: u64,
    /// spawn, fork, exec: the program (a `[[task]]` by name) the new process runs.
    #[serde(default)]
    pub task: Option<String>,
    /// spawn, fork: processes to start. Default 1.
    #[serde(default)]
    pub count: Option<u32>,
    /// spawn: the most children running at once (`make -j`). Default `count`.
    #[serde(default)]
    pub jobs: Option<u32>,
    /// brk: the heap's size from now on, bytes (the median with `size_sigma`).
    #[serde(default, deserialize_with = "de_opt_bytes")]
    pub size: Option<u64>,
    /// brk: each process draws its heap size from a lognormal distribution of median
    /// `size` and this standard deviation of the log (capped at the region's size).
    /// Default 0: exactly `size`.
    #[serde(default)]
    pub size_sigma: Option<f64>,
}

/// A loaded scenario: the file as written, and the configuration a run uses.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The file as written (overrides applied): which keys it gives, for front ends that
    /// carry only those over (the host runner's tunables).
    pub file: ScenarioFile,
    /// The same as a TOML table, keys as given: whether a key with a default was written
    /// at all (the host runner carries over only what the scenario sets).
    pub given: toml::Table,
    /// The resolved configuration: what every run of the scenario reads.
    pub config: Config,
    pub name: String,
    pub origin: String,
    pub profile: &'static Profile,
}

impl Scenario {
    /// Reads, overrides and resolves a scenario file.
    pub fn load_file(path: &std::path::Path, sets: &[String]) -> Result<Self, Error> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| Error(format!("{origin}: cannot read: {e}")))?;
        Self::from_toml(&text, &origin, sets)
    }

    /// Parses TOML text. Errors name `origin`, the line and the key.
    pub fn from_toml(text: &str, origin: &str, sets: &[String]) -> Result<Self, Error> {
        // Syntax errors come with the line and a caret under the spot.
        let mut table: toml::Table =
            toml::from_str(text).map_err(|e| Error(format!("{origin}: {}", e.to_string().trim_end())))?;
        // Typed parse of the original text, for the line of a value of the wrong type; the
        // message itself comes from the key's path (see `explain`).
        let file: ScenarioFile = match toml::from_str(text) {
            Ok(f) => f,
            Err(e) => {
                let line = e.span().map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
                let when = line.map_or(String::new(), |l| format!("line {l}"));
                return Err(from_value(toml::Value::Table(table), origin, &when)
                    .err()
                    .unwrap_or_else(|| Error(format!("{origin}: {}", e.to_string().trim_end()))));
            }
        };
        if sets.is_empty() {
            return Self::resolve(file, &table, origin);
        }
        for s in sets {
            apply_set(&mut table, s)?;
        }
        let file = from_value(toml::Value::Table(table.clone()), origin, "after --set")?;
        Self::resolve(file, &table, origin)
    }

    /// Builds a scenario from a JSON value of the same shape (Python dicts, and a serialized
    /// [`Config`]).
    pub fn from_json(value: &serde_json::Value, origin: &str, sets: &[String]) -> Result<Self, Error> {
        let v = json_to_toml(value).map_err(|e| Error(format!("{origin}: {e}")))?;
        let toml::Value::Table(mut table) = v else {
            return Err(Error(format!("{origin}: a scenario must be a table/dict at the top level")));
        };
        for s in sets {
            apply_set(&mut table, s)?;
        }
        let file = from_value(toml::Value::Table(table.clone()), origin, "")?;
        Self::resolve(file, &table, origin)
    }

    fn resolve(file: ScenarioFile, table: &toml::Table, origin: &str) -> Result<Self, Error> {
        let config = Config::resolve(&file, table, origin)?;
        Ok(Scenario {
            name: config.name.clone(),
            profile: config.kernel.profile,
            origin: origin.to_string(),
            file,
            given: table.clone(),
            config,
        })
    }

    /// The value of dotted key `key` (`device.disk.read_ahead_kb`) if the scenario (or an
    /// override) gives it; `None` where a default applies.
    pub fn given(&self, key: &str) -> Option<&toml::Value> {
        let mut parts = key.split('.');
        let mut v = self.given.get(parts.next()?)?;
        for p in parts {
            v = v.as_table()?.get(p)?;
        }
        Some(v)
    }
}

fn from_value(v: toml::Value, origin: &str, when: &str) -> Result<ScenarioFile, Error> {
    let when = if when.is_empty() { String::new() } else { format!(" ({when})") };
    serde_path_to_error::deserialize(v.clone()).map_err(|e| {
        let (path, inner) = locate_in_device(&v, e.path().to_string(), e.into_inner().to_string());
        let message = explain(&v, &path, &inner);
        if path == "." || path.is_empty() {
            Error(format!("{origin}{when}: {message}"))
        } else {
            Error(format!("{origin}{when}: {path}: {message}"))
        }
    })
}

/// An error in a `[device.NAME]` table names the key inside it: the table is read by
/// `model` through a buffer that loses the path, so it is read again as that model's
/// parameters ([`crate::device::DeviceConfig::locate_error`]). Other errors pass unchanged.
fn locate_in_device(root: &toml::Value, path: String, inner: String) -> (String, String) {
    let Some(table) = path.strip_prefix("device.").filter(|n| !n.contains('.')).and(value_at(root, &path)) else {
        return (path, inner);
    };
    let Some(toml::Value::String(model)) = table.get("model") else { return (path, inner) };
    let mut params = table.as_table().cloned().unwrap_or_default();
    params.remove("model");
    match crate::device::DeviceConfig::locate_error(model, toml::Value::Table(params)) {
        Some((key, message)) if key != "." && !key.is_empty() => (format!("{path}.{key}"), message),
        _ => (path, inner),
    }
}

/// One step of a serde path such as `task[0].step[1].op`: a key or an array index.
enum PathStep<'a> {
    Key(&'a str),
    Index(usize),
}

/// The steps of a serde path; `None` if an index is not a number.
fn path_steps(path: &str) -> Option<Vec<PathStep<'_>>> {
    let mut steps = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (name, indexes) = part.split_once('[').unwrap_or((part, ""));
        if !name.is_empty() {
            steps.push(PathStep::Key(name));
        }
        for idx in indexes.split('[').filter(|i| !i.is_empty()) {
            steps.push(PathStep::Index(idx.trim_end_matches(']').parse().ok()?));
        }
    }
    Some(steps)
}

/// The value at a serde path.
fn value_at<'a>(root: &'a toml::Value, path: &str) -> Option<&'a toml::Value> {
    path_steps(path)?.into_iter().try_fold(root, |v, step| match step {
        PathStep::Key(k) => v.get(k),
        PathStep::Index(i) => v.get(i),
    })
}

/// The value at a serde path, to replace it.
fn value_at_mut<'a>(root: &'a mut toml::Value, path: &str) -> Option<&'a mut toml::Value> {
    path_steps(path)?.into_iter().try_fold(root, |v, step| match step {
        PathStep::Key(k) => v.get_mut(k),
        PathStep::Index(i) => v.get_mut(i),
    })
}

/// serde's message for a bad scenario value, reworded to say what was expected and what
/// was found, in the scenario's terms (serde speaks of `u64`, "unit variant", and repeats
/// the path). `root` is the whole scenario, to show the value and to ask an enum-valued
/// key for its names.
fn explain(root: &toml::Value, path: &str, inner: &str) -> String {
    // The toml crate appends "in `the.path`", which the caller already gives.
    let inner = inner.split("\nin `").next().unwrap_or(inner).trim();
    let found = value_at(root, path).map(|v| match v {
        toml::Value::String(s) => format!("\"{s}\""),
        toml::Value::Table(_) => "a table".to_string(),
        toml::Value::Array(_) => "an array".to_string(),
        v => v.to_string(),
    });
    let got = found.as_deref().map_or(String::new(), |f| format!(", got {f}"));
    if let Some(field) = inner.strip_prefix("missing field `").and_then(|r| r.split('`').next()) {
        return match (path, field) {
            ("" | ".", "machine") => {
                "the [machine] table is required, with at least `ram` (for example ram = \"1GB\"); \
                 `cpus` and `kernel_reserved` have defaults"
                    .into()
            }
            (_, "ram") => "`ram` is required: the installed RAM, for example ram = \"1GB\"".into(),
            (_, "step") => "a task needs at least one [[task.step]] (what it touches or reads, and how)".into(),
            _ => format!("`{field}` is required here (`pagesim describe` lists every key)"),
        };
    }
    for int in ["u64", "u32", "u16", "u8", "usize"] {
        if inner.ends_with(&format!("expected {int}")) {
            let max = match int {
                "u32" => u32::MAX as u64,
                "u16" => u16::MAX as u64,
                "u8" => u8::MAX as u64,
                _ => i64::MAX as u64, // TOML's largest integer
            };
            return format!("expected a whole number from 0 to {max}{got}");
        }
    }
    if inner.ends_with("expected f64") || inner.ends_with("expected f32") {
        return format!("expected a number{got}");
    }
    if inner.ends_with("expected a boolean") {
        return format!("expected true or false{got}");
    }
    if inner.starts_with("invalid type") || inner.starts_with("wanted ") {
        // An enum-valued key given something that is not a name: ask it for its names by
        // putting a name it cannot have in its place.
        let mut probe = root.clone();
        if let Some(slot) = value_at_mut(&mut probe, path) {
            *slot = toml::Value::String("\u{1}".into());
            if let Err(e) = serde_path_to_error::deserialize::<_, ScenarioFile>(probe) {
                let m = e.into_inner().to_string();
                if let Some(names) = m.split("expected one of ").nth(1) {
                    let names = names.split("\nin `").next().unwrap_or(names).trim();
                    return format!("expected one of {names}{got}");
                }
            }
        }
    }
    let quoted = found.as_deref().is_some_and(|f| inner.contains(f.trim_matches('"')));
    if inner.starts_with("unknown field") || quoted || inner.contains(" got ") {
        inner.to_string()
    } else {
        format!("{inner}{got}")
    }
}

fn json_to_toml(v: &serde_json::Value) -> Result<toml::Value, String> {
    Ok(match v {
        serde_json::Value::Null => return Err("null values are not allowed in a scenario".into()),
        serde_json::Value::Bool(b) => toml::Value::Boolean(*b),
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                toml::Value::Integer(i)
            } else {
                toml::Value::Float(n.as_f64().ok_or("number out of range")?)
            }
        }
        serde_json::Value::String(s) => toml::Value::String(s.clone()),
        serde_json::Value::Array(a) => toml::Value::Array(a.iter().map(json_to_toml).collect::<Result<_, _>>()?),
        serde_json::Value::Object(o) => {
            let mut t = toml::Table::new();
            for (k, v) in o {
                t.insert(k.clone(), json_to_toml(v)?);
            }
            toml::Value::Table(t)
        }
    })
}

/// The deepest key a scenario has is `task.N.step.N.NAME` or `device.NAME.iosched.NAME`;
/// a longer `--set` key is refused before it builds nested tables (a very deep one used to
/// overflow the stack).
const MAX_KEY_DEPTH: usize = 8;

/// Applies one `KEY=VALUE` override: KEY is a dotted path (`vm.swappiness`,
/// `task.0.step.0.passes`, `device.ssd.model`); VALUE is a TOML value, or a bare string.
pub fn apply_set(table: &mut toml::Table, set: &str) -> Result<(), Error> {
    let Some((key, val)) = set.split_once('=') else {
        return Err(Error(format!("--set {set}: expected KEY=VALUE")));
    };
    let key = key.trim();
    if key.is_empty() {
        return Err(Error(format!("--set {set}: empty key")));
    }
    let value: toml::Value = match toml::from_str::<toml::Table>(&format!("v = {}", val.trim())) {
        Ok(mut t) => t.remove("v").expect("parsed table has v"),
        Err(_) => toml::Value::String(val.trim().to_string()),
    };
    let mut parts: Vec<&str> = key.split('.').collect();
    // The kernel spells this sysctl with a hyphen; its underscore form is an alias, written
    // under the kernel's name so that it replaces the file's value.
    if parts == ["vm", "page_cluster"] {
        parts[1] = "page-cluster";
    }
    if parts.len() > MAX_KEY_DEPTH {
        return Err(Error(format!(
            "--set {}...: a key of {} dotted parts; scenario keys have at most {MAX_KEY_DEPTH} \
             (`pagesim describe` lists them)",
            parts[..3].join("."),
            parts.len()
        )));
    }
    let mut root = toml::Value::Table(std::mem::take(table));
    let result = set_path(&mut root, &parts, value, key);
    if let toml::Value::Table(t) = root {
        *table = t;
    }
    result
}

fn set_path(cur: &mut toml::Value, parts: &[&str], value: toml::Value, key: &str) -> Result<(), Error> {
    let (first, rest) = parts.split_first().expect("non-empty path");
    let next: &mut toml::Value = match cur {
        toml::Value::Table(t) => {
            if rest.is_empty() {
                t.insert(first.to_string(), value);
                return Ok(());
            }
            t.entry(first.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()))
        }
        toml::Value::Array(a) => {
            let i: usize =
                first.parse().map_err(|_| Error(format!("--set {key}: \"{first}\" must be an index into an array")))?;
            let len = a.len();
            let slot =
                a.get_mut(i).ok_or_else(|| Error(format!("--set {key}: index {i} is out of range (length {len})")))?;
            if rest.is_empty() {
                *slot = value;
                return Ok(());
            }
            slot
        }
        _ => return Err(Error(format!("--set {key}: \"{first}\" is not inside a table or array"))),
    };
    set_path(next, rest, value, key)
}

/// One documented tunable for `pagesim describe`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Tunable {
    pub key: String,
    pub unit: String,
    pub default: String,
    pub doc: String,
}

/// A unit-less enum value as a scenario writes it (`"write"`, `"catch-up"`).
fn written<T: Serialize>(v: T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        other => format!("{other:?}"),
    }
}

/// Every scenario key with its unit and default (`pagesim describe`). The defaults are
/// those the resolution applies ([`defaults`], `CpuCosts::default()`, `ZswapParams::default()`,
/// the device models'), printed as a scenario would write them.
pub fn describe() -> Vec<Tunable> {
    let t =
        |k: &str, u: &str, d: String, doc: &str| Tunable { key: k.into(), unit: u.into(), default: d, doc: doc.into() };
    let c = CpuCosts::default();
    let z = crate::swap::zswap::ZswapParams::default();
    let mut v = vec![
        t("seed", "integer", defaults::SEED.to_string(), "RNG seed"),
        t("time_limit", "duration", "none".into(), "stop the run at this simulated time"),
        t(
            "sample_interval",
            "duration",
            "none".into(),
            "record a timeline of reads and device I/O at this interval (at least 1ms; doubled as needed to keep at most 2^20 points)",
        ),
        t(
            "watchdog",
            "duration",
            format!("{}s", defaults::WATCHDOG_NS / 1_000_000_000),
            "stop as livelocked when no task completes an operation for this long while I/O or reclaim goes on (0: never)",
        ),
        t("machine.ram", "bytes", "required".into(), "installed RAM (mem=)"),
        t("machine.cpus", "count", defaults::CPUS.to_string(), "CPUs"),
        t("machine.sockets", "count", "1".into(), "sockets the CPUs divide among (lock cache-line transfers)"),
        t("machine.threads_per_core", "count", "1".into(), "SMT threads per core; siblings are adjacent CPU numbers"),
        t(
            "machine.kernel_reserved",
            "bytes",
            format!(
                "ram/{} + {}MiB",
                defaults::KERNEL_RESERVED_RAM_DIVISOR,
                defaults::KERNEL_RESERVED_FIXED_BYTES >> 20
            ),
            "memory the page allocator never gets (memmap, kernel image)",
        ),
        t("kernel.profile", "name", defaults::PROFILE.into(), "kernel profile (pagesim profiles)"),
    ];
    // One key per kind of policy a kernel profile chooses, from the registries.
    v.extend(
        registries()
            .into_iter()
            .filter(|r| r.selected.is_some())
            .map(|r| t(r.scenario_key, "name", "profile's".into(), r.what)),
    );
    v.extend([
        t("kernel.vma_ra_enabled", "bool", defaults::VMA_RA_ENABLED.to_string(), "/sys/kernel/mm/swap/vma_ra_enabled"),
        t(
            "kernel.large_folios",
            "bool",
            "profile's".into(),
            "the files' page cache takes large folios (readahead orders, whole-folio reclaim and fault-around)",
        ),
        t(
            "kernel.memcg_stats_flush_phase",
            "duration",
            "half the profile's flush period".into(),
            "when the periodic memcg stats flush first runs after the start (linux-6.18: reclaim reads flushed values)",
        ),
        t(
            "kernel.anon_mthp",
            "list of sizes",
            "[]".into(),
            "anon mTHP sizes set to `always` (16KB..1MB): write faults on untouched anon memory take large folios",
        ),
        t(
            "kernel.cgroup_version",
            "1|2",
            defaults::CGROUP_VERSION.to_string(),
            "cgroup hierarchy of the memory controller (v1: limit reclaim waits on writeback)",
        ),
        t("vm.swappiness", "0..100 (0..200 on 5.8+)", defaults::SWAPPINESS.to_string(), "vm.swappiness"),
        t(
            "vm.page-cluster",
            "log2 pages",
            defaults::PAGE_CLUSTER.to_string(),
            "vm.page-cluster (also vm.page_cluster)",
        ),
        t("vm.min_free_kbytes", "kB", "sqrt(16 x lowmem kB)".into(), "vm.min_free_kbytes"),
        t(
            "vm.watermark_scale_factor",
            "1/10000",
            defaults::WATERMARK_SCALE_FACTOR.to_string(),
            "vm.watermark_scale_factor (4.6+)",
        ),
        t("vm.dirty_ratio", "percent", "profile's".into(), "vm.dirty_ratio (not with vm.dirty_bytes)"),
        t(
            "vm.dirty_background_ratio",
            "percent",
            "profile's".into(),
            "vm.dirty_background_ratio (not with vm.dirty_background_bytes)",
        ),
        t("vm.dirty_bytes", "bytes", "unset".into(), "vm.dirty_bytes: the dirty limit in bytes, at least 2 pages"),
        t("vm.dirty_background_bytes", "bytes", "unset".into(), "vm.dirty_background_bytes"),
        t(
            "vm.dirty_expire_centisecs",
            "1/100 s",
            defaults::DIRTY_EXPIRE_CENTISECS.to_string(),
            "vm.dirty_expire_centisecs: age at which periodic writeback writes dirty data",
        ),
        t(
            "vm.dirty_writeback_centisecs",
            "1/100 s",
            defaults::DIRTY_WRITEBACK_CENTISECS.to_string(),
            "vm.dirty_writeback_centisecs: flusher period (0: no periodic writeback)",
        ),
        t("cpu.access_ns", "ns", c.access_ns.to_string(), "user access to a resident page"),
        t("cpu.fault_ns", "ns", c.fault_ns.to_string(), "fault entry/exit and page-table walk"),
        t("cpu.zero_page_ns", "ns", c.zero_page_ns.to_string(), "allocate and zero a page"),
        t("cpu.cow_copy_ns", "ns", c.cow_copy_ns.to_string(), "copy-on-write of a shared anon page (wp_page_copy)"),
        t("cpu.swapin_ns", "ns", c.swapin_ns.to_string(), "swap-in software path per page read"),
        t("cpu.scan_ns", "ns", c.scan_ns.to_string(), "reclaim: per page examined on an LRU list"),
        t("cpu.reclaim_ns", "ns", c.reclaim_ns.to_string(), "reclaim: per page unmapped and freed"),
        t("cpu.swapout_ns", "ns", c.swapout_ns.to_string(), "swap-out software path per page written"),
        t("cpu.timeslice_ns", "ns", c.timeslice_ns.to_string(), "scheduler time slice"),
        t("cpu.read_syscall_ns", "ns", c.read_syscall_ns.to_string(), "read(2)/pread(2) entry, fd lookup, exit"),
        t("cpu.write_syscall_ns", "ns", c.write_syscall_ns.to_string(), "write(2)/pwrite(2)/fsync(2) entry and exit"),
        t("cpu.writepage_ns", "ns", c.writepage_ns.to_string(), "writeback path per page written"),
        t("cpu.copy_page_ns", "ns", c.copy_page_ns.to_string(), "lookup and copy of one cached page to the user"),
        t(
            "cpu.pagecache_read_ns",
            "ns",
            c.pagecache_read_ns.to_string(),
            "page-cache read path per page submitted (alloc, insert, bio, completion)",
        ),
        t(
            "cpu.remote_wakeup_ns",
            "ns",
            c.remote_wakeup_ns.to_string(),
            "I/O completion on device.NAME.irq_cpu waking a task on another, idle CPU (IPI, idle exit)",
        ),
        t("cpu.fork_ns", "ns", c.fork_ns.to_string(), "fork(2) of an empty process (with exit_ns: fork, exit, wait)"),
        t("cpu.clone_ns", "ns", c.clone_ns.to_string(), "clone(2) of a thread, its exit and its join (one CPU)"),
        t("cpu.fork_pte_ns", "ns", c.fork_pte_ns.to_string(), "fork: per page mapped (copy_page_range, and its unmap)"),
        t("cpu.exec_ns", "ns", c.exec_ns.to_string(), "execve(2) of a dynamically linked program up to main"),
        t("cpu.exit_ns", "ns", c.exit_ns.to_string(), "exit(2) and the parent's wait, without the address space"),
        t("cpu.unmap_page_ns", "ns", c.unmap_page_ns.to_string(), "munmap/exit: per private page freed"),
        t("cpu.swap_slot_ns", "ns", c.swap_slot_ns.to_string(), "allocate one swap slot under its swap_map lock"),
        t("cpu.swap_map_ns", "ns", c.swap_map_ns.to_string(), "change one swap_map byte under its lock"),
        t("cpu.swap_tree_ns", "ns", c.swap_tree_ns.to_string(), "insert or delete a swap-cache entry under its tree lock"),
        t("cpu.swap_tag_ns", "ns", c.swap_tag_ns.to_string(), "set or clear a swap-cache writeback tag (<=4.9)"),
        t("cpu.lru_page_ns", "ns", c.lru_page_ns.to_string(), "move one page on or off an LRU list under the LRU lock"),
        t("cpu.line_same_socket_ns", "ns", c.line_same_socket_ns.to_string(), "modified cache line to another core, same socket"),
        t("cpu.line_cross_socket_ns", "ns", c.line_cross_socket_ns.to_string(), "modified cache line to the other socket"),
        t("device.NAME.model", "name", "required".into(), "device timing model (see device.<model>.* below)"),
        t("swap[].device", "name", "required".into(), "device holding the swap area"),
        t("swap[].size", "bytes", "required".into(), "swap area size"),
        t("swap[].priority", "integer", "-1, -2, ...".into(), "swapon -p"),
        t(
            "swap[].file",
            "bool",
            "false".into(),
            "a swap file rather than a partition: no run of slots for a large folio (split before swap-out)",
        ),
        t("memcg.NAME.max", "bytes", "unlimited".into(), "memory.max / memory.limit_in_bytes"),
        t("memcg.NAME.parent", "name", "root".into(), "the parent memcg (charges and limits are hierarchical)"),
        t("memcg.NAME.swap_max", "bytes", "unlimited".into(), "memory.swap.max (cgroup v2)"),
        t("memcg.NAME.swappiness", "0..100", "parent's".into(), "memory.swappiness (cgroup v1)"),
        t("memcg.NAME.low", "bytes", "0".into(), "memory.low (cgroup v2): best-effort reclaim protection"),
        t("memcg.NAME.min", "bytes", "0".into(), "memory.min (cgroup v2): hard reclaim protection"),
        t("memcg.NAME.high", "bytes", "unlimited".into(), "memory.high (cgroup v2): reclaim and throttle above it"),
        t("memcg.NAME.soft_limit", "bytes", "unlimited".into(), "memory.soft_limit_in_bytes (cgroup v1)"),
        t("memcg.NAME.use_hierarchy", "bool", "parent's".into(), "memory.use_hierarchy (cgroup v1; 3.x root: false)"),
        t("file.NAME.device", "name", "required".into(), "device holding the file (one extent after the swap areas)"),
        t("file.NAME.size", "bytes", "required".into(), "file size at the start (0: an empty file that appends fill)"),
        t(
            "file.NAME.max_size",
            "bytes",
            "file's size".into(),
            "space on the device: the size appends and writes past the end may grow the file to",
        ),
        t("file.NAME.per_task", "bool", "false".into(), "each task instance reads its own copy"),
        t(
            "region.NAME.kind",
            "anon|shmem|file",
            "required".into(),
            "MAP_PRIVATE or MAP_SHARED anonymous mapping, or a MAP_SHARED file mapping",
        ),
        t("region.NAME.size", "bytes", "required (file: the file's)".into(), "mapping size"),
        t("region.NAME.file", "name", "none".into(), "the file a file region maps"),
        t(
            "region.NAME.madvise",
            "normal|sequential|random|willneed",
            written(defaults::MADVISE),
            "madvise hint of a file region",
        ),
        t(
            "region.NAME.writable",
            "bool",
            "false".into(),
            "a file region mapped PROT_READ|PROT_WRITE: its steps may write (and msync)",
        ),
        t(
            "region.NAME.exec",
            "bool",
            "false".into(),
            "a file region that is a program's text (PROT_EXEC: VM_EXEC pages get another trip on the active list)",
        ),
        t(
            "region.NAME.compress_ratio",
            "ratio >= 1",
            "none".into(),
            "page content: mean lzo compression ratio of the data (log-normal per page); none: every page \
             holds the one non-zero word the workload writes (docs/model.md, Page content)",
        ),
        t("region.NAME.compress_sigma", "0..3", "0".into(), "standard deviation of the log of a page's ratio"),
        t("region.NAME.incompressible_percent", "percent", "0".into(), "pages that do not compress"),
        t("region.NAME.zero_percent", "percent", "0".into(), "pages that are all zero (same-filled)"),
        t("zswap.enabled", "bool", z.enabled.to_string(), "/sys/module/zswap/parameters/enabled"),
        t(
            "zswap.max_pool_percent",
            "percent of RAM",
            z.max_pool_percent.to_string(),
            "zswap max_pool_percent: the compressed pool's limit",
        ),
        t(
            "zswap.compressor",
            &crate::mm::compress::names().replace(", ", "|"),
            z.compressor.clone(),
            "zswap compressor (CONFIG_ZSWAP_COMPRESSOR_DEFAULT); sizes and CPU costs in docs/model.md",
        ),
        t(
            "zswap.accept_threshold_percent",
            "percent",
            z.accept_threshold_percent.to_string(),
            "a full pool accepts stores again at or below this percent of its limit (5.6+)",
        ),
        t(
            "zswap.shrinker_enabled",
            "bool",
            z.shrinker_enabled.to_string(),
            "zswap memory shrinker (6.8+, CONFIG_ZSWAP_SHRINKER_DEFAULT_ON=n); not modelled, must stay false",
        ),
        t(
            "zswap.ever_enabled",
            "bool",
            "as zswap.enabled".into(),
            "zswap was on since boot (zswap_never_enabled false): 6.12+ then reads no large folio back",
        ),
        t("task[].name", "string", "required".into(), "task name"),
        t("task[].memcg", "name", "root".into(), "memory cgroup"),
        t(
            "task[].count",
            "count",
            defaults::TASK_COUNT.to_string(),
            "identical processes (1 to 100000); none for a program other tasks start",
        ),
        t("task[].start", "duration", "0".into(), "start time (not for a program other tasks start)"),
        t("task[].stagger", "duration", "0".into(), "instance k starts at start + k x stagger"),
        t("task[].cpus", "list of CPU numbers", "any".into(), "CPUs its processes may run on (taskset -c)"),
        t(
            "task[].program.trace",
            "path",
            "none: steps".into(),
            "a pagesim capture trace replayed instead of steps (relative to the scenario's directory)",
        ),
        t(
            "task[].program.device",
            "name",
            "the one device without swap".into(),
            "device the trace's files are on (each a file of the size the trace gave it)",
        ),
        t(
            "task[].program.format",
            "trace format",
            "pgt".into(),
            "another tool's trace (oracleGeneral, msr...): its pages loaded through one file's mapping",
        ),
        t(
            "task[].program.sample",
            "0..1",
            "1".into(),
            "another tool's trace: the fraction of its pages replayed (SHARDS: by the page's hash)",
        ),
        t(
            "task[].program.ns_per_insn",
            "ns",
            "the trace's, else 0.25".into(),
            "CPU time per instruction the program executed (capture --native measures it)",
        ),
        t(
            "task[].program.cached",
            "{ PATH = [[first, end], ...] }",
            "none: cold".into(),
            "pages of the trace's files cached at the start, charged to the root memcg (shared libraries)",
        ),
        t("task[].step[].region", "name", "region or file".into(), "region touched"),
        t("task[].step[].file", "name", "region or file".into(), "file read with read(2)/pread(2)"),
        t(
            "task[].step[].pattern",
            "seq|reverse|random|zipf|stride|special",
            "required".into(),
            "access pattern (not on fsync, fdatasync, sync_file_range, truncate)",
        ),
        t(
            "task[].step[].fsync_every",
            "calls",
            "never".into(),
            "write step on a file: fsync(2) after every N write calls",
        ),
        t(
            "task[].step[].record",
            "bytes",
            format!("{}KB", defaults::RECORD_BYTES >> 10),
            "bytes per read call (file steps)",
        ),
        t("task[].step[].rate", "bytes/s", "unlimited".into(), "streaming rate of a file step"),
        t(
            "task[].step[].pace",
            "catch-up|steady",
            written(defaults::PACE),
            "rate pacing: catch-up reads back to back after falling behind; steady sleeps out each \
             record's interval and never makes up lost time",
        ),
        t(
            "task[].step[].then_next",
            "probability",
            defaults::THEN_NEXT.to_string(),
            "chance an access goes to the next record",
        ),
        t("task[].step[].cluster", "bytes", "one record".into(), "zipf: size of the hot clusters ranks go to"),
        t("task[].step[].shared_fd", "bool", "false".into(), "instances share one open file (one ra state)"),
        t("task[].step[].fadvise", "normal|sequential|random|willneed", "none".into(), "posix_fadvise at open"),
        t(
            "task[].step[].passes",
            "count",
            defaults::PASSES.to_string(),
            "passes (seq/stride) or accesses/pages (random/zipf/special)",
        ),
        t("task[].step[].accesses", "count", "pages".into(), "number of accesses (random/zipf/special)"),
        t(
            "task[].step[].op",
            "read|write|pread|pwrite|append|fsync|fdatasync|sync_file_range|truncate|msync|spawn|fork|wait|exec|\
             mmap|munmap|brk|pause",
            written(defaults::OP),
            "access type (file steps: read, pread, write, pwrite, append, or a whole-file call; msync on a writable file region), \
             or a lifecycle call: spawn (job server), fork, wait, exec, mmap, munmap, brk, pause (a server's \
             last step: keep its memory until the run ends)",
        ),
        t("task[].step[].task", "name", "required".into(), "spawn, fork, exec: the program (task) the process runs"),
        t("task[].step[].count", "count", "1".into(), "spawn, fork: processes started"),
        t("task[].step[].jobs", "count", "count".into(), "spawn: the most children running at once (make -j)"),
        t("task[].step[].size", "bytes", "required".into(), "brk: the heap region's size from now on"),
        t(
            "task[].step[].size_sigma",
            "0..3",
            "0".into(),
            "brk: each process draws its size lognormally around size (sigma of the log)",
        ),
        t("task[].step[].stride", "pages", defaults::STRIDE_PAGES.to_string(), "stride"),
        t("task[].step[].zipf_s", "exponent", defaults::ZIPF_S.to_string(), "zipf skew"),
        t(
            "task[].step[].special_pct",
            "percent",
            defaults::SPECIAL_PCT.to_string(),
            "special: share of units that are hot (sysbench --oltp-dist-pct)",
        ),
        t(
            "task[].step[].special_res",
            "percent",
            defaults::SPECIAL_RES.to_string(),
            "special: share of draws to the hot units (--oltp-dist-res)",
        ),
        t(
            "task[].step[].special_iter",
            "count",
            defaults::SPECIAL_ITER.to_string(),
            "special: uniform draws averaged for the rest (--oltp-dist-iter)",
        ),
        t("task[].step[].think", "duration", "0".into(), "CPU time between accesses"),
    ]);
    for (model, _, params) in crate::device::describe() {
        for p in params {
            v.push(Tunable {
                key: format!("device.<{model}>.{}", p.key),
                unit: p.unit.into(),
                default: p.default,
                doc: p.doc.into(),
            });
        }
    }
    v
}

/// [`describe`] as JSON (for the Python API).
pub fn describe_json() -> serde_json::Value {
    serde_json::to_value(describe()).expect("tunables serialize")
}

/// The kernel profiles as JSON (for the Python API): name, description and, per kind the
/// profile chooses ([`registries`]), the policy it selects under the kind's name.
pub fn profiles_json() -> serde_json::Value {
    serde_json::Value::Array(
        PROFILES
            .iter()
            .map(|p| {
                let mut o = serde_json::Map::new();
                o.insert("name".into(), p.name.into());
                o.insert("description".into(), p.description.into());
                for (kind, name) in p.policies() {
                    o.insert(kind.into(), name.into());
                }
                serde_json::Value::Object(o)
            })
            .collect(),
    )
}

/// [`registries`] as JSON (for the Python API): kind, scenario key, what an entry is, and
/// the entries' names and descriptions.
pub fn registries_json() -> serde_json::Value {
    serde_json::to_value(registries()).expect("registries serialize")
}

#[cfg(test)]
mod tests;
