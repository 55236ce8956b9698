//! `pagesim cache`: a trace through a page cache alone, no devices, no time: the miss ratio
//! of an LRU cache of a given number of pages, and the miss-ratio curve of LRU from one pass
//! (Mattson's stack algorithm: a reference hits in every LRU cache larger than its reuse
//! distance, the number of distinct pages referenced since the same page last was).
//!
//! Every page a record touches is one reference ([`crate::tracefile::Ref`]): a 10 KiB object
//! is three. Flat arrays and u32 indices: a page's slot is found in one hash lookup, a
//! reference allocates nothing once the page has been seen.

use crate::prefetch::prefetch;
use crate::tracefile::{Reader, TraceError};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

const NONE: u32 = u32::MAX;

/// A page's identity: its space and its number there.
type Key = (u64, u64);

/// A multiply-rotate hash of a page's two numbers (FxHash's step): the default SipHash,
/// built against adversarial keys, costs a quarter of a reference.
#[derive(Default)]
pub struct PageHasher(u64);

impl Hasher for PageHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }

    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

type PageMap<V> = HashMap<Key, V, BuildHasherDefault<PageHasher>>;

/// A page's hash: [`PageHasher`] over its two numbers, the product's upper half (the bits
/// every input bit reaches).
#[inline]
fn hash(k: Key) -> u32 {
    let mut h = PageHasher::default();
    h.write_u64(k.0);
    h.write_u64(k.1);
    (h.finish() >> 32) as u32
}

/// A slot of the LRU list: the page it holds and its neighbours (one cache line a hit).
#[derive(Clone, Copy)]
struct Slot {
    key: Key,
    prev: u32,
    next: u32,
}

/// A bucket of the index: a slot number and its page's hash (compared before the slot's key
/// is read, and the home of an entry moved at a removal, without reading its slot).
#[derive(Clone, Copy)]
struct Bucket {
    hash: u32,
    slot: u32,
}

const EMPTY: Bucket = Bucket { hash: 0, slot: NONE };

/// The slot of each cached page: open addressing with linear probing (8 bytes a bucket,
/// half full at most); a removal shifts the entries after it back (no tombstones).
struct Index {
    buckets: Vec<Bucket>,
    len: usize,
}

impl Index {
    fn new(expected: usize) -> Self {
        Index { buckets: vec![EMPTY; (2 * expected).next_power_of_two().max(16)], len: 0 }
    }

    #[inline]
    fn home(&self, h: u32) -> usize {
        h as usize & (self.buckets.len() - 1)
    }

    /// The bucket holding `k`'s slot (`h` its hash), or the empty bucket where it would go;
    /// `key(s)` is the page of slot `s`.
    #[inline]
    fn find(&self, k: Key, h: u32, key: impl Fn(u32) -> Key) -> Result<usize, usize> {
        let mask = self.buckets.len() - 1;
        let mut b = self.home(h);
        loop {
            let e = self.buckets[b];
            if e.slot == NONE {
                return Err(b);
            }
            if e.hash == h && key(e.slot) == k {
                return Ok(b);
            }
            b = (b + 1) & mask;
        }
    }

    /// Asks for the cache line of the bucket where a lookup of hash `h` starts.
    #[inline(always)]
    fn prefetch(&self, h: u32) {
        prefetch(&self.buckets[self.home(h)]);
    }

    /// The slot in the bucket where a lookup of hash `h` starts, if its page has that hash
    /// (usually the page looked up: its slot's line can be asked for).
    #[inline(always)]
    fn first_slot(&self, h: u32) -> Option<u32> {
        let e = self.buckets[self.home(h)];
        (e.slot != NONE && e.hash == h).then_some(e.slot)
    }

