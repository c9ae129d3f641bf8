//! # udt-proto: the UDT protocol as a sans-IO state machine
//!
//! An implementation of UDT (Yunhong Gu's thesis, 2005) on the wire format of the reference
//! library UDT4 4.11. It never reads a clock, never touches a socket and never draws from a
//! global RNG: drivers (the `udt` runtime, the `udt-sim` simulator, tests) pass in datagrams,
//! `now` and randomness, and carry out the datagrams and deadlines that come out.
//!
//! Layers, bottom up:
//! * [`time`], [`seq`]: nanosecond instants; wrapping 31-bit sequence, 29-bit message and ACK
//!   numbers.
//! * [`packet`]: typed views and values for every UDT4 packet, `parse` and `emit`.
//! * [`loss_list`], [`buffer`]: the sender's and receiver's loss lists and protocol buffers.
//! * [`cc`]: congestion control as a trait (Composable UDT), the thesis' algorithm (`daimd`)
//!   and a fixed-rate controller; the catalog and the default model controller are `udt-cc`'s.
//! * [`connection`]: one UDT connection: handshake, sender, receiver, timers, statistics, and
//!   its protocol [`Policy`](connection::Policy) (what the sender learns from, what the
//!   receiver reports), offered to the peer at start.
//! * [`endpoint`]: the listener side of the handshake (SYN cookies) and socket-id routing.
//!
//! The polling contract is documented on [`connection::Connection`].

#![forbid(unsafe_code)]

pub mod buffer;
pub mod cc;
pub mod connection;
pub mod endpoint;
pub mod loss_list;
pub mod packet;
pub mod policy;
pub mod queue_delay;
pub mod range_set;
pub mod rng;
pub mod seq;
pub mod stats;
pub mod time;

pub use seq::{AckNo, MsgNo, SeqNo, SocketId};
pub use time::Instant;
