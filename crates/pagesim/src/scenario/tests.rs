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

/// `kernel.large_folios` defaults to the profile's (on for linux-6.18's ext4, off for
/// linux-6.6's), can model a filesystem that takes them on 6.6 (XFS), and is refused on a
/// kernel older than large folios.
#[test]
fn large_folios_follow_the_profile_and_are_refused_before_5_18() {
    let resolve = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        Scenario::from_toml(GOOD, "s.toml", &sets).map(|s| s.config.kernel.large_folios)
    };
    assert!(resolve(&["kernel.profile=\"linux-6.18\""]).unwrap());
    assert!(!resolve(&["kernel.profile=\"linux-6.6\""]).unwrap());
    assert!(resolve(&["kernel.profile=\"linux-6.6\"", "kernel.large_folios=true"]).unwrap());
    assert!(!resolve(&["kernel.profile=\"linux-6.18\"", "kernel.large_folios=false"]).unwrap());
    let e = resolve(&["kernel.profile=\"linux-3.14\"", "kernel.large_folios=true"]).unwrap_err().0;
    assert!(e.contains("kernel.large_folios") && e.contains("linux-3.14") && e.contains("5.18"), "{e}");
}

/// `kernel.memcg_stats_flush_phase` places the first periodic memcg stats flush: half the
/// period by default on linux-6.18, refused where reclaim reads exact statistics and at a
/// whole period or more.
#[test]
fn the_memcg_stats_flush_phase_is_checked() {
    let resolve = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        Scenario::from_toml(GOOD, "s.toml", &sets).map(|s| s.config.kernel.memcg_stats_flush_phase_ns)
    };
    assert_eq!(resolve(&["kernel.profile=\"linux-6.18\""]).unwrap(), Some(1_000_000_000));
    let phase = resolve(&["kernel.profile=\"linux-6.18\"", "kernel.memcg_stats_flush_phase=\"150ms\""]);
    assert_eq!(phase.unwrap(), Some(150_000_000));
    assert_eq!(resolve(&["kernel.profile=\"linux-6.6\""]).unwrap(), None);
    let e = resolve(&["kernel.profile=\"linux-6.6\"", "kernel.memcg_stats_flush_phase=\"1s\""]).unwrap_err().0;
    assert!(e.contains("kernel.memcg_stats_flush_phase") && e.contains("linux-6.6") && e.contains("exact"), "{e}");
    let e = resolve(&["kernel.profile=\"linux-6.18\"", "kernel.memcg_stats_flush_phase=\"2s\""]).unwrap_err().0;
    assert!(e.contains("kernel.memcg_stats_flush_phase") && e.contains("less than the flush period"), "{e}");
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
    for kind in ["swap_readahead", "scan_balance", "file_readahead", "writeback_order", "device_model", "io_scheduler"]
    {
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

/// The key and message of a resolution error of `text` with the overrides `sets`.
fn err_with(text: &str, sets: &[&str]) -> String {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Scenario::from_toml(text, "s.toml", &sets).unwrap_err().0
}

#[test]
fn what_only_a_run_found_is_rejected_when_the_scenario_is_loaded() {
    // The default kernel reserve (ram/64 + 32MiB) is more than 20 MB of RAM.
    let e = err_with(GOOD, &["machine.ram=\"20MB\""]);
    assert!(e.starts_with("s.toml: machine.ram: ") && e.contains("default reserve"), "{e}");
    let e = err_with(GOOD, &["machine.ram=\"64MB\"", "machine.kernel_reserved=\"64MB\""]);
    assert!(e.starts_with("s.toml: machine.kernel_reserved: "), "{e}");
    // What the reserve leaves cannot hold the default watermarks (27 pages).
    let e = err_with(GOOD, &["machine.ram=34200000"]);
    assert!(e.starts_with("s.toml: machine.ram: ") && e.contains("high watermark in 27 pages"), "{e}");
    let e = err_with(GOOD, &["machine.kernel_reserved=\"65400KB\""]);
    assert!(e.starts_with("s.toml: machine.kernel_reserved: ") && e.contains("high watermark"), "{e}");
    let e = err_with(GOOD, &["machine.ram=\"1TiB\"", "machine.kernel_reserved=0"]);
    assert!(e.starts_with("s.toml: machine.ram: too large"), "{e}");
    // vm.min_free_kbytes leaving no room above the high watermark, up to beyond all memory.
    for kb in ["30000", "4611686018427387904"] {
        let e = err_with(GOOD, &[&format!("vm.min_free_kbytes={kb}")]);
        assert!(e.starts_with(&format!("s.toml: vm.min_free_kbytes: {kb} kB leaves no room")), "{e}");
    }
    let e = err_with(GOOD, &["vm.watermark_scale_factor=3000"]);
    assert!(e.starts_with("s.toml: vm.watermark_scale_factor: 3000 ") && e.contains("high watermark"), "{e}");
    // Before 4.6 there is no scale factor: it is ignored, as the kernel has no such sysctl.
    Scenario::from_toml(GOOD, "s.toml", &["vm.watermark_scale_factor=3000".into(), "kernel.profile=linux-3.14".into()])
        .unwrap();
    // A file that does not fit its device after the swap areas (64 MB of 80 MB).
    let files = format!("{GOOD}\n[device.ssd]\n");
    let files = files.replace(
        "[device.ssd]\nmodel = \"sata-ssd\"",
        "[device.ssd]\nmodel = \"sata-ssd\"\ncapacity = \"80MB\"\n[file.big]\ndevice = \"ssd\"\nsize = \"17MB\"",
    );
    let files = files.trim_end_matches("[device.ssd]\n");
    let e = err(files);
    assert!(e.starts_with("s.toml: file.big: device \"ssd\" holds 83886080 bytes"), "{e}");
    Scenario::from_toml(files, "s.toml", &["file.big.size=\"16MB\"".into()]).unwrap();
}

#[test]
fn a_scenario_without_optional_keys_resolves_to_describes_defaults() {
    // One step of each kind whose keys have defaults, and nothing optional set.
    let text = r#"
        [machine]
        ram = "256MB"
        [device.d]
        model = "nvme"
        [file.f]
        device = "d"
        size = "1MB"
        [region.a]
        kind = "anon"
        size = "1MB"
        [region.m]
        kind = "file"
        file = "f"
        [[task]]
        name = "t"
        [[task.step]]
        region = "a"
        pattern = "stride"
        [[task.step]]
        region = "a"
        pattern = "zipf"
        [[task.step]]
        region = "a"
        pattern = "special"
        [[task.step]]
        file = "f"
        op = "read"
        pattern = "seq"
        rate = "1MB"
    "#;
    let sc = Scenario::from_toml(text, "d.toml", &[]).unwrap();
    let c = &sc.config;
    let resolved = serde_json::to_value(c).unwrap();
    // The resolved value of a described key: the first task, region or step that has it.
    let find = |key: &str| -> Option<serde_json::Value> {
        let path: Vec<&str> = key.split('.').collect();
        let candidates: Vec<&serde_json::Value> = match path[0] {
            "task[]" if path[1] == "step[]" => {
                resolved["task"][0]["step"].as_array().unwrap().iter().map(|s| &s[path[2]]).collect()
            }
            "task[]" => vec![&resolved["task"][0][path[1]]],
            "region" => resolved["region"].as_object().unwrap().values().map(|r| &r[path[2]]).collect(),
            "file" => vec![&resolved["file"]["f"][path[2]]],
            _ => vec![path.iter().fold(&resolved, |v, k| &v[k])],
        };
        candidates.into_iter().find(|v| !v.is_null()).cloned()
    };
    let mut compared = Vec::new();
    for t in describe() {
        let d = t.default.as_str();
        // Defaults that are words or formulas, not values.
        let descriptive = d.starts_with("required")
            || d.contains(' ')
            || ["none", "profile's", "unlimited", "pages", "root"].contains(&d);
        let Some(value) = find(&t.key).filter(|_| !descriptive) else { continue };
        let same = match &value {
            serde_json::Value::String(v) => v == d,
            serde_json::Value::Bool(v) => v.to_string() == d,
            v if t.unit == "bytes" => v.as_u64() == crate::units::parse_bytes(d).ok(),
            v if t.unit == "duration" => v.as_u64() == crate::units::parse_duration_ns(d).ok(),
            v => v.as_f64() == d.parse::<f64>().ok(),
        };
        assert!(same, "describe's default of {} is {d}; the resolution applies {value}", t.key);
        compared.push(t.key);
    }
    for key in [
        "seed",
        "watchdog",
        "machine.cpus",
        "kernel.profile",
        "kernel.vma_ra_enabled",
        "kernel.cgroup_version",
        "vm.swappiness",
        "vm.page-cluster",
        "vm.watermark_scale_factor",
        "cpu.access_ns",
        "zswap.compressor",
        "zswap.max_pool_percent",
        "region.NAME.madvise",
        "task[].count",
        "task[].step[].record",
        "task[].step[].pace",
        "task[].step[].then_next",
        "task[].step[].passes",
        "task[].step[].op",
        "task[].step[].stride",
        "task[].step[].zipf_s",
        "task[].step[].special_pct",
        "task[].step[].special_res",
        "task[].step[].special_iter",
    ] {
        assert!(compared.iter().any(|k| k == key), "{key} was not compared: {compared:?}");
    }
    // The defaults that are formulas, and the policies, which are the profile's.
    assert_eq!(c.machine.kernel_reserved, 256 * (1 << 20) / 64 + (32 << 20));
    let reserved = describe().into_iter().find(|t| t.key == "machine.kernel_reserved").unwrap().default;
    assert_eq!(reserved, "ram/64 + 32MiB");
    assert_eq!(c.vm.min_free_kbytes, crate::mm::default_min_free_kbytes(c.machine.managed_pages, 262_144));
    for r in registries().into_iter().filter(|r| r.selected.is_some()) {
        assert_eq!(resolved["kernel"][r.kind], (r.selected.unwrap().by_profile)(sc.profile), "{}", r.kind);
    }
}

/// Every scenario of the repository, resolved, serialized and resolved again, gives the same
/// configuration: what pagesim-host's load generator reads is what the simulator ran. (Not
/// validation/traces/, whose traces scripts/capture-traces.sh makes on the machine; the
/// round trip of a trace task is engine/replay.rs's test.)
#[test]
fn a_serialized_config_resolves_to_itself() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut paths = Vec::new();
    let mut dirs = vec![root.join("scenarios"), root.join("validation")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() && p.ends_with("validation/traces") {
                continue;
            }
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "toml") && p.file_name().is_some_and(|n| n != "reproduce.toml")
            {
                paths.push(p);
            }
        }
    }
    assert!(paths.len() > 20, "{paths:?}");
    let mut texts: Vec<(String, String)> =
        paths.iter().map(|p| (p.display().to_string(), std::fs::read_to_string(p).unwrap())).collect();
    texts.push(("good.toml".into(), GOOD.into()));
    for (origin, text) in texts {
        let sc = Scenario::from_toml(&text, &origin, &[]).unwrap();
        let json = serde_json::to_value(&sc.config).unwrap();
        let again = Scenario::from_json(&json, "replay.json", &[]).unwrap_or_else(|e| panic!("{origin}: {e}"));
        assert_eq!(format!("{:?}", sc.config), format!("{:?}", again.config), "{origin}");
        assert_eq!(json, serde_json::to_value(&again.config).unwrap(), "{origin}");
    }
}