    /// Indexes slot `s` as page `k`'s (`h` its hash; `k` is not indexed yet).
    fn insert(&mut self, k: Key, h: u32, s: u32, key: impl Fn(u32) -> Key) {
        if 2 * (self.len + 1) > self.buckets.len() {
            let twice = vec![EMPTY; self.buckets.len() * 2];
            let old = std::mem::replace(&mut self.buckets, twice);
            let mask = self.buckets.len() - 1;
            for e in old.into_iter().filter(|e| e.slot != NONE) {
                let mut b = self.home(e.hash);
                while self.buckets[b].slot != NONE {
                    b = (b + 1) & mask;
                }
                self.buckets[b] = e;
            }
        }
        if let Err(b) = self.find(k, h, key) {
            self.buckets[b] = Bucket { hash: h, slot: s };
            self.len += 1;
        }
    }

    /// Empties bucket `hole`.
    fn remove_at(&mut self, mut hole: usize) {
        let mask = self.buckets.len() - 1;
        self.len -= 1;
        let mut j = hole;
        loop {
            self.buckets[hole] = EMPTY;
            loop {
                j = (j + 1) & mask;
                let e = self.buckets[j];
                if e.slot == NONE {
                    return;
                }
                // An entry whose home lies cyclically in (hole, j] stays; another moves
                // into the hole, which moves to where it was.
                let home = self.home(e.hash);
                let stays = if hole <= j { hole < home && home <= j } else { hole < home || home <= j };
                if !stays {
                    self.buckets[hole] = e;
                    hole = j;
                    break;
                }
            }
        }
    }
}

/// An LRU cache of `capacity` pages: a doubly linked list through slots, the most recent at
/// the head.
pub struct Lru {
    capacity: u32,
    index: Index,
    slots: Vec<Slot>,
    head: u32,
    tail: u32,
    /// The hashes of the batch [`Lru::access_all`] works on (kept: no allocation a batch).
    hashes: Vec<u32>,
    pub hits: u64,
    pub misses: u64,
}

/// How many references ahead [`Lru::access_all`] asks for a page's bucket; half as many
/// ahead, for its slot (its bucket has come by then).
const AHEAD: usize = 16;

/// Below this size of its arrays, [`Lru::access_all`] asks for no line ahead: 1 MiB, half
/// the L2 cache of a core of this machine's Xeon (2 MiB; 1-2 MiB on current x86 server
/// cores), where a lookup hits without help. Measured on the 10M-reference zipf trace of
/// `bench/vs-libcachesim.sh` at 1 % (0.3 MiB of arrays): 0.50-0.60 s of user time without
/// prefetching, 0.63-0.71 s with; at 50 % (14 MiB): 0.60-0.96 s without, 0.63 s with.
const CACHED_BYTES: usize = 1 << 20;

impl Lru {
    pub fn new(capacity: u32) -> Self {
        let capacity = capacity.max(1);
        // Sized for the capacity up to 2^20 pages, grown past that as pages come (a large
        // cache over a trace of few pages writes no large index).
        let expected = (capacity as usize).min(1 << 20);
        Lru {
            capacity,
            index: Index::new(expected),
            slots: Vec::with_capacity(expected),
            head: NONE,
            tail: NONE,
            hashes: Vec::new(),
            hits: 0,
            misses: 0,
        }
    }

    #[inline]
    fn unlink(&mut self, s: u32) {
        let Slot { prev: p, next: n, .. } = self.slots[s as usize];
        if p == NONE {
            self.head = n
        } else {
            self.slots[p as usize].next = n
        }
        if n == NONE {
            self.tail = p
        } else {
            self.slots[n as usize].prev = p
        }
    }

    #[inline]
    fn push_head(&mut self, s: u32) {
        let old = self.head;
        let slot = &mut self.slots[s as usize];
        (slot.prev, slot.next) = (NONE, old);
        if old != NONE {
            self.slots[old as usize].prev = s;
        }
        self.head = s;
        if self.tail == NONE {
            self.tail = s;
        }
    }

    /// References page `k`: whether it was cached. A miss evicts the least recently used
    /// page when the cache is full and caches `k` at the head.
    #[inline]
    pub fn access(&mut self, k: Key) -> bool {
        self.access_hashed(k, hash(k))
    }

