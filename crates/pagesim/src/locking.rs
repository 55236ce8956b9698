//! Kernel spinlocks as simulated resources (kernel/locking/qspinlock.c), with the machine's
//! topology pricing the move of a lock's cache line from the CPU that last held it.
//!
//! Each CPU keeps its own clock (engine/sched.rs), so the simulation does not visit lock
//! acquisitions in time order: a CPU whose clock is behind may take a lock after (in
//! simulation order) a CPU ahead of it took it at a later time. A lock therefore keeps the
//! intervals it is held for, over the span in which the CPUs' clocks can still differ, and an
//! acquisition at time `t` gets the first interval from `t` that is free for its whole hold
//! ([`Locks::spin_lock`]): a hold of another CPU that covers `t` makes it wait, spinning (the
//! waiting is the waiter's CPU time, as `queued_spin_lock_slowpath` spins); a hold that starts
//! later and leaves too little room in between puts it after that one. A queued spinlock
//! hands over in arrival order (its MCS queue): the first fit is that order whenever
//! acquisitions are visited in time order, and differs from it by at most the CPUs' skew
//! (one step) otherwise. Intervals that ended before the event being run can no longer be
//! met and are dropped ([`Locks::forget_before`]).
//!
//! Cache lines: the lock word and the data it protects were last written by the CPU that
//! held the lock last. Taking it on another CPU first pulls those lines over: free from an
//! SMT sibling (the same core's caches), through the shared L3 on the same socket, over the
//! interconnect from another socket ([`Topology::transfer_ns`]). The transfer is part of
//! the hold (the next waiter waits for it too), as it is when the kernel's critical section
//! misses on the protected data.
//!
//! Statistics per lock class, as `/proc/lock_stat` reports them (CONFIG_LOCK_STAT):
//! acquisitions, contentions (acquisitions that had to wait), bounces (acquisitions on a
//! CPU other than the last holder's), wait and hold times.

/// CPUs as sockets × cores × SMT threads. CPU numbers run core by core within a socket,
/// the SMT siblings of a core adjacent (CPU `c` is thread `c % threads` of core
/// `c / threads`, socket `c / (cores × threads)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Topology {
    pub sockets: u32,
    pub cores_per_socket: u32,
    pub threads_per_core: u32,
    /// Moving a modified cache line to another core of the same socket, ns.
    pub same_socket_ns: u64,
    /// Moving a modified cache line to a core of another socket, ns.
    pub cross_socket_ns: u64,
}

impl Topology {
    /// `cpus` CPUs on one socket, one thread per core, with the line transfer costs of
    /// [`Topology::haswell_ep`] (the default of a scenario that says nothing else).
    pub fn flat(cpus: u32) -> Self {
        Topology { sockets: 1, cores_per_socket: cpus.max(1), threads_per_core: 1, ..Self::haswell_ep(1, 1, 1) }
    }

    /// A 2014-2016 Intel Xeon E5 v3 (Haswell-EP) machine: a modified line moves between
    /// cores of one socket in about 45 ns (through the L3 and its snoop filter) and
    /// between sockets in about 115 ns (QPI). Molka, Hackenberg, Schöne and Nagel, "Cache
    /// Coherence Protocol and Memory Performance of the Intel Haswell-EP Architecture",
    /// ICPP 2015: latencies of loads of lines in the modified state in another core's L1/L2,
    /// on the same die and on the other socket (default snoop mode).
    pub fn haswell_ep(sockets: u32, cores_per_socket: u32, threads_per_core: u32) -> Self {
        Topology { sockets, cores_per_socket, threads_per_core, same_socket_ns: 45, cross_socket_ns: 115 }
    }

    pub fn cpus(&self) -> u32 {
        self.sockets * self.cores_per_socket * self.threads_per_core
    }

    fn core_of(&self, cpu: u32) -> u32 {
        cpu / self.threads_per_core.max(1)
    }

    fn socket_of(&self, cpu: u32) -> u32 {
        cpu / (self.cores_per_socket * self.threads_per_core).max(1)
    }

    /// The cost of moving a line last written on CPU `from` to CPU `to`.
    pub fn transfer_ns(&self, from: u32, to: u32) -> u64 {
        if self.core_of(from) == self.core_of(to) {
            0
        } else if self.socket_of(from) == self.socket_of(to) {
            self.same_socket_ns
        } else {
            self.cross_socket_ns
        }
    }
}

/// A class of locks (`lock_class_key`: every instance of one lock in the kernel's source,
/// such as each swap device's `si->lock`), by index into [`Locks::stats`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockClass(pub u16);

/// One lock instance, by index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockId(pub u32);

/// A class's counters, as `/proc/lock_stat` prints them (the report's `locks.classes`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LockStat {
    pub name: &'static str,
    pub acquisitions: u64,
    /// Acquisitions that found the lock held and waited.
    pub contentions: u64,
    /// Acquisitions on a CPU other than the last holder's (`acq-bounces`).
    pub bounces: u64,
    pub wait_total_ns: u64,
    pub wait_max_ns: u64,
    pub hold_total_ns: u64,
    pub hold_max_ns: u64,
}

