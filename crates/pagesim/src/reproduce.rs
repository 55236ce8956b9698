//! Reproductions of published tables.
//!
//! A seed's table is described by a `reproduce.toml` beside its base scenario: columns and
//! rows, each a list of `--set` overrides, and the published value of each cell. A cell is
//! the base scenario with the row's, then the column's, then the caller's overrides; it is
//! an ordinary run, so every number in the table comes out of the modelled kernel and any
//! cell can be rerun by hand with `pagesim run BASE --set ...`.
//!
//! The library runs cells and returns reports; the text tables belong to the front ends.
//! A cell's JSON object ([`Table::cell_json`]) is built here because two front ends give it:
//! `pagesim reproduce --json` prints it, one per line, and the Python package's
//! `pagesim.reproduce` makes a DataFrame of it, and the two must not drift apart.

use crate::{Counter, Error, Gauge, Report, RunOptions, Scenario};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What a table measures per cell.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Metric {
    /// Simulated elapsed time until the last task ends, centiseconds (what `time` printed
    /// in seed 000's table).
    ElapsedCs,
    /// Simulated elapsed time until the last task ends, seconds (seed 002's `make` time).
    ElapsedS,
    /// Read throughput of one step of the first task, KiB/s (iozone's KB/s).
    ReadKibps { step: usize },
    /// Write throughput of one step of the first task, KiB/s.
    WriteKibps { step: usize },
    /// Largest read throughput of all tasks together over `window` seconds of the
    /// timeline, MiB/s.
    MaxReadMibps { window: usize },
    /// Smallest average device read size over `window` seconds of the timeline, KiB.
    MinAvgReadKib { window: usize },
    /// Read calls (or accesses) of all tasks per second of the run, divided by the calls
    /// one transaction makes.
    Tps { ops_per_txn: f64 },
    /// mmtests' "FTrace Reclaim Statistics: vmscan": each row is the row of that name
    /// (report/ftrace.rs) of the run's tracepoint events. Rows without overrides share one
    /// run per column.
    FtraceVmscan,
    /// A /proc/vmstat counter or gauge of the run: each row is named after one
    /// (`nr_vmscan_write`, `allocstall`...). Rows without overrides share one run per column.
    Vmstat,
    /// Fault latency and lock contention of the run ([`FAULT_ROWS`], and
    /// `lock_wait_pct:CLASS` for one lock class). Rows without overrides share one run per
    /// column.
    Fault,
}

/// The rows a `fault` table can name: fault latency and its kernel part (less device
/// time), of all faults and of major faults alone, in µs; the share of all CPU time spent
/// spinning on locks, %; the run's elapsed time, s.
pub const FAULT_ROWS: &[&str] = &[
    "fault_median_us",
    "fault_p99_us",
    "kernel_median_us",
    "kernel_p99_us",
    "major_median_us",
    "major_kernel_median_us",
    "major_kernel_p99_us",
    "lock_wait_pct",
    "elapsed_s",
];

/// The `fault` metric of report `r` for row `row`.
fn fault_value(r: &Report, row: &str) -> Option<f64> {
    let us = |ns: u64| (ns as f64 / 100.0).round() / 10.0;
    let pct =
        |ns: u64| if r.locks.cpu_ns == 0 { 0.0 } else { (1000.0 * ns as f64 / r.locks.cpu_ns as f64).round() / 10.0 };
    if let Some(class) = row.strip_prefix("lock_wait_pct:") {
        // A class the run never took: no spinning on it. A sleeping lock's wait is no CPU
        // time: no share of it.
        return match r.locks.classes.iter().find(|c| c.name == class) {
            Some(c) if c.sleeping => None,
            c => Some(pct(c.map_or(0, |c| c.wait_total_ns))),
        };
    }
    Some(match row {
        "fault_median_us" => us(r.fault_latency.median_ns),
        "fault_p99_us" => us(r.fault_latency.p99_ns),
        "kernel_median_us" => us(r.fault_latency_kernel.median_ns),
        "kernel_p99_us" => us(r.fault_latency_kernel.p99_ns),
        "major_median_us" => us(r.major_fault_latency.median_ns),
        "major_kernel_median_us" => us(r.major_fault_latency_kernel.median_ns),
        "major_kernel_p99_us" => us(r.major_fault_latency_kernel.p99_ns),
        "lock_wait_pct" => pct(r.locks.wait_ns),
        "elapsed_s" => r.elapsed_ns as f64 / 1e9,
        _ => return None,
    })
}

