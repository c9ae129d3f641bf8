//! Golden vectors captured from the reference UDT4 4.11 (testdata/vectors, see its README).
//!
//! Two checks:
//! 1. every UDP payload of every `.pcap` parses, and emitting the parsed value into a
//!    0xa5-filled buffer gives back exactly the captured bytes;
//! 2. every frame of every `.decoded.txt` is read strictly (an unknown line, field or annotation
//!    fails the test), its bytes are rebuilt from the hex dump (or taken from the pcap frame with
//!    the same number when the dump is cut short), and each documented field is compared with the
//!    parsed value. The number of frames checked must equal the number of `frame N` blocks.
//!
//! The vectors are read from the repository copy (`../testdata/vectors`), never from elsewhere.

// Test code: helpers outside #[test] functions may panic on failure too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::fs;
use std::net::{Ipv4Addr, SocketAddrV4};

mod support;

use support::pcap::{read_pcap, vectors_dir, Datagram, LINKTYPE_ETHERNET};
use udt_proto::packet::{
    Boundary, Control, ControlPacket, ControlType, DataHeader, LossEntry, Packet, RequestType, SocketType,
};

/// Parse `bytes`, emit the value into a 0xa5-filled buffer, and require the identical bytes
/// (and nothing written past them); the re-emitted bytes parse to the same value.
fn parse_and_reemit(bytes: &[u8]) -> R<Packet<'_>> {
    let pkt = Packet::parse(bytes).map_err(|e| format!("parse failed: {e}"))?;
    let mut buf = vec![0xa5u8; bytes.len() + 64];
    let n = pkt.emit(&mut buf).map_err(|e| format!("emit failed: {e}"))?;
    expect_eq("encoded_len", pkt.encoded_len(), n)?;
    if &buf[..n] != bytes {
        return Err(format!(
            "re-emitted bytes differ:\n  captured {bytes:02x?}\n  emitted  {:02x?}",
            &buf[..n]
        ));
    }
    if !buf[n..].iter().all(|&b| b == 0xa5) {
        return Err("emit wrote past its length".into());
    }
    expect_eq("re-parse", Packet::parse(&buf[..n]).as_ref(), Ok(&pkt))?;
    Ok(pkt)
}

fn kind_name(pkt: &Packet<'_>) -> &'static str {
    match pkt {
        Packet::Data(..) => "DATA",
        Packet::Control(c) => type_name(c.body.control_type()),
    }
}

/// Type names as the decoder of the vectors prints them.
fn type_name(t: ControlType) -> &'static str {
    match t {
        ControlType::Handshake => "HANDSHAKE",
        ControlType::KeepAlive => "KEEPALIVE",
        ControlType::Ack => "ACK",
        ControlType::Nak => "NAK",
        ControlType::CongestionWarning => "CONGESTION",
        ControlType::Shutdown => "SHUTDOWN",
        ControlType::Ack2 => "ACK2",
        ControlType::DropRequest => "DROPREQ",
        ControlType::Error => "ERROR",
        ControlType::UserDefined => "USER",
    }
}

/// (pcap file, link type, UDP datagrams it must hold).
const PCAPS: &[(&str, u32, usize)] = &[
    ("connect_no_listener.pcap", LINKTYPE_ETHERNET, 12),
    ("dup_handshake_response_dropped.pcap", LINKTYPE_ETHERNET, 92),
    ("rendezvous_pair.pcap", LINKTYPE_ETHERNET, 27),
    ("sendfile_recvfile_100KB.pcap", LINKTYPE_ETHERNET, 90),
    ("sendfile_recvfile_4MiB_3pct_drop.pcap", LINKTYPE_ETHERNET, 4062),
];

