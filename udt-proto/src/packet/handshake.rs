//! Handshake body, 48 bytes (protocol notes §1 "Handshake body", §7).
//!
//! Twelve big-endian words: version, socket type, initial sequence number, MSS, flow window,
//! request type (signed), socket id, SYN cookie, peer IP (four words). Longer bodies are accepted
//! with the extra bytes ignored (and not re-emitted); shorter ones are
//! [`ParseError::Truncated`].

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::{put_word, word, EmitError, ParseError};
use crate::seq::{SeqNo, SocketId};

/// Handshake body length.
pub const HANDSHAKE_BODY_LEN: usize = 48;

// Word indices within the body (protocol notes §1 "Handshake body", items 1..9).
const VERSION: usize = 0;
const SOCKET_TYPE: usize = 1;
const INITIAL_SEQ: usize = 2;
const MSS: usize = 3;
const FLOW_WINDOW: usize = 4;
const REQUEST_TYPE: usize = 5;
const SOCKET_ID: usize = 6;
const COOKIE: usize = 7;
const PEER_IP: usize = 8;

/// Socket type word (4.11 sends 1 = stream, 2 = datagram).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SocketType {
    /// 1: byte stream.
    Stream,
    /// 2: messages (datagram).
    Datagram,
    /// Any other value (answered with a rejection). `parse` never produces `Other(1)` or
    /// `Other(2)`.
    Other(u32),
}

impl SocketType {
    /// From the wire word.
    pub fn from_word(w: u32) -> Self {
        // protocol notes §1: 4.11 sends 1/2, the draft says 0/1; we follow 4.11.
        match w {
            1 => SocketType::Stream,
            2 => SocketType::Datagram,
            other => SocketType::Other(other),
        }
    }
    /// The wire word.
    pub fn word(self) -> u32 {
        match self {
            SocketType::Stream => 1,
            SocketType::Datagram => 2,
            SocketType::Other(w) => w,
        }
    }
}

/// Request type word (signed on the wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestType {
    /// 1: first request of a regular connection; echoed by the cookie reply.
    Request,
    /// -1: request carrying the cookie; the listener's final answer; rendezvous step two.
    Response,
    /// 0: rendezvous request.
    Rendezvous,
    /// -2: answer from an already connected rendezvous socket.
    RendezvousConnected,
    /// 1002: rejected.
    Rejected,
    /// Any other value. `parse` never produces `Other` of a value named above.
    Other(i32),
}

impl RequestType {
    /// From the wire word (interpreted as i32).
    pub fn from_word(w: u32) -> Self {
        match w as i32 {
            1 => RequestType::Request,
            -1 => RequestType::Response,
            0 => RequestType::Rendezvous,
            -2 => RequestType::RendezvousConnected,
            1002 => RequestType::Rejected,
            other => RequestType::Other(other),
        }
    }
    /// The wire word.
    pub fn word(self) -> u32 {
        let v: i32 = match self {
            RequestType::Request => 1,
            RequestType::Response => -1,
            RequestType::Rendezvous => 0,
            RequestType::RendezvousConnected => -2,
            RequestType::Rejected => 1002,
            RequestType::Other(v) => v,
        };
        v as u32
    }
}

/// The handshake body as a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handshake {
    /// Protocol version (4).
    pub version: u32,
    /// Socket type.
    pub socket_type: SocketType,
    /// Initial sequence number of the sender of this handshake.
    pub initial_seq: SeqNo,
    /// Maximum segment size in bytes (includes 28 bytes of IP and UDP headers).
    pub mss: u32,
    /// Flow window in packets.
    pub flow_window: u32,
    /// Request type.
    pub request_type: RequestType,
    /// The sender's socket id.
    pub socket_id: SocketId,
    /// SYN cookie.
    pub cookie: u32,
    /// Peer address words as UDT4 writes them (host-order for IPv4 in word 0).
    pub peer_ip: [u32; 4],
}

