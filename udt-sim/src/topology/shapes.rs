//! The topologies of the thesis' simulations.
//!
//! * [`dumbbell`]: n sender/receiver pairs through one bottleneck (Fig. 4-1 when every access
//!   link is ideal, Fig. 4-5 with per-flow access delays so flows have different RTTs);
//! * [`two_bottlenecks`]: Fig. 4-9, flows A-B and A-C sharing A's 200 Mb/s link, C behind a
//!   link of x Mb/s.

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

/// A DropTail link of `rate_bps`, one-way `delay`, queue max(BDP of `rtt`, 10) packets.
pub fn thesis_link(rate_bps: u64, delay: Duration, rtt: Duration) -> LinkConfig {
    LinkConfig {
        queue: crate::link::QueueConfig::bdp_droptail(rate_bps, rtt, 1500),
        ..LinkConfig::new(rate_bps, delay, 0)
    }
}
