//! The file-transfer protocol of `udt send` and `udt recv`, version 4, over one UDT stream
//! connection. The normative description is this crate's `PROTOCOL.md`;
//! in short (all integers little-endian):
//!
//! ```text
//! receiver -> sender   "UDTR" | version u16 | flags u16              (hello, at once)
//! sender -> receiver   "UDTF" | version u16 | flags u16 | entry count u32
//! receiver -> sender   status, after any number of "wait" statuses  (accepts the session)
//! sender -> receiver   messages, each answered by one status in the order they are read:
//!   'H' kind u8 | path length u16 | path | size u64 | mode u32 | mtime i64, u32
//!                                     -> go ahead (ok, or resume at an offset), or refused
//!   'D' entry index u32 | start u64 | [BLAKE3 of the first start bytes, if start > 0]
//!       | chunks (length u32 | bytes) up to size - start, then the BLAKE3 hash of the whole
//!       file (32 bytes); or, in place of a chunk, an abort record
//!                                     -> stored, or why not
//!   'X' pattern count u16 | (length u16 | pattern)...   (only with the delete flag; no answer)
//!   'E'                               (the end; with the delete flag: a "deleted" status per
//!                                      path deleted, an error per one that could not be, ok)
//! status = code u8 (0 ok, 1 error, 2 wait, 3 abort, 4 resume, 5 have, 6 skip, 7 deleted)
//!          | length u16 | message (for resume: the offset u64, nothing else)
//!
//! striped (hello flag 1; header flag 4 on the session's connection, 8 on the others):
//!   'P' token [16] | connections u16      (right after the session's header)
//!   'J' token [16] | member u16           (right after a joining header) -> ok or refused
//!   'S' entry index u32 | start u64 | [proof] | range records | 0u32 | BLAKE3 of the file
//!   range record = length u32 (1..=CHUNK) | entry index u32 | offset u64 | bytes, on any
//!   connection of the transfer; a joined connection ends with 0u32
//! ```

//!
//! Self-contained (std only), so the fuzz target `file_protocol` builds it as it is.

use std::io::{self, Read, Write};
use std::path::{Component, Path};

/// The first four bytes the sender sends.
pub const MAGIC: [u8; 4] = *b"UDTF";
/// The first four bytes the receiver sends.
pub const RECEIVER_MAGIC: [u8; 4] = *b"UDTR";
/// The first four bytes of both ends of `udt perf` (its greeting and test header).
pub const PERF_MAGIC: [u8; 4] = *b"UDTP";
/// The first four bytes of the key agreement of a `udt` end that encrypts (`UDTSEC`, see
/// docs/security.md), as a plain end reads them.
pub const SECURE_MAGIC_START: [u8; 4] = *b"UDTS";
/// The protocol version this program speaks.
pub const VERSION: u16 = 4;
/// Largest data chunk, and bytes per file read, stream write and hash update.
pub const CHUNK: usize = 1 << 20;
/// The chunk length that announces an abort record instead of data.
pub const ABORT_MARK: u32 = u32::MAX;
/// Longest file name accepted, in bytes (Linux `NAME_MAX`).
pub const MAX_NAME_LEN: usize = 255;
/// Longest path accepted, in bytes (Linux `PATH_MAX`).
pub const MAX_PATH_LEN: usize = 4096;
/// The session header's flag by which a sender says it understands the statuses `have` and
/// `skip` (a receiver answers a sender without it as version 4 first did: `error`).
pub const FLAG_SKIPS: u16 = 1;
/// The session header's flag by which a sender asks the receiver to delete, in each directory
/// it sends, what its tree does not have (rsync's `--delete`); its [`Tag::Delete`] message
/// follows the header. A receiver that does not allow it refuses the session.
pub const FLAG_DELETE: u16 = 2;
/// The session header's flag by which a sender stripes the transfer over several connections:
/// a [`Tag::Stripe`] message follows the header at once; only to a receiver whose hello has
/// [`HELLO_STRIPES`] (one that predates it takes the message for a protocol error).
pub const FLAG_STRIPES: u16 = 4;
/// The session header's flag of a connection that joins a striped transfer (entry count 0): a
/// [`Tag::Join`] message follows at once; then only range records (`PROTOCOL.md`, "Parallel
/// streams").
pub const FLAG_JOIN: u16 = 8;
/// The hello's flag by which a receiver says it takes striped transfers.
pub const HELLO_STRIPES: u16 = 1;
/// Bytes of the random token that ties the connections of one striped transfer together.
pub const TOKEN_LEN: usize = 16;
/// Most connections of one striped transfer.
pub const MAX_STRIPES: u16 = 16;
/// Bytes before a range's data: length u32, entry index u32, offset u64.
pub const RANGE_HEAD_LEN: usize = 16;
/// Most exclude patterns a delete request carries.
pub const MAX_PATTERNS: usize = 1024;
/// The `nanos` of a modification time that is unknown.
pub const NO_MTIME: u32 = u32::MAX;
/// Longest status or abort message sent; longer ones are cut.
pub const MAX_MESSAGE_LEN: usize = 1024;
/// Length of a BLAKE3 hash.
pub const HASH_LEN: usize = 32;
/// Size of the session header.
pub const HEADER_LEN: usize = 12;
/// Size of a greeting (the receiver's hello, and the `udt perf` server's).
pub const HELLO_LEN: usize = 8;

