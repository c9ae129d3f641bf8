//! The bulk transfer protocols the UDT papers compare UDT with, built so that they run over the
//! same paths, in the same tool and in the same simulator as UDT:
//!
//! - [`tsunami`]: Tsunami UDP 1.1 (Meiss 2002), wire-compatible with `tsunamid`/`tsunami`.
//! - [`rbudp`]: Reliable Blast UDP (He et al. 2002), wire-compatible with QUANTA RBUDP 1.0.
//! - [`fobs`]: FOBS (Dickens, Kannan, Gropp 2003), built from the paper (no public
//!   implementation exists).
//!
//! Each protocol is a sans-IO [`session::Session`]: it never reads a clock, never touches a
//! socket and never draws from a global random generator (`now` and randomness are passed in),
//! exactly like the UDT core, so the simulator and the socket [`driver`] run the same code. Files
//! are reached through [`storage`] (positioned reads and writes), never through the network
//! layer. Every byte from the network is hostile: parsers return errors, never panic, and a
//! session that receives nonsense fails with a one-line reason or drops and counts the datagram.

pub mod confine;
pub mod digest;
pub mod driver;
pub mod error;
pub mod fobs;
pub mod held;
pub mod pace;
pub mod pair;
pub mod rbudp;
pub mod received;
pub mod session;
pub mod storage;
pub mod tsunami;

pub use error::BulkError;
pub use session::{Counters, Event, Session};
pub use udt_proto::time::Instant;
