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
