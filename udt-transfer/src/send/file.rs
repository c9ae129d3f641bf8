//! One file's data on the sending side: where it starts (from the beginning, or where the
//! receiver's part ends, with our proof), its chunks (read and hashed ahead of the connection
//! by [`super::read_ahead`]), and its hash or an abort record.
//!
//! Invariants: the file is opened only once the receiver's go-ahead came (one open file at a
//! time, whatever the tree); a failure on this side (it cannot be opened, it shrank, a read
//! failed) is sent as a file abort record and the session goes on; a stop request in the
//! middle of the data sends a session abort record (the rest of a chunk written first, so the
//! receiver stays in step) and ends the session.

use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::time::{Duration, Instant};

use super::read_ahead::{Piece, ReadAhead};
use super::stripe::{Broke, Members, STRIPE_MIN};
use super::{failed, io_error, SendReport, ERROR_LIMIT};
use crate::link::Link;
use crate::protocol::{self, AbortScope, Kind, Start, Status, CHUNK};
use crate::tree::Entry;
use crate::{Error, Event};

/// How a file's data went on this side.
pub(super) struct Sent {
    pub took: Duration,
    /// Bytes of the file sent this time (less than its size when it resumed).
    pub bytes: u64,
    pub hash: blake3::Hash,
    /// Why this side gave the file up (an abort record was sent instead of the hash).
    pub failure: Option<String>,
    /// Whether only the proof of the whole file went (the receiver holds one of its size:
    /// [`Status::Have`]); its verdict is then `skip` or `error`.
    pub compared: bool,
}

/// Which go-ahead a file had.
#[derive(Clone, Copy)]
enum AnswerKind {
    /// [`Status::Have`]: only the proof goes.
    Have,
    /// Any other.
    Other,
}

/// Where to start sending `file` when the receiver holds `offset` bytes of it: there, with the
/// hash of our first `offset` bytes as proof (the hasher goes on from them), if we have that
/// many; else from the start.
fn resume_point(mut file: &File, offset: u64, size: u64) -> io::Result<(Start, blake3::Hasher)> {
    let mut hasher = blake3::Hasher::new();
    if offset == 0 || offset > size {
        return Ok((Start::Whole, hasher));
    }
    let mut left = offset;
    let mut buf = vec![0u8; CHUNK];
    while left > 0 {
        let want = usize::try_from(left).unwrap_or(usize::MAX).min(CHUNK);
        let n = file.read(&mut buf[..want])?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        left -= n as u64;
    }
    if left == 0 {
        return Ok((Start::Resume { offset, prefix_hash: *hasher.finalize().as_bytes() }, hasher));
    }
    file.seek(io::SeekFrom::Start(0))?;
    Ok((Start::Whole, blake3::Hasher::new()))
}

