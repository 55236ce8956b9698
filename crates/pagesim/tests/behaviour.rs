//! Behaviour tests: each runs a small scenario and asserts what the modelled mechanism
//! must produce. Debug test builds also run the invariant checker as they go (after every
//! event on the smallest machines, every hundred or so events on these).

mod common;

use common::{run, scenario, step};
use pagesim::{Counter, Report};

/// Usable pages of a `ram_mb` machine with 4 MiB reserved.
fn managed(ram_mb: u64) -> u64 {
    (ram_mb - 4) * 256
}

#[test]
fn same_scenario_same_counters() {
    let s = scenario(36, "sata-ssd", 64, "anon", 40, &step("random", 2, "write"), "");
    let a = run(&s, &[]);
    let b = run(&s, &[]);
    assert_eq!(a.to_json(), b.to_json(), "two runs of one scenario and seed differ");
    let c = run(&s, &["seed=2"]);
    assert_ne!(a.counters, c.counters, "the seed must matter for a random workload");
}

#[test]
fn every_registered_policy_device_model_and_scheduler_runs() {
    // The registries are the test matrix: a policy, model or scheduler added to one runs here.
    let s = scenario(36, "sata-ssd", 64, "anon", 40, &step("seq", 2, "write"), "");
    for r in pagesim::scenario::registries() {
        for e in &r.entries {
            let set = format!("{}={}", r.scenario_key.replace("NAME", "d"), e.name);
            let report = run(&s, &[&set]);
            assert!(report.counter(Counter::PswpOut) > 0, "{set}: no swap-out");
        }
    }
}

#[test]
fn cyclic_scan_of_more_than_memory_faults_on_every_access_without_workingset_protection() {
    // 10% more than memory, no readahead. On 3.14 (no anon workingset detection) the
    // two-list LRU evicts each page before the scan comes back to it: after the first pass
    // most accesses fault, mostly as a major fault (swap-in), the rest as a minor fault on
    // a page that reclaim has already written out but not yet freed. (Such a write fault
    // frees the swap copy, reuse_swap_page, so the page is not written a second time and
    // fewer pages sit written-but-not-freed than if it kept its slot.)
    let region_mb = managed(36) * 11 / 10 / 256;
    let s = scenario(36, "sata-ssd", 64, "anon", region_mb, &step("seq", 4, "write"), "");
    let old = run(&s, &["vm.page-cluster=0", "kernel.profile=linux-3.14"]);
    let pages = region_mb * 256;
    let later = old.counter(Counter::PgFault) - pages;
    assert!(later >= 3 * pages * 70 / 100, "faults after the first pass {later} of {} accesses", 3 * pages);
    let maj = old.counter(Counter::PgMajFault);
    assert!(maj >= 3 * pages * 40 / 100, "major faults {maj}");
    assert_eq!(old.counter(Counter::PswpIn), maj, "without readahead every swap-in is a major fault");
    assert_eq!(old.counter(Counter::SwapRa), 0);
    // 6.6 activates refaulting pages whose refault distance (about the 10% overshoot) fits
    // in the workingset: part of the loop stays resident, and the faults after the first
    // pass, major and minor, drop. (How 3.14's split between the two falls depends on how
    // many written pages wait unfreed, which moves with reclaim's timing: 15881 major of
    // 23850 before threads kept their CPU, 12834 of 22573 after.)
    let new = run(&s, &["vm.page-cluster=0"]);
    assert!(new.counter(Counter::WorkingsetActivateAnon) > 0);
    let new_later = new.counter(Counter::PgFault) - pages;
    assert!(new_later < later * 9 / 10, "faults after the first pass: 6.6 {new_later} vs 3.14 {later}");
    let new_maj = new.counter(Counter::PgMajFault);
    assert!(new_maj < maj * 9 / 10, "major faults: 6.6 {new_maj} vs 3.14 {maj}");
}

#[test]
fn vma_readahead_serves_seven_of_eight_sequential_swapins() {
    let s = scenario(36, "sata-ssd", 64, "anon", 40, &step("seq", 4, "write"), "");
    let r = run(&s, &[]);
    let (pswpin, hits) = (r.counter(Counter::PswpIn), r.counter(Counter::SwapRaHit));
    let ratio = hits as f64 / pswpin as f64;
    assert!((0.80..0.90).contains(&ratio), "swap_ra_hit/pswpin = {ratio:.3} ({hits}/{pswpin}), expected about 7/8");
    // Readahead turns most swap-ins into minor faults.
    assert!(
        r.counter(Counter::PgMajFault) * 6 < pswpin,
        "{} major faults for {pswpin} pages read",
        r.counter(Counter::PgMajFault)
    );
}

