//! The arithmetic of dirty throttling: a device's estimated write bandwidth, the dirty
//! rate limit of IO-less throttling, and the pause a dirtier takes.
//!
//! Models mm/page-writeback.c (3.2+, Wu Fengguang's IO-less dirty throttling):
//! `wb_update_write_bandwidth` (`bdi_update_write_bandwidth` before 4.2),
//! `wb_update_dirty_ratelimit`, `wb_position_ratio`, `wb_max_pause`, `wb_min_pause` and the
//! pause of `balance_dirty_pages`; engine/page_writeback.rs applies them. Rates are in pages
//! per second, times in ns; the kernel's jiffy arithmetic is kept, at the model's HZ (250:
//! [`crate::units::JIFFY_NS`] is 4 ms).
//!
//! DOC: the throttled task never writes; it sleeps so that the dirtiers together dirty
//! pages at the rate the device writes them, steered by where the dirty count is against a
//! setpoint between the "freerun" point (halfway from the background to the hard limit)
//! and the limit:
//!
//! ```text
//!   pos_ratio  2 ┤\
//!              1 ┤ ‾‾‾‾‾‾‾\___                  pos_ratio = 1 + ((setpoint - dirty) /
//!              0 ┤            ‾‾‾‾‾‾\___           (limit - setpoint + 1))^3, in [0, 2]
//!                └──┬──────────┬──────────┬──▶ dirty
//!                 freerun   setpoint    limit
//! ```
//!
//! `task_ratelimit = dirty_ratelimit × pos_ratio`; a dirtier that dirtied `n` pages sleeps
//! `n / task_ratelimit` less the time it ran since its last pause, bounded by `max_pause`
//! (the time to write an eighth of the device's dirty pages, at most 200 ms) and, to avoid
//! tiny sleeps, skipped under `min_pause`. `dirty_ratelimit` itself follows the balanced rate
//! `task_ratelimit × write_bw / dirty_rate` (about `write_bw / N` for N dirtiers) every 200 ms.
//! The model keeps one global domain and one wb per device (no per-memcg wb domains).

/// The initial write bandwidth and rate limit: 100 MB/s, in pages/s (`INIT_BW`).
pub const INIT_BW: u64 = (100 << 20) / 4096;
/// `BANDWIDTH_INTERVAL`: estimates are updated at most every 200 ms.
pub const BANDWIDTH_INTERVAL_NS: u64 = 200_000_000;
pub use crate::units::JIFFY_NS;
/// HZ: jiffies per second.
pub const HZ: u64 = 1_000_000_000 / JIFFY_NS;
/// `MAX_PAUSE`: HZ/5.
pub const MAX_PAUSE_NS: u64 = HZ / 5 * JIFFY_NS;

/// A wb's bandwidth estimates (`struct bdi_writeback`'s `write_bandwidth`,
/// `avg_write_bandwidth`, `dirty_ratelimit`, `balanced_dirty_ratelimit` and their stamps).
#[derive(Clone, Debug)]
pub struct Bandwidth {
    pub write_bw: u64,
    pub avg_write_bw: u64,
    pub dirty_ratelimit: u64,
    pub balanced_dirty_ratelimit: u64,
    /// When the estimates were last updated, ns.
    pub bw_time_stamp: u64,
    /// Pages written and dirtied on the wb as of that update.
    pub written_stamp: u64,
    pub dirtied_stamp: u64,
}

impl Default for Bandwidth {
    fn default() -> Self {
        Bandwidth {
            write_bw: INIT_BW,
            avg_write_bw: INIT_BW,
            dirty_ratelimit: INIT_BW,
            balanced_dirty_ratelimit: INIT_BW,
            bw_time_stamp: 0,
            written_stamp: 0,
            dirtied_stamp: 0,
        }
    }
}

/// `roundup_pow_of_two(3 * HZ)` in jiffies: the averaging period of the bandwidth.
const BW_PERIOD_JIFFIES: u64 = (3 * HZ).next_power_of_two();

impl Bandwidth {
    /// Estimated write bandwidth, pages/s (`avg_write_bandwidth`).
    pub fn avg_write_bw_pages(&self) -> u64 {
        self.avg_write_bw
    }

