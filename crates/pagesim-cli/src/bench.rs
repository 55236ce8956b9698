//! `pagesim bench`: simulated accesses per second on one core, and peak RSS.
//!
//! * hits: a 256 MiB anon mapping fully resident, 100M touches (every access a hit);
//! * thrash: sequential passes over 1.1x memory with swap on a `ram` device, so every
//!   access after the first pass faults, swaps in and makes reclaim swap out;
//! * big: 16 GiB of RAM, a 20 GiB mapping and 8 GiB of swap (peak RSS);
//! * cached-read: read(2) of a 256 MiB file that stays cached, in 64 KiB calls (the
//!   page-cache hit path);
//! * file-thrash: sequential read(2) passes over a file 1.1x memory on a `ram` device, so
//!   every page is read through readahead and reclaimed again.

use crate::out::{Out, Stop};
use pagesim::Counter;
use std::time::Instant;

/// `pagesim bench`'s command line.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A shorter run for a quick look: fewer passes, and no `big` case (16 GiB of RAM)
    #[arg(long)]
    quick: bool,
}

/// One core with `ram` and a large `ram` block device, `ram0`, for swap or files.
fn machine(ram: &str) -> String {
    format!(
        r#"
name = "bench"
[machine]
ram = "{ram}"
cpus = 1
[device.ram0]
model = "ram"
capacity = "64GiB"
"#
    )
}

fn scenario(ram: &str, region: &str, swap: &str, passes: u64, pattern: &str) -> String {
    machine(ram)
        + &format!(
            r#"[[swap]]
device = "ram0"
size = "{swap}"
[region.buf]
kind = "anon"
size = "{region}"
[[task]]
name = "bench"
[[task.step]]
region = "buf"
pattern = "{pattern}"
passes = {passes}
op = "write"
"#
        )
}

fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Runs the scenario; returns its report and the wall-clock seconds it took.
fn timed(label: &str, text: &str) -> Result<(pagesim::Report, f64), String> {
    let t = Instant::now();
    let r = pagesim::run_toml(text, label, pagesim::RunOptions::default()).map_err(|e| e.0)?;
    Ok((r, t.elapsed().as_secs_f64()))
}

fn one(label: &str, text: &str, out: &mut Out) -> Result<(), Stop> {
    let (r, wall) = timed(label, text)?;
    let faults = r.counter(Counter::PgFault);
    let ops = accesses_of(text);
    writeln!(
        out,
        "{label:<8} {:>12} accesses in {wall:>7.2} s = {:>8.2} M accesses/s; {faults} faults = {:.2} M faults/s; \
         pswpin {} pswpout {}; peak RSS {} MiB",
        ops,
        ops as f64 / wall / 1e6,
        faults as f64 / wall / 1e6,
        r.counter(Counter::PswpIn),
        r.counter(Counter::PswpOut),
        peak_rss_kb() / 1024
    )
}

fn accesses_of(text: &str) -> u64 {
    let s = pagesim::Scenario::from_toml(text, "bench", &[]).expect("bench scenario");
    pagesim::workload::task_programs(&s, s.config.seed)[0].steps[0].total
}

fn file_scenario(ram: &str, file: &str, passes: u64) -> String {
    machine(ram)
        + &format!(
            r#"[file.f]
device = "ram0"
size = "{file}"
[[task]]
name = "bench"
[[task.step]]
file = "f"
op = "read"
pattern = "seq"
record = "64KiB"
passes = {passes}
"#
        )
}

fn one_file(label: &str, text: &str, out: &mut Out) -> Result<(), Stop> {
    let (r, wall) = timed(label, text)?;
    let pages = r.counter(Counter::FileReadPages);
    writeln!(
        out,
        "{label:<11} {pages:>12} pages read in {wall:>7.2} s = {:>8.2} M pages/s; pgpgin {} KiB, \
         pgsteal_file {}; peak RSS {} MiB",
        pages as f64 / wall / 1e6,
        r.counter(Counter::PgpgIn),
        r.counter(Counter::PgStealFile),
        peak_rss_kb() / 1024
    )
}

pub fn run(a: Args, out: &mut Out) -> Result<(), Stop> {
    let quick = a.quick;
    writeln!(out, "pagesim bench (one core; simulated accesses per wall-clock second)")?;
    // 256 MiB = 65536 pages; 100M touches = 1526 passes.
    let passes = if quick { 100 } else { 1526 };
    one("hits", &scenario("1GiB", "256MiB", "64MiB", passes, "seq"), out)?;
    let (ram, region, p) = if quick { ("256MiB", "282MiB", 3) } else { ("2GiB", "2253MiB", 10) };
    one("thrash", &scenario(ram, region, "4GiB", p, "seq"), out)?;
    if !quick {
        one("big", &scenario("16GiB", "20GiB", "8GiB", 1, "seq"), out)?;
    }
    one_file("cached-read", &file_scenario("1GiB", "256MiB", if quick { 10 } else { 100 }), out)?;
    let (ram, file, p) = if quick { ("256MiB", "282MiB", 3) } else { ("2GiB", "2253MiB", 10) };
    one_file("file-thrash", &file_scenario(ram, file, p), out)?;
    Ok(())
}
