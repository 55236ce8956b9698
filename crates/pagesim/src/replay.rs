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
    /// Its threads, in the order they start (each replays in a task of its own): a
    /// process's first thread, then the threads it clones, and the processes it forks. A
    /// process that execs keeps its slot (the new image's events follow in its queue).
    pub tasks: Vec<TraceTask>,
    /// Per thread, its gaps of more than [`GAP`] records of the others (it was idle
    /// meanwhile): its record before the gap, and the one after. [`Demux::next`] does not
    /// read ahead across them.
    pub resumes: Vec<Vec<(u64, u64)>>,
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

/// Records of other threads after which a thread's next event counts as a pause of its own
/// (about 40 MB of queued events; 1,024 in the tests, which make such gaps).
pub const GAP: u64 = if cfg!(test) { 1 << 10 } else { 1 << 20 };

/// A thread of a trace's process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceTask {
    pub pid: u32,
    pub tid: u32,
    /// The number of the last record of the trace that is its own (records count from 0:
    /// streams, files and mappings too).
    pub last: u64,
}

impl TraceTask {
    /// Another thread of a process: it shares its process's address space.
    pub fn is_thread(&self) -> bool {
        self.tid != self.pid
    }
}

/// The slot (an index into [`TraceInfo::tasks`]) of the thread a stream is, in a trace
/// read in order: a stream of a tid seen before is that thread's; a new tid is a new slot.
/// An exec by a thread other than the main one gives it the process's pid (the kernel's
/// `de_thread`): the new image's stream, of tid = pid, goes on in the exec'ing thread's slot.
#[derive(Debug, Default)]
struct Slots {
    by_tid: HashMap<u32, u32>,
    /// Per stream, its slot.
    stream_slot: Vec<u32>,
    slots: u32,
}

impl Slots {
    /// The slot of a new stream `s`, and whether it is a new slot.
    fn stream(&mut self, s: &pgt::Stream) -> (u32, bool) {
        let (slot, new) = match self.by_tid.get(&s.tid) {
            Some(&slot) => (slot, false),
            None => {
                self.by_tid.insert(s.tid, self.slots);
                self.slots += 1;
                (self.slots - 1, true)
            }
        };
        self.stream_slot.push(slot);
        (slot, new)
    }

