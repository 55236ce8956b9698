//! `pagesim reproduce NAME`: runs a seed's table (see `pagesim::reproduce`) and prints it
//! beside the published numbers, with each cell's ratio to the reference column.

use pagesim::reproduce::{find, Cell, Table};
use std::path::PathBuf;
use std::time::Instant;

/// Counters printed per cell: enough to see why a cell is slow.
const CELL_COUNTERS: &[&str] = &["pgmajfault", "pswpin", "pswpout", "swap_ra", "swap_ra_hit", "allocstall"];

struct Args {
    name: String,
    sets: Vec<String>,
    json: bool,
    quiet: bool,
    jobs: usize,
}

fn parse(args: &[String], usage: &str) -> Result<Args, String> {
    let mut name = None;
    let mut sets = Vec::new();
    let (mut json, mut quiet) = (false, false);
    let mut jobs = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--set" => sets.push(it.next().ok_or("--set needs KEY=VALUE")?.clone()),
            s if s.starts_with("--set=") => sets.push(s["--set=".len()..].to_string()),
            "--json" => json = true,
            "--quiet" | "-q" => quiet = true,
            "--jobs" | "-j" => {
                let v = it.next().ok_or("--jobs needs a number")?;
                jobs = v
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("--jobs: expected a positive integer, got \"{v}\""))?;
            }
            s if s.starts_with('-') => return Err(format!("reproduce: unknown option {s}\n{usage}")),
            s => {
                if name.replace(s.to_string()).is_some() {
                    return Err(format!("reproduce: one table at a time\n{usage}"));
                }
            }
        }
    }
    let name = name.ok_or_else(|| format!("reproduce: missing NAME (for example seed-000)\n{usage}"))?;
    Ok(Args { name, sets, json, quiet, jobs })
}

/// Where tables are looked for: ./scenarios, then the source tree the binary was built from.
fn roots() -> Vec<PathBuf> {
    let mut v = vec![PathBuf::from("scenarios")];
    v.push(PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios")));
    v
}

pub fn run(args: &[String], usage: &str) -> Result<(), String> {
    let a = parse(args, usage)?;
    let dir = find(&a.name, &roots()).map_err(|e| e.0)?;
    let table = Table::load(&dir).map_err(|e| e.0)?;
    let n = table.rows.len() * table.columns.len();
    if !a.quiet {
        eprintln!("{}: {} cells on {} threads", table.title, n, a.jobs.min(n));
    }
    let start = Instant::now();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let progress = |c: &Cell| {
        let k = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        if !a.quiet {
            eprintln!(
                "[{k:>2}/{n}] {:<16} {:<8} {:>9.0} cs  ({:.1} s)",
                table.rows[c.row].name,
                table.columns[c.column].name,
                c.value,
                start.elapsed().as_secs_f64()
            );
        }
    };
    let cells = table.run_all(&a.sets, a.jobs, &progress).map_err(|e| e.0)?;
    if a.json {
        for c in &cells {
            println!("{}", serde_json::to_string(&cell_json(&table, c, &cells)).expect("JSON of plain values"));
        }
    } else {
        print_table(&table, &cells);
    }
    if !a.quiet {
        eprintln!("{} cells in {:.1} s", n, start.elapsed().as_secs_f64());
    }
    Ok(())
}

fn reference_value(table: &Table, cells: &[Cell], row: usize) -> f64 {
    cells[row * table.columns.len() + table.reference].value
}

fn cell_json(table: &Table, c: &Cell, cells: &[Cell]) -> serde_json::Value {
    let row = &table.rows[c.row];
    let mut o = serde_json::Map::new();
    for (k, v) in &row.labels {
        o.insert(k.clone(), v.clone().into());
    }
    o.insert("row".into(), row.name.clone().into());
    o.insert("column".into(), table.columns[c.column].name.clone().into());
    let metric = table.metric.name();
    o.insert(metric.into(), (c.value as u64).into());
    let unit = metric.rsplit('_').next().unwrap_or(metric);
    o.insert(format!("published_{unit}"), c.published.map(|p| p as u64).into());
    let r = reference_value(table, cells, c.row);
    o.insert("ratio".into(), (c.value / r).into());
    let pr = row.published[table.reference];
    o.insert("published_ratio".into(), c.published.zip(pr).map(|(p, q)| p / q).into());
    o.insert("counters".into(), serde_json::Value::Object(c.report.counters.clone()));
    let devices: Vec<serde_json::Value> = c
        .report
        .devices
        .iter()
        .filter(|d| d.reads + d.writes > 0)
        .map(|d| serde_json::to_value(d).expect("device report serialises"))
        .collect();
    o.insert("devices".into(), devices.into());
    serde_json::Value::Object(o)
}

fn print_table(table: &Table, cells: &[Cell]) {
    let ncol = table.columns.len();
    let refname = &table.columns[table.reference].name;
    println!("{}", table.title);
    println!("source: {}", table.source);
    println!(
        "each cell: pagesim (published), {}; second line: ratio to {refname}, pagesim (published)\n",
        table.metric.name()
    );
    let w = 20;
    print!("{:<16}", "");
    for c in &table.columns {
        print!("{:>w$}", c.name);
    }
    println!();
    for (ri, row) in table.rows.iter().enumerate() {
        let r = reference_value(table, cells, ri);
        let pr = row.published[table.reference];
        print!("{:<16}", row.name);
        for ci in 0..ncol {
            let c = &cells[ri * ncol + ci];
            let s = match c.published {
                Some(p) => format!("{:.0} ({:.0})", c.value, p),
                None => format!("{:.0} (-)", c.value),
            };
            print!("{s:>w$}");
        }
        println!();
        print!("{:<16}", format!("  / {refname}"));
        for ci in 0..ncol {
            let c = &cells[ri * ncol + ci];
            let s = match (c.published, pr) {
                (Some(p), Some(q)) => format!("{:.2} ({:.2})", c.value / r, p / q),
                _ => format!("{:.2} (-)", c.value / r),
            };
            print!("{s:>w$}");
        }
        println!();
    }
    println!("\ncolumns:");
    for c in &table.columns {
        println!("  {:<10} {}  [{}]", c.name, c.about, c.set.join(" "));
    }
    println!("\nper-cell counters:");
    print!("{:<16} {:<8}", "row", "column");
    for k in CELL_COUNTERS {
        print!(" {k:>11}");
    }
    println!(" {:>11} {:>11}", "dev_reads", "dev_writes");
    for c in cells {
        print!("{:<16} {:<8}", table.rows[c.row].name, table.columns[c.column].name);
        for k in CELL_COUNTERS {
            print!(" {:>11}", c.report.counter(k));
        }
        let (r, w) = c.report.devices.iter().fold((0, 0), |(r, w), d| (r + d.reads, w + d.writes));
        println!(" {r:>11} {w:>11}");
    }
}