/// The metric names a table file can give.
const METRICS: &str =
    "elapsed_cs, elapsed_s, read_kibps, write_kibps, max_read_mibps, min_avg_read_kib, tps, ftrace_vmscan, vmstat, fault";

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::ElapsedCs => "elapsed_cs",
            Metric::ElapsedS => "elapsed_s",
            Metric::ReadKibps { .. } => "read_kibps",
            Metric::WriteKibps { .. } => "write_kibps",
            Metric::MaxReadMibps { .. } => "max_read_mibps",
            Metric::MinAvgReadKib { .. } => "min_avg_read_kib",
            Metric::Tps { .. } => "tps",
            Metric::FtraceVmscan => "ftrace_vmscan",
            Metric::Vmstat => "vmstat",
            Metric::Fault => "fault",
        }
    }

    /// The metric of one report for row `row`; `None` when the run did not produce it (a
    /// step that did not finish, a timeline shorter than the window, no event log).
    pub fn value(self, r: &Report, row: &str) -> Option<f64> {
        let windows = |w: usize| {
            r.timeline.windows(w).map(move |s| {
                let read: u64 = s.iter().map(|x| x.read_bytes).sum();
                let (n, b) = s.iter().fold((0, 0), |(n, b), x| (n + x.dev_reads, b + x.dev_read_bytes));
                (read as f64 / w as f64, (n > 0).then(|| b as f64 / n as f64))
            })
        };
        match self {
            Metric::ElapsedCs => Some((r.elapsed_ns as f64 / 1e7).round()),
            Metric::ElapsedS => Some(r.elapsed_ns as f64 / 1e9),
            Metric::ReadKibps { step } => {
                r.tasks.first()?.steps.get(step)?.read_bytes_per_s().map(|b| (b / 1024.0).round())
            }
            Metric::WriteKibps { step } => {
                r.tasks.first()?.steps.get(step)?.write_bytes_per_s().map(|b| (b / 1024.0).round())
            }
            Metric::MaxReadMibps { window } => windows(window)
                .map(|(bps, _)| bps / (1 << 20) as f64)
                .reduce(f64::max)
                .map(|v| (v * 10.0).round() / 10.0),
            Metric::MinAvgReadKib { window } => {
                windows(window).filter_map(|(_, avg)| avg).reduce(f64::min).map(|v| (v / 1024.0).round())
            }
            Metric::Tps { ops_per_txn } => {
                let ops: u64 = r.tasks.iter().flat_map(|t| &t.steps).map(|s| s.ops).sum();
                (r.elapsed_ns > 0)
                    .then(|| (ops as f64 / ops_per_txn / (r.elapsed_ns as f64 / 1e9) * 100.0).round() / 100.0)
            }
            Metric::FtraceVmscan => {
                r.ftrace_vmscan.as_ref()?.rows().into_iter().find(|(l, _)| *l == row).map(|(_, v)| v)
            }
            Metric::Vmstat => r.value(row).map(|v| v as f64),
            Metric::Fault => fault_value(r, row),
        }
    }

    fn parse(f: &TableFile) -> Result<Metric, (&'static str, String)> {
        let need = |v: Option<usize>, key: &'static str| v.ok_or((key, format!("metric {} needs {key}", f.metric)));
        let unused = |given: bool, key: &'static str| {
            if given {
                Err((key, format!("metric {} does not take {key}", f.metric)))
            } else {
                Ok(())
            }
        };
        let m = match f.metric.as_str() {
            "elapsed_cs" => Metric::ElapsedCs,
            "elapsed_s" => Metric::ElapsedS,
            "read_kibps" => Metric::ReadKibps { step: f.step.unwrap_or(0) },
            "write_kibps" => Metric::WriteKibps { step: f.step.unwrap_or(0) },
            "max_read_mibps" => Metric::MaxReadMibps { window: need(f.window, "window")? },
            "min_avg_read_kib" => Metric::MinAvgReadKib { window: need(f.window, "window")? },
            "ftrace_vmscan" => Metric::FtraceVmscan,
            "vmstat" => Metric::Vmstat,
            "fault" => Metric::Fault,
            "tps" => {
                let o = f.ops_per_txn.unwrap_or(1.0);
                if o.is_nan() || o <= 0.0 {
                    return Err(("ops_per_txn", format!("expected a positive number, got {o}")));
                }
                Metric::Tps { ops_per_txn: o }
            }
            other => return Err(("metric", format!("unknown metric \"{other}\"; expected one of: {METRICS}"))),
        };
        if matches!(m, Metric::MaxReadMibps { window: 0 } | Metric::MinAvgReadKib { window: 0 }) {
            return Err(("window", "must be at least 1 (seconds of timeline)".into()));
        }
        unused(f.step.is_some() && !matches!(m, Metric::ReadKibps { .. } | Metric::WriteKibps { .. }), "step")?;
        unused(
            f.window.is_some() && !matches!(m, Metric::MaxReadMibps { .. } | Metric::MinAvgReadKib { .. }),
            "window",
        )?;
        unused(f.ops_per_txn.is_some() && !matches!(m, Metric::Tps { .. }), "ops_per_txn")?;
        Ok(m)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    title: String,
    source: String,
    scenario: String,
    /// One of [`METRICS`].
    metric: String,
    /// read_kibps, write_kibps: the step of the first task whose throughput is measured
    /// (default 0).
    #[serde(default)]
    step: Option<usize>,
    /// Timeline metrics: seconds per window (the scenario sets `sample_interval = "1s"`).
    #[serde(default)]
    window: Option<usize>,
    /// tps: read calls per transaction (default 1).
    #[serde(default)]
    ops_per_txn: Option<f64>,
    /// Labels every cell of the table carries in machine-readable output.
    #[serde(default)]
    labels: BTreeMap<String, String>,
    /// Counters shown per cell in the printed table. Default: the swap counters.
    #[serde(default)]
    counters: Option<Vec<String>>,
    /// Runs per cell, with seeds 1..=N; the cell's value is their mean (default 1).
    #[serde(default)]
    seeds: Option<u32>,
    /// Print each row's per-seed values as ministat does, each column against the
    /// reference (`pagesim reproduce`; needs seeds of 2 or more).
    #[serde(default)]
    ministat: bool,
    reference: String,
    column: Vec<ColumnFile>,
    row: Vec<RowFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ColumnFile {
    name: String,
    #[serde(default)]
    about: String,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    set: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RowFile {
    name: String,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    set: Vec<String>,
    #[serde(default)]
    published: BTreeMap<String, f64>,
}

#[derive(Clone, Debug)]
pub struct Column {
    pub name: String,
    pub about: String,
    /// Key/value labels for machine-readable output (e.g. policy = "modern").
    pub labels: BTreeMap<String, String>,
    pub set: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct Row {
    pub name: String,
    /// Key/value labels for machine-readable output (e.g. device = "hdd").
    pub labels: BTreeMap<String, String>,
    pub set: Vec<String>,
    /// Published value per column (index into [`Table::columns`]), if the source has one.
    pub published: Vec<Option<f64>>,
}

/// A validated table: the base scenario parses with every cell's overrides.
#[derive(Clone, Debug)]
pub struct Table {
    pub title: String,
    pub source: String,
    /// The base scenario file.
    pub scenario: PathBuf,
    pub metric: Metric,
    /// Labels of every cell.
    pub labels: BTreeMap<String, String>,
    /// Counters shown per cell.
    pub counters: Vec<String>,
    /// Index of the column that ratios are taken against.
    pub reference: usize,
    /// Runs per cell (seeds 1..=N, each with `seed=k` after every other override); the
    /// cell's value is their mean. 1: one run with the scenario's seed.
    pub seeds: u32,
    /// Rows are printed as ministat's comparison too.
    pub ministat: bool,
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
}

/// One cell's result.
#[derive(Clone, Debug)]
pub struct Cell {
    pub row: usize,
    pub column: usize,
    /// The metric (the mean over the table's seeds); NaN when a run did not produce it.
    pub value: f64,
    /// The metric of each seed's run, in seed order (one value without seeds).
    pub values: Vec<f64>,
    pub published: Option<f64>,
    /// The first seed's report.
    pub report: Report,
}

/// Where a seed's name is looked for: `./scenarios`, then the source tree pagesim was built
/// from (so that an installed binary or Python package finds the seeds of its checkout).
pub fn search_roots() -> Vec<PathBuf> {
    vec![PathBuf::from("scenarios"), PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios"))]
}

/// The directory of a known seed under `root` (`seed-000` → `root/seed-000-*`), or `name`
/// itself when it is a directory holding a `reproduce.toml` (or subdirectories that do,
/// one per experiment).
pub fn find(name: &str, roots: &[PathBuf]) -> Result<PathBuf, Error> {
    let direct = Path::new(name);
    if has_tables(direct) {
        return Ok(direct.to_path_buf());
    }
    let mut known: Vec<String> = Vec::new();
    // Run from the checkout, `./scenarios` and the source tree's are one directory: each
    // directory is searched (and its seeds listed) once.
    let (mut searched_dirs, mut searched) = (Vec::new(), Vec::new());
    for root in roots {
        let same = std::fs::canonicalize(root).unwrap_or_else(|_| root.clone());
        if searched_dirs.contains(&same) {
            continue;
        }
        searched_dirs.push(same);
        searched.push(root.display().to_string());
        let Ok(entries) = std::fs::read_dir(root) else { continue };
        let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        dirs.sort();
        for d in dirs {
            if !has_tables(&d) {
                continue;
            }
            let file_name = d.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
            if file_name == name || file_name.starts_with(&format!("{name}-")) {
                return Ok(d);
            }
            if !known.contains(&file_name) {
                known.push(file_name);
            }
        }
    }
    Err(Error(format!(
        "reproduce: no table named \"{name}\" (not a directory with a reproduce.toml; searched {}; known: {})",
        searched.join(", "),
        if known.is_empty() { "none".to_string() } else { known.join(", ") }
    )))
}

/// The table files of a seed directory: its own `reproduce.toml`, then those of its
/// subdirectories in name order (one per experiment).
fn table_files(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    if dir.join("reproduce.toml").is_file() {
        v.push(dir.to_path_buf());
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        let mut subs: Vec<PathBuf> =
            entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.join("reproduce.toml").is_file()).collect();
        subs.sort();
        v.extend(subs);
    }
    v
}

fn has_tables(dir: &Path) -> bool {
    !table_files(dir).is_empty()
}

/// Loads every table of a seed directory (see [`find`]).
pub fn load_all(dir: &Path) -> Result<Vec<Table>, Error> {
    table_files(dir).iter().map(|d| Table::load(d)).collect()
}

/// The tables `pagesim reproduce NAME` and `pagesim.reproduce(name)` run: the seed or
/// directory `name` ([`find`] over [`search_roots`]), every table loaded, and with `seeds`
/// each table's seed count replaced.
pub fn load_named(name: &str, seeds: Option<u32>) -> Result<Vec<Table>, Error> {
    let mut tables = load_all(&find(name, &search_roots())?)?;
    if let Some(n) = seeds {
        for t in &mut tables {
            t.seeds = n;
        }
    }
    Ok(tables)
}

impl Table {
    /// Loads `dir/reproduce.toml` and checks that every cell's scenario is valid.
    pub fn load(dir: &Path) -> Result<Table, Error> {
        let path = dir.join("reproduce.toml");
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(&path).map_err(|e| Error(format!("{origin}: {e}")))?;
        Self::from_toml(&text, &origin, dir)
    }

    /// Parses a table's text (`origin` names it in messages); its `scenario` is read from
    /// `dir`, and every cell's scenario is checked.
    pub fn from_toml(text: &str, origin: &str, dir: &Path) -> Result<Table, Error> {
        // toml's errors carry the line, the column and the key.
        let f: TableFile =
            toml::from_str(text).map_err(|e| Error(format!("{origin}: {}", e.to_string().trim_end())))?;
        let err = |key: &str, msg: String| Error(format!("{origin}: {key}: {msg}"));
        if f.column.is_empty() || f.row.is_empty() {
            return Err(err("column/row", "a table needs at least one column and one row".into()));
        }
        let metric = Metric::parse(&f).map_err(|(k, m)| err(k, m))?;
        let columns: Vec<Column> = f
            .column
            .into_iter()
            .map(|c| Column { name: c.name, about: c.about, labels: c.labels, set: c.set })
            .collect();
        let col_names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
        let reference = col_names.iter().position(|&n| n == f.reference).ok_or_else(|| {
            err("reference", format!("\"{}\" is not a column (columns: {})", f.reference, col_names.join(", ")))
        })?;
        let mut rows = Vec::new();
        for (i, r) in f.row.into_iter().enumerate() {
            let mut published = vec![None; columns.len()];
            for (col, v) in r.published {
                let c = col_names.iter().position(|&n| n == col).ok_or_else(|| {
                    err(
                        &format!("row.{i}.published.{col}"),
                        format!("not a column (columns: {})", col_names.join(", ")),
                    )
                })?;
                published[c] = Some(v);
            }
            if metric == Metric::FtraceVmscan
                && !crate::report::ftrace::VmscanStats::default().rows().iter().any(|(l, _)| *l == r.name)
            {
                let labels: Vec<&str> =
                    crate::report::ftrace::VmscanStats::default().rows().into_iter().map(|(l, _)| l).collect();
                return Err(err(&format!("row.{i}.name"), format!("not a vmscan row (rows: {})", labels.join(", "))));
            }
            if metric == Metric::Vmstat && Counter::from_name(&r.name).is_none() && Gauge::from_name(&r.name).is_none()
            {
                return Err(err(
                    &format!("row.{i}.name"),
                    format!("\"{}\" is not a counter or gauge of the report (see `pagesim run --json`)", r.name),
                ));
            }
            if metric == Metric::Fault
                && !FAULT_ROWS.contains(&r.name.as_str())
                && !r.name.starts_with("lock_wait_pct:")
            {
                return Err(err(
                    &format!("row.{i}.name"),
                    format!("\"{}\" is not a fault row (rows: {}, lock_wait_pct:CLASS)", r.name, FAULT_ROWS.join(", ")),
                ));
            }
            rows.push(Row { name: r.name, labels: r.labels, set: r.set, published });
        }
        if let Some(names) = &f.counters {
            if let Some(bad) = names.iter().find(|n| Counter::from_name(n).is_none() && Gauge::from_name(n).is_none()) {
                return Err(err(
                    "counters",
                    format!("\"{bad}\" is not a counter or gauge of the report (see `pagesim run --json`)"),
                ));
            }
        }
        if f.seeds == Some(0) {
            return Err(err("seeds", "must be at least 1".into()));
        }
        let table = Table {
            seeds: f.seeds.unwrap_or(1),
            ministat: f.ministat,
            title: f.title,
            source: f.source,
            scenario: dir.join(&f.scenario),
            metric,
            labels: f.labels,
            counters: f.counters.unwrap_or_else(|| {
                ["pgmajfault", "pswpin", "pswpout", "swap_ra", "swap_ra_hit", "allocstall"].map(String::from).to_vec()
            }),
            reference,
            columns,
            rows,
        };
        for r in 0..table.rows.len() {
            for c in 0..table.columns.len() {
                table.scenario(r, c, &[])?;
            }
        }
        Ok(table)
    }

    /// The overrides of cell (`row`, `column`) followed by `extra`.
    pub fn sets(&self, row: usize, column: usize, extra: &[String]) -> Vec<String> {
        let mut sets = self.rows[row].set.clone();
        sets.extend(self.columns[column].set.iter().cloned());
        sets.extend(extra.iter().cloned());
        sets
    }

    /// The validated scenario of one cell.
    pub fn scenario(&self, row: usize, column: usize, extra: &[String]) -> Result<Scenario, Error> {
        Scenario::load_file(&self.scenario, &self.sets(row, column, extra))
            .map_err(|e| Error(format!("{} (cell {} / {})", e.0, self.rows[row].name, self.columns[column].name)))
    }

    /// Runs one cell: once, or once per seed.
    pub fn run_cell(&self, row: usize, column: usize, extra: &[String]) -> Result<Cell, Error> {
        Ok(self.cell(row, column, self.run_reports(row, column, extra)?))
    }

    /// The reports of cell (`row`, `column`): one run, or one per seed (`seed=k` after
    /// every other override).
    fn run_reports(&self, row: usize, column: usize, extra: &[String]) -> Result<Vec<Report>, Error> {
        let opts = || RunOptions { trace_events: self.metric == Metric::FtraceVmscan, ..RunOptions::default() };
        let runs: Vec<Vec<String>> = if self.seeds == 1 {
            vec![extra.to_vec()]
        } else {
            (1..=self.seeds).map(|k| extra.iter().cloned().chain([format!("seed={k}")]).collect()).collect()
        };
        runs.iter()
            .map(|sets| {
                let mut report = crate::run(&self.scenario(row, column, sets)?, opts())?;
                report.trace = None;
                Ok(report)
            })
            .collect()
    }

    /// Cell (`row`, `column`) of its runs' reports (one per seed).
    fn cell(&self, row: usize, column: usize, reports: Vec<Report>) -> Cell {
        let values: Vec<f64> =
            reports.iter().map(|r| self.metric.value(r, &self.rows[row].name).unwrap_or(f64::NAN)).collect();
        let value = values.iter().sum::<f64>() / values.len() as f64;
        let report = reports.into_iter().next().expect("a cell has a run");
        Cell { row, column, value, values, published: self.rows[row].published[column], report }
    }

    /// Cell `c` of `cells` (every cell of the table, row-major, as [`Table::run_all`] returns
    /// them) as one JSON object: the table's, row's and column's labels, `row`, `column`,
    /// `set` (the overrides that made the cell, `extra` last), `metric`, `value`,
    /// `published` (null where the seed has no figure), with several seeds `seeds`, each
    /// seed's `values` and their sample standard deviation `stdev`, the same two under the
    /// metric's own name (`elapsed_cs`, `published_cs`), `ratio` and `published_ratio` to the
    /// reference column, the run's vmstat `counters` and the `devices` that did I/O.
    pub fn cell_json(&self, c: &Cell, cells: &[Cell], extra: &[String]) -> serde_json::Value {
        let row = &self.rows[c.row];
        let col = &self.columns[c.column];
        let mut o = serde_json::Map::new();
        for (k, v) in self.labels.iter().chain(&row.labels).chain(&col.labels) {
            o.insert(k.clone(), v.clone().into());
        }
        o.insert("row".into(), row.name.clone().into());
        o.insert("column".into(), col.name.clone().into());
        // Exactly what this cell changed in the table's scenario: a label such as
        // policy = "ondemand-2.6.23" names the seed's column, the settings say what ran.
        o.insert("set".into(), self.sets(c.row, c.column, extra).into());
        let metric = self.metric.name();
        o.insert("metric".into(), metric.into());
        o.insert("value".into(), json_num(c.value));
        o.insert("published".into(), c.published.map_or(serde_json::Value::Null, json_num));
        if self.seeds > 1 {
            o.insert("seeds".into(), self.seeds.into());
            o.insert("values".into(), c.values.iter().map(|&v| json_num(v)).collect::<Vec<_>>().into());
            o.insert("stdev".into(), json_num(sample_stdev(&c.values)));
        }
        // The metric under its own name too (`elapsed_cs`, `published_cs`).
        o.insert(metric.into(), json_num(c.value));
        let unit = metric.rsplit('_').next().unwrap_or(metric);
        o.insert(format!("published_{unit}"), c.published.map_or(serde_json::Value::Null, json_num));
        let r = cells[c.row * self.columns.len() + self.reference].value;
        o.insert("ratio".into(), (c.value / r).into());
        let pr = row.published[self.reference];
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

    /// Runs every cell on up to `jobs` threads; `done` is called after each cell (from the
    /// thread that ran it). Cells come back in row-major order whatever the scheduling, and
    /// each is an independent deterministic run (or set of runs, one per seed). Cells with
    /// the same overrides are one run (the vmscan rows of one column), each reading its own
    /// row's metric from it.
    pub fn run_all(&self, extra: &[String], jobs: usize, done: &(dyn Fn(&Cell) + Sync)) -> Result<Vec<Cell>, Error> {
        let nc = self.columns.len();
        let n = self.rows.len() * nc;
        let sets: Vec<Vec<String>> = (0..n).map(|i| self.sets(i / nc, i % nc, extra)).collect();
        let first: Vec<usize> = (0..n).map(|i| sets.iter().position(|s| *s == sets[i]).expect("itself")).collect();
        let unique: Vec<usize> = (0..n).filter(|&i| first[i] == i).collect();
        let shared = unique.len() < n;
        let runs = self.run_cells(&unique, extra, jobs, &|i, reports| {
            if !shared {
                done(&self.cell(i / nc, i % nc, reports.to_vec()));
            }
        })?;
        let mut out = Vec::with_capacity(n);
        for (i, &f) in first.iter().enumerate() {
            let k = unique.iter().position(|&u| u == f).expect("a unique cell");
            let cell = self.cell(i / nc, i % nc, runs[k].clone());
            if shared {
                done(&cell);
            }
            out.push(cell);
        }
        Ok(out)
    }

    /// Runs cells `cells` (row-major indices) on up to `jobs` threads; returns each one's
    /// reports in the order given, calling `done` with a cell's index and reports as it ends.
    fn run_cells(
        &self,
        cells: &[usize],
        extra: &[String],
        jobs: usize,
        done: &(dyn Fn(usize, &[Report]) + Sync),
    ) -> Result<Vec<Vec<Report>>, Error> {
        let n = cells.len();
        let next = std::sync::atomic::AtomicUsize::new(0);
        type Slot = Option<Result<Vec<Report>, Error>>;
        let results: std::sync::Mutex<Vec<Slot>> = std::sync::Mutex::new((0..n).map(|_| None).collect());
        std::thread::scope(|s| {
            for _ in 0..jobs.clamp(1, n) {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    let (r, c) = (cells[i] / self.columns.len(), cells[i] % self.columns.len());
                    let res = self.run_reports(r, c, extra);
                    if let Ok(reports) = &res {
                        done(cells[i], reports);
                    }
                    results.lock().expect("no thread panicked holding the results")[i] = Some(res);
                });
            }
        });
        let results = results.into_inner().expect("no thread panicked holding the results");
        results.into_iter().map(|r| r.expect("every cell ran")).collect()
    }
}

/// A metric value for JSON: integers stay integers, a missing value (NaN) is null.
fn json_num(v: f64) -> serde_json::Value {
    if v.is_nan() {
        serde_json::Value::Null
    } else if v.fract() == 0.0 && v.abs() < 9e15 {
        (v as i64).into()
    } else {
        v.into()
    }
}

/// The sample standard deviation (n - 1) of a cell's values over its seeds; 0 for one.
/// The same arithmetic, in the same order, as ministat's summary in the CLI (stats.rs), so
/// that `stdev` and ministat's Stddev print the same digits.
fn sample_stdev(values: &[f64]) -> f64 {
    let n = values.len();
    let mean = values.iter().sum::<f64>() / n as f64;
    let var = if n > 1 { values.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64 } else { 0.0 };
    var.sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap();
    }

    const BASE: &str = r#"
name = "t"
[machine]
ram = "48MB"
[device.d]
model = "hdd"
[[swap]]
device = "d"
size = "64MB"
[region.a]
kind = "anon"
size = "40MB"
[[task]]
name = "t"
[[task.step]]
region = "a"
pattern = "seq"
"#;

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("pagesim-reproduce-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_table_loads_and_names_bad_columns_and_overrides() {
        let d = tmpdir("load");
        write(&d, "base.toml", BASE);
        write(
            &d,
            "reproduce.toml",
            r#"
title = "t"
source = "s"
scenario = "base.toml"
metric = "elapsed_cs"
reference = "A"
[[column]]
name = "A"
set = ["vm.page-cluster=3"]
[[column]]
name = "B"
set = ["vm.page-cluster=0"]
[[row]]
name = "r"
set = ["task.0.step.0.passes=2"]
published = { B = 7 }
"#,
        );
        let t = Table::load(&d).unwrap();
        assert_eq!(t.reference, 0);
        assert_eq!(t.rows[0].published, vec![None, Some(7.0)]);
        assert_eq!(t.sets(0, 1, &["x=1".into()]), vec!["task.0.step.0.passes=2", "vm.page-cluster=0", "x=1"]);
        // Cells are independent runs: B differs from A only by its override.
        let cells = t.run_all(&[], 2, &|_| {}).unwrap();
        assert_eq!(cells.len(), 2);
        assert_eq!((cells[1].row, cells[1].column), (0, 1));
        assert!(cells.iter().all(|c| c.value > 0.0));
        assert!(cells[0].report.counter(Counter::SwapRa) > 0, "page_cluster 3 reads ahead");
        assert_eq!(cells[1].report.counter(Counter::SwapRa), 0, "page_cluster 0 does not");

        write(&d, "reproduce.toml", &std::fs::read_to_string(d.join("reproduce.toml")).unwrap().replace("{ B", "{ C"));
        let e = Table::load(&d).unwrap_err().0;
        assert!(e.contains("row.0.published.C") && e.contains("not a column"), "{e}");

        write(
            &d,
            "reproduce.toml",
            &std::fs::read_to_string(d.join("reproduce.toml"))
                .unwrap()
                .replace("{ C", "{ B")
                .replace("vm.page-cluster=0", "vm.page-cluster=lots"),
        );
        let e = Table::load(&d).unwrap_err().0;
        assert!(e.contains("page-cluster") && e.contains("cell r / B"), "{e}");
        // A counter the report does not have is named, not shown as 0 in every cell.
        let good = std::fs::read_to_string(d.join("reproduce.toml")).unwrap().replace("=lots", "=0");
        write(&d, "reproduce.toml", &format!("counters = [\"pswpin\", \"nr_free_pages\"]\n{good}"));
        assert!(Table::load(&d).is_ok());
        write(&d, "reproduce.toml", &format!("counters = [\"pswpin\", \"pswapin\"]\n{good}"));
        let e = Table::load(&d).unwrap_err().0;
        assert!(e.contains("counters") && e.contains("\"pswapin\""), "{e}");
        let e = find("no-such-seed", std::slice::from_ref(&d)).unwrap_err().0;
        assert!(e.contains("no-such-seed"), "{e}");
        // The same directory reached twice (./scenarios and the source tree's, from the
        // checkout): its seeds are searched and listed once, found where first reached.
        let r = tmpdir("roots");
        std::fs::create_dir_all(r.join("seed-042-twice")).unwrap();
        write(&r.join("seed-042-twice"), "reproduce.toml", "");
        let e = find("no-such-seed", &[r.clone(), r.join(".")]).unwrap_err().0;
        assert_eq!(e.matches("seed-042-twice").count(), 1, "listed once: {e}");
        assert!(!e.contains("/."), "the directory searched once: {e}");
        assert_eq!(find("seed-042", &[r.join("."), r.clone()]).unwrap(), r.join(".").join("seed-042-twice"));
        std::fs::remove_dir_all(&r).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// `metric = "vmstat"`: rows name counters and share one run per column; `seeds = 3`
    /// runs each cell with seeds 1, 2 and 3 and takes the mean, each seed's value kept; a
    /// row that names no counter is refused.
    #[test]
    fn vmstat_rows_share_runs_and_seeds_average_them() {
        let d = tmpdir("seeds");
        write(&d, "base.toml", &BASE.replace("pattern = \"seq\"", "pattern = \"random\"\naccesses = 20000"));
        let table = |rows: &str| {
            format!(
                "title = \"t\"\nsource = \"s\"\nscenario = \"base.toml\"\nmetric = \"vmstat\"\nseeds = 3\n\
                 reference = \"A\"\n[[column]]\nname = \"A\"\nset = []\n{rows}"
            )
        };
        write(
            &d,
            "reproduce.toml",
            &table("[[row]]\nname = \"pswpin\"\nset = []\n[[row]]\nname = \"pgfault\"\nset = []\n"),
        );
        let t = Table::load(&d).unwrap();
        assert_eq!(t.seeds, 3);
        let cells = t.run_all(&[], 2, &|_| {}).unwrap();
        for c in &cells {
            assert_eq!(c.values.len(), 3);
            assert!((c.value - c.values.iter().sum::<f64>() / 3.0).abs() < 1e-9);
        }
        let pswpin = &cells[0].values;
        assert!(pswpin[0] != pswpin[1] || pswpin[1] != pswpin[2], "the seeds draw different pages: {pswpin:?}");
        assert_eq!(cells[0].report.counter(Counter::PswpIn) as f64, pswpin[0], "the report is seed 1's");
        assert_eq!(
            cells[1].values[0],
            cells[0].report.counter(Counter::PgFault) as f64,
            "one run, each row its counter"
        );
        // The same seed alone gives the same number (the runs are deterministic).
        let single = Table { seeds: 1, ..t.clone() };
        let one = single.run_cell(0, 0, &["seed=2".into()]).unwrap();
        assert_eq!(one.values, vec![pswpin[1]]);
        write(&d, "reproduce.toml", &table("[[row]]\nname = \"pswapin\"\nset = []\n"));
        let e = Table::load(&d).unwrap_err().0;
        assert!(e.contains("row.0.name") && e.contains("\"pswapin\" is not a counter"), "{e}");
        write(&d, "reproduce.toml", &table("[[row]]\nname = \"pswpin\"\nset = []\n").replace("seeds = 3", "seeds = 0"));
        assert!(Table::load(&d).unwrap_err().0.contains("seeds: must be at least 1"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
