//! Host integration tests. The ones that change the host (swap, memcg, zram, zswap) run only
//! as root and when swapon works, and print why they skip otherwise; they run one at a time
//! (a zram swap area from one test would be a "foreign" swap area for another). Every test
//! checks that the host is as it was afterwards: /proc/swaps, the memory cgroup directory
//! and the tunables.
//!
//! Signal tests run a copy of this test binary as a child (selected with an environment
//! variable), send it SIGTERM, and check that its cleanup ran.

use pagesim::Scenario;
use pagesim_host::swapfile::proc_swaps;
use pagesim_host::{run_on_host_with, CgroupMount, HostOptions, HostTunables, Memcg, SwapFile, Tunable, Zram, Zswap};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

static HOST: Mutex<()> = Mutex::new(());

const CHILD_ENV: &str = "PAGESIM_HOST_TEST_CHILD";

/// The small scenario of the brief: 64 MB written twice by one task in a 48 MB memcg, with a
/// 128 MB swap file. Its vm settings differ from the defaults so their restore is checked.
const TINY: &str = r#"
name = "tiny"
[machine]
ram = "256MB"
[vm]
swappiness = 100
page-cluster = 2
[device.d]
model = "nvme"
[[swap]]
device = "d"
size = "128MB"
[memcg.box]
max = "48MB"
[region.heap]
kind = "anon"
size = "64MB"
[[task]]
name = "w"
memcg = "box"
[[task.step]]
region = "heap"
pattern = "seq"
passes = 2
"#;

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pagesim-host-itest-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn loader() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_pagesim-load"))
}

/// `None` if the host-changing tests can run here, else why not.
fn host_skip_reason() -> Option<String> {
    if !pagesim_host::is_root() {
        return Some("not root".into());
    }
    match proc_swaps() {
        Ok(v) if !v.is_empty() => return Some(format!("other swap areas are active: {v:?}")),
        Err(e) => return Some(e.0),
        _ => {}
    }
    if let Err(e) = CgroupMount::detect() {
        return Some(e.0);
    }
    let d = temp_dir("probe");
    let r = SwapFile::create(&d.join("probe"), 1 << 20, None).and_then(|s| s.remove());
    std::fs::remove_dir_all(&d).ok();
    r.err().map(|e| format!("swapon of a file does not work here: {e}"))
}

/// What must be the same before and after a test.
#[derive(Debug, PartialEq)]
struct HostState {
    swaps: Vec<String>,
    own_cgroups: Vec<String>,
    tunables: HostTunables,
}

fn host_state(pid: u32) -> HostState {
    let root = CgroupMount::detect().map(|m| m.root).unwrap_or_default();
    let prefix = format!("pagesim-{pid}-");
    let mut own_cgroups: Vec<String> = std::fs::read_dir(&root)
        .map(|rd| rd.filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned())).collect())
        .unwrap_or_default();
    own_cgroups.retain(|n| n.starts_with(&prefix));
    let mut tunables = HostTunables::read(&std::env::temp_dir());
    tunables.mem_total_kb = None; // virtio-mem may resize the guest; not ours to keep.
    HostState { swaps: proc_swaps().unwrap().into_iter().map(|e| e.filename).collect(), own_cgroups, tunables }
}

