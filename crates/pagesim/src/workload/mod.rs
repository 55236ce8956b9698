//! Workload programs: what a task touches, in which order.
//!
//! A program is a list of steps; each step walks one region (or reads one file, in records)
//! with a pattern (sequential passes, reverse, uniform random, zipf, stride, sysbench's
//! "special") doing reads or writes, with optional think time and rate.
//! [`BoundStep::next_index`] yields one page index at a time with no allocation, so the
//! engine's hit loop stays tight.

use crate::rng::Rng;
use crate::scenario::config::{Amount, PatternParams, Step, Target};
use crate::scenario::{defaults, AccessOp, Fadvise, Pattern, Scenario};

/// A step bound to a region instance of `pages` pages, or to a file.
///
/// A mapping step makes accesses to pages; a file step makes read(2) calls of
/// `record_pages` pages each. The pattern chooses *units*: pages of the mapping, or records
/// of the file (record r covers pages `r × record_pages ..`).
#[derive(Clone, Debug)]
pub struct BoundStep {
    /// Pages of the region or file.
    pub pages: u32,
    pub pattern: Pattern,
    pub write: bool,
    /// Total accesses (or read calls) this step makes.
    pub total: u64,
    pub stride: u32,
    pub think_ns: u64,
    /// A file step (read calls) rather than accesses to a mapping.
    pub file: bool,
    /// Pages per read call (1 for mapping steps).
    pub record_pages: u32,
    /// Units the pattern chooses from: pages, or whole records of the file.
    pub units: u32,
    /// Probability that an access goes to the unit after the previous one.
    pub then_next: f64,
    /// Bytes per second a file step holds to (0: unlimited).
    pub rate: u64,
    /// How the rate is held.
    pub pace: crate::scenario::Pace,
    /// posix_fadvise a file step gives when it opens the file.
    pub fadvise: Option<Fadvise>,
    /// The call a file step makes (read, pread, write, pwrite, or a whole-file call).
    pub op: AccessOp,
    /// A write step's fsync(2) after every this many calls (0: never).
    pub fsync_every: u64,
    zipf: Option<Zipf>,
    /// Units per zipf rank (hot clusters).
    cluster_units: u32,
    /// Pattern special: (hot units, percent of draws to them, draws averaged otherwise).
    special: (u32, u32, u32),
}

impl BoundStep {
    /// Binds a resolved step (its defaults applied) to `pages` pages.
    pub fn new(step: &Step, pages: u32) -> Self {
        let (file, record_pages, rate, fadvise, fsync_every) = match &step.target {
            Target::Region { .. } => (false, 1, None, None, 0),
            Target::File(f) => {
                (true, (f.record / 4096).clamp(1, pages as u64) as u32, f.rate, f.fadvise, f.fsync_every)
            }
            Target::Control(_) => (false, 1, None, None, 0),
        };
        // A whole-file call (fsync, truncate...) is one unit: `passes` calls.
        let units = if step.op.is_file_sync() { 1 } else { (pages / record_pages).max(1) };
        let total = match step.amount {
            Amount::Passes(passes) => passes * units as u64,
            Amount::Accesses(n) => n,
        };
        // The pattern's parameters; the other patterns' fields are never read.
        let mut stride = 1;
        let mut zipf = None;
        let mut cluster_units = 1;
        let mut special = (defaults::SPECIAL_PCT, defaults::SPECIAL_RES, defaults::SPECIAL_ITER);
        match step.pattern {
            PatternParams::Seq | PatternParams::Reverse | PatternParams::Random => {}
            PatternParams::Stride { stride: s } => stride = s.min(units as u64).max(1) as u32,
            PatternParams::Zipf { zipf_s, cluster } => {
                cluster_units = cluster.map_or(1, |c| (c / 4096 / record_pages as u64).clamp(1, units as u64) as u32);
                zipf = Some(Zipf::new(units.div_ceil(cluster_units), zipf_s));
            }
            PatternParams::Special { special_pct, special_res, special_iter } => {
                special = (special_pct, special_res, special_iter)
            }
        }
        BoundStep {
            pages,
            pattern: step.pattern.kind(),
            write: matches!(step.op, AccessOp::Write | AccessOp::Pwrite | AccessOp::Append),
            total,
            stride,
            think_ns: step.think,
            file,
            record_pages,
            units,
            then_next: step.then_next,
            rate: rate.map_or(0, |r| r.rate),
            pace: rate.map_or(defaults::PACE, |r| r.pace),
            fadvise,
            op: step.op,
            fsync_every,
            zipf,
            cluster_units,
            special,
        }
    }

