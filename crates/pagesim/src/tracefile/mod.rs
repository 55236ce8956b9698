//! Other tools' traces read as streams of page references: what `pagesim cache` runs (a
//! replay in the full model is to come). Each format has a reader file here and one line in
//! [`FORMATS`]. A reader streams its file record by record (never loaded whole; a
//! zstd-compressed file is decompressed on the fly) and turns each record into a [`Ref`]:
//! the pages of one space (an address space, a disk, an object) that the record touches.
//! Block and object traces split their bytes into 4 KiB pages: an object of 10 KiB is pages
//! 0-2 of its own space, a block request at byte offset 8192 of 12 KiB is pages 2-4 of its
//! disk's space.
//!
//! A record that cannot be read gives a [`TraceError`] naming the file, the record's number
//! (its line in a text format) and what was expected; a reader never panics on its input.

mod blkparse;
pub mod elf;
mod lackey;
mod libcachesim_csv;
mod msr;
mod oracle_general;
pub mod pgt;
mod plain;

use std::fmt;
use std::io::{BufRead, BufReader};

/// A page is 4 KiB.
pub const PAGE: u64 = 4096;

/// A read or a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
}

/// One record of a trace: pages `page .. page + pages` of space `space`, at `time_ns` from
/// the trace's first record (the record's number where the format has no time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ref {
    pub time_ns: u64,
    pub op: Op,
    pub space: u64,
    pub page: u64,
    pub pages: u32,
}

impl Ref {
    /// The pages of the bytes `[offset, offset + len)` of space `space` (at least one).
    pub fn bytes(time_ns: u64, op: Op, space: u64, offset: u64, len: u64) -> Ref {
        let first = offset / PAGE;
        let last = (offset + len.max(1) - 1) / PAGE;
        Ref { time_ns, op, space, page: first, pages: (last - first + 1).min(u32::MAX as u64) as u32 }
    }
}

/// A record that could not be read: the file, the record's number (from 1) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    pub file: String,
    pub record: u64,
    pub what: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.record == 0 {
            write!(f, "{}: {}", self.file, self.what)
        } else {
            write!(f, "{}: record {}: {}", self.file, self.record, self.what)
        }
    }
}

impl std::error::Error for TraceError {}

/// A trace being read.
pub trait Reader {
    /// The next record, or `None` at the end of the trace.
    fn next_ref(&mut self) -> Result<Option<Ref>, TraceError>;

    /// Appends the next records to `out` (none at the end of the trace): the same records
    /// as [`Reader::next_ref`] gives, fewer calls a record. By default up to 256; a
    /// binary format overrides it to decode the whole records its stream's buffer holds
    /// (2,730 of oracleGeneral's in 64 KiB).
    fn next_refs(&mut self, out: &mut Vec<Ref>) -> Result<(), TraceError> {
        for _ in 0..BATCH {
            match self.next_ref()? {
                Some(r) => out.push(r),
                None => break,
            }
        }
        Ok(())
    }
}

/// How many records [`Reader::next_refs`] reads by default.
const BATCH: usize = 256;

/// What a reader is made from: the (decompressed) stream and the file's name for errors;
/// for a text format, the line last read and its number.
pub struct Input {
    pub stream: Box<dyn BufRead>,
    pub file: String,
    pub text: String,
    pub line: u64,
}

impl Input {
    /// An error at record `record` (0: the file as a whole).
    pub fn error(&self, record: u64, what: impl Into<String>) -> TraceError {
        TraceError { file: self.file.clone(), record, what: what.into() }
    }

    /// An error at the line last read.
    pub fn error_here(&self, what: impl Into<String>) -> TraceError {
        self.error(self.line, what)
    }

    /// Reads the next line into `text`, without its end; false at the end of the file.
    pub fn next_line(&mut self) -> Result<bool, TraceError> {
        self.text.clear();
        match self.stream.read_line(&mut self.text) {
            Ok(0) => Ok(false),
            Ok(_) => {
                self.line += 1;
                while self.text.ends_with('\n') || self.text.ends_with('\r') {
                    self.text.pop();
                }
                Ok(true)
            }
            Err(e) => Err(self.error(self.line + 1, format!("cannot read: {e}"))),
        }
    }
}

/// A trace format: its name (`--format`), what it is, and how to read it.
pub struct Format {
    pub name: &'static str,
    pub about: &'static str,
    pub open: fn(Input) -> Box<dyn Reader>,
}

/// The formats pagesim reads, one line each.
pub const FORMATS: &[Format] = &[
    pgt::FORMAT,
    oracle_general::FORMAT,
    libcachesim_csv::FORMAT,
    lackey::FORMAT,
    msr::FORMAT,
    blkparse::FORMAT,
    plain::FORMAT,
];

/// The format named `name`.
pub fn format(name: &str) -> Result<&'static Format, String> {
    FORMATS.iter().find(|f| f.name == name).ok_or_else(|| {
        let names: Vec<&str> = FORMATS.iter().map(|f| f.name).collect();
        format!("unknown trace format \"{name}\": give one of {}", names.join(", "))
    })
}

