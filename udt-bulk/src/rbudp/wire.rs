//! The bytes of QUANTA RBUDP 1.0 on the wire (seed-protocols.md, "QUANTA RBUDP 1.0"): the
//! 256-byte request field, the 8-byte big-endian size, the 4-byte sequence header of a data
//! datagram, the 8-byte end-of-blast marker, how a file splits into packets ([`Layout`]), and
//! our own 36-byte digest message after the final bitmap ([`encode_digest`], [`decode_digest`];
//! not RBUDP: [`crate::digest`]).
//!
//! Invariants: every decoder takes hostile bytes and returns an error, never panics; a
//! [`Layout`] exists only for a packet count that fits RBUDP's 32-bit signed sequence numbers,
//! so every sequence number below [`Layout::packets`] is a valid `i32` and every offset
//! `seq x payload` fits in a `u64`. Our encoders write the host order of x86, little-endian,
//! where the reference writes its host order.

/// Bytes of the request field: the NUL-terminated path of the file on the sender
/// (seed-protocols.md, RBUDP step 1).
pub const REQUEST_LEN: usize = 256;
/// Bytes of the size the sender announces (RBUDP step 2).
pub const SIZE_LEN: usize = 8;
/// Bytes of a data datagram's sequence header (RBUDP step 3).
pub const HEADER_LEN: usize = 4;
/// Bytes of the end-of-blast marker (RBUDP step 4).
pub const MARKER_LEN: usize = 8;
/// The largest payload a datagram may carry after its header: the largest UDP payload over
/// IPv4 (65,507 bytes) less the header.
pub const MAX_PAYLOAD: usize = 65_507 - HEADER_LEN;
/// The most packets a transfer may have: sequence numbers are `i32` on the wire.
pub const MAX_PACKETS: u64 = i32::MAX as u64;
/// Bytes of our digest message: [`crate::digest::TAG`] and the 32-byte BLAKE3 digest.
pub const DIGEST_LEN: usize = TAG_LEN + crate::digest::LEN;
/// Bytes of the digest message's tag.
const TAG_LEN: usize = crate::digest::TAG.len();

/// Why bytes are not valid RBUDP.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// A request must name a file.
    #[error("the requested file name is empty")]
    EmptyName,
    /// The request field holds the name and its NUL in 256 bytes.
    #[error("the file name is {0} bytes; RBUDP's request field holds at most 255")]
    NameTooLong(usize),
    /// A NUL would end the name early.
    #[error("the file name holds a NUL byte")]
    NulInName,
    /// The request field must hold a NUL-terminated name.
    #[error("the request field has no NUL terminator")]
    Unterminated,
    /// We serve names that are UTF-8 only.
    #[error("the requested file name is not UTF-8")]
    NotUtf8,
    /// The marker's bytes 4..7 are "EEE".
    #[error("an end-of-blast marker without its \"EEE\": {0:02x?}")]
    BadMarker([u8; MARKER_LEN]),
    /// A bitmap is exactly packets / 8 + 2 bytes.
    #[error("a bitmap of {len} bytes where {expected} were expected")]
    BitmapLength {
        /// Bytes given.
        len: usize,
        /// Bytes the transfer's packet count makes.
        expected: usize,
    },
    /// The payload size is ours to choose, within what a UDP datagram carries.
    #[error("a payload of {0} bytes: it must be 1 to {MAX_PAYLOAD} bytes")]
    BadPayload(usize),
    /// The reference uses 32-bit signed sizes and sequence numbers.
    #[error(
        "{size} bytes in packets of {payload} bytes make {packets} packets, more than RBUDP's \
         32-bit sequence numbers allow ({MAX_PACKETS})"
    )]
    TooManyPackets {
        /// The file's size.
        size: u64,
        /// The payload size.
        payload: usize,
        /// Packets it would take.
        packets: u64,
    },
    /// A datagram holds at least its sequence header.
    #[error("a datagram of {0} bytes, shorter than its 4-byte header")]
    ShortDatagram(usize),
    /// What follows the final bitmap is our digest message or nothing.
    #[error("bytes after the final bitmap that are not a digest message: {0:02x?}")]
    NotDigest(Vec<u8>),
}

