//! The discrete-event engine: nodes, a time-ordered event queue, and virtual time.
//!
//! Two kinds of event: a datagram reaching a node, and a node's wake-up. Events run in the
//! order of (time, sequence number); the sequence number is taken when an event is queued, so
//! events due at the same instant run in the order they were created, and the whole run is a
//! function of the seed. Time jumps from one event to the next.
//!
//! Queue: what one node sends is almost always in time order (a link's arrivals follow its
//! serialisation order; a host sends at `now`), so each node has a FIFO lane of the datagrams it
//! sent, and only the head of each lane sits in a binary heap (with wake-ups and the rare
//! datagram sent earlier than its lane's tail, e.g. a reordered one, which goes to the heap
//! directly). Within a lane both time and sequence number grow, so its head is its minimum and
//! the order is exactly that of one heap over all events; the heap stays as small as the number
//! of nodes instead of the number of packets in flight.
//!
//! Datagrams waiting in the heap live in a slab (heap entries are 32 bytes), and their buffers
//! come from one [`BufPool`], so a steady simulation allocates nothing per packet.
//!
//! Invariants: `now` never goes backwards; each node has at most one live wake-up (a newer
//! request makes the queued one stale, recognised by its sequence number and skipped); every
//! delivery is mixed into the trace hash (time, node, length and the first 16 bytes), so two
//! runs with equal hashes delivered the same datagrams to the same nodes at the same times.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use udt_proto::Instant;

use crate::host::Host;
use crate::link::Link;
use crate::node::{Cx, Node, NodeId};
use crate::packet::{BufPool, Datagram};

/// A node of any kind. Hosts and links are concrete so that their statistics can be read after
/// a run; anything else with the node shape fits in `Other`.
pub enum AnyNode {
    /// An end host running UDT endpoints and traffic sources.
    Host(Box<Host>),
    /// A one-way link with a queue and impairments.
    Link(Box<Link>),
    /// Any other node.
    Other(Box<dyn Node>),
}

impl AnyNode {
    fn node(&mut self) -> &mut dyn Node {
        match self {
            AnyNode::Host(h) => &mut **h,
            AnyNode::Link(l) => &mut **l,
            AnyNode::Other(n) => &mut **n,
        }
    }
}

/// Slab index meaning "this event is a wake-up".
const WAKE: u32 = u32::MAX;
/// Lane meaning "not the head of a lane".
const NO_LANE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Event {
    at: u64,
    seq: u64,
    target: u32,
    slot: u32,
    /// The node whose lane this event heads, or [`NO_LANE`].
    lane: u32,
}

/// A datagram waiting in a lane.
#[derive(Debug)]
struct Pending {
    at: u64,
    seq: u64,
    target: u32,
    d: Datagram,
}

impl Ord for Event {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest event first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.at.cmp(&self.at).then_with(|| other.seq.cmp(&self.seq))
    }
}

impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A node's live wake-up: its time and the sequence number of its queued event (0 = none).
#[derive(Clone, Copy, Debug, Default)]
struct Wake {
    at: u64,
    seq: u64,
}

/// Counters of the engine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Events popped from the queue (stale wake-ups included).
    pub events: u64,
    /// Datagrams handed to a node.
    pub deliveries: u64,
    /// Wake-ups delivered.
    pub wakes: u64,
    /// Wake-ups skipped because a newer request replaced them.
    pub stale_wakes: u64,
    /// Datagrams sent to no node (no route).
    pub unroutable: u64,
    /// Largest size of the heap plus the lane of the node that just ran (an indication of the
    /// events in flight).
    pub max_queue: u64,
}

/// A simulation: nodes, events and virtual time.
pub struct Sim {
    now: Instant,
    started: bool,
    nodes: Vec<AnyNode>,
    wakes: Vec<Wake>,
    heap: BinaryHeap<Event>,
    lanes: Vec<std::collections::VecDeque<Pending>>,
    slab: Vec<Datagram>,
    free_slots: Vec<u32>,
    seq: u64,
    pool: BufPool,
    sends: Vec<(Instant, NodeId, Datagram)>,
    stats: EngineStats,
    trace: u64,
}

