//! The end-to-end check between two of our ends: once every byte is at the receiver, the
//! sending end sends the BLAKE3 digest of the whole file ([`crate::storage::Source::digest`])
//! and the receiving session reports it ([`crate::Session::peer_digest`]), for the receiver's
//! application to compare with the digest of what it wrote (`udt fetch` does, and fails on a
//! mismatch).
//!
//! None of the three protocols has such a message, so each carries it where a reference peer
//! ignores it or refuses it harmlessly, and a receiver that gets no digest (a reference
//! sender) simply has none to compare:
//! - Tsunami: after its stop record our client asks for the file named [`TSUNAMI_REQUEST`]; a
//!   reference server answers "cannot open" (8), ours [`TSUNAMI_ANSWER`] and the digest.
//! - RBUDP: after the final bitmap (done flag set) our sender writes [`TAG`] and the digest on
//!   TCP; a reference receiver has closed by then, a reference sender closes without it.
//! - FOBS: our own protocol: a digest message after the last chunk (`udt-bulk/FOBS.md`).
//!
//! A receiver waits for the digest at most [`wait`] (the sender reads the whole file to
//! compute it), then ends without one.

use std::time::Duration;

/// The 4 bytes before a digest where the protocol has no message of its own (RBUDP).
pub const TAG: [u8; 4] = *b"UDTD";
/// The file name our Tsunami client asks for after its stop record: a reference server cannot
/// open it (it begins with a control character no file of ours is named with).
pub const TSUNAMI_REQUEST: &str = "\u{1}udt-blake3";
/// Our Tsunami server's answer to [`TSUNAMI_REQUEST`] before the 32 digest bytes (the
/// reference answers 0 or 8 to a name, never this).
pub const TSUNAMI_ANSWER: u8 = 0xB3;
/// Bytes of a digest.
pub const LEN: usize = 32;

/// How long a receiver waits for the digest of a file of `size` bytes: a few seconds plus the
/// time to read it at 200 MB/s, at most ten minutes.
pub fn wait(size: u64) -> Duration {
    Duration::from_secs(5 + size / 200_000_000).min(Duration::from_secs(600))
}
