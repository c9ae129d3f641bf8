//! A one-way link: output queue, serialisation at the link rate, propagation delay, random loss
//! and other impairments, and the routing of what comes out of it.
//!
//! On arrival a packet is checked against the MTU, offered to the queue discipline, and, if
//! accepted, scheduled: its serialisation starts when the previous one ends and lasts its wire
//! size over the rate; it reaches the next node one propagation delay after that. Random loss,
//! corruption, reordering and duplication are applied to packets that made it onto the wire,
//! so a lost packet still used the capacity, like an error on the physical link. A link without
//! a rate is infinitely fast and never queues.
//!
//! Invariants: serialisations never overlap and start in arrival order; the accumulated
//! serialisation time is exact in the long run (the sub-nanosecond remainder is carried); only
//! the next node is told about a packet, at the time it arrives there; a link has no wake-ups.

pub mod impair;
pub mod loss;
pub mod queue;

use std::time::Duration;

use udt_proto::Instant;

use crate::node::{Cx, Node, Route};
use crate::packet::Datagram;
use crate::pcap::PcapWriter;
use crate::rng::{chance, SimRng};

pub use impair::Impairments;
pub use loss::{GilbertElliott, LossModel};
pub use queue::{bdp_packets, QueueConfig, RedConfig};

use queue::{Backlog, Queue, Verdict};

/// Everything that describes a one-way link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkConfig {
    /// Bits per second of IP packets (headers included); `None` is infinitely fast.
    pub rate_bps: Option<u64>,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Queue discipline of the output buffer (unused without a rate).
    pub queue: QueueConfig,
    /// Random loss on the wire.
    pub loss: LossModel,
    /// Reordering, duplication and corruption.
    pub impair: Impairments,
    /// Largest IP packet carried; larger ones are dropped (no fragmentation).
    pub mtu: Option<usize>,
}

impl LinkConfig {
    /// An infinitely fast link with no delay and no impairment: routing skips it.
    pub fn ideal() -> Self {
        LinkConfig {
            rate_bps: None,
            delay: Duration::ZERO,
            queue: QueueConfig::DropTailPackets(usize::MAX),
            loss: LossModel::None,
            impair: Impairments::default(),
            mtu: None,
        }
    }

    /// A pure delay: infinitely fast, `delay` long.
    pub fn delay(delay: Duration) -> Self {
        LinkConfig { delay, ..LinkConfig::ideal() }
    }

    /// A link of `rate_bps` and `delay` with a DropTail queue of `queue_pkts` packets.
    pub fn new(rate_bps: u64, delay: Duration, queue_pkts: usize) -> Self {
        LinkConfig {
            rate_bps: Some(rate_bps),
            delay,
            queue: QueueConfig::DropTailPackets(queue_pkts),
            ..LinkConfig::ideal()
        }
    }

    /// Whether a packet crosses the link in zero time untouched (so it need not exist).
    pub fn is_ideal(&self) -> bool {
        self.rate_bps.is_none()
            && self.delay.is_zero()
            && self.loss == LossModel::None
            && self.impair.is_none()
            && self.mtu.is_none()
    }
}

/// Counters of a link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LinkStats {
    /// Packets offered to the link.
    pub arrivals: u64,
    /// Packets that went onto the wire.
    pub sent: u64,
    /// Wire bytes that went onto the wire.
    pub bytes_sent: u64,
    /// Dropped because the buffer was full.
    pub queue_drops: u64,
    /// Dropped early by RED.
    pub early_drops: u64,
    /// Lost on the wire (random loss).
    pub lost: u64,
    /// UDT data packets among the queue, early and random drops (datagrams whose first header
    /// bit is clear, the data flag of UDT's header).
    pub data_drops: u64,
    /// Dropped for exceeding the MTU.
    pub mtu_drops: u64,
    /// Corrupted.
    pub corrupted: u64,
    /// Reordered (held back).
    pub reordered: u64,
    /// Duplicated.
    pub duplicated: u64,
    /// Packets with no route beyond the link.
    pub no_route: u64,
    /// Most packets waiting at once.
    pub max_waiting: u64,
}

