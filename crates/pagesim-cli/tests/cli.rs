//! The pagesim binary: exit codes and messages on bad input, and a real run.

use std::process::Command;

fn pagesim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pagesim")).args(args).output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn scenario(dir: &str) -> String {
    format!("{}/../../scenarios/{dir}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn bad_input_exits_2_with_a_message_naming_the_problem() {
    let (code, _, err) = pagesim(&["run", "/nonexistent/x.toml"]);
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent/x.toml") && err.contains("cannot read"), "{err}");
    let (code, _, err) = pagesim(&["run", &scenario("quickstart.toml"), "--set", "vm.swapiness=3"]);
    assert_eq!(code, 2);
    assert!(err.contains("swapiness"), "{err}");
    let (code, _, err) = pagesim(&["run", &scenario("quickstart.toml"), "--seed", "minus-one"]);
    assert_eq!(code, 2);
    assert!(err.contains("--seed"), "{err}");
    let (code, _, err) = pagesim(&["frobnicate"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown command") && err.contains("usage"), "{err}");
    let dir = std::env::temp_dir().join(format!("pagesim-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[machine]\nram = \"-4GB\"\n[[task]]\nname = \"t\"\nstep = []\n").unwrap();
    let (code, _, err) = pagesim(&["check", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("bad.toml") && err.contains("line 2") && err.contains("negative"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn run_json_reports_vmstat_counters() {
    let (code, out, err) = pagesim(&["run", &scenario("quickstart.toml"), "--json", "--set", "task.0.step.0.passes=2"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON on stdout");
    assert!(v["counters"]["pswpout"].as_u64().unwrap() > 0);
    assert!(v["elapsed_ns"].as_u64().unwrap() > 0);
    assert_eq!(v["profile"], "linux-6.6");
}

#[test]
fn describe_and_profiles_list_the_registries() {
    let (code, out, _) = pagesim(&["describe"]);
    assert_eq!(code, 0);
    for k in ["vm.swappiness", "vm.page-cluster", "adaptive", "two-pass", "sata-ssd", "device.<hdd>.average_seek"] {
        assert!(out.contains(k), "describe lacks {k}");
    }
    let (code, out, _) = pagesim(&["profiles"]);
    assert_eq!(code, 0);
    assert!(out.contains("linux-6.6") && out.contains("linux-3.14"));
}

#[test]
fn validate_needs_root_and_says_so_with_exit_code_2() {
    let (code, _, err) = pagesim(&["validate"]);
    assert_eq!(code, 2);
    assert!(err.contains("missing SCENARIO"), "{err}");
    // Run as an unprivileged user: as root the test drops to uid/gid 65534 (nobody) for the
    // child; otherwise it already is one.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pagesim"));
    cmd.args(["validate", &scenario("quickstart.toml")]);
    if std::fs::read_to_string("/proc/self/status").is_ok_and(|s| s.lines().any(|l| l.starts_with("Uid:\t0\t"))) {
        use std::os::unix::process::CommandExt;
        cmd.uid(65534).gid(65534);
    }
    let out = cmd.output().expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("needs root"), "{err}");
}
