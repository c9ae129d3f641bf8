//! A file's data: where it starts (from the beginning, or where an interrupted transfer's part
//! ends, if the sender proves it holds the same bytes), its chunks (hashed and written off the
//! connection's thread by [`super::store`], in buffers aligned to their size in the file), its
//! hash, and the commit.
//!
//! Invariants: the sender's proof (BLAKE3 of its first `offset` bytes) is compared with the
//! part's hash in constant time, and the part is used only on a match; on a mismatch the data
//! is read and thrown away (the stream stays in step), the part is removed and the file fails
//! with a reason that tells the sender to send again. The temporary file is written only
//! through its directory found again by identity and its own descriptor checked again; the
//! permission bits and time are set on that descriptor before the file is moved into place;
//! only a file whose hash matches the sender's is moved. A connection failure keeps the part
//! (if it is under the resumable name and resumes are on); any other failure removes it.

use std::io::{self, Read, Seek, Write};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use super::prepare::{Held, Target, EXISTS};
use super::session::{from_peer, Failure};
use super::store::Store;
use crate::landing::{commit, mode, open_existing, Temp};
use crate::link::Link;
use crate::protocol::{self, AbortScope, FileHeader, Record, Start, HASH_LEN};
use crate::Error;

/// What a stored file gives: the time taken, the hash, the bytes received this time.
pub type Stored = (Duration, blake3::Hash, u64);

/// Receive the data and hash of an accepted file (`path`: as sent) and store it if the hash
/// matches. The outer error ends the session; the inner one is this file's failure, for the
/// sender.
pub fn receive_file(
    link: &mut Link<'_>,
    fh: &FileHeader,
    target: Target,
    force: bool,
    path: &str,
) -> Result<Result<Stored, String>, Failure> {
    let shown = protocol::display_name(path);
    let Target { held, _claim, dest, mut temp, .. } = target;
    // From here on the temporary file follows this transfer's fate.
    temp.armed = true;
    let start =
        protocol::read_start(link).map_err(|e| from_peer(link, e, || "before the file's data".into()))?;
    let offset = start.offset();
    let resumed = match (start, held) {
        (Start::Whole, _) => None,
        (Start::Resume { offset, prefix_hash }, Some(held)) if offset == held.len => {
            // blake3::Hash compares in constant time.
            if blake3::Hash::from_bytes(prefix_hash) != held.hasher.finalize() {
                drain(link, fh, offset)?;
                return Ok(Err(format!(
                    "the sender's first {offset} bytes differ from the part of this file the receiver \
                     held (another source, or the file changed): the part is discarded; send the \
                     file again to send it whole"
                )));
            }
            Some(held.hasher)
        }
        (Start::Resume { offset, .. }, _) => {
            return Err(Failure::Here(Error::Protocol(format!(
                "the sender starts at byte {offset}, which the receiver did not offer"
            ))))
        }
    };
    let opened = temp.spot.open().and_then(|dir| temp.open(&dir).map(|file| (dir, file)));
    let (dir, mut file) = match opened {
        Ok(x) => x,
        Err(msg) => {
            tracing::warn!("{shown}: {msg}");
            drain(link, fh, offset)?;
            return Ok(Err(msg));
        }
    };
    let hasher = match resumed {
        Some(hasher) => {
            file.seek(io::SeekFrom::Start(offset)).map_err(|e| {
                Failure::Here(Error::io(format!("cannot seek in the temporary file of {shown}"), e))
            })?;
            tracing::info!(offset, "resuming {shown}");
            *hasher
        }
        None => {
            // From the beginning (nothing held, or the sender chose to send it whole).
            file.set_len(0).and_then(|()| file.rewind()).map_err(|e| {
                Failure::Here(Error::io(format!("cannot reset the temporary file of {shown}"), e))
            })?;
            blake3::Hasher::new()
        }
    };
    let began = Instant::now();
    link.data_started(path, fh.size - offset);
    let result = receive_data(link, fh, offset, hasher, &file);
    let took = began.elapsed();
    link.data_ended();
    let (hash, expected, write_error) = match result {
        Ok(Ok(x)) => x,
        Ok(Err(msg)) => return Ok(Err(msg)),
        Err(failure) => {
            // The connection failed or was interrupted: keep what arrived for a resume.
            let _ = file.sync_data();
            temp.keep_for_resume();
            return Err(failure);
        }
    };
    let verified = Verified { hash, expected, write_error: write_error.map(|e| e.to_string()) };
    Ok(store_verified(fh, &mut temp, &dir, file, &dest, verified, force)
        .map(|()| (took, hash, fh.size - offset)))
}

