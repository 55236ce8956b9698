//! The CLI's stdout, and how a command stops.
//!
//! `pagesim describe | head -1` closes the pipe after one line. Rust ignores SIGPIPE, so the
//! next write fails with EPIPE, and `println!` panics on that failure. Every command writes
//! its results through [`Out`] instead: `write!`/`writeln!` on it return
//! [`Stop::ClosedPipe`] once the reader is gone, the command returns it with `?`, and `main`
//! exits quietly with status 0, as `cat` and `grep` do.

use std::fmt;
use std::io::{self, Write};

/// Why a command stopped before it finished.
#[derive(Debug)]
pub enum Stop {
    /// A runtime error (a scenario that does not load, a failed host run): `main` prints
    /// `pagesim: <message>` on stderr and exits with status 2.
    Error(String),
    /// The command did its work but what it ran failed (a run stopped by the watchdog):
    /// `main` prints `pagesim: <message>` on stderr and exits with status 1.
    Failed(String),
    /// Stdout's reader went away: nothing more to say, exit status 0.
    ClosedPipe,
}

impl From<String> for Stop {
    fn from(message: String) -> Stop {
        Stop::Error(message)
    }
}

impl From<&str> for Stop {
    fn from(message: &str) -> Stop {
        Stop::Error(message.to_string())
    }
}

/// Stdout, locked once for the whole command (line-buffered, as `println!` writes).
pub struct Out(io::StdoutLock<'static>);

impl Out {
    pub fn stdout() -> Out {
        Out(io::stdout().lock())
    }

    /// What `write!(out, ...)` and `writeln!(out, ...)` call: as `io::Write::write_fmt`,
    /// with the error a [`Stop`].
    pub fn write_fmt(&mut self, args: fmt::Arguments<'_>) -> Result<(), Stop> {
        self.0.write_fmt(args).map_err(stop)
    }

    pub fn write_all(&mut self, bytes: &[u8]) -> Result<(), Stop> {
        self.0.write_all(bytes).map_err(stop)
    }

    /// Writes out what is buffered (a last line without a newline), so that its error,
    /// EPIPE too, is seen here rather than ignored at exit.
    pub fn flush(&mut self) -> Result<(), Stop> {
        self.0.flush().map_err(stop)
    }
}

/// A failed write to stdout as a [`Stop`]: EPIPE is the reader going away, not an error.
fn stop(e: io::Error) -> Stop {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Stop::ClosedPipe
    } else {
        Stop::Error(format!("stdout: {e}"))
    }
}
