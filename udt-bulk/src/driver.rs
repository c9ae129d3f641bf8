//! Runs a [`Session`] over real sockets: its control channels (connected TCP streams, set up by
//! the protocol's own connect or accept code) and one UDP socket, in one thread.
//!
//! The loop reads every socket without blocking, hands the bytes to the session, writes what it
//! polls, sends the datagrams that are due and then waits, on readiness (mio) or the session's
//! next timer, whichever comes first. Waits shorter than the poller's millisecond resolution are
//! spun with `yield_now`, so a paced sender keeps a gap of microseconds (a blast protocol's
//! sender busy-waits in the originals too).
//!
//! Invariants: datagrams from any address but the control peer's are dropped and counted;
//! control bytes the session wrote are flushed before [`run`] returns, within
//! [`RunOptions::flush_limit`]; every loop is bounded by the idle limit, the stop flag and the
//! session's own end.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mio::net::{TcpStream, UdpSocket};
use mio::{Events, Interest, Poll, Token};
use udt_proto::time::Instant;

use crate::session::{Counters, Event, Session};

/// The sockets a session runs over.
pub struct Sockets {
    /// Connected control channels, in the protocol's order.
    pub controls: Vec<std::net::TcpStream>,
    /// The data socket, bound.
    pub udp: std::net::UdpSocket,
    /// Where data datagrams go, when the protocol fixes it before the session starts (a session
    /// may name it later with [`Event::DataPeerPort`]).
    pub data_peer: Option<SocketAddr>,
}

/// How [`run`] behaves around the session.
pub struct RunOptions<'a> {
    /// Set (by a signal handler) to stop: [`run`] returns [`DriverError::Interrupted`].
    pub stop: Option<&'a AtomicBool>,
    /// Fail when nothing at all arrives from the peer for this long (at least the digest wait
    /// of [`crate::digest::wait`] once the session knows the file's size).
    pub idle_limit: Duration,
    /// How long to keep flushing control bytes after the session ended.
    pub flush_limit: Duration,
    /// Called about every `progress_every` with the session's counters.
    pub on_progress: Option<&'a mut dyn FnMut(&Counters)>,
    /// Interval of `on_progress`.
    pub progress_every: Duration,
}

impl Default for RunOptions<'_> {
    fn default() -> Self {
        RunOptions {
            stop: None,
            idle_limit: Duration::from_secs(30),
            flush_limit: Duration::from_secs(2),
            on_progress: None,
            progress_every: Duration::from_millis(200),
        }
    }
}

/// A session that ran to its end.
#[derive(Debug, Clone, Copy)]
pub struct Outcome {
    /// What the session counted.
    pub counters: Counters,
    /// From the start of [`run`] to the session's end.
    pub elapsed: Duration,
    /// Datagrams dropped because they came from another address than the peer's.
    pub foreign: u64,
    /// The sending end's BLAKE3 of the file, when it is one of ours (a receiving session's
    /// [`Session::peer_digest`]).
    pub peer_digest: Option<[u8; 32]>,
}

/// Why [`run`] did not complete.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// A socket failed (shown as the I/O error itself, once).
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The session failed, with its reason.
    #[error("{0}")]
    Failed(String),
    /// The stop flag was set.
    #[error("interrupted")]
    Interrupted,
    /// Nothing arrived from the peer for the idle limit.
    #[error("no word from the peer for {0:?}")]
    Idle(Duration),
}

const UDP: Token = Token(usize::MAX);
/// Datagrams sent per pass before the loop looks at the other sockets again.
const BATCH: usize = 256;
/// Datagrams read per pass at most. The control channels are read only once the UDP socket is
/// drained (or after [`CONTROL_EVERY`] passes that were not), so a control message sent after
/// a run of datagrams (RBUDP's end-of-blast marker) is not taken before them.
const READ_BATCH: usize = 4096;
/// Passes that may skip the control channels while datagrams keep coming.
const CONTROL_EVERY: u32 = 8;
/// UDP socket buffers asked for (the kernel may grant less: net.core.rmem_max, wmem_max).
const UDP_BUFFER: usize = 8 << 20;