fn set_err(sets: &[&str]) -> String {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Scenario::from_toml(GOOD, "s.toml", &sets).unwrap_err().0
}

/// Inputs that used to abort the process (a 4 GiB timeline, a stack overflow, a task table
/// larger than the host) are refused with the key and the bound.
#[test]
fn inputs_that_aborted_are_refused_with_the_bound() {
    let e = set_err(&["sample_interval=\"1ns\""]);
    assert!(e.contains("sample_interval") && e.contains("at least 1ms"), "{e}");
    let e = set_err(&["task.0.count=1000000000"]);
    assert!(e.contains("task[0].count") && e.contains("1..=100000"), "{e}");
    let deep = vec!["a"; 50_000].join(".") + "=1";
    let e = set_err(&[&deep]);
    assert!(e.contains("a.a.a...") && e.contains("50000 dotted parts") && e.contains("at most 8"), "{e}");
}

#[test]
fn a_scenario_larger_than_the_memory_allowed_is_refused_with_both_figures() {
    let sc = Scenario::from_toml(GOOD, "s.toml", &["machine.ram=\"64GB\"".into()]).unwrap();
    // 64 GB of RAM is 16M frames: about half a GiB of per-frame arrays.
    let need = sc.config.memory_estimate();
    assert!((400 << 20..1 << 30).contains(&need), "{need}");
    let e = crate::check_memory(&sc, Some(256 << 20)).unwrap_err().0;
    assert!(e.starts_with("s.toml: this scenario needs about") && e.contains("more than the 256.0 MiB allowed"), "{e}");
    assert!(crate::check_memory(&sc, Some(need)).is_ok());
    let e = crate::run(&sc, crate::RunOptions { max_memory: Some(1 << 20), ..Default::default() }).unwrap_err().0;
    assert!(e.contains("needs about"), "run refuses before it allocates: {e}");
}

