//! Models mm/mmap.c `exit_mmap`: a task's VMAs torn down when it exits or is killed, its
//! pages freed or unmapped and its swap entries released (`zap_pte_range`,
//! `free_swap_and_cache`).

use crate::engine::Sim;
use crate::mm::{pg, pte, Owner};
use crate::swap::Entry;

impl Sim {
    /// `exit_mmap` for the anon VMAs of `tid`: pages are freed, swap references dropped.
    /// Pages still under I/O or in the swap cache stay as unmapped swap-cache pages for
    /// reclaim to drop.
    pub fn exit_mmap(&mut self, tid: u32) {
        for v in 0..self.vmas.len() {
            if self.vmas[v].task != tid {
                continue;
            }
            // Shared mappings (shmem, files) only lose their PTEs; the pages stay cached.
            let shared = self.vmas[v].shmem.is_some() || self.vmas[v].file.is_some();
            for i in 0..self.vmas[v].pte.len() {
                let e = std::mem::take(&mut self.vmas[v].pte[i]);
                if shared {
                    continue;
                }
                if e & pte::SWAP != 0 {
                    let entry = Entry(e & !pte::SWAP);
                    let m = self.tasks[tid as usize].memcg;
                    self.memcgs[m as usize].swap_usage = self.memcgs[m as usize].swap_usage.saturating_sub(1);
                    self.swap.area(entry).put(entry.slot());
                } else if let Some(f) = pte::frame(e) {
                    self.frames.set_owner(f, Owner::None, 0);
                    self.frames.clear(f, pg::DIRTY);
                    if !self.frames.test(f, pg::SWAPCACHE) && !self.frames.test(f, pg::WRITEBACK | pg::LOCKED) {
                        let m = self.frames.memcg[f as usize] as usize;
                        let crate::engine::Sim { memcgs, frames, .. } = self;
                        memcgs[m].lru.del(frames, f);
                        self.free_frame(f);
                    }
                }
            }
        }
    }
}
