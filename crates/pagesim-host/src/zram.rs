//! A zram device used as swap: set its compressor and disksize, write a swap header, swapon;
//! when done, swapoff and reset it (which frees its memory and returns disksize to 0), and
//! put its compressor back. Only an unused device (disksize 0, not swapped on) is taken.
//!
//! [`ZramIndex`] finds the device: `zram0` (or another existing device) when it is unused,
//! else a new one from `/sys/class/zram-control/hot_add`, hot-removed afterwards; when the
//! zram module is not loaded at all it is loaded (`modprobe zram`) and unloaded afterwards.

use crate::cleanup::{Cleanup, Undo};
use crate::swapfile::{is_active, swap_header, swapoff, swapon};
use crate::sysfs;
use crate::Error;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct Zram {
    dev: PathBuf,
    sys: PathBuf,
    cleanup: Cleanup,
}

impl Zram {
    /// Sets up `/dev/zram<index>` (which must exist: CONFIG_ZRAM built in, or hot-added) as a
    /// swap area of `disksize` bytes with `algorithm` (`None`: keep the current one) and
    /// `priority` (see [`swapon`]).
    pub fn create(index: u32, disksize: u64, algorithm: Option<&str>, priority: Option<i32>) -> Result<Zram, Error> {
        Self::create_at(
            Path::new(&format!("/sys/block/zram{index}")),
            Path::new(&format!("/dev/zram{index}")),
            disksize,
            algorithm,
            priority,
        )
    }

    fn create_at(
        sys: &Path,
        dev: &Path,
        disksize: u64,
        algorithm: Option<&str>,
        priority: Option<i32>,
    ) -> Result<Zram, Error> {
        let _op = crate::cleanup::op();
        let size = sysfs::read(&sys.join("disksize"))?;
        if size != "0" || is_active(dev)? {
            return Err(Error(format!(
                "{}: in use (disksize {size}); pagesim-host only takes an unused device",
                dev.display()
            )));
        }
        let old_alg = sysfs::read(&sys.join("comp_algorithm"))?;
        let old_alg = sysfs::selected(&old_alg).to_string();
        let cleanup =
            Cleanup::undo(Undo::ResetZram { dev: dev.to_path_buf(), sys: sys.to_path_buf(), comp_algorithm: old_alg });
        let z = Zram { dev: dev.to_path_buf(), sys: sys.to_path_buf(), cleanup };
        if let Some(alg) = algorithm {
            sysfs::write(&sys.join("comp_algorithm"), alg)?;
        }
        sysfs::write(&sys.join("disksize"), &disksize.to_string())?;
        let page = crate::page_size();
        let header = swap_header(disksize / page as u64, page);
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(dev)
            .map_err(|e| Error(format!("{}: cannot open: {e}", dev.display())))?;
        f.write_all_at(&header, 0).map_err(|e| Error(format!("{}: write swap header: {e}", dev.display())))?;
        f.sync_all().map_err(|e| Error(format!("{}: fsync: {e}", dev.display())))?;
        drop(f);
        swapon(dev, priority)?;
        Ok(z)
    }

    pub fn device(&self) -> &Path {
        &self.dev
    }

    /// The device's sysfs directory (mm_stat, io_stat, ...).
    pub fn sysfs_dir(&self) -> &Path {
        &self.sys
    }

    /// swapoff and reset now.
    pub fn remove(self) -> Result<(), Error> {
        self.cleanup.run()
    }

    /// Sets `mem_limit` (bytes; the pool's most memory). `reset` clears it again.
    pub fn set_mem_limit(&self, bytes: u64) -> Result<(), Error> {
        sysfs::write(&self.sys.join("mem_limit"), &bytes.to_string())
    }
}

/// Where zram's hot_add/hot_remove live.
pub const ZRAM_CONTROL: &str = "/sys/class/zram-control";

/// The index of a zram device this run may use: an existing unused one, or one hot-added
/// (removed again when this is dropped or released). Devices in use are never touched.
/// The undo of [`Zram::create`]: swapoff if on, reset (which frees the pool), and the
/// compressor put back to `comp_algorithm` (reset returns it to the kernel's default).
pub(crate) fn reset(dev: &Path, sys: &Path, comp_algorithm: &str) -> Result<(), String> {
    if is_active(dev).map_err(|e| e.0)? {
        swapoff(dev).map_err(|e| e.0)?;
    }
    sysfs::write(&sys.join("reset"), "1").map_err(|e| e.0)?;
    let now = sysfs::read(&sys.join("comp_algorithm")).map_err(|e| e.0)?;
    if sysfs::selected(&now) != comp_algorithm {
        sysfs::write(&sys.join("comp_algorithm"), comp_algorithm).map_err(|e| e.0)?;
    }
    Ok(())
}

