//! Structure-aware: arbitrary bytes become a well-shaped scenario (a tiny machine, devices,
//! swap, files, regions, memcgs and tasks that refer to each other), so that the run itself
//! is fuzzed and not only the parser. Sizes stay small: a run is milliseconds.
#![no_main]
use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use std::fmt::Write;

#[path = "common.rs"]
mod common;

const MODELS: [&str; 6] = ["hdd", "sata-ssd", "nvme", "pmem", "ram", "zram"];
const PATTERNS: [&str; 6] = ["seq", "random", "zipf", "stride", "reverse", "special"];
const MADVISE: [&str; 5] = ["normal", "random", "sequential", "willneed", "none"];

fn pick<'a>(u: &mut Unstructured, xs: &[&'a str]) -> arbitrary::Result<&'a str> {
    Ok(xs[u.choose_index(xs.len())?])
}

/// The calls a file step makes; the whole-file ones take no pattern.
const FILE_OPS: [&str; 9] =
    ["read", "pread", "write", "pwrite", "append", "fsync", "fdatasync", "sync_file_range", "truncate"];
const WHOLE_FILE_OPS: [&str; 4] = ["fsync", "fdatasync", "sync_file_range", "truncate"];

fn scenario(u: &mut Unstructured) -> arbitrary::Result<String> {
    let mut s = String::new();
    let profiles = pagesim::scenario::PROFILES;
    let profile = profiles[u.choose_index(profiles.len())?].name;
    let ram = u.int_in_range(8u32..=96)?;
    let reserved = u.int_in_range(1u32..=4)?;
    let cpus = u.int_in_range(1u32..=4)?;
    writeln!(s, "[machine]\nram = \"{ram}MB\"\nkernel_reserved = \"{reserved}MB\"\ncpus = {cpus}").unwrap();
    // The wakeup IPI to another idle CPU, sometimes (it only acts with a device's irq_cpu).
    if u.arbitrary()? {
        writeln!(s, "[cpu]\nremote_wakeup_ns = {}", u.int_in_range(0u32..=100_000)?).unwrap();
    }
    writeln!(s, "[kernel]\nprofile = \"{profile}\"").unwrap();
    // The memory controller on cgroup v1 or v2 (cgroup writeback on the 6.x profiles).
    if u.arbitrary()? {
        writeln!(s, "cgroup_version = {}", u.int_in_range(1u32..=2)?).unwrap();
    }
    // Large folios in the page cache where the kernel can have them (5.18+): the profile's
    // default, or the other way round.
    if profile == "linux-6.6" || profile == "linux-6.18" {
        if u.arbitrary()? {
            writeln!(s, "large_folios = {}", profile == "linux-6.6").unwrap();
        }
    }
    // Anon mTHP on the profile that has it: a random set of the sizes 16 KiB..1 MiB.
    if profile == "linux-6.18" && u.arbitrary()? {
        let sizes: Vec<String> =
            (2u32..=8).filter(|_| u.arbitrary().unwrap_or(false)).map(|o| format!("\"{}KB\"", 4u32 << o)).collect();
        writeln!(s, "anon_mthp = [{}]", sizes.join(", ")).unwrap();
    }
    writeln!(s, "[vm]").unwrap();
    if u.arbitrary()? {
        writeln!(s, "swappiness = {}\npage-cluster = {}", u.int_in_range(0u32..=100)?, u.int_in_range(0u32..=5)?).unwrap();
    }
    // Small dirty limits now and then, so that throttling and background writeback run.
    if u.arbitrary()? {
        writeln!(
            s,
            "dirty_bytes = \"{}KB\"\ndirty_background_bytes = \"{}KB\"\ndirty_expire_centisecs = {}",
            u.int_in_range(8u32..=4096)?,
            u.int_in_range(4u32..=4096)?,
            u.int_in_range(0u32..=3000)?
        )
        .unwrap();
    }
    let ndev = u.int_in_range(1usize..=2)?;
    for d in 0..ndev {
        let model = pick(u, &MODELS)?;
        writeln!(s, "[device.d{d}]\nmodel = \"{model}\"").unwrap();
        // Completions on one CPU (one past the last, now and then: refused).
        if matches!(model, "hdd" | "sata-ssd" | "nvme") && u.arbitrary()? {
            writeln!(s, "irq_cpu = {}", u.int_in_range(0u32..=cpus)?).unwrap();
        }
        if u.arbitrary()? {
            // Up to 8 MiB windows: readahead folios up to order 9.
            writeln!(s, "read_ahead_kb = {}", 4u32 << u.int_in_range(0u32..=11)?).unwrap();
        }
        if model != "zram" && u.arbitrary()? {
            // Request limits: 4 KiB to 8 MiB requests, 1 to 300 segments of 2 KiB (refused)
            // to 1 MiB, so the plug's 128 KiB flush and the segment cap both come into play.
            writeln!(s, "max_sectors_kb = {}", 4u32 << u.int_in_range(0u32..=11)?).unwrap();
            writeln!(s, "max_segments = {}", u.int_in_range(1u32..=300)?).unwrap();
            writeln!(s, "max_segment_size = {}", 2048u64 << u.int_in_range(0u32..=9)?).unwrap();
        }
    }
    for _ in 0..u.int_in_range(0usize..=2)? {
        writeln!(s, "[[swap]]\ndevice = \"d{}\"\nsize = \"{}MB\"", u.choose_index(ndev)?, u.int_in_range(1u32..=32)?).unwrap();
        // A swap file (no runs of slots for large folios); refused on zram, which is fine.
        if u.int_in_range(0u8..=3)? == 0 {
            writeln!(s, "file = true").unwrap();
        }
    }
    match u.int_in_range(0u8..=3)? {
        0 => writeln!(s, "[zswap]\nenabled = true\nmax_pool_percent = {}", u.int_in_range(1u32..=50)?).unwrap(),
        1 => writeln!(s, "[zswap]\never_enabled = true").unwrap(),
        _ => {}
    }
    let nfiles = u.int_in_range(0usize..=2)?;
    for f in 0..nfiles {
        // Now and then room to grow (appends), from empty or not.
        let size = if u.int_in_range(0u8..=3)? == 0 { 0 } else { u.int_in_range(4u32..=16384)? };
        writeln!(
            s,
            "[file.f{f}]\ndevice = \"d{}\"\nsize = \"{size}KB\"\nper_task = {}",
            u.choose_index(ndev)?,
            u.arbitrary::<bool>()?
        )
        .unwrap();
        if size == 0 || u.int_in_range(0u8..=3)? == 0 {
            writeln!(s, "max_size = \"{}KB\"", size + u.int_in_range(0u32..=16384)?).unwrap();
        }
    }
    let nmemcg = u.int_in_range(0usize..=3)?;
    for m in 0..nmemcg {
        writeln!(s, "[memcg.m{m}]\nmax = \"{}MB\"", u.int_in_range(1u32..=64)?).unwrap();
        // A tree: a parent among the memcgs (itself or a later one now and then: a cycle,
        // refused), swappiness (v1) or swap.max (v2), either of which the other version refuses.
        if u.arbitrary()? {
            writeln!(s, "parent = \"m{}\"", u.choose_index(nmemcg)?).unwrap();
        }
        match u.int_in_range(0u8..=3)? {
            0 => writeln!(s, "swappiness = {}", u.int_in_range(0u32..=100)?).unwrap(),
            1 => writeln!(s, "swap_max = \"{}KB\"", u.int_in_range(0u32..=8192)?).unwrap(),
            _ => {}
        }
        // Protection and throttling (v2: low, min, high; v1: soft limit, use_hierarchy),
        // each refused by the other version and low/min/high by the 3.x profiles.
        match u.int_in_range(0u8..=7)? {
            0 => writeln!(s, "low = \"{}MB\"", u.int_in_range(0u32..=64)?).unwrap(),
            1 => writeln!(s, "min = \"{}MB\"", u.int_in_range(0u32..=64)?).unwrap(),
            2 => writeln!(s, "high = \"{}KB\"", u.int_in_range(0u32..=65536)?).unwrap(),
            3 => writeln!(s, "soft_limit = \"{}MB\"", u.int_in_range(0u32..=64)?).unwrap(),
            4 => writeln!(s, "use_hierarchy = {}", u.arbitrary::<bool>()?).unwrap(),
            _ => {}
        }
    }
    let nregions = u.int_in_range(1usize..=3)?;
    for r in 0..nregions {
        match u.int_in_range(0u8..=2)? {
            2 if nfiles > 0 => {
                writeln!(s, "[region.r{r}]\nkind = \"file\"\nfile = \"f{}\"", u.choose_index(nfiles)?).unwrap();
                // A MAP_SHARED read-write mapping now and then (writes dirty the file), or a
                // program's text.
                match u.int_in_range(0u8..=2)? {
                    0 => writeln!(s, "writable = true").unwrap(),
                    1 => writeln!(s, "exec = true").unwrap(),
                    _ => {}
                }
                let m = pick(u, &MADVISE)?;
                if m != "none" {
                    writeln!(s, "madvise = \"{m}\"").unwrap();
                }
            }
            1 => writeln!(s, "[region.r{r}]\nkind = \"shmem\"\nsize = \"{}KB\"", u.int_in_range(4u32..=32768)?).unwrap(),
            _ => {
                writeln!(s, "[region.r{r}]\nkind = \"anon\"\nsize = \"{}KB\"", u.int_in_range(4u32..=65536)?).unwrap();
                if u.arbitrary()? {
                    writeln!(s, "zero_percent = {}", u.int_in_range(0u32..=50)?).unwrap();
                }
            }
        }
    }
    let ntasks = u.int_in_range(1usize..=3)?;
    for t in 0..ntasks {
        // A program other tasks start takes no count: left out now and then.
        if u.int_in_range(0u8..=3)? == 0 {
            writeln!(s, "[[task]]\nname = \"t{t}\"").unwrap();
        } else {
            writeln!(s, "[[task]]\nname = \"t{t}\"\ncount = {}", u.int_in_range(1u32..=3)?).unwrap();
        }
        if nmemcg > 0 && u.arbitrary()? {
            writeln!(s, "memcg = \"m{}\"", u.choose_index(nmemcg)?).unwrap();
        }
        // Pinned to some of the CPUs (an empty list now and then: refused).
        if u.arbitrary()? {
            let pinned: Vec<String> = (0..cpus).filter(|_| u.arbitrary().unwrap_or(false)).map(|c| c.to_string()).collect();
            writeln!(s, "cpus = [{}]", pinned.join(", ")).unwrap();
        }
        for _ in 0..u.int_in_range(1usize..=3)? {
            writeln!(s, "[[task.step]]").unwrap();
            // A lifecycle step now and then: start another program (a cycle is refused), wait,
            // unmap, map or resize a region, pause.
            if u.int_in_range(0u8..=4)? == 0 {
                let target = u.choose_index(ntasks)?;
                let region = u.choose_index(nregions)?;
                match u.int_in_range(0u8..=6)? {
                    0 => writeln!(
                        s,
                        "op = \"spawn\"\ntask = \"t{target}\"\ncount = {}\njobs = {}",
                        u.int_in_range(1u32..=8)?,
                        u.int_in_range(1u32..=4)?
                    )
                    .unwrap(),
                    1 => writeln!(s, "op = \"fork\"\ntask = \"t{target}\"\ncount = {}", u.int_in_range(1u32..=3)?).unwrap(),
                    2 => writeln!(s, "op = \"exec\"\ntask = \"t{target}\"").unwrap(),
                    3 => writeln!(s, "op = \"wait\"").unwrap(),
                    4 => writeln!(s, "op = \"munmap\"\nregion = \"r{region}\"").unwrap(),
                    5 => writeln!(
                        s,
                        "op = \"brk\"\nregion = \"r{region}\"\nsize = \"{}KB\"\nsize_sigma = {}",
                        u.int_in_range(4u32..=65536)?,
                        u.int_in_range(0u32..=2)?
                    )
                    .unwrap(),
                    _ => writeln!(s, "op = \"pause\"").unwrap(),
                }
                continue;
            }
            let step_pattern;
            if nfiles > 0 && u.int_in_range(0u8..=3)? == 0 {
                let op = pick(u, &FILE_OPS)?;
                writeln!(s, "file = \"f{}\"\nop = \"{op}\"", u.choose_index(nfiles)?).unwrap();
                if WHOLE_FILE_OPS.contains(&op) {
                    continue;
                }
                // An append writes at the end: no pattern, a count of records or passes.
                let pattern = if op == "append" { "seq" } else { pick(u, &PATTERNS)? };
                if op != "append" {
                    writeln!(s, "pattern = \"{pattern}\"").unwrap();
                }
                step_pattern = if op == "append" { "append" } else { pattern };
                if u.arbitrary()? {
                    writeln!(s, "record = \"{}KB\"", 4 * u.int_in_range(1u32..=64)?).unwrap();
                }
                if op.contains("write") && u.int_in_range(0u8..=3)? == 0 {
                    writeln!(s, "fsync_every = {}", u.int_in_range(1u32..=64)?).unwrap();
                }
            } else {
                // msync (on a writable file region, else refused) now and then.
                let op = if u.int_in_range(0u8..=7)? == 0 { "msync" } else { pick(u, &["read", "write"])? };
                writeln!(s, "region = \"r{}\"\nop = \"{op}\"", u.choose_index(nregions)?).unwrap();
                if op == "msync" {
                    continue;
                }
                step_pattern = pick(u, &PATTERNS)?;
                writeln!(s, "pattern = \"{step_pattern}\"").unwrap();
            }
            // Sequential patterns make passes; the random ones (and appends) a count.
            let counted = matches!(step_pattern, "random" | "zipf" | "special" | "append");
            if u.arbitrary()? || !counted && u.int_in_range(0u8..=7)? != 0 {
                writeln!(s, "passes = {}", u.int_in_range(1u32..=3)?).unwrap();
            } else {
                writeln!(s, "accesses = {}", u.int_in_range(1u32..=20000)?).unwrap();
            }
            if u.int_in_range(0u8..=4)? == 0 {
                writeln!(s, "think = \"{}us\"", u.int_in_range(0u32..=100)?).unwrap();
            }
        }
    }
    Ok(s)
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    if let Ok(text) = scenario(&mut u) {
        // `PAGESIM_FUZZ_PRINT=1 cargo fuzz run generated ARTIFACT` shows the scenario a crash ran.
        if std::env::var_os("PAGESIM_FUZZ_PRINT").is_some() {
            eprintln!("{text}");
        }
        common::bounded_run(&text, &[]);
    }
});
