//! Models the LRU half of mm/swap.c (not swapping: the kernel's file of that name holds
//! the LRU vectors): `folio_add_lru`, a new page onto its list (mm/lru.rs), with the ≤5.7
//! `reclaim_stat` update that the 3.x scan-balance policies keep (`Sim::lru_add`,
//! `Sim::lru_add_file`).

use crate::engine::Sim;
use crate::ids::Pfn;
use crate::mm::{self, pg, Mm};

impl Sim {
    /// Adds a frame to its memcg's LRU (`folio_add_lru`).
    pub fn lru_add(&mut self, f: Pfn, active: bool) {
        let m = self.mm.frames.memcg[f] as usize;
        let l = mm::LruList::of(false, active);
        if active {
            self.mm.frames.set(f, pg::ACTIVE);
        }
        let nr = self.mm.frames.nr_pages(f);
        let Mm { memcgs, frames, .. } = &mut self.mm;
        memcgs[m].lru.add_head(frames, f, l);
        // 3.x reclaim_stat: every add counts as scanned, an active add as rotated.
        self.reclaim.scan_balance.note_scanned(m, 0, nr, active as u64 * nr);
    }

    /// Adds a page-cache page to its memcg's file LRU (`folio_add_lru`).
    pub fn lru_add_file(&mut self, f: Pfn, active: bool) {
        let m = self.mm.frames.memcg[f] as usize;
        if active {
            self.mm.frames.set(f, pg::ACTIVE);
        }
        let Mm { memcgs, frames, .. } = &mut self.mm;
        memcgs[m].lru.add_head(frames, f, mm::LruList::of(true, active));
        self.reclaim.scan_balance.note_scanned(m, 1, 1, active as u64);
    }
}
