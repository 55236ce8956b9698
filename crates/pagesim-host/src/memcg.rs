//! Memory cgroups that this process creates: a uniquely named child group with a limit,
//! and its memory.stat. Works with the v1 memory controller (memory.limit_in_bytes,
//! memory.memsw.limit_in_bytes) and with v2 (memory.max, memory.swap.max).
//!
//! Removal never kills anything: it waits until the group has no processes left (the load
//! generator's processes are ended by PID elsewhere) and then removes the directory. A group
//! that stays populated is left in place and reported.

use crate::cleanup::{Cleanup, Undo};
use crate::sysfs;
use crate::Error;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// How long removal waits for the group's processes to exit.
pub const EMPTY_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupVersion {
    V1,
    V2,
}

/// Where memory cgroups can be made on this host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CgroupMount {
    pub version: CgroupVersion,
    /// The mount point: the root of the memory hierarchy.
    pub root: PathBuf,
}

impl CgroupMount {
    /// The v1 memory controller if it is mounted, else a v2 hierarchy whose root enables the
    /// memory controller for its children. Reads `<fs_root>/proc/mounts` (`/` on the host).
    pub fn detect_in(fs_root: &Path) -> Result<CgroupMount, Error> {
        let mounts_path = fs_root.join("proc/mounts");
        let mounts = std::fs::read_to_string(&mounts_path)
            .map_err(|e| Error(format!("{}: cannot read: {e}", mounts_path.display())))?;
        let (v1, v2) = parse_mounts(&mounts);
        let under = |p: &Path| fs_root.join(p.strip_prefix("/").unwrap_or(p));
        if let Some(p) = v1 {
            return Ok(CgroupMount { version: CgroupVersion::V1, root: under(&p) });
        }
        for p in v2 {
            let root = under(&p);
            let enabled = sysfs::read_opt(&root.join("cgroup.subtree_control")).unwrap_or_default();
            if enabled.split_whitespace().any(|c| c == "memory") {
                return Ok(CgroupMount { version: CgroupVersion::V2, root });
            }
        }
        Err(Error(
            "no usable memory cgroup: the v1 memory controller is not mounted and no cgroup2 hierarchy \
             enables \"memory\" in its root cgroup.subtree_control (pagesim-host does not change that)"
                .into(),
        ))
    }

    /// [`CgroupMount::detect_in`] on the host.
    pub fn detect() -> Result<CgroupMount, Error> {
        Self::detect_in(Path::new("/"))
    }
}

/// The v1 memory controller's mount point and the cgroup2 mount points in /proc/mounts.
pub fn parse_mounts(text: &str) -> (Option<PathBuf>, Vec<PathBuf>) {
    let mut v1 = None;
    let mut v2 = Vec::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        let dir = PathBuf::from(sysfs::unescape_octal(f[1]));
        match f[2] {
            "cgroup" if v1.is_none() && f[3].split(',').any(|o| o == "memory") => v1 = Some(dir),
            "cgroup2" => v2.push(dir),
            _ => {}
        }
    }
    (v1, v2)
}

/// A memory cgroup created by this process.
#[derive(Debug)]
pub struct Memcg {
    name: String,
    dir: PathBuf,
    version: CgroupVersion,
    cleanup: Cleanup,
}

impl Memcg {
    /// Creates `pagesim-<pid>-<n>-<name>` under the root of the host's memory hierarchy with
    /// a memory limit (`None`: unlimited) and optionally a swap limit.
    pub fn create(name: &str, max_bytes: Option<u64>, swap_max: Option<u64>) -> Result<Memcg, Error> {
        let m = CgroupMount::detect()?;
        let cg = Self::create_in(&m, &m.root, name, EMPTY_TIMEOUT)?;
        cg.set_limits(max_bytes, swap_max)?;
        Ok(cg)
    }

