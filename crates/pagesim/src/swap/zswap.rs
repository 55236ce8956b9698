//! zswap's state (mm/zswap.c, 6.x): its parameters ([`ZswapParams`], the `zswap.*` module
//! parameters and what the profile allows), and the pool ([`Zswap`]): one entry per swap
//! slot (`struct zswap_entry`: the compressed length, the memcg charged, the `referenced`
//! bit), the LRU of entries, the pool limit with its hysteresis (`zswap_check_limits`) and
//! the shrink worker's state. What zswap does with it (`zswap_store`, `zswap_load`, the
//! shrink worker, `zswap_writeback_entry`) is engine/zswap.rs, whose header describes the
//! model and its simplifications.

use super::Entry;
use crate::mm::compress::{self, Compressor, PAGE};
use crate::mm::zsmalloc::ZsPool;
use crate::mm::NIL;
use crate::profile::ZswapRules;
use serde::Deserialize;

/// The `[zswap]` table: /sys/module/zswap/parameters.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ZswapParams {
    /// `enabled`. Default false (Debian's CONFIG_ZSWAP_DEFAULT_ON=n).
    pub enabled: bool,
    /// `max_pool_percent`: most of RAM the pool may take, percent. Default 20.
    pub max_pool_percent: u32,
    /// `compressor`. Default "lzo" (CONFIG_ZSWAP_COMPRESSOR_DEFAULT).
    pub compressor: String,
    /// `accept_threshold_percent`: a full pool accepts again below this percent of its
    /// maximum (5.6+). Default 90.
    pub accept_threshold_percent: u32,
    /// `shrinker_enabled` (6.8+). Default false (CONFIG_ZSWAP_SHRINKER_DEFAULT_ON=n).
    pub shrinker_enabled: bool,
    /// zswap was on at some time since boot, even if it is off now: the kernel cannot take
    /// that back (`zswap_never_enabled` stays false), and from 6.12 it then never reads a
    /// large folio back from swap. Default: `enabled`.
    pub ever_enabled: Option<bool>,
}

impl Default for ZswapParams {
    fn default() -> Self {
        ZswapParams {
            enabled: false,
            max_pool_percent: 20,
            compressor: "lzo".into(),
            accept_threshold_percent: 90,
            shrinker_enabled: false,
            ever_enabled: None,
        }
    }
}

impl ZswapParams {
    /// Checks the table against the profile. Errors are `(key, message)`.
    pub fn validate(&self, profile: &crate::profile::Profile) -> Result<(), (&'static str, String)> {
        if compress::find(&self.compressor).is_none() {
            return Err((
                "zswap.compressor",
                format!("unknown compressor \"{}\"; expected one of: {}", self.compressor, compress::names()),
            ));
        }
        if self.max_pool_percent > 100 {
            return Err(("zswap.max_pool_percent", format!("expected 0..100, got {}", self.max_pool_percent)));
        }
        if self.accept_threshold_percent > 100 {
            return Err((
                "zswap.accept_threshold_percent",
                format!("expected 0..100, got {}", self.accept_threshold_percent),
            ));
        }
        match profile.zswap {
            None if self.enabled => {
                return Err((
                    "zswap.enabled",
                    format!("{} has no zswap (it came with 3.11); use linux-3.14 or a later profile", profile.name),
                ))
            }
            _ if self.ever_enabled == Some(false) && self.enabled => {
                return Err(("zswap.ever_enabled", "false, but zswap is enabled now".into()))
            }
            Some(r) if self.shrinker_enabled && !r.shrinker => {
                return Err(("zswap.shrinker_enabled", format!("{} has no zswap shrinker (6.8+)", profile.name)))
            }
            _ => {}
        }
        if self.shrinker_enabled {
            return Err((
                "zswap.shrinker_enabled",
                "the zswap memory shrinker is not modelled yet; only the pool-limit writeback is".into(),
            ));
        }
        Ok(())
    }
}

/// Entry length code: none.
pub(crate) const NO_ENTRY: u16 = 0;
/// Entry length code of a same-filled entry (length 0).
pub(crate) const SAME_FILLED: u16 = 1;

