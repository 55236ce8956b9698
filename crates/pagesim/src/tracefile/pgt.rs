//! pagesim's own trace (`.pgt`): what `pagesim capture` writes from a program run under
//! QEMU with pagesim's plugin. It holds, for each thread of each process the program started,
//! the pages its loads and stores touched (after stack deletion with the trace's K: an
//! access to one of the thread's K most recent pages is left out, for any LRU memory of at
//! least K pages a hit; the first store to a page only read so far is kept) and its system
//! calls with their arguments and results, in the order they happened, with the
//! instructions the thread executed before each record.
//!
//! The file is zstd-compressed. Decompressed, it is a line `pagesim-trace 1`, a line of JSON
//! ([`Header`]), then records, each a tag byte and LEB128 numbers:
//!
//! | tag | record | fields |
//! |---|---|---|
//! | `P` | a stream starts (a thread, or a process image after exec), numbered 0, 1... | pid, tid, parent pid, image, start (ns, monotonic clock) |
//! | `F` | a file later records name, numbered 0, 1... | size, inode, path length, path bytes |
//! | `T` | the records that follow are stream n's | n |
//! | `R`, `W` | a load, a store | the page's distance from the stream's previous page (zigzag), instructions before it |
//! | `S` | a system call (x86_64 numbers) | nr, instructions before it, time (ns), six arguments, result (zigzag), file + 1 (0: none): the file it opened, mapped or unlinked |
//! | `M` | a mapping the loader made before the first instruction | start, end, file offset, flags (1 read, 2 write, 4 exec, 8 shared), file + 1 |
//! | `E` | the end of the trace | |
//!
//! An open with O_TRUNC of a file that existed is followed by an `S` record of the
//! `ftruncate(fd, 0)` it amounts to (no instructions of its own).
//!
//! Read as a page trace (`pagesim cache`), a process's anonymous pages are a space of their
//! own (the process's number), a file's pages another (`FILE_SPACE` + the file's number),
//! whether read(2) or a mapping of the file touched them ([`Procs`] follows the descriptors,
//! their offsets and the mappings).

use super::{Format, Input, Op, Reader, Ref, TraceError, PAGE};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::io::{self, BufRead, Write};

pub const FORMAT: Format = Format {
    name: "pgt",
    about: "pagesim capture's trace: a program's page accesses and system calls, per thread",
    open: |input| Box::new(Pages::new(input)),
};

/// The first line of a trace.
pub const MAGIC: &str = "pagesim-trace 1";

/// The longest file path a trace may hold (Linux's PATH_MAX is 4096).
const PATH_MAX: usize = 1 << 16;

/// Spaces of files' pages start here ([`Pages`]); a process's own pages are its number.
pub const FILE_SPACE: u64 = 1 << 40;

/// What a trace says about itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// The stack-deletion depth: the trace is exact for memories of at least `k` pages.
    pub k: u32,
    /// The program and its arguments.
    pub command: Vec<String>,
    /// Nanoseconds of user-mode CPU time per instruction executed, measured when the program ran
    /// natively (`pagesim capture --native`), if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ns_per_insn: Option<f64>,
    /// What recorded it (QEMU's version).
    pub tool: String,
    /// The directory the program ran in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// A stream: one thread of one process image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stream {
    pub pid: u32,
    pub tid: u32,
    pub parent: u32,
    /// Process images of this pid before this one (exec starts a new one).
    pub image: u32,
    pub start_ns: u64,
}

/// A file named by the trace, as it was when the program opened or mapped it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct File {
    pub path: String,
    pub size: u64,
    pub ino: u64,
}

/// One record of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    Stream(Stream),
    File(File),
    /// Stream `stream` loaded (or stored to) page `vpn`, `insns` instructions after its
    /// previous record.
    Access {
        stream: u32,
        vpn: u64,
        write: bool,
        insns: u64,
    },
    /// System call `nr` with its arguments and result; `file` is the file it named (opened,
    /// created, mapped, unlinked).
    Syscall {
        stream: u32,
        nr: u32,
        insns: u64,
        time_ns: u64,
        args: [u64; 6],
        ret: i64,
        file: Option<u32>,
    },
    /// A mapping the loader made: `[start, end)` (bytes), of `file` at `offset` if any.
    Mapping {
        stream: u32,
        start: u64,
        end: u64,
        offset: u64,
        flags: u8,
        file: Option<u32>,
    },
}

/// Mapping flags ([`Record::Mapping`]).
pub const MAP_READ: u8 = 1;
pub const MAP_WRITE: u8 = 2;
pub const MAP_EXEC: u8 = 4;
pub const MAP_SHARED: u8 = 8;

fn put_varint(out: &mut impl Write, mut v: u64) -> io::Result<()> {
    let mut buf = [0u8; 10];
    let mut n = 0;
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            buf[n] = b;
            n += 1;
            break;
        }
        buf[n] = b | 0x80;
        n += 1;
    }
    out.write_all(&buf[..n])
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

/// Writes a trace's records (uncompressed: [`write_compressed`] compresses it).
pub struct Writer<W: Write> {
    out: W,
    cur: Option<u32>,
    /// Per stream, its previous page.
    prev: Vec<u64>,
}

impl<W: Write> Writer<W> {
    pub fn new(mut out: W, header: &Header) -> io::Result<Self> {
        writeln!(out, "{MAGIC}")?;
        serde_json::to_writer(&mut out, header)?;
        writeln!(out)?;
        Ok(Writer { out, cur: None, prev: Vec::new() })
    }

    /// Streams started so far.
    pub fn streams(&self) -> u32 {
        self.prev.len() as u32
    }

