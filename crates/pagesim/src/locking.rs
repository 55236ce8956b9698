//! Kernel spinlocks as simulated resources (kernel/locking/qspinlock.c), with the machine's
//! topology pricing the move of a lock's cache line from the CPU that last held it.
//!
//! A queued spinlock hands over in arrival order (its MCS queue): an acquisition arriving at
//! `t` gets the lock when every acquisition that arrived before `t` has dropped it, and
//! spins until then (the waiting is the waiter's CPU time, as `queued_spin_lock_slowpath`
//! spins). Each CPU keeps its own clock (engine/sched.rs), so the simulation does not visit
//! acquisitions in arrival order: a CPU whose clock is behind may arrive (in simulation
//! order) after a CPU ahead of it took the lock at a later time. A lock therefore keeps its
//! holds in arrival order, over the span in which the CPUs' clocks can still differ
//! ([`Locks::spin_lock`]), and an acquisition waits for those that arrived before it,
//! whenever they were visited. The holds of those that arrived after it but were visited
//! first queue behind it: they move later, and the threads that made them owe the time
//! they would have spun ([`Locks::take_debt`]), paid at their next burst (their CPUs have
//! gone on: the wait lands up to one burst late, its amount and its thread are right).
//! They move when something needs them: the next acquisition behind them, their thread's
//! payment, the end of their span ([`Lock::refresh`]), so that a busy lock's queue moves
//! once for many acquisitions placed ahead of it, not once for each. Holds of acquisitions
//! that arrived before the event being run are dropped, their queue's end kept
//! ([`Locks::forget_before`]).
//!
//! Cache lines: the lock word and the data it protects were last written by the CPU that
//! held the lock last. Taking it on another CPU first pulls those lines over: free from an
//! SMT sibling (the same core's caches), through the shared L3 on the same socket, over the
//! interconnect from another socket ([`Topology::transfer_ns`]), once for each line of the
//! lock's data the critical section writes that every holder writes (the lock's own line,
//! a counter or a list head beside it: the caller says how many, from the kernel's
//! structure layouts). The transfers are part of the hold (the next waiter waits for them
//! too), as they are when the kernel's critical section misses on the protected data.
//!
//! Sleeping locks (kernel/locking/mutex.c, rwsem.c: a mutex, or an rw_semaphore taken for
//! writing) are held across sleeps (a write(2) holds its inode's `i_rwsem` while
//! `balance_dirty_pages` throttles it), so their release is not known when they are taken:
//! [`Locks::mutex_lock`] takes a free one or queues the caller, who sleeps;
//! [`Locks::mutex_unlock`] hands the lock to the first waiter in line, whom the caller
//! wakes. Waiters are served in the order they were visited (their waits are long next to
//! the CPUs' clock differences).
//!
//! Statistics per lock class, as `/proc/lock_stat` reports them (CONFIG_LOCK_STAT):
//! acquisitions, contentions (acquisitions that had to wait), bounces (acquisitions on a
//! CPU other than the last holder's), wait and hold times.

use std::collections::{BTreeMap, VecDeque};

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

/// One sleeping lock instance, by index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SleepLockId(pub u32);

/// A sleeping lock: its holder, since when, and the threads asleep waiting for it with
/// when each arrived.
#[derive(Clone, Debug)]
struct SleepLock {
    class: LockClass,
    owner: Option<u32>,
    since: u64,
    waiters: VecDeque<(u32, u64)>,
}

/// A class's counters, as `/proc/lock_stat` prints them (the report's `locks.classes`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LockStat {
    pub name: &'static str,
    /// A sleeping lock's class: its waits are time asleep, not CPU time.
    pub sleeping: bool,
    pub acquisitions: u64,
    /// Acquisitions that found the lock held and waited.
    pub contentions: u64,
    /// Acquisitions on a CPU other than the last holder's (`acq-bounces`).
    pub bounces: u64,
    pub wait_total_ns: u64,
    pub wait_max_ns: u64,
    pub hold_total_ns: u64,
    pub hold_max_ns: u64,
    /// Of `wait_total_ns`, the waits charged late: acquisitions that arrived after another
    /// but were visited before it, queued behind it afterwards ([`Locks::take_debt`]).
    pub late_wait_ns: u64,
}

/// An acquisition by thread `owner` on `cpu` that held the lock over [start, end) (it
/// arrived at the time in its key, [`Lock::holds`]). Served in arrival order, it starts no
/// earlier than the end of the one that arrived before it, so its end is also its queue's:
/// one arriving just after it gets the lock at `end`, the lines from `cpu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Hold {
    start: u64,
    end: u64,
    /// The critical section (the hold less the lines' move).
    work: u64,
    cpu: u32,
    /// Lines of the lock's data it pulled from the previous holder's CPU.
    lines: u32,
    owner: u32,
    /// The end its owner's clock went on from: where it was placed, or where it was when
    /// its owner last paid ([`Debt::epoch`] then in `epoch`). It has moved `end - base`
    /// since.
    base: u64,
    epoch: u32,
}