    /// `wb_update_write_bandwidth`: `written` is the wb's cumulative pages written;
    /// `elapsed_ns` since the last update. The rate over the interval is blended with the
    /// old estimate over a ~4 s window; `avg_write_bw` follows it by 1/8 steps, and only
    /// when the estimate is not moving away from it (it does not chase spikes).
    pub fn update_write_bandwidth(&mut self, elapsed_ns: u64, written: u64) {
        let elapsed = (elapsed_ns / JIFFY_NS).max(1);
        let pages = written.saturating_sub(self.written_stamp);
        let old = self.write_bw;
        let mut avg = self.avg_write_bw;
        let bw;
        if elapsed > BW_PERIOD_JIFFIES {
            bw = pages * HZ / elapsed;
            avg = bw;
        } else {
            bw = (pages * HZ + old * (BW_PERIOD_JIFFIES - elapsed)) >> BW_PERIOD_JIFFIES.trailing_zeros();
            if avg > old && old >= bw {
                avg -= (avg - old) >> 3;
            }
            if avg < old && old <= bw {
                avg += (old - avg) >> 3;
            }
        }
        self.avg_write_bw = avg.max(1);
        self.write_bw = bw;
        self.written_stamp = written;
    }
}

/// `RATELIMIT_CALC_SHIFT`: pos_ratio's fixed point.
pub const RATELIMIT_CALC_SHIFT: u32 = 10;
/// `DIRTY_POLL_THRESH`: a dirtier's calls are at least this many pages apart when it can.
pub const DIRTY_POLL_THRESH: u64 = 32;

/// The position of the dirty count against the limits (a `dirty_throttle_control`).
#[derive(Clone, Copy, Debug)]
pub struct Position {
    /// Global dirty + writeback pages, and the background and hard limits.
    pub dirty: u64,
    pub bg_thresh: u64,
    pub thresh: u64,
    /// `hard_dirty_limit`: the larger of `thresh` and the domain's slowly following limit.
    pub limit: u64,
    /// The device's dirty + writeback pages and its share of `thresh`.
    pub wb_dirty: u64,
    pub wb_thresh: u64,
}

impl Position {
    /// `dirty_freerun_ceiling`: below it nobody is throttled.
    pub fn freerun(&self) -> u64 {
        (self.thresh + self.bg_thresh) / 2
    }

    pub fn setpoint(&self) -> u64 {
        (self.freerun() + self.limit) / 2
    }

    /// `wb_position_ratio` (no strictlimit): the global cubic around the setpoint, then
    /// scaled by the device's dirty pages against its own setpoint (a line reaching 0 at
    /// `wb_setpoint + span`, span ≈ 8 × write bandwidth) and boosted while the device holds
    /// less than half its share (its reserve). Fixed point, `1 << RATELIMIT_CALC_SHIFT` = 1.
    pub fn pos_ratio(&self, avg_write_bw: u64) -> u64 {
        let one = 1i128 << RATELIMIT_CALC_SHIFT;
        if self.dirty >= self.limit {
            return 0;
        }
        let setpoint = self.setpoint() as i128;
        let x = ((setpoint - self.dirty as i128) << RATELIMIT_CALC_SHIFT) / ((self.limit as i128 - setpoint) | 1);
        let mut pos = x;
        pos = (pos * x) >> RATELIMIT_CALC_SHIFT;
        pos = (pos * x) >> RATELIMIT_CALC_SHIFT;
        pos += one;
        let mut pos = pos.clamp(0, 2 * one) as u128;
        let thresh = self.thresh.max(1) as u128;
        let mut wb_thresh = (self.wb_thresh as u128).min(thresh);
        wb_thresh = wb_thresh.max((self.limit - self.dirty) as u128 / 8);
        let x = (wb_thresh << 16) / (thresh | 1);
        let wb_setpoint = (self.setpoint() as u128 * x) >> 16;
        let span = ((thresh - wb_thresh + 8 * avg_write_bw as u128) * x) >> 16;
        let x_intercept = wb_setpoint + span;
        let wb_dirty = self.wb_dirty as u128;
        if wb_dirty < x_intercept - span / 4 {
            pos = pos * (x_intercept - wb_dirty) / ((x_intercept - wb_setpoint) | 1);
        } else {
            pos /= 4;
        }
        let reserve = wb_thresh / 2;
        if wb_dirty < reserve {
            if wb_dirty > reserve / 8 {
                pos = pos * reserve / wb_dirty;
            } else {
                pos *= 8;
            }
        }
        pos.min(u64::MAX as u128) as u64
    }
}

