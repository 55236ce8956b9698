//! Where page I/O meets the device models (device/): submitting a page read or write to a
//! device queue inside the current plug (`submit_bio`, `blk_finish_plug`), the completion
//! events the queue's dispatches become (engine/event.rs), the device scheduler's timers,
//! threads sleeping for a free request (`get_request_wait`), kswapd's `congestion_wait`
//! nap ended when a congested queue clears (`clear_bdi_congested`), and the end of each
//! I/O: `folio_end_read` (the page unlocks; its sleepers wake, engine/sched.rs
//! `wake_page_waiters`) and `folio_end_writeback` (a waiting reclaimer wakes, or a
//! PG_reclaim page rotates to the inactive tail, `folio_rotate_reclaimable`; enough
//! completed writeback releases threads in `reclaim_throttle`, engine/vmscan.rs).

use crate::device::PageIo;
use crate::device::{Dispatched, IoDir, SyncIo};
use crate::engine::event::Event;
use crate::engine::{Sim, TaskState};
use crate::ids::Pfn;
use crate::ids::{DevId, Tid};
use crate::mm::vmstat::Counter;
use crate::mm::{self, pg, Mm};

impl Sim {
    /// Queues a page I/O on device `dev` at byte `offset` (inside the current plug).
    pub fn submit_bio(&mut self, dev: DevId, offset: u64, frame: Pfn, dir: IoDir) {
        self.submit_folio_bio(dev, offset, frame, dir, 4096);
    }

    /// Queues the I/O of a whole folio, `len` bytes at `offset`, split into requests no
    /// larger than the device takes (`bio_split` to `max_sectors_kb`); the folio's I/O ends
    /// when the last of them completes. On a synchronous device (brd, pmem, zram: bio-based,
    /// no request queue) the folio joins the bio the submitter is building and is done when
    /// its plug is released ([`Sim::sync_submit_bios`]).
    pub fn submit_folio_bio(&mut self, dev: DevId, offset: u64, frame: Pfn, dir: IoDir, len: u64) {
        if self.io.devices[dev].model().synchronous_io() {
            self.io.sync_plug.push(SyncIo { dev, frame, dir, offset, len });
            return;
        }
        let max = self.io.devices[dev].max_bytes().max(4096);
        // Most I/O is one page: no division for it.
        let parts = if len <= max { 1 } else { len.div_ceil(max) as u32 };
        let io = PageIo { frame, dir, parts };
        let tag = match self.io.free_ios.pop() {
            Some(t) => {
                self.io.ios[t as usize] = io;
                t
            }
            None => {
                self.io.ios.push(io);
                (self.io.ios.len() - 1) as u32
            }
        };
        let mut out = std::mem::take(&mut self.io.scratch_dispatch);
        let q = &mut self.io.devices[dev];
        q.set_ctx(self.io.ctx.0);
        if parts == 1 {
            q.add(dir, offset, len, tag, self.sched.now, &mut out);
        } else {
            let mut done = 0;
            while done < len {
                let n = (len - done).min(max);
                q.add(dir, offset + done, n, tag, self.sched.now, &mut out);
                done += n;
            }
        }
        self.device_ran(dev, &mut out);
        self.io.scratch_dispatch = out;
    }

    /// Releases the plug of device `dev` (`blk_finish_plug`).
    pub fn unplug(&mut self, dev: DevId) {
        if !self.io.sync_plug.is_empty() {
            self.sync_submit_bios(dev);
        }
        // A synchronous device has no request queue (`submit_folio_bio` never queues on it):
        // nothing to dispatch, no timer, no congestion.
        if self.io.devices[dev].model().synchronous_io() {
            return;
        }
        let mut out = std::mem::take(&mut self.io.scratch_dispatch);
        self.io.devices[dev].unplug(self.sched.now, &mut out);
        self.device_ran(dev, &mut out);
        self.io.scratch_dispatch = out;
    }