    /// A successful execve of the thread in `slot`, of process `pid`.
    fn exec(&mut self, slot: u32, pid: u32) {
        self.by_tid.insert(pid, slot);
    }
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

/// The store flag of a numbered reference ([`TraceInfo::refs`]): the top bit.
const STORE: u32 = 1 << 31;

/// A numbered reference ([`TraceInfo::refs`]): its page, and whether it is a store.
#[inline]
pub(crate) fn decode_ref(v: u32) -> (u32, bool) {
    (v & !STORE, v & STORE != 0)
}

/// Which trace a numbering is of: the path as given, the file (device, inode, length,
/// modification time), the format and the sampling rate.
#[derive(PartialEq)]
struct RefsKey {
    path: String,
    file: (u64, u64, u64, Option<std::time::SystemTime>),
    format: String,
    sample: u64,
}

/// The numberings [`TraceInfo::scan_refs_shared`] made that a run still holds, each with a
/// weak hold on its references' file: while a run built from one lives, another run of the
/// same trace shares the file instead of reading the trace again; once none does, the file
/// is gone and the entry is dropped at the next call.
static SHARED_REFS: std::sync::Mutex<Vec<(RefsKey, TraceInfo, std::sync::Weak<TempFile>)>> =
    std::sync::Mutex::new(Vec::new());

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
        let mut pages = crate::cachesim::Numbering::default();
        let (mut ops, mut writes, mut all) = (0u64, false, 0u64);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = TempFile(std::env::temp_dir().join(format!("pagesim-refs-{}-{n}.bin", std::process::id())));
        let io_err =
            |e: std::io::Error| TraceError { file: tmp.0.display().to_string(), record: 0, what: e.to_string() };
        let mut out = std::io::BufWriter::with_capacity(1 << 16, std::fs::File::create(&tmp.0).map_err(io_err)?);
        // Kept: hash below the threshold (all of them at 1).
        let threshold = if sample >= 1.0 { u64::MAX } else { (sample.max(0.0) * u64::MAX as f64) as u64 };
        let hasher = std::hash::BuildHasherDefault::<SampleHasher>::default();
        // A batch of records: their kept pages, whether each is stored to, their numbers.
        let (mut refs, mut keys, mut stores, mut numbers, mut bytes) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        loop {
            refs.clear();
            r.next_refs(&mut refs)?;
            if refs.is_empty() {
                break;
            }
            keys.clear();
            stores.clear();
            numbers.clear();
            bytes.clear();
            for x in &refs {
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
                    keys.push((x.space, p));
                    stores.push(write);
                }
            }
            pages.number_all(&keys, &mut numbers);
            for (&idx, &write) in numbers.iter().zip(&stores) {
                bytes.extend_from_slice(&(idx | if write { STORE } else { 0 }).to_le_bytes());
            }
            out.write_all(&bytes).map_err(io_err)?;
            ops += keys.len() as u64;
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
            tasks: vec![TraceTask { pid: 0, tid: 0, last: u64::MAX }],
            resumes: vec![Vec::new()],
            ops,
            ops_unsampled: all,
            writes,
            insns: 0,
            format: Some(format.into()),
            refs: Some(std::sync::Arc::new(tmp)),
        })
    }

    /// [`TraceInfo::scan_refs`], or the numbering of the same trace (the same file, unchanged,
    /// in the same format and sample) that a run still holds: `pagesim cache --sizes` builds
    /// a scenario per size and numbers the trace once.
    pub fn scan_refs_shared(path: &str, format: &str, sample: f64) -> Result<TraceInfo, TraceError> {
        use std::os::unix::fs::MetadataExt;
        let key = std::fs::metadata(path).ok().map(|m| RefsKey {
            path: path.into(),
            file: (m.dev(), m.ino(), m.len(), m.modified().ok()),
            format: format.into(),
            sample: sample.to_bits(),
        });
        let shared = || SHARED_REFS.lock().unwrap_or_else(|e| e.into_inner());
        {
            let mut held = shared();
            held.retain(|(_, _, refs)| refs.strong_count() > 0);
            let found = held.iter().find(|(k, _, _)| key.as_ref() == Some(k));
            if let Some((_, info, Some(refs))) = found.map(|(k, i, r)| (k, i, r.upgrade())) {
                return Ok(TraceInfo { refs: Some(refs), ..info.clone() });
            }
        }
        // Read without the lock: another thread may number another trace meanwhile.
        let info = Self::scan_refs(path, format, sample)?;
        if let (Some(k), Some(refs)) = (key, &info.refs) {
            shared().push((k, TraceInfo { refs: None, ..info.clone() }, std::sync::Arc::downgrade(refs)));
        }
        Ok(info)
    }

    /// Reads trace `path` through, checking every record.
    pub fn scan(path: &str) -> Result<TraceInfo, TraceError> {
        let mut records = Records::new(crate::tracefile::open_input(path)?);
        let mut procs = Procs::default();
        // Per file, its size when the trace first named it and the largest it grew to.
        let mut sizes: Vec<(u64, u64)> = Vec::new();
        let (mut ops, mut insns, mut writes) = (0u64, 0u64, false);
        let mut slots = Slots::default();
        let mut tasks: Vec<TraceTask> = Vec::new();
        let mut resumes: Vec<Vec<(u64, u64)>> = Vec::new();
        let mut n = 0u64;
        while let Some(r) = records.next_record()? {
            if let Record::Access { insns: i, stream, .. } | Record::Syscall { insns: i, stream, .. } = r {
                insns += i;
                let slot = slots.stream_slot[stream as usize] as usize;
                if n - tasks[slot].last > GAP {
                    resumes[slot].push((tasks[slot].last, n));
                }
                tasks[slot].last = n;
            }
            if let Record::Syscall { stream, nr: nr::EXECVE | nr::EXECVEAT, ret: 0, .. } = r {
                let slot = slots.stream_slot[stream as usize];
                slots.exec(slot, tasks[slot as usize].pid);
            }
            if let Record::File(f) = &r {
                sizes.push((f.size, f.size));
            }
            if let Record::Stream(s) = &r {
                if slots.stream(s).1 {
                    tasks.push(TraceTask { pid: s.pid, tid: s.tid, last: n });
                    resumes.push(Vec::new());
                }
            }
            n += 1;
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
        if tasks.is_empty() {
            return Err(TraceError { file: path.into(), record: 0, what: "the trace has no process".into() });
        }
        // A file's first size is what it had when the trace named it.
        let files = procs.files.iter().zip(&sizes).map(|(f, &(first, max))| (f.path.clone(), first, max)).collect();
        Ok(TraceInfo {
            path: path.into(),
            header: records.header.clone(),
            files,
            instances: procs.instances,
            tasks,
            resumes,
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
    /// fork(2): process `child` (an index into [`TraceInfo::tasks`]) starts.
    Fork { insns: u64, child: u32 },
    /// clone(2) of a thread: thread `child` (an index into [`TraceInfo::tasks`]) starts in
    /// this one's process.
    Clone { insns: u64, child: u32 },
    /// A futex wait that returned woken (or found the futex changed) came before this: the
    /// thread goes on once the trace's other threads have replayed what the trace has
    /// before its next event (record `seq`).
    Sync { seq: u64 },
    /// wait4(2).
    Wait { insns: u64 },
    /// execve(2): the address space goes; the new image's events follow.
    Exec { insns: u64 },
    /// The thread ends (exit(2)).
    Exit { insns: u64 },
    /// The process ends, all its threads (exit_group(2)).
    ExitGroup { insns: u64 },
    /// Another call: its instructions only.
    Other { insns: u64 },
}

/// The trace read during the run: each thread's events in order ([`Demux::next`]).
///
/// The threads' records interleave in the trace in the order they ran (capture merges its
/// per-thread streams by the time of their system calls), so a thread's events wait in a
/// queue, each with its record's number, until its thread asks for them. A thread whose
/// futex wait returned waits ([`Ev::Sync`]) until the other threads have taken every event
/// the trace has before its next one: what it waited for has happened.
pub struct Demux {
    records: Records,
    procs: Procs,
    /// Per thread (index in [`TraceInfo::tasks`]), events read but not taken yet, with the
    /// number of the record each comes from.
    queues: Vec<VecDeque<(u64, Ev)>>,
    tasks: Vec<TraceTask>,
    /// Per thread, [`TraceInfo::resumes`], and how many of them it has passed.
    resumes: Vec<Vec<(u64, u64)>>,
    resumed: Vec<usize>,
    /// Per thread, the record before which it has no event (the one it waits for after a
    /// gap).
    floor: Vec<u64>,
    /// Each tid's slot, from the scan (a fork's or clone's record comes before its child's
    /// first).
    tid_slot: HashMap<u32, u32>,
    slots: Slots,
    /// Per thread, its next event is preceded by an [`Ev::Sync`]: its futex wait returned,
    /// or another thread of its process exited (a join that found it ended did not wait).
    sync_next: Vec<bool>,
    /// Records read so far (the next one's number).
    read: u64,
    done: bool,
    /// Per thread, the task that replays it, once started.
    pub tids: Vec<Option<crate::ids::Tid>>,
    /// Threads waiting in an [`Ev::Sync`]: its record number, and the thread.
    pub waiting: Vec<(u64, u32)>,
    /// The smallest record number in `waiting` (`u64::MAX`: none).
    min_wait: u64,
    /// A thread took the event that made it pass `min_wait`: the waiters may go on.
    pub recheck: bool,
    /// The most events queued at once (looked at every `GAP / 4` records read).
    pub peak_queued: usize,
    /// Another tool's trace: its references as the scan numbered them ([`TraceInfo::refs`]).
    refs: Option<Refs>,
}

/// The numbered references of another tool's trace ([`TraceInfo::refs`]), read a block at a
/// time. Such a trace is one thread's accesses and nothing else, so they are handed out
/// from the block as they are: no per-event queue entry.
struct Refs {
    file: std::fs::File,
    /// The file's name, for errors.
    path: String,
    bytes: Vec<u8>,
    /// The block read last, and the next reference's place in it.
    block: Vec<u32>,
    at: usize,
    /// References read before this block.
    before: u64,
}

impl Refs {
    /// A block of 4,096 references (16 KiB: it stays in the L1 cache with its neighbours).
    const BLOCK: usize = 4096;

    fn open(path: &std::path::Path) -> Result<Refs, TraceError> {
        let path_s = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|e| TraceError {
            file: path_s.clone(),
            record: 0,
            what: e.to_string(),
        })?;
        Ok(Refs { file, path: path_s, bytes: vec![0; 4 * Self::BLOCK], block: Vec::new(), at: 0, before: 0 })
    }

    fn event(v: u32) -> Ev {
        let (idx, write) = decode_ref(v);
        Ev::Access { insns: 0, inst: 0, idx, write }
    }

    /// The next reference; `None` at the end of the file.
    #[inline]
    fn next(&mut self) -> Result<Option<Ev>, TraceError> {
        if self.at == self.block.len() && !self.refill()? {
            return Ok(None);
        }
        self.at += 1;
        Ok(Some(Self::event(self.block[self.at - 1])))
    }

    /// The reference `ahead` after the next, if it is in this block.
    #[inline]
    fn peek(&self, ahead: usize) -> Option<Ev> {
        self.block.get(self.at + ahead).map(|&v| Self::event(v))
    }

    /// The references taken so far.
    fn taken(&self) -> u64 {
        self.before + self.at as u64
    }

    /// Reads the next block; false at the end of the file.
    fn refill(&mut self) -> Result<bool, TraceError> {
        use std::io::Read;
        let mut n = 0;
        while n < self.bytes.len() {
            match self.file.read(&mut self.bytes[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(TraceError { file: self.path.clone(), record: self.taken(), what: e.to_string() })
                }
            }
        }
        if n % 4 != 0 {
            let what = format!("ends in a partial reference ({} bytes)", n % 4);
            return Err(TraceError { file: self.path.clone(), record: self.taken(), what });
        }
        self.before += self.block.len() as u64;
        self.block.clear();
        self.block.extend(self.bytes[..n].chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))));
        self.at = 0;
        Ok(n > 0)
    }
}