/// `wb_max_pause`: about the time the device takes to write an eighth of its dirty pages,
/// at most 200 ms; in ns.
pub fn max_pause_ns(avg_write_bw: u64, wb_dirty: u64) -> u64 {
    let t = wb_dirty / (1 + avg_write_bw / (1 + HZ / 8).next_power_of_two()) + 1;
    (t * JIFFY_NS).min(MAX_PAUSE_NS)
}

/// `wb_min_pause`: the pause below which a dirtier does not sleep (about half its target
/// pause: 10 ms for one dirtier, 10 ms more per doubling of the dirtiers), and the pages
/// it may dirty before it calls again (`nr_dirtied_pause`). Rates in pages/s, times in ns.
pub fn min_pause(avg_write_bw: u64, dirty_ratelimit: u64, task_ratelimit: u64, max_pause_ns: u64) -> (u64, u64) {
    let hz = HZ;
    let rhz = HZ.next_power_of_two();
    let max_pause = max_pause_ns / JIFFY_NS;
    let (hi, lo) = (avg_write_bw.max(1).ilog2() as u64, dirty_ratelimit.max(1).ilog2() as u64);
    let mut t = (hz / 100).max(1);
    if hi > lo {
        t += (hi - lo) * (10 * hz) / 1024;
    }
    t = t.min(1 + max_pause / 2);
    let mut pages = dirty_ratelimit * t / rhz;
    if pages < DIRTY_POLL_THRESH {
        t = max_pause;
        pages = dirty_ratelimit * t / rhz;
        if pages > DIRTY_POLL_THRESH {
            pages = DIRTY_POLL_THRESH;
            t = hz * DIRTY_POLL_THRESH / dirty_ratelimit.max(1);
        }
    }
    let pause = hz * pages / (task_ratelimit + 1);
    if pause > max_pause {
        t = max_pause;
        pages = task_ratelimit * t / rhz;
    }
    let min = if pages >= DIRTY_POLL_THRESH { 1 + t / 2 } else { t };
    (min * JIFFY_NS, pages)
}

/// `dirty_poll_interval`: below the freerun point, a dirtier calls again after about the
/// square root of the pages left to the limit.
pub fn dirty_poll_interval(dirty: u64, thresh: u64) -> u64 {
    if thresh > dirty {
        1 << ((thresh - dirty).ilog2() >> 1)
    } else {
        1
    }
}

impl Bandwidth {
    /// `wb_update_dirty_ratelimit`: the balanced rate is what makes the dirtiers together
    /// dirty at the write bandwidth (`task_ratelimit × write_bw / dirty_rate`);
    /// `dirty_ratelimit` steps towards it (and towards `task_ratelimit`) only in the
    /// direction the position asks, by a step that shrinks near the target.
    pub fn update_dirty_ratelimit(&mut self, pos: &Position, dirtied: u64, elapsed_ns: u64) {
        let elapsed = (elapsed_ns / JIFFY_NS).max(1);
        let dirty_rate = dirtied.saturating_sub(self.dirtied_stamp) * HZ / elapsed;
        let pos_ratio = pos.pos_ratio(self.avg_write_bw) as u128;
        let dirty_ratelimit = self.dirty_ratelimit;
        let task_ratelimit = ((dirty_ratelimit as u128 * pos_ratio) >> RATELIMIT_CALC_SHIFT) as u64 + 1;
        let mut balanced = (task_ratelimit as u128 * self.write_bw as u128 / (dirty_rate as u128 | 1)) as u64;
        balanced = balanced.min(self.write_bw);
        let setpoint = pos.setpoint();
        let mut step = 0;
        if pos.dirty < setpoint {
            let x = self.balanced_dirty_ratelimit.min(balanced).min(task_ratelimit);
            if dirty_ratelimit < x {
                step = x - dirty_ratelimit;
            }
        } else {
            let x = self.balanced_dirty_ratelimit.max(balanced).max(task_ratelimit);
            if dirty_ratelimit > x {
                step = dirty_ratelimit - x;
            }
        }
        let shift = dirty_ratelimit / (2 * step + 1);
        step = if shift < 64 { (step >> shift).div_ceil(8) } else { 0 };
        let r = if pos.dirty < setpoint { dirty_ratelimit + step } else { dirty_ratelimit.saturating_sub(step) };
        self.dirty_ratelimit = r.max(1);
        self.balanced_dirty_ratelimit = balanced;
    }
}

