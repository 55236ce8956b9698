//! The host's memory-management settings that a pagesim scenario also sets, read into one
//! typed record, so a host run states the kernel it ran on. Every field is `None` when this
//! kernel lacks the knob (or it could not be read), never a guess.

use crate::memcg::{parse_mounts, CgroupVersion};
use crate::sysfs;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HostTunables {
    /// /proc/sys/kernel/osrelease (`uname -r`).
    pub kernel_release: Option<String>,
    /// vm.page-cluster (log2 of the swap readahead window, pages).
    pub page_cluster: Option<u32>,
    /// vm.swappiness.
    pub swappiness: Option<u32>,
    /// vm.min_free_kbytes, kB.
    pub min_free_kbytes: Option<u64>,
    /// vm.watermark_scale_factor, 1/10000 of memory.
    pub watermark_scale_factor: Option<u64>,
    /// /sys/kernel/mm/swap/vma_ra_enabled.
    pub vma_ra_enabled: Option<bool>,
    /// /sys/kernel/mm/transparent_hugepage/enabled (the selected word: always, madvise, never).
    pub thp_enabled: Option<String>,
    /// /sys/kernel/mm/transparent_hugepage/shmem_enabled (selected word).
    pub thp_shmem_enabled: Option<String>,
    /// Per-size anon mTHP settings (6.8+): `hugepages-<size>/enabled`, by size ("64kB").
    pub mthp_enabled: BTreeMap<String, String>,
    /// Per-size shmem mTHP settings (6.11+): `hugepages-<size>/shmem_enabled`.
    pub mthp_shmem_enabled: BTreeMap<String, String>,
    /// Filesystem type and mount options of the directory given to [`HostTunables::read`]
    /// (where the scenario's files are written).
    pub work_fs: Option<String>,
    pub work_fs_options: Option<String>,
    /// Whether that filesystem's regular files take large folios in the page cache on this
    /// kernel ([`large_folios_rule`]); `None` if it could not be told.
    pub pagecache_large_folios: Option<bool>,
    pub zswap: Zswap,
    pub cgroup: CgroupInfo,
    /// read_ahead_kb of the block device holding the path given to [`HostTunables::read`].
    pub read_ahead_kb: Option<u32>,
    /// That device as `major:minor` (the whole disk, for a partition).
    pub read_ahead_device: Option<String>,
    /// MemTotal from /proc/meminfo, kB.
    pub mem_total_kb: Option<u64>,
    /// Base page size, bytes.
    pub page_size: u64,
}

/// zswap module parameters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Zswap {
    /// zswap is built in (its parameters directory exists).
    pub present: bool,
    pub enabled: Option<bool>,
    pub compressor: Option<String>,
    pub max_pool_percent: Option<u32>,
    pub accept_threshold_percent: Option<u32>,
    pub shrinker_enabled: Option<bool>,
    /// zswap stored or loaded pages since boot (/proc/vmstat zswpout or zswpin above 0), so
    /// it was on at some time: `zswap_never_enabled()` is false until the next boot.
    pub used_since_boot: Option<bool>,
    /// Every file of /sys/module/zswap/parameters, as read.
    pub parameters: BTreeMap<String, String>,
}

/// Which memory cgroup interfaces the host offers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CgroupInfo {
    /// Mount point of the v1 memory controller.
    pub v1_memory: Option<String>,
    /// v1 swap accounting: memory.memsw.limit_in_bytes exists at its root.
    pub v1_memsw: bool,
    /// Mount points of cgroup2 hierarchies.
    pub v2_mounts: Vec<String>,
    /// The memory controller is available to v2 (listed in the root's cgroup.controllers).
    pub v2_memory_available: bool,
    /// ... and enabled for the root's children (listed in its cgroup.subtree_control).
    pub v2_memory_enabled: bool,
    /// What [`crate::CgroupMount::detect`] would use.
    pub usable: Option<CgroupVersion>,
}

impl HostTunables {
    /// Reads the host's settings; `read_ahead_kb` is that of the device holding `path`.
    pub fn read(path: &Path) -> HostTunables {
        use std::os::unix::fs::MetadataExt;
        let dev = std::fs::metadata(path).ok().map(|m| dev_major_minor(m.dev()));
        let mut t = Self::read_from(Path::new("/"), dev);
        let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        if let Some((fs, opts)) = sysfs::read_opt(Path::new("/proc/mounts")).and_then(|m| mount_of(&m, &path)) {
            t.pagecache_large_folios = t.kernel_release.as_deref().and_then(|r| large_folios_rule(r, &fs, &opts));
            t.work_fs = Some(fs);
            t.work_fs_options = Some(opts);
        }
        t
    }