#[test]
fn a_memcg_limited_load_swaps_and_the_host_is_restored() {
    let _g = HOST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = host_skip_reason() {
        println!("skipped: {why}");
        return;
    }
    let before = host_state(std::process::id());
    let sc = Scenario::from_toml(TINY, "tiny.toml", &[]).unwrap();
    let opts = HostOptions { repeats: 2, loader: Some(loader()), ..Default::default() };
    let t = Instant::now();
    let res = run_on_host_with(&sc, &opts).unwrap();
    let elapsed = t.elapsed();
    assert_eq!(res.runs.len(), 2);
    for (i, run) in res.runs.iter().enumerate() {
        let out = run.vmstat.get("pswpout").copied().unwrap_or(0);
        let m = &run.memcg["box"];
        assert!(out > 0, "run {i}: pswpout = 0 in a 48 MB memcg writing 64 MB");
        assert!(m.stat.get("pgmajfault").unwrap() > 0, "run {i}: the second pass must fault pages back in");
        assert!(m.peak_bytes.unwrap() <= 48 << 20);
        assert!(run.load.tasks.iter().all(|t| t.completed()), "{:?}", run.load.tasks);
        assert_eq!(run.load.tasks[0].accesses, Some(2 * 16384));
        assert!(!Path::new(&m.path).exists(), "run {i}: memcg {} was not removed", m.path);
    }
    let swap = &res.setup.swap[0];
    assert_eq!((swap.bytes, swap.size_kb, swap.host_priority), (128 << 20, (128 << 10) - 4, 0));
    let changed: Vec<(&str, &str)> = res.setup.tunables.iter().map(|c| (c.path.as_str(), c.new.as_str())).collect();
    assert_eq!(changed, [("/proc/sys/vm/swappiness", "100"), ("/proc/sys/vm/page-cluster", "2")]);
    assert!(!Path::new(&swap.path).exists(), "the swap file was deleted");
    assert!(!Path::new(&swap.path).parent().unwrap().exists(), "the work dir was removed");
    assert_eq!(host_state(std::process::id()), before);
    assert!(pagesim_host::cleanup::pending().is_empty());
    assert!(elapsed < Duration::from_secs(20), "took {elapsed:?}");
    serde_json::to_string(&res).unwrap();
}

#[test]
fn zram_and_zswap_guards_restore_the_host() {
    let _g = HOST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = host_skip_reason() {
        println!("skipped: {why}");
        return;
    }
    let zsys = Path::new("/sys/block/zram0");
    let alg = || std::fs::read_to_string(zsys.join("comp_algorithm")).unwrap();
    if !zsys.exists() || std::fs::read_to_string(zsys.join("disksize")).unwrap().trim() != "0" {
        println!("skipped zram: /dev/zram0 missing or in use");
    } else {
        let before = (host_state(std::process::id()), alg());
        let z = Zram::create(0, 32 << 20, Some("lz4"), Some(100)).unwrap();
        let e = proc_swaps().unwrap().into_iter().find(|e| e.filename == "/dev/zram0").unwrap();
        assert_eq!((e.kind.as_str(), e.priority), ("partition", 100));
        assert!(alg().contains("[lz4]"));
        z.remove().unwrap();
        assert_eq!(std::fs::read_to_string(zsys.join("disksize")).unwrap().trim(), "0");
        assert_eq!((host_state(std::process::id()), alg()), before);
    }
    let params = Path::new(pagesim_host::tunable::ZSWAP_PARAMETERS);
    if params.exists() {
        let before = host_state(std::process::id());
        let z = Zswap::enable(params, None, None).unwrap();
        assert_eq!(std::fs::read_to_string(params.join("enabled")).unwrap().trim(), "Y");
        drop(z);
        assert_eq!(host_state(std::process::id()), before);
    }
}

