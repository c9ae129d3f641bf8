//! The simulator's link node and the emulator's link, driven with one packet trace (arrival
//! times and IP sizes), agree packet by packet: the same queue occupancy after every arrival,
//! the same packets dropped by the queue and lost on the wire, and the same delivery times
//! (serialisation end plus delay, reordering and duplicates included).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use udt_netem::{Fate, LinkConfig as EmuConfig, Loss, QueueLimit};
use udt_proto::Instant;
use udt_sim::engine::{AnyNode, Sim};
use udt_sim::link::{Impairments, Link, LinkConfig, LossModel, QueueConfig};
use udt_sim::node::{Cx, Node, NodeId, Route};
use udt_sim::packet::{Addr, Datagram, IP_UDP_OVERHEAD};
use udt_sim::rng::SimRng;

const SEED: u64 = 42;

/// Arrival time (ns) and IP size of each packet: bursts of back-to-back arrivals, about 1.4
/// times what a 10 Mb/s link carries, from 40 to 1500 bytes.
fn trace(n: usize) -> Vec<(u64, usize)> {
    let mut r = SimRng::seed(7);
    let mut t = 1_000_000u64;
    (0..n)
        .map(|_| {
            let size = 40 + r.below(1461) as usize;
            // Gaps of 0 (a burst) a third of the time, else up to 1.2 ms.
            if r.unit() > 1.0 / 3.0 {
                t += r.below(1_200_000);
            }
            (t, size)
        })
        .collect()
}

/// Injects the trace into node 1, each packet's index in its first 4 payload bytes.
struct Source(Vec<(u64, usize)>);