/// The request field for `name` (RBUDP step 1): the name, a NUL, zeros to 256 bytes. (The
/// reference `recvfile` sends whatever follows its argument in memory after the NUL; the
/// sender reads only up to the NUL.)
pub fn encode_request(name: &str) -> Result<[u8; REQUEST_LEN], WireError> {
    let bytes = name.as_bytes();
    if bytes.is_empty() {
        return Err(WireError::EmptyName);
    }
    if bytes.contains(&0) {
        return Err(WireError::NulInName);
    }
    if bytes.len() >= REQUEST_LEN {
        return Err(WireError::NameTooLong(bytes.len()));
    }
    let mut field = [0u8; REQUEST_LEN];
    field[..bytes.len()].copy_from_slice(bytes);
    Ok(field)
}

/// The name in a request field: the bytes before the first NUL, which must be UTF-8 and not
/// empty. Bytes after the NUL are ignored (the reference fills them with whatever its memory
/// held).
pub fn decode_request(field: &[u8; REQUEST_LEN]) -> Result<String, WireError> {
    let end = field.iter().position(|&b| b == 0).ok_or(WireError::Unterminated)?;
    let name = field.get(..end).ok_or(WireError::Unterminated)?;
    if name.is_empty() {
        return Err(WireError::EmptyName);
    }
    std::str::from_utf8(name).map(str::to_owned).map_err(|_| WireError::NotUtf8)
}

/// The announced size, big-endian (RBUDP step 2).
pub fn encode_size(size: u64) -> [u8; SIZE_LEN] {
    size.to_be_bytes()
}

/// The size a sender announced.
pub fn decode_size(bytes: &[u8; SIZE_LEN]) -> u64 {
    u64::from_be_bytes(*bytes)
}

/// Write `seq` as a datagram's header, little-endian like the x86 reference (RBUDP step 3).
pub fn encode_header(seq: u32) -> [u8; HEADER_LEN] {
    seq.to_le_bytes()
}

/// A datagram's raw header (its byte order is not known yet: see [`super::order`]) and its
/// payload.
pub fn split_datagram(datagram: &[u8]) -> Result<([u8; HEADER_LEN], &[u8]), WireError> {
    match (datagram.get(..HEADER_LEN), datagram.get(HEADER_LEN..)) {
        (Some(head), Some(payload)) => {
            let mut raw = [0u8; HEADER_LEN];
            raw.copy_from_slice(head);
            Ok((raw, payload))
        }
        _ => Err(WireError::ShortDatagram(datagram.len())),
    }
}

/// The end-of-blast marker of `round` (from 0): the round little-endian, `EEE`, one padding
/// byte, zero here (RBUDP step 4).
pub fn encode_marker(round: u32) -> [u8; MARKER_LEN] {
    let r = round.to_le_bytes();
    [r[0], r[1], r[2], r[3], b'E', b'E', b'E', 0]
}

/// The raw round bytes of a marker, in the sender's order; the padding byte is ignored (the
/// reference leaves it uninitialised).
pub fn decode_marker(marker: &[u8; MARKER_LEN]) -> Result<[u8; 4], WireError> {
    if marker[4..7] != *b"EEE" {
        return Err(WireError::BadMarker(*marker));
    }
    Ok([marker[0], marker[1], marker[2], marker[3]])
}

/// True when a marker's raw round bytes say `round` in either byte order.
pub fn round_matches(raw: [u8; 4], round: u32) -> bool {
    u32::from_le_bytes(raw) == round || u32::from_be_bytes(raw) == round
}

/// Our digest message (not RBUDP; [`crate::digest`]): [`crate::digest::TAG`], then the 32-byte
/// BLAKE3 digest of the whole file.
pub fn encode_digest(digest: &[u8; crate::digest::LEN]) -> [u8; DIGEST_LEN] {
    let mut message = [0u8; DIGEST_LEN];
    message[..TAG_LEN].copy_from_slice(&crate::digest::TAG);
    message[TAG_LEN..].copy_from_slice(digest);
    message
}