    /// Unit (page, or record of a file step) of access number `i` (0-based) of this step,
    /// for a step without `then_next`.
    #[inline]
    pub fn index(&self, i: u64, rng: &mut Rng) -> u32 {
        let n = self.units as u64;
        match self.pattern {
            Pattern::Seq => (i % n) as u32,
            Pattern::Reverse => (n - 1 - i % n) as u32,
            Pattern::Random => rng.below(n) as u32,
            Pattern::Stride => {
                // Offsets 0, s, 2s, ... then 1, 1+s, ...: every unit once per pass.
                let s = self.stride as u64;
                let j = i % n;
                let per_lane = n.div_ceil(s);
                let (lane, k) = (j / per_lane, j % per_lane);
                let idx = lane + k * s;
                if idx < n {
                    idx as u32
                } else {
                    // Short last column of a pass when s does not divide n.
                    j as u32
                }
            }
            Pattern::Special => special(n, self.special, rng),
            Pattern::Zipf => {
                let c = self.zipf.as_ref().expect("zipf table").sample(rng);
                if self.cluster_units == 1 {
                    c
                } else {
                    let u = c as u64 * self.cluster_units as u64 + rng.below(self.cluster_units as u64);
                    u.min(n - 1) as u32
                }
            }
        }
    }

    /// Unit of access `i` when the previous access went to `last`: with probability
    /// `then_next` (a draw is made only when it is set, and not for the first access) the
    /// unit after `last`, otherwise [`BoundStep::index`].
    #[inline]
    pub fn next_index(&self, i: u64, rng: &mut Rng, last: u32) -> u32 {
        if self.then_next > 0.0 && i > 0 && rng.unit() < self.then_next && last + 1 < self.units {
            return last + 1;
        }
        self.index(i, rng)
    }
}

/// sysbench 0.4's `rnd_func_special` over units `0..n`: one uniform draw over `k` times
/// the range, `k = floor(100 / (100 - res))`; a draw in the first part gives the mean of
/// `iter` uniform draws, any other is folded onto the `pct` percent of the units centred on
/// the middle of the range.
fn special(n: u64, (pct, res, iter): (u32, u32, u32), rng: &mut Rng) -> u32 {
    let k = 100 / (100 - res as u64);
    let draw = rng.below(n * k);
    if draw < n {
        let sum: u64 = (0..iter).map(|_| rng.below(n)).sum();
        return (sum / iter as u64) as u32;
    }
    let d = (n * pct as u64 / 100).max(1);
    let first = (n / 2).saturating_sub(n * pct as u64 / 200);
    (first + draw % d).min(n - 1) as u32
}

/// A zipf sampler over `n` ranks with exponent `s`, by inversion of a coarse CDF over
/// geometric rank buckets (exact within a bucket by uniform choice). Ranks are scattered
/// over the region by a fixed odd multiplier so hot pages are not all adjacent.
#[derive(Clone, Debug)]
struct Zipf {
    n: u32,
    /// (first rank of the bucket, cumulative weight up to its end)
    buckets: Vec<(u32, f64)>,
}

impl Zipf {
    fn new(n: u32, s: f64) -> Self {
        let mut buckets = Vec::new();
        let mut lo = 0u32;
        let mut acc = 0.0;
        while lo < n {
            let hi = ((lo as f64 * 1.05) as u32).max(lo + 1).min(n);
            for r in lo..hi.min(lo + 64) {
                acc += 1.0 / ((r + 1) as f64).powf(s);
            }
            if hi > lo + 64 {
                // Integral of x^-s over the rest of the bucket.
                let (a, b) = ((lo + 65) as f64, (hi + 1) as f64);
                acc +=
                    if (s - 1.0).abs() < 1e-9 { (b / a).ln() } else { (b.powf(1.0 - s) - a.powf(1.0 - s)) / (1.0 - s) };
            }
            buckets.push((lo, acc));
            lo = hi;
        }
        Zipf { n, buckets }
    }

    fn sample(&self, rng: &mut Rng) -> u32 {
        let total = self.buckets.last().expect("non-empty").1;
        let u = rng.unit() * total;
        let b = self.buckets.partition_point(|&(_, c)| c <= u).min(self.buckets.len() - 1);
        let lo = self.buckets[b].0;
        let hi = self.buckets.get(b + 1).map_or(self.n, |x| x.0);
        let rank = lo + rng.below((hi - lo) as u64) as u32;
        ((rank as u64 * 2_654_435_761) % self.n as u64) as u32
    }
}