#[derive(Clone, Debug)]
struct Lock {
    class: LockClass,
    /// Holds by (arrival, visit number): in arrival order, ties in the order visited;
    /// `end` never decreases along it.
    holds: Holds,
    /// The queue's end and its CPU before the first hold kept (`u32::MAX`: never held).
    last_end: u64,
    last_cpu: u32,
    /// On [`Locks::kept`], the locks with holds to drop once the floor passes them.
    listed: bool,
    /// Where holds may not have moved yet behind an acquisition placed ahead of them
    /// ([`Lock::refresh`]), in key order: the key just after each such acquisition. Holds
    /// before the first are where they belong. On [`Locks::stale`] while not empty
    /// (`on_stale`).
    stale: VecDeque<Key>,
    on_stale: bool,
}

/// A hold's key: (arrival time, visit number).
type Key = (u64, u64);

/// What [`Holds::walk`] does after a hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Walk {
    /// On to the next.
    On,
    /// Stop: this hold ends where it did (it may start later), so those after it do not
    /// move, up to the next stale place.
    Settled,
    /// Stop before this hold: the walk's budget is spent.
    Spent,
}

/// A lock's holds in key order. Most acquisitions arrive after every hold kept (the CPUs
/// visited in time order): a deque, appended at the back and trimmed at the front. A CPU
/// far behind the others (one woken at the end of an I/O while another ran on for
/// milliseconds) places its holds among thousands of theirs: past
/// [`Holds::DEQUE_SHIFT_MAX`] holds to shift, the lock keeps them in a B-tree until few
/// are left.
#[derive(Clone, Debug)]
enum Holds {
    Deque(VecDeque<(Key, Hold)>),
    Tree(BTreeMap<Key, Hold>),
}

impl Holds {
    const DEQUE_SHIFT_MAX: usize = 64;

    fn new() -> Self {
        Holds::Deque(VecDeque::new())
    }

    fn is_empty(&self) -> bool {
        match self {
            Holds::Deque(d) => d.is_empty(),
            Holds::Tree(t) => t.is_empty(),
        }
    }

    /// Back to a deque when few holds are left (a busy lock may never empty).
    fn shrink(&mut self) {
        if let Holds::Tree(t) = self {
            if t.len() <= Self::DEQUE_SHIFT_MAX / 2 {
                *self = Holds::Deque(std::mem::take(t).into_iter().collect());
            }
        }
    }

    /// Removes the first hold if it arrived before `floor`.
    fn pop_front_before(&mut self, floor: u64) -> Option<Hold> {
        match self {
            Holds::Deque(d) => d.pop_front_if(|(k, _)| k.0 < floor).map(|(_, h)| h),
            Holds::Tree(t) => t.first_entry().filter(|e| e.key().0 < floor).map(|e| e.remove()),
        }
    }

    /// The hold just before `key` (its queue's end and CPU), and whether `key` comes after
    /// every hold.
    fn before(&self, key: Key) -> (Option<(u64, u32)>, bool) {
        let info = |h: &Hold| (h.end, h.cpu);
        match self {
            Holds::Deque(d) => match d.back() {
                Some((k, _)) if *k > key => {
                    let at = d.partition_point(|(k, _)| *k < key);
                    (at.checked_sub(1).map(|i| info(&d[i].1)), false)
                }
                last => (last.map(|(_, h)| info(h)), true),
            },
            Holds::Tree(t) => match t.last_key_value() {
                Some((k, _)) if *k > key => (t.range(..key).next_back().map(|(_, h)| info(h)), false),
                last => (last.map(|(_, h)| info(h)), true),
            },
        }
    }

    fn insert(&mut self, key: Key, hold: Hold) {
        if let Holds::Deque(d) = self {
            // Most acquisitions arrive after every hold kept: appended without a search.
            if d.back().is_none_or(|(k, _)| *k < key) {
                d.push_back((key, hold));
                return;
            }
            let at = d.partition_point(|(k, _)| *k < key);
            if d.len() - at <= Self::DEQUE_SHIFT_MAX {
                d.insert(at, (key, hold));
                return;
            }
            *self = Holds::Tree(std::mem::take(d).into_iter().collect());
        }
        if let Holds::Tree(t) = self {
            t.insert(key, hold);
        }
    }

    /// Calls `f` on the holds with keys in [`from`, `to`), in order, with the end and CPU
    /// of the hold before each (`first` before the first hold kept), while it says
    /// [`Walk::On`]; returns where it stopped and why ([`Walk::On`]: at `to` or the end).
    fn walk(
        &mut self,
        from: Key,
        to: Key,
        first: (u64, u32),
        mut f: impl FnMut((u64, u32), u64, &mut Hold) -> Walk,
    ) -> (Walk, Key) {
        let mut step = |prev: &mut (u64, u32), k: &Key, h: &mut Hold| {
            let w = f(*prev, k.0, h);
            *prev = (h.end, h.cpu);
            w
        };
        match self {
            Holds::Deque(d) => {
                let at = d.partition_point(|(k, _)| *k < from);
                let mut prev = at.checked_sub(1).map_or(first, |i| (d[i].1.end, d[i].1.cpu));
                for (k, h) in d.range_mut(at..) {
                    if *k >= to {
                        break;
                    }
                    match step(&mut prev, k, h) {
                        Walk::On => {}
                        w => return (w, *k),
                    }
                }
            }
            Holds::Tree(t) => {
                let mut prev = t.range(..from).next_back().map_or(first, |(_, h)| (h.end, h.cpu));
                for (k, h) in t.range_mut(from..to) {
                    match step(&mut prev, k, h) {
                        Walk::On => {}
                        w => return (w, *k),
                    }
                }
            }
        }
        (Walk::On, to)
    }

