//! Protocol I/O on a UDT stream in short slices: every blocking read or write of a session
//! wakes up every [`POLL`] to notice a stop request ([`Cancel`]), an expired deadline (the
//! greeting's, the header's) or a silent peer, and to tell the observer that the file being
//! moved is idle.
//!
//! Invariant: once a stop is requested every read and write fails, except
//! [`Link::write_urgent`], the last word to the peer.

use std::io::{self, Read, Write};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use udt::UdtStream;

use crate::{Cancel, Event, Observer};

/// How long one slice of a blocking call waits.
pub const POLL: Duration = Duration::from_millis(100);

/// A connection with polling reads and writes, and the observer of its session.
pub(crate) struct Link<'o> {
    stream: UdtStream,
    /// Reads and writes fail with `TimedOut` after this instant; the text says what was awaited.
    deadline: Option<(Instant, String)>,
    /// Reads fail with `TimedOut` after this long without a byte (`None`: never).
    idle: Option<Duration>,
    cancel: Cancel,
    observer: &'o mut dyn Observer,
    /// A file's data is moving: waits are told to the observer.
    moving: bool,
}

impl<'o> Link<'o> {
    /// Wrap `stream` (its read and write timeouts become [`POLL`]).
    pub fn new(mut stream: UdtStream, cancel: Cancel, observer: &'o mut dyn Observer) -> Link<'o> {
        stream.set_read_timeout(Some(POLL));
        stream.set_write_timeout(Some(POLL));
        Link { stream, deadline: None, idle: None, cancel, observer, moving: false }
    }

    /// Tell the observer.
    pub fn event(&mut self, event: Event<'_>) {
        self.observer.event(event);
    }

    /// A file's data starts moving (`bytes` of it this time).
    pub fn data_started(&mut self, path: &str, bytes: u64) {
        self.moving = true;
        self.observer.event(Event::DataStarted { path, bytes });
    }

    /// `n` more bytes of the current file moved (told only between [`Link::data_started`] and
    /// [`Link::data_ended`]: data read to stay in step is not a file moving).
    pub fn moved(&mut self, n: u64) {
        if self.moving {
            self.observer.event(Event::Moved { bytes: n });
        }
    }

    /// The current file's data stopped moving (once; later calls do nothing).
    pub fn data_ended(&mut self) {
        if std::mem::take(&mut self.moving) {
            self.observer.event(Event::DataEnded);
        }
    }

    /// Whether a stop was asked for.
    pub fn cancelled(&self) -> bool {
        self.cancel.requested()
    }

    /// Fail reads and writes that have not completed within `limit` (`None`: no limit), with
    /// an error saying `what` did not come.
    pub fn set_deadline(&mut self, limit: Option<Duration>, what: &str) {
        self.deadline = limit.map(|l| (Instant::now() + l, what.to_string()));
    }

    /// What stops reads and writes.
    pub fn cancel(&self) -> &Cancel {
        &self.cancel
    }

    /// Stop reads and writes on `cancel` from now on (instead of the one given at first).
    pub fn set_cancel(&mut self, cancel: Cancel) {
        self.cancel = cancel;
    }

    /// Fail a read that waits `limit` without a byte (`None`: wait as long as the peer is
    /// alive): a peer that keeps the connection up but sends nothing.
    pub fn set_idle_limit(&mut self, limit: Option<Duration>) {
        self.idle = limit;
    }

    /// One slice elapsed with nothing done: a stop request or the deadline ends the wait.
    fn waited(&mut self) -> io::Result<()> {
        if self.cancel.requested() {
            return Err(Cancel::error());
        }
        if let Some((deadline, what)) = &self.deadline {
            if Instant::now() >= *deadline {
                return Err(io::Error::new(io::ErrorKind::TimedOut, format!("no {what} in time")));
            }
        }
        if self.moving {
            self.observer.event(Event::Idle);
        }
        Ok(())
    }

    /// Write all of `buf`; on failure, also how much of it went (the rest must follow before
    /// anything else, or the peer's framing is lost).
    pub fn write_tracked(&mut self, buf: &[u8]) -> Result<(), (io::Error, usize)> {
        let mut done = 0;
        while done < buf.len() {
            match self.write(&buf[done..]) {
                Ok(0) => return Err((io::Error::from(io::ErrorKind::WriteZero), done)),
                Ok(n) => done += n,
                Err(e) => return Err((e, done)),
            }
        }
        Ok(())
    }

    /// Write `buf` whatever a stop request says, for at most `limit` (a last word to the
    /// peer); returns whether all of it went.
    pub fn write_urgent(&mut self, mut buf: &[u8], limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while !buf.is_empty() {
            match (&self.stream).write(buf) {
                Ok(n) => buf = &buf[n..],
                Err(e) if is_slice_timeout(&e) && Instant::now() < deadline => {}
                Err(_) => return false,
            }
        }
        true
    }

    /// The connection, to be used without this wrapper.
    pub fn into_stream(self) -> UdtStream {
        self.stream
    }

    /// Close, telling the peer (its reads end), waiting at most `limit` for it to acknowledge
    /// what is still buffered.
    pub fn close(self, limit: Duration) {
        close_within(self.stream, limit);
    }
}

/// Close `stream` in the background and wait for it at most `limit`: an error path must not
/// hang on a peer that no longer answers.
pub fn close_within(stream: UdtStream, limit: Duration) {
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new().name("close".into()).spawn(move || {
        let _ = tx.send(stream.close());
    });
    match spawned {
        Ok(_) => match rx.recv_timeout(limit) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::debug!("close: {e}"),
            Err(_) => tracing::debug!("close: still lingering after {limit:?}"),
        },
        Err(e) => tracing::debug!("cannot start the closing thread: {e}"),
    }
}

/// Whether `e` is a poll slice running out.
fn is_slice_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock)
}

impl Read for Link<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.cancel.requested() {
            return Err(Cancel::error());
        }
        let started = Instant::now();
        loop {
            match (&self.stream).read(buf) {
                Err(e) if is_slice_timeout(&e) => {
                    self.waited()?;
                    if let Some(idle) = self.idle.filter(|&idle| started.elapsed() >= idle) {
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!(
                                "nothing came from the peer for {} s (--idle-timeout)",
                                idle.as_secs_f64()
                            ),
                        ));
                    }
                }
                other => return other,
            }
        }
    }
}

impl Write for Link<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.cancel.requested() {
            return Err(Cancel::error());
        }
        loop {
            match (&self.stream).write(buf) {
                Err(e) if is_slice_timeout(&e) => self.waited()?,
                other => return other,
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