/// A file's bytes as they ended: the hash computed, the hash sent, the first write error.
pub struct Verified {
    pub hash: blake3::Hash,
    pub expected: [u8; HASH_LEN],
    pub write_error: Option<String>,
}

/// Move a received file into place at `dest` if it was written whole and its hash is the
/// sender's, with the sender's permission bits (masked) and time set on its descriptor
/// first; else why not (the temporary file is then removed when `temp` drops).
pub fn store_verified(
    fh: &FileHeader,
    temp: &mut Temp<'_>,
    dir: &std::fs::File,
    file: std::fs::File,
    dest: &str,
    verified: Verified,
    force: bool,
) -> Result<(), String> {
    let shown = protocol::display_name(&String::from_utf8_lossy(&fh.name));
    if let Some(e) = verified.write_error {
        return Err(format!("writing failed: {e}"));
    }
    if verified.hash != blake3::Hash::from_bytes(verified.expected) {
        return Err("BLAKE3 mismatch: the data arrived corrupted; not stored".into());
    }
    let bits = mode::file_mode(fh.mode, temp.spot.root().umask);
    if let Err(e) = file.set_permissions(std::fs::Permissions::from_mode(bits)) {
        tracing::warn!("cannot set the permissions of {shown}: {e}");
    }
    if let Some(t) = mode::mtime(fh.mtime) {
        if let Err(e) = file.set_modified(t) {
            tracing::warn!("cannot set the modification time of {shown}: {e}");
        }
    }
    drop(file);
    commit(dir, &temp.name, temp.id, dest, force)?;
    temp.keep();
    Ok(())
}

/// The sender's proof for a file this receiver holds one of the same size of ([`Held`]):
/// `Ok` with the reason to keep it when the sender's whole-file hash equals the hash of the
/// held file (compared in constant time), else the refusal. The held file is only read.
pub fn compare_file(
    link: &mut Link<'_>,
    fh: &FileHeader,
    held: &Held<'_>,
) -> Result<Result<String, String>, Failure> {
    let start =
        protocol::read_start(link).map_err(|e| from_peer(link, e, || "before the file's proof".into()))?;
    let proof = match start {
        Start::Resume { offset, prefix_hash } if offset == fh.size => prefix_hash,
        Start::Resume { offset, .. } => {
            return Err(Failure::Here(Error::Protocol(format!(
                "the sender starts at byte {offset}, which the receiver did not offer"
            ))))
        }
        // The sender's file is not of the announced size any more: it sends it whole.
        Start::Whole => {
            drain(link, fh, 0)?;
            return Ok(Err(EXISTS.into()));
        }
    };
    let mut expected = [0u8; HASH_LEN];
    link.read_exact(&mut expected).map_err(|e| from_peer(link, e, || "before the file's hash".into()))?;
    let ours = held.spot.open().and_then(|dir| {
        let file = open_existing(&dir, held.dest.as_str()).map_err(|e| format!("cannot read it: {e}"))?;
        let mut hasher = blake3::Hasher::new();
        hasher.update_reader(file).map_err(|e| format!("cannot read it: {e}"))?;
        Ok(hasher.finalize())
    });
    Ok(match ours {
        Ok(ours) if ours == blake3::Hash::from_bytes(proof) => Ok("identical (same size and BLAKE3)".into()),
        Ok(_) => Err("exists and differs; use --force to overwrite (udt recv --force; udt send --force to a host:path)".into()),
        Err(msg) => Err(format!("exists; {msg}")),
    })
}

/// Read a file's data from `start` on and throw it away (to stay in step with the sender).
pub fn drain(link: &mut Link<'_>, fh: &FileHeader, start: u64) -> Result<(), Failure> {
    receive_data(link, fh, start, blake3::Hasher::new(), io::sink()).map(|_| ())
}

/// What [`receive_data`] gives: the hash computed, the hash sent, a write error if any.
type Received = (blake3::Hash, [u8; HASH_LEN], Option<io::Error>);