#[test]
fn every_pcap_packet_parses_and_reemits_identically() {
    // Every pcap in the directory is listed above (a new vector must be added to the table).
    let mut on_disk: Vec<String> = fs::read_dir(vectors_dir())
        .expect("testdata/vectors")
        .map(|e| e.expect("dir entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".pcap"))
        .collect();
    on_disk.sort();
    let listed: Vec<&str> = PCAPS.iter().map(|p| p.0).collect();
    assert_eq!(on_disk, listed, "pcap files on disk vs the table in this test");

    for &(name, linktype, expected) in PCAPS {
        let (lt, datagrams) = read_pcap(&vectors_dir().join(name));
        assert_eq!(lt, linktype, "{name}: link type");
        assert_eq!(datagrams.len(), expected, "{name}: UDP datagrams");
        let mut kinds: HashMap<&str, usize> = HashMap::new();
        for d in &datagrams {
            let ctx = format!("{name} frame {}", d.number);
            let pkt = parse_and_reemit(&d.payload).unwrap_or_else(|e| panic!("{ctx}: {e}"));
            // Data payload sizes never exceed the default MSS (1500 - 44).
            if let Packet::Data(_, payload) = &pkt {
                assert!(payload.len() <= 1456, "{ctx}: payload {}", payload.len());
            }
            *kinds.entry(kind_name(&pkt)).or_default() += 1;
        }
        let mut kinds: Vec<_> = kinds.into_iter().collect();
        kinds.sort();
        println!("{name}: {} datagrams verified byte-exact: {kinds:?}", datagrams.len());
    }
}

// ---------------------------------------------------------------------------------------------
// The `.decoded.txt` files.
// ---------------------------------------------------------------------------------------------

/// (decoded file, its pcap if captured in full, `frame N` blocks it holds).
const DECODED: &[(&str, Option<&str>, usize)] = &[
    // No pcap: stream-mode data frames in this file were captured with a short snap length.
    ("appclient_appserver.selected.decoded.txt", None, 25),
    ("connect_no_listener.decoded.txt", Some("connect_no_listener.pcap"), 3),
    ("dup_handshake_response_dropped.decoded.txt", Some("dup_handshake_response_dropped.pcap"), 6),
    ("rendezvous_pair.decoded.txt", Some("rendezvous_pair.pcap"), 27),
    ("sendfile_recvfile_100KB.decoded.txt", Some("sendfile_recvfile_100KB.pcap"), 90),
    (
        "sendfile_recvfile_4MiB_3pct_drop.selected.decoded.txt",
        Some("sendfile_recvfile_4MiB_3pct_drop.pcap"),
        19,
    ),
];

type R<T> = Result<T, String>;

/// One `frame N` block.
struct Block {
    number: usize,
    header: String,
    hex: Vec<u8>,
    /// `... (N more bytes)`: the dump is cut short.
    more: Option<usize>,
    /// The decoded lines (first one starts with `CTRL` or `DATA`), trimmed.
    decoded: Vec<String>,
}

fn split_blocks(text: &str) -> R<Vec<Block>> {
    let mut blocks: Vec<Block> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let lno = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("frame ") {
            let n = rest.split_whitespace().next().ok_or(format!("line {lno}: frame number"))?;
            let number = n.parse().map_err(|_| format!("line {lno}: frame number {n:?}"))?;
            blocks.push(Block {
                number,
                header: line.to_owned(),
                hex: Vec::new(),
                more: None,
                decoded: Vec::new(),
            });
            continue;
        }
        let b = blocks.last_mut().ok_or(format!("line {lno}: text before the first frame"))?;
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("... (") {
            let n = rest.strip_suffix(" more bytes)").ok_or(format!("line {lno}: {t:?}"))?;
            if b.more.is_some() || !b.decoded.is_empty() {
                return Err(format!("line {lno}: misplaced {t:?}"));
            }
            b.more = Some(n.parse().map_err(|_| format!("line {lno}: {t:?}"))?);
        } else if is_hex_line(t) {
            if b.more.is_some() || !b.decoded.is_empty() {
                return Err(format!("line {lno}: hex after the dump ended"));
            }
            let (off, words) = t.split_once(": ").ok_or(format!("line {lno}: hex line"))?;
            let off = usize::from_str_radix(off, 16).map_err(|_| format!("line {lno}: offset"))?;
            if off != b.hex.len() {
                return Err(format!("line {lno}: offset {off:#x} after {} bytes", b.hex.len()));
            }
            for w in words.split_whitespace() {
                if w.len() % 2 != 0 || w.len() > 8 {
                    return Err(format!("line {lno}: hex word {w:?}"));
                }
                for i in (0..w.len()).step_by(2) {
                    b.hex.push(
                        u8::from_str_radix(&w[i..i + 2], 16).map_err(|_| format!("line {lno}: {w:?}"))?,
                    );
                }
            }
        } else if t.starts_with("CTRL ") || t.starts_with("DATA ") || !b.decoded.is_empty() {
            if !line.starts_with("  ") {
                return Err(format!("line {lno}: unexpected unindented line {line:?}"));
            }
            b.decoded.push(t.to_owned());
        } else {
            return Err(format!("line {lno}: unrecognised line {line:?}"));
        }
    }
    Ok(blocks)
}

fn is_hex_line(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() > 6 && b[..4].iter().all(u8::is_ascii_hexdigit) && &b[4..6] == b": "
}

/// `key=value` fields of one decoded line; tokens without `=` are annotations of the field
/// before them. Every field and annotation must be claimed, or `finish` fails.
struct Fields {
    items: Vec<(String, String, Vec<String>)>,
}

impl Fields {
    fn parse(line: &str) -> R<Fields> {
        let mut items: Vec<(String, String, Vec<String>)> = Vec::new();
        for tok in line.split_whitespace() {
            if let Some((k, v)) = tok.split_once('=') {
                items.push((k.to_owned(), v.trim_end_matches(',').to_owned(), Vec::new()));
            } else {
                let last = items.last_mut().ok_or(format!("token {tok:?} before any field in {line:?}"))?;
                last.2.push(tok.to_owned());
            }
        }
        Ok(Fields { items })
    }

    /// Remove field `key`: its value and annotations.
    fn take(&mut self, key: &str) -> R<(String, Vec<String>)> {
        let i = self.items.iter().position(|f| f.0 == key).ok_or(format!("missing field {key:?}"))?;
        let (_, v, a) = self.items.remove(i);
        Ok((v, a))
    }

    /// A numeric field (decimal, or hex with `0x`), with the annotations it may carry checked.
    fn num(&mut self, key: &str, annot: Annot) -> R<u64> {
        let (v, a) = self.take(key)?;
        let n = num(&v).map_err(|e| format!("{key}: {e}"))?;
        annot.check(key, n, &a)?;
        Ok(n)
    }

    fn finish(self) -> R<()> {
        if self.items.is_empty() {
            Ok(())
        } else {
            Err(format!("unread fields: {:?}", self.items))
        }
    }
}

/// What may follow a field's value.
#[derive(Clone, Copy)]
enum Annot {
    /// Nothing.
    Bare,
    /// A unit word (`bytes`, `us`).
    Unit(&'static str),
    /// The value again in decimal, in parentheses: `0x0000002a (42)`.
    Decimal,
    /// An arrow to the next field (`word0=0x80000000 -> type=...`).
    Arrow,
}

impl Annot {
    fn check(self, key: &str, n: u64, a: &[String]) -> R<()> {
        let ok = match self {
            Annot::Bare => a.is_empty(),
            Annot::Unit(u) => a.len() == 1 && a[0] == u,
            Annot::Decimal => a.len() == 1 && a[0] == format!("({n})"),
            Annot::Arrow => a.len() == 1 && a[0] == "->",
        };
        if ok {
            Ok(())
        } else {
            Err(format!("{key}={n}: unexpected annotation {a:?}"))
        }
    }
}

fn num(v: &str) -> R<u64> {
    let r = match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => v.parse::<u64>(),
    };
    r.map_err(|_| format!("not a number: {v:?}"))
}

fn signed(v: &str) -> R<i64> {
    v.parse::<i64>().map_err(|_| format!("not a signed number: {v:?}"))
}

fn expect_eq<T: PartialEq + std::fmt::Debug>(what: &str, documented: T, parsed: T) -> R<()> {
    if documented == parsed {
        Ok(())
    } else {
        Err(format!("{what}: documented {documented:?}, parsed {parsed:?}"))
    }
}

/// The frame header line: `frame N  t=S.UUUUUUs  a:p -> b:q  UDP length L (UDT packet M bytes)  [KIND]`.
struct FrameHeader {
    time: String,
    src: SocketAddrV4,
    dst: SocketAddrV4,
    udp_len: usize,
    udt_len: usize,
    kind: String,
}

fn parse_frame_header(line: &str) -> R<FrameHeader> {
    let t: Vec<&str> = line.split_whitespace().collect();
    let shape = t.len() == 14
        && t[0] == "frame"
        && t[4] == "->"
        && t[6] == "UDP"
        && t[7] == "length"
        && t[9] == "(UDT"
        && t[10] == "packet"
        && t[12] == "bytes)";
    if !shape {
        return Err(format!("frame line {line:?}"));
    }
    let addr = |s: &str| s.parse::<SocketAddrV4>().map_err(|_| format!("address {s:?}"));
    Ok(FrameHeader {
        time: t[2].strip_prefix("t=").ok_or(format!("time {:?}", t[2]))?.to_owned(),
        src: addr(t[3])?,
        dst: addr(t[5])?,
        udp_len: num(t[8])? as usize,
        udt_len: num(t[11])? as usize,
        kind: t[13]
            .strip_prefix('[')
            .and_then(|k| k.strip_suffix(']'))
            .ok_or(format!("kind {:?}", t[13]))?
            .to_owned(),
    })
}

/// Check one block against its bytes; returns Ok when every documented field matched.
fn check_block(b: &Block, pcap: Option<&HashMap<usize, &Datagram>>, first_time_us: Option<u64>) -> R<()> {
    let h = parse_frame_header(&b.header)?;
    expect_eq("UDP length", h.udp_len, h.udt_len + 8)?;

    // The bytes: the full dump, or the pcap frame with the same number when the dump is cut.
    let datagram = match pcap {
        Some(p) => Some(*p.get(&b.number).ok_or("no pcap frame with this number")?),
        None => None,
    };
    if let Some(d) = datagram {
        expect_eq("source", h.src, d.src)?;
        expect_eq("destination", h.dst, d.dst)?;
        expect_eq("pcap UDP length", h.udp_len, d.udp_len)?;
        expect_eq("pcap UDT length", h.udt_len, d.payload.len())?;
        if !d.payload.starts_with(&b.hex) {
            return Err("hex dump differs from the pcap frame".into());
        }
        let first = first_time_us.ok_or("no first frame time")?;
        let rel = d.time_us.checked_sub(first).ok_or("frame earlier than the first one")?;
        expect_eq("time", h.time.clone(), format!("{}.{:06}s", rel / 1_000_000, rel % 1_000_000))?;
    }
    let full: Option<&[u8]> = match (b.more, datagram) {
        (None, _) => {
            expect_eq("dumped bytes", b.hex.len(), h.udt_len)?;
            Some(&b.hex)
        }
        (Some(more), Some(d)) => {
            expect_eq("dumped + more bytes", b.hex.len() + more, h.udt_len)?;
            Some(&d.payload)
        }
        // No full bytes anywhere: only the header fields can be compared. (In
        // appclient_appserver the "more bytes" count is what the capture kept, not the rest
        // of the packet, so it is not checked against the UDT length.)
        (Some(more), None) => {
            if b.hex.len() + more > h.udt_len {
                return Err("dump longer than the packet".into());
            }
            None
        }
    };
    let bytes: &[u8] = full.unwrap_or(&b.hex);
    let pkt = match full {
        Some(bytes) => parse_and_reemit(bytes)?,
        None => Packet::parse(bytes).map_err(|e| format!("parse of the dumped prefix: {e}"))?,
    };
    expect_eq("kind", h.kind.as_str(), kind_name(&pkt))?;

    let (first, rest) = b.decoded.split_first().ok_or("no decoded lines")?;
    match &pkt {
        Packet::Data(hdr, payload) => {
            if !rest.is_empty() {
                return Err(format!("extra lines after DATA: {rest:?}"));
            }
            let payload_len = if full.is_some() { payload.len() } else { h.udt_len - 16 };
            check_data_line(first, hdr, payload_len)
        }
        Packet::Control(c) => {
            check_ctrl_line(first, c, bytes, h.udt_len)?;
            check_ctrl_body(rest, c, bytes)
        }
    }
}

/// The DATA line: `DATA  seq=S  msgword=0x... -> boundary=BB name, inorder=I, msgno=M  ts=T us`
/// `dst_sock=0x... (D)  payload=P bytes`.
fn check_data_line(line: &str, h: &DataHeader, payload_len: usize) -> R<()> {
    let rest = line.strip_prefix("DATA ").ok_or("DATA line")?;
    let mut f = Fields::parse(rest)?;
    expect_eq("seq", f.num("seq", Annot::Bare)?, u64::from(h.seq.value()))?;
    let msgword = f.num("msgword", Annot::Arrow)? as u32;
    expect_eq("msgword boundary", msgword >> 30, h.boundary.bits())?;
    expect_eq("msgword in-order", msgword & (1 << 29) != 0, h.in_order)?;
    expect_eq("msgword msgno", msgword & 0x1FFF_FFFF, h.msg.value())?;
    let (bits, names) = f.take("boundary")?;
    let name = match h.boundary {
        Boundary::First => "first",
        Boundary::Last => "last",
        Boundary::Middle => "middle",
        Boundary::Solo => "solo",
    };
    expect_eq(
        "boundary",
        (bits.as_str(), names),
        (format!("{:02b}", h.boundary.bits()).as_str(), vec![format!("{name},")]),
    )?;
    expect_eq("inorder", f.num("inorder", Annot::Bare)?, u64::from(h.in_order))?;
    expect_eq("msgno", f.num("msgno", Annot::Bare)?, u64::from(h.msg.value()))?;
    expect_eq("ts", f.num("ts", Annot::Unit("us"))?, u64::from(h.timestamp))?;
    expect_eq("dst_sock", f.num("dst_sock", Annot::Decimal)?, u64::from(h.dst.0))?;
    expect_eq("payload", f.num("payload", Annot::Unit("bytes"))?, payload_len as u64)?;
    f.finish()
}

/// The CTRL line: `CTRL  word0=0x... -> type=T (NAME) reserved/ext=0x....  addinfo=0x... (N)  ts=T`
/// `dst_sock=0x... (D)  body=B bytes`.
fn check_ctrl_line(line: &str, c: &ControlPacket<'_>, bytes: &[u8], udt_len: usize) -> R<()> {
    let rest = line.strip_prefix("CTRL ").ok_or("CTRL line")?;
    let mut f = Fields::parse(rest)?;
    let raw =
        |i: usize| u32::from_be_bytes([bytes[4 * i], bytes[4 * i + 1], bytes[4 * i + 2], bytes[4 * i + 3]]);
    let word0 = f.num("word0", Annot::Arrow)? as u32;
    expect_eq("word0", word0, raw(0))?;
    let (t, a) = f.take("type")?;
    let ty = c.body.control_type();
    expect_eq("type", (num(&t)?, a), (u64::from(ty.as_u16()), vec![format!("({})", type_name(ty))]))?;
    // We emit the reserved bits as 0 (they are the sub-type only for user-defined packets).
    let reserved = f.num("reserved/ext", Annot::Bare)? as u32;
    expect_eq("reserved/ext", reserved, word0 & 0xFFFF)?;
    let subtype = match c.body {
        Control::UserDefined { subtype, .. } => subtype,
        _ => 0,
    };
    expect_eq("reserved/ext vs value", reserved, u32::from(subtype))?;
    let addinfo = f.num("addinfo", Annot::Decimal)?;
    let info = match &c.body {
        Control::Ack(a) => a.ack_no.value(),
        Control::Ack2(n) => n.value(),
        Control::DropRequest(d) => d.msg.value(),
        Control::Error(code) => *code,
        Control::UserDefined { info, .. } => *info,
        _ => 0,
    };
    expect_eq("addinfo", addinfo, u64::from(info))?;
    expect_eq("ts", f.num("ts", Annot::Bare)?, u64::from(c.timestamp))?;
    expect_eq("dst_sock", f.num("dst_sock", Annot::Decimal)?, u64::from(c.dst.0))?;
    let body = f.num("body", Annot::Unit("bytes"))? as usize;
    expect_eq("body vs packet length", body, udt_len - 16)?;
    expect_eq("body vs value", body, c.encoded_len() - 16)?;
    f.finish()
}

/// The type-specific lines after the CTRL line.
fn check_ctrl_body(lines: &[String], c: &ControlPacket<'_>, bytes: &[u8]) -> R<()> {
    let one = |lines: &[String]| -> R<String> {
        match lines {
            [l] => Ok(l.clone()),
            _ => Err(format!("expected one body line, got {lines:?}")),
        }
    };
    match &c.body {
        Control::Handshake(hs) => {
            let [l1, l2] = lines else { return Err(format!("handshake needs two lines, got {lines:?}")) };
            let mut f = Fields::parse(l1)?;
            expect_eq("version", f.num("version", Annot::Bare)?, u64::from(hs.version))?;
            let (st, a) = f.take("socktype")?;
            let name = match hs.socket_type {
                SocketType::Stream => "(STREAM)",
                SocketType::Datagram => "(DGRAM)",
                SocketType::Other(_) => "(?)",
            };
            expect_eq("socktype", (num(&st)?, a), (u64::from(hs.socket_type.word()), vec![name.to_owned()]))?;
            expect_eq("ISN", f.num("ISN", Annot::Bare)?, u64::from(hs.initial_seq.value()))?;
            expect_eq("MSS", f.num("MSS", Annot::Bare)?, u64::from(hs.mss))?;
            expect_eq("flowwin", f.num("flowwin", Annot::Bare)?, u64::from(hs.flow_window))?;
            let (rt, a) = f.take("reqtype")?;
            Annot::Bare.check("reqtype", 0, &a)?;
            let rt = signed(&rt)?;
            expect_eq("reqtype", rt, i64::from(hs.request_type.word() as i32))?;
            let named = match rt {
                1 => RequestType::Request,
                -1 => RequestType::Response,
                0 => RequestType::Rendezvous,
                -2 => RequestType::RendezvousConnected,
                1002 => RequestType::Rejected,
                other => RequestType::Other(other as i32),
            };
            expect_eq("reqtype variant", named, hs.request_type)?;
            expect_eq("sockid", f.num("sockid", Annot::Decimal)?, u64::from(hs.socket_id.0))?;
            expect_eq("cookie", f.num("cookie", Annot::Bare)?, u64::from(hs.cookie))?;
            f.finish()?;

            // peerIP words=[0x..., 0x..., 0x..., 0x...] -> IPv4 bytes as stored little-endian: a.b.c.d
            let rest = l2.strip_prefix("peerIP words=[").ok_or(format!("peer IP line {l2:?}"))?;
            let (words, ip) = rest
                .split_once("] -> IPv4 bytes as stored little-endian: ")
                .ok_or(format!("peer IP line {l2:?}"))?;
            let words = words.split(", ").map(num).collect::<R<Vec<u64>>>()?;
            let parsed: Vec<u64> = hs.peer_ip.iter().map(|&w| u64::from(w)).collect();
            expect_eq("peerIP words", words, parsed)?;
            let ip: Ipv4Addr = ip.parse().map_err(|_| format!("peer IP {ip:?}"))?;
            expect_eq("peer IPv4", ip, hs.peer_ipv4())
        }
        Control::Ack(ack) => {
            let l = one(lines)?;
            match &ack.info {
                None => {
                    let rest = l.strip_prefix("LIGHT ACK: ").ok_or(format!("light ACK line {l:?}"))?;
                    let mut f = Fields::parse(rest)?;
                    expect_eq(
                        "ack_seq",
                        f.num("ack_seq", Annot::Bare)?,
                        u64::from(ack.next_expected.value()),
                    )?;
                    expect_eq("light ACK number", ack.ack_no.value(), 0)?;
                    f.finish()
                }
                Some(info) => {
                    let (fields, no) = l.rsplit_once("[ACK no. ").ok_or(format!("ACK line {l:?}"))?;
                    let no = no.strip_suffix(']').ok_or(format!("ACK line {l:?}"))?;
                    expect_eq("ACK no.", num(no)?, u64::from(ack.ack_no.value()))?;
                    let fields = fields
                        .strip_prefix("ack_seq(next expected)=")
                        .map(|r| format!("ack_seq={r}"))
                        .ok_or(format!("ACK line {l:?}"))?;
                    let mut f = Fields::parse(&fields)?;
                    expect_eq(
                        "ack_seq",
                        f.num("ack_seq", Annot::Bare)?,
                        u64::from(ack.next_expected.value()),
                    )?;
                    expect_eq("rtt_us", f.num("rtt_us", Annot::Bare)?, u64::from(info.rtt_us))?;
                    expect_eq("rttvar_us", f.num("rttvar_us", Annot::Bare)?, u64::from(info.rtt_var_us))?;
                    expect_eq(
                        "avail_buf_pkts",
                        f.num("avail_buf_pkts", Annot::Bare)?,
                        u64::from(info.avail_buf_pkts),
                    )?;
                    if let Some(r) = &info.rates {
                        expect_eq(
                            "recv_rate_pkts_per_s",
                            f.num("recv_rate_pkts_per_s", Annot::Bare)?,
                            u64::from(r.recv_rate),
                        )?;
                        expect_eq(
                            "link_cap_pkts_per_s",
                            f.num("link_cap_pkts_per_s", Annot::Bare)?,
                            u64::from(r.capacity),
                        )?;
                    }
                    f.finish()
                }
            }
        }
        Control::Nak(nak) => {
            let l = one(lines)?;
            let rest = l.strip_prefix("loss list: ").ok_or(format!("NAK line {l:?}"))?;
            let documented = rest
                .split(", ")
                .map(|e| {
                    if let Some(s) = e.strip_prefix("single ") {
                        Ok((num(s)?, num(s)?, false))
                    } else if let Some(r) = e.strip_prefix("range ") {
                        let (a, b) = r.split_once("..").ok_or(format!("range {r:?}"))?;
                        Ok((num(a)?, num(b)?, true))
                    } else {
                        Err(format!("loss entry {e:?}"))
                    }
                })
                .collect::<R<Vec<_>>>()?;
            let parsed: Vec<_> = nak
                .iter()
                .map(|e| {
                    let (a, b) = e.bounds();
                    (u64::from(a.value()), u64::from(b.value()), matches!(e, LossEntry::Range(..)))
                })
                .collect();
            expect_eq("loss list", documented, parsed)
        }
        Control::Ack2(n) => {
            let l = one(lines)?;
            let rest = l.strip_prefix("ACK2 acknowledging ACK no. ").ok_or(format!("ACK2 line {l:?}"))?;
            let (no, pad) = rest.split_once("; 4-byte padding body=").ok_or(format!("ACK2 line {l:?}"))?;
            expect_eq("ACK2 number", num(no)?, u64::from(n.value()))?;
            check_padding(pad, bytes)
        }
        Control::KeepAlive | Control::Shutdown | Control::CongestionWarning => {
            let l = one(lines)?;
            let pad = l
                .strip_prefix("(no control info; 4 padding bytes body=")
                .and_then(|r| r.strip_suffix(')'))
                .ok_or(format!("padding line {l:?}"))?;
            check_padding(pad, bytes)
        }
        other => Err(format!("no decoded form known for {other:?}")),
    }
}

/// The documented padding word equals the captured body (and we emit zeros, checked by the
/// byte-exact re-emission).
fn check_padding(pad: &str, bytes: &[u8]) -> R<()> {
    let body = bytes.get(16..20).ok_or("no 4-byte body")?;
    expect_eq("padding body", num(pad)?, u64::from(u32::from_be_bytes([body[0], body[1], body[2], body[3]])))
}

#[test]
fn every_decoded_frame_matches_the_parsed_fields() {
    let mut on_disk: Vec<String> = fs::read_dir(vectors_dir())
        .expect("testdata/vectors")
        .map(|e| e.expect("dir entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".decoded.txt"))
        .collect();
    on_disk.sort();
    let listed: Vec<&str> = DECODED.iter().map(|d| d.0).collect();
    assert_eq!(on_disk, listed, "decoded files on disk vs the table in this test");

    for &(name, pcap_name, expected_blocks) in DECODED {
        let text = fs::read_to_string(vectors_dir().join(name)).expect("decoded file");
        let frame_lines = text.lines().filter(|l| l.starts_with("frame ")).count();
        assert_eq!(frame_lines, expected_blocks, "{name}: `frame N` blocks");
        let blocks = split_blocks(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(blocks.len(), frame_lines, "{name}: blocks split");

        let datagrams = pcap_name.map(|p| read_pcap(&vectors_dir().join(p)).1);
        let by_number: Option<HashMap<usize, &Datagram>> =
            datagrams.as_ref().map(|ds| ds.iter().map(|d| (d.number, d)).collect());
        let first_time = datagrams.as_ref().and_then(|ds| ds.first()).map(|d| d.time_us);

        let mut checked = 0;
        let mut from_pcap = 0;
        let mut header_only = 0;
        for b in &blocks {
            check_block(b, by_number.as_ref(), first_time)
                .unwrap_or_else(|e| panic!("{name} frame {}: {e}", b.number));
            checked += 1;
            match (b.more, &by_number) {
                (Some(_), Some(_)) => from_pcap += 1,
                (Some(_), None) => header_only += 1,
                _ => {}
            }
        }
        assert_eq!(checked, frame_lines, "{name}: frames checked");
        println!(
            "{name}: {checked} frames checked ({from_pcap} cut dumps matched to the pcap, \
             {header_only} cut dumps without a pcap checked on header fields)"
        );
    }
}

#[test]
fn decoded_parser_rejects_what_it_cannot_read() {
    // The decoded-file reader must fail, not skip, on a field it does not know.
    let good = "frame 7  t=0.367444s  127.0.0.1:51000 -> 127.0.0.1:61000  UDP length 28 (UDT packet 20 bytes)  [KEEPALIVE]
    0000: 80010000 00000000 00000000 276668f8
    0010: 00000000
  CTRL  word0=0x80010000 -> type=1 (KEEPALIVE) reserved/ext=0x0000  addinfo=0x00000000 (0)  ts=0  dst_sock=0x276668f8 (661022968)  body=4 bytes
    (no control info; 4 padding bytes body=0x00000000)
";
    let check = |text: &str| -> R<()> {
        let blocks = split_blocks(text)?;
        let [b] = &blocks[..] else { return Err("one block".into()) };
        check_block(b, None, None)
    };
    assert_eq!(check(good), Ok(()));
    for (from, to) in [
        ("ts=0  dst", "ts=0 bogus=1  dst"),
        ("(661022968)", "(661022969)"),
        ("body=4 bytes", "body=4 octets"),
        ("[KEEPALIVE]", "[SHUTDOWN]"),
        ("body=0x00000000)", "body=0x00000001)"),
        ("(no control info", "(no ctrl info"),
        ("0010: 00000000", "0010: 00000001"),
        ("type=1 (KEEPALIVE)", "type=1 (ALIVE)"),
    ] {
        let bad = good.replace(from, to);
        assert_ne!(bad, good);
        assert!(check(&bad).is_err(), "accepted a frame with {to:?}");
    }
}