    /// References the pages `keys` in order, as [`Lru::access`] each, with the cache lines
    /// of the pages a few references ahead asked for meanwhile.
    pub fn access_all(&mut self, keys: &[Key]) {
        // A cache whose arrays fit in a core's L2 cache gains nothing from asking for lines
        // ahead, only the asking's cost.
        let bytes = (self.slots.len() * std::mem::size_of::<Slot>())
            + (self.index.buckets.len() * std::mem::size_of::<Bucket>());
        if bytes < CACHED_BYTES {
            for &k in keys {
                self.access(k);
            }
            return;
        }
        let mut hashes = std::mem::take(&mut self.hashes);
        hashes.clear();
        hashes.extend(keys.iter().map(|&k| hash(k)));
        for (i, &k) in keys.iter().enumerate() {
            if let Some(&h) = hashes.get(i + AHEAD) {
                self.index.prefetch(h);
            }
            if let Some(s) = hashes.get(i + AHEAD / 2).and_then(|&h| self.index.first_slot(h)) {
                prefetch(&self.slots[s as usize]);
            }
            self.access_hashed(k, hashes[i]);
        }
        self.hashes = hashes;
    }

    #[inline]
    fn access_hashed(&mut self, k: Key, h: u32) -> bool {
        let slots = &self.slots;
        let free = match self.index.find(k, h, |s| slots[s as usize].key) {
            Ok(b) => {
                self.hits += 1;
                let s = self.index.buckets[b].slot;
                if self.head != s {
                    self.unlink(s);
                    self.push_head(s);
                }
                return true;
            }
            Err(b) => b,
        };
        self.misses += 1;
        if (self.slots.len() as u32) < self.capacity {
            let s = self.slots.len() as u32;
            self.slots.push(Slot { key: k, prev: NONE, next: NONE });
            let slots = &self.slots;
            self.index.insert(k, h, s, |s| slots[s as usize].key);
            self.push_head(s);
            return false;
        }
        // Full: the tail's slot takes `k`. The tail's page's bucket is the one on its probe
        // path that holds its slot; `k` goes in the free bucket the lookup found (nothing
        // moved since), then the tail's page leaves (which may move `k`'s entry back).
        let s = self.tail;
        self.unlink(s);
        let old = std::mem::replace(&mut self.slots[s as usize].key, k);
        let mask = self.index.buckets.len() - 1;
        let mut b = self.index.home(hash(old));
        while self.index.buckets[b].slot != s {
            b = (b + 1) & mask;
        }
        self.index.buckets[free] = Bucket { hash: h, slot: s };
        self.index.len += 1;
        self.index.remove_at(b);
        self.push_head(s);
        false
    }
}

/// Numbers each distinct page of a reference stream in the order of its first reference
/// (the page of a file that a trace's page becomes in a replay), the lookups a batch ahead
/// as [`Lru::access_all`]'s.
#[derive(Default)]
pub struct Numbering {
    index: Option<Index>,
    keys: Vec<Key>,
    hashes: Vec<u32>,
}

impl Numbering {
    /// Pushes the number of each page of `keys` to `out`, numbering the new ones.
    pub fn number_all(&mut self, keys: &[Key], out: &mut Vec<u32>) {
        let index = self.index.get_or_insert_with(|| Index::new(1 << 10));
        let mut hashes = std::mem::take(&mut self.hashes);
        hashes.clear();
        hashes.extend(keys.iter().map(|&k| hash(k)));
        for (i, &k) in keys.iter().enumerate() {
            if let Some(&h) = hashes.get(i + AHEAD) {
                index.prefetch(h);
            }
            if let Some(s) = hashes.get(i + AHEAD / 2).and_then(|&h| index.first_slot(h)) {
                prefetch(&self.keys[s as usize]);
            }
            let h = hashes[i];
            let known = &self.keys;
            match index.find(k, h, |s| known[s as usize]) {
                Ok(b) => out.push(index.buckets[b].slot),
                Err(_) => {
                    let n = self.keys.len() as u32;
                    self.keys.push(k);
                    let known = &self.keys;
                    index.insert(k, h, n, |s| known[s as usize]);
                    out.push(n);
                }
            }
        }
        self.hashes = hashes;
    }

