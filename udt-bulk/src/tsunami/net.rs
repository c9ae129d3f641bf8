//! Tsunami over real sockets: [`fetch`] connects, binds a free UDP port and runs a [`Client`];
//! [`serve_connection`] accepts one control connection and runs a [`Server`] over files under a
//! directory. Everything else (the protocol) is in the sessions; the loop is [`driver::run`].
//!
//! The data socket binds to the local address of the control connection, port 0: the client
//! announces whichever port it got, the server sends from whichever it got (seed-protocols.md,
//! Tsunami step 6).

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use rand_core::{OsRng, RngCore};

use super::failure::Failure;
use super::server::{Catalog, ServedFile, Server};
use super::wire::CHALLENGE_LEN;
use super::{Client, Params};
use crate::confine;
use crate::driver::{self, DriverError, Outcome, RunOptions, Sockets};
use crate::error::BulkError;
use crate::storage::{Sink, Source};

/// What [`serve_connection`] sent.
#[derive(Debug, Clone)]
pub struct ServeReport {
    /// The (first) file sent, as the client named it.
    pub name: String,
    /// The session's counters and duration.
    pub outcome: Outcome,
    /// Every file sent on the connection, in order (a client may ask for several).
    pub files: Vec<ServedFile>,
}

/// Files under one directory (or one file), by the rule of [`confine`].
struct Confined<'p> {
    root: &'p Path,
}

impl Catalog for Confined<'_> {
    fn open(&mut self, name: &str) -> Result<Box<dyn Source>, String> {
        Ok(Box::new(confine::open(self.root, name)?))
    }
}

/// The error for a session that could not start or that failed while running.
fn session_error(failure: Option<&Failure>, run: DriverError) -> BulkError {
    match (failure, run) {
        (Some(failure), DriverError::Failed(_)) => failure.clone().into(),
        (_, run) => run.into(),
    }
}

/// Serve one control connection accepted from `listener`: answer its request(s) for files,
/// resolved under `root` (refuse absolute paths, `..`, anything resolving outside root,
/// non-regular files) until the client ends. Returns what was sent.
///
/// Fails before accepting anything when `params` has no usable secret. A refused request (bad
/// secret, a name that is not served) is answered on the wire and returned as
/// [`BulkError::Refused`].
pub fn serve_connection(
    listener: &TcpListener,
    root: &Path,
    params: &Params,
    run: RunOptions<'_>,
) -> Result<ServeReport, BulkError> {
    let mut catalog = Confined { root };
    let mut challenge = [0u8; CHALLENGE_LEN];
    OsRng.try_fill_bytes(&mut challenge).map_err(|e| io::Error::other(e.to_string()))?;
    let epoch = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as u32);
    let mut server = Server::new(params, challenge, epoch, &mut catalog).map_err(invalid_setting)?;
    let (control, _) = listener.accept()?;
    let udp = UdpSocket::bind(SocketAddr::new(control.local_addr()?.ip(), 0))?;
    let sockets = Sockets { controls: vec![control], udp, data_peer: None };
    match driver::run(&mut server, sockets, run) {
        Ok(outcome) => {
            let files = server.served().to_vec();
            let name = files.first().map(|f| f.name.clone()).unwrap_or_default();
            Ok(ServeReport { name, outcome, files })
        }
        Err(e) => Err(session_error(server.failure(), e)),
    }
}

/// Fetch `remote` (a name relative to the server's root) from `server` into `sink`; the
/// session calls `sink.set_len(size)` once the size is known, and `sink.finish()` once every
/// block is in.
pub fn fetch(
    server: SocketAddr,
    remote: &str,
    sink: &mut dyn Sink,
    params: &Params,
    run: RunOptions<'_>,
) -> Result<Outcome, BulkError> {
    Client::check(params, remote).map_err(invalid_setting)?;
    let control = TcpStream::connect_timeout(&server, params.connect_timeout)?;
    let udp = UdpSocket::bind(SocketAddr::new(control.local_addr()?.ip(), 0))?;
    let port = udp.local_addr()?.port();
    let mut client = Client::new(params, remote, port, sink).map_err(invalid_setting)?;
    let sockets = Sockets { controls: vec![control], udp, data_peer: None };
    driver::run(&mut client, sockets, run).map_err(|e| session_error(client.failure(), e))
}

/// Unusable parameters, as an invalid-input error.
fn invalid_setting(failure: Failure) -> BulkError {
    BulkError::Io(io::Error::new(io::ErrorKind::InvalidInput, failure.to_string()))
}
