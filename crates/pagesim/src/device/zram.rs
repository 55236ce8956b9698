//! Models a zram device (drivers/block/zram/zram_drv.c) used as swap: a RAM disk that
//! compresses each page it is given and keeps the result in a zsmalloc pool.
//!
//! DOC: zram is a bio-based driver without a request queue: `zram_submit_bio` compresses
//! (`zram_write_page`) or decompresses (`zram_read_page`) in the submitting thread, so its
//! "service time" is CPU time of the task or kswapd that swaps, and it is
//! `SWP_SYNCHRONOUS_IO` (4.15+ swap-ins of single-reference slots skip the swap cache and
//! readahead, see engine/page_io.rs). Per page it keeps one table entry:
//!
//! * same-filled page (every word equal): the value only, no pool memory (`ZRAM_SAME`);
//! * compressed length at least `zs_huge_class_size`: the page as it is, in a whole pool page
//!   (`ZRAM_HUGE`);
//! * otherwise the compressed object in its zsmalloc size class.
//!
//! The pool's pages come from the page allocator ([`crate::mm::zsmalloc`]): zram memory is
//! counted in no memory cgroup (its zs_malloc carries no `__GFP_ACCOUNT`) but it is taken
//! from the free pages, so swapping to zram raises memory pressure. A write fails with
//! -ENOMEM when the pool would exceed `mem_limit`; the kernel then redirties the page
//! (`__end_swap_bio_write`). Freeing a swap slot frees its object (`zram_slot_free_notify`).
//!
//! The CPU costs are the compressor's ([`crate::mm::compress`]). Not modelled: writeback
//! of idle or huge pages to a backing device, recompression, multiple compression streams
//! contending, `zram_slot_lock` contention.

use super::{fmt_bytes, IoDir, MmStat, ParamDoc, QueueParams, Scheduler, SwapBackend, TimingModel};
use crate::mm::compress::{self, Compressor, Content, PAGE};
use crate::mm::zsmalloc::ZsPool;
use serde::Deserialize;

pub(super) const DESCRIPTION: &str =
    "compressed RAM disk (zram): CPU cost of the compressor, pool pages taken from RAM";

/// Parameters of the `zram` model.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ZramParams {
    /// `disksize`, bytes (accepts units). Default 64 GiB; a swap area on it may be smaller.
    #[serde(deserialize_with = "crate::units::de_bytes")]
    pub capacity: u64,
    /// `comp_algorithm`. Default "lzo-rle" (the kernel's default since 5.1).
    pub comp_algorithm: String,
    /// `mem_limit`: most memory the pool may take, bytes; 0 = none. Default 0.
    #[serde(deserialize_with = "crate::units::de_bytes")]
    pub mem_limit: u64,
}

impl Default for ZramParams {
    fn default() -> Self {
        ZramParams { capacity: 64 << 30, comp_algorithm: "lzo-rle".into(), mem_limit: 0 }
    }
}

impl ZramParams {
    pub(super) fn docs(&self) -> Vec<ParamDoc> {
        vec![
            ParamDoc {
                key: "capacity",
                unit: "bytes",
                default: fmt_bytes(self.capacity),
                doc: "disksize (/sys/block/zramN/disksize); pool memory grows with what is stored, not \
                      with this.",
            },
            ParamDoc {
                key: "comp_algorithm",
                unit: "compressor name",
                default: self.comp_algorithm.clone(),
                doc: "Compressor (/sys/block/zramN/comp_algorithm; lzo-rle is the default since 5.1): one of \
                      those zswap.compressor accepts. Compressed sizes and CPU costs in docs/model.md.",
            },
            ParamDoc {
                key: "mem_limit",
                unit: "bytes",
                default: "0".into(),
                doc: "Most memory the compressed pool may take (/sys/block/zramN/mem_limit); 0: no limit. \
                      A write that would exceed it fails and the page stays dirty.",
            },
        ]
    }
}

/// What a table entry holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    /// A same-filled page (`ZRAM_SAME`).
    Same,
    /// A compressed object of this many bytes.
    Object(u32),
    /// The page stored as it is (`ZRAM_HUGE`).
    Huge,
}

/// The write failed: the pool would exceed `mem_limit` (-ENOMEM).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OverLimit;