/// zswap's state: the entries of every swap slot, their LRU, the pool.
#[derive(Debug)]
pub struct Zswap {
    pub enabled: bool,
    /// `!zswap_never_enabled()`: on now or at some time since boot.
    pub ever_enabled: bool,
    pub comp: &'static Compressor,
    pub(crate) rules: ZswapRules,
    /// `zswap_max_pages()` and `zswap_accept_thr_pages()`.
    pub(crate) max_pages: u64,
    pub(crate) accept_pages: u64,
    /// First global index of each swap area (entries are indexed by area base + slot).
    pub(crate) base: Vec<u32>,
    /// Per slot: [`NO_ENTRY`], [`SAME_FILLED`], or the stored length + 1.
    pub(crate) len: Vec<u16>,
    pub(crate) memcg: Vec<u16>,
    pub(crate) referenced: Vec<bool>,
    /// LRU links: `head` is the newest entry, `tail` the oldest.
    pub(crate) next: Vec<u32>,
    pub(crate) prev: Vec<u32>,
    pub(crate) head: u32,
    pub(crate) tail: u32,
    pub pool: ZsPool,
    /// The 3.11-3.14 pool (`ZswapRules::zbud_evict`), and each entry's zbud handle.
    pub zbud: crate::mm::zbud::Zbud,
    pub(crate) handle: Vec<u32>,
    /// `zswap_stored_pages`.
    pub stored_pages: u64,
    /// `zswap_same_filled_pages` (≤6.11).
    pub same_filled_pages: u64,
    /// `zswap_pool_reached_full`.
    pub(crate) reached_full: bool,
    /// Compressed bytes charged to each memcg (`MEMCG_ZSWAP_B`).
    pub(crate) memcg_bytes: Vec<u64>,
    // debugfs statistics, under their kernel names.
    pub pool_limit_hit: u64,
    pub reject_compress_poor: u64,
    pub reject_alloc_fail: u64,
    pub reject_reclaim_fail: u64,
    pub written_back_pages: u64,
    /// The shrink work is queued or running.
    pub(crate) worker_queued: bool,
    pub(crate) worker_failures: u32,
    /// CPU time of the shrink worker, ns.
    pub worker_cpu_ns: u64,
}

impl Zswap {
    /// `area_slots`: slots of each swap area; `managed_pages`: totalram_pages().
    pub fn new(
        p: &ZswapParams,
        rules: Option<ZswapRules>,
        area_slots: &[u32],
        managed_pages: u64,
        nr_memcgs: usize,
    ) -> Self {
        let enabled = p.enabled && rules.is_some();
        let mut base = Vec::with_capacity(area_slots.len());
        let mut n = 0u32;
        for &s in area_slots {
            base.push(n);
            n += s;
        }
        let n = if enabled { n as usize } else { 0 };
        let max_pages = managed_pages * p.max_pool_percent as u64 / 100;
        Zswap {
            enabled,
            ever_enabled: enabled || p.ever_enabled.unwrap_or(false),
            comp: compress::find(&p.compressor).unwrap_or(&compress::COMPRESSORS[0]),
            rules: rules.unwrap_or(ZswapRules {
                exclusive_load: true,
                same_filled: false,
                store_incompressible: false,
                shrinker: false,
                zbud_evict: false,
                memcg_charge: true,
            }),
            max_pages,
            accept_pages: max_pages * p.accept_threshold_percent as u64 / 100,
            base,
            len: vec![NO_ENTRY; n],
            memcg: vec![0; n],
            referenced: vec![false; n],
            next: vec![NIL; n],
            prev: vec![NIL; n],
            head: NIL,
            tail: NIL,
            pool: ZsPool::new(),
            zbud: Default::default(),
            handle: if rules.is_some_and(|r| r.zbud_evict) { vec![NIL; n] } else { Vec::new() },
            stored_pages: 0,
            same_filled_pages: 0,
            reached_full: false,
            memcg_bytes: vec![0; nr_memcgs],
            pool_limit_hit: 0,
            reject_compress_poor: 0,
            reject_alloc_fail: 0,
            reject_reclaim_fail: 0,
            written_back_pages: 0,
            worker_queued: false,
            worker_failures: 0,
            worker_cpu_ns: 0,
        }
    }

    #[inline]
    pub(crate) fn gidx(&self, e: Entry) -> usize {
        (self.base[e.area()] + e.slot()) as usize
    }

    pub(crate) fn entry_of(&self, gi: u32) -> Entry {
        let area = self.base.iter().rposition(|&b| b <= gi).expect("index inside an area");
        Entry::new(area as u32, gi - self.base[area])
    }

    /// Whether the slot has an entry.
    pub fn has(&self, e: Entry) -> bool {
        self.enabled && self.len[self.gidx(e)] != NO_ENTRY
    }

