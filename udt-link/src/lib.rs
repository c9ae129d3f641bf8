//! `udt-link`: one model of a one-way network link, sans-IO, shared by the simulator
//! (`udt-sim`, in virtual time) and the emulator (`udt-netem`, in real time).
//!
//! A link has a rate (serialisation), an output queue (DropTail in packets or bytes, or RED)
//! whose limit counts the packets *waiting* beside the one in service, a propagation delay with
//! optional jitter, random loss (Bernoulli or Gilbert-Elliott), reordering, duplication,
//! corruption and an MTU. [`LinkModel`] takes packets with the caller's `now` and says when each
//! leaves the queue and arrives at the far end, or why it was dropped; it never reads a clock,
//! touches a socket or draws from a global generator: all randomness comes from its own
//! [`SimRng`], the one seeded generator both users share.
//!
//! Modules:
//! - [`rng`]: the seeded generator and the derivation of independent streams from one seed;
//! - [`queue`]: queue disciplines and the backlog of accepted packets;
//! - [`loss`]: random loss models;
//! - [`delay`]: delay, jitter and reordering;
//! - [`impair`]: impairment probabilities and how corruption damages bytes;
//! - [`model`]: the link that chains them.

pub mod delay;
pub mod impair;
pub mod loss;
pub mod model;
pub mod queue;
pub mod rng;

pub use delay::{Jitter, JitterDist};
pub use impair::{flip_bit_past_ip_header, flip_byte, Impairments};
pub use loss::{GilbertElliott, LossModel};
pub use model::{Class, Delivery, Dropped, LinkConfig, LinkModel, Occupancy, OnWire, Passage};
pub use queue::{bdp_packets, QueueConfig, RedConfig};
pub use rng::SimRng;