/// A one-way link node.
pub struct Link {
    name: String,
    config: LinkConfig,
    next: Route,
    busy_until: u64,
    /// Sub-nanosecond remainder of serialisation times, in units of 1/rate ns.
    carry: u64,
    backlog: Backlog,
    queue: Queue,
    loss: loss::LossState,
    rng: SimRng,
    stats: LinkStats,
    pcap: Option<PcapWriter>,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link").field("name", &self.name).field("stats", &self.stats).finish_non_exhaustive()
    }
}

impl Link {
    /// A link named `name` with `config`, forwarding along `next`, drawing from `rng`.
    pub fn new(name: impl Into<String>, config: LinkConfig, next: Route, rng: SimRng) -> Self {
        Link {
            name: name.into(),
            config,
            next,
            busy_until: 0,
            carry: 0,
            backlog: Backlog::default(),
            queue: Queue::new(config.queue),
            loss: loss::LossState::new(config.loss),
            rng,
            stats: LinkStats::default(),
            pcap: None,
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its configuration.
    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    /// Where packets go after the link.
    pub fn route(&self) -> &Route {
        &self.next
    }

    /// Counters.
    pub fn stats(&self) -> LinkStats {
        self.stats
    }

    /// RED's average queue in packets (0 for DropTail).
    pub fn red_average(&self) -> f64 {
        self.queue.average()
    }

    /// Write every packet that goes onto the wire to `pcap`.
    pub fn capture(&mut self, pcap: PcapWriter) {
        self.pcap = Some(pcap);
    }

    /// Stop capturing; returns the writer (flush it to see write errors).
    pub fn take_capture(&mut self) -> Option<PcapWriter> {
        self.pcap.take()
    }

    /// Count `d`, being dropped, in [`LinkStats::data_drops`] if it is a UDT data packet.
    fn count_data_drop(&mut self, d: &Datagram) {
        if d.payload().first().is_some_and(|b| b & 0x80 == 0) {
            self.stats.data_drops += 1;
        }
    }

    /// Serialisation time of `bytes` in ns, carrying the remainder.
    fn serialisation_ns(&mut self, rate: u64, bytes: usize) -> u64 {
        let num = bytes as u64 * 8 * 1_000_000_000 + self.carry;
        self.carry = num % rate;
        num / rate
    }
}

impl Node for Link {
    fn on_datagram(&mut self, now: Instant, mut d: Datagram, cx: &mut Cx<'_>) {
        self.stats.arrivals += 1;
        let wire = d.wire_len();
        // A bulk flow's control bytes (a TCP connection, see `crate::bulk`) queue and take
        // their serialization time like any packet, but are never dropped, lost or impaired.
        let reliable = d.side_channel.is_some();
        if !reliable && self.config.mtu.is_some_and(|mtu| wire > mtu) {
            self.stats.mtu_drops += 1;
            cx.recycle(d);
            return;
        }
        let now_ns = now.as_nanos();
        let on_wire = match self.config.rate_bps {
            None => now_ns,
            Some(rate) => {
                self.backlog.drain(now_ns);
                let (waiting, waiting_bytes) = self.backlog.waiting(now_ns);
                let idle = self
                    .backlog
                    .is_empty()
                    .then(|| Duration::from_nanos(now_ns.saturating_sub(self.busy_until)));
                let verdict = if reliable {
                    Verdict::Accept
                } else {
                    self.queue.admit(waiting, waiting_bytes, wire, idle, &mut self.rng)
                };
                match verdict {
                    Verdict::Accept => {}
                    Verdict::Full => {
                        self.stats.queue_drops += 1;
                        self.count_data_drop(&d);
                        cx.recycle(d);
                        return;
                    }
                    Verdict::Early => {
                        self.stats.early_drops += 1;
                        self.count_data_drop(&d);
                        cx.recycle(d);
                        return;
                    }
                }
                let start = now_ns.max(self.busy_until);
                let end = start + self.serialisation_ns(rate.max(1), wire);
                self.busy_until = end;
                self.backlog.push(start, end, wire as u32);
                let queued = waiting as u64 + u64::from(start > now_ns);
                self.stats.max_waiting = self.stats.max_waiting.max(queued);
                end
            }
        };
        self.stats.sent += 1;
        self.stats.bytes_sent += wire as u64;
        if let Some(p) = self.pcap.as_mut() {
            p.write(Instant::from_nanos(on_wire), &d);
        }
        if reliable {
            match self.next.next(d.dst.host) {
                Some(next) => cx.send(Instant::from_nanos(on_wire) + self.config.delay, next, d),
                None => {
                    self.stats.no_route += 1;
                    cx.recycle(d);
                }
            }
            return;
        }
        if self.loss.lose(&mut self.rng) {
            self.stats.lost += 1;
            self.count_data_drop(&d);
            cx.recycle(d);
            return;
        }
        let imp = self.config.impair;
        if chance(&mut self.rng, imp.corrupt) {
            impair::corrupt(&mut d, &mut self.rng);
            self.stats.corrupted += 1;
        }
        let mut arrive = Instant::from_nanos(on_wire) + self.config.delay;
        if chance(&mut self.rng, imp.reorder) {
            arrive += imp.reorder_delay;
            self.stats.reordered += 1;
        }
        let Some(next) = self.next.next(d.dst.host) else {
            self.stats.no_route += 1;
            cx.recycle(d);
            return;
        };
        let dup = chance(&mut self.rng, imp.duplicate).then(|| cx.pool().duplicate(&d));
        cx.send(arrive, next, d);
        if let Some(copy) = dup {
            self.stats.duplicated += 1;
            cx.send(arrive, next, copy);
        }
    }

    fn on_wake(&mut self, _now: Instant, _cx: &mut Cx<'_>) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{AnyNode, Sim};
    use crate::node::NodeId;
    use crate::packet::Addr;
    use crate::rng::stream;

    /// Records arrival times.
    struct Recorder(std::sync::Arc<std::sync::Mutex<Vec<(u64, usize)>>>);

    impl Node for Recorder {
        fn on_datagram(&mut self, now: Instant, d: Datagram, cx: &mut Cx<'_>) {
            self.0.lock().unwrap().push((now.as_nanos(), d.len()));
            cx.recycle(d);
        }
        fn on_wake(&mut self, _: Instant, _: &mut Cx<'_>) {}
    }

    /// Sends `n` packets of 1472 bytes at time zero into node 1.
    struct Burst(usize);

    impl Node for Burst {
        fn on_datagram(&mut self, _: Instant, d: Datagram, cx: &mut Cx<'_>) {
            cx.recycle(d);
        }
        fn on_wake(&mut self, _: Instant, _: &mut Cx<'_>) {}
        fn on_start(&mut self, now: Instant, cx: &mut Cx<'_>) {
            for _ in 0..self.0 {
                let d = cx.pool().datagram(Addr::default(), Addr::default(), &[0u8; 1472]);
                cx.send(now, NodeId(1), d);
            }
        }
    }

    #[test]
    fn serialises_queues_and_delays() {
        let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut sim = Sim::new(1500);
        sim.add(AnyNode::Other(Box::new(Burst(5))));
        // 1500-byte packets at 1 Gb/s take 12 us; 1 ms delay; 3 may wait beside the one on the wire.
        let cfg = LinkConfig::new(1_000_000_000, Duration::from_millis(1), 3);
        sim.add(AnyNode::Link(Box::new(Link::new("l", cfg, Route::To(NodeId(2)), stream(1, 1)))));
        sim.add(AnyNode::Other(Box::new(Recorder(got.clone()))));
        sim.run_until(Instant::from_micros(10_000));
        let got = got.lock().unwrap().clone();
        let times: Vec<u64> = got.iter().map(|&(t, _)| t).collect();
        assert_eq!(times, vec![1_012_000, 1_024_000, 1_036_000, 1_048_000]);
        let s = sim.link(NodeId(1)).unwrap().stats();
        assert_eq!((s.arrivals, s.sent, s.queue_drops, s.max_waiting, s.data_drops), (5, 4, 1, 3, 1));
    }

    #[test]
    fn serialisation_is_exact_in_the_long_run() {
        let cfg = LinkConfig::new(155_520_000, Duration::ZERO, 10);
        let mut l = Link::new("oc3", cfg, Route::To(NodeId(0)), stream(1, 1));
        let total: u64 = (0..155_520).map(|_| l.serialisation_ns(155_520_000, 1500)).sum();
        // 155,520 packets of 12,000 bits on 155.52 Mb/s take exactly 12 s.
        assert_eq!(total, 12_000_000_000);
    }
}
