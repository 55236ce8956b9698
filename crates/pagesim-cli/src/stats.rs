//! Repeated runs and their statistics, as FreeBSD's ministat(1) prints them.
//!
//! `pagesim run FILE --seeds N` runs a scenario with N seeds on the available cores and
//! prints, for the elapsed time and each counter asked for, N, min, max, median, mean and
//! the sample standard deviation; `pagesim compare` reads two such results (or runs a
//! scenario with two values of a key) and says, with Student's t at 95 % confidence,
//! whether their means differ, and by how much, in ministat's words.

use crate::out::{Out, Stop};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The metric every batch reports besides the counters asked for.
pub const ELAPSED: &str = "elapsed_s";

/// One metric over the runs of a batch: each seed's value, in seed order.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Sample {
    pub values: Vec<f64>,
}

/// ministat's summary of a sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub min: f64,
    pub max: f64,
    pub median: f64,
    pub mean: f64,
    /// The sample standard deviation (n - 1); 0 for one value.
    pub stddev: f64,
}

impl Sample {
    pub fn summary(&self) -> Summary {
        // Mean and variance over the values in seed order; min, max and median sorted.
        let n = self.values.len();
        let mean = self.values.iter().sum::<f64>() / n as f64;
        let var =
            if n > 1 { self.values.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64 } else { 0.0 };
        let mut v = self.values.clone();
        v.sort_by(f64::total_cmp);
        let median = if n.is_multiple_of(2) { (v[n / 2 - 1] + v[n / 2]) / 2.0 } else { v[n / 2] };
        Summary { n, min: v[0], max: v[n - 1], median, mean, stddev: var.sqrt() }
    }
}

/// A batch of runs as `run --seeds --json` writes it and `compare` reads it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Batch {
    pub scenario: String,
    pub sets: Vec<String>,
    pub seeds: Vec<u64>,
    /// Per metric (`elapsed_s` and the counters asked for), each seed's value.
    pub metrics: BTreeMap<String, Sample>,
}

/// ministat's comparison of `b` against `a` at 95 % confidence: `Some((difference,
/// half-width of its interval, pooled s))` when the means differ, `None` when no difference
/// is proven. Needs at least two values in each.
pub fn difference(a: &Sample, b: &Sample) -> Result<Option<(f64, f64, f64)>, String> {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    let (sa, sb) = (a.summary(), b.summary());
    if sa.n < 2 || sb.n < 2 {
        return Err("a comparison needs at least two runs on each side".into());
    }
    let df = (sa.n + sb.n - 2) as f64;
    let pooled = (((sa.n - 1) as f64 * sa.stddev.powi(2) + (sb.n - 1) as f64 * sb.stddev.powi(2)) / df).sqrt();
    let t = StudentsT::new(0.0, 1.0, df).map_err(|e| e.to_string())?.inverse_cdf(0.975);
    let half = t * pooled * (1.0 / sa.n as f64 + 1.0 / sb.n as f64).sqrt();
    let d = sb.mean - sa.mean;
    Ok((d.abs() > half).then_some((d, half, pooled)))
}

/// ministat's table: the header and one line per sample, marked x, +, *, ...
pub fn print_summaries(out: &mut Out, rows: &[(&str, &Sample)]) -> Result<(), Stop> {
    writeln!(out, "    {:>3} {:>13} {:>13} {:>13} {:>13} {:>13}", "N", "Min", "Max", "Median", "Avg", "Stddev")?;
    for (i, (_, s)) in rows.iter().enumerate() {
        let m = s.summary();
        let mark = ['x', '+', '*', '%', '#', '@'][i % 6];
        writeln!(
            out,
            "{mark}   {:>3} {:>13} {:>13} {:>13} {:>13} {:>13}",
            m.n,
            g(m.min),
            g(m.max),
            g(m.median),
            g(m.mean),
            g(m.stddev)
        )?;
    }
    Ok(())
}