/// `update_dirty_limit`: the domain's limit follows `thresh` up at once and down by 1/32
/// of the gap per update, never below the dirty pages.
pub fn update_dirty_limit(limit: u64, thresh: u64, dirty: u64) -> u64 {
    if limit < thresh {
        return thresh;
    }
    let target = thresh.max(dirty);
    if limit > target {
        limit - ((limit - target) >> 5)
    } else {
        limit
    }
}

/// `current->nr_dirtied_pause` at task start (3.2+): a task calls `balance_dirty_pages`
/// after dirtying 32 pages, then as often as its rate allows.
pub const NR_DIRTIED_PAUSE_INIT: u64 = 32;
/// While a device is over its limit (`dirty_exceeded`), tasks call `balance_dirty_pages`
/// every 8 pages (2.6.35's constant; 3.2+'s `32 >> (PAGE_SHIFT - 10)`, 32 KiB).
pub const EXCEEDED_RATELIMIT: u64 = 8;

/// A `balance_dirty_pages` call in progress, kept while the task sleeps in it.
#[derive(Clone, Copy, Debug)]
pub struct Bdp {
    /// The wb the dirtied pages belong to (`inode_to_wb`).
    pub wb: crate::ids::WbId,
    /// 2.6.35: the pages this call is to write itself (`write_chunk`), those it wrote, and
    /// the next sleep (1, 2, 4 ... jiffies, at most HZ/10).
    pub write_chunk: u64,
    pub pages_written: u64,
    pub pause_ns: u64,
}

/// `ratelimit_pages` of 2.6.35 (`writeback_set_ratelimit`): a task calls
/// `balance_dirty_pages` after its CPU dirtied this many pages: memory / (CPUs × 32), from
/// 16 to 1024 pages (4 MiB).
pub fn ratelimit_pages_2_6_35(total_pages: u64, ncpus: u64) -> u64 {
    (total_pages / (ncpus.max(1) * 32)).clamp(16, 1024)
}

/// A flexible proportion (lib/flex_proportions.c `fprop_global` / `fprop_local_percpu`,
/// 2.6.37+): each local's share of recent events, where "recent" halves every period of
/// `VM_COMPLETIONS_PERIOD_LEN` (3 s) of time, and a local with no events has no share.
/// A memcg's dirty domain keeps its wbs' shares of its completed writeback in one.
#[derive(Clone, Debug, Default)]
pub struct FlexProp {
    pub events: u64,
    period: u64,
    /// When the current period began, ns.
    period_start: u64,
}

/// One local of a [`FlexProp`]: its events, as of period `period`.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlexLocal {
    events: u64,
    period: u64,
}

/// `VM_COMPLETIONS_PERIOD_LEN`: 3 s.
pub const COMPLETIONS_PERIOD_NS: u64 = 3_000_000_000;

impl FlexProp {
    /// `fprop_new_period` for the periods that ended by `now` (the kernel's timer runs
    /// while there are events): the events halve once per period.
    fn age(&mut self, now: u64) {
        let periods = now.saturating_sub(self.period_start) / COMPLETIONS_PERIOD_NS;
        if periods > 0 {
            self.events = if periods >= 64 { 0 } else { self.events >> periods };
            self.period += periods;
            self.period_start += periods * COMPLETIONS_PERIOD_NS;
        }
    }

    /// `fprop_reflect_period_percpu`: `l`'s events halved once per period it missed.
    fn norm(&self, l: &mut FlexLocal) {
        if l.period != self.period {
            let d = self.period - l.period;
            l.events = if d >= 64 { 0 } else { l.events >> d };
            l.period = self.period;
        }
    }

    /// `__fprop_add_percpu`: `n` events of local `l` at `now`.
    pub fn inc(&mut self, l: &mut FlexLocal, n: u64, now: u64) {
        self.age(now);
        self.norm(l);
        l.events += n;
        self.events += n;
    }

    /// `fprop_fraction_percpu`: `l`'s share at `now` as (numerator, denominator); 0 of 1
    /// for a local with no recent events, at most the whole.
    pub fn fraction(&mut self, l: &mut FlexLocal, now: u64) -> (u64, u64) {
        self.age(now);
        self.norm(l);
        let (num, den) = (l.events, self.events);
        if den <= num {
            return (num, num.max(1));
        }
        (num, den)
    }
}

