//! The page cache in the engine: what reads, faults and reclaim do to it, checked through
//! the counters a run reports (the invariant checker runs throughout in test builds).

use crate::engine::Sim;
use crate::testutil::run;
use crate::{Counter, Gauge, Scenario};

/// A machine with one 4 MiB file on a fast device (so runs are short) and one task whose
/// steps are `steps` (TOML of `[[task.step]]` tables).
fn scenario(extra: &str, steps: &str) -> String {
    format!(
        r#"
[machine]
ram = "64MB"
kernel_reserved = "8MB"
[device.d]
model = "nvme"
[file.f]
device = "d"
size = "4MB"
{extra}
[[task]]
name = "t"
{steps}
"#
    )
}

const SEQ_READ: &str = r#"
[[task.step]]
file = "f"
op = "read"
pattern = "seq"
record = "64KB"
"#;

#[test]
fn a_sequential_read_reads_each_page_once_in_large_requests() {
    for profile in ["linux-2.6.20", "linux-2.6.23", "linux-6.6"] {
        let r = run(&scenario("", SEQ_READ), &[&format!("kernel.profile={profile}")]);
        assert_eq!(r.counter(Counter::FileReadPages), 1024, "{profile}");
        assert_eq!(r.counter(Counter::PgpgIn), 4096, "{profile}: every page read once, in KiB");
        assert_eq!(r.counter(Counter::FileReadSingle), 0, "{profile}: readahead brought every page");
        assert_eq!(r.counter(Counter::PgMajFault), 0, "{profile}: read(2) misses are not faults");
        let d = &r.devices[0];
        assert!(d.reads * 16 <= 1024, "{profile}: {} requests for 1024 pages: windows must merge", d.reads);
        assert_eq!(r.gauge(Gauge::NrFilePages).unwrap(), 1024);
        assert_eq!(r.gauge(Gauge::NrInactiveFile).unwrap(), 1024, "{profile}: one access leaves pages inactive");
        let step = &r.tasks[0].steps[0];
        assert_eq!((step.ops, step.read_bytes), (64, 4 << 20));
        assert!(step.read_bytes_per_s().unwrap() > 0.0);
    }
}

#[test]
fn read_ahead_kb_sizes_the_windows_and_max_sectors_kb_the_oversize_reads_of_4_10_plus() {
    // 1024 pages read in 64 KiB records: with read_ahead_kb = 128 every window is 32 pages
    // once ramped up; with 512 they grow to 128 (16, 32 or 64 first, then 128s).
    let windows = |profile: &str, sets: &[&str]| {
        let mut all = vec![format!("kernel.profile={profile}")];
        all.extend(sets.iter().map(|s| s.to_string()));
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let r = run(&scenario("", SEQ_READ), &all);
        assert_eq!(r.counter(Counter::FileRaPages), 1024, "{profile} {sets:?}: readahead brings every page");
        let by_size: u64 = r.ra_window_hist.iter().map(|&(_, c)| c).sum();
        assert_eq!(by_size, r.counter(Counter::FileRaWindows), "{profile} {sets:?}: the histogram holds every window");
        (r.counter(Counter::FileRaWindows), r.ra_window_hist)
    };
    for profile in ["linux-2.6.20", "linux-2.6.23", "linux-6.6"] {
        assert_eq!(windows(profile, &["device.d.read_ahead_kb=128"]), (1024 / 32, vec![(32, 1024 / 32)]), "{profile}");
        let (big, hist) = windows(profile, &["device.d.read_ahead_kb=512"]);
        assert!((1024 / 128..=1024 / 128 + 3).contains(&big), "{profile}: {big} windows of up to 128 pages");
        assert_eq!(hist.last(), Some(&(128, 1024 / 128 - 1)), "{profile}: after the ramp-up, 128-page windows");
    }
    // A 1 MiB read is larger than ra_pages (32). Since 4.10 readahead may then read up to
    // the bdi's io_pages (max_sectors_kb / 4) at once; 2.6 stays at ra_pages.
    let oversize = |profile: &str, max_sectors_kb: u32| {
        windows(profile, &["task.0.step.0.record=1MB", &format!("device.d.max_sectors_kb={max_sectors_kb}")])
    };
    assert_eq!(oversize("linux-6.6", 128).0, 1024 / 32, "io_pages 32: no larger than ra_pages");
    assert_eq!(oversize("linux-6.6", 512), (1024 / 128, vec![(128, 1024 / 128)]), "io_pages 128: 128-page windows");
    assert_eq!(oversize("linux-2.6.23", 512), oversize("linux-2.6.23", 128), "2.6 has no io_pages");
}

