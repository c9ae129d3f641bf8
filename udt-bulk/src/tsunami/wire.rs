//! The bytes of Tsunami UDP 1.1 (revision 0x20061025): every control message of the TCP
//! exchange and the UDP block header, each with an encoder and a decoder.
//!
//! All integers are big-endian (seed-protocols.md, Tsunami). Fixed-size messages decode only
//! from exactly their size: a decoder handed fewer or more bytes returns an error and never
//! panics; the session cuts the control stream into messages before decoding them.
//!
//! The control exchange, in order (seed-protocols.md, Tsunami steps 1-7):
//! revision both ways ([`REVISION`]), the server's [`CHALLENGE_LEN`]-byte challenge and the
//! client's [`PROOF_LEN`]-byte proof, one [`AUTH_OK`] byte, the file name as a line, one
//! [`FILE_OK`] byte, the client's [`TransferRequest`], the server's [`FileInfo`], the client's
//! UDP port, then the client's [`Record`]s until a stop.

use std::fmt;

/// Protocol revision both ends send first (Tsunami step 1).
pub const REVISION: u32 = 0x2006_1025;
/// Length of the server's authentication challenge (Tsunami step 2).
pub const CHALLENGE_LEN: usize = 64;
/// Length of the client's proof: an MD5 digest (Tsunami step 2).
pub const PROOF_LEN: usize = 16;
/// The server's answer to a correct proof; any other byte refuses it.
pub const AUTH_OK: u8 = 0;
/// The reference server's answer to a wrong proof.
pub const AUTH_REFUSED: u8 = 1;
/// The server's answer to a file name it will send (Tsunami step 3).
pub const FILE_OK: u8 = 0;
/// The server's answer to a file name it cannot open (Tsunami step 3).
pub const FILE_CANNOT_OPEN: u8 = 8;
/// Length of a UDP block header: u32 block number, u16 block type.
pub const HEADER_LEN: usize = 6;
/// Largest block: a datagram of [`HEADER_LEN`] + block size bytes must fit in one IPv4 UDP
/// datagram (65,507 bytes of payload). The reference allows 65,530, which it cannot send.
pub const MAX_BLOCK_SIZE: u32 = 65_507 - HEADER_LEN as u32;
/// Longest file name line accepted, terminator excluded (the reference server keeps 1,023).
pub const MAX_NAME_LEN: usize = 4096;
/// The TCP port of a reference server.
pub const DEFAULT_PORT: u16 = 46_224;

/// A message that does not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    /// Fewer or more bytes than the message's fixed size.
    Length {
        /// Which message.
        what: &'static str,
        /// Its size.
        want: usize,
        /// The bytes given.
        got: usize,
    },
    /// A control record of a type the protocol does not have.
    RecordType(u16),
    /// A UDP block of a type the protocol does not have.
    BlockType(u16),
    /// A file name line that is empty, too long, or holds a terminator or non-UTF-8 bytes.
    Name(String),
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Length { what, want, got } => write!(f, "{what} of {got} bytes, not {want}"),
            WireError::RecordType(t) => write!(f, "control record of unknown type {t}"),
            WireError::BlockType(t) => write!(f, "data block of unknown type {t:#06x}"),
            WireError::Name(why) => write!(f, "file name {why}"),
        }
    }
}

impl std::error::Error for WireError {}

