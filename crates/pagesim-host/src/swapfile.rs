//! Swap files: create, format, swapon; swapoff and remove when done. Also the parser of
//! /proc/swaps and the swap header (the layout mkswap writes, `union swap_header` in
//! include/linux/swap.h), written here so no external tool is needed.
//!
//! ```text
//!   page 0: | bootbits 1024 B | version=1 | last_page | nr_badpages=0 | uuid 16 | label 16 |
//!           | padding ... | "SWAPSPACE2" in the last 10 bytes of the page |
//!   page 1..last_page: swap slots
//! ```

use crate::cleanup::{Cleanup, Undo};
use crate::sysfs;
use crate::Error;
use serde::Serialize;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// include/uapi/linux/swap.h: use the priority in the low bits.
const SWAP_FLAG_PREFER: libc::c_int = 0x8000;
const SWAP_FLAG_PRIO_MASK: libc::c_int = 0x7fff;

/// One line of /proc/swaps.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SwapEntry {
    pub filename: String,
    /// `file` or `partition`.
    pub kind: String,
    pub size_kb: u64,
    pub used_kb: u64,
    pub priority: i32,
}

/// Parses /proc/swaps text (the header line is skipped; escaped paths are unescaped).
pub fn parse_proc_swaps(text: &str) -> Vec<SwapEntry> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            // The path may contain escaped blanks only, so the last four fields are fixed.
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 5 {
                return None;
            }
            let n = f.len();
            Some(SwapEntry {
                filename: sysfs::unescape_octal(&f[..n - 4].join(" ")),
                kind: f[n - 4].to_string(),
                size_kb: f[n - 3].parse().ok()?,
                used_kb: f[n - 2].parse().ok()?,
                priority: f[n - 1].parse().ok()?,
            })
        })
        .collect()
}

/// The active swap areas.
pub fn proc_swaps() -> Result<Vec<SwapEntry>, Error> {
    let text = std::fs::read_to_string("/proc/swaps").map_err(|e| Error(format!("/proc/swaps: {e}")))?;
    Ok(parse_proc_swaps(&text))
}

/// The header page of a swap area of `pages` pages of `page_size` bytes (version 1).
pub fn swap_header(pages: u64, page_size: usize) -> Vec<u8> {
    let mut h = vec![0u8; page_size];
    let last_page = (pages - 1).min(u32::MAX as u64) as u32;
    h[1024..1028].copy_from_slice(&1u32.to_ne_bytes());
    h[1028..1032].copy_from_slice(&last_page.to_ne_bytes());
    // nr_badpages = 0, uuid and label left zero (no label, nil UUID).
    h[page_size - 10..].copy_from_slice(b"SWAPSPACE2");
    h
}

fn cpath(path: &Path) -> Result<CString, Error> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| Error(format!("{}: path contains NUL", path.display())))
}

/// `swapon(2)`. `priority`: `Some(0..=32767)` is `swapon -p`; `None` lets the kernel assign
/// the next negative default priority.
pub fn swapon(path: &Path, priority: Option<i32>) -> Result<(), Error> {
    let flags = match priority {
        None => 0,
        Some(p) if (0..=SWAP_FLAG_PRIO_MASK).contains(&p) => SWAP_FLAG_PREFER | p,
        Some(p) => {
            return Err(Error(format!(
                "{}: swap priority {p}: swapon(2) takes 0..32767 (negative priorities are only assigned by the kernel)",
                path.display()
            )))
        }
    };
    let c = cpath(path)?;
    // SAFETY: c is a valid NUL-terminated path that outlives the call.
    if unsafe { libc::swapon(c.as_ptr(), flags) } != 0 {
        return Err(Error(format!("swapon {}: {}", path.display(), crate::last_os_error())));
    }
    Ok(())
}

/// `swapoff(2)`: moves every page in the area back to memory (or to other areas).
/// The undo of [`SwapFile::create`]: swapoff if the file is on, then delete it. A file
/// already gone (or never made) is fine.
pub(crate) fn swapoff_and_remove(p: &Path) -> Result<(), String> {
    match is_active(p) {
        Ok(true) => swapoff(p).map_err(|e| e.0)?,
        Ok(false) => {}
        Err(e) => return Err(e.0),
    }
    match std::fs::remove_file(p) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(format!("remove: {e}")),
        _ => Ok(()),
    }
}

pub fn swapoff(path: &Path) -> Result<(), Error> {
    let c = cpath(path)?;
    // SAFETY: c is a valid NUL-terminated path that outlives the call.
    if unsafe { libc::swapoff(c.as_ptr()) } != 0 {
        return Err(Error(format!("swapoff {}: {}", path.display(), crate::last_os_error())));
    }
    Ok(())
}

/// Whether `path` is listed in /proc/swaps.
pub fn is_active(path: &Path) -> Result<bool, Error> {
    let p = path.to_string_lossy();
    Ok(proc_swaps()?.iter().any(|e| e.filename == p))
}

/// An active swap file that this process created; switched off and deleted on drop.
#[derive(Debug)]
pub struct SwapFile {
    path: PathBuf,
    bytes: u64,
    priority: Option<i32>,
    cleanup: Cleanup,
}

