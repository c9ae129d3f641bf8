//! The listener's side of `udt recv`: a thread that accepts connections, greets each at once
//! and queues it for the serving threads.
//!
//! Invariants: every accepted connection gets the receiver's Hello before anything else; one
//! that must wait is told `wait` with it; without `--keep-listening` only one connection is
//! served and the ones that come while it is are refused and closed (after one that was no
//! `udt send`, the next is taken); a wrong code phrase ends accepting (the
//! code is spent, so an attacker gets one guess); a connection from the address of a striped
//! transfer that waits for its other connections (`udt send -P N`) is taken for one of them and
//! served at once on a thread of its own (at most [`MAX_JOINING`] at a time).

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use anyhow::{bail, Result};
use udt::{UdtListener, UdtStream};

use udt_transfer::{greet, Members, Turn};

use crate::{interrupt, link, security};

/// How long an error path waits to tell the sender why.
const ERROR_LIMIT: Duration = Duration::from_secs(1);
/// Connections taken for ones that join a striped transfer and not yet served to the end, at
/// most; more are queued as transfers of their own.
const MAX_JOINING: usize = 64;

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
    (keep_listening, max): (bool, usize),
    one_time_code: bool,
    members: Members,
) -> Result<Queue> {
    let (tx, rx) = mpsc::channel();
    let pending = Arc::new(AtomicUsize::new(0));
    let queue = Queue { rx, pending: Arc::clone(&pending) };
    std::thread::Builder::new().name("accept".into()).spawn(move || {
        let mut accepted = 0u64;
        let joining = Arc::new(AtomicUsize::new(0));
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
            // The other connections of a striped transfer being served come while it is: they
            // are served at once, beside it, and count as no transfer of their own.
            if members.expects(peer.ip()) && joining.load(Ordering::SeqCst) < MAX_JOINING {
                let _ = greet(&stream, Turn::Now);
                let (members, done) = (members.clone(), Arc::clone(&joining));
                joining.fetch_add(1, Ordering::SeqCst);
                let spawned = std::thread::Builder::new().name(format!("join {peer}")).spawn(move || {
                    if let Err(e) = members.serve(stream) {
                        if !interrupt::requested() {
                            eprintln!(
                                "udt recv: a connection from {peer} to join a striped transfer: {}",
                                e.chain()
                            );
                        }
                    }
                    done.fetch_sub(1, Ordering::SeqCst);
                });
                if spawned.is_err() {
                    joining.fetch_sub(1, Ordering::SeqCst);
                }
                continue;
            }
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