#[test]
fn a_second_pass_hits_the_cache_and_activates_the_pages() {
    let r = run(&scenario("", &format!("{SEQ_READ}{SEQ_READ}")), &[]);
    assert_eq!(r.counter(Counter::PgpgIn), 4096, "the second pass reads nothing from the device");
    assert_eq!(r.counter(Counter::FileReadPages), 2048);
    // folio_mark_accessed: referenced on the first read, active on the second.
    assert_eq!(r.gauge(Gauge::NrActiveFile).unwrap(), 1024);
    assert_eq!(r.counter(Counter::PgActivate), 1024);
}

#[test]
fn a_read_of_the_page_the_previous_read_ended_in_does_not_mark_it_accessed_again() {
    // Two passes of 4 KiB reads. Over a one-page file the second read starts in the page
    // the first ended in (filemap_read's pos_same_folio): the page stays inactive, only
    // referenced. Over two pages every read starts in another page, so each page is
    // marked twice and activated.
    let passes = "[[task.step]]\nfile = \"f\"\nop = \"read\"\npattern = \"seq\"\nrecord = \"4KB\"\npasses = 2\n";
    let one = run(&scenario("", passes), &["file.f.size=4KB"]);
    assert_eq!(one.counter(Counter::FileReadPages), 2);
    assert_eq!((one.counter(Counter::PgActivate), one.gauge(Gauge::NrInactiveFile).unwrap()), (0, 1));
    let two = run(&scenario("", passes), &["file.f.size=8KB"]);
    assert_eq!(two.counter(Counter::FileReadPages), 4);
    assert_eq!((two.counter(Counter::PgActivate), two.gauge(Gauge::NrActiveFile).unwrap()), (2, 2));
}

#[test]
fn clean_file_pages_are_reclaimed_without_io_and_refault_with_workingset_detection() {
    // A 96 MiB file read twice through 56 MiB of page cache.
    let big = |profile: &str| {
        run(
            &scenario("", &format!("{SEQ_READ}{SEQ_READ}")),
            &["file.f.size=96MB", &format!("kernel.profile={profile}")],
        )
    };
    let r = big("linux-6.6");
    assert!(r.counter(Counter::PgStealFile) > 10_000, "pgsteal_file {}", r.counter(Counter::PgStealFile));
    assert_eq!(r.counter(Counter::PgpgOut), 0, "clean pages are dropped, not written");
    assert_eq!(r.counter(Counter::PgStealAnon), 0);
    assert_eq!(r.counter(Counter::PgpgIn), 2 * 96 * 1024, "the second pass misses: LRU order evicts the start first");
    let refaults = r.counter(Counter::WorkingsetRefaultFile);
    assert!(refaults > 20_000, "second-pass misses find shadow entries: {refaults}");
    // 3.14 has no workingset detection: no shadows, no refaults.
    let old = big("linux-3.14");
    assert_eq!(old.counter(Counter::WorkingsetRefaultFile), 0);
    assert!(old.counter(Counter::PgStealFile) > 10_000);
}

#[test]
fn mmap_faults_read_around_unless_madv_random() {
    let touch = r#"
[[task.step]]
region = "m"
pattern = "seq"
op = "read"
"#;
    let region = |madvise: &str| format!("[region.m]\nkind = \"file\"\nfile = \"f\"\nmadvise = \"{madvise}\"\n");
    for profile in ["linux-2.6.23", "linux-3.14", "linux-6.6"] {
        let seq = run(&scenario(&region("normal"), touch), &[&format!("kernel.profile={profile}")]);
        assert_eq!(seq.counter(Counter::PgpgIn), 4096, "{profile}");
        let maj = seq.counter(Counter::PgMajFault);
        assert!((1..=1024 / 16).contains(&maj), "{profile}: read-around: {maj} major faults for 1024 pages");
        let rnd = run(&scenario(&region("random"), touch), &[&format!("kernel.profile={profile}")]);
        assert_eq!(rnd.counter(Counter::PgMajFault), 1024, "{profile}: MADV_RANDOM reads each page alone");
        assert_eq!(rnd.counter(Counter::FileReadSingle), 1024, "{profile}");
        // Fault-around (3.15+) maps 16 cached pages per fault; before, every page faults.
        let faults = rnd.counter(Counter::PgFault);
        if profile == "linux-6.6" {
            // Pages still being read or carrying PG_readahead are left to real faults.
            assert!(seq.counter(Counter::PgFault) <= 1024 / 8, "{profile}: {} faults", seq.counter(Counter::PgFault));
        } else {
            assert_eq!(faults, 1024, "{profile}");
            assert_eq!(seq.counter(Counter::PgFault), 1024, "{profile}");
        }
    }
}