impl SwapFile {
    /// Creates `path` (which must not exist) with `size` bytes (rounded down to pages, the
    /// header page included, like a scenario's `[[swap]] size`), mode 0600, writes the swap
    /// header and swaps on with `priority` (see [`swapon`]). The file is preallocated with
    /// fallocate; if the filesystem cannot, or swapon refuses the preallocated (unwritten)
    /// extents, it is written with zeros instead.
    pub fn create(path: &Path, size: u64, priority: Option<i32>) -> Result<SwapFile, Error> {
        // Held until the file is on (or its undo ran): the signal path never sees it half made.
        let _op = crate::cleanup::op();
        let page = crate::page_size() as u64;
        let pages = size / page;
        if pages < 10 {
            return Err(Error(format!("{}: a swap file needs at least 10 pages, got {size} bytes", path.display())));
        }
        // /proc/swaps shows the resolved path: resolve the directory now so we can find it.
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let name = path.file_name().ok_or_else(|| Error(format!("{}: not a file path", path.display())))?;
        let dir = dir.canonicalize().map_err(|e| Error(format!("{}: {e}", dir.display())))?;
        let path = dir.join(name);
        let bytes = pages * page;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| Error(format!("{}: cannot create: {e}", path.display())))?;
        let cleanup = Cleanup::undo(Undo::RemoveSwapFile { path: path.clone() });
        let sf = SwapFile { path, bytes, priority, cleanup };
        let perm = std::fs::Permissions::from_mode(0o600);
        std::fs::set_permissions(&sf.path, perm).map_err(|e| Error(format!("chmod 600 {}: {e}", sf.path.display())))?;
        let header = swap_header(pages, page as usize);
        let fallocated = {
            use std::os::fd::AsRawFd;
            // SAFETY: the fd is open for writing for the duration of the call.
            unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, bytes as libc::off_t) == 0 }
        };
        if !fallocated {
            write_zeros(&file, bytes, &sf.path)?;
        }
        write_header(&file, &header, &sf.path)?;
        if let Err(first) = swapon(&sf.path, priority) {
            if !fallocated {
                return Err(first);
            }
            // Some filesystems refuse unwritten extents for swap: write real zeros and retry.
            write_zeros(&file, bytes, &sf.path)?;
            write_header(&file, &header, &sf.path)?;
            swapon(&sf.path, priority).map_err(|e| Error(format!("{e} (also after writing zeros; first: {first})")))?;
        }
        Ok(sf)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Size of the file in bytes (header page included).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Its line in /proc/swaps (`None` while it is switched off).
    pub fn entry(&self) -> Result<Option<SwapEntry>, Error> {
        let p = self.path.to_string_lossy();
        Ok(proc_swaps()?.into_iter().find(|e| e.filename == p))
    }

    /// Empties the area: swapoff (every swapped page comes back to memory) and swapon again
    /// with the same priority, so the next run finds no stale swap entries or swap cache.
    pub fn empty(&self) -> Result<(), Error> {
        let _op = crate::cleanup::op();
        swapoff(&self.path)?;
        swapon(&self.path, self.priority)
    }

    /// swapoff and delete now.
    pub fn remove(self) -> Result<(), Error> {
        self.cleanup.run()
    }
}

fn write_zeros(file: &std::fs::File, bytes: u64, path: &Path) -> Result<(), Error> {
    let chunk = vec![0u8; 1 << 20];
    let mut off = 0;
    while off < bytes {
        let n = (bytes - off).min(chunk.len() as u64) as usize;
        file.write_all_at(&chunk[..n], off).map_err(|e| Error(format!("{}: write: {e}", path.display())))?;
        off += n as u64;
    }
    Ok(())
}

fn write_header(file: &std::fs::File, header: &[u8], path: &Path) -> Result<(), Error> {
    file.write_all_at(header, 0).map_err(|e| Error(format!("{}: write header: {e}", path.display())))?;
    file.sync_all().map_err(|e| Error(format!("{}: fsync: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_swaps_lines() {
        let text = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                    /tmp/a\\040b                             file\t\t131068\t\t0\t\t-2\n\
                    /dev/zram0                              partition\t65532\t\t12\t\t100\n";
        let v = parse_proc_swaps(text);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].filename, "/tmp/a b");
        assert_eq!((v[0].kind.as_str(), v[0].size_kb, v[0].priority), ("file", 131068, -2));
        assert_eq!((v[1].used_kb, v[1].priority), (12, 100));
        assert!(parse_proc_swaps("Filename Type Size Used Priority\n").is_empty());
    }

    #[test]
    fn header_layout_matches_mkswap() {
        let h = swap_header(16384, 4096);
        assert_eq!(&h[4086..], b"SWAPSPACE2");
        assert_eq!(u32::from_ne_bytes(h[1024..1028].try_into().unwrap()), 1);
        assert_eq!(u32::from_ne_bytes(h[1028..1032].try_into().unwrap()), 16383);
        // Compare with the real mkswap when it is installed (it needs no root on a file).
        let Ok(out) = std::process::Command::new("mkswap").arg("--version").output() else { return };
        if !out.status.success() {
            return;
        }
        let d = crate::testutil::temp_dir("mkswap");
        let f = d.join("sw");
        std::fs::write(&f, vec![0u8; 64 << 10]).unwrap();
        let st = std::process::Command::new("mkswap").arg("-q").arg(&f).status().unwrap();
        assert!(st.success());
        let real = std::fs::read(&f).unwrap();
        let mine = swap_header(16, 4096);
        assert_eq!(real[1024..1036], mine[1024..1036], "version, last_page, nr_badpages");
        assert_eq!(real[4086..4096], mine[4086..4096]);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