    fn switch(&mut self, stream: u32) -> io::Result<()> {
        if stream as usize >= self.prev.len() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("stream {stream} was not started")));
        }
        if self.cur != Some(stream) {
            self.out.write_all(b"T")?;
            put_varint(&mut self.out, stream as u64)?;
            self.cur = Some(stream);
        }
        Ok(())
    }

    pub fn record(&mut self, r: &Record) -> io::Result<()> {
        let o = &mut self.out;
        match r {
            Record::Stream(s) => {
                o.write_all(b"P")?;
                for v in [s.pid as u64, s.tid as u64, s.parent as u64, s.image as u64, s.start_ns] {
                    put_varint(o, v)?;
                }
                self.prev.push(0);
            }
            Record::File(f) => {
                o.write_all(b"F")?;
                put_varint(o, f.size)?;
                put_varint(o, f.ino)?;
                put_varint(o, f.path.len() as u64)?;
                o.write_all(f.path.as_bytes())?;
            }
            &Record::Access { stream, vpn, write, insns } => {
                self.switch(stream)?;
                let prev = std::mem::replace(&mut self.prev[stream as usize], vpn);
                self.out.write_all(if write { b"W" } else { b"R" })?;
                put_varint(&mut self.out, zigzag(vpn.wrapping_sub(prev) as i64))?;
                put_varint(&mut self.out, insns)?;
            }
            &Record::Syscall { stream, nr, insns, time_ns, args, ret, file } => {
                self.switch(stream)?;
                let o = &mut self.out;
                o.write_all(b"S")?;
                for v in [nr as u64, insns, time_ns] {
                    put_varint(o, v)?;
                }
                for a in args {
                    put_varint(o, a)?;
                }
                put_varint(o, zigzag(ret))?;
                put_varint(o, file.map_or(0, |f| f as u64 + 1))?;
            }
            &Record::Mapping { stream, start, end, offset, flags, file } => {
                self.switch(stream)?;
                let o = &mut self.out;
                o.write_all(b"M")?;
                for v in [start, end, offset, flags as u64, file.map_or(0, |f| f as u64 + 1)] {
                    put_varint(o, v)?;
                }
            }
        }
        Ok(())
    }

    /// Ends the trace; returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.write_all(b"E")?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Compresses the uncompressed trace `from` into `to` (zstd).
pub fn write_compressed(from: &std::path::Path, to: &std::path::Path) -> io::Result<()> {
    let src = io::BufReader::with_capacity(1 << 16, std::fs::File::open(from)?);
    let mut dst = io::BufWriter::with_capacity(1 << 16, std::fs::File::create(to)?);
    ruzstd::encoding::compress(src, &mut dst, ruzstd::encoding::CompressionLevel::Fastest);
    dst.flush()
}

/// Reads a trace's records in order.
pub struct Records {
    input: Input,
    pub header: Header,
    /// Records read (the number of the last one).
    pub record: u64,
    cur: Option<u32>,
    prev: Vec<u64>,
    files: u32,
    ended: bool,
    started: bool,
}

impl Records {
    /// Reads the first two lines; `header` is then the trace's.
    pub fn new(input: Input) -> Records {
        let header = Header { k: 0, command: Vec::new(), ns_per_insn: None, tool: String::new(), cwd: None };
        Records { input, header, record: 0, cur: None, prev: Vec::new(), files: 0, ended: false, started: false }
    }

    /// Reads the magic line and the header (done by the first [`Records::next_record`]).
    pub fn start(&mut self) -> Result<(), TraceError> {
        if self.started {
            return Ok(());
        }
        self.started = true;
        if !self.input.next_line()? || self.input.text != MAGIC {
            return Err(self.input.error(0, format!("not a pagesim trace: the first line is not \"{MAGIC}\"")));
        }
        if !self.input.next_line()? {
            return Err(self.input.error(0, "truncated: no header line"));
        }
        self.header = serde_json::from_str(&self.input.text)
            .map_err(|e| self.input.error(0, format!("the header line is not a pagesim trace header: {e}")))?;
        Ok(())
    }

    fn byte(&mut self) -> Result<Option<u8>, TraceError> {
        let b = match self.input.stream.fill_buf() {
            Ok([]) => return Ok(None),
            Ok(b) => b[0],
            Err(e) => return Err(self.input.error(self.record, format!("cannot read: {e}"))),
        };
        self.input.stream.consume(1);
        Ok(Some(b))
    }

    fn truncated(&self) -> TraceError {
        self.input.error(self.record, "truncated in the middle of the record")
    }