/// One process of a scenario (task instance `instance` of `scenario.config.task[task]`) with
/// its program bound to its regions and its own RNG stream, derived exactly as
/// `engine::Sim::new` derives them: one root [`Rng`] from the seed, one `split()` per task
/// instance in file order. Whoever replays a scenario outside the engine (the host load
/// generator of pagesim-host) calls this, so a task's random and zipf accesses hit the
/// same page indices in the same order as in the simulator; a test pins it to the engine.
#[derive(Clone, Debug)]
pub struct TaskProgram {
    /// Index of the task in `scenario.config.task`.
    pub task: usize,
    /// Instance number, 0..count.
    pub instance: u32,
    /// `name`, or `name.k` when the task has count > 1 (the report's names).
    pub name: String,
    /// Steps in program order.
    pub steps: Vec<BoundStep>,
    /// Per step, what it accesses: an index into `regions` (mapping steps) or into
    /// `files` (file steps).
    pub targets: Vec<u32>,
    /// Names of the regions this process maps, in order of first use.
    pub regions: Vec<String>,
    /// Names of the files this process reads with read(2)/pread(2), in order of first use.
    pub files: Vec<String>,
    /// The process's stream: call `steps[s].index(i, &mut rng)` for every access of every
    /// step in order, as the engine does.
    pub rng: Rng,
}

/// Position of `name` in `list`, appended if new.
fn intern(list: &mut Vec<String>, name: &str) -> u32 {
    match list.iter().position(|r| r == name) {
        Some(i) => i as u32,
        None => {
            list.push(name.to_string());
            (list.len() - 1) as u32
        }
    }
}

/// The accesses (and calls) one run of program `t` makes: its steps over their regions'
/// and files' sizes, a heap's at the size its last brk gave it (the median).
pub fn program_ops(c: &crate::scenario::config::Config, t: &crate::scenario::config::Task) -> u64 {
    let mut brk: Vec<(u32, u32)> = Vec::new();
    let mut ops = 0u64;
    for st in &t.step {
        let pages = match &st.target {
            Target::Control(ctl) => {
                if let (AccessOp::Brk, Some(size)) = (st.op, ctl.size) {
                    brk.retain(|&(r, _)| r != ctl.region_index);
                    brk.push((ctl.region_index, size.div_ceil(4096).max(1) as u32));
                }
                1
            }
            Target::Region { index, .. } => {
                brk.iter().find(|&&(r, _)| r == *index).map_or_else(|| c.step_pages(st), |&(_, p)| p)
            }
            Target::File(_) => c.step_pages(st),
        };
        ops += BoundStep::new(st, pages).total;
    }
    ops
}

/// Every process of the scenario, in the engine's task order.
pub fn task_programs(sc: &Scenario, seed: u64) -> Vec<TaskProgram> {
    let c = &sc.config;
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    for (ti, t) in c.task.iter().enumerate() {
        for k in 0..t.count {
            let mut regions: Vec<String> = Vec::new();
            let mut files: Vec<String> = Vec::new();
            let mut steps = Vec::with_capacity(t.step.len());
            let mut targets = Vec::with_capacity(t.step.len());
            for st in &t.step {
                targets.push(match &st.target {
                    Target::File(f) => intern(&mut files, &f.file),
                    Target::Region { region, .. } => intern(&mut regions, region),
                    // The host runner refuses lifecycle steps (load.rs `check`).
                    Target::Control(_) => u32::MAX,
                });
                steps.push(BoundStep::new(st, c.step_pages(st)));
            }
            let name = if t.count > 1 { format!("{}.{k}", t.name) } else { t.name.clone() };
            out.push(TaskProgram { task: ti, instance: k, name, steps, targets, regions, files, rng: rng.split() });
        }
    }
    out
}

/// The programs of a run (the scenario's tasks) as processes start them: spawn, fork and
/// exec steps bind a program's steps to a process when it begins to run it.
pub struct Programs {
    pub progs: Vec<Program>,
    /// The scenario's regions (what mapping one needs), and the shmem object of each shmem
    /// region.
    pub regions: Vec<crate::scenario::config::Region>,
    pub shmem_of: Vec<Option<u32>>,
    /// The next process slot a spawn or fork takes.
    pub next_slot: u32,
}