/// Read a file's chunks from `start` on into `out` (hashed and written by a [`Store`], in
/// buffers that end at multiples of their size in the file), then the sender's hash. A write
/// error (disk full) does not stop the reading, so the stream stays in step. The inner error
/// is the sender's abort of this file.
fn receive_data<W: Write + Send + Clone>(
    link: &mut Link<'_>,
    fh: &FileHeader,
    start: u64,
    hasher: blake3::Hasher,
    out: W,
) -> Result<Result<Received, String>, Failure> {
    std::thread::scope(|scope| {
        let mut store = Store::start(scope, out, fh.size - start, hasher);
        let outcome = read_chunks(link, fh, start, &mut store);
        // Everything that arrived is written before the caller keeps a part for a resume.
        let (hasher, write_error) = store.finish();
        Ok(outcome?.map(|expected| (hasher.finalize(), expected, write_error)))
    })
}

/// Read a file's chunk records from `start` on into buffers of `store`, then the sender's
/// hash (returned).
fn read_chunks<W: Write>(
    link: &mut Link<'_>,
    fh: &FileHeader,
    start: u64,
    store: &mut Store<'_, W>,
) -> Result<Result<[u8; HASH_LEN], String>, Failure> {
    let mut filling = Filling { buf: None, filled: 0, target: 0 };
    let outcome = read_records(link, fh, start, store, &mut filling);
    if let Some(buf) = filling.buf.take() {
        if filling.filled > 0 {
            store.store(buf, filling.filled);
        }
    }
    if let Err(msg) = outcome? {
        return Ok(Err(msg));
    }
    let mut expected = [0u8; HASH_LEN];
    link.read_exact(&mut expected).map_err(|e| from_peer(link, e, || "before the file's hash".into()))?;
    Ok(Ok(expected))
}

/// The buffer being filled from the connection: its bytes so far, and how many it takes.
struct Filling {
    buf: Option<Vec<u8>>,
    filled: usize,
    target: usize,
}

/// Read the chunk records of a file's data from `start` on, handing full buffers to `store`;
/// what is in `filling` at the end is the caller's to store.
fn read_records<W: Write>(
    link: &mut Link<'_>,
    fh: &FileHeader,
    start: u64,
    store: &mut Store<'_, W>,
    filling: &mut Filling,
) -> Result<Result<(), String>, Failure> {
    let mut left = fh.size - start;
    let mut at = start;
    let mut record = 0usize;
    let after = |left: u64| format!("after {} of {} bytes of the file", fh.size - left, fh.size);
    while left > 0 {
        if record == 0 {
            record =
                match protocol::read_record(link, left).map_err(|e| from_peer(link, e, || after(left)))? {
                    Record::Chunk(len) => len as usize,
                    Record::Abort(AbortScope::File, msg) => {
                        return Ok(Err(format!("the sender gave it up: {}", protocol::display_name(&msg))))
                    }
                    Record::Abort(AbortScope::Session, msg) => {
                        return Err(Failure::Peer(Error::SenderStopped(format!(
                            "{} ({})",
                            protocol::display_name(&msg),
                            after(left)
                        ))))
                    }
                };
        }
        let buf = match &mut filling.buf {
            Some(buf) => buf,
            None => {
                let buf = filling.buf.insert(store.buffer());
                // Up to the next multiple of the buffer's size in the file, so that the writes of
                // a large file stay aligned.
                let len = buf.len();
                let to_boundary = len - (at % len as u64) as usize;
                filling.target = to_boundary.min(usize::try_from(left).unwrap_or(usize::MAX));
                filling.filled = 0;
                buf
            }
        };
        let want = record.min(filling.target - filling.filled);
        let n = link
            .read(&mut buf[filling.filled..filling.filled + want])
            .map_err(|e| from_peer(link, e, || after(left)))?;
        if n == 0 {
            return Err(from_peer(link, io::ErrorKind::UnexpectedEof.into(), || after(left)));
        }
        filling.filled += n;
        record -= n;
        left -= n as u64;
        at += n as u64;
        link.moved(n as u64);
        if filling.filled == filling.target {
            if let Some(buf) = filling.buf.take() {
                store.store(buf, filling.filled);
            }
        }
    }
    Ok(Ok(()))
}
