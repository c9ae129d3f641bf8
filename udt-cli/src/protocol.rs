//! The file-transfer protocol of `udt send` and `udt recv`, version 1, over one UDT stream
//! connection. The normative description is `PROTOCOL.md` next to this crate's `Cargo.toml`;
//! in short (all integers little-endian):
//!
//! ```text
//! sender -> receiver   "UDTF" | version u16 | flags u16 | file count u32
//! receiver -> sender   status                                      (accepts the session)
//! per file:
//!   sender -> receiver   name length u16 | name (UTF-8) | size u64 | mode u32
//!   receiver -> sender   status                                    (go ahead, or refused)
//!   if accepted:
//!     sender -> receiver   size bytes of data | BLAKE3 hash (32 bytes)
//!     receiver -> sender   status                                  (stored, or why not)
//! status = code u8 (0 ok, 1 error) | message length u16 | message (UTF-8)
//! ```

use std::io::{self, Read, Write};
use std::path::{Component, Path};

/// The first four bytes of a transfer.
pub const MAGIC: [u8; 4] = *b"UDTF";
/// The protocol version this program speaks.
pub const VERSION: u16 = 1;
/// Bytes per file read, stream write and hash update.
pub const CHUNK: usize = 1 << 20;
/// Longest file name accepted, in bytes (Linux `NAME_MAX`).
pub const MAX_NAME_LEN: usize = 255;
/// Longest status message sent; longer ones are cut.
pub const MAX_MESSAGE_LEN: usize = 1024;
/// Length of a BLAKE3 hash.
pub const HASH_LEN: usize = 32;
/// Size of the session header.
pub const HEADER_LEN: usize = 12;

/// The session header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Protocol version of the sender.
    pub version: u16,
    /// Reserved, zero in version 1.
    pub flags: u16,
    /// Files that follow.
    pub file_count: u32,
}

impl Header {
    /// A version-1 header announcing `file_count` files.
    pub fn new(file_count: u32) -> Self {
        Header { version: VERSION, flags: 0, file_count }
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
        r.read_exact(&mut b)?;
        if b[..4] != MAGIC {
            return Err(invalid(format!(
                "not a `udt send` stream (expected magic \"UDTF\", got {:02x?})",
                &b[..4]
            )));
        }
        Ok(Header {
            version: u16::from_le_bytes([b[4], b[5]]),
            flags: u16::from_le_bytes([b[6], b[7]]),
            file_count: u32::from_le_bytes([b[8], b[9], b[10], b[11]]),
        })
    }
}

/// What precedes each file's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileHeader {
    /// The name as sent: raw bytes, validated by the receiver with [`check_name`].
    pub name: Vec<u8>,
    /// Size in bytes.
    pub size: u64,
    /// Unix permission bits of the source (0: unknown).
    pub mode: u32,
}

impl FileHeader {
    /// Write it.
    pub fn write(&self, w: &mut impl Write) -> io::Result<()> {
        let len = u16::try_from(self.name.len()).map_err(|_| invalid("file name longer than 65535 bytes"))?;
        let mut b = Vec::with_capacity(2 + self.name.len() + 12);
        b.extend_from_slice(&len.to_le_bytes());
        b.extend_from_slice(&self.name);
        b.extend_from_slice(&self.size.to_le_bytes());
        b.extend_from_slice(&self.mode.to_le_bytes());
        w.write_all(&b)
    }

    /// Read one.
    pub fn read(r: &mut impl Read) -> io::Result<FileHeader> {
        let mut len = [0u8; 2];
        r.read_exact(&mut len)?;
        let mut name = vec![0u8; usize::from(u16::from_le_bytes(len))];
        r.read_exact(&mut name)?;
        let mut rest = [0u8; 12];
        r.read_exact(&mut rest)?;
        let mut size = [0u8; 8];
        size.copy_from_slice(&rest[..8]);
        let mut mode = [0u8; 4];
        mode.copy_from_slice(&rest[8..]);
        Ok(FileHeader { name, size: u64::from_le_bytes(size), mode: u32::from_le_bytes(mode) })
    }
}

/// The receiver's answer to the session header, to a file header, and to a file's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Accepted / stored.
    Ok,
    /// Refused or failed, with the reason.
    Error(String),
}

