//! Property tests of the packet codec (protocol notes §1).
//!
//! * Every valid packet value (data with any header and a 0..=1500-byte payload, every control
//!   kind with arbitrary fields) emitted into a 0xa5-filled buffer parses back to the same value,
//!   and emitting the parsed value gives the identical bytes.
//! * Arbitrary bytes never make `Packet::parse` panic; whatever it accepts re-emits to bytes that
//!   parse to the same value (and re-emit identically: the canonical form is a fixed point).

// Test code: helpers outside #[test] functions may panic on failure too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use udt_proto::packet::{
    Ack, AckInfo, AckQueue, AckRates, Boundary, Control, ControlPacket, DataHeader, DropRequest, Handshake,
    LossEntry, NakList, Packet, RequestType, SocketType,
};
use udt_proto::{AckNo, MsgNo, SeqNo, SocketId};

/// A packet value that owns its variable-length parts, so a strategy can produce it.
#[derive(Clone, Debug)]
enum Owned {
    Data(DataHeader, Vec<u8>),
    Control { timestamp: u32, dst: SocketId, body: OwnedBody },
}

#[derive(Clone, Debug)]
enum OwnedBody {
    Handshake(Handshake),
    KeepAlive,
    Ack(Ack),
    /// The entries and their encoding.
    Nak(Vec<LossEntry>, Vec<u8>),
    CongestionWarning,
    Shutdown,
    Ack2(AckNo),
    DropRequest(DropRequest),
    Error(u32),
    UserDefined {
        subtype: u16,
        info: u32,
        data: Vec<u8>,
    },
}

impl Owned {
    fn packet(&self) -> Packet<'_> {
        match self {
            Owned::Data(h, payload) => Packet::Data(*h, payload),
            Owned::Control { timestamp, dst, body } => Packet::Control(ControlPacket {
                timestamp: *timestamp,
                dst: *dst,
                body: match body {
                    OwnedBody::Handshake(h) => Control::Handshake(*h),
                    OwnedBody::KeepAlive => Control::KeepAlive,
                    OwnedBody::Ack(a) => Control::Ack(*a),
                    OwnedBody::Nak(_, bytes) => Control::Nak(NakList::parse(bytes).expect("encoded NAK")),
                    OwnedBody::CongestionWarning => Control::CongestionWarning,
                    OwnedBody::Shutdown => Control::Shutdown,
                    OwnedBody::Ack2(n) => Control::Ack2(*n),
                    OwnedBody::DropRequest(d) => Control::DropRequest(*d),
                    OwnedBody::Error(code) => Control::Error(*code),
                    OwnedBody::UserDefined { subtype, info, data } => {
                        Control::UserDefined { subtype: *subtype, info: *info, data }
                    }
                },
            }),
        }
    }
}

fn seq() -> impl Strategy<Value = SeqNo> {
    prop_oneof![any::<u32>().prop_map(SeqNo::new), Just(SeqNo::new(0)), Just(SeqNo::new(0x7FFF_FFFF)),]
}

fn boundary() -> impl Strategy<Value = Boundary> {
    (0u32..4).prop_map(Boundary::from_bits)
}

fn data_header() -> impl Strategy<Value = DataHeader> {
    (seq(), boundary(), any::<bool>(), any::<u32>(), any::<u32>(), any::<u32>()).prop_map(
        |(seq, boundary, in_order, msg, timestamp, dst)| DataHeader {
            seq,
            boundary,
            in_order,
            msg: MsgNo::new(msg),
            timestamp,
            dst: SocketId(dst),
        },
    )
}

fn data() -> impl Strategy<Value = Owned> {
    (data_header(), prop::collection::vec(any::<u8>(), 0..=1500)).prop_map(|(h, p)| Owned::Data(h, p))
}

/// Socket types as `parse` produces them (`Other` never holds 1 or 2).
fn socket_type() -> impl Strategy<Value = SocketType> {
    prop_oneof![
        Just(SocketType::Stream),
        Just(SocketType::Datagram),
        any::<u32>().prop_filter_map("named value", |w| match SocketType::from_word(w) {
            o @ SocketType::Other(_) => Some(o),
            _ => None,
        }),
    ]
}

