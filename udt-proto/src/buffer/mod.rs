//! Protocol buffers: what the application wrote and the peer has not acknowledged
//! ([`SendBuffer`]), and what arrived and the application has not read ([`RecvBuffer`]), which
//! keeps arriving packets in their own [`RxDatagram`]s.
//!
//! Both are rings of packet slots, so the hot path never allocates: a payload is copied once
//! into the send buffer by `write`, once out of it into the datagram (or not at all, when a
//! driver hands the kernel iovecs into the send storage); on arrival the receive buffer takes
//! the datagram the driver received into (or copies the payload in, when given a byte slice),
//! and `read` copies it out once, or lends the datagrams themselves ([`RecvChunk`]) to a reader
//! that only looks at the bytes.

pub mod chunk;
pub mod datagram;
pub mod recv;
pub mod send;

pub use chunk::RecvChunk;
pub use datagram::RxDatagram;
pub use recv::{InsertOutcome, RecvBuffer, RecvMsgError};
pub use send::{Lookup, OutPacket, SendBuffer, WriteMsgError};
