//! Helpers shared by the integration tests that run small swapping scenarios.

use pagesim::{run_toml, Report, RunOptions};

/// A machine with `ram_mb` of RAM of which 4 MiB are reserved, swap on `dev`, one task.
pub fn scenario(ram_mb: u64, dev: &str, swap_mb: u64, kind: &str, region_mb: u64, steps: &str, extra: &str) -> String {
    format!(
        r#"
[machine]
ram = "{ram_mb}MB"
cpus = 2
kernel_reserved = "4MB"
[device.d]
model = "{dev}"
[[swap]]
device = "d"
size = "{swap_mb}MB"
[region.buf]
kind = "{kind}"
size = "{region_mb}MB"
{extra}
[[task]]
name = "t"
{steps}
"#
    )
}

pub fn step(pattern: &str, passes: u64, op: &str) -> String {
    format!("[[task.step]]\nregion = \"buf\"\npattern = \"{pattern}\"\npasses = {passes}\nop = \"{op}\"\n")
}

pub fn run(text: &str, sets: &[&str]) -> Report {
    let opts = RunOptions { sets: sets.iter().map(|s| s.to_string()).collect(), ..Default::default() };
    run_toml(text, "test.toml", opts).unwrap_or_else(|e| panic!("{e}"))
}