    fn varint(&mut self) -> Result<u64, TraceError> {
        // Usually the buffer holds the whole number: decode it there.
        if let Ok(b) = self.input.stream.fill_buf() {
            if b.len() >= 10 {
                let mut v = 0u64;
                for (i, &x) in b[..10].iter().enumerate() {
                    v |= ((x & 0x7f) as u64) << (7 * i);
                    if x & 0x80 == 0 {
                        self.input.stream.consume(i + 1);
                        return Ok(v);
                    }
                }
                return Err(self.input.error(self.record, "a number longer than 64 bits"));
            }
        }
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(b) = self.byte()? else { return Err(self.truncated()) };
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.input.error(self.record, "a number longer than 64 bits"))
    }

    fn small(&mut self, what: &str) -> Result<u32, TraceError> {
        let v = self.varint()?;
        u32::try_from(v).map_err(|_| self.input.error(self.record, format!("{what} {v} is out of range")))
    }

    fn stream_now(&self) -> Result<u32, TraceError> {
        self.cur.ok_or_else(|| self.input.error(self.record, "a record before any stream was chosen"))
    }

    fn file_ref(&mut self) -> Result<Option<u32>, TraceError> {
        let f = self.varint()?;
        if f > self.files as u64 {
            return Err(self.input.error(self.record, format!("file {} was not defined", f - 1)));
        }
        Ok(f.checked_sub(1).map(|f| f as u32))
    }

    /// The next record, or `None` after the end record.
    pub fn next_record(&mut self) -> Result<Option<Record>, TraceError> {
        self.start()?;
        loop {
            if self.ended {
                return Ok(None);
            }
            let Some(tag) = self.byte()? else {
                return Err(self.input.error(self.record + 1, "truncated: the trace ends without its end record"));
            };
            self.record += 1;
            let r = match tag {
                b'P' => {
                    let (pid, tid, parent, image) =
                        (self.small("pid")?, self.small("tid")?, self.small("pid")?, self.small("image")?);
                    let start_ns = self.varint()?;
                    self.prev.push(0);
                    Record::Stream(Stream { pid, tid, parent, image, start_ns })
                }
                b'F' => {
                    let (size, ino) = (self.varint()?, self.varint()?);
                    let len = self.small("path length")? as usize;
                    if len > PATH_MAX {
                        return Err(self
                            .input
                            .error(self.record, format!("a path of {len} bytes (at most {PATH_MAX})")));
                    }
                    let mut path = vec![0u8; len];
                    std::io::Read::read_exact(&mut self.input.stream, &mut path).map_err(|_| self.truncated())?;
                    self.files += 1;
                    Record::File(File { path: String::from_utf8_lossy(&path).into_owned(), size, ino })
                }
                b'T' => {
                    let s = self.small("stream")?;
                    if s as usize >= self.prev.len() {
                        return Err(self.input.error(self.record, format!("stream {s} was not started")));
                    }
                    self.cur = Some(s);
                    continue;
                }
                b'R' | b'W' => {
                    let stream = self.stream_now()?;
                    let d = unzigzag(self.varint()?);
                    let insns = self.varint()?;
                    let vpn = self.prev[stream as usize].wrapping_add(d as u64);
                    self.prev[stream as usize] = vpn;
                    Record::Access { stream, vpn, write: tag == b'W', insns }
                }
                b'S' => {
                    let stream = self.stream_now()?;
                    let nr = self.small("system call number")?;
                    let (insns, time_ns) = (self.varint()?, self.varint()?);
                    let mut args = [0u64; 6];
                    for a in &mut args {
                        *a = self.varint()?;
                    }
                    let ret = unzigzag(self.varint()?);
                    let file = self.file_ref()?;
                    Record::Syscall { stream, nr, insns, time_ns, args, ret, file }
                }
                b'M' => {
                    let stream = self.stream_now()?;
                    let (start, end, offset) = (self.varint()?, self.varint()?, self.varint()?);
                    let flags = self.varint()? as u8;
                    let file = self.file_ref()?;
                    if end < start {
                        return Err(self
                            .input
                            .error(self.record, format!("a mapping ends at {end:#x} before its start {start:#x}")));
                    }
                    Record::Mapping { stream, start, end, offset, flags, file }
                }
                b'E' => {
                    self.ended = true;
                    return Ok(None);
                }
                t => {
                    return Err(self.input.error(self.record, format!("unknown record tag {:?}", t as char)));
                }
            };
            return Ok(Some(r));
        }
    }
}

/// x86_64 system call numbers [`Procs`] follows.
pub mod nr {
    pub const READ: u32 = 0;
    pub const WRITE: u32 = 1;
    pub const OPEN: u32 = 2;
    pub const CLOSE: u32 = 3;
    pub const LSEEK: u32 = 8;
    pub const MMAP: u32 = 9;
    pub const MUNMAP: u32 = 11;
    pub const BRK: u32 = 12;
    pub const PREAD64: u32 = 17;
    pub const PWRITE64: u32 = 18;
    pub const READV: u32 = 19;
    pub const WRITEV: u32 = 20;
    pub const MREMAP: u32 = 25;
    pub const MSYNC: u32 = 26;
    pub const MADVISE: u32 = 28;
    pub const DUP: u32 = 32;
    pub const DUP2: u32 = 33;
    pub const CLONE: u32 = 56;
    pub const FORK: u32 = 57;
    pub const VFORK: u32 = 58;
    pub const EXECVE: u32 = 59;
    pub const EXIT: u32 = 60;
    pub const WAIT4: u32 = 61;
    pub const FCNTL: u32 = 72;
    pub const FSYNC: u32 = 74;
    pub const FDATASYNC: u32 = 75;
    pub const FTRUNCATE: u32 = 77;
    pub const CREAT: u32 = 85;
    pub const UNLINK: u32 = 87;
    pub const FADVISE64: u32 = 221;
    pub const FUTEX: u32 = 202;
    pub const EXIT_GROUP: u32 = 231;
    pub const OPENAT: u32 = 257;
    pub const UNLINKAT: u32 = 263;
    pub const DUP3: u32 = 292;
    pub const PREADV: u32 = 295;
    pub const PWRITEV: u32 = 296;
    pub const EXECVEAT: u32 = 322;
    pub const PREADV2: u32 = 327;
    pub const PWRITEV2: u32 = 328;
    pub const CLONE3: u32 = 435;
    pub const OPENAT2: u32 = 437;
    pub const FUTEX_WAITV: u32 = 449;
}

/// What a mapping maps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backing {
    Anon,
    /// File `file` from its page `pgoff` (the mapping's first page).
    File {
        file: u32,
        pgoff: u64,
        shared: bool,
    },
}

/// A mapping a process made (mmap, the loader, brk's heap, or memory it touched that no
/// call mapped, such as the stack QEMU made: a 2 MiB area of its own), numbered in the
/// order the trace makes them; a replay maps each as a region. Its pages are counted from
/// `start`, however munmap splits it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    /// The process (an index into [`Procs::procs`]).
    pub proc: u32,
    pub start: u64,
    /// The most pages it ever had (a heap grows).
    pub pages: u64,
    pub backing: Backing,
    /// Mapped writable (a private file mapping's written pages are anonymous copies).
    pub writable: bool,
    pub exec: bool,
}

/// A part of a mapping: up to page `end`, of instance `inst`.
#[derive(Clone, Copy, Debug)]
struct Map {
    end: u64,
    inst: u32,
}