/// A floating proportion (lib/proportions.c `prop_descriptor` / `prop_local_single`): each
/// local's share of recent events, where "recent" halves every `2^shift` events overall.
/// The 2.6.35 throttle uses two: each device's share of completed writeback
/// (`vm_completions`, its part of the dirty limit) and each task's share of pages dirtied
/// (`vm_dirties`, which lowers a heavy dirtier's limit by up to 1/8).
#[derive(Clone, Debug, Default)]
pub struct Prop {
    pub shift: u32,
    pub events: u64,
}

/// One local of a [`Prop`]: its events, as of period `period`.
#[derive(Clone, Copy, Debug, Default)]
pub struct PropLocal {
    events: u64,
    period: u64,
}

impl Prop {
    /// `calc_period_shift`: the period is about twice the dirty limit, `2 + ilog2(limit - 1)`.
    pub fn period_shift(dirty_limit: u64) -> u32 {
        2 + dirty_limit.saturating_sub(1).max(1).ilog2()
    }

    fn period(&self) -> u64 {
        self.events >> self.shift
    }

    /// Brings `l` to the current period, halving its events once per period passed.
    fn norm(&self, l: &mut PropLocal) {
        let p = self.period();
        if l.period != p {
            let d = p - l.period;
            l.events = if d >= 64 { 0 } else { l.events >> d };
            l.period = p;
        }
    }

    /// `n` events of local `l`.
    pub fn inc(&mut self, l: &mut PropLocal, n: u64) {
        self.norm(l);
        l.events += n;
        self.events += n;
    }

