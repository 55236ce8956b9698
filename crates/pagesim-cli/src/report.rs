//! `pagesim report INPUT -o FILE`: a run's or a sweep's report as one static HTML file.
//!
//! The report is written by the Python package (python/pagesim/html.py: pandas for the
//! tables, matplotlib for the plots). This command parses and documents the arguments, then
//! becomes `PYTHON -m pagesim report ARGS` (python.rs says which Python, and what happens
//! when it lacks the package).

use crate::out::Stop;
use std::ffi::OsString;
use std::path::PathBuf;

/// `pagesim report`'s command line; python/pagesim/html.py's `main` takes the same.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A run's report (the file `pagesim run --json` wrote) or a sweep's --out directory
    ///
    /// A run's page has its summary, the kernel profile, the timeline (when the scenario sets
    /// sample_interval), the fault-latency CDF and tables of the tasks, fault latency,
    /// devices, memcgs and every /proc/vmstat counter. A sweep's page plots the elapsed time,
    /// major faults, swap-ins and swap-outs, scans and p99 fault latency against the first
    /// varied key (a line per value of the second; the mean over the seeds, a min-max band)
    /// and tabulates the means per combination and every run.
    input: PathBuf,
    /// The HTML file to write: one page, readable offline (the plots are embedded SVG
    /// images; no script, no external file)
    #[arg(long, short, value_name = "FILE")]
    out: PathBuf,
    /// The scenario file, whose TOML the page shows [default: for a sweep, the file its
    /// _sweep.json names if it is unchanged; for a run, none]
    #[arg(long, value_name = "FILE")]
    scenario: Option<PathBuf>,
    /// The page's title [default: "pagesim run: NAME" or "pagesim sweep: FILE"]
    #[arg(long, value_name = "TEXT")]
    title: Option<String>,
}

pub fn run(a: Args) -> Result<(), Stop> {
    let mut args: Vec<OsString> = vec!["--out".into(), a.out.into()];
    if let Some(s) = a.scenario {
        args.push("--scenario".into());
        args.push(s.into());
    }
    if let Some(t) = a.title {
        args.push("--title".into());
        args.push(t.into());
    }
    args.push("--".into());
    args.push(a.input.into());
    crate::python::exec("report", &["pagesim.html", "pandas", "pyarrow", "matplotlib"], None, args)
}