    /// Reads everything under `root` (`/` on the host; a fake tree in tests); `dev` is the
    /// (major, minor) whose read_ahead_kb to report.
    pub fn read_from(root: &Path, dev: Option<(u32, u32)>) -> HostTunables {
        let r = |p: &str| sysfs::read_opt(&root.join(p));
        let num = |p: &str| r(p).and_then(|v| v.parse::<u64>().ok());
        let mut t = HostTunables {
            kernel_release: r("proc/sys/kernel/osrelease"),
            page_cluster: num("proc/sys/vm/page-cluster").map(|v| v as u32),
            swappiness: num("proc/sys/vm/swappiness").map(|v| v as u32),
            min_free_kbytes: num("proc/sys/vm/min_free_kbytes"),
            watermark_scale_factor: num("proc/sys/vm/watermark_scale_factor"),
            vma_ra_enabled: r("sys/kernel/mm/swap/vma_ra_enabled").and_then(|v| sysfs::parse_bool(&v)),
            thp_enabled: r("sys/kernel/mm/transparent_hugepage/enabled").map(|v| sysfs::selected(&v).to_string()),
            thp_shmem_enabled: r("sys/kernel/mm/transparent_hugepage/shmem_enabled")
                .map(|v| sysfs::selected(&v).to_string()),
            zswap: read_zswap(&root.join("sys/module/zswap/parameters"), r("proc/vmstat").as_deref()),
            cgroup: read_cgroups(root),
            page_size: crate::page_size() as u64,
            ..Default::default()
        };
        if let Some((maj, min)) = dev {
            if let Some((kb, disk)) = read_ahead_kb(root, maj, min) {
                t.read_ahead_kb = Some(kb);
                t.read_ahead_device = Some(disk);
            }
        }
        t.mem_total_kb = r("proc/meminfo").and_then(|m| crate::measure::parse_meminfo(&m).get("MemTotal").copied());
        for (kb, dir) in mthp_size_dirs(&root.join("sys/kernel/mm/transparent_hugepage")) {
            let size = format!("{kb}kB");
            if let Some(v) = sysfs::read_opt(&dir.join("enabled")) {
                t.mthp_enabled.insert(size.clone(), sysfs::selected(&v).to_string());
            }
            if let Some(v) = sysfs::read_opt(&dir.join("shmem_enabled")) {
                t.mthp_shmem_enabled.insert(size, sysfs::selected(&v).to_string());
            }
        }
        t
    }

    /// The anon mTHP sizes the host may allocate in a mapping without MADV_NOHUGEPAGE
    /// (`always`, `madvise` or `inherit` of a global mode that is not `never`).
    pub fn mthp_sizes_on(&self) -> Vec<String> {
        let global_on = self.thp_enabled.as_deref().is_some_and(|v| v != "never");
        self.mthp_enabled
            .iter()
            .filter(|(_, v)| matches!(v.as_str(), "always" | "madvise") || (v.as_str() == "inherit" && global_on))
            .map(|(k, _)| k.clone())
            .collect()
    }
}

