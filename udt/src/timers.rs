//! The I/O thread's timer queue: when each connection must next be served, so that a round
//! visits only the connections whose deadline has come (and those with other work, see
//! `mux/io_loop.rs`), not every connection.
//!
//! A min-heap of `(deadline, generation, connection id)` entries, plus each connection's one
//! valid entry (its deadline and generation). Re-arming a connection gives it a new generation
//! and pushes a new entry; the old one stays in the heap, stale, and is discarded when it
//! reaches the top (lazy invalidation), so re-arming and disarming cost O(log n) and nothing is
//! searched for.
//!
//! Invariants: a connection has at most one valid entry, and it is the deadline it was last
//! armed with; [`Timers::pop_due`] returns each valid entry once, in deadline order, and leaves
//! the connection disarmed (whoever serves it re-arms it). Stale entries never outnumber the
//! valid ones by more than [`SLACK`]: beyond that the heap is rebuilt from the valid entries
//! (O(n), paid for by the at least `n` re-arms that made them stale).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use udt_proto::{Instant, SocketId};

/// Stale entries the heap may hold beyond one per armed connection before it is rebuilt.
const SLACK: usize = 64;

/// The connections' deadlines.
#[derive(Debug, Default)]
pub(crate) struct Timers {
    /// Every entry pushed and not yet popped, the valid and the stale ones.
    heap: BinaryHeap<Reverse<(Instant, u64, SocketId)>>,
    /// Each armed connection's valid entry: its deadline and generation.
    armed: HashMap<SocketId, (Instant, u64)>,
    /// The generation the next entry gets (never reused, so a stale entry cannot match).
    next_generation: u64,
}

impl Timers {
    /// Serve connection `id` at `at` (`None`: no deadline). Replaces any earlier arming, later
    /// or earlier; arming at the deadline it already has changes nothing.
    pub fn arm(&mut self, id: SocketId, at: Option<Instant>) {
        let Some(at) = at else {
            self.armed.remove(&id);
            return;
        };
        if self.armed.get(&id).is_some_and(|&(t, _)| t == at) {
            return;
        }
        let generation = self.next_generation;
        self.next_generation += 1;
        self.armed.insert(id, (at, generation));
        self.heap.push(Reverse((at, generation, id)));
        if self.heap.len() > 2 * self.armed.len() + SLACK {
            self.compact();
        }
    }

    /// Forget connection `id`'s deadline (its entry, if any, goes stale).
    pub fn disarm(&mut self, id: SocketId) {
        self.armed.remove(&id);
    }

    /// The next connection whose deadline is at or before `now`, earliest first; disarmed.
    pub fn pop_due(&mut self, now: Instant) -> Option<SocketId> {
        while let Some(&Reverse((at, generation, id))) = self.heap.peek() {
            if at > now {
                return None;
            }
            self.heap.pop();
            if self.armed.get(&id) == Some(&(at, generation)) {
                self.armed.remove(&id);
                return Some(id);
            }
        }
        None
    }

    /// The earliest deadline (stale entries on top are dropped on the way).
    pub fn next(&mut self) -> Option<Instant> {
        while let Some(&Reverse((at, generation, id))) = self.heap.peek() {
            if self.armed.get(&id) == Some(&(at, generation)) {
                return Some(at);
            }
            self.heap.pop();
        }
        None
    }

    /// The deadline connection `id` is armed with.
    #[cfg(test)]
    pub fn deadline(&self, id: SocketId) -> Option<Instant> {
        self.armed.get(&id).map(|&(at, _)| at)
    }

    /// Entries in the heap, stale ones included.
    #[cfg(test)]
    fn heap_len(&self) -> usize {
        self.heap.len()
    }