#[test]
fn madv_willneed_reads_the_mapping_ahead() {
    let touch = "[[task.step]]\nregion = \"m\"\npattern = \"random\"\nop = \"read\"\naccesses = 200\n";
    let region = |madvise: &str| format!("[region.m]\nkind = \"file\"\nfile = \"f\"\nmadvise = \"{madvise}\"\n");
    // 2.6 reads the whole range (5.x+ caps a WILLNEED at max(io_pages, ra_pages) pages).
    let w = run(&scenario(&region("willneed"), touch), &["kernel.profile=linux-2.6.23"]);
    assert_eq!(w.counter(Counter::PgpgIn), 4096, "the whole file is read at the first fault");
    // The first fault finds its page in the cache (being read): no fault is major.
    assert_eq!(w.counter(Counter::PgMajFault), 0);
    let n = run(&scenario(&region("normal"), touch), &["kernel.profile=linux-2.6.23"]);
    assert!(
        n.counter(Counter::PgMajFault) > 10,
        "random faults without the hint miss: {}",
        n.counter(Counter::PgMajFault)
    );
}

#[test]
fn fadvise_and_madvise_sequential_and_random_change_readahead() {
    let counters = |profile: &str, fadvise: &str| {
        let r = run(
            &scenario("", SEQ_READ),
            &[&format!("kernel.profile={profile}"), &format!("task.0.step.0.fadvise={fadvise}")],
        );
        assert_eq!(r.counter(Counter::PgpgIn), 4096, "{profile} {fadvise}: each page read once");
        (r.counter(Counter::FileRaWindows), r.counter(Counter::FileReadSingle))
    };
    for profile in ["linux-2.6.20", "linux-2.6.23", "linux-6.6"] {
        // POSIX_FADV_SEQUENTIAL doubles ra_pages: 64-page windows instead of 32.
        assert_eq!(counters(profile, "normal"), (1024 / 32, 0), "{profile}");
        let (seq, single) = counters(profile, "sequential");
        assert!(seq <= 1024 / 64 + 2 && single == 0, "{profile}: {seq} windows");
        // POSIX_FADV_RANDOM: 2.6.2x sets ra_pages to 0 and reads page by page; since
        // 2.6.33 (FMODE_RANDOM) a read gets exactly what it asked for, 16 pages.
        let want = if profile == "linux-6.6" { (1024 / 16, 0) } else { (0, 1024) };
        assert_eq!(counters(profile, "random"), want, "{profile}");
    }
    // MADV_SEQUENTIAL on a mapping: 2.6.23's fault path reads ahead instead of around, so
    // one major fault starts the stream and the rest find their pages in the cache.
    let touch = "[[task.step]]\nregion = \"m\"\npattern = \"seq\"\nop = \"read\"\n";
    let region = |madvise: &str| format!("[region.m]\nkind = \"file\"\nfile = \"f\"\nmadvise = \"{madvise}\"\n");
    let majors = |madvise: &str| {
        run(&scenario(&region(madvise), touch), &["kernel.profile=linux-2.6.23"]).counter(Counter::PgMajFault)
    };
    let (normal, seq) = (majors("normal"), majors("sequential"));
    assert!(normal >= 1024 / 32 && seq <= 2, "major faults: read-around {normal}, MADV_SEQUENTIAL {seq}");
}

#[test]
fn a_rate_paces_the_reader() {
    let paced = SEQ_READ.replace("record = \"64KB\"", "record = \"4KB\"\nrate = \"1MB\"");
    let r = run(&scenario("", &paced), &[]);
    let s = &r.tasks[0].steps[0];
    let secs = (s.end_ns.unwrap() - s.start_ns) as f64 / 1e9;
    // 4 MiB at 1 MiB/s: the last 4 KiB is due at 4 s.
    assert!((3.99..4.01).contains(&secs), "{secs} s");
    assert!(r.elapsed_ns >= 3_990_000_000);
}