/// The session header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Protocol version of the sender.
    pub version: u16,
    /// Optional features the sender understands ([`FLAG_SKIPS`]); other bits are zero.
    pub flags: u16,
    /// Files that follow.
    pub file_count: u32,
}

impl Header {
    /// A header of this version announcing `file_count` files.
    pub fn new(file_count: u32) -> Self {
        Header { version: VERSION, flags: FLAG_SKIPS, file_count }
    }

    /// The 12 bytes on the wire.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..4].copy_from_slice(&MAGIC);
        b[4..6].copy_from_slice(&self.version.to_le_bytes());
        b[6..8].copy_from_slice(&self.flags.to_le_bytes());
        b[8..12].copy_from_slice(&self.file_count.to_le_bytes());
        b
    }

    /// Read a header; fails if the magic is wrong (the version is the caller's business).
    pub fn read(r: &mut impl Read) -> io::Result<Header> {
        let mut b = [0u8; HEADER_LEN];
        r.read_exact(&mut b[..4])?;
        if b[..4] != MAGIC {
            return Err(invalid(format!("the peer is not a `udt send` ({})", describe_magic(&b[..4]))));
        }
        r.read_exact(&mut b[4..])?;
        Ok(Header {
            version: u16::from_le_bytes([b[4], b[5]]),
            flags: u16::from_le_bytes([b[6], b[7]]),
            file_count: u32::from_le_bytes([b[8], b[9], b[10], b[11]]),
        })
    }
}

/// A greeting: 4 bytes of magic, a version, flags. The receiver sends one (`"UDTR"`) as soon as
/// it accepts a connection, and so does a `udt perf` server (`"UDTP"`).
pub fn hello(magic: [u8; 4], version: u16) -> [u8; HELLO_LEN] {
    hello_with_flags(magic, version, 0)
}

/// A greeting with flags ([`HELLO_STRIPES`]).
pub fn hello_with_flags(magic: [u8; 4], version: u16, flags: u16) -> [u8; HELLO_LEN] {
    let mut b = [0u8; HELLO_LEN];
    b[..4].copy_from_slice(&magic);
    b[4..6].copy_from_slice(&version.to_le_bytes());
    b[6..8].copy_from_slice(&flags.to_le_bytes());
    b
}

/// What the first bytes a peer sent say it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Greeting {
    /// A `udt recv` speaking this version.
    Receiver(u16),
    /// A `udt perf` server speaking this version.
    PerfServer(u16),
    /// Something else: a description of what it sent.
    Other(String),
}

/// Read a greeting. The error is the connection's (closed, timed out).
pub fn read_greeting(r: &mut impl Read) -> io::Result<Greeting> {
    read_greeting_with_flags(r).map(|(greeting, _)| greeting)
}

