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
