//! Models mm/zbud.c (3.11+), zswap's allocator before zsmalloc: whole pages holding at most
//! two compressed objects each ("buddies"), the first packed after the page's header, the
//! last against its end, sizes counted in 64-byte chunks. An object goes to the first
//! page, in order of free chunks from the object's size up, that has one buddy free
//! (`unbuddied[i]`: pages with i free chunks), else to a new page; every allocation puts
//! its page at the head of the pool's LRU, so the tail is the page whose newest buddy is
//! oldest, the one `zbud_reclaim_page` evicts. A page is freed with its last buddy.
//!
//! Handles are `page << 1 | buddy` (0 first, 1 last). Pages are indices here; the frames
//! that hold them are the caller's (zswap takes one from free memory per new page).

use crate::mm::NIL;

/// `CHUNK_SHIFT` = 6: 64-byte chunks, 64 per page.
pub const CHUNK_SIZE: u32 = 64;
pub const NCHUNKS: u32 = 4096 / CHUNK_SIZE;
/// The header takes the first chunk (`ZHDR_SIZE_ALIGNED`).
const ZHDR_CHUNKS: u32 = 1;
/// The largest object: a page less its header and one chunk (`zbud_alloc` -ENOSPC above).
pub const MAX_SIZE: u32 = 4096 - CHUNK_SIZE - CHUNK_SIZE;

#[derive(Clone, Copy, Debug)]
struct Page {
    /// Chunks of the first and last buddy (0: free).
    chunks: [u32; 2],
    /// The owner each buddy was allocated for.
    owner: [u32; 2],
    lru_next: u32,
    lru_prev: u32,
    /// Links in `unbuddied[free_chunks]` while exactly one buddy is used.
    ub_next: u32,
    ub_prev: u32,
    in_use: bool,
}

#[derive(Clone, Debug)]
pub struct Zbud {
    pages: Vec<Page>,
    free_slots: Vec<u32>,
    lru_head: u32,
    lru_tail: u32,
    unbuddied: [u32; NCHUNKS as usize],
    /// Pages in use (`pages_nr`, zswap's `pool_pages`).
    pub pages_nr: u64,
}

impl Default for Zbud {
    fn default() -> Self {
        Zbud {
            pages: Vec::new(),
            free_slots: Vec::new(),
            lru_head: NIL,
            lru_tail: NIL,
            unbuddied: [NIL; NCHUNKS as usize],
            pages_nr: 0,
        }
    }
}

fn size_to_chunks(size: u32) -> u32 {
    size.div_ceil(CHUNK_SIZE)
}

impl Zbud {
    /// Free chunks of a page with the given buddies.
    fn free_chunks(p: &Page) -> u32 {
        NCHUNKS - ZHDR_CHUNKS - p.chunks[0] - p.chunks[1]
    }

    /// `zbud_alloc` of `size` bytes for `owner`: the handle and whether a new page was
    /// taken; `None` above [`MAX_SIZE`] (-ENOSPC).
    pub fn alloc(&mut self, size: u32, owner: u32) -> Option<(u32, bool)> {
        if size == 0 || size > MAX_SIZE {
            return None;
        }
        let chunks = size_to_chunks(size);
        // First fit among the pages with one buddy free.
        for i in chunks..NCHUNKS {
            let p = self.unbuddied[i as usize];
            if p == NIL {
                continue;
            }
            self.ub_del(p);
            let page = &mut self.pages[p as usize];
            let b = if page.chunks[0] == 0 { 0 } else { 1 };
            page.chunks[b] = chunks;
            page.owner[b] = owner;
            self.lru_del(p);
            self.lru_add_head(p);
            return Some((p << 1 | b as u32, false));
        }
        let p = match self.free_slots.pop() {
            Some(p) => p,
            None => {
                self.pages.push(Page {
                    chunks: [0; 2],
                    owner: [NIL; 2],
                    lru_next: NIL,
                    lru_prev: NIL,
                    ub_next: NIL,
                    ub_prev: NIL,
                    in_use: false,
                });
                (self.pages.len() - 1) as u32
            }
        };
        let page = &mut self.pages[p as usize];
        *page = Page { chunks: [chunks, 0], owner: [owner, NIL], in_use: true, ..*page };
        self.pages_nr += 1;
        self.ub_add(p);
        self.lru_add_head(p);
        Some((p << 1, true))
    }

    /// `zbud_free` of `handle`; returns whether its page was freed.
    pub fn free(&mut self, handle: u32) -> bool {
        let (p, b) = (handle >> 1, (handle & 1) as usize);
        debug_assert!(self.pages[p as usize].chunks[b] > 0, "zbud: double free");
        let was_full = self.pages[p as usize].chunks.iter().all(|&c| c > 0);
        if !was_full {
            self.ub_del(p);
        }
        let page = &mut self.pages[p as usize];
        page.chunks[b] = 0;
        page.owner[b] = NIL;
        if page.chunks == [0, 0] {
            page.in_use = false;
            self.lru_del(p);
            self.free_slots.push(p);
            self.pages_nr -= 1;
            return true;
        }
        self.ub_add(p);
        false
    }