#[test]
fn random_touches_of_twice_memory_fault_half_the_time_and_readahead_turns_off() {
    let m = managed(36);
    let region_mb = 2 * m / 256;
    let pages = region_mb * 256;
    // One sequential pass populates every page (half end up in swap), then random passes.
    let steps = format!("{}{}", step("seq", 1, "write"), step("random", 4, "write"));
    let s = scenario(36, "sata-ssd", 128, "anon", region_mb, &steps, "");
    let r = run(&s, &[]);
    let maj = r.counter(Counter::PgMajFault) as f64 / (4 * pages) as f64;
    assert!((0.45..0.60).contains(&maj), "major faults per random access {maj:.3}, expected about one half");
    let ra = r.counter(Counter::SwapRa) as f64 / r.counter(Counter::PswpIn) as f64;
    assert!(ra < 0.1, "readahead should have turned itself off: swap_ra/pswpin = {ra:.3}");
}

#[test]
fn blind_cluster_readahead_keeps_reading_on_random_faults() {
    let m = managed(36);
    let region_mb = 2 * m / 256;
    let s = scenario(36, "sata-ssd", 128, "anon", region_mb, &step("random", 3, "write"), "");
    let blind = run(&s, &["kernel.swap_readahead=cluster"]);
    let adaptive = run(&s, &["kernel.swap_readahead=adaptive"]);
    let per_fault = |r: &Report| r.counter(Counter::PswpIn) as f64 / r.counter(Counter::PgMajFault) as f64;
    assert!(per_fault(&blind) > 4.0, "blind cluster reads about 8 slots per fault: {:.2}", per_fault(&blind));
    assert!(per_fault(&adaptive) < 1.5, "adaptive narrows to 1: {:.2}", per_fault(&adaptive));
    assert!(blind.elapsed_ns > adaptive.elapsed_ns, "wasted readahead must cost time on the SSD");
}

#[test]
fn clean_swap_cache_pages_are_dropped_without_rewriting() {
    // One write pass, then read passes: pages swapped in by reads stay in the swap cache
    // (swap is far from full), so evicting them again needs no write.
    let steps = format!("{}{}", step("seq", 1, "write"), step("seq", 3, "read"));
    let s = scenario(36, "sata-ssd", 256, "anon", 40, &steps, "");
    let r = run(&s, &["vm.page-cluster=0"]);
    let pages = 40 * 256;
    let pswpout = r.counter(Counter::PswpOut);
    assert!(r.counter(Counter::PswpIn) >= pages / 2, "read passes swap in: {}", r.counter(Counter::PswpIn));
    assert!(pswpout <= pages, "each page is written once at most: pswpout {pswpout} for {pages} pages");
    // With writes instead, every eviction is a rewrite.
    let s = scenario(36, "sata-ssd", 256, "anon", 40, &step("seq", 4, "write"), "");
    let w = run(&s, &["vm.page-cluster=0"]);
    assert!(
        w.counter(Counter::PswpOut) > pages && w.counter(Counter::PswpOut) >= w.counter(Counter::PswpIn),
        "rewrites: pswpout {}",
        w.counter(Counter::PswpOut)
    );
}

#[test]
fn reading_untouched_anon_memory_maps_the_zero_page() {
    let s = scenario(36, "sata-ssd", 64, "anon", 100, &step("seq", 2, "read"), "");
    let r = run(&s, &[]);
    assert_eq!(r.counter(Counter::PgFault), 100 * 256, "one fault per page on the first pass only");
    assert_eq!(r.counter(Counter::PgAlloc), 0);
    assert_eq!(r.counter(Counter::PswpOut), 0);
}

#[test]
fn shmem_swaps_through_the_cluster_path_and_drops_the_swap_copy() {
    let s = scenario(36, "sata-ssd", 64, "shmem", 40, &step("seq", 4, "write"), "");
    let r = run(&s, &[]);
    assert!(
        r.counter(Counter::PswpIn) > 40 * 256 / 2,
        "shmem pages come back from swap: {}",
        r.counter(Counter::PswpIn)
    );
    // Shmem has no page tables to walk: the VMA policy falls back to cluster readahead,
    // whose hits still count.
    assert!(r.counter(Counter::SwapRaHit) > r.counter(Counter::PswpIn) / 2);
    // shmem_swapin_folio frees the slot: nothing read back keeps its swap copy, so every
    // eviction is a write.
    assert!(r.counter(Counter::PswpOut) >= r.counter(Counter::PswpIn));
}