/// Read a greeting and its flags (0 unless it is a receiver's or a `udt perf` server's).
pub fn read_greeting_with_flags(r: &mut impl Read) -> io::Result<(Greeting, u16)> {
    let mut b = [0u8; HELLO_LEN];
    r.read_exact(&mut b[..4])?;
    let rest = |r: &mut dyn Read, b: &mut [u8; HELLO_LEN]| -> io::Result<(u16, u16)> {
        r.read_exact(&mut b[4..])?;
        Ok((u16::from_le_bytes([b[4], b[5]]), u16::from_le_bytes([b[6], b[7]])))
    };
    if b[..4] == RECEIVER_MAGIC {
        let (version, flags) = rest(r, &mut b)?;
        return Ok((Greeting::Receiver(version), flags));
    }
    if b[..4] == PERF_MAGIC {
        let (version, flags) = rest(r, &mut b)?;
        return Ok((Greeting::PerfServer(version), flags));
    }
    // A version-1 receiver says nothing first, then refuses our header with an error status.
    let len = usize::from(u16::from_le_bytes([b[1], b[2]])).min(MAX_MESSAGE_LEN);
    if b[0] == 1 && len > 1 {
        let mut msg = vec![0u8; len];
        msg[0] = b[3];
        if r.read_exact(&mut msg[1..]).is_ok() {
            let what = format!(
                "it answered \"{}\": an older `udt recv`?",
                display_name(&String::from_utf8_lossy(&msg))
            );
            return Ok((Greeting::Other(what), 0));
        }
    }
    Ok((Greeting::Other(describe_magic(&b[..4])), 0))
}

/// `it sent "UDTP"`, or the bytes in hex when they are not printable.
pub fn describe_magic(b: &[u8]) -> String {
    if b == MAGIC {
        "it is a `udt send`".into()
    } else if b == RECEIVER_MAGIC {
        "it is a `udt recv`".into()
    } else if b == PERF_MAGIC {
        "it is a `udt perf` peer".into()
    } else if b == SECURE_MAGIC_START {
        "it encrypts (its key agreement began), and this end runs --insecure".into()
    } else if b.iter().all(|c| c.is_ascii_graphic() || *c == b' ') {
        format!("it sent \"{}\"", String::from_utf8_lossy(b))
    } else {
        format!("it sent bytes {b:02x?}")
    }
}

/// What an entry of the transfer is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A regular file: its bytes follow once the receiver accepts it.
    File,
    /// A directory: created (with its parents); nothing follows.
    Dir,
}

/// What precedes each file's bytes, or announces a directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileHeader {
    /// File or directory.
    pub kind: Kind,
    /// The path as sent: raw bytes, `/`-separated, validated by the receiver with
    /// [`check_path`].
    pub name: Vec<u8>,
    /// Size in bytes (0 for a directory).
    pub size: u64,
    /// Unix permission bits of the source (0: unknown).
    pub mode: u32,
    /// Modification time of the source: seconds since the Unix epoch and nanoseconds
    /// ([`NO_MTIME`]: unknown).
    pub mtime: (i64, u32),
}

impl FileHeader {
    /// Write it.
    pub fn write(&self, w: &mut impl Write) -> io::Result<()> {
        if self.name.len() > MAX_PATH_LEN {
            return Err(invalid(format!("a path longer than {MAX_PATH_LEN} bytes")));
        }
        let mut b = Vec::with_capacity(3 + self.name.len() + 24);
        b.push(match self.kind {
            Kind::File => 0,
            Kind::Dir => 1,
        });
        b.extend_from_slice(&(self.name.len() as u16).to_le_bytes());
        b.extend_from_slice(&self.name);
        b.extend_from_slice(&self.size.to_le_bytes());
        b.extend_from_slice(&self.mode.to_le_bytes());
        b.extend_from_slice(&self.mtime.0.to_le_bytes());
        b.extend_from_slice(&self.mtime.1.to_le_bytes());
        w.write_all(&b)
    }

    /// Read one.
    pub fn read(r: &mut impl Read) -> io::Result<FileHeader> {
        let mut head = [0u8; 3];
        r.read_exact(&mut head)?;
        let kind = match head[0] {
            0 => Kind::File,
            1 => Kind::Dir,
            other => return Err(invalid(format!("unknown entry kind {other}"))),
        };
        let len = usize::from(u16::from_le_bytes([head[1], head[2]]));
        if len > MAX_PATH_LEN {
            return Err(invalid(format!("a path of {len} bytes (at most {MAX_PATH_LEN})")));
        }
        let mut name = vec![0u8; len];
        r.read_exact(&mut name)?;
        let mut rest = [0u8; 24];
        r.read_exact(&mut rest)?;
        let u64_at = |i: usize| u64::from_le_bytes(rest[i..i + 8].try_into().unwrap_or([0; 8]));
        let u32_at = |i: usize| u32::from_le_bytes(rest[i..i + 4].try_into().unwrap_or([0; 4]));
        let size = u64_at(0);
        if kind == Kind::Dir && size != 0 {
            return Err(invalid("a directory with a size"));
        }
        Ok(FileHeader { kind, name, size, mode: u32_at(8), mtime: (u64_at(12) as i64, u32_at(20)) })
    }
}

