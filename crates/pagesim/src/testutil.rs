//! Helpers for the unit tests of the model: a small machine built from a scenario, and
//! the steps of the fault and reclaim paths done by hand, so that a test can pin one
//! mechanism without a whole run. (The integration tests in tests/ have their own,
//! public-API ones in tests/common.)

use crate::engine::memory::Fault;
use crate::engine::Sim;
use crate::ids::Pfn;
use crate::ids::{Tid, VmaId};
use crate::mm::{pg, pte, Owner};
use crate::scenario::Scenario;
use crate::swap::Entry;
use crate::{Report, RunOptions};

/// A machine from a whole scenario text, checked by the invariant checker before it runs.
pub fn sim_from(text: &str, sets: &[&str]) -> Sim {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let sc = Scenario::from_toml(text, "test.toml", &sets).unwrap_or_else(|e| panic!("{e}"));
    let s = Sim::new(&sc, 1);
    s.verify().unwrap();
    s
}

/// Runs a scenario text to the end.
pub fn run(text: &str, sets: &[&str]) -> Report {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    crate::run_toml(text, "test.toml", RunOptions { sets, ..Default::default() }).unwrap_or_else(|e| panic!("{e}"))
}

/// Task `tid` touches page `idx` of `vma` as the engine's fault path does: a new fault
/// in progress (`PendingFault`), then `handle_mm_fault`; a completed fault ends it.
pub fn fault_as(s: &mut Sim, tid: Tid, vma: VmaId, idx: u32, write: bool) -> Fault {
    s.sched.tasks[tid].pending = Some(crate::engine::PendingFault::new(vma, idx, write, s.sched.now));
    let r = s.handle_mm_fault(tid, 0, vma, idx, write);
    if matches!(r, Fault::Done) {
        s.sched.tasks[tid].pending = None;
    }
    r
}

/// [`fault_as`] for task 0 and its VMA 0.
pub fn fault(s: &mut Sim, idx: u32, write: bool) -> Fault {
    fault_as(s, Tid(0), VmaId(0), idx, write)
}

/// A SATA SSD `d` with a 16 MB swap area on it, for [`sim`].
pub const SSD: &str = "[device.d]\nmodel = \"sata-ssd\"\n[[swap]]\ndevice = \"d\"\nsize = \"16MB\"\n";

/// A 64 MB machine (60 MB managed) with one task mapping a 4 MB anon region `buf`;
/// `extra` adds devices, swap, zswap, the profile.
pub fn sim(extra: &str) -> Sim {
    let text = format!(
        "[machine]\nram = \"64MB\"\nkernel_reserved = \"4MB\"\n{extra}\n\
         [region.buf]\nkind = \"anon\"\nsize = \"4MB\"\n\
         [[task]]\nname = \"t\"\n[[task.step]]\nregion = \"buf\"\npattern = \"seq\"\n"
    );
    sim_from(&text, &[])
}

/// Page `idx` of VMA 0 made resident and dirty, then put in the swap cache at a new slot,
/// as `shrink_folio`'s add_to_swap does. Returns (frame, entry).
pub fn swapcache_page(s: &mut Sim, idx: u32) -> (Pfn, Entry) {
    let f = s.alloc_page_atomic(0).expect("free memory");
    s.mm.frames.set(f, pg::SWAPBACKED);
    s.mm.frames.set_owner(f, Owner::Anon(crate::ids::AnonId(0)), idx);
    s.lru_add(f, false);
    s.mm.vmas[0].pte[idx as usize] = pte::present(f, pte::YOUNG | pte::WRITE | pte::DIRTY);
    let e = s.swap.alloc(0).expect("swap space");
    s.add_to_swap_cache(f, e);
    s.mm.frames.set(f, pg::DIRTY);
    (f, e)
}

/// `swap_writepage`'s start: PG_dirty cleared, then the synchronous outcomes.
pub fn writeout(s: &mut Sim, f: Pfn, e: Entry) -> bool {
    s.mm.frames.clear(f, pg::DIRTY);
    s.swap_writepage_sync(f, e)
}

/// The rest of reclaiming a written page: the PTE takes the swap entry, the clean page
/// leaves the swap cache and is freed.
pub fn evict(s: &mut Sim, f: Pfn, e: Entry, idx: u32) {
    s.mm.vmas[0].pte[idx as usize] = pte::SWAP | e.0;
    s.swap.area(e).dup(e.slot());
    s.mm.memcgs[0].swap_usage += 1;
    s.mm.frames.set_owner(f, Owner::None, 0);
    s.mm.frames.clear(f, pg::SWAPCACHE);
    s.mm.frames.swap[f] = 0;
    s.swap.area(e).clear_cache_bit(e.slot());
    let crate::mm::Mm { memcgs, frames, .. } = &mut s.mm;
    memcgs[0].lru.del(frames, f);
    s.mm.free_frame(f);
}

/// Submits the plugged I/O and runs the device completions until none is left (the other
/// events, thread wakeups, are dropped).
pub fn complete_io(s: &mut Sim) {
    s.unplug_all();
    while let Some((t, ev)) = s.sched.events.pop() {
        s.sched.now = s.sched.now.max(t);
        match ev {
            crate::engine::event::Event::IoDone { dev, rid } => s.io_interrupt(dev, rid),
            crate::engine::event::Event::DevTimer { dev } => s.dev_timer_fired(dev),
            crate::engine::event::Event::Run { .. } => {}
        }
    }
}