impl Node for Source {
    fn on_datagram(&mut self, _: Instant, d: Datagram, cx: &mut Cx<'_>) {
        cx.recycle(d);
    }
    fn on_wake(&mut self, _: Instant, _: &mut Cx<'_>) {}
    fn on_start(&mut self, _: Instant, cx: &mut Cx<'_>) {
        for (i, &(at, size)) in self.0.iter().enumerate() {
            let mut payload = vec![0u8; size - IP_UDP_OVERHEAD];
            payload[..4].copy_from_slice(&(i as u32).to_le_bytes());
            let d = cx.pool().datagram(Addr::default(), Addr::default(), &payload);
            cx.send(Instant::from_nanos(at), NodeId(1), d);
        }
    }
}

/// Records (packet index, arrival time in ns) at the far end.
struct Sink(Arc<Mutex<Vec<(u32, u64)>>>);

impl Node for Sink {
    fn on_datagram(&mut self, now: Instant, d: Datagram, cx: &mut Cx<'_>) {
        let i = u32::from_le_bytes([d.payload()[0], d.payload()[1], d.payload()[2], d.payload()[3]]);
        self.0.lock().expect("sink log").push((i, now.as_nanos()));
        cx.recycle(d);
    }
    fn on_wake(&mut self, _: Instant, _: &mut Cx<'_>) {}
}

/// What a link did with a trace: occupancy (waiting packets, waiting bytes, one in service)
/// after each arrival time, deliveries sorted, queue drops and losses.
#[derive(Debug, PartialEq)]
struct Outcome {
    occupancy: Vec<(usize, u64, bool)>,
    deliveries: Vec<(u32, u64)>,
    queue_drops: u64,
    lost: u64,
}

fn simulate(config: LinkConfig, trace: &[(u64, usize)]) -> Outcome {
    let got = Arc::new(Mutex::new(Vec::new()));
    let mut sim = Sim::new(2048);
    sim.add(AnyNode::Other(Box::new(Source(trace.to_vec()))));
    let link = Link::new("l", config, Route::To(NodeId(2)), SimRng::seed(SEED));
    sim.add(AnyNode::Link(Box::new(link)));
    sim.add(AnyNode::Other(Box::new(Sink(got.clone()))));
    let mut occupancy = Vec::new();
    for w in trace.windows(2).filter(|w| w[0].0 != w[1].0).map(|w| w[0].0).chain(trace.last().map(|p| p.0)) {
        sim.run_until(Instant::from_nanos(w));
        let o = sim.link(NodeId(1)).expect("node 1 is the link").occupancy(Instant::from_nanos(w));
        occupancy.push((o.waiting, o.waiting_bytes, o.in_service));
    }
    sim.run_until(Instant::from_nanos(trace.last().map_or(0, |p| p.0) + 10_000_000_000));
    let mut deliveries = got.lock().expect("sink log").clone();
    deliveries.sort_unstable();
    let s = sim.link(NodeId(1)).expect("node 1 is the link").stats();
    assert_eq!(s.arrivals, trace.len() as u64);
    Outcome { occupancy, deliveries, queue_drops: s.queue_drops, lost: s.lost }
}

fn emulate(config: &EmuConfig, trace: &[(u64, usize)]) -> Outcome {
    let mut link = udt_netem::Link::new(config, SEED);
    let mut out = Outcome { occupancy: Vec::new(), deliveries: Vec::new(), queue_drops: 0, lost: 0 };
    for (i, &(at, size)) in trace.iter().enumerate() {
        let now = Duration::from_nanos(at);
        let v = link.handle_packet(now, size);
        for fate in std::iter::once(v.original).chain(v.duplicate) {
            match fate {
                Fate::Deliver(d) => out.deliveries.push((i as u32, d.at.as_nanos() as u64)),
                Fate::QueueDrop => out.queue_drops += 1,
                Fate::Lost => out.lost += 1,
            }
        }
        if trace.get(i + 1).is_none_or(|next| next.0 != at) {
            let o = link.occupancy(now);
            out.occupancy.push((o.waiting, o.waiting_bytes, o.in_service));
        }
    }
    out.deliveries.sort_unstable();
    out
}

fn assert_agree(sim: LinkConfig, emu: EmuConfig, trace: &[(u64, usize)]) -> Outcome {
    let simulated = simulate(sim, trace);
    let emulated = emulate(&emu, trace);
    assert_eq!(simulated.occupancy, emulated.occupancy, "queue occupancy");
    assert_eq!((simulated.queue_drops, simulated.lost), (emulated.queue_drops, emulated.lost), "drops");
    assert_eq!(simulated.deliveries, emulated.deliveries, "deliveries");
    simulated
}

#[test]
fn a_packet_queue_holds_the_same_packets_in_both() {
    let trace = trace(20_000);
    let sim = LinkConfig::new(10_000_000, Duration::from_millis(5), 20);
    let emu = EmuConfig {
        rate_bps: 10_000_000,
        delay: Duration::from_millis(5),
        queue: QueueLimit::Packets(20),
        ..EmuConfig::default()
    };
    let out = assert_agree(sim, emu, &trace);
    assert!(out.queue_drops > 1000, "the trace overflows the queue: {}", out.queue_drops);
    assert_eq!(out.occupancy.iter().map(|o| o.0).max(), Some(20), "the queue fills");
}

#[test]
fn a_byte_queue_with_loss_reordering_and_duplicates_agrees() {
    let trace = trace(20_000);
    let impair =
        Impairments { reorder: 0.02, reorder_delay: Duration::from_millis(2), duplicate: 0.01, corrupt: 0.0 };
    let sim = LinkConfig {
        queue: QueueConfig::DropTailBytes(30_000),
        loss: LossModel::Bernoulli(0.01),
        impair,
        ..LinkConfig::new(10_000_000, Duration::from_millis(5), 0)
    };
    let emu = EmuConfig {
        rate_bps: 10_000_000,
        delay: Duration::from_millis(5),
        queue: QueueLimit::Bytes(30_000),
        loss: Loss::Bernoulli { p: 0.01 },
        reorder: 0.02,
        reorder_delay: Duration::from_millis(2),
        duplicate: 0.01,
        ..EmuConfig::default()
    };
    let out = assert_agree(sim, emu, &trace);
    assert!(out.queue_drops > 1000 && out.lost > 50, "{} {}", out.queue_drops, out.lost);
    assert!(out.occupancy.iter().any(|o| o.1 > 28_000), "the queue fills");
    let copies = out.deliveries.windows(2).filter(|w| w[0].0 == w[1].0).count();
    assert!(copies > 50, "duplicates: {copies}");
}

#[test]
fn a_hundred_packet_queue_holds_a_hundred_beside_the_one_on_the_wire() {
    let burst: Vec<(u64, usize)> = vec![(1_000_000, 1500); 102];
    let sim = LinkConfig::new(100_000_000, Duration::ZERO, 100);
    let emu = EmuConfig { rate_bps: 100_000_000, queue: QueueLimit::Packets(100), ..EmuConfig::default() };
    let out = assert_agree(sim, emu, &burst);
    assert_eq!(out.occupancy, vec![(100, 150_000, true)]);
    assert_eq!((out.deliveries.len(), out.queue_drops), (101, 1));
}