#[derive(Clone, Debug)]
pub struct Zram {
    p: ZramParams,
    pub comp: &'static Compressor,
    /// Per page of the disk: 0 empty, 1 same-filled, otherwise object bytes + 1 (a huge
    /// page: PAGE_SIZE + 1). Grows as pages are written.
    table: Vec<u16>,
    pub pool: ZsPool,
    /// Pages stored (mm_stat `orig_data_size` / PAGE_SIZE).
    pub pages_stored: u64,
    /// Same-filled pages (mm_stat `same_pages`).
    pub same_pages: u64,
    /// Pages stored uncompressed (mm_stat `huge_pages`).
    pub huge_pages: u64,
}

impl Zram {
    pub fn new(p: ZramParams) -> Result<Self, String> {
        let comp = compress::find(&p.comp_algorithm).ok_or_else(|| {
            format!(
                "comp_algorithm: unknown compressor \"{}\"; expected one of: {}",
                p.comp_algorithm,
                compress::names()
            )
        })?;
        if p.capacity < PAGE as u64 {
            return Err(format!("capacity: expected at least one page (4096 bytes), got {}", p.capacity));
        }
        Ok(Zram { p, comp, table: Vec::new(), pool: ZsPool::new(), pages_stored: 0, same_pages: 0, huge_pages: 0 })
    }
}

impl TimingModel for Zram {
    fn capacity_bytes(&self) -> u64 {
        self.p.capacity
    }

    fn channels(&self) -> u32 {
        1
    }

    /// zram is bio-based: it has no request queue, elevator or request limit, and no file
    /// lives on it in pagesim; these settings (the block layer's defaults) are never used
    /// for swap.
    fn queue_params(&self) -> QueueParams {
        QueueParams {
            max_sectors_kb: 512,
            max_segments: super::BLK_MAX_SEGMENTS,
            max_segment_size: super::BLK_MAX_SEGMENT_SIZE,
            read_ahead_kb: 128,
            nr_requests: 128,
            scheduler: Scheduler::Fifo,
            iosched: Default::default(),
            irq_cpu: None,
        }
    }

    /// Time of a request that reaches zram through a request queue (not swap, which calls
    /// [`Zram::store`] and [`Zram::load_ns`]): compression of a word page per page.
    fn service_ns(&mut self, dir: IoDir, _offset: u64, len: u64, _start_ns: u64) -> u64 {
        let pages = len.div_ceil(PAGE as u64);
        let w = self.comp.word_len;
        pages * if dir == IoDir::Write { self.comp.compress_ns(w) } else { self.comp.decompress_ns(w) }
    }

    /// zram does its work in the submitter (`SWP_SYNCHRONOUS_IO`).
    fn synchronous_io(&self) -> bool {
        true
    }

    fn swap_backend(&self) -> Option<&dyn SwapBackend> {
        Some(self)
    }

    fn swap_backend_mut(&mut self) -> Option<&mut dyn SwapBackend> {
        Some(self)
    }
}

impl SwapBackend for Zram {
    fn compressor(&self) -> &'static Compressor {
        self.comp
    }

    fn store(&mut self, offset: u64, c: Content) -> Result<(Stored, u32, u64, u64), OverLimit> {
        Zram::store(self, offset, c)
    }

    fn free(&mut self, offset: u64) -> u64 {
        Zram::free(self, offset)
    }

    fn load_ns(&self, offset: u64) -> u64 {
        Zram::load_ns(self, offset)
    }

    fn stored(&self, offset: u64) -> Option<Stored> {
        Zram::stored(self, offset)
    }

    fn pool_pages(&self) -> u64 {
        self.pool.pages
    }

    fn mm_stat(&self) -> MmStat {
        MmStat {
            orig_data_size: self.pages_stored * PAGE as u64,
            compr_data_size: self.pool.requested_bytes,
            mem_used_total: self.pool.pages * PAGE as u64,
            same_pages: self.same_pages,
            huge_pages: self.huge_pages,
        }
    }
}

impl Zram {
    fn index(offset: u64) -> usize {
        (offset / PAGE as u64) as usize
    }

    /// What the page at `offset` holds, if anything.
    pub fn stored(&self, offset: u64) -> Option<Stored> {
        match self.table.get(Self::index(offset)).copied().unwrap_or(0) {
            0 => None,
            1 => Some(Stored::Same),
            v if v as u32 > PAGE => Some(Stored::Huge),
            v => Some(Stored::Object(v as u32 - 1)),
        }
    }

