//! Where page I/O meets the device models: submitting a page read or write to a device
//! queue inside the current plug (`submit_bio`, `blk_finish_plug`), the completion events
//! the queue's dispatches become, the device scheduler's timers, threads sleeping for a
//! free request (`get_request_wait`), and the end of each I/O: `folio_end_read` (the page
//! unlocks, its waiters wake) and `folio_end_writeback` (a waiting reclaimer wakes, or a
//! PG_reclaim page rotates to the inactive tail, `folio_rotate_reclaimable`). The device
//! timing models are in device/.

use crate::device::{Dispatched, IoDir};
use crate::engine::event::Event;
use crate::engine::{PageIo, Sim, TaskState};
use crate::mm::vmstat::Counter;
use crate::mm::{self, pg, NIL};

impl Sim {
    /// Queues a page I/O on device `dev` at byte `offset` (inside the current plug).
    pub fn submit_bio(&mut self, dev: u32, offset: u64, frame: u32, dir: IoDir) {
        let tag = match self.free_ios.pop() {
            Some(t) => {
                self.ios[t as usize] = PageIo { frame, dir };
                t
            }
            None => {
                self.ios.push(PageIo { frame, dir });
                (self.ios.len() - 1) as u32
            }
        };
        let mut out = std::mem::take(&mut self.scratch_dispatch);
        let q = &mut self.devices[dev as usize];
        q.set_ctx(self.io_ctx);
        q.add(dir, offset, 4096, tag, self.now, &mut out);
        self.device_ran(dev, &mut out);
        self.scratch_dispatch = out;
    }

    /// Releases the plug of device `dev` (`blk_finish_plug`).
    pub fn unplug(&mut self, dev: u32) {
        let mut out = std::mem::take(&mut self.scratch_dispatch);
        self.devices[dev as usize].unplug(self.now, &mut out);
        self.device_ran(dev, &mut out);
        self.scratch_dispatch = out;
    }

    /// After device `dev` ran its queue: completion events for what it dispatched, an
    /// event for its scheduler timer, a woken `congestion_wait` if its write congestion
    /// cleared, and the first thread waiting for one of its requests if there is room.
    fn device_ran(&mut self, dev: u32, out: &mut Vec<Dispatched>) {
        for d in out.drain(..) {
            self.events.push(d.done_ns, Event::IoDone { dev, rid: d.rid });
        }
        let q = &mut self.devices[dev as usize];
        let t = q.timer_at();
        if let Some(at) = t.filter(|&at| Some(at) != self.dev_timer[dev as usize]) {
            self.events.push(at, Event::DevTimer { dev });
        }
        self.dev_timer[dev as usize] = t;
        // A write request freed below the congestion-off threshold: clear_bdi_congested
        // wakes the congestion_wait queue and kswapd's nap ends.
        if q.take_congestion_wakeup() && self.kswapd.napping {
            self.kswapd.napping = false;
            self.vmstat.add(Counter::KswapdCongestionWaitWoken, 1);
            let k = self.kswapd_thread();
            self.wake(k, self.now);
        }
        if !self.devices[dev as usize].write_full() {
            if let Some(i) = self.req_waiters.iter().position(|&(_, d)| d == dev) {
                let (th, _) = self.req_waiters.remove(i);
                if th == self.kswapd_thread() {
                    self.kswapd.throttled = false;
                } else {
                    self.tasks[th as usize].state = TaskState::Runnable;
                }
                self.wake(th, self.now);
            }
        }
    }

    /// A device timer event: stale if the timer was cancelled or moved later since. (The
    /// clock may already be past the timer when a thread's burst overran the event.)
    pub(crate) fn dev_timer_fired(&mut self, dev: u32) {
        if self.dev_timer[dev as usize].is_none_or(|t| t > self.now) {
            return;
        }
        self.dev_timer[dev as usize] = None;
        let mut out = std::mem::take(&mut self.scratch_dispatch);
        self.devices[dev as usize].timer(self.now, &mut out);
        self.device_ran(dev, &mut out);
        self.scratch_dispatch = out;
    }

