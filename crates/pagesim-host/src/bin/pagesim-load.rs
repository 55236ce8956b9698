//! pagesim-load: runs a scenario's tasks as real processes on this host and prints, as JSON,
//! each task's wall time (see pagesim_host::load and docs/validation.md).
//!
//! ```text
//! pagesim-load SCENARIO(.toml|.json) [--seed N] [--cgroup DIR] [--memcg NAME=DIR]... [--file-dir DIR [--create-files]] [--set KEY=VALUE]...
//! ```
//! Exit status: 0 every task completed, 1 some task did not (killed, failed), 2 bad usage or
//! scenario.

use pagesim::Scenario;
use pagesim_host::load::{create_files, execute, lifecycle, LoadOptions};
use std::path::{Path, PathBuf};

const USAGE: &str = "usage: pagesim-load SCENARIO [--seed N] [--cgroup DIR] [--memcg NAME=DIR]... [--file-dir DIR [--create-files]] [--set KEY=VALUE]...
  SCENARIO       a scenario file (.toml, or .json of the same shape)
  --seed N       RNG seed (default: the scenario's)
  --cgroup DIR   join this cgroup before forking the tasks
  --memcg N=DIR  tasks of scenario memcg N join cgroup DIR
  --file-dir DIR the scenario's [file.NAME] files are DIR/file-NAME (DIR/file-NAME.TID per task)
  --create-files create them first (non-zero data, fsync'ed; not on tmpfs)
  --set K=V      override a scenario key (as in pagesim run)";

fn load(path: &Path, sets: &[String]) -> Result<Scenario, String> {
    if path.extension().is_some_and(|e| e == "json") {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        let v: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
        Scenario::from_json(&v, &path.display().to_string(), sets).map_err(|e| e.0)
    } else {
        Scenario::load_file(path, sets).map_err(|e| e.0)
    }
}

fn parse_args(args: &[String]) -> Result<(PathBuf, Vec<String>, LoadOptions, bool), String> {
    let mut opts = LoadOptions::default();
    let mut create = false;
    let mut sets = Vec::new();
    let mut scenario = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().cloned().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--seed" => {
                let v = value("--seed")?;
                opts.seed = Some(v.parse().map_err(|_| format!("--seed: expected an integer, got \"{v}\""))?);
            }
            "--cgroup" => opts.cgroup = Some(PathBuf::from(value("--cgroup")?)),
            "--memcg" => {
                let v = value("--memcg")?;
                let (n, d) = v.split_once('=').ok_or(format!("--memcg: expected NAME=DIR, got \"{v}\""))?;
                opts.memcgs.insert(n.to_string(), PathBuf::from(d));
            }
            "--file-dir" => opts.file_dir = Some(PathBuf::from(value("--file-dir")?)),
            "--create-files" => create = true,
            "--set" => sets.push(value("--set")?),
            "-h" | "--help" => return Err(String::new()),
            s if s.starts_with('-') => return Err(format!("unknown option {s}")),
            s if scenario.is_none() => scenario = Some(PathBuf::from(s)),
            s => return Err(format!("unexpected argument {s}")),
        }
    }
    if create && opts.file_dir.is_none() {
        return Err("--create-files needs --file-dir".into());
    }
    let scenario = scenario.ok_or("missing SCENARIO")?;
    // A process of the run that execs loads the scenario again (an absolute path: the
    // new image may start elsewhere).
    opts.scenario_path = Some(std::fs::canonicalize(&scenario).unwrap_or_else(|_| scenario.clone()));
    opts.sets = sets.clone();
    Ok((scenario, sets, opts, create))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(lifecycle::EXEC_ARG) {
        // A process of a lifecycle run that exec'd: run the program its parent named.
        let spec = std::env::var(lifecycle::EXEC_ENV).unwrap_or_default();
        lifecycle::exec_child(&spec, load);
    }
    let (path, sets, opts, create) = match parse_args(&args) {
        Ok(v) => v,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return;
        }
        Err(e) => {
            eprintln!("pagesim-load: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let sc = match load(&path, &sets) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pagesim-load: {e}");
            std::process::exit(2);
        }
    };
    for m in opts.memcgs.keys() {
        if !sc.file.memcg.contains_key(m) {
            eprintln!("pagesim-load: --memcg {m}: the scenario has no [memcg.{m}]");
            std::process::exit(2);
        }
    }
    if let (true, Some(dir)) = (create, &opts.file_dir) {
        if let Err(e) = create_files(&sc, dir) {
            eprintln!("pagesim-load: {e}");
            std::process::exit(2);
        }
    }
    match execute(&sc, &opts) {
        Ok(report) => {
            println!("{}", serde_json::to_string_pretty(&report).expect("report serializes"));
            if !report.tasks.iter().all(|t| t.completed()) {
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("pagesim-load: {e}");
            std::process::exit(2);
        }
    }
}