impl Handshake {
    /// Parse the 48-byte body (extra trailing bytes are ignored; fewer is
    /// [`ParseError::Truncated`]).
    ///
    /// Word 2 (ISN) is masked to 31 bits: 4.11 draws it in [0, 2^31 - 1], so bit 31 is never set
    /// by a real peer; a handshake with it set does not re-emit byte-exact.
    pub fn parse(body: &[u8]) -> Result<Self, ParseError> {
        if body.len() < HANDSHAKE_BODY_LEN {
            return Err(ParseError::Truncated {
                what: "handshake body",
                need: HANDSHAKE_BODY_LEN,
                got: body.len(),
            });
        }
        Ok(Handshake {
            version: word(body, VERSION),
            socket_type: SocketType::from_word(word(body, SOCKET_TYPE)),
            initial_seq: SeqNo::new(word(body, INITIAL_SEQ)),
            mss: word(body, MSS),
            flow_window: word(body, FLOW_WINDOW),
            request_type: RequestType::from_word(word(body, REQUEST_TYPE)),
            socket_id: SocketId(word(body, SOCKET_ID)),
            cookie: word(body, COOKIE),
            peer_ip: [
                word(body, PEER_IP),
                word(body, PEER_IP + 1),
                word(body, PEER_IP + 2),
                word(body, PEER_IP + 3),
            ],
        })
    }

