//! RBUDP over real sockets: the sockets around the sessions (seed-protocols.md, QUANTA RBUDP
//! 1.0; peers/README.md for the reference's ports). The sender is the TCP server: it accepts
//! the receiver's connection and blasts from its listener's port; its session reads the
//! request and opens the file (confined to what it serves). The receiver binds its UDP port
//! first, then connects, and its session asks. One file per connection, as the reference
//! `sendfile` and `recvfile` do.
//!
//! Invariants: nothing is sent without an explicit rate; a refused request closes the
//! connection without a byte (the reference's only way to refuse); the sender's session tells
//! the driver how long its first blast lasts ([`crate::Event::QuietFor`]), as it hears nothing
//! while it blasts;
//! the sender's digest message after the done flag ([`crate::digest`]) may meet a connection
//! the reference `recvfile` has closed: the driver drops what it refuses and the transfer, ended
//! already, stays done.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::time::Duration;

use super::params::Params;
use super::receiver::Receiver;
use super::sender::{Resolver, Sender};
use crate::confine;
use crate::driver::{self, DriverError, Outcome, RunOptions, Sockets};
use crate::error::BulkError;
use crate::storage::{Sink, Source};

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

/// Serve one control connection accepted from `listener`: the session reads its request for a
/// file, resolved under `root` by [`confine::open`], and sends it. RBUDP carries one file per
/// connection (the reference `sendfile` serves one request). Datagrams go from the listener's
/// port (the reference receiver takes them from there only) to the receiver's
/// [`Params::udp_port`].
pub fn serve_connection(
    listener: &TcpListener,
    root: &std::path::Path,
    params: &Params,
    run: RunOptions<'_>,
) -> Result<ServeReport, BulkError> {
    let resolve: Resolver<'_> =
        Box::new(move |name: &str| confine::open(root, name).map(|s| Box::new(s) as Box<dyn Source>));
    let mut sender = Sender::new(params, resolve)?;
    let local = listener.local_addr()?;
    let udp = bind_data_socket(local)?;
    let (stream, peer) = listener.accept()?;
    let sockets =
        Sockets { controls: vec![stream], udp, data_peer: Some(SocketAddr::new(peer.ip(), params.udp_port)) };
    let result = driver::run(&mut sender, sockets, run);
    let name = sender.name().unwrap_or_default().to_owned();
    match (result, sender.refusal()) {
        (Ok(outcome), _) => Ok(ServeReport { name, outcome }),
        (Err(DriverError::Failed(_)), Some(why)) => Err(BulkError::Refused(why.to_owned())),
        (Err(e), _) => Err(e.into()),
    }
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
