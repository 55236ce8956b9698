//! `pagesim sweep FILE --vary KEY=A,B ...`: a scenario over a grid of overrides and seeds,
//! into a Parquet dataset.
//!
//! Sweeps live in the Python package (python/pagesim/_sweep.py: worker processes, resume,
//! Parquet through pyarrow, the progress bar), where their results are analysed too. This
//! command parses and documents the arguments, then becomes `PYTHON -m pagesim sweep ARGS`
//! (python.rs says which Python, and what happens when it lacks the package).

use crate::out::Stop;
use std::ffi::OsString;
use std::path::PathBuf;

/// `pagesim sweep`'s command line; python/pagesim/_sweep.py's `_parser` takes the same.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The scenario file (TOML; `pagesim describe` lists its keys)
    file: PathBuf,
    /// A scenario key and the values it takes: KEY=A,B,...; may be repeated, and every
    /// combination of the --vary keys' values runs
    ///
    /// KEY is a dotted path as --set takes it (machine.ram, vm.swappiness,
    /// task.0.step.0.passes); each value is a TOML scalar or a bare string. A value that
    /// reads as an integer, a float or true/false is one in the results' column.
    #[arg(long, value_name = "KEY=A,B,...", value_parser = key_values)]
    vary: Vec<String>,
    /// A key whose values go together with the other --zip keys', element by element:
    /// KEY=A,B,...; may be repeated
    ///
    /// `--zip machine.ram=256MB,512MB --zip swap.0.size=512MB,1GB` is two combinations, not
    /// four; every one runs with every combination of the --vary keys. The lists must have one
    /// length.
    #[arg(long = "zip", value_name = "KEY=A,B,...", value_parser = key_values)]
    zips: Vec<String>,
    /// Override a scenario field in every run: KEY=VALUE, may be repeated
    ///
    /// Applied before each run's own --vary and --zip values.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Runs of each combination, with seeds 1..N
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    seeds: u64,
    /// Runs at once, each in a worker process [default: the number of CPUs]
    #[arg(long, short, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    jobs: Option<u32>,
    /// Write every finished run to DIR as it finishes, and resume from it
    ///
    /// DIR becomes a Parquet dataset, one file per run (pandas.read_parquet(DIR), or
    /// pagesim.read_sweep(DIR)). Run again with the same DIR, the sweep runs only what is
    /// missing: after an interruption, or with values or seeds added. DIR belongs to one
    /// scenario: a sweep of the file after it changed, or with other --set overrides, is
    /// refused. Without --out nothing is kept but the printed table.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Run again a run whose worker process died (killed, out of memory) up to N times,
    /// then record it as failed
    #[arg(long, value_name = "N", default_value_t = 2)]
    retries: u32,
    /// Where the runs execute: worker processes on this machine, or Ray tasks on a Ray
    /// cluster
    ///
    /// local: --jobs worker processes here. ray: Ray tasks on the cluster at --address (Ray
    /// must be installed in the sweep's Python: pip install 'pagesim[ray]'), at most --jobs at
    /// once [default: as many as the cluster has CPUs]. Both give the same results and files,
    /// so a sweep that one began the other completes.
    #[arg(long, value_name = "BACKEND", default_value = "local", value_parser = ["local", "ray"])]
    backend: String,
    /// The Ray cluster to run on (--backend ray): HOST:PORT of its head node, as ray.init's
    /// address takes it [default: $RAY_ADDRESS, else the cluster `ray start` started last on
    /// this machine, else a new one on this machine for this sweep]
    #[arg(long, value_name = "ADDR")]
    address: Option<String>,
    /// A counter to print for each run, as the report names it (pswpin, pgmajfault...); may
    /// be repeated [default: pgmajfault, pswpin, pswpout]
    ///
    /// The Parquet dataset has every counter whatever is printed.
    #[arg(long = "stat", value_name = "COUNTER")]
    stats: Vec<String>,
    /// Print no progress bar on stderr
    #[arg(long, short)]
    quiet: bool,
}

/// --vary and --zip: `KEY=A,B,...` with a key and at least one value.
fn key_values(s: &str) -> Result<String, String> {
    match s.split_once('=') {
        Some((key, values)) if !key.is_empty() && !values.is_empty() => Ok(s.to_string()),
        _ => Err("expected KEY=A,B,... (a scenario key and its values)".into()),
    }
}

const HOW_TO_INSTALL_RAY: &str = "for --backend ray, Ray too: `pip install 'pagesim[ray]'` into that Python (in \
                                  pagesim's checkout, `PAGESIM_TEST_EXTRAS=1 bash scripts/install.sh`)";

pub fn run(a: Args) -> Result<(), Stop> {
    let mut args: Vec<OsString> = Vec::new();
    let mut opt = |name: &str, value: OsString| {
        args.push(name.into());
        args.push(value);
    };
    for v in &a.vary {
        opt("--vary", v.into());
    }
    for z in &a.zips {
        opt("--zip", z.into());
    }
    for s in &a.sets {
        opt("--set", s.into());
    }
    opt("--seeds", a.seeds.to_string().into());
    if let Some(j) = a.jobs {
        opt("--jobs", j.to_string().into());
    }
    if let Some(out) = &a.out {
        opt("--out", out.into());
    }
    opt("--retries", a.retries.to_string().into());
    opt("--backend", a.backend.clone().into());
    if let Some(address) = &a.address {
        opt("--address", address.into());
    }
    for s in &a.stats {
        opt("--stat", s.into());
    }
    if a.quiet {
        args.push("--quiet".into());
    }
    args.push("--".into());
    args.push(a.file.into());
    let mut modules = vec!["pagesim._sweep", "pandas", "pyarrow", "tqdm"];
    let ray = a.backend == "ray";
    if ray {
        modules.push("ray");
    }
    crate::python::exec("sweep", &modules, ray.then_some(HOW_TO_INSTALL_RAY), args)
}