    /// `zram_write_page`: stores a page of content `c` at `offset`, replacing what was there.
    /// Returns what was stored and the compressed length (for the CPU cost: 0 for a
    /// same-filled page), the pool pages released by the old entry and the pages the new one
    /// added; the caller takes and returns the frames.
    pub fn store(&mut self, offset: u64, c: Content) -> Result<(Stored, u32, u64, u64), OverLimit> {
        let i = Self::index(offset);
        let Some(len) = self.comp.compressed_len(c) else {
            let freed = self.free(offset);
            self.set(i, 1);
            self.same_pages += 1;
            return Ok((Stored::Same, 0, freed, 0));
        };
        let (stored, size) =
            if len >= self.pool.huge_class_size() { (Stored::Huge, PAGE) } else { (Stored::Object(len), len) };
        let grew = self.pool.alloc(size);
        if self.p.mem_limit > 0 && self.pool.pages * PAGE as u64 > self.p.mem_limit {
            // The old content stays: zram frees it only once the new one is in place.
            let back = self.pool.free(size);
            debug_assert_eq!(back, grew);
            return Err(OverLimit);
        }
        let freed = self.free(offset);
        self.set(i, size as u16 + 1);
        if stored == Stored::Huge {
            self.huge_pages += 1;
        }
        Ok((stored, len.min(PAGE + 1), freed, grew))
    }

    fn set(&mut self, i: usize, v: u16) {
        if self.table.len() <= i {
            self.table.resize(i + 1, 0);
        }
        self.table[i] = v;
        self.pages_stored += 1;
    }

    /// `zram_free_page` (slot freed, discard): returns the pool pages released.
    pub fn free(&mut self, offset: u64) -> u64 {
        let Some(s) = self.stored(offset) else { return 0 };
        self.table[Self::index(offset)] = 0;
        self.pages_stored -= 1;
        match s {
            Stored::Same => {
                self.same_pages -= 1;
                0
            }
            Stored::Huge => {
                self.huge_pages -= 1;
                self.pool.free(PAGE)
            }
            Stored::Object(len) => self.pool.free(len),
        }
    }

    /// `zram_read_page`: the CPU time to bring the page at `offset` back.
    pub fn load_ns(&self, offset: u64) -> u64 {
        match self.stored(offset) {
            None | Some(Stored::Same) | Some(Stored::Huge) => compress::PAGE_COPY_NS,
            Some(Stored::Object(len)) => self.comp.decompress_ns(len),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zram(extra: &str) -> Zram {
        let p: ZramParams = toml::from_str(extra).unwrap();
        Zram::new(p).unwrap()
    }

    #[test]
    fn pages_are_stored_same_compressed_or_huge_and_freed() {
        let mut z = zram("comp_algorithm = \"lz4\"");
        let (s, len, freed, grew) = z.store(0, Content::Word).unwrap();
        assert_eq!((s, len, freed, grew), (Stored::Object(31), 31, 0, 3), "a 48-byte class zspage is 3 pages");
        assert_eq!(z.store(4096, Content::Zero).unwrap().0, Stored::Same);
        assert_eq!(z.store(8192, Content::Incompressible).unwrap().0, Stored::Huge);
        assert_eq!((z.pages_stored, z.same_pages, z.huge_pages, z.pool.pages), (3, 1, 1, 4));
        assert!(z.load_ns(0) < z.comp.decompress_data_ns);
        // Rewriting a page replaces its object; freeing releases the pool pages.
        let (_, _, freed, _) = z.store(8192, Content::Word).unwrap();
        assert_eq!(freed, 1);
        assert_eq!(z.huge_pages, 0);
        assert_eq!(z.free(0), 0, "the 3-page zspage still holds the other word object");
        assert_eq!(z.free(8192), 3);
        assert_eq!(z.free(4096), 0);
        assert_eq!((z.pages_stored, z.pool.pages, z.pool.objects), (0, 0, 0));
        assert_eq!(z.stored(0), None);
    }

    #[test]
    fn mem_limit_rejects_a_write_that_would_grow_the_pool_past_it() {
        let mut z = zram("mem_limit = 8192");
        for i in 0..2 {
            z.store(i * 4096, Content::Incompressible).unwrap();
        }
        assert_eq!(z.store(3 * 4096, Content::Incompressible), Err(OverLimit));
        assert_eq!(z.pool.pages, 2);
        assert_eq!(z.stored(3 * 4096), None);
        assert!(z.store(3 * 4096, Content::Zero).is_ok(), "same-filled pages take no pool memory");
    }

    #[test]
    fn unknown_compressors_are_errors_naming_the_key() {
        let p: ZramParams = toml::from_str("comp_algorithm = \"snappy\"").unwrap();
        let e = Zram::new(p).unwrap_err();
        assert!(e.starts_with("comp_algorithm") && e.contains("lzo-rle"), "{e}");
    }
}
