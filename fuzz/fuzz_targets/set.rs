//! `--set KEY=VALUE` overrides (one per line) on the quickstart scenario, then a bounded run.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

const QUICKSTART: &str = include_str!("../../scenarios/quickstart.toml");

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let sets: Vec<String> = text.lines().take(16).map(str::to_string).collect();
        common::bounded_run(QUICKSTART, &sets);
    }
});