    /// Whether a hold has a key at `from` or later.
    fn any_from(&self, from: Key) -> bool {
        match self {
            Holds::Deque(d) => d.back().is_some_and(|(k, _)| *k >= from),
            Holds::Tree(t) => t.last_key_value().is_some_and(|(k, _)| *k >= from),
        }
    }

    /// Holds that arrived at `floor` or later.
    fn count_from(&self, floor: u64) -> usize {
        match self {
            Holds::Deque(d) => d.iter().filter(|(k, _)| k.0 >= floor).count(),
            Holds::Tree(t) => t.keys().filter(|k| k.0 >= floor).count(),
        }
    }
}

/// What bringing a lock's holds up to date needs besides the lock: the CPUs' places, the
/// threads' debts and the class's counters.
struct Refresh<'a> {
    place: &'a [(u32, u32)],
    topo: &'a Topology,
    debt: &'a mut Vec<Debt>,
    stat: &'a mut LockStat,
}

impl Lock {
    /// Moves the holds with keys before `to` that an acquisition placed ahead of them (and
    /// visited after them) delays: each gets the lock when the one before it drops it, the
    /// lines from that one's CPU. A hold that moves makes its owner owe the move: its clock
    /// goes on from its latest hold, so it owes the largest move of its holds since it last
    /// paid (a hold that moves back, its lines now from a nearer CPU, does not lower it:
    /// the owner may have gone on already). A hold that waits for the first time counts as
    /// a contention, as it would have had the acquisitions been visited in arrival order,
    /// and one that no longer waits does not.
    ///
    /// Done when an acquisition, a payment or the floor needs those holds, not at each
    /// acquisition placed ahead: a CPU far ahead of the others (kswapd's pass over a list)
    /// places thousands of holds on a busy lock, and each acquisition of a CPU behind it
    /// would move all of them.
    fn refresh(&mut self, to: Key, mut budget: usize, r: &mut Refresh<'_>) {
        while let Some(&from) = self.stale.front().filter(|&&f| f < to) {
            // From `from` until a hold that does not move: those after it are where they
            // were, up to the next place an acquisition was placed ahead of them.
            let first = (self.last_end, self.last_cpu);
            let (how, at) = self.holds.walk(from, to, first, |(q_end, q_cpu), arrival, h| {
                if budget == 0 {
                    return Walk::Spent;
                }
                budget -= 1;
                let start = arrival.max(q_end);
                let transfer = if q_cpu == u32::MAX {
                    0
                } else {
                    h.lines as u64 * Locks::transfer_ns(r.place, r.topo, q_cpu, h.cpu)
                };
                let end = start + transfer + h.work;
                if (start, end) == (h.start, h.end) {
                    return Walk::Settled;
                }
                // It waits for the first time, or no longer does: the lines before it come
                // from a nearer CPU now, and moving them takes less than it did.
                match (h.start > arrival, start > arrival) {
                    (false, true) => r.stat.contentions += 1,
                    (true, false) => r.stat.contentions -= 1,
                    _ => {}
                }
                r.stat.wait_max_ns = r.stat.wait_max_ns.max(start - arrival);
                // lock_stat's hold time includes the lines' move, which changes with the
                // predecessor's CPU.
                r.stat.hold_total_ns = r.stat.hold_total_ns + (end - start) - (h.end - h.start);
                r.stat.hold_max_ns = r.stat.hold_max_ns.max(end - start);
                if end == h.end {
                    // Later, but its predecessor's lines came from its own CPU: it ends
                    // where it did, so neither its owner nor the holds after it move.
                    h.start = start;
                    return Walk::Settled;
                }
                let d = &mut r.debt[h.owner as usize];
                if h.epoch != d.epoch {
                    // Its owner paid since it was placed: it counts from where it was then.
                    (h.base, h.epoch) = (h.end, d.epoch);
                }
                let owed = end.saturating_sub(h.base);
                if owed > d.owed {
                    r.stat.wait_total_ns += owed - d.owed;
                    r.stat.late_wait_ns += owed - d.owed;
                    d.owed = owed;
                }
                (h.start, h.end) = (start, end);
                Walk::On
            });
            // The places passed are done; a walk stopped before a hold that may still move
            // goes on from there later.
            match how {
                Walk::Settled => {
                    while self.stale.front().is_some_and(|&f| f <= at) {
                        self.stale.pop_front();
                    }
                }
                Walk::On | Walk::Spent => {
                    while self.stale.front().is_some_and(|&f| f < at) {
                        self.stale.pop_front();
                    }
                    if self.holds.any_from(at) && self.stale.front() != Some(&at) {
                        self.stale.push_front(at);
                    }
                    return;
                }
            }
        }
    }