/// `bytes` as an array of exactly `N`, or a length error naming `what`.
fn exact<const N: usize>(what: &'static str, bytes: &[u8]) -> Result<[u8; N], WireError> {
    bytes.try_into().map_err(|_| WireError::Length { what, want: N, got: bytes.len() })
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The protocol revision as sent.
pub fn encode_revision(revision: u32) -> [u8; 4] {
    revision.to_be_bytes()
}

/// A revision from exactly 4 bytes.
pub fn decode_revision(bytes: &[u8]) -> Result<u32, WireError> {
    exact::<4>("protocol revision", bytes).map(u32::from_be_bytes)
}

/// The client's UDP port as sent (Tsunami step 6).
pub fn encode_port(port: u16) -> [u8; 2] {
    port.to_be_bytes()
}

/// A UDP port from exactly 2 bytes.
pub fn decode_port(bytes: &[u8]) -> Result<u16, WireError> {
    exact::<2>("UDP port", bytes).map(u16::from_be_bytes)
}

/// The file request line: the name and `\n` (Tsunami step 3). Refuses what cannot be framed.
pub fn encode_name(name: &str) -> Result<Vec<u8>, WireError> {
    check_name(name.as_bytes())?;
    let mut line = Vec::with_capacity(name.len() + 1);
    line.extend_from_slice(name.as_bytes());
    line.push(b'\n');
    Ok(line)
}

/// Where the file request line in `buffered` ends: `Ok(Some((name, consumed)))` once a `\n` or
/// NUL terminator arrived (the reference reads up to either), `Ok(None)` while more may come.
pub fn decode_name(buffered: &[u8]) -> Result<Option<(String, usize)>, WireError> {
    let window = &buffered[..buffered.len().min(MAX_NAME_LEN + 1)];
    match window.iter().position(|&b| b == b'\n' || b == 0) {
        Some(end) => {
            let name = &window[..end];
            check_name(name)?;
            let name = std::str::from_utf8(name).map_err(|_| WireError::Name("is not UTF-8".into()))?;
            Ok(Some((name.to_owned(), end + 1)))
        }
        None if window.len() > MAX_NAME_LEN => {
            Err(WireError::Name(format!("longer than {MAX_NAME_LEN} bytes")))
        }
        None => Ok(None),
    }
}

fn check_name(name: &[u8]) -> Result<(), WireError> {
    if name.is_empty() {
        return Err(WireError::Name("is empty".into()));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(WireError::Name(format!("longer than {MAX_NAME_LEN} bytes")));
    }
    if name.iter().any(|&b| b == b'\n' || b == 0) {
        return Err(WireError::Name("holds a newline or NUL".into()));
    }
    Ok(())
}

/// What the client asks for once its file request was accepted (Tsunami step 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransferRequest {
    /// Bytes of file per datagram.
    pub block_size: u32,
    /// Target rate, bits per second.
    pub target_rate: u32,
    /// Error rate above which the server slows down, percent x 1000.
    pub error_threshold: u32,
    /// Slow-down factor on the inter-packet delay, numerator and denominator.
    pub slower: (u16, u16),
    /// Speed-up factor on the inter-packet delay, numerator and denominator.
    pub faster: (u16, u16),
}

impl TransferRequest {
    /// Encoded length.
    pub const LEN: usize = 20;

    /// The 20 bytes on the wire.
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0..4].copy_from_slice(&self.block_size.to_be_bytes());
        b[4..8].copy_from_slice(&self.target_rate.to_be_bytes());
        b[8..12].copy_from_slice(&self.error_threshold.to_be_bytes());
        b[12..14].copy_from_slice(&self.slower.0.to_be_bytes());
        b[14..16].copy_from_slice(&self.slower.1.to_be_bytes());
        b[16..18].copy_from_slice(&self.faster.0.to_be_bytes());
        b[18..20].copy_from_slice(&self.faster.1.to_be_bytes());
        b
    }

    /// From exactly 20 bytes.
    pub fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        let b = exact::<{ Self::LEN }>("transfer parameters", bytes)?;
        Ok(TransferRequest {
            block_size: u32_at(&b, 0),
            target_rate: u32_at(&b, 4),
            error_threshold: u32_at(&b, 8),
            slower: (u16_at(&b, 12), u16_at(&b, 14)),
            faster: (u16_at(&b, 16), u16_at(&b, 18)),
        })
    }
}

/// The server's description of the file it is about to send (Tsunami step 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileInfo {
    /// File size in bytes.
    pub size: u64,
    /// The block size, echoed.
    pub block_size: u32,
    /// ceil(size / block_size).
    pub block_count: u32,
    /// The server's clock, seconds since 1970 (informative).
    pub epoch: u32,
}

impl FileInfo {
    /// Encoded length.
    pub const LEN: usize = 20;

