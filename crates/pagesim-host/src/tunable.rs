//! Changing one sysctl or sysfs value for the duration of an experiment: [`Tunable`]
//! restores the value it read before (on drop, on [`Tunable::restore`], or from the signal
//! path), and [`Zswap`] switches zswap on with a set of [`Tunable`]s.

use crate::cleanup::{Cleanup, Undo};
use crate::sysfs;
use crate::Error;
use std::path::{Path, PathBuf};

/// Where zswap's module parameters live.
pub const ZSWAP_PARAMETERS: &str = "/sys/module/zswap/parameters";

/// One /proc/sys or /sys value, set now and put back later.
#[derive(Debug)]
pub struct Tunable {
    path: PathBuf,
    old: String,
    new: String,
    cleanup: Cleanup,
}

impl Tunable {
    /// Writes `value` to `path` and arranges for the previous value to be written back.
    /// For choice lists (`always [madvise] never`) the selected word is what gets restored.
    pub fn set(path: impl Into<PathBuf>, value: &str) -> Result<Tunable, Error> {
        let _op = crate::cleanup::op();
        let path = path.into();
        let before = sysfs::read(&path)?;
        let old = sysfs::selected(&before).to_string();
        // Register before writing: if the write half-succeeds (some sysfs stores apply and
        // then fail), the old value is still restored.
        let cleanup = Cleanup::undo(Undo::Restore { path: path.clone(), value: old.clone() });
        sysfs::write(&path, value)?;
        Ok(Tunable { path, old, new: value.to_string(), cleanup })
    }

    /// `Tunable::set` on `/proc/sys/<key with dots as slashes>` (`vm.page-cluster`).
    pub fn sysctl(key: &str, value: &str) -> Result<Tunable, Error> {
        Self::set(sysctl_path(Path::new("/"), key), value)
    }

    /// One of a pair of dirty-limit sysctls under `root` (`vm.dirty_ratio` and
    /// `vm.dirty_bytes`, or the background pair): writing one zeroes the other in the kernel,
    /// and the bytes sysctl refuses 0, so what is restored is whichever of the two was in
    /// force before (the ratio when the bytes value read 0).
    pub fn dirty_limit(
        root: &Path,
        ratio_key: &str,
        bytes_key: &str,
        set_bytes: bool,
        value: &str,
    ) -> Result<Tunable, Error> {
        let _op = crate::cleanup::op();
        let (ratio, bytes) = (sysctl_path(root, ratio_key), sysctl_path(root, bytes_key));
        let old_bytes = sysfs::read(&bytes)?.trim().to_string();
        let (restore, old) = if old_bytes != "0" {
            (bytes.clone(), old_bytes)
        } else {
            (ratio.clone(), sysfs::read(&ratio)?.trim().to_string())
        };
        let cleanup = Cleanup::undo(Undo::Restore { path: restore, value: old.clone() });
        let path = if set_bytes { bytes } else { ratio };
        sysfs::write(&path, value)?;
        Ok(Tunable { path, old, new: value.to_string(), cleanup })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The value read before the change (what will be restored).
    pub fn old(&self) -> &str {
        &self.old
    }

    /// The value written.
    pub fn value(&self) -> &str {
        &self.new
    }

    /// Writes the old value back now.
    pub fn restore(self) -> Result<(), Error> {
        self.cleanup.run()
    }
}

/// The /proc/sys file of a sysctl key, under `root` (`/` on the host).
pub fn sysctl_path(root: &Path, key: &str) -> PathBuf {
    root.join("proc/sys").join(key.replace('.', "/"))
}

/// zswap switched on, with an optional compressor and pool limit; everything is put back,
/// in reverse order (zswap off first), when dropped.
#[derive(Debug)]
pub struct Zswap {
    tunables: Vec<Tunable>,
}

impl Zswap {
    /// Enables zswap through the module parameters in `params` ([`ZSWAP_PARAMETERS`] on the
    /// host). The compressor and pool size are set before `enabled` so the first pool is
    /// created with them.
    pub fn enable(params: &Path, compressor: Option<&str>, max_pool_percent: Option<u32>) -> Result<Zswap, Error> {
        let _op = crate::cleanup::op();
        let mut z = Zswap { tunables: Vec::new() };
        if let Some(c) = compressor {
            z.tunables.push(Tunable::set(params.join("compressor"), c)?);
        }
        if let Some(p) = max_pool_percent {
            z.tunables.push(Tunable::set(params.join("max_pool_percent"), &p.to_string())?);
        }
        z.tunables.push(Tunable::set(params.join("enabled"), "Y")?);
        Ok(z)
    }