    /// Write the 48-byte body.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        if buf.len() < HANDSHAKE_BODY_LEN {
            return Err(EmitError::BufferTooSmall { need: HANDSHAKE_BODY_LEN, got: buf.len() });
        }
        put_word(buf, VERSION, self.version);
        put_word(buf, SOCKET_TYPE, self.socket_type.word());
        put_word(buf, INITIAL_SEQ, self.initial_seq.value());
        put_word(buf, MSS, self.mss);
        put_word(buf, FLOW_WINDOW, self.flow_window);
        put_word(buf, REQUEST_TYPE, self.request_type.word());
        put_word(buf, SOCKET_ID, self.socket_id.0);
        put_word(buf, COOKIE, self.cookie);
        for (i, &w) in self.peer_ip.iter().enumerate() {
            put_word(buf, PEER_IP + i, w);
        }
        Ok(HANDSHAKE_BODY_LEN)
    }

    /// Encode an IP address the way UDT4 does: IPv4 as a little-endian-host integer in word 0,
    /// IPv6 as four host-order (little-endian) words.
    ///
    /// 4.11 copies the `in_addr`/`in6_addr` bytes into `int`s and sends each with `htonl`, so on
    /// the little-endian hosts it runs on every group of four address bytes appears reversed:
    /// 127.0.0.1 is the word `0x0100007f` (protocol notes §1, item 9).
    pub fn encode_peer_ip(addr: IpAddr) -> [u32; 4] {
        match addr {
            IpAddr::V4(a) => [u32::from_le_bytes(a.octets()), 0, 0, 0],
            IpAddr::V6(a) => {
                let o = a.octets();
                let w = |i: usize| u32::from_le_bytes([o[i], o[i + 1], o[i + 2], o[i + 3]]);
                [w(0), w(4), w(8), w(12)]
            }
        }
    }

    /// The peer IP words read as an IPv4 address (the inverse of [`Handshake::encode_peer_ip`]
    /// for IPv4; words 1..3 are not looked at).
    pub fn peer_ipv4(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.peer_ip[0].to_le_bytes())
    }

    /// The peer IP words read as an IPv6 address (the inverse of [`Handshake::encode_peer_ip`]
    /// for IPv6).
    pub fn peer_ipv6(&self) -> Ipv6Addr {
        let mut o = [0u8; 16];
        for (chunk, w) in o.chunks_exact_mut(4).zip(self.peer_ip) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        Ipv6Addr::from(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// README example A (handshake request), body only.
    const EXAMPLE_A_BODY: [u32; 12] = [
        0x0000_0004,
        0x0000_0001,
        0x4294_d24c,
        0x0000_05dc,
        0x0000_2000,
        0x0000_0001,
        0x1121_c035,
        0x0000_0000,
        0x0100_007f,
        0,
        0,
        0,
    ];

    fn bytes_of(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_be_bytes()).collect()
    }

    fn example_a() -> Handshake {
        Handshake {
            version: 4,
            socket_type: SocketType::Stream,
            initial_seq: SeqNo::new(1_117_049_420),
            mss: 1500,
            flow_window: 8192,
            request_type: RequestType::Request,
            socket_id: SocketId(0x1121_c035),
            cookie: 0,
            peer_ip: Handshake::encode_peer_ip(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        }
    }

    #[test]
    fn parses_and_emits_example_a() {
        let body = bytes_of(&EXAMPLE_A_BODY);
        let hs = Handshake::parse(&body).unwrap();
        assert_eq!(hs, example_a());
        assert_eq!(hs.peer_ipv4(), Ipv4Addr::LOCALHOST);
        let mut buf = [0xa5u8; 60];
        assert_eq!(hs.emit(&mut buf), Ok(48));
        assert_eq!(&buf[..48], &body[..]);
        assert!(buf[48..].iter().all(|&b| b == 0xa5));
    }

    #[test]
    fn every_field_round_trips() {
        let values = [
            Handshake {
                version: u32::MAX,
                socket_type: SocketType::Other(7),
                initial_seq: SeqNo::new(0x7FFF_FFFF),
                mss: 0x8000_0000,
                flow_window: 25600,
                request_type: RequestType::Other(-3),
                socket_id: SocketId(u32::MAX),
                cookie: 0xDEAD_BEEF,
                peer_ip: [1, 2, 3, 0xFFFF_FFFF],
            },
            Handshake {
                socket_type: SocketType::Datagram,
                request_type: RequestType::Rejected,
                ..example_a()
            },
        ];
        let request_types = [
            RequestType::Request,
            RequestType::Response,
            RequestType::Rendezvous,
            RequestType::RendezvousConnected,
            RequestType::Rejected,
            RequestType::Other(i32::MIN),
            RequestType::Other(i32::MAX),
        ];
        for v in values {
            for rt in request_types {
                let hs = Handshake { request_type: rt, ..v };
                let mut buf = [0xa5u8; 48];
                assert_eq!(hs.emit(&mut buf), Ok(48));
                assert_eq!(Handshake::parse(&buf), Ok(hs));
            }
        }
    }

    #[test]
    fn request_type_words() {
        assert_eq!(RequestType::from_word(0xFFFF_FFFF), RequestType::Response);
        assert_eq!(RequestType::from_word(0xFFFF_FFFE), RequestType::RendezvousConnected);
        assert_eq!(RequestType::from_word(1002), RequestType::Rejected);
        assert_eq!(RequestType::from_word(0), RequestType::Rendezvous);
        assert_eq!(RequestType::from_word(5), RequestType::Other(5));
        assert_eq!(RequestType::Response.word(), 0xFFFF_FFFF);
        assert_eq!(SocketType::from_word(0), SocketType::Other(0));
        assert_eq!(SocketType::Datagram.word(), 2);
    }

    #[test]
    fn every_truncation_is_an_error() {
        let body = bytes_of(&EXAMPLE_A_BODY);
        for len in 0..HANDSHAKE_BODY_LEN {
            assert_eq!(
                Handshake::parse(&body[..len]),
                Err(ParseError::Truncated { what: "handshake body", need: 48, got: len })
            );
        }
    }

    #[test]
    fn longer_body_is_accepted() {
        let mut body = bytes_of(&EXAMPLE_A_BODY);
        body.extend_from_slice(&[9; 7]);
        assert_eq!(Handshake::parse(&body), Ok(example_a()));
    }

    #[test]
    fn isn_is_masked_to_31_bits() {
        let mut body = bytes_of(&EXAMPLE_A_BODY);
        body[8] |= 0x80;
        assert_eq!(Handshake::parse(&body).unwrap().initial_seq, SeqNo::new(0x4294_d24c));
    }

    #[test]
    fn peer_ip_encoding_matches_udt4() {
        let v4 = Ipv4Addr::new(192, 168, 1, 2);
        let w = Handshake::encode_peer_ip(IpAddr::V4(v4));
        assert_eq!(w, [0x0201_a8c0, 0, 0, 0]);
        assert_eq!(Handshake { peer_ip: w, ..example_a() }.peer_ipv4(), v4);
        let v6: Ipv6Addr = "2001:db8::1".parse().unwrap();
        let w = Handshake::encode_peer_ip(IpAddr::V6(v6));
        assert_eq!(w, [0xb80d_0120, 0, 0, 0x0100_0000]);
        assert_eq!(Handshake { peer_ip: w, ..example_a() }.peer_ipv6(), v6);
    }

    #[test]
    fn emit_needs_room() {
        let mut buf = [0xa5u8; 47];
        assert_eq!(example_a().emit(&mut buf), Err(EmitError::BufferTooSmall { need: 48, got: 47 }));
        assert!(buf.iter().all(|&b| b == 0xa5));
    }
}