/// `vm.page-cluster` is the kernel's spelling; its underscore form reaches the same key,
/// from a file or from --set (Python's `vm__page_cluster`), and replaces the file's value.
#[test]
fn page_cluster_takes_its_underscore_alias() {
    let s = Scenario::from_toml(GOOD, "s.toml", &["vm.page_cluster=0".into()]).unwrap();
    assert_eq!(s.config.vm.page_cluster, 0, "--set replaced the file's 3");
    let text = GOOD.replace("page-cluster = 3", "page_cluster = 5");
    assert_eq!(Scenario::from_toml(&text, "s.toml", &[]).unwrap().config.vm.page_cluster, 5);
}

/// serde's wording (`u64`, "unit variant", "wanted string or table", the path twice, a
/// missing table reported one field at a time) is replaced by what was expected and found.
#[test]
fn errors_say_what_was_expected_and_what_was_found_once() {
    let e = set_err(&["task.0.step.0.op=0"]);
    assert_eq!(
        e,
        "s.toml (after --set): task[0].step[0].op: expected one of `read`, `write`, `pread`, `pwrite`, `append`, `fsync`, \
         `fdatasync`, `sync_file_range`, `truncate`, `msync`, `spawn`, `fork`, `wait`, `exec`, `mmap`, `munmap`, `brk`, `pause`, got 0"
    );
    let e = err(&GOOD.replace("pattern = \"seq\"", "pattern = \"seq\"\nop = 0"));
    assert!(e.starts_with("s.toml (line 26): task[0].step[0].op: expected one of `read`"), "{e}");
    let e = set_err(&["vm.swappiness=-1"]);
    assert!(e.ends_with("vm.swappiness: expected a whole number from 0 to 4294967295, got -1"), "{e}");
    assert_eq!(e.matches("swappiness").count(), 1, "the location once: {e}");
    let e = err("name = \"x\"\n");
    assert!(e.contains("the [machine] table is required, with at least `ram`"), "{e}");
    // A seed above TOML's largest integer is a string of digits.
    let s = Scenario::from_toml(GOOD, "s.toml", &["seed=18446744073709551615".into()]).unwrap();
    assert_eq!(s.config.seed, u64::MAX);
}

