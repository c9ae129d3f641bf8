//! # udt-sim: a deterministic discrete-event network simulator for UDT
//!
//! It drives the real `udt-proto` connections, and the seed papers' protocols of `udt-bulk`, in
//! virtual time over simulated networks, and measures what the thesis (Yunhong Gu 2005,
//! chapter 4) measures ([`metrics`]). The engine only: the experiments run on it (the thesis'
//! figures, the sweep, the seed papers' comparisons, their reports and plots) are `udt-lab`'s.
//!
//! Layers, bottom up:
//! * [`packet`], [`rng`]: datagrams with pooled buffers; seeds and per-node random streams.
//! * [`node`], [`engine`]: the node shape (a datagram and `now` in; datagrams, a wake-up or
//!   nothing out) and the event queue in virtual time.
//! * [`link`]: links with rate, delay, DropTail or RED queues, random loss (Bernoulli,
//!   Gilbert-Elliott), reordering, duplication, corruption, MTU; [`pcap`] export.
//! * [`host`]: end hosts running `udt-proto` endpoints (bulk senders, draining receivers), CBR
//!   sources and sinks; every controller, the TCP-like ones included, comes from the
//!   `udt-proto` catalog by specification ([`flow::CcChoice`]).
//! * [`flow`], [`topology`], [`network`]: flows, topologies with routes, the built network.
//! * [`run`], [`metrics`]: sampling and the measures (efficiency, fairness, stability,
//!   friendliness, convergence, loss).
//! * [`bulk`], [`transfer`]: RBUDP, Tsunami and FOBS sessions as flows, set-up included; one
//!   file moved by any protocol and timed to its last byte.
//!
//! Determinism: a run is a function of its description and seed; the engine hashes every
//! delivery ([`engine::Sim::trace_hash`]), and `UDT_SIM_SEED` overrides the seed of tests
//! ([`rng::seed_from_env`]).

#![forbid(unsafe_code)]

pub mod bulk;
pub mod engine;
pub mod flow;
pub mod host;
pub mod ids;
pub mod link;
pub mod metrics;
pub mod network;
pub mod node;
pub mod packet;
pub mod pcap;
pub mod rng;
pub mod run;
pub mod topology;
pub mod transfer;

pub use engine::Sim;
pub use flow::{CcChoice, FlowSpec};
pub use network::Network;
pub use topology::Topology;
