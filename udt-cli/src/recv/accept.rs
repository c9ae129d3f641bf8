//! The listener's side of `udt recv`: a thread that accepts connections, greets each at once
//! and queues it for the serving threads.
//!
//! Invariants: every accepted connection gets the receiver's Hello before anything else; one
//! that must wait is told `wait` with it; without `--keep-listening` only one connection is
//! served and the ones that come while it is are refused and closed (after one that was no
//! `udt send`, the next is taken); a wrong code phrase ends accepting (the
//! code is spent, so an attacker gets one guess).

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use anyhow::{bail, Result};
use udt::{UdtListener, UdtStream};

use udt_transfer::{greet, Turn};

use crate::{interrupt, link, security};

/// How long an error path waits to tell the sender why.
const ERROR_LIMIT: Duration = Duration::from_secs(1);

/// Accepted connections, in order, or the error that ended accepting.
pub struct Queue {
    rx: mpsc::Receiver<Result<(UdtStream, SocketAddr)>>,
    /// Connections queued or being served.
    pub pending: Arc<AtomicUsize>,
}

/// The next accepted connection (counting the transfers that ended meanwhile off `running`),
/// or why there will be none.
pub fn next_connection(
    queue: &Queue,
    mut finished: Option<(&mpsc::Receiver<()>, &mut usize)>,
) -> Result<(UdtStream, SocketAddr)> {
    loop {
        if let Some((done, running)) = finished.as_mut() {
            while done.try_recv().is_ok() {
                **running -= 1;
            }
        }
        match queue.rx.recv_timeout(link::POLL) {
            Ok(Ok(conn)) => return Ok(conn),
            Ok(Err(e)) => return Err(e),
            Err(mpsc::RecvTimeoutError::Timeout) if interrupt::requested() => {
                return Err(interrupt::error().into())
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => bail!("the listener stopped accepting"),
        }
    }
}

/// Accept connections on a thread of their own: each is greeted at once (so a sender knows it
/// reached a `udt recv`) and queued for the main thread, which serves one at a time. A
/// connection that has to wait is told so; with `keep_listening` off, only the first is served
/// and later ones are refused.
///
/// A peer that fails the key agreement is skipped with a warning, except a wrong code phrase
/// (`one_time_code`): that spends the code, and ends `udt recv` with an error, so an attacker
/// gets one guess.
pub fn accept_in_background(
    listener: UdtListener,
    keep_listening: bool,
    max: usize,
    one_time_code: bool,
) -> Result<Queue> {
    let (tx, rx) = mpsc::channel();
    let pending = Arc::new(AtomicUsize::new(0));
    let queue = Queue { rx, pending: Arc::clone(&pending) };
    std::thread::Builder::new().name("accept".into()).spawn(move || {
        let mut accepted = 0u64;
        loop {
            let (stream, peer) = match listener.accept() {
                Ok(conn) => conn,
                Err(e) if e.kind() == io::ErrorKind::PermissionDenied && one_time_code => {
                    let _ = tx.send(Err(anyhow::anyhow!(
                        "a sender failed the key agreement ({e}); the code phrase is spent: \
                         start `udt recv` again for a new one"
                    )));
                    return;
                }
                Err(e) if security::is_peer_failure(&e) => {
                    eprintln!("udt recv: refused a connection: {e}");
                    continue;
                }
                Err(e) => {
                    tracing::warn!("accepting a connection: {e}");
                    return;
                }
            };
            tracing::info!(%peer, "connection");
            // The main thread serves connections in order: a new one waits unless all the
            // earlier ones are done.
            if accepted > 0 && !keep_listening && pending.load(Ordering::SeqCst) > 0 {
                let refusal = "busy with another transfer (this `udt recv` serves one; \
                               start it with --keep-listening to queue transfers)";
                let _ = greet(&stream, Turn::Refused(refusal));
                std::thread::spawn(move || link::close_within(stream, ERROR_LIMIT));
                continue;
            }
            let turn = if pending.fetch_add(1, Ordering::SeqCst) >= max {
                Turn::Wait("busy with another transfer")
            } else {
                Turn::Now
            };
            let _ = greet(&stream, turn);
            accepted += 1;
            if tx.send(Ok((stream, peer))).is_err() {
                return;
            }
        }
    })?;
    Ok(queue)
}
