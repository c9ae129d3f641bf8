//! A one-way link node: `udt-link`'s model of a link (output queue, serialisation at the link
//! rate, propagation delay, random loss and other impairments) in the simulator's time, with
//! the simulator's concerns around it: counters, PCAP capture, the damage to a datagram's
//! bytes, and the routing of what comes out.
//!
//! On arrival a packet is checked against the MTU, offered to the queue discipline (whose limit
//! counts the packets waiting beside the one on the wire), and, if accepted, serialised after
//! the previous one; it reaches the next node one propagation delay after its serialisation
//! ends. Random loss, corruption, reordering and duplication are applied to packets that made
//! it onto the wire, so a lost packet still used the capacity, like an error on the physical
//! link. A link without a rate is infinitely fast and never queues. A datagram carrying a bulk
//! flow's side channel is never dropped, lost or impaired.
//!
//! Invariants: the model's time is nanoseconds since the simulation's time zero; only the next
//! node is told about a packet, at the time it arrives there; a link has no wake-ups; the
//! model's random draws, in their order, are the link's only use of its generator.

use std::time::Duration;

use udt_link::{flip_byte, Class, Dropped, LinkModel};
use udt_proto::Instant;

use crate::node::{Cx, Node, Route};
use crate::packet::Datagram;
use crate::pcap::PcapWriter;
use crate::rng::SimRng;

pub use udt_link::{
    bdp_packets, GilbertElliott, Impairments, Jitter, JitterDist, LinkConfig, LossModel, QueueConfig,
    RedConfig,
};

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
    next: Route,
    model: LinkModel,
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
            next,
            model: LinkModel::new(config, rng),
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
        self.model.config()
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
        self.model.red_average()
    }

    /// What its queue holds at `now` (not before the last arrival).
    pub fn occupancy(&self, now: Instant) -> udt_link::Occupancy {
        self.model.occupancy(Duration::from_nanos(now.as_nanos()))
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
}

impl Node for Link {
    fn on_datagram(&mut self, now: Instant, mut d: Datagram, cx: &mut Cx<'_>) {
        self.stats.arrivals += 1;
        let wire = d.wire_len();
        // A bulk flow's control bytes (a TCP connection, see `crate::bulk`) queue and take
        // their serialization time like any packet, but are never dropped, lost or impaired.
        let class = if d.side_channel.is_some() { Class::Reliable } else { Class::Ordinary };
        let on_wire = match self.model.handle_arrival(Duration::from_nanos(now.as_nanos()), wire, class) {
            Ok(on_wire) => on_wire,
            Err(why) => {
                match why {
                    Dropped::Mtu => self.stats.mtu_drops += 1,
                    Dropped::Early => self.stats.early_drops += 1,
                    Dropped::Full => self.stats.queue_drops += 1,
                    Dropped::Lost => self.stats.lost += 1,
                }
                if why != Dropped::Mtu {
                    self.count_data_drop(&d);
                }
                cx.recycle(d);
                return;
            }
        };
        self.stats.max_waiting = self.stats.max_waiting.max(on_wire.queued as u64);
        self.stats.sent += 1;
        self.stats.bytes_sent += wire as u64;
        if let Some(p) = self.pcap.as_mut() {
            p.write(instant(on_wire.at), &d);
        }
        if class == Class::Reliable {
            match self.next.next(d.dst.host) {
                Some(next) => cx.send(instant(self.model.propagate(on_wire.at)), next, d),
                None => {
                    self.stats.no_route += 1;
                    cx.recycle(d);
                }
            }
            return;
        }
        let delivery = match self.model.handle_on_wire(on_wire.at) {
            Ok(delivery) => delivery,
            Err(_) => {
                self.stats.lost += 1;
                self.count_data_drop(&d);
                cx.recycle(d);
                return;
            }
        };
        if let Some(word) = delivery.corrupt {
            d.corrupted = true;
            flip_byte(d.payload_mut(), word);
            self.stats.corrupted += 1;
        }
        if delivery.reordered {
            self.stats.reordered += 1;
        }
        let arrive = instant(delivery.at);
        let Some(next) = self.next.next(d.dst.host) else {
            self.stats.no_route += 1;
            cx.recycle(d);
            return;
        };
        let dup = self.model.draw_duplicate().then(|| cx.pool().duplicate(&d));
        cx.send(arrive, next, d);
        if let Some(copy) = dup {
            self.stats.duplicated += 1;
            cx.send(arrive, next, copy);
        }
    }

    fn on_wake(&mut self, _now: Instant, _cx: &mut Cx<'_>) {}
}

/// The simulator's instant of the model's time (nanoseconds since time zero).
fn instant(t: Duration) -> Instant {
    Instant::from_nanos(u64::try_from(t.as_nanos()).unwrap_or(u64::MAX))
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
}