/// A 64 KiB file read in 4 KiB records at 16 KiB/s (one record every 0.25 s) whose first
/// read waits 1 s for the device: POSIX_FADV_WILLNEED at open sends the whole file as one
/// request to a RAM disk that takes 1 s per request, and every later record is cached.
fn paced_after_a_slow_first_read(pace: &str) -> f64 {
    let text = format!(
        r#"
[machine]
ram = "64MB"
kernel_reserved = "8MB"
[device.d]
model = "ram"
request_ns = "1s"
[file.f]
device = "d"
size = "64KB"
[[task]]
name = "t"
[[task.step]]
file = "f"
op = "read"
pattern = "seq"
record = "4KB"
rate = "16KB"
fadvise = "willneed"
{pace}
"#
    );
    let r = run(&text, &["kernel.profile=linux-2.6.23"]);
    assert_eq!(r.devices[0].reads, 1, "the whole file in one request");
    let s = &r.tasks[0].steps[0];
    assert_eq!(s.ops, 16);
    (s.end_ns.unwrap() - s.start_ns) as f64 / 1e9
}

#[test]
fn catch_up_pacing_makes_up_for_a_slow_read_and_steady_pacing_does_not() {
    // Catch-up (the default): records 1-3 were due at 0.25-0.75 s and are read back to
    // back when the first ends at 1 s; record n is then due at n x 0.25 s, the last one's
    // interval ends at 4 s, as if nothing had been slow.
    let catch_up = paced_after_a_slow_first_read("");
    assert!((3.99..4.01).contains(&catch_up), "{catch_up} s");
    assert_eq!(catch_up, paced_after_a_slow_first_read("pace = \"catch-up\""));
    // Steady: the second record starts when the first ends (1 s), each later one 0.25 s
    // after the one before: the 16th starts at 4.5 s and its interval ends at 4.75 s.
    let steady = paced_after_a_slow_first_read("pace = \"steady\"");
    assert!((4.74..4.76).contains(&steady), "{steady} s");
}

#[test]
fn pace_without_a_rate_is_an_error_naming_the_key() {
    let text = scenario("", &SEQ_READ.replace("record = \"64KB\"", "pace = \"steady\""));
    let e = Scenario::from_toml(&text, "t.toml", &[]).expect_err("pace needs a rate").0;
    assert!(e.contains("pace") && e.contains("rate"), "{e}");
    let text = scenario("", &SEQ_READ.replace("record = \"64KB\"", "rate = \"1MB\"\npace = \"fast\""));
    let e = Scenario::from_toml(&text, "t.toml", &[]).expect_err("unknown pace").0;
    assert!(e.contains("pace") && e.contains("steady"), "{e}");
}

#[test]
fn per_task_files_get_their_own_extents_and_must_fit_the_device() {
    let text = scenario("", SEQ_READ)
        .replace("size = \"4MB\"", "size = \"4MB\"\nper_task = true")
        .replace("name = \"t\"", "name = \"t\"\ncount = 3");
    let sc = Scenario::from_toml(&text, "t.toml", &[]).unwrap();
    let sim = Sim::new(&sc, 1);
    assert_eq!(sim.pc.files.len(), 3);
    let offs: Vec<u64> = sim.pc.files.iter().map(|f| f.dev_offset).collect();
    assert_eq!(offs, [0, 4 << 20, 8 << 20]);
    let r = run(&text, &[]);
    assert_eq!(r.counter(Counter::PgpgIn), 3 * 4096, "three files, each read once");
    // The third copy does not fit: the resolution (what `pagesim check` runs) says so.
    let e = Scenario::from_toml(&text, "t.toml", &["device.d.capacity=\"10MB\"".into()])
        .expect_err("12 MB of files do not fit in 10 MB")
        .0;
    assert!(e.starts_with("t.toml: file.f: ") && e.contains("device \"d\" holds 10485760 bytes"), "{e}");
}

