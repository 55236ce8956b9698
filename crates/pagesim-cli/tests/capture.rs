//! `pagesim capture` on a small C program whose accesses are known (tests/capture/
//! touch_pages.c): with K=1 the trace has exactly its pages in its order, and the fork, exec
//! and exits it makes, in a process tree of two; an open that truncates a file that existed
//! is followed by the ftruncate it amounts to, and an unlink names its file. A threaded
//! program (tests/capture/threads.c) has a stream per thread and replays each in a task. The
//! pages of text a program executes are touched as its loads touch data (tests/capture/
//! fetch.c), and forgotten by stack deletion at each system call. Stack deletion keeps exactly
//! what an LRU memory of K pages misses, across page boundaries too (tests/capture/deletion.c).
//!
//! Needs qemu-user and a C compiler (scripts/install.sh installs qemu-user as root, and
//! scripts/test.sh installs before it tests). Without them the test says so and passes,
//! except under CI (`CI` set), where a missing tool is a failure.

use pagesim::tracefile::pgt::{nr, Record, Records};
use std::process::Command;

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
}

/// Whether qemu-x86_64 and cc are there; without them the test is skipped, except under CI.
fn tools() -> bool {
    if on_path("qemu-x86_64") && on_path("cc") {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "qemu-x86_64 or cc missing under CI: scripts/install.sh installs qemu-user"
    );
    eprintln!("skipped: qemu-x86_64 or cc not on $PATH (scripts/install.sh installs qemu-user as root)");
    false
}

/// The pages of the test program's 64-page mapping (its first mmap of that size, by stream
/// 0) that stream `s` touched, in order, each with whether it was a store.
fn touched(recs: &[Record], s: u32) -> Vec<(u64, bool)> {
    touched_in(recs, s, 64, PROT_RW)
}

/// mmap's PROT_READ | PROT_WRITE, and with PROT_EXEC.
const PROT_RW: u64 = 3;
const PROT_RWX: u64 = 7;

/// The pages of the first mapping of `pages` pages with protection `prot` stream 0 made that
/// stream `s` touched, in order (as page numbers in the mapping), each with whether it was a
/// store.
fn touched_in(recs: &[Record], s: u32, pages: u64, prot: u64) -> Vec<(u64, bool)> {
    let base = recs
        .iter()
        .find_map(|x| match *x {
            Record::Syscall { stream: 0, nr: nr::MMAP, args, ret, .. }
                if args[1] == pages * 4096 && args[2] == prot =>
            {
                Some(ret as u64 / 4096)
            }
            _ => None,
        })
        .expect("the program's mmap");
    recs.iter()
        .filter_map(|x| match *x {
            Record::Access { stream, vpn, write, .. } if stream == s && (base..base + pages).contains(&vpn) => {
                Some((vpn - base, write))
            }
            _ => None,
        })
        .collect()
}