/// `futex(2)` operations that wait (FUTEX_WAIT, FUTEX_LOCK_PI, FUTEX_WAIT_BITSET,
/// FUTEX_WAIT_REQUEUE_PI, FUTEX_LOCK_PI2), under `FUTEX_CMD_MASK`.
const FUTEX_WAITS: [u64; 5] = [0, 6, 9, 11, 13];
const FUTEX_CMD_MASK: u64 = 0x7f;
const EAGAIN: i64 = -11;

impl Demux {
    pub fn open(info: &TraceInfo) -> Result<Demux, TraceError> {
        let refs = match &info.refs {
            Some(t) => Some(Refs::open(&t.0)?),
            None => None,
        };
        let records = Records::new(crate::tracefile::open_input(&info.path)?);
        Ok(Demux {
            records,
            procs: Procs::default(),
            queues: vec![VecDeque::new(); info.tasks.len()],
            tasks: info.tasks.clone(),
            resumes: info.resumes.clone(),
            resumed: vec![0; info.tasks.len()],
            floor: vec![0; info.tasks.len()],
            tid_slot: info.tasks.iter().enumerate().rev().map(|(i, t)| (t.tid, i as u32)).collect(),
            slots: Slots::default(),
            sync_next: vec![false; info.tasks.len()],
            read: 0,
            done: false,
            tids: vec![None; info.tasks.len()],
            waiting: Vec::new(),
            min_wait: u64::MAX,
            recheck: false,
            peak_queued: 0,
            refs,
        })
    }

