//! Striping on the sending side (`udt send -P N`): the transfer's other connections
//! ([`Members`]), joined once the receiver accepted the session, and a large file's bytes as
//! ranges spread over all of them.
//!
//! One reading thread reads a striped file in order, hashes it (the whole file's BLAKE3, as for
//! a file sent whole) and queues its ranges (at most [`CHUNK`] bytes, ending at multiples of
//! it); every connection, the session's included, takes the next range from the one queue when
//! it is free to write, so a slower connection carries less. The session's connection then
//! sends the end record and the hash (or an abort record).
//!
//! Invariants: each range is queued once and written once, whole, with its head; the queue
//! holds at most [`DEPTH_PER_CONNECTION`] buffers per connection, allocated once per session;
//! a joined connection that fails ends the transfer with a reason naming it; the joined
//! connections send their end record and close only after the session's last answer (every
//! range was received by then), or close at once after a failure.

use std::collections::VecDeque;
use std::fmt;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use udt::UdtStream;

use super::{ERROR_LIMIT, GREETING_TIMEOUT};
use crate::link::{close_within, Link, POLL};
use crate::protocol::{self, Greeting, Header, Status, CHUNK, FLAG_JOIN, RANGE_HEAD_LEN, TOKEN_LEN, VERSION};
use crate::{Cancel, Error, Ignore};

/// Buffers of ranges in flight per connection, at most.
pub const DEPTH_PER_CONNECTION: usize = 2;
/// Files of at least this many bytes to send are striped; smaller ones go whole on the
/// session's connection.
pub const STRIPE_MIN: u64 = 4 * CHUNK as u64;
/// How long the joined connections may take to say their end and close.
const CLOSE_LIMIT: Duration = Duration::from_secs(10);

/// How to stripe a transfer over several connections ([`crate::SendOptions::striping`]).
#[derive(Clone)]
pub struct Striping {
    /// The random token that ties the connections together (draw it from the OS's random
    /// source: whoever knows it can join the transfer from the same address).
    pub token: [u8; TOKEN_LEN],
    /// Connections in all, the session's included (2 to [`protocol::MAX_STRIPES`]).
    pub connections: u16,
    /// Opens one more connection to the receiver (as the session's was: same address, same
    /// credential).
    pub connect: Arc<dyn Fn() -> io::Result<UdtStream> + Send + Sync>,
}

impl fmt::Debug for Striping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Striping").field("connections", &self.connections).finish_non_exhaustive()
    }
}

/// Why a striped file's sending broke off.
pub enum Broke {
    /// Writing to the session's connection failed.
    Link(io::Error),
    /// A stop was asked for, between two records.
    Interrupted,
    /// A joined connection failed (which, and why).
    Member(String),
}

/// A range ready to write: the record's head and bytes, `RANGE_HEAD_LEN + len` of `buf`.
struct Job {
    buf: Vec<u8>,
    len: usize,
}

/// What the connections share.
struct Work {
    state: Mutex<WorkState>,
    changed: Condvar,
}

struct WorkState {
    jobs: VecDeque<Job>,
    free: Vec<Vec<u8>>,
    allocated: usize,
    pool: usize,
    /// A file's reading thread is running.
    reading: bool,
    /// The session's file stopped early: the reading thread stops.
    halt: bool,
    /// No more files: the joined connections finish.
    finished: bool,
    /// Why a joined connection failed.
    failed: Option<String>,
    /// Bytes the joined connections wrote and the session's thread has not told yet.
    moved: u64,
}

impl Work {
    fn lock(&self) -> MutexGuard<'_, WorkState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'a>(&self, state: MutexGuard<'a, WorkState>) -> MutexGuard<'a, WorkState> {
        self.changed.wait_timeout(state, POLL).unwrap_or_else(|e| e.into_inner()).0
    }

    fn recycle(&self, buf: Vec<u8>) {
        self.lock().free.push(buf);
        self.changed.notify_all();
    }

    fn fail(&self, why: String) {
        self.lock().failed.get_or_insert(why);
        self.changed.notify_all();
    }
}

/// The joined connections of a striped transfer, each written by a thread of its own.
pub struct Members {
    work: Arc<Work>,
    threads: Vec<JoinHandle<()>>,
}

impl Members {
    /// Open and join the transfer's other connections (after the receiver accepted the
    /// session and its token), and start their writing threads.
    pub fn join(striping: &Striping, cancel: &Cancel) -> Result<Members, Error> {
        let count = striping.connections;
        let joined: Vec<Result<UdtStream, Error>> = std::thread::scope(|scope| {
            let handles: Vec<_> =
                (1..count).map(|k| scope.spawn(move || join_one(striping, k, cancel))).collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
        });
        let pool = DEPTH_PER_CONNECTION * usize::from(count);
        let work = Arc::new(Work {
            state: Mutex::new(WorkState {
                jobs: VecDeque::new(),
                free: Vec::new(),
                allocated: 0,
                pool,
                reading: false,
                halt: false,
                finished: false,
                failed: None,
                moved: 0,
            }),
            changed: Condvar::new(),
        });
        let mut members = Members { work, threads: Vec::new() };
        let mut streams = Vec::new();
        for result in joined {
            match result {
                Ok(stream) => streams.push(stream),
                Err(e) => {
                    for stream in streams {
                        close_within(stream, ERROR_LIMIT);
                    }
                    return Err(e);
                }
            }
        }
        for (k, stream) in (1u16..).zip(streams) {
            let (work, cancel) = (Arc::clone(&members.work), cancel.clone());
            let thread = std::thread::Builder::new()
                .name(format!("udt-stripe-{k}"))
                .spawn(move || write_member(k, stream, &work, &cancel))
                .map_err(|e| Error::io("starting a connection's thread", e))?;
            members.threads.push(thread);
        }
        Ok(members)
    }

