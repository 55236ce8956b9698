//! What a host run measures: /proc/vmstat before and after, DAMON scheme statistics before
//! and after, /proc/meminfo. (memory.stat is in [`crate::memcg`].)
//!
//! /proc/vmstat is machine-wide and its event counters only grow, so a run is measured as
//! the difference of two snapshots. Gauges (`nr_*`) can shrink; the delta saturates at 0
//! for those, so read gauges from the snapshots themselves.
//!
//! DAMON: a system kdamond may already run a pageout scheme on this machine (see the
//! capture notes). Its `sz_applied` says how much it paged out behind the workload's back.
//! The sysfs stats are only refreshed on request: writing `update_schemes_stats` to the
//! kdamond's `state` file. That is the only write made to DAMON.

use crate::sysfs;
use crate::Error;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Where DAMON's sysfs interface lives.
pub const DAMON_ADMIN: &str = "/sys/kernel/mm/damon/admin";

/// A /proc/vmstat snapshot.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Vmstat(pub BTreeMap<String, u64>);

impl Vmstat {
    /// /proc/vmstat, plus the anon mTHP statistics of sysfs under the simulator's `mthp_*`
    /// names ([`crate::tunables::read_mthp_stats`]).
    pub fn read() -> Result<Vmstat, Error> {
        let mut v = Self::read_from(Path::new("/proc/vmstat"))?;
        v.0.extend(crate::tunables::read_mthp_stats(Path::new(crate::run::THP_DIR)));
        Ok(v)
    }

    pub fn read_from(path: &Path) -> Result<Vmstat, Error> {
        let t = std::fs::read_to_string(path).map_err(|e| Error(format!("{}: {e}", path.display())))?;
        Ok(Self::parse(&t))
    }

    pub fn parse(text: &str) -> Vmstat {
        Vmstat(sysfs::parse_key_values(text))
    }

    pub fn get(&self, name: &str) -> u64 {
        self.0.get(name).copied().unwrap_or(0)
    }

    /// `after - self` for every counter in `after` (saturating at 0; a counter missing before
    /// counts from 0).
    pub fn delta(&self, after: &Vmstat) -> BTreeMap<String, u64> {
        after.0.iter().map(|(k, &v)| (k.clone(), v.saturating_sub(self.get(k)))).collect()
    }
}

/// /proc/meminfo as kB values (`MemTotal`, `MemAvailable`, ...; `HugePages_*` are counts).
pub fn parse_meminfo(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((k.trim().to_string(), v.split_whitespace().next()?.parse().ok()?))
        })
        .collect()
}

pub fn meminfo() -> Result<BTreeMap<String, u64>, Error> {
    let t = std::fs::read_to_string("/proc/meminfo").map_err(|e| Error(format!("/proc/meminfo: {e}")))?;
    Ok(parse_meminfo(&t))
}

/// Statistics of every DAMOS scheme of every kdamond, keyed `kdamond/context/scheme`
/// (`0/0/0`), each a map of the `stats/` files (`sz_applied`, `nr_applied`, `sz_tried`, ...).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DamonStats {
    pub schemes: BTreeMap<String, BTreeMap<String, u64>>,
    /// Refresh requests that failed (e.g. a kdamond that stopped meanwhile).
    pub refresh_errors: Vec<String>,
}

impl DamonStats {
    /// Refreshes (running kdamonds only) and reads the stats on the host. A host without
    /// DAMON gives empty stats.
    pub fn read() -> DamonStats {
        Self::read_from(Path::new(DAMON_ADMIN))
    }

