//! `pagesim._native`: the PyO3 skin over the pagesim library (STYLE.md §7).
//!
//! Every function converts its arguments, calls one library function with the GIL released and
//! hands back JSON text; the Python package (python/pagesim) parses it and builds the
//! user-facing objects. No simulation logic lives here. A library [`pagesim::Error`] becomes
//! `pagesim.ScenarioError`, a `ValueError` carrying the library's message unchanged. A
//! panic inside the library (a bug) is caught here and becomes `pagesim.RunError`, a
//! `RuntimeError`, so that no `PanicException` (which `except Exception` misses) escapes;
//! the package raises `RunError` too for a run the watchdog stopped.
//!
//! The functions' Python signatures are mirrored in python/pagesim/_native.pyi; a test in
//! tests/python checks the two for drift.

use std::cell::Cell;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::rc::Rc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

pyo3::create_exception!(
    pagesim,
    ScenarioError,
    PyValueError,
    "A scenario, an override or an argument was rejected by pagesim; the message names the \
     file, the key and what was expected."
);

pyo3::create_exception!(
    pagesim,
    RunError,
    pyo3::exceptions::PyRuntimeError,
    "A run failed: stopped as livelocked or deadlocked (its `result` attribute holds the \
     report up to the stop), or an internal error of pagesim."
);

/// How a run handed to Python can fail.
enum Failure {
    Scenario(pagesim::Error),
    Panic(String),
}

impl From<Failure> for PyErr {
    fn from(f: Failure) -> PyErr {
        match f {
            Failure::Scenario(e) => ScenarioError::new_err(e.0),
            Failure::Panic(m) => {
                RunError::new_err(format!("internal error in pagesim (a bug: please report it with the scenario): {m}"))
            }
        }
    }
}

/// Builds the library's options. Called inside the GIL-free closure because the progress
/// callback is not `Send`.
fn run_options(
    seed: Option<u64>,
    sets: Vec<String>,
    max_memory: Option<u64>,
    printed: Option<Rc<Cell<bool>>>,
) -> pagesim::RunOptions<'static> {
    let progress = printed.map(|printed| {
        Box::new(move |p: &pagesim::Progress| {
            if p.wall_s < 1.0 {
                return; // a run shorter than a second prints nothing
            }
            let line = p.line();
            // On a terminal one line is rewritten in place; in a log, one line per report.
            // A failed write to stderr is not worth failing a run for.
            let mut err = std::io::stderr().lock();
            if err.is_terminal() {
                let _ = write!(err, "\r{line}\x1b[K");
                let _ = err.flush();
                printed.set(true);
            } else {
                let _ = writeln!(err, "{line}");
            }
        }) as Box<dyn FnMut(&pagesim::Progress)>
    });
    // Without a limit from the caller, the host's available memory.
    let max_memory = max_memory.or_else(pagesim::host_memory_available);
    pagesim::RunOptions { seed, sets, progress, max_memory, trace_events: false }
}

/// What every run function takes besides its scenario.
struct Opts {
    seed: Option<u64>,
    sets: Vec<String>,
    progress: bool,
    /// Bytes of host memory the run may need; `None`: the host's available memory.
    max_memory: Option<u64>,
}

/// Runs `run` without the GIL and returns the report as JSON text.
fn run_detached<F>(py: Python<'_>, opts: Opts, run: F) -> PyResult<String>
where
    F: FnOnce(pagesim::RunOptions<'static>) -> Result<pagesim::Report, pagesim::Error> + Send,
{
    py.detach(move || {
        let Opts { seed, sets, progress, max_memory } = opts;
        let printed = progress.then(|| Rc::new(Cell::new(false)));
        // The last resort against a bug: the library's panics are fixed where found, and
        // any other must not reach Python as a PanicException.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run(run_options(seed, sets, max_memory, printed.clone()))
        }));
        if printed.is_some_and(|p| p.get()) {
            eprintln!(); // ends the line rewritten in place
        }
        failure(result.map(|r| r.map(|report| report.to_json().to_string())))
    })
    .map_err(PyErr::from)
}

/// What `catch_unwind` around a library call gave, as the binding's [`Failure`].
fn failure<T>(result: std::thread::Result<Result<T, pagesim::Error>>) -> Result<T, Failure> {
    match result {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(Failure::Scenario(e)),
        Err(panic) => Err(Failure::Panic(
            panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic without a message".into()),
        )),
    }
}

/// Loads the scenario file at `path`, applies the `KEY=VALUE` overrides in `sets` and runs it.
/// Returns the report as JSON text.
#[pyfunction]
#[pyo3(signature = (path, seed=None, sets=None, progress=false, max_memory=None))]
fn run_file(
    py: Python<'_>,
    path: PathBuf,
    seed: Option<u64>,
    sets: Option<Vec<String>>,
    progress: bool,
    max_memory: Option<u64>,
) -> PyResult<String> {
    let opts = Opts { seed, sets: sets.unwrap_or_default(), progress, max_memory };
    run_detached(py, opts, move |opts| pagesim::run_file(&path, opts))
}

