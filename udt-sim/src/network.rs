//! A built network: the simulation plus what is needed to read it by flow and by link name.
//!
//! [`Network::progress`] reads a flow's cumulative counters at the current time: bytes the
//! receiving application got, data packets sent and received, retransmissions. Rates come from
//! differences of such readings (see [`crate::run`]).

use std::time::Duration;

use udt_proto::connection::Config;
use udt_proto::Instant;

use crate::engine::Sim;
use crate::flow::{FlowKind, FlowSpec};
use crate::link::{LinkConfig, LinkStats};
use crate::node::NodeId;
use crate::packet::IP_UDP_OVERHEAD;

/// Where a flow's ends live.
#[derive(Clone, Debug)]
pub struct FlowHandle {
    /// Its description.
    pub spec: FlowSpec,
    /// Sending host node and port.
    pub src: NodeId,
    /// Sending port.
    pub src_port: u16,
    /// Receiving host node.
    pub dst: NodeId,
    /// Receiving port.
    pub dst_port: u16,
}

impl FlowHandle {
    /// IP bytes on the wire per payload byte of this flow's full data packets (1500 / 1456 for
    /// UDT with a 1500-byte MSS).
    pub fn wire_factor(&self) -> f64 {
        match &self.spec.kind {
            FlowKind::Udt { mss, .. } => f64::from(*mss) / Config::payload_size(*mss).max(1) as f64,
            FlowKind::Cbr { payload, .. } => (payload + IP_UDP_OVERHEAD) as f64 / (*payload).max(1) as f64,
            FlowKind::Bulk(b) => {
                (b.max_datagram + IP_UDP_OVERHEAD) as f64
                    / b.max_datagram.saturating_sub(b.header_bytes).max(1) as f64
            }
        }
    }
}

/// A link of the network.
#[derive(Clone, Debug)]
pub struct LinkInfo {
    /// Its name.
    pub name: String,
    /// Its node.
    pub node: NodeId,
    /// Its configuration.
    pub config: LinkConfig,
    /// False for ideal links that routing skips.
    pub used: bool,
}

/// Cumulative counters of one flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowProgress {
    /// Payload bytes delivered to the receiving application (UDT) or sink (CBR).
    pub bytes: u64,
    /// Data packets sent, retransmissions included.
    pub sent_pkts: u64,
    /// Data packets that arrived, duplicates included.
    pub recv_pkts: u64,
    /// Retransmitted packets.
    pub retransmits: u64,
}

/// A simulation built from a [`crate::topology::Topology`].
pub struct Network {
    sim: Sim,
    flows: Vec<FlowHandle>,
    links: Vec<LinkInfo>,
    seed: u64,
}

impl std::fmt::Debug for Network {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Network")
            .field("sim", &self.sim)
            .field("flows", &self.flows.len())
            .field("links", &self.links.len())
            .field("seed", &self.seed)
            .finish()
    }
}

impl Network {
    pub(crate) fn new(sim: Sim, flows: Vec<FlowHandle>, links: Vec<LinkInfo>, seed: u64) -> Self {
        Network { sim, flows, links, seed }
    }

    /// The simulation.
    pub fn sim(&self) -> &Sim {
        &self.sim
    }

    /// The simulation, mutable.
    pub fn sim_mut(&mut self) -> &mut Sim {
        &mut self.sim
    }

    /// The seed it was built with.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Its flows, in the order they were added.
    pub fn flows(&self) -> &[FlowHandle] {
        &self.flows
    }

    /// Its links, in the order they were added.
    pub fn links(&self) -> &[LinkInfo] {
        &self.links
    }

    /// The node of the link named `name`.
    pub fn link_node(&self, name: &str) -> Option<NodeId> {
        self.links.iter().find(|l| l.name == name).map(|l| l.node)
    }

    /// Counters of the link named `name`.
    pub fn link_stats(&self, name: &str) -> Option<LinkStats> {
        self.sim.link(self.link_node(name)?).map(|l| l.stats())
    }

    /// Virtual time since the start.
    pub fn elapsed(&self) -> Duration {
        self.sim.now() - Instant::ZERO
    }

    /// Run until `t` after the start.
    pub fn run_until(&mut self, t: Duration) {
        self.sim.run_until(Instant::ZERO + t);
    }

    /// Cumulative counters of flow `i` now.
    pub fn progress(&self, i: usize) -> FlowProgress {
        let Some(f) = self.flows.get(i) else { return FlowProgress::default() };
        let rx = self.sim.host(f.dst).and_then(|h| h.socket(f.dst_port));
        let tx = self.sim.host(f.src).and_then(|h| h.socket(f.src_port));
        let mut p =
            FlowProgress { bytes: rx.map_or(0, |s| s.stats().bytes_received), ..FlowProgress::default() };
        match &f.spec.kind {
            FlowKind::Udt { .. } => {
                if let Some(c) = tx.and_then(|s| s.connection()).map(|c| c.counters()) {
                    p.sent_pkts = c.pkts_sent;
                    p.retransmits = c.retransmits;
                }
                if let Some(c) = rx.and_then(|s| s.connection()).map(|c| c.counters()) {
                    p.recv_pkts = c.pkts_recv;
                }
            }
            FlowKind::Cbr { .. } => {
                p.sent_pkts = tx.map_or(0, |s| s.stats().datagrams_out);
                p.recv_pkts = rx.map_or(0, |s| s.stats().datagrams_in);
            }
            FlowKind::Bulk(_) => {
                let sent = tx.and_then(|s| s.bulk_counters()).unwrap_or_default();
                let got = rx.and_then(|s| s.bulk_counters()).unwrap_or_default();
                p.sent_pkts = sent.datagrams_sent;
                p.retransmits = sent.retransmitted;
                p.recv_pkts = got.datagrams_received;
            }
        }
        p
    }

    /// The counters of bulk flow `i`'s two sessions: (sender, receiver).
    pub fn bulk_counters(&self, i: usize) -> Option<(udt_bulk::Counters, udt_bulk::Counters)> {
        let f = self.flows.get(i)?;
        let c = |node, port| self.sim.host(node).and_then(|h| h.socket(port)).and_then(|s| s.bulk_counters());
        Some((c(f.src, f.src_port)?, c(f.dst, f.dst_port)?))
    }

    /// How the two ends of bulk flow `i` ended so far: (sender, receiver).
    pub fn bulk_ends(&self, i: usize) -> (Option<crate::bulk::BulkEnd>, Option<crate::bulk::BulkEnd>) {
        let Some(f) = self.flows.get(i) else { return (None, None) };
        let end = |node, port| self.sim.host(node).and_then(|h| h.socket(port)).and_then(|s| s.bulk_end());
        (end(f.src, f.src_port), end(f.dst, f.dst_port))
    }

    /// Flush and close every PCAP capture; returns the packets written per link.
    pub fn finish_captures(&mut self) -> std::io::Result<Vec<(String, u64)>> {
        let mut out = Vec::new();
        for l in &self.links {
            if let Some(w) = self.sim.link_mut(l.node).and_then(|link| link.take_capture()) {
                out.push((l.name.clone(), w.finish()?));
            }
        }
        Ok(out)
    }
}
