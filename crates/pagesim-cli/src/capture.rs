//! `pagesim capture`: runs a program under QEMU user-mode emulation with pagesim's TCG plugin
//! (capture/pagesim_capture.c, built here with the C compiler on first use) and turns the
//! plugin's raw per-thread files into one pagesim trace (pagesim::tracefile::pgt).

use crate::out::{Out, Stop};
use pagesim::tracefile::pgt::{self, File, Header, Record, Stream, Writer};
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;

const PLUGIN_SOURCE: &str = include_str!("../capture/pagesim_capture.c");

/// The plugin's raw files (see the comment at the top of the plugin's source).
const RAW_MAGIC: u64 = 0x7061676573696d31;
const RAW_VERSION: u64 = 3;
/// Words of a raw file's header; the last is the instructions its records carry (written by
/// the plugin when the stream closes; `u64::MAX` if it never did).
const RAW_HEADER_WORDS: usize = 9;
/// A raw record in the form of a system call of this number is a time mark of the plugin
/// (`MARK_NR`): the thread's clock after a stretch of instructions without a call.
const MARK_NR: u32 = 0x3fff_fffe;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The trace to write [default: PROGRAM.pgt in the current directory]
    #[arg(long, short, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Stack-deletion depth: an access to one of the thread's K most recently touched pages
    /// is left out (it is a hit in any LRU memory of K pages or more)
    #[arg(long, short, value_name = "K", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1024))]
    k: u32,
    /// Also run the program natively first, to measure its CPU time per instruction (the
    /// time a replay puts between accesses) and the capture's slowdown; the program then
    /// runs twice, with its side effects
    #[arg(long)]
    native: bool,
    /// Keep the plugin's raw per-thread files in DIR (for debugging the capture)
    #[arg(long, value_name = "DIR")]
    keep_raw: Option<PathBuf>,
    /// The program and its arguments
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "PROGRAM")]
    command: Vec<String>,
}

/// The first of `names` found on $PATH.
fn which(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    names.iter().find_map(|n| std::env::split_paths(&path).map(|d| d.join(n)).find(|p| p.is_file()))
}

/// QEMU's version, from `qemu-x86_64 --version` ("qemu-x86_64 version 7.2.22 (...)").
fn qemu_version(qemu: &Path) -> Result<(u32, u32, String), String> {
    let out = Command::new(qemu).arg("--version").output().map_err(|e| format!("{}: {e}", qemu.display()))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let first = text.lines().next().unwrap_or("").to_string();
    let v = first.split_whitespace().skip_while(|w| *w != "version").nth(1).unwrap_or("");
    let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(a), Some(b)) => Ok((a, b, first)),
        _ => Err(format!("{}: cannot read its version from \"{first}\"", qemu.display())),
    }
}

/// The plugin API version QEMU `major.minor` accepts from a plugin that uses only the calls
/// of version 1 (QEMU raised the minimum with 8.2 and 9.0); `PAGESIM_QEMU_PLUGIN_API`
/// overrides it.
fn plugin_api(major: u32, minor: u32) -> u32 {
    if let Some(v) = std::env::var("PAGESIM_QEMU_PLUGIN_API").ok().and_then(|v| v.parse().ok()) {
        return v;
    }
    match (major, minor) {
        (..=7, _) | (8, 0..=1) => 1,
        (8, _) => 2,
        _ => 3,
    }
}

