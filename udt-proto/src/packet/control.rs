//! Control packets: the common header and one value per type (protocol notes §1, table of types).
//!
//! Word 0: bit 31 = 1, bits 30..16 type, bits 15..0 reserved (user sub-type for 0x7FFF).
//! Word 1: additional info. Word 2: timestamp. Word 3: destination socket id.
//!
//! Normalisations (what parse accepts that emit does not write back):
//! * bits 15..0 of word 0 are ignored on parse and emitted as 0, except for the user-defined
//!   type 0x7FFF where they are the sub-type;
//! * the additional-info word of types whose info 4.11 sends as 0 (handshake, keep-alive, NAK,
//!   congestion warning, shutdown) is ignored on parse and emitted as 0;
//! * bodies that UDT4 sends as 4 zero bytes (keep-alive, congestion warning, shutdown, ACK2,
//!   error) are accepted at any length (including none) and emitted as 4 zero bytes;
//! * handshake, ACK and drop-request bodies longer than their layout are accepted with the extra
//!   bytes ignored (see each module).
//!
//! Everything 4.11 actually sends re-emits byte-exact (checked against every captured packet).

use super::{put_word, word, Ack, DropRequest, EmitError, Handshake, NakList, ParseError, HEADER_LEN};
use crate::seq::{AckNo, SocketId};

/// Bit 31 of word 0: set for control packets (protocol notes §1).
const CONTROL_BIT: u32 = 0x8000_0000;
/// Word 0 bits 30..16: the control type.
const TYPE_SHIFT: u32 = 16;
const TYPE_MASK: u32 = 0x7FFF;
/// The body UDT4 sends for types without control information: 4 zero bytes.
const PADDING_BODY_LEN: usize = 4;

// Header word indices.
const INFO_WORD: usize = 1;
const TIMESTAMP_WORD: usize = 2;
const DST_WORD: usize = 3;

/// Control type numbers (word 0, bits 30..16).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum ControlType {
    /// 0
    Handshake = 0,
    /// 1
    KeepAlive = 1,
    /// 2
    Ack = 2,
    /// 3
    Nak = 3,
    /// 4
    CongestionWarning = 4,
    /// 5
    Shutdown = 5,
    /// 6
    Ack2 = 6,
    /// 7
    DropRequest = 7,
    /// 8
    Error = 8,
    /// 0x7FFF
    UserDefined = 0x7FFF,
}

impl ControlType {
    /// The type for a 15-bit type number; `None` for numbers UDT4 does not define.
    pub fn from_u16(t: u16) -> Option<Self> {
        Some(match t {
            0 => ControlType::Handshake,
            1 => ControlType::KeepAlive,
            2 => ControlType::Ack,
            3 => ControlType::Nak,
            4 => ControlType::CongestionWarning,
            5 => ControlType::Shutdown,
            6 => ControlType::Ack2,
            7 => ControlType::DropRequest,
            8 => ControlType::Error,
            0x7FFF => ControlType::UserDefined,
            _ => return None,
        })
    }

    /// The type number.
    pub fn as_u16(self) -> u16 {
        self as u16
    }
}

/// The body of a control packet, one variant per type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Control<'a> {
    /// Connection setup.
    Handshake(Handshake),
    /// Keep-alive.
    KeepAlive,
    /// Full or light acknowledgement.
    Ack(Ack),
    /// Loss report.
    Nak(NakList<'a>),
    /// Congestion warning (never sent by UDT4).
    CongestionWarning,
    /// Shutdown.
    Shutdown,
    /// Acknowledgement of a full ACK, carrying its ACK number.
    Ack2(AckNo),
    /// Message drop request.
    DropRequest(DropRequest),
    /// Error signal with its code (4000: peer could not write its file).
    Error(u32),
    /// User-defined control packet of a congestion control module.
    UserDefined {
        /// Sub-type (word 0, bits 15..0).
        subtype: u16,
        /// Additional info word.
        info: u32,
        /// Body bytes (may be empty).
        data: &'a [u8],
    },
}