    /// `prop_fraction_single`: `l`'s share as (numerator, denominator).
    pub fn fraction(&self, l: &mut PropLocal) -> (u64, u64) {
        self.norm(l);
        let mask = (1u64 << self.shift) - 1;
        let den = (1u64 << self.shift) + (self.events & mask);
        (l.events.min(den), den)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flexible proportion: no share without events, the whole for the only local, and
    /// shares that follow the last few seconds (halving every 3 s).
    #[test]
    fn flex_proportions_follow_recent_events_by_time() {
        let (mut p, mut a, mut b) = (FlexProp::default(), FlexLocal::default(), FlexLocal::default());
        assert_eq!(p.fraction(&mut a, 0), (0, 1));
        p.inc(&mut a, 100, 0);
        assert_eq!(p.fraction(&mut a, 1), (100, 100), "the only local has it all");
        p.inc(&mut b, 100, 1);
        assert_eq!(p.fraction(&mut a, 2), (100, 200));
        // Two periods later a's 100 are 25, b's new 100 events weigh fully.
        p.inc(&mut b, 100, 2 * COMPLETIONS_PERIOD_NS + 5);
        assert_eq!(p.fraction(&mut a, 2 * COMPLETIONS_PERIOD_NS + 6), (25, 50 + 100));
        assert_eq!(p.fraction(&mut b, 2 * COMPLETIONS_PERIOD_NS + 6), (125, 150));
    }

    /// A device that writes 25,600 pages/s (100 MB/s) keeps the initial estimate; one that
    /// writes a quarter of that pulls it down over a few seconds, avg following behind.
    #[test]
    fn write_bandwidth_converges_on_the_written_rate() {
        let mut b = Bandwidth::default();
        let mut written = 0;
        for _ in 0..10 {
            written += INIT_BW / 5;
            b.update_write_bandwidth(BANDWIDTH_INTERVAL_NS, written);
        }
        assert!(b.write_bw.abs_diff(INIT_BW) < INIT_BW / 100, "{}", b.write_bw);
        for _ in 0..100 {
            written += INIT_BW / 20;
            b.update_write_bandwidth(BANDWIDTH_INTERVAL_NS, written);
        }
        let quarter = INIT_BW / 4;
        assert!(b.write_bw.abs_diff(quarter) < quarter / 20, "{} vs {quarter}", b.write_bw);
        assert!(b.avg_write_bw >= b.write_bw && b.avg_write_bw < INIT_BW / 2, "{}", b.avg_write_bw);
        // A long idle gap takes the rate of the interval as it is.
        written += 1000;
        b.update_write_bandwidth(5_000_000_000, written);
        assert_eq!((b.write_bw, b.avg_write_bw), (200, 200));
    }

    /// The cubic: 1 at the setpoint, 2 at freerun, 0 at the limit (one device holding its
    /// whole share at its setpoint).
    #[test]
    fn pos_ratio_is_one_at_the_setpoint_and_falls_to_zero_at_the_limit() {
        let at =
            |dirty| Position { dirty, bg_thresh: 1000, thresh: 2000, limit: 2000, wb_dirty: dirty, wb_thresh: 2000 };
        let one = 1 << RATELIMIT_CALC_SHIFT;
        let p = at(1750);
        assert_eq!(p.setpoint(), 1750);
        let r = p.pos_ratio(INIT_BW);
        assert!(r.abs_diff(one) <= one / 10, "{r}");
        assert!(at(1500).pos_ratio(INIT_BW) > r, "below the setpoint the rate rises");
        assert!(at(1900).pos_ratio(INIT_BW) < r);
        assert_eq!(at(2000).pos_ratio(INIT_BW), 0);
        // max_pause: about an eighth of the dirty pages at the write rate (in jiffies, at
        // HZ = 250: 1000 / (1 + 25600 / 32) + 1 = 2), at most 200 ms.
        assert_eq!(max_pause_ns(25_600, 1_000), 2 * JIFFY_NS);
        assert_eq!(max_pause_ns(100, 1_000_000), MAX_PAUSE_NS);
        assert_eq!(MAX_PAUSE_NS, 200_000_000);
        // One dirtier at the device's rate: a target of HZ/100 = 2 jiffies (8 ms), 200 pages
        // at 25,600 pages/s over 256 jiffies a second; half the target plus one as minimum.
        let (min, pages) = min_pause(25_600, 25_600, 25_600, MAX_PAUSE_NS);
        assert_eq!((min, pages), (2 * JIFFY_NS, 200));
    }

    /// Two dirtiers at a device writing 25,600 pages/s, a little over the setpoint:
    /// dirty_ratelimit comes down to about half the bandwidth, each task's fair share.
    #[test]
    fn dirty_ratelimit_converges_towards_the_balanced_rate() {
        let mut b = Bandwidth::default();
        let pos = Position { dirty: 1900, bg_thresh: 1000, thresh: 2000, limit: 2000, wb_dirty: 1900, wb_thresh: 2000 };
        let mut dirtied = 0;
        for _ in 0..200 {
            // Both tasks dirty at their task_ratelimit for 200 ms.
            let task_ratelimit = (b.dirty_ratelimit * pos.pos_ratio(b.avg_write_bw)) >> RATELIMIT_CALC_SHIFT;
            dirtied += 2 * task_ratelimit / 5;
            b.update_dirty_ratelimit(&pos, dirtied, BANDWIDTH_INTERVAL_NS);
            b.dirtied_stamp = dirtied;
        }
        let half = INIT_BW / 2;
        assert!(b.dirty_ratelimit.abs_diff(half) < half / 5, "{} vs {half}", b.dirty_ratelimit);
        assert_eq!(update_dirty_limit(100, 200, 50), 200);
        assert_eq!(update_dirty_limit(1000, 200, 50), 975);
    }

    /// One local with every event holds the whole share; two at 3:1 hold 3/4 and 1/4;
    /// a local that stops counting loses half its share each period.
    #[test]
    fn floating_proportions_share_and_decay() {
        let mut p = Prop { shift: Prop::period_shift(1 << 10), events: 0 };
        assert_eq!(p.shift, 11);
        let (mut a, mut b) = (PropLocal::default(), PropLocal::default());
        for _ in 0..10_000 {
            p.inc(&mut a, 1);
        }
        let (n, d) = p.fraction(&mut a);
        assert!(n * 100 / d >= 90, "{n}/{d}");
        for _ in 0..10_000 {
            p.inc(&mut a, 3);
            p.inc(&mut b, 1);
        }
        let (na, d) = p.fraction(&mut a);
        let (nb, _) = p.fraction(&mut b);
        assert!(na > 2 * nb && nb * 100 / d >= 15, "{na} {nb} {d}");
        let before = p.fraction(&mut b).0;
        p.inc(&mut a, 1 << 11);
        assert!(p.fraction(&mut b).0 <= before / 2 + 1);
        assert_eq!(ratelimit_pages_2_6_35(1 << 20, 2), 1024);
        assert_eq!(ratelimit_pages_2_6_35(10_000, 2), 156);
        assert_eq!(ratelimit_pages_2_6_35(100, 8), 16);
    }
}
