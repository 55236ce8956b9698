//! The event queue: ordered by (time, sequence number), so events at equal times run in
//! insertion order and a run is reproducible bit for bit.

use crate::ids::{DevId, Tid};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What happens at an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// A thread (task or kswapd) becomes runnable.
    Run { thread: Tid, token: u32 },
    /// A device completes request `rid`.
    IoDone { dev: DevId, rid: u32 },
    /// A device's I/O scheduler timer (CFQ's idle window) may have expired.
    DevTimer { dev: DevId },
}

#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<(u64, u64, Event)>>,
    seq: u64,
}

impl EventQueue {
    pub fn push(&mut self, time: u64, ev: Event) {
        self.seq += 1;
        self.heap.push(Reverse((time, self.seq, ev)));
    }

    pub fn pop(&mut self) -> Option<(u64, Event)> {
        self.heap.pop().map(|Reverse((t, _, e))| (t, e))
    }

    /// Takes the next event with its sequence number, to put it back later with
    /// [`EventQueue::restore`] in the same place.
    pub fn pop_entry(&mut self) -> Option<(u64, u64, Event)> {
        self.heap.pop().map(|Reverse(e)| e)
    }

    /// Puts back an event taken with [`EventQueue::pop_entry`]: it keeps its place among
    /// events of its time.
    pub fn restore(&mut self, e: (u64, u64, Event)) {
        self.heap.push(Reverse(e));
    }

    /// The next event without taking it.
    #[inline]
    pub fn peek(&self) -> Option<(u64, Event)> {
        self.heap.peek().map(|Reverse((t, _, e))| (*t, *e))
    }

    /// Time of the next event, or `u64::MAX`.
    #[inline]
    pub fn next_time(&self) -> u64 {
        self.heap.peek().map_or(u64::MAX, |Reverse((t, _, _))| *t)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_times_keep_insertion_order() {
        let mut q = EventQueue::default();
        q.push(5, Event::Run { thread: Tid(2), token: 0 });
        q.push(3, Event::Run { thread: Tid(9), token: 0 });
        q.push(5, Event::Run { thread: Tid(1), token: 0 });
        assert_eq!(q.next_time(), 3);
        assert_eq!(q.pop(), Some((3, Event::Run { thread: Tid(9), token: 0 })));
        assert_eq!(q.pop(), Some((5, Event::Run { thread: Tid(2), token: 0 })));
        assert_eq!(q.pop(), Some((5, Event::Run { thread: Tid(1), token: 0 })));
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn an_event_taken_and_restored_keeps_its_place() {
        let mut q = EventQueue::default();
        q.push(5, Event::Run { thread: Tid(2), token: 0 });
        q.push(5, Event::DevTimer { dev: DevId(0) });
        q.push(5, Event::Run { thread: Tid(1), token: 0 });
        let first = q.pop_entry().unwrap();
        let timer = q.pop().unwrap();
        assert_eq!(timer.1, Event::DevTimer { dev: DevId(0) });
        q.restore(first);
        assert_eq!(q.pop(), Some((5, Event::Run { thread: Tid(2), token: 0 })), "still before the later push");
        assert_eq!(q.pop(), Some((5, Event::Run { thread: Tid(1), token: 0 })));
    }
}
