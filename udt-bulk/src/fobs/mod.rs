//! FOBS, the Fast Object-Based data transfer System (Dickens, Kannan and Gropp; Kannan et al.
//! 2003), built from the paper: no public implementation exists, so the wire format, the rate
//! rule and the connection setup are ours (`udt-bulk/FOBS.md` documents them and marks what
//! comes from the paper and what we chose).
//!
//! A file goes in chunks, one after another; a chunk is cut into segments of a fixed number of
//! packets. Data goes over UDP from sender to receiver only; control goes over two TCP
//! connections: channel 0 (feedback: end-of-segment, DONE and the segmented acknowledgements)
//! and channel 1 (high priority: chunk complete, and the sender's BLAKE3 digest of the file
//! once the last chunk is complete, [`crate::digest`]). The sender paces its datagrams at a
//! rate adapted from the loss the acknowledgements reveal.
//!
//! - [`wire`]: every message and datagram.
//! - [`chunk`]: chunk and segment geometry, and the per-chunk bit maps.
//! - [`rate`]: the rate rule and the round-trip estimate.
//! - [`SenderSession`], [`ReceiverSession`]: the sans-IO state machines of a transfer.
//! - [`Server`], [`Client`] ([`setup`]): the same, setup included (request, accept, channel 1).
//! - [`serve_connection`], [`fetch`]: those over real sockets with [`crate::driver`].

pub mod chunk;
mod net;
mod outbox;
mod params;
pub mod rate;
mod receiver;
mod sender;
pub mod setup;
mod stats;
pub mod wire;

pub use net::{fetch, serve_connection, ServeReport};
pub use params::{
    AckScheme, Params, Transfer, MAX_CHUNK_PACKETS, MAX_PAYLOAD, MAX_SEGMENT_PACKETS, MIN_PAYLOAD,
};
pub use receiver::ReceiverSession;
pub use sender::SenderSession;
pub use setup::{Client, Server};
pub use stats::{loss_percent, FobsStats};
