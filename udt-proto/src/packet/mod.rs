//! The UDT4 4.11 wire format (protocol notes §1; thesis §2.2.2).
//!
//! Every packet has a typed view over bytes (`*View`, validated once by `new_checked` so that no
//! accessor can panic) and a plain value with `parse` and `emit`:
//!
//! * [`DataHeader`] / [`DataView`]: the 16-byte data header; the payload stays borrowed.
//! * [`ControlPacket`]: one value per control type ([`Control`]), bodies in [`handshake`],
//!   [`ack`], [`nak`], [`drop_request`].
//!
//! Invariants: `parse` never panics on any input and returns a [`ParseError`] naming what is
//! wrong; `emit` writes into a caller's buffer (never allocating), returns the number of bytes
//! written, and parsing what it wrote gives back the same value. Every packet UDT4 4.11 sends
//! re-emits byte-exact; `parse` is lenient in a few documented places where 4.11 ignores bits
//! (reserved bits and unused additional-info words of control packets, padding bodies, trailing
//! bytes after a fixed-size body; see [`control`]), and those are written back in canonical form.
//! All 32-bit words are big-endian (protocol notes §1).

pub mod ack;
pub mod control;
pub mod data;
pub mod drop_request;
pub mod handshake;
pub mod nak;

pub use ack::{
    Ack, AckInfo, AckQueue, AckRates, FULL_ACK_BODY_LEN, FULL_ACK_WITH_QUEUE_BODY_LEN,
    FULL_ACK_WITH_RATES_BODY_LEN, LIGHT_ACK_BODY_LEN,
};
pub use control::{Control, ControlPacket, ControlType};
pub use data::{Boundary, DataHeader, DataView, DATA_HEADER_LEN};
pub use drop_request::{DropRequest, DROP_REQUEST_BODY_LEN};
pub use handshake::{Handshake, RequestType, SocketType, HANDSHAKE_BODY_LEN};
pub use nak::{LossEntry, NakList};

/// Length of every UDT header, data or control.
pub const HEADER_LEN: usize = 16;
/// IP (20) + UDP (8) header bytes counted in the MSS (UDT4 uses the IPv4 figure for both families).
pub const IP_UDP_OVERHEAD: usize = 28;
/// Smallest MSS UDT4 accepts.
pub const MIN_MSS: u32 = 76;
/// Largest MSS we accept (a jumbo-frame-sized UDP datagram).
pub const MAX_MSS: u32 = 65_535;

/// What a received datagram turned out to be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Packet<'a> {
    /// A data packet: header plus borrowed payload.
    Data(DataHeader, &'a [u8]),
    /// A control packet.
    Control(ControlPacket<'a>),
}

impl<'a> Packet<'a> {
    /// Parse one UDT packet (a whole UDP payload).
    pub fn parse(bytes: &'a [u8]) -> Result<Packet<'a>, ParseError> {
        if bytes.len() < HEADER_LEN {
            return Err(ParseError::Truncated { what: "header", need: HEADER_LEN, got: bytes.len() });
        }
        if Packet::peek_is_data(bytes) {
            let view = DataView::new_checked(bytes)?;
            Ok(Packet::Data(view.header(), view.payload()))
        } else {
            Ok(Packet::Control(ControlPacket::parse(bytes)?))
        }
    }

    /// Destination socket id (word 3), readable without parsing the rest; `None` if shorter
    /// than a header. Used by multiplexers to route datagrams.
    pub fn peek_destination(bytes: &[u8]) -> Option<crate::SocketId> {
        let w = bytes.get(12..16)?;
        Some(crate::SocketId(u32::from_be_bytes([w[0], w[1], w[2], w[3]])))
    }

    /// Whether `bytes` start like a data packet (the header's first bit clear), without
    /// parsing. `false` for an empty datagram.
    pub fn peek_is_data(bytes: &[u8]) -> bool {
        bytes.first().is_some_and(|b| b & 0x80 == 0)
    }

    /// Bytes `emit` will write.
    pub fn encoded_len(&self) -> usize {
        match self {
            Packet::Data(_, payload) => DATA_HEADER_LEN + payload.len(),
            Packet::Control(c) => c.encoded_len(),
        }
    }

    /// Write the packet into `buf`; returns the bytes written.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        match self {
            Packet::Data(h, payload) => {
                let total = DATA_HEADER_LEN + payload.len();
                if buf.len() < total {
                    return Err(EmitError::BufferTooSmall { need: total, got: buf.len() });
                }
                h.emit(buf)?;
                buf[DATA_HEADER_LEN..total].copy_from_slice(payload);
                Ok(total)
            }
            Packet::Control(c) => c.emit(buf),
        }
    }
}

