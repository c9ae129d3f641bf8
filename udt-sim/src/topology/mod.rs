//! Building a network: hosts and routers joined by one-way links, shortest-path routes, and the
//! flows between hosts; [`Topology::build`] turns it into a runnable [`Network`].
//!
//! Routers are not nodes: a link that ends at a router forwards each packet straight to the
//! next link towards its destination host (a per-router table indexed by host), so a hop costs
//! one event. Ideal links (no rate, no delay, no impairment, not captured) are skipped by the
//! routes altogether. Routes are shortest paths by hop count; ties go to the link added first,
//! so the same description always gives the same routes.
//!
//! Node numbering (and so every node's random stream) depends only on the description: hosts
//! first in the order they were added, then links in the order they were added.

pub mod shapes;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use udt_proto::cc::CcFactory;
use udt_proto::Instant;

use crate::engine::{AnyNode, Sim};
use crate::flow::{FlowKind, FlowSpec, NamedCc};
use crate::host::Host;
use crate::link::{Link, LinkConfig};
use crate::network::{FlowHandle, LinkInfo, Network};
use crate::node::{NodeId, Route};
use crate::packet::{Addr, IP_UDP_OVERHEAD};
use crate::pcap::PcapWriter;
use crate::rng;

pub use crate::ids::{LinkRef, Vertex};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Host(u32),
    Router,
}

#[derive(Clone, Debug)]
struct Edge {
    from: u32,
    to: u32,
    config: LinkConfig,
    name: String,
    capture: Option<PathBuf>,
}

impl Edge {
    fn bypassed(&self) -> bool {
        self.config.is_ideal() && self.capture.is_none()
    }
}

/// Stream numbers for the random generators of flow endpoints (node streams are node ids).
const FLOW_STREAM: u64 = 1 << 32;
/// First port of flow senders and receivers.
const SEND_PORT: u16 = 10_000;
const RECV_PORT: u16 = 30_000;
/// Most flows a topology can carry (ports are per flow).
pub const MAX_FLOWS: usize = 20_000;

/// A network description.
#[derive(Clone, Debug, Default)]
pub struct Topology {
    kinds: Vec<Kind>,
    hosts: Vec<u32>,
    edges: Vec<Edge>,
    flows: Vec<FlowSpec>,
    no_udp_checksum: bool,
}

impl Topology {
    /// An empty topology.
    pub fn new() -> Self {
        Topology::default()
    }

    /// Add a host.
    pub fn host(&mut self) -> Vertex {
        let index = self.hosts.len() as u32;
        self.kinds.push(Kind::Host(index));
        self.hosts.push(self.kinds.len() as u32 - 1);
        Vertex(self.kinds.len() as u32 - 1)
    }

    /// Add a router.
    pub fn router(&mut self) -> Vertex {
        self.kinds.push(Kind::Router);
        Vertex(self.kinds.len() as u32 - 1)
    }

    /// Add a one-way link.
    pub fn link(&mut self, from: Vertex, to: Vertex, config: LinkConfig, name: impl Into<String>) -> LinkRef {
        self.edges.push(Edge { from: from.0, to: to.0, config, name: name.into(), capture: None });
        LinkRef(self.edges.len() as u32 - 1)
    }

    /// Add a link each way: `a -> b` named `name`, `b -> a` named `name` + `-rev`.
    pub fn duplex(
        &mut self,
        a: Vertex,
        b: Vertex,
        ab: LinkConfig,
        ba: LinkConfig,
        name: impl Into<String>,
    ) -> (LinkRef, LinkRef) {
        let name = name.into();
        let rev = format!("{name}-rev");
        (self.link(a, b, ab, name), self.link(b, a, ba, rev))
    }

    /// Add a flow; returns its index.
    pub fn flow(&mut self, spec: FlowSpec) -> usize {
        self.flows.push(spec);
        self.flows.len() - 1
    }

    /// The flows.
    pub fn flows(&self) -> &[FlowSpec] {
        &self.flows
    }

    /// The flows, mutable.
    pub fn flows_mut(&mut self) -> &mut [FlowSpec] {
        &mut self.flows
    }

    /// The configuration of `link`, mutable.
    pub fn link_config_mut(&mut self, link: LinkRef) -> Option<&mut LinkConfig> {
        self.edges.get_mut(link.0 as usize).map(|e| &mut e.config)
    }

    /// The configuration of `link`.
    pub fn link_config(&self, link: LinkRef) -> Option<&LinkConfig> {
        self.edges.get(link.0 as usize).map(|e| &e.config)
    }

    /// The link named `name`.
    pub fn link_named(&self, name: &str) -> Option<LinkRef> {
        self.edges.iter().position(|e| e.name == name).map(|i| LinkRef(i as u32))
    }

    /// Names of all links.
    pub fn link_names(&self) -> Vec<String> {
        self.edges.iter().map(|e| e.name.clone()).collect()
    }

