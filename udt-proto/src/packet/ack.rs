//! ACK body (protocol notes §1 "ACK, light ACK, ACK2").
//!
//! Body lengths: 4 bytes (light ACK: next expected sequence only), 16 bytes (plus RTT, RTT
//! variance, free buffer in packets), 24 bytes (plus arrival rate and link capacity in
//! packets/s), 32 bytes (plus the smallest and largest queueing delay since the last report,
//! microseconds: ours, sent only to a peer whose policy offer asked for it; docs/deviations.md
//! W12). Bodies of 25..=31 and over 32 bytes are accepted as the shorter shape with the extra
//! bytes ignored (and not re-emitted), so a future peer that appends fields still
//! interoperates. Any other length (0..=3, 5..=15, 17..=23) is a [`ParseError::BadLength`]:
//! 4.11 itself would read rate fields past the end of a 17..23-byte body.
//! The ACK number lives in the control header's additional-info word (0 for light ACKs).

use super::{put_word, word, EmitError, ParseError};
use crate::seq::{AckNo, SeqNo};

/// Body length of a light ACK.
pub const LIGHT_ACK_BODY_LEN: usize = 4;
/// Body length of a full ACK without rate fields.
pub const FULL_ACK_BODY_LEN: usize = 16;
/// Body length of a full ACK with rate fields.
pub const FULL_ACK_WITH_RATES_BODY_LEN: usize = 24;
/// Body length of a full ACK with rate and queueing-delay fields.
pub const FULL_ACK_WITH_QUEUE_BODY_LEN: usize = 32;

// Word indices within the body (protocol notes §1, full ACK fields 1..6).
const NEXT_EXPECTED: usize = 0;
const RTT: usize = 1;
const RTT_VAR: usize = 2;
const AVAIL_BUF: usize = 3;
const RECV_RATE: usize = 4;
const CAPACITY: usize = 5;
const QUEUE_MIN: usize = 6;
const QUEUE_MAX: usize = 7;

/// An acknowledgement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    /// ACK sub-sequence number (additional info, masked to 31 bits); 0 for light ACKs.
    pub ack_no: AckNo,
    /// Next expected sequence number: everything before it has arrived.
    pub next_expected: SeqNo,
    /// Present for full ACKs (16 or 24-byte body), absent for light ACKs (4-byte body).
    pub info: Option<AckInfo>,
}

/// Fields of a full ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckInfo {
    /// RTT in microseconds.
    pub rtt_us: u32,
    /// RTT variance in microseconds.
    pub rtt_var_us: u32,
    /// Free receive buffer in packets.
    pub avail_buf_pkts: u32,
    /// Present in 24 and 32-byte bodies.
    pub rates: Option<AckRates>,
    /// Present in 32-byte bodies (only with `rates`).
    pub queue: Option<AckQueue>,
}

/// Queueing-delay fields of a 32-byte ACK: the receiver's one-way delay estimate
/// ([`crate::queue_delay`]) over the packets since its last report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckQueue {
    /// The smallest queueing delay, microseconds: the standing queue.
    pub min_us: u32,
    /// The largest, microseconds.
    pub max_us: u32,
}

/// Rate fields of a 24-byte ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckRates {
    /// Packet arrival rate, packets per second.
    pub recv_rate: u32,
    /// Estimated link capacity, packets per second.
    pub capacity: u32,
}

impl Ack {
    /// Parse an ACK body; `ack_no` comes from the additional-info word.
    ///
    /// The ACK number and the next expected sequence number are masked to 31 bits.
    pub fn parse(ack_no: u32, body: &[u8]) -> Result<Self, ParseError> {
        let len = body.len();
        let info = match len {
            LIGHT_ACK_BODY_LEN => None,
            FULL_ACK_BODY_LEN => Some(AckInfo {
                rtt_us: word(body, RTT),
                rtt_var_us: word(body, RTT_VAR),
                avail_buf_pkts: word(body, AVAIL_BUF),
                rates: None,
                queue: None,
            }),
            // protocol notes §1: rates are present in 24-byte bodies; longer: extra ignored,
            // but for our queueing-delay fields in 32 bytes.
            _ if len >= FULL_ACK_WITH_RATES_BODY_LEN => Some(AckInfo {
                rtt_us: word(body, RTT),
                rtt_var_us: word(body, RTT_VAR),
                avail_buf_pkts: word(body, AVAIL_BUF),
                rates: Some(AckRates { recv_rate: word(body, RECV_RATE), capacity: word(body, CAPACITY) }),
                queue: (len >= FULL_ACK_WITH_QUEUE_BODY_LEN)
                    .then(|| AckQueue { min_us: word(body, QUEUE_MIN), max_us: word(body, QUEUE_MAX) }),
            }),
            _ => return Err(ParseError::BadLength { what: "ACK", len }),
        };
        Ok(Ack { ack_no: AckNo::new(ack_no), next_expected: SeqNo::new(word(body, NEXT_EXPECTED)), info })
    }

    /// Body length this value emits (4, 16, 24 or 32; queueing delay only with rates).
    pub fn body_len(&self) -> usize {
        match self.info {
            None => LIGHT_ACK_BODY_LEN,
            Some(AckInfo { rates: None, .. }) => FULL_ACK_BODY_LEN,
            Some(AckInfo { rates: Some(_), queue: None, .. }) => FULL_ACK_WITH_RATES_BODY_LEN,
            Some(AckInfo { rates: Some(_), queue: Some(_), .. }) => FULL_ACK_WITH_QUEUE_BODY_LEN,
        }
    }