/// The undo of loading the zram module: `modprobe -r zram`.
pub(crate) fn unload_module() -> Result<(), String> {
    let st = std::process::Command::new("modprobe").args(["-r", "zram"]).status().map_err(|e| e.to_string())?;
    if st.success() {
        Ok(())
    } else {
        Err(format!("modprobe -r zram: {st}"))
    }
}

#[derive(Debug)]
pub struct ZramIndex {
    pub index: u32,
    /// Whether the device was hot-added for this run.
    pub added: bool,
    /// Whether the zram module was loaded for this run.
    pub loaded_module: bool,
    cleanups: Vec<Cleanup>,
}

impl ZramIndex {
    /// Finds an unused zram device, skipping the indices in `taken` (devices this run
    /// already uses), loading the module or hot-adding a device when needed.
    pub fn acquire(taken: &[u32]) -> Result<ZramIndex, Error> {
        let _op = crate::cleanup::op();
        let mut z = ZramIndex { index: 0, added: false, loaded_module: false, cleanups: Vec::new() };
        let control = Path::new(ZRAM_CONTROL);
        if !control.exists() {
            z.cleanups.push(Cleanup::undo(Undo::UnloadZram));
            let st = std::process::Command::new("modprobe")
                .arg("zram")
                .status()
                .map_err(|e| Error(format!("modprobe zram: {e}")))?;
            if !st.success() || !control.exists() {
                return Err(Error(format!("modprobe zram failed ({st}): this kernel has no zram")));
            }
            z.loaded_module = true;
        }
        if let Some(i) = unused_devices(Path::new("/sys/block")).into_iter().find(|i| !taken.contains(i)) {
            z.index = i;
            return Ok(z);
        }
        let i: u32 = sysfs::read(&control.join("hot_add"))?
            .trim()
            .parse()
            .map_err(|e| Error(format!("{ZRAM_CONTROL}/hot_add: not an index: {e}")))?;
        z.cleanups.push(Cleanup::undo(Undo::HotRemoveZram { control: control.to_path_buf(), index: i }));
        z.index = i;
        z.added = true;
        Ok(z)
    }

    /// Hot-removes the device and unloads the module now, if this run added them.
    pub fn release(mut self) -> Result<(), Error> {
        let mut first = Ok(());
        // Newest first: the device before the module.
        while let Some(c) = self.cleanups.pop() {
            let r = c.run();
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}

impl Drop for ZramIndex {
    fn drop(&mut self) {
        while let Some(c) = self.cleanups.pop() {
            drop(c);
        }
    }
}

/// Indices of the zram devices under `sys_block` with disksize 0 (not initialized: neither
/// swap nor a filesystem can be on them), in index order.
fn unused_devices(sys_block: &Path) -> Vec<u32> {
    let mut v: Vec<u32> = std::fs::read_dir(sys_block)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str()?.strip_prefix("zram")?.parse().ok())
                .filter(|i: &u32| sysfs::read_opt(&sys_block.join(format!("zram{i}/disksize"))).as_deref() == Some("0"))
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{fake_file, temp_dir};

    #[test]
    fn a_device_in_use_is_not_taken() {
        let d = temp_dir("zram");
        fake_file(&d, "zram7/disksize", "33554432\n");
        fake_file(&d, "zram7/comp_algorithm", "lzo [lz4]\n");
        let e =
            Zram::create_at(&d.join("zram7"), Path::new("/dev/pagesim-no-such-zram"), 1 << 20, None, None).unwrap_err();
        assert!(e.0.contains("in use (disksize 33554432)"), "{e}");
        assert_eq!(sysfs::read(&d.join("zram7/disksize")).unwrap(), "33554432", "left untouched");
        assert!(crate::cleanup::pending().iter().all(|p| !p.contains("pagesim-no-such-zram")));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn only_devices_with_no_disksize_are_unused() {
        let d = temp_dir("zram-unused");
        fake_file(&d, "zram0/disksize", "536870912\n");
        fake_file(&d, "zram3/disksize", "0\n");
        fake_file(&d, "zram1/disksize", "0\n");
        fake_file(&d, "vda/size", "10\n");
        assert_eq!(unused_devices(&d), [1, 3]);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
