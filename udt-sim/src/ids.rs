//! The names of a topology's parts: its vertices (hosts and routers) and its one-way links.
//! Plain indices, below both the flows that name their end points and the topologies that
//! number them.

/// A host or router of a topology.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Vertex(pub u32);

/// A one-way link of a topology.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LinkRef(pub u32);
