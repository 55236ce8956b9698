//! A reproduce table's text (`reproduce.toml`), loaded against seed 000's directory (so a
//! `scenario = "base.toml"` resolves); every cell's scenario is resolved by the loader.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/seed-000-swapin-readahead"));
        let _ = pagesim::reproduce::Table::from_toml(text, "fuzz/reproduce.toml", dir);
    }
});