    /// The 20 bytes on the wire.
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0..8].copy_from_slice(&self.size.to_be_bytes());
        b[8..12].copy_from_slice(&self.block_size.to_be_bytes());
        b[12..16].copy_from_slice(&self.block_count.to_be_bytes());
        b[16..20].copy_from_slice(&self.epoch.to_be_bytes());
        b
    }

    /// From exactly 20 bytes.
    pub fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        let b = exact::<{ Self::LEN }>("file description", bytes)?;
        let mut size = [0u8; 8];
        size.copy_from_slice(&b[0..8]);
        Ok(FileInfo {
            size: u64::from_be_bytes(size),
            block_size: u32_at(&b, 8),
            block_count: u32_at(&b, 12),
            epoch: u32_at(&b, 16),
        })
    }
}

/// Blocks needed for `size` bytes in blocks of `block_size`: ceil(size / block_size), in u64
/// (`None` for a zero block size). The wire carries it in 32 bits: see [`fits_on_wire`].
pub fn block_count(size: u64, block_size: u32) -> Option<u64> {
    let b = u64::from(block_size);
    size.checked_div(b).map(|whole| whole + u64::from(size % b != 0))
}

/// The block count as the wire carries it, when it fits in 32 bits.
pub fn fits_on_wire(count: u64) -> Option<u32> {
    u32::try_from(count).ok()
}

/// What a client's control record asks (Tsunami step 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    /// Send this block again.
    Retransmit,
    /// Go back and send originals from this block on.
    Restart,
    /// The file is complete: stop sending.
    Stop,
    /// The client's current error rate (percent x 1000).
    ErrorRate,
}

impl RecordKind {
    fn code(self) -> u16 {
        match self {
            RecordKind::Retransmit => 0,
            RecordKind::Restart => 1,
            RecordKind::Stop => 2,
            RecordKind::ErrorRate => 3,
        }
    }
}

/// One 12-byte control record from the client: u16 type, 2 padding bytes, u32 block, u32
/// error rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// What it asks.
    pub kind: RecordKind,
    /// The block (retransmit, restart), 0 otherwise.
    pub block: u32,
    /// The error rate (error-rate report), 0 otherwise.
    pub error_rate: u32,
}

impl Record {
    /// Encoded length.
    pub const LEN: usize = 12;

    /// Ask for `block` again.
    pub fn retransmit(block: u32) -> Self {
        Record { kind: RecordKind::Retransmit, block, error_rate: 0 }
    }

    /// Ask for originals from `block` on.
    pub fn restart(block: u32) -> Self {
        Record { kind: RecordKind::Restart, block, error_rate: 0 }
    }

    /// Say the file is complete.
    pub fn stop() -> Self {
        Record { kind: RecordKind::Stop, block: 0, error_rate: 0 }
    }

    /// Report an error rate (percent x 1000).
    pub fn error_rate(rate: u32) -> Self {
        Record { kind: RecordKind::ErrorRate, block: 0, error_rate: rate }
    }

    /// The 12 bytes on the wire (padding zero).
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0..2].copy_from_slice(&self.kind.code().to_be_bytes());
        b[4..8].copy_from_slice(&self.block.to_be_bytes());
        b[8..12].copy_from_slice(&self.error_rate.to_be_bytes());
        b
    }

    /// From exactly 12 bytes; the padding is ignored (the reference leaves it unset).
    pub fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        let b = exact::<{ Self::LEN }>("control record", bytes)?;
        let kind = match u16_at(&b, 0) {
            0 => RecordKind::Retransmit,
            1 => RecordKind::Restart,
            2 => RecordKind::Stop,
            3 => RecordKind::ErrorRate,
            other => return Err(WireError::RecordType(other)),
        };
        Ok(Record { kind, block: u32_at(&b, 4), error_rate: u32_at(&b, 8) })
    }
}

/// The type of a UDP block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// `O`: sent in order for the first time (or again after a restart).
    Original,
    /// `R`: sent again on request.
    Retransmission,
    /// `X`: the last block, repeated until the client stops the transfer.
    Terminate,
}