/// A descriptor's open file description: its file, offset, whether it appends, and its
/// number (descriptors that dup(2) or fork made from one share it: [`Procs::ofd_refs`]).
#[derive(Clone, Copy, Debug)]
struct Open {
    file: u32,
    pos: u64,
    append: bool,
    ofd: u32,
}

/// A process's address space and descriptors, as its system calls left them.
#[derive(Clone, Debug, Default)]
pub struct Proc {
    pub pid: u32,
    pub image: u32,
    /// The process that forked it (for an exec's new image: the one before it).
    pub parent: Option<u32>,
    /// Mappings by start page.
    maps: BTreeMap<u64, Map>,
    fds: HashMap<u64, Open>,
    /// The mapping part the last access found: (start, end, instance); empty after the
    /// mappings change.
    hot: (u64, u64, u32),
    /// brk's heap: where it starts and ends, and its instance once it has grown.
    brk: Option<(u64, u64)>,
    heap: Option<u32>,
    pub exited: bool,
}

impl Proc {
    /// The instance page `vpn` is in, if a mapping covers it.
    fn inst_at(&mut self, vpn: u64) -> Option<u32> {
        let (start, end, inst) = self.hot;
        if (start..end).contains(&vpn) {
            return Some(inst);
        }
        let (&start, m) = self.maps.range(..=vpn).next_back()?;
        (vpn < m.end).then(|| {
            self.hot = (start, m.end, m.inst);
            m.inst
        })
    }

    /// Removes pages `[start, end)` from the mappings, splitting those that straddle them;
    /// returns the instances it touched.
    fn unmap(&mut self, start: u64, end: u64) -> Vec<u32> {
        self.hot = (0, 0, 0);
        let over: Vec<u64> = self.maps.range(..end).filter(|(_, m)| m.end > start).map(|(&s, _)| s).collect();
        let mut touched = Vec::new();
        for s in over {
            let m = self.maps.remove(&s).expect("listed");
            if s < start {
                self.maps.insert(s, Map { end: start, inst: m.inst });
            }
            if m.end > end {
                self.maps.insert(end, m);
            }
            if !touched.contains(&m.inst) {
                touched.push(m.inst);
            }
        }
        touched
    }

    /// The file descriptor `fd` refers to, if it is a regular file's.
    pub fn fd_file(&self, fd: u64) -> Option<u32> {
        self.fds.get(&fd).map(|o| o.file)
    }
}

/// What a call did to a file besides reading or writing it ([`Touch::Call`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileOp {
    /// It was truncated to size 0 (ftruncate(fd, 0), or an open with O_TRUNC of a file that
    /// existed: the capture writes the ftruncate such an open amounts to).
    Truncated(u32),
    /// The last descriptor of one of its open file descriptions was closed (close, dup2
    /// over it, the exit of the last process holding it): the filesystem's `release`.
    Released(u32),
    /// Unlinked and no longer open: the kernel drops its pages (`evict`). A file still
    /// mapped is not dropped (its mappings are not counted as references).
    Evicted(u32),
}

/// What a record does to memory or files, in pages ([`Procs::apply`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Touch {
    /// A load or store to page `idx` of mapping `inst`; a file mapping's page is also page
    /// `page` of its file.
    Access { proc: u32, inst: u32, idx: u64, file: Option<(u32, u64)>, write: bool },
    /// Pages `[page, page + pages)` of file `file`, through a read or write call.
    FileIo { proc: u32, file: u32, page: u64, pages: u32, write: bool },
    /// Another call; `unmapped`: the mappings it unmapped whole; `files`: what it did to
    /// files, in order.
    Call { proc: u32, unmapped: Vec<u32>, files: Vec<FileOp> },
}

/// 2 MiB: the area of its own that memory no call mapped gets.
const LOOSE_AREA: u64 = 512;

/// The processes of a trace: which stream is which process's, and each process's mappings
/// and descriptors, so that an access or a read(2) names the pages it touches.
#[derive(Clone, Debug, Default)]
pub struct Procs {
    /// Per stream, its process (an index into `procs`).
    pub stream_proc: Vec<u32>,
    /// A process per image: exec gives a pid a new one.
    pub procs: Vec<Proc>,
    /// Each pid's current image.
    by_pid: HashMap<u32, (u32, u32)>,
    pub files: Vec<File>,
    /// Per open file description, the descriptors that refer to it (in every process).
    ofd_refs: Vec<u32>,
    /// Per file, its open file descriptions, and whether it was unlinked since it was last
    /// opened.
    file_opens: Vec<u32>,
    unlinked: Vec<bool>,
    pub instances: Vec<Instance>,
    /// System calls seen that [`Procs::apply`] does not follow, and how often (for a
    /// summary).
    pub unknown_syscalls: BTreeMap<u32, u64>,
}

