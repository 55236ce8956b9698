//! `pagesim sweep FILE --vary KEY=A,B ...`: a scenario over a grid of overrides and seeds,
//! into a Parquet dataset.
//!
//! Sweeps live in the Python package (python/pagesim/_sweep.py: worker processes, resume,
//! Parquet through pyarrow, the progress bar), where their results are analysed too. This
//! command parses and documents the arguments (so that `--help`, completions and usage errors
//! are the CLI's like every other command's), then replaces itself with
//! `PYTHON -m pagesim sweep ARGS`: its output, signals and exit status are Python's.
//!
//! PYTHON is `$PAGESIM_PYTHON`; else the `.venv` of the checkout the binary was built in
//! (`scripts/install.sh` puts pagesim there, beside `target/`); else `python3` on PATH. When
//! that Python lacks the package, the command says how to install it and exits with 2.

use crate::out::Stop;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, Stdio};

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

/// The Python that runs the sweep, and how it was chosen (for messages).
fn interpreter() -> (OsString, &'static str) {
    if let Some(p) = std::env::var_os("PAGESIM_PYTHON").filter(|p| !p.is_empty()) {
        return (p, "$PAGESIM_PYTHON");
    }
    // target/release/pagesim: the checkout is two directories up.
    if let Ok(exe) = std::env::current_exe() {
        for dir in exe.ancestors().skip(1).take(3) {
            let python = dir.join(".venv/bin/python");
            if python.is_file() {
                return (python.into_os_string(), "the .venv beside the pagesim binary's target directory");
            }
        }
    }
    ("python3".into(), "python3 on PATH")
}

/// Imports nothing (pandas alone takes most of a second): asks whether each module the
/// sweep needs can be found, and prints those that cannot.
/// More modules to look for are its arguments (`ray` for --backend ray).
const MISSING_MODULES: &str = r#"
import importlib.util, sys
def found(name):
    try:
        return importlib.util.find_spec(name) is not None
    except Exception:
        return False
missing = [n for n in ("pagesim._sweep", "pandas", "pyarrow", "tqdm", *sys.argv[1:]) if not found(n)]
print(", ".join(missing))
sys.exit(1 if missing else 0)
"#;

const HOW_TO_INSTALL: &str = "install pagesim's Python package: `bash scripts/install.sh` in pagesim's checkout (it \
                              makes the .venv this command looks for), or `pip install .` there into a Python of your \
                              own and set PAGESIM_PYTHON to that python";

const HOW_TO_INSTALL_RAY: &str = "for --backend ray, Ray too: `pip install 'pagesim[ray]'` into that Python (in \
                                  pagesim's checkout, `PAGESIM_TEST_EXTRAS=1 bash scripts/install.sh`)";

pub fn run(a: Args) -> Result<(), Stop> {
    let (python, chosen) = interpreter();
    let shown = python.to_string_lossy().into_owned();
    let ray = a.backend == "ray";
    let check = Command::new(&python)
        .args(["-c", MISSING_MODULES])
        .args(ray.then_some("ray"))
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("sweep runs in Python, and {shown} ({chosen}) cannot be run: {e}; {HOW_TO_INSTALL}"))?;
    if !check.status.success() {
        let missing = String::from_utf8_lossy(&check.stdout).trim().to_string();
        let what = if missing.is_empty() { "the modules a sweep needs".to_string() } else { missing };
        let how = if ray { format!("{HOW_TO_INSTALL}; {HOW_TO_INSTALL_RAY}") } else { HOW_TO_INSTALL.to_string() };
        return Err(format!("sweep runs in Python, and {shown} ({chosen}) lacks {what}: {how}").into());
    }

    let mut cmd = Command::new(&python);
    cmd.args(["-m", "pagesim", "sweep"]);
    for v in &a.vary {
        cmd.arg("--vary").arg(v);
    }
    for z in &a.zips {
        cmd.arg("--zip").arg(z);
    }
    for s in &a.sets {
        cmd.arg("--set").arg(s);
    }
    cmd.arg("--seeds").arg(a.seeds.to_string());
    if let Some(j) = a.jobs {
        cmd.arg("--jobs").arg(j.to_string());
    }
    if let Some(out) = &a.out {
        cmd.arg("--out").arg(out);
    }
    cmd.arg("--retries").arg(a.retries.to_string());
    cmd.arg("--backend").arg(&a.backend);
    if let Some(address) = &a.address {
        cmd.arg("--address").arg(address);
    }
    for s in &a.stats {
        cmd.arg("--stat").arg(s);
    }
    if a.quiet {
        cmd.arg("--quiet");
    }
    cmd.arg("--").arg(&a.file);
    exec(cmd, &shown)
}

/// Becomes `cmd`: Ctrl-C, the exit status and the output are the Python sweep's own.
#[cfg(unix)]
fn exec(mut cmd: Command, shown: &str) -> Result<(), Stop> {
    use std::os::unix::process::CommandExt;
    let e = cmd.exec();
    Err(format!("cannot run {shown}: {e}").into())
}

#[cfg(not(unix))]
fn exec(mut cmd: Command, shown: &str) -> Result<(), Stop> {
    let status = cmd.status().map_err(|e| format!("cannot run {shown}: {e}"))?;
    std::process::exit(status.code().unwrap_or(1))
}
