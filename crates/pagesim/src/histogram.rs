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
}