/// The first bytes of a digest message, as they arrive: `Ok(None)` while `bytes` (at most
/// [`DIGEST_LEN`] of them) may still become one, `Ok(Some(digest))` once whole, and an error as
/// soon as they cannot (a tag that differs), so a peer that sends something else is not waited
/// for.
pub fn decode_digest(bytes: &[u8]) -> Result<Option<[u8; crate::digest::LEN]>, WireError> {
    let tag = bytes.get(..TAG_LEN).unwrap_or(bytes);
    if bytes.len() > DIGEST_LEN || !crate::digest::TAG.starts_with(tag) {
        return Err(WireError::NotDigest(bytes.iter().copied().take(DIGEST_LEN).collect()));
    }
    Ok(bytes.get(TAG_LEN..).and_then(|d| <[u8; crate::digest::LEN]>::try_from(d).ok()))
}

/// How a file of `size` bytes splits into packets of `payload` bytes: all full but the last,
/// which is shorter and not padded (RBUDP step 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    size: u64,
    payload: usize,
    packets: u32,
}

impl Layout {
    /// The layout of `size` bytes in packets of `payload` bytes, if RBUDP can carry it.
    pub fn new(size: u64, payload: usize) -> Result<Layout, WireError> {
        if payload == 0 || payload > MAX_PAYLOAD {
            return Err(WireError::BadPayload(payload));
        }
        let packets = size.div_ceil(payload as u64);
        match u32::try_from(packets) {
            Ok(p) if packets <= MAX_PACKETS => Ok(Layout { size, payload, packets: p }),
            _ => Err(WireError::TooManyPackets { size, payload, packets }),
        }
    }

    /// The file's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The payload of a full packet.
    pub fn payload(&self) -> usize {
        self.payload
    }

    /// How many packets (at most [`MAX_PACKETS`]).
    pub fn packets(&self) -> u32 {
        self.packets
    }

    /// Where packet `seq` starts in the file.
    pub fn offset(&self, seq: u32) -> u64 {
        u64::from(seq) * self.payload as u64
    }

    /// Payload bytes of packet `seq` (0 past the end).
    pub fn len_of(&self, seq: u32) -> usize {
        let left = self.size.saturating_sub(self.offset(seq));
        usize::try_from(left.min(self.payload as u64)).unwrap_or(self.payload)
    }

    /// Bytes of the bitmap a receiver answers with: packets / 8 + 2 (RBUDP step 5).
    pub fn bitmap_len(&self) -> usize {
        self.packets as usize / 8 + 2
    }

