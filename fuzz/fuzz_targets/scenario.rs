//! A scenario file's text: parsing, validation and resolution, then a bounded run.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        common::bounded_run(text, &[]);
    }
});