    /// Write every packet `link` puts on the wire to a pcap file at `path`.
    pub fn capture(&mut self, link: LinkRef, path: impl Into<PathBuf>) {
        if let Some(e) = self.edges.get_mut(link.0 as usize) {
            e.capture = Some(path.into());
        }
    }

    /// Hand corrupted datagrams to UDT instead of dropping them as a UDP checksum would.
    pub fn without_udp_checksum(&mut self) {
        self.no_udp_checksum = true;
    }

    /// Host index of a vertex, if it is a host.
    pub fn host_index(&self, v: Vertex) -> Option<u32> {
        match self.kinds.get(v.0 as usize) {
            Some(Kind::Host(i)) => Some(*i),
            _ => None,
        }
    }

    /// Next link from every vertex towards vertex `dst` (BFS over reversed links).
    fn next_hops(&self, dst: u32, incoming: &[Vec<u32>]) -> Vec<Option<u32>> {
        let mut next = vec![None; self.kinds.len()];
        let mut seen = vec![false; self.kinds.len()];
        seen[dst as usize] = true;
        let mut queue = VecDeque::from([dst]);
        while let Some(v) = queue.pop_front() {
            for &e in &incoming[v as usize] {
                let u = self.edges[e as usize].from as usize;
                // Hosts do not forward: a path may start at a host but not pass through one.
                let forwards = v == dst || matches!(self.kinds[v as usize], Kind::Router);
                if !seen[u] && forwards {
                    seen[u] = true;
                    next[u] = Some(e);
                    queue.push_back(u as u32);
                }
            }
        }
        next
    }

    /// The node a packet for host vertex `dst` goes to when it takes link `e`, skipping
    /// bypassed links.
    fn resolve(&self, mut e: u32, dst: u32, next: &[Option<u32>], link_base: u32) -> NodeId {
        for _ in 0..=self.edges.len() {
            let edge = &self.edges[e as usize];
            if !edge.bypassed() {
                return NodeId(link_base + e);
            }
            if edge.to == dst {
                return match self.kinds[dst as usize] {
                    Kind::Host(i) => NodeId(i),
                    Kind::Router => NodeId::NONE,
                };
            }
            match (self.kinds[edge.to as usize], next[edge.to as usize]) {
                (Kind::Router, Some(n)) => e = n,
                _ => return NodeId::NONE,
            }
        }
        NodeId::NONE
    }

