//! Data packet header (protocol notes §1, "Data packet header").
//!
//! Word 0: bit 31 = 0, bits 30..0 sequence number. Word 1: bits 31..30 boundary, bit 29 in-order,
//! bits 28..0 message number. Word 2: timestamp (us). Word 3: destination socket id.
//!
//! Every bit of the header maps to a field of [`DataHeader`], so parse-then-emit of a data packet
//! is always byte-exact; the payload is never copied by parsing and never byte-swapped.

use super::{put_word, word, EmitError, ParseError};
use crate::seq::{MsgNo, SeqNo, SocketId};

/// Length of the data header.
pub const DATA_HEADER_LEN: usize = 16;

// Field layout (protocol notes §1): word indices and masks, listed once.
const SEQ_WORD: usize = 0;
const MSG_WORD: usize = 1;
const TIMESTAMP_WORD: usize = 2;
const DST_WORD: usize = 3;
const CONTROL_BIT: u32 = 0x8000_0000;
const BOUNDARY_SHIFT: u32 = 30;
const IN_ORDER_BIT: u32 = 1 << 29;
const MSG_MASK: u32 = 0x1FFF_FFFF;

/// Position of a packet within its message (word 1, bits 31..30).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Boundary {
    /// `00`: a middle packet.
    Middle,
    /// `01`: the last packet.
    Last,
    /// `10`: the first packet.
    First,
    /// `11`: the whole message in one packet.
    Solo,
}

impl Boundary {
    /// From the two wire bits (only the low two bits of `b` are looked at).
    pub fn from_bits(b: u32) -> Boundary {
        match b & 0b11 {
            0b00 => Boundary::Middle,
            0b01 => Boundary::Last,
            0b10 => Boundary::First,
            _ => Boundary::Solo,
        }
    }
    /// The two wire bits.
    pub fn bits(self) -> u32 {
        match self {
            Boundary::Middle => 0b00,
            Boundary::Last => 0b01,
            Boundary::First => 0b10,
            Boundary::Solo => 0b11,
        }
    }
    /// This packet starts a message (First or Solo).
    pub fn is_first(self) -> bool {
        matches!(self, Boundary::First | Boundary::Solo)
    }
    /// This packet ends a message (Last or Solo).
    pub fn is_last(self) -> bool {
        matches!(self, Boundary::Last | Boundary::Solo)
    }
}

/// The plain value of a data header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataHeader {
    /// Sequence number.
    pub seq: SeqNo,
    /// Position within the message.
    pub boundary: Boundary,
    /// In-order delivery flag.
    pub in_order: bool,
    /// Message number.
    pub msg: MsgNo,
    /// Microseconds since the sender started (wire timestamp).
    pub timestamp: u32,
    /// Destination socket id.
    pub dst: SocketId,
}

impl DataHeader {
    /// Parse the 16 header bytes at the start of `bytes` (the payload is not looked at).
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        Ok(DataView::new_checked(bytes)?.header())
    }

    /// Word 1 as sent: boundary, in-order flag and message number.
    fn msg_word(&self) -> u32 {
        (self.boundary.bits() << BOUNDARY_SHIFT)
            | if self.in_order { IN_ORDER_BIT } else { 0 }
            | (self.msg.value() & MSG_MASK)
    }

    /// Write the 16 header bytes at the start of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        if buf.len() < DATA_HEADER_LEN {
            return Err(EmitError::BufferTooSmall { need: DATA_HEADER_LEN, got: buf.len() });
        }
        // Bit 31 = 0 marks a data packet (protocol notes §1); SeqNo is already 31 bits.
        put_word(buf, SEQ_WORD, self.seq.value() & !CONTROL_BIT);
        put_word(buf, MSG_WORD, self.msg_word());
        put_word(buf, TIMESTAMP_WORD, self.timestamp);
        put_word(buf, DST_WORD, self.dst.0);
        Ok(DATA_HEADER_LEN)
    }
}

/// A checked view over a data packet's bytes.
///
/// Construction through [`DataView::new_checked`] guarantees at least [`DATA_HEADER_LEN`] bytes
/// with bit 31 clear, so no accessor can panic.
#[derive(Clone, Copy, Debug)]
pub struct DataView<'a> {
    bytes: &'a [u8],
}

impl<'a> DataView<'a> {
    /// Validate that `bytes` holds at least a data header with bit 31 clear.
    pub fn new_checked(bytes: &'a [u8]) -> Result<Self, ParseError> {
        if bytes.len() < DATA_HEADER_LEN {
            return Err(ParseError::Truncated {
                what: "data header",
                need: DATA_HEADER_LEN,
                got: bytes.len(),
            });
        }
        if word(bytes, SEQ_WORD) & CONTROL_BIT != 0 {
            return Err(ParseError::WrongKind { expected: "data" });
        }
        Ok(DataView { bytes })
    }
    /// Sequence number.
    pub fn seq(&self) -> SeqNo {
        SeqNo::new(word(self.bytes, SEQ_WORD))
    }
    /// Boundary flags.
    pub fn boundary(&self) -> Boundary {
        Boundary::from_bits(word(self.bytes, MSG_WORD) >> BOUNDARY_SHIFT)
    }
    /// In-order delivery flag.
    pub fn in_order(&self) -> bool {
        word(self.bytes, MSG_WORD) & IN_ORDER_BIT != 0
    }
    /// Message number.
    pub fn msg(&self) -> MsgNo {
        MsgNo::new(word(self.bytes, MSG_WORD))
    }
    /// Wire timestamp (us).
    pub fn timestamp(&self) -> u32 {
        word(self.bytes, TIMESTAMP_WORD)
    }
    /// Destination socket id.
    pub fn dst(&self) -> SocketId {
        SocketId(word(self.bytes, DST_WORD))
    }
    /// The whole header as a value.
    pub fn header(&self) -> DataHeader {
        DataHeader {
            seq: self.seq(),
            boundary: self.boundary(),
            in_order: self.in_order(),
            msg: self.msg(),
            timestamp: self.timestamp(),
            dst: self.dst(),
        }
    }
    /// The payload after the header (may be empty).
    pub fn payload(&self) -> &'a [u8] {
        self.bytes.get(DATA_HEADER_LEN..).unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Packet;