    /// The first device whose write requests are all allocated, if any.
    pub fn write_full_device(&self) -> Option<u32> {
        self.devices.iter().position(|q| q.write_full()).map(|d| d as u32)
    }

    /// Blocks thread `th` in `get_request_wait` until device `dev` frees a write request.
    pub fn get_request_wait(&mut self, th: u32, dev: u32) {
        if th == self.kswapd_thread() {
            self.kswapd.throttled = true;
        } else {
            self.tasks[th as usize].state = TaskState::WaitRequest;
        }
        self.block(th);
        self.req_waiters.push((th, dev));
    }

    /// Unplugs every device.
    pub fn unplug_all(&mut self) {
        for d in 0..self.devices.len() as u32 {
            self.unplug(d);
        }
    }

    pub(crate) fn io_done(&mut self, dev: u32, rid: u32) {
        let mut tags = std::mem::take(&mut self.scratch_tags);
        let mut out = std::mem::take(&mut self.scratch_dispatch);
        self.devices[dev as usize].complete(self.now, rid, &mut tags, &mut out);
        self.device_ran(dev, &mut out);
        self.scratch_dispatch = out;
        for &tag in &tags {
            let io = self.ios[tag as usize];
            self.free_ios.push(tag);
            match io.dir {
                IoDir::Read => self.folio_end_read(io.frame),
                IoDir::Write => self.folio_end_writeback(io.frame),
            }
        }
        tags.clear();
        self.scratch_tags = tags;
    }

    /// A swap read completed: the page is uptodate and unlocked; waiters wake.
    fn folio_end_read(&mut self, f: u32) {
        self.frames.clear(f, pg::LOCKED);
        for tid in 0..self.tasks.len() {
            let t = &mut self.tasks[tid];
            if t.state == TaskState::WaitPage && t.wait_frame == f {
                t.state = TaskState::Runnable;
                t.wait_frame = NIL;
                self.wake(tid as u32, self.now);
            }
        }
    }

    /// A swap write completed (`folio_end_writeback`): a reclaimer waiting for it (cgroup v1
    /// limit reclaim, `folio_wait_writeback`) wakes; otherwise, with PG_reclaim, the page is
    /// rotated to the inactive tail for immediate reclaim (`folio_rotate_reclaimable`).
    fn folio_end_writeback(&mut self, f: u32) {
        self.frames.clear(f, pg::WRITEBACK);
        self.nr_writeback -= 1;
        self.nr_written += 1;
        let mut waited = false;
        for tid in 0..self.tasks.len() {
            let t = &mut self.tasks[tid];
            if t.state == TaskState::WaitPage && t.wait_frame == f {
                t.state = TaskState::Runnable;
                t.wait_frame = NIL;
                waited = true;
                self.wake(tid as u32, self.now);
            }
        }
        if waited {
            // The waiter retries the page itself (it is not on the LRU in the kernel).
            self.frames.clear(f, pg::RECLAIM);
        } else if self.frames.test_clear(f, pg::RECLAIM) {
            let l = self.frames.lru[f as usize];
            let dirty = self.frames.test(f, pg::DIRTY);
            if l < mm::lru::NR_LRU_LISTS as u8 && l != mm::LruList::Unevictable as u8 && !dirty {
                let m = self.frames.memcg[f as usize] as usize;
                let Sim { memcgs, frames, .. } = self;
                memcgs[m].lru.del(frames, f);
                frames.clear(f, pg::ACTIVE);
                memcgs[m].lru.add_tail(frames, f, mm::LruList::InactiveAnon);
                self.count(Counter::PgRotated, m as u16, 1);
            }
        }
        if self.nr_written >= self.throttle_target {
            self.release_throttled();
        }
    }
}