    /// File bytes in the packets `received` of which the last one is or is not among them.
    pub fn bytes_in(&self, received: u32, has_last: bool) -> u64 {
        if received == 0 {
            return 0;
        }
        let last = self.len_of(self.packets - 1) as u64;
        let full = u64::from(received - u32::from(has_last));
        full * self.payload as u64 + if has_last { last } else { 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_round_trips_and_ignores_what_follows_the_nul() {
        let mut field = encode_request("dir/file.bin").unwrap();
        assert_eq!(&field[..13], b"dir/file.bin\0");
        assert!(field[12..].iter().all(|&b| b == 0));
        assert_eq!(decode_request(&field).unwrap(), "dir/file.bin");
        // recvfile sends its other arguments and environment after the NUL.
        field[13..20].copy_from_slice(b"PAD=000");
        assert_eq!(decode_request(&field).unwrap(), "dir/file.bin");
    }

    #[test]
    fn a_request_is_refused_when_it_cannot_be_one() {
        assert_eq!(encode_request(""), Err(WireError::EmptyName));
        assert_eq!(encode_request("a\0b"), Err(WireError::NulInName));
        assert_eq!(encode_request(&"x".repeat(256)), Err(WireError::NameTooLong(256)));
        assert!(encode_request(&"x".repeat(255)).is_ok(), "255 bytes and the NUL fit");
        assert_eq!(decode_request(&[b'a'; REQUEST_LEN]), Err(WireError::Unterminated));
        assert_eq!(decode_request(&[0; REQUEST_LEN]), Err(WireError::EmptyName));
        let mut field = [0u8; REQUEST_LEN];
        field[..2].copy_from_slice(&[0xff, 0xfe]);
        assert_eq!(decode_request(&field), Err(WireError::NotUtf8));
    }

    #[test]
    fn the_size_is_big_endian() {
        assert_eq!(encode_size(0x0102_0304_0506_0708), [1, 2, 3, 4, 5, 6, 7, 8]);
        for size in [0, 1, 1460, u64::MAX] {
            assert_eq!(decode_size(&encode_size(size)), size);
        }
    }

    #[test]
    fn a_datagram_header_is_little_endian_and_a_short_datagram_is_refused() {
        assert_eq!(encode_header(0x0102_0304), [4, 3, 2, 1]);
        let (raw, payload) = split_datagram(&[1, 0, 0, 0, 9, 9]).unwrap();
        assert_eq!((raw, payload), ([1, 0, 0, 0], &[9u8, 9][..]));
        assert_eq!(split_datagram(&[1, 0, 0, 0]).unwrap().1, &[] as &[u8]);
        for short in [&[][..], &[1][..], &[1, 2, 3][..]] {
            assert_eq!(split_datagram(short), Err(WireError::ShortDatagram(short.len())));
        }
    }

    #[test]
    fn a_marker_round_trips_in_either_order_and_needs_its_eee() {
        let m = encode_marker(3);
        assert_eq!(m, [3, 0, 0, 0, b'E', b'E', b'E', 0]);
        let raw = decode_marker(&m).unwrap();
        assert!(round_matches(raw, 3) && !round_matches(raw, 2));
        // A big-endian sender's round 3, padding byte left as garbage.
        let raw = decode_marker(&[0, 0, 0, 3, b'E', b'E', b'E', 0xa5]).unwrap();
        assert!(round_matches(raw, 3));
        assert!(decode_marker(&[3, 0, 0, 0, b'E', b'X', b'E', 0]).is_err());
    }

    #[test]
    fn a_digest_message_is_the_tag_and_the_digest_and_is_read_as_it_arrives() {
        let digest: [u8; 32] = std::array::from_fn(|i| i as u8);
        let m = encode_digest(&digest);
        assert_eq!((&m[..4], &m[4..]), (&b"UDTD"[..], &digest[..]));
        for cut in 0..DIGEST_LEN {
            assert_eq!(decode_digest(&m[..cut]), Ok(None), "{cut} bytes");
        }
        assert_eq!(decode_digest(&m), Ok(Some(digest)));
        // A marker, another tag, a byte too many: refused as soon as it shows.
        assert!(decode_digest(&encode_marker(0)).is_err());
        assert!(decode_digest(b"UDTX").is_err());
        assert!(decode_digest(b"X").is_err());
        assert!(decode_digest(&[&m[..], &[0]].concat()).is_err());
    }

    #[test]
    fn a_layout_splits_into_full_packets_and_a_short_last_one() {
        let l = Layout::new(3000, 1460).unwrap();
        assert_eq!((l.packets(), l.len_of(0), l.len_of(1), l.len_of(2), l.len_of(3)), (3, 1460, 1460, 80, 0));
        assert_eq!((l.offset(2), l.bitmap_len()), (2920, 2));
        assert_eq!(l.bytes_in(3, true), 3000);
        assert_eq!(l.bytes_in(2, true), 1540);
        assert_eq!(l.bytes_in(2, false), 2920);
        let exact = Layout::new(2920, 1460).unwrap();
        assert_eq!((exact.packets(), exact.len_of(1)), (2, 1460));
        let empty = Layout::new(0, 1460).unwrap();
        assert_eq!((empty.packets(), empty.bitmap_len(), empty.bytes_in(0, false)), (0, 2, 0));
        // 8 packets: one byte of bits and a second one all unused, as the reference counts.
        assert_eq!(Layout::new(8, 1).unwrap().bitmap_len(), 3);
    }

    #[test]
    fn a_layout_refuses_what_32_bit_sequence_numbers_cannot_number() {
        assert!(Layout::new(MAX_PACKETS, 1).is_ok());
        let err = Layout::new(MAX_PACKETS + 1, 1).unwrap_err();
        assert!(matches!(err, WireError::TooManyPackets { packets, .. } if packets == MAX_PACKETS + 1));
        assert!(err.to_string().contains("32-bit"), "{err}");
        assert!(Layout::new(u64::MAX, MAX_PAYLOAD).is_err());
        assert_eq!(Layout::new(10, 0), Err(WireError::BadPayload(0)));
        assert_eq!(Layout::new(10, MAX_PAYLOAD + 1), Err(WireError::BadPayload(MAX_PAYLOAD + 1)));
    }
}