    /// The distinct pages numbered.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// Reuse distances of a reference stream, counted in one pass: per page the time of its
/// last reference, and a Fenwick tree over time marking each page's last reference, so
/// that the distinct pages referenced since are a prefix-sum difference.
pub struct ReuseDistances {
    last: PageMap<u64>,
    tree: Vec<u32>,
    now: u64,
    /// `hist[d]`: references at reuse distance `d` (the distinct pages in between); first
    /// references are `cold`.
    pub hist: Vec<u64>,
    pub cold: u64,
}

impl Default for ReuseDistances {
    fn default() -> Self {
        ReuseDistances { last: PageMap::default(), tree: vec![0; 1024], now: 0, hist: Vec::new(), cold: 0 }
    }
}

impl ReuseDistances {
    fn add(&mut self, t: u64, v: i32) {
        let mut i = t as usize + 1;
        while i < self.tree.len() {
            self.tree[i] = (self.tree[i] as i64 + v as i64) as u32;
            i += i & i.wrapping_neg();
        }
    }

    /// Marks at times `< t`.
    fn prefix(&self, t: u64) -> u64 {
        let mut i = t as usize;
        let mut s = 0u64;
        while i > 0 {
            s += self.tree[i] as u64;
            i -= i & i.wrapping_neg();
        }
        s
    }

    /// Records a reference to page `k`.
    pub fn access(&mut self, k: Key) {
        if self.now as usize + 2 > self.tree.len() {
            // Twice the room: the marks are each page's last reference, re-added.
            self.tree = vec![0; self.tree.len() * 2];
            let marks: Vec<u64> = self.last.values().copied().collect();
            for t in marks {
                self.add(t, 1);
            }
        }
        let t = self.now;
        match self.last.insert(k, t) {
            Some(prev) => {
                let d = (self.prefix(t) - self.prefix(prev + 1)) as usize;
                if d >= self.hist.len() {
                    self.hist.resize(d + 1, 0);
                }
                self.hist[d] += 1;
                self.add(prev, -1);
            }
            None => self.cold += 1,
        }
        self.add(t, 1);
        self.now += 1;
    }

    /// The misses of an LRU cache of `pages` pages: first references and those at a reuse
    /// distance of `pages` or more.
    pub fn misses(&self, pages: u64) -> u64 {
        self.cold + self.hist.iter().skip(pages as usize).sum::<u64>()
    }

    /// References recorded.
    pub fn references(&self) -> u64 {
        self.now
    }