    /// Drops the holds of acquisitions that arrived before `floor`, keeping where their
    /// queue ends and who held the lock last: every acquisition still to come arrives at
    /// `floor` or later, so it comes after all of them (it needs only their queue's end) and
    /// never moves them.
    #[inline]
    fn trim(&mut self, floor: u64, r: &mut Refresh<'_>) {
        self.refresh((floor, 0), usize::MAX, r);
        while let Some(h) = self.holds.pop_front_before(floor) {
            (self.last_end, self.last_cpu) = (h.end, h.cpu);
        }
        self.holds.shrink();
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
    /// Per CPU, its core and socket (the divisions of [`Topology::transfer_ns`] done once).
    place: Vec<(u32, u32)>,
    /// No acquisition can come before this time any more ([`Locks::forget_before`]); a
    /// lock drops the holds that arrived before it when it is next taken or swept.
    floor: u64,
    /// Per thread, the spinning it owes for acquisitions queued behind one visited later.
    debt: Vec<Debt>,
    /// Acquisitions visited so far (orders acquisitions that arrived at the same time).
    visits: u64,
    /// Locks that keep holds, visited a few at a time as the floor moves on, so that a lock
    /// not taken again (a run has one per swap cluster) does not keep its holds for ever.
    kept: VecDeque<u32>,
    /// Locks with holds still to move ([`Lock::refresh`]).
    stale: Vec<u32>,
    sleeping: Vec<SleepLock>,
}

/// What a thread owes ([`Locks::take_debt`]): how far its clock must move on, and how many
/// times it paid.
#[derive(Clone, Copy, Debug, Default)]
struct Debt {
    owed: u64,
    epoch: u32,
    /// When its latest acquisition arrived: its holds all arrived then or before.
    last_arrival: u64,
}

impl Locks {
    /// Holds an acquisition placed ahead of them moves at once; those after them, when
    /// they are needed ([`Lock::refresh`]). Most such queues end sooner (a gap absorbs
    /// the move); the rest are busy locks, whose moves add up before they are needed.
    const WALK_NOW: usize = 16;

    pub fn new(topology: Topology) -> Self {
        let place = (0..topology.cpus()).map(|c| (topology.core_of(c), topology.socket_of(c))).collect();
        Locks {
            locks: Vec::new(),
            stats: Vec::new(),
            topology,
            place,
            floor: 0,
            debt: Vec::new(),
            visits: 0,
            kept: VecDeque::new(),
            stale: Vec::new(),
            sleeping: Vec::new(),
        }
    }

    /// CPU `cpu`'s core and socket.
    #[inline]
    pub fn place(&self, cpu: u32) -> (u32, u32) {
        self.place.get(cpu as usize).copied().unwrap_or((self.topology.core_of(cpu), self.topology.socket_of(cpu)))
    }

    /// [`Topology::transfer_ns`] from the table of CPUs' places.
    #[inline]
    fn transfer_ns(place: &[(u32, u32)], topo: &Topology, from: u32, to: u32) -> u64 {
        match (place.get(from as usize), place.get(to as usize)) {
            (Some(a), Some(b)) if a.0 == b.0 => 0,
            (Some(a), Some(b)) if a.1 == b.1 => topo.same_socket_ns,
            (Some(_), Some(_)) => topo.cross_socket_ns,
            _ => topo.transfer_ns(from, to),
        }
    }

    /// A new class of spinlocks named `name` (the kernel's name for the lock, as lock_stat
    /// prints it).
    pub fn class(&mut self, name: &'static str) -> LockClass {
        self.stats.push(LockStat { name, ..LockStat::default() });
        LockClass((self.stats.len() - 1) as u16)
    }

    /// A new class of sleeping locks named `name` ([`Locks::sleep_lock`]).
    pub fn sleep_class(&mut self, name: &'static str) -> LockClass {
        self.stats.push(LockStat { name, sleeping: true, ..LockStat::default() });
        LockClass((self.stats.len() - 1) as u16)
    }

    /// A new lock of class `class`, never held.
    pub fn lock(&mut self, class: LockClass) -> LockId {
        self.locks.push(Lock {
            class,
            holds: Holds::new(),
            last_end: 0,
            last_cpu: u32::MAX,
            listed: false,
            stale: VecDeque::new(),
            on_stale: false,
        });
        LockId((self.locks.len() - 1) as u32)
    }

