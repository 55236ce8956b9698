//! `pagesim reproduce NAME`: runs a seed's table (see `pagesim::reproduce`) and prints it
//! beside the published numbers, with each cell's ratio to the reference column.

use crate::out::{Out, Stop};
use pagesim::reproduce::{load_named, Cell, Table};
use std::time::Instant;

/// `pagesim reproduce`'s command line.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The seed (seed-000, seed-004), or a directory holding a reproduce.toml
    ///
    /// A seed is looked for as scenarios/NAME-*/ in the current directory, then in the source
    /// tree pagesim was built from. A directory may also hold one reproduce.toml per
    /// experiment in its subdirectories.
    name: String,
    /// Print one JSON object per cell and line instead of the tables
    ///
    /// Each object has the table's, row's and column's labels, `row`, `column`, `set` (the
    /// overrides that made the cell), `metric`, `value`, `published` (null where the seed has
    /// no figure), `ratio` and `published_ratio` to the reference column, the run's vmstat
    /// `counters` and its `devices`.
    #[arg(long)]
    json: bool,
    /// Cells run at once, each on its own thread [default: the number of CPUs]
    #[arg(long, short, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    jobs: Option<u32>,
    /// Override a field of every cell's scenario: KEY=VALUE, may be repeated
    ///
    /// As `pagesim run --set`, applied after the row's and the column's overrides, for
    /// example a scaled-down table: --set machine.ram=90MB --set region.map.size=100MB.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Print no progress on stderr
    ///
    /// By default each table prints its cell count, each finished cell a line, and the end
    /// the total time.
    #[arg(long, short)]
    quiet: bool,
    /// Runs per cell, with seeds 1..=N; each cell is their mean [default: the table's
    /// `seeds`, else 1]
    ///
    /// The JSON gives each seed's value too (`values`) and the cell's sample standard
    /// deviation (`stdev`); the per-cell counters are the first seed's run.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    seeds: Option<u32>,
}

pub fn run(a: Args, out: &mut Out) -> Result<(), Stop> {
    let jobs = a.jobs.map_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()), |j| j as usize);
    let tables = load_named(&a.name, a.seeds).map_err(|e| e.0)?;
    let start = Instant::now();
    let total: usize = tables.iter().map(|t| t.rows.len() * t.columns.len()).sum();
    for (ti, table) in tables.iter().enumerate() {
        let n = table.rows.len() * table.columns.len();
        if !a.quiet {
            eprintln!("{}: {} cells on {} threads", table.title, n, jobs.min(n));
        }
        let done = std::sync::atomic::AtomicUsize::new(0);
        let progress = |c: &Cell| {
            let k = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            if !a.quiet {
                eprintln!(
                    "[{k:>2}/{n}] {:<16} {:<16} {:>10.1} {}  ({:.1} s)",
                    table.rows[c.row].name,
                    table.columns[c.column].name,
                    c.value,
                    table.metric.name(),
                    start.elapsed().as_secs_f64()
                );
            }
        };
        let cells = table.run_all(&a.sets, jobs, &progress).map_err(|e| e.0)?;
        if a.json {
            for c in &cells {
                writeln!(
                    out,
                    "{}",
                    serde_json::to_string(&table.cell_json(c, &cells, &a.sets)).expect("JSON of plain values")
                )?;
            }
        } else {
            if ti > 0 {
                writeln!(out, "\n")?;
            }
            print_table(table, &cells, out)?;
        }
    }
    if !a.quiet {
        eprintln!("{total} cells in {:.1} s", start.elapsed().as_secs_f64());
    }
    Ok(())
}

fn reference_value(table: &Table, cells: &[Cell], row: usize) -> f64 {
    cells[row * table.columns.len() + table.reference].value
}