impl BlockKind {
    fn code(self) -> u16 {
        match self {
            BlockKind::Original => u16::from(b'O'),
            BlockKind::Retransmission => u16::from(b'R'),
            BlockKind::Terminate => u16::from(b'X'),
        }
    }
}

/// The 6-byte header of every data datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockHeader {
    /// The block number, from 1 (0 only in the terminate block of an empty file).
    pub block: u32,
    /// Its type.
    pub kind: BlockKind,
}

impl BlockHeader {
    /// The header into the first [`HEADER_LEN`] bytes of `datagram` (at least that long).
    pub fn encode_into(&self, datagram: &mut [u8]) {
        datagram[0..4].copy_from_slice(&self.block.to_be_bytes());
        datagram[4..6].copy_from_slice(&self.kind.code().to_be_bytes());
    }

    /// The header and the block's bytes from a datagram that must be exactly
    /// [`HEADER_LEN`] + `block_size` bytes (every Tsunami datagram is; the last block is
    /// padded).
    pub fn decode(datagram: &[u8], block_size: u32) -> Result<(Self, &[u8]), WireError> {
        let want = HEADER_LEN + block_size as usize;
        if datagram.len() != want {
            return Err(WireError::Length { what: "data datagram", want, got: datagram.len() });
        }
        let kind = match u16_at(datagram, 4) {
            0x4f => BlockKind::Original,
            0x52 => BlockKind::Retransmission,
            0x58 => BlockKind::Terminate,
            other => return Err(WireError::BlockType(other)),
        };
        Ok((BlockHeader { block: u32_at(datagram, 0), kind }, &datagram[HEADER_LEN..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revision_and_port_round_trip_and_refuse_other_lengths() {
        assert_eq!(encode_revision(REVISION), [0x20, 0x06, 0x10, 0x25]);
        assert_eq!(decode_revision(&encode_revision(REVISION)), Ok(REVISION));
        assert!(decode_revision(&[0x20, 0x06, 0x10]).is_err());
        assert!(decode_revision(&[0x20, 0x06, 0x10, 0x25, 0]).is_err());
        assert_eq!(encode_port(46_224), [0xb4, 0x90]);
        assert_eq!(decode_port(&[0xb4, 0x90]), Ok(46_224));
        assert!(decode_port(&[0xb4]).is_err());
        assert!(decode_port(&[0xb4, 0x90, 0]).is_err());
    }

    #[test]
    fn the_transfer_request_has_the_reference_layout() {
        let req = TransferRequest {
            block_size: 1024,
            target_rate: 650_000_000,
            error_threshold: 7500,
            slower: (25, 24),
            faster: (5, 6),
        };
        let bytes = req.encode();
        assert_eq!(bytes, [0, 0, 4, 0, 0x26, 0xbe, 0x36, 0x80, 0, 0, 0x1d, 0x4c, 0, 25, 0, 24, 0, 5, 0, 6]);
        assert_eq!(TransferRequest::decode(&bytes), Ok(req));
        assert!(TransferRequest::decode(&bytes[..19]).is_err());
        assert!(TransferRequest::decode(&[bytes.as_slice(), &[0]].concat()).is_err());
    }

    #[test]
    fn the_file_description_round_trips_with_sizes_past_4_gib() {
        let info = FileInfo { size: 5 << 30, block_size: 65_000, block_count: 82_595, epoch: 0x6000_0001 };
        let bytes = info.encode();
        assert_eq!(&bytes[0..8], &[0, 0, 0, 1, 0x40, 0, 0, 0]);
        assert_eq!(&bytes[16..20], &[0x60, 0, 0, 1]);
        assert_eq!(FileInfo::decode(&bytes), Ok(info));
        assert!(FileInfo::decode(&bytes[..12]).is_err());
        assert!(FileInfo::decode(&[0u8; 21]).is_err());
    }

    #[test]
    fn block_counts_are_computed_in_64_bits_and_checked_for_the_wire() {
        assert_eq!(block_count(0, 1024), Some(0));
        assert_eq!(block_count(1, 1024), Some(1));
        assert_eq!(block_count(1024, 1024), Some(1));
        assert_eq!(block_count(1025, 1024), Some(2));
        assert_eq!(block_count(10, 0), None);
        let largest = u64::from(u32::MAX) * 1024;
        assert_eq!(block_count(largest, 1024).and_then(fits_on_wire), Some(u32::MAX));
        assert_eq!(block_count(largest + 1, 1024).and_then(fits_on_wire), None);
        assert_eq!(block_count(u64::MAX, 1).and_then(fits_on_wire), None);
    }

    #[test]
    fn records_round_trip_ignore_padding_and_refuse_unknown_types() {
        for rec in [Record::retransmit(7), Record::restart(1), Record::stop(), Record::error_rate(12_345)] {
            assert_eq!(Record::decode(&rec.encode()), Ok(rec));
        }
        assert_eq!(Record::retransmit(0x0102_0304).encode(), [0, 0, 0, 0, 1, 2, 3, 4, 0, 0, 0, 0]);
        assert_eq!(Record::error_rate(7500).encode(), [0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0x1d, 0x4c]);
        let mut padded = Record::restart(9).encode();
        padded[2] = 0xaa;
        padded[3] = 0x55;
        assert_eq!(Record::decode(&padded), Ok(Record::restart(9)));
        let mut unknown = Record::stop().encode();
        unknown[1] = 4;
        assert_eq!(Record::decode(&unknown), Err(WireError::RecordType(4)));
        assert!(Record::decode(&padded[..11]).is_err());
        assert!(Record::decode(&[0u8; 13]).is_err());
    }

    #[test]
    fn data_datagrams_decode_only_at_the_full_block_size() {
        let mut d = vec![0u8; HEADER_LEN + 4];
        for (kind, code) in
            [(BlockKind::Original, b'O'), (BlockKind::Retransmission, b'R'), (BlockKind::Terminate, b'X')]
        {
            BlockHeader { block: 0x0a0b_0c0d, kind }.encode_into(&mut d);
            d[6..].copy_from_slice(b"data");
            assert_eq!(&d[..6], &[0x0a, 0x0b, 0x0c, 0x0d, 0, code]);
            let (h, body) = BlockHeader::decode(&d, 4).unwrap();
            assert_eq!((h, body), (BlockHeader { block: 0x0a0b_0c0d, kind }, &b"data"[..]));
        }
        assert!(matches!(BlockHeader::decode(&d[..9], 4), Err(WireError::Length { .. })));
        assert!(matches!(
            BlockHeader::decode(&[d.as_slice(), b"!"].concat(), 4),
            Err(WireError::Length { .. })
        ));
        assert!(BlockHeader::decode(&[], 0).is_err());
        d[5] = b'Z';
        assert_eq!(BlockHeader::decode(&d, 4), Err(WireError::BlockType(u16::from(b'Z'))));
    }

    #[test]
    fn names_are_lines_ended_by_newline_or_nul() {
        assert_eq!(encode_name("dir/a b.bin").unwrap(), b"dir/a b.bin\n");
        assert!(encode_name("").is_err());
        assert!(encode_name("a\nb").is_err());
        assert!(encode_name("a\0b").is_err());
        assert!(encode_name(&"x".repeat(MAX_NAME_LEN + 1)).is_err());

        assert_eq!(decode_name(b"file.bin"), Ok(None));
        assert_eq!(decode_name(b"file.bin\nrest"), Ok(Some(("file.bin".into(), 9))));
        assert_eq!(decode_name(b"f\0"), Ok(Some(("f".into(), 2))));
        assert!(decode_name(b"\n").is_err());
        assert!(decode_name(b"\xff\xfe\n").is_err());
        let long = vec![b'x'; MAX_NAME_LEN];
        assert_eq!(decode_name(&long), Ok(None));
        assert!(decode_name(&[long.as_slice(), b"x"].concat()).is_err());
        assert!(decode_name(&[long.as_slice(), b"\n"].concat()).unwrap().is_some());
    }
}
