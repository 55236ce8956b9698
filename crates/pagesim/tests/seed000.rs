//! Seed 000 from the same table definition that `pagesim reproduce seed-000` runs: at half
//! size against every ordering of the published table, and at one tenth of its size against
//! the mechanisms behind them, with the model's invariant checker on (debug assertions). The
//! full-size table's acceptance ratios and orderings are checked on the release build, in
//! tests/python/test_seed_tables.py (the same numbers, in seconds rather than minutes).

use pagesim::reproduce::{Cell, Table};
use pagesim::Counter;
use std::path::Path;

/// One tenth: 100MB mapping in 90MB of RAM, 100MB of swap.
const TENTH: &[&str] =
    &["machine.ram=90MB", "machine.kernel_reserved=5MB", "region.map.size=100MB", "swap.0.size=100MB"];
/// One half, the kernel's reserve scaled with the rest (ram/64 + 32MB halved).
const HALF: &[&str] =
    &["machine.ram=450MB", "machine.kernel_reserved=23MB", "region.map.size=500MB", "swap.0.size=500MB"];

struct Grid {
    table: Table,
    cells: Vec<Cell>,
}

impl Grid {
    fn get(&self, row: &str, col: &str) -> &Cell {
        let r = self.table.rows.iter().position(|x| x.name == row).unwrap_or_else(|| panic!("no row {row}"));
        let c = self.table.columns.iter().position(|x| x.name == col).unwrap_or_else(|| panic!("no column {col}"));
        &self.cells[r * self.table.columns.len() + c]
    }
    fn v(&self, row: &str, col: &str) -> f64 {
        self.get(row, col).value
    }
    /// Every pair of columns that the published table shows more than 10% apart keeps its
    /// order, but the (row, column, column) pairs in `skip`; all violations are listed in one
    /// failure. (tests/python/test_seed_tables.py checks the full-size table the same way.)
    fn assert_published_orderings_except(&self, skip: &[(&str, &str, &str)]) {
        let mut broken = Vec::new();
        let mut pairs = 0;
        for row in &self.table.rows {
            let cols: Vec<(&str, f64, f64)> = self
                .table
                .columns
                .iter()
                .filter_map(|c| {
                    let cell = self.get(&row.name, &c.name);
                    cell.published.map(|p| (c.name.as_str(), p, cell.value))
                })
                .collect();
            for (i, &(a, pa, va)) in cols.iter().enumerate() {
                for &(b, pb, vb) in &cols[i + 1..] {
                    if pa.max(pb) <= 1.1 * pa.min(pb) || skip.contains(&(row.name.as_str(), a, b)) {
                        continue;
                    }
                    pairs += 1;
                    if !((pa < pb && va < vb) || (pa > pb && va > vb)) {
                        broken.push(format!("{}: {a} {va} vs {b} {vb} (published {pa} vs {pb})", row.name));
                    }
                }
            }
        }
        assert!(pairs >= 30, "only {pairs} pairs compared: did the table lose its published values?");
        assert!(broken.is_empty(), "orderings broken:\n{}", broken.join("\n"));
    }
}

fn grid(scale: &[&str]) -> Grid {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/seed-000-swapin-readahead");
    let table = Table::load(&dir).expect("the seed-000 table loads");
    let sets: Vec<String> = scale.iter().map(|s| s.to_string()).collect();
    let cells = table.run_all(&sets, 2, &|_| {}).expect("every cell runs");
    Grid { table, cells }
}