    /// The page at the LRU tail (`zbud_reclaim_page`'s victim) and the owners of its
    /// buddies; `None` when the pool is empty.
    pub fn lru_tail(&self) -> Option<(u32, [u32; 2])> {
        (self.lru_tail != NIL).then(|| (self.lru_tail, self.pages[self.lru_tail as usize].owner))
    }

    /// A page whose eviction failed goes back to the LRU head.
    pub fn lru_rotate(&mut self, p: u32) {
        if self.pages[p as usize].in_use {
            self.lru_del(p);
            self.lru_add_head(p);
        }
    }

    pub fn page_in_use(&self, p: u32) -> bool {
        self.pages.get(p as usize).is_some_and(|pg| pg.in_use)
    }

    fn ub_add(&mut self, p: u32) {
        let i = Self::free_chunks(&self.pages[p as usize]) as usize;
        let head = self.unbuddied[i];
        self.pages[p as usize].ub_prev = NIL;
        self.pages[p as usize].ub_next = head;
        if head != NIL {
            self.pages[head as usize].ub_prev = p;
        }
        self.unbuddied[i] = p;
    }

    fn ub_del(&mut self, p: u32) {
        let i = Self::free_chunks(&self.pages[p as usize]) as usize;
        let Page { ub_prev: pr, ub_next: nx, .. } = self.pages[p as usize];
        if pr != NIL {
            self.pages[pr as usize].ub_next = nx;
        } else {
            self.unbuddied[i] = nx;
        }
        if nx != NIL {
            self.pages[nx as usize].ub_prev = pr;
        }
    }

    fn lru_add_head(&mut self, p: u32) {
        self.pages[p as usize].lru_prev = NIL;
        self.pages[p as usize].lru_next = self.lru_head;
        if self.lru_head != NIL {
            self.pages[self.lru_head as usize].lru_prev = p;
        } else {
            self.lru_tail = p;
        }
        self.lru_head = p;
    }

    fn lru_del(&mut self, p: u32) {
        let Page { lru_prev: pr, lru_next: nx, .. } = self.pages[p as usize];
        if pr != NIL {
            self.pages[pr as usize].lru_next = nx;
        } else {
            self.lru_head = nx;
        }
        if nx != NIL {
            self.pages[nx as usize].lru_prev = pr;
        } else {
            self.lru_tail = pr;
        }
    }

    /// Pages in use, pages on the LRU, and buddies in use, recounted (for the checker).
    pub fn recount(&self) -> (u64, u64, u64) {
        let in_use = self.pages.iter().filter(|p| p.in_use).count() as u64;
        let mut on_lru = 0u64;
        let mut p = self.lru_head;
        while p != NIL && on_lru <= self.pages.len() as u64 {
            on_lru += 1;
            p = self.pages[p as usize].lru_next;
        }
        let buddies = self.pages.iter().map(|p| p.chunks.iter().filter(|&&c| c > 0).count() as u64).sum();
        (in_use, on_lru, buddies)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_buddies_share_a_page_and_the_page_goes_with_the_last() {
        let mut z = Zbud::default();
        let (a, new_a) = z.alloc(1000, 10).unwrap();
        let (b, new_b) = z.alloc(2000, 11).unwrap();
        assert!(new_a && !new_b, "the second object fits beside the first");
        assert_eq!((a >> 1, b >> 1), (0, 0));
        assert_eq!(z.pages_nr, 1);
        // A third object finds no page with room: a new page.
        let (c, new_c) = z.alloc(1000, 12).unwrap();
        assert!(new_c && c >> 1 == 1);
        // A compression better than 2:1 saves nothing more: two tiny objects per page.
        let (d, _) = z.alloc(64, 13).unwrap();
        assert_eq!(d >> 1, 1);
        let (_, new_e) = z.alloc(64, 14).unwrap();
        assert!(new_e, "pages hold at most two objects however small");
        assert_eq!(z.pages_nr, 3);
        assert!(!z.free(a));
        assert!(z.free(b), "the last buddy frees the page");
        assert_eq!(z.pages_nr, 2);
        assert_eq!(z.recount(), (2, 2, 3));
    }

    #[test]
    fn objects_above_the_largest_size_are_refused_and_the_lru_tail_is_the_oldest_page() {
        let mut z = Zbud::default();
        assert!(z.alloc(MAX_SIZE + 1, 0).is_none());
        assert!(z.alloc(MAX_SIZE, 0).is_some());
        let (p1, _) = z.alloc(3000, 1).unwrap();
        let (p2, _) = z.alloc(3000, 2).unwrap();
        assert_eq!(z.lru_tail().unwrap().0, 0, "the first page is the oldest");
        // Pages 1 and 2 have the same room: the newest unbuddied page takes the object and
        // moves to the LRU head; the tail stays page 0 until it is rotated.
        let (q, _) = z.alloc(500, 3).unwrap();
        assert_eq!(q >> 1, p2 >> 1);
        assert_eq!(z.lru_tail().unwrap().0, 0);
        z.lru_rotate(0);
        assert_eq!(z.lru_tail().unwrap(), (p1 >> 1, [1, NIL]), "page 1 is the oldest now");
    }
}