/// Request types as `parse` produces them (`Other` never holds a named value).
fn request_type() -> impl Strategy<Value = RequestType> {
    prop_oneof![
        Just(RequestType::Request),
        Just(RequestType::Response),
        Just(RequestType::Rendezvous),
        Just(RequestType::RendezvousConnected),
        Just(RequestType::Rejected),
        any::<i32>().prop_filter_map("named value", |v| match RequestType::from_word(v as u32) {
            o @ RequestType::Other(_) => Some(o),
            _ => None,
        }),
    ]
}

fn handshake() -> impl Strategy<Value = Handshake> {
    (
        (any::<u32>(), socket_type(), seq(), any::<u32>(), any::<u32>()),
        (request_type(), any::<u32>(), any::<u32>(), any::<[u32; 4]>()),
    )
        .prop_map(
            |((version, socket_type, initial_seq, mss, flow_window), (request_type, id, cookie, peer_ip))| {
                Handshake {
                    version,
                    socket_type,
                    initial_seq,
                    mss,
                    flow_window,
                    request_type,
                    socket_id: SocketId(id),
                    cookie,
                    peer_ip,
                }
            },
        )
}

fn ack() -> impl Strategy<Value = Ack> {
    let rates = prop::option::of(
        (any::<u32>(), any::<u32>()).prop_map(|(recv_rate, capacity)| AckRates { recv_rate, capacity }),
    );
    let queue = prop::option::of(
        (any::<u32>(), any::<u32>()).prop_map(|(min_us, max_us)| AckQueue { min_us, max_us }),
    );
    // The queueing delay travels only with the rates (a 32-byte body).
    let info = prop::option::of((any::<u32>(), any::<u32>(), any::<u32>(), rates, queue).prop_map(
        |(rtt_us, rtt_var_us, avail_buf_pkts, rates, queue)| AckInfo {
            rtt_us,
            rtt_var_us,
            avail_buf_pkts,
            rates,
            queue: rates.and(queue),
        },
    ));
    (any::<u32>(), seq(), info).prop_map(|(n, next_expected, info)| Ack {
        ack_no: AckNo::new(n),
        next_expected,
        info,
    })
}

fn loss_entry() -> impl Strategy<Value = LossEntry> {
    prop_oneof![
        seq().prop_map(LossEntry::Single),
        // Ranges as written: start > end and start == end included.
        (seq(), seq()).prop_map(|(a, b)| LossEntry::Range(a, b)),
        (seq(), 0i32..1000).prop_map(|(a, n)| LossEntry::from_bounds(a, a.add(n))),
    ]
}

fn nak() -> impl Strategy<Value = OwnedBody> {
    prop::collection::vec(loss_entry(), 1..64).prop_map(|entries| {
        let words: usize = entries.iter().map(|e| e.words()).sum();
        let mut buf = vec![0xa5u8; words * 4];
        let n = NakList::encode(entries.iter().copied(), &mut buf).expect("sized buffer");
        assert_eq!(n, buf.len());
        OwnedBody::Nak(entries, buf)
    })
}

fn control_body() -> impl Strategy<Value = OwnedBody> {
    prop_oneof![
        handshake().prop_map(OwnedBody::Handshake),
        Just(OwnedBody::KeepAlive),
        ack().prop_map(OwnedBody::Ack),
        nak(),
        Just(OwnedBody::CongestionWarning),
        Just(OwnedBody::Shutdown),
        any::<u32>().prop_map(|n| OwnedBody::Ack2(AckNo::new(n))),
        (any::<u32>(), seq(), seq()).prop_map(|(m, first, end_exclusive)| OwnedBody::DropRequest(
            DropRequest { msg: MsgNo::new(m), first, end_exclusive }
        )),
        any::<u32>().prop_map(OwnedBody::Error),
        (any::<u16>(), any::<u32>(), prop::collection::vec(any::<u8>(), 0..=1500))
            .prop_map(|(subtype, info, data)| OwnedBody::UserDefined { subtype, info, data }),
    ]
}

fn control() -> impl Strategy<Value = Owned> {
    (any::<u32>(), any::<u32>(), control_body()).prop_map(|(timestamp, dst, body)| Owned::Control {
        timestamp,
        dst: SocketId(dst),
        body,
    })
}

fn packet() -> impl Strategy<Value = Owned> {
    prop_oneof![data(), control()]
}

