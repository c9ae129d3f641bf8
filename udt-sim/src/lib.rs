//! # udt-sim: a deterministic discrete-event network simulator for UDT
//!
//! It drives the real `udt-proto` connections in virtual time over simulated networks, and runs
//! the experiments of the thesis (Yunhong Gu 2005, chapter 4) reporting its measures
//! ([`metrics`]; the crate's README lists the scenarios and our numbers next to the thesis').
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
//! * [`scenario`], [`report`], [`plot`]: the named experiments, their tables and JSON, plots.
//! * [`sweep`]: random scenarios drawn from a seed, and the distribution of each measure.
//!
//! Determinism: a run is a function of its description and seed; the engine hashes every
//! delivery ([`engine::Sim::trace_hash`]), and `UDT_SIM_SEED` overrides the seed of tests and of
//! the example ([`rng::seed_from_env`]).

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
pub mod plot;
pub mod report;
pub mod rng;
pub mod run;
pub mod scenario;
pub mod seeds;
pub mod seeds_plot;
pub mod sweep;
pub mod topology;
pub mod transfer;

pub use engine::Sim;
pub use flow::{CcChoice, FlowSpec};
pub use network::Network;
pub use topology::Topology;