#[test]
fn memcg_limit_reclaim_counts_in_memcg_and_type_counters_only() {
    let extra = "[memcg.box]\nmax = \"20MB\"\n";
    let text = scenario(128, "sata-ssd", 64, "anon", 30, &step("seq", 3, "write"), extra)
        .replace("name = \"t\"", "name = \"t\"\nmemcg = \"box\"");
    let r = run(&text, &[]);
    assert_eq!(
        r.counter(Counter::PgScanKswapd) + r.counter(Counter::PgScanDirect),
        0,
        "limit reclaim is not global reclaim"
    );
    assert!(r.counter(Counter::PgScanAnon) > 0 && r.counter(Counter::PgStealAnon) > 0);
    let m = &r.memcg["box"];
    assert!(m["counters"]["pgscan_direct"].as_u64().unwrap() > 0, "memory.stat counts the memcg's reclaim");
    assert!(m["usage_bytes"].as_u64().unwrap() <= 20 << 20);
    assert!(r.counter(Counter::PswpOut) > 0);
}

#[test]
fn a_memcg_at_its_limit_reclaims_for_readahead_pages_too() {
    // 30 MB written, then read twice sequentially, in a 20 MB memcg, swap on a rotational
    // device (cluster readahead of 8). Every swap-in charges its readahead pages, and a
    // charge at the limit reclaims first: each major fault brings in a whole window, as the
    // host kernel does (validation/anon-seq-ro-*: pgmajfault = pswpin / 8). Readahead that
    // only took the room the target's reclaim left would read fewer pages per fault.
    let extra = "[memcg.box]\nmax = \"20MB\"\n";
    let steps = step("seq", 1, "write") + &step("seq", 2, "read");
    let text =
        scenario(128, "hdd", 64, "anon", 30, &steps, extra).replace("name = \"t\"", "name = \"t\"\nmemcg = \"box\"");
    let r = run(&text, &[]);
    let (maj, pswpin) = (r.counter(Counter::PgMajFault), r.counter(Counter::PswpIn));
    assert!(pswpin > 30 * 256, "most pages are read back in each pass: {pswpin}");
    // A few windows lose a page to the target's reclaim before it is used (the disk serves
    // a window's reads in its own order): allow 2% more faults than one per window.
    assert!(maj * 8 <= pswpin * 102 / 100, "about one major fault per 8 pages read: {maj} faults, {pswpin} pages");
    assert!(r.memcg["box"]["usage_bytes"].as_u64().unwrap() <= 20 << 20, "the limit holds");
}

#[test]
fn cgroup_v1_limit_reclaim_waits_for_writeback_instead_of_activating() {
    // A sequential read of swapped memory through a 20 MB memcg on a slow disk: reclaim
    // keeps meeting pages it has just written. On v2 (writeback_throttling_sane) it sets
    // PG_reclaim and activates them; on v1 it waits for their writeback and frees them
    // (shrink_folio_list case 3), so no page is activated and none lingers on the active
    // list to be deactivated and scanned again.
    let extra = "[memcg.box]\nmax = \"20MB\"\n";
    let steps = step("seq", 1, "write") + &step("seq", 2, "read");
    let text =
        scenario(128, "hdd", 64, "anon", 30, &steps, extra).replace("name = \"t\"", "name = \"t\"\nmemcg = \"box\"");
    let v2 = run(&text, &["kernel.cgroup_version=2"]);
    let v1 = run(&text, &["kernel.cgroup_version=1"]);
    assert!(
        v2.counter(Counter::PgActivate) > 100,
        "v2 activates pages under writeback: {}",
        v2.counter(Counter::PgActivate)
    );
    assert_eq!(v1.counter(Counter::PgActivate), 0, "v1 waits for them instead");
    assert!(v1.counter(Counter::PgStealAnon) > 0 && v1.counter(Counter::PswpOut) > 0);
    assert!(v1.memcg["box"]["usage_bytes"].as_u64().unwrap() <= 20 << 20, "the limit holds");
}

