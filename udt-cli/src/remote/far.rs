//! The far end of an ssh-started transfer (`udt recv --bootstrap`, `udt send --bootstrap`, run
//! by the near end through ssh): read the key from standard input, listen on a free UDP port
//! of the range, announce it on standard output, and take the one connection that proves the
//! key.
//!
//! Invariants: the key is read from standard input only; the announcement is one line, flushed
//! before any connection is awaited; at most one connection is taken, within [`ACCEPT_LIMIT`];
//! standard input closing before it came (the near end gave up) ends the wait.

use std::io::{self, BufRead, Read, Write};
use std::net::{Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use udt::secure::Credential;
use udt::{Options, UdtListener, UdtStream};

use super::{parse_key_line, PortRange, ANNOUNCE, BOOTSTRAP_VERSION};
use crate::{interrupt, link, net};

/// How long the far end waits for the near end's connection once it announced its port.
pub const ACCEPT_LIMIT: Duration = Duration::from_secs(30);

/// The key the near end wrote on standard input (its first line).
pub fn read_key() -> Result<Credential> {
    let mut line = zeroize::Zeroizing::new(String::new());
    io::stdin().lock().take(256).read_line(&mut line).context("reading the key from standard input")?;
    let key = parse_key_line(&line).ok_or_else(|| {
        anyhow!(
            "--bootstrap reads a key from standard input (it is meant to be started by `udt send` or \
             `udt recv` through ssh, not by hand)"
        )
    })?;
    Ok(Credential::Key(key))
}

/// Listen on the first free port of `range` (any free port without one), every address of
/// both families where the host has IPv6.
pub fn listen(range: Option<PortRange>, options: Options) -> Result<UdtListener> {
    let Some(range) = range else {
        return net::listen(SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0)), options);
    };
    for port in range.lo..=range.hi {
        match net::listen(SocketAddr::from((Ipv6Addr::UNSPECIFIED, port)), options.clone()) {
            Ok(listener) => return Ok(listener),
            Err(e) => tracing::debug!(port, "cannot listen: {e:#}"),
        }
    }
    bail!("no free UDP port in --port-range {range} on this host")
}

/// Print the announcement line for `listener` on standard output.
pub fn announce(listener: &UdtListener) -> Result<()> {
    let port = listener.local_addr().context("reading the bound address")?.port();
    // SSH_CONNECTION: "CLIENT_IP CLIENT_PORT SERVER_IP SERVER_PORT".
    let reached = std::env::var("SSH_CONNECTION")
        .ok()
        .and_then(|v| v.split_whitespace().nth(2).map(str::to_string))
        .filter(|ip| ip.parse::<std::net::IpAddr>().is_ok())
        .unwrap_or_else(|| "-".into());
    let mut out = io::stdout().lock();
    writeln!(out, "{ANNOUNCE} {BOOTSTRAP_VERSION} {port} {reached}")?;
    out.flush()?;
    Ok(())
}

/// Take the one connection, within [`ACCEPT_LIMIT`]; a peer that fails the key agreement is
/// refused and the wait goes on.
pub fn accept_one(mut listener: UdtListener) -> Result<(UdtStream, SocketAddr)> {
    let near_gone = watch_stdin();
    listener.set_accept_timeout(Some(link::POLL));
    let deadline = Instant::now() + ACCEPT_LIMIT;
    loop {
        match listener.accept() {
            Ok(conn) => return Ok(conn),
            Err(e) if e.kind() == io::ErrorKind::TimedOut || e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if crate::security::is_peer_failure(&e) => eprintln!("refused a connection: {e}"),
            Err(e) => return Err(anyhow::Error::new(e).context("accepting the connection")),
        }
        if interrupt::requested() {
            return Err(interrupt::error().into());
        }
        if near_gone.load(Ordering::SeqCst) {
            bail!("the near end went away before it connected");
        }
        if Instant::now() >= deadline {
            bail!("no connection came within {} s", ACCEPT_LIMIT.as_secs());
        }
    }
}

/// A flag raised when standard input ends (the near end closed the ssh channel).
fn watch_stdin() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let raised = Arc::clone(&flag);
    let spawned = std::thread::Builder::new().name("near-end".into()).spawn(move || {
        let mut buf = [0u8; 256];
        let mut stdin = io::stdin();
        while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
        raised.store(true, Ordering::SeqCst);
    });
    if let Err(e) = spawned {
        tracing::warn!("cannot watch standard input: {e}");
    }
    flag
}