/// A table value: one decimal below 100 when it has a fraction, else an integer.
fn fmt_val(v: f64) -> String {
    if v.abs() < 100.0 && v.fract() != 0.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// Each row's runs as ministat prints them: the reference column (x) and each other column's
/// summary over the seeds, and each one's difference from the reference at 95 % confidence.
fn print_ministat(table: &Table, cells: &[Cell], out: &mut Out) -> Result<(), Stop> {
    let ncol = table.columns.len();
    for ri in 0..table.rows.len() {
        writeln!(out, "\nministat, {} ({}, seeds 1..{}):", row_title(table, ri), table.metric.name(), table.seeds)?;
        let mut order = vec![table.reference];
        order.extend((0..ncol).filter(|&c| c != table.reference));
        let samples: Vec<crate::stats::Sample> =
            order.iter().map(|&ci| crate::stats::Sample { values: cells[ri * ncol + ci].values.clone() }).collect();
        let marks = ['x', '+', '*', '%', '#', '@'];
        for (k, &ci) in order.iter().enumerate() {
            writeln!(out, "{} {}", marks[k % 6], table.columns[ci].name)?;
        }
        let rows: Vec<(&str, &crate::stats::Sample)> =
            order.iter().zip(&samples).map(|(&ci, s)| (table.columns[ci].name.as_str(), s)).collect();
        crate::stats::print_summaries(out, &rows)?;
        for (k, s) in samples.iter().enumerate().skip(1) {
            writeln!(out, "{} against x:", marks[k % 6])?;
            crate::stats::print_difference(out, &samples[0], s)?;
        }
    }
    Ok(())
}

/// A row's title in the text table: its name, and its labels when another row has the same
/// name (a scaling table's rows differ only by them).
fn row_title(table: &Table, ri: usize) -> String {
    let row = &table.rows[ri];
    if table.rows.iter().filter(|r| r.name == row.name).count() < 2 {
        return row.name.clone();
    }
    let labels: Vec<String> = row.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{} {}", row.name, labels.join(" "))
}

fn print_table(table: &Table, cells: &[Cell], out: &mut Out) -> Result<(), Stop> {
    let ncol = table.columns.len();
    let titles: Vec<String> = (0..table.rows.len()).map(|ri| row_title(table, ri)).collect();
    let nw = titles.iter().map(String::len).max().unwrap_or(0).max(16);
    let refname = &table.columns[table.reference].name;
    writeln!(out, "{}", table.title)?;
    writeln!(out, "source: {}", table.source)?;
    let mean = if table.seeds > 1 { format!(" (mean of seeds 1..{})", table.seeds) } else { String::new() };
    writeln!(
        out,
        "each cell: pagesim{mean} (published), {}; second line: ratio to {refname}, pagesim (published)\n",
        table.metric.name()
    )?;
    let w = 20;
    write!(out, "{:<nw$}", "")?;
    for c in &table.columns {
        write!(out, "{:>w$}", c.name)?;
    }
    writeln!(out)?;
    for (ri, row) in table.rows.iter().enumerate() {
        let r = reference_value(table, cells, ri);
        let pr = row.published[table.reference];
        write!(out, "{:<nw$}", titles[ri])?;
        for ci in 0..ncol {
            let c = &cells[ri * ncol + ci];
            let s = match c.published {
                Some(p) => format!("{} ({})", fmt_val(c.value), fmt_val(p)),
                None => format!("{} (-)", fmt_val(c.value)),
            };
            write!(out, "{s:>w$}")?;
        }
        writeln!(out)?;
        write!(out, "{:<nw$}", format!("  / {refname}"))?;
        for ci in 0..ncol {
            let c = &cells[ri * ncol + ci];
            let s = match (c.published, pr) {
                (Some(p), Some(q)) => format!("{:.2} ({:.2})", c.value / r, p / q),
                _ => format!("{:.2} (-)", c.value / r),
            };
            write!(out, "{s:>w$}")?;
        }
        writeln!(out)?;
    }
    writeln!(out, "\ncolumns:")?;
    for c in &table.columns {
        writeln!(out, "  {:<10} {}  [{}]", c.name, c.about, c.set.join(" "))?;
    }
    if table.ministat && table.seeds > 1 {
        print_ministat(table, cells, out)?;
    }
    writeln!(out, "\nper-cell counters:")?;
    write!(out, "{:<nw$} {:<16}", "row", "column")?;
    for k in &table.counters {
        write!(out, " {k:>13}")?;
    }
    writeln!(out, " {:>11} {:>11} {:>9}", "dev_reads", "dev_writes", "avg_io_KiB")?;
    for c in cells {
        write!(out, "{:<nw$} {:<16}", titles[c.row], table.columns[c.column].name)?;
        for k in &table.counters {
            write!(out, " {:>13}", c.report.value(k).unwrap_or(0))?;
        }
        let (r, w, b) = c
            .report
            .devices
            .iter()
            .fold((0, 0, 0), |(r, w, b), d| (r + d.reads, w + d.writes, b + d.read_bytes + d.write_bytes));
        writeln!(out, " {r:>11} {w:>11} {:>9}", (b / 1024).checked_div(r + w).unwrap_or(0))?;
    }
    Ok(())
}
