//! The `pagesim` command: run, check and describe scenarios; sweep one over a grid; report a
//! run or a sweep as HTML; reproduce the seeds' tables; validate against the host kernel;
//! benchmark the engine.
//!
//! The command line is clap's derive API: [`Cli`] and the subcommands' argument structs (in
//! their own modules for `reproduce`, `validate` and `bench`). Their doc comments are what
//! `--help` prints. Usage errors are clap's (exit status 2); a runtime error prints
//! `pagesim: <message>` and exits with 2 too; a run stopped as livelocked or deadlocked
//! prints its report, then the state it stopped in, and exits with 1. Results go to stdout
//! through [`out::Out`].

use clap::{CommandFactory, Parser, Subcommand};
use out::{Out, Stop};
use std::path::PathBuf;
use std::process::ExitCode;

mod bench;
mod cache;
mod capture;
mod out;
mod python;
mod report;
mod reproduce;
mod stats;
mod sweep;
mod validate;

/// pagesim simulates the Linux kernel's memory-management subsystem: page cache and
/// readahead, anonymous and shmem memory, swap, reclaim and writeback, over timed block
/// devices.
///
/// A scenario (a TOML file, see scenarios/) describes the machine, its devices and swap, the
/// memory cgroups and the tasks' accesses; `pagesim run` runs it and reports what the kernel
/// would: /proc/vmstat counters under their kernel names, elapsed times, latency histograms
/// and device I/O. The same scenario and seed always give the same result.
///
/// Every subcommand explains its options with `pagesim SUBCOMMAND --help`.
#[derive(Debug, Parser)]
#[command(name = "pagesim", version, about, long_about, arg_required_else_help = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a scenario and print its report
    ///
    /// The report: simulated elapsed time, each task's time and faults, kswapd's activity, the
    /// fault latency, each device's I/O and the /proc/vmstat counters. Progress goes to stderr.
    Run(RunArgs),
    /// Print mmtests' "FTrace Reclaim Statistics: vmscan" rows of a tracepoint event file
    ///
    /// Reads the file `pagesim run --trace-events` wrote and computes the rows as mmtests'
    /// trace-vmscan-postprocess.pl does with --ignore-pid: direct reclaims, pages scanned and
    /// written by the processes that reclaimed directly, kswapd's wakeups, scans and writes,
    /// the time stalled in direct reclaim and the time kswapd was awake.
    TraceReport(TraceReportArgs),
    /// Load and validate a scenario without running it
    ///
    /// Makes every check `run` makes before it simulates (the same resolution of the
    /// scenario). Prints the number of tasks and the kernel profile, or with --json the
    /// resolved configuration (every default applied, policy names looked up); an error names
    /// the file, the line or key, and what was expected.
    Check(CheckArgs),
    /// List every scenario key with its unit and default, and the policies and device models
    Describe,
    /// List the kernel profiles and the policies each one selects
    Profiles,
    /// Run a seed's tables and print them beside the published numbers
    ///
    /// Reads scenarios/NAME-*/reproduce.toml (or one reproduce.toml per experiment in its
    /// subdirectories): a base scenario, rows and columns as lists of overrides, the metric and
    /// each cell's published value. Every cell is a `pagesim run` of the base scenario with
    /// the row's and the column's --sets. The tables go to stdout, progress to stderr.
    Reproduce(reproduce::Args),
    /// Run a scenario over a grid of overrides and seeds, in parallel, into a Parquet dataset
    ///
    /// Every combination of the --vary keys' values (and of the --zip keys' values, taken
    /// together) runs with each of --seeds seeds, --jobs at a time in worker processes. Each
    /// finished run is written at once to --out as its own Parquet file: one row of the
    /// overrides, seed, status, elapsed time, per-task times, fault-latency quantiles and every
    /// vmstat counter. A rerun with the same --out runs only the runs missing there; a run whose
    /// worker dies is run again (--retries). A progress bar with the time left goes to stderr,
    /// a line per run to stdout. Exit status 1 when a run failed, 2 when pagesim rejects an
    /// override (the message names the key).
    ///
    /// Sweeps are pagesim's Python package (pagesim.sweep) run by $PAGESIM_PYTHON, else the
    /// .venv that scripts/install.sh made beside the binary's target directory, else python3.
    Sweep(sweep::Args),
    /// Write a run's or a sweep's report as one HTML file, with plots and tables
    ///
    /// INPUT is the JSON report of `pagesim run --json` or a sweep's --out directory. The page
    /// needs nothing else to be read (the plots are embedded SVG images; no script, no
    /// external file). Input that is not a run's report or a sweep's directory is an error
    /// that names the file (exit status 2).
    ///
    /// Reports are pagesim's Python package (pagesim.html) run by $PAGESIM_PYTHON, else the
    /// .venv that scripts/install.sh made beside the binary's target directory, else python3.
    Report(report::Args),
    /// Compare two batches of runs as ministat does: is the difference significant?
    ///
    /// Reads two results of `pagesim run FILE --seeds N --json`, or runs one scenario with a
    /// key set to two values (--vary KEY=A,B, --seeds runs each), and prints for the elapsed
    /// time and each counter the two samples' N, min, max, median, mean and standard
    /// deviation, then "Difference at 95.0% confidence" with the difference, its interval
    /// (Student's t) and the percentage, or "No difference proven at 95.0% confidence".
    Compare(stats::CompareArgs),
    /// Time the simulator itself: simulated accesses per wall-clock second, peak RSS
    Bench(bench::Args),
    /// Run a trace through a page cache alone and print its miss ratio
    ///
    /// No devices, no time: every 4 KiB page a record of the trace touches is a reference to
    /// an LRU cache of --ram bytes. With --sizes, the miss-ratio curve of LRU from one pass
    /// (each reference's reuse distance). Traces of other tools are read as they are
    /// (--list-formats); a record that cannot be read is named by its number.
    Cache(cache::Args),
    /// Run a program under QEMU and record its page accesses and system calls as a trace
    ///
    /// `pagesim capture [--out FILE] -- PROGRAM ARGS...` runs the unmodified x86_64 program
    /// under QEMU user-mode emulation with pagesim's plugin (built with the C compiler on
    /// first use) and writes, per thread, the pages its loads and stores touched (after stack
    /// deletion: accesses to its K most recent pages are hits for any memory of K pages or
    /// more, and are left out) and its system calls, in pagesim's trace format (`pgt`,
    /// zstd-compressed). `pagesim cache FILE.pgt` runs it through a page cache. Needs
    /// qemu-user (scripts/install.sh installs it as root).
    Capture(capture::Args),
    /// Run scenarios on this machine's kernel and in pagesim configured like it; compare
    ///
    /// Needs root: it creates swap files and memory cgroups and changes vm tunables, and
    /// leaves the machine as it found it. Each scenario runs --repeats times from a cold
    /// state on the host, then once in pagesim with the host's kernel profile, tunables and
    /// disk; a table per scenario compares the counters, and the last lines give the
    /// acceptance statistic (see --check). Exit status 1 when a host run failed or the machine
    /// was not left as found.
    Validate(validate::Args),
    /// Print a shell completion script to stdout
    ///
    /// For example, bash: `pagesim completions bash > ~/.local/share/bash-completion/completions/pagesim`;
    /// zsh: `pagesim completions zsh > ~/.zfunc/_pagesim` with ~/.zfunc on $fpath;
    /// fish: `pagesim completions fish > ~/.config/fish/completions/pagesim.fish`.
    Completions {
        /// The shell to write the script for
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// A scenario file with overrides: what `run` and `check` load.
#[derive(Debug, clap::Args)]
struct Scenario {
    /// The scenario file (TOML; `pagesim describe` lists its keys)
    file: PathBuf,
    /// Override a scenario field: KEY=VALUE, may be repeated
    ///
    /// KEY is the field's dotted path (vm.swappiness, task.0.step.0.passes, device.ssd.model);
    /// VALUE is a TOML value, or else a bare string. Applied in order after the file is read,
    /// so a later --set of the same key wins.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Refuse a scenario that needs more host memory than this to simulate (bytes, or with a
    /// unit: 8GB) [default: the host's available memory]
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    max_memory: Option<u64>,
}

impl Scenario {
    /// The host memory a run may use: --max-memory, else what the host has available.
    fn max_memory(&self) -> Option<u64> {
        self.max_memory.or_else(pagesim::host_memory_available)
    }
}

fn parse_size(s: &str) -> Result<u64, String> {
    pagesim::units::parse_bytes(s)
}

#[derive(Debug, clap::Args)]
struct CheckArgs {
    #[command(flatten)]
    scenario: Scenario,
    /// Print the resolved configuration as JSON: the scenario as a run sees it, with the
    /// defaults, the profile's policies and the kernel's derived values (min_free_kbytes)
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    #[command(flatten)]
    scenario: Scenario,
    /// Seed of the simulation's random number generator [default: the scenario's `seed`, or 1]
    ///
    /// The same scenario and seed give the same report.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Print the report as one JSON document instead of tables
    ///
    /// Every counter, the per-task, device and memcg statistics, the fault-latency and
    /// readahead-window histograms and the timeline; units are in the key names (elapsed_ns).
    #[arg(long)]
    json: bool,
    /// Print no progress on stderr
    ///
    /// By default a run that takes longer than a second prints wall time, simulated time and
    /// accesses done every half second.
    #[arg(long, short)]
    quiet: bool,
    /// Write the run's tracepoint events to FILE, as ftrace's trace_pipe prints them
    ///
    /// The vmscan, writeback and readahead events (mm_vmscan_direct_reclaim_begin/end,
    /// mm_vmscan_memcg_reclaim_begin/end, mm_vmscan_kswapd_wake/sleep,
    /// mm_vmscan_wakeup_kswapd, mm_vmscan_lru_isolate, mm_vmscan_writepage,
    /// mm_vmscan_lru_shrink_inactive, writeback_queue/start/written/queue_io,
    /// balance_dirty_pages, page_cache_sync_ra/async_ra/ra_order), one line each, to compare
    /// with the host's tracefs. The report then also prints mmtests'
    /// "FTrace Reclaim Statistics: vmscan" rows; `pagesim trace-report FILE` prints them
    /// from the file.
    #[arg(long, value_name = "FILE", conflicts_with = "seeds")]
    trace_events: Option<PathBuf>,
    /// Run N seeds (from --seed, else 1) on the available cores and print, as ministat does,
    /// N, min, max, median, mean and standard deviation of the elapsed time and of each --stat
    ///
    /// With --json, the runs' values by seed (the input of `pagesim compare`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    seeds: Option<u64>,
    /// A counter (or gauge) to summarise over the --seeds runs, as the report names it
    /// (pswpin, pgmajfault, nr_vmscan_write...); may be repeated
    #[arg(long = "stat", value_name = "COUNTER", requires = "seeds")]
    stats: Vec<String>,
}

#[derive(Debug, clap::Args)]
struct TraceReportArgs {
    /// A file `pagesim run --trace-events` wrote (or ftrace text with the same events)
    file: PathBuf,
    /// Print the rows as JSON
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut out = Out::stdout();
    match dispatch(cli.command, &mut out).and_then(|()| out.flush()) {
        Ok(()) | Err(Stop::ClosedPipe) => ExitCode::SUCCESS,
        Err(Stop::Error(e)) => {
            eprintln!("pagesim: {e}");
            ExitCode::from(2)
        }
        Err(Stop::Failed(e)) => {
            eprintln!("pagesim: {e}");
            ExitCode::from(1)
        }
    }
}

fn dispatch(command: Command, out: &mut Out) -> Result<(), Stop> {
    match command {
        Command::Run(a) => cmd_run(a, out),
        Command::TraceReport(a) => cmd_trace_report(a, out),
        Command::Check(CheckArgs { scenario: a, json }) => {
            let s = pagesim::Scenario::load_file(&a.file, &a.sets).map_err(|e| e.0)?;
            let need = pagesim::check_memory(&s, a.max_memory()).map_err(|e| e.0)?;
            if json {
                let text = serde_json::to_string_pretty(&s.config).expect("a resolved configuration serializes");
                writeln!(out, "{text}")
            } else {
                writeln!(
                    out,
                    "{}: ok ({} tasks, profile {}, about {} of host memory to simulate)",
                    a.file.display(),
                    s.file.task.len(),
                    s.profile.name,
                    pagesim::units::format_bytes(need)
                )
            }
        }
        Command::Describe => {
            writeln!(out, "{:<40} {:<24} {:<22} description", "key", "unit", "default")?;
            for t in pagesim::scenario::describe() {
                writeln!(out, "{:<40} {:<24} {:<22} {}", t.key, t.unit, t.default, t.doc)?;
            }
            for r in pagesim::scenario::registries() {
                writeln!(out, "\n{} ({}):", r.kind, r.scenario_key)?;
                let width = r.entries.iter().map(|e| e.name.len()).max().unwrap_or(0).max(16);
                for e in &r.entries {
                    writeln!(out, "  {:<width$} {}", e.name, e.description)?;
                }
            }
            Ok(())
        }
        Command::Profiles => {
            // One kind=name column per kind of policy a profile chooses, each as wide as its
            // longest value.
            let profiles = pagesim::scenario::PROFILES;
            let rows: Vec<_> = profiles.iter().map(|p| p.policies()).collect();
            let name_width = profiles.iter().map(|p| p.name.len()).max().unwrap_or(0);
            let widths: Vec<usize> = (0..rows.first().map_or(0, Vec::len))
                .map(|k| rows.iter().map(|row| row[k].1.len()).max().unwrap_or(0))
                .collect();
            for (p, row) in profiles.iter().zip(&rows) {
                write!(out, "{:<name_width$}", p.name)?;
                for ((kind, name), width) in row.iter().zip(&widths) {
                    write!(out, " {kind}={name:<width$}")?;
                }
                writeln!(out, " {}", p.description)?;
            }
            Ok(())
        }
        Command::Compare(a) => stats::compare(a, out),
        Command::Sweep(a) => sweep::run(a),
        Command::Report(a) => report::run(a),
        Command::Bench(a) => bench::run(a, out),
        Command::Cache(a) => cache::run(a, out),
        Command::Capture(a) => capture::run(a, out),
        Command::Reproduce(a) => reproduce::run(a, out),
        Command::Validate(a) => validate::run(a, out),
        Command::Completions { shell } => {
            // clap_complete panics when a write fails: the script is built in memory and
            // written like any other output.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "pagesim", &mut script);
            out.write_all(&script)
        }
    }
}

fn cmd_trace_report(a: TraceReportArgs, out: &mut Out) -> Result<(), Stop> {
    let text = std::fs::read_to_string(&a.file).map_err(|e| format!("{}: {e}", a.file.display()))?;
    let log = pagesim::trace::TraceLog::parse(&text, &a.file.display().to_string())?;
    let end = log.events.last().map_or(0, |e| e.t_ns);
    let stats = pagesim::report::ftrace::VmscanStats::from_log(&log, end);
    if a.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&stats).expect("json"))?;
    } else {
        writeln!(out, "FTrace Reclaim Statistics: vmscan")?;
        for (label, v) in stats.rows() {
            writeln!(out, "{label:<40} {v:>14.2}")?;
        }
    }
    Ok(())
}

