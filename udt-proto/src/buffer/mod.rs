//! Protocol buffers: what the application wrote and the peer has not acknowledged
//! ([`SendBuffer`]), and what arrived and the application has not read ([`RecvBuffer`]).
//!
//! Both are rings of fixed-size packet slots allocated once, so the hot path never allocates:
//! a payload is copied once into the send buffer by `write`, once out of it into the datagram;
//! once into the receive buffer on arrival, once out by `read`.

pub mod recv;
pub mod send;

pub use recv::{InsertOutcome, RecvBuffer, RecvMsgError};
pub use send::{Lookup, OutPacket, SendBuffer, WriteMsgError};
