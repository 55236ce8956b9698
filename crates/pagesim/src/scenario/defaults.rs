//! Every default of a scenario key that has one, written once.
//!
//! The resolution ([`super::Config`]) applies them and `pagesim describe` prints them from
//! here; the field docs of [`super::ScenarioFile`] link here instead of repeating the
//! numbers. Defaults that belong to a subsystem's own parameter table stay with it:
//! [`super::CpuCosts::default`], [`crate::swap::zswap::ZswapParams::default`], each device
//! model's parameters (device/), and the kernel profile's policies ([`super::Profile`]).
//! A key whose default is "absent" (no time limit, no memcg limit, no fadvise) or the type's
//! zero has no constant.

use super::{AccessOp, Madvise, Pace};

/// `seed`: the RNG seed.
pub const SEED: u64 = 1;
/// The most processes a `[[task]]` may start (`count`): far beyond the seeds' 200 readers,
/// and a bound that keeps a typo from allocating a task table larger than the host.
pub const MAX_TASK_COUNT: u32 = 100_000;
/// The finest `sample_interval`: a timeline point per simulated millisecond. (Finer ones
/// made a point per nanosecond of a run, gigabytes of them.)
pub const MIN_SAMPLE_INTERVAL_NS: u64 = 1_000_000;
/// The most timeline points a run keeps: past it, every other point is dropped and the
/// interval doubles, so a long run's timeline stays within a few tens of MB.
pub const MAX_TIMELINE_POINTS: usize = 1 << 20;
/// `watchdog`: a minute of simulated time without a completed operation while the machine
/// is busy. The longest legitimate wait of a task is one operation (a read call of a whole
/// record on a slow, congested device), seconds at most.
pub const WATCHDOG_NS: u64 = 60_000_000_000;
/// `machine.cpus`.
pub const CPUS: u32 = 1;
/// `machine.kernel_reserved` is RAM / this (the 64-byte `struct page` per 4 KiB page) ...
pub const KERNEL_RESERVED_RAM_DIVISOR: u64 = 64;
/// ... plus this many bytes (kernel image and early allocations).
pub const KERNEL_RESERVED_FIXED_BYTES: u64 = 32 << 20;
/// `kernel.profile`.
pub const PROFILE: &str = super::profile::DEFAULT_PROFILE;
/// `kernel.vma_ra_enabled`: /sys/kernel/mm/swap/vma_ra_enabled.
pub const VMA_RA_ENABLED: bool = true;
/// `kernel.cgroup_version`: the memory controller on the unified (v2) hierarchy.
pub const CGROUP_VERSION: u32 = 2;
/// `vm.swappiness`.
pub const SWAPPINESS: u32 = 60;
/// `vm.page-cluster`: log2 of the swap readahead window (8 pages).
pub const PAGE_CLUSTER: u32 = 3;
/// `vm.dirty_expire_centisecs` (every kernel since 2.6.0).
pub const DIRTY_EXPIRE_CENTISECS: u32 = 3000;
/// `vm.dirty_writeback_centisecs`.
pub const DIRTY_WRITEBACK_CENTISECS: u32 = 500;
/// `vm.watermark_scale_factor`, in 1/10000 of memory (kernels that have it, ≥4.6).
pub const WATERMARK_SCALE_FACTOR: u64 = 10;
/// `task[].count`: processes started from one `[[task]]`.
pub const TASK_COUNT: u32 = 1;
/// `region.NAME.madvise` of a file region.
pub const MADVISE: Madvise = Madvise::Normal;
/// `task[].step[].record`: bytes per read(2) call of a file step.
pub const RECORD_BYTES: u64 = 4096;
/// `task[].step[].pace` of a step with a rate.
pub const PACE: Pace = Pace::CatchUp;
/// `task[].step[].then_next`.
pub const THEN_NEXT: f64 = 0.0;
/// `task[].step[].passes`.
pub const PASSES: u64 = 1;
/// `task[].step[].op` of a region step (a file step names its op).
pub const OP: AccessOp = AccessOp::Write;
/// `task[].step[].stride`, pages.
pub const STRIDE_PAGES: u64 = 16;
/// `task[].step[].zipf_s`.
pub const ZIPF_S: f64 = 0.99;
/// `task[].step[].special_pct`: sysbench 0.4's `--oltp-dist-pct`.
pub const SPECIAL_PCT: u32 = 1;
/// `task[].step[].special_res`: `--oltp-dist-res`.
pub const SPECIAL_RES: u32 = 75;
/// `task[].step[].special_iter`: `--oltp-dist-iter`.
pub const SPECIAL_ITER: u32 = 12;

/// The kernel's reserve on a machine with `ram` bytes when the scenario does not give
/// `machine.kernel_reserved`.
pub fn kernel_reserved(ram: u64) -> u64 {
    ram / KERNEL_RESERVED_RAM_DIVISOR + KERNEL_RESERVED_FIXED_BYTES
}

/// `swap[i].priority` (`swapon -p`): -1, -2, ... in swapon order, as the kernel numbers
/// areas swapped on without a priority.
pub fn swap_priority(i: usize) -> i32 {
    -1 - i as i32
}

/// CPU time per instruction of a replayed trace that has no measurement of its own, ns:
/// gzip's, measured on this project's machine (`pagesim capture --native`: 0.17 ns; 3 GHz
/// at two instructions a cycle), rounded up for code that stalls more.
pub const NS_PER_INSN: f64 = 0.25;