impl Control<'_> {
    /// The control type of this body.
    pub fn control_type(&self) -> ControlType {
        match self {
            Control::Handshake(_) => ControlType::Handshake,
            Control::KeepAlive => ControlType::KeepAlive,
            Control::Ack(_) => ControlType::Ack,
            Control::Nak(_) => ControlType::Nak,
            Control::CongestionWarning => ControlType::CongestionWarning,
            Control::Shutdown => ControlType::Shutdown,
            Control::Ack2(_) => ControlType::Ack2,
            Control::DropRequest(_) => ControlType::DropRequest,
            Control::Error(_) => ControlType::Error,
            Control::UserDefined { .. } => ControlType::UserDefined,
        }
    }

    /// Word 0 bits 15..0 as emitted: the sub-type for user-defined packets, else 0.
    fn reserved(&self) -> u16 {
        match self {
            Control::UserDefined { subtype, .. } => *subtype,
            _ => 0,
        }
    }

    /// The additional-info word (word 1) as emitted (protocol notes §1, table of types).
    fn info_word(&self) -> u32 {
        match self {
            Control::Ack(ack) => ack.ack_no.value(),
            Control::Ack2(ack_no) => ack_no.value(),
            Control::DropRequest(d) => d.msg.value(),
            Control::Error(code) => *code,
            Control::UserDefined { info, .. } => *info,
            Control::Handshake(_)
            | Control::KeepAlive
            | Control::Nak(_)
            | Control::CongestionWarning
            | Control::Shutdown => 0,
        }
    }

    /// Body bytes `emit` writes after the header.
    fn body_len(&self) -> usize {
        match self {
            Control::Handshake(_) => super::HANDSHAKE_BODY_LEN,
            Control::Ack(ack) => ack.body_len(),
            Control::Nak(nak) => nak.as_bytes().len(),
            Control::DropRequest(_) => super::drop_request::DROP_REQUEST_BODY_LEN,
            Control::UserDefined { data, .. } => data.len(),
            Control::KeepAlive
            | Control::CongestionWarning
            | Control::Shutdown
            | Control::Ack2(_)
            | Control::Error(_) => PADDING_BODY_LEN,
        }
    }
}

/// A control packet: common header fields plus the typed body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControlPacket<'a> {
    /// Timestamp word (UDT4 sends 0).
    pub timestamp: u32,
    /// Destination socket id.
    pub dst: SocketId,
    /// The typed body.
    pub body: Control<'a>,
}

impl<'a> ControlPacket<'a> {
    /// Parse a control packet (bit 31 of word 0 must be set).
    pub fn parse(bytes: &'a [u8]) -> Result<Self, ParseError> {
        if bytes.len() < HEADER_LEN {
            return Err(ParseError::Truncated { what: "control header", need: HEADER_LEN, got: bytes.len() });
        }
        let w0 = word(bytes, 0);
        if w0 & CONTROL_BIT == 0 {
            return Err(ParseError::WrongKind { expected: "control" });
        }
        let type_no = ((w0 >> TYPE_SHIFT) & TYPE_MASK) as u16;
        let ty = ControlType::from_u16(type_no).ok_or(ParseError::UnknownControlType(type_no))?;
        let info = word(bytes, INFO_WORD);
        let body = bytes.get(HEADER_LEN..).unwrap_or(&[]);
        let body = match ty {
            ControlType::Handshake => Control::Handshake(Handshake::parse(body)?),
            ControlType::KeepAlive => Control::KeepAlive,
            ControlType::Ack => Control::Ack(Ack::parse(info, body)?),
            ControlType::Nak => Control::Nak(NakList::parse(body)?),
            ControlType::CongestionWarning => Control::CongestionWarning,
            ControlType::Shutdown => Control::Shutdown,
            ControlType::Ack2 => Control::Ack2(AckNo::new(info)),
            ControlType::DropRequest => Control::DropRequest(DropRequest::parse(info, body)?),
            ControlType::Error => Control::Error(info),
            ControlType::UserDefined => Control::UserDefined { subtype: w0 as u16, info, data: body },
        };
        Ok(ControlPacket {
            timestamp: word(bytes, TIMESTAMP_WORD),
            dst: SocketId(word(bytes, DST_WORD)),
            body,
        })
    }

    /// Bytes `emit` will write.
    pub fn encoded_len(&self) -> usize {
        HEADER_LEN + self.body.body_len()
    }