/// One program: a scenario task's steps and settings.
pub struct Program {
    pub name: String,
    pub memcg: u16,
    /// The program names its memcg (a child of another memcg's process moves there).
    pub own_memcg: bool,
    pub cpus: Option<Box<[u32]>>,
    pub steps: Vec<Step>,
    /// Pages each step works on at its region's or file's full size.
    pub step_pages: Vec<u32>,
    /// Runs begun: run r reads run r's copies of per-task files.
    pub runs_begun: u32,
    /// Processes of this program started by spawn and fork (for their names).
    pub children_begun: u32,
    /// The open file each `shared_fd` step shares among the program's processes.
    pub shared_ra: Vec<Option<u32>>,
}

impl Programs {
    pub fn new(c: &crate::scenario::config::Config, shmem_of: Vec<Option<u32>>) -> Programs {
        let progs = c
            .task
            .iter()
            .map(|t| Program {
                name: t.name.clone(),
                memcg: t.memcg_index,
                own_memcg: t.memcg.is_some(),
                cpus: t.cpus.as_deref().map(Box::from),
                steps: t.step.clone(),
                step_pages: t.step.iter().map(|st| c.step_pages(st)).collect(),
                runs_begun: 0,
                children_begun: 0,
                shared_ra: vec![None; t.step.len()],
            })
            .collect();
        Programs { progs, regions: c.region.clone(), shmem_of, next_slot: 0 }
    }
}

/// Where a task is in its program.
#[derive(Clone, Debug, Default)]
pub struct Cursor {
    pub step: usize,
    /// Accesses done in the current step.
    pub done: u64,
    /// Unit of the previous access of the step (for `then_next`).
    pub last: u32,
    /// When the current step started (for `rate`).
    pub step_start_ns: u64,
    /// `pace = "steady"`: when the next read call's interval begins at the earliest, and
    /// when the previous read call ended.
    pub next_due_ns: u64,
    pub last_end_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::scenario::config::FileStep;

    /// Two passes of `pattern` over region 0 (stride 4, zipf s = 1, sysbench's special).
    fn step(pattern: Pattern) -> Step {
        let pattern = match pattern {
            Pattern::Seq => PatternParams::Seq,
            Pattern::Reverse => PatternParams::Reverse,
            Pattern::Random => PatternParams::Random,
            Pattern::Stride => PatternParams::Stride { stride: 4 },
            Pattern::Zipf => PatternParams::Zipf { zipf_s: 1.0, cluster: None },
            Pattern::Special => special(defaults::SPECIAL_RES),
        };
        Step {
            target: Target::Region { region: "r".into(), index: 0 },
            pattern,
            amount: Amount::Passes(2),
            op: defaults::OP,
            then_next: 0.0,
            think: 0,
        }
    }

    fn special(special_res: u32) -> PatternParams {
        PatternParams::Special { special_pct: defaults::SPECIAL_PCT, special_res, special_iter: defaults::SPECIAL_ITER }
    }

    #[test]
    fn special_sends_three_draws_in_four_to_the_central_percent() {
        // sysbench 0.4 defaults (pct 1, res 75, iter 12) over 10,000 units: the hot units
        // are 4950..5050; a quarter of the draws are the mean of 12 uniform draws, a bell of
        // standard deviation n / 12 = 833 around 5000, of which ~5% also land in the hot
        // percent.
        let mut st = step(Pattern::Special);
        st.amount = Amount::Accesses(100_000);
        let s = BoundStep::new(&st, 10_000);
        let mut rng = Rng::new(9);
        let v: Vec<u32> = (0..100_000).map(|i| s.index(i, &mut rng)).collect();
        let hot = v.iter().filter(|&&u| (4950..5050).contains(&u)).count() as f64 / 1e5;
        assert!((0.75..0.775).contains(&hot), "hot share {hot}");
        // Beyond two standard deviations of the bell: 4.6% of a quarter.
        let far = v.iter().filter(|&&u| u.abs_diff(5000) > 1667).count() as f64 / 1e5;
        assert!(far > 0.005 && far < 0.02, "tail share {far}");
        // res 50: floor(100 / 50) = 2, half the draws are hot.
        st.pattern = special(50);
        let s = BoundStep::new(&st, 10_000);
        let hot = (0..100_000).filter(|&i| (4950..5050).contains(&s.index(i, &mut rng))).count() as f64 / 1e5;
        assert!((0.5..0.53).contains(&hot), "hot share at res 50: {hot}");
    }