#[test]
fn on_6_18_reclaim_sees_memcg_stats_only_as_of_the_last_periodic_flush() {
    // Random rewrites of 28 MB in a 20 MB memcg. On 6.6 reclaim reads exact statistics:
    // refaulting pages fit the workingset and are activated, and each reclaim after such an
    // activation may deactivate. On 6.18 it reads statistics flushed every 2 s (the first
    // flush at 1 s): a run shorter than that sees empty lists and no refault activations,
    // so nothing is activated by the refault check nor deactivated. Slowed down past the
    // first flush, 6.18 does both.
    let extra = "[memcg.box]\nmax = \"20MB\"\n";
    let steps = step("seq", 1, "write") + &step("random", 2, "write");
    let text =
        scenario(128, "nvme", 64, "anon", 28, &steps, extra).replace("name = \"t\"", "name = \"t\"\nmemcg = \"box\"");
    let v66 = run(&text, &["kernel.profile=linux-6.6"]);
    let v618 = run(&text, &["kernel.profile=linux-6.18"]);
    assert!(v618.elapsed_ns < 1_000_000_000, "the run ends before the first flush: {}", v618.elapsed_ns);
    assert!(v66.counter(Counter::WorkingsetActivateAnon) > 0 && v66.counter(Counter::PgDeactivate) > 0);
    assert_eq!(v618.counter(Counter::WorkingsetActivateAnon) + v618.counter(Counter::PgDeactivate), 0);
    let slow = run(&text, &["kernel.profile=linux-6.18", "task.0.step.1.think=\"1ms\""]);
    assert!(slow.elapsed_ns > 10_000_000_000, "several flushes: {}", slow.elapsed_ns);
    assert!(slow.counter(Counter::WorkingsetActivateAnon) > 0, "after a flush the workingset size is seen");
    assert!(slow.counter(Counter::PgDeactivate) > 0, "and the refault activations");
}

#[test]
fn without_swap_an_overcommitted_task_is_oom_killed() {
    let text = r#"
[machine]
ram = "36MB"
kernel_reserved = "4MB"
[region.buf]
kind = "anon"
size = "40MB"
[[task]]
name = "hog"
[[task.step]]
region = "buf"
pattern = "seq"
passes = 2
"#;
    let r = run(text, &[]);
    assert_eq!(r.counter(Counter::OomKill), 1);
    assert!(r.tasks[0].oom_killed);
}

#[test]
fn linux_3_14_has_no_anon_workingset_and_starts_anon_active() {
    let s = scenario(36, "sata-ssd", 64, "anon", 40, &step("seq", 3, "write"), "");
    let old = run(&s, &["kernel.profile=linux-3.14"]);
    let new = run(&s, &[]);
    assert_eq!(old.counter(Counter::WorkingsetRefaultAnon), 0);
    assert!(new.counter(Counter::WorkingsetRefaultAnon) > 0);
    assert_eq!(
        new.counter(Counter::WorkingsetRefaultAnon),
        new.counter(Counter::PswpIn),
        "every swap-in of an evicted page is a refault"
    );
    assert_eq!(old.profile, "linux-3.14");
    // 3.14 uses adaptive cluster readahead, which also follows a sequential stream.
    assert!(old.counter(Counter::SwapRaHit) > old.counter(Counter::PswpIn) / 2);
}

#[test]
fn hdd_swap_disables_vma_readahead_and_is_slower() {
    let s = scenario(36, "hdd", 64, "anon", 40, &step("seq", 3, "write"), "");
    let hdd = run(&s, &[]);
    let ssd = run(&s.replace("model = \"hdd\"", "model = \"sata-ssd\""), &[]);
    assert!(hdd.elapsed_ns > ssd.elapsed_ns);
    assert!(hdd.counter(Counter::SwapRa) > 0, "rotational swap: cluster readahead");
    assert_eq!(hdd.devices[0].model, "hdd");
}