/// A held interval: [start, end) on `cpu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Hold {
    start: u64,
    end: u64,
    cpu: u32,
}

#[derive(Clone, Debug)]
struct Lock {
    class: LockClass,
    /// Holds in time order, not overlapping.
    holds: Vec<Hold>,
    /// The CPU of the last hold dropped (`u32::MAX`: none).
    last_cpu: u32,
}

impl Lock {
    /// Drops the holds that ended before `floor`, keeping the last one's CPU.
    #[inline]
    fn trim(&mut self, floor: u64) {
        let n = self.holds.partition_point(|h| h.end < floor);
        if n > 0 {
            self.last_cpu = self.holds[n - 1].cpu;
            self.holds.drain(..n);
        }
    }
}

/// What an acquisition got: it spun `wait_ns`, then held the lock for `transfer_ns +
/// hold_ns` from `start`; the caller's clock advances by `wait_ns + transfer_ns + hold_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acquired {
    pub start: u64,
    pub wait_ns: u64,
    pub transfer_ns: u64,
}

/// The locks of a run and their classes' statistics.
#[derive(Clone, Debug)]
pub struct Locks {
    locks: Vec<Lock>,
    pub stats: Vec<LockStat>,
    pub topology: Topology,
    /// No acquisition can come before this time any more ([`Locks::forget_before`]); each
    /// lock drops the holds that ended before it when it is next taken.
    floor: u64,
}

impl Locks {
    pub fn new(topology: Topology) -> Self {
        Locks { locks: Vec::new(), stats: Vec::new(), topology, floor: 0 }
    }

    /// A new class named `name` (the kernel's name for the lock, as lock_stat prints it).
    pub fn class(&mut self, name: &'static str) -> LockClass {
        self.stats.push(LockStat { name, ..LockStat::default() });
        LockClass((self.stats.len() - 1) as u16)
    }

    /// A new lock of class `class`, never held.
    pub fn lock(&mut self, class: LockClass) -> LockId {
        self.locks.push(Lock { class, holds: Vec::new(), last_cpu: u32::MAX });
        LockId((self.locks.len() - 1) as u32)
    }

    /// `spin_lock` on `cpu` at `now`, for a critical section of `hold_ns` (`spin_unlock`
    /// follows it): the first interval from `now` in which the lock is free for the hold
    /// and the move of its cache line from the CPU that held it just before.
    pub fn spin_lock(&mut self, id: LockId, cpu: u32, now: u64, hold_ns: u64) -> Acquired {
        let topo = self.topology;
        let lock = &mut self.locks[id.0 as usize];
        lock.trim(self.floor);
        // The first hold that ends after `now`: those before it cannot be met.
        let mut i = lock.holds.partition_point(|h| h.end <= now);
        let mut prev_cpu = if i > 0 { lock.holds[i - 1].cpu } else { lock.last_cpu };
        let mut start = now;
        let (transfer, at) = loop {
            let transfer = if prev_cpu == u32::MAX { 0 } else { topo.transfer_ns(prev_cpu, cpu) };
            match lock.holds.get(i) {
                Some(h) if h.start < start + transfer + hold_ns => {
                    // Held when we would start, or too soon after: wait for this one.
                    start = start.max(h.end);
                    prev_cpu = h.cpu;
                    i += 1;
                }
                _ => break (transfer, i),
            }
        };
        let end = start + transfer + hold_ns;
        lock.holds.insert(at, Hold { start, end, cpu });
        let bounced = prev_cpu != u32::MAX && prev_cpu != cpu;
        let wait = start - now;
        let s = &mut self.stats[lock.class.0 as usize];
        s.acquisitions += 1;
        s.bounces += bounced as u64;
        if wait > 0 {
            s.contentions += 1;
            s.wait_total_ns += wait;
            s.wait_max_ns = s.wait_max_ns.max(wait);
        }
        s.hold_total_ns += transfer + hold_ns;
        s.hold_max_ns = s.hold_max_ns.max(transfer + hold_ns);
        Acquired { start, wait_ns: wait, transfer_ns: transfer }
    }

    /// Forgets the holds that ended before `t`: no CPU's clock is behind the event being
    /// run, so none of them can delay an acquisition any more. O(1): a lock drops them
    /// when it is next taken (a run has a lock per swap cluster, too many to visit at
    /// every event).
    #[inline]
    pub fn forget_before(&mut self, t: u64) {
        self.floor = self.floor.max(t);
    }

    /// Holds that can still delay an acquisition (for tests and invariant checks).
    pub fn holds_kept(&self) -> usize {
        self.locks.iter().map(|l| l.holds.len() - l.holds.partition_point(|h| h.end < self.floor)).sum()
    }

    /// Locks created.
    pub fn len(&self) -> usize {
        self.locks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.locks.is_empty()
    }