    /// `spin_lock` by thread `owner` on `cpu` at `now`, for a critical section of `hold_ns`
    /// that writes `lines` cache lines every holder writes (the lock's own counted; at
    /// least 1) (`spin_unlock` follows it): the lock is taken when every acquisition that
    /// arrived before `now` has dropped it, and held for the move of those lines from the
    /// CPU that dropped it last and the critical section. Acquisitions that arrived later
    /// but were visited before queue behind it: their holds move, their threads owe the
    /// wait.
    pub fn spin_lock(&mut self, id: LockId, owner: u32, cpu: u32, now: u64, hold_ns: u64, lines: u32) -> Acquired {
        let lines = lines.max(1);
        if owner as usize >= self.debt.len() {
            self.debt.resize(owner as usize + 1, Debt::default());
        }
        let lock = &mut self.locks[id.0 as usize];
        let stat = &mut self.stats[lock.class.0 as usize];
        let mut r = Refresh { place: &self.place, topo: &self.topology, debt: &mut self.debt, stat };
        lock.trim(self.floor, &mut r);
        if !lock.listed {
            lock.listed = true;
            self.kept.push_back(id.0);
        }
        // The acquisitions that arrived before this one (ties: visited first, first), where
        // they belong now.
        let key = (now, self.visits);
        self.visits += 1;
        lock.refresh(key, usize::MAX, &mut r);
        // Usually it arrived after every hold kept (the CPUs visited in time order): the
        // last one is its predecessor and none comes after it.
        let (before, in_order) = lock.holds.before(key);
        let (free_at, prev_cpu) = before.unwrap_or((lock.last_end, lock.last_cpu));
        let start = now.max(free_at);
        let transfer =
            if prev_cpu == u32::MAX { 0 } else { lines as u64 * Self::transfer_ns(r.place, r.topo, prev_cpu, cpu) };
        let end = start + transfer + hold_ns;
        let d = &mut r.debt[owner as usize];
        d.last_arrival = d.last_arrival.max(now);
        let hold = Hold { start, end, work: hold_ns, cpu, lines, owner, base: end, epoch: d.epoch };
        lock.holds.insert(key, hold);
        if !in_order {
            // Those that arrived later (visited earlier) queue behind this hold: a few move
            // now, and if the queue goes on (a busy lock), the rest when they are needed.
            // Every place kept is at or after `key` (refreshed up to it just now): from here
            // on, holds after this one are stale.
            let next = (key.0, key.1 + 1);
            while lock.stale.front().is_some_and(|&f| f <= next) {
                lock.stale.pop_front();
            }
            lock.stale.push_front(next);
            lock.refresh((u64::MAX, u64::MAX), Self::WALK_NOW, &mut r);
            if !lock.stale.is_empty() && !lock.on_stale {
                lock.on_stale = true;
                self.stale.push(id.0);
            }
        }
        let stat = &mut *r.stat;
        let bounced = prev_cpu != u32::MAX && prev_cpu != cpu;
        let wait = start - now;
        stat.acquisitions += 1;
        stat.bounces += bounced as u64;
        if wait > 0 {
            stat.contentions += 1;
            stat.wait_total_ns += wait;
            stat.wait_max_ns = stat.wait_max_ns.max(wait);
        }
        stat.hold_total_ns += transfer + hold_ns;
        stat.hold_max_ns = stat.hold_max_ns.max(transfer + hold_ns);
        Acquired { start, wait_ns: wait, transfer_ns: transfer }
    }