/// The per-size mTHP directories under `thp_dir` (/sys/kernel/mm/transparent_hugepage):
/// (size in KiB, `hugepages-<size>kB`), ascending; empty on a kernel without mTHP.
pub fn mthp_size_dirs(thp_dir: &Path) -> Vec<(u64, std::path::PathBuf)> {
    let mut v: Vec<(u64, std::path::PathBuf)> = std::fs::read_dir(thp_dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let kb = name.strip_prefix("hugepages-")?.strip_suffix("kB")?.parse().ok()?;
                    Some((kb, e.path()))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The anon mTHP statistics of `hugepages-<size>kB/stats/` summed over the sizes below PMD
/// size (those the simulator models), under the simulator's counter names (`mthp_` and the
/// stat's name). PMD size is left out: its folios are PMD-mapped THPs.
pub fn read_mthp_stats(thp_dir: &Path) -> BTreeMap<String, u64> {
    const STATS: [&str; 9] = [
        "anon_fault_alloc",
        "anon_fault_fallback",
        "anon_fault_fallback_charge",
        "swpout",
        "swpout_fallback",
        "swpin",
        "swpin_fallback",
        "swpin_fallback_charge",
        "split",
    ];
    let mut out = BTreeMap::new();
    for (kb, dir) in mthp_size_dirs(thp_dir) {
        if kb >= 2048 {
            continue;
        }
        for st in STATS {
            if let Some(v) = sysfs::read_opt(&dir.join("stats").join(st)).and_then(|v| v.parse::<u64>().ok()) {
                *out.entry(format!("mthp_{st}")).or_insert(0) += v;
            }
        }
    }
    out
}

/// The filesystem type and mount options of the mount holding `path` (the longest mount
/// point that contains it) in a /proc/mounts text.
pub fn mount_of(mounts: &str, path: &Path) -> Option<(String, String)> {
    let mut best: Option<(usize, String, String)> = None;
    for l in mounts.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        let dir = std::path::PathBuf::from(sysfs::unescape_octal(f[1]));
        if path.starts_with(&dir) {
            let depth = dir.components().count();
            if best.as_ref().is_none_or(|(d, _, _)| depth >= *d) {
                best = Some((depth, f[2].to_string(), f[3].to_string()));
            }
        }
    }
    best.map(|(_, fs, opts)| (fs, opts))
}

/// Whether regular files of filesystem `fs` (mounted with `opts`) take large folios in the
/// page cache on kernel `release`: XFS from 5.18 (the first readahead of large folios),
/// ext4 from 6.16 unless mounted `data=journal`; other filesystems not (btrfs has them
/// only as an experimental option). `None` if the release cannot be parsed.
pub fn large_folios_rule(release: &str, fs: &str, opts: &str) -> Option<bool> {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    let major: u32 = it.next()?.parse().ok()?;
    let minor: u32 = it.next()?.parse().ok()?;
    let v = (major, minor);
    Some(match fs {
        "xfs" => v >= (5, 18),
        "ext4" => v >= (6, 16) && !opts.split(',').any(|o| o == "data=journal"),
        _ => false,
    })
}

/// Splits a `st_dev` into (major, minor) as glibc's gnu_dev_major/minor do.
pub fn dev_major_minor(dev: u64) -> (u32, u32) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    (major as u32, minor as u32)
}

/// The sysfs directory of the disk holding `path` (of the whole disk for a partition):
/// `/sys/devices/.../block/vda`. `None` for filesystems without a block device.
pub fn disk_dir(path: &Path) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let (maj, min) = dev_major_minor(std::fs::metadata(path).ok()?.dev());
    disk_dir_in(Path::new("/"), maj, min)
}

fn disk_dir_in(root: &Path, maj: u32, min: u32) -> Option<std::path::PathBuf> {
    let dir = root.join(format!("sys/dev/block/{maj}:{min}")).canonicalize().ok()?;
    Some(if dir.join("partition").exists() { dir.parent()?.to_path_buf() } else { dir })
}

/// read_ahead_kb of block device `maj:min`, or of its disk when it is a partition, with the
/// disk's `major:minor`. `None` for filesystems without a block device (tmpfs, overlay).
fn read_ahead_kb(root: &Path, maj: u32, min: u32) -> Option<(u32, String)> {
    let disk = disk_dir_in(root, maj, min)?;
    let kb = sysfs::read_opt(&disk.join("queue/read_ahead_kb"))?.parse().ok()?;
    let id = sysfs::read_opt(&disk.join("dev")).unwrap_or_else(|| format!("{maj}:{min}"));
    Some((kb, id))
}

fn read_zswap(params: &Path, vmstat: Option<&str>) -> Zswap {
    let Ok(rd) = std::fs::read_dir(params) else { return Zswap::default() };
    let used_since_boot = vmstat.map(|t| {
        let v = sysfs::parse_key_values(t);
        v.get("zswpout").copied().unwrap_or(0) + v.get("zswpin").copied().unwrap_or(0) > 0
    });
    let parameters: BTreeMap<String, String> = rd
        .filter_map(|e| {
            let e = e.ok()?;
            Some((e.file_name().to_string_lossy().into_owned(), sysfs::read_opt(&e.path())?))
        })
        .collect();
    Zswap {
        present: true,
        enabled: parameters.get("enabled").and_then(|v| sysfs::parse_bool(v)),
        compressor: parameters.get("compressor").cloned(),
        max_pool_percent: parameters.get("max_pool_percent").and_then(|v| v.parse().ok()),
        accept_threshold_percent: parameters.get("accept_threshold_percent").and_then(|v| v.parse().ok()),
        shrinker_enabled: parameters.get("shrinker_enabled").and_then(|v| sysfs::parse_bool(v)),
        used_since_boot,
        parameters,
    }
}

