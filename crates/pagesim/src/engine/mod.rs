//! (being written) The simulation engine.
use crate::{Error, Report, RunOptions, Scenario};
pub fn run(_s: &Scenario, _opts: RunOptions<'_>) -> Result<Report, Error> {
    Err(Error("the engine is being written".into()))
}
