//! The GTP control messages: what a receiver tells its senders and what a sender asks for.
//!
//! Both travel as UDT user-defined control packets (type 0x7FFF, thesis §5.1.2 `sendCustomMsg`)
//! with sub-type [`GTP_SUBTYPE`]. The additional-info word carries the allocation number (a
//! counter per receiving connection, so a sender can drop an allocation that arrives after a
//! newer one); requests send 0 there. The body, big-endian:
//!
//! ```text
//! byte 0     version (1)
//! byte 1     kind: 1 = allocation (receiver -> sender), 2 = rate request (sender -> receiver)
//! bytes 2-3  reserved: sent as 0, ignored
//! bytes 4-11 rate, bits per second of MSS-sized packets (u64)
//! ```
//!
//! Parsing never panics: a body shorter than [`BODY_LEN`], another version, an unknown kind or an
//! allocation of zero is [`Malformed`]; bytes after the twelfth are ignored (room for fields a
//! later revision of version 1 may append). A request of zero withdraws the request.

use crate::CustomMessage;

/// The user-defined control sub-type of GTP messages ("GT").
pub const GTP_SUBTYPE: u16 = 0x4754;
/// The message format version this implementation writes and reads.
pub const VERSION: u8 = 1;
/// Length of the body written, bytes (longer bodies are accepted).
pub const BODY_LEN: usize = 12;

const KIND_ALLOCATION: u8 = 1;
const KIND_REQUEST: u8 = 2;

/// One GTP message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GtpMessage {
    /// The receiver's allocation for this flow: send at `bits_per_sec` from now on.
    Allocation {
        /// Allocation number (increases by one per allocation, wrapping).
        number: u32,
        /// Allocated rate, bits per second of MSS-sized packets (never zero).
        bits_per_sec: u64,
    },
    /// The sender's rate request: never allocate more than `bits_per_sec` (0: no limit).
    Request {
        /// Requested rate, bits per second; zero withdraws an earlier request.
        bits_per_sec: u64,
    },
}

/// A GTP message that could not be read (counted and dropped by the controller).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Malformed;

impl GtpMessage {
    /// The control message carrying `self`.
    pub fn encode(&self) -> CustomMessage {
        let (kind, info, rate) = match *self {
            GtpMessage::Allocation { number, bits_per_sec } => (KIND_ALLOCATION, number, bits_per_sec),
            GtpMessage::Request { bits_per_sec } => (KIND_REQUEST, 0, bits_per_sec),
        };
        let mut data = Vec::with_capacity(BODY_LEN);
        data.extend_from_slice(&[VERSION, kind, 0, 0]);
        data.extend_from_slice(&rate.to_be_bytes());
        CustomMessage { subtype: GTP_SUBTYPE, info, data }
    }

    /// Read `msg`: `None` when it is not a GTP message (another sub-type), else the message or
    /// [`Malformed`].
    pub fn decode(msg: &CustomMessage) -> Option<Result<GtpMessage, Malformed>> {
        (msg.subtype == GTP_SUBTYPE).then(|| Self::decode_body(msg.info, &msg.data))
    }

    fn decode_body(info: u32, data: &[u8]) -> Result<GtpMessage, Malformed> {
        let (Some(&version), Some(&kind), Some(rate)) = (data.first(), data.get(1), data.get(4..BODY_LEN))
        else {
            return Err(Malformed);
        };
        if version != VERSION {
            return Err(Malformed);
        }
        let mut word = [0u8; 8];
        word.copy_from_slice(rate);
        let bits_per_sec = u64::from_be_bytes(word);
        match kind {
            KIND_ALLOCATION if bits_per_sec > 0 => Ok(GtpMessage::Allocation { number: info, bits_per_sec }),
            KIND_REQUEST => Ok(GtpMessage::Request { bits_per_sec }),
            _ => Err(Malformed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_exact_bytes() {
        let a = GtpMessage::Allocation { number: 7, bits_per_sec: 333_333_333 };
        let m = a.encode();
        assert_eq!(m.subtype, 0x4754);
        assert_eq!(m.info, 7);
        assert_eq!(m.data, [1, 1, 0, 0, 0, 0, 0, 0, 0x13, 0xDE, 0x43, 0x55]);
        assert_eq!(GtpMessage::decode(&m), Some(Ok(a)));
        let r = GtpMessage::Request { bits_per_sec: 100_000_000 };
        let m = r.encode();
        assert_eq!((m.info, m.data[1], m.data.len()), (0, 2, BODY_LEN));
        assert_eq!(GtpMessage::decode(&m), Some(Ok(r)));
        // A request of zero (withdrawn) and trailing bytes are fine.
        let mut m = GtpMessage::Request { bits_per_sec: 0 }.encode();
        m.data.extend_from_slice(&[9, 9, 9]);
        assert_eq!(GtpMessage::decode(&m), Some(Ok(GtpMessage::Request { bits_per_sec: 0 })));
    }

    #[test]
    fn malformed_and_foreign_messages() {
        let good = GtpMessage::Allocation { number: 1, bits_per_sec: 1_000_000 }.encode();
        for len in 0..BODY_LEN {
            let m = CustomMessage { data: good.data[..len].to_vec(), ..good.clone() };
            assert_eq!(GtpMessage::decode(&m), Some(Err(Malformed)), "length {len}");
        }
        let with = |i: usize, v: u8| {
            let mut m = good.clone();
            m.data[i] = v;
            GtpMessage::decode(&m)
        };
        assert_eq!(with(0, 2), Some(Err(Malformed)), "version 2");
        assert_eq!(with(1, 0), Some(Err(Malformed)), "kind 0");
        assert_eq!(with(1, 3), Some(Err(Malformed)), "kind 3");
        assert_eq!(with(2, 0xFF), Some(Ok(GtpMessage::Allocation { number: 1, bits_per_sec: 1_000_000 })));
        let zero = GtpMessage::Allocation { number: 1, bits_per_sec: 0 }.encode();
        assert_eq!(GtpMessage::decode(&zero), Some(Err(Malformed)), "zero allocation");
        let foreign = CustomMessage { subtype: 1, info: 0, data: vec![] };
        assert_eq!(GtpMessage::decode(&foreign), None);
    }
}