impl Procs {
    /// Follows record `r`; returns what it touched (`None` for a record of the trace's own
    /// bookkeeping: streams, files, the loader's mappings).
    pub fn apply(&mut self, r: &Record) -> Option<Touch> {
        match r {
            Record::Stream(s) => {
                let proc = self.proc_of(s);
                self.stream_proc.push(proc);
                None
            }
            Record::File(f) => {
                self.files.push(f.clone());
                self.file_opens.push(0);
                self.unlinked.push(false);
                None
            }
            &Record::Access { stream, vpn, write, .. } => {
                let proc = self.stream_proc[stream as usize];
                let p = &mut self.procs[proc as usize];
                let inst = match p.inst_at(vpn) {
                    Some(i) => i,
                    None => {
                        // Its 2 MiB area, less what mappings before and after it cover.
                        let p = &self.procs[proc as usize];
                        let area = vpn / LOOSE_AREA * LOOSE_AREA;
                        let prev = p.maps.range(..vpn).next_back().map_or(0, |(_, m)| m.end);
                        let next = p.maps.range(vpn..).next().map_or(u64::MAX, |(&s, _)| s);
                        self.map(proc, area.max(prev), (area + LOOSE_AREA).min(next), Backing::Anon, true, false)
                    }
                };
                let i = &self.instances[inst as usize];
                let idx = vpn - i.start;
                let file = match i.backing {
                    Backing::File { file, pgoff, .. } => Some((file, pgoff + idx)),
                    Backing::Anon => None,
                };
                Some(Touch::Access { proc, inst, idx, file, write })
            }
            &Record::Mapping { stream, start, end, offset, flags, file } => {
                let proc = self.stream_proc[stream as usize];
                let (start, end, pgoff) = (start / PAGE, end.div_ceil(PAGE), offset / PAGE);
                let (writable, exec) = (flags & MAP_WRITE != 0, flags & MAP_EXEC != 0);
                let Some(file) = file else {
                    self.map(proc, start, end, Backing::Anon, writable, exec);
                    return None;
                };
                let shared = flags & MAP_SHARED != 0;
                // QEMU shows a guest ELF's header, text and read-only data as one mapping,
                // readable only (`elf::exec_pages`): the kernel maps the text VM_EXEC.
                let text = if writable || exec {
                    Vec::new()
                } else {
                    let f = &self.files[file as usize];
                    super::elf::exec_pages(&f.path, f.size)
                };
                let is_text = |page: u64| text.iter().any(|&[a, b]| (a..b).contains(&page));
                let mut s = start;
                while s < end {
                    let x = exec || is_text(pgoff + (s - start));
                    let mut e = s + 1;
                    while e < end && (exec || is_text(pgoff + (e - start))) == x {
                        e += 1;
                    }
                    let backing = Backing::File { file, pgoff: pgoff + (s - start), shared };
                    self.map(proc, s, e, backing, writable, x);
                    s = e;
                }
                None
            }
            &Record::Syscall { stream, nr, args, ret, file, .. } => {
                Some(self.syscall(self.stream_proc[stream as usize], nr, args, ret, file))
            }
        }
    }

    /// A new mapping of pages `[start, end)` in process `proc` (what it covered goes).
    fn map(&mut self, proc: u32, start: u64, end: u64, backing: Backing, writable: bool, exec: bool) -> u32 {
        let inst = self.instances.len() as u32;
        self.instances.push(Instance { proc, start, pages: end.saturating_sub(start), backing, writable, exec });
        let p = &mut self.procs[proc as usize];
        if end > start {
            p.unmap(start, end);
            p.maps.insert(start, Map { end, inst });
            p.hot = (0, 0, 0);
        }
        inst
    }

    /// Of `touched` (instances an unmap reached), those no part of which is mapped now.
    fn gone(&self, proc: u32, touched: Vec<u32>) -> Vec<u32> {
        let p = &self.procs[proc as usize];
        touched.into_iter().filter(|&i| !p.maps.values().any(|m| m.inst == i)).collect()
    }

    /// The process stream `s` belongs to: its image's (another thread of it), a new image of
    /// its pid (exec: the descriptors stay, the mappings go), or a new process (fork: a
    /// copy of its parent's current image).
    fn proc_of(&mut self, s: &Stream) -> u32 {
        let old = self.by_pid.get(&s.pid).copied();
        if let Some((image, proc)) = old {
            if image == s.image {
                return proc;
            }
        }
        let parent_proc = self.by_pid.get(&s.parent).map(|&(_, p)| p);
        let p = match (old, parent_proc) {
            (Some((_, before)), _) => {
                let b = &mut self.procs[before as usize];
                b.exited = true;
                Proc { fds: b.fds.clone(), parent: Some(before), ..Proc::default() }
            }
            (None, Some(parent)) => {
                let mut p = self.procs[parent as usize].clone();
                p.parent = Some(parent);
                for o in p.fds.values() {
                    self.ofd_refs[o.ofd as usize] += 1;
                }
                p
            }
            (None, None) => Proc::default(),
        };
        self.procs.push(Proc { pid: s.pid, image: s.image, exited: false, ..p });
        let proc = (self.procs.len() - 1) as u32;
        self.by_pid.insert(s.pid, (s.image, proc));
        proc
    }

    /// `n` bytes read or written through descriptor `fd` at `off` (`None`: at its offset,
    /// which moves; at the end of the file for a write in append mode).
    fn file_io(&mut self, proc: u32, fd: u64, off: Option<u64>, n: i64, write: bool) -> Touch {
        let nothing = Touch::Call { proc, unmapped: Vec::new(), files: Vec::new() };
        let Some(o) = self.procs[proc as usize].fds.get_mut(&fd) else { return nothing };
        if n <= 0 {
            return nothing;
        }
        let n = n as u64;
        let size = &mut self.files[o.file as usize].size;
        let at = off.unwrap_or_else(|| {
            let at = if write && o.append { *size } else { o.pos };
            o.pos = at + n;
            at
        });
        if write {
            *size = (*size).max(at + n);
        }
        let r = Ref::bytes(0, Op::Read, 0, at, n);
        Touch::FileIo { proc, file: o.file, page: r.page, pages: r.pages, write }
    }

    /// Drops descriptor `fd` of process `proc`, if it has one; the last descriptor of an
    /// open file description releases it.
    fn close_fd(&mut self, proc: u32, fd: u64, ops: &mut Vec<FileOp>) {
        if let Some(o) = self.procs[proc as usize].fds.remove(&fd) {
            self.put_ofd(o, ops);
        }
    }

    fn put_ofd(&mut self, o: Open, ops: &mut Vec<FileOp>) {
        let refs = &mut self.ofd_refs[o.ofd as usize];
        *refs -= 1;
        if *refs > 0 {
            return;
        }
        ops.push(FileOp::Released(o.file));
        let f = o.file as usize;
        self.file_opens[f] -= 1;
        if self.file_opens[f] == 0 && self.unlinked[f] {
            self.evict(o.file, ops);
        }
    }

