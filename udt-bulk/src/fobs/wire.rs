//! Every FOBS message and datagram on the wire: encoders, and decoders that refuse anything
//! malformed. The paper gives the messages' roles and a few of their fields (Kannan et al. 2003
//! §3.2.1, §3.3.4, figures 6 and 7) but no byte layout, and no public implementation exists:
//! the layout here is ours (FOBS.md, "Wire format").
//!
//! Every datagram and every control frame starts with the versioned magic `"FOB" 0x01`, so a
//! stray or newer peer is refused with a clear reason instead of being misread. Integers are big
//! endian. Control frames are `magic, kind u8, body length u32, body`; their bodies are at most
//! [`MAX_BODY`] bytes, checked before the body is buffered.
//!
//! Invariants: decoders never panic and never allocate more than the input they were given (or
//! [`MAX_BODY`] for a frame being assembled); a value that decodes re-encodes to the same bytes.

use super::params::AckScheme;

/// The protocol version this implementation speaks.
pub const VERSION: u8 = 1;
/// The versioned magic at the start of every datagram and control frame.
pub const MAGIC: [u8; 4] = [b'F', b'O', b'B', VERSION];
/// Bytes before a data datagram's payload: magic, kind, chunk, packet, sequence.
pub const DATA_HEADER: usize = 4 + 1 + 4 + 4 + 8;
/// Bytes before a chunk-map datagram's bits: magic, kind, chunk, map id, first, count, report.
pub const MAP_HEADER: usize = 4 + 1 + 4 + 4 + 4 + 4 + REPORT_LEN;
/// Bytes of a control frame's header: magic, kind, body length.
pub const FRAME_HEADER: usize = 4 + 1 + 4;
/// The largest control frame body accepted.
pub const MAX_BODY: usize = 16 * 1024;
/// The most packet numbers in one NACK: it fits one 1500-byte frame (§3.3.4).
pub const NACK_CAP: usize = 360;
/// The longest file name in a request, in bytes.
pub const MAX_NAME: usize = 4096;
/// The longest reason in a refusal or abort, in bytes.
pub const MAX_REASON: usize = 1024;
/// The control channel that carries [`Message::Digest`]: channel 1, whose sender-to-receiver
/// direction is otherwise idle and whose receiver-to-sender bytes (the chunk completes) the
/// sender has all read when it sends the digest (FOBS.md, "End-to-end digest").
pub const DIGEST_CHANNEL: usize = 1;
const REPORT_LEN: usize = 24;

const DATA: u8 = 1;
const MAP: u8 = 2;

/// Why bytes from the network were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The bytes do not start with `"FOB"`.
    #[error("not a FOBS peer (no \"FOB\" magic)")]
    NotFobs,
    /// The magic names another version.
    #[error("the peer speaks FOBS version {0}, this end speaks version {VERSION}")]
    Version(u8),
    /// Fewer bytes than the message needs.
    #[error("truncated {0}")]
    Truncated(&'static str),
    /// A length over its limit.
    #[error("{what} of {got} bytes exceeds the limit of {max}")]
    Oversized {
        /// What was too long.
        what: &'static str,
        /// Its length.
        got: usize,
        /// The limit.
        max: usize,
    },
    /// A message or datagram kind this version does not know.
    #[error("unknown {0} kind {1}")]
    UnknownKind(&'static str, u8),
    /// A field with a value the protocol does not allow.
    #[error("invalid {0}")]
    Invalid(&'static str),
}

/// What the receiver has seen of the data, cumulative since its start: the sender's rate rule
/// and round-trip estimate read it from every acknowledgement (FOBS.md, "Reports").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Report {
    /// Data datagrams that arrived (duplicates included).
    pub received: u64,
    /// The highest send sequence number among them (0: none yet).
    pub highest_seq: u64,
    /// Microseconds the receiver spent receiving data: the sum of the gaps between arrivals,
    /// leaving out silences (a gap over `QUIET_GAPS` smoothed gaps: the sender idled). Over a
    /// span of reports, arrivals divided by this is the receive rate while data flowed.
    pub busy_us: u64,
}

/// The sender's answer to a request: the transfer's geometry and how to reach its data socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accept {
    /// Presented back on control channel 1 to join it to this session.
    pub token: u64,
    /// File size in bytes.
    pub size: u64,
    /// Packets per chunk.
    pub chunk_packets: u32,
    /// Packets per segment.
    pub segment_packets: u32,
    /// File bytes per packet.
    pub payload: u16,
    /// The sender's UDP port (chunk maps go there).
    pub udp_port: u16,
    /// The acknowledgement scheme, echoing the request.
    pub scheme: AckScheme,
}