/// Waits until `cond` holds (polling), for at most `secs` seconds.
fn wait_for(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(secs) {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Runs `test` of this binary as a child with CHILD_ENV=`what`, sends it SIGTERM once
/// `ready()` holds, and returns how it ended.
fn sigterm_child(test: &str, what: &str, arg: &Path, ready: impl FnMut() -> bool) -> std::process::ExitStatus {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{what}:{}", arg.display()))
        .spawn()
        .unwrap();
    let ok = wait_for(15, ready);
    // SAFETY: signals only the child this test started and has not reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let st = child.wait().unwrap();
    assert!(ok, "the child never got ready");
    st
}

/// The child half of the signal tests (does nothing in a normal test run).
#[test]
fn signal_child() {
    let Ok(v) = std::env::var(CHILD_ENV) else { return };
    let (what, arg) = v.split_once(':').unwrap();
    let dir = PathBuf::from(arg);
    match what {
        "guards" => {
            let _t = Tunable::set(dir.join("swappiness"), "100").unwrap();
            let m = CgroupMount { version: pagesim_host::CgroupVersion::V1, root: dir.clone() };
            let _cg = Memcg::create_in(&m, &dir, "sig", Duration::ZERO).unwrap();
            std::fs::write(dir.join("ready"), "").unwrap();
        }
        "run" => {
            let mut sc = Scenario::from_toml(TINY, "tiny.toml", &[]).unwrap();
            // Long enough to be interrupted: random writes for many seconds.
            sc = Scenario::from_toml(
                &format!("{TINY}\n[[task.step]]\nregion = \"heap\"\npattern = \"random\"\naccesses = 100000000\n"),
                "long.toml",
                &[],
            )
            .unwrap_or(sc);
            let opts = HostOptions { loader: Some(loader()), work_dir: Some(dir.clone()), ..Default::default() };
            let r = run_on_host_with(&sc, &opts);
            panic!("the run should have been interrupted, got {:?}", r.map(|r| r.runs.len()));
        }
        _ => panic!("unknown child {what}"),
    }
    std::thread::sleep(Duration::from_secs(30));
    panic!("SIGTERM never came");
}

#[test]
fn sigterm_runs_the_guards_cleanup() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let dir = temp_dir("sig-guards");
    std::fs::write(dir.join("swappiness"), "60\n").unwrap();
    let st = sigterm_child("signal_child", "guards", &dir, || dir.join("ready").exists());
    assert_eq!(st.signal(), Some(libc::SIGTERM), "the child dies of the signal it got: {st:?}");
    assert_eq!(std::fs::read_to_string(dir.join("swappiness")).unwrap().trim(), "60", "tunable restored");
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.starts_with("pagesim-"))
        .collect();
    assert!(left.is_empty(), "memcg directory not removed: {left:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sigterm_during_a_host_run_restores_the_host() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let _g = HOST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = host_skip_reason() {
        println!("skipped: {why}");
        return;
    }
    let dir = temp_dir("sig-run");
    let before = host_state(std::process::id());
    let root = CgroupMount::detect().unwrap().root;
    // Ready once the child's memcg has a process in it: the load is running.
    let mut child_pid = None;
    let mut ready = || {
        let Ok(rd) = std::fs::read_dir(&root) else { return false };
        rd.filter_map(|e| e.ok()).any(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let busy = std::fs::read_to_string(e.path().join("cgroup.procs")).is_ok_and(|p| !p.trim().is_empty());
            if n.starts_with("pagesim-") && n.ends_with("-box") && busy {
                child_pid = n.split('-').nth(1).map(str::to_string);
                true
            } else {
                false
            }
        })
    };
    let st = sigterm_child("signal_child", "run", &dir, &mut ready);
    assert_eq!(st.signal(), Some(libc::SIGTERM), "{st:?}");
    let child_pid: u32 = child_pid.unwrap().parse().unwrap();
    // Its memcgs, swap file, work dir and tunables are gone or restored.
    assert_eq!(host_state(child_pid).own_cgroups, Vec::<String>::new());
    let after = host_state(std::process::id());
    assert_eq!(after, before);
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert!(left.is_empty(), "work dir left behind: {left:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A job server with exec'd jobs, a fork, a wait, an exec of the server itself and a paused
/// server, run by pagesim-load as real processes (no memcg: nothing on the host changes).
const LIFECYCLE: &str = r#"
name = "life"
[machine]
ram = "1GB"
[device.disk]
model = "nvme"
[file.text]
device = "disk"
size = "1MB"
[region.text]
kind = "file"
file = "text"
exec = true
[file.src]
device = "disk"
size = "16KB"
per_task = true
[region.heap]
kind = "anon"
size = "8MB"
[region.buf]
kind = "anon"
size = "2MB"
[[task]]
name = "make"
[[task.step]]
region = "buf"
pattern = "seq"
op = "write"
[[task.step]]
op = "spawn"
task = "cc"
count = 5
jobs = 2
[[task.step]]
op = "fork"
task = "child"
[[task.step]]
op = "wait"
[[task.step]]
op = "exec"
task = "ld"
[[task]]
name = "cc"
[[task.step]]
file = "src"
op = "read"
pattern = "seq"
[[task.step]]
op = "brk"
region = "heap"
size = "2MB"
size_sigma = 0.5
[[task.step]]
region = "heap"
pattern = "seq"
op = "write"
[[task.step]]
region = "text"
pattern = "zipf"
accesses = 300
op = "read"
[[task]]
name = "child"
[[task.step]]
region = "buf"
pattern = "random"
op = "write"
accesses = 100
[[task]]
name = "ld"
[[task.step]]
region = "heap"
pattern = "seq"
op = "read"
[[task]]
name = "server"
[[task.step]]
region = "buf"
pattern = "seq"
op = "write"
[[task.step]]
op = "pause"
"#;

#[test]
fn pagesim_load_runs_process_trees_with_the_engines_accesses() {
    let dir = temp_dir("life");
    let path = dir.join("life.toml");
    std::fs::write(&path, LIFECYCLE).unwrap();
    let out = Command::new(loader()).arg(&path).arg("--file-dir").arg(&dir).arg("--create-files").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let is_tmpfs = stderr.contains("tmpfs");
    if is_tmpfs {
        println!("skipped: {} is on tmpfs", dir.display());
        std::fs::remove_dir_all(&dir).ok();
        return;
    }
    assert!(out.status.success(), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = report["tasks"].as_array().unwrap();
    let by_name = |n: &str| runs.iter().find(|t| t["name"] == n).unwrap_or_else(|| panic!("no run {n}: {runs:?}"));
    // Every run of every program: make, server, 5 jobs, the fork's child, and ld (make's
    // exec), each completed.
    let sc = Scenario::from_toml(LIFECYCLE, "life.toml", &[]).unwrap();
    let expected: u32 = sc.config.task.iter().map(|t| t.runs).sum();
    assert_eq!(runs.len() as u32, expected, "{runs:?}");
    for t in runs {
        assert_eq!(t["exit_code"], 0, "{t}");
        assert!(t["error"].is_null(), "{t}");
    }
    // exec keeps the process: ld runs in make's; the jobs and the child are new processes.
    let (make, ld) = (by_name("make"), by_name("ld.0"));
    assert_eq!(make["pid"], ld["pid"]);
    let mut pids: Vec<i64> = runs.iter().map(|t| t["pid"].as_i64().unwrap()).collect();
    pids.sort_unstable();
    pids.dedup();
    assert_eq!(pids.len(), runs.len() - 1, "one pid per process");
    // The engine's accesses, run for run: the same streams (a child's split from its
    // parent's), so the same heap sizes drawn by brk. Lifecycle steps count one op in the
    // engine and none on the host.
    let sim = pagesim::run(&sc, pagesim::RunOptions::default()).unwrap().to_json();
    for t in sim["tasks"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        if name == "make" {
            continue; // the engine reports make's process under its last program's steps
        }
        let prog = name.split('.').next().unwrap();
        let program = sc.config.task.iter().find(|p| p.name == prog).unwrap();
        let lifecycle = program.step.iter().filter(|s| s.op.is_lifecycle()).count() as u64;
        let ops: u64 = t["steps"].as_array().unwrap().iter().map(|s| s["ops"].as_u64().unwrap_or(0)).sum();
        let host = by_name(name)["accesses"].as_u64().unwrap();
        assert_eq!(host + lifecycle, ops, "{name}: host {host} accesses, engine {ops} ops");
    }
    std::fs::remove_dir_all(&dir).ok();
}