    /// File `file`, unlinked, is no longer open: its pages go, unless a mapping holds it.
    fn evict(&mut self, file: u32, ops: &mut Vec<FileOp>) {
        let mapped = self.procs.iter().filter(|p| !p.exited).any(|p| {
            p.maps
                .values()
                .any(|m| matches!(self.instances[m.inst as usize].backing, Backing::File { file: f, .. } if f == file))
        });
        if !mapped {
            ops.push(FileOp::Evicted(file));
        }
    }

    fn syscall(&mut self, proc: u32, nr: u32, a: [u64; 6], ret: i64, file: Option<u32>) -> Touch {
        use nr::*;
        let offset = |off: u64| (off as i64 >= 0).then_some(off);
        let mut unmapped = Vec::new();
        let mut files = Vec::new();
        if ret < 0 {
            // A failed call changes nothing pagesim follows.
            return Touch::Call { proc, unmapped, files };
        }
        match nr {
            READ | READV => return self.file_io(proc, a[0], None, ret, false),
            WRITE | WRITEV => return self.file_io(proc, a[0], None, ret, true),
            PREAD64 | PREADV | PREADV2 => return self.file_io(proc, a[0], offset(a[3]), ret, false),
            PWRITE64 | PWRITEV | PWRITEV2 => return self.file_io(proc, a[0], offset(a[3]), ret, true),
            MMAP => {
                let (start, end) = (ret as u64 / PAGE, (ret as u64).saturating_add(a[1]).div_ceil(PAGE));
                let anon = a[3] & 0x20 != 0; // MAP_ANONYMOUS
                let fd_file = self.procs[proc as usize].fds.get(&a[4]).map(|o| o.file);
                let backing = match (anon, file.or(fd_file)) {
                    (false, Some(file)) => Backing::File { file, pgoff: a[5] / PAGE, shared: a[3] & 0x1 != 0 },
                    _ => Backing::Anon,
                };
                // PROT_WRITE, PROT_EXEC.
                self.map(proc, start, end, backing, a[2] & 2 != 0, a[2] & 4 != 0);
                return Touch::Call { proc, unmapped, files };
            }
            MUNMAP => {
                let t = self.procs[proc as usize].unmap(a[0] / PAGE, a[0].saturating_add(a[1]).div_ceil(PAGE));
                return Touch::Call { proc, unmapped: self.gone(proc, t), files };
            }
            MREMAP => {
                let old = a[0] / PAGE;
                let (backing, writable, exec) = match self.procs[proc as usize].inst_at(old) {
                    Some(i) => {
                        let i = &self.instances[i as usize];
                        let shifted = match i.backing {
                            Backing::File { file, pgoff, shared } => {
                                Backing::File { file, pgoff: pgoff + (old - i.start), shared }
                            }
                            b => b,
                        };
                        (shifted, i.writable, i.exec)
                    }
                    None => (Backing::Anon, true, false),
                };
                let t = self.procs[proc as usize].unmap(old, a[0].saturating_add(a[1]).div_ceil(PAGE));
                unmapped = self.gone(proc, t);
                let new = ret as u64 / PAGE;
                self.map(proc, new, (ret as u64).saturating_add(a[2]).div_ceil(PAGE), backing, writable, exec);
                return Touch::Call { proc, unmapped, files };
            }
            BRK => {
                let end = (ret as u64).div_ceil(PAGE);
                let p = &mut self.procs[proc as usize];
                match (p.brk, p.heap) {
                    (None, _) => p.brk = Some((end, end)),
                    (Some((start, top)), None) if end > top => {
                        p.brk = Some((start, end));
                        let inst = self.map(proc, start, end, Backing::Anon, true, false);
                        self.procs[proc as usize].heap = Some(inst);
                    }
                    (Some((start, top)), Some(inst)) if end > top => {
                        // The heap grows: its instance's pages go on from where they were.
                        p.brk = Some((start, end));
                        p.unmap(top, end);
                        p.maps.insert(top, Map { end, inst });
                        p.hot = (0, 0, 0);
                        let i = &mut self.instances[inst as usize];
                        i.pages = i.pages.max(end - i.start);
                    }
                    // A heap that shrinks keeps its pages here (glibc trims rarely).
                    _ => {}
                }
                return Touch::Call { proc, unmapped, files };
            }
            _ => {}
        }
        match nr {
            OPEN | OPENAT | CREAT | OPENAT2 => {
                // The descriptor number is free: whatever it was is closed.
                self.close_fd(proc, ret as u64, &mut files);
                if let Some(file) = file {
                    let flags = match nr {
                        OPEN => a[1],
                        OPENAT => a[2],
                        CREAT => 0o1101,
                        _ => 0,
                    };
                    if flags & 0o1000 != 0 {
                        self.files[file as usize].size = 0; // O_TRUNC
                    }
                    let ofd = self.ofd_refs.len() as u32;
                    self.ofd_refs.push(1);
                    self.file_opens[file as usize] += 1;
                    self.unlinked[file as usize] = false;
                    let o = Open { file, pos: 0, append: flags & 0o2000 != 0, ofd };
                    self.procs[proc as usize].fds.insert(ret as u64, o);
                }
            }
            CLOSE => self.close_fd(proc, a[0], &mut files),
            LSEEK => {
                if let Some(o) = self.procs[proc as usize].fds.get_mut(&a[0]) {
                    o.pos = ret as u64;
                }
            }
            // dup(2) and dup2/dup3 (which close what the new number referred to);
            // fcntl's F_DUPFD, F_DUPFD_CLOEXEC.
            DUP | DUP2 | DUP3 | FCNTL if nr != FCNTL || a[1] == 0 || a[1] == 1030 => {
                if ret as u64 != a[0] {
                    self.close_fd(proc, ret as u64, &mut files);
                    if let Some(o) = self.procs[proc as usize].fds.get(&a[0]).copied() {
                        self.ofd_refs[o.ofd as usize] += 1;
                        self.procs[proc as usize].fds.insert(ret as u64, o);
                    }
                }
            }
            FTRUNCATE => {
                if let Some(o) = self.procs[proc as usize].fds.get(&a[0]) {
                    self.files[o.file as usize].size = a[1];
                    if a[1] == 0 {
                        files.push(FileOp::Truncated(o.file));
                    }
                }
            }
            UNLINK | UNLINKAT => {
                // The capture names the file when it was a regular file of one link.
                if let Some(file) = file {
                    self.unlinked[file as usize] = true;
                    if self.file_opens[file as usize] == 0 {
                        self.evict(file, &mut files);
                    }
                }
            }
            EXIT_GROUP => {
                // The process's descriptors close (those of the same description in
                // another process stay open).
                let p = &mut self.procs[proc as usize];
                p.exited = true;
                let mut fds: Vec<(u64, Open)> = p.fds.drain().collect();
                fds.sort_unstable_by_key(|&(fd, _)| fd);
                for (_, o) in fds {
                    self.put_ofd(o, &mut files);
                }
            }
            // Followed by the streams they start or end, or by what replays them.
            FCNTL | EXIT | CLONE | FORK | VFORK | CLONE3 | EXECVE | EXECVEAT | WAIT4 | MSYNC | MADVISE | FSYNC
            | FDATASYNC | FADVISE64 | FUTEX | FUTEX_WAITV => {}
            _ => *self.unknown_syscalls.entry(nr).or_default() += 1,
        }
        Touch::Call { proc, unmapped, files }
    }
}