/// Why a datagram is not a valid UDT packet.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Fewer bytes than the part being read needs.
    #[error("truncated {what}: need {need} bytes, got {got}")]
    Truncated {
        /// The part being read.
        what: &'static str,
        /// Bytes it needs.
        need: usize,
        /// Bytes present.
        got: usize,
    },
    /// A control type UDT4 does not define.
    #[error("unknown control type {0:#06x}")]
    UnknownControlType(u16),
    /// A body whose length does not fit its type.
    #[error("bad {what} body length {len}")]
    BadLength {
        /// The packet kind.
        what: &'static str,
        /// The body length found.
        len: usize,
    },
    /// A control packet handed to a data parser, or a data packet to a control parser.
    #[error("not a {expected} packet")]
    WrongKind {
        /// The kind the parser expected ("data" or "control").
        expected: &'static str,
    },
    /// A NAK whose last word starts a range with no end word.
    #[error("NAK range start without an end word")]
    UnterminatedRange,
    /// A NAK range end word with its high bit set.
    #[error("NAK range end word has the range bit set")]
    BadRangeEnd,
}

/// Why a packet could not be written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EmitError {
    /// The caller's buffer is smaller than the packet.
    #[error("buffer too small: need {need} bytes, got {got}")]
    BufferTooSmall {
        /// Bytes the packet needs.
        need: usize,
        /// Bytes available.
        got: usize,
    },
}

/// Read big-endian word `i` (0-based) of `bytes`; callers have checked the length.
pub(crate) fn word(bytes: &[u8], i: usize) -> u32 {
    let o = i * 4;
    u32::from_be_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]])
}

/// Write big-endian word `i` (0-based) of `buf`; callers have checked the length.
pub(crate) fn put_word(buf: &mut [u8], i: usize, v: u32) {
    buf[i * 4..i * 4 + 4].copy_from_slice(&v.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seq::{MsgNo, SeqNo, SocketId};

    #[test]
    fn dispatches_on_bit_31() {
        let mut buf = [0xa5u8; 64];
        let data = Packet::Data(
            DataHeader {
                seq: SeqNo::new(5),
                boundary: Boundary::Solo,
                in_order: true,
                msg: MsgNo::new(9),
                timestamp: 77,
                dst: SocketId(0x0102_0304),
            },
            b"hi",
        );
        let n = data.emit(&mut buf).unwrap();
        assert_eq!(n, data.encoded_len());
        assert_eq!(Packet::parse(&buf[..n]), Ok(data));
        assert_eq!(Packet::peek_destination(&buf[..n]), Some(SocketId(0x0102_0304)));
        assert!(Packet::peek_is_data(&buf[..n]));

        let ctl = Packet::Control(ControlPacket { timestamp: 1, dst: SocketId(2), body: Control::Shutdown });
        let n = ctl.emit(&mut buf).unwrap();
        assert_eq!((n, ctl.encoded_len()), (20, 20));
        assert_eq!(Packet::parse(&buf[..n]), Ok(ctl));
        assert_eq!(Packet::peek_destination(&buf[..n]), Some(SocketId(2)));
        assert!(!Packet::peek_is_data(&buf[..n]));
        assert!(!Packet::peek_is_data(&[]));
    }

    #[test]
    fn short_datagrams_are_errors() {
        let bytes = [0x80u8; 16];
        for len in 0..HEADER_LEN {
            assert_eq!(
                Packet::parse(&bytes[..len]),
                Err(ParseError::Truncated { what: "header", need: 16, got: len })
            );
            assert_eq!(Packet::peek_destination(&bytes[..len]), None);
        }
    }

    #[test]
    fn words_are_big_endian() {
        let mut buf = [0xa5u8; 8];
        put_word(&mut buf, 1, 0x0102_0304);
        assert_eq!(buf, [0xa5, 0xa5, 0xa5, 0xa5, 1, 2, 3, 4]);
        assert_eq!(word(&buf, 1), 0x0102_0304);
    }
}