/// A control message (TCP), with its channel and direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// Channel 0, receiver to sender, first: the file wanted and where data goes.
    Request {
        /// The receiver's UDP port.
        udp_port: u16,
        /// The acknowledgement scheme the receiver will use.
        scheme: AckScheme,
        /// The file, relative to the sender's root.
        name: String,
    },
    /// Channel 0, sender to receiver: the request is granted.
    Accept(Accept),
    /// Channel 0 or 1, sender to receiver: the request or connection is refused.
    Refuse {
        /// Why, one line.
        reason: String,
    },
    /// Channel 1, receiver to sender, first: join this connection to the session.
    Hello {
        /// The token of the accept message.
        token: u64,
    },
    /// Channel 0, sender to receiver: the sender sent its last packet of this segment for now
    /// (§3.2.1).
    EndOfSegment {
        /// The chunk.
        chunk: u32,
        /// The segment.
        segment: u32,
        /// The send sequence number of the last data datagram sent before this message.
        last_seq: u64,
    },
    /// Channel 0, sender to receiver: the sender reached the chunk's end and starts over with
    /// the unacknowledged packets; it may ask for a NACK (§3.2.1, §3.3.4).
    Done {
        /// The chunk.
        chunk: u32,
        /// Passes over this chunk completed before this one (0 for the first).
        pass: u32,
        /// Answer with a NACK listing every missing packet of the chunk.
        want_nack: bool,
        /// The send sequence number of the last data datagram sent before this message.
        last_seq: u64,
    },
    /// Channel 0, receiver to sender: one segment's bit acknowledgement (§3.3.3).
    SegmentBits {
        /// The chunk.
        chunk: u32,
        /// The segment.
        segment: u32,
        /// The receiver's report.
        report: Report,
        /// One bit per packet of the segment (FOBS.md, "Bit maps").
        bits: Vec<u8>,
    },
    /// Channel 0, receiver to sender: every packet of the segment arrived (ACK, §3.3.4).
    SegmentAck {
        /// The chunk.
        chunk: u32,
        /// The segment.
        segment: u32,
        /// The receiver's report.
        report: Report,
    },
    /// Channel 0, receiver to sender: every packet of the chunk arrived but these (NACK,
    /// §3.3.4).
    Nack {
        /// The chunk.
        chunk: u32,
        /// The receiver's report.
        report: Report,
        /// The missing packets, at most [`NACK_CAP`].
        missing: Vec<u32>,
    },
    /// Channel 1 (high priority), receiver to sender: the chunk is complete (§3, §3.2.2).
    Complete {
        /// The chunk.
        chunk: u32,
        /// The receiver's report.
        report: Report,
    },
    /// Channel 0, receiver to sender: an end-of-segment or DONE arrived ahead of the data sent
    /// before it; its acknowledgement waits for that data, and this reports what arrived so far
    /// (our addition: timely feedback for the rate rule).
    Progress {
        /// The receiver's report.
        report: Report,
    },
    /// Channel 0, either way: this end gives up, with its reason.
    Abort {
        /// Why, one line.
        reason: String,
    },
    /// Channel 1 ([`DIGEST_CHANNEL`]), sender to receiver, last: the BLAKE3 digest of the whole
    /// file, sent once the last chunk complete arrived (our addition, [`crate::digest`]).
    Digest {
        /// The digest ([`crate::storage::Source::digest`]).
        blake3: [u8; 32],
    },
}