    /// Stored length of the slot's entry (0 for same-filled), if any.
    pub fn stored_len(&self, e: Entry) -> Option<u32> {
        if !self.enabled {
            return None;
        }
        match self.len[self.gidx(e)] {
            NO_ENTRY => None,
            v => Some(v as u32 - 1),
        }
    }

    /// Pages charged to memcg `m` for its compressed bytes.
    pub fn memcg_pages(&self, m: usize) -> u64 {
        self.memcg_bytes.get(m).map_or(0, |b| b.div_ceil(PAGE as u64))
    }

    pub(crate) fn lru_add_newest(&mut self, gi: usize) {
        self.prev[gi] = NIL;
        self.next[gi] = self.head;
        if self.head != NIL {
            self.prev[self.head as usize] = gi as u32;
        } else {
            self.tail = gi as u32;
        }
        self.head = gi as u32;
    }

    pub(crate) fn lru_del(&mut self, gi: usize) {
        let (p, n) = (self.prev[gi], self.next[gi]);
        if p != NIL {
            self.next[p as usize] = n;
        } else {
            self.head = n;
        }
        if n != NIL {
            self.prev[n as usize] = p;
        } else {
            self.tail = p;
        }
        self.prev[gi] = NIL;
        self.next[gi] = NIL;
    }

    /// Pages the pool holds (`pool_pages` of 3.x, `pool_total_size` / 4096 of 5.x+).
    pub fn pool_pages(&self) -> u64 {
        if self.rules.zbud_evict {
            self.zbud.pages_nr
        } else {
            self.pool.pages
        }
    }

    /// `zswap_check_limits`: is the pool (still) full? Counts `pool_limit_hit`.
    pub(crate) fn check_limits(&mut self) -> bool {
        let cur = self.pool.pages;
        if cur >= self.max_pages {
            self.pool_limit_hit += 1;
            self.reached_full = true;
        } else if self.reached_full && cur <= self.accept_pages {
            self.reached_full = false;
        }
        self.reached_full
    }

    /// Checks the entries against the LRU and the pool.
    pub fn verify(&self) -> Result<(), String> {
        if !self.enabled {
            return Ok(());
        }
        if self.rules.zbud_evict {
            // Entries are not on an LRU (zbud keeps one of pages): each has a handle of its
            // own in a page in use, and the pool's pages hold exactly the entries.
            let live: Vec<u32> =
                (0..self.len.len()).filter(|&i| self.len[i] != NO_ENTRY).map(|i| self.handle[i]).collect();
            let mut handles = live.clone();
            handles.sort_unstable();
            handles.dedup();
            if handles.len() != live.len() || live.len() as u64 != self.stored_pages {
                return Err(format!(
                    "zswap: {} entries, {} distinct handles, {} stored",
                    live.len(),
                    handles.len(),
                    self.stored_pages
                ));
            }
            if let Some(h) = live.iter().find(|&&h| !self.zbud.page_in_use(h >> 1)) {
                return Err(format!("zswap: an entry's handle {h} is in a free zbud page"));
            }
            let (in_use, on_lru, buddies) = self.zbud.recount();
            if in_use != self.zbud.pages_nr || on_lru != in_use || buddies != self.stored_pages {
                return Err(format!(
                    "zbud: {} pages counted, {in_use} in use, {on_lru} on the LRU, {buddies} buddies for {} entries",
                    self.zbud.pages_nr, self.stored_pages
                ));
            }
            return Ok(());
        }
        let mut n = 0u64;
        let mut same = 0u64;
        let mut pool = ZsPool::new();
        let mut i = self.head;
        while i != NIL {
            match self.len[i as usize] {
                NO_ENTRY => return Err(format!("zswap: LRU holds slot index {i} without an entry")),
                SAME_FILLED => same += 1,
                v => {
                    pool.alloc(v as u32 - 1);
                }
            }
            n += 1;
            i = self.next[i as usize];
        }
        if n != self.stored_pages || same != self.same_filled_pages {
            return Err(format!(
                "zswap: {n} entries on the LRU ({same} same-filled), counters say {} ({})",
                self.stored_pages, self.same_filled_pages
            ));
        }
        if pool.pages != self.pool.pages || pool.objects != self.pool.objects {
            return Err(format!("zswap: pool holds {} pages, its entries need {}", self.pool.pages, pool.pages));
        }
        Ok(())
    }
}
