//! `pagesim cache`: a trace through a page cache alone (pagesim::cachesim).

use crate::out::{Out, Stop};
use pagesim::cachesim::{each_page, Lru, ReuseDistances};
use pagesim::units::{format_bytes, parse_bytes};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The trace file (zstd-compressed or not)
    #[arg(required_unless_present = "list_formats")]
    trace: Option<PathBuf>,
    /// The trace's format [default: the one its name says, e.g. *.oracleGeneral.bin]
    ///
    /// oracleGeneral, libcachesim-csv, lackey, msr, blkparse, plain (`pagesim cache
    /// --list-formats` describes each).
    #[arg(long, value_name = "FORMAT")]
    format: Option<String>,
    /// The memory the cache has (bytes, or with a unit: 64MB): its size in 4 KiB pages
    #[arg(long, value_name = "SIZE", value_parser = size, required_unless_present_any = ["sizes", "list_formats"])]
    ram: Option<u64>,
    /// Several memory sizes (SIZE,SIZE,...): the miss-ratio curve, from one pass over the
    /// trace (LRU's reuse distances)
    #[arg(long, value_name = "SIZES", value_delimiter = ',', value_parser = size)]
    sizes: Vec<u64>,
    /// The replacement policy: `lru`, or a kernel profile (`linux-6.6`, ... `pagesim
    /// profiles` lists them): the whole model, each page a load through a mapping of one
    /// file (MADV_RANDOM) in a memcg of --ram bytes on a RAM device (brd); a miss is a
    /// major fault. One run per size.
    #[arg(long, default_value = "lru", value_name = "POLICY")]
    policy: String,
    /// With a kernel --policy: replay this fraction of the trace's pages (SHARDS' spatial
    /// sampling by the page's hash) in a memory of that fraction of each size, a run each
    /// RATE times shorter
    #[arg(long, value_name = "RATE", default_value_t = 1.0)]
    sample: f64,
    /// Print the results as JSON
    #[arg(long)]
    json: bool,
    /// List the trace formats and exit
    #[arg(long)]
    list_formats: bool,
}

fn size(s: &str) -> Result<u64, String> {
    let b = parse_bytes(s)?;
    if b < 4096 {
        return Err(format!("{s}: less than one 4 KiB page"));
    }
    Ok(b)
}

pub fn run(a: Args, out: &mut Out) -> Result<(), Stop> {
    if a.list_formats {
        for f in pagesim::tracefile::FORMATS {
            writeln!(out, "{:<16} {}", f.name, f.about)?;
        }
        return Ok(());
    }
    let path = a.trace.as_ref().expect("clap requires a trace").to_string_lossy().into_owned();
    let mut sizes = a.sizes.clone();
    if let Some(r) = a.ram {
        sizes.insert(0, r);
    }
    if a.policy != "lru" {
        return kernel(&a, &path, &sizes, out);
    }
    if a.sample != 1.0 {
        return Err("--sample goes with a kernel --policy (LRU's curve is exact from one pass)".into());
    }
    let mut trace = pagesim::tracefile::open(&path, a.format.as_deref()).map_err(|e| e.to_string())?;
    let started = std::time::Instant::now();
    // (bytes, misses) per size, the references and (from the curve) the distinct pages.
    let (rows, refs, distinct): (Vec<(u64, u64)>, u64, Option<u64>) = if sizes.len() == 1 {
        let mut c = Lru::new((sizes[0] / 4096).min(u32::MAX as u64) as u32);
        let mut seen = 0u64;
        each_page(&mut *trace, |ks| {
            c.access_all(ks);
            seen += ks.len() as u64;
        })
        .map_err(|e| e.to_string())?;
        (vec![(sizes[0], c.misses)], seen, None)
    } else {
        let mut r = ReuseDistances::default();
        each_page(&mut *trace, |ks| ks.iter().for_each(|&k| r.access(k))).map_err(|e| e.to_string())?;
        (sizes.iter().map(|&b| (b, r.misses(b / 4096))).collect(), r.references(), Some(r.distinct()))
    };
    let secs = started.elapsed().as_secs_f64();
    let o = Outcome { policy: "lru", sample: None, refs, distinct, rows, secs };
    o.print(&path, a.json, out)
}

/// What a run of `pagesim cache` found: per size (bytes), the misses.
struct Outcome<'a> {
    policy: &'a str,
    /// The sampling rate of a kernel policy's run (SHARDS); `None`: LRU.
    sample: Option<f64>,
    refs: u64,
    distinct: Option<u64>,
    rows: Vec<(u64, u64)>,
    secs: f64,
}

