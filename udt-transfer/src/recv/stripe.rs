//! A striped file's data on the session's connection: where it starts (as for a whole file,
//! the same resume proof), the ranges this connection carries, the end and the hash; the
//! ranges the joined connections carry meanwhile ([`super::member`]) go into the same
//! temporary file through [`Striped`], hashed in file order as they come
//! ([`super::order`]). Once every byte of `[start, size)` is written, what the in-order hash
//! could not take is read back, and the file is committed as any other.
//!
//! Invariants: every range is reserved with [`Striped::reserve`] (inside the file, over no
//! other) before its bytes are read, and written with a positioned write at its offset, never
//! past the announced size; the hash covers every byte of the file once, in order (from the
//! ranges' buffers, or read back), and is compared only after the last range; when the
//! transfer fails (a connection lost, the sender stopped) the temporary file
//! is cut to the bytes written without a hole from its start and kept for a resume, which
//! goes on from there like any other.

use std::io::{self, Read, Seek};
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::data::{store_verified, Stored, Verified};
use super::join::{OpenFile, Reserved, Striped};
use super::prepare::Target;
use super::session::{from_peer, Failure};
use crate::landing::Temp;
use crate::link::Link;
use crate::protocol::{self, AbortScope, FileHeader, RangeRecord, Start, CHUNK, HASH_LEN};
use crate::{Cancel, Error};

/// How long a failing file waits for the ranges being written before its part is cut.
const SETTLE_LIMIT: Duration = Duration::from_secs(2);

/// Receive one range of `len` bytes of entry `index` at `offset` from `link` into its file;
/// a range that does not fit is a protocol error (the caller ends the transfer).
pub fn receive_range(
    link: &mut Link<'_>,
    striped: &Striped,
    (index, offset, len): (u32, u64, u32),
    buf: &mut Vec<u8>,
    idle: Option<Duration>,
) -> Result<(), Failure> {
    let reserved = match striped.reserve(index, offset, len, idle) {
        Ok(reserved) => reserved,
        Err(why) if striped.is_over() => return Err(Failure::Peer(Error::Protocol(why))),
        Err(why) => return Err(Failure::Here(Error::Protocol(format!("protocol error: {why}")))),
    };
    let n = len as usize;
    if let Err(e) = link.read_exact(&mut buf[..n]) {
        striped.settle(index, offset, len, false, None);
        return Err(from_peer(link, e, || format!("in a range of entry {index}")));
    }
    let error = match reserved {
        Reserved::Write(file) => {
            let error = file.write_all_at(&buf[..n], offset).err().map(|e| e.to_string());
            // Hashed while the range is still reserved: the file is complete only once its
            // ranges are written and hashed (or left to be read back).
            striped.hash_in_order(index, offset, buf, n);
            error
        }
        Reserved::Discard => None,
    };
    striped.settle(index, offset, len, true, error);
    Ok(())
}

/// Read this connection's range records of entry `index` up to its end, then the sender's
/// hash (returned). The inner error is the sender's abort of this file.
fn own_ranges(
    link: &mut Link<'_>,
    striped: &Striped,
    index: u32,
    idle: Option<Duration>,
) -> Result<Result<[u8; HASH_LEN], String>, Failure> {
    let mut buf = vec![0u8; CHUNK];
    loop {
        let record =
            protocol::read_range(link).map_err(|e| from_peer(link, e, || "in a striped file".into()))?;
        match record {
            RangeRecord::Range { len, index: i, offset } if i == index => {
                receive_range(link, striped, (index, offset, len), &mut buf, idle)?;
                // What every connection received is told to this connection's observer.
                let moved = striped.take_moved();
                if moved > 0 {
                    link.moved(moved);
                }
            }
            RangeRecord::Range { index: i, .. } => {
                return Err(Failure::Here(Error::Protocol(format!(
                    "a range of entry {i} in the data of entry {index}"
                ))))
            }
            RangeRecord::End => {
                let mut hash = [0u8; HASH_LEN];
                link.read_exact(&mut hash)
                    .map_err(|e| from_peer(link, e, || "before the file's hash".into()))?;
                return Ok(Ok(hash));
            }
            RangeRecord::Abort(AbortScope::File, msg) => {
                return Ok(Err(format!("the sender gave it up: {}", protocol::display_name(&msg))))
            }
            RangeRecord::Abort(AbortScope::Session, msg) => {
                return Err(Failure::Peer(Error::SenderStopped(protocol::display_name(&msg))))
            }
        }
    }
}

