//! Seed 000 at one tenth of its size (100MB mapping in 90MB of RAM, 100MB of swap): the
//! orderings that the modelled mechanisms must produce, cell by cell, from the same table
//! definition that `pagesim reproduce seed-000` runs.

use pagesim::reproduce::{Cell, Table};
use std::path::Path;

const SCALE: &[&str] =
    &["machine.ram=90MB", "machine.kernel_reserved=5MB", "region.map.size=100MB", "swap.0.size=100MB"];

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
}

fn grid() -> Grid {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/seed-000-swapin-readahead");
    let table = Table::load(&dir).expect("the seed-000 table loads");
    let sets: Vec<String> = SCALE.iter().map(|s| s.to_string()).collect();
    let cells = table.run_all(&sets, 2, &|_| {}).expect("every cell runs");
    Grid { table, cells }
}

#[test]
fn scaled_seed_000_table_keeps_the_published_orderings() {
    let g = grid();
    let readahead = ["Vanilla", "Shaohua", "HughNew", "HughPC4"];
    for row in ["HDD Seq Anon", "HDD Seq Shmem", "SSD Seq Anon", "SSD Seq Shmem"] {
        // Sequential swap-in: no readahead means a synchronous read per page.
        for col in readahead {
            assert!(
                g.v(row, "HughPC0") > 1.5 * g.v(row, col),
                "{row}: HughPC0 {} vs {col} {}",
                g.v(row, "HughPC0"),
                g.v(row, col)
            );
        }
        // Shaohua's detector never trips on a sequential stream: the blind cluster.
        assert_eq!(g.v(row, "Shaohua"), g.v(row, "Vanilla"), "{row}");
        // Readahead hits are what keeps the adaptive window open.
        let c = g.get(row, "HughNew");
        assert!(c.report.counter("swap_ra_hit") * 2 > c.report.counter("pswpin"), "{row}: few readahead hits");
    }
    for row in ["HDD Rand Anon", "HDD Rand Shmem", "SSD Rand Anon", "SSD Rand Shmem"] {
        // The hit-rate detector turns readahead off on random faults: as page_cluster 0.
        let (new, pc0) = (g.v(row, "HughNew"), g.v(row, "HughPC0"));
        assert!((new - pc0).abs() < 0.1 * pc0, "{row}: HughNew {new} vs HughPC0 {pc0}");
        assert!(g.get(row, "HughNew").report.counter("swap_ra") * 50 < g.get(row, "Vanilla").report.counter("swap_ra"));
        // Blind readahead reads garbage and evicts useful pages.
        assert!(g.v(row, "Vanilla") > 1.1 * new, "{row}: Vanilla {} vs HughNew {new}", g.v(row, "Vanilla"));
    }
    for row in ["SSD Rand Anon", "SSD Rand Shmem"] {
        assert!(g.v(row, "Vanilla") > 1.3 * g.v(row, "HughNew"), "{row}: the SSD pays for every wasted page");
    }
    for row in ["HDD Rand Shmem", "SSD Rand Shmem"] {
        // shmem has no anon_vma: Shaohua's patch leaves it blind, exactly as Vanilla.
        assert_eq!(g.v(row, "Shaohua"), g.v(row, "Vanilla"), "{row}");
    }
}
