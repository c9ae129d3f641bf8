//! Protocol I/O on a UDT stream in short slices: every blocking read or write of `send` and
//! `recv` wakes up every [`POLL`] to notice a Ctrl-C, an expired deadline (the greeting's, the
//! header's), and to let the progress display say that the transfer has stalled.

use std::io::{self, Read, Write};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use udt::UdtStream;

use crate::interrupt;
use crate::progress::FileProgress;

/// How long one slice of a blocking call waits.
pub const POLL: Duration = Duration::from_millis(100);

/// A connection with polling reads and writes.
pub struct Link {
    stream: UdtStream,
    /// Reads and writes fail with `TimedOut` after this instant; the text says what was awaited.
    deadline: Option<(Instant, String)>,
    /// The file being moved, told when nothing moves.
    pub progress: Option<FileProgress>,
    /// Reads fail with `TimedOut` after this long without a byte (`None`: never).
    idle: Option<Duration>,
}

impl Link {
    /// Wrap `stream` (its read and write timeouts become [`POLL`]).
    pub fn new(mut stream: UdtStream) -> Link {
        stream.set_read_timeout(Some(POLL));
        stream.set_write_timeout(Some(POLL));
        Link { stream, deadline: None, progress: None, idle: None }
    }

    /// Fail reads and writes that have not completed within `limit` (`None`: no limit), with
    /// an error saying `what` did not come.
    pub fn set_deadline(&mut self, limit: Option<Duration>, what: &str) {
        self.deadline = limit.map(|l| (Instant::now() + l, what.to_string()));
    }

    /// Fail a read that waits `limit` without a byte (`None`: wait as long as the peer is
    /// alive): a peer that keeps the connection up but sends nothing.
    pub fn set_idle_limit(&mut self, limit: Option<Duration>) {
        self.idle = limit;
    }

    /// One slice elapsed with nothing done: an interrupt or the deadline ends the wait.
    fn waited(&mut self) -> io::Result<()> {
        if interrupt::requested() {
            return Err(interrupt::error());
        }
        if let Some((deadline, what)) = &self.deadline {
            if Instant::now() >= *deadline {
                return Err(io::Error::new(io::ErrorKind::TimedOut, format!("no {what} in time")));
            }
        }
        if let Some(p) = &mut self.progress {
            p.idle();
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

    /// Write `buf` whatever the interrupt flag says, for at most `limit` (a last word to the
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

impl Read for Link {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if interrupt::requested() {
            return Err(interrupt::error());
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

impl Write for Link {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if interrupt::requested() {
            return Err(interrupt::error());
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

/// Parse `--peer-timeout SECS`: positive seconds (fractions allowed), at most a day.
pub fn parse_peer_timeout(s: &str) -> Result<Duration, String> {
    let secs: f64 = s.parse().map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err(format!("`{s}` is not between 0 and 86400 seconds"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `options` with the peer declared lost after `timeout` of silence, if given (otherwise the
/// tool's default, `net::PEER_IDLE_TIMEOUT`, stays).
pub fn with_peer_timeout(mut options: udt::Options, timeout: Option<Duration>) -> udt::Options {
    if let Some(t) = timeout {
        options.set_peer_idle_timeout(Some(t));
    }
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_timeouts() {
        assert_eq!(parse_peer_timeout("2.5"), Ok(Duration::from_millis(2500)));
        assert!(parse_peer_timeout("0").is_err());
        assert!(parse_peer_timeout("soon").is_err());
        let o = with_peer_timeout(udt::Options::default(), Some(Duration::from_secs(3)));
        assert_eq!(o.config.peer_idle_timeout, Some(Duration::from_secs(3)));
    }
}