fn read_cgroups(root: &Path) -> CgroupInfo {
    let Some(mounts) = sysfs::read_opt(&root.join("proc/mounts")) else { return CgroupInfo::default() };
    let (v1, v2) = parse_mounts(&mounts);
    let under = |p: &Path| root.join(p.strip_prefix("/").unwrap_or(p));
    let mut info = CgroupInfo {
        v1_memsw: v1.as_ref().is_some_and(|p| under(p).join("memory.memsw.limit_in_bytes").exists()),
        v1_memory: v1.as_ref().map(|p| p.display().to_string()),
        v2_mounts: v2.iter().map(|p| p.display().to_string()).collect(),
        ..Default::default()
    };
    let has_memory = |f: &Path| sysfs::read_opt(f).is_some_and(|v| v.split_whitespace().any(|c| c == "memory"));
    for p in &v2 {
        info.v2_memory_available |= has_memory(&under(p).join("cgroup.controllers"));
        info.v2_memory_enabled |= has_memory(&under(p).join("cgroup.subtree_control"));
    }
    info.usable = crate::memcg::CgroupMount::detect_in(root).ok().map(|m| m.version);
    info
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{fake_file, temp_dir};

    #[test]
    fn mthp_stats_are_summed_over_the_sizes_below_pmd_size() {
        let d = temp_dir("mthp-stats");
        for (size, alloc, split) in [("16kB", 5, 1), ("64kB", 7, 2), ("2048kB", 100, 100)] {
            fake_file(&d, &format!("hugepages-{size}/stats/anon_fault_alloc"), &format!("{alloc}\n"));
            fake_file(&d, &format!("hugepages-{size}/stats/split"), &format!("{split}\n"));
        }
        fake_file(&d, "enabled", "always [madvise] never\n");
        let sizes: Vec<u64> = mthp_size_dirs(&d).into_iter().map(|(kb, _)| kb).collect();
        assert_eq!(sizes, [16, 64, 2048], "sizes ascending, other files skipped");
        let s = read_mthp_stats(&d);
        assert_eq!(s.get("mthp_anon_fault_alloc"), Some(&12));
        assert_eq!(s.get("mthp_split"), Some(&3));
        assert_eq!(s.get("mthp_swpout"), None, "a stat the kernel lacks is not made up");
    }

    #[test]
    fn reads_a_fake_host() {
        let d = temp_dir("tunables");
        for (p, v) in [
            ("proc/sys/kernel/osrelease", "6.18.44-fc\n"),
            ("proc/sys/vm/page-cluster", "3\n"),
            ("proc/sys/vm/swappiness", "60\n"),
            ("proc/sys/vm/min_free_kbytes", "67584\n"),
            ("proc/sys/vm/watermark_scale_factor", "10\n"),
            ("proc/meminfo", "MemTotal:       24684096 kB\nMemFree:  1 kB\n"),
            ("sys/kernel/mm/swap/vma_ra_enabled", "true\n"),
            ("sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n"),
            ("sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled", "always inherit madvise [never]\n"),
            ("sys/kernel/mm/transparent_hugepage/hugepages-64kB/shmem_enabled", "always inherit [never]\n"),
            ("sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled", "always [inherit] madvise never\n"),
            ("sys/module/zswap/parameters/enabled", "N\n"),
            ("sys/module/zswap/parameters/compressor", "lzo\n"),
            ("sys/module/zswap/parameters/max_pool_percent", "20\n"),
            ("proc/vmstat", "pswpin 3\nzswpin 0\nzswpout 12\n"),
            (
                "proc/mounts",
                "cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n\
                 cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n",
            ),
            ("sys/fs/cgroup/memory/memory.memsw.limit_in_bytes", "9223372036854771712\n"),
            ("sys/fs/cgroup/unified/cgroup.controllers", "\n"),
            ("sys/devices/virtio1/block/vda/queue/read_ahead_kb", "8192\n"),
            ("sys/devices/virtio1/block/vda/dev", "254:0\n"),
            ("sys/devices/virtio1/block/vda/vda1/partition", "1\n"),
        ] {
            fake_file(&d, p, v);
        }
        std::fs::create_dir_all(d.join("sys/dev/block")).unwrap();
        std::os::unix::fs::symlink("../../devices/virtio1/block/vda/vda1", d.join("sys/dev/block/254:1")).unwrap();

        let t = HostTunables::read_from(&d, Some((254, 1)));
        assert_eq!(t.kernel_release.as_deref(), Some("6.18.44-fc"));
        assert_eq!((t.page_cluster, t.swappiness), (Some(3), Some(60)));
        assert_eq!((t.min_free_kbytes, t.watermark_scale_factor), (Some(67584), Some(10)));
        assert_eq!(t.vma_ra_enabled, Some(true));
        assert_eq!(t.thp_enabled.as_deref(), Some("madvise"));
        assert_eq!(t.thp_shmem_enabled, None, "a missing knob is None");
        assert_eq!(t.mthp_enabled.get("64kB").map(String::as_str), Some("never"));
        assert_eq!(t.mthp_shmem_enabled.get("64kB").map(String::as_str), Some("never"));
        assert_eq!(t.mthp_sizes_on(), ["2048kB"], "inherit of madvise is on, never is off");
        assert!(t.zswap.present);
        assert_eq!((t.zswap.enabled, t.zswap.max_pool_percent), (Some(false), Some(20)));
        assert_eq!(t.zswap.compressor.as_deref(), Some("lzo"));
        assert_eq!(t.zswap.used_since_boot, Some(true), "zswpout counted since boot");
        assert_eq!(t.cgroup.v1_memory.as_deref(), Some("/sys/fs/cgroup/memory"));
        assert!(t.cgroup.v1_memsw);
        assert!(!t.cgroup.v2_memory_available && !t.cgroup.v2_memory_enabled);
        assert_eq!(t.cgroup.usable, Some(CgroupVersion::V1));
        assert_eq!(t.read_ahead_kb, Some(8192), "a partition reports its disk's read_ahead_kb");
        assert_eq!(t.read_ahead_device.as_deref(), Some("254:0"));
        assert_eq!(t.mem_total_kb, Some(24684096));
        assert_eq!(HostTunables::read_from(&d, Some((0, 33))).read_ahead_kb, None, "no block device (tmpfs)");
        serde_json::to_string(&t).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_work_directory_filesystem_decides_large_folios_by_kernel_version() {
        let mounts = "/dev/vda / ext4 rw,relatime,discard 0 0\n\
                      tmpfs /tmp tmpfs rw 0 0\n\
                      /dev/vdb /data xfs rw,noatime 0 0\n";
        let fs = |p: &str| mount_of(mounts, Path::new(p));
        assert_eq!(fs("/work/x"), Some(("ext4".into(), "rw,relatime,discard".into())));
        assert_eq!(fs("/tmp/x").map(|m| m.0), Some("tmpfs".into()), "the longest mount point wins");
        assert_eq!(fs("/data").map(|m| m.0), Some("xfs".into()));
        assert_eq!(large_folios_rule("6.18.44-fc", "ext4", "rw,relatime"), Some(true));
        assert_eq!(large_folios_rule("6.15.2", "ext4", "rw"), Some(false), "ext4 takes them from 6.16");
        assert_eq!(large_folios_rule("6.18.1", "ext4", "rw,data=journal"), Some(false));
        assert_eq!(large_folios_rule("5.18.0", "xfs", "rw"), Some(true));
        assert_eq!(large_folios_rule("5.17.9", "xfs", "rw"), Some(false));
        assert_eq!(large_folios_rule("6.18.1", "btrfs", "rw"), Some(false));
        assert_eq!(large_folios_rule("weird", "ext4", "rw"), None);
    }

    #[test]
    fn device_numbers_split_like_glibc() {
        assert_eq!(dev_major_minor(0xfe00), (254, 0));
        assert_eq!(dev_major_minor(0xfe01), (254, 1));
        assert_eq!(dev_major_minor((259u64 << 8) | 3), (259, 3));
        // Large minors use the high bits.
        assert_eq!(dev_major_minor(0x0010_0000 | (8 << 8) | 5), (8, 0x100 + 5));
    }
}