    /// Makes zswap's parameters in `params` ([`ZSWAP_PARAMETERS`] on the host) what the
    /// scenario's `[zswap]` says: writes each one that differs from the host's value, the
    /// pool's parameters before `enabled` (so a new pool is created with them), and only
    /// `enabled` when zswap is to be off. A kernel without zswap is fine when it is off.
    pub fn apply(params: &Path, z: &pagesim::swap::zswap::ZswapParams) -> Result<Zswap, Error> {
        let _op = crate::cleanup::op();
        let mut out = Zswap { tunables: Vec::new() };
        if !params.exists() {
            return if z.enabled {
                Err(Error(format!("{}: missing: this kernel has no zswap", params.display())))
            } else {
                Ok(out)
            };
        }
        let yn = |b: bool| if b { "Y" } else { "N" }.to_string();
        let mut want = Vec::new();
        if z.enabled {
            want.push(("compressor", z.compressor.clone()));
            want.push(("max_pool_percent", z.max_pool_percent.to_string()));
            want.push(("accept_threshold_percent", z.accept_threshold_percent.to_string()));
            want.push(("shrinker_enabled", yn(z.shrinker_enabled)));
        }
        want.push(("enabled", yn(z.enabled)));
        for (key, value) in want {
            let p = params.join(key);
            let Some(cur) = sysfs::read_opt(&p) else {
                return Err(Error(format!("{}: missing: this kernel's zswap has no {key}", p.display())));
            };
            let same = match (sysfs::parse_bool(&cur), sysfs::parse_bool(&value)) {
                (Some(a), Some(b)) if key.ends_with("enabled") => a == b,
                _ => sysfs::selected(&cur) == value,
            };
            if !same {
                out.tunables.push(Tunable::set(p, &value)?);
            }
        }
        Ok(out)
    }

    /// The parameters changed, in the order they were written.
    pub fn tunables(&self) -> &[Tunable] {
        &self.tunables
    }

