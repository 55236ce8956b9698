//! The dependency graph between the folders (and top-level modules) of `src/` runs one way:
//! a module imports only modules of lower layers, so there is no cycle between folders.
//! The layers, bottom up:
//!
//! ```text
//!   units rng histogram registry ids profile trace prefetch   leaves (profile: what each
//!                                      kernel version does; trace: the tracepoint event log)
//!   tracefile                          trace files read, in every format
//!   cachesim                           the cache-only LRU of `pagesim cache`
//!   replay                             a captured program's events, per thread
//!   mm                                 frames, memcgs, LRU lists, VMAs, PTEs, swap entries
//!   device                             block devices and their queues
//!   pagecache swap writeback           address spaces and file readahead; swap areas, swap
//!                                      cache, swap readahead, zswap's pool; dirty limits,
//!                                      the flusher's inode queues
//!   reclaim                            scan control, scan balance, kswapd's state
//!   scenario                           the scenario file resolved against the registries
//!   workload                           workload programs
//!   engine                             the machine, its clock and threads, the kernel paths
//!   report                             what a run reports
//!   reproduce                          the seeds' tables (read from reports)
//! ```
//!
//! The subsystem folders hold state and policies; the kernel paths, which cross them in
//! both directions (a fault allocates, allocation reclaims, reclaim swaps out, a swap-in
//! allocates), are in engine/, as the kernel keeps them all in its mm/. Upward imports that
//! must stay for a while go in [`KNOWN_UPWARD`]; this test fails on any other, and on a
//! listed one that is gone.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const LAYERS: &[&[&str]] = &[
    &["units", "rng", "histogram", "registry", "ids", "locking", "profile", "trace", "prefetch"],
    &["tracefile"],
    &["cachesim"],
    &["replay"],
    &["mm"],
    &["device"],
    &["pagecache", "swap", "writeback"],
    &["reclaim"],
    &["scenario"],
    &["workload"],
    &["engine"],
    &["report"],
    &["reproduce"],
];

/// Upward imports still to be removed: (from, to).
const KNOWN_UPWARD: &[(&str, &str)] = &[];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// Every `crate::MODULE` a module's files name, outside `#[cfg(test)]` code (test helpers
/// may reach anywhere).
fn imports(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path.strip_prefix(src).unwrap();
            let top =
                rel.components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_string();
            let name = rel.file_name().unwrap().to_string_lossy();
            if top == "lib" || top == "testutil" || name == "tests.rs" || path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            // Code after the first `#[cfg(test)]` is test code in this crate's files;
            // comments name modules without importing them.
            let code: String = text
                .split("#[cfg(test)]")
                .next()
                .unwrap()
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            for (i, _) in code.match_indices("crate::") {
                let rest = &code[i + "crate::".len()..];
                let target: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if target != top && layer(&target).is_some() {
                    out.entry(top.clone()).or_default().insert(target);
                }
            }
        }
    }
    out
}

#[test]
fn folders_import_only_lower_layers_apart_from_the_known_debts() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = imports(&src);
    for from in graph.keys() {
        assert!(layer(from).is_some(), "src/{from} is in no layer: add it to LAYERS");
    }
    let mut upward = BTreeSet::new();
    for (from, tos) in &graph {
        for to in tos {
            if layer(to) >= layer(from) {
                upward.insert((from.as_str(), to.as_str()));
            }
        }
    }
    let known: BTreeSet<(&str, &str)> = KNOWN_UPWARD.iter().copied().collect();
    let new: Vec<_> = upward.difference(&known).collect();
    assert!(new.is_empty(), "upward or sideways imports between layers: {new:?}");
    let paid: Vec<_> = known.difference(&upward).collect();
    assert!(paid.is_empty(), "no longer imported, take off KNOWN_UPWARD: {paid:?}");
}