    /// Creates an unlimited group `pagesim-<pid>-<n>-<name>` under `parent` (a directory of
    /// `mount`'s hierarchy). Removal waits up to `empty_timeout` for the group to empty.
    pub fn create_in(mount: &CgroupMount, parent: &Path, name: &str, empty_timeout: Duration) -> Result<Memcg, Error> {
        let _op = crate::cleanup::op();
        static N: AtomicU32 = AtomicU32::new(0);
        let clean: String =
            name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
        let dirname = format!("pagesim-{}-{}-{clean}", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
        let dir = parent.join(dirname);
        std::fs::create_dir(&dir).map_err(|e| Error(format!("mkdir {}: {e}", dir.display())))?;
        let cleanup =
            Cleanup::undo(Undo::RemoveCgroup { dir: dir.clone(), timeout_ms: empty_timeout.as_millis() as u64 });
        Ok(Memcg { name: name.to_string(), dir, version: mount.version, cleanup })
    }

    /// Sets the v1 soft limit (memory.soft_limit_in_bytes); v2 has none.
    pub fn set_soft_limit(&self, bytes: u64) -> Result<(), Error> {
        match self.version {
            CgroupVersion::V1 => sysfs::write(&self.dir.join("memory.soft_limit_in_bytes"), &bytes.to_string()),
            CgroupVersion::V2 => Err(Error(format!(
                "{}: memory.soft_limit_in_bytes is a cgroup v1 file; this host mounts the memory controller on v2",
                self.dir.display()
            ))),
        }
    }

    /// Sets v2's memory.low, memory.min and memory.high (those given); v1 has none of them.
    pub fn set_v2_protection(&self, low: Option<u64>, min: Option<u64>, high: Option<u64>) -> Result<(), Error> {
        for (file, v) in [("memory.low", low), ("memory.min", min), ("memory.high", high)] {
            let Some(v) = v else { continue };
            match self.version {
                CgroupVersion::V2 => sysfs::write(&self.dir.join(file), &v.to_string())?,
                CgroupVersion::V1 => {
                    return Err(Error(format!(
                        "{}: {file} is a cgroup v2 file; this host mounts the memory controller on v1",
                        self.dir.display()
                    )))
                }
            }
        }
        Ok(())
    }

    /// Sets the memory limit (`None`: unlimited) and the swap limit. v1: memory.limit_in_bytes
    /// and memory.memsw.limit_in_bytes (= memory + swap, so written after the memory limit);
    /// v2: memory.max and memory.swap.max.
    pub fn set_limits(&self, max_bytes: Option<u64>, swap_max: Option<u64>) -> Result<(), Error> {
        let _op = crate::cleanup::op();
        match self.version {
            CgroupVersion::V1 => {
                if let Some(m) = max_bytes {
                    sysfs::write(&self.dir.join("memory.limit_in_bytes"), &m.to_string())?;
                }
                if let Some(s) = swap_max {
                    let memsw = self.dir.join("memory.memsw.limit_in_bytes");
                    if !memsw.exists() {
                        return Err(Error(format!(
                            "{}: a swap limit needs swap accounting (memory.memsw.*), which this kernel lacks",
                            self.dir.display()
                        )));
                    }
                    let total = max_bytes.map_or(u64::MAX / 2, |m| m.saturating_add(s));
                    sysfs::write(&memsw, &total.to_string())?;
                }
            }
            CgroupVersion::V2 => {
                if let Some(m) = max_bytes {
                    sysfs::write(&self.dir.join("memory.max"), &m.to_string())?;
                }
                if let Some(s) = swap_max {
                    sysfs::write(&self.dir.join("memory.swap.max"), &s.to_string())?;
                }
            }
        }
        Ok(())
    }

    /// The scenario's name for the group.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The group's directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    /// v1 only: the group's memory.swappiness (v2 uses vm.swappiness for every group).
    pub fn set_swappiness(&self, swappiness: u32) -> Result<(), Error> {
        let _op = crate::cleanup::op();
        match self.version {
            CgroupVersion::V1 => sysfs::write(&self.dir.join("memory.swappiness"), &swappiness.to_string()),
            CgroupVersion::V2 => Ok(()),
        }
    }

    /// Moves process `pid` into the group.
    pub fn add_pid(&self, pid: i32) -> Result<(), Error> {
        let _op = crate::cleanup::op();
        sysfs::write(&self.dir.join("cgroup.procs"), &pid.to_string())
    }

    /// The processes in the group.
    pub fn procs(&self) -> Result<Vec<i32>, Error> {
        procs(&self.dir)
    }

    pub fn stat(&self) -> Result<MemoryStat, Error> {
        let p = self.dir.join("memory.stat");
        let text = std::fs::read_to_string(&p).map_err(|e| Error(format!("{}: {e}", p.display())))?;
        Ok(MemoryStat::parse(self.version, &text))
    }

    /// Highest usage seen (v1 memory.max_usage_in_bytes, v2 memory.peak), bytes.
    pub fn peak_bytes(&self) -> Option<u64> {
        let f = match self.version {
            CgroupVersion::V1 => "memory.max_usage_in_bytes",
            CgroupVersion::V2 => "memory.peak",
        };
        sysfs::read_u64(&self.dir.join(f))
    }

    /// Times the limit was hit (v1 memory.failcnt, v2 `max` in memory.events).
    pub fn failcnt(&self) -> Option<u64> {
        match self.version {
            CgroupVersion::V1 => sysfs::read_u64(&self.dir.join("memory.failcnt")),
            CgroupVersion::V2 => {
                let t = std::fs::read_to_string(self.dir.join("memory.events")).ok()?;
                sysfs::parse_key_values(&t).get("max").copied()
            }
        }
    }

    /// Waits for the group to empty and removes it now.
    pub fn remove(self) -> Result<(), Error> {
        self.cleanup.run()
    }
}

fn procs(dir: &Path) -> Result<Vec<i32>, Error> {
    let p = dir.join("cgroup.procs");
    let t = std::fs::read_to_string(&p).map_err(|e| Error(format!("{}: {e}", p.display())))?;
    Ok(t.split_whitespace().filter_map(|s| s.parse().ok()).collect())
}

pub(crate) fn remove_when_empty(dir: &Path, timeout: Duration) -> Result<(), String> {
    if !dir.exists() {
        return Ok(());
    }
    let start = Instant::now();
    loop {
        // cgroupfs always has cgroup.procs; only a stand-in directory lacks it.
        let left = if dir.join("cgroup.procs").exists() { procs(dir).map_err(|e| e.0)? } else { Vec::new() };
        if left.is_empty() {
            break;
        }
        if start.elapsed() >= timeout {
            return Err(format!(
                "still has processes {left:?} after {:?}; left in place (pagesim-host kills nothing it did not start)",
                timeout
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // A group whose last task just exited can be busy while the exit is accounted, and a
    // parent whose child group was just removed while that child is still going offline
    // (seen for over a second when pagesim-load failed at once: 5 groups of a run left).
    let mut tries = 0;
    loop {
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && tries < 500 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(format!("rmdir: {e}")),
        }
    }
}

/// A memory.stat snapshot. v1 and v2 use different names for the same quantities
/// (v1 `rss`, `cache`, `mapped_file`; v2 `anon`, `file`, `file_mapped`); [`MemoryStat::get`]
/// accepts the v2 name on both.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MemoryStat {
    pub version: CgroupVersion,
    /// Every line as read.
    pub raw: BTreeMap<String, u64>,
}

/// (v2 name, v1 name) of the fields both versions report.
pub const STAT_NAMES: &[(&str, &str)] = &[
    ("anon", "rss"),
    ("file", "cache"),
    ("shmem", "shmem"),
    ("file_mapped", "mapped_file"),
    ("file_dirty", "dirty"),
    ("file_writeback", "writeback"),
    ("anon_thp", "rss_huge"),
    ("inactive_anon", "inactive_anon"),
    ("active_anon", "active_anon"),
    ("inactive_file", "inactive_file"),
    ("active_file", "active_file"),
    ("unevictable", "unevictable"),
    ("pgfault", "pgfault"),
    ("pgmajfault", "pgmajfault"),
];

impl MemoryStat {
    pub fn parse(version: CgroupVersion, text: &str) -> MemoryStat {
        MemoryStat { version, raw: sysfs::parse_key_values(text) }
    }

    /// A field by its v2 name (translated to the v1 name on v1), or by its own name.
    pub fn get(&self, v2_name: &str) -> Option<u64> {
        let name = match self.version {
            CgroupVersion::V2 => v2_name,
            CgroupVersion::V1 => STAT_NAMES.iter().find(|(a, _)| *a == v2_name).map_or(v2_name, |(_, b)| b),
        };
        self.raw.get(name).copied()
    }

    /// The fields both versions report, under their v2 names.
    pub fn common(&self) -> BTreeMap<String, u64> {
        STAT_NAMES.iter().filter_map(|(n, _)| Some((n.to_string(), self.get(n)?))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{fake_file, temp_dir};

    #[test]
    fn mounts_pick_v1_memory_or_an_enabled_v2() {
        let mounts = "cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n\
                      cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n\
                      cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";
        let (v1, v2) = parse_mounts(mounts);
        assert_eq!(v1.unwrap(), Path::new("/sys/fs/cgroup/memory"));
        assert_eq!(v2, [PathBuf::from("/sys/fs/cgroup/unified")]);

        let d = temp_dir("mounts");
        fake_file(&d, "proc/mounts", mounts);
        let m = CgroupMount::detect_in(&d).unwrap();
        assert_eq!((m.version, m.root.clone()), (CgroupVersion::V1, d.join("sys/fs/cgroup/memory")));
        // Only an empty cgroup2 (this VM's /sys/fs/cgroup/unified): not usable.
        fake_file(&d, "proc/mounts", "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n");
        fake_file(&d, "sys/fs/cgroup/unified/cgroup.subtree_control", "\n");
        let e = CgroupMount::detect_in(&d).unwrap_err();
        assert!(e.0.contains("no usable memory cgroup"), "{e}");
        fake_file(&d, "sys/fs/cgroup/unified/cgroup.subtree_control", "cpu memory\n");
        assert_eq!(CgroupMount::detect_in(&d).unwrap().version, CgroupVersion::V2);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn memory_stat_names_translate_between_versions() {
        let v1 = MemoryStat::parse(CgroupVersion::V1, "cache 4096\nrss 8192\nswap 0\npgmajfault 3\ntotal_rss 8192\n");
        assert_eq!(v1.get("anon"), Some(8192));
        assert_eq!(v1.get("file"), Some(4096));
        assert_eq!(v1.get("swap"), Some(0));
        assert_eq!(v1.common()["pgmajfault"], 3);
        let v2 = MemoryStat::parse(CgroupVersion::V2, "anon 100\nfile 200\npgscan 5\n");
        assert_eq!((v2.get("anon"), v2.get("pgscan"), v2.get("rss")), (Some(100), Some(5), None));
    }

    #[test]
    fn limits_are_written_and_a_populated_group_is_left_alone() {
        // A temporary directory stands in for cgroupfs: mkdir makes no control files there,
        // so the test creates the ones the kernel would.
        let d = temp_dir("memcg");
        let mount = CgroupMount { version: CgroupVersion::V1, root: d.clone() };
        let cg = Memcg::create_in(&mount, &d, "a/b", Duration::ZERO).unwrap();
        let g = cg.path().to_path_buf();
        let dirname = g.file_name().unwrap().to_string_lossy().into_owned();
        assert!(dirname.starts_with(&format!("pagesim-{}-", std::process::id())), "{dirname}");
        assert!(dirname.ends_with("-a_b"), "{dirname}");
        let err = cg.set_limits(Some(1), None).unwrap_err();
        assert!(err.0.contains("memory.limit_in_bytes"), "{err}");
        let err = cg.set_limits(None, Some(1)).unwrap_err();
        assert!(err.0.contains("swap accounting"), "{err}");
        for f in ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes", "cgroup.procs"] {
            fake_file(&g, f, "");
        }
        cg.set_limits(Some(48 << 20), Some(16 << 20)).unwrap();
        assert_eq!(sysfs::read(&g.join("memory.limit_in_bytes")).unwrap(), (48u64 << 20).to_string());
        assert_eq!(sysfs::read(&g.join("memory.memsw.limit_in_bytes")).unwrap(), (64u64 << 20).to_string());
        std::fs::write(g.join("cgroup.procs"), "4242\n").unwrap();
        assert_eq!(cg.procs().unwrap(), [4242]);
        let err = cg.remove().unwrap_err();
        assert!(err.0.contains("still has processes [4242]"), "{err}");
        assert!(g.exists(), "a populated group is not removed");

        // An empty group is removed (here: a stand-in without control files).
        let cg = Memcg::create_in(&mount, &d, "x", Duration::ZERO).unwrap();
        let p = cg.path().to_path_buf();
        drop(cg);
        assert!(!p.exists());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
