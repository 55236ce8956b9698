//! The commands that run in pagesim's Python package (`sweep`, `report`): the CLI parses and
//! documents their arguments (so that `--help`, completions and usage errors are the CLI's
//! like every other command's), then replaces itself with `PYTHON -m pagesim COMMAND ARGS`:
//! the output, signals and exit status are Python's.
//!
//! PYTHON is `$PAGESIM_PYTHON`; else the `.venv` of the checkout the binary was built in
//! (`scripts/install.sh` puts pagesim there, beside `target/`); else `python3` on PATH. When
//! that Python lacks the package or a module the command needs, the command says which and
//! how to install it, and exits with 2.

use crate::out::Stop;
use std::ffi::OsString;
use std::process::{Command, Stdio};

/// The Python that runs the command, and how it was chosen (for messages).
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

/// Imports nothing (pandas alone takes most of a second): asks whether each module named in
/// argv can be found, and prints those that cannot.
const MISSING_MODULES: &str = r#"
import importlib.util, sys
def found(name):
    try:
        return importlib.util.find_spec(name) is not None
    except Exception:
        return False
missing = [n for n in sys.argv[1:] if not found(n)]
print(", ".join(missing))
sys.exit(1 if missing else 0)
"#;

const HOW_TO_INSTALL: &str = "install pagesim's Python package: `bash scripts/install.sh` in pagesim's checkout (it \
                              makes the .venv this command looks for), or `pip install .` there into a Python of your \
                              own and set PAGESIM_PYTHON to that python";

/// Becomes `PYTHON -m pagesim COMMAND ARGS...` once PYTHON is found to have `modules`;
/// `hint` is added to the advice when it lacks one (how to install an optional extra).
pub fn exec(command: &str, modules: &[&str], hint: Option<&str>, args: Vec<OsString>) -> Result<(), Stop> {
    let (python, chosen) = interpreter();
    let shown = python.to_string_lossy().into_owned();
    let check = Command::new(&python)
        .args(["-c", MISSING_MODULES])
        .args(modules)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| {
            format!("{command} runs in Python, and {shown} ({chosen}) cannot be run: {e}; {HOW_TO_INSTALL}")
        })?;
    if !check.status.success() {
        let missing = String::from_utf8_lossy(&check.stdout).trim().to_string();
        let what = if missing.is_empty() { format!("the modules a {command} needs") } else { missing };
        let how = match hint {
            Some(h) => format!("{HOW_TO_INSTALL}; {h}"),
            None => HOW_TO_INSTALL.to_string(),
        };
        return Err(format!("{command} runs in Python, and {shown} ({chosen}) lacks {what}: {how}").into());
    }
    let mut cmd = Command::new(&python);
    cmd.args(["-m", "pagesim", command]).args(args);
    replace_with(cmd, &shown)
}

/// Becomes `cmd`: Ctrl-C, the exit status and the output are the Python command's own.
#[cfg(unix)]
fn replace_with(mut cmd: Command, shown: &str) -> Result<(), Stop> {
    use std::os::unix::process::CommandExt;
    let e = cmd.exec();
    Err(format!("cannot run {shown}: {e}").into())
}

#[cfg(not(unix))]
fn replace_with(mut cmd: Command, shown: &str) -> Result<(), Stop> {
    let status = cmd.status().map_err(|e| format!("cannot run {shown}: {e}"))?;
    std::process::exit(status.code().unwrap_or(1))
}