    /// Rebuild the heap from the valid entries.
    fn compact(&mut self) {
        self.heap = self.armed.iter().map(|(&id, &(at, generation))| Reverse((at, generation, id))).collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Instant {
        Instant::from_micros(ms * 1000)
    }

    fn id(n: u32) -> SocketId {
        SocketId(n)
    }

    fn drain(timers: &mut Timers, now: Instant) -> Vec<SocketId> {
        std::iter::from_fn(|| timers.pop_due(now)).collect()
    }

    #[test]
    fn due_connections_come_in_deadline_order_and_only_once() {
        let mut timers = Timers::default();
        timers.arm(id(1), Some(t(30)));
        timers.arm(id(2), Some(t(10)));
        timers.arm(id(3), Some(t(20)));
        timers.arm(id(4), Some(t(50)));
        assert_eq!(timers.next(), Some(t(10)));
        assert_eq!(timers.pop_due(t(5)), None, "nothing is due before the first deadline");
        assert_eq!(drain(&mut timers, t(30)), [id(2), id(3), id(1)]);
        // Popped means disarmed: not returned again until re-armed.
        assert_eq!(drain(&mut timers, t(40)), []);
        assert_eq!(timers.deadline(id(2)), None);
        assert_eq!(timers.next(), Some(t(50)));
        assert_eq!(drain(&mut timers, t(50)), [id(4)]);
        assert_eq!(timers.next(), None);
    }

    #[test]
    fn a_later_arming_makes_the_earlier_entry_stale() {
        let mut timers = Timers::default();
        timers.arm(id(1), Some(t(10)));
        timers.arm(id(1), Some(t(40)));
        timers.arm(id(2), Some(t(20)));
        // The entry at 10 ms is stale: the next deadline is the other connection's.
        assert_eq!(timers.next(), Some(t(20)));
        assert_eq!(drain(&mut timers, t(30)), [id(2)]);
        assert_eq!(drain(&mut timers, t(40)), [id(1)]);
    }

    #[test]
    fn re_arming_to_an_earlier_deadline_fires_then_and_only_once() {
        let mut timers = Timers::default();
        timers.arm(id(1), Some(t(100)));
        timers.arm(id(2), Some(t(50)));
        timers.arm(id(1), Some(t(10)));
        assert_eq!(timers.next(), Some(t(10)));
        assert_eq!(drain(&mut timers, t(10)), [id(1)]);
        // Its old entry at 100 ms is stale: only the other connection remains.
        assert_eq!(drain(&mut timers, t(1000)), [id(2)]);
        assert_eq!(timers.next(), None);
    }

    #[test]
    fn arming_the_same_deadline_again_adds_no_entry() {
        let mut timers = Timers::default();
        for _ in 0..10 {
            timers.arm(id(1), Some(t(10)));
        }
        assert_eq!(timers.heap_len(), 1);
        assert_eq!(drain(&mut timers, t(10)), [id(1)]);
    }

    #[test]
    fn a_disarmed_or_removed_connection_never_comes_due() {
        let mut timers = Timers::default();
        timers.arm(id(1), Some(t(10)));
        timers.arm(id(2), Some(t(20)));
        timers.arm(id(3), Some(t(30)));
        timers.disarm(id(1));
        timers.arm(id(3), None);
        assert_eq!(timers.next(), Some(t(20)));
        assert_eq!(drain(&mut timers, t(100)), [id(2)]);
        // Armed again after removal: a new entry, which counts.
        timers.arm(id(1), Some(t(200)));
        assert_eq!(drain(&mut timers, t(200)), [id(1)]);
    }

    #[test]
    fn stale_entries_stay_bounded() {
        let mut timers = Timers::default();
        for n in 0..10 {
            timers.arm(id(n), Some(t(1_000)));
        }
        // Ten thousand re-armings, each making the previous entry stale.
        for k in 0..10_000u64 {
            timers.arm(id((k % 10) as u32), Some(t(1_001 + k)));
        }
        assert!(timers.heap_len() <= 2 * 10 + SLACK + 1, "heap of {}", timers.heap_len());
        // Each connection comes due once, at its last deadline.
        let due = drain(&mut timers, t(1_000_000));
        let mut sorted = due.clone();
        sorted.sort();
        assert_eq!(sorted, (0..10).map(id).collect::<Vec<_>>());
        assert_eq!(due, (0..10).map(id).collect::<Vec<_>>(), "in deadline order");
    }
}
