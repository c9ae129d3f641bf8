//! FOBS over real sockets: the sockets of the setup ([`super::setup`], FOBS.md "Setup") and
//! then the socket driver. This is the only FOBS code that reads the clock and the system's
//! random source (the session token); the sessions decide everything else.
//!
//! The data sender listens and the receiver pulls, like the other protocols of this crate. The
//! receiver opens control channel 0 and binds its UDP socket; its session writes the request;
//! once the sender's session has answered with an accept, the receiver opens channel 1 and
//! writes the token its session gives. The sender meanwhile accepts connections on its listener
//! and lets its session vet each one's first message.
//!
//! Invariants: every blocking step is bounded by the session's setup deadline (or
//! `Params::setup_timeout` for a connect); a name is served only through [`confine::open`]; a
//! second connection is joined to the session only with the session's token from the same host,
//! and any other connection on the listener meanwhile is refused with a reason and closed; the
//! sessions' `now` runs on one clock from the setup to the end.

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use std::time::Duration;

use rand_core::{OsRng, RngCore};
use udt_proto::time::Instant;

use super::params::Params;
use super::setup::{Client, Opener, Server, SetupError, SetupState};
use super::wire::{self, Message, FRAME_HEADER};
use crate::confine;
use crate::driver::{self, session_time, Outcome, RunOptions, Sockets};
use crate::error::BulkError;
use crate::session::Session;
use crate::storage::{FileSource, Sink};

/// What [`serve_connection`] sent.
#[derive(Debug, Clone)]
pub struct ServeReport {
    /// The name the receiver asked for.
    pub name: String,
    /// The session's end.
    pub outcome: Outcome,
}

/// The longest a connection on the listener may take to say who it is while the sender waits
/// for control channel 1.
const HELLO_WAIT: Duration = Duration::from_secs(2);
/// Between two looks at the listener while waiting for control channel 1.
const ACCEPT_POLL: Duration = Duration::from_millis(2);

/// Serve one control connection accepted from `listener`: answer its request for a file,
/// resolved under `root` by [`confine::open`], accept its control channel 1 from the same
/// listener, and send the file. FOBS serves one file per connection. The listener is left in
/// blocking mode.
pub fn serve_connection(
    listener: &TcpListener,
    root: &Path,
    params: &Params,
    run: RunOptions<'_>,
) -> Result<ServeReport, BulkError> {
    params.check_rates().map_err(|e| invalid(format!("FOBS parameters: {e}")))?;
    let origin = std::time::Instant::now();
    let (mut ctrl, peer) = listener.accept()?;
    setup_timeouts(&ctrl, params.setup_timeout)?;
    let udp = UdpSocket::bind((ctrl.local_addr()?.ip(), 0))?;
    let open: Opener<'_, FileSource> = Box::new(move |name: &str| confine::open(root, name));
    let mut server =
        Server::new(session_time(origin), params, OsRng.next_u64(), udp.local_addr()?.port(), open)
            .map_err(invalid)?;
    exchange(&mut server, &mut ctrl, origin, |s| s.setup_state())?;
    let second = accept_channel_1(listener, peer.ip(), &mut server, origin)?;
    let data_peer = server.data_port().map(|port| SocketAddr::new(peer.ip(), port));
    let name = server.name().unwrap_or_default().to_owned();
    let sockets = Sockets { controls: vec![ctrl, second], udp, data_peer };
    let outcome = driver::run_from(&mut server, sockets, run, origin)?;
    Ok(ServeReport { name, outcome })
}

/// Fetch `remote` (a name relative to the server's root) from `server` into `sink`; the session
/// calls `sink.set_len(size)` once the size is known.
pub fn fetch(
    server: SocketAddr,
    remote: &str,
    sink: &mut dyn Sink,
    params: &Params,
    run: RunOptions<'_>,
) -> Result<Outcome, BulkError> {
    let origin = std::time::Instant::now();
    if remote.len() > wire::MAX_NAME {
        let n = remote.len();
        return Err(invalid(format!("a name of {n} bytes is over FOBS' limit of {}", wire::MAX_NAME)));
    }
    let mut ctrl = TcpStream::connect_timeout(&server, params.setup_timeout)?;
    setup_timeouts(&ctrl, params.setup_timeout)?;
    let udp = UdpSocket::bind((ctrl.local_addr()?.ip(), 0))?;
    let mut client =
        Client::new(session_time(origin), params, remote, udp.local_addr()?.port(), SinkRef(sink))
            .map_err(invalid)?;
    let hello = exchange(&mut client, &mut ctrl, origin, |c| c.setup_state())?;
    let sender_ip = ctrl.peer_addr()?.ip();
    let data_peer = client.data_port().map(|port| SocketAddr::new(sender_ip, port));
    let mut second = TcpStream::connect_timeout(&server, params.setup_timeout)?;
    second.write_all(&hello)?;
    let sockets = Sockets { controls: vec![ctrl, second], udp, data_peer };
    Ok(driver::run_from(&mut client, sockets, run, origin)?)
}