#[test]
fn a_timeline_samples_reads_and_device_io() {
    let paced = SEQ_READ.replace("record = \"64KB\"", "record = \"4KB\"\nrate = \"1MB\"");
    let text = format!("sample_interval = \"1s\"\n{}", scenario("", &paced));
    let r = run(&text, &[]);
    let t: Vec<u64> = r.timeline.iter().map(|s| s.t_ns / 1_000_000_000).collect();
    assert_eq!(t, [1, 2, 3, 4], "the last read is due at 4 s");
    for s in &r.timeline[..3] {
        // 1 MiB/s of 4 KiB reads, give or take the page in flight at the boundary.
        assert!((255 * 4096..=257 * 4096).contains(&s.read_bytes), "{s:?}");
        assert!(s.dev_reads > 0 && s.avg_read_bytes().unwrap() >= 4096);
    }
}

#[test]
fn file_scenario_errors_name_the_key() {
    let bad = |extra: &str, steps: &str, want: &[&str]| {
        let e = Scenario::from_toml(&scenario(extra, steps), "t.toml", &[]).unwrap_err().0;
        for w in want {
            assert!(e.contains(w), "{e} lacks {w}");
        }
    };
    bad("", &SEQ_READ.replace("op = \"read\"\n", ""), &["task[0].step[0].op", "names its call"]);
    bad("", &SEQ_READ.replace("\"64KB\"", "\"6KB\""), &["task[0].step[0].record", "multiple of 4 KiB"]);
    bad("", &SEQ_READ.replace("file = \"f\"", "file = \"g\""), &["task[0].step[0].file", "no file named \"g\""]);
    bad("[region.m]\nkind = \"file\"\n", SEQ_READ, &["region.m.file"]);
    bad("[region.m]\nkind = \"anon\"\nsize = \"1MB\"\nfile = \"f\"\n", SEQ_READ, &["region.m.file", "only a kind"]);
    bad(
        "",
        "[[task.step]]\nregion = \"m\"\nfile = \"f\"\npattern = \"seq\"\nop = \"read\"\n",
        &["task[0].step[0]", "not both"],
    );
    bad(
        "[region.m]\nkind = \"file\"\nfile = \"f\"\n",
        "[[task.step]]\nregion = \"m\"\npattern = \"seq\"\n",
        &["task[0].step[0].op", "read-only"],
    );
    bad("", &SEQ_READ.replace("pattern = \"seq\"", "pattern = \"seq\"\ncluster = \"1MB\""), &["cluster", "zipf"]);
    let e = Scenario::from_toml(&scenario("", SEQ_READ), "t.toml", &["file.f.device=\"x\"".into()]).unwrap_err().0;
    assert!(e.contains("file.f.device") && e.contains("no device named \"x\""), "{e}");
}

#[test]
fn file_runs_are_deterministic() {
    let text = scenario(
        "",
        r#"
[[task.step]]
file = "f"
op = "pread"
pattern = "zipf"
cluster = "256KB"
then_next = 0.3
record = "16KB"
accesses = 2000
"#,
    )
    .replace("name = \"t\"", "name = \"t\"\ncount = 3");
    let a = run(&text, &["file.f.size=32MB", "machine.ram=32MB"]);
    let b = run(&text, &["file.f.size=32MB", "machine.ram=32MB"]);
    assert_eq!(a.counters, b.counters);
    assert_eq!(a.elapsed_ns, b.elapsed_ns);
    assert!(a.counter(Counter::PgStealFile) > 0, "the run was under memory pressure");
}