    #[test]
    fn seq_and_stride_cover_every_page_each_pass() {
        let mut rng = Rng::new(1);
        let s = BoundStep::new(&step(Pattern::Seq), 10);
        assert_eq!(s.total, 20);
        let v: Vec<u32> = (0..20).map(|i| s.index(i, &mut rng)).collect();
        assert_eq!(&v[..10], &(0..10).collect::<Vec<_>>()[..]);
        assert_eq!(&v[10..], &v[..10]);
        let st = BoundStep::new(&step(Pattern::Stride), 12);
        let mut v: Vec<u32> = (0..12).map(|i| st.index(i, &mut rng)).collect();
        assert_eq!(&v[..4], &[0, 4, 8, 1]);
        v.sort();
        assert_eq!(v, (0..12).collect::<Vec<_>>());
        assert!(s.write, "default op is write");
    }

    #[test]
    fn file_steps_choose_records_reverse_pairs_and_hot_clusters() {
        let mut st = step(Pattern::Reverse);
        st.target = Target::File(FileStep {
            file: "f".into(),
            index: 0,
            extents: vec![0],
            record: 16384,
            rate: None,
            shared_fd: false,
            fadvise: None,
            fsync_every: 0,
        });
        let r = BoundStep::new(&st, 40);
        // 40 pages in records of 4: 10 records, read from the last, two passes.
        assert_eq!((r.units, r.record_pages, r.total), (10, 4, 20));
        let mut rng = Rng::new(1);
        let v: Vec<u32> = (0..10).map(|i| r.index(i, &mut rng)).collect();
        assert_eq!(v, (0..10).rev().collect::<Vec<_>>());

        // then_next = 1: after the first access, always the next unit (until the end).
        let mut st = step(Pattern::Random);
        st.then_next = 1.0;
        let p = BoundStep::new(&st, 1000);
        let first = p.next_index(0, &mut rng, 0);
        assert_eq!(p.next_index(1, &mut rng, first), first + 1);
        assert_eq!(p.next_index(5, &mut rng, 998), 999);
        let at_end = p.next_index(6, &mut rng, 999);
        assert!(at_end < 1000, "the last unit has no next: a fresh draw");
        // then_next = 0.2: about a fifth of the accesses continue the previous one.
        st.then_next = 0.2;
        let p = BoundStep::new(&st, 1_000_000);
        let mut last = 0;
        let mut next = 0;
        for i in 0..100_000 {
            let u = p.next_index(i, &mut rng, last);
            next += (i > 0 && u == last + 1) as u32;
            last = u;
        }
        assert!((19_000..21_000).contains(&next), "{next}");

        // Zipf over clusters: ranks go to 64-unit clusters; the hottest cluster holds many
        // of the accesses, spread over its units.
        let mut st = step(Pattern::Zipf);
        st.pattern = PatternParams::Zipf { zipf_s: 1.0, cluster: Some(64 * 4096) };
        let z = BoundStep::new(&st, 64 * 100);
        let mut per_cluster = vec![0u32; 100];
        let mut units = std::collections::BTreeSet::new();
        for i in 0..50_000 {
            let u = z.index(i, &mut rng);
            per_cluster[(u / 64) as usize] += 1;
            units.insert(u);
        }
        let top = *per_cluster.iter().max().unwrap();
        assert!(top > 50_000 / 10, "the hottest cluster gets {top} of 50000");
        assert!(units.len() > 64 * 50, "units inside clusters are uniform: {} distinct", units.len());
    }

    #[test]
    fn random_is_uniform_and_zipf_is_skewed() {
        let mut rng = Rng::new(3);
        let r = BoundStep::new(&step(Pattern::Random), 100);
        assert_eq!(r.total, 200);
        let mut hist = vec![0u32; 100];
        for i in 0..100_000 {
            hist[r.index(i, &mut rng) as usize] += 1;
        }
        assert!(hist.iter().all(|&h| (800..1200).contains(&h)));
        let z = BoundStep::new(&step(Pattern::Zipf), 10_000);
        let mut zh = vec![0u32; 10_000];
        for i in 0..200_000 {
            zh[z.index(i, &mut rng) as usize] += 1;
        }
        zh.sort_unstable_by(|a, b| b.cmp(a));
        let top1: u32 = zh[..100].iter().sum();
        // With s = 1 over 10^4 ranks, the top 1% of pages take about half the accesses.
        assert!(top1 > 200_000 * 4 / 10 && top1 < 200_000 * 7 / 10, "top 1% took {top1}");
    }
}