impl Message {
    /// The message's name, for error messages.
    pub fn name(&self) -> &'static str {
        match self {
            Message::Request { .. } => "request",
            Message::Accept(_) => "accept",
            Message::Refuse { .. } => "refusal",
            Message::Hello { .. } => "hello",
            Message::EndOfSegment { .. } => "end-of-segment",
            Message::Done { .. } => "DONE",
            Message::SegmentBits { .. } => "segment bit acknowledgement",
            Message::SegmentAck { .. } => "segment ACK",
            Message::Nack { .. } => "NACK",
            Message::Complete { .. } => "chunk complete",
            Message::Abort { .. } => "abort",
            Message::Progress { .. } => "progress report",
            Message::Digest { .. } => "digest",
        }
    }

    fn kind(&self) -> u8 {
        match self {
            Message::Request { .. } => 1,
            Message::Accept(_) => 2,
            Message::Refuse { .. } => 3,
            Message::Hello { .. } => 4,
            Message::EndOfSegment { .. } => 5,
            Message::Done { .. } => 6,
            Message::SegmentBits { .. } => 7,
            Message::SegmentAck { .. } => 8,
            Message::Nack { .. } => 9,
            Message::Complete { .. } => 10,
            Message::Abort { .. } => 11,
            Message::Progress { .. } => 12,
            Message::Digest { .. } => 13,
        }
    }

    /// The whole frame. Strings and lists are cut to their limits so the frame always decodes.
    pub fn encode(&self) -> Vec<u8> {
        let mut body = Vec::new();
        match self {
            Message::Request { udp_port, scheme, name } => {
                body.extend_from_slice(&udp_port.to_be_bytes());
                body.push(scheme.to_wire());
                body.extend_from_slice(cut(name, MAX_NAME));
            }
            Message::Accept(a) => {
                body.extend_from_slice(&a.token.to_be_bytes());
                body.extend_from_slice(&a.size.to_be_bytes());
                body.extend_from_slice(&a.chunk_packets.to_be_bytes());
                body.extend_from_slice(&a.segment_packets.to_be_bytes());
                body.extend_from_slice(&a.payload.to_be_bytes());
                body.extend_from_slice(&a.udp_port.to_be_bytes());
                body.push(a.scheme.to_wire());
            }
            Message::Refuse { reason } | Message::Abort { reason } => {
                body.extend_from_slice(cut(reason, MAX_REASON));
            }
            Message::Hello { token } => body.extend_from_slice(&token.to_be_bytes()),
            Message::EndOfSegment { chunk, segment, last_seq } => {
                body.extend_from_slice(&chunk.to_be_bytes());
                body.extend_from_slice(&segment.to_be_bytes());
                body.extend_from_slice(&last_seq.to_be_bytes());
            }
            Message::Done { chunk, pass, want_nack, last_seq } => {
                body.extend_from_slice(&chunk.to_be_bytes());
                body.extend_from_slice(&pass.to_be_bytes());
                body.push(u8::from(*want_nack));
                body.extend_from_slice(&last_seq.to_be_bytes());
            }
            Message::SegmentBits { chunk, segment, report, bits } => {
                body.extend_from_slice(&chunk.to_be_bytes());
                body.extend_from_slice(&segment.to_be_bytes());
                put_report(&mut body, report);
                let max = MAX_BODY - body.len();
                body.extend_from_slice(&bits[..bits.len().min(max)]);
            }
            Message::SegmentAck { chunk, segment, report } => {
                body.extend_from_slice(&chunk.to_be_bytes());
                body.extend_from_slice(&segment.to_be_bytes());
                put_report(&mut body, report);
            }
            Message::Nack { chunk, report, missing } => {
                body.extend_from_slice(&chunk.to_be_bytes());
                put_report(&mut body, report);
                for p in missing.iter().take(NACK_CAP) {
                    body.extend_from_slice(&p.to_be_bytes());
                }
            }
            Message::Complete { chunk, report } => {
                body.extend_from_slice(&chunk.to_be_bytes());
                put_report(&mut body, report);
            }
            Message::Progress { report } => put_report(&mut body, report),
            Message::Digest { blake3 } => body.extend_from_slice(blake3),
        }
        let mut frame = Vec::with_capacity(FRAME_HEADER + body.len());
        frame.extend_from_slice(&MAGIC);
        frame.push(self.kind());
        frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
        frame.extend_from_slice(&body);
        frame
    }
}

/// The longest prefix of `s` within `max` bytes that ends on a character boundary.
fn cut(s: &str, max: usize) -> &[u8] {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s.as_bytes()[..end]
}