/// Carry the setup messages of channel 0 between `session` and `ctrl` until the setup leaves
/// [`SetupState::Pending`]; the bytes the session wrote for channel 1 meanwhile.
fn exchange<T: Session>(
    session: &mut T,
    ctrl: &mut TcpStream,
    origin: std::time::Instant,
    state: impl Fn(&T) -> SetupState,
) -> Result<Vec<u8>, BulkError> {
    let mut channel_1 = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        while let Some((channel, bytes)) = session.poll_control() {
            match channel {
                0 => ctrl.write_all(&bytes)?,
                _ => channel_1.extend_from_slice(&bytes),
            }
        }
        match state(session) {
            SetupState::Pending => {}
            SetupState::Failed(e) => return Err(setup_error(e)),
            SetupState::AwaitingHello | SetupState::Running => return Ok(channel_1),
        }
        let now = session_time(origin);
        let left = time_left(now, session.poll_timeout());
        ctrl.set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
        match ctrl.read(&mut buf) {
            Ok(0) => session.handle_control_closed(session_time(origin), 0),
            Ok(n) => session.handle_control(session_time(origin), 0, &buf[..n]),
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                session.handle_timeout(session_time(origin))
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
}

fn setup_error(e: SetupError) -> BulkError {
    match e {
        SetupError::Refused(why) => BulkError::Refused(why),
        SetupError::Protocol(why) => BulkError::Protocol(why),
        SetupError::TimedOut(why) => BulkError::Io(io::Error::new(io::ErrorKind::TimedOut, why)),
    }
}

fn time_left(now: Instant, deadline: Option<Instant>) -> Duration {
    deadline.map_or(Duration::ZERO, |d| d.saturating_since(now))
}

/// A borrowed sink, so the session can own "its" storage.
struct SinkRef<'a>(&'a mut dyn Sink);

impl Sink for SinkRef<'_> {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.0.write_at(offset, data)
    }
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
    fn finish(&mut self) -> io::Result<()> {
        self.0.finish()
    }
}

fn invalid(why: String) -> BulkError {
    BulkError::Io(io::Error::new(io::ErrorKind::InvalidInput, why))
}

fn setup_timeouts(s: &TcpStream, limit: Duration) -> io::Result<()> {
    let limit = Some(limit.max(Duration::from_millis(1)));
    s.set_read_timeout(limit)?;
    s.set_write_timeout(limit)?;
    s.set_nodelay(true)
}

/// Wait on `listener` for the receiver's control channel 1: a connection from `ip` that
/// [`Server::vet_hello`] takes. Others are refused with the reason and closed; the wait ends at
/// the session's setup deadline.
fn accept_channel_1(
    listener: &TcpListener,
    ip: IpAddr,
    server: &mut Server<'_, FileSource>,
    origin: std::time::Instant,
) -> Result<TcpStream, BulkError> {
    listener.set_nonblocking(true)?;
    let result = wait_for_hello(listener, ip, server, origin);
    listener.set_nonblocking(false)?;
    result
}

fn wait_for_hello(
    listener: &TcpListener,
    ip: IpAddr,
    server: &mut Server<'_, FileSource>,
    origin: std::time::Instant,
) -> Result<TcpStream, BulkError> {
    loop {
        server.handle_timeout(session_time(origin));
        if let SetupState::Failed(e) = server.setup_state() {
            return Err(setup_error(e));
        }
        let left = time_left(session_time(origin), server.poll_timeout());
        match listener.accept() {
            Ok((mut s, from)) => {
                s.set_nonblocking(false)?;
                setup_timeouts(&s, left.min(HELLO_WAIT))?;
                let verdict = read_frame(&mut s).map_err(|e| e.to_string()).and_then(|frame| {
                    server.vet_hello(&frame, from.ip() == ip)?;
                    Ok(frame)
                });
                match verdict {
                    Ok(frame) => {
                        server.handle_control(session_time(origin), 1, &frame);
                        return Ok(s);
                    }
                    Err(reason) => {
                        tracing::debug!(%from, %reason, "refused a connection while waiting for control channel 1");
                        let _ = write_message(&mut s, &Message::Refuse { reason });
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(ACCEPT_POLL.min(left));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
}

fn write_message(s: &mut TcpStream, msg: &Message) -> io::Result<()> {
    s.write_all(&msg.encode())?;
    s.flush()
}

/// Read exactly one frame (never more, so nothing meant for the session is consumed).
fn read_frame(s: &mut TcpStream) -> Result<Vec<u8>, BulkError> {
    let mut frame = vec![0u8; FRAME_HEADER];
    read_exact(s, &mut frame)?;
    // The header alone checks the magic and bounds the body's length.
    if wire::decode_frame(&frame).map_err(|e| BulkError::Protocol(e.to_string()))?.is_some() {
        return Ok(frame);
    }
    let body = u32::from_be_bytes([frame[5], frame[6], frame[7], frame[8]]) as usize;
    frame.resize(FRAME_HEADER + body, 0);
    read_exact(s, &mut frame[FRAME_HEADER..])?;
    Ok(frame)
}

fn read_exact(s: &mut TcpStream, buf: &mut [u8]) -> Result<(), BulkError> {
    s.read_exact(buf).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => {
            BulkError::Protocol("the peer closed the connection during setup".into())
        }
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => BulkError::Io(io::Error::new(
            io::ErrorKind::TimedOut,
            "the peer said nothing in time during setup",
        )),
        _ => BulkError::Io(e),
    })
}