/// A device parameter of the wrong type is named by its key inside the device's table, with
/// what was found (the table is read by `model`, through a buffer that loses the path).
#[test]
fn a_bad_device_parameter_names_its_key_and_what_was_found() {
    let e = set_err(&["device.ssd.channels=\"many\""]);
    assert!(e.ends_with("device.ssd.channels: expected a whole number from 0 to 4294967295, got \"many\""), "{e}");
    let hdd = GOOD.replace("model = \"sata-ssd\"", "model = \"hdd\"\nwrite_cache = \"maybe\"");
    let e = err(&hdd);
    assert!(e.contains("device.ssd.write_cache: expected true, false, 0 or 1, got \"maybe\""), "{e}");
    assert!(e.starts_with("s.toml (line "), "the line too: {e}");
    let e = set_err(&["device.ssd.no_such_key=1"]);
    assert!(e.contains("device.ssd.no_such_key: unknown field `no_such_key`, expected one of `capacity`"), "{e}");
}

#[test]
fn task_cpus_and_device_irq_cpu_name_cpus_the_machine_has() {
    let with_cpus = |cpus: &str| GOOD.replace("name = \"t\"\n", &format!("name = \"t\"\ncpus = {cpus}\n"));
    let s = Scenario::from_toml(&with_cpus("[1, 0]"), "s.toml", &[]).unwrap();
    assert_eq!(s.config.task[0].cpus.as_deref(), Some(&[0, 1][..]), "sorted");
    for bad in ["[2]", "[]", "[0, 0]"] {
        let e = err(&with_cpus(bad));
        assert!(e.contains("task[0].cpus") && e.contains("0..1"), "{bad}: {e}");
    }
    let irq = |c: u32| GOOD.replace("model = \"sata-ssd\"", &format!("model = \"sata-ssd\"\nirq_cpu = {c}"));
    let s = Scenario::from_toml(&irq(1), "s.toml", &[]).unwrap();
    assert_eq!(s.config.device[0].model.queue_params().irq_cpu, Some(1));
    let e = err(&irq(2));
    assert!(e.contains("device.ssd.irq_cpu") && e.contains("machine.cpus = 2"), "{e}");
    let e = err(&GOOD.replace("[device.ssd]\nmodel = \"sata-ssd\"", "[device.ssd]\nmodel = \"ram\"\nirq_cpu = 0"));
    assert!(e.contains("irq_cpu"), "only the models that interrupt take it: {e}");
}