fn put_report(out: &mut Vec<u8>, r: &Report) {
    out.extend_from_slice(&r.received.to_be_bytes());
    out.extend_from_slice(&r.highest_seq.to_be_bytes());
    out.extend_from_slice(&r.busy_us.to_be_bytes());
}

/// Check the magic on as many of its bytes as `bytes` holds.
fn check_magic(bytes: &[u8]) -> Result<(), WireError> {
    let n = bytes.len().min(3);
    if bytes[..n] != MAGIC[..n] {
        return Err(WireError::NotFobs);
    }
    match bytes.get(3) {
        Some(&v) if v != VERSION => Err(WireError::Version(v)),
        _ => Ok(()),
    }
}

/// Decode one frame from the start of `buf`: the message and the bytes it took, or `None` when
/// `buf` holds only part of it. The magic and the announced length are checked on the first
/// bytes, before waiting for the rest.
pub fn decode_frame(buf: &[u8]) -> Result<Option<(Message, usize)>, WireError> {
    check_magic(buf)?;
    let Some(header) = buf.get(..FRAME_HEADER) else { return Ok(None) };
    let mut r = Reader(&header[4..]);
    let kind = r.u8("frame header")?;
    let len = r.u32("frame header")? as usize;
    if len > MAX_BODY {
        return Err(WireError::Oversized { what: "control message", got: len, max: MAX_BODY });
    }
    let Some(body) = buf.get(FRAME_HEADER..FRAME_HEADER + len) else { return Ok(None) };
    Ok(Some((decode_body(kind, body)?, FRAME_HEADER + len)))
}

fn decode_body(kind: u8, body: &[u8]) -> Result<Message, WireError> {
    let mut r = Reader(body);
    let msg = match kind {
        1 => {
            let udp_port = r.u16("request")?;
            let scheme =
                AckScheme::from_wire(r.u8("request")?).ok_or(WireError::Invalid("acknowledgement scheme"))?;
            let name = r.rest();
            if name.len() > MAX_NAME {
                return Err(WireError::Oversized { what: "file name", got: name.len(), max: MAX_NAME });
            }
            let name = std::str::from_utf8(name).map_err(|_| WireError::Invalid("file name (not UTF-8)"))?;
            Message::Request { udp_port, scheme, name: name.to_owned() }
        }
        2 => Message::Accept(Accept {
            token: r.u64("accept")?,
            size: r.u64("accept")?,
            chunk_packets: r.u32("accept")?,
            segment_packets: r.u32("accept")?,
            payload: r.u16("accept")?,
            udp_port: r.u16("accept")?,
            scheme: AckScheme::from_wire(r.u8("accept")?)
                .ok_or(WireError::Invalid("acknowledgement scheme"))?,
        }),
        3 => Message::Refuse { reason: reason(r.rest())? },
        4 => Message::Hello { token: r.u64("hello")? },
        5 => Message::EndOfSegment {
            chunk: r.u32("end-of-segment")?,
            segment: r.u32("end-of-segment")?,
            last_seq: r.u64("end-of-segment")?,
        },
        6 => {
            let chunk = r.u32("DONE")?;
            let pass = r.u32("DONE")?;
            let want_nack = match r.u8("DONE")? {
                0 => false,
                1 => true,
                _ => return Err(WireError::Invalid("DONE flags")),
            };
            Message::Done { chunk, pass, want_nack, last_seq: r.u64("DONE")? }
        }
        7 => Message::SegmentBits {
            chunk: r.u32("segment bits")?,
            segment: r.u32("segment bits")?,
            report: r.report("segment bits")?,
            bits: r.rest().to_vec(),
        },
        8 => Message::SegmentAck {
            chunk: r.u32("segment ACK")?,
            segment: r.u32("segment ACK")?,
            report: r.report("segment ACK")?,
        },
        9 => {
            let chunk = r.u32("NACK")?;
            let report = r.report("NACK")?;
            let list = r.rest();
            if list.len() % 4 != 0 {
                return Err(WireError::Invalid("NACK length (not whole packet numbers)"));
            }
            if list.len() / 4 > NACK_CAP {
                return Err(WireError::Oversized { what: "NACK list", got: list.len(), max: NACK_CAP * 4 });
            }
            let missing =
                list.chunks_exact(4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]])).collect();
            Message::Nack { chunk, report, missing }
        }
        10 => Message::Complete { chunk: r.u32("chunk complete")?, report: r.report("chunk complete")? },
        11 => Message::Abort { reason: reason(r.rest())? },
        12 => Message::Progress { report: r.report("progress report")? },
        13 => Message::Digest { blake3: r.take("digest")? },
        k => return Err(WireError::UnknownKind("control message", k)),
    };
    if !r.0.is_empty() {
        return Err(WireError::Invalid("message length (trailing bytes)"));
    }
    Ok(msg)
}