/// What a message of the sender (after the session header) is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag {
    /// An entry's header ([`FileHeader`]) follows; the receiver answers it at once.
    Entry,
    /// The data of an accepted file follows: its entry's index (u32), the start offset, the
    /// records and the hash; the receiver answers with its verdict.
    Data,
    /// Nothing more: the receiver answers what is left and closes.
    End,
    /// Only after a header with [`FLAG_DELETE`], once, before the entries: the sender's exclude
    /// patterns ([`write_patterns`]), whose matches the receiver keeps. Not answered.
    Delete,
    /// Only right after a header with [`FLAG_STRIPES`]: the transfer's token and connection
    /// count ([`write_stripe`]). Answered by the session's status.
    Stripe,
    /// Only right after a header with [`FLAG_JOIN`]: the token and this connection's number
    /// ([`write_join`]). Answered by one status: joined, or refused.
    Join,
    /// Only in a striped session: the data of an accepted file in ranges ([`read_range`]) on
    /// any of the transfer's connections: its entry's index (u32) and start as for [`Tag::Data`],
    /// then, on this connection, range records, an end record and the hash (or an abort
    /// record); the receiver answers with its verdict once every range is in.
    Striped,
}

/// Write a message tag.
pub fn write_message_tag(w: &mut impl Write, tag: Tag) -> io::Result<()> {
    w.write_all(&[match tag {
        Tag::Entry => b'H',
        Tag::Data => b'D',
        Tag::End => b'E',
        Tag::Delete => b'X',
        Tag::Stripe => b'P',
        Tag::Join => b'J',
        Tag::Striped => b'S',
    }])
}

/// Read a message tag.
pub fn read_message_tag(r: &mut impl Read) -> io::Result<Tag> {
    let mut b = [0u8; 1];
    r.read_exact(&mut b)?;
    match b[0] {
        b'H' => Ok(Tag::Entry),
        b'D' => Ok(Tag::Data),
        b'E' => Ok(Tag::End),
        b'X' => Ok(Tag::Delete),
        b'P' => Ok(Tag::Stripe),
        b'J' => Ok(Tag::Join),
        b'S' => Ok(Tag::Striped),
        other => Err(invalid(format!("unknown message tag {other:#04x}"))),
    }
}

/// Where a file's data starts (after the receiver's go-ahead).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// From byte 0: the whole file follows.
    Whole,
    /// From the resume offset the receiver offered, with the sender's proof that it holds the
    /// bytes before it: their BLAKE3 hash. The receiver goes on from its part only if the
    /// hashes match.
    Resume {
        /// The offset offered (never 0).
        offset: u64,
        /// BLAKE3 of the sender's first `offset` bytes.
        prefix_hash: [u8; HASH_LEN],
    },
}

impl Start {
    /// The byte the data starts at.
    pub fn offset(&self) -> u64 {
        match self {
            Start::Whole => 0,
            Start::Resume { offset, .. } => *offset,
        }
    }
}

/// Write where a file's data starts: the offset (u64), and after a non-zero one the hash of
/// the bytes before it.
pub fn write_start(w: &mut impl Write, start: &Start) -> io::Result<()> {
    let mut b = Vec::with_capacity(8 + HASH_LEN);
    match start {
        Start::Whole => b.extend_from_slice(&0u64.to_le_bytes()),
        Start::Resume { offset, prefix_hash } => {
            if *offset == 0 {
                return Err(invalid("a resume at offset 0"));
            }
            b.extend_from_slice(&offset.to_le_bytes());
            b.extend_from_slice(prefix_hash);
        }
    }
    w.write_all(&b)
}

/// Read where a file's data starts.
pub fn read_start(r: &mut impl Read) -> io::Result<Start> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    let offset = u64::from_le_bytes(b);
    if offset == 0 {
        return Ok(Start::Whole);
    }
    let mut prefix_hash = [0u8; HASH_LEN];
    r.read_exact(&mut prefix_hash)?;
    Ok(Start::Resume { offset, prefix_hash })
}

/// What an abort record ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbortScope {
    /// This file only: the next file header follows.
    File,
    /// The whole session: the sender closes after it.
    Session,
}