    /// Moves the holds of the locks in [`Locks::stale`] that arrived before `to` (all of
    /// them: `None`) behind the acquisitions placed ahead of them ([`Lock::refresh`]).
    fn refresh_stale(&mut self, to: Option<u64>) {
        let to = (to.unwrap_or(u64::MAX), u64::MAX);
        let mut i = 0;
        while i < self.stale.len() {
            let lock = &mut self.locks[self.stale[i] as usize];
            let stat = &mut self.stats[lock.class.0 as usize];
            let mut r = Refresh { place: &self.place, topo: &self.topology, debt: &mut self.debt, stat };
            lock.refresh(to, usize::MAX, &mut r);
            if lock.stale.is_empty() {
                lock.on_stale = false;
                self.stale.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// The spinning thread `owner` owes (and forgets it): acquisitions of its that were
    /// visited before others that arrived ahead of them, and were queued behind those.
    pub fn take_debt(&mut self, owner: u32) -> u64 {
        let Some(last) = self.debt.get(owner as usize).map(|d| d.last_arrival) else { return 0 };
        if !self.stale.is_empty() {
            self.refresh_stale(Some(last));
        }
        let d = &mut self.debt[owner as usize];
        if d.owed > 0 {
            d.epoch += 1;
            std::mem::take(&mut d.owed)
        } else {
            0
        }
    }

    /// Moves every hold still to move, so that the statistics count all the waits (the
    /// end of a run).
    pub fn settle(&mut self) {
        self.refresh_stale(None);
    }

    /// Forgets the holds of acquisitions that arrived before `t`: no CPU's clock is behind
    /// the event being run, so every acquisition still to come arrives after them and needs
    /// only their queue's end. A lock drops them when it is next taken; besides, four of
    /// the locks that keep holds are trimmed at each event (a run has a lock per swap
    /// cluster, too many to visit at every event, and most are not taken again soon).
    #[inline]
    pub fn forget_before(&mut self, t: u64) {
        self.floor = self.floor.max(t);
        for _ in 0..4 {
            let Some(id) = self.kept.pop_front() else { break };
            let lock = &mut self.locks[id as usize];
            let stat = &mut self.stats[lock.class.0 as usize];
            let mut r = Refresh { place: &self.place, topo: &self.topology, debt: &mut self.debt, stat };
            lock.trim(self.floor, &mut r);
            if lock.holds.is_empty() {
                // An idle lock gives its room back (a run has thousands of cluster locks).
                lock.holds = Holds::new();
                lock.listed = false;
            } else {
                self.kept.push_back(id);
            }
        }
    }

    /// Holds that can still delay an acquisition (for tests and invariant checks).
    pub fn holds_kept(&self) -> usize {
        self.locks.iter().map(|l| l.holds.count_from(self.floor)).sum()
    }

    /// Locks created.
    pub fn len(&self) -> usize {
        self.locks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.locks.is_empty()
    }

    /// Lock `id`'s holds kept, in arrival order: (arrival, start, end).
    #[cfg(test)]
    fn holds_of(&self, id: LockId) -> Vec<(u64, u64, u64)> {
        let mut v = Vec::new();
        let mut holds = self.locks[id.0 as usize].holds.clone();
        holds.walk((0, 0), (u64::MAX, u64::MAX), (0, 0), |_, a, h| {
            v.push((a, h.start, h.end));
            Walk::On
        });
        v
    }

    /// The class of lock `id`.
    pub fn class_of(&self, id: LockId) -> LockClass {
        self.locks[id.0 as usize].class
    }

    /// A new sleeping lock of class `class` (a [`Locks::sleep_class`]), free.
    pub fn sleep_lock(&mut self, class: LockClass) -> SleepLockId {
        debug_assert!(self.stats[class.0 as usize].sleeping, "a sleeping lock of a spinlock class");
        self.sleeping.push(SleepLock { class, owner: None, since: 0, waiters: VecDeque::new() });
        SleepLockId((self.sleeping.len() - 1) as u32)
    }

    /// `mutex_lock` / `down_write` by thread `owner` at `now`: whether it took the lock; if
    /// not, it is queued and must sleep until [`Locks::mutex_unlock`] hands it the lock.
    /// The kernel's waiter first spins while the holder runs on a CPU
    /// (`mutex_optimistic_spin`); here it sleeps at once (docs/model.md).
    pub fn mutex_lock(&mut self, id: SleepLockId, owner: u32, now: u64) -> bool {
        let l = &mut self.sleeping[id.0 as usize];
        let stat = &mut self.stats[l.class.0 as usize];
        debug_assert!(l.owner != Some(owner) && l.waiters.iter().all(|w| w.0 != owner), "a sleeping lock taken twice");
        if l.owner.is_none() {
            (l.owner, l.since) = (Some(owner), now);
            stat.acquisitions += 1;
            return true;
        }
        stat.contentions += 1;
        l.waiters.push_back((owner, now));
        false
    }

    /// `mutex_unlock` / `up_write` by its holder at `now`: the lock goes to the first
    /// waiter (returned, with the time it gets it: to be woken), or is free.
    pub fn mutex_unlock(&mut self, id: SleepLockId, now: u64) -> Option<(u32, u64)> {
        let l = &mut self.sleeping[id.0 as usize];
        let stat = &mut self.stats[l.class.0 as usize];
        debug_assert!(l.owner.is_some(), "a free sleeping lock released");
        let held = now.saturating_sub(l.since);
        stat.hold_total_ns += held;
        stat.hold_max_ns = stat.hold_max_ns.max(held);
        let Some((next, arrived)) = l.waiters.pop_front() else {
            l.owner = None;
            return None;
        };
        // A waiter visited before the holder's release but arrived after it (its clock
        // ahead) found the lock free in time: it gets it when it arrived.
        let at = now.max(arrived);
        let wait = at - arrived;
        (l.owner, l.since) = (Some(next), at);
        stat.acquisitions += 1;
        stat.wait_total_ns += wait;
        stat.wait_max_ns = stat.wait_max_ns.max(wait);
        Some((next, at))
    }

    /// Takes thread `owner` out of the queue of sleeping lock `id` (it exits while it
    /// waits), or releases the lock if it holds it (returning the next holder as
    /// [`Locks::mutex_unlock`] does).
    pub fn mutex_abandon(&mut self, id: SleepLockId, owner: u32, now: u64) -> Option<(u32, u64)> {
        let l = &mut self.sleeping[id.0 as usize];
        if l.owner == Some(owner) {
            return self.mutex_unlock(id, now);
        }
        l.waiters.retain(|w| w.0 != owner);
        None
    }

    /// The holder of sleeping lock `id` and the threads waiting for it.
    pub fn mutex_state(&self, id: SleepLockId) -> (Option<u32>, impl Iterator<Item = u32> + '_) {
        let l = &self.sleeping[id.0 as usize];
        (l.owner, l.waiters.iter().map(|w| w.0))
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
            let a = l.spin_lock(id, 0, 3, now, 200, 1);
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
        let a = l.spin_lock(id, 0, 0, 10_000, 300, 1);
        let b = l.spin_lock(id, 0, 1, 10_000, 300, 1);
        assert_eq!(a, Acquired { start: 10_000, wait_ns: 0, transfer_ns: 0 });
        assert_eq!(b, Acquired { start: 10_300, wait_ns: 300, transfer_ns: 45 });
        let c = l.spin_lock(id, 0, 2, 10_100, 300, 1);
        assert_eq!(c, Acquired { start: 10_645, wait_ns: 545, transfer_ns: 45 });
        let s = &l.stats[0];
        assert_eq!((s.acquisitions, s.contentions, s.bounces), (3, 2, 2));
        assert_eq!((s.wait_total_ns, s.wait_max_ns), (845, 545));
        assert_eq!((s.hold_total_ns, s.hold_max_ns), (300 + 345 + 345, 345));
    }

    /// A CPU whose clock is behind, visited after a CPU ahead of it took the lock, waits
    /// for the holds of acquisitions that arrived before its own, never for later ones
    /// (a queued spinlock serves in arrival order); the later ones move behind it, and
    /// their thread owes the wait.
    #[test]
    fn an_acquisition_visited_late_queues_ahead_of_later_arrivals() {
        let (mut l, id) = one_lock(Topology::flat(2));
        // Thread 1 on CPU 1 is ahead: it took the lock at 5,000 and at 5,150.
        l.spin_lock(id, 1, 1, 5_000, 100, 1);
        l.spin_lock(id, 1, 1, 5_150, 100, 1);
        // Thread 0 on CPU 0, behind, arrives at 4,950: first in line, it does not wait;
        // thread 1's hold at 5,000 moves after it (5,050, the line over from CPU 0 45 ns,
        // ends at 5,195 instead of 5,100) and its hold at 5,150 after that one (5,195, the
        // line already on CPU 1, ends at 5,295 instead of 5,250). Thread 1 owes the larger
        // move, 95 ns: its clock moves with its first hold, which moves its second by as
        // much (the 45 are inside those 95).
        let first = l.spin_lock(id, 0, 0, 4_950, 100, 1);
        assert_eq!((first.start, first.wait_ns), (4_950, 0));
        assert_eq!(l.take_debt(1), 95);
        assert_eq!(l.take_debt(1), 0, "paid");
        // At 5,200 thread 0 arrived after both: it waits for the second, moved, to end.
        let second = l.spin_lock(id, 0, 0, 5_200, 300, 1);
        assert_eq!((second.start, second.wait_ns, second.transfer_ns), (5_295, 95, 45));
        assert_eq!(l.take_debt(0), 0);
        let s = &l.stats[0];
        assert_eq!((s.contentions, s.wait_total_ns, s.late_wait_ns), (3, 95 + 95, 95));
    }

    /// However many short holds CPUs ahead of it placed after its arrival, an acquisition
    /// waits at most for the queue that was there when it arrived; those holds move after
    /// it, and their threads owe what they would have spun.
    #[test]
    fn holds_placed_after_a_late_arrival_do_not_starve_it() {
        let (mut l, id) = one_lock(Topology::flat(8));
        for k in 0..200u32 {
            let cpu = 1 + k % 7;
            l.spin_lock(id, cpu, cpu, 10_000 + k as u64 * 150, 100, 1);
        }
        let late = l.spin_lock(id, 0, 0, 10_000 + 20 * 150 + 10, 1_000, 1);
        // Each of those holds is 100 ns plus 45 ns for the line from the CPU before: the
        // one that arrived at 13,000 ends at 13,145, and the later ones do not count.
        assert_eq!((late.start, late.wait_ns), (13_145, 135), "waits for the hold in progress only");
        let owed: u64 = (1..8).map(|t| l.take_debt(t)).sum();
        assert!(owed > 1_000, "the later holds spin behind the long one ({owed} ns)");
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
        l.spin_lock(id, 0, 0, 0, 100, 1);
        assert_eq!(l.spin_lock(id, 0, 9, 1_000, 100, 1).transfer_ns, 115);
        assert_eq!(l.spin_lock(id, 0, 8, 2_000, 100, 1).transfer_ns, 0);
        assert_eq!(l.stats[0].bounces, 2);
    }

    /// A critical section that writes three lines of the lock's data pulls each of them
    /// from the last holder's CPU, and a waiter queued behind it waits for all three; so
    /// does one that was visited first and queues behind it afterwards, by its own lines.
    #[test]
    fn each_line_of_the_locks_data_moves_with_it() {
        // Four cores a socket: CPUs 0-3 on socket 0, 4-7 on socket 1.
        let (mut l, id) = one_lock(Topology::haswell_ep(2, 4, 1));
        l.spin_lock(id, 0, 0, 0, 100, 3);
        let a = l.spin_lock(id, 1, 4, 1_000, 100, 3);
        assert_eq!((a.start, a.transfer_ns), (1_000, 3 * 115));
        let b = l.spin_lock(id, 2, 1, 1_000, 100, 2);
        assert_eq!((b.start, b.transfer_ns), (1_000 + 345 + 100, 2 * 115));

        let (mut l, id) = one_lock(Topology::haswell_ep(2, 4, 1));
        l.spin_lock(id, 0, 0, 0, 100, 1);
        // Visited first: from CPU 0's hold, two lines within the socket.
        let b = l.spin_lock(id, 2, 1, 1_000, 100, 2);
        assert_eq!((b.start, b.transfer_ns), (1_000, 2 * 45));
        // Arrived earlier on the other socket: b now follows it and pulls its two lines
        // from there, 1,435 + 230 + 100 instead of 1,190.
        let a = l.spin_lock(id, 1, 4, 990, 100, 3);
        assert_eq!((a.start, a.transfer_ns), (990, 3 * 115));
        let a_end = 990 + 345 + 100;
        assert_eq!(l.take_debt(2), a_end + 2 * 115 + 100 - 1_190);
    }

    /// However the CPUs' clocks interleave the acquisitions' visits, and whenever the
    /// threads pay what they owe, a lock's holds end up as a FIFO queue in arrival order
    /// would place them: each starts when it arrives or when the one that arrived before it
    /// ends, and pulls its lines from that one's CPU; lock_stat counts the waits and holds
    /// where they end up. (Holds are moved lazily: this fails if a move is lost or applied
    /// twice.)
    #[test]
    fn holds_end_in_arrival_order_whatever_the_visit_order() {
        use proptest::prelude::*;
        let acq = (0u64..20_000, 0u32..8, 1u64..400, 1u32..4, any::<bool>());
        proptest!(ProptestConfig::with_cases(200), |(acqs in proptest::collection::vec(acq, 1..300))| {
            let (mut l, id) = one_lock(Topology::haswell_ep(2, 2, 2));
            for &(arrival, cpu, work, lines, pay) in &acqs {
                l.spin_lock(id, cpu, cpu, arrival, work, lines);
                if pay {
                    l.take_debt((cpu + 3) % 8);
                }
            }
            l.settle();
            let mut order: Vec<usize> = (0..acqs.len()).collect();
            order.sort_by_key(|&i| (acqs[i].0, i));
            let (mut q_end, mut q_cpu) = (0u64, u32::MAX);
            let mut want = Vec::new();
            for i in order {
                let (arrival, cpu, work, lines, _) = acqs[i];
                let start = arrival.max(q_end);
                let transfer = if q_cpu == u32::MAX { 0 } else { lines as u64 * l.topology.transfer_ns(q_cpu, cpu) };
                (q_end, q_cpu) = (start + transfer + work, cpu);
                want.push((arrival, start, q_end));
            }
            // lock_stat counts each hold's final wait and length once.
            let s = &l.stats[0];
            prop_assert_eq!(s.contentions, want.iter().filter(|w| w.1 > w.0).count() as u64);
            prop_assert_eq!(s.hold_total_ns, want.iter().map(|w| w.2 - w.1).sum::<u64>());
            prop_assert_eq!(l.holds_of(id), want);
        });
    }

    /// A sleeping lock goes to its waiters in the order they came, each when the one before
    /// releases it (or when it arrived, if its clock was ahead of that release); a waiter
    /// that exits leaves the queue, a holder that exits hands the lock on. lock_stat counts
    /// the waits asleep and the holds.
    #[test]
    fn a_sleeping_lock_is_handed_to_its_waiters_in_turn() {
        let mut l = Locks::new(Topology::flat(4));
        let c = l.sleep_class("&sb->s_type->i_mutex_key");
        let m = l.sleep_lock(c);
        assert!(l.mutex_lock(m, 0, 1_000));
        assert!(!l.mutex_lock(m, 1, 2_000));
        assert!(!l.mutex_lock(m, 2, 3_000));
        assert!(!l.mutex_lock(m, 3, 9_000));
        assert_eq!(l.mutex_unlock(m, 5_000), Some((1, 5_000)), "the first waiter, at the release");
        assert_eq!(l.mutex_abandon(m, 2, 6_000), None, "thread 2 leaves the queue");
        assert_eq!(l.mutex_abandon(m, 1, 7_000), Some((3, 9_000)), "thread 3 arrived after the release");
        assert_eq!(l.mutex_unlock(m, 10_000), None);
        assert!(l.mutex_lock(m, 2, 11_000), "free again");
        let s = &l.stats[0];
        assert_eq!((s.acquisitions, s.contentions), (4, 3));
        assert_eq!((s.wait_total_ns, s.wait_max_ns), (3_000, 3_000));
        assert_eq!((s.hold_total_ns, s.hold_max_ns), (4_000 + 2_000 + 1_000, 4_000));
    }

    /// Holds that ended before the event being run are dropped; the last one's CPU is
    /// kept, so the next acquisition still pays for the line's move.
    #[test]
    fn forgotten_holds_keep_the_last_holders_cpu() {
        let (mut l, id) = one_lock(Topology::flat(4));
        for i in 0..10 {
            l.spin_lock(id, 0, i % 2, i as u64 * 1_000, 100, 1);
        }
        assert_eq!(l.holds_kept(), 10);
        l.forget_before(9_000);
        assert_eq!(l.holds_kept(), 1, "only the hold at 9,000 can still be met");
        l.forget_before(20_000);
        assert_eq!(l.holds_kept(), 0);
        assert_eq!(l.spin_lock(id, 0, 2, 30_000, 100, 1).transfer_ns, 45, "the line is CPU 1's");
    }

    /// Locks taken once and never again give their holds back as the floor passes them,
    /// a few at each event, and keep where their queue ended.
    #[test]
    fn idle_locks_are_swept_of_their_holds() {
        let mut l = Locks::new(Topology::flat(4));
        let c = l.class("ci->lock (swap cluster)");
        let ids: Vec<LockId> = (0..20).map(|_| l.lock(c)).collect();
        for (k, &id) in ids.iter().enumerate() {
            l.spin_lock(id, 0, 1, 1_000 + k as u64, 100, 1);
        }
        assert_eq!(l.kept.len(), 20);
        for t in 0..5 {
            l.forget_before(10_000 + t);
        }
        assert!(l.kept.is_empty(), "20 locks swept, four an event");
        assert!(l.locks.iter().all(|k| k.holds.is_empty() && !k.listed && k.last_cpu == 1));
        assert_eq!(l.locks[19].last_end, 1_019 + 100);
    }
}
