//! RBUDP's knobs, with the reference's defaults where it has them (seed-protocols.md, QUANTA
//! RBUDP 1.0) and our limits where it has none.
//!
//! Invariant: a sender never starts without an explicit rate ([`Params::rate`]): RBUDP has no
//! congestion control, so a default rate would be a guess at someone else's path.

use std::time::Duration;

use super::wire::{WireError, MAX_PAYLOAD};
use crate::error::BulkError;

/// The error a sender gives when no rate was set.
pub const NO_RATE: &str =
    "RBUDP has no congestion control: give the sending rate explicitly (--rate), at most the path's capacity";

/// How an RBUDP transfer runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    /// The sender's blasting rate in bits per second of payload (the sequence headers are not
    /// counted, as in the reference): packets go `payload x 8 / rate` seconds apart. No default:
    /// a sender refuses to start without it.
    pub rate_bps: Option<u64>,
    /// File bytes per datagram, after the 4-byte sequence header: the reference's `MTU` or
    /// `PAYLOAD` argument, which both sides must give the same (a datagram is `payload + 4`
    /// bytes, the last one shorter). Default 1460.
    pub payload: usize,
    /// The sender's TCP port (the reference's 38000), which is also the UDP port its datagrams
    /// come from (the reference receiver takes datagrams from that port only). For the tool's
    /// listen and connect; [`super::serve_connection`] uses its listener's port.
    pub tcp_port: u16,
    /// The receiver's UDP port, where the sender sends (the reference's 38001).
    pub udp_port: u16,
    /// The largest file a receiver accepts, in bytes: it sizes its sink to the announced size
    /// and keeps a bitmap of `size / payload / 8` bytes. Default 64 GiB.
    pub max_size: u64,
    /// Fail when this many blasts in a row brought no new packet. Default 20.
    pub max_stalled_rounds: u32,
    /// Fail when the peer is silent this long while we wait for it (a receiver at any time, a
    /// sender while it waits for a request or a bitmap). Default 30 s.
    pub silence_limit: Duration,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            rate_bps: None,
            payload: 1460,
            tcp_port: 38000,
            udp_port: 38001,
            max_size: 64 << 30,
            max_stalled_rounds: 20,
            silence_limit: Duration::from_secs(30),
        }
    }
}

impl Params {
    /// The rate a sender blasts at, or the error that says to give one.
    pub fn rate(&self) -> Result<u64, BulkError> {
        match self.rate_bps {
            Some(rate) if rate > 0 => Ok(rate),
            _ => Err(BulkError::Io(std::io::Error::new(std::io::ErrorKind::InvalidInput, NO_RATE))),
        }
    }

    /// Check the knobs both sides use.
    pub fn check(&self) -> Result<(), BulkError> {
        if self.payload == 0 || self.payload > MAX_PAYLOAD {
            return Err(BulkError::Protocol(WireError::BadPayload(self.payload).to_string()));
        }
        if self.max_stalled_rounds == 0 {
            return Err(BulkError::Protocol("max_stalled_rounds must be at least 1".into()));
        }
        Ok(())
    }

    /// Time between two packets at `rate` bits per second (the reference's
    /// `8 x payload x 1000 / rate_kbps` microseconds, in nanoseconds here).
    pub fn gap(&self, rate: u64) -> Duration {
        let nanos = (self.payload as u128 * 8 * 1_000_000_000) / u128::from(rate.max(1));
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sender_without_a_rate_is_told_to_give_one() {
        for rate_bps in [None, Some(0)] {
            let err = Params { rate_bps, ..Params::default() }.rate().unwrap_err();
            assert_eq!(err.to_string(), NO_RATE);
        }
        assert_eq!(Params { rate_bps: Some(5), ..Params::default() }.rate().unwrap(), 5);
    }

    #[test]
    fn the_gap_is_the_payload_at_the_rate() {
        let p = Params::default();
        // 1460 bytes at 100 Mb/s: 116.8 us (the reference: 8 x 1460 x 1000 / 100000 = 116 us).
        assert_eq!(p.gap(100_000_000), Duration::from_nanos(116_800));
        assert_eq!(p.gap(1), Duration::from_secs(11_680));
    }

    #[test]
    fn payloads_a_datagram_cannot_carry_are_refused() {
        assert!(Params::default().check().is_ok());
        for payload in [0, MAX_PAYLOAD + 1] {
            assert!(Params { payload, ..Params::default() }.check().is_err());
        }
        assert!(Params { max_stalled_rounds: 0, ..Params::default() }.check().is_err());
    }
}