    /// Same, under `admin` (DAMON's `admin` directory).
    pub fn read_from(admin: &Path) -> DamonStats {
        let mut out = DamonStats::default();
        let kdamonds = admin.join("kdamonds");
        for kd in numbered(&kdamonds) {
            let kdir = kdamonds.join(&kd);
            let state = kdir.join("state");
            if sysfs::read_opt(&state).as_deref() == Some("on") {
                if let Err(e) = sysfs::write(&state, "update_schemes_stats") {
                    out.refresh_errors.push(e.0);
                }
            }
            let ctxs = kdir.join("contexts");
            for c in numbered(&ctxs) {
                let schemes = ctxs.join(&c).join("schemes");
                for s in numbered(&schemes) {
                    let stats = schemes.join(&s).join("stats");
                    let Ok(rd) = std::fs::read_dir(&stats) else { continue };
                    let m: BTreeMap<String, u64> = rd
                        .filter_map(|e| {
                            let e = e.ok()?;
                            Some((e.file_name().to_string_lossy().into_owned(), sysfs::read_u64(&e.path())?))
                        })
                        .collect();
                    out.schemes.insert(format!("{kd}/{c}/{s}"), m);
                }
            }
        }
        out
    }

    /// Total `sz_applied` of all schemes.
    pub fn sz_applied(&self) -> u64 {
        self.schemes.values().filter_map(|m| m.get("sz_applied")).sum()
    }

    /// Per scheme, how much more `sz_applied` `after` has (saturating).
    pub fn sz_applied_delta(&self, after: &DamonStats) -> BTreeMap<String, u64> {
        let get = |d: &DamonStats, k: &str| d.schemes.get(k).and_then(|m| m.get("sz_applied")).copied().unwrap_or(0);
        after.schemes.keys().map(|k| (k.clone(), get(after, k).saturating_sub(get(self, k)))).collect()
    }
}

/// The numbered subdirectories (`0`, `1`, ...) of `dir`, in numeric order.
fn numbered(dir: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut v: Vec<(u32, String)> = rd
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().into_owned();
            Some((name.parse().ok()?, name))
        })
        .collect();
    v.sort();
    v.into_iter().map(|(_, n)| n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{fake_file, temp_dir};

    #[test]
    fn vmstat_delta_saturates() {
        let a = Vmstat::parse("pswpout 10\nnr_free_pages 500\npgfault 3\n");
        let b = Vmstat::parse("pswpout 25\nnr_free_pages 100\npgfault 3\nnew_counter 4\n");
        let d = a.delta(&b);
        assert_eq!(d["pswpout"], 15);
        assert_eq!(d["nr_free_pages"], 0, "a shrinking gauge saturates");
        assert_eq!((d["pgfault"], d["new_counter"]), (0, 4));
        assert_eq!(a.get("absent"), 0);
    }

    #[test]
    fn meminfo_values() {
        let m = parse_meminfo("MemTotal:       24684096 kB\nMemAvailable:   24399352 kB\nHugePages_Total:       0\n");
        assert_eq!((m["MemTotal"], m["MemAvailable"], m["HugePages_Total"]), (24684096, 24399352, 0));
    }

    #[test]
    fn damon_stats_are_refreshed_then_read() {
        let d = temp_dir("damon");
        let k = "kdamonds/0";
        fake_file(&d, &format!("{k}/state"), "on\n");
        fake_file(&d, &format!("{k}/contexts/0/schemes/0/stats/sz_applied"), "8324509696\n");
        fake_file(&d, &format!("{k}/contexts/0/schemes/0/stats/nr_applied"), "9046\n");
        fake_file(&d, &format!("{k}/contexts/0/schemes/1/stats/sz_applied"), "5\n");
        fake_file(&d, "kdamonds/1/state", "off\n");
        fake_file(&d, "kdamonds/nr_kdamonds", "2\n");
        let before = DamonStats::read_from(&d);
        assert_eq!(std::fs::read_to_string(d.join(k).join("state")).unwrap(), "update_schemes_stats\n");
        assert_eq!(
            std::fs::read_to_string(d.join("kdamonds/1/state")).unwrap(),
            "off\n",
            "a stopped kdamond is left alone"
        );
        assert_eq!(before.schemes["0/0/0"]["nr_applied"], 9046);
        assert_eq!(before.sz_applied(), 8324509700 + 1);
        fake_file(&d, &format!("{k}/contexts/0/schemes/0/stats/sz_applied"), "8324513792\n");
        let after = DamonStats::read_from(&d);
        let delta = before.sz_applied_delta(&after);
        assert_eq!((delta["0/0/0"], delta["0/0/1"]), (4096, 0));
        assert_eq!(DamonStats::read_from(&d.join("absent")), DamonStats::default());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