/// Receive the striped data of accepted entry `index` (after its tag and index) and store the
/// file if its hash matches. The outer error ends the session; the inner one is this file's
/// failure, for the sender.
pub fn receive_striped(
    link: &mut Link<'_>,
    striped: &Arc<Striped>,
    (index, fh, path): (u32, &FileHeader, &str),
    target: Target,
    force: bool,
    idle: Option<Duration>,
) -> Result<Result<Stored, String>, Failure> {
    let Target { held, _claim, dest, mut temp, .. } = target;
    temp.armed = true;
    let start =
        protocol::read_start(link).map_err(|e| from_peer(link, e, || "before the file's data".into()))?;
    let offset = start.offset();
    let hasher = match (start, held) {
        (Start::Whole, _) => blake3::Hasher::new(),
        (Start::Resume { offset, prefix_hash }, Some(held)) if offset == held.len => {
            if blake3::Hash::from_bytes(prefix_hash) != held.hasher.finalize() {
                discard(link, striped, index, idle)?;
                return Ok(Err(format!(
                    "the sender's first {offset} bytes differ from the part of this file the receiver \
                     held (another source, or the file changed): the part is discarded; send the \
                     file again to send it whole"
                )));
            }
            *held.hasher
        }
        (Start::Resume { offset, .. }, _) => {
            return Err(Failure::Here(Error::Protocol(format!(
                "the sender starts at byte {offset}, which the receiver did not offer"
            ))))
        }
    };
    let opened = temp.spot.open().and_then(|dir| temp.open_read_write(&dir).map(|file| (dir, file)));
    let opened = opened.and_then(|(dir, file)| {
        file.set_len(offset).map_err(|e| format!("cannot prepare the temporary file: {e}"))?;
        let writer = file.try_clone().map_err(|e| format!("cannot prepare the temporary file: {e}"))?;
        Ok((dir, file, writer))
    });
    let (dir, mut file, writer) = match opened {
        Ok(x) => x,
        Err(msg) => {
            tracing::warn!("{}: {msg}", protocol::display_name(path));
            discard(link, striped, index, idle)?;
            return Ok(Err(msg));
        }
    };
    striped
        .open_file(index, writer, (offset, fh.size), hasher)
        .map_err(|why| Failure::Here(Error::Protocol(why)))?;
    let began = Instant::now();
    link.data_started(path, fh.size - offset);
    // A joined connection that fails ends the wait for this one's next record.
    let outer = link.cancel().clone();
    let (over, stop) = (Arc::clone(striped), outer.clone());
    link.set_cancel(Cancel::from_fn(move || stop.requested() || over.is_over()));
    let outcome = own_ranges(link, striped, index, idle);
    link.set_cancel(outer);
    let outcome = match (outcome, striped.why_over()) {
        (Err(_), Some(why)) if !link.cancelled() => Err(Failure::Here(Error::Protocol(why))),
        (outcome, _) => outcome,
    };
    let complete = match outcome {
        Ok(Ok(expected)) => {
            let cancel = link.cancel().clone();
            let (cancelled, mut moved) = (|| cancel.requested(), |n| link.moved(n));
            let complete = striped.wait_complete(index, idle, &cancelled, &mut moved);
            complete.map(|open| (expected, open)).map_err(|why| {
                let failure = if link.cancelled() {
                    Failure::Here(Error::Interrupted)
                } else {
                    Failure::Here(Error::Protocol(why.clone()))
                };
                striped.fail(&why);
                failure
            })
        }
        Ok(Err(msg)) => {
            link.data_ended();
            striped.close_file(index, SETTLE_LIMIT);
            return Ok(Err(msg));
        }
        Err(failure) => Err(failure),
    };
    link.data_ended();
    let (expected, open) = match complete {
        Ok(x) => x,
        Err(failure) => {
            striped.fail("the transfer failed");
            keep_part(striped.close_file(index, SETTLE_LIMIT), &file, &mut temp);
            return Err(failure);
        }
    };
    let took = began.elapsed();
    // What the in-order hash could not take is read back.
    let Some((hasher, hashed)) = open.order.finish() else {
        return Err(Failure::Here(Error::Protocol("internal error: a striped file's hash was lost".into())));
    };
    tracing::debug!(read_back = fh.size - hashed, "a striped file's ranges are in");
    let hash = hash_from(&mut file, hashed, fh.size, hasher)
        .map_err(|e| Failure::Here(Error::io("cannot read back the temporary file", e)))?;
    let verified = Verified { hash, expected, write_error: open.write_error };
    Ok(store_verified(fh, &mut temp, &dir, file, &dest, verified, force)
        .map(|()| (took, hash, fh.size - offset)))
}

/// Read the rest of `file` from `offset` into `hasher` (which covers the bytes before it).
fn hash_from(
    file: &mut std::fs::File,
    offset: u64,
    size: u64,
    mut hasher: blake3::Hasher,
) -> io::Result<blake3::Hash> {
    file.seek(io::SeekFrom::Start(offset))?;
    hasher.update_reader(Read::take(&mut *file, size - offset))?;
    Ok(hasher.finalize())
}

/// The transfer broke off in a striped file: keep the bytes written without a hole from its
/// start (cut there) for a resume.
fn keep_part(open: Option<OpenFile>, file: &std::fs::File, temp: &mut Temp<'_>) {
    let Some(open) = open else { return };
    if file.set_len(open.prefix_end()).and_then(|()| file.sync_data()).is_ok() {
        temp.keep_for_resume();
    }
}

/// Read a striped file's ranges on this connection and throw them away, as those on the
/// joined connections: the file is not taken.
fn discard(
    link: &mut Link<'_>,
    striped: &Striped,
    index: u32,
    idle: Option<Duration>,
) -> Result<(), Failure> {
    striped.open_discard(index).map_err(|why| Failure::Here(Error::Protocol(why)))?;
    own_ranges(link, striped, index, idle).map(drop)
}