/// A number as ministat's `%g`-like columns: up to 8 significant digits, no trailing zeros.
fn g(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let digits = 8 - (v.abs().log10().floor() as i32 + 1);
    let s = format!("{:.*}", digits.clamp(0, 8) as usize, v);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Prints ministat's verdict for `b` against `a`.
pub fn print_difference(out: &mut Out, a: &Sample, b: &Sample) -> Result<(), Stop> {
    match difference(a, b)? {
        None => writeln!(out, "No difference proven at 95.0% confidence")?,
        Some((d, half, pooled)) => {
            let mean = a.summary().mean;
            writeln!(out, "Difference at 95.0% confidence")?;
            writeln!(out, "\t{} +/- {}", g(d), g(half))?;
            if mean != 0.0 {
                writeln!(out, "\t{}% +/- {}%", g(d * 100.0 / mean), g(half * 100.0 / mean))?;
            }
            writeln!(out, "\t(Student's t, pooled s = {})", g(pooled))?;
        }
    }
    Ok(())
}

/// Runs `file` with the overrides `sets` and seeds `seeds` on up to `jobs` threads; returns
/// each run's elapsed time and the counters `stats`, by seed. A run that is stopped (a
/// livelock) is an error.
pub fn run_batch(
    file: &Path,
    sets: &[String],
    seeds: &[u64],
    stats: &[String],
    jobs: usize,
    max_memory: Option<u64>,
    quiet: bool,
) -> Result<Batch, String> {
    let sc = pagesim::Scenario::load_file(file, sets).map_err(|e| e.0)?;
    for s in stats {
        if pagesim::Counter::from_name(s).is_none() && pagesim::Gauge::from_name(s).is_none() {
            return Err(format!("--stat {s}: not a counter or gauge of the report (see `pagesim run --json`)"));
        }
    }
    // Each run holds its own machine: as many at once as the memory allows.
    let need = pagesim::check_memory(&sc, max_memory).map_err(|e| e.0)?.max(1);
    let jobs = jobs.clamp(1, seeds.len()).min(max_memory.map_or(usize::MAX, |m| (m / need).max(1) as usize));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::atomic::AtomicUsize::new(0);
    let results: std::sync::Mutex<Vec<Option<Result<pagesim::Report, String>>>> =
        std::sync::Mutex::new(seeds.iter().map(|_| None).collect());
    let start = std::time::Instant::now();
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= seeds.len() {
                    break;
                }
                let opts = pagesim::RunOptions { seed: Some(seeds[i]), ..Default::default() };
                let r = pagesim::run(&sc, opts).map_err(|e| e.0).and_then(|r| match &r.stop_reason {
                    Some(reason) => Err(format!("seed {}: the run was stopped ({reason})", seeds[i])),
                    None => Ok(r),
                });
                let k = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                if !quiet {
                    eprintln!("[{k}/{}] seed {} ({:.1} s)", seeds.len(), seeds[i], start.elapsed().as_secs_f64());
                }
                results.lock().expect("no thread panicked holding the results")[i] = Some(r);
            });
        }
    });
    let reports: Vec<pagesim::Report> = results
        .into_inner()
        .expect("no thread panicked holding the results")
        .into_iter()
        .map(|r| r.expect("every seed ran"))
        .collect::<Result<_, _>>()?;
    let mut metrics = BTreeMap::new();
    metrics.insert(ELAPSED.to_string(), Sample { values: reports.iter().map(|r| r.elapsed_ns as f64 / 1e9).collect() });
    for s in stats {
        let values = reports.iter().map(|r| r.value(s).unwrap_or(0) as f64).collect();
        metrics.insert(s.clone(), Sample { values });
    }
    Ok(Batch { scenario: file.display().to_string(), sets: sets.to_vec(), seeds: seeds.to_vec(), metrics })
}

/// `run --seeds`' table: one ministat line per metric.
pub fn print_batch(out: &mut Out, b: &Batch) -> Result<(), Stop> {
    writeln!(out, "{} with seeds {}..{}", b.scenario, b.seeds[0], b.seeds[b.seeds.len() - 1])?;
    for (name, s) in &b.metrics {
        writeln!(out, "\n{name}")?;
        print_summaries(out, &[(name, s)])?;
    }
    Ok(())
}

/// `pagesim compare`'s command line.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// Two results of `pagesim run FILE --seeds N --json` (x and +); or, with --vary, one
    /// scenario file
    #[arg(required = true, num_args = 1..=2)]
    inputs: Vec<PathBuf>,
    /// Run the scenario with KEY set to A (x) and to B (+), --seeds runs each: KEY=A,B
    #[arg(long, value_name = "KEY=A,B")]
    vary: Option<String>,
    /// Runs per side with --vary, seeds 1..N
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u64).range(2..))]
    seeds: u64,
    /// A counter to compare besides the elapsed time (with --vary; from files, every metric
    /// both hold); may be repeated
    #[arg(long = "stat", value_name = "COUNTER")]
    stats: Vec<String>,
    /// Override a scenario field of both sides (with --vary): KEY=VALUE, may be repeated
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Print no progress on stderr
    #[arg(long, short)]
    quiet: bool,
}