    /// Distinct pages referenced.
    pub fn distinct(&self) -> u64 {
        self.cold
    }
}

/// Feeds the pages of the records of `trace` to `f`, in order, a batch
/// ([`Reader::next_refs`]'s records) at a time.
pub fn each_page(trace: &mut dyn Reader, mut f: impl FnMut(&[Key])) -> Result<(), TraceError> {
    let (mut refs, mut keys) = (Vec::new(), Vec::new());
    loop {
        refs.clear();
        trace.next_refs(&mut refs)?;
        if refs.is_empty() {
            return Ok(());
        }
        keys.clear();
        for r in &refs {
            keys.extend((r.page..r.page + r.pages as u64).map(|p| (r.space, p)));
        }
        f(&keys);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The textbook trace a b c a d b in a cache of 3: a, b, c miss; a hits; d misses and
    /// evicts b (the least recently used); b misses.
    #[test]
    fn lru_evicts_the_least_recently_used_page() {
        let mut c = Lru::new(3);
        let got: Vec<bool> = [1, 2, 3, 1, 4, 2].iter().map(|&p| c.access((0, p))).collect();
        assert_eq!(got, [false, false, false, true, false, false]);
        assert_eq!((c.hits, c.misses), (1, 5));
        assert!(!c.access((1, 1)), "another space's page 1 is another page");
    }

    /// a b c a d b: a's second reference has reuse distance 2 (b, c), b's 3 (c, a, d).
    #[test]
    fn reuse_distances_count_the_distinct_pages_in_between() {
        let mut r = ReuseDistances::default();
        for p in [1, 2, 3, 1, 4, 2] {
            r.access((0, p));
        }
        assert_eq!((r.cold, r.hist.clone()), (4, vec![0, 0, 1, 1]));
        assert_eq!((r.misses(3), r.misses(4)), (5, 4));
    }

    /// A cache past `CACHED_BYTES` (where batches ask for lines ahead) hits and misses as
    /// one reference at a time does.
    #[test]
    fn a_large_cache_in_batches_hits_and_misses_as_one_by_one() {
        let mut x = 1u64;
        let keys: Vec<Key> = (0..200_000)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                // Skewed: half the references to 1/16 of the pages.
                let p = (x >> 33) % 80_000;
                (0, if x & 1 == 0 { p / 16 } else { p })
            })
            .collect();
        let (mut one, mut batched) = (Lru::new(50_000), Lru::new(50_000));
        keys.iter().for_each(|&k| {
            one.access(k);
        });
        keys.chunks(300).for_each(|c| batched.access_all(c));
        assert!(batched.slots.len() * std::mem::size_of::<Slot>() > CACHED_BYTES, "the batches asked ahead");
        assert!(one.hits > 50_000 && one.misses > 50_000, "{} hits {} misses", one.hits, one.misses);
        assert_eq!((one.hits, one.misses), (batched.hits, batched.misses));
    }

    /// Pages are numbered by first reference, across batches and past the index's growth.
    #[test]
    fn numbering_follows_first_references() {
        let keys: Vec<Key> = (0..5000u64).map(|i| (i % 2, (i * 7919) % 3001)).collect();
        let mut n = Numbering::default();
        let mut got = Vec::new();
        keys.chunks(77).for_each(|c| n.number_all(c, &mut got));
        let mut first: Vec<Key> = Vec::new();
        let want: Vec<u32> = keys
            .iter()
            .map(|k| match first.iter().position(|f| f == k) {
                Some(i) => i as u32,
                None => {
                    first.push(*k);
                    (first.len() - 1) as u32
                }
            })
            .collect();
        assert_eq!(got, want);
        assert_eq!(n.len(), first.len());
        assert!(n.len() > 1024, "the index grew");
    }

    proptest! {
        /// The one-pass curve gives, at every size, the misses an LRU cache of that size has
        /// (also past the tree's first doubling).
        #[test]
        fn the_curve_matches_an_lru_cache_at_every_size(trace in proptest::collection::vec(0u64..300, 1..3000)) {
            let mut r = ReuseDistances::default();
            for &p in &trace {
                r.access((0, p));
            }
            for size in [1u32, 2, 7, 50, 299, 400] {
                let mut c = Lru::new(size);
                for &p in &trace {
                    c.access((0, p));
                }
                prop_assert_eq!(r.misses(size as u64), c.misses, "size {}", size);
            }
        }

        /// References given in batches (looked up ahead) hit and miss as one by one.
        #[test]
        fn batches_hit_and_miss_as_one_by_one(trace in proptest::collection::vec(0u64..300, 1..3000), size in 1u32..400) {
            let keys: Vec<Key> = trace.iter().map(|&p| (p % 3, p)).collect();
            let (mut one, mut batched) = (Lru::new(size), Lru::new(size));
            for chunk in keys.chunks(37) {
                chunk.iter().for_each(|&k| { one.access(k); });
                batched.access_all(chunk);
                prop_assert_eq!((one.hits, one.misses), (batched.hits, batched.misses));
            }
        }
    }
}