    fn sample() -> DataHeader {
        DataHeader {
            seq: SeqNo::new(0x4294_d24c),
            boundary: Boundary::Solo,
            in_order: false,
            msg: MsgNo::new(1),
            timestamp: 0x6f8,
            dst: SocketId(0x01ea_a17a),
        }
    }

    /// README example E: a whole message in one packet with a 4-byte payload.
    const EXAMPLE_E: [u8; 20] = [
        0x42, 0x94, 0xd2, 0x4c, 0xc0, 0x00, 0x00, 0x01, 0x00, 0x00, 0x06, 0xf8, 0x01, 0xea, 0xa1, 0x7a, 0x20,
        0x00, 0x00, 0x00,
    ];

    #[test]
    fn boundary_bits_round_trip() {
        for b in 0..4 {
            assert_eq!(Boundary::from_bits(b).bits(), b);
        }
        assert_eq!(Boundary::from_bits(0b110), Boundary::First);
        assert!(Boundary::Solo.is_first() && Boundary::Solo.is_last());
        assert!(Boundary::First.is_first() && !Boundary::First.is_last());
        assert!(!Boundary::Last.is_first() && Boundary::Last.is_last());
        assert!(!Boundary::Middle.is_first() && !Boundary::Middle.is_last());
    }

    #[test]
    fn parses_example_e() {
        let v = DataView::new_checked(&EXAMPLE_E).unwrap();
        assert_eq!(v.header(), sample());
        assert_eq!(v.payload(), &[0x20, 0, 0, 0]);
        assert_eq!(v.seq(), SeqNo::new(1_117_049_420));
        assert_eq!(v.dst(), SocketId(0x01ea_a17a));
    }

    #[test]
    fn emits_example_e_into_dirty_buffer() {
        let mut buf = [0xa5u8; 40];
        let n = Packet::Data(sample(), &[0x20, 0, 0, 0]).emit(&mut buf).unwrap();
        assert_eq!(n, 20);
        assert_eq!(&buf[..n], &EXAMPLE_E);
        assert!(buf[n..].iter().all(|&b| b == 0xa5));
    }

    #[test]
    fn every_field_round_trips() {
        let boundaries = [Boundary::Middle, Boundary::Last, Boundary::First, Boundary::Solo];
        for (i, &boundary) in boundaries.iter().enumerate() {
            for in_order in [false, true] {
                for (seq, msg, ts, dst) in [
                    (0, 0, 0, 0),
                    (0x7FFF_FFFF, 0x1FFF_FFFF, u32::MAX, u32::MAX),
                    (0x1234_5678, 0x0ABC_DEF0, 0x8000_0001, 0xDEAD_BEEF + i as u32),
                ] {
                    let h = DataHeader {
                        seq: SeqNo::new(seq),
                        boundary,
                        in_order,
                        msg: MsgNo::new(msg),
                        timestamp: ts,
                        dst: SocketId(dst),
                    };
                    let mut buf = [0xa5u8; 16];
                    assert_eq!(h.emit(&mut buf), Ok(16));
                    assert_eq!(buf[0] & 0x80, 0, "data packets have bit 31 clear");
                    let v = DataView::new_checked(&buf).unwrap();
                    assert_eq!(v.header(), h);
                    assert!(v.payload().is_empty());
                    assert_eq!(DataHeader::parse(&buf), Ok(h));
                }
            }
        }
    }

    #[test]
    fn every_truncation_is_an_error() {
        for len in 0..DATA_HEADER_LEN {
            assert_eq!(
                DataView::new_checked(&EXAMPLE_E[..len]).unwrap_err(),
                ParseError::Truncated { what: "data header", need: 16, got: len }
            );
            assert!(Packet::parse(&EXAMPLE_E[..len]).is_err());
        }
        // Any length from the header on is a data packet with a shorter payload.
        for len in DATA_HEADER_LEN..=EXAMPLE_E.len() {
            let v = DataView::new_checked(&EXAMPLE_E[..len]).unwrap();
            assert_eq!(v.header(), sample());
            assert_eq!(v.payload(), &EXAMPLE_E[16..len]);
        }
    }

    #[test]
    fn control_bit_is_rejected() {
        let mut b = EXAMPLE_E;
        b[0] |= 0x80;
        assert_eq!(DataView::new_checked(&b).unwrap_err(), ParseError::WrongKind { expected: "data" });
    }

    #[test]
    fn emit_needs_room() {
        let mut buf = [0xa5u8; 15];
        assert_eq!(sample().emit(&mut buf), Err(EmitError::BufferTooSmall { need: 16, got: 15 }));
        assert!(buf.iter().all(|&b| b == 0xa5));
        let mut buf = [0xa5u8; 19];
        assert_eq!(
            Packet::Data(sample(), &[1, 2, 3, 4]).emit(&mut buf),
            Err(EmitError::BufferTooSmall { need: 20, got: 19 })
        );
    }
}
