//! The key agreements of a secured listener's connections, each on a thread of its own, so a
//! peer that connects and then stalls delays nobody else: `UdtListener::accept` hands out the
//! connections whose agreement completed, in the order they completed, and the failures.
//!
//! Started by the first `accept` of a listener with `Options::security` (blocking, or async
//! with a tokio channel, `async_io.rs`). At most [`MAX_AGREEING`]
//! agreements run at once; a connection beyond that is closed at once. With a code phrase,
//! one at a time: each agreement tests one guess, and a wrong one is reported before the next
//! starts (a stalled peer then delays the others, for at most the agreement's timeout). The thread ends when the
//! listener closes its accept queue; agreements still running then end with their timeout,
//! and their connections are closed.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use crate::accept_queue::AcceptQueue;
use crate::mux::Mux;
use crate::options::Options;
use crate::secure::handshake::Role;
use crate::secure::Credential;
use crate::stream::UdtStream;

/// Key agreements running at once, at most.
pub const MAX_AGREEING: usize = 256;
/// Outcomes waiting for `accept`, at most: beyond that (an application not accepting, a flood
/// of failed agreements) new ones are dropped and their connections closed.
pub const MAX_WAITING: usize = 1024;

/// What the agreements produced: secured streams, or why a peer failed.
pub(crate) type Outcome = io::Result<(UdtStream, SocketAddr)>;

/// Where outcomes go: a channel of the blocking or of the async listener. Returns false once
/// nobody takes them (the listener is gone).
pub(crate) type Deliver = Arc<dyn Fn(Outcome) -> bool + Send + Sync>;

/// Start taking connections from `queue` (the port's I/O threads are `shards`), handing each
/// agreement's outcome to `deliver`.
pub(crate) fn start(
    queue: Arc<AcceptQueue>,
    shards: Vec<Arc<Mux>>,
    options: Options,
    deliver: Deliver,
) -> io::Result<()> {
    std::thread::Builder::new()
        .name("udt-acceptor".into())
        .spawn(move || run(&queue, &shards, &options, &deliver))?;
    Ok(())
}

/// The receiving end of a blocking listener's agreements.
#[derive(Debug)]
pub(crate) struct Acceptor {
    rx: Mutex<mpsc::Receiver<Outcome>>,
}

impl Acceptor {
    /// Start taking connections from `queue` (the port's I/O threads are `shards`).
    pub fn start(queue: Arc<AcceptQueue>, shards: Vec<Arc<Mux>>, options: Options) -> io::Result<Acceptor> {
        let (tx, rx) = mpsc::sync_channel(MAX_WAITING);
        let tx = Mutex::new(tx);
        let deliver: Deliver = Arc::new(move |outcome| {
            // Full (nobody accepting): the outcome is dropped, its connection closed.
            !matches!(
                tx.lock().unwrap_or_else(|e| e.into_inner()).try_send(outcome),
                Err(mpsc::TrySendError::Disconnected(_))
            )
        });
        start(queue, shards, options, deliver)?;
        Ok(Acceptor { rx: Mutex::new(rx) })
    }

    /// The next outcome, waiting at most `timeout` (`None`: for ever).
    pub fn next(&self, timeout: Option<Duration>) -> Outcome {
        let rx = self.rx.lock().unwrap_or_else(|e| e.into_inner());
        let closed = || io::Error::new(io::ErrorKind::NotConnected, "the listener is closed");
        match timeout {
            None => rx.recv().map_err(|_| closed())?,
            Some(t) => match rx.recv_timeout(t) {
                Ok(outcome) => outcome,
                Err(mpsc::RecvTimeoutError::Timeout) => Err(crate::error::timed_out("accept")),
                Err(mpsc::RecvTimeoutError::Disconnected) => Err(closed()),
            },
        }
    }
}

fn run(queue: &AcceptQueue, shards: &[Arc<Mux>], options: &Options, deliver: &Deliver) {
    let Some(credential) = options.security.clone() else { return };
    let agreeing = Arc::new(AtomicUsize::new(0));
    // Ends when the listener closes its queue.
    while let Ok(accepted) = queue.pop(None) {
        let mux = &shards[accepted.shard];
        if !mux.try_add_handle() {
            // The listener is closing: its I/O thread takes no new stream.
            continue;
        }
        let peer = accepted.conn.peer_addr();
        let mut stream = UdtStream::wrap(accepted.conn, Arc::clone(mux), options);
        if agreeing.fetch_add(1, Ordering::SeqCst) >= MAX_AGREEING {
            agreeing.fetch_sub(1, Ordering::SeqCst);
            tracing::warn!(%peer, "too many key agreements at once: connection closed");
            continue;
        }
        if matches!(credential, Credential::CodePhrase(_)) {
            // One agreement at a time: each tests one guess of the phrase, and a wrong guess
            // must be reported (and end a one-time listener) before another guess is tried.
            let outcome = stream
                .secure(&credential, Role::Responder, options.handshake_timeout)
                .map(|()| (stream, peer))
                .map_err(|e| io::Error::new(e.kind(), format!("{peer}: {e}")));
            let _ = deliver(outcome);
            continue;
        }
        let (deliver, count, credential, timeout) =
            (Arc::clone(deliver), Arc::clone(&agreeing), credential.clone(), options.handshake_timeout);
        let spawned = std::thread::Builder::new().name("udt-agree".into()).spawn(move || {
            let outcome = stream
                .secure(&credential, Role::Responder, timeout)
                .map(|()| (stream, peer))
                .map_err(|e| io::Error::new(e.kind(), format!("{peer}: {e}")));
            count.fetch_sub(1, Ordering::SeqCst);
            // A listener gone meanwhile drops (closes) the stream.
            let _ = deliver(outcome);
        });
        if let Err(e) = spawned {
            agreeing.fetch_sub(1, Ordering::SeqCst);
            tracing::warn!(%peer, error = %e, "cannot start a key agreement: connection closed");
        }
    }
}