impl std::fmt::Debug for Sim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim")
            .field("now", &self.now)
            .field("nodes", &self.nodes.len())
            .field("queued", &self.heap.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Sim {
    /// An empty simulation at time zero whose datagram buffers hold `max_datagram` bytes.
    pub fn new(max_datagram: usize) -> Self {
        Sim {
            now: Instant::ZERO,
            started: false,
            nodes: Vec::new(),
            wakes: Vec::new(),
            heap: BinaryHeap::new(),
            lanes: Vec::new(),
            slab: Vec::new(),
            free_slots: Vec::new(),
            seq: 0,
            pool: BufPool::new(max_datagram),
            sends: Vec::new(),
            stats: EngineStats::default(),
            trace: 0xcbf2_9ce4_8422_2325,
        }
    }

    /// Add a node; returns its id.
    pub fn add(&mut self, node: AnyNode) -> NodeId {
        self.nodes.push(node);
        self.wakes.push(Wake::default());
        self.lanes.push(std::collections::VecDeque::new());
        NodeId(self.nodes.len() as u32 - 1)
    }

    /// The node `id`.
    pub fn node(&self, id: NodeId) -> Option<&AnyNode> {
        self.nodes.get(id.0 as usize)
    }

    /// The node `id`, mutable (configure between runs).
    pub fn node_mut(&mut self, id: NodeId) -> Option<&mut AnyNode> {
        self.nodes.get_mut(id.0 as usize)
    }

    /// The host `id`, if it is one.
    pub fn host(&self, id: NodeId) -> Option<&Host> {
        match self.node(id) {
            Some(AnyNode::Host(h)) => Some(h),
            _ => None,
        }
    }

    /// The link `id`, if it is one.
    pub fn link(&self, id: NodeId) -> Option<&Link> {
        match self.node(id) {
            Some(AnyNode::Link(l)) => Some(l),
            _ => None,
        }
    }

    /// The link `id`, mutable (e.g. to attach a PCAP writer).
    pub fn link_mut(&mut self, id: NodeId) -> Option<&mut Link> {
        match self.node_mut(id) {
            Some(AnyNode::Link(l)) => Some(l),
            _ => None,
        }
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Current virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Engine counters.
    pub fn stats(&self) -> EngineStats {
        self.stats
    }

    /// Hash of every delivery so far (time, node, length, first 16 bytes).
    pub fn trace_hash(&self) -> u64 {
        self.trace
    }

    /// Events waiting.
    pub fn queued(&self) -> usize {
        self.heap.len() + self.lanes.iter().map(|l| l.len().saturating_sub(1)).sum::<usize>()
    }

    /// Give every node its start call (done by the first `run_until` if not called).
    pub fn start(&mut self) {
        if self.started {
            return;
        }
        self.started = true;
        for i in 0..self.nodes.len() {
            let mut cx = Cx::new(self.now, &mut self.pool, &mut self.sends);
            self.nodes[i].node().on_start(self.now, &mut cx);
            let wake = cx.wake;
            self.apply(i, wake);
        }
    }

    /// Process every event due at or before `until`; then `now` is `until`.
    pub fn run_until(&mut self, until: Instant) {
        self.start();
        let limit = until.as_nanos();
        while let Some(top) = self.heap.peek() {
            if top.at > limit {
                break;
            }
            let Some(ev) = self.heap.pop() else { break };
            self.step(ev);
        }
        if until > self.now {
            self.now = until;
        }
    }

    fn step(&mut self, ev: Event) {
        self.stats.events += 1;
        let now = Instant::from_nanos(ev.at);
        self.now = now;
        let idx = ev.target as usize;
        let mut cx = Cx::new(now, &mut self.pool, &mut self.sends);
        if ev.slot == WAKE {
            let w = &mut self.wakes[idx];
            if w.seq != ev.seq {
                self.stats.stale_wakes += 1;
                return;
            }
            w.seq = 0;
            self.stats.wakes += 1;
            self.nodes[idx].node().on_wake(now, &mut cx);
        } else {
            let d = if ev.lane == NO_LANE {
                let d = std::mem::take(&mut self.slab[ev.slot as usize]);
                self.free_slots.push(ev.slot);
                d
            } else {
                let lane = &mut self.lanes[ev.lane as usize];
                let Some(p) = lane.pop_front() else { return };
                if let Some(next) = lane.front() {
                    let e = Event { at: next.at, seq: next.seq, target: next.target, slot: 0, lane: ev.lane };
                    self.heap.push(e);
                }
                p.d
            };
            self.stats.deliveries += 1;
            self.trace = mix(self.trace, ev.at, ev.target, &d);
            self.nodes[idx].node().on_datagram(now, d, &mut cx);
        }
        let wake = cx.wake;
        self.apply(idx, wake);
    }

    /// Queue what node `idx` produced.
    fn apply(&mut self, idx: usize, wake: Option<Option<Instant>>) {
        let now = self.now.as_nanos();
        for (at, to, d) in self.sends.drain(..) {
            let target = to.0 as usize;
            if target >= self.nodes.len() {
                self.stats.unroutable += 1;
                self.pool.recycle(d);
                continue;
            }
            self.seq += 1;
            let at = at.as_nanos().max(now);
            let lane = &mut self.lanes[idx];
            if lane.back().is_none_or(|b| b.at <= at) {
                if lane.is_empty() {
                    self.heap.push(Event { at, seq: self.seq, target: to.0, slot: 0, lane: idx as u32 });
                }
                lane.push_back(Pending { at, seq: self.seq, target: to.0, d });
                continue;
            }
            let slot = match self.free_slots.pop() {
                Some(s) => {
                    self.slab[s as usize] = d;
                    s
                }
                None => {
                    self.slab.push(d);
                    self.slab.len() as u32 - 1
                }
            };
            self.heap.push(Event { at, seq: self.seq, target: to.0, slot, lane: NO_LANE });
        }
        match wake {
            None => {}
            Some(None) => self.wakes[idx].seq = 0,
            Some(Some(t)) => {
                let at = t.as_nanos().max(now);
                let w = &mut self.wakes[idx];
                if w.seq == 0 || w.at != at {
                    self.seq += 1;
                    *w = Wake { at, seq: self.seq };
                    self.heap.push(Event {
                        at,
                        seq: self.seq,
                        target: idx as u32,
                        slot: WAKE,
                        lane: NO_LANE,
                    });
                }
            }
        }
        let q = self.heap.len() as u64 + self.lanes[idx].len() as u64;
        if q > self.stats.max_queue {
            self.stats.max_queue = q;
        }
    }
}

/// Mix one delivery into the trace hash.
#[inline]
fn mix(h: u64, at: u64, target: u32, d: &Datagram) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let p = d.payload();
    let word = |i: usize| -> u64 {
        let mut b = [0u8; 8];
        let end = (i + 8).min(p.len());
        if i < end {
            b[..end - i].copy_from_slice(&p[i..end]);
        }
        u64::from_le_bytes(b)
    };
    let mut h = (h.rotate_left(5) ^ at).wrapping_mul(K);
    h = (h.rotate_left(5) ^ (u64::from(target) << 32 | p.len() as u64)).wrapping_mul(K);
    h = (h.rotate_left(5) ^ word(0)).wrapping_mul(K);
    (h.rotate_left(5) ^ word(8)).wrapping_mul(K)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Addr;

    /// Echoes each datagram back to node 0 one microsecond later, and wakes every 10 us.
    struct Echo {
        got: u32,
        woke: u32,
    }

    impl Node for Echo {
        fn on_datagram(&mut self, now: Instant, d: Datagram, cx: &mut Cx<'_>) {
            self.got += 1;
            if self.got < 5 {
                cx.send(now + std::time::Duration::from_micros(1), NodeId(0), d);
            } else {
                cx.recycle(d);
            }
        }
        fn on_wake(&mut self, now: Instant, cx: &mut Cx<'_>) {
            self.woke += 1;
            if self.woke < 3 {
                cx.set_wake(Some(now + std::time::Duration::from_micros(10)));
            }
        }
        fn on_start(&mut self, now: Instant, cx: &mut Cx<'_>) {
            let d = cx.pool().datagram(Addr::default(), Addr::default(), b"x");
            cx.send(now, NodeId(0), d);
            cx.set_wake(Some(now + std::time::Duration::from_micros(10)));
        }
    }

    /// Sends datagrams to node 1 at random times, mostly in order, sometimes earlier than the
    /// previous one (the heap path); node 1 records what arrives.
    struct Scatter {
        rng: crate::rng::SimRng,
        left: u32,
        last: u64,
        log: std::sync::Arc<std::sync::Mutex<Vec<(u64, u8)>>>,
        id: u8,
    }

    impl Node for Scatter {
        fn on_datagram(&mut self, now: Instant, d: Datagram, cx: &mut Cx<'_>) {
            self.log.lock().unwrap().push((now.as_nanos(), d.payload()[0]));
            cx.recycle(d);
        }
        fn on_wake(&mut self, now: Instant, cx: &mut Cx<'_>) {
            use rand_core::RngCore;
            if self.left == 0 {
                return;
            }
            self.left -= 1;
            let r = self.rng.next_u64();
            // Mostly later than the last one sent, sometimes earlier, sometimes equal.
            let at = match r % 8 {
                0 => self.last.saturating_sub(r % 5_000).max(now.as_nanos()),
                1 => self.last,
                _ => self.last.max(now.as_nanos()) + r % 3_000,
            };
            self.last = self.last.max(at);
            let d = cx.pool().datagram(Addr::default(), Addr::default(), &[self.id]);
            let to = if self.id == 0 { 2 } else { 0 };
            cx.send(Instant::from_nanos(at), NodeId(to), d);
            cx.set_wake(Some(now + std::time::Duration::from_nanos(r % 1_000)));
        }
        fn on_start(&mut self, now: Instant, cx: &mut Cx<'_>) {
            cx.set_wake(Some(now));
        }
    }

    #[test]
    fn lanes_keep_the_global_time_order() {
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut sim = Sim::new(8);
        for id in 0..3u8 {
            let rng = crate::rng::stream(5, u64::from(id));
            sim.add(AnyNode::Other(Box::new(Scatter { rng, left: 2_000, last: 0, log: log.clone(), id })));
        }
        sim.run_until(Instant::from_micros(1_000_000));
        let log = log.lock().unwrap();
        assert_eq!(log.len(), 6_000);
        assert!(log.windows(2).all(|w| w[0].0 <= w[1].0), "deliveries out of time order");
    }

    #[test]
    fn events_run_in_time_order_and_wakes_replace() {
        let mut sim = Sim::new(64);
        sim.add(AnyNode::Other(Box::new(Echo { got: 0, woke: 0 })));
        sim.run_until(Instant::from_micros(100));
        let s = sim.stats();
        assert_eq!(s.deliveries, 5);
        assert_eq!(s.wakes, 3);
        assert_eq!(sim.now(), Instant::from_micros(100));
        assert_eq!(sim.queued(), 0);
    }
}