/// Emit into a 0xa5-filled buffer with room to spare; check length and the untouched tail.
fn emit(p: &Packet<'_>) -> Vec<u8> {
    let mut buf = vec![0xa5u8; p.encoded_len() + 32];
    let n = p.emit(&mut buf).expect("emit");
    assert_eq!(n, p.encoded_len());
    assert!(buf[n..].iter().all(|&b| b == 0xa5), "emit wrote past its length");
    buf.truncate(n);
    buf
}

/// Datagrams that look like control packets of every type (and some unknown ones), with random
/// reserved bits, words and bodies, so the fuzzing reaches every body parser.
fn control_like_bytes() -> impl Strategy<Value = Vec<u8>> {
    let ty = prop_oneof![0u32..=9, Just(0x7FFF), Just(0x7FFE), 0u32..0x8000];
    (ty, any::<u16>(), prop::collection::vec(any::<u8>(), 12..200)).prop_map(|(ty, low, rest)| {
        let mut v = (0x8000_0000 | (ty << 16) | u32::from(low)).to_be_bytes().to_vec();
        v.extend(rest);
        v
    })
}

/// A valid packet, then damaged: truncated, a byte flipped, or bytes appended.
fn damaged_bytes() -> impl Strategy<Value = Vec<u8>> {
    (packet(), any::<usize>(), any::<u8>(), prop::collection::vec(any::<u8>(), 0..8), 0u8..3).prop_map(
        |(p, at, x, tail, how)| {
            let mut b = emit(&p.packet());
            match how {
                0 => b.truncate(at % (b.len() + 1)),
                1 => {
                    let i = at % b.len();
                    b[i] ^= x | 1;
                }
                _ => b.extend(tail),
            }
            b
        },
    )
}

/// The arbitrary-input property: no panic; anything accepted re-emits to bytes that parse to
/// the same value, and the canonical bytes are a fixed point.
fn check_arbitrary(bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(p) = Packet::parse(bytes) {
        let out = emit(&p);
        let q = Packet::parse(&out);
        prop_assert_eq!(q.as_ref(), Ok(&p));
        prop_assert_eq!(emit(&q.expect("checked")), out);
        if let Packet::Control(ControlPacket { body: Control::Nak(nak), .. }) = &p {
            let n = nak.iter().count();
            prop_assert!(n >= 1 && n <= nak.as_bytes().len() / 4);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, ..ProptestConfig::default() })]

    #[test]
    fn every_valid_packet_round_trips(owned in packet()) {
        let p = owned.packet();
        let bytes = emit(&p);
        let parsed = Packet::parse(&bytes);
        prop_assert_eq!(parsed.as_ref(), Ok(&p));
        prop_assert_eq!(emit(&parsed.expect("checked")), bytes.clone());
        // The typed parts come back with the values they were built from.
        match (&owned, Packet::parse(&bytes).expect("checked")) {
            (Owned::Data(h, payload), Packet::Data(h2, payload2)) => {
                prop_assert_eq!(*h, h2);
                prop_assert_eq!(&payload[..], payload2);
                prop_assert_eq!(bytes[0] & 0x80, 0);
            }
            (Owned::Control { body: OwnedBody::Nak(entries, _), .. }, Packet::Control(c)) => {
                let Control::Nak(nak) = c.body else { return Err(TestCaseError::fail("not a NAK")) };
                prop_assert_eq!(nak.iter().collect::<Vec<_>>(), entries.clone());
            }
            (Owned::Control { .. }, Packet::Control(c)) => {
                prop_assert_eq!(bytes[0] & 0x80, 0x80);
                prop_assert_eq!(bytes.len(), c.encoded_len());
            }
            _ => return Err(TestCaseError::fail("kind changed")),
        }
    }

    #[test]
    fn emit_into_a_short_buffer_fails_cleanly(owned in packet(), short in 1usize..64) {
        let p = owned.packet();
        let len = p.encoded_len().saturating_sub(short);
        let mut buf = vec![0xa5u8; len];
        prop_assert!(p.emit(&mut buf).is_err());
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2000)) {
        check_arbitrary(&bytes)?;
    }

    #[test]
    fn control_like_bytes_never_panic(bytes in control_like_bytes()) {
        check_arbitrary(&bytes)?;
    }

    #[test]
    fn damaged_packets_never_panic(bytes in damaged_bytes()) {
        check_arbitrary(&bytes)?;
    }
}