/// One record of a file's data, as the receiver reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// A chunk of this many bytes follows.
    Chunk(u32),
    /// The sender gave up, for this reason.
    Abort(AbortScope, String),
}

/// The 4-byte length that precedes a chunk of `len` bytes (1..=[`CHUNK`]).
pub fn chunk_prefix(len: usize) -> [u8; 4] {
    (len as u32).to_le_bytes()
}

/// Write an abort record.
pub fn write_abort(w: &mut impl Write, scope: AbortScope, msg: &str) -> io::Result<()> {
    let msg = truncate(msg, MAX_MESSAGE_LEN);
    let mut b = Vec::with_capacity(7 + msg.len());
    b.extend_from_slice(&ABORT_MARK.to_le_bytes());
    b.push(match scope {
        AbortScope::File => 0,
        AbortScope::Session => 1,
    });
    b.extend_from_slice(&(msg.len() as u16).to_le_bytes());
    b.extend_from_slice(msg.as_bytes());
    w.write_all(&b)
}

/// Read the next record of a file's data, `left` bytes of which are still due.
pub fn read_record(r: &mut impl Read, left: u64) -> io::Result<Record> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len);
    if len == ABORT_MARK {
        let mut head = [0u8; 3];
        r.read_exact(&mut head)?;
        let scope = match head[0] {
            0 => AbortScope::File,
            1 => AbortScope::Session,
            other => return Err(invalid(format!("unknown abort scope {other}"))),
        };
        let msg = read_message(r, u16::from_le_bytes([head[1], head[2]]))?;
        return Ok(Record::Abort(scope, if msg.is_empty() { "no reason given".into() } else { msg }));
    }
    if len == 0 || len as usize > CHUNK || u64::from(len) > left {
        return Err(invalid(format!("bad chunk length {len} with {left} bytes of the file left")));
    }
    Ok(Record::Chunk(len))
}

/// Write a stripe message's body: the transfer's token, then its connection count (u16,
/// 2..=[`MAX_STRIPES`]).
pub fn write_stripe(w: &mut impl Write, token: &[u8; TOKEN_LEN], connections: u16) -> io::Result<()> {
    write_token_and(w, token, connections)
}

/// Read a stripe message's body ([`write_stripe`]).
pub fn read_stripe(r: &mut impl Read) -> io::Result<([u8; TOKEN_LEN], u16)> {
    let (token, connections) = read_token_and(r)?;
    if !(2..=MAX_STRIPES).contains(&connections) {
        return Err(invalid(format!("a striped transfer of {connections} connections (2 to {MAX_STRIPES})")));
    }
    Ok((token, connections))
}

/// Write a join message's body: the transfer's token, then this connection's number (u16,
/// from 1; the session's connection is 0).
pub fn write_join(w: &mut impl Write, token: &[u8; TOKEN_LEN], member: u16) -> io::Result<()> {
    write_token_and(w, token, member)
}

/// A token, then a u16.
fn write_token_and(w: &mut impl Write, token: &[u8; TOKEN_LEN], n: u16) -> io::Result<()> {
    let mut b = token.to_vec();
    b.extend_from_slice(&n.to_le_bytes());
    w.write_all(&b)
}

/// A token, then a u16.
fn read_token_and(r: &mut impl Read) -> io::Result<([u8; TOKEN_LEN], u16)> {
    let mut b = [0u8; TOKEN_LEN + 2];
    r.read_exact(&mut b)?;
    let mut token = [0u8; TOKEN_LEN];
    token.copy_from_slice(&b[..TOKEN_LEN]);
    Ok((token, u16::from_le_bytes([b[TOKEN_LEN], b[TOKEN_LEN + 1]])))
}

/// Read a join message's body ([`write_join`]): the token and a member number of 1 to
/// [`MAX_STRIPES`] - 1 (the transfer's own count is the receiver's to check).
pub fn read_join(r: &mut impl Read) -> io::Result<([u8; TOKEN_LEN], u16)> {
    let (token, member) = read_token_and(r)?;
    if !(1..MAX_STRIPES).contains(&member) {
        return Err(invalid(format!("a joining connection numbered {member} (1 to {})", MAX_STRIPES - 1)));
    }
    Ok((token, member))
}