/// The dirty-memory sysctls: ratios in 0..100, a ratio or bytes per limit (not both),
/// `dirty_bytes` at least two pages; each error names its key and line.
#[test]
fn dirty_sysctls_are_checked() {
    let e = set_err(&["vm.dirty_ratio=-5"]);
    assert!(e.contains("vm.dirty_ratio") && e.contains("-5"), "{e}");
    let e = set_err(&["vm.dirty_background_ratio=120"]);
    assert!(e.contains("vm.dirty_background_ratio: expected a percentage 0..100, got 120"), "{e}");
    let e = set_err(&["vm.dirty_ratio=10", "vm.dirty_bytes=\"64MB\""]);
    assert!(e.contains("vm.dirty_bytes: give vm.dirty_ratio or vm.dirty_bytes, not both"), "{e}");
    let e = set_err(&["vm.dirty_bytes=4096"]);
    assert!(e.contains("vm.dirty_bytes: expected at least 8192 bytes"), "{e}");
    let e = err(&GOOD.replace("swappiness = 60", "swappiness = 60\ndirty_background_bytes = 0"));
    assert!(e.starts_with("s.toml") && e.contains("vm.dirty_background_bytes: expected at least 1 bytes"), "{e}");
    let s = Scenario::from_toml(GOOD, "s.toml", &["vm.dirty_bytes=\"64MB\"".into()]).unwrap();
    assert_eq!(s.config.vm.dirty.dirty, crate::writeback::Limit::Bytes(64 << 20));
    assert_eq!(s.config.vm.dirty.background, crate::writeback::Limit::Ratio(10), "the profile's default");
}