/// A `.pgt` trace read as page references (`pagesim cache`): loads and stores as one page
/// each, read(2) and write(2) calls as the pages of the file they cover.
struct Pages {
    records: Records,
    procs: Procs,
    /// Instructions executed so far (all threads): a record's time, at 1 ns each.
    insns: u64,
}

impl Pages {
    fn new(input: Input) -> Pages {
        Pages { records: Records::new(input), procs: Procs::default(), insns: 0 }
    }
}

impl Reader for Pages {
    fn next_ref(&mut self) -> Result<Option<Ref>, TraceError> {
        while let Some(r) = self.records.next_record()? {
            if let Record::Access { insns, .. } | Record::Syscall { insns, .. } = r {
                self.insns += insns;
            }
            let op = |w: bool| if w { Op::Write } else { Op::Read };
            let time_ns = self.insns;
            match self.procs.apply(&r) {
                Some(Touch::Access { file: Some((file, page)), write, .. }) => {
                    let space = FILE_SPACE + file as u64;
                    return Ok(Some(Ref { time_ns, op: op(write), space, page, pages: 1 }));
                }
                Some(Touch::Access { proc, inst, idx, write, .. }) => {
                    let page = self.procs.instances[inst as usize].start + idx;
                    return Ok(Some(Ref { time_ns, op: op(write), space: proc as u64, page, pages: 1 }));
                }
                Some(Touch::FileIo { file, page, pages, write, .. }) => {
                    let space = FILE_SPACE + file as u64;
                    return Ok(Some(Ref { time_ns, op: op(write), space, page, pages }));
                }
                Some(Touch::Call { .. }) | None => {}
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{all, file};
    use super::*;

    fn header() -> Header {
        Header { k: 1, command: vec!["t".into()], ns_per_insn: None, tool: "test".into(), cwd: None }
    }

    fn write(records: &[Record]) -> Vec<u8> {
        let mut w = Writer::new(Vec::new(), &header()).unwrap();
        for r in records {
            w.record(r).unwrap();
        }
        w.finish().unwrap()
    }

    fn stream(pid: u32) -> Record {
        Record::Stream(Stream { pid, tid: pid, parent: 1, image: 0, start_ns: 0 })
    }

    fn sys(stream: u32, nr: u32, args: [u64; 6], ret: i64, file: Option<u32>) -> Record {
        Record::Syscall { stream, nr, insns: 10, time_ns: 5, args, ret, file }
    }

    fn read_back(bytes: &[u8]) -> Result<Vec<Record>, TraceError> {
        let path = file("t.pgt", bytes);
        let mut r = Records::new(super::super::open_input(&path).unwrap());
        let mut v = Vec::new();
        let out = loop {
            match r.next_record() {
                Ok(Some(x)) => v.push(x),
                Ok(None) => break Ok(v),
                Err(e) => break Err(e),
            }
        };
        let _ = std::fs::remove_dir_all(std::path::Path::new(&path).parent().unwrap());
        out
    }

    /// Every kind of record reads back as written, pages far apart included.
    #[test]
    fn records_round_trip() {
        let recs = vec![
            stream(7),
            Record::File(File { path: "/data/f".into(), size: 81920, ino: 12 }),
            Record::Mapping {
                stream: 0,
                start: 0x40_0000_0000,
                end: 0x40_0000_3000,
                offset: 0,
                flags: 5,
                file: Some(0),
            },
            Record::Access { stream: 0, vpn: 0x0007_ffff_ffff, write: false, insns: 3 },
            Record::Access { stream: 0, vpn: 5, write: true, insns: 0 },
            stream(8),
            Record::Access { stream: 1, vpn: 6, write: false, insns: 1 << 40 },
            sys(0, nr::PREAD64, [3, 0, 4096, 8192, 0, 0], 4096, None),
            sys(1, nr::OPENAT, [u64::MAX - 99, 0, 0, 0, 0, 0], -2, None),
        ];
        assert_eq!(read_back(&write(&recs)).unwrap(), recs);
    }

    /// A trace cut short, or with a bad record, is an error naming the record.
    #[test]
    fn a_truncated_or_corrupt_trace_names_the_record() {
        let mut bytes = write(&[stream(1), Record::Access { stream: 0, vpn: 9, write: false, insns: 1 }]);
        bytes.pop(); // the end record
        let e = read_back(&bytes).unwrap_err();
        assert_eq!(e.record, 4, "{e}"); // P, T, R, and the end record missing
        assert!(e.what.contains("without its end record"), "{e}");
        bytes.truncate(bytes.len() - 1); // into the access
        let e = read_back(&bytes).unwrap_err();
        assert!(e.what.contains("truncated in the middle"), "{e}");
        let mut bad = write(&[stream(1)]);
        let at = bad.len() - 1;
        bad.insert(at, b'Q');
        let e = read_back(&bad).unwrap_err();
        assert_eq!((e.record, e.what.as_str()), (2, "unknown record tag 'Q'"));
        let e = read_back(&write(&[Record::File(File { path: "x".into(), size: 0, ino: 0 })])[..]);
        assert!(e.is_ok());
        // A corrupt path length is an error, not a 4 GiB allocation.
        let mut huge = write(&[]);
        let at = huge.len() - 1;
        huge.splice(at..at, [b'F', 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f]);
        let e = read_back(&huge).unwrap_err();
        assert!(e.what.contains("a path of 4294967295 bytes"), "{e}");
        let mut no_stream = write(&[]);
        no_stream.insert(no_stream.len() - 1, b'R');
        assert!(read_back(&no_stream).unwrap_err().what.contains("before any stream"));
        let e = read_back(b"pagesim-trace 2\n{}\nE").unwrap_err();
        assert!(e.what.contains("not a pagesim trace"), "{e}");
    }

    /// read(2) goes where the descriptor's offset is and moves it; pread does not; a mapped
    /// file's pages are the file's, whatever the address; fork copies the descriptors; an
    /// anonymous page is its process's.
    #[test]
    fn reads_and_mappings_name_file_pages() {
        let recs = vec![
            stream(10),
            Record::File(File { path: "/f".into(), size: 1 << 20, ino: 1 }),
            sys(0, nr::OPENAT, [0; 6], 3, Some(0)),
            sys(0, nr::READ, [3, 0, 8192, 0, 0, 0], 8192, None),
            sys(0, nr::READ, [3, 0, 8192, 0, 0, 0], 4096, None),
            sys(0, nr::PREAD64, [3, 0, 4096, 40960, 0, 0], 4096, None),
            sys(0, nr::MMAP, [0, 3 * 4096, 1, 2, 3, 16 * 4096], 0x7000_0000, None),
            Record::Access { stream: 0, vpn: 0x7000_0000 / 4096 + 2, write: false, insns: 1 },
            Record::Access { stream: 0, vpn: 0x7000_0000 / 4096 + 3, write: true, insns: 1 },
            sys(0, nr::FORK, [0; 6], 11, None),
            Record::Stream(Stream { pid: 11, tid: 11, parent: 10, image: 0, start_ns: 9 }),
            sys(1, nr::READ, [3, 0, 4096, 0, 0, 0], 4096, None),
            Record::Access { stream: 1, vpn: 0x7000_0000 / 4096, write: false, insns: 1 },
        ];
        let path = file("t.pgt", &write(&recs));
        let refs = all(&path, "pgt").unwrap();
        let got: Vec<_> = refs.iter().map(|r| (r.space, r.page, r.pages, r.op)).collect();
        let f = FILE_SPACE;
        assert_eq!(
            got,
            [
                (f, 0, 2, Op::Read),
                (f, 2, 1, Op::Read),
                (f, 10, 1, Op::Read),
                (f, 18, 1, Op::Read),
                (0, 0x7000_0000 / 4096 + 3, 1, Op::Write),
                (f, 3, 1, Op::Read),
                (f, 16, 1, Op::Read),
            ]
        );
    }

    /// An open file description is released when its last descriptor closes, in whichever
    /// process: a fork's copy and a dup hold it too; an unlinked file is evicted once no
    /// description of it is open; ftruncate to 0 is a truncate.
    #[test]
    fn descriptions_are_released_by_their_last_descriptor() {
        let mut p = Procs::default();
        let mut ops = |r: Record| match p.apply(&r) {
            Some(Touch::Call { files, .. }) => files,
            _ => Vec::new(),
        };
        ops(stream(10));
        ops(Record::File(File { path: "/f".into(), size: 0, ino: 1 }));
        assert!(ops(sys(0, nr::OPENAT, [0; 6], 3, Some(0))).is_empty());
        assert_eq!(ops(sys(0, nr::FTRUNCATE, [3, 0, 0, 0, 0, 0], 0, None)), [FileOp::Truncated(0)]);
        assert!(ops(sys(0, nr::FTRUNCATE, [3, 4096, 0, 0, 0, 0], 0, None)).is_empty(), "only to 0");
        ops(sys(0, nr::FORK, [0; 6], 11, None));
        ops(Record::Stream(Stream { pid: 11, tid: 11, parent: 10, image: 0, start_ns: 9 }));
        ops(sys(1, nr::DUP, [3, 0, 0, 0, 0, 0], 5, None));
        assert!(ops(sys(0, nr::CLOSE, [3, 0, 0, 0, 0, 0], 0, None)).is_empty(), "the child has it");
        assert!(ops(sys(0, nr::UNLINK, [0; 6], 0, Some(0))).is_empty(), "open: not evicted yet");
        assert!(ops(sys(1, nr::CLOSE, [3, 0, 0, 0, 0, 0], 0, None)).is_empty(), "its dup has it");
        assert_eq!(
            ops(sys(1, nr::EXIT_GROUP, [0; 6], 0, None)),
            [FileOp::Released(0), FileOp::Evicted(0)],
            "the child's exit closes the last descriptor"
        );
        // Opened again (a new file of the same name and inode): not unlinked any more.
        ops(sys(0, nr::OPENAT, [0; 6], 4, Some(0)));
        assert_eq!(ops(sys(0, nr::DUP2, [4, 4, 0, 0, 0, 0], 4, None)), [], "dup2 onto itself");
        assert_eq!(ops(sys(0, nr::CLOSE, [4, 0, 0, 0, 0, 0], 0, None)), [FileOp::Released(0)]);
    }
}
