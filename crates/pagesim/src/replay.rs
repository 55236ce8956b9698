//! A captured program (`pagesim capture`'s `.pgt` trace) as a scenario's task
//! (`program = { trace = "FILE" }`): what its processes map, read and write, as events
//! the engine runs through the same fault, page-cache, readahead, reclaim and writeback
//! paths as the synthetic programs (engine/replay.rs).
//!
//! Another tool's trace (`program = { trace = "FILE", format = "oracleGeneral" }`: an object,
//! block or page trace, [`crate::tracefile::FORMATS`]) replays as one process loading (or
//! storing to) the pages its records name, through a shared mapping of one file that holds
//! every distinct page of the trace, numbered in the order the trace first names them, with
//! MADV_RANDOM (an object cache reads what is asked, without read-around): each page the
//! page cache does not hold is a major fault reading it from the task's device.
//!
//! [`TraceInfo::scan`] reads the trace once when the scenario loads: its files (each becomes
//! a scenario file on the task's device, as large as the trace ever made it), its mappings
//! (each a region), its processes and the operations they make. [`Demux`] reads it again
//! during the run and hands each process its own events in order; the processes' records
//! interleave in the trace, so a process's events wait in a queue until it asks for them.

use crate::tracefile::pgt::{self, nr, Backing, FileOp, Header, Procs, Record, Records, Touch};
use crate::tracefile::TraceError;
use std::collections::{HashMap, VecDeque};

/// What [`TraceInfo::scan`] found in a trace.
#[derive(Clone, Debug)]
pub struct TraceInfo {
    pub path: String,
    pub header: Header,
    /// The files it names: path, size when first named, and the largest size it gave them.
    pub files: Vec<(String, u64, u64)>,
    /// Its mappings ([`pgt::Instance`]): each a region of the replay.
    pub instances: Vec<pgt::Instance>,
    /// Its processes, in the order they start: pid, and the process (index) that forked it.
    /// A process that execs keeps its slot (the new image's events follow in its queue).
    pub procs: Vec<(u32, Option<u32>)>,
    /// Accesses and file calls: the run's operations.
    pub ops: u64,
    /// For a sampled trace, the references of the whole trace (`ops` are the sample's).
    pub ops_unsampled: u64,
    /// It writes to a file (write calls, or stores to a shared file mapping).
    pub writes: bool,
    pub insns: u64,
    /// For another tool's trace: its format, and its references as file pages (each
    /// distinct page of the trace numbered in the order of its first reference), a u32 each
    /// with the store flag in the top bit, in a temporary file the scan wrote.
    pub format: Option<String>,
    pub refs: Option<std::sync::Arc<TempFile>>,
}