    /// Write the packet into `buf`; returns the bytes written.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let need = self.encoded_len();
        if buf.len() < need {
            return Err(EmitError::BufferTooSmall { need, got: buf.len() });
        }
        let w0 = CONTROL_BIT
            | (u32::from(self.body.control_type().as_u16()) << TYPE_SHIFT)
            | u32::from(self.body.reserved());
        put_word(buf, 0, w0);
        put_word(buf, INFO_WORD, self.body.info_word());
        put_word(buf, TIMESTAMP_WORD, self.timestamp);
        put_word(buf, DST_WORD, self.dst.0);
        let body = &mut buf[HEADER_LEN..need];
        let written = match &self.body {
            Control::Handshake(hs) => hs.emit(body)?,
            Control::Ack(ack) => ack.emit_body(body)?,
            Control::DropRequest(d) => d.emit_body(body)?,
            Control::Nak(nak) => {
                body.copy_from_slice(nak.as_bytes());
                body.len()
            }
            Control::UserDefined { data, .. } => {
                body.copy_from_slice(data);
                body.len()
            }
            Control::KeepAlive
            | Control::CongestionWarning
            | Control::Shutdown
            | Control::Ack2(_)
            | Control::Error(_) => {
                body.fill(0);
                body.len()
            }
        };
        debug_assert_eq!(HEADER_LEN + written, need);
        Ok(need)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{AckInfo, AckRates, LossEntry, Packet, RequestType, SocketType};
    use crate::seq::{MsgNo, SeqNo};