impl Status {
    /// Write it (messages longer than [`MAX_MESSAGE_LEN`] bytes are cut at a character boundary).
    pub fn write(&self, w: &mut impl Write) -> io::Result<()> {
        let (code, msg) = match self {
            Status::Ok => (0u8, ""),
            Status::Error(m) => (1u8, truncate(m, MAX_MESSAGE_LEN)),
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
        let mut msg = vec![0u8; usize::from(u16::from_le_bytes([head[1], head[2]]))];
        r.read_exact(&mut msg)?;
        let msg = String::from_utf8_lossy(&msg).into_owned();
        match head[0] {
            0 => Ok(Status::Ok),
            1 => Ok(Status::Error(if msg.is_empty() { "unspecified error".into() } else { msg })),
            other => Err(invalid(format!("unknown status code {other}"))),
        }
    }
}

/// Check a received file name: one plain component of valid UTF-8, so that joining it to the
/// output directory can never leave that directory. Returns the name as text.
pub fn check_name(raw: &[u8]) -> Result<&str, String> {
    let name = std::str::from_utf8(raw).map_err(|_| "file name is not valid UTF-8".to_string())?;
    let shown = format!("\"{}\"", display_name(name));
    if name.is_empty() {
        return Err("empty file name".into());
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!("file name is longer than {MAX_NAME_LEN} bytes"));
    }
    if name == "." || name == ".." || name.contains("..") {
        return Err(format!("file name {shown} contains \"..\""));
    }
    if let Some(c) = name.chars().find(|c| matches!(c, '/' | '\\' | '\0')) {
        return Err(format!("file name {shown} contains {c:?}; only plain file names are accepted"));
    }
    if name.chars().any(char::is_control) {
        return Err(format!("file name {shown} contains control characters"));
    }
    // Belt and braces: the path must be exactly one normal component.
    let mut components = Path::new(name).components();
    match (components.next(), components.next()) {
        (Some(Component::Normal(_)), None) => Ok(name),
        _ => Err(format!("file name {shown} is not a plain file name")),
    }
}

/// A name as it can be shown safely on a terminal: control characters escaped, at most 300
/// bytes.
pub fn display_name(name: &str) -> String {
    let mut shown = String::with_capacity(name.len());
    for c in truncate(name, 300).chars() {
        if c.is_control() {
            shown.extend(c.escape_debug());
        } else {
            shown.push(c);
        }
    }
    shown
}

/// The longest prefix of `s` of at most `max` bytes that ends at a character boundary.
fn truncate(s: &str, max: usize) -> &str {
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
mod tests {
    use super::*;

    #[test]
    fn header_round_trip() {
        let h = Header::new(3);
        let b = h.encode();
        assert_eq!(&b[..4], b"UDTF");
        assert_eq!(Header::read(&mut &b[..]).unwrap(), h);
        assert!(Header::read(&mut &b"HTTP/1.1 200"[..]).is_err());
    }

    #[test]
    fn file_header_and_status_round_trip() {
        let f = FileHeader { name: b"c.txt".to_vec(), size: 1 << 40, mode: 0o755 };
        let mut b = Vec::new();
        f.write(&mut b).unwrap();
        assert_eq!(b.len(), 2 + 5 + 8 + 4);
        assert_eq!(FileHeader::read(&mut &b[..]).unwrap(), f);
        for s in [Status::Ok, Status::Error("exists; use --force".into())] {
            let mut b = Vec::new();
            s.write(&mut b).unwrap();
            assert_eq!(Status::read(&mut &b[..]).unwrap(), s);
        }
        let mut b = Vec::new();
        Status::Error("é".repeat(1000)).write(&mut b).unwrap();
        assert_eq!(b.len(), 3 + MAX_MESSAGE_LEN);
    }

    #[test]
    fn names() {
        for good in ["c.txt", ".hidden", "a b", "naïve.txt", "x.tar.gz"] {
            assert_eq!(check_name(good.as_bytes()), Ok(good), "{good}");
        }
        for bad in [
            &b""[..],
            b".",
            b"..",
            b"../evil",
            b"a/../../b",
            b"/etc/passwd",
            b"a/b",
            b"a\\b",
            b"..\\evil",
            b"nul\0byte",
            b"esc\x1b[2J",
            b"\xff\xfe",
            &[b'a'; 256],
        ] {
            assert!(check_name(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
