//! Reading and writing single values of /proc/sys, /sys and cgroupfs files.
//!
//! Every function takes the full path, so tests point them at a temporary directory laid
//! out like sysfs. Errors name the path.

use crate::Error;
use std::io::Write;
use std::path::Path;

/// The file's content without surrounding whitespace.
pub fn read(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| Error(format!("{}: cannot read: {e}", path.display())))
}

/// Like [`read`], `None` when the file is missing or unreadable (a knob this kernel lacks).
pub fn read_opt(path: &Path) -> Option<String> {
    read(path).ok()
}

/// Parses the file as an integer, `None` when missing or not a number.
pub fn read_u64(path: &Path) -> Option<u64> {
    read_opt(path)?.parse().ok()
}

/// Writes `value` with one write(2), as `echo value > path` does: sysfs and cgroupfs take a
/// store as one buffer. The file is not created: a knob missing on this kernel is an error.
pub fn write(path: &Path, value: &str) -> Result<(), Error> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .map_err(|e| Error(format!("{}: cannot open for writing: {e}", path.display())))?;
    f.write_all(format!("{value}\n").as_bytes())
        .map_err(|e| Error(format!("{}: cannot write \"{value}\": {e}", path.display())))
}

/// The selected word of a sysfs choice list (`always [madvise] never` gives `madvise`),
/// or the trimmed value itself when there is no bracket.
pub fn selected(value: &str) -> &str {
    let v = value.trim();
    match (v.find('['), v.find(']')) {
        (Some(a), Some(b)) if a < b => &v[a + 1..b],
        _ => v,
    }
}

/// Y/N, 1/0, true/false (module parameters and sysfs booleans).
pub fn parse_bool(value: &str) -> Option<bool> {
    match value.trim() {
        "Y" | "y" | "1" | "true" | "on" => Some(true),
        "N" | "n" | "0" | "false" | "off" => Some(false),
        _ => None,
    }
}

/// Undoes the kernel's `\ooo` escapes in /proc/mounts and /proc/swaps path fields.
pub fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses `key value` lines (/proc/vmstat, memory.stat, DAMON stats); other lines are
/// skipped.
pub fn parse_key_values(text: &str) -> std::collections::BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let k = it.next()?;
            let v = it.next()?.parse().ok()?;
            it.next().is_none().then(|| (k.to_string(), v))
        })
        .collect()
}

/// Mounts a pseudo-filesystem of type `fstype` (no device, no options) at `target`.
pub fn mount(fstype: &str, target: &Path) -> Result<(), Error> {
    use std::os::unix::ffi::OsStrExt;
    let c = |b: &[u8]| std::ffi::CString::new(b).map_err(|_| Error(format!("{}: a NUL in the path", target.display())));
    let (src, fs, dir) = (c(b"nodev")?, c(fstype.as_bytes())?, c(target.as_os_str().as_bytes())?);
    // SAFETY: NUL-terminated strings that live across the call; no data argument.
    let r = unsafe { libc::mount(src.as_ptr(), dir.as_ptr(), fs.as_ptr(), 0, std::ptr::null()) };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        return Err(Error(format!("mount -t {fstype} {}: {e}", target.display())));
    }
    Ok(())
}

/// Unmounts `target`; nothing mounted there (or no such directory) is not an error.
pub fn unmount(target: &Path) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    let dir = std::ffi::CString::new(target.as_os_str().as_bytes())
        .map_err(|_| format!("{}: a NUL in the path", target.display()))?;
    // SAFETY: a NUL-terminated path that lives across the call.
    if unsafe { libc::umount2(dir.as_ptr(), 0) } == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        // EINVAL: not a mount point (never mounted, or already unmounted); ENOENT: no directory.
        Some(libc::EINVAL) | Some(libc::ENOENT) => Ok(()),
        _ => Err(format!("umount {}: {e}", target.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_booleans_and_escapes() {
        assert_eq!(selected("always [madvise] never"), "madvise");
        assert_eq!(selected("[lzo-rle] lzo lz4 "), "lzo-rle");
        assert_eq!(selected(" 60\n"), "60");
        assert_eq!(parse_bool("Y"), Some(true));
        assert_eq!(parse_bool("N\n"), Some(false));
        assert_eq!(parse_bool("maybe"), None);
        assert_eq!(unescape_octal(r"/tmp/a\040b\011c"), "/tmp/a b\tc");
        assert_eq!(unescape_octal(r"/tmp/x\04"), r"/tmp/x\04");
    }

    #[test]
    fn key_value_lines() {
        let m = parse_key_values("nr_free_pages 12\npswpout 7\nbad line here\nnot_a_number x\n");
        assert_eq!(m.len(), 2);
        assert_eq!(m["pswpout"], 7);
    }
}
