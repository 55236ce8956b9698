//! The invariant checker (`Sim::verify`): walks every frame, LRU list, page table, swap
//! slot and page cache of the model and checks that they agree (a frame on exactly the
//! list its `lru` field says, counts equal to what the maps hold, owners pointing back).
//! Debug builds and tests run it as the simulation goes, at a bounded cost per event.

use crate::engine::Sim;
use crate::ids::Pfn;
use crate::mm::{pg, pte, LruList, Owner};
use crate::swap::Entry;

impl Sim {
    /// Checks the model's invariants: every frame free or on exactly the list its memcg
    /// counts; list lengths match; memcg usage matches charged frames; swap-cache pages
    /// and slots agree; every slot's reference count equals the PTEs and shmem slots that
    /// point at it; `inuse` matches the map.
    pub fn verify(&self) -> Result<(), String> {
        let n = self.mm.frames.len();
        let mut seen = vec![false; n as usize];
        let mut charged = vec![0u64; self.mm.memcgs.len()];
        // zsmalloc's frames are off the LRU and charged to no memcg (they are in frame
        // memcg 0, taken back out below); zswap charges compressed bytes as pages instead.
        for &f in &self.mm.zs_frames {
            if seen[f] || self.mm.frames.memcg[f] != 0 {
                return Err(format!("zsmalloc frame {f} listed twice or charged to a memcg"));
            }
            seen[f] = true;
        }
        for (mi, c) in charged.iter_mut().enumerate() {
            *c = self.swap.zswap.memcg_pages(mi);
        }
        for (mi, m) in self.mm.memcgs.iter().enumerate() {
            for l in [
                LruList::InactiveAnon,
                LruList::ActiveAnon,
                LruList::InactiveFile,
                LruList::ActiveFile,
                LruList::Unevictable,
            ] {
                let mut cnt = 0;
                for f in m.lru.walk(&self.mm.frames, l) {
                    if seen[f] {
                        return Err(format!("frame {f} on two lists"));
                    }
                    seen[f] = true;
                    cnt += self.mm.frames.nr_pages(f);
                    if self.mm.frames.lru[f] != l as u8 || self.mm.frames.memcg[f] as usize != mi {
                        return Err(format!("frame {f}: lru/memcg fields disagree with list {l:?} of memcg {mi}"));
                    }
                    if self.mm.frames.test(f, pg::ACTIVE) != l.is_active() {
                        return Err(format!("frame {f}: PG_active disagrees with list {l:?}"));
                    }
                }
                if cnt != m.lru.size(l) {
                    return Err(format!("memcg {mi} list {l:?}: {cnt} pages, counter says {}", m.lru.size(l)));
                }
            }
        }
        for f in (0..n).map(Pfn) {
            let on_list = seen[f];
            let free = self.mm.frames.is_free(f);
            if on_list == free {
                return Err(format!("frame {f}: free={free} on_list={on_list}"));
            }
            if !free {
                charged[self.mm.frames.memcg[f] as usize] += self.mm.frames.nr_pages(f);
                let order = self.mm.frames.order(f);
                let anon = self.mm.frames.test(f, pg::SWAPBACKED)
                    && matches!(self.mm.frames.owner(f), Owner::Anon(_) | Owner::None);
                if order > 0 && !matches!(self.mm.frames.owner(f), Owner::File(_)) && !anon {
                    return Err(format!("frame {f}: a large folio neither in the page cache nor anon"));
                }
                if order > 0 && anon && !self.mm.frames.index[f].is_multiple_of(1 << order) {
                    return Err(format!("frame {f}: anon folio of order {order} at unaligned index"));
                }
            } else if self.mm.frames.order(f) != 0 {
                return Err(format!("frame {f}: free with order {}", self.mm.frames.order(f)));
            }
        }
        let used: u64 =
            (0..n).map(Pfn).filter(|&f| !self.mm.frames.is_free(f)).map(|f| self.mm.frames.nr_pages(f)).sum();
        if used + self.mm.nr_free() != n as u64 {
            return Err(format!("{used} pages in use and {} free, of {n}", self.mm.nr_free()));
        }
        charged[0] -= self.mm.zs_frames.len() as u64;
        // Page counters are hierarchical below the root: a memcg's usage is its own pages
        // and its descendants'.
        let own = charged.clone();
        for (mi, &n) in own.iter().enumerate().skip(1) {
            for a in self.mm.ancestry(mi as u16).skip(1) {
                charged[a as usize] += n;
            }
        }
        for (mi, m) in self.mm.memcgs.iter().enumerate() {
            if m.usage != charged[mi] {
                return Err(format!("memcg {mi}: usage {} but {} frames charged", m.usage, charged[mi]));
            }
        }
        // Swap references from page tables and shmem objects.
        let mut refs: Vec<Vec<u8>> = self.swap.areas.iter().map(|a| vec![0u8; a.nslots as usize]).collect();
        for (vi, v) in self.mm.vmas.iter().enumerate() {
            for (i, &e) in v.pte.iter().enumerate() {
                if e & pte::SWAP != 0 {
                    let en = Entry(e & !pte::SWAP);
                    refs[en.area()][en.slot() as usize] += 1;
                } else if let Some(f) = pte::frame(e).filter(|_| v.shmem.is_none() && v.file.is_none()) {
                    // A private anon page is mapped only where its owner says.
                    let first = self.mm.frames.index[f] as usize;
                    let nr = self.mm.frames.nr_pages(f) as usize;
                    let owned = v.anon.is_some_and(|a| {
                        self.mm.frames.owner(f) == Owner::Anon(a)
                            && self.mm.anon_vmas[a].mappers.contains(&crate::ids::VmaId(vi as u32))
                    });
                    if self.mm.frames.is_free(f) || !owned || !(first..first + nr).contains(&i) {
                        return Err(format!("vma {vi} page {i}: maps frame {f}, which does not point back"));
                    }
                }
            }
        }
        for o in &self.mm.shmem {
            for &e in &o.slots {
                if e & pte::SWAP != 0 {
                    let en = Entry(e & !pte::SWAP);
                    refs[en.area()][en.slot() as usize] += 1;
                }
            }
        }
        // Slots the slots caches hold are reserved: SWAP_HAS_CACHE with no page.
        let held_lists = self.swap_slots_held();
        for (ai, a) in self.swap.areas.iter().enumerate() {
            let mut held = vec![false; a.nslots as usize];
            for &s in &held_lists[ai] {
                if std::mem::replace(&mut held[s as usize], true) {
                    return Err(format!("swap {ai} slot {s}: held twice by the slots caches"));
                }
                if a.map[s as usize] != crate::swap::HAS_CACHE {
                    return Err(format!("swap {ai} slot {s}: in a slots cache with map {:#x}", a.map[s as usize]));
                }
            }
            let mut inuse = 0;
            for s in 1..a.nslots {
                let b = a.map[s as usize];
                if b != 0 {
                    inuse += 1;
                }
                if a.count(s) != refs[ai][s as usize] {
                    return Err(format!(
                        "swap {ai} slot {s}: count {} but {} references",
                        a.count(s),
                        refs[ai][s as usize]
                    ));
                }
                match a.cached(s) {
                    Some(f) => {
                        let base = Entry(self.mm.frames.swap[f]);
                        let nr = self.mm.frames.nr_pages(f) as u32;
                        if !a.has_cache(s)
                            || !self.mm.frames.test(f, pg::SWAPCACHE)
                            || base.area() != ai
                            || !(base.slot()..base.slot() + nr).contains(&s)
                        {
                            return Err(format!("swap {ai} slot {s}: swap cache and frame {f} disagree"));
                        }
                    }
                    None => {
                        if a.has_cache(s) && !held[s as usize] {
                            return Err(format!("swap {ai} slot {s}: SWAP_HAS_CACHE without a page"));
                        }
                    }
                }
            }
            if inuse != a.inuse {
                return Err(format!("swap {ai}: inuse {} but {inuse} slots in use", a.inuse));
            }
        }
        let mut nodes_listed = 0u64;
        for (ai, a) in self.pc.files.iter().enumerate() {
            let mut cached = 0;
            for (i, &s) in a.slots.iter().enumerate() {
                if s == 0 {
                    continue;
                }
                cached += 1;
                let f = Pfn(s - 1);
                let first = self.mm.frames.index[f] as usize;
                let nr = self.mm.frames.nr_pages(f) as usize;
                if self.mm.frames.is_free(f)
                    || self.mm.frames.owner(f) != Owner::File(crate::ids::FileId(ai as u32))
                    || !(first..first + nr).contains(&i)
                    || !first.is_multiple_of(nr)
                {
                    return Err(format!("file {ai} page {i}: frame {f} does not point back"));
                }
                if self.mm.frames.lru[f] != LruList::InactiveFile as u8
                    && self.mm.frames.lru[f] != LruList::ActiveFile as u8
                {
                    return Err(format!("file {ai} page {i}: frame {f} is not on a file LRU list"));
                }
            }
            if cached != a.nrpages {
                return Err(format!("file {ai}: nrpages {} but {cached} pages cached", a.nrpages));
            }
            // Each node holding only shadows is on its memcg's shadow-node list, as itself.
            let on = a.verify_xa(self.profile.shadow_node_shrinker)?;
            nodes_listed += on.len() as u64;
            for (m, seq, level, id) in on {
                let node = self.mm.memcgs[m as usize].shadow_nodes.get(seq);
                if node.map(|n| (n.file.idx(), n.level, n.id as u64)) != Some((ai, level, id)) {
                    return Err(format!(
                        "file {ai}: node {level}/{id} at place {seq} of memcg {m}'s list, not found there"
                    ));
                }
            }
            // The dirty tag marks exactly the dirty folios, by their first page.
            let mut tagged = 0;
            let mut i = 0;
            while let Some(d) = a.next_dirty(i, u64::MAX) {
                let f = a.frame(d).ok_or_else(|| format!("file {ai} page {d}: tagged dirty, not cached"))?;
                if !self.mm.frames.test(f, pg::DIRTY) || self.mm.frames.index[f] as u64 != d {
                    return Err(format!("file {ai} page {d}: tagged dirty, frame {f} is not a dirty folio there"));
                }
                tagged += self.mm.frames.nr_pages(f);
                i = d + 1;
            }
            if tagged != a.nr_dirty {
                return Err(format!("file {ai}: nr_dirty {} but {tagged} pages tagged", a.nr_dirty));
            }
            let mut i = 0;
            while let Some(w) = a.next_tagged(crate::pagecache::Tag::Writeback, i, u64::MAX) {
                let f = a.frame(w).ok_or_else(|| format!("file {ai} page {w}: tagged writeback, not cached"))?;
                if !self.mm.frames.test(f, pg::WRITEBACK) || self.mm.frames.index[f] as u64 != w {
                    return Err(format!("file {ai} page {w}: tagged writeback, frame {f} is not under writeback"));
                }
                i = w + 1;
            }
            if a.nr_dirty > 0 && !self.wb.inodes[ai].dirty {
                return Err(format!("file {ai}: {} dirty pages, inode not dirty", a.nr_dirty));
            }
        }
        let listed: u64 = self.mm.memcgs.iter().map(|m| m.shadow_nodes.len()).sum();
        if listed != nodes_listed {
            return Err(format!("{listed} nodes on the shadow-node lists, {nodes_listed} files' nodes say they are"));
        }
        let file_dirty: u64 = self.pc.files.iter().map(|a| a.nr_dirty).sum();
        let memcg_dirty: u64 = self.mm.memcgs.iter().map(|m| m.nr_dirty).sum();
        let wb_dirty: u64 = self.wb.wbs.iter().map(|w| w.nr_reclaimable).sum();
        if file_dirty != self.mm.nr_dirty || memcg_dirty != self.mm.nr_dirty || wb_dirty != self.mm.nr_dirty {
            return Err(format!(
                "nr_dirty {}: files {file_dirty}, memcgs {memcg_dirty}, devices {wb_dirty}",
                self.mm.nr_dirty
            ));
        }
        let in_wb = (0..n)
            .map(Pfn)
            .filter(|&f| !self.mm.frames.is_free(f) && self.mm.frames.test(f, pg::WRITEBACK))
            .map(|f| self.mm.frames.nr_pages(f))
            .sum::<u64>();
        let memcg_wb: u64 = self.mm.memcgs.iter().map(|m| m.nr_writeback).sum();
        if in_wb != self.mm.nr_writeback || memcg_wb != self.mm.nr_writeback {
            return Err(format!("nr_writeback {}: frames {in_wb}, memcgs {memcg_wb}", self.mm.nr_writeback));
        }
        self.wb.verify()?;
        for f in (0..n).map(Pfn) {
            if let Owner::File(a) = self.mm.frames.owner(f) {
                let i = self.mm.frames.index[f] as usize;
                let nr = self.mm.frames.nr_pages(f) as usize;
                if self
                    .pc
                    .files
                    .get(a.idx())
                    .is_none_or(|m| m.slots.get(i..i + nr).is_none_or(|s| s.iter().any(|&s| s != f.slot())))
                {
                    return Err(format!("frame {f}: owned by file {a} pages {i}+{nr}, which do not all hold it"));
                }
            }
            if !self.mm.frames.is_free(f) && self.mm.frames.test(f, pg::SWAPCACHE) {
                let en = Entry(self.mm.frames.swap[f]);
                if self.swap.area_ref(en).cached(en.slot()) != Some(f) {
                    return Err(format!("frame {f}: PG_swapcache but slot does not point back"));
                }
            }
        }
        self.verify_compressed()
    }

