//! Models the LRU half of mm/swap.c (not swapping: the kernel's file of that name holds
//! the LRU vectors): `folio_add_lru`, a new page onto its list (mm/lru.rs), with the ≤5.7
//! `reclaim_stat` update that the 3.x scan-balance policies keep (`Sim::lru_add`,
//! `Sim::lru_add_file`), and the LRU lock: a page added goes into the CPU's batch
//! (`folio_batch_add`, `Profile::lru_batch` pages), and a full batch takes the LRU lock
//! once for all of them (`folio_batch_move_lru`); reclaim takes it to isolate and to put
//! back (`Sim::lru_lock_hold`). The pages are on their lists at once: a batch not yet
//! drained is not hidden from reclaim (docs/model.md).

use crate::engine::Sim;
use crate::ids::Pfn;
use crate::mm::{self, pg, Mm};

/// Lines of the LRU lock's data every holder writes, the lock's own included (they move
/// with the lock, crate::locking): the lock's line, the line of the anon list heads
/// (`struct lruvec`'s five heads span two lines, apart from the lock in 4.8's
/// `pglist_data` and beside it in 6.x's `lruvec`), and the line of the LRU sizes
/// (`mem_cgroup_per_node`'s `lru_size`, `lru_zone_size` from 4.x on).
const LRU_LINES: u32 = 3;

impl Sim {
    /// Adds a frame to its memcg's LRU (`folio_add_lru`).
    pub fn lru_add(&mut self, f: Pfn, active: bool) {
        let m = self.mm.frames.memcg[f] as usize;
        let l = mm::LruList::of(false, active);
        if active {
            self.mm.frames.set(f, pg::ACTIVE);
        }
        self.lru_batch_add(m);
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
        self.lru_batch_add(m);
        let Mm { memcgs, frames, .. } = &mut self.mm;
        memcgs[m].lru.add_head(frames, f, mm::LruList::of(true, active));
        self.reclaim.scan_balance.note_scanned(m, 1, 1, active as u64);
    }

    /// Creates the LRU locks ([`crate::mm::Mm::lru_locks`]) and the per-CPU batches.
    pub(crate) fn lru_locks_init(&mut self) {
        let per_lruvec = self.profile.lru_lock_per_lruvec;
        let locks = &mut self.sched.locks;
        let class = locks.class(if per_lruvec { "lruvec->lru_lock" } else { "pgdat->lru_lock" });
        let n = if per_lruvec { self.mm.memcgs.len() } else { 1 };
        self.mm.lru_locks = (0..n).map(|_| locks.lock(class)).collect();
        self.mm.lru_batch = vec![0; self.sched.cpu_free.len()];
    }

    /// The LRU lock of memcg `m`'s lruvec.
    #[inline]
    fn lru_lock_of(&self, m: usize) -> crate::locking::LockId {
        let l = &self.mm.lru_locks;
        l[m.min(l.len() - 1)]
    }

    /// `spin_lock_irq(lru_lock)` of memcg `m`'s lruvec for moving `nr` pages on or off its
    /// lists (reclaim's isolation and putback), pulling [`LRU_LINES`] lines.
    pub(crate) fn lru_lock_hold(&mut self, m: usize, nr: u64) {
        if nr > 0 {
            let l = self.lru_lock_of(m);
            self.spin_lock(l, nr * self.cost.lru_page_ns, LRU_LINES);
        }
    }

    /// `folio_batch_add` of a page of memcg `m` on the running CPU; a full batch is moved
    /// to the lists under one hold of the LRU lock (of the last page's lruvec).
    fn lru_batch_add(&mut self, m: usize) {
        let cpu = self.lock_cpu() as usize;
        let Some(b) = self.mm.lru_batch.get_mut(cpu) else { return };
        *b += 1;
        if *b >= self.profile.lru_batch {
            let nr = std::mem::take(b) as u64;
            self.lru_lock_hold(m, nr);
        }
    }
}