    fn bytes_of(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_be_bytes()).collect()
    }

    /// Emit into a 0xa5-filled buffer, check the bytes and that nothing past them was touched,
    /// and parse back to the same value.
    fn check(pkt: &ControlPacket<'_>, expected: &[u8]) {
        let mut buf = [0xa5u8; 128];
        let n = pkt.emit(&mut buf).unwrap();
        assert_eq!(n, pkt.encoded_len());
        assert_eq!(&buf[..n], expected);
        assert!(buf[n..].iter().all(|&b| b == 0xa5), "emit wrote past its length");
        assert_eq!(&ControlPacket::parse(&buf[..n]).unwrap(), pkt);
        assert_eq!(Packet::parse(&buf[..n]), Ok(Packet::Control(pkt.clone())));
    }

    fn pkt(dst: u32, body: Control<'_>) -> ControlPacket<'_> {
        ControlPacket { timestamp: 0, dst: SocketId(dst), body }
    }

    #[test]
    fn readme_examples_round_trip() {
        // H light ACK
        check(
            &pkt(
                0x0cbb_f173,
                Control::Ack(Ack {
                    ack_no: AckNo::new(0),
                    next_expected: SeqNo::new(0x1524_57a2),
                    info: None,
                }),
            ),
            &bytes_of(&[0x8002_0000, 0, 0, 0x0cbb_f173, 0x1524_57a2]),
        );
        // G full ACK (16 B)
        check(
            &pkt(
                0x1121_c035,
                Control::Ack(Ack {
                    ack_no: AckNo::new(2),
                    next_expected: SeqNo::new(0x4294_d24e),
                    info: Some(AckInfo {
                        rtt_us: 100_000,
                        rtt_var_us: 50_000,
                        avail_buf_pkts: 8190,
                        rates: None,
                        queue: None,
                    }),
                }),
            ),
            &bytes_of(&[0x8002_0000, 2, 0, 0x1121_c035, 0x4294_d24e, 0x186a0, 0xc350, 0x1ffe]),
        );
        // F full ACK (24 B)
        check(
            &pkt(
                0x1121_c035,
                Control::Ack(Ack {
                    ack_no: AckNo::new(1),
                    next_expected: SeqNo::new(0x4294_d24d),
                    info: Some(AckInfo {
                        rtt_us: 100_000,
                        rtt_var_us: 50_000,
                        avail_buf_pkts: 8190,
                        rates: Some(AckRates { recv_rate: 1, capacity: 1000 }),
                        queue: None,
                    }),
                }),
            ),
            &bytes_of(&[0x8002_0000, 1, 0, 0x1121_c035, 0x4294_d24d, 0x186a0, 0xc350, 0x1ffe, 1, 0x3e8]),
        );
        // I ACK2
        check(
            &pkt(0x01ea_a17a, Control::Ack2(AckNo::new(2))),
            &bytes_of(&[0x8006_0000, 2, 0, 0x01ea_a17a, 0]),
        );
        // K keep-alive, L shutdown
        check(&pkt(0x0cbb_f173, Control::KeepAlive), &bytes_of(&[0x8001_0000, 0, 0, 0x0cbb_f173, 0]));
        check(&pkt(0x01ea_a17a, Control::Shutdown), &bytes_of(&[0x8005_0000, 0, 0, 0x01ea_a17a, 0]));
        // J NAK single and range
        let single = bytes_of(&[0x244b_5d7d]);
        check(
            &pkt(0x33d4_a4a3, Control::Nak(NakList::parse(&single).unwrap())),
            &bytes_of(&[0x8003_0000, 0, 0, 0x33d4_a4a3, 0x244b_5d7d]),
        );
        let range = bytes_of(&[0xa44b_61ea, 0x244b_61eb]);
        let nak = NakList::parse(&range).unwrap();
        assert_eq!(
            nak.iter().collect::<Vec<_>>(),
            [LossEntry::Range(SeqNo::new(608_920_042), SeqNo::new(608_920_043))]
        );
        check(
            &pkt(0x33d4_a4a3, Control::Nak(nak)),
            &bytes_of(&[0x8003_0000, 0, 0, 0x33d4_a4a3, 0xa44b_61ea, 0x244b_61eb]),
        );
        // M rendezvous -2
        check(
            &pkt(
                0x2766_68ee,
                Control::Handshake(Handshake {
                    version: 0,
                    socket_type: SocketType::Other(0),
                    initial_seq: SeqNo::new(0x012e_724a),
                    mss: 1500,
                    flow_window: 32,
                    request_type: RequestType::RendezvousConnected,
                    socket_id: SocketId(0x2766_68f8),
                    cookie: 0,
                    peer_ip: [0; 4],
                }),
            ),
            &bytes_of(&[
                0x8000_0000,
                0,
                0,
                0x2766_68ee,
                0,
                0,
                0x012e_724a,
                0x5dc,
                0x20,
                0xffff_fffe,
                0x2766_68f8,
                0,
                0,
                0,
                0,
                0,
            ]),
        );
    }

    #[test]
    fn uncaptured_types_round_trip() {
        let ts = 0xFEDC_BA98;
        let mut p = pkt(7, Control::CongestionWarning);
        p.timestamp = ts;
        check(&p, &bytes_of(&[0x8004_0000, 0, ts, 7, 0]));
        check(&pkt(7, Control::Error(4000)), &bytes_of(&[0x8008_0000, 4000, 0, 7, 0]));
        check(&pkt(7, Control::Error(u32::MAX)), &bytes_of(&[0x8008_0000, u32::MAX, 0, 7, 0]));
        check(
            &pkt(
                9,
                Control::DropRequest(DropRequest {
                    msg: MsgNo::new(0x1FFF_FFFF),
                    first: SeqNo::new(0x7FFF_FFF0),
                    end_exclusive: SeqNo::new(3),
                }),
            ),
            &bytes_of(&[0x8007_0000, 0x1FFF_FFFF, 0, 9, 0x7FFF_FFF0, 3]),
        );
        let data = [1u8, 2, 3, 4, 5];
        check(
            &pkt(u32::MAX, Control::UserDefined { subtype: 0xBEEF, info: 0x8000_0001, data: &data }),
            &[bytes_of(&[0xFFFF_BEEF, 0x8000_0001, 0, u32::MAX]), data.to_vec()].concat(),
        );
        check(
            &pkt(0, Control::UserDefined { subtype: 0, info: 0, data: &[] }),
            &bytes_of(&[0xFFFF_0000, 0, 0, 0]),
        );
    }

    #[test]
    fn padding_bodies_accept_any_length_and_emit_four_zeros() {
        for (ty, body) in [
            (1u32, Control::KeepAlive),
            (4, Control::CongestionWarning),
            (5, Control::Shutdown),
            (6, Control::Ack2(AckNo::new(5))),
            (8, Control::Error(5)),
        ] {
            for extra in [0usize, 1, 3, 4, 5, 100] {
                let mut bytes = bytes_of(&[0x8000_1234 | (ty << 16), 5, 6, 7]);
                bytes.resize(bytes.len() + extra, 0x5a);
                let p = ControlPacket::parse(&bytes).unwrap();
                assert_eq!(p, ControlPacket { timestamp: 6, dst: SocketId(7), body: body.clone() });
                let mut buf = [0xa5u8; 32];
                assert_eq!(p.emit(&mut buf), Ok(20));
                // Word 1 survives only where it carries information (ACK2, error).
                let info = if matches!(ty, 6 | 8) { 5 } else { 0 };
                assert_eq!(&buf[..20], &bytes_of(&[0x8000_0000 | (ty << 16), info, 6, 7, 0])[..]);
            }
        }
    }

    #[test]
    fn zero_info_types_ignore_word_1_and_reserved_bits() {
        let bytes = bytes_of(&[0x8001_ffff, 0xdead_beef, 0, 1]);
        assert_eq!(ControlPacket::parse(&bytes).unwrap().body, Control::KeepAlive);
        let bytes = bytes_of(&[0x8003_0001, 0xdead_beef, 0, 1, 0x10]);
        let p = ControlPacket::parse(&bytes).unwrap();
        let mut buf = [0xa5u8; 20];
        assert_eq!(p.emit(&mut buf), Ok(20));
        assert_eq!(&buf[..], &bytes_of(&[0x8003_0000, 0, 0, 1, 0x10])[..]);
    }

    #[test]
    fn unknown_types_are_rejected() {
        for t in [9u32, 10, 0x100, 0x7FFE] {
            let bytes = bytes_of(&[0x8000_0000 | (t << 16), 0, 0, 0, 0]);
            assert_eq!(ControlPacket::parse(&bytes), Err(ParseError::UnknownControlType(t as u16)));
        }
        for t in 0..=0x7FFFu16 {
            if let Some(ct) = ControlType::from_u16(t) {
                assert_eq!(ct.as_u16(), t);
            }
        }
    }

    #[test]
    fn data_bit_is_rejected() {
        assert_eq!(ControlPacket::parse(&[0u8; 20]), Err(ParseError::WrongKind { expected: "control" }));
    }

    /// Every prefix of every kind: never a panic; Err below the kind's minimum; and where a
    /// shorter prefix is itself a valid packet, exactly the value it encodes.
    #[test]
    fn every_truncation_of_every_kind() {
        let hs_body = bytes_of(&[4, 1, 0x4294_d24c, 0x5dc, 0x2000, 1, 0x1121_c035, 0, 0x0100_007f, 0, 0, 0]);
        let hs = [bytes_of(&[0x8000_0000, 0, 0, 0]), hs_body].concat();
        let ack = bytes_of(&[0x8002_0000, 1, 0, 1, 2, 3, 4, 5, 6, 7]);
        let nak = bytes_of(&[0x8003_0000, 0, 0, 1, 0x8000_0001, 2, 3]);
        let drop = bytes_of(&[0x8007_0000, 1, 0, 1, 2, 3]);
        let user = [bytes_of(&[0xFFFF_0001, 0, 0, 1]), vec![1, 2, 3]].concat();
        let padded: Vec<Vec<u8>> =
            [1u32, 4, 5, 6, 8].iter().map(|t| bytes_of(&[0x8000_0000 | (t << 16), 0, 0, 1, 0])).collect();

        let header_only = |full: &[u8]| {
            for len in 0..HEADER_LEN {
                assert_eq!(
                    ControlPacket::parse(&full[..len]),
                    Err(ParseError::Truncated { what: "control header", need: 16, got: len })
                );
                assert!(Packet::parse(&full[..len]).is_err());
            }
        };
        for full in [&hs, &ack, &nak, &drop, &user].into_iter().chain(padded.iter()) {
            header_only(full);
        }
        for len in HEADER_LEN..hs.len() {
            assert_eq!(
                ControlPacket::parse(&hs[..len]),
                Err(ParseError::Truncated { what: "handshake body", need: 48, got: len - 16 })
            );
        }
        assert!(ControlPacket::parse(&hs).is_ok());
        for len in HEADER_LEN..=ack.len() {
            let body = len - HEADER_LEN;
            let r = ControlPacket::parse(&ack[..len]);
            match body {
                4 | 16 | 24 => assert!(r.is_ok(), "ACK body {body}"),
                _ => assert_eq!(r, Err(ParseError::BadLength { what: "ACK", len: body })),
            }
        }
        for len in HEADER_LEN..=nak.len() {
            let body = len - HEADER_LEN;
            let r = ControlPacket::parse(&nak[..len]);
            match body {
                4 => assert_eq!(r, Err(ParseError::UnterminatedRange)),
                8 | 12 => assert!(r.is_ok(), "NAK body {body}"),
                _ => assert_eq!(r, Err(ParseError::BadLength { what: "NAK", len: body })),
            }
        }
        for len in HEADER_LEN..drop.len() {
            assert_eq!(
                ControlPacket::parse(&drop[..len]),
                Err(ParseError::Truncated { what: "drop request body", need: 8, got: len - 16 })
            );
        }
        assert!(ControlPacket::parse(&drop).is_ok());
        for len in HEADER_LEN..=user.len() {
            let p = ControlPacket::parse(&user[..len]).unwrap();
            assert_eq!(p.body, Control::UserDefined { subtype: 1, info: 0, data: &user[16..len] });
        }
        for full in &padded {
            for len in HEADER_LEN..=full.len() {
                assert!(ControlPacket::parse(&full[..len]).is_ok());
            }
        }
    }

    #[test]
    fn emit_needs_room() {
        let p = pkt(1, Control::KeepAlive);
        let mut buf = [0xa5u8; 19];
        assert_eq!(p.emit(&mut buf), Err(EmitError::BufferTooSmall { need: 20, got: 19 }));
        assert!(buf.iter().all(|&b| b == 0xa5));
    }
}
