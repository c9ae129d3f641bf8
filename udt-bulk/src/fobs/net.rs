//! FOBS over real sockets: the connection setup (request, accept, joining control channel 1 to
//! the session) and then the socket driver (FOBS.md, "Setup").
//!
//! The data sender listens and the receiver pulls, like the other protocols of this crate. The
//! receiver opens control channel 0, binds its UDP socket and sends its request (file name, UDP
//! port, acknowledgement scheme); the sender answers with an accept (a random session token, the
//! file's size and geometry, its own UDP port) or a refusal; the receiver then opens channel 1
//! and presents the token. Only then do both run their sessions.
//!
//! Invariants: every blocking step is bounded by `Params::setup_timeout`; a name is served only
//! if it resolves to a regular file inside the root; a second connection is joined to the
//! session only with the session's token from the same host, and any other connection on the
//! listener meanwhile is refused with a reason and closed.

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use std::time::Duration;

use rand_core::{OsRng, RngCore};

use super::params::{Params, Transfer};
use super::receiver::ReceiverSession;
use super::sender::SenderSession;
use super::wire::{self, Accept, Message, FRAME_HEADER, MAX_NAME};
use crate::driver::{self, Outcome, RunOptions, Sockets};
use crate::error::BulkError;
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
/// resolved under `root` (refusing absolute paths, `..`, anything resolving outside root and
/// non-regular files), accept its control channel 1 from the same listener, and send the file.
/// FOBS serves one file per connection. The listener is left in blocking mode.
pub fn serve_connection(
    listener: &TcpListener,
    root: &Path,
    params: &Params,
    run: RunOptions<'_>,
) -> Result<ServeReport, BulkError> {
    params.check_rates().map_err(|e| invalid(format!("FOBS parameters: {e}")))?;
    let (mut ctrl, peer) = listener.accept()?;
    setup_timeouts(&ctrl, params.setup_timeout)?;
    let (udp_port, scheme, name) = match read_message(&mut ctrl)? {
        Message::Request { udp_port, scheme, name } => (udp_port, scheme, name),
        other => {
            let why = format!("expected a request, got {}", other.name());
            let _ = write_message(&mut ctrl, &Message::Refuse { reason: why.clone() });
            return Err(BulkError::Protocol(why));
        }
    };
    let refuse = |ctrl: &mut TcpStream, reason: String| {
        let _ = write_message(ctrl, &Message::Refuse { reason: reason.clone() });
        BulkError::Refused(reason)
    };
    if udp_port == 0 {
        return Err(refuse(&mut ctrl, "the request names UDP port 0".into()));
    }
    let file = match open_under(root, &name) {
        Ok(file) => file,
        Err(reason) => return Err(refuse(&mut ctrl, reason)),
    };
    let source = FileSource::new(file)?;
    let size = crate::storage::Source::len(&source);
    let transfer = match Transfer::from_params(size, params, scheme) {
        Ok(t) => t,
        Err(e) => return Err(refuse(&mut ctrl, format!("cannot send {name}: {e}"))),
    };
    let udp = UdpSocket::bind((ctrl.local_addr()?.ip(), 0))?;
    let token = OsRng.next_u64();
    let g = transfer.geometry;
    let accept = Accept {
        token,
        size,
        chunk_packets: g.chunk_packets,
        segment_packets: g.segment_packets,
        payload: g.payload,
        udp_port: udp.local_addr()?.port(),
        scheme,
    };
    write_message(&mut ctrl, &Message::Accept(accept))?;
    let second = accept_channel_1(listener, peer.ip(), token, params.setup_timeout)?;
    let mut session = SenderSession::new(source, transfer, params);
    let sockets =
        Sockets { controls: vec![ctrl, second], udp, data_peer: Some(SocketAddr::new(peer.ip(), udp_port)) };
    let outcome = driver::run(&mut session, sockets, run)?;
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
    if remote.len() > MAX_NAME {
        return Err(invalid(format!("a name of {} bytes is over FOBS' limit of {MAX_NAME}", remote.len())));
    }
    let mut ctrl = TcpStream::connect_timeout(&server, params.setup_timeout)?;
    setup_timeouts(&ctrl, params.setup_timeout)?;
    let udp = UdpSocket::bind((ctrl.local_addr()?.ip(), 0))?;
    let request = Message::Request {
        udp_port: udp.local_addr()?.port(),
        scheme: params.ack_scheme,
        name: remote.to_owned(),
    };
    write_message(&mut ctrl, &request)?;
    let accept = match read_message(&mut ctrl)? {
        Message::Accept(a) => a,
        Message::Refuse { reason } => return Err(BulkError::Refused(reason)),
        other => {
            return Err(BulkError::Protocol(format!("expected an accept or a refusal, got {}", other.name())))
        }
    };
    if accept.scheme != params.ack_scheme {
        return Err(BulkError::Protocol("the sender answered with another acknowledgement scheme".into()));
    }
    if accept.udp_port == 0 {
        return Err(BulkError::Protocol("the sender's accept names UDP port 0".into()));
    }
    let transfer = Transfer::new(
        accept.size,
        accept.payload,
        accept.chunk_packets,
        accept.segment_packets,
        accept.scheme,
    )
    .map_err(|e| BulkError::Protocol(format!("the sender's accept is out of range: {e}")))?;
    let sender_ip = ctrl.peer_addr()?.ip();
    let mut second = TcpStream::connect_timeout(&server, params.setup_timeout)?;
    write_message(&mut second, &Message::Hello { token: accept.token })?;
    let mut session = ReceiverSession::new(SinkRef(sink), transfer);
    let sockets = Sockets {
        controls: vec![ctrl, second],
        udp,
        data_peer: Some(SocketAddr::new(sender_ip, accept.udp_port)),
    };
    Ok(driver::run(&mut session, sockets, run)?)
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

/// Open `name` under `root` (a directory, or one file served by its name) by the rule of
/// [`crate::confine`], or say why not (one line, sent to the receiver).
pub fn open_under(root: &Path, name: &str) -> Result<File, String> {
    let path = crate::confine::resolve(root, name)?;
    let file = File::open(&path).map_err(|e| format!("cannot open {name}: {e}"))?;
    match file.metadata() {
        Ok(m) if m.is_file() => Ok(file),
        Ok(_) => Err(format!("not a regular file: {name}")),
        Err(e) => Err(format!("cannot open {name}: {e}")),
    }
}

/// Wait on `listener` for the receiver's control channel 1: a connection from `ip` whose hello
/// carries `token`. Others are refused and closed; the wait ends after `limit`.
fn accept_channel_1(
    listener: &TcpListener,
    ip: IpAddr,
    token: u64,
    limit: Duration,
) -> Result<TcpStream, BulkError> {
    listener.set_nonblocking(true)?;
    let result = wait_for_hello(listener, ip, token, limit);
    listener.set_nonblocking(false)?;
    result
}

fn wait_for_hello(
    listener: &TcpListener,
    ip: IpAddr,
    token: u64,
    limit: Duration,
) -> Result<TcpStream, BulkError> {
    let deadline = std::time::Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match listener.accept() {
            Ok((mut s, from)) => {
                s.set_nonblocking(false)?;
                setup_timeouts(&s, left.min(HELLO_WAIT))?;
                let reason = match read_message(&mut s) {
                    Ok(Message::Hello { token: t }) if t == token && from.ip() == ip => return Ok(s),
                    Ok(Message::Hello { .. }) => "unknown session token".to_string(),
                    Ok(Message::Request { .. }) => {
                        "busy: another transfer is being set up; try again".to_string()
                    }
                    Ok(other) => format!("expected a hello, got {}", other.name()),
                    Err(e) => e.to_string(),
                };
                tracing::debug!(%from, %reason, "refused a connection while waiting for control channel 1");
                let _ = write_message(&mut s, &Message::Refuse { reason });
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if left.is_zero() {
                    return Err(BulkError::Io(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("the receiver did not open control channel 1 within {limit:?}"),
                    )));
                }
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
fn read_message(s: &mut TcpStream) -> Result<Message, BulkError> {
    let mut frame = vec![0u8; FRAME_HEADER];
    read_exact(s, &mut frame)?;
    // The header alone checks the magic and bounds the body's length.
    if let Some((msg, _)) = wire::decode_frame(&frame).map_err(|e| BulkError::Protocol(e.to_string()))? {
        return Ok(msg);
    }
    let body = u32::from_be_bytes([frame[5], frame[6], frame[7], frame[8]]) as usize;
    frame.resize(FRAME_HEADER + body, 0);
    read_exact(s, &mut frame[FRAME_HEADER..])?;
    match wire::decode_frame(&frame) {
        Ok(Some((msg, _))) => Ok(msg),
        Ok(None) => Err(BulkError::Protocol("a setup message shorter than its header says".into())),
        Err(e) => Err(BulkError::Protocol(e.to_string())),
    }
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
