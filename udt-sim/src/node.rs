//! The one shape every simulated element has: a datagram and `now` in; datagrams, a wake-up time,
//! or nothing out.
//!
//! A [`Node`] is called with [`Node::on_datagram`] when a datagram reaches it and with
//! [`Node::on_wake`] when a wake-up it asked for is due. It answers through [`Cx`]: datagrams to
//! deliver to other nodes at given times ([`Cx::send`]), and its next wake-up
//! ([`Cx::set_wake`]). A node never sees another node, the event queue or a clock.
//!
//! Invariants: a node asks for delivery times at or after `now` (earlier ones are delivered at
//! `now`); a node has at most one pending wake-up, and a new request replaces it; a node that
//! does not call `set_wake` keeps its pending wake-up (if it is still in the future).

use std::sync::Arc;

use udt_proto::Instant;

use crate::packet::{BufPool, Datagram};

/// Index of a node in the simulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u32);

impl NodeId {
    /// No node: an unroutable destination.
    pub const NONE: NodeId = NodeId(u32::MAX);
}

/// Where a node sends what leaves it: one fixed next node, or a table by destination host.
#[derive(Clone, Debug)]
pub enum Route {
    /// Everything goes to this node.
    To(NodeId),
    /// Entry `h` is the next node towards host `h` ([`NodeId::NONE`] when unreachable).
    Table(Arc<[NodeId]>),
}

impl Route {
    /// The next node towards `host`, if any.
    #[inline]
    pub fn next(&self, host: u32) -> Option<NodeId> {
        let id = match self {
            Route::To(id) => *id,
            Route::Table(t) => *t.get(host as usize)?,
        };
        (id != NodeId::NONE).then_some(id)
    }
}

/// What a node hands back to the engine while it runs.
pub struct Cx<'a> {
    pub(crate) now: Instant,
    pub(crate) pool: &'a mut BufPool,
    pub(crate) sends: &'a mut Vec<(Instant, NodeId, Datagram)>,
    pub(crate) wake: Option<Option<Instant>>,
}

impl<'a> Cx<'a> {
    /// A context at `now` over the engine's pool and output list.
    pub(crate) fn new(
        now: Instant,
        pool: &'a mut BufPool,
        sends: &'a mut Vec<(Instant, NodeId, Datagram)>,
    ) -> Self {
        Cx { now, pool, sends, wake: None }
    }

    /// The current time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Deliver `d` to node `to` at time `at` (not before now).
    #[inline]
    pub fn send(&mut self, at: Instant, to: NodeId, d: Datagram) {
        self.sends.push((at.max(self.now), to, d));
    }

    /// Ask to be woken at `at` (replacing any earlier request), or cancel with `None`.
    pub fn set_wake(&mut self, at: Option<Instant>) {
        self.wake = Some(at);
    }

    /// The buffer pool.
    pub fn pool(&mut self) -> &mut BufPool {
        self.pool
    }

    /// Drop a datagram: its buffer goes back to the pool.
    #[inline]
    pub fn recycle(&mut self, d: Datagram) {
        self.pool.recycle(d);
    }
}

/// A simulated element: host, link, source, or anything with the same shape.
pub trait Node: Send {
    /// A datagram arrived at `now`.
    fn on_datagram(&mut self, now: Instant, d: Datagram, cx: &mut Cx<'_>);
    /// A wake-up asked for earlier is due.
    fn on_wake(&mut self, now: Instant, cx: &mut Cx<'_>);
    /// Called once before the simulation starts, to ask for a first wake-up.
    fn on_start(&mut self, _now: Instant, _cx: &mut Cx<'_>) {}
}
