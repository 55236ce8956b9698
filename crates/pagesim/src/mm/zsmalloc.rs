//! Models mm/zsmalloc.c as far as memory goes: how many pages a pool of compressed objects
//! takes. zswap and zram both keep their objects in a zsmalloc pool, and those pages come
//! from the page allocator: compressed memory is memory.
//!
//! DOC: zsmalloc sorts objects into size classes 16 bytes apart, from 32 bytes to PAGE_SIZE
//! (`ZS_MIN_ALLOC_SIZE`, `ZS_SIZE_CLASS_DELTA`). A class keeps its objects in *zspages*, chains
//! of 1 to `ZS_MAX_PAGES_PER_ZSPAGE` pages; each class picks the chain length that wastes the
//! least of the zspage (`get_pages_per_zspage`), and a class with the same chain length and
//! objects per zspage as the next larger class is merged into it (`zs_create_pool`), so its
//! objects take the larger size. `zs_malloc` adds `ZS_HANDLE_SIZE` to every request before it
//! picks the class. A class whose zspage is one page holding one object is *huge*: its objects
//! take a whole page each, and zram stores any page that compresses to at least
//! `zs_huge_class_size` as it is.
//!
//! ```text
//!   class 48 B: zspage = 3 pages = 256 objects      class 64 B: 1 page = 64 objects
//!   class 2048 B: 1 page = 2 objects                class 3632 B: 8 pages = 9 objects
//!   3648 B .. 4096 B: merged into the huge class 4096 B, 1 object per page
//! ```
//!
//! Simplification: the pool holds `ceil(objects / objs_per_zspage)` zspages per class, as if
//! zsmalloc's compaction (`zs_compact`, run by its shrinker under memory pressure and by zram)
//! always kept every class dense; real pools also hold partly empty zspages between
//! compactions. Checked against this machine's zram (scripts/measure-compressors.sh): 65536
//! pages of 41 bytes take 1025 pages (model 1024), of 31 bytes 771 (model 768).

/// PAGE_SIZE.
const PAGE: u32 = 4096;
/// `ZS_MIN_ALLOC_SIZE` on 64-bit.
pub const ZS_MIN_ALLOC_SIZE: u32 = 32;
/// `ZS_SIZE_CLASS_DELTA` = PAGE_SIZE >> CLASS_BITS (8).
pub const ZS_SIZE_CLASS_DELTA: u32 = 16;
/// `ZS_HANDLE_SIZE`: zs_malloc keeps the handle in the object.
pub const ZS_HANDLE_SIZE: u32 = 8;
/// `ZS_MAX_PAGES_PER_ZSPAGE` = CONFIG_ZSMALLOC_CHAIN_SIZE, default 8 (6.3+; 4 before).
pub const ZS_MAX_PAGES_PER_ZSPAGE: u32 = 8;
/// `ZS_SIZE_CLASSES`.
const NR_CLASSES: usize = ((PAGE - ZS_MIN_ALLOC_SIZE) / ZS_SIZE_CLASS_DELTA + 1) as usize;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SizeClass {
    /// Object size after merging, bytes.
    size: u32,
    pages_per_zspage: u32,
    objs_per_zspage: u32,
}

/// `get_pages_per_zspage`: the chain length (1..=max) that leaves the least of the zspage
/// unused; the shortest among equals.
fn pages_per_zspage(size: u32) -> u32 {
    let mut best = (0u32, 1u32);
    for pages in 1..=ZS_MAX_PAGES_PER_ZSPAGE {
        let zspage = pages * PAGE;
        let used_pct = (zspage - zspage % size) * 100 / zspage;
        if used_pct > best.0 {
            best = (used_pct, pages);
        }
    }
    best.1
}

/// `get_size_class_index`.
fn class_index(size: u32) -> usize {
    let i = if size > ZS_MIN_ALLOC_SIZE { (size - ZS_MIN_ALLOC_SIZE).div_ceil(ZS_SIZE_CLASS_DELTA) } else { 0 };
    (i as usize).min(NR_CLASSES - 1)
}

/// One zsmalloc pool (`struct zs_pool`): objects per class and the pages they take.
#[derive(Clone, Debug)]
pub struct ZsPool {
    /// Per class index, the class it is merged into (its own index if not merged).
    head: Vec<u8>,
    classes: Vec<SizeClass>,
    /// Objects per class (counted at the merged head).
    objs: Vec<u64>,
    /// Pages the pool holds (`zs_get_total_pages`).
    pub pages: u64,
    /// Objects allocated.
    pub objects: u64,
    /// Sum of the sizes asked for, bytes (zram's `compr_data_size`).
    pub requested_bytes: u64,
    huge_class_size: u32,
}

impl Default for ZsPool {
    fn default() -> Self {
        Self::new()
    }
}

