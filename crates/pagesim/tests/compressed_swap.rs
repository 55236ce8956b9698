//! Behaviour of compressed swap (zswap in front of a disk, swap on zram): what the modelled
//! mechanisms must produce in a small thrashing run. Debug builds run the invariant checker
//! (frames, swap map, zswap entries, zsmalloc frames) along the way.

mod common;

use common::{run, step};
use pagesim::{run_toml, Counter, Gauge, Report, RunOptions};

/// 36 MB of RAM (32 MB managed), a 40 MB anon region written in `passes` sequential passes,
/// swap on `dev`; `extra` is added (the zswap table).
fn scenario(dev: &str, passes: u64, extra: &str) -> String {
    common::scenario(36, dev, 64, "anon", 40, &step("seq", passes, "write"), extra)
}

/// The run stopped 5 ms before its last process exits (more than a time slice: the last
/// burst runs to its end): the memory state while the task still holds it (at its exit
/// everything private goes).
fn run_to_exit(text: &str, sets: &[&str]) -> Report {
    let end = run(text, sets).elapsed_ns;
    let mut sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    sets.push(format!("time_limit=\"{}us\"", end / 1_000 - 5_000));
    run_toml(text, "test.toml", RunOptions { sets, ..Default::default() }).unwrap()
}

fn err(text: &str, sets: &[&str]) -> String {
    let opts = RunOptions { sets: sets.iter().map(|s| s.to_string()).collect(), ..Default::default() };
    run_toml(text, "test.toml", opts).expect_err("the scenario must be refused").0
}

const ZSWAP: &str = "[zswap]\nenabled = true\n";

#[test]
fn zswap_in_front_of_a_disk_replaces_most_swap_io_with_compression() {
    let s = scenario("hdd", 3, ZSWAP);
    let with = run_to_exit(&s, &[]);
    let without = run_to_exit(&s, &["zswap.enabled=false"]);
    assert!(with.counter(Counter::Zswpout) > 10_000, "zswpout {}", with.counter(Counter::Zswpout));
    assert!(with.counter(Counter::Zswpin) > 5_000, "zswpin {}", with.counter(Counter::Zswpin));
    assert!(
        with.counter(Counter::PswpOut) * 20 < without.counter(Counter::PswpOut),
        "pswpout with zswap {} vs without {}",
        with.counter(Counter::PswpOut),
        without.counter(Counter::PswpOut)
    );
    // Word pages compress to 44 bytes: the pool never fills, nothing is written back.
    assert_eq!(with.counter(Counter::Zswpwb), 0);
    assert_eq!(with.gauge(Gauge::ZswapWrittenBackPages).unwrap(), 0);
    assert!(
        with.elapsed_ns * 5 < without.elapsed_ns,
        "elapsed with zswap {} ms, without {} ms",
        with.elapsed_ns / 1_000_000,
        without.elapsed_ns / 1_000_000
    );
    // Stores and loads do no block I/O at all.
    assert_eq!(with.counter(Counter::PswpIn), 0);
    assert_eq!(with.devices[0].reads + with.devices[0].writes, 0);
    assert!(with.gauge(Gauge::ZswapStoredPages).unwrap() > 0 && with.gauge(Gauge::NrZspages).unwrap() > 0);
}

#[test]
fn a_full_pool_sends_pages_to_the_disk_and_the_worker_writes_old_entries_back() {
    // Program-like data (ratio 2.6): the pool reaches 10% of RAM, stores are refused until it
    // is back under 90% of that, and the shrink worker writes the oldest entries back.
    let s = scenario("sata-ssd", 4, &format!("{ZSWAP}max_pool_percent = 10\n"));
    let r = run(&s, &["region.buf.compress_ratio=2.6", "region.buf.compress_sigma=0.3"]);
    assert!(r.gauge(Gauge::ZswapPoolLimitHit).unwrap() > 0);
    assert!(r.counter(Counter::Zswpwb) > 0, "no writeback");
    assert_eq!(r.counter(Counter::Zswpwb), r.gauge(Gauge::ZswapWrittenBackPages).unwrap());
    // pswpout counts the refused stores and the written-back entries; zswpout the others.
    assert!(r.counter(Counter::PswpOut) >= r.counter(Counter::Zswpwb));
    assert!(r.counter(Counter::Zswpout) > 0);
    let max_pool = 32 * 256 / 10;
    assert!(
        r.gauge(Gauge::ZswapPoolTotalSize).unwrap() / 4096 <= max_pool,
        "pool {} pages over its limit {max_pool}",
        r.gauge(Gauge::ZswapPoolTotalSize).unwrap() / 4096
    );
}