/// Parses a scenario from TOML text (`origin` names it in messages) and runs it.
/// Returns the report as JSON text.
#[pyfunction]
#[pyo3(signature = (text, origin, seed=None, sets=None, progress=false, max_memory=None))]
fn run_toml(
    py: Python<'_>,
    text: String,
    origin: String,
    seed: Option<u64>,
    sets: Option<Vec<String>>,
    progress: bool,
    max_memory: Option<u64>,
) -> PyResult<String> {
    let opts = Opts { seed, sets: sets.unwrap_or_default(), progress, max_memory };
    run_detached(py, opts, move |opts| pagesim::run_toml(&text, &origin, opts))
}

/// Parses a scenario from JSON text of the same shape as the TOML file (`origin` names it in
/// messages) and runs it. Returns the report as JSON text.
#[pyfunction]
#[pyo3(signature = (json_text, origin, seed=None, sets=None, progress=false, max_memory=None))]
fn run_json(
    py: Python<'_>,
    json_text: String,
    origin: String,
    seed: Option<u64>,
    sets: Option<Vec<String>>,
    progress: bool,
    max_memory: Option<u64>,
) -> PyResult<String> {
    let opts = Opts { seed, sets: sets.unwrap_or_default(), progress, max_memory };
    run_detached(py, opts, move |opts| {
        let value: serde_json::Value =
            serde_json::from_str(&json_text).map_err(|e| pagesim::Error(format!("{origin}: not valid JSON: {e}")))?;
        pagesim::run_json(&value, &origin, opts)
    })
}

/// Runs every table of a seed (`pagesim reproduce NAME`): `name` is a seed (`seed-000`) or
/// a directory holding a reproduce.toml; `sets` apply to every cell, after its row's and
/// column's; `seeds` replaces each table's seed count; `jobs` cells run at once. `progress`,
/// if given, is called after each cell with (cells done, cells in all tables, the cell's
/// row, its column). Returns JSON text: a list of tables, each `title`, `source`, `metric`,
/// `reference` (the column ratios are taken to), `seeds` and `cells` (each what
/// `reproduce --json` prints for it).
#[pyfunction]
#[pyo3(signature = (name, sets=None, seeds=None, jobs=1, progress=None))]
fn reproduce(
    py: Python<'_>,
    name: String,
    sets: Option<Vec<String>>,
    seeds: Option<u32>,
    jobs: usize,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    use pagesim::reproduce::load_named;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let sets = sets.unwrap_or_default();
    if seeds == Some(0) {
        return Err(ScenarioError::new_err("reproduce: seeds must be at least 1"));
    }
    py.detach(move || {
        let run = || {
            let tables = load_named(&name, seeds)?;
            let total: usize = tables.iter().map(|t| t.rows.len() * t.columns.len()).sum();
            let done = AtomicUsize::new(0);
            let mut out = Vec::new();
            for table in &tables {
                let report = |c: &pagesim::reproduce::Cell| {
                    let k = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if let Some(f) = &progress {
                        let (row, column) = (&table.rows[c.row].name, &table.columns[c.column].name);
                        // A failing callback (a bug in it) must not fail the cells: it prints.
                        Python::attach(|py| {
                            if let Err(e) = f.call1(py, (k, total, row, column)) {
                                e.print(py);
                            }
                        });
                    }
                };
                let cells = table.run_all(&sets, jobs.max(1), &report)?;
                let cells_json: Vec<serde_json::Value> =
                    cells.iter().map(|c| table.cell_json(c, &cells, &sets)).collect();
                out.push(serde_json::json!({
                    "title": table.title,
                    "source": table.source,
                    "metric": table.metric.name(),
                    "reference": table.columns[table.reference].name,
                    "seeds": table.seeds,
                    "cells": cells_json,
                }));
            }
            Ok::<_, pagesim::Error>(serde_json::Value::Array(out).to_string())
        };
        // As a run's, a panic (a bug) becomes RunError, not a PanicException.
        failure(std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)))
    })
    .map_err(PyErr::from)
}

/// Every scenario field and tunable with its unit and default, as JSON text.
#[pyfunction]
fn describe() -> PyResult<String> {
    Ok(pagesim::scenario::describe_json().to_string())
}

/// The kernel profiles (named sets of policies and tunables), as JSON text.
#[pyfunction]
fn profiles() -> PyResult<String> {
    Ok(pagesim::scenario::profiles_json().to_string())
}

/// Every kind of policy and model with its registered names and descriptions, as JSON text.
#[pyfunction]
fn registries() -> PyResult<String> {
    Ok(pagesim::scenario::registries_json().to_string())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("RunError", m.py().get_type::<RunError>())?;
    m.add_function(wrap_pyfunction!(run_file, m)?)?;
    m.add_function(wrap_pyfunction!(run_toml, m)?)?;
    m.add_function(wrap_pyfunction!(run_json, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce, m)?)?;
    m.add_function(wrap_pyfunction!(describe, m)?)?;
    m.add_function(wrap_pyfunction!(profiles, m)?)?;
    m.add_function(wrap_pyfunction!(registries, m)?)?;
    Ok(())
}