    /// Why a joined connection failed, if one did.
    pub fn failure(&self) -> Option<String> {
        self.work.lock().failed.clone()
    }

    /// A stop request that also fires once a joined connection failed (for the session's
    /// connection, so that no wait of its outlasts the transfer).
    pub fn cancel_with(&self, outer: &Cancel) -> Cancel {
        let (work, outer) = (Arc::clone(&self.work), outer.clone());
        Cancel::from_fn(move || outer.requested() || work.lock().failed.is_some())
    }

    /// The session is over: the joined connections send their end and close (`ok`), or close
    /// at once.
    pub fn finish(mut self, ok: bool) {
        {
            let mut state = self.work.lock();
            state.finished = true;
            if !ok {
                state.failed.get_or_insert_with(|| "the transfer failed".into());
            }
        }
        self.work.changed.notify_all();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }

    /// Send the bytes of `file` from `start` to `size` as ranges of entry `index` over every
    /// connection, `link` (the session's) included, continuing `hasher` (which covers the bytes
    /// before `start`). Returns the hash of the whole file and this side's failure (it shrank,
    /// a read failed): the caller sends the end and hash, or the abort record. An error ends
    /// the session.
    pub fn send_ranges(
        &self,
        link: &mut Link<'_>,
        file: &std::fs::File,
        (index, start, size): (u32, u64, u64),
        hasher: blake3::Hasher,
    ) -> Result<(blake3::Hasher, Option<String>), Broke> {
        {
            let mut state = self.work.lock();
            state.reading = true;
            state.halt = false;
        }
        std::thread::scope(|scope| {
            let reader = std::thread::Builder::new()
                .name("udt-read".into())
                .spawn_scoped(scope, || read_ranges(&self.work, file, (index, start, size), hasher))
                .map_err(|e| {
                    Broke::Link(io::Error::other(format!("cannot start the reading thread: {e}")))
                })?;
            let written = self.write_session_share(link);
            if written.is_err() {
                self.work.lock().halt = true;
                self.work.changed.notify_all();
            }
            let read = reader.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            written.map(|()| read)
        })
    }

    /// Write ranges to the session's connection until the file's are all taken.
    fn write_session_share(&self, link: &mut Link<'_>) -> Result<(), Broke> {
        loop {
            // The stop request is asked outside the lock: it takes it too.
            if link.cancelled() {
                return Err(match self.failure() {
                    Some(why) => Broke::Member(why),
                    None => Broke::Interrupted,
                });
            }
            let moved = std::mem::take(&mut self.work.lock().moved);
            if moved > 0 {
                link.moved(moved);
            }
            let job = {
                let mut state = self.work.lock();
                if let Some(why) = &state.failed {
                    return Err(Broke::Member(why.clone()));
                }
                match state.jobs.pop_front() {
                    Some(job) => job,
                    None if !state.reading => return Ok(()),
                    None => {
                        drop(self.work.wait(state));
                        continue;
                    }
                }
            };
            self.work.changed.notify_all();
            let record = &job.buf[..RANGE_HEAD_LEN + job.len];
            if let Err((e, written)) = link.write_tracked(record) {
                if link.cancelled() && link.write_urgent(&record[written..], ERROR_LIMIT) {
                    return Err(Broke::Interrupted);
                }
                return Err(Broke::Link(e));
            }
            link.moved(job.len as u64);
            self.work.recycle(job.buf);
        }
    }
}

impl Drop for Members {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            self.work.lock().failed.get_or_insert_with(|| "the transfer failed".into());
            self.work.changed.notify_all();
            for thread in self.threads.drain(..) {
                let _ = thread.join();
            }
        }
    }
}

