use super::*;

const GOOD: &str = r#"
[machine]
ram = "64MB"
cpus = 2

[vm]
swappiness = 60
page-cluster = 3

[device.ssd]
model = "sata-ssd"

[[swap]]
device = "ssd"
size = "64MB"

[region.buf]
kind = "anon"
size = "80MB"

[[task]]
name = "t"
[[task.step]]
region = "buf"
pattern = "seq"
passes = 2
"#;

fn err(text: &str) -> String {
    Scenario::from_toml(text, "s.toml", &[]).unwrap_err().0
}

#[test]
fn a_good_scenario_parses_with_defaults() {
    let s = Scenario::from_toml(GOOD, "dir/s.toml", &[]).unwrap();
    assert_eq!(s.name, "s");
    assert_eq!(s.profile.name, "linux-6.6");
    assert_eq!(s.file.machine.ram, 64 << 20);
    assert_eq!(s.file.vm.page_cluster, Some(3));
    assert_eq!(s.file.task[0].count, 1);
}

#[test]
fn malformed_toml_names_file_and_line() {
    let e = err("[machine]\nram = \"64MB\n");
    assert!(e.starts_with("s.toml:"), "{e}");
    assert!(e.contains("line 2"), "{e}");
}

#[test]
fn unknown_key_is_named_with_its_line() {
    let e = err(&GOOD.replace("swappiness = 60", "swapiness = 60"));
    assert!(e.contains("swapiness"), "{e}");
    assert!(e.contains("line 7"), "{e}");
}

#[test]
fn negative_and_malformed_sizes_are_rejected() {
    let e = err(&GOOD.replace("size = \"80MB\"", "size = -5"));
    assert!(e.contains("negative") && e.contains("line"), "{e}");
    let e = err(&GOOD.replace("size = \"80MB\"", "size = \"80 furlongs\""));
    assert!(e.contains("80 furlongs"), "{e}");
}

#[test]
fn unknown_profile_and_policies_list_the_choices() {
    let e = err(&format!("[kernel]\nprofile = \"linux-9.9\"\n{GOOD}"));
    assert!(e.contains("kernel.profile") && e.contains("linux-9.9") && e.contains("linux-6.6"), "{e}");
    let e = err(&format!("[kernel]\nswap_readahead = \"psychic\"\n{GOOD}"));
    assert!(e.contains("kernel.swap_readahead") && e.contains("adaptive"), "{e}");
    let e = err(&format!("[kernel]\nscan_balance = \"coin\"\n{GOOD}"));
    assert!(e.contains("kernel.scan_balance") && e.contains("two-pass"), "{e}");
}

#[test]
fn cross_references_are_checked() {
    let e = err(&GOOD.replace("region = \"buf\"", "region = \"bfu\""));
    assert!(e.contains("task[0].step[0].region") && e.contains("bfu") && e.contains("buf"), "{e}");
    let e = err(&GOOD.replace("device = \"ssd\"", "device = \"hdd0\""));
    assert!(e.contains("swap[0].device") && e.contains("hdd0"), "{e}");
    let e = err(&GOOD.replace("name = \"t\"", "name = \"t\"\nmemcg = \"box\""));
    assert!(e.contains("task[0].memcg"), "{e}");
    let e = err(&GOOD.replace("swappiness = 60", "swappiness = 300"));
    assert!(e.contains("vm.swappiness") && e.contains("0..200"), "{e}");
    let e = err(&GOOD.replace("size = \"64MB\"", "size = \"200GB\""));
    assert!(e.contains("swap[0].size") && e.contains("device holds"), "{e}");
}

#[test]
fn overrides_apply_to_dotted_paths_and_are_validated() {
    let sets = vec!["vm.swappiness=100".to_string(), "task.0.step.0.passes=7".into(), "machine.ram=\"128MB\"".into()];
    let s = Scenario::from_toml(GOOD, "s.toml", &sets).unwrap();
    assert_eq!(s.file.vm.swappiness, Some(100));
    assert_eq!(s.file.task[0].step[0].passes, Some(7));
    assert_eq!(s.file.machine.ram, 128 << 20);
    // A bare word is a string.
    let s = Scenario::from_toml(GOOD, "s.toml", &["kernel.swap_readahead=none".into()]).unwrap();
    assert_eq!(s.file.kernel.swap_readahead.as_deref(), Some("none"));
    let e = Scenario::from_toml(GOOD, "s.toml", &["vm.swapiness=1".into()]).unwrap_err().0;
    assert!(e.contains("swapiness"), "{e}");
    let e = Scenario::from_toml(GOOD, "s.toml", &["task.3.name=x".into()]).unwrap_err().0;
    assert!(e.contains("out of range"), "{e}");
    let e = Scenario::from_toml(GOOD, "s.toml", &["novalue".into()]).unwrap_err().0;
    assert!(e.contains("KEY=VALUE"), "{e}");
    let e = Scenario::from_toml(GOOD, "s.toml", &["kernel.cgroup_version=3".into()]).unwrap_err().0;
    assert!(e.contains("s.toml") && e.contains("kernel.cgroup_version") && e.contains("1 or 2"), "{e}");
}