/// Builds tests/capture/`name`.c (with `cflags`) in a directory of its own, captures it with
/// K=`k` (given the path `DIR/f` as its argument if `file_arg`), checks that it ran and that
/// capture reports `streams`; returns the directory (the caller removes it), the trace,
/// its records and its header's K.
fn capture(
    name: &str,
    cflags: &[&str],
    k: u32,
    file_arg: bool,
    streams: &str,
) -> (std::path::PathBuf, std::path::PathBuf, Vec<Record>, u32) {
    let dir = std::env::temp_dir().join(format!("pagesim-capture-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join(name);
    let src = format!("{}/tests/capture/{name}.c", env!("CARGO_MANIFEST_DIR"));
    let cc = Command::new("cc").arg("-O1").args(cflags).arg("-o").arg(&exe).arg(&src).status().unwrap();
    assert!(cc.success());
    let trace = dir.join("t.pgt");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pagesim"));
    cmd.args(["capture", "-k", &k.to_string(), "-o"]).arg(&trace).arg("--").arg(&exe);
    if file_arg {
        cmd.arg(dir.join("f"));
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains(streams), "{err}");
    let mut r = Records::new(pagesim::tracefile::open_input(trace.to_str().unwrap()).unwrap());
    let mut recs = Vec::new();
    while let Some(x) = r.next_record().unwrap() {
        recs.push(x);
    }
    let k = r.header.k;
    (dir, trace, recs, k)
}

#[test]
fn a_captured_program_has_its_pages_in_order_and_its_process_tree() {
    if !tools() {
        return;
    }
    let (dir, trace, recs, k) = capture("touch_pages", &[], 1, true, "2 process image(s), 2 thread stream(s)");
    assert_eq!(k, 1);

    // Replayed, the trace makes the same process tree: the program and the child its fork
    // started, both run to their end (the child's ends at its exec).
    let sc = dir.join("replay.toml");
    std::fs::write(
        &sc,
        format!(
            "[machine]\nram = \"64MB\"\n[device.d]\nmodel = \"nvme\"\n\
             [[task]]\nname = \"touch\"\nprogram = {{ trace = \"{}\" }}\n",
            trace.display()
        ),
    )
    .unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_pagesim")).args(["run", "--json", "-q"]).arg(&sc).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let report: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let tasks: Vec<(String, bool)> = report["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap().to_string(), t["completed"].as_bool().unwrap()))
        .collect();
    assert_eq!(tasks, [("touch".to_string(), true), ("touch.0".to_string(), true)]);
    assert_eq!(report["ops_done"], report["ops_total"]);
    let _ = std::fs::remove_dir_all(&dir);

    // The processes: the program, and the child its fork created (stream 1).
    let streams: Vec<_> =
        recs.iter().filter_map(|x| if let Record::Stream(s) = x { Some(s.clone()) } else { None }).collect();
    assert_eq!(streams.len(), 2);
    let (parent, child) = (&streams[0], &streams[1]);
    assert_eq!(child.parent, parent.pid);
    let calls = |s: u32| -> Vec<(u32, i64)> {
        recs.iter()
            .filter_map(|x| match *x {
                Record::Syscall { stream, nr, ret, .. } if stream == s => Some((nr, ret)),
                _ => None,
            })
            .collect()
    };
    let (pc, cc) = (calls(0), calls(1));
    assert!(pc.contains(&(nr::CLONE, child.pid as i64)) || pc.contains(&(nr::FORK, child.pid as i64)), "{pc:?}");
    assert!(pc.iter().any(|&(n, ret)| n == nr::WAIT4 && ret == child.pid as i64), "{pc:?}");
    assert_eq!(pc.last().map(|c| c.0), Some(nr::EXIT_GROUP));
    assert!(
        matches!(cc.first(), Some(&(nr::CLONE | nr::FORK, 0))),
        "the child's stream starts at its fork's return: {cc:?}"
    );
    assert_eq!(cc.last().map(|c| c.0), Some(nr::EXECVE), "{cc:?}");
    // The child appears after the call that created it.
    let fork_at =
        recs.iter().position(|x| matches!(*x, Record::Syscall { stream: 0, ret, .. } if ret == child.pid as i64));
    let child_at = recs.iter().position(|x| matches!(x, Record::Stream(s) if s.pid == child.pid));
    assert!(fork_at < child_at, "{fork_at:?} {child_at:?}");

    // The mapping the program made, and the pages of it each process touched, in order.
    let touched = |s: u32| touched(&recs, s);
    let want: Vec<(u64, bool)> = (0..64).map(|i| ((i * 37) % 64, true)).collect();
    assert_eq!(touched(0), want);
    assert_eq!(touched(1), [(5, true), (6, true), (5, true)]);

    // The file: created, opened through a symbolic link, opened again with O_TRUNC (then
    // followed by ftruncate(fd, 0), the creating open not), unlinked (the call names it; the
    // link's unlink does not).
    let f = recs
        .iter()
        .filter_map(|x| if let Record::File(f) = x { Some(f) } else { None })
        .position(|f| f.path.ends_with("/f"))
        .expect("the file is named") as u32;
    let file_calls: Vec<(u32, [u64; 6], i64)> = recs
        .iter()
        .filter_map(|x| match *x {
            Record::Syscall { stream: 0, nr, args, ret, file, .. } if file == Some(f) || nr == nr::FTRUNCATE => {
                Some((nr, args, ret))
            }
            _ => None,
        })
        .collect();
    let opens: Vec<usize> =
        file_calls.iter().enumerate().filter(|c| c.1 .0 == nr::OPENAT || c.1 .0 == nr::OPEN).map(|c| c.0).collect();
    assert_eq!(opens.len(), 3, "{file_calls:?}");
    assert_eq!(file_calls.len(), 5, "three opens, one ftruncate, one unlink: {file_calls:?}");
    // The open through the link did not stop the plugin reading paths: the truncating open
    // after it is still seen.
    let (tr, fd) = (file_calls[opens[2] + 1], file_calls[opens[2]].2);
    assert_eq!((tr.0, tr.1[0], tr.1[1], tr.2), (nr::FTRUNCATE, fd as u64, 0, 0), "{file_calls:?}");
    assert_ne!(file_calls[opens[0] + 1].0, nr::FTRUNCATE, "the creating open truncated nothing");
    assert!(matches!(file_calls[4], (nr::UNLINK | nr::UNLINKAT, _, 0)), "{file_calls:?}");
}