    /// Thread `slot`'s next event; `None` when the trace has no more for it.
    pub fn next(&mut self, slot: u32) -> Result<Option<Ev>, TraceError> {
        if let Some(refs) = &mut self.refs {
            let ev = refs.next()?;
            self.read = refs.taken();
            self.done = ev.is_none();
            return Ok(ev);
        }
        loop {
            if let Some((seq, ev)) = self.queues[slot as usize].pop_front() {
                if seq <= self.min_wait && self.head(slot) > self.min_wait {
                    self.recheck = true;
                }
                return Ok(Some(ev));
            }
            // Past its last record, it has no more (the rest of the trace is not read for it).
            if self.done || self.read > self.tasks[slot as usize].last {
                return Ok(None);
            }
            // Its next event is far ahead (it was idle while the others ran): it waits for
            // the others to get there rather than have their events read ahead and queued.
            let (resumes, k) = (&self.resumes[slot as usize], &mut self.resumed[slot as usize]);
            while *k < resumes.len() && resumes[*k].1 < self.read {
                *k += 1;
            }
            // (Its record before the gap has been read and taken: its next is the one after.)
            if let Some(&(_, seq)) = resumes.get(*k).filter(|g| g.0 < self.read && g.1 > self.read + GAP) {
                *k += 1;
                self.floor[slot as usize] = seq;
                return Ok(Some(Ev::Sync { seq }));
            }
            self.read_one()?;
            if self.read.is_multiple_of(GAP / 4) {
                let queued = self.queues.iter().map(|q| q.len()).sum::<usize>();
                self.peak_queued = self.peak_queued.max(queued);
            }
        }
    }