    /// Build the network, seeding every random choice from `seed`.
    pub fn build(self, seed: u64) -> Result<Network, String> {
        if self.flows.len() > MAX_FLOWS {
            return Err(format!("{} flows: at most {MAX_FLOWS}", self.flows.len()));
        }
        let n_hosts = self.hosts.len();
        let link_base = n_hosts as u32;
        let mut incoming = vec![Vec::new(); self.kinds.len()];
        for (i, e) in self.edges.iter().enumerate() {
            incoming[e.to as usize].push(i as u32);
        }
        // tables[v][h]: where a packet at vertex v for host h goes next.
        let mut tables = vec![vec![NodeId::NONE; n_hosts]; self.kinds.len()];
        for (h, &dv) in self.hosts.iter().enumerate() {
            let next = self.next_hops(dv, &incoming);
            for (v, hop) in next.iter().enumerate() {
                if let Some(e) = *hop {
                    tables[v][h] = self.resolve(e, dv, &next, link_base);
                }
            }
        }
        let tables: Vec<Arc<[NodeId]>> = tables.into_iter().map(Arc::from).collect();

        let mut max_datagram = 1500 - IP_UDP_OVERHEAD;
        for f in &self.flows {
            match &f.kind {
                FlowKind::Udt { mss, .. } => max_datagram = max_datagram.max(*mss as usize - IP_UDP_OVERHEAD),
                FlowKind::Cbr { payload, .. } => max_datagram = max_datagram.max(*payload),
                FlowKind::Bulk(b) => max_datagram = max_datagram.max(b.max_datagram),
            }
        }
        let mut sim = Sim::new(max_datagram);
        let mut hosts: Vec<Host> = self
            .hosts
            .iter()
            .enumerate()
            .map(|(h, &v)| {
                let mut host = Host::new(h as u32, Route::Table(tables[v as usize].clone()));
                host.set_udp_checksum(!self.no_udp_checksum);
                host
            })
            .collect();

        let mut handles = Vec::with_capacity(self.flows.len());
        // One factory per distinct specification per run (see `NamedCc`).
        let mut named: Vec<(&'static NamedCc, Arc<dyn CcFactory>)> = Vec::new();
        for (i, f) in self.flows.iter().enumerate() {
            let (Some(hs), Some(hd)) = (self.host_index(f.src), self.host_index(f.dst)) else {
                return Err(format!("flow {:?}: both ends must be hosts", f.label));
            };
            let src_port = SEND_PORT + i as u16;
            let dst_port = RECV_PORT + i as u16;
            let peer = Addr { host: hd, port: dst_port };
            let at = |d: Duration| Instant::ZERO + d;
            match &f.kind {
                FlowKind::Udt { .. } => {
                    let mut config = f.udt_config().ok_or("not a UDT flow")?;
                    if let Some(n) = f.cc().map(|c| c.named()) {
                        let i = match named.iter().position(|(k, _)| std::ptr::eq(*k, n)) {
                            Some(i) => i,
                            None => {
                                named.push((n, n.factory()));
                                named.len() - 1
                            }
                        };
                        config.cc = Arc::clone(&named[i].1);
                    }
                    let rx_rng = rng::stream(seed, FLOW_STREAM + 2 * i as u64 + 1);
                    let rx_config = match &f.kind {
                        FlowKind::Udt { udt4_receiver: true, .. } => {
                            f.receiver_config().ok_or("not a UDT flow")?
                        }
                        _ => config.clone(),
                    };
                    hosts[hd as usize]
                        .add_receiver(dst_port, rx_config, rx_rng)
                        .map_err(|e| format!("flow {:?}: {e}", f.label))?;
                    let tx_rng = rng::stream(seed, FLOW_STREAM + 2 * i as u64);
                    hosts[hs as usize].add_bulk_sender(
                        src_port,
                        peer,
                        config,
                        at(f.start),
                        f.stop.map(at),
                        tx_rng,
                    );
                }
                FlowKind::Cbr { payload, schedule } => {
                    let schedule = schedule.iter().map(|&(t, r)| (at(t.max(f.start)), r)).collect();
                    hosts[hd as usize].add_sink(dst_port);
                    hosts[hs as usize].add_cbr(src_port, peer, *payload, schedule, f.stop.map(at));
                }
                FlowKind::Bulk(b) => {
                    let pair = (b.make)(rand_core::RngCore::next_u64(&mut rng::stream(
                        seed,
                        FLOW_STREAM + 2 * i as u64,
                    )));
                    let me = Addr { host: hs, port: src_port };
                    hosts[hd as usize].add_bulk_session(dst_port, me, pair.receiver, at(f.start));
                    hosts[hs as usize].add_bulk_session(src_port, peer, pair.sender, at(f.start));
                }
            }
            handles.push(FlowHandle {
                spec: f.clone(),
                src: NodeId(hs),
                src_port,
                dst: NodeId(hd),
                dst_port,
            });
        }
        for host in hosts {
            sim.add(AnyNode::Host(Box::new(host)));
        }
        let mut links = Vec::with_capacity(self.edges.len());
        for (i, e) in self.edges.iter().enumerate() {
            let id = NodeId(link_base + i as u32);
            let next = match self.kinds[e.to as usize] {
                Kind::Host(h) => Route::To(NodeId(h)),
                Kind::Router => Route::Table(tables[e.to as usize].clone()),
            };
            let mut link = Link::new(e.name.clone(), e.config, next, rng::stream(seed, u64::from(id.0)));
            if let Some(path) = &e.capture {
                let w = PcapWriter::create(path).map_err(|err| format!("{}: {err}", path.display()))?;
                link.capture(w);
            }
            let got = sim.add(AnyNode::Link(Box::new(link)));
            debug_assert_eq!(got, id);
            links.push(LinkInfo { name: e.name.clone(), node: id, config: e.config, used: !e.bypassed() });
        }
        Ok(Network::new(sim, handles, links, seed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_skip_ideal_links_and_do_not_cross_hosts() {
        let mut t = Topology::new();
        let a = t.host();
        let b = t.host();
        let r1 = t.router();
        let r2 = t.router();
        t.duplex(a, r1, LinkConfig::ideal(), LinkConfig::ideal(), "a");
        let (fwd, _) =
            t.duplex(r1, r2, LinkConfig::new(1_000_000, Duration::ZERO, 10), LinkConfig::ideal(), "mid");
        t.duplex(r2, b, LinkConfig::delay(Duration::from_millis(1)), LinkConfig::ideal(), "b");
        let net = t.build(1).unwrap();
        let sim = net.sim();
        // a -> [mid] -> [b delay] -> b; b -> a entirely ideal: straight to host a.
        let mid = net.link_node("mid").unwrap();
        let b_link = net.link_node("b").unwrap();
        assert_eq!(mid, NodeId(2 + fwd.0));
        assert_eq!(sim.host(NodeId(0)).unwrap().uplink().next(1), Some(mid));
        assert_eq!(sim.host(NodeId(1)).unwrap().uplink().next(0), Some(NodeId(0)));
        assert_eq!(sim.link(mid).unwrap().route().next(1), Some(b_link));
        assert_eq!(sim.link(b_link).unwrap().route().next(1), Some(NodeId(1)));
        assert_eq!(sim.host(NodeId(0)).unwrap().uplink().next(0), None);
        assert!(!net.links().iter().find(|l| l.name == "a").unwrap().used);
        assert!(net.links().iter().find(|l| l.name == "b").unwrap().used);
    }
}