    /// This is a light ACK (4-byte body, not answered with ACK2).
    pub fn is_light(&self) -> bool {
        self.info.is_none()
    }

    /// Write the body.
    pub fn emit_body(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let need = self.body_len();
        if buf.len() < need {
            return Err(EmitError::BufferTooSmall { need, got: buf.len() });
        }
        put_word(buf, NEXT_EXPECTED, self.next_expected.value());
        if let Some(info) = self.info {
            put_word(buf, RTT, info.rtt_us);
            put_word(buf, RTT_VAR, info.rtt_var_us);
            put_word(buf, AVAIL_BUF, info.avail_buf_pkts);
            if let Some(rates) = info.rates {
                put_word(buf, RECV_RATE, rates.recv_rate);
                put_word(buf, CAPACITY, rates.capacity);
                if let Some(queue) = info.queue {
                    put_word(buf, QUEUE_MIN, queue.min_us);
                    put_word(buf, QUEUE_MAX, queue.max_us);
                }
            }
        }
        Ok(need)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_of(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_be_bytes()).collect()
    }

    /// README example F body (24 bytes).
    const F: [u32; 6] = [0x4294_d24d, 0x0001_86a0, 0x0000_c350, 0x0000_1ffe, 1, 0x3e8];

    fn full_with_rates() -> Ack {
        Ack {
            ack_no: AckNo::new(1),
            next_expected: SeqNo::new(1_117_049_421),
            info: Some(AckInfo {
                rtt_us: 100_000,
                rtt_var_us: 50_000,
                avail_buf_pkts: 8190,
                rates: Some(AckRates { recv_rate: 1, capacity: 1000 }),
                queue: None,
            }),
        }
    }

    #[test]
    fn parses_the_three_shapes() {
        let body = bytes_of(&F);
        let full = full_with_rates();
        assert_eq!(Ack::parse(1, &body), Ok(full));
        let no_rates =
            Ack { info: Some(AckInfo { rates: None, ..full.info.unwrap() }), ack_no: AckNo::new(2), ..full };
        assert_eq!(Ack::parse(2, &body[..16]), Ok(no_rates));
        let light = Ack { ack_no: AckNo::new(0), info: None, ..full };
        assert_eq!(Ack::parse(0, &body[..4]), Ok(light));
        assert!(light.is_light() && !full.is_light());
    }

    #[test]
    fn every_shape_round_trips_into_dirty_buffer() {
        let full = full_with_rates();
        let shapes = [
            full,
            Ack { info: Some(AckInfo { rates: None, ..full.info.unwrap() }), ..full },
            Ack { info: None, ack_no: AckNo::new(0), ..full },
            Ack {
                ack_no: AckNo::new(0x7FFF_FFFF),
                next_expected: SeqNo::new(0x7FFF_FFFF),
                info: Some(AckInfo {
                    rtt_us: u32::MAX,
                    rtt_var_us: u32::MAX - 1,
                    avail_buf_pkts: u32::MAX - 2,
                    rates: Some(AckRates { recv_rate: u32::MAX - 3, capacity: u32::MAX - 4 }),
                    queue: Some(AckQueue { min_us: u32::MAX - 5, max_us: u32::MAX - 6 }),
                }),
            },
            Ack {
                info: Some(AckInfo { queue: Some(AckQueue { min_us: 0, max_us: 9 }), ..full.info.unwrap() }),
                ..full
            },
        ];
        for ack in shapes {
            let mut buf = [0xa5u8; 40];
            let n = ack.emit_body(&mut buf).unwrap();
            assert_eq!(n, ack.body_len());
            assert!(buf[n..].iter().all(|&b| b == 0xa5));
            assert_eq!(Ack::parse(ack.ack_no.value(), &buf[..n]), Ok(ack));
        }
        let mut buf = [0xa5u8; 24];
        assert_eq!(full.emit_body(&mut buf), Ok(24));
        assert_eq!(&buf[..], &bytes_of(&F)[..]);
    }

    #[test]
    fn bad_lengths_are_rejected() {
        let body = bytes_of(&[F[0], F[1], F[2], F[3], F[4], F[5], 0xFFFF_FFFF, 7, 0xdead_beef]);
        let with_queue = |full: Ack| Ack {
            info: Some(AckInfo {
                queue: Some(AckQueue { min_us: 0xFFFF_FFFF, max_us: 7 }),
                ..full.info.unwrap()
            }),
            ..full
        };
        for len in 0..=body.len() {
            let r = Ack::parse(1, &body[..len]);
            match len {
                4 | 16 => assert!(r.is_ok(), "len {len}"),
                24..=31 => assert_eq!(r, Ok(full_with_rates()), "len {len}: extra bytes ignored"),
                32.. => assert_eq!(r, Ok(with_queue(full_with_rates())), "len {len}: extra bytes ignored"),
                _ => assert_eq!(r, Err(ParseError::BadLength { what: "ACK", len })),
            }
        }
    }

    #[test]
    fn ack_number_is_masked() {
        let ack = Ack::parse(0xFFFF_FFFF, &bytes_of(&F[..1])).unwrap();
        assert_eq!(ack.ack_no, AckNo::new(0x7FFF_FFFF));
    }

    #[test]
    fn emit_needs_room() {
        let mut buf = [0xa5u8; 23];
        assert_eq!(
            full_with_rates().emit_body(&mut buf),
            Err(EmitError::BufferTooSmall { need: 24, got: 23 })
        );
        assert!(buf.iter().all(|&b| b == 0xa5));
    }
}
