//! Handshake body, 48 bytes (protocol notes §1 "Handshake body", §7).

use super::{EmitError, ParseError};
use crate::seq::{SeqNo, SocketId};

/// Handshake body length.
pub const HANDSHAKE_BODY_LEN: usize = 48;

/// Socket type word (4.11 sends 1 = stream, 2 = datagram).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SocketType {
    /// 1: byte stream.
    Stream,
    /// 2: messages (datagram).
    Datagram,
    /// Any other value (answered with a rejection).
    Other(u32),
}

impl SocketType {
    /// From the wire word.
    pub fn from_word(w: u32) -> Self {
        todo!()
    }
    /// The wire word.
    pub fn word(self) -> u32 {
        todo!()
    }
}

/// Request type word (signed on the wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestType {
    /// 1: first request of a regular connection; echoed by the cookie reply.
    Request,
    /// -1: request carrying the cookie; the listener's final answer; rendezvous step two.
    Response,
    /// 0: rendezvous request.
    Rendezvous,
    /// -2: answer from an already connected rendezvous socket.
    RendezvousConnected,
    /// 1002: rejected.
    Rejected,
    /// Any other value.
    Other(i32),
}

impl RequestType {
    /// From the wire word (interpreted as i32).
    pub fn from_word(w: u32) -> Self {
        todo!()
    }
    /// The wire word.
    pub fn word(self) -> u32 {
        todo!()
    }
}

/// The handshake body as a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handshake {
    /// Protocol version (4).
    pub version: u32,
    /// Socket type.
    pub socket_type: SocketType,
    /// Initial sequence number of the sender of this handshake.
    pub initial_seq: SeqNo,
    /// Maximum segment size in bytes (includes 28 bytes of IP and UDP headers).
    pub mss: u32,
    /// Flow window in packets.
    pub flow_window: u32,
    /// Request type.
    pub request_type: RequestType,
    /// The sender's socket id.
    pub socket_id: SocketId,
    /// SYN cookie.
    pub cookie: u32,
    /// Peer address words as UDT4 writes them (host-order for IPv4 in word 0).
    pub peer_ip: [u32; 4],
}

impl Handshake {
    /// Parse the 48-byte body (extra trailing bytes are ignored; fewer is an error).
    /// Note: word 2 (ISN) is kept as all 32 bits masked to 31.
    pub fn parse(body: &[u8]) -> Result<Self, ParseError> {
        todo!()
    }
    /// Write the 48-byte body.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        todo!()
    }
    /// Encode an IP address the way UDT4 does: IPv4 as a little-endian-host integer in word 0,
    /// IPv6 as four host-order (little-endian) words.
    pub fn encode_peer_ip(addr: std::net::IpAddr) -> [u32; 4] {
        todo!()
    }
}