/// One record of a striped file's data, as the receiver reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RangeRecord {
    /// `len` bytes (1..=[`CHUNK`]) of entry `index` at `offset` follow.
    Range {
        /// Bytes that follow.
        len: u32,
        /// The entry whose bytes they are.
        index: u32,
        /// Where they go in the file.
        offset: u64,
    },
    /// The end: on the session's connection, of this file's ranges there (its hash follows);
    /// on a joined connection, of the transfer.
    End,
    /// Only on the session's connection: the sender gave up, for this reason.
    Abort(AbortScope, String),
}

/// The head of a range record of `len` bytes (1..=[`CHUNK`]) of entry `index` at `offset`.
pub fn range_head(len: usize, index: u32, offset: u64) -> [u8; RANGE_HEAD_LEN] {
    let mut b = [0u8; RANGE_HEAD_LEN];
    b[..4].copy_from_slice(&(len as u32).to_le_bytes());
    b[4..8].copy_from_slice(&index.to_le_bytes());
    b[8..].copy_from_slice(&offset.to_le_bytes());
    b
}

/// The end record of a striped file's ranges, or of a joined connection.
pub const RANGE_END: [u8; 4] = [0; 4];

/// Read the next range record: its length (at most [`CHUNK`]) is checked here, whether it
/// fits the file is the receiver's to check.
pub fn read_range(r: &mut impl Read) -> io::Result<RangeRecord> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len);
    if len == 0 {
        return Ok(RangeRecord::End);
    }
    if len == ABORT_MARK {
        return match read_record(&mut len.to_le_bytes().chain(r), 0)? {
            Record::Abort(scope, msg) => Ok(RangeRecord::Abort(scope, msg)),
            Record::Chunk(_) => Err(invalid("a range record that is not one")),
        };
    }
    if len as usize > CHUNK {
        return Err(invalid(format!("a range of {len} bytes (at most {CHUNK})")));
    }
    let mut b = [0u8; 12];
    r.read_exact(&mut b)?;
    let index = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let offset = u64::from_le_bytes([b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11]]);
    Ok(RangeRecord::Range { len, index, offset })
}

/// The receiver's answer to the session header, to a file header, and to a file's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Accepted / stored.
    Ok,
    /// Refused or failed, with the reason; the session goes on (except after the session
    /// header, where it means the session was refused).
    Error(String),
    /// Only before the session's answer: the receiver is busy; another status follows.
    Wait(String),
    /// The receiver stops the whole session, for this reason, and closes.
    Abort(String),
    /// Go ahead, and the receiver already holds `offset` bytes of this file (an interrupted
    /// transfer's): the sender may start there, proving it holds the same bytes ([`Start`]).
    /// Nothing about those bytes is told, only how many there are.
    Resume {
        /// Bytes held.
        offset: u64,
    },
    /// Only to a sender with [`FLAG_SKIPS`], as an entry's answer: the receiver holds a file of
    /// this path and of the announced size; the sender proves whether it is the same (its data
    /// starts at the file's size with the hash of the whole file as proof, and no chunks).
    Have,
    /// Only to a sender with [`FLAG_SKIPS`]: the file is not taken, and that is no failure
    /// (the receiver holds it identical, or keeps its own by its rules), with the reason.
    Skip(String),
    /// Only after the end of a session with [`FLAG_DELETE`]: the receiver deleted this path
    /// (relative to its output directory; at most [`MAX_PATH_LEN`] bytes). Any number of these
    /// and `error`s (what it could not delete, and why) come after the last answer, then `ok`.
    Deleted(String),
}

/// Length of a resume status's body: the offset.
const RESUME_LEN: usize = 8;

impl Status {
    /// Write it (messages longer than [`MAX_MESSAGE_LEN`] bytes are cut at a character boundary).
    pub fn write(&self, w: &mut impl Write) -> io::Result<()> {
        if let Status::Resume { offset } = self {
            let mut b = Vec::with_capacity(3 + RESUME_LEN);
            b.push(4);
            b.extend_from_slice(&(RESUME_LEN as u16).to_le_bytes());
            b.extend_from_slice(&offset.to_le_bytes());
            return w.write_all(&b);
        }
        let (code, msg) = match self {
            Status::Deleted(path) => (7u8, truncate(path, MAX_PATH_LEN)),
            Status::Resume { .. } => (4u8, ""),
            Status::Ok => (0u8, ""),
            Status::Have => (5u8, ""),
            Status::Skip(m) => (6u8, truncate(m, MAX_MESSAGE_LEN)),
            Status::Error(m) => (1u8, truncate(m, MAX_MESSAGE_LEN)),
            Status::Wait(m) => (2u8, truncate(m, MAX_MESSAGE_LEN)),
            Status::Abort(m) => (3u8, truncate(m, MAX_MESSAGE_LEN)),
        };
        let mut b = Vec::with_capacity(3 + msg.len());
        b.push(code);
        b.extend_from_slice(&(msg.len() as u16).to_le_bytes());
        b.extend_from_slice(msg.as_bytes());
        w.write_all(&b)
    }