/// A file removed when the last reference to it goes.
#[derive(Debug)]
pub struct TempFile(pub std::path::PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A hash whose values spread over the whole 64 bits (SHARDS compares them with a
/// threshold): splitmix64's finalizer over the page's two numbers.
#[derive(Default)]
struct SampleHasher(u64);

impl std::hash::Hasher for SampleHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, x: u64) {
        let mut z = (self.0 ^ x).wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        self.0 = z ^ (z >> 31);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Each distinct page a page-reference trace names, numbered in the order of its first
/// reference.
type PageMap = HashMap<(u64, u64), u32, std::hash::BuildHasherDefault<crate::cachesim::PageHasher>>;

const STORE: u32 = 1 << 31;

impl TraceInfo {
    /// Reads another tool's trace `path` in format `format` through: its distinct pages
    /// (the file that holds them) and its references.
    ///
    /// With `sample` below 1, only the pages whose hash falls below that fraction of the hash
    /// space are kept (SHARDS' spatial sampling: a page is in or out for the whole trace, so
    /// its reuse is kept whole); a memory of `sample` times the size then sees what the
    /// whole memory would, at that rate.
    pub fn scan_refs(path: &str, format: &str, sample: f64) -> Result<TraceInfo, TraceError> {
        use std::hash::{BuildHasher, Hasher};
        use std::io::Write;
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let mut r = crate::tracefile::open(path, Some(format))?;
        let mut pages = PageMap::default();
        let (mut ops, mut writes, mut all) = (0u64, false, 0u64);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = TempFile(std::env::temp_dir().join(format!("pagesim-refs-{}-{n}.bin", std::process::id())));
        let io_err =
            |e: std::io::Error| TraceError { file: tmp.0.display().to_string(), record: 0, what: e.to_string() };
        let mut out = std::io::BufWriter::with_capacity(1 << 16, std::fs::File::create(&tmp.0).map_err(io_err)?);
        // Kept: hash below the threshold (all of them at 1).
        let threshold = if sample >= 1.0 { u64::MAX } else { (sample.max(0.0) * u64::MAX as f64) as u64 };
        let hasher = std::hash::BuildHasherDefault::<SampleHasher>::default();
        while let Some(x) = r.next_ref()? {
            let write = x.op == crate::tracefile::Op::Write;
            writes |= write;
            for p in x.page..x.page + x.pages as u64 {
                all += 1;
                if threshold != u64::MAX {
                    let mut h = hasher.build_hasher();
                    h.write_u64(x.space);
                    h.write_u64(p);
                    if h.finish() > threshold {
                        continue;
                    }
                }
                let n = pages.len() as u32;
                let idx = *pages.entry((x.space, p)).or_insert(n);
                out.write_all(&(idx | if write { STORE } else { 0 }).to_le_bytes()).map_err(io_err)?;
                ops += 1;
            }
            if pages.len() >= STORE as usize {
                return Err(TraceError { file: path.into(), record: 0, what: "more than 2^31 distinct pages".into() });
            }
        }
        out.flush().map_err(io_err)?;
        drop(out);
        if ops == 0 {
            let what =
                if threshold == u64::MAX { "the trace has no reference" } else { "no reference is in the sample" };
            return Err(TraceError { file: path.into(), record: 0, what: what.into() });
        }
        let n = pages.len() as u64;
        let name = std::path::Path::new(path).file_name().map_or("trace".into(), |f| f.to_string_lossy().into_owned());
        Ok(TraceInfo {
            path: path.into(),
            header: Header { k: 0, command: Vec::new(), ns_per_insn: None, tool: format.into(), cwd: None },
            files: vec![(name, n * 4096, n * 4096)],
            instances: vec![pgt::Instance {
                proc: 0,
                start: 0,
                pages: n,
                backing: Backing::File { file: 0, pgoff: 0, shared: true },
                writable: writes,
                exec: false,
            }],
            procs: vec![(0, None)],
            ops,
            ops_unsampled: all,
            writes,
            insns: 0,
            format: Some(format.into()),
            refs: Some(std::sync::Arc::new(tmp)),
        })
    }

    /// Reads trace `path` through, checking every record.
    pub fn scan(path: &str) -> Result<TraceInfo, TraceError> {
        let mut records = Records::new(crate::tracefile::open_input(path)?);
        let mut procs = Procs::default();
        // Per file, its size when the trace first named it and the largest it grew to.
        let mut sizes: Vec<(u64, u64)> = Vec::new();
        let (mut ops, mut insns, mut writes) = (0u64, 0u64, false);
        let mut by_pid: HashMap<u32, u32> = HashMap::new();
        let mut order: Vec<(u32, Option<u32>)> = Vec::new();
        while let Some(r) = records.next_record()? {
            if let Record::Access { insns: n, .. } | Record::Syscall { insns: n, .. } = r {
                insns += n;
            }
            if let Record::File(f) = &r {
                sizes.push((f.size, f.size));
            }
            if let Record::Stream(s) = &r {
                if !by_pid.contains_key(&s.pid) {
                    let parent = by_pid.get(&s.parent).copied();
                    by_pid.insert(s.pid, order.len() as u32);
                    order.push((s.pid, parent));
                }
            }
            match procs.apply(&r) {
                Some(Touch::Access { inst, write, .. }) => {
                    ops += 1;
                    writes |= write && maps_file(&procs.instances[inst as usize]).is_some();
                }
                Some(Touch::FileIo { file, write, .. }) => {
                    ops += 1;
                    writes |= write;
                    // Only a write grows a file.
                    let max = &mut sizes[file as usize].1;
                    *max = (*max).max(procs.files[file as usize].size);
                }
                // An fsync of a regular file is a call the replay makes (`Ev::Fsync`).
                Some(Touch::Call { proc, .. }) => {
                    if let Record::Syscall { nr: nr::FSYNC | nr::FDATASYNC, ret: 0, args, .. } = r {
                        ops += procs.procs[proc as usize].fd_file(args[0]).is_some() as u64;
                    }
                }
                _ => {}
            }
        }
        if order.is_empty() {
            return Err(TraceError { file: path.into(), record: 0, what: "the trace has no process".into() });
        }
        // A file's first size is what it had when the trace named it.
        let files = procs.files.iter().zip(&sizes).map(|(f, &(first, max))| (f.path.clone(), first, max)).collect();
        Ok(TraceInfo {
            path: path.into(),
            header: records.header.clone(),
            files,
            instances: procs.instances,
            procs: order,
            ops,
            ops_unsampled: ops,
            writes,
            insns,
            format: None,
            refs: None,
        })
    }
}

/// One thing a process of the trace does, after `insns` instructions of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ev {
    /// A load or store to page `idx` of mapping `inst`.
    Access { insns: u64, inst: u32, idx: u32, write: bool },
    /// read(2) or write(2) (pread, readv...) of pages `[page, page + pages)` of file `file`.
    FileIo { insns: u64, file: u32, page: u64, pages: u32, write: bool },
    /// fsync(2), fdatasync(2) of file `file`.
    Fsync { insns: u64, file: u32 },
    /// posix_fadvise(2) of file `file`: `advice` (POSIX_FADV_*) over pages
    /// `[page, page + pages)` (`pages` 0: to the end).
    Fadvise { insns: u64, file: u32, advice: u32, page: u64, pages: u64 },
    /// File `file` was truncated to size 0 (ftruncate, or an open with O_TRUNC).
    Truncate { insns: u64, file: u32 },
    /// An open file description of file `file` was released (its last descriptor closed).
    Release { insns: u64, file: u32 },
    /// File `file`, unlinked, is no longer open: its pages go.
    Evict { insns: u64, file: u32 },
    /// munmap(2) (or mremap) took mapping `inst` away whole.
    Unmap { insns: u64, inst: u32 },
    /// fork(2): process `child` (an index into [`TraceInfo::procs`]) starts.
    Fork { insns: u64, child: u32 },
    /// wait4(2).
    Wait { insns: u64 },
    /// execve(2): the address space goes; the new image's events follow.
    Exec { insns: u64 },
    /// The process ends.
    Exit { insns: u64 },
    /// Another call: its instructions only.
    Other { insns: u64 },
}

/// The trace read during the run: each process's events in order ([`Demux::next`]).
pub struct Demux {
    records: Records,
    procs: Procs,
    /// Per process (index in [`TraceInfo::procs`]), events read but not taken yet.
    queues: Vec<VecDeque<Ev>>,
    by_pid: HashMap<u32, u32>,
    /// Per pgt process (image), its process index here.
    slot_of: Vec<u32>,
    /// Per stream, whether it is its process's main thread (tid = pid).
    main: Vec<bool>,
    done: bool,
    /// Another tool's trace: its references as the scan numbered them ([`TraceInfo::refs`]).
    refs: Option<std::io::BufReader<std::fs::File>>,
}

const CLONE_THREAD: u64 = 0x10000;

impl Demux {
    pub fn open(info: &TraceInfo) -> Result<Demux, TraceError> {
        let refs = match &info.refs {
            Some(t) => {
                let f = std::fs::File::open(&t.0).map_err(|e| TraceError {
                    file: t.0.display().to_string(),
                    record: 0,
                    what: e.to_string(),
                })?;
                Some(std::io::BufReader::with_capacity(1 << 16, f))
            }
            None => None,
        };
        let records = Records::new(crate::tracefile::open_input(&info.path)?);
        let by_pid = info.procs.iter().enumerate().map(|(i, &(pid, _))| (pid, i as u32)).collect();
        Ok(Demux {
            records,
            procs: Procs::default(),
            queues: vec![VecDeque::new(); info.procs.len()],
            by_pid,
            slot_of: Vec::new(),
            main: Vec::new(),
            done: false,
            refs,
        })
    }

    /// Process `proc`'s next event; `None` when the trace has no more for it.
    pub fn next(&mut self, proc: u32) -> Result<Option<Ev>, TraceError> {
        loop {
            if let Some(ev) = self.queues[proc as usize].pop_front() {
                return Ok(Some(ev));
            }
            if self.done {
                return Ok(None);
            }
            self.read_one()?;
        }
    }

    /// Reads one record and queues the event it makes, if any.
    fn read_one(&mut self) -> Result<(), TraceError> {
        if let Some(refs) = &mut self.refs {
            use std::io::BufRead;
            let buf =
                refs.fill_buf().map_err(|e| TraceError { file: String::new(), record: 0, what: e.to_string() })?;
            if buf.len() < 4 {
                self.done = true;
                return Ok(());
            }
            // A buffer's worth at once.
            let n = buf.len() / 4;
            for c in buf[..n * 4].chunks_exact(4) {
                let v = u32::from_le_bytes(c.try_into().expect("4 bytes"));
                self.queues[0].push_back(Ev::Access { insns: 0, inst: 0, idx: v & !STORE, write: v & STORE != 0 });
            }
            refs.consume(n * 4);
            return Ok(());
        }
        let Some(r) = self.records.next_record()? else {
            self.done = true;
            return Ok(());
        };
        let touch = self.procs.apply(&r);
        if let Record::Stream(st) = &r {
            self.main.push(st.tid == st.pid);
        }
        while self.slot_of.len() < self.procs.procs.len() {
            let p = &self.procs.procs[self.slot_of.len()];
            let slot = self.by_pid.get(&p.pid).copied().unwrap_or(0);
            self.slot_of.push(slot);
        }
        let (insns, stream) = match r {
            Record::Access { insns, stream, .. } | Record::Syscall { insns, stream, .. } => (insns, stream),
            _ => return Ok(()),
        };
        let proc = self.procs.stream_proc[stream as usize];
        let slot = self.slot_of[proc as usize] as usize;
        let q = &mut self.queues[slot];
        match (touch, r) {
            (Some(Touch::Access { inst, idx, write, .. }), _) => {
                q.push_back(Ev::Access { insns, inst, idx: idx as u32, write });
            }
            (Some(Touch::FileIo { file, page, pages, write, .. }), _) => {
                q.push_back(Ev::FileIo { insns, file, page, pages, write });
            }
            (Some(Touch::Call { unmapped, files, .. }), Record::Syscall { nr, args, ret, .. }) => {
                let files_empty = files.is_empty();
                let main_thread = self.main[stream as usize];
                let ev = match nr {
                    nr::FSYNC | nr::FDATASYNC if ret == 0 => match self.procs.procs[proc as usize].fd_file(args[0]) {
                        Some(file) => Ev::Fsync { insns, file },
                        None => Ev::Other { insns },
                    },
                    nr::FORK | nr::VFORK | nr::CLONE3 | nr::CLONE
                        if ret > 0 && !(nr == nr::CLONE && args[0] & CLONE_THREAD != 0) =>
                    {
                        match self.by_pid.get(&(ret as u32)) {
                            Some(&child) => Ev::Fork { insns, child },
                            None => Ev::Other { insns }, // a child the capture did not see
                        }
                    }
                    nr::FADVISE64 if ret == 0 => match self.procs.procs[proc as usize].fd_file(args[0]) {
                        Some(file) => {
                            let (off, len) = (args[1], args[2]);
                            let page = off / crate::tracefile::PAGE;
                            let pages = if len == 0 { 0 } else { (off + len).div_ceil(crate::tracefile::PAGE) - page };
                            Ev::Fadvise { insns, file, advice: args[3] as u32, page, pages }
                        }
                        None => Ev::Other { insns },
                    },
                    nr::WAIT4 => Ev::Wait { insns },
                    nr::EXECVE | nr::EXECVEAT if ret == 0 => Ev::Exec { insns },
                    nr::EXIT_GROUP => Ev::Exit { insns },
                    nr::EXIT if main_thread => Ev::Exit { insns },
                    _ => Ev::Other { insns },
                };
                let ops = files.into_iter().map(|op| match op {
                    FileOp::Truncated(file) => Ev::Truncate { insns: 0, file },
                    FileOp::Released(file) => Ev::Release { insns: 0, file },
                    FileOp::Evicted(file) => Ev::Evict { insns: 0, file },
                });
                let q = &mut self.queues[slot];
                if let (Ev::Exit { insns }, false) = (&ev, files_empty) {
                    // The process's descriptors close before it ends.
                    q.push_back(Ev::Other { insns: *insns });
                    q.extend(ops);
                    q.push_back(Ev::Exit { insns: 0 });
                    return Ok(());
                }
                q.push_back(ev);
                for inst in unmapped {
                    q.push_back(Ev::Unmap { insns: 0, inst });
                }
                q.extend(ops);
            }
            _ => {}
        }
        Ok(())
    }
}

/// Which backing a replay gives mapping `i`: a file's pages for a shared or read-only file
/// mapping; anonymous memory otherwise (a private writable file mapping's pages are copies
/// once written: its file reads are not modelled).
pub fn maps_file(i: &pgt::Instance) -> Option<u32> {
    match i.backing {
        Backing::File { file, shared, .. } if shared || !i.writable => Some(file),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SHARDS' sampling keeps a page for the whole trace or not at all: sampled at a half,
    /// about half of 2,000 pages stay, each with both of its references, and the unsampled
    /// count stays the trace's.
    #[test]
    fn a_sample_keeps_whole_pages() {
        let dir = std::env::temp_dir().join(format!("pagesim-replay-sample-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.csv");
        let text: String =
            (0..2).flat_map(|pass| (0..2000).map(move |p| format!("{},r,{p}\n", pass * 2000 + p))).collect();
        std::fs::write(&path, text).unwrap();
        let p = path.to_string_lossy();
        let all = TraceInfo::scan_refs(&p, "plain", 1.0).unwrap();
        let half = TraceInfo::scan_refs(&p, "plain", 0.5).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!((all.ops, all.ops_unsampled, all.instances[0].pages), (4000, 4000, 2000));
        let kept = half.instances[0].pages;
        assert!((900..1100).contains(&kept), "{kept} of 2000 pages kept");
        assert_eq!((half.ops, half.ops_unsampled), (2 * kept, 4000), "each kept page with both references");
    }
}