/// Builds the plugin for API `api` into the cache directory (once per source and version).
fn build_plugin(api: u32) -> Result<PathBuf, String> {
    let cc = which(&["cc", "gcc", "clang"]).ok_or(
        "no C compiler (cc, gcc or clang) on $PATH: pagesim capture builds its QEMU plugin with one \
         (Debian: apt-get install gcc)",
    )?;
    let mut h: u64 = 0xcbf29ce484222325;
    for b in PLUGIN_SOURCE.bytes().chain(api.to_le_bytes()) {
        h = (h ^ b as u64).wrapping_mul(0x100000001b3);
    }
    let dir = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("pagesim");
    let so = dir.join(format!("pagesim_capture-{h:016x}.so"));
    if so.is_file() {
        return Ok(so);
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let src = dir.join(format!("pagesim_capture-{h:016x}.c"));
    std::fs::write(&src, PLUGIN_SOURCE).map_err(|e| format!("{}: {e}", src.display()))?;
    let tmp = dir.join(format!("pagesim_capture-{h:016x}.{}.so", std::process::id()));
    let out = Command::new(&cc)
        .args(["-O3", "-shared", "-fPIC", "-fvisibility=hidden", &format!("-DPAGESIM_PLUGIN_API={api}"), "-o"])
        .arg(&tmp)
        .arg(&src)
        .output()
        .map_err(|e| format!("{}: {e}", cc.display()))?;
    if !out.status.success() {
        return Err(format!(
            "building the capture plugin with {} failed:\n{}",
            cc.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    std::fs::rename(&tmp, &so).map_err(|e| format!("{}: {e}", so.display()))?;
    Ok(so)
}

/// A directory removed when dropped (unless kept).
struct TempDir(PathBuf, bool);

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.1 {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// User-mode CPU time of the children waited for so far, ns: the program's own
/// instructions. Its system time is left out: the kernel work of its calls and faults is
/// what the model adds itself.
fn children_user_ns() -> Result<u64, String> {
    pagesim_host::cpu::children_user_ns().map_err(|e| e.to_string())
}

/// The summary goes to stderr: stdout is the program's.
pub fn run(a: Args, _out: &mut Out) -> Result<(), Stop> {
    let qemu = which(&["qemu-x86_64", "qemu-x86_64-static"]).ok_or(
        "qemu-x86_64 not found on $PATH: pagesim capture runs the program under QEMU user-mode emulation \
         (Debian: apt-get install qemu-user; scripts/install.sh installs it when run as root)",
    )?;
    let (major, minor, qemu_line) = qemu_version(&qemu)?;
    let plugin = build_plugin(plugin_api(major, minor))?;
    // QEMU opens the program by its path, as execve(2) does not search $PATH for it.
    let program = &a.command[0];
    let path = if program.contains('/') {
        PathBuf::from(program)
    } else {
        which(&[program.as_str()]).ok_or_else(|| format!("{program}: not found on $PATH"))?
    };
    let mut command = a.command.clone();
    command[0] = path.to_string_lossy().into_owned();
    let base = Path::new(program).file_name().map_or("trace".into(), |n| n.to_string_lossy().into_owned());
    let trace = a.out.clone().unwrap_or_else(|| PathBuf::from(format!("{base}.pgt")));

    let native = if a.native {
        let (cpu0, t0) = (children_user_ns()?, std::time::Instant::now());
        let st = Command::new(&path).args(&a.command[1..]).status().map_err(|e| format!("{program}: {e}"))?;
        if !st.success() {
            eprintln!("pagesim capture: the native run of {program} exited with {st}");
        }
        Some((children_user_ns()? - cpu0, t0.elapsed()))
    } else {
        None
    };

    let raw = match &a.keep_raw {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("pagesim-capture-{}", std::process::id())),
    };
    std::fs::create_dir_all(&raw).map_err(|e| format!("{}: {e}", raw.display()))?;
    if std::fs::read_dir(&raw).map_err(|e| format!("{}: {e}", raw.display()))?.next().is_some() {
        return Err(format!("{}: the raw directory is not empty", raw.display()).into());
    }
    let _cleanup = TempDir(raw.clone(), a.keep_raw.is_some());
    let plugin_arg = format!("{},out={},k={}", plugin.display(), raw.display(), a.k);
    let t0 = std::time::Instant::now();
    let status = Command::new(&qemu)
        .arg("-plugin")
        .arg(&plugin_arg)
        .args(&command)
        .status()
        .map_err(|e| format!("{}: {e}", qemu.display()))?;
    let captured = t0.elapsed();
    if status.code() == Some(125) {
        return Err(format!("the capture plugin failed under {} (its message is above)", qemu.display()).into());
    }

    let cwd = std::env::current_dir().ok().map(|d| d.to_string_lossy().into_owned());
    let header = Header { k: a.k, command, ns_per_insn: None, tool: qemu_line, cwd };
    let summary = convert(&raw, &trace, header, native.map(|n| n.0))?;
    let size = std::fs::metadata(&trace).map(|m| m.len()).unwrap_or(0);
    eprintln!("trace: {} ({} bytes)", trace.display(), size);
    eprintln!(
        "{} process image(s), {} thread stream(s); {} accesses kept (K={}), {} system calls, {} instructions",
        summary.procs, summary.streams, summary.accesses, a.k, summary.syscalls, summary.insns
    );
    if summary.accesses > 0 {
        eprintln!("{:.2} bytes per kept access (compressed)", size as f64 / summary.accesses as f64);
    }
    eprintln!("capture took {:.2} s", captured.as_secs_f64());
    if let Some((cpu, wall)) = native {
        eprintln!(
            "native run: {:.3} s ({:.3} s of user CPU): capture {:.1}x slower; {:.3} ns of user CPU per instruction",
            wall.as_secs_f64(),
            cpu as f64 / 1e9,
            captured.as_secs_f64() / wall.as_secs_f64().max(1e-6),
            summary.ns_per_insn.unwrap_or(0.0)
        );
    }
    if !status.success() {
        return Err(Stop::Failed(format!("{program} exited with {status} (the trace is written)")));
    }
    Ok(())
}

/// What a conversion wrote.
#[derive(Debug, Default)]
pub struct Summary {
    pub streams: u32,
    pub procs: u32,
    pub accesses: u64,
    pub syscalls: u64,
    pub insns: u64,
    pub ns_per_insn: Option<f64>,
}

/// One record of a raw file.
enum Raw {
    Access { vpn: u64, write: bool, insns: u64 },
    Syscall { nr: u32, insns: u64, time_ns: u64, args: [u64; 6], ret: i64, file: Option<File> },
    Mapping { start: u64, end: u64, offset: u64, flags: u8, path: String },
}

/// A raw file being read.
struct RawFile {
    path: PathBuf,
    f: std::fs::File,
    /// Bytes read from `f`, those before `pos` taken.
    buf: Vec<u8>,
    pos: usize,
    stream: Stream,
    /// Its number in the trace once started.
    id: Option<u32>,
    next: Option<Raw>,
    /// When it last made a system call or a time mark (its start at first), and
    /// instructions since: what orders the streams' pieces in the trace.
    last_ns: u64,
    insns_since: u64,
    /// Instructions of the time marks since its last record written, for the next.
    carry: u64,
    /// Word offset of the record being read (for errors).
    word: u64,
    /// The instructions its records carry, as the plugin wrote them when the stream closed
    /// (`None`: it never closed, they are counted).
    insns: Option<u64>,
}

impl RawFile {
    fn open(path: &Path) -> Result<RawFile, String> {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        // pid.image.tid.seq.raw
        let image = name.split('.').nth(1).and_then(|v| v.parse().ok()).unwrap_or(0);
        let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut rf = RawFile {
            path: path.to_path_buf(),
            f,
            buf: Vec::with_capacity(1 << 16),
            pos: 0,
            stream: Stream { pid: 0, tid: 0, parent: 0, image, start_ns: 0 },
            id: None,
            next: None,
            last_ns: 0,
            insns_since: 0,
            carry: 0,
            word: 0,
            insns: None,
        };
        let mut h = [0u64; RAW_HEADER_WORDS];
        for w in &mut h {
            *w = rf.word()?.ok_or_else(|| rf.err("truncated in its header"))?;
        }
        if h[0] != RAW_MAGIC || h[1] != RAW_VERSION {
            return Err(rf.err("not a raw file of this version of the capture plugin"));
        }
        rf.stream.pid = h[2] as u32;
        rf.stream.tid = h[3] as u32;
        rf.stream.parent = h[4] as u32;
        rf.stream.start_ns = h[6];
        rf.last_ns = h[6];
        rf.insns = Some(h[8]).filter(|&n| n != u64::MAX);
        rf.next = rf.read()?;
        Ok(rf)
    }

    fn err(&self, what: &str) -> String {
        format!("{}: word {}: {what}", self.path.display(), self.word)
    }

    /// The next word; a word at a time from a buffer of 64 KiB (through `BufReader::read`
    /// each word cost a seventh of gzip's conversion).
    fn word(&mut self) -> Result<Option<u64>, String> {
        if self.buf.len() - self.pos < 8 && !self.fill()? {
            return Ok(None);
        }
        let w = u64::from_le_bytes(self.buf[self.pos..self.pos + 8].try_into().expect("8 bytes"));
        self.pos += 8;
        self.word += 1;
        Ok(Some(w))
    }

    /// Reads on until a whole word is buffered: false at the end of the file.
    fn fill(&mut self) -> Result<bool, String> {
        self.buf.drain(..self.pos);
        self.pos = 0;
        while self.buf.len() < 8 {
            let have = self.buf.len();
            self.buf.resize(1 << 16, 0);
            let r = self.f.read(&mut self.buf[have..]);
            self.buf.truncate(have + *r.as_ref().unwrap_or(&0));
            match r {
                Ok(0) if have == 0 => return Ok(false),
                Ok(0) => return Err(self.err("truncated in the middle of a word")),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.err(&e.to_string())),
            }
        }
        Ok(true)
    }

    fn must(&mut self) -> Result<u64, String> {
        self.word()?.ok_or_else(|| self.err("truncated in the middle of a record"))
    }

    fn bytes(&mut self) -> Result<String, String> {
        let len = self.must()? as usize;
        if len > 1 << 16 {
            return Err(self.err("a path longer than 64 KiB"));
        }
        let mut v = Vec::with_capacity(len + 8);
        for _ in 0..len.div_ceil(8) {
            v.extend_from_slice(&self.must()?.to_le_bytes());
        }
        v.truncate(len);
        Ok(String::from_utf8_lossy(&v).into_owned())
    }

    fn read(&mut self) -> Result<Option<Raw>, String> {
        let Some(w) = self.word()? else { return Ok(None) };
        if w & 1 == 0 {
            return Ok(Some(Raw::Access { vpn: w >> 2, write: w & 2 != 0, insns: self.must()? }));
        }
        let words = (w >> 32) & 0xffff;
        let start = self.word;
        let r = match w & 3 {
            1 => {
                let nr = ((w & 0xffff_ffff) >> 2) as u32;
                let (insns, time_ns) = (self.must()?, self.must()?);
                let mut args = [0u64; 6];
                for a in &mut args {
                    *a = self.must()?;
                }
                let ret = self.must()? as i64;
                let file = if self.must()? != 0 {
                    let (size, ino) = (self.must()?, self.must()?);
                    Some(File { path: self.bytes()?, size, ino })
                } else {
                    None
                };
                Raw::Syscall { nr, insns, time_ns, args, ret, file }
            }
            _ => {
                let (start, end, offset, flags) = (self.must()?, self.must()?, self.must()?, self.must()?);
                Raw::Mapping { start, end, offset, flags: flags as u8, path: self.bytes()? }
            }
        };
        if self.word - start + 1 != words {
            return Err(self.err(&format!("a record of {words} words read as {}", self.word - start + 1)));
        }
        Ok(Some(r))
    }

    /// The order key of its next piece: its last system call's time and the instructions
    /// since, at a nominal 1 ns each.
    fn key(&self) -> u64 {
        self.last_ns + self.insns_since
    }
}

/// Records of one stream a piece holds at most, so that a thread that makes no system call
/// for a long time still interleaves with the others.
const PIECE: u32 = 1 << 16;

/// Merges the raw files of directory `raw` into trace `out`: each stream's records in
/// order, the streams' pieces (up to a system call, at most [`PIECE`] records) in the order
/// of their last system call's time; a thread or process appears after the call that
/// created it.
pub fn convert(raw: &Path, out: &Path, mut header: Header, native_cpu_ns: Option<u64>) -> Result<Summary, String> {
    let mut files: Vec<RawFile> = Vec::new();
    let mut names: Vec<PathBuf> = std::fs::read_dir(raw)
        .map_err(|e| format!("{}: {e}", raw.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "raw"))
        .collect();
    names.sort();
    for p in &names {
        files.push(RawFile::open(p)?);
    }
    if files.is_empty() {
        return Err(format!("{}: the plugin wrote no trace (did the program start?)", raw.display()));
    }
    // The first stream: the earliest started of a pid whose parent is not captured.
    let pids: HashSet<u32> = files.iter().map(|f| f.stream.pid).collect();
    let mut released: HashSet<usize> = HashSet::new();
    for (i, f) in files.iter().enumerate() {
        if !pids.contains(&f.stream.parent) && f.stream.tid == f.stream.pid && f.stream.image == 0 {
            released.insert(i);
        }
    }
    if released.is_empty() {
        released.insert(0);
    }
    let epoch = files.iter().map(|f| f.stream.start_ns).min().unwrap_or(0);
    let mut summary = Summary::default();

    // The header's ns_per_insn (a native run's CPU time over the instructions) before the
    // merge, so that the trace is compressed as it is merged: ruzstd in a thread of its own,
    // fed chunks of the uncompressed trace. The instructions are in each raw file's header
    // (a stream that never closed is read once more to count them). (Written uncompressed to a
    // file first and compressed after, gzip's 99 M records took 13 s to convert.)
    if let Some(cpu) = native_cpu_ns {
        let insns = raw_insns(&names, true)?;
        if insns > 0 {
            header.ns_per_insn = Some(cpu as f64 / insns as f64);
        }
    }
    summary.ns_per_insn = header.ns_per_insn;
    let part = out.with_extension("pgt.part");
    let dst = std::fs::File::create(&part).map_err(|e| format!("{}: {e}", part.display()))?;
    let (tx, rx) = mpsc::sync_channel(CHUNKS_QUEUED);
    let compressor = std::thread::spawn(move || {
        let mut dst = io::BufWriter::with_capacity(1 << 16, dst);
        let src = ChunkReader { rx, chunk: Vec::new(), pos: 0 };
        ruzstd::encoding::compress(src, &mut dst, ruzstd::encoding::CompressionLevel::Fastest);
        dst.flush()
    });
    let merged = (|| -> Result<(), String> {
        let w = ChunkWriter { tx, chunk: Vec::with_capacity(CHUNK) };
        let mut w = Writer::new(w, &header).map_err(|e| e.to_string())?;
        let mut file_ids: HashMap<(String, u64), u32> = HashMap::new();
        // A file's number, the record that defines it written the first time it is named.
        let mut file_of = |w: &mut Writer<_>, f: File| -> Result<u32, String> {
            let key = (f.path.clone(), f.ino);
            if let Some(&id) = file_ids.get(&key) {
                return Ok(id);
            }
            let id = file_ids.len() as u32;
            w.record(&Record::File(f)).map_err(|e| e.to_string())?;
            file_ids.insert(key, id);
            Ok(id)
        };
        let mut heap = BinaryHeap::new();
        for &i in &released {
            heap.push(std::cmp::Reverse((files[i].key(), i)));
        }
        let mut waiting: Vec<usize> = (0..files.len()).filter(|i| !released.contains(i)).collect();
        // A line on stderr every two seconds of a long conversion.
        let started = std::time::Instant::now();
        let mut report_at = 2.0;
        loop {
            // Checked once a piece (at most 65,536 records).
            if started.elapsed().as_secs_f64() >= report_at {
                eprintln!(
                    "pagesim capture: merging the raw files: {} accesses, {} system calls written ({:.0} s)",
                    summary.accesses,
                    summary.syscalls,
                    started.elapsed().as_secs_f64()
                );
                report_at += 2.0;
            }
            let Some(std::cmp::Reverse((_, i))) = heap.pop() else {
                // Nothing runs: a stream whose creating call was not seen starts now.
                if waiting.is_empty() {
                    break;
                }
                let i = waiting.remove(0);
                heap.push(std::cmp::Reverse((files[i].key(), i)));
                continue;
            };
            let mut emitted = 0;
            let mut created: Vec<u32> = Vec::new();
            while let Some(r) = files[i].next.take() {
                let id = match files[i].id {
                    Some(id) => id,
                    None => {
                        let s = Stream { start_ns: files[i].stream.start_ns - epoch, ..files[i].stream.clone() };
                        w.record(&Record::Stream(s)).map_err(|e| e.to_string())?;
                        let id = w.streams() - 1;
                        files[i].id = Some(id);
                        summary.streams += 1;
                        if files[i].stream.tid == files[i].stream.pid {
                            summary.procs += 1;
                        }
                        id
                    }
                };
                let mut ends_piece = false;
                match r {
                    Raw::Syscall { nr: MARK_NR, insns: n, time_ns, .. } => {
                        // Not a record of the trace: its instructions go with the next one,
                        // and its time orders the stream's next piece.
                        files[i].carry += n;
                        summary.insns += n;
                        files[i].last_ns = time_ns;
                        files[i].insns_since = 0;
                        ends_piece = true;
                    }
                    Raw::Access { vpn, write, insns: n } => {
                        summary.insns += n;
                        files[i].insns_since += n;
                        let n = n + std::mem::take(&mut files[i].carry);
                        summary.accesses += 1;
                        w.record(&Record::Access { stream: id, vpn, write, insns: n }).map_err(|e| e.to_string())?;
                    }
                    Raw::Syscall { nr, insns: n, time_ns, args, ret, file } => {
                        summary.insns += n;
                        let n = n + std::mem::take(&mut files[i].carry);
                        summary.syscalls += 1;
                        let file = file.map(|f| file_of(&mut w, f)).transpose()?;
                        let t = time_ns.saturating_sub(epoch);
                        w.record(&Record::Syscall { stream: id, nr, insns: n, time_ns: t, args, ret, file })
                            .map_err(|e| e.to_string())?;
                        files[i].last_ns = time_ns;
                        files[i].insns_since = 0;
                        use pgt::nr::*;
                        if matches!(nr, CLONE | FORK | VFORK | CLONE3) && ret > 0 {
                            created.push(ret as u32);
                        }
                        if matches!(nr, EXECVE | EXECVEAT) && ret == 0 {
                            created.push(u32::MAX - files[i].stream.pid);
                        }
                        ends_piece = true;
                    }
                    Raw::Mapping { start, end, offset, flags, path } => {
                        let file = if path.starts_with('/') {
                            let (size, ino) = std::fs::metadata(&path)
                                .map(|m| (m.len(), std::os::unix::fs::MetadataExt::ino(&m)))
                                .unwrap_or((0, 0));
                            Some(file_of(&mut w, File { path, size, ino })?)
                        } else {
                            None
                        };
                        w.record(&Record::Mapping { stream: id, start, end, offset, flags, file })
                            .map_err(|e| e.to_string())?;
                    }
                }
                files[i].next = files[i].read()?;
                emitted += 1;
                if ends_piece || emitted >= PIECE {
                    break;
                }
            }
            // Streams the calls just made created: a thread or child (its tid is the call's
            // result), or the new image of an exec.
            for c in created {
                waiting.retain(|&j| {
                    let s = &files[j].stream;
                    let hit = if c > u32::MAX / 2 {
                        s.pid == u32::MAX - c && s.image > files[i].stream.image && s.tid == s.pid
                    } else {
                        s.tid == c && s.image == 0
                    };
                    if hit {
                        heap.push(std::cmp::Reverse((files[j].key(), j)));
                    }
                    !hit
                });
            }
            if files[i].next.is_some() {
                heap.push(std::cmp::Reverse((files[i].key(), i)));
            }
        }
        // The last chunk goes at the flush; the channel closes as the writer is dropped.
        w.finish().map_err(|e| e.to_string())?;
        Ok(())
    })();
    // A compressor that failed is the cause of a merge that could not send it a chunk.
    let done = match (compressor.join(), merged) {
        (Err(_), _) => Err(format!("{}: compressing the trace failed", part.display())),
        (Ok(Err(e)), _) => Err(format!("{}: {e}", part.display())),
        (Ok(Ok(())), Err(e)) => Err(e),
        (Ok(Ok(())), Ok(())) => std::fs::rename(&part, out).map_err(|e| format!("{}: {e}", out.display())),
    };
    if done.is_err() {
        let _ = std::fs::remove_file(&part);
    }
    // The plugin's totals are its records' sums.
    debug_assert!(
        done.is_err()
            || native_cpu_ns.is_none()
            || (raw_insns(&names, true) == Ok(summary.insns) && raw_insns(&names, false) == Ok(summary.insns))
    );
    done.map(|()| summary)
}

/// The instructions of all the raw files' records, for the header: from each file's header
/// where the plugin closed its stream (`headers`), else by a pass over its records.
fn raw_insns(names: &[PathBuf], headers: bool) -> Result<u64, String> {
    let mut n = 0;
    for p in names {
        let mut f = RawFile::open(p)?;
        if let Some(total) = f.insns.filter(|_| headers) {
            n += total;
            continue;
        }
        while let Some(r) = f.next.take() {
            n += match r {
                Raw::Access { insns, .. } | Raw::Syscall { insns, .. } => insns,
                Raw::Mapping { .. } => 0,
            };
            f.next = f.read()?;
        }
    }
    Ok(n)
}

/// Bytes of the uncompressed trace a chunk holds, and chunks queued for the compressing
/// thread at most.
const CHUNK: usize = 1 << 20;
const CHUNKS_QUEUED: usize = 8;

/// The merge's end of the channel to the compressing thread: its bytes in chunks of [`CHUNK`].
struct ChunkWriter {
    tx: mpsc::SyncSender<Vec<u8>>,
    chunk: Vec<u8>,
}

impl ChunkWriter {
    fn send(&mut self) -> io::Result<()> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.chunk, Vec::with_capacity(CHUNK));
        self.tx.send(chunk).map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the compressing thread stopped"))
    }
}

impl Write for ChunkWriter {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.chunk.extend_from_slice(b);
        if self.chunk.len() >= CHUNK {
            self.send()?;
        }
        Ok(b.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send()
    }
}

/// The compressing thread's end: the chunks in order, then the end of the input once the
/// merge has dropped its [`ChunkWriter`].
struct ChunkReader {
    rx: mpsc::Receiver<Vec<u8>>,
    chunk: Vec<u8>,
    pos: usize,
}

impl Read for ChunkReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.chunk.len() {
            match self.rx.recv() {
                Ok(c) => (self.chunk, self.pos) = (c, 0),
                Err(mpsc::RecvError) => return Ok(0),
            }
        }
        let n = out.len().min(self.chunk.len() - self.pos);
        out[..n].copy_from_slice(&self.chunk[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A raw file as the plugin writes it: the header, then `words`; `insns` the header's
    /// total of the records' instructions (`None`: a stream that never closed).
    fn raw_file(dir: &Path, pid: u64, insns: Option<u64>, words: &[u64]) {
        let mut b = Vec::new();
        for w in [RAW_MAGIC, RAW_VERSION, pid, pid, 1, 16, 0, 0, insns.unwrap_or(u64::MAX)].iter().chain(words) {
            b.extend_from_slice(&w.to_le_bytes());
        }
        std::fs::write(dir.join(format!("{pid}.0.{pid}.0.raw")), b).unwrap();
    }

    /// A raw system call record: number, instructions before it, time, no arguments.
    fn call(nr: u32, insns: u64, time_ns: u64) -> Vec<u64> {
        let mut w = vec![11u64 << 32 | (nr as u64) << 2 | 1, insns, time_ns];
        w.extend([0; 6]);
        w.extend([0, 0]);
        w
    }

    /// A time mark orders its stream's next records by the time it gives, and is not a
    /// record of the trace: its instructions go with the next one. Process 10 makes an
    /// access, computes 2 M instructions without a call (slowly, under QEMU: its mark says
    /// 10 ms), and makes another; process 20 makes a call at 1 ms, then an access. Without
    /// the mark, process 10's records up to its exit would be one piece, all before process
    /// 20's access; by the mark, that access comes between them. The header's CPU time per
    /// instruction is the native run's over all the instructions (2,000,050).
    #[test]
    fn a_time_mark_orders_the_streams_and_carries_its_instructions() {
        let dir = std::env::temp_dir().join(format!("pagesim-convert-mark-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let access = |vpn: u64, insns: u64| [vpn << 2, insns];
        let mut a: Vec<u64> = access(100, 10).to_vec();
        a.extend(call(MARK_NR, 2_000_000, 10_000_000));
        a.extend(access(101, 10));
        a.extend(call(pgt::nr::EXIT_GROUP, 5, 10_100_000));
        raw_file(&dir, 10, Some(10 + 2_000_000 + 10 + 5), &a);
        let mut b = call(39, 10, 1_000_000);
        b.extend(access(200, 10));
        b.extend(call(pgt::nr::EXIT_GROUP, 5, 2_000_000));
        raw_file(&dir, 20, None, &b);
        let out = dir.join("t.pgt");
        let header = Header { k: 16, command: vec!["t".into()], ns_per_insn: None, tool: "test".into(), cwd: None };
        let summary = convert(&dir, &out, header, Some(4_000_100)).unwrap();
        let mut r = pgt::Records::new(pagesim::tracefile::open_input(out.to_str().unwrap()).unwrap());
        let mut seen = Vec::new();
        while let Some(x) = r.next_record().unwrap() {
            match x {
                Record::Access { vpn, insns, .. } => seen.push((vpn, insns)),
                Record::Syscall { nr, .. } => assert_ne!(nr, MARK_NR, "a mark is not written"),
                _ => {}
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(seen, [(100, 10), (200, 10), (101, 2_000_010)]);
        assert_eq!(summary.insns, 10 + 2_000_000 + 10 + 5 + 10 + 10 + 5);
        assert_eq!(summary.syscalls, 3, "the mark is not a call");
        assert_eq!((summary.ns_per_insn, r.header.ns_per_insn), (Some(2.0), Some(2.0)));
    }

    /// The header's ns_per_insn needs every stream's instructions before the merge: a stream
    /// the plugin closed gives them in its header, and is not read for them (a cut after its
    /// first record goes unseen by that count); one that never closed is read to count them.
    #[test]
    fn a_closed_streams_instructions_come_from_its_header() {
        let dir = std::env::temp_dir().join(format!("pagesim-convert-total-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut w = vec![100 << 2, 10];
        w.extend(&call(39, 10, 1_000_000)[..5]);
        raw_file(&dir, 10, Some(20), &w);
        let names = [dir.join("10.0.10.0.raw")];
        assert_eq!(raw_insns(&names, true), Ok(20));
        let counted = raw_insns(&names, false).unwrap_err();
        assert!(counted.contains("truncated in the middle of a record"), "{counted}");
        raw_file(&dir, 10, None, &w);
        assert!(raw_insns(&names, true).is_err(), "a stream that never closed is counted");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A raw file that ends inside a record is an error naming the file and the word, with
    /// or without the first pass of a native run, and leaves no trace behind (the
    /// compressing thread's part file is removed).
    #[test]
    fn a_truncated_raw_file_is_an_error_and_leaves_no_trace() {
        let dir = std::env::temp_dir().join(format!("pagesim-convert-truncated-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // An access, then a call cut short: the merge has begun when it meets the cut.
        let mut w = vec![100 << 2, 10];
        w.extend(&call(39, 10, 1_000_000)[..5]);
        raw_file(&dir, 10, None, &w);
        let out = dir.join("t.pgt");
        for native in [None, Some(1000)] {
            let header = Header { k: 16, command: vec!["t".into()], ns_per_insn: None, tool: "test".into(), cwd: None };
            let e = convert(&dir, &out, header, native).unwrap_err();
            assert!(e.contains("10.0.10.0.raw: word 16: truncated in the middle of a record"), "{e}");
            assert!(!out.exists() && !out.with_extension("pgt.part").exists());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