    /// Read one.
    pub fn read(r: &mut impl Read) -> io::Result<Status> {
        let mut head = [0u8; 3];
        r.read_exact(&mut head)?;
        if head[0] == 4 {
            if usize::from(u16::from_le_bytes([head[1], head[2]])) != RESUME_LEN {
                return Err(invalid("a resume status of the wrong length"));
            }
            let mut body = [0u8; RESUME_LEN];
            r.read_exact(&mut body)?;
            return Ok(Status::Resume { offset: u64::from_le_bytes(body) });
        }
        let len = u16::from_le_bytes([head[1], head[2]]);
        if head[0] == 7 {
            if usize::from(len) > MAX_PATH_LEN {
                return Err(invalid(format!("a deleted path of {len} bytes (at most {MAX_PATH_LEN})")));
            }
            let mut path = vec![0u8; usize::from(len)];
            r.read_exact(&mut path)?;
            return Ok(Status::Deleted(String::from_utf8_lossy(&path).into_owned()));
        }
        let msg = read_message(r, len)?;
        let or_unspecified = |m: String| if m.is_empty() { "unspecified error".to_string() } else { m };
        match head[0] {
            0 => Ok(Status::Ok),
            1 => Ok(Status::Error(or_unspecified(msg))),
            2 => Ok(Status::Wait(msg)),
            3 => Ok(Status::Abort(or_unspecified(msg))),
            5 => Ok(Status::Have),
            6 => Ok(Status::Skip(or_unspecified(msg))),
            other => Err(invalid(format!("unknown status code {other}"))),
        }
    }
}

/// A status or abort message of `len` bytes: at most [`MAX_MESSAGE_LEN`], else the peer broke
/// the protocol (and nothing after it can be trusted to be in step).
fn read_message(r: &mut impl Read, len: u16) -> io::Result<String> {
    let len = usize::from(len);
    if len > MAX_MESSAGE_LEN {
        return Err(invalid(format!("a message of {len} bytes (at most {MAX_MESSAGE_LEN})")));
    }
    let mut msg = vec![0u8; len];
    r.read_exact(&mut msg)?;
    Ok(String::from_utf8_lossy(&msg).into_owned())
}

/// Write a delete request's body: the pattern count (u16), then each pattern as its length
/// (u16) and UTF-8 bytes; at most [`MAX_PATTERNS`] patterns of at most [`MAX_PATH_LEN`] bytes.
pub fn write_patterns(w: &mut impl Write, patterns: &[String]) -> io::Result<()> {
    if patterns.len() > MAX_PATTERNS || patterns.iter().any(|p| p.len() > MAX_PATH_LEN) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("at most {MAX_PATTERNS} exclude patterns of {MAX_PATH_LEN} bytes go with --delete"),
        ));
    }
    let mut b = (patterns.len() as u16).to_le_bytes().to_vec();
    for p in patterns {
        b.extend_from_slice(&(p.len() as u16).to_le_bytes());
        b.extend_from_slice(p.as_bytes());
    }
    w.write_all(&b)
}

/// Read a delete request's body ([`write_patterns`]).
pub fn read_patterns(r: &mut impl Read) -> io::Result<Vec<String>> {
    let mut two = [0u8; 2];
    r.read_exact(&mut two)?;
    let count = usize::from(u16::from_le_bytes(two));
    if count > MAX_PATTERNS {
        return Err(invalid(format!("{count} exclude patterns (at most {MAX_PATTERNS})")));
    }
    let mut patterns = Vec::with_capacity(count);
    for _ in 0..count {
        r.read_exact(&mut two)?;
        let len = usize::from(u16::from_le_bytes(two));
        if len > MAX_PATH_LEN {
            return Err(invalid(format!("an exclude pattern of {len} bytes (at most {MAX_PATH_LEN})")));
        }
        let mut p = vec![0u8; len];
        r.read_exact(&mut p)?;
        patterns.push(String::from_utf8(p).map_err(|_| invalid("an exclude pattern that is not UTF-8"))?);
    }
    Ok(patterns)
}