#[test]
fn swap_on_zram_skips_the_swap_cache_and_readahead() {
    let s = scenario("zram", 3, "");
    let r = run_to_exit(&s, &[]);
    assert!(r.counter(Counter::PswpIn) > 10_000);
    assert_eq!(r.counter(Counter::SwapRa), 0);
    assert_eq!(r.counter(Counter::SwapRaHit), 0);
    assert_eq!(r.counter(Counter::PgMajFault), r.counter(Counter::PswpIn), "every swap-in a synchronous major fault");
    assert_eq!(r.gauge(Gauge::NrSwapCached).unwrap(), 0);
    // A slot read back is freed: the page is compressed again when it is next reclaimed.
    assert!(r.counter(Counter::PswpOut) > r.counter(Counter::PswpIn));
    assert!(r.gauge(Gauge::ZramOrigDataSize).unwrap() / 4096 <= r.gauge(Gauge::NrSwapUsed).unwrap());
    // 3.14 predates SWP_SYNCHRONOUS_IO: readahead through the swap cache.
    let old = run(&s, &["kernel.profile=linux-3.14"]);
    assert!(old.counter(Counter::SwapRa) > 0);
}

#[test]
fn the_zram_pool_takes_memory_from_the_task() {
    let s = scenario("zram", 2, "");
    let words = run_to_exit(&s, &[]);
    let data = run_to_exit(&s, &["region.buf.compress_ratio=2"]);
    let managed = 32 * 256;
    for r in [&words, &data] {
        // Every frame is free, on an LRU list, or a zsmalloc page.
        let used = r.gauge(Gauge::NrFreePages).unwrap()
            + r.gauge(Gauge::NrInactiveAnon).unwrap()
            + r.gauge(Gauge::NrActiveAnon).unwrap()
            + r.gauge(Gauge::NrZspages).unwrap();
        assert_eq!(used, managed);
        assert_eq!(r.gauge(Gauge::NrZspages).unwrap() * 4096, r.gauge(Gauge::ZramMemUsedTotal).unwrap());
    }
    // Half-size objects: the pool holds about half a page per stored page.
    let stored = data.gauge(Gauge::ZramOrigDataSize).unwrap() / 4096;
    let pool = data.gauge(Gauge::NrZspages).unwrap();
    assert!(pool * 100 >= stored * 48 && pool * 100 <= stored * 56, "pool {pool} pages for {stored} stored");
    assert!(
        words.gauge(Gauge::NrZspages).unwrap() * 30 < stored,
        "word pages take almost nothing: {} pool pages, {stored} stored with data",
        words.gauge(Gauge::NrZspages).unwrap()
    );
    let resident = |r: &Report| r.gauge(Gauge::NrInactiveAnon).unwrap() + r.gauge(Gauge::NrActiveAnon).unwrap();
    assert!(
        resident(&data) + pool / 2 < resident(&words),
        "the pool's {pool} pages come out of the task's memory: resident {} vs {}",
        resident(&data),
        resident(&words)
    );
}

#[test]
fn same_scenario_same_numbers_with_compressed_swap() {
    let content = [
        "kernel.profile=linux-6.18",
        "region.buf.compress_ratio=2.4",
        "region.buf.compress_sigma=0.6",
        "region.buf.incompressible_percent=5",
        "region.buf.zero_percent=10",
    ];
    for dev in ["zram", "sata-ssd"] {
        let s = scenario(dev, 3, &format!("{ZSWAP}max_pool_percent = 8\n"));
        let a = run(&s, &content);
        let b = run(&s, &content);
        assert_eq!(a.to_json(), b.to_json(), "{dev}: two runs of one scenario and seed differ");
        assert!(a.counter(Counter::SwpoutZero) > 0, "{dev}: zero pages reach the zeromap");
        let mut other = content.to_vec();
        other.push("seed=2");
        assert_ne!(run(&s, &other).counters, a.counters, "{dev}: the seed draws the page contents");
    }
}