#[test]
fn json_scenarios_match_toml_and_name_bad_paths() {
    let t: toml::Value = toml::from_str(GOOD).unwrap();
    let j = serde_json::to_value(&t).unwrap();
    let s = Scenario::from_json(&j, "dict", &[]).unwrap();
    assert_eq!(s.file.machine.ram, 64 << 20);
    let mut bad = j.clone();
    bad["task"][0]["step"][0]["passes"] = serde_json::json!("many");
    let e = Scenario::from_json(&bad, "dict", &[]).unwrap_err().0;
    assert!(e.contains("task[0].step[0].passes"), "{e}");
}

#[test]
fn every_profile_selects_policies_that_are_registered() {
    let chosen: Vec<_> = registries().into_iter().filter(|r| r.selected.is_some()).collect();
    assert!(chosen.iter().any(|r| r.kind == "file_readahead"), "file readahead is chosen by the profile");
    for p in PROFILES {
        for r in &chosen {
            let name = (r.selected.unwrap().by_profile)(p);
            assert!(r.contains(name), "profile {}: {} \"{name}\" is not registered ({})", p.name, r.kind, r.names());
        }
    }
}

#[test]
fn every_registered_policy_is_accepted_by_its_key_and_an_unknown_one_lists_them() {
    for r in registries() {
        let Some(sel) = r.selected else { continue };
        for e in &r.entries {
            let s = Scenario::from_toml(GOOD, "s.toml", &[format!("{}={}", r.scenario_key, e.name)]).unwrap();
            assert_eq!((sel.by_scenario)(&s.file.kernel), Some(e.name));
        }
        let e = Scenario::from_toml(GOOD, "s.toml", &[format!("{}=psychic", r.scenario_key)]).unwrap_err().0;
        assert!(e.contains(&format!("{}: unknown policy \"psychic\"", r.scenario_key)), "{e}");
        assert!(e.contains(&r.names()), "{e}");
    }
}

#[test]
fn front_ends_get_every_registry_from_one_list() {
    let regs = registries();
    for (i, r) in regs.iter().enumerate() {
        assert!(regs[..i].iter().all(|o| o.kind != r.kind && o.scenario_key != r.scenario_key), "{}", r.kind);
        assert!(!r.entries.is_empty(), "{}", r.kind);
    }
    let kinds: Vec<_> = regs.iter().map(|r| r.kind).collect();
    for kind in ["swap_readahead", "scan_balance", "file_readahead", "device_model", "io_scheduler"] {
        assert!(kinds.contains(&kind), "{kind} missing from registries()");
    }
    // Python's registries(): the same list.
    let json = registries_json();
    let listed = json.as_array().unwrap();
    assert_eq!(listed.len(), regs.len());
    for (j, r) in listed.iter().zip(&regs) {
        assert_eq!(j["kind"], r.kind);
        assert_eq!(j["scenario_key"], r.scenario_key);
        let names: Vec<_> = j["entries"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
        assert_eq!(names, r.entries.iter().map(|e| e.name).collect::<Vec<_>>());
    }
    // Python's profiles(): every profile names its policy of every kind it chooses.
    let profiles = profiles_json();
    for (p, j) in PROFILES.iter().zip(profiles.as_array().unwrap()) {
        assert_eq!(j["name"], p.name);
        for r in regs.iter().filter(|r| r.selected.is_some()) {
            assert_eq!(j[r.kind], (r.selected.unwrap().by_profile)(p), "{} {}", p.name, r.kind);
        }
    }
    // describe(): one key per kind the profile chooses.
    let keys: Vec<_> = describe().into_iter().map(|t| t.key).collect();
    for r in regs.iter().filter(|r| r.selected.is_some()) {
        assert!(keys.iter().any(|k| k == r.scenario_key), "describe lacks {}", r.scenario_key);
    }
}
