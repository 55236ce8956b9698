//! pagesim-host: runs a pagesim scenario on the host kernel and measures what the kernel did,
//! the host half of a later `pagesim validate` (which will run the same scenario in the
//! simulator and compare the counters).
//!
//! The pieces, bottom up:
//!
//! ```text
//!   sysfs        read/write one /proc or /sys value; "[selected]" choices
//!   cleanup      every setup registers its undo here: run once, on Drop or on SIGINT/SIGTERM
//!   journal      the pending undos on disk, and recovery after a process killed by SIGKILL
//!   tunable      Tunable (sysctl/sysfs value restored on drop), Zswap, drop_caches()
//!   swapfile     SwapFile (fallocate, swap header, swapon; swapoff + remove), /proc/swaps
//!   zram         Zram (disksize, swap header, swapon; swapoff + reset)
//!   memcg        Memcg (v1 or v2 child group; wait until empty + rmdir), memory.stat
//!   tunables     HostTunables: the host's mm settings as a typed, serializable struct
//!   measure      /proc/vmstat snapshots and deltas, DAMON scheme stats, /proc/meminfo
//!   probe        the block device of a directory: queue settings, O_DIRECT latencies
//!   cpu          pinning a process to CPUs; the CPU taking a disk's completion interrupts
//!   load         the load generator: a scenario's tasks as real processes (pagesim-load)
//!   run          run_on_host(): set up, run pagesim-load N times cold, measure, clean up
//! ```
//!
//! It only touches what it creates: swap files and zram devices it set up, cgroups it made
//! (named `pagesim-<pid>-<n>-...`), tunables it changed (restored to the value read before),
//! and processes it started (ended by PID). The system's DAMON kdamond is only read (and
//! asked to refresh its scheme statistics). The library never prints; cleanup failures that
//! happen in `Drop`, where nobody can receive an error, are kept for
//! [`cleanup::take_errors`].

pub mod cleanup;
pub mod cpu;
pub mod flushtrace;
pub mod journal;
pub mod load;
pub mod measure;
pub mod memcg;
pub mod probe;
pub mod run;
pub mod swapfile;
pub mod sysfs;
pub mod tunable;
pub mod tunables;
pub mod zram;

pub use memcg::{CgroupMount, CgroupVersion, Memcg, MemoryStat};
pub use pagesim::Error;
pub use run::{run_on_host, run_on_host_with, HostOptions, HostRun, HostRuns};
pub use swapfile::SwapFile;
pub use tunable::{drop_caches, Tunable, Zswap};
pub use tunables::HostTunables;
pub use zram::Zram;

/// Whether the process runs as root (effective uid 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The errno of the last failed libc call, as an io::Error for messages.
pub(crate) fn last_os_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// The host's base page size; pagesim models 4 KiB pages.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions; _SC_PAGESIZE is always supported on Linux.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 {
        v as usize
    } else {
        4096
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    use std::path::{Path, PathBuf};

    /// A fresh directory under the system temp dir, unique per process and call, removed
    /// with everything in it when the value is dropped (a test leaves nothing behind).
    pub fn temp_dir(tag: &str) -> TempDir {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let d = std::env::temp_dir().join(format!("pagesim-host-test-{}-{tag}-{n}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }

    /// A directory of [`temp_dir`]: a path while it lives, removed when dropped.
    pub struct TempDir(PathBuf);

    impl std::ops::Deref for TempDir {
        type Target = PathBuf;
        fn deref(&self) -> &PathBuf {
            &self.0
        }
    }

    impl AsRef<Path> for TempDir {
        fn as_ref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Writes `value` to `dir/rel`, creating the parents (a fake sysfs or procfs file).
    pub fn fake_file(dir: &Path, rel: &str, value: &str) -> PathBuf {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, value).unwrap();
        p
    }
}