/// Run `session` over `sockets` until it reports [`Event::Done`] (then flush) or fails.
pub fn run(
    session: &mut dyn Session,
    sockets: Sockets,
    options: RunOptions<'_>,
) -> Result<Outcome, DriverError> {
    let origin = std::time::Instant::now();
    run_from(session, sockets, options, origin)
}

/// [`run`] for a session whose time began at `origin` (its setup ran before, with
/// [`session_time`] from the same origin): its `now` goes on from there.
pub fn run_from(
    session: &mut dyn Session,
    sockets: Sockets,
    mut options: RunOptions<'_>,
    origin: std::time::Instant,
) -> Result<Outcome, DriverError> {
    let started = std::time::Instant::now();
    let clock = || session_time(origin);
    let mut poll = Poll::new()?;
    let mut events = Events::with_capacity(64);

    let peer_ip: Option<IpAddr> = match sockets.controls.first() {
        Some(c) => Some(c.peer_addr()?.ip()),
        None => sockets.data_peer.map(|a| a.ip()),
    };
    let mut data_peer = sockets.data_peer;
    let sock = socket2::SockRef::from(&sockets.udp);
    // Best effort: a smaller buffer only costs loss, which the protocols recover.
    let _ = sock.set_recv_buffer_size(UDP_BUFFER);
    let _ = sock.set_send_buffer_size(UDP_BUFFER);
    sockets.udp.set_nonblocking(true)?;
    let mut udp = UdpSocket::from_std(sockets.udp);
    poll.registry().register(&mut udp, UDP, Interest::READABLE)?;
    let mut controls = Vec::new();
    for (i, c) in sockets.controls.into_iter().enumerate() {
        c.set_nonblocking(true)?;
        c.set_nodelay(true)?;
        let mut c = TcpStream::from_std(c);
        poll.registry().register(&mut c, Token(i), Interest::READABLE)?;
        controls.push(Channel { stream: c, out: VecDeque::new(), open: true, writable_wanted: false });
    }

    let mut buf = vec![0u8; session.max_datagram().max(65536)];
    let mut out = vec![0u8; session.max_datagram()];
    let mut stalled: Option<usize> = None; // a datagram in `out` the socket refused for now
    let mut foreign = 0u64;
    let mut last_input = std::time::Instant::now();
    let mut last_progress = std::time::Instant::now();
    let mut ended: Option<Result<(), String>> = None;
    let mut ended_at = std::time::Instant::now();
    let mut control_skipped = 0u32;
    let mut idle_limit = options.idle_limit;

    loop {
        if options.stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            return Err(DriverError::Interrupted);
        }
        // Inputs.
        let mut drained = false;
        for _ in 0..READ_BATCH {
            match udp.recv_from(&mut buf) {
                Ok((n, from)) => {
                    if Some(from.ip()) != peer_ip {
                        foreign += 1;
                        continue;
                    }
                    last_input = std::time::Instant::now();
                    if ended.is_none() {
                        session.handle_datagram(clock(), &buf[..n]);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    drained = true;
                    break;
                }
                // An ICMP error (port unreachable) surfaces on the next receive: not fatal.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
                Err(e) => return Err(e.into()),
            }
        }
        let read_control = drained || control_skipped >= CONTROL_EVERY;
        control_skipped = if read_control { 0 } else { control_skipped + 1 };
        for (i, ch) in controls.iter_mut().enumerate().filter(|_| read_control) {
            while ch.open {
                match ch.stream.read(&mut buf) {
                    Ok(0) => {
                        ch.close(poll.registry());
                        session.handle_control_closed(clock(), i);
                    }
                    Ok(n) => {
                        last_input = std::time::Instant::now();
                        session.handle_control(clock(), i, &buf[..n]);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => {
                        ch.close(poll.registry());
                        session.handle_control_closed(clock(), i);
                    }
                }
            }
        }
        let now = clock();
        if session.poll_timeout().is_some_and(|t| t <= now) {
            session.handle_timeout(now);
        }

        // Outputs.
        while let Some((i, bytes)) = session.poll_control() {
            if let Some(ch) = controls.get_mut(i) {
                ch.out.extend(bytes);
            }
        }
        for (i, ch) in controls.iter_mut().enumerate() {
            ch.flush(poll.registry(), Token(i))?;
        }
        while let Some(event) = session.poll_event() {
            match event {
                Event::DataPeerPort(port) => data_peer = peer_ip.map(|ip| SocketAddr::new(ip, port)),
                // A receiver waits for the sender's digest after the last byte while the sender
                // reads the whole file: the idle limit must not cut that wait short.
                Event::Size(size) => idle_limit = idle_limit.max(crate::digest::wait(size)),
                Event::QuietFor(quiet) => idle_limit = idle_limit.saturating_add(quiet),
                Event::Done => {
                    ended.get_or_insert(Ok(()));
                    ended_at = std::time::Instant::now();
                }
                Event::Failed(why) => {
                    ended.get_or_insert(Err(why));
                    ended_at = std::time::Instant::now();
                }
            }
        }
        if let Some(end) = &ended {
            let flushed = controls.iter().all(|c| c.out.is_empty() || !c.open);
            if flushed || ended_at.elapsed() > options.flush_limit {
                for c in &mut controls {
                    let _ = c.stream.flush();
                }
                return match end {
                    Ok(()) => Ok(Outcome {
                        counters: session.counters(),
                        elapsed: started.elapsed(),
                        foreign,
                        peer_digest: session.peer_digest(),
                    }),
                    Err(why) => Err(DriverError::Failed(why.clone())),
                };
            }
        } else if let Some(to) = data_peer {
            for _ in 0..BATCH {
                let len = match stalled.take() {
                    Some(len) => len,
                    None => match session.poll_datagram(clock(), &mut out) {
                        Some(len) => len,
                        None => break,
                    },
                };
                match udp.send_to(&out[..len], to) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        stalled = Some(len);
                        poll.registry().reregister(&mut udp, UDP, Interest::READABLE | Interest::WRITABLE)?;
                        break;
                    }
                    // The peer's port is not open yet or any more: the protocol recovers the loss.
                    Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {}
                    Err(e) => return Err(e.into()),
                }
            }
            if stalled.is_none() {
                poll.registry().reregister(&mut udp, UDP, Interest::READABLE)?;
            }
        }

        if last_input.elapsed() > idle_limit && ended.is_none() {
            return Err(DriverError::Idle(idle_limit));
        }
        if last_progress.elapsed() >= options.progress_every {
            last_progress = std::time::Instant::now();
            if let Some(f) = options.on_progress.as_mut() {
                f(&session.counters());
            }
        }

        // Wait for input or the next timer.
        let now = clock();
        let wait = match (stalled, ended.is_some(), session.poll_timeout()) {
            (Some(_), _, _) => Duration::from_millis(5),
            (None, true, _) => Duration::from_millis(10),
            (None, false, Some(t)) => t.saturating_since(now).min(Duration::from_millis(100)),
            (None, false, None) => Duration::from_millis(100),
        };
        if wait < Duration::from_millis(1) {
            // Below the poller's resolution: look for input without sleeping, then spin.
            poll.poll(&mut events, Some(Duration::ZERO))?;
            if events.is_empty() && !wait.is_zero() {
                std::thread::yield_now();
            }
        } else {
            poll.poll(&mut events, Some(wait))?;
        }
    }
}

/// A session's `now`: the time since `origin` on the monotonic clock.
pub fn session_time(origin: std::time::Instant) -> Instant {
    Instant::from_nanos(u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX))
}

/// One control channel and the bytes waiting to be written on it.
struct Channel {
    stream: TcpStream,
    out: VecDeque<u8>,
    open: bool,
    writable_wanted: bool,
}

impl Channel {
    /// The channel ended: stop watching it (an ended stream is always readable).
    fn close(&mut self, registry: &mio::Registry) {
        self.open = false;
        let _ = registry.deregister(&mut self.stream);
    }

    /// Write what the socket takes now; wait for writability when it takes less.
    fn flush(&mut self, registry: &mio::Registry, token: Token) -> io::Result<()> {
        while self.open && !self.out.is_empty() {
            let (front, _) = self.out.as_slices();
            match self.stream.write(front) {
                Ok(0) => break,
                Ok(n) => {
                    self.out.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    self.out.clear();
                    self.close(registry);
                }
            }
        }
        let want = self.open && !self.out.is_empty();
        if want != self.writable_wanted && self.open {
            let interest = if want { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE };
            registry.reregister(&mut self.stream, token, interest)?;
            self.writable_wanted = want;
        }
        Ok(())
    }
}