fn reason(bytes: &[u8]) -> Result<String, WireError> {
    if bytes.len() > MAX_REASON {
        return Err(WireError::Oversized { what: "reason", got: bytes.len(), max: MAX_REASON });
    }
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

/// Assembles control frames from bytes split anywhere.
///
/// Invariant: holds at most one frame's header and [`MAX_BODY`] bytes of body beyond what the
/// caller pushed in one call.
#[derive(Debug, Default)]
pub struct FrameReader {
    buf: Vec<u8>,
    failed: bool,
}

impl FrameReader {
    /// Bytes that arrived.
    pub fn push(&mut self, bytes: &[u8]) {
        if !self.failed {
            self.buf.extend_from_slice(bytes);
        }
    }

    /// The next whole message, `None` until one is complete. After an error the reader stays
    /// failed (the stream cannot be resynchronised).
    pub fn next_message(&mut self) -> Result<Option<Message>, WireError> {
        if self.failed {
            return Err(WireError::Invalid("stream after an earlier error"));
        }
        match decode_frame(&self.buf) {
            Ok(Some((msg, used))) => {
                self.buf.drain(..used);
                Ok(Some(msg))
            }
            Ok(None) => Ok(None),
            Err(e) => {
                self.failed = true;
                self.buf = Vec::new();
                Err(e)
            }
        }
    }
}

/// A datagram (UDP).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Datagram<'a> {
    /// Sender to receiver: one packet of the file.
    Data {
        /// The chunk.
        chunk: u32,
        /// The packet within the chunk.
        packet: u32,
        /// The sender's send sequence number, counting every datagram it sent from 1.
        seq: u64,
        /// The file's bytes.
        payload: &'a [u8],
    },
    /// Receiver to sender ([`AckScheme::ChunkMapUdp`]): part of the chunk's bit map (§3.3.2).
    Map(MapPart<'a>),
}

/// Part of a whole-chunk bit map: `count` packets from `first`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapPart<'a> {
    /// The chunk.
    pub chunk: u32,
    /// Which map this part belongs to (the receiver numbers its maps from 0).
    pub map_id: u32,
    /// The first packet covered.
    pub first: u32,
    /// Packets covered.
    pub count: u32,
    /// The receiver's report.
    pub report: Report,
    /// `ceil(count / 8)` bytes of bits (FOBS.md, "Bit maps").
    pub bits: &'a [u8],
}

/// Write a data datagram's header into `out`; its length, or `None` if `out` is too short.
pub fn encode_data_header(out: &mut [u8], chunk: u32, packet: u32, seq: u64) -> Option<usize> {
    let h = out.get_mut(..DATA_HEADER)?;
    h[..4].copy_from_slice(&MAGIC);
    h[4] = DATA;
    h[5..9].copy_from_slice(&chunk.to_be_bytes());
    h[9..13].copy_from_slice(&packet.to_be_bytes());
    h[13..21].copy_from_slice(&seq.to_be_bytes());
    Some(DATA_HEADER)
}

/// A whole map part datagram. `bits` is cut to `ceil(count / 8)` bytes (or `count` to the bits).
pub fn encode_map(part: &MapPart<'_>) -> Vec<u8> {
    let count = part.count.min(u32::try_from(part.bits.len().saturating_mul(8)).unwrap_or(u32::MAX));
    let bits = &part.bits[..(count as usize).div_ceil(8)];
    let mut out = Vec::with_capacity(MAP_HEADER + bits.len());
    out.extend_from_slice(&MAGIC);
    out.push(MAP);
    out.extend_from_slice(&part.chunk.to_be_bytes());
    out.extend_from_slice(&part.map_id.to_be_bytes());
    out.extend_from_slice(&part.first.to_be_bytes());
    out.extend_from_slice(&count.to_be_bytes());
    put_report(&mut out, &part.report);
    out.extend_from_slice(bits);
    out
}

