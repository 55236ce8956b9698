//! Models mm/huge_memory.c for anonymous large folios (mTHP): `split_folio_to_list`, which
//! reclaim uses when swap has no aligned run of slots for a whole folio
//! (`shrink_folio_list`'s fallback to order-0 swap-out). The folio's pages become single
//! pages, each PTE that mapped one of them now maps its own page, and the new pages join
//! the list the caller is working through.

use crate::engine::Sim;
use crate::ids::Pfn;
use crate::mm::vmstat::Counter;
use crate::mm::{pte, Owner};

/// The highest order set in `orders` (bit n: order n; not empty).
#[inline]
pub(crate) fn highest_order(orders: u16) -> u8 {
    debug_assert!(orders != 0);
    15 - orders.leading_zeros() as u8
}

impl Sim {
    /// `split_folio_to_list` for isolated anon folio `f`, not in the swap cache: `f` becomes
    /// its first page and the other pages are appended to `list`. Counts `split` (the
    /// mTHP stat) for the folio.
    pub(crate) fn split_anon_folio(&mut self, f: Pfn, list: &mut Vec<Pfn>) {
        let Owner::Anon(a) = self.mm.frames.owner(f) else { unreachable!("split of a folio that is not anon") };
        let first = self.mm.frames.index[f] as usize;
        let from = list.len();
        self.mm.frames.split(f, list);
        // Every VMA of the anon_vma that maps a page of the folio maps the new page.
        for m in 0..self.mm.anon_vmas[a].mappers.len() {
            let v = self.mm.anon_vmas[a].mappers[m];
            let ptes = &mut self.mm.vmas[v].pte;
            for (k, &g) in list[from..].iter().enumerate() {
                let Some(e) = ptes.get(first + 1 + k).copied() else { break };
                if pte::is_present(e) && pte::frame(e) == Some(f) {
                    ptes[first + 1 + k] = pte::present(g, e & pte::FLAGS);
                }
            }
        }
        let m = self.mm.frames.memcg[f];
        self.mm.count(Counter::MthpSplit, m, 1);
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::memory::Fault;
    use crate::ids::{Pfn, Tid};
    use crate::mm::vmstat::Counter;
    use crate::mm::{pg, pte, LruList};
    use crate::reclaim::ScanControl;
    use crate::testutil::{fault, sim, sim_from};

    const NVME: &str = "[device.d]\nmodel = \"nvme\"\n[[swap]]\ndevice = \"d\"\nsize = \"16MB\"\n";
    const ZRAM: &str = "[device.z]\nmodel = \"zram\"\n[[swap]]\ndevice = \"z\"\nsize = \"16MB\"\n";

    /// linux-6.18 with the given anon mTHP sizes and swap.
    fn mthp(sizes: &str, swap: &str) -> crate::engine::Sim {
        sim(&format!("[kernel]\nprofile = \"linux-6.18\"\nanon_mthp = [{sizes}]\n{swap}"))
    }

    fn frame_at(s: &crate::engine::Sim, i: usize) -> Pfn {
        pte::frame(s.mm.vmas[0].pte[i]).unwrap_or_else(|| panic!("page {i} not mapped to a frame"))
    }

    /// Reclaims the inactive anon list of the root memcg once, every PTE made old first.
    fn reclaim_all(s: &mut crate::engine::Sim) {
        for e in s.mm.vmas[0].pte.iter_mut() {
            *e &= !pte::YOUNG;
        }
        let mut sc = ScanControl::direct();
        let n = s.mm.memcgs[0].lru.size(LruList::InactiveAnon);
        s.shrink_inactive_list(0, LruList::InactiveAnon, n, &mut sc, 0);
        s.unplug_all();
    }

    #[test]
    fn a_write_fault_takes_the_largest_enabled_order_whose_range_is_untouched_and_maps_it_whole() {
        let mut s = mthp("\"16KB\", \"64KB\"", NVME);
        let free = s.mm.nr_free();
        assert!(matches!(fault(&mut s, 5, true), Fault::Done));
        let f = frame_at(&s, 5);
        assert_eq!((s.mm.frames.order(f), s.mm.frames.index[f]), (4, 0), "a 64 KB folio at the aligned index 0");
        assert!((0..16).all(|i| frame_at(&s, i) == f), "all 16 PTEs map it");
        assert_eq!(s.mm.vmas[0].pte[16], pte::NONE);
        assert_eq!(s.mm.nr_free(), free - 16);
        assert_eq!(s.mm.memcgs[0].lru.size(LruList::InactiveAnon), 16, "one LRU entry counted in pages");
        assert_eq!(s.mm.vmstat.get(Counter::MthpAnonFaultAlloc), 1);
        // A read maps the zero page at 20: the 64 KB range 16..32 is no longer untouched,
        // the 16 KB range 16..20 is.
        assert!(matches!(fault(&mut s, 20, false), Fault::Done));
        assert!(matches!(fault(&mut s, 17, true), Fault::Done));
        let g = frame_at(&s, 17);
        assert_eq!((s.mm.frames.order(g), s.mm.frames.index[g]), (2, 16));
        assert_eq!(s.mm.vmas[0].pte[20], pte::ZERO_PAGE, "the zero page stays");
        // Its copy-on-write is a single page, whatever is enabled.
        assert!(matches!(fault(&mut s, 20, true), Fault::Done));
        assert_eq!(s.mm.frames.order(frame_at(&s, 20)), 0);
        assert_eq!(s.mm.vmstat.get(Counter::PgFault), 4, "one fault per folio");
        s.verify().unwrap();
    }

    #[test]
    fn a_large_folio_that_cannot_be_charged_falls_back_order_by_order_without_reclaim() {
        // 18 pages of memcg: the first fault takes 16; the next cannot charge 16 nor 4
        // pages and gets a single page.
        let text = "[machine]\nram = \"64MB\"\nkernel_reserved = \"4MB\"\n[kernel]\nprofile = \"linux-6.18\"\n\
                    anon_mthp = [\"16KB\", \"64KB\"]\n[memcg.box]\nmax = \"72KB\"\n\
                    [region.buf]\nkind = \"anon\"\nsize = \"4MB\"\n\
                    [[task]]\nname = \"t\"\nmemcg = \"box\"\n[[task.step]]\nregion = \"buf\"\npattern = \"seq\"\n";
        let mut s = sim_from(text, &[]);
        assert!(matches!(fault(&mut s, 0, true), Fault::Done));
        assert!(matches!(fault(&mut s, 16, true), Fault::Done));
        assert_eq!(s.mm.frames.order(frame_at(&s, 16)), 0);
        assert_eq!(s.mm.memcgs[1].usage, 17);
        let c = |k| s.mm.vmstat.get(k);
        assert_eq!(c(Counter::MthpAnonFaultAlloc), 1);
        assert_eq!((c(Counter::MthpAnonFaultFallback), c(Counter::MthpAnonFaultFallbackCharge)), (2, 2));
        assert!(s.sched.tasks[Tid(0)].reclaim.is_none(), "the large charges did not reclaim");
    }

    #[test]
    fn a_fault_whose_large_orders_failed_gets_a_single_page_after_its_reclaim() {
        let text = "[machine]\nram = \"64MB\"\nkernel_reserved = \"4MB\"\n[kernel]\nprofile = \"linux-6.18\"\n\
                    anon_mthp = [\"64KB\"]\n[memcg.box]\nmax = \"64KB\"\n\
                    [region.buf]\nkind = \"anon\"\nsize = \"4MB\"\n\
                    [[task]]\nname = \"t\"\nmemcg = \"box\"\n[[task.step]]\nregion = \"buf\"\npattern = \"seq\"\n";
        let mut s = sim_from(text, &[]);
        assert!(matches!(fault(&mut s, 0, true), Fault::Done), "16 pages: the memcg is full");
        // The 64 KB charge fails, then the single page's charge reclaims: the task's job.
        assert!(matches!(fault(&mut s, 16, true), Fault::Retry));
        assert!(s.sched.tasks[Tid(0)].reclaim.is_some());
        // Reclaim made room (here: a higher limit); the retry of the same fault maps one page,
        // as the kernel's order-0 charge succeeds after its reclaim.
        s.mm.memcgs[1].max = 1 << 20;
        s.sched.tasks[Tid(0)].reclaim = None;
        let vma = crate::ids::VmaId(0);
        assert!(matches!(s.handle_mm_fault(Tid(0), 0, vma, 16, true), Fault::Done));
        assert_eq!(s.mm.frames.order(frame_at(&s, 16)), 0);
        assert_eq!(s.mm.vmas[0].pte[17], pte::NONE);
        assert_eq!(s.mm.vmstat.get(Counter::MthpAnonFaultAlloc), 1);
        assert_eq!(s.mm.vmstat.get(Counter::MthpAnonFaultFallback), 1, "tried once");
    }

    #[test]
    fn anon_mthp_is_refused_where_the_kernel_has_none_and_sizes_must_be_anon_orders() {
        let base = "[machine]\nram = \"64MB\"\n[region.buf]\nkind = \"anon\"\nsize = \"4MB\"\n[[task]]\nname = \"t\"\n\
                    [[task.step]]\nregion = \"buf\"\npattern = \"seq\"\n";
        let err = |profile: &str, size: &str| {
            let text = format!("[kernel]\nprofile = \"{profile}\"\nanon_mthp = [\"{size}\"]\n{base}");
            crate::scenario::Scenario::from_toml(&text, "f.toml", &[]).err().map(|e| e.to_string())
        };
        assert!(err("linux-6.6", "64KB").is_some_and(|e| e.contains("kernel.anon_mthp") && e.contains("6.8")));
        assert!(err("linux-6.18", "2MB").is_some_and(|e| e.contains("PMD")));
        assert!(err("linux-6.18", "8KB").is_some_and(|e| e.contains("order-1")));
        assert!(err("linux-6.18", "48KB").is_some_and(|e| e.contains("power of two")));
        assert!(err("linux-6.18", "1MB").is_none());
    }

    #[test]
    fn reclaim_swaps_a_large_folio_out_whole_to_a_partition_and_splits_it_for_a_swap_file() {
        for file in [false, true] {
            let swap = format!("{NVME}file = {file}\n");
            let mut s = mthp("\"64KB\"", &swap);
            assert!(matches!(fault(&mut s, 0, true), Fault::Done));
            let f = frame_at(&s, 0);
            let writes = s.io.devices[0].stats().writes;
            reclaim_all(&mut s);
            let entries: Vec<u32> = (0..16).map(|i| s.mm.vmas[0].pte[i]).collect();
            assert!(entries.iter().all(|&e| e & pte::SWAP != 0), "file={file}: every PTE holds a swap entry");
            assert_eq!(s.mm.vmstat.get(Counter::PswpOut), 16, "file={file}: pswpout counts pages");
            let c = |k| s.mm.vmstat.get(k);
            if file {
                // cluster_alloc_swap_entry gives a swap file no run: split, 16 single pages.
                assert_eq!((c(Counter::MthpSplit), c(Counter::MthpSwpoutFallback), c(Counter::MthpSwpout)), (1, 1, 0));
                // The split pages are decided right after the first, last page first, as the
                // kernel takes them off the tail of folio_list: so are their slots.
                let slot = |i: usize| entries[i] & !pte::SWAP;
                assert_eq!((slot(15), slot(14), slot(1)), (slot(0) + 1, slot(0) + 2, slot(0) + 15));
                let mut frames: Vec<Pfn> = entries
                    .iter()
                    .map(|&e| {
                        let en = crate::swap::Entry(e & !pte::SWAP);
                        s.swap.area_ref(en).cached(en.slot()).expect("each page in the swap cache")
                    })
                    .collect();
                assert!(frames.iter().all(|&g| s.mm.frames.order(g) == 0));
                frames.dedup();
                assert_eq!(frames.len(), 16, "a frame per page");
            } else {
                assert!(entries.windows(2).all(|w| w[1] == w[0] + 1), "consecutive slots");
                assert_eq!(entries[0] & !pte::SWAP & 15, 0, "aligned to the folio");
                assert_eq!((c(Counter::MthpSwpout), c(Counter::MthpSplit)), (1, 0));
                assert_eq!(s.io.devices[0].stats().writes, writes + 1, "one bio for the folio");
                assert!(s.mm.frames.test(f, pg::SWAPCACHE | pg::WRITEBACK) && s.mm.frames.order(f) == 4);
            }
            s.verify().unwrap();
        }
    }

    #[test]
    fn a_fault_on_a_large_folio_still_in_the_swap_cache_maps_all_its_pages() {
        let mut s = mthp("\"64KB\"", NVME);
        assert!(matches!(fault(&mut s, 0, true), Fault::Done));
        let f = frame_at(&s, 0);
        reclaim_all(&mut s);
        assert!(matches!(fault(&mut s, 3, false), Fault::Done));
        assert!((0..16).all(|i| frame_at(&s, i) == f), "the whole folio is mapped again");
        assert_eq!(s.mm.vmstat.get(Counter::PgMajFault), 0, "a swap-cache hit");
        let base = crate::swap::Entry(s.mm.frames.swap[f]);
        assert!((0..16).all(|k| s.swap.area_ref(base).count(base.slot() + k) == 0), "no PTE references a slot");
        assert_eq!(s.mm.vmas[0].pte[3] & pte::DIRTY, 0, "a read maps it clean");
        s.verify().unwrap();
    }

    /// A zram swap-in at a full memcg: the 64 KB folio is tried first and its charge, which
    /// may not reclaim, fails (`swpin_fallback`, `swpin_fallback_charge`); the single
    /// page's charge then reclaims, and the fault retried after that reclaim reads the
    /// single page, not the large folio that would now fit.
    #[test]
    fn a_zram_swap_in_at_a_full_memcg_falls_back_to_a_page_before_it_reclaims() {
        let text = format!(
            "[machine]\nram = \"64MB\"\nkernel_reserved = \"4MB\"\n[kernel]\nprofile = \"linux-6.18\"\n\
             anon_mthp = [\"64KB\"]\n{ZRAM}[memcg.box]\nmax = \"64KB\"\n\
             [region.buf]\nkind = \"anon\"\nsize = \"4MB\"\n\
             [[task]]\nname = \"t\"\nmemcg = \"box\"\n[[task.step]]\nregion = \"buf\"\npattern = \"seq\"\n"
        );
        let mut s = sim_from(&text, &[]);
        assert!(matches!(fault(&mut s, 0, true), Fault::Done));
        for e in s.mm.vmas[0].pte.iter_mut() {
            *e &= !pte::YOUNG;
        }
        let mut sc = ScanControl::direct();
        s.shrink_inactive_list(1, LruList::InactiveAnon, 16, &mut sc, 0);
        assert!((0..16).all(|i| s.mm.vmas[0].pte[i] & pte::SWAP != 0), "written to zram whole and freed");
        assert!(matches!(fault(&mut s, 16, true), Fault::Done), "the next 64 KB fill the memcg again");
        assert_eq!(s.mm.memcgs[1].usage, 16);
        assert!(matches!(fault(&mut s, 5, false), Fault::Retry), "the single page's charge reclaims");
        assert!(s.sched.tasks[Tid(0)].reclaim.is_some());
        let c = |s: &crate::engine::Sim, k| s.mm.vmstat.get(k);
        assert_eq!((c(&s, Counter::MthpSwpinFallback), c(&s, Counter::MthpSwpinFallbackCharge)), (1, 1));
        // The reclaim made room (here: a higher limit, room for the large folio too).
        s.mm.memcgs[1].max = 1 << 20;
        s.sched.tasks[Tid(0)].reclaim = None;
        assert!(matches!(s.handle_mm_fault(Tid(0), 0, crate::ids::VmaId(0), 5, false), Fault::Done));
        assert_eq!(s.mm.frames.order(frame_at(&s, 5)), 0, "the fallback's single page");
        assert!(s.mm.vmas[0].pte[4] & pte::SWAP != 0, "its neighbours stay in swap");
        assert_eq!((c(&s, Counter::MthpSwpin), c(&s, Counter::PswpIn)), (0, 1));
        s.verify().unwrap();
    }

    #[test]
    fn zram_reads_a_large_folio_back_whole_unless_zswap_is_on() {
        for zswap in [false, true] {
            let mut s = mthp("\"64KB\"", &format!("{ZRAM}[zswap]\nenabled = {zswap}\n"));
            assert!(matches!(fault(&mut s, 0, true), Fault::Done));
            reclaim_all(&mut s);
            assert!((0..16).all(|i| s.mm.vmas[0].pte[i] & pte::SWAP != 0), "zswap={zswap}: written and freed");
            assert!(matches!(fault(&mut s, 5, true), Fault::Done));
            let f = frame_at(&s, 5);
            let c = |k| s.mm.vmstat.get(k);
            if zswap {
                assert_eq!((s.mm.frames.order(f), c(Counter::MthpSwpin)), (0, 0), "zswap_never_enabled is false");
                assert!(s.mm.vmas[0].pte[4] & pte::SWAP != 0);
            } else {
                assert_eq!((s.mm.frames.order(f), c(Counter::MthpSwpin)), (4, 1));
                assert!((0..16).all(|i| frame_at(&s, i) == f));
                assert_eq!((c(Counter::PswpIn), c(Counter::PgMajFault)), (16, 1));
                assert_eq!(s.mm.vmas[0].pte[4] & pte::DIRTY, 0, "only the written page is dirty");
                assert!(s.mm.vmas[0].pte[5] & pte::DIRTY != 0);
                let z = s.io.devices[0].model().swap_backend().unwrap().mm_stat();
                assert_eq!(z.orig_data_size, 0, "every slot freed");
            }
            s.verify().unwrap();
        }
    }

    #[test]
    fn exit_frees_a_large_folio_once() {
        let mut s = mthp("\"64KB\"", NVME);
        assert!(matches!(fault(&mut s, 0, true), Fault::Done));
        let free = s.mm.nr_free();
        s.exit_mmap(Tid(0));
        assert_eq!(s.mm.nr_free(), free + 16);
        assert_eq!(s.mm.memcgs[0].lru.size(LruList::InactiveAnon), 0);
        s.verify().unwrap();
    }

    /// A whole run (the invariant checker on): sequential writes over 12 MB in an 8 MB
    /// memcg with 64 KB folios fault once a folio, and the folios go out whole to a
    /// partition; to a swap file every folio is split instead.
    #[test]
    fn a_run_with_64k_folios_faults_per_folio_and_swaps_what_single_pages_swap() {
        let text = "[machine]\nram = \"64MB\"\nkernel_reserved = \"4MB\"\n[kernel]\nprofile = \"linux-6.18\"\n\
                    [device.d]\nmodel = \"nvme\"\n[[swap]]\ndevice = \"d\"\nsize = \"32MB\"\n\
                    [memcg.box]\nmax = \"8MB\"\n[region.buf]\nkind = \"anon\"\nsize = \"12MB\"\n\
                    [[task]]\nname = \"t\"\nmemcg = \"box\"\n\
                    [[task.step]]\nregion = \"buf\"\npattern = \"seq\"\nop = \"write\"\n";
        let small = crate::testutil::run(text, &[]);
        let large = crate::testutil::run(text, &["kernel.anon_mthp=[\"64KB\"]"]);
        let file = crate::testutil::run(text, &["kernel.anon_mthp=[\"64KB\"]", "swap.0.file=true"]);
        for r in [&small, &large, &file] {
            assert!(r.tasks[0].completed && r.counter(Counter::OomKill) == 0);
        }
        let c = |r: &crate::Report, k| r.counter(k);
        assert_eq!(c(&small, Counter::PgFault), 3072);
        // Each of the 192 ranges of 64 KB is one fault for a folio, or, where the charge
        // failed at the limit, 16 faults for single pages (the first falls back, the others
        // find the range touched and do not try).
        let (alloc, fallback) = (c(&large, Counter::MthpAnonFaultAlloc), c(&large, Counter::MthpAnonFaultFallback));
        assert_eq!(alloc + fallback, 192);
        assert_eq!(c(&large, Counter::PgFault), alloc + 16 * fallback);
        assert!(alloc > fallback, "{alloc} folios, {fallback} fallbacks");
        // At least the 4 MB that does not fit goes out either way. (Whole folios go out in
        // larger steps: reclaim isolates at least one folio per call, 16 pages where a page
        // would do at the first priorities, so with folios it writes more than it needs.)
        let (so, lo) = (c(&small, Counter::PswpOut), c(&large, Counter::PswpOut));
        assert!(so >= 1024 && lo >= 1024, "pswpout {lo} with folios, {so} without");
        assert!(c(&large, Counter::MthpSwpout) * 16 * 10 >= lo * 9, "mostly whole folios written");
        assert_eq!(c(&file, Counter::MthpSwpout), 0);
        assert_eq!(c(&file, Counter::MthpSplit), c(&file, Counter::MthpSwpoutFallback));
        assert!(c(&file, Counter::MthpSplit) * 16 * 10 >= c(&file, Counter::PswpOut) * 9);
    }
}