/// Appends and file sizes: an append needs room past the size, takes no pattern, counts
/// its calls in `accesses`; a file that appends or truncate resize cannot be mapped; a seq
/// step with `accesses` is refused rather than silently making passes.
#[test]
fn appends_and_growing_files_are_checked() {
    let base = "[machine]\nram = \"64MB\"\n[device.d]\nmodel = \"nvme\"\n[file.f]\ndevice = \"d\"\n";
    let with = |file: &str, steps: &str| format!("{base}{file}[[task]]\nname = \"t\"\n{steps}");
    let append = "[[task.step]]\nfile = \"f\"\nop = \"append\"\naccesses = 4\n";
    let s = Scenario::from_toml(&with("size = 0\nmax_size = \"1MB\"\n", append), "s.toml", &[]).unwrap();
    assert_eq!(s.config.extents[0].pages, 256);
    assert_eq!(s.config.extents[0].size_pages, 0);
    let e = err(&with("size = \"1MB\"\n", append));
    assert!(e.contains("task[0].step[0].op: file \"f\" has no room to append"), "{e}");
    let e = err(&with("size = \"2MB\"\nmax_size = \"1MB\"\n", append));
    assert!(e.contains("file.f.max_size: 1048576 bytes is less than the file's size (2097152)"), "{e}");
    let e = err(&with("size = 0\n", append));
    assert!(e.contains("file.f.size: must be greater than 0 (or give max_size"), "{e}");
    let e = err(&with("size = 0\nmax_size = \"1MB\"\n", &append.replace("accesses", "pattern = \"random\"\naccesses")));
    assert!(e.contains("task[0].step[0].pattern: an append writes at the file's end"), "{e}");
    let mapped = "[region.m]\nkind = \"file\"\nfile = \"f\"\n";
    let e = err(&with(&format!("size = \"64KB\"\nmax_size = \"1MB\"\n{mapped}"), append));
    assert!(e.contains("task[0].step[0].op: file \"f\" is mapped by region \"m\""), "{e}");
    let e = err(&with(&format!("size = 0\nmax_size = \"1MB\"\n{mapped}"), append));
    assert!(e.contains("region.m.file: file \"f\" is empty at the start"), "{e}");
    let e = err(&with(
        "size = \"1MB\"\n",
        "[[task.step]]\nfile = \"f\"\nop = \"write\"\npattern = \"seq\"\naccesses = 3\n",
    ));
    assert!(e.contains("task[0].step[0].accesses: a seq, reverse or stride pattern makes passes"), "{e}");
}