    /// For another tool's trace ([`TraceInfo::refs`]): its references read and not taken yet
    /// (as [`decode_ref`] reads them), which [`Demux::take_refs`] takes without
    /// an event each. `None` for a trace of pagesim's own.
    pub fn pending_refs(&self) -> Option<&[u32]> {
        self.refs.as_ref().map(|r| &r.block[r.at..])
    }

    /// Takes the first `n` of [`Demux::pending_refs`].
    pub fn take_refs(&mut self, n: usize) {
        if let Some(r) = &mut self.refs {
            r.at += n;
            debug_assert!(r.at <= r.block.len());
            self.read = r.taken();
        }
    }

    /// Thread `slot`'s event `ahead` events after its next, if it is read already.
    pub fn peek(&self, slot: u32, ahead: usize) -> Option<Ev> {
        match &self.refs {
            Some(refs) => refs.peek(ahead),
            None => self.queues[slot as usize].get(ahead).map(|&(_, ev)| ev),
        }
    }

    /// The number of the record of thread `slot`'s next event (at least): everything the
    /// trace has of it before that record has been taken.
    pub fn head(&self, slot: u32) -> u64 {
        self.queues[slot as usize].front().map_or(self.read.max(self.floor[slot as usize]), |&(seq, _)| seq)
    }

    /// Thread `slot` waits in an [`Ev::Sync`] of record `seq`.
    pub fn wait(&mut self, seq: u64, slot: u32) {
        self.waiting.push((seq, slot));
        self.min_wait = self.min_wait.min(seq);
    }

    /// The waiter `k` of `waiting` goes on.
    pub fn unwait(&mut self, k: usize) {
        self.waiting.swap_remove(k);
        self.min_wait = self.waiting.iter().map(|&(seq, _)| seq).min().unwrap_or(u64::MAX);
    }

