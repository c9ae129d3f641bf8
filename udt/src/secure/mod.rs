//! Encrypted, mutually authenticated connections between two `udt` ends (docs/security.md).
//!
//! A secured connection is a plain UDT connection whose first bytes, in both directions, are a
//! key agreement ([`handshake`]); once both ends hold the keys, every datagram of the
//! connection, data and control, is sealed with AEAD and replay protection ([`seal`]) by the
//! I/O thread. A plain UDT4 peer never sees any of this: security is off unless the
//! application asks for it, on both ends.

pub mod handshake;
pub mod key_file;
pub mod seal;
pub mod strength;

pub use handshake::{Credential, HandshakeError};
pub use key_file::{key_from_secret, KeyFileError};
pub use seal::SealCounters;
pub use strength::{check_code_strength, code_strength_bits, MIN_CODE_BITS};

/// The key agreements a secured listener runs at once: in all, and from one source (an IPv4
/// address or an IPv6 /64). A connection beyond either is closed at once.
pub fn acceptor_limits() -> (usize, usize) {
    (MAX_AGREEING, MAX_AGREEING_PER_SOURCE)
}

/// Key agreements a secured listener runs at once, at most (`acceptor.rs`).
pub const MAX_AGREEING: usize = 256;
/// Key agreements running at once from one source, at most: a quarter of all, so one source
/// cannot hold every place.
pub const MAX_AGREEING_PER_SOURCE: usize = MAX_AGREEING / 4;