/// At half size every published ordering holds but one: on SSD Rand Anon Shaohua's
/// detector may not trip. Its threshold is an absolute 100 net misses per anon_vma and every
/// swap-cache hit takes one off, so random faults have two stable states: readahead off
/// (no readahead hits, misses pile up: the published full-size outcome, and pagesim's at
/// full size) or readahead on, where in this 90 %-resident load each miss's 7 readahead
/// pages bring more than one hit back (30 % of them are used) and the counter stays at 0.
/// Which one a run reaches is decided in its first few hundred faults, by how fast written
/// pages are freed; at half size pagesim reaches "on", as at one tenth (below). The pair is
/// left out, and the row is held to one of the two states instead.
#[test]
fn half_size_table_keeps_every_published_ordering() {
    let g = grid(HALF);
    g.assert_published_orderings_except(&[("SSD Rand Anon", "Vanilla", "Shaohua")]);
    let row = "SSD Rand Anon";
    let (sh, van, pc0) = (g.get(row, "Shaohua"), g.get(row, "Vanilla"), g.v(row, "HughPC0"));
    let off = (sh.value - pc0).abs() < 0.1 * pc0;
    let on = sh.value == van.value && sh.report.counter(Counter::SwapRaHit) > sh.report.counter(Counter::PgMajFault);
    assert!(
        off || on,
        "{row}: Shaohua {} is neither as HughPC0 {pc0} nor a self-sustaining Vanilla {}",
        sh.value,
        van.value
    );
}

/// At one tenth of the size two orderings of the published table do not hold, for reasons
/// of scale: Shaohua's detector needs more than 100 net swap-cache misses in one anon_vma
/// before it skips readahead, which a random load of 100MB never accumulates (its early
/// readahead hits keep pace with the misses), so Shaohua equals Vanilla on Rand Anon; and
/// on SSD Seq, HughPC4 and Vanilla come within a few percent. Both hold at half size.
#[test]
fn tenth_size_table_shows_the_mechanisms() {
    let g = grid(TENTH);
    let readahead = ["Vanilla", "Shaohua", "HughNew", "HughPC4"];
    for row in ["HDD Seq Anon", "HDD Seq Shmem", "SSD Seq Anon", "SSD Seq Shmem"] {
        // Sequential swap-in: no readahead means a synchronous read per page. (At this size
        // HDD Seq Shmem's HughPC0 is 1.38 × HughNew, 1.52-1.55 × the others; 1.70 × before
        // write completions ran during reclaim's scans, when more written pages waited to be
        // freed and more writes competed with the reads. Published at full size: 1.62.)
        for col in readahead {
            assert!(
                g.v(row, "HughPC0") > 1.3 * g.v(row, col),
                "{row}: HughPC0 {} vs {col} {}",
                g.v(row, "HughPC0"),
                g.v(row, col)
            );
        }
        // Shaohua's detector never trips on a sequential stream: the blind cluster.
        assert_eq!(g.v(row, "Shaohua"), g.v(row, "Vanilla"), "{row}");
        // Readahead hits are what keeps the adaptive window open.
        let c = g.get(row, "HughNew");
        assert!(
            c.report.counter(Counter::SwapRaHit) * 2 > c.report.counter(Counter::PswpIn),
            "{row}: few readahead hits"
        );
    }
    for row in ["HDD Rand Anon", "HDD Rand Shmem", "SSD Rand Anon", "SSD Rand Shmem"] {
        // The hit-rate detector turns readahead off on random faults: as page_cluster 0.
        let (new, pc0) = (g.v(row, "HughNew"), g.v(row, "HughPC0"));
        assert!((new - pc0).abs() < 0.1 * pc0, "{row}: HughNew {new} vs HughPC0 {pc0}");
        assert!(
            g.get(row, "HughNew").report.counter(Counter::SwapRa) * 50
                < g.get(row, "Vanilla").report.counter(Counter::SwapRa)
        );
        // Blind readahead reads garbage and evicts useful pages (the seed: 6% on HDD Rand
        // Anon, 38% to 87% on the other rows).
        let min = if row == "HDD Rand Anon" { 1.03 } else { 1.1 };
        assert!(g.v(row, "Vanilla") > min * new, "{row}: Vanilla {} vs HughNew {new}", g.v(row, "Vanilla"));
    }
    for row in ["SSD Rand Anon", "SSD Rand Shmem"] {
        assert!(g.v(row, "Vanilla") > 1.3 * g.v(row, "HughNew"), "{row}: the SSD pays for every wasted page");
    }
    for row in ["HDD Rand Shmem", "SSD Rand Shmem"] {
        // shmem has no anon_vma: Shaohua's patch leaves it blind, exactly as Vanilla.
        assert_eq!(g.v(row, "Shaohua"), g.v(row, "Vanilla"), "{row}");
    }
}