/// Decode a datagram.
pub fn decode_datagram(d: &[u8]) -> Result<Datagram<'_>, WireError> {
    check_magic(d)?;
    let mut r = Reader(d.get(4..).ok_or(WireError::Truncated("datagram"))?);
    match r.u8("datagram")? {
        DATA => Ok(Datagram::Data {
            chunk: r.u32("data datagram")?,
            packet: r.u32("data datagram")?,
            seq: r.u64("data datagram")?,
            payload: r.rest(),
        }),
        MAP => {
            let chunk = r.u32("map datagram")?;
            let map_id = r.u32("map datagram")?;
            let first = r.u32("map datagram")?;
            let count = r.u32("map datagram")?;
            let report = r.report("map datagram")?;
            let bits = r.rest();
            if bits.len() != (count as usize).div_ceil(8) {
                return Err(WireError::Invalid("map datagram length (does not match its count)"));
            }
            Ok(Datagram::Map(MapPart { chunk, map_id, first, count, report, bits }))
        }
        k => Err(WireError::UnknownKind("datagram", k)),
    }
}

/// Reads big-endian fields off a slice, refusing to read past its end.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], WireError> {
        let (head, rest) = self.0.split_first_chunk::<N>().ok_or(WireError::Truncated(what))?;
        self.0 = rest;
        Ok(*head)
    }
    fn u8(&mut self, what: &'static str) -> Result<u8, WireError> {
        Ok(self.take::<1>(what)?[0])
    }
    fn u16(&mut self, what: &'static str) -> Result<u16, WireError> {
        Ok(u16::from_be_bytes(self.take(what)?))
    }
    fn u32(&mut self, what: &'static str) -> Result<u32, WireError> {
        Ok(u32::from_be_bytes(self.take(what)?))
    }
    fn u64(&mut self, what: &'static str) -> Result<u64, WireError> {
        Ok(u64::from_be_bytes(self.take(what)?))
    }
    fn report(&mut self, what: &'static str) -> Result<Report, WireError> {
        Ok(Report { received: self.u64(what)?, highest_seq: self.u64(what)?, busy_us: self.u64(what)? })
    }
    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: Report = Report { received: 7, highest_seq: 9, busy_us: 123_456 };

    fn every_message() -> Vec<Message> {
        vec![
            Message::Request { udp_port: 4000, scheme: AckScheme::ChunkMapUdp, name: "dir/fïle".into() },
            Message::Accept(Accept {
                token: 0xDEAD_BEEF_0123_4567,
                size: 1 << 40,
                chunk_packets: 6000,
                segment_packets: 256,
                payload: 1400,
                udp_port: 5000,
                scheme: AckScheme::SegmentedTcp,
            }),
            Message::Refuse { reason: "no such file: x".into() },
            Message::Hello { token: 42 },
            Message::EndOfSegment { chunk: 3, segment: 17, last_seq: 1 << 33 },
            Message::Done { chunk: 3, pass: 2, want_nack: true, last_seq: 5 },
            Message::Done { chunk: 0, pass: 0, want_nack: false, last_seq: 0 },
            Message::SegmentBits { chunk: 1, segment: 2, report: R, bits: vec![0xF0, 0x0F, 1] },
            Message::SegmentAck { chunk: 1, segment: 2, report: R },
            Message::Nack { chunk: 4, report: R, missing: vec![1, 5, 99] },
            Message::Nack { chunk: 4, report: R, missing: vec![] },
            Message::Complete { chunk: 9, report: R },
            Message::Abort { reason: "disk full".into() },
            Message::Progress { report: R },
            Message::Digest { blake3: *blake3::hash(b"FOBS").as_bytes() },
        ]
    }

    #[test]
    fn every_message_round_trips() {
        for m in every_message() {
            let frame = m.encode();
            assert_eq!(decode_frame(&frame), Ok(Some((m.clone(), frame.len()))), "{}", m.name());
        }
    }

    #[test]
    fn every_truncation_of_every_message_waits_for_more() {
        for m in every_message() {
            let frame = m.encode();
            for cut in 0..frame.len() {
                assert_eq!(decode_frame(&frame[..cut]), Ok(None), "{} cut at {cut}", m.name());
            }
        }
    }

    #[test]
    fn a_body_shorter_or_longer_than_its_message_is_refused() {
        for m in every_message() {
            let frame = m.encode();
            // Claim one byte less: the message's last field is cut short (or, for messages
            // ending in free bytes, the shorter body must still be refused or decode otherwise).
            let body_len = frame.len() - FRAME_HEADER;
            let mut longer = frame.clone();
            longer.push(0);
            longer[5..9].copy_from_slice(&(body_len as u32 + 1).to_be_bytes());
            let fixed_size = !matches!(
                m,
                Message::Request { .. }
                    | Message::Refuse { .. }
                    | Message::Abort { .. }
                    | Message::SegmentBits { .. }
                    | Message::Nack { .. }
            );
            if fixed_size {
                assert!(decode_frame(&longer).is_err(), "{} with a trailing byte", m.name());
                let mut shorter = frame[..frame.len() - 1].to_vec();
                shorter[5..9].copy_from_slice(&(body_len as u32 - 1).to_be_bytes());
                assert!(matches!(decode_frame(&shorter), Err(WireError::Truncated(_))), "{}", m.name());
            }
        }
        let nack = Message::Nack { chunk: 0, report: R, missing: vec![1] }.encode();
        let mut odd = nack.clone();
        odd.push(0);
        odd[5..9].copy_from_slice(&((nack.len() - FRAME_HEADER + 1) as u32).to_be_bytes());
        assert_eq!(decode_frame(&odd), Err(WireError::Invalid("NACK length (not whole packet numbers)")));
    }

    #[test]
    fn a_digest_is_kind_13_with_exactly_32_bytes_of_body() {
        let blake3 = [0xA5; 32];
        let frame = Message::Digest { blake3 }.encode();
        assert_eq!(frame[..FRAME_HEADER], [0x46, 0x4F, 0x42, 0x01, 13, 0, 0, 0, 32]);
        assert_eq!(frame[FRAME_HEADER..], blake3);
        for len in [0u32, 31, 33] {
            let mut odd = frame[..FRAME_HEADER].to_vec();
            odd[5..9].copy_from_slice(&len.to_be_bytes());
            odd.resize(FRAME_HEADER + len as usize, 0xA5);
            assert!(decode_frame(&odd).is_err(), "a digest body of {len} bytes");
        }
    }

    #[test]
    fn bad_magic_and_other_versions_are_refused_from_the_first_bytes() {
        assert_eq!(decode_frame(b"G"), Err(WireError::NotFobs));
        assert_eq!(decode_frame(b"GET / HTTP/1.0\r\n"), Err(WireError::NotFobs));
        assert_eq!(decode_frame(b"FOB\x02rest"), Err(WireError::Version(2)));
        assert_eq!(decode_frame(b"FO"), Ok(None));
        assert_eq!(decode_datagram(b"XOB\x01\x01"), Err(WireError::NotFobs));
        assert_eq!(decode_datagram(b"FOB\x07\x01"), Err(WireError::Version(7)));
        assert!(decode_datagram(b"FOB").is_err());
    }

    #[test]
    fn an_oversized_announcement_is_refused_before_its_body_arrives() {
        let mut frame = MAGIC.to_vec();
        frame.push(7);
        frame.extend_from_slice(&(MAX_BODY as u32 + 1).to_be_bytes());
        assert!(matches!(decode_frame(&frame), Err(WireError::Oversized { .. })));
        let mut frame = MAGIC.to_vec();
        frame.push(1);
        let name = vec![b'a'; MAX_NAME + 1];
        frame.extend_from_slice(&(3 + name.len() as u32).to_be_bytes());
        frame.extend_from_slice(&[0, 1, 1]);
        frame.extend_from_slice(&name);
        assert!(matches!(decode_frame(&frame), Err(WireError::Oversized { what: "file name", .. })));
        let long = Message::Nack { chunk: 0, report: R, missing: (0..NACK_CAP as u32 + 1).collect() };
        let mut frame = long.encode();
        assert_eq!(frame.len(), FRAME_HEADER + 28 + 4 * NACK_CAP, "the encoder cuts to the cap");
        frame.extend_from_slice(&[0; 4]);
        frame[5..9].copy_from_slice(&((28 + 4 * (NACK_CAP + 1)) as u32).to_be_bytes());
        assert!(matches!(decode_frame(&frame), Err(WireError::Oversized { what: "NACK list", .. })));
    }

    #[test]
    fn unknown_kinds_and_bad_fields_are_refused() {
        let mut frame = MAGIC.to_vec();
        frame.extend_from_slice(&[99, 0, 0, 0, 0]);
        assert_eq!(decode_frame(&frame), Err(WireError::UnknownKind("control message", 99)));
        let mut done = Message::Done { chunk: 0, pass: 0, want_nack: false, last_seq: 0 }.encode();
        done[FRAME_HEADER + 8] = 2;
        assert_eq!(decode_frame(&done), Err(WireError::Invalid("DONE flags")));
        let mut req =
            Message::Request { udp_port: 1, scheme: AckScheme::SegmentedTcp, name: "a".into() }.encode();
        req[FRAME_HEADER + 2] = 9;
        assert_eq!(decode_frame(&req), Err(WireError::Invalid("acknowledgement scheme")));
        let mut req =
            Message::Request { udp_port: 1, scheme: AckScheme::SegmentedTcp, name: "a".into() }.encode();
        *req.last_mut().unwrap() = 0xFF;
        assert!(matches!(decode_frame(&req), Err(WireError::Invalid(_))), "a name that is not UTF-8");
        assert_eq!(decode_datagram(b"FOB\x01\x09"), Err(WireError::UnknownKind("datagram", 9)));
    }

    #[test]
    fn long_strings_are_cut_on_a_character_boundary() {
        let reason = "é".repeat(MAX_REASON);
        let frame = Message::Abort { reason }.encode();
        let Ok(Some((Message::Abort { reason }, _))) = decode_frame(&frame) else { panic!("decodes") };
        assert_eq!(reason.len(), MAX_REASON);
    }

    #[test]
    fn a_reader_assembles_frames_split_anywhere_and_stays_failed_after_an_error() {
        let mut all = Vec::new();
        for m in every_message() {
            all.extend(m.encode());
        }
        let mut reader = FrameReader::default();
        let mut got = Vec::new();
        for b in all.chunks(3) {
            reader.push(b);
            while let Some(m) = reader.next_message().unwrap() {
                got.push(m);
            }
        }
        assert_eq!(got, every_message());
        reader.push(b"junk");
        assert!(reader.next_message().is_err());
        reader.push(&Message::Hello { token: 1 }.encode());
        assert!(reader.next_message().is_err(), "no resynchronisation");
    }

    #[test]
    fn data_datagrams_round_trip_and_refuse_truncation() {
        let mut buf = [0u8; DATA_HEADER + 5];
        let h = encode_data_header(&mut buf, 3, 77, 1 << 40).unwrap();
        buf[h..].copy_from_slice(b"hello");
        assert_eq!(
            decode_datagram(&buf),
            Ok(Datagram::Data { chunk: 3, packet: 77, seq: 1 << 40, payload: b"hello" })
        );
        for cut in 0..DATA_HEADER {
            assert!(decode_datagram(&buf[..cut]).is_err(), "cut at {cut}");
        }
        assert_eq!(encode_data_header(&mut [0u8; DATA_HEADER - 1], 0, 0, 0), None);
    }

    #[test]
    fn map_datagrams_round_trip_and_refuse_a_length_that_disagrees_with_the_count() {
        let bits = [0xFF, 0x01];
        let part = MapPart { chunk: 2, map_id: 5, first: 64, count: 9, report: R, bits: &bits };
        let d = encode_map(&part);
        assert_eq!(d.len(), MAP_HEADER + 2);
        assert_eq!(decode_datagram(&d), Ok(Datagram::Map(part.clone())));
        for cut in 0..d.len() {
            assert!(decode_datagram(&d[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = d.clone();
        longer.push(0);
        assert!(decode_datagram(&longer).is_err());
        let cut_count = MapPart { count: 100, ..part };
        assert_eq!(
            decode_datagram(&encode_map(&cut_count)),
            Ok(Datagram::Map(MapPart { count: 16, ..cut_count }))
        );
    }
}
