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
    /// The replacement policy
    #[arg(long, value_enum, default_value = "lru")]
    policy: Policy,
    /// Print the results as JSON
    #[arg(long)]
    json: bool,
    /// List the trace formats and exit
    #[arg(long)]
    list_formats: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Policy {
    /// Least recently used (exact; what libCacheSim's LRU does)
    Lru,
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
    let Policy::Lru = a.policy;
    let path = a.trace.as_ref().expect("clap requires a trace").to_string_lossy().into_owned();
    let mut trace = pagesim::tracefile::open(&path, a.format.as_deref()).map_err(|e| e.to_string())?;
    let started = std::time::Instant::now();
    let mut sizes = a.sizes.clone();
    if let Some(r) = a.ram {
        sizes.insert(0, r);
    }
    // (bytes, misses) per size, the references and (from the curve) the distinct pages.
    let (rows, refs, distinct): (Vec<(u64, u64)>, u64, Option<u64>) = if sizes.len() == 1 {
        let mut c = Lru::new((sizes[0] / 4096).min(u32::MAX as u64) as u32);
        let mut seen = 0u64;
        each_page(&mut *trace, |k| {
            c.access(k);
            seen += 1;
        })
        .map_err(|e| e.to_string())?;
        (vec![(sizes[0], c.misses)], seen, None)
    } else {
        let mut r = ReuseDistances::default();
        each_page(&mut *trace, |k| r.access(k)).map_err(|e| e.to_string())?;
        (sizes.iter().map(|&b| (b, r.misses(b / 4096))).collect(), r.references(), Some(r.distinct()))
    };
    let secs = started.elapsed().as_secs_f64();
    let ratio = |m: u64| if refs == 0 { 0.0 } else { m as f64 / refs as f64 };
    if a.json {
        let cells: Vec<_> = rows
            .iter()
            .map(|&(b, m)| serde_json::json!({"ram_bytes": b, "misses": m, "miss_ratio": ratio(m)}))
            .collect();
        let mut doc = serde_json::json!({"trace": path, "policy": "lru", "references": refs, "sizes": cells});
        if let Some(d) = distinct {
            doc["distinct_pages"] = d.into();
        }
        writeln!(out, "{doc}")?;
    } else {
        write!(out, "trace {path}  policy lru  references {refs} (4 KiB pages)")?;
        if let Some(d) = distinct {
            write!(out, "  distinct pages {d}")?;
        }
        writeln!(out, "  in {secs:.2} s")?;
        for &(b, m) in &rows {
            writeln!(out, "ram {:>10}  misses {:>12}  miss ratio {:.4}", format_bytes(b), m, ratio(m))?;
        }
    }
    Ok(())
}