impl ZsPool {
    /// `zs_create_pool`: the size classes, merged from the largest down.
    pub fn new() -> Self {
        let mut head = vec![0u8; NR_CLASSES];
        let mut classes = vec![SizeClass { size: 0, pages_per_zspage: 0, objs_per_zspage: 0 }; NR_CLASSES];
        let mut prev: Option<usize> = None;
        let mut huge_class_size = 0;
        for i in (0..NR_CLASSES).rev() {
            let size = (ZS_MIN_ALLOC_SIZE + i as u32 * ZS_SIZE_CLASS_DELTA).min(PAGE);
            let pages = pages_per_zspage(size);
            let objs = pages * PAGE / size;
            if huge_class_size == 0 && pages != 1 && objs != 1 {
                // Iterating downwards, the first class that packs several objects: anything
                // larger is huge.
                huge_class_size = size;
            }
            if let Some(p) = prev {
                let c = classes[p];
                if c.pages_per_zspage == pages && c.objs_per_zspage == objs {
                    head[i] = p as u8;
                    continue;
                }
            }
            classes[i] = SizeClass { size, pages_per_zspage: pages, objs_per_zspage: objs };
            head[i] = i as u8;
            prev = Some(i);
        }
        // zs_malloc adds the handle before the class lookup: a request larger than this
        // class less the handle lands in a huge class.
        huge_class_size -= ZS_HANDLE_SIZE - 1;
        ZsPool { head, classes, objs: vec![0; NR_CLASSES], pages: 0, objects: 0, requested_bytes: 0, huge_class_size }
    }

    /// `zs_huge_class_size`: requests of at least this many bytes take a page each.
    pub fn huge_class_size(&self) -> u32 {
        self.huge_class_size
    }

    fn class_of(&self, size: u32) -> usize {
        self.head[class_index(size + ZS_HANDLE_SIZE)] as usize
    }

    /// The bytes an object of `size` occupies in the pool (its merged class size).
    pub fn object_size(&self, size: u32) -> u32 {
        self.classes[self.class_of(size)].size
    }

    fn class_pages(c: &SizeClass, objs: u64) -> u64 {
        objs.div_ceil(c.objs_per_zspage as u64) * c.pages_per_zspage as u64
    }

    /// `zs_malloc` of `size` bytes (1..=PAGE_SIZE). Returns the pages the pool grew by.
    pub fn alloc(&mut self, size: u32) -> u64 {
        debug_assert!((1..=PAGE).contains(&size), "zs_malloc of {size} bytes");
        let k = self.class_of(size);
        let c = self.classes[k];
        let before = Self::class_pages(&c, self.objs[k]);
        self.objs[k] += 1;
        self.objects += 1;
        self.requested_bytes += size as u64;
        let grew = Self::class_pages(&c, self.objs[k]) - before;
        self.pages += grew;
        grew
    }

    /// `zs_free` of an object allocated with `size`. Returns the pages the pool shrank by.
    pub fn free(&mut self, size: u32) -> u64 {
        let k = self.class_of(size);
        let c = self.classes[k];
        debug_assert!(self.objs[k] > 0, "zs_free of a {size}-byte object the pool does not hold");
        let before = Self::class_pages(&c, self.objs[k]);
        self.objs[k] -= 1;
        self.objects -= 1;
        self.requested_bytes -= size as u64;
        let shrank = before - Self::class_pages(&c, self.objs[k]);
        self.pages -= shrank;
        shrank
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_match_what_this_kernels_zram_reported() {
        // scripts/measure-compressors.sh on 6.18: 65536 objects of 41 bytes (lzo-rle) took
        // 1025 pages, of 31 bytes (lz4) 771 pages: 41 + 8 lands in the 64-byte class (one
        // page, 64 objects), 31 + 8 in the 48-byte class (three pages, 256 objects).
        let mut p = ZsPool::new();
        for _ in 0..65536 {
            p.alloc(41);
        }
        assert_eq!(p.pages, 1024);
        let mut q = ZsPool::new();
        for _ in 0..65536 {
            q.alloc(31);
        }
        assert_eq!(q.pages, 768);
        assert_eq!(q.object_size(31), 48);
    }

    #[test]
    fn a_page_sized_object_takes_a_page_and_huge_objects_start_below_it() {
        let mut p = ZsPool::new();
        assert_eq!(p.alloc(4096), 1);
        assert_eq!(p.alloc(4096), 1);
        let h = p.huge_class_size();
        // The largest class that packs several objects is 3632 B (9 in 8 pages).
        assert_eq!(h, 3632 - (ZS_HANDLE_SIZE - 1));
        assert_eq!(p.object_size(h), 4096);
        assert!(p.object_size(h - 1) < 4096);
        assert_eq!(p.free(4096), 1);
        assert_eq!(p.pages, 1);
    }

    #[test]
    fn half_page_objects_pair_up_and_free_returns_pages() {
        let mut p = ZsPool::new();
        // 2040 + 8 = 2048: two per page.
        assert_eq!(p.alloc(2040), 1);
        assert_eq!(p.alloc(2040), 0);
        assert_eq!(p.alloc(2040), 1);
        assert_eq!((p.pages, p.objects, p.requested_bytes), (2, 3, 3 * 2040));
        assert_eq!(p.free(2040), 1);
        assert_eq!(p.free(2040), 0);
        assert_eq!(p.free(2040), 1);
        assert_eq!((p.pages, p.objects), (0, 0));
    }

    #[test]
    fn merged_classes_never_pack_worse_than_their_own_size() {
        let p = ZsPool::new();
        for size in 1..=4096 {
            let o = p.object_size(size);
            assert!(o >= (size + ZS_HANDLE_SIZE).min(4096), "{size} -> {o}");
            assert_eq!(o % 16, 0);
        }
    }
}