    /// The class of lock `id`.
    pub fn class_of(&self, id: LockId) -> LockClass {
        self.locks[id.0 as usize].class
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_lock(topo: Topology) -> (Locks, LockId) {
        let mut l = Locks::new(topo);
        let c = l.class("si->lock");
        let id = l.lock(c);
        (l, id)
    }

    /// One CPU taking a lock again and again, each time after its last hold: it never
    /// waits, never bounces, and its hold is its critical section alone.
    #[test]
    fn one_thread_never_waits_on_a_lock() {
        let (mut l, id) = one_lock(Topology::haswell_ep(2, 8, 2));
        let mut now = 1_000;
        for _ in 0..100 {
            let a = l.spin_lock(id, 3, now, 200);
            assert_eq!(a, Acquired { start: now, wait_ns: 0, transfer_ns: 0 });
            now = a.start + 200 + 50;
        }
        let s = &l.stats[0];
        assert_eq!((s.acquisitions, s.contentions, s.bounces, s.wait_total_ns), (100, 0, 0, 0));
        assert_eq!(s.hold_total_ns, 100 * 200);
    }

    /// Two CPUs reaching the lock at the same time serialise: the second spins for the
    /// first's hold, then holds it itself after the cache line came over; a third waits for
    /// both. Their waits are contentions, with the totals lock_stat would show.
    #[test]
    fn two_threads_on_a_spinlock_serialise_and_the_waiter_spins() {
        let (mut l, id) = one_lock(Topology::haswell_ep(1, 4, 1));
        let a = l.spin_lock(id, 0, 10_000, 300);
        let b = l.spin_lock(id, 1, 10_000, 300);
        assert_eq!(a, Acquired { start: 10_000, wait_ns: 0, transfer_ns: 0 });
        assert_eq!(b, Acquired { start: 10_300, wait_ns: 300, transfer_ns: 45 });
        let c = l.spin_lock(id, 2, 10_100, 300);
        assert_eq!(c, Acquired { start: 10_645, wait_ns: 545, transfer_ns: 45 });
        let s = &l.stats[0];
        assert_eq!((s.acquisitions, s.contentions, s.bounces), (3, 2, 2));
        assert_eq!((s.wait_total_ns, s.wait_max_ns), (845, 545));
        assert_eq!((s.hold_total_ns, s.hold_max_ns), (300 + 345 + 345, 345));
    }

    /// A CPU whose clock is behind takes the lock in a gap before a later hold of a CPU
    /// ahead of it when its hold fits there, and after that hold when it does not.
    #[test]
    fn an_acquisition_visited_late_fits_in_the_gap_at_its_own_time() {
        let (mut l, id) = one_lock(Topology::flat(2));
        // CPU 1 is ahead: it held the lock at 5,000.
        l.spin_lock(id, 1, 5_000, 100);
        // CPU 0, behind, at 1,000: free then (its line is CPU 1's, but no hold is near).
        let early = l.spin_lock(id, 0, 1_000, 100);
        assert_eq!((early.start, early.wait_ns), (1_000, 0));
        // At 4,950 its hold would run into CPU 1's: it comes after it.
        let late = l.spin_lock(id, 0, 4_950, 100);
        assert_eq!((late.start, late.wait_ns), (5_100, 150));
        assert_eq!(l.stats[0].contentions, 1);
    }

    /// The cache line's move costs nothing from an SMT sibling, the L3 transfer on one
    /// socket and the interconnect's across sockets.
    #[test]
    fn the_line_transfer_depends_on_where_the_last_holder_ran() {
        let topo = Topology::haswell_ep(2, 4, 2);
        assert_eq!(topo.cpus(), 16);
        assert_eq!(topo.transfer_ns(0, 1), 0, "SMT siblings");
        assert_eq!(topo.transfer_ns(0, 2), 45, "another core, same socket");
        assert_eq!(topo.transfer_ns(7, 8), 115, "the other socket");
        let (mut l, id) = one_lock(topo);
        l.spin_lock(id, 0, 0, 100);
        assert_eq!(l.spin_lock(id, 9, 1_000, 100).transfer_ns, 115);
        assert_eq!(l.spin_lock(id, 8, 2_000, 100).transfer_ns, 0);
        assert_eq!(l.stats[0].bounces, 2);
    }

    /// Holds that ended before the event being run are dropped; the last one's CPU is
    /// kept, so the next acquisition still pays for the line's move.
    #[test]
    fn forgotten_holds_keep_the_last_holders_cpu() {
        let (mut l, id) = one_lock(Topology::flat(4));
        for i in 0..10 {
            l.spin_lock(id, i % 2, i as u64 * 1_000, 100);
        }
        assert_eq!(l.holds_kept(), 10);
        l.forget_before(9_000);
        assert_eq!(l.holds_kept(), 1, "only the hold at 9,000 can still be met");
        l.forget_before(20_000);
        assert_eq!(l.holds_kept(), 0);
        assert_eq!(l.spin_lock(id, 2, 30_000, 100).transfer_ns, 45, "the line is CPU 1's");
    }
}