fn cmd_run(a: RunArgs, out: &mut Out) -> Result<(), Stop> {
    if let Some(n) = a.seeds {
        let first = a.seed.unwrap_or(1);
        let seeds: Vec<u64> = (first..first.saturating_add(n)).collect();
        let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
        let max = a.scenario.max_memory();
        let batch = stats::run_batch(&a.scenario.file, &a.scenario.sets, &seeds, &a.stats, jobs, max, a.quiet)?;
        if a.json {
            writeln!(out, "{}", serde_json::to_string_pretty(&batch).expect("json"))?;
        } else {
            stats::print_batch(out, &batch)?;
        }
        return Ok(());
    }
    // The library calls this about once a second of wall time (and once at the end, which
    // a run shorter than a second does not print).
    let quiet = a.quiet;
    let progress = move |p: &pagesim::Progress| {
        if !quiet && p.wall_s >= 1.0 {
            eprintln!("{}", p.line());
        }
    };
    let opts = pagesim::RunOptions {
        seed: a.seed,
        max_memory: a.scenario.max_memory(),
        sets: a.scenario.sets,
        progress: Some(Box::new(progress)),
        trace_events: a.trace_events.is_some(),
    };
    let r = pagesim::run_file(&a.scenario.file, opts).map_err(|e| e.0)?;
    if let (Some(path), Some(log)) = (&a.trace_events, &r.trace) {
        let write = || -> std::io::Result<()> {
            let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
            log.write_to(&mut w)?;
            std::io::Write::flush(&mut w)
        };
        write().map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if a.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&r.to_json()).expect("json"))?;
    } else {
        write!(out, "{}", r.to_table())?;
    }
    match (&r.stop_reason, &r.stop_detail) {
        (Some(reason), Some(detail)) => {
            out.flush()?;
            Err(Stop::Failed(format!("the run was stopped ({reason}): {detail}")))
        }
        _ => Ok(()),
    }
}
