//! `udt-netem`: a user-space WAN link emulator. Two network namespaces are joined by one TUN
//! device in each, both held open by this process, which forwards packets between them through
//! a per-direction impairment model: rate limit with a DropTail queue, delay with jitter,
//! Bernoulli or Gilbert-Elliott loss, reordering, duplication and corruption. It stands in for
//! the `netem` qdisc where the kernel lacks it, and is what `udt netem` and `udt bench` run.
//!
//! The layers, bottom up:
//! - [`units`], [`config`]: what the user asks for, parsed and validated.
//! - [`link`]: the impairment model, sans-IO: `udt-link`'s model of a link (the simulator's
//!   too) behind the emulator's configuration; packets go in with `now` (a duration since the
//!   start), verdicts (drop, or release at a time) come out; randomness is a seeded generator
//!   owned by the model. Deterministic and unit-tested without any device.
//! - [`sys`] (the only `unsafe`), [`tun`], [`ns`], [`topology`]: TUN devices, namespaces and
//!   their setup and cleanup.
//! - [`pool`], [`forward`], [`stats`]: one forwarder thread per direction, holding packets in
//!   preallocated buffers until their release time, and its counters; [`schedule`]: a
//!   bottleneck rate that changes during a run and the queueing delay over time.
//! - [`emulator`]: [`Emulator::start`] and the [`EmulatorHandle`] that stops it; [`cli`]: the
//!   `udt netem` command; [`probe`]: RTT and TCP goodput measured from inside the namespaces.
//!
//! ```no_run
//! use std::time::Duration;
//! use udt_netem::{Emulator, EmulatorConfig, LinkConfig};
//!
//! let link = LinkConfig { rate_bps: 50_000_000, delay: Duration::from_millis(20), ..Default::default() };
//! let config = EmulatorConfig { a_to_b: link.clone(), b_to_a: link, ..Default::default() };
//! let emu = Emulator::start(config)?; // needs root
//! // ... `ip netns exec udtA ...`, or udt_netem::ns::spawn_in("udtA", || ...) ...
//! let stats = emu.stop()?;
//! println!("{}", stats.a_to_b);
//! # Ok::<(), anyhow::Error>(())
//! ```

pub mod cli;
pub mod config;
pub mod emulator;
pub mod forward;
pub mod link;
pub mod ns;
pub mod pool;
pub mod probe;
pub mod schedule;
pub mod stats;
pub mod sys;
pub mod topology;
pub mod tun;
pub mod units;

pub use config::{EmulatorConfig, GeParams, JitterDist, LinkConfig, Loss, QueueLimit};
pub use emulator::{Emulator, EmulatorHandle};
pub use link::{Fate, Link, Verdict};
pub use schedule::{RateStep, Timeline};
pub use stats::{DirectionStats, EmulatorStats};