    /// Reads one record and queues the event it makes, if any.
    fn read_one(&mut self) -> Result<(), TraceError> {
        let Some(r) = self.records.next_record()? else {
            self.done = true;
            return Ok(());
        };
        let seq = self.read;
        self.read += 1;
        // Threads whose queues are empty have passed this record.
        if seq == self.min_wait {
            self.recheck = true;
        }
        let touch = self.procs.apply(&r);
        if let Record::Stream(st) = &r {
            self.slots.stream(st);
        }
        let (insns, stream) = match r {
            Record::Access { insns, stream, .. } | Record::Syscall { insns, stream, .. } => (insns, stream),
            _ => return Ok(()),
        };
        let slot = self.slots.stream_slot[stream as usize];
        let q = &mut self.queues[slot as usize];
        if std::mem::take(&mut self.sync_next[slot as usize]) {
            q.push_back((seq, Ev::Sync { seq }));
        }
        match (touch, r) {
            (Some(Touch::Access { inst, idx, write, .. }), _) => {
                q.push_back((seq, Ev::Access { insns, inst, idx: idx as u32, write }));
            }
            (Some(Touch::FileIo { file, page, pages, write, .. }), _) => {
                q.push_back((seq, Ev::FileIo { insns, file, page, pages, write }));
            }
            (Some(Touch::Call { proc, unmapped, files }), Record::Syscall { nr, args, ret, .. }) => {
                let files_empty = files.is_empty();
                let ev = match nr {
                    nr::FSYNC | nr::FDATASYNC if ret == 0 => match self.procs.procs[proc as usize].fd_file(args[0]) {
                        Some(file) => Ev::Fsync { insns, file },
                        None => Ev::Other { insns },
                    },
                    nr::FORK | nr::VFORK | nr::CLONE3 | nr::CLONE if ret > 0 => {
                        match self.tid_slot.get(&(ret as u32)).copied() {
                            Some(child) if self.tasks[child as usize].is_thread() => Ev::Clone { insns, child },
                            Some(child) => Ev::Fork { insns, child },
                            // A thread or process the capture did not see.
                            None => Ev::Other { insns },
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
                    nr::FUTEX | nr::FUTEX_WAITV => {
                        let waits = nr == nr::FUTEX_WAITV || FUTEX_WAITS.contains(&(args[1] & FUTEX_CMD_MASK));
                        if waits && (ret >= 0 || ret == EAGAIN) {
                            self.sync_next[slot as usize] = true;
                        }
                        Ev::Other { insns }
                    }
                    nr::WAIT4 => Ev::Wait { insns },
                    nr::EXECVE | nr::EXECVEAT if ret == 0 => {
                        self.slots.exec(slot, self.tasks[slot as usize].pid);
                        Ev::Exec { insns }
                    }
                    nr::EXIT_GROUP => Ev::ExitGroup { insns },
                    nr::EXIT => {
                        let pid = self.tasks[slot as usize].pid;
                        for (k, t) in self.tasks.iter().enumerate() {
                            if t.pid == pid && k != slot as usize {
                                self.sync_next[k] = true;
                            }
                        }
                        Ev::Exit { insns }
                    }
                    _ => Ev::Other { insns },
                };
                let ops = files.into_iter().map(|op| match op {
                    FileOp::Truncated(file) => Ev::Truncate { insns: 0, file },
                    FileOp::Released(file) => Ev::Release { insns: 0, file },
                    FileOp::Evicted(file) => Ev::Evict { insns: 0, file },
                });
                let q = &mut self.queues[slot as usize];
                if let (Ev::ExitGroup { insns }, false) = (&ev, files_empty) {
                    // The process's descriptors close before it ends.
                    q.push_back((seq, Ev::Other { insns: *insns }));
                    q.extend(ops.map(|e| (seq, e)));
                    q.push_back((seq, Ev::ExitGroup { insns: 0 }));
                    return Ok(());
                }
                q.push_back((seq, ev));
                for inst in unmapped {
                    q.push_back((seq, Ev::Unmap { insns: 0, inst }));
                }
                q.extend(ops.map(|e| (seq, e)));
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

    /// The same trace numbered again while a run holds the first numbering shares its
    /// references' file; once nothing holds it, the file is removed, and a changed trace is
    /// read again.
    #[test]
    fn a_held_numbering_is_shared_and_a_changed_trace_is_read_again() {
        let dir = std::env::temp_dir().join(format!("pagesim-replay-shared-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.csv");
        std::fs::write(&path, "0,r,7\n1,w,3\n2,r,7\n").unwrap();
        let p = path.to_string_lossy();
        let first = TraceInfo::scan_refs_shared(&p, "plain", 1.0).unwrap();
        let again = TraceInfo::scan_refs_shared(&p, "plain", 1.0).unwrap();
        let (a, b) = (first.refs.clone().unwrap(), again.refs.clone().unwrap());
        assert!(std::sync::Arc::ptr_eq(&a, &b), "numbered once");
        assert_eq!((again.ops, again.instances[0].pages), (3, 2));
        let file = a.0.clone();
        drop((first, again, a, b));
        assert!(!file.exists(), "the references' file goes with the last run holding it");
        // Nothing holds it now: numbered again, into a new file.
        let third = TraceInfo::scan_refs_shared(&p, "plain", 1.0).unwrap();
        assert!(third.refs.as_ref().unwrap().0.exists());
        // The trace changed while held: read again.
        std::fs::write(&path, "0,r,7\n1,w,3\n2,r,9\n3,r,7\n").unwrap();
        let changed = TraceInfo::scan_refs_shared(&p, "plain", 1.0).unwrap();
        assert!(!std::sync::Arc::ptr_eq(third.refs.as_ref().unwrap(), changed.refs.as_ref().unwrap()));
        assert_eq!((changed.ops, changed.instances[0].pages), (4, 3));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Another tool's trace replays as its pages numbered by first reference, stores
    /// flagged, in order across the blocks the numbers are read in; a peek sees the event
    /// that many later.
    #[test]
    fn numbered_references_replay_in_order_across_blocks() {
        let dir = std::env::temp_dir().join(format!("pagesim-replay-blocks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.csv");
        // Pages 1000, 999, ..., 1 then again in the other order, every third a store:
        // 2.5 blocks of references.
        let n = Refs::BLOCK * 5 / 4;
        let pages: Vec<usize> = (0..n).map(|i| n - i).chain(1..=n).collect();
        let text: String = pages
            .iter()
            .enumerate()
            .map(|(t, p)| format!("{t},{},{p}\n", if t % 3 == 0 { "w" } else { "r" }))
            .collect();
        std::fs::write(&path, text).unwrap();
        let info = TraceInfo::scan_refs(&path.to_string_lossy(), "plain", 1.0).unwrap();
        let mut d = Demux::open(&info).unwrap();
        let mut got = Vec::new();
        let mut peeked = Vec::new();
        while let Some(ev) = d.next(0).unwrap() {
            peeked.push(d.peek(0, 2));
            got.push(ev);
        }
        let _ = std::fs::remove_dir_all(&dir);
        let want: Vec<Ev> = pages
            .iter()
            .enumerate()
            .map(|(t, &p)| Ev::Access { insns: 0, inst: 0, idx: (n - p) as u32, write: t % 3 == 0 })
            .collect();
        assert_eq!(got.len(), want.len());
        assert!(got == want, "the events differ from the trace's pages numbered by first reference");
        // Where the next two events are in the block read, a peek two ahead (after taking an
        // event: the third after it) is that event.
        for (i, p) in peeked.iter().enumerate() {
            if let Some(ev) = p {
                assert_eq!(Some(ev), want.get(i + 3), "peek after event {i}");
            }
        }
        assert!(peeked.iter().filter(|p| p.is_some()).count() > want.len() * 9 / 10, "peeks see ahead in a block");
    }
}