/// Read the file's ranges in order into free buffers, hashing them, and queue them.
fn read_ranges(
    work: &Work,
    file: &std::fs::File,
    (index, start, size): (u32, u64, u64),
    mut hasher: blake3::Hasher,
) -> (blake3::Hasher, Option<String>) {
    let mut at = start;
    let failure = loop {
        if at >= size {
            break None;
        }
        let len = usize::try_from((size - at).min(CHUNK as u64 - at % CHUNK as u64)).unwrap_or(CHUNK);
        let Some(mut buf) = take_buffer(work) else { break None };
        let bytes = &mut buf[RANGE_HEAD_LEN..RANGE_HEAD_LEN + len];
        if let Err(e) = file.read_exact_at(bytes, at) {
            work.recycle(buf);
            break Some(if e.kind() == io::ErrorKind::UnexpectedEof {
                format!("the file shrank while being sent (less than {} of {size} bytes)", at + len as u64)
            } else {
                format!("reading the file failed after {at} bytes: {e}")
            });
        }
        hasher.update(bytes);
        buf[..RANGE_HEAD_LEN].copy_from_slice(&protocol::range_head(len, index, at));
        work.lock().jobs.push_back(Job { buf, len });
        work.changed.notify_all();
        at += len as u64;
    };
    work.lock().reading = false;
    work.changed.notify_all();
    (hasher, failure)
}

/// A free buffer, once one is; `None` when the file's sending stopped.
fn take_buffer(work: &Work) -> Option<Vec<u8>> {
    let mut state = work.lock();
    loop {
        if state.halt || state.failed.is_some() {
            return None;
        }
        if let Some(buf) = state.free.pop() {
            return Some(buf);
        }
        if state.allocated < state.pool {
            state.allocated += 1;
            return Some(vec![0u8; RANGE_HEAD_LEN + CHUNK]);
        }
        state = work.wait(state);
    }
}

/// The thread of joined connection `k`: ranges until the session is over, then its end record.
fn write_member(k: u16, mut stream: UdtStream, work: &Work, cancel: &Cancel) {
    stream.set_write_timeout(Some(POLL));
    let stop = || cancel.requested() || work.lock().failed.is_some();
    loop {
        let job = {
            let mut state = work.lock();
            loop {
                if state.failed.is_some() {
                    break Err(());
                }
                if let Some(job) = state.jobs.pop_front() {
                    break Ok(Some(job));
                }
                if state.finished {
                    break Ok(None);
                }
                state = work.wait(state);
            }
        };
        work.changed.notify_all();
        match job {
            Err(()) => break close_within(stream, ERROR_LIMIT),
            Ok(None) => {
                let _ = write_all(&stream, &protocol::RANGE_END, &stop);
                break close_within(stream, CLOSE_LIMIT);
            }
            Ok(Some(job)) => {
                if let Err(e) = write_all(&stream, &job.buf[..RANGE_HEAD_LEN + job.len], &stop) {
                    work.fail(format!("connection {k} of the striped transfer failed: {e}"));
                    break close_within(stream, ERROR_LIMIT);
                }
                work.lock().moved += job.len as u64;
                work.recycle(job.buf);
            }
        }
    }
}

/// Write all of `buf`, in slices of [`POLL`], until `stop` says so.
fn write_all(mut stream: &UdtStream, mut buf: &[u8], stop: &dyn Fn() -> bool) -> io::Result<()> {
    while !buf.is_empty() {
        match stream.write(buf) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if matches!(e.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock) => {
                if stop() {
                    return Err(io::Error::other("the transfer stopped"));
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Open connection `k` and join it to the transfer.
fn join_one(striping: &Striping, k: u16, cancel: &Cancel) -> Result<UdtStream, Error> {
    let count = striping.connections;
    let failed = |why: String| Error::JoinFailed { member: k, connections: count, why };
    let stream = (striping.connect)().map_err(|e| failed(format!("cannot connect: {e}")))?;
    let mut ignore = Ignore;
    let mut link = Link::new(stream, cancel.clone(), &mut ignore);
    link.set_deadline(Some(GREETING_TIMEOUT), "greeting from the receiver");
    match protocol::read_greeting(&mut link) {
        Ok(Greeting::Receiver(VERSION)) => {}
        Ok(other) => return Err(failed(format!("the peer greeted as {other:?}"))),
        Err(e) => return Err(failed(format!("no greeting: {e}"))),
    }
    let header = Header { version: VERSION, flags: FLAG_JOIN, file_count: 0 };
    let sent = link
        .write_all(&header.encode())
        .and_then(|()| protocol::write_message_tag(&mut link, protocol::Tag::Join))
        .and_then(|()| protocol::write_join(&mut link, &striping.token, k));
    if let Err(e) = sent {
        return Err(failed(format!("cannot send the join: {e}")));
    }
    let began = Instant::now();
    loop {
        match Status::read(&mut link) {
            Ok(Status::Ok) => break,
            Ok(Status::Wait(_)) if began.elapsed() < GREETING_TIMEOUT => {}
            Ok(Status::Error(why) | Status::Abort(why)) => return Err(failed(format!("refused: {why}"))),
            Ok(other) => return Err(failed(format!("an unexpected answer {other:?}"))),
            Err(e) => return Err(failed(format!("no answer: {e}"))),
        }
    }
    link.set_deadline(None, "");
    Ok(link.into_stream())
}