    /// Events between two runs of the invariant checker in debug builds: every event for
    /// up to [`VERIFY_ITEMS_PER_EVENT`] checked items (frames, swap slots, file pages), then
    /// proportionally fewer, so a check costs O(1) per event on average whatever the
    /// machine's size.
    pub(crate) fn verify_stride(&self) -> u64 {
        let slots: u64 = self.swap.areas.iter().map(|a| a.nslots as u64).sum();
        let file_pages: u64 = self.pc.files.iter().map(|a| a.nr_pages).sum();
        ((self.mm.frames.len() as u64 + slots + file_pages) / VERIFY_ITEMS_PER_EVENT).max(1)
    }
}

/// Debug builds check every invariant of the model (`Sim::verify`) as they run, spending
/// about this many item checks per event on average. What a bug breaks (a frame on two
/// lists, a count that disagrees with its map) mostly stays broken, so a check every few
/// thousand events of a large run still catches it, at a cost comparable to the simulation
/// itself: with 4096 per event, checking took 25 of the 26 seconds of the seed-000 test,
/// and with 256, 41 % of its samples; 128 takes its run from 128 to 102 s.
/// The fuzz builds (`cfg(fuzzing)`, set by cargo-fuzz) check 8 times less densely: their
/// coverage instrumentation makes each check dearer, checking took three quarters of a run
/// there (perf, scenario target), and a fuzzer finds more with more executions; every run
/// still checks at least once per stride.
const VERIFY_ITEMS_PER_EVENT: u64 = if cfg!(fuzzing) { 32 } else { 128 };