#[test]
fn bad_compressed_swap_settings_are_refused_naming_the_key() {
    let s = scenario("sata-ssd", 1, ZSWAP);
    let e = err(&s, &["zswap.compressor=snappy"]);
    assert!(e.contains("zswap.compressor") && e.contains("lzo"), "{e}");
    let e = err(&s, &["kernel.profile=linux-3.6"]);
    assert!(e.contains("zswap.enabled") && e.contains("linux-3.6 has no zswap (it came with 3.11)"), "{e}");
    let e = err(&s, &["zswap.shrinker_enabled=true"]);
    assert!(e.contains("zswap.shrinker_enabled"), "{e}");
    let e = err(&s, &["zswap.max_pool_percent=101"]);
    assert!(e.contains("zswap.max_pool_percent"), "{e}");
    let e = err(&s, &["region.buf.compress_ratio=0.5"]);
    assert!(e.contains("region.buf.compress_ratio"), "{e}");
    let e = err(&s, &["region.buf.zero_percent=60", "region.buf.incompressible_percent=50"]);
    assert!(e.contains("region.buf"), "{e}");
    let e = err(&scenario("zram", 1, ""), &["device.d.comp_algorithm=snappy"]);
    assert!(e.contains("device.d") && e.contains("comp_algorithm"), "{e}");
    let e = err(&s, &["zswap.warp=1"]);
    assert!(e.contains("warp"), "{e}");
}

#[test]
fn the_example_scenarios_run_and_show_what_they_describe() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let small = ["machine.ram=64MB", "region.buf.size=80MB"];
    let opts = || RunOptions { sets: small.iter().map(|s| s.to_string()).collect(), ..Default::default() };
    let z = pagesim::run_file(&dir.join("zswap.toml"), opts()).unwrap_or_else(|e| panic!("{e}"));
    assert!(z.counter(Counter::Zswpout) > 0 && z.counter(Counter::Zswpin) > 0);
    assert_eq!(z.counter(Counter::PswpOut), 0, "word pages all fit in the pool");
    let r = pagesim::run_file(&dir.join("zram.toml"), opts()).unwrap_or_else(|e| panic!("{e}"));
    assert!(r.counter(Counter::PswpOut) > 0 && r.counter(Counter::PswpIn) > 0);
    assert_eq!(r.counter(Counter::SwapRa), 0);
    // The task has exited: its slots, and the zram objects in them, are freed, but for
    // the slots the per-CPU slots caches (6.6) still hold for their next batch free: at
    // most 64 per CPU, whose objects zsmalloc packs into a few pages.
    let left = r.gauge(Gauge::ZramMemUsedTotal).unwrap();
    assert!(left <= 2 * 64 * 4096 / 2, "zram still holds {left} bytes");
    let r = pagesim::run_file(
        &dir.join("zram.toml"),
        RunOptions {
            sets: small.iter().map(|s| s.to_string()).chain(["kernel.profile=linux-6.18".to_string()]).collect(),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(r.gauge(Gauge::ZramMemUsedTotal).unwrap(), 0, "6.18 frees each slot at once");
}

#[test]
fn describe_lists_the_new_keys() {
    let keys: Vec<String> = pagesim::scenario::describe().into_iter().map(|t| t.key).collect();
    for k in [
        "zswap.enabled",
        "zswap.max_pool_percent",
        "zswap.compressor",
        "zswap.accept_threshold_percent",
        "zswap.shrinker_enabled",
        "region.NAME.compress_ratio",
        "region.NAME.zero_percent",
        "device.<zram>.comp_algorithm",
        "device.<zram>.mem_limit",
    ] {
        assert!(keys.iter().any(|x| x == k), "describe lacks {k}");
    }
}