fn read_batch(path: &Path) -> Result<Batch, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text)
        .map_err(|e| format!("{}: not the JSON of `pagesim run FILE --seeds N --json` ({e})", path.display()))
}

pub fn compare(a: CompareArgs, out: &mut Out) -> Result<(), Stop> {
    let (x, y) = match (&a.vary, a.inputs.as_slice()) {
        (Some(vary), [file]) => {
            let Some((key, values)) = vary.split_once('=') else {
                return Err(format!("--vary {vary}: expected KEY=A,B").into());
            };
            let v: Vec<&str> = values.split(',').collect();
            let [va, vb] = v.as_slice() else {
                return Err(format!("--vary {vary}: expected two values, KEY=A,B").into());
            };
            let seeds: Vec<u64> = (1..=a.seeds).collect();
            let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
            let max = pagesim::host_memory_available();
            let side = |value: &str| {
                let mut sets = a.sets.clone();
                sets.push(format!("{key}={value}"));
                run_batch(file, &sets, &seeds, &a.stats, jobs, max, a.quiet)
            };
            (side(va)?, side(vb)?)
        }
        (Some(_), _) => return Err("--vary takes one scenario file".to_string().into()),
        (None, [fa, fb]) => {
            if !a.stats.is_empty() || !a.sets.is_empty() {
                return Err("--stat and --set go with --vary; two result files are compared on what both hold"
                    .to_string()
                    .into());
            }
            (read_batch(fa)?, read_batch(fb)?)
        }
        (None, _) => return Err("give two result files, or one scenario with --vary KEY=A,B".to_string().into()),
    };
    let name = |b: &Batch| format!("{} {}", b.scenario, b.sets.join(" "));
    writeln!(out, "x {}\n+ {}", name(&x), name(&y))?;
    let mut any = false;
    for (metric, sx) in &x.metrics {
        let Some(sy) = y.metrics.get(metric) else { continue };
        any = true;
        writeln!(out, "\n{metric}")?;
        print_summaries(out, &[(metric, sx), (metric, sy)])?;
        print_difference(out, sx, sy)?;
    }
    if !any {
        return Err("the two results have no metric in common".to_string().into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ministat's own example shape: two samples of five, their summary and t-test.
    #[test]
    fn summaries_and_the_t_test_are_ministat_s() {
        let a = Sample { values: vec![5.0, 3.0, 4.0, 1.0, 2.0] };
        let s = a.summary();
        assert_eq!((s.n, s.min, s.max, s.median, s.mean), (5, 1.0, 5.0, 3.0, 3.0));
        assert!((s.stddev - 2.5f64.sqrt()).abs() < 1e-12);
        let even = Sample { values: vec![4.0, 1.0, 3.0, 2.0] };
        assert_eq!(even.summary().median, 2.5);
        // Means 3 and 13, pooled s = sqrt(2.5), t(0.975, 8) = 2.306004: half-width
        // 2.306004 * 1.5811388 * sqrt(0.4) = 2.30600.
        let b = Sample { values: vec![15.0, 13.0, 14.0, 11.0, 12.0] };
        let (d, half, pooled) = difference(&a, &b).unwrap().expect("a difference");
        assert_eq!(d, 10.0);
        assert!((pooled - 2.5f64.sqrt()).abs() < 1e-12);
        assert!((half - 2.306004).abs() < 1e-5, "{half}");
        // Means 3 and 4 with that spread: within the interval.
        let c = Sample { values: vec![6.0, 4.0, 5.0, 2.0, 3.0] };
        assert_eq!(difference(&a, &c).unwrap(), None);
        assert!(difference(&Sample { values: vec![1.0] }, &c).is_err());
    }

    #[test]
    fn numbers_print_as_ministat_s_columns() {
        assert_eq!(g(754.05), "754.05");
        assert_eq!(g(0.5), "0.5");
        assert_eq!(g(123456789.0), "123456789");
        assert_eq!(g(-78.5), "-78.5");
    }
}
