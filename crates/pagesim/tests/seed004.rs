//! Seed 004 from the same table definitions that `pagesim reproduce seed-004` runs: the
//! iozone patterns at one eighth of their size, and the full readahead thrashing test and
//! two rows of the OLTP table (they run in seconds), asserting the seed's conclusions.

use pagesim::reproduce::{load_all, Table};
use pagesim::Counter;
use std::path::Path;

fn tables() -> Vec<Table> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/seed-004-readahead");
    load_all(&dir).expect("the seed-004 tables load")
}

fn table(name: &str) -> Table {
    tables().into_iter().find(|t| t.labels.get("experiment").map(String::as_str) == Some(name)).expect(name)
}

fn col(t: &Table, name: &str) -> usize {
    t.columns.iter().position(|c| c.name == name).unwrap_or_else(|| panic!("no column {name}"))
}

#[test]
fn iozone_patterns_are_the_same_under_both_policies_and_sequential_runs_at_the_disk_rate() {
    let t = table("iozone");
    // 512 MiB through 256 MB: the file still does not fit, as 4 GiB in 2 GB.
    let scale: Vec<String> = ["file.iozone.size=512MiB", "machine.ram=256MB"].map(String::from).to_vec();
    let (legacy, ondemand) = (col(&t, "legacy"), col(&t, "ondemand"));
    for r in 0..t.rows.len() {
        let a = t.run_cell(r, legacy, &scale).unwrap();
        let b = t.run_cell(r, ondemand, &scale).unwrap();
        let name = &t.rows[r].name;
        assert!(a.value > 0.0 && b.value > 0.0, "{name}");
        assert!((a.value - b.value).abs() <= 0.05 * a.value, "{name}: legacy {} vs ondemand {}", a.value, b.value);
        if name == "Read" {
            // The seed measured 62 MB/s; the disk's parameters come from its datasheet and
            // reviews, not from that figure.
            let kibps = 62_085.61;
            assert!((a.value - kibps).abs() <= 0.25 * kibps, "sequential read {} KiB/s", a.value);
            assert_eq!(a.report.counter(Counter::FileReadSingle), 0, "readahead brings every page");
        }
    }
}

#[test]
fn readahead_thrashing_ondemand_rereads_thrashed_pages_with_readahead() {
    let thr = table("thrashing");
    let (legacy, ondemand) = (col(&thr, "legacy"), col(&thr, "ondemand"));
    let a = thr.run_cell(0, legacy, &[]).unwrap();
    let b = thr.run_cell(0, ondemand, &[]).unwrap();
    let (ra, rb) = (&a.report, &b.report);
    // Both thrash: readahead pages are evicted before their stream reaches them.
    assert!(ra.counter(Counter::RaEvictedUnused) > 10_000 && rb.counter(Counter::RaEvictedUnused) > 10_000);
    // 2.6.20 never turns back for them: the read path fetches them one page at a time.
    assert!(
        ra.counter(Counter::FileReadSingle) > 5 * rb.counter(Counter::FileReadSingle),
        "single-page reads: legacy {} ondemand {}",
        ra.counter(Counter::FileReadSingle),
        rb.counter(Counter::FileReadSingle)
    );
    // The seed's table: max throughput 5 -> 15 MB/s, min average I/O size 16 -> 140 KB.
    // pagesim gets 10.0 -> 19.1 MiB/s and 8 -> 134 KiB (docs/model.md, "Seed 004": the
    // throughput ratio is below the seed's because from 130 s on the read queue congests,
    // 2.6.20 then skips its non-blocking ahead windows and legacy's late streams keep up).
    // What is pinned here is the direction: ondemand well ahead, not the seed's factor of 3.
    assert_eq!(thr.metric.name(), "max_read_mibps");
    assert!(b.value >= 1.5 * a.value, "max throughput: legacy {} ondemand {}", a.value, b.value);
    let io = tables().into_iter().find(|t| t.metric.name() == "min_avg_read_kib").expect("io-size table");
    let (x, y) = (io.metric.value(ra, "").unwrap(), io.metric.value(rb, "").unwrap());
    assert!(y >= 5.0 * x, "min avg I/O size: legacy {x} KiB ondemand {y} KiB");
    assert!(y >= 100.0, "on-demand keeps readahead-sized requests: {y} KiB");
}

#[test]
fn oltp_ondemand_is_at_or_above_legacy_at_every_thread_count() {
    // The seed: "The on-demand readahead leaves many lookahead pages (flagged PG_readahead)
    // there. Many of them will be hit, and trigger more readahead pages." Every row of the
    // table (1 to 64 threads), 10,000 transactions each.
    let t = table("oltp");
    let (legacy, ondemand) = (col(&t, "legacy"), col(&t, "ondemand"));
    assert_eq!(t.rows.len(), 7, "rows 1, 2, 4, 8, 16, 32 and 64 threads");
    for (row, r) in t.rows.iter().enumerate() {
        let a = t.run_cell(row, legacy, &[]).unwrap();
        let b = t.run_cell(row, ondemand, &[]).unwrap();
        assert!(b.value >= a.value, "{}: legacy {} tps, ondemand {} tps", r.name, a.value, b.value);
        // The seed's gain is 3% to 9%. The threads share one open file; a 2.6.2x read
        // decides on its own copy of the readahead state, so another thread's read in
        // flight does not break its sequential detection (with the state shared live,
        // ondemand came out 28% to 35% ahead from 2 threads on).
        assert!(b.value <= 1.15 * a.value, "{}: legacy {} tps, ondemand {} tps", r.name, a.value, b.value);
    }
}