impl Outcome<'_> {
    fn print(&self, path: &str, json: bool, out: &mut Out) -> Result<(), Stop> {
        let refs = self.refs;
        let ratio = |m: u64| if refs == 0 { 0.0 } else { m as f64 / refs as f64 };
        if json {
            let cells: Vec<_> = self
                .rows
                .iter()
                .map(|&(b, m)| serde_json::json!({"ram_bytes": b, "misses": m, "miss_ratio": ratio(m)}))
                .collect();
            let mut doc = serde_json::json!({"trace": path, "policy": self.policy, "references": refs, "sizes": cells});
            if let Some(d) = self.distinct {
                doc["distinct_pages"] = d.into();
            }
            if let Some(r) = self.sample {
                doc["sample"] = r.into();
            }
            writeln!(out, "{doc}")?;
            return Ok(());
        }
        write!(out, "trace {path}  policy {}  references {refs}", self.policy)?;
        if let Some(r) = self.sample.filter(|&r| r < 1.0) {
            write!(out, " (sampled at {r})")?;
        }
        write!(out, " (4 KiB pages)")?;
        if let Some(d) = self.distinct {
            write!(out, "  distinct pages {d}")?;
        }
        writeln!(out, "  in {:.2} s", self.secs)?;
        for &(b, m) in &self.rows {
            writeln!(out, "ram {:>10}  misses {:>12}  miss ratio {:.4}", format_bytes(b), m, ratio(m))?;
        }
        Ok(())
    }
}

/// `--policy linux-X.Y`: the trace through the whole model under that kernel profile, once per
/// size: a memcg of the size, the trace's pages loaded through a shared mapping of one file
/// on a RAM device, brd, which reads in the faulting thread (`replay::TraceInfo::scan_refs`);
/// a miss is a major fault.
fn kernel(a: &Args, path: &str, sizes: &[u64], out: &mut Out) -> Result<(), Stop> {
    if !pagesim::profile::PROFILES.iter().any(|p| p.name == a.policy) {
        let names: Vec<&str> = pagesim::profile::PROFILES.iter().map(|p| p.name).collect();
        return Err(format!("--policy {}: give lru or a kernel profile: {}", a.policy, names.join(", ")).into());
    }
    let format = match &a.format {
        Some(f) => f.clone(),
        None => pagesim::tracefile::format_of_name(path)
            .map(|f| f.name.to_string())
            .ok_or_else(|| format!("{path}: its name does not say its format: give --format"))?,
    };
    let abs = std::fs::canonicalize(path).map_err(|e| format!("{path}: {e}"))?;
    let mut rows = Vec::new();
    let mut refs = 0;
    let started = std::time::Instant::now();
    if !(a.sample > 0.0 && a.sample <= 1.0) {
        return Err(format!("--sample {}: give a fraction in (0, 1]", a.sample).into());
    }
    // The last size's scenario lives until the next one is built: they share the trace's
    // numbering (`TraceInfo::scan_refs_shared`), read once.
    let mut held: Option<pagesim::Scenario>;
    for &size in sizes {
        // SHARDS: the sampled pages in a memory of the same fraction.
        let scaled = ((size as f64 * a.sample) as u64).max(4096);
        let ram = (4 * scaled).max(256 << 20);
        let sample = if a.sample < 1.0 { format!(", sample = {}", a.sample) } else { String::new() };
        let text = format!(
            "[machine]\nram = {ram}\ncpus = 1\n[kernel]\nprofile = \"{}\"\n[device.d]\nmodel = \"ram\"\n\
             [memcg.cache]\nmax = {scaled}\n[[task]]\nname = \"trace\"\nmemcg = \"cache\"\n\
             program = {{ trace = {:?}, format = {:?}{sample} }}\n",
            a.policy,
            abs.to_string_lossy(),
            format
        );
        let sc = pagesim::Scenario::from_toml(&text, path, &[]).map_err(|e| e.to_string())?;
        held = Some(sc);
        let sc = held.as_ref().expect("just built");
        let all = sc.config.task[0].trace.as_ref().map_or(0, |tp| tp.info.ops_unsampled);
        let r = pagesim::run(sc, pagesim::RunOptions::default()).map_err(|e| e.to_string())?;
        let misses = r.counters.get("pgmajfault").and_then(|v| v.as_u64()).unwrap_or(0);
        // SHARDS-adj: the sample's misses over the references a sample of that rate expects
        // (its hot pages in or out shift the count, not the misses): as misses of the whole
        // trace, divided by the rate.
        refs = all;
        rows.push((size, (misses as f64 / a.sample).round() as u64));
        if a.sample < 1.0 && scaled < 16 << 20 {
            eprintln!(
                "pagesim cache: at {} the sampled memory is {}: the memcg's reclaim batches (32 pages) and \
                 the LRU lists' balance weigh on the estimate; sample more",
                format_bytes(size),
                format_bytes(scaled)
            );
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let o = Outcome { policy: &a.policy, sample: Some(a.sample), refs, distinct: None, rows, secs };
    o.print(path, a.json, out)
}
