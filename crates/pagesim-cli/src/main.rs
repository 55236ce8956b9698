//! The `pagesim` command: run, check and describe scenarios; benchmark the engine.

use out::{Out, Stop};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str = "\
usage:
  pagesim run FILE [--set KEY=VALUE ...] [--seed N] [--json] [--quiet]
  pagesim check FILE [--set KEY=VALUE ...]
  pagesim describe
  pagesim profiles
  pagesim reproduce NAME [--json] [--jobs N] [--set KEY=VALUE ...] [--quiet]
      NAME: seed-000, or a directory holding a reproduce.toml
  pagesim bench [--quick]
  pagesim validate SCENARIO... [--repeats N] [--json FILE] [--set KEY=VALUE ...] [--seed N] [--check]
  pagesim validate --probe
      runs each scenario on this machine's kernel (root) and in pagesim configured like it,
      and compares the counters; --probe measures the disk that holds the swap files
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut out = Out::stdout();
    match dispatch(&args, &mut out).and_then(|()| out.flush()) {
        Ok(()) | Err(Stop::ClosedPipe) => ExitCode::SUCCESS,
        Err(Stop::Error(e)) => {
            eprintln!("pagesim: {e}");
            ExitCode::from(2)
        }
    }
}

struct RunArgs {
    file: PathBuf,
    sets: Vec<String>,
    seed: Option<u64>,
    json: bool,
    quiet: bool,
}

fn parse_run_args(cmd: &str, args: &[String]) -> Result<RunArgs, String> {
    let mut file = None;
    let mut sets = Vec::new();
    let mut seed = None;
    let mut json = false;
    let mut quiet = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--set" => sets.push(it.next().ok_or("--set needs KEY=VALUE")?.clone()),
            "--seed" => {
                let v = it.next().ok_or("--seed needs a number")?;
                seed = Some(v.parse().map_err(|_| format!("--seed: expected a non-negative integer, got \"{v}\""))?);
            }
            "--json" => json = true,
            "--quiet" | "-q" => quiet = true,
            s if s.starts_with("--set=") => sets.push(s["--set=".len()..].to_string()),
            s if s.starts_with('-') => return Err(format!("{cmd}: unknown option {s}\n{USAGE}")),
            s => {
                if file.replace(PathBuf::from(s)).is_some() {
                    return Err(format!("{cmd}: one scenario file at a time\n{USAGE}"));
                }
            }
        }
    }
    let file = file.ok_or_else(|| format!("{cmd}: missing scenario FILE\n{USAGE}"))?;
    Ok(RunArgs { file, sets, seed, json, quiet })
}

fn dispatch(args: &[String], out: &mut Out) -> Result<(), Stop> {
    let Some(cmd) = args.first() else { return Err(format!("missing command\n{USAGE}").into()) };
    let rest = &args[1..];
    match cmd.as_str() {
        "run" => cmd_run(parse_run_args("run", rest)?, out),
        "check" => {
            let a = parse_run_args("check", rest)?;
            let s = pagesim::Scenario::load_file(&a.file, &a.sets).map_err(|e| e.0)?;
            writeln!(out, "{}: ok ({} tasks, profile {})", a.file.display(), s.file.task.len(), s.profile.name)?;
            Ok(())
        }
        "describe" => {
            writeln!(out, "{:<40} {:<24} {:<22} description", "key", "unit", "default")?;
            for t in pagesim::scenario::describe() {
                writeln!(out, "{:<40} {:<24} {:<22} {}", t.key, t.unit, t.default, t.doc)?;
            }
            writeln!(out, "\nswap_readahead policies:")?;
            for r in pagesim::swap::readahead::REGISTRY {
                writeln!(out, "  {:<16} {}", r.name, r.description)?;
            }
            writeln!(out, "\nscan_balance policies:")?;
            for r in pagesim::reclaim::scan_balance::REGISTRY {
                writeln!(out, "  {:<16} {}", r.name, r.description)?;
            }
            writeln!(out, "\ndevice models:")?;
            for (m, d) in pagesim::device::MODELS {
                writeln!(out, "  {m:<16} {d}")?;
            }
            Ok(())
        }
        "profiles" => {
            for p in pagesim::scenario::PROFILES {
                writeln!(
                    out,
                    "{:<12} swap_readahead={:<9} scan_balance={:<14} {}",
                    p.name, p.swap_readahead, p.scan_balance, p.description
                )?;
            }
            Ok(())
        }
        "bench" => bench::run(rest, out),
        "reproduce" => reproduce::run(rest, USAGE, out),
        "validate" => validate::run(rest, USAGE, out),
        "help" | "--help" | "-h" => {
            write!(out, "{USAGE}")?;
            Ok(())
        }
        other => Err(format!("unknown command \"{other}\"\n{USAGE}").into()),
    }
}

fn cmd_run(a: RunArgs, out: &mut Out) -> Result<(), Stop> {
    let started = Instant::now();
    let mut last = Instant::now();
    let quiet = a.quiet;
    let progress = move |p: &pagesim::Progress| {
        if quiet || started.elapsed().as_secs_f64() < 1.0 || last.elapsed().as_secs_f64() < 0.5 {
            return;
        }
        last = Instant::now();
        let pct = p.ops_total.filter(|&t| t > 0).map(|t| format!(" ({:.0}%)", 100.0 * p.ops_done as f64 / t as f64));
        eprintln!(
            "pagesim: {:.1}s wall, {:.3}s simulated, {} accesses{}",
            started.elapsed().as_secs_f64(),
            p.sim_ns as f64 / 1e9,
            p.ops_done,
            pct.unwrap_or_default()
        );
    };
    let opts = pagesim::RunOptions { seed: a.seed, sets: a.sets, progress: Some(Box::new(progress)) };
    let r = pagesim::run_file(&a.file, opts).map_err(|e| e.0)?;
    if a.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&r.to_json()).expect("json"))?;
    } else {
        write!(out, "{}", r.to_table())?;
    }
    Ok(())
}

mod bench;
mod out;
mod reproduce;
mod validate;
