//! RBUDP over real sockets: the setup around the sessions (seed-protocols.md, QUANTA RBUDP 1.0;
//! peers/README.md for the reference's ports). The sender is the TCP server: it accepts the
//! receiver's connection, reads the request, opens the file (confined to what it serves) and
//! blasts from its listener's port; the receiver binds its UDP port first, then connects and
//! asks. One file per connection, as the reference `sendfile` and `recvfile` do.
//!
//! Invariants: nothing is sent without an explicit rate; a refused request closes the
//! connection without a byte (the reference's only way to refuse); the driver's idle limit is
//! stretched by the first blast's duration on the sender, which hears nothing while it blasts;
//! the sender's digest message after the done flag ([`crate::digest`]) may meet a connection
//! the reference `recvfile` has closed: the driver drops what it refuses and the transfer, ended
//! already, stays done.

use std::fs::File;
use std::io::{self, Read};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::time::Duration;

use super::params::Params;
use super::receiver::Receiver;
use super::sender::Sender;
use super::wire::{self, Layout, REQUEST_LEN};
use crate::confine;
use crate::driver::{self, Outcome, RunOptions, Sockets};
use crate::error::BulkError;
use crate::storage::{FileSource, Sink, Source};

/// What [`serve_connection`] sent.
#[derive(Debug, Clone)]
pub struct ServeReport {
    /// The name the receiver asked for.
    pub name: String,
    /// How the transfer ran.
    pub outcome: Outcome,
}

/// Longest wait for a TCP connection to the sender.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Serve one control connection accepted from `listener`: read its request for a file,
/// resolved under `root` (refusing absolute paths, `..`, anything resolving outside root and
/// non-regular files), and send it. RBUDP carries one file per connection (the reference
/// `sendfile` serves one request). Datagrams go from the listener's port (the reference
/// receiver takes them from there only) to the receiver's [`Params::udp_port`].
pub fn serve_connection(
    listener: &TcpListener,
    root: &std::path::Path,
    params: &Params,
    mut run: RunOptions<'_>,
) -> Result<ServeReport, BulkError> {
    let rate = params.rate()?;
    params.check()?;
    let local = listener.local_addr()?;
    let udp = bind_data_socket(local)?;
    let (mut stream, peer) = listener.accept()?;
    let name = read_request(&mut stream, params.silence_limit.min(run.idle_limit))?;
    let path = confine::resolve(root, &name).map_err(BulkError::Refused)?;
    let file = File::open(&path).map_err(|e| BulkError::Refused(format!("{}: {e}", name.escape_debug())))?;
    let source = FileSource::new(file)?;
    let first_blast = Layout::new(source.len(), params.payload)
        .map(|l| params.gap(rate).saturating_mul(l.packets()))
        .unwrap_or_default();
    let mut sender = Sender::for_request(params, &name, Box::new(source) as Box<dyn Source>)?;
    if let Some(why) = sender.refusal() {
        return Err(BulkError::Refused(why.to_owned()));
    }
    run.idle_limit = run.idle_limit.saturating_add(first_blast);
    let sockets =
        Sockets { controls: vec![stream], udp, data_peer: Some(SocketAddr::new(peer.ip(), params.udp_port)) };
    let outcome = driver::run(&mut sender, sockets, run)?;
    Ok(ServeReport { name, outcome })
}

/// Fetch `remote` (a name relative to the server's root) from `server` into `sink`; the
/// session calls `sink.set_len(size)` once the size is known. Binds UDP
/// [`Params::udp_port`] before connecting, as the sender blasts at once.
pub fn fetch(
    server: SocketAddr,
    remote: &str,
    sink: &mut dyn Sink,
    params: &Params,
    run: RunOptions<'_>,
) -> Result<Outcome, BulkError> {
    let mut session = Receiver::new(remote, sink, params)?;
    let ip: IpAddr = match server.ip() {
        ip if ip.is_loopback() => ip,
        IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    let udp = UdpSocket::bind((ip, params.udp_port)).map_err(|e| {
        io::Error::new(e.kind(), format!("binding the data port {ip} UDP {}: {e}", params.udp_port))
    })?;
    let stream = TcpStream::connect_timeout(&server, CONNECT_TIMEOUT)
        .map_err(|e| io::Error::new(e.kind(), format!("connecting to {server}: {e}")))?;
    // With nothing listening, a loopback connect can meet itself (TCP simultaneous open).
    if stream.local_addr()? == stream.peer_addr()? {
        return Err(BulkError::Protocol(format!("nothing listens on {server} (connected to itself)")));
    }
    let sockets = Sockets { controls: vec![stream], udp, data_peer: None };
    Ok(driver::run(&mut session, sockets, run)?)
}

/// The sender's UDP socket, at its listener's address and port (the reference's 38000/38000);
/// an ephemeral port if that one is taken (our receiver accepts any port of the sender's
/// address; the reference's does not).
fn bind_data_socket(local: SocketAddr) -> Result<UdpSocket, BulkError> {
    match UdpSocket::bind(local) {
        Ok(udp) => Ok(udp),
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
            tracing::warn!(
                "UDP {local} is taken: sending from another port (a reference receiver will not listen)"
            );
            Ok(UdpSocket::bind(SocketAddr::new(local.ip(), 0))?)
        }
        Err(e) => Err(io::Error::new(e.kind(), format!("binding the data port UDP {local}: {e}")).into()),
    }
}

/// Read the 256-byte request field within `limit`.
fn read_request(stream: &mut TcpStream, limit: Duration) -> Result<String, BulkError> {
    stream.set_read_timeout(Some(limit.max(Duration::from_millis(1))))?;
    let mut field = [0u8; REQUEST_LEN];
    stream.read_exact(&mut field).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => {
            BulkError::Protocol("the receiver closed the connection before its request".into())
        }
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            BulkError::Protocol(format!("no request from the receiver within {limit:?}"))
        }
        _ => e.into(),
    })?;
    stream.set_read_timeout(None)?;
    wire::decode_request(&field).map_err(|e| BulkError::Protocol(format!("bad request: {e}")))
}
