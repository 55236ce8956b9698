//! A zram device used as swap: set its compressor and disksize, write a swap header, swapon;
//! when done, swapoff and reset it (which frees its memory and returns disksize to 0), and
//! put its compressor back. Only an unused device (disksize 0, not swapped on) is taken.

use crate::cleanup::Cleanup;
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
        let (s, d, a) = (sys.to_path_buf(), dev.to_path_buf(), old_alg.clone());
        let cleanup = Cleanup::register(format!("swapoff and reset {}", dev.display()), move || {
            if is_active(&d).map_err(|e| e.0)? {
                swapoff(&d).map_err(|e| e.0)?;
            }
            sysfs::write(&s.join("reset"), "1").map_err(|e| e.0)?;
            // reset returns the compressor to the kernel default; restore the one we found.
            let now = sysfs::read(&s.join("comp_algorithm")).map_err(|e| e.0)?;
            if sysfs::selected(&now) != a {
                sysfs::write(&s.join("comp_algorithm"), &a).map_err(|e| e.0)?;
            }
            Ok(())
        });
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
}