/// Act on the receiver's `answer` to entry `i`: nothing for a directory or a refusal
/// (reported), else the file's data (from where the receiver's part ends, if it offered one,
/// with our proof), whose verdict is then expected (returned). An error is fatal to the
/// connection.
pub(super) fn send_file(
    link: &mut Link<'_>,
    (i, members): (usize, Option<&Members>),
    src: &Entry,
    answer: Status,
    report: &mut SendReport,
) -> Result<Option<Sent>, Error> {
    let answer_kind = if answer == Status::Have { AnswerKind::Have } else { AnswerKind::Other };
    let held = match answer {
        Status::Ok => None,
        Status::Resume { offset } => Some(offset),
        // The proof of the whole file: a resume from its end.
        Status::Have => Some(src.size),
        Status::Skip(reason) => {
            report.skipped += 1;
            link.event(Event::Unchanged { path: &src.path, reason: &reason });
            return Ok(None);
        }
        Status::Error(msg) => {
            failed(link, report, &src.path, &format!("refused by the receiver: {msg}"));
            return Ok(None);
        }
        Status::Abort(msg) => return Err(Error::ReceiverStopped(msg)),
        Status::Wait(_) | Status::Deleted(_) => {
            return Err(Error::Protocol(
                "protocol error: a `wait` or `deleted` status in the middle of the session".into(),
            ))
        }
    };
    if src.kind == Kind::Dir {
        return Ok(None);
    }
    // A large file goes in ranges over every connection of a striped transfer (from where the
    // receiver's part ends, as any other); a proof of the whole file goes as Data.
    let striped = members.filter(|_| {
        !matches!(answer_kind, AnswerKind::Have) && src.size - held.unwrap_or(0).min(src.size) >= STRIPE_MIN
    });
    let tag = if striped.is_some() { protocol::Tag::Striped } else { protocol::Tag::Data };
    protocol::write_message_tag(link, tag).map_err(|e| io_error(link, "sending data", e))?;
    link.write_all(&(i as u32).to_le_bytes()).map_err(|e| io_error(link, "sending data", e))?;

    // Opened only now: a tree of any size holds one file open at a time.
    let opened = File::open(&src.source).map_err(|e| format!("cannot open it: {e}"));
    let mut local_failure = opened.as_ref().err().cloned();
    let (start, hasher) = match (&opened, held) {
        (Ok(file), Some(offset)) => match resume_point(file, offset, src.size) {
            Ok(x) => x,
            Err(e) => {
                local_failure = Some(format!("reading the file failed: {e}"));
                (Start::Whole, blake3::Hasher::new())
            }
        },
        _ => (Start::Whole, blake3::Hasher::new()),
    };
    let compared = matches!(answer_kind, AnswerKind::Have);
    if let (Start::Resume { offset, .. }, false) = (start, compared) {
        link.event(Event::Resuming { path: &src.path, offset });
    }
    if let Err(e) = protocol::write_start(link, &start) {
        return Err(write_failed(link, e));
    }
    let start = start.offset();
    let began = Instant::now();
    if !compared {
        link.data_started(&src.path, src.size - start);
    }
    let file = opened.ok();
    let hasher = match (&file, &local_failure, striped) {
        (Some(file), None, Some(members)) => {
            match members.send_ranges(link, file, (i as u32, start, src.size), hasher) {
                Ok((hasher, failure)) => {
                    local_failure = failure;
                    hasher
                }
                Err(Broke::Link(e)) => return Err(write_failed(link, e)),
                Err(Broke::Interrupted) => return Err(stop_session(link, "the sender was interrupted")),
                Err(Broke::Member(why)) => {
                    link.data_ended();
                    return Err(Error::ConnectionLost(why));
                }
            }
        }
        (Some(file), None, None) => std::thread::scope(|scope| {
            let mut chunks = ReadAhead::start(scope, file, start, src.size, hasher);
            send_chunks(link, &mut chunks, &mut local_failure)?;
            Ok(chunks.finish())
        })?,
        _ => hasher,
    };
    let sent = match (&local_failure, striped) {
        (Some(reason), _) => protocol::write_abort(link, AbortScope::File, reason),
        (None, None) => link.write_all(hasher.finalize().as_bytes()),
        (None, Some(_)) => {
            link.write_all(&protocol::RANGE_END).and_then(|()| link.write_all(hasher.finalize().as_bytes()))
        }
    };
    if let Err(e) = sent {
        return Err(write_failed(link, e));
    }
    let took = began.elapsed();
    if !compared {
        link.data_ended();
    }
    Ok(Some(Sent {
        took,
        bytes: src.size - start,
        hash: hasher.finalize(),
        failure: local_failure,
        compared,
    }))
}

/// Send the chunk records of `chunks` until they end; this side's failure goes to
/// `local_failure` (the caller sends the abort record). An error ends the session.
fn send_chunks(
    link: &mut Link<'_>,
    chunks: &mut ReadAhead<'_>,
    local_failure: &mut Option<String>,
) -> Result<(), Error> {
    loop {
        let (buf, n) = match chunks.next() {
            Piece::Chunk(buf, n) => (buf, n),
            Piece::Failed(reason) => {
                *local_failure = Some(reason);
                return Ok(());
            }
            Piece::End => return Ok(()),
        };
        if link.cancelled() {
            return Err(stop_session(link, "the sender was interrupted"));
        }
        if let Err((e, written)) = link.write_tracked(&buf[..4 + n]) {
            if link.cancelled() && link.write_urgent(&buf[written..4 + n], ERROR_LIMIT) {
                return Err(stop_session(link, "the sender was interrupted"));
            }
            return Err(write_failed(link, e));
        }
        chunks.recycle(buf);
        link.moved(n as u64);
    }
}

/// Writing to the receiver failed: a stop request (the receiver will see the connection
/// close), or the receiver stopped (find its reason among what it sent last).
fn write_failed(link: &mut Link<'_>, e: io::Error) -> Error {
    link.data_ended();
    if link.cancelled() {
        return Error::Interrupted;
    }
    link.set_deadline(Some(ERROR_LIMIT), "reason from the receiver");
    while let Ok(status) = Status::read(link) {
        if let Status::Abort(msg) | Status::Error(msg) = status {
            return Error::ReceiverStopped(msg);
        }
    }
    Error::io("sending to the receiver", e)
}

/// In the middle of a file's data: tell the receiver the session ends, and why.
fn stop_session(link: &mut Link<'_>, reason: &str) -> Error {
    link.data_ended();
    let mut record = Vec::new();
    if protocol::write_abort(&mut record, AbortScope::Session, reason).is_ok() {
        link.write_urgent(&record, ERROR_LIMIT);
    }
    Error::Interrupted
}
