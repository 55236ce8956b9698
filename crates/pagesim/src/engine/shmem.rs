//! Models mm/shmem.c `shmem_fault` and `shmem_swapin_folio`: a fault on a shmem (tmpfs)
//! mapping finds the page in the object's page cache, in the swap cache, or swapped out.
//! A swap-in always drops the swap copy (`delete_from_swap_cache` + `swap_free`), so a
//! shmem page is written again at every eviction. The synchronous-device bypass is in
//! engine/page_io.rs (`shmem_swapin_sync`); the object is mm/shmem.rs.

use crate::engine::memory::Fault;
use crate::engine::Sim;
use crate::ids::Pfn;
use crate::ids::{Tid, VmaId};
use crate::mm::swapops::Entry;
use crate::mm::{pg, pte, Owner};
use crate::swap::readahead::FaultOwner;

impl Sim {
    /// `shmem_fault`: page-cache hit, first touch, or swap-in.
    pub(crate) fn shmem_fault(&mut self, tid: Tid, vma: VmaId, obj: u32, idx: u32, write: bool) -> Fault {
        let s = self.mm.shmem[obj as usize].slots[idx as usize];
        let flags = pte::YOUNG | pte::WRITE | if write { pte::DIRTY } else { 0 };
        if s == 0 {
            let Some(f) = self.alloc_page(tid) else { return Fault::Retry };
            self.charge(self.cost.zero_page_ns.saturating_sub(self.cost.lru_page_ns));
            // A tmpfs page has no backing copy: it is dirty from birth.
            self.mm.frames.set(f, pg::SWAPBACKED | pg::DIRTY);
            self.mm.frames.set_owner(f, Owner::Shmem(obj), idx);
            self.lru_add(f, false);
            self.mm.shmem[obj as usize].slots[idx as usize] = f.slot();
            self.mm.vmas[vma].pte[idx as usize] = pte::present(f, flags);
            return Fault::Done;
        }
        if s & pte::SWAP == 0 {
            let f = Pfn(s - 1);
            self.mm.vmas[vma].pte[idx as usize] = pte::present(f, flags);
            return Fault::Done;
        }
        let entry = Entry(s & !pte::SWAP);
        let ctx = self.fault_ctx(tid, FaultOwner::Shmem(obj), idx, self.mm.vmas[vma].pages, entry);
        match self.swap_cache_get_folio(tid, &ctx, entry) {
            Some(Ok(f)) => {
                self.charge((self.cost.swapin_ns / 4).saturating_sub(self.cost.swap_map_ns));
                // shmem_swapin_folio: the page moves back into the shmem page cache and the
                // swap copy is dropped (delete_from_swap_cache + swap_free).
                if self.mm.frames.test(f, pg::WRITEBACK) {
                    // The copy is still being written: wait as folio_wait_writeback does.
                    return self.wait_writeback(tid, f);
                }
                self.delete_from_swap_cache(f);
                self.swap_free(entry);
                let m = self.mm.frames.memcg[f];
                self.mm.swap_charge(m, -1);
                self.mm.frames.set_owner(f, Owner::Shmem(obj), idx);
                self.mm.shmem[obj as usize].slots[idx as usize] = f.slot();
                self.mm.vmas[vma].pte[idx as usize] = pte::present(f, flags);
                Fault::Done
            }
            Some(Err(b)) => b,
            None => {
                let bypass = self.profile.shmem_sync_bypass && self.swap_sync_bypass(entry);
                if self.swapin_charge_room(tid, if bypass { 1 } else { 1 << self.tun.page_cluster }) {
                    return Fault::Retry;
                }
                if bypass {
                    return self.shmem_swapin_sync(tid, vma, obj, idx, write, entry);
                }
                let Some(target) = self.alloc_page(tid) else { return Fault::Retry };
                self.major_fault(tid);
                let win = self.swap.ra.window(&ctx);
                self.swapin_readahead(tid, &ctx, win, entry, target, None);
                if !self.mm.frames.test(target, pg::LOCKED) {
                    // Read synchronously: the retry finds it in the swap cache.
                    return Fault::Retry;
                }
                self.wait_page(tid, target)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::memory::Fault;
    use crate::mm::vmstat::Counter;
    use crate::mm::{pg, pte, Owner};
    use crate::testutil::{fault, sim_from, SSD};

    /// The 64 MB test machine with a shmem region `buf` instead of an anon one.
    fn shmem_sim() -> crate::engine::Sim {
        sim_from(
            &format!(
                "[machine]\nram = \"64MB\"\nkernel_reserved = \"4MB\"\n{SSD}\n\
                 [region.buf]\nkind = \"shmem\"\nsize = \"4MB\"\n\
                 [[task]]\nname = \"t\"\n[[task.step]]\nregion = \"buf\"\npattern = \"seq\"\n"
            ),
            &[],
        )
    }

    #[test]
    fn a_new_shmem_page_is_dirty_and_cached_and_a_swap_in_drops_its_swap_copy() {
        let mut s = shmem_sim();
        // A read of a hole allocates: tmpfs has no zero page, and the page is dirty from birth.
        assert!(matches!(fault(&mut s, 4, false), Fault::Done));
        let f = pte::frame(s.mm.vmas[0].pte[4]).unwrap();
        assert!(s.mm.frames.test(f, pg::DIRTY | pg::SWAPBACKED));
        assert_eq!(s.mm.shmem[0].slots[4], f.slot(), "the object's page cache holds it");
        // Evicted to swap as shrink_folio does for shmem: the slot takes the swap entry.
        let e = s.swap.alloc(0).unwrap();
        s.add_to_swap_cache(f, e);
        s.swap.area(e).dup(e.slot());
        s.mm.shmem[0].slots[4] = pte::SWAP | e.0;
        s.mm.vmas[0].pte[4] = pte::NONE;
        // Still in the swap cache: a minor fault, and the swap copy is dropped at once.
        assert!(matches!(fault(&mut s, 4, true), Fault::Done));
        assert_eq!(s.mm.shmem[0].slots[4], f.slot());
        assert!(!s.mm.frames.test(f, pg::SWAPCACHE), "out of the swap cache");
        assert_eq!(s.swap.area_ref(e).map[e.slot() as usize], 0, "the slot is free: the page is written again");
        assert_eq!(s.mm.frames.owner(f), Owner::Shmem(0));
        s.verify().unwrap();
    }

    /// A 32 MB shmem mapping read sequentially three times in a 16 MB memcg: every page that
    /// comes back from swap has lost its swap copy, so its next eviction writes it again.
    /// Cycle after cycle, pages written = pages reclaimed, and the swap-ins are about what
    /// was written after the first pass (the machine validation found this on 6.18 too).
    #[test]
    fn every_eviction_of_a_shmem_page_read_back_from_swap_writes_it_again() {
        let text = "[machine]\nram = \"256MB\"\n[device.d]\nmodel = \"nvme\"\n[[swap]]\ndevice = \"d\"\n\
                    size = \"64MB\"\n[memcg.box]\nmax = \"16MB\"\n[region.shm]\nkind = \"shmem\"\nsize = \"32MB\"\n\
                    [[task]]\nname = \"t\"\nmemcg = \"box\"\n[[task.step]]\nregion = \"shm\"\npattern = \"seq\"\n\
                    op = \"write\"\n[[task.step]]\nregion = \"shm\"\npattern = \"seq\"\npasses = 3\nop = \"read\"\n";
        for profile in ["linux-6.6", "linux-6.18", "linux-3.14"] {
            let r = crate::testutil::run(text, &[&format!("kernel.profile=\"{profile}\"")]);
            let (out, steal, pswpin) =
                (r.counter(Counter::PswpOut), r.counter(Counter::PgStealAnon), r.counter(Counter::PswpIn));
            // Three passes over twice the limit: each pass swaps most of the mapping in.
            assert!(pswpin > 3 * 4096, "{profile}: pswpin {pswpin}");
            // Every page reclaimed was written (none left a clean swap copy to drop).
            assert!(out >= steal, "{profile}: {out} written, {steal} reclaimed");
            assert!(out >= pswpin, "{profile}: {out} written, {pswpin} swapped in");
        }
    }
}