#[test]
fn before_2_6_24_a_read_decides_on_a_copy_of_the_shared_readahead_state() {
    // Two threads reading one open file (shared_fd). Thread 0's read starts its readahead
    // and sleeps on the first page. Up to 2.6.23, do_generic_mapping_read worked on a copy
    // (`ra = *_ra`) and stored it back on return (`*_ra = ra`): the file's state is still
    // what thread 1's read will start from. 2.6.24 on, the read updates it in place.
    let text = scenario(
        "",
        "count = 2\n[[task.step]]\nfile = \"f\"\nop = \"read\"\npattern = \"seq\"\nrecord = \"16KB\"\nshared_fd = true\n",
    )
    // A slow read (a synchronous device such as brd would read in the submitter: no sleep).
    .replace("model = \"nvme\"", "model = \"nvme\"\nread_latency = \"1s\"");
    for (profile, copy) in [("linux-2.6.20", true), ("linux-2.6.23", true), ("linux-6.6", false)] {
        let sc = Scenario::from_toml(&text, "t.toml", &[format!("kernel.profile={profile}")]).unwrap();
        let mut sim = Sim::new(&sc, 1);
        let target = sim.sched.tasks[0].targets[0];
        assert_eq!(target, sim.sched.tasks[1].targets[0], "one open file");
        let crate::engine::StepTarget::File { ra, .. } = target else { panic!("a file step") };
        let before = sim.pc.ra_states[ra as usize];
        sim.file_read_begin(crate::ids::Tid(0), crate::ids::FileId(0), ra, 0, 4);
        assert!(matches!(sim.file_read_step(crate::ids::Tid(0), 0, u64::MAX), crate::pagecache::ReadStep::Blocked));
        assert!(sim.pc.files[0].nrpages >= 4, "{profile}: the first window was submitted");
        let shared = sim.pc.ra_states[ra as usize];
        assert_eq!(shared == before, copy, "{profile}: the open file's state while the read sleeps");
        if copy {
            let work = sim.pc.ra_states[sim.pc.ra_read_copies as usize]; // task 0's copy
            assert_ne!(work, before, "{profile}: the read's own copy holds the new window");
        }
    }
}

/// The xarray nodes the shadow-node shrinker sees (`AddressSpace::xa_*`): a leaf holds
/// only shadows once its last page is evicted; a folio of order 6 or more lives in the
/// level-1 node, so its shadow makes no leaf, and a level-1 node all of whose slots are
/// such shadows holds only shadows itself; a small folio read into a large shadow splits
/// it into full leaves, all but its own holding only shadows; dropping a node drops its
/// shadows, so the next read there finds none.
#[test]
fn shadow_only_nodes_follow_the_xarray_levels() {
    use crate::ids::{DevId, Pfn};
    use crate::mm::shadow::Shadow;
    use crate::pagecache::AddressSpace;
    let sh = Shadow { memcg: 1, age: 7, workingset: false };
    let mut a = AddressSpace::new("f".into(), DevId(0), 0, 8192, 8192);
    // Two order-0 pages in leaf 0: evicting one leaves a mixed leaf, the other a shadow-only one.
    a.insert_folio(0, 1, Pfn(10), 1);
    a.insert_folio(1, 1, Pfn(11), 1);
    a.delete_folio(0, 1, Pfn(10), Some(sh));
    assert!(!a.xa_leaf_shadow_only(0));
    a.delete_folio(1, 1, Pfn(11), Some(sh));
    assert!(a.xa_leaf_shadow_only(0));
    assert!(!a.xa_upper_shadow_only(0), "leaf 0 hangs below level-1 node 0");
    // An order-9 folio at 4096 (level-1 node 1, eight slots) and its shadow: no leaf.
    a.insert_folio(4096, 512, Pfn(512), 1);
    assert!(!a.xa_upper_shadow_only(1), "a folio in it");
    a.delete_folio(4096, 512, Pfn(512), Some(sh));
    assert!((64..72).all(|b| !a.xa_leaf_shadow_only(b)), "no leaf under a large entry");
    assert!(a.xa_upper_shadow_only(1), "level-1 node 1 holds one large shadow and nothing else");
    // A page read into it splits the shadow into eight full leaves: seven hold only shadows.
    let (shadow, blocks) = a.insert_folio(4100, 1, Pfn(600), 1);
    assert_eq!(shadow, Some(sh));
    assert_eq!(blocks, 64..72, "the whole large entry's leaves changed");
    assert!(!a.xa_upper_shadow_only(1), "leaves below it now");
    assert_eq!((64..72).filter(|&b| a.xa_leaf_shadow_only(b)).count(), 7);
    assert!(a.verify_xa(false).is_ok());
    // Dropping leaf 65 drops its 64 shadows: a read there is no refault.
    a.xa_drop_node(0, 65);
    assert!(!a.xa_leaf_shadow_only(65));
    let (shadow, _) = a.insert_folio(65 * 64, 1, Pfn(700), 1);
    assert_eq!(shadow, None);
    let (shadow, _) = a.insert_folio(66 * 64, 1, Pfn(701), 1);
    assert_eq!(shadow, Some(sh), "leaf 66 kept its shadows");
    assert!(a.verify_xa(false).is_ok());
}
