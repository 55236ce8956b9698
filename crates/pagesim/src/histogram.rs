//! A log-linear histogram of nanosecond values (fault latencies), kept by the engine and
//! summarised by the report.

/// A log-linear latency histogram (HDR-style: 8 sub-buckets per power of two), ns.
#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    sum: u128,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: vec![0; 64 * 8], total: 0, sum: 0 }
    }
}

const SUB: u32 = 8;

impl Histogram {
    fn bucket(v: u64) -> usize {
        if v < SUB as u64 {
            return v as usize;
        }
        let e = 63 - v.leading_zeros();
        let sub = ((v >> (e - 3)) & (SUB as u64 - 1)) as u32;
        ((e - 2) * SUB + sub) as usize
    }

    /// Upper bound (inclusive) of bucket `b`.
    fn upper(b: usize) -> u64 {
        let b = b as u32;
        if b < SUB {
            return b as u64;
        }
        let e = b / SUB + 2;
        let sub = (b % SUB) as u64;
        ((SUB as u64 + sub + 1) << (e - 3)) - 1
    }

    pub fn record(&mut self, v: u64) {
        self.counts[Self::bucket(v)] += 1;
        self.total += 1;
        self.sum += v as u128;
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    /// The value at quantile `q` (bucket upper bound; within 12.5%).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut acc = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            acc += c;
            if acc >= rank {
                return Self::upper(b);
            }
        }
        Self::upper(self.counts.len() - 1)
    }

    pub fn mean(&self) -> u64 {
        if self.total == 0 {
            0
        } else {
            (self.sum / self.total as u128) as u64
        }
    }

    /// Non-empty buckets as (upper bound ns, count).
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        self.counts.iter().enumerate().filter(|(_, &c)| c > 0).map(|(b, &c)| (Self::upper(b), c)).collect()
    }
}

/// Count, median and 99th percentile (bucket upper bounds) of the values at or above
/// `min_ns` in a histogram given as (upper bound, count) buckets, ascending: the form
/// [`Histogram::buckets`] gives and the host's load generator sends back, so the two sides
/// of a validation are summarised by the same code.
pub fn tail_summary(buckets: &[(u64, u64)], min_ns: u64) -> (u64, u64, u64) {
    let tail: Vec<(u64, u64)> = buckets.iter().copied().filter(|&(upper, _)| upper >= min_ns).collect();
    let count: u64 = tail.iter().map(|b| b.1).sum();
    let at = |q: f64| {
        let rank = ((q * count as f64).ceil() as u64).clamp(1, count.max(1));
        let mut acc = 0;
        for &(upper, c) in &tail {
            acc += c;
            if acc >= rank {
                return upper;
            }
        }
        0
    };
    (count, at(0.5), at(0.99))
}

/// Adds histogram `b` into `a`, both as ascending (upper bound, count) buckets.
pub fn merge_buckets(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut m: std::collections::BTreeMap<u64, u64> = a.iter().copied().collect();
    for &(u, c) in b {
        *m.entry(u).or_insert(0) += c;
    }
    m.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_quantiles_are_within_a_bucket() {
        let mut h = Histogram::default();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let med = h.quantile(0.5);
        assert!((500_000..=500_000 * 9 / 8 + 1).contains(&med), "{med}");
        let p99 = h.quantile(0.99);
        assert!((990_000..=990_000 * 9 / 8 + 1).contains(&p99), "{p99}");
        assert_eq!(h.count(), 1000);
        assert_eq!(h.mean(), 500_500);
        for v in [0u64, 5, 8, 9, 100, 12345, 1 << 40] {
            let b = Histogram::bucket(v);
            assert!(Histogram::upper(b) >= v && (b == 0 || Histogram::upper(b - 1) < v), "{v}");
        }
    }

    #[test]
    fn the_tail_summary_counts_and_ranks_only_the_values_above_the_bound() {
        let mut h = Histogram::default();
        for v in 0..900u64 {
            h.record(100 + v % 50); // hits: below the bound
        }
        for v in 1..=100u64 {
            h.record(v * 1000); // 1 us .. 100 us
        }
        let (n, p50, p99) = tail_summary(&h.buckets(), 10_000);
        assert_eq!(n, 91, "10 us .. 100 us");
        assert!((50_000..=58_000).contains(&p50), "{p50}");
        assert!((99_000..=112_000).contains(&p99), "{p99}");
        assert_eq!(tail_summary(&[], 1), (0, 0, 0));
        let m = merge_buckets(&h.buckets(), &h.buckets());
        assert_eq!(tail_summary(&m, 10_000).0, 182);
    }
}
