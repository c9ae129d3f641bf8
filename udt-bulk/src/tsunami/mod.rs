//! Tsunami UDP 1.1 (protocol revision 0x20061025), wire-compatible with `tsunamid` and `tsunami`
//! (seed-protocols.md, Tsunami; Meiss 2002 as described by Ren et al. 2008).
//!
//! The client pulls: it connects over TCP, proves the shared secret, names a file and its
//! transfer parameters, and names a UDP port; the server then sends the file's blocks over UDP
//! as fast as its inter-packet delay allows, and the client asks on TCP for the blocks it
//! misses, reports its error rate (which steers the delay), and says stop once it has every
//! block.
//!
//! - [`wire`]: every message's bytes; [`auth`]: the MD5 challenge-response; [`rate`]: the
//!   error-rate report and the inter-packet delay. The receiver's set of held blocks is a
//!   [`udt_proto::range_set::RangeSet`]: memory grows with the gaps, not with the file.
//! - [`Client`] and [`Server`]: the two sans-IO sessions; [`fetch`] and [`serve_connection`]
//!   run them over sockets.
//!
//! What we add without changing the wire (a reference peer cannot tell):
//! - Our client binds its UDP socket to port 0 and announces the port it got, instead of the
//!   reference's fixed 46224, so several clients run on one host.
//! - Our server sends only regular files under the directory it serves
//!   ([`crate::confine`]); the reference opens any path it is sent.
//! - Sizes are computed in 64 bits: files over 4 GiB go through as long as they fit in
//!   2^32 - 1 blocks of the chosen size; a larger file is refused with a clear reason (the
//!   reference would wrap its 32-bit block count).
//! - Every refusal ends with a one-line reason on both ends (wrong secret, a file the server
//!   cannot or will not open, bad parameters).
//! - There is no default secret: see [`auth`]. Give the reference programs' `kitten` explicitly
//!   to talk to a reference peer that kept its default.
//! - The end-to-end digest ([`crate::digest`]), carried as a file request: with its stop record
//!   our client sends the name line [`crate::digest::TSUNAMI_REQUEST`] + `\n` (the control byte
//!   1, then `udt-blake3`). Our server never opens that name: it answers the byte
//!   [`crate::digest::TSUNAMI_ANSWER`] (0xB3) and the 32-byte BLAKE3 of the file it last sent on
//!   the connection, or 8 ("cannot open") before any file was sent; then it waits for another
//!   name as after any transfer. A reference server tries to open the name and answers 8, and
//!   our client ends without a digest (the reference then waits for another name and exits when
//!   we close). A reference client never sends that name. Our client reports the digest in
//!   [`crate::Session::peer_digest`] (`Outcome::peer_digest` from [`fetch`]); it waits at most
//!   [`crate::digest::wait`] for the answer, and the transfer counts as done in every case.
//!
//! Where we differ in behaviour (the wire is the same):
//! - Our client is always lossless: it asks until every block is in (the reference's lossy and
//!   "semi-lossy" modes are client-side and not offered). Data is byte-exact or the fetch fails.
//! - Our client sends its requests and error rate on a timer (every
//!   [`Params::update_period`]) and when an `X` block arrives, at most once per two round
//!   trips, rather than on counts of received blocks; it has no ring buffer, so its error rate
//!   counts only the share of blocks asked again.
//! - Our server repeats the last (`X`) block every 10 x its current delay, kept within 1 ms to
//!   100 ms (the reference: 10 x its largest accumulated delay, without a floor), and sends queued
//!   retransmissions (at most [`server::MAX_QUEUED`], duplicates merged) ahead of originals.
//! - A restart makes our server resend originals from the named block itself; the reference
//!   resumes one block later, and our client asks for that block again.
//! - After a stop, our server takes another file name on the same connection for
//!   [`Params::next_request_wait`], and ends when the client closes or that time passes. A
//!   refused request ends the connection (the reference waits for another name). Directory
//!   listings (`!#DIR??`) and multi-file gets (`*`) are not served: they are refused like any
//!   name that is not a file.

use std::time::Duration;

pub mod auth;
mod client;
mod failure;
mod inbox;
mod net;
pub mod rate;
pub mod server;
pub mod wire;

pub use client::Client;
pub use failure::Failure;
pub use net::{fetch, serve_connection, ServeReport};
pub use server::{Catalog, ServedFile, Server};

/// The protocol's knobs. Client-side ones travel in the transfer request; server-side ones
/// shape how a server waits. Defaults are the reference programs', except the secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    /// The shared secret (both ends). `None`, empty, or holding a NUL byte: refused, see
    /// [`auth`].
    pub secret: Option<Vec<u8>>,
    /// Client: bytes of file per datagram, 1 to [`wire::MAX_BLOCK_SIZE`] (1024).
    pub block_size: u32,
    /// Client: the rate the server aims at, bits per second, nonzero (650,000,000).
    pub target_rate: u32,
    /// Client: error rate above which the server slows down, percent x 1000 (7500 = 7.5 %).
    pub error_threshold: u32,
    /// Client: the slow-down factor on the server's delay, numerator and nonzero denominator
    /// (25/24).
    pub slower: (u16, u16),
    /// Client: the speed-up factor on the server's delay, numerator and nonzero denominator
    /// (5/6).
    pub faster: (u16, u16),
    /// Client: the share of the previous error rate kept in each report, percent (25).
    pub history: u8,
    /// Client: how often it asks for missing blocks and reports its error rate (350 ms).
    pub update_period: Duration,
    /// Client: how long [`fetch`] waits for the TCP connection (10 s).
    pub connect_timeout: Duration,
    /// Server: give up on a client that sends nothing for this long during a transfer (15 s).
    pub heartbeat_timeout: Duration,
    /// Server: how long to wait for another file name after a completed transfer before
    /// ending the connection (2 s).
    pub next_request_wait: Duration,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            secret: None,
            block_size: 1024,
            target_rate: 650_000_000,
            error_threshold: 7500,
            slower: (25, 24),
            faster: (5, 6),
            history: 25,
            update_period: Duration::from_millis(350),
            connect_timeout: Duration::from_secs(10),
            heartbeat_timeout: Duration::from_secs(15),
            next_request_wait: Duration::from_secs(2),
        }
    }
}