    /// The folio I/O held for synchronous device `dev` in the running thread's plug, done
    /// now by that thread. The filesystem builds one bio of consecutive folios in the same
    /// direction (`mpage_readahead`, `mpage_writepages`: a bio goes out when the next block
    /// is not contiguous, at `max_sectors_kb`, or at the end), and a bio-based driver has
    /// no request queue: `submit_bio` calls its `->submit_bio` (`brd_submit_bio`,
    /// `pmem_submit_bio`, `zram_submit_bio`), which copies each segment in the submitter
    /// and ends the bio there (`bio_endio`). So each bio costs the thread the device's
    /// service time as CPU time, and its folios end their read (unlocked, their waiters
    /// woken) or their writeback before the next bio goes. Until then they stay locked or
    /// under writeback, as in the kernel, where a readahead window's folios are all added
    /// to the page cache before `read_pages` submits them.
    pub(crate) fn sync_submit_bios(&mut self, dev: DevId) {
        let mut held = std::mem::take(&mut self.io.sync_plug);
        let mut others = Vec::new();
        let max = self.io.devices[dev].max_bytes().max(4096);
        let mut i = 0;
        while i < held.len() {
            let first = held[i];
            if first.dev != dev {
                others.push(first);
                i += 1;
                continue;
            }
            let (mut len, mut j) = (first.len, i + 1);
            while let Some(n) = held.get(j) {
                if n.dev != dev || n.dir != first.dir || n.offset != first.offset + len || len + n.len > max {
                    break;
                }
                len += n.len;
                j += 1;
            }
            let now = self.sched.now;
            let ns = self.io.devices[dev].model_mut().service_ns(first.dir, first.offset, len, now);
            self.io.devices[dev].account_sync(first.dir, len, ns);
            self.charge(ns);
            self.note_device_ns(ns);
            for io in &held[i..j] {
                match io.dir {
                    IoDir::Read => self.folio_end_read(io.frame),
                    IoDir::Write => self.folio_end_writeback(io.frame),
                }
            }
            i = j;
        }
        // A completion submits no I/O: nothing joined the plug meanwhile.
        debug_assert!(self.io.sync_plug.is_empty(), "I/O submitted while a synchronous bio ended");
        held.clear();
        // The other devices' I/O stays held, in order.
        self.io.sync_plug = if others.is_empty() { held } else { others };
    }

    /// After device `dev` ran its queue: completion events for what it dispatched, an
    /// event for its scheduler timer, a woken `congestion_wait` if its write congestion
    /// cleared, and the first thread waiting for one of its requests if there is room.
    fn device_ran(&mut self, dev: DevId, out: &mut Vec<Dispatched>) {
        for d in out.drain(..) {
            self.sched.events.push(d.done_ns, Event::IoDone { dev, rid: d.rid });
        }
        let q = &mut self.io.devices[dev];
        let t = q.timer_at();
        if let Some(at) = t.filter(|&at| Some(at) != self.io.dev_timer[dev.idx()]) {
            self.sched.events.push(at, Event::DevTimer { dev });
        }
        self.io.dev_timer[dev.idx()] = t;
        // A write request freed below the congestion-off threshold: clear_bdi_congested
        // wakes the congestion_wait queue and kswapd's nap ends.
        if q.take_congestion_wakeup() {
            if self.reclaim.kswapd.napping {
                self.reclaim.kswapd.napping = false;
                self.mm.vmstat.add(Counter::KswapdCongestionWaitWoken, 1);
                let k = self.kswapd_thread();
                self.wake_up(k);
            }
            if !self.sched.congestion_waiters.is_empty() {
                self.wake_congestion_waiters();
            }
        }
        if !self.io.devices[dev].write_full() {
            if let Some(i) = self.io.req_waiters.iter().position(|&(_, d)| d == dev) {
                let (th, _) = self.io.req_waiters.remove(i);
                if th == self.kswapd_thread() {
                    self.reclaim.kswapd.throttled = false;
                } else if let Some(t) = self.sched.tasks.get_mut(th.idx()) {
                    t.state = TaskState::Runnable;
                }
                self.wake_up(th);
            }
        }
    }