/// A multi-threaded program (tests/capture/threads.c): each thread is a stream of its own
/// (one process, three tids, each clone returning its thread's tid), each thread's stores
/// are its half of the buffer in order, and the replay runs each thread in a task of its own
/// in the process's address space, every access replayed.
#[test]
fn a_captured_threaded_program_has_a_stream_per_thread_and_replays_them() {
    if !tools() {
        return;
    }
    let (dir, trace, recs, _) = capture("threads", &["-pthread"], 1, false, "1 process image(s), 3 thread stream(s)");
    let streams: Vec<_> =
        recs.iter().filter_map(|x| if let Record::Stream(s) = x { Some(s.clone()) } else { None }).collect();
    assert_eq!(streams.len(), 3);
    assert!(streams.iter().all(|s| s.pid == streams[0].pid), "{streams:?}");
    assert_eq!(streams[0].tid, streams[0].pid);
    for (k, s) in streams.iter().enumerate().skip(1) {
        let clone_at = recs.iter().position(
            |x| matches!(*x, Record::Syscall { stream: 0, nr: nr::CLONE | nr::CLONE3, ret, .. } if ret == s.tid as i64),
        );
        let start_at = recs.iter().position(|x| matches!(x, Record::Stream(t) if t.tid == s.tid));
        assert!(clone_at.is_some() && clone_at < start_at, "thread {k}: {clone_at:?} {start_at:?}");
    }
    let touched = |s: u32| touched(&recs, s);
    // Which thread got which half depends on the order they started in.
    let halves: Vec<Vec<(u64, bool)>> = (0..2u64).map(|k| (32 * k..32 * k + 32).map(|i| (i, true)).collect()).collect();
    let (a, b) = (touched(1), touched(2));
    assert!((a == halves[0] && b == halves[1]) || (a == halves[1] && b == halves[0]), "{a:?} {b:?}");
    assert_eq!(touched(0), (0..64).map(|i| (i, false)).collect::<Vec<_>>());

    let sc = dir.join("replay.toml");
    std::fs::write(
        &sc,
        format!(
            "[machine]\nram = \"64MB\"\ncpus = 2\n[device.d]\nmodel = \"nvme\"\n\
             [[task]]\nname = \"thr\"\nprogram = {{ trace = \"{}\" }}\n",
            trace.display()
        ),
    )
    .unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_pagesim")).args(["run", "--json", "-q"]).arg(&sc).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let _ = std::fs::remove_dir_all(&dir);
    let report: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let tasks: Vec<(String, bool, u64)> = report["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap().into(), t["completed"].as_bool().unwrap(), t["faults"].as_u64().unwrap()))
        .collect();
    let names: Vec<&str> = tasks.iter().map(|t| t.0.as_str()).collect();
    assert_eq!(names, ["thr", "thr.0", "thr.1"]);
    assert!(tasks.iter().all(|t| t.1), "{tasks:?}");
    // Each thread's first stores to its half fault in the one address space.
    assert!(tasks[1].2 >= 32 && tasks[2].2 >= 32, "{tasks:?}");
    assert_eq!(report["ops_done"], report["ops_total"]);
}

/// Instruction fetches touch their page of text (tests/capture/fetch.c): with K=16, work()'s
/// page, run 1000 times in a row, is one kept load; the thread's recent pages are forgotten
/// when a system call returns (the kernel may have reclaimed them meanwhile), so its next
/// 1000 runs, after getppid(), keep it once more: two loads of the page after the madvise
/// that names it, none a store.
#[test]
fn a_program_text_page_is_touched_once_between_system_calls() {
    if !tools() {
        return;
    }
    let (dir, _, recs, k) = capture("fetch", &[], 16, false, "1 process image(s), 1 thread stream(s)");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(k, 16);
    let named = recs
        .iter()
        .position(|x| matches!(*x, Record::Syscall { stream: 0, nr: nr::MADVISE, args, .. } if args[1] == 0))
        .expect("the madvise naming work()'s page");
    let Record::Syscall { args, .. } = recs[named] else { unreachable!() };
    let page = args[0] / 4096;
    let loads: Vec<bool> = recs[named..]
        .iter()
        .filter_map(|x| match *x {
            Record::Access { stream: 0, vpn, write, .. } if vpn == page => Some(write),
            _ => None,
        })
        .collect();
    assert_eq!(loads, [false, false], "one load of work()'s page per stretch between system calls");
}

/// Stack deletion with K=16 keeps what an LRU memory of 16 pages misses, whichever of the
/// plugin's checks finds a page (tests/capture/deletion.c): fewer pages than K in turn are
/// kept once, more than K every time; two pages that share a hint (256 apart) are still found
/// among the recent ones, and a store to a page whose kept accesses were loads is kept once;
/// a store across a page boundary stores to both pages, and a block of code across one
/// fetches from both, in order, once between system calls.
#[test]
fn stack_deletion_keeps_exactly_the_misses_of_k_pages() {
    if !tools() {
        return;
    }
    let (dir, _, recs, k) = capture("deletion", &[], 16, false, "1 process image(s), 1 thread stream(s)");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(k, 16);
    let load = |p: u64| (p, false);
    let store = |p: u64| (p, true);
    let mut want: Vec<(u64, bool)> = (0..14).map(load).collect();
    for _ in 0..3 {
        want.extend((20..37).map(load));
    }
    want.extend([load(40), load(296), store(40), store(296), store(400), store(401)]);
    assert_eq!(touched_in(&recs, 0, 512, PROT_RW), want);
    let code = touched_in(&recs, 0, 2, PROT_RWX);
    assert_eq!(code, [store(0), store(1), load(0), load(1), load(0), load(1)], "the code written, then run");
}
