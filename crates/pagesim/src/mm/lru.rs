//! Intrusive LRU lists (include/linux/mmzone.h `enum lru_list`, mm_inline.h
//! `lruvec_add_folio` / `lruvec_add_folio_tail` / `lruvec_del_folio`). Putting a new page on
//! its list (mm/swap.c `folio_add_lru`) is engine/swap.rs.
//!
//! The links live in [`Frames`]'s `next`/`prev` arrays, so a frame is on at most one list
//! and moving it costs two array writes. `Frames::lru` records which list holds it. A list's
//! size is in pages, as the kernel's (`lru_zone_size`): a large folio counts all its pages.

use crate::ids::Pfn;
use crate::mm::Frames;

/// The five lists of an lruvec, in the kernel's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum LruList {
    InactiveAnon = 0,
    ActiveAnon = 1,
    InactiveFile = 2,
    ActiveFile = 3,
    Unevictable = 4,
}

pub const NR_LRU_LISTS: usize = 5;
/// Frame is allocated but on no list (isolated, or not yet added).
pub const LRU_NONE: u8 = 0xfe;
/// Frame is free.
pub const LRU_FREE: u8 = 0xff;

impl LruList {
    pub const EVICTABLE: [LruList; 4] =
        [LruList::InactiveAnon, LruList::ActiveAnon, LruList::InactiveFile, LruList::ActiveFile];

    pub fn from_u8(v: u8) -> Option<LruList> {
        Some(match v {
            0 => LruList::InactiveAnon,
            1 => LruList::ActiveAnon,
            2 => LruList::InactiveFile,
            3 => LruList::ActiveFile,
            4 => LruList::Unevictable,
            _ => return None,
        })
    }
    pub fn is_file(self) -> bool {
        matches!(self, LruList::InactiveFile | LruList::ActiveFile)
    }
    pub fn is_active(self) -> bool {
        matches!(self, LruList::ActiveAnon | LruList::ActiveFile)
    }
    /// 0 for anon, 1 for file (the kernel's `is_file_lru` index).
    pub fn type_idx(self) -> usize {
        self.is_file() as usize
    }
    pub fn of(file: bool, active: bool) -> LruList {
        match (file, active) {
            (false, false) => LruList::InactiveAnon,
            (false, true) => LruList::ActiveAnon,
            (true, false) => LruList::InactiveFile,
            (true, true) => LruList::ActiveFile,
        }
    }
}

/// Head, tail and length of each list of one lruvec.
#[derive(Clone, Debug)]
pub struct Lru {
    pub head: [Pfn; NR_LRU_LISTS],
    pub tail: [Pfn; NR_LRU_LISTS],
    pub len: [u64; NR_LRU_LISTS],
}

impl Lru {
    pub fn new(_nframes: u32) -> Self {
        Lru { head: [Pfn::NIL; NR_LRU_LISTS], tail: [Pfn::NIL; NR_LRU_LISTS], len: [0; NR_LRU_LISTS] }
    }

    #[inline]
    pub fn size(&self, l: LruList) -> u64 {
        self.len[l as usize]
    }

    /// The sizes of the evictable lists, in [`LruList::EVICTABLE`]'s order.
    #[inline]
    pub fn evictable_sizes(&self) -> [u64; 4] {
        LruList::EVICTABLE.map(|l| self.len[l as usize])
    }

    /// Adds at the head (newest end).
    #[inline(always)]
    pub fn add_head(&mut self, fr: &mut Frames, f: Pfn, l: LruList) {
        debug_assert_eq!(fr.lru[f], LRU_NONE);
        let li = l as usize;
        let old = self.head[li];
        fr.prev[f] = Pfn::NIL;
        fr.next[f] = old;
        if old == Pfn::NIL {
            self.tail[li] = f;
        } else {
            fr.prev[old] = f;
        }
        self.head[li] = f;
        self.len[li] += fr.nr_pages(f);
        fr.lru[f] = l as u8;
    }

    /// Adds at the tail (next to be reclaimed).
    #[inline(always)]
    pub fn add_tail(&mut self, fr: &mut Frames, f: Pfn, l: LruList) {
        debug_assert_eq!(fr.lru[f], LRU_NONE);
        let li = l as usize;
        let old = self.tail[li];
        fr.next[f] = Pfn::NIL;
        fr.prev[f] = old;
        if old == Pfn::NIL {
            self.head[li] = f;
        } else {
            fr.next[old] = f;
        }
        self.tail[li] = f;
        self.len[li] += fr.nr_pages(f);
        fr.lru[f] = l as u8;
    }

    /// Removes `f` from whichever list of this lruvec holds it.
    #[inline(always)]
    pub fn del(&mut self, fr: &mut Frames, f: Pfn) {
        let li = fr.lru[f] as usize;
        debug_assert!(li < NR_LRU_LISTS, "frame {f} is on no list");
        let (p, n) = (fr.prev[f], fr.next[f]);
        if p == Pfn::NIL {
            self.head[li] = n;
        } else {
            fr.next[p] = n;
        }
        if n == Pfn::NIL {
            self.tail[li] = p;
        } else {
            fr.prev[n] = p;
        }
        self.len[li] -= fr.nr_pages(f);
        fr.lru[f] = LRU_NONE;
        fr.next[f] = Pfn::NIL;
        fr.prev[f] = Pfn::NIL;
    }

    /// Takes the oldest frame of list `l`.
    #[inline(always)]
    pub fn pop_tail(&mut self, fr: &mut Frames, l: LruList) -> Option<Pfn> {
        let t = self.tail[l as usize];
        if t == Pfn::NIL {
            return None;
        }
        self.del(fr, t);
        Some(t)
    }

    /// Walks list `l` from head to tail (for the invariant checker and tests).
    pub fn walk<'a>(&self, fr: &'a Frames, l: LruList) -> impl Iterator<Item = Pfn> + 'a {
        let mut cur = self.head[l as usize];
        std::iter::from_fn(move || {
            if cur == Pfn::NIL {
                return None;
            }
            let f = cur;
            cur = fr.next[f];
            Some(f)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_tail_order_and_moves() {
        let mut fr = Frames::new(8);
        let mut lru = Lru::new(8);
        let a: Vec<Pfn> = (0..4).map(|_| fr.alloc(0).unwrap()).collect();
        for &f in &a {
            lru.add_head(&mut fr, f, LruList::InactiveAnon);
        }
        // Newest first: 3 2 1 0; the tail is the oldest.
        assert_eq!(lru.walk(&fr, LruList::InactiveAnon).collect::<Vec<_>>(), vec![Pfn(3), Pfn(2), Pfn(1), Pfn(0)]);
        assert_eq!(lru.pop_tail(&mut fr, LruList::InactiveAnon), Some(Pfn(0)));
        lru.del(&mut fr, Pfn(2));
        lru.add_tail(&mut fr, Pfn(2), LruList::InactiveAnon);
        assert_eq!(lru.walk(&fr, LruList::InactiveAnon).collect::<Vec<_>>(), vec![Pfn(3), Pfn(1), Pfn(2)]);
        lru.del(&mut fr, Pfn(3));
        lru.add_head(&mut fr, Pfn(3), LruList::ActiveAnon);
        assert_eq!(lru.size(LruList::InactiveAnon), 2);
        assert_eq!(lru.size(LruList::ActiveAnon), 1);
        assert_eq!(fr.lru[Pfn(3)], LruList::ActiveAnon as u8);
        assert_eq!(lru.walk(&fr, LruList::InactiveAnon).collect::<Vec<_>>(), vec![Pfn(1), Pfn(2)]);
    }
}