    /// A device timer event: stale if the timer was cancelled or moved later since. (The
    /// clock may already be past the timer when a thread's burst overran the event.)
    pub(crate) fn dev_timer_fired(&mut self, dev: DevId) {
        if self.io.dev_timer[dev.idx()].is_none_or(|t| t > self.sched.now) {
            return;
        }
        self.io.dev_timer[dev.idx()] = None;
        let mut out = std::mem::take(&mut self.io.scratch_dispatch);
        self.io.devices[dev].timer(self.sched.now, &mut out);
        self.device_ran(dev, &mut out);
        self.io.scratch_dispatch = out;
    }

    /// The first device whose write requests are all allocated, if any.
    pub fn write_full_device(&self) -> Option<DevId> {
        self.io.devices.iter().position(|q| q.write_full()).map(|d| DevId(d as u32))
    }

    /// Blocks thread `th` (a task, kswapd or a flusher) in `get_request_wait` until device
    /// `dev` frees a write request.
    pub fn get_request_wait(&mut self, th: Tid, dev: DevId) {
        if th == self.kswapd_thread() {
            self.reclaim.kswapd.throttled = true;
        } else if let Some(t) = self.sched.tasks.get_mut(th.idx()) {
            t.state = TaskState::WaitRequest;
        }
        self.block(th);
        self.io.req_waiters.push((th, dev));
    }

    /// Unplugs every device.
    pub fn unplug_all(&mut self) {
        for d in 0..self.io.devices.len() as u32 {
            self.unplug(DevId(d));
        }
    }

    /// The interrupts that fall due while a long kernel path runs on a CPU (a reclaim scan
    /// of thousands of pages takes milliseconds): I/O completions and device timers whose
    /// time has come run now, in time order, on their interrupt CPU, and the path goes on.
    /// In the kernel they interrupt it; a written page's completion rotates it to the
    /// inactive tail, where the scan's next batch finds it clean. A thread's wakeup that is
    /// due meanwhile waits for the event loop (this thread's step ends first) without
    /// holding the interrupts behind it back; stale wakeups are dropped, as the loop would.
    pub(crate) fn run_due_interrupts(&mut self) {
        // Interrupts do not wait for the scheduler: a wakeup of another thread that is due
        // too is set aside (it runs once this thread's step ends) and put back in its place.
        let mut held = std::mem::take(&mut self.sched.held_runs);
        while let Some((t, ev)) = self.sched.events.peek() {
            if t > self.sched.now {
                break;
            }
            let entry = self.sched.events.pop_entry().expect("peeked");
            match ev {
                Event::Run { thread, token } => {
                    if token == self.sched.tokens[thread.idx()] {
                        held.push(entry);
                    }
                }
                Event::IoDone { dev, rid } => self.io_interrupt(dev, rid),
                Event::DevTimer { dev } => self.dev_timer_fired(dev),
            }
        }
        for e in held.drain(..) {
            self.sched.events.restore(e);
        }
        self.sched.held_runs = held;
    }

    /// Device `dev`'s completion interrupt for request `rid`: it runs on the device's
    /// interrupt CPU, or (none) on the CPU of the task it wakes, and the code it interrupted
    /// goes on where it was.
    pub(crate) fn io_interrupt(&mut self, dev: DevId, rid: u32) {
        let running_on = self.sched.running_on;
        self.sched.io_done += 1;
        self.sched.running_on = self.io.devices[dev].irq_cpu().unwrap_or(super::NO_CPU);
        self.io_done(dev, rid);
        self.sched.running_on = running_on;
    }