    /// Restores every parameter now, newest first; returns the first error.
    pub fn disable(mut self) -> Result<(), Error> {
        let mut first = Ok(());
        while let Some(t) = self.tunables.pop() {
            let r = t.restore();
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}

impl Drop for Zswap {
    fn drop(&mut self) {
        while let Some(t) = self.tunables.pop() {
            drop(t);
        }
    }
}

/// Writes back dirty pages, then drops the page cache, dentries and inodes
/// (`sync; echo 3 > /proc/sys/vm/drop_caches`), so the next run starts with a cold cache.
pub fn drop_caches() -> Result<(), Error> {
    // SAFETY: sync(2) has no arguments and no failure mode.
    unsafe { libc::sync() };
    sysfs::write(Path::new("/proc/sys/vm/drop_caches"), "3")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{fake_file, temp_dir};

    fn content(p: &Path) -> String {
        std::fs::read_to_string(p).unwrap().trim().to_string()
    }

    /// Setting dirty_bytes over a ratio in force restores the ratio (writing 0 to the bytes
    /// sysctl would fail on a real kernel).
    #[test]
    fn a_dirty_bytes_limit_restores_the_ratio_that_was_in_force() {
        let d = temp_dir("dirty-limit");
        let ratio = fake_file(&d, "proc/sys/vm/dirty_ratio", "20\n");
        let bytes = fake_file(&d, "proc/sys/vm/dirty_bytes", "0\n");
        let t = Tunable::dirty_limit(&d, "vm.dirty_ratio", "vm.dirty_bytes", true, "67108864").unwrap();
        assert_eq!(content(&bytes), "67108864");
        assert_eq!(t.old(), "20");
        t.restore().unwrap();
        assert_eq!(content(&ratio), "20");
        assert_eq!(content(&bytes), "67108864", "the kernel zeroes it when the ratio is written");
    }

    #[test]
    fn tunable_restores_on_drop_and_on_restore() {
        let d = temp_dir("tunable");
        let sw = fake_file(&d, "proc/sys/vm/swappiness", "60\n");
        let thp = fake_file(&d, "sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n");
        {
            let t = Tunable::set(&sw, "100").unwrap();
            assert_eq!((t.old(), t.value()), ("60", "100"));
            assert_eq!(content(&sw), "100");
        }
        assert_eq!(content(&sw), "60");
        let t = Tunable::set(&thp, "never").unwrap();
        assert_eq!(content(&thp), "never");
        t.restore().unwrap();
        assert_eq!(content(&thp), "madvise", "a choice list restores its selected word");
        assert_eq!(sysctl_path(&d, "vm.page-cluster"), d.join("proc/sys/vm/page-cluster"));
        let err = Tunable::set(d.join("proc/sys/vm/nope"), "1").unwrap_err();
        assert!(err.0.contains("vm/nope"), "{err}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn zswap_sets_parameters_and_restores_all_of_them() {
        let d = temp_dir("zswap");
        let p = d.join("parameters");
        fake_file(&p, "enabled", "N\n");
        fake_file(&p, "compressor", "lzo\n");
        fake_file(&p, "max_pool_percent", "20\n");
        let z = Zswap::enable(&p, Some("lz4"), Some(10)).unwrap();
        assert_eq!([content(&p.join("enabled")), content(&p.join("compressor"))], ["Y", "lz4"]);
        assert_eq!(content(&p.join("max_pool_percent")), "10");
        z.disable().unwrap();
        assert_eq!(content(&p.join("enabled")), "N");
        assert_eq!(content(&p.join("compressor")), "lzo");
        assert_eq!(content(&p.join("max_pool_percent")), "20");
        // A failure half-way (no such parameter) still restores what was already changed.
        std::fs::remove_file(p.join("enabled")).unwrap();
        assert!(Zswap::enable(&p, Some("lz4"), None).is_err());
        assert_eq!(content(&p.join("compressor")), "lzo");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn zswap_apply_writes_what_differs_enabled_last_and_restores() {
        let d = temp_dir("zswap-apply");
        let p = d.join("parameters");
        for (k, v) in [
            ("enabled", "N"),
            ("compressor", "lzo"),
            ("max_pool_percent", "20"),
            ("accept_threshold_percent", "90"),
            ("shrinker_enabled", "N"),
        ] {
            fake_file(&p, k, &format!("{v}\n"));
        }
        let want = pagesim::swap::zswap::ZswapParams {
            enabled: true,
            compressor: "lz4".into(),
            max_pool_percent: 20,
            ..Default::default()
        };
        let z = Zswap::apply(&p, &want).unwrap();
        let changed: Vec<String> =
            z.tunables().iter().map(|t| t.path().file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(changed, ["compressor", "enabled"], "only what differs, enabled last");
        assert_eq!([content(&p.join("enabled")), content(&p.join("compressor"))], ["Y", "lz4"]);
        z.disable().unwrap();
        assert_eq!([content(&p.join("enabled")), content(&p.join("compressor"))], ["N", "lzo"]);
        // Off and already off: nothing to write; off on a kernel without zswap is fine.
        let off = pagesim::swap::zswap::ZswapParams::default();
        assert!(Zswap::apply(&p, &off).unwrap().tunables().is_empty());
        assert!(Zswap::apply(&d.join("none"), &off).unwrap().tunables().is_empty());
        assert!(Zswap::apply(&d.join("none"), &want).unwrap_err().0.contains("no zswap"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