/// The format a file's name says (libCacheSim names its binary traces `*.oracleGeneral*`),
/// if it says one.
pub fn format_of_name(path: &str) -> Option<&'static Format> {
    let base = path.rsplit('/').next().unwrap_or(path);
    let base = base.strip_suffix(".zst").unwrap_or(base);
    if base.contains("oracleGeneral") {
        return format("oracleGeneral").ok();
    }
    let ext = base.rsplit_once('.').map(|(_, e)| e)?;
    FORMATS.iter().find(|f| f.name == ext)
}

/// Opens trace `path` in format `fmt` (`None`: the one its name says), decompressing it if
/// it is zstd-compressed (by its magic number, whatever its name).
pub fn open(path: &str, fmt: Option<&str>) -> Result<Box<dyn Reader>, TraceError> {
    let err = |what: String| TraceError { file: path.to_string(), record: 0, what };
    let format = match fmt {
        Some(name) => format(name).map_err(err)?,
        None => format_of_name(path).ok_or_else(|| {
            let names: Vec<&str> = FORMATS.iter().map(|f| f.name).collect();
            err(format!("its name does not say its format: give --format, one of {}", names.join(", ")))
        })?,
    };
    Ok((format.open)(open_input(path)?))
}

/// Opens file `path` as a stream, decompressed if it is zstd-compressed.
pub fn open_input(path: &str) -> Result<Input, TraceError> {
    let err = |what: String| TraceError { file: path.to_string(), record: 0, what };
    let file = std::fs::File::open(path).map_err(|e| err(format!("cannot open: {e}")))?;
    let mut raw = BufReader::with_capacity(1 << 16, file);
    let zstd = raw.fill_buf().map_err(|e| err(format!("cannot read: {e}")))?.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]);
    let stream: Box<dyn BufRead> = if zstd {
        let dec = ruzstd::decoding::StreamingDecoder::new(raw).map_err(|e| err(format!("not a zstd stream: {e}")))?;
        Box::new(BufReader::with_capacity(1 << 16, dec))
    } else {
        Box::new(raw)
    };
    Ok(Input { stream, file: path.to_string(), text: String::new(), line: 0 })
}

/// Parses an unsigned number, decimal or `0x` hexadecimal.
pub(crate) fn number(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Writes `bytes` to a new file named `name` in a directory of its own (tests run in
    /// parallel), returns its path.
    pub(crate) fn file(name: &str, bytes: &[u8]) -> String {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("pagesim-tracefile-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p.to_string_lossy().into_owned()
    }

    /// Every record of trace `path` in format `fmt`, or the first error; removes the file's
    /// directory.
    /// The records of trace `path` (its directory is removed after), read record by record;
    /// reading it in batches (`next_refs`) must give the same records, or the same error.
    pub(crate) fn all(path: &str, fmt: &str) -> Result<Vec<Ref>, TraceError> {
        let one_by_one = || {
            let mut r = open(path, Some(fmt))?;
            let mut v = Vec::new();
            while let Some(x) = r.next_ref()? {
                v.push(x);
            }
            Ok(v)
        };
        let batches = || {
            let mut r = open(path, Some(fmt))?;
            let mut v = Vec::new();
            loop {
                let n = v.len();
                r.next_refs(&mut v)?;
                if v.len() == n {
                    return Ok(v);
                }
            }
        };
        let (v, b) = (one_by_one(), batches());
        let _ = std::fs::remove_dir_all(std::path::Path::new(path).parent().unwrap());
        assert_eq!(v, b, "{path}: next_ref and next_refs read different records");
        v
    }

    #[test]
    fn bytes_split_into_the_pages_they_touch() {
        assert_eq!(
            Ref::bytes(0, Op::Read, 1, 8192, 12288),
            Ref { time_ns: 0, op: Op::Read, space: 1, page: 2, pages: 3 }
        );
        assert_eq!(Ref::bytes(0, Op::Read, 1, 4095, 2).pages, 2, "straddles a page boundary");
        assert_eq!(Ref::bytes(0, Op::Read, 1, 4096, 0).pages, 1, "an empty record still names its page");
    }

    /// A zstd-compressed trace reads as the same trace, whatever its name.
    #[test]
    fn a_zstd_trace_is_read_directly() {
        let text = b"0,r,5\n10,w,6\n";
        // A zstd frame of one raw block holding `text` (RFC 8878: magic, frame header with
        // a single segment and its 1-byte content size, block header: last, raw, size).
        let mut z = vec![0x28, 0xb5, 0x2f, 0xfd, 0x20, text.len() as u8];
        let bh = 1u32 | (text.len() as u32) << 3;
        z.extend_from_slice(&bh.to_le_bytes()[..3]);
        z.extend_from_slice(text);
        let path = file("t.csv.zst", &z);
        let refs = all(&path, "plain").unwrap();
        assert_eq!(refs.iter().map(|r| (r.page, r.op)).collect::<Vec<_>>(), [(5, Op::Read), (6, Op::Write)]);
    }

    #[test]
    fn an_unknown_format_or_a_name_that_says_none_is_an_error() {
        let path = file("t.trace", b"");
        let e = open(&path, None).err().unwrap();
        assert!(e.to_string().contains("give --format"), "{e}");
        let e = all(&path, "nope").unwrap_err();
        assert!(e.to_string().contains("unknown trace format \"nope\""), "{e}");
        assert_eq!(format_of_name("x/cloudPhysicsIO.oracleGeneral.bin").unwrap().name, "oracleGeneral");
        assert_eq!(format_of_name("x/run.lackey.zst").unwrap().name, "lackey");
    }
}