/// Lifecycle steps: each takes its own operands; the programs they start exist and do not
/// start each other in a cycle; a started program takes no count or start of its own;
/// `runs` counts every process that runs a program, for its per-task files.
#[test]
fn lifecycle_steps_are_checked_and_programs_counted() {
    let base = "[machine]\nram = \"64MB\"\n[device.d]\nmodel = \"nvme\"\n\
                [file.src]\ndevice = \"d\"\nsize = \"64KB\"\nper_task = true\n\
                [file.bin]\ndevice = \"d\"\nsize = \"1MB\"\n\
                [region.heap]\nkind = \"anon\"\nsize = \"8MB\"\n[region.text]\nkind = \"file\"\nfile = \"bin\"\n\
                exec = true\n";
    let make = "[[task]]\nname = \"make\"\ncount = 2\n[[task.step]]\nop = \"spawn\"\ntask = \"cc\"\ncount = 5\n\
                jobs = 2\n";
    let cc = "[[task]]\nname = \"cc\"\n[[task.step]]\nfile = \"src\"\nop = \"read\"\npattern = \"seq\"\n\
              [[task.step]]\nop = \"brk\"\nregion = \"heap\"\nsize = \"2MB\"\nsize_sigma = 0.5\n\
              [[task.step]]\nop = \"exec\"\ntask = \"as\"\n";
    let as_ = "[[task]]\nname = \"as\"\n[[task.step]]\nregion = \"text\"\npattern = \"seq\"\nop = \"read\"\n";
    let s = Scenario::from_toml(&format!("{base}{make}{cc}{as_}"), "s.toml", &[]).unwrap();
    let t = &s.config.task;
    assert_eq!((t[0].count, t[0].runs, t[0].spawned), (2, 2, false));
    assert_eq!((t[1].count, t[1].runs, t[1].at_once, t[1].spawned), (0, 10, 4, true), "2 makes x 5 jobs, 2 at once");
    assert_eq!((t[2].runs, t[2].spawned), (10, true), "each job execs the assembler");
    let copies = s.config.extents.iter().filter(|e| e.owner.is_some()).count();
    assert_eq!(copies, 10, "a copy of the per-task source for each compiler run");

    let e = err(&format!("{base}{make}{}", cc.replace("task = \"as\"", "task = \"ld\"")));
    assert!(e.contains("task[1].step[2].task: no task named \"ld\" to exec"), "{e}");
    let e = err(&format!(
        "{base}{make}{cc}{}",
        as_.replace("op = \"read\"\n", "op = \"read\"\n[[task.step]]\nop = \"fork\"\ntask = \"cc\"\n")
    ));
    assert!(e.contains("programs start each other in a cycle: cc -> as -> cc"), "{e}");
    let e = err(&format!("{base}{make}{}{as_}", cc.replace("name = \"cc\"\n", "name = \"cc\"\ncount = 3\n")));
    assert!(e.contains("task[1].count: task \"cc\" is started by other tasks' spawn, fork or exec steps"), "{e}");
    let e = err(&format!("{base}{make}{}{as_}", cc.replace("region = \"heap\"\nsize", "region = \"text\"\nsize")));
    assert!(e.contains("task[1].step[1].region: brk resizes an anon region (the heap); \"text\" is not one"), "{e}");
    let e = err(&format!("{base}{make}{}{as_}", cc.replace("size = \"2MB\"", "size = 0")));
    assert!(e.contains("task[1].step[1].size: a brk step gives the heap's new size, more than 0 bytes"), "{e}");
    let e = err(&format!("{base}{make}{}{as_}", cc.replace("\"2MB\"", "\"16MB\"")));
    assert!(e.contains("task[1].step[1].size: 16777216 bytes is more than region \"heap\" may grow to"), "{e}");
    let e = err(&format!("{base}{}{cc}{as_}", make.replace("jobs = 2\n", "jobs = 2\npattern = \"random\"\n")));
    assert!(e.contains("task[0].step[0].pattern: a spawn step takes no such key"), "{e}");
    let e = err(&format!("{base}{}{cc}{as_}", make.replace("task = \"cc\"\n", "")));
    assert!(e.contains("task[0].step[0].task: a spawn step names the program it starts"), "{e}");
    let e = err(&format!("{base}{}{cc}{as_}", make.replace("jobs = 2", "jobs = 0")));
    assert!(e.contains("task[0].step[0].jobs: must be at least 1"), "{e}");
    let e = err(&format!("{}{make}{cc}{as_}", base.replace("exec = true", "exec = true\nwritable = true")));
    assert!(e.contains("region.text.writable: a program's text (exec = true) is mapped read-only"), "{e}");
    let e = err(&format!("{base}{}{cc}{as_}", make.replace("name = \"make\"", "name = \"cc\"")));
    assert!(e.contains("task[1].name: task[0] has the same name, \"cc\""), "{e}");
    let e = err(&format!("{base}{make}{cc}{as_}[[task.step]]\nop = \"pause\"\n"));
    assert!(e.contains("task[2].step[1].op: pause ends the program of a task the run starts with"), "{e}");
    let e = err(&format!(
        "{base}{}{cc}{as_}",
        make.replace("[[task.step]]", "[[task.step]]\nop = \"pause\"\n[[task.step]]")
    ));
    assert!(e.contains("task[0].step[0].op: pause ends the program") && e.contains("its last step"), "{e}");
    let e = err(&format!("{base}{make}{cc}{}", as_.replace("op = \"read\"", "op = \"read\"\ntask = \"cc\"")));
    assert!(e.contains("task[2].step[0].task: only the lifecycle steps"), "{e}");
}