#[test]
fn linux_3_6_kswapd_naps_below_priority_10_and_the_task_reclaims_for_itself() {
    // 3.6 balance_pgdat: congestion_wait(HZ/10) once kswapd's priority falls below
    // DEF_PRIORITY - 2; from 3.11 kswapd no longer naps there.
    let s = scenario(36, "hdd", 64, "anon", 40, &step("seq", 3, "write"), "");
    let old = run(&s, &["kernel.profile=linux-3.6"]);
    let newer = run(&s, &["kernel.profile=linux-3.14"]);
    assert!(old.counter(Counter::KswapdCongestionWait) > 0);
    assert_eq!(newer.counter(Counter::KswapdCongestionWait), 0);
    assert!(
        old.counter(Counter::PgStealDirect) > newer.counter(Counter::PgStealDirect),
        "while kswapd sleeps the faulting task reclaims: {} vs {}",
        old.counter(Counter::PgStealDirect),
        newer.counter(Counter::PgStealDirect)
    );
    assert!(old.counter(Counter::SwapRaHit) > 0, "3.6 reads blind clusters");
}

#[test]
fn swap_out_waits_for_free_requests_and_cfq_idles_for_the_reader() {
    let s = scenario(36, "hdd", 64, "anon", 40, &step("seq", 3, "write"), "");
    // nr_requests bounds the writes queued at once: reclaim sleeps in get_request_wait.
    let small = run(&s, &["device.d.nr_requests=8", "device.d.scheduler=cfq"]);
    let unbounded = run(&s, &["device.d.nr_requests=1000000", "device.d.scheduler=cfq"]);
    assert!(small.devices[0].queue_full > 0, "8 requests fill");
    assert_eq!(unbounded.devices[0].queue_full, 0);
    assert!(small.devices[0].congested > 0);
    // Every page still goes out and comes back.
    assert!(small.counter(Counter::PswpOut) > 0 && small.counter(Counter::PswpIn) > 0);
    // CFQ keeps the disk idle for the faulting task's next read; mq-deadline never idles.
    let deadline = run(&s, &["device.d.scheduler=mq-deadline"]);
    assert!(unbounded.devices[0].idle_arms > 0);
    assert_eq!(deadline.devices[0].idle_arms, 0);
}

#[test]
fn linux_3_6_kswapd_nap_ends_at_a_write_completion_without_congestion() {
    // clear_bdi_congested wakes congestion_wait(BLK_RW_ASYNC) from every write request
    // freed below the congestion-off threshold, congested or not. With nr_requests so large
    // that the swap-out writes never congest the queue, naps still end early.
    let dev = "model = \"hdd\"\nscheduler = \"cfq\"\nnr_requests = 4096";
    let s = scenario(36, "hdd", 64, "anon", 40, &step("seq", 3, "write"), "").replace("model = \"hdd\"", dev);
    let r = run(&s, &["kernel.profile=linux-3.6"]);
    assert_eq!(r.devices[0].congested, 0, "the queue never congests");
    let naps = r.counter(Counter::KswapdCongestionWait);
    let woken = r.counter(Counter::KswapdCongestionWaitWoken);
    assert!(naps > 0);
    assert!(woken > 0 && woken <= naps, "{woken} of {naps} naps ended by a write completion");
}

/// A limit reclaim over freshly written memory frees what it writes (validation/life-fork-cow
/// on a disk like the validation host's virtio-blk: 4 MiB requests, 254 segments). From 4.10
/// the block plug sends a request as soon as the next one starts once it holds 128 KiB, so
/// reclaim's writes complete, and rotate their pages to the inactive tail, while its pass
/// goes on, and the pass stops once it has freed enough. When the plug held its requests
/// until the pass ended (as 2.6.39-4.9 did, with up to 32 requests of 254 pages here), the
/// pass went on writing pages it could not free: a third more written than freed. One CPU:
/// on two, the children copy in parallel, and how many written pages are still unfreed when
/// the first exits depends on how far apart they run (the fork's delay between them against
/// the CPU cost of a copy), which is not what this checks.
#[test]
fn limit_reclaim_writes_what_it_frees_when_the_plug_flushes_large_requests() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../validation/life-fork-cow.toml"))
        .expect("validation/life-fork-cow.toml");
    let r = run(
        &text,
        &[
            "kernel.profile=\"linux-6.18\"",
            "machine.cpus=1",
            "device.disk={ model = \"nvme\", max_sectors_kb = 4096, max_segments = 254, \
             scheduler = \"mq-deadline\", rotational = 1, channels = 4 }",
        ],
    );
    let (written, freed) = (r.counter(Counter::PswpOut), r.counter(Counter::PgStealAnon));
    assert!(freed > 500, "the children's writes must make the parent's limit reclaim: {freed} freed");
    assert!(written * 10 <= freed * 11, "{written} pages written for {freed} freed");
}