    fn io_done(&mut self, dev: DevId, rid: u32) {
        let mut tags = std::mem::take(&mut self.io.scratch_tags);
        let mut out = std::mem::take(&mut self.io.scratch_dispatch);
        self.io.devices[dev].complete(self.sched.now, rid, &mut tags, &mut out);
        self.device_ran(dev, &mut out);
        self.io.scratch_dispatch = out;
        for &tag in &tags {
            let io = &mut self.io.ios[tag as usize];
            io.parts -= 1;
            if io.parts > 0 {
                continue;
            }
            let io = *io;
            self.io.free_ios.push(tag);
            match io.dir {
                IoDir::Read => self.folio_end_read(io.frame),
                IoDir::Write => self.folio_end_writeback(io.frame),
            }
        }
        tags.clear();
        self.io.scratch_tags = tags;
    }

    /// A swap read completed: the page is uptodate and unlocked; waiters wake.
    fn folio_end_read(&mut self, f: Pfn) {
        self.mm.frames.clear(f, pg::LOCKED);
        self.wake_page_waiters(f);
    }

    /// A write completed (`folio_end_writeback`): NR_WRITTEN counts it (swap and file
    /// pages), a file page's device counts it for its bandwidth estimate; a reclaimer
    /// waiting for it (cgroup v1 limit reclaim, `folio_wait_writeback`) wakes; otherwise,
    /// with PG_reclaim and still clean, the page is rotated to the tail of its inactive list
    /// for immediate reclaim (`folio_rotate_reclaimable`, `pgrotated`).
    fn folio_end_writeback(&mut self, f: Pfn) {
        let nr = self.mm.frames.nr_pages(f);
        self.mm.frames.clear(f, pg::WRITEBACK);
        self.mm.account_writeback(f, false);
        if self.mm.frames.test(f, pg::SWAPCACHE) {
            // ≤4.8: the writeback tag is cleared under the swap cache's tree lock.
            self.swap_writeback_tag(crate::swap::Entry(self.mm.frames.swap[f]));
        }
        let m = self.mm.frames.memcg[f];
        self.mm.count(Counter::NrWritten, m, nr);
        if let mm::Owner::File(fi) = self.mm.frames.owner(f) {
            // __wb_writeout_add: the wb's written count and its share of completions.
            let idx = self.mm.frames.index[f] as u64;
            self.pc.files[fi].tag_writeback(idx, false);
            let (wb, now) = (self.inode_to_wb(fi), self.sched.now);
            let crate::writeback::Writeback { wbs, completions, flex_completions, domains, rules, .. } = &mut self.wb;
            let w = &mut wbs[wb.idx()];
            w.written += nr;
            w.nr_writeback -= nr;
            if rules.flex_proportions {
                flex_completions.inc(&mut w.flex_completions, nr, now);
            } else {
                completions.inc(&mut w.completions, nr);
            }
            if let Some(d) = domains.get_mut(w.memcg as usize).filter(|_| w.memcg != 0) {
                // The memcg domain's share (`wb_domain_writeout_add` of `mem_cgroup_wb_domain`).
                d.completions.inc(&mut w.memcg_completions, nr, now);
            }
        }
        self.reclaim.nr_written += nr;
        if self.wake_page_waiters(f) {
            // The waiter retries the page itself (it is not on the LRU in the kernel).
            self.mm.frames.clear(f, pg::RECLAIM);
        } else if self.mm.frames.test_clear(f, pg::RECLAIM) {
            let l = self.mm.frames.lru[f];
            let dirty = self.mm.frames.test(f, pg::DIRTY);
            if l < mm::lru::NR_LRU_LISTS as u8 && l != mm::LruList::Unevictable as u8 && !dirty {
                let file = mm::LruList::from_u8(l).is_some_and(|l| l.is_file());
                let m = m as usize;
                let Mm { memcgs, frames, .. } = &mut self.mm;
                memcgs[m].lru.del(frames, f);
                frames.clear(f, pg::ACTIVE);
                memcgs[m].lru.add_tail(frames, f, mm::LruList::of(file, false));
                self.mm.count(Counter::PgRotated, m as u16, nr);
            }
        }
        if self.reclaim.nr_written >= self.reclaim.throttle_target {
            self.release_throttled();
        }
    }
}
