//! The topologies of the thesis' simulations.
//!
//! * [`dumbbell`]: n sender/receiver pairs through one bottleneck (Fig. 4-1 when every access
//!   link is ideal, Fig. 4-5 with per-flow access delays so flows have different RTTs);
//! * [`two_bottlenecks`]: Fig. 4-9, flows A-B and A-C sharing A's 200 Mb/s link, C behind a
//!   link of x Mb/s;
//! * [`parking_lot`]: Fig. 4-10, a chain of nodes joined by links of their own capacity, a host
//!   at every node, so flows can run over any sub-path of the chain.

use std::time::Duration;

use crate::link::LinkConfig;
use crate::topology::{LinkRef, Topology, Vertex};

/// A dumbbell and its parts.
#[derive(Debug)]
pub struct Dumbbell {
    /// The topology (add flows to it).
    pub topo: Topology,
    /// Sending hosts, one per pair.
    pub senders: Vec<Vertex>,
    /// Receiving hosts, one per pair.
    pub receivers: Vec<Vertex>,
    /// The bottleneck, senders to receivers.
    pub bottleneck: LinkRef,
    /// The way back.
    pub reverse: LinkRef,
}

/// Name of the dumbbell's bottleneck link.
pub const BOTTLENECK: &str = "bottleneck";

/// A dumbbell: `access.len()` pairs; pair i's sender reaches the left router over `access[i]`
/// (both ways); receivers hang off the right router over ideal links.
pub fn dumbbell(bottleneck: LinkConfig, reverse: LinkConfig, access: &[LinkConfig]) -> Dumbbell {
    let mut topo = Topology::new();
    let mut senders = Vec::with_capacity(access.len());
    let mut receivers = Vec::with_capacity(access.len());
    for _ in access {
        senders.push(topo.host());
        receivers.push(topo.host());
    }
    let left = topo.router();
    let right = topo.router();
    let (bottleneck, reverse) = topo.duplex(left, right, bottleneck, reverse, BOTTLENECK);
    for (i, a) in access.iter().enumerate() {
        topo.duplex(senders[i], left, *a, *a, format!("access{i}"));
        topo.duplex(right, receivers[i], LinkConfig::ideal(), LinkConfig::ideal(), format!("exit{i}"));
    }
    Dumbbell { topo, senders, receivers, bottleneck, reverse }
}

/// Fig. 4-9 and its parts.
#[derive(Debug)]
pub struct TwoBottlenecks {
    /// The topology.
    pub topo: Topology,
    /// Hosts A, B and C.
    pub a: Vertex,
    /// Host B.
    pub b: Vertex,
    /// Host C.
    pub c: Vertex,
}

/// Fig. 4-9: A reaches router R over `shared` (200 Mb/s in the thesis); R reaches B over
/// `to_b` and C over `to_c` (x Mb/s). Reverse links are copies.
pub fn two_bottlenecks(shared: LinkConfig, to_b: LinkConfig, to_c: LinkConfig) -> TwoBottlenecks {
    let mut topo = Topology::new();
    let a = topo.host();
    let b = topo.host();
    let c = topo.host();
    let r = topo.router();
    topo.duplex(a, r, shared, shared, "A-R");
    topo.duplex(r, b, to_b, to_b, "R-B");
    topo.duplex(r, c, to_c, to_c, "R-C");
    TwoBottlenecks { topo, a, b, c }
}

/// A parking lot (Fig. 4-10) and its parts.
#[derive(Debug)]
pub struct ParkingLot {
    /// The topology (add flows to it).
    pub topo: Topology,
    /// The host at each node of the chain, in chain order.
    pub hosts: Vec<Vertex>,
    /// The chain's links in the forward direction: `links[i]` joins node i to node i + 1.
    pub links: Vec<LinkRef>,
}

/// Name of the parking lot's i-th forward link (`L1`, `L2`, ...); the way back is `-rev`.
pub fn parking_link_name(i: usize) -> String {
    format!("L{}", i + 1)
}

/// Fig. 4-10: `chain.len() + 1` routers in a line, router i joined to router i + 1 by
/// `chain[i]` both ways (the way back is a copy, it carries the ACKs of forward flows), and one
/// host on every router over ideal links (bypassed by the routes, so they cost nothing). A flow
/// from host i to host j > i crosses links i..j.
pub fn parking_lot(chain: &[LinkConfig]) -> ParkingLot {
    let mut topo = Topology::new();
    let hosts: Vec<Vertex> = (0..=chain.len()).map(|_| topo.host()).collect();
    let routers: Vec<Vertex> = (0..=chain.len()).map(|_| topo.router()).collect();
    let mut links = Vec::with_capacity(chain.len());
    for (i, c) in chain.iter().enumerate() {
        let (fwd, _) = topo.duplex(routers[i], routers[i + 1], *c, *c, parking_link_name(i));
        links.push(fwd);
    }
    for (i, (&h, &r)) in hosts.iter().zip(&routers).enumerate() {
        topo.duplex(h, r, LinkConfig::ideal(), LinkConfig::ideal(), format!("host{}", i + 1));
    }
    ParkingLot { topo, hosts, links }
}

/// A DropTail link of `rate_bps`, one-way `delay`, queue max(BDP of `rtt`, 10) packets.
pub fn thesis_link(rate_bps: u64, delay: Duration, rtt: Duration) -> LinkConfig {
    LinkConfig {
        queue: crate::link::QueueConfig::bdp_droptail(rate_bps, rtt, 1500),
        ..LinkConfig::new(rate_bps, delay, 0)
    }
}