/// Bidirectional-text controls: embeddings, overrides, isolates and marks. They can make a
/// name display as another (`evil\u{202e}txt.exe` shows as `evilexe.txt`).
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Check a file name (as received, or before sending): one plain component of valid UTF-8, so
/// that joining it to the output directory can never leave that directory, and nothing in it
/// that could mislead a reader. Returns the name as text, or why it is refused.
///
/// Refused: `.` and `..`, `/` and `\`, NUL and other control characters (tab included),
/// bidirectional-text controls, names over [`MAX_NAME_LEN`] bytes, empty or non-UTF-8 names.
/// Dots elsewhere are fine: `backup..2024.txt`, `wait...txt`, `.hidden`.
pub fn check_name(raw: &[u8]) -> Result<&str, String> {
    let Ok(name) = std::str::from_utf8(raw) else {
        return Err(format!(
            "file name \"{}\" is not valid UTF-8",
            display_name(&String::from_utf8_lossy(raw))
        ));
    };
    let shown = format!("\"{}\"", display_name(name));
    if name.is_empty() {
        return Err("empty file name".into());
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!("file name is longer than {MAX_NAME_LEN} bytes"));
    }
    if name == "." {
        return Err("file name \".\" names a directory (the current one), not a file".into());
    }
    if name == ".." {
        return Err("file name \"..\" names the parent directory, not a file".into());
    }
    if let Some(c) = name.chars().find(|c| matches!(c, '/' | '\\')) {
        return Err(format!(
            "file name {shown} contains the path separator {c:?}; only plain file names are accepted"
        ));
    }
    if name.contains('\0') {
        return Err(format!("file name {shown} contains a NUL byte"));
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Err(format!("file name {shown} contains the control character {}", c.escape_unicode()));
    }
    if let Some(c) = name.chars().find(|&c| is_bidi_control(c)) {
        return Err(format!(
            "file name {shown} contains the bidirectional-text control {}, which can disguise a name",
            c.escape_unicode()
        ));
    }
    let temp_of = name.strip_prefix('.').and_then(|n| n.strip_suffix(".udt-partial"));
    if temp_of.is_some_and(|n| !n.is_empty()) || name.starts_with(".udt-partial-") {
        return Err(format!(
            "file name {shown} has the form of the receiver's temporary files (.NAME.udt-partial), \
             which it would take for a stale one"
        ));
    }
    // Belt and braces: the path must be exactly one normal component.
    let mut components = Path::new(name).components();
    match (components.next(), components.next()) {
        (Some(Component::Normal(_)), None) => Ok(name),
        _ => Err(format!("file name {shown} is not a plain file name")),
    }
}

/// Check a path as received (or before sending): `/`-separated components, each a plain name
/// by [`check_name`] (so no `..`, no absolute path, nothing that leaves the output directory),
/// at most [`MAX_PATH_LEN`] bytes. Returns the components, or why it is refused.
pub fn check_path(raw: &[u8]) -> Result<Vec<&str>, String> {
    if raw.len() > MAX_PATH_LEN {
        return Err(format!("path is longer than {MAX_PATH_LEN} bytes"));
    }
    if raw.first() == Some(&b'/') {
        return Err(format!(
            "file name \"{}\" is an absolute path; only paths inside the output directory are accepted",
            display_name(&String::from_utf8_lossy(raw))
        ));
    }
    raw.split(|&b| b == b'/').map(check_name).collect()
}

/// A name as it can be shown safely on a terminal: control characters and bidirectional-text
/// controls escaped (`\t`, `\u{202e}`), at most 300 bytes.
pub fn display_name(name: &str) -> String {
    let mut shown = String::with_capacity(name.len());
    for c in truncate(name, 300).chars() {
        if c.is_control() {
            shown.extend(c.escape_debug());
        } else if is_bidi_control(c) {
            shown.extend(c.escape_unicode());
        } else {
            shown.push(c);
        }
    }
    shown
}

/// The longest prefix of `s` of at most `max` bytes that ends at a character boundary.
pub fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// An `InvalidData` error: the peer broke the protocol.
pub fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

#[cfg(test)]
mod tests;
