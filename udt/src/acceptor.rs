//! The key agreements of a secured listener's connections, each on a thread of its own, so a
//! peer that connects and then stalls delays nobody else: `UdtListener::accept` hands out the
//! connections whose agreement completed, in the order they completed, and the failures.
//!
//! Started by the first `accept` of a listener with `Options::security` (blocking, or async
//! with a tokio channel, `async_io.rs`). Limits: at most [`MAX_AGREEING`] agreements run at
//! once, at most [`MAX_AGREEING_PER_SOURCE`] from one source (an IPv4 address, an IPv6 /64);
//! a connection beyond either is closed at once. Each running agreement holds an
//! [`AgreementSlot`], which gives its place back when dropped, on every path.
//!
//! With a code phrase, one agreement at a time, and one guess in all: the first agreement in
//! which the peer tested a wrong guess
//! ([`is_wrong_guess`](crate::secure::HandshakeError::is_wrong_guess)) spends the
//! listener. Its failure is delivered, the listener stops listening, and every later `accept`
//! fails with [`spent_error`]. A peer that guesses nothing (a plain peer, one that uses a key,
//! one whose UDT handshake was changed on the path, one that stalls) spends nothing. A
//! stalled peer then delays the others, for at most the agreement's timeout.
//!
//! The thread ends when the listener closes its accept queue; agreements still running then
//! end with their timeout, and their connections are closed.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use crate::accept_queue::AcceptQueue;
use crate::mux::Mux;
use crate::options::Options;
use crate::secure::handshake::Role;
use crate::secure::Credential;
use crate::stream::UdtStream;

pub use crate::secure::{MAX_AGREEING, MAX_AGREEING_PER_SOURCE};
/// Outcomes waiting for `accept`, at most: beyond that (an application not accepting, a flood
/// of failed agreements) new ones are dropped and their connections closed.
pub const MAX_WAITING: usize = 1024;

/// What the agreements produced: secured streams, or why a peer failed.
pub(crate) type Outcome = io::Result<(UdtStream, SocketAddr)>;

/// Where outcomes go: a channel of the blocking or of the async listener. Returns false once
/// nobody takes them (the listener is gone).
pub(crate) type Deliver = Arc<dyn Fn(Outcome) -> bool + Send + Sync>;

/// The error of every `accept` after a wrong guess spent a code-phrase listener.
pub(crate) fn spent_error() -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        "the code phrase was spent by a wrong guess: this listener takes no more connections \
         (listen again with a new code phrase)",
    )
}

/// Start taking connections from `queue` (the port's I/O threads are `shards`), handing each
/// agreement's outcome to `deliver`. The flag returned turns true when a wrong guess spent a
/// code-phrase listener.
pub(crate) fn start(
    queue: Arc<AcceptQueue>,
    shards: Vec<Arc<Mux>>,
    options: Options,
    deliver: Deliver,
) -> io::Result<Arc<AtomicBool>> {
    let spent = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&spent);
    std::thread::Builder::new()
        .name("udt-acceptor".into())
        .spawn(move || run(&queue, &shards, &options, &deliver, &flag))?;
    Ok(spent)
}

/// The receiving end of a blocking listener's agreements.
#[derive(Debug)]
pub(crate) struct Acceptor {
    rx: Mutex<mpsc::Receiver<Outcome>>,
    spent: Arc<AtomicBool>,
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
        let spent = start(queue, shards, options, deliver)?;
        Ok(Acceptor { rx: Mutex::new(rx), spent })
    }

    /// The next outcome, waiting at most `timeout` (`None`: for ever).
    pub fn next(&self, timeout: Option<Duration>) -> Outcome {
        let rx = self.rx.lock().unwrap_or_else(|e| e.into_inner());
        let closed = || {
            if self.spent.load(Ordering::SeqCst) {
                spent_error()
            } else {
                io::Error::new(io::ErrorKind::NotConnected, "the listener is closed")
            }
        };
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

/// Where a connection comes from, for the per-source limit: the address, an IPv6 one cut to
/// its /64 (what one host is usually given).
fn source_of(peer: SocketAddr) -> IpAddr {
    match peer.ip().to_canonical() {
        IpAddr::V6(v6) => {
            let mut o = v6.octets();
            o[8..].fill(0);
            IpAddr::from(o)
        }
        v4 => v4,
    }
}

/// The agreements running, in all and per source.
#[derive(Default)]
struct Agreeing {
    total: usize,
    by_source: HashMap<IpAddr, usize>,
}

/// A running agreement's place in [`Agreeing`], given back when dropped.
struct AgreementSlot {
    agreeing: Arc<Mutex<Agreeing>>,
    source: IpAddr,
}

impl AgreementSlot {
    /// A place for an agreement with `peer`, if both limits allow one.
    fn take(agreeing: &Arc<Mutex<Agreeing>>, peer: SocketAddr) -> Option<AgreementSlot> {
        let source = source_of(peer);
        let mut a = agreeing.lock().unwrap_or_else(|e| e.into_inner());
        let from_source = a.by_source.get(&source).copied().unwrap_or(0);
        if a.total >= MAX_AGREEING || from_source >= MAX_AGREEING_PER_SOURCE {
            return None;
        }
        a.total += 1;
        a.by_source.insert(source, from_source + 1);
        Some(AgreementSlot { agreeing: Arc::clone(agreeing), source })
    }
}

impl Drop for AgreementSlot {
    fn drop(&mut self) {
        let mut a = self.agreeing.lock().unwrap_or_else(|e| e.into_inner());
        a.total = a.total.saturating_sub(1);
        if let Some(n) = a.by_source.get_mut(&self.source) {
            *n -= 1;
            if *n == 0 {
                a.by_source.remove(&self.source);
            }
        }
    }
}

/// Run one agreement as the responder: the secured stream, or the peer's failure (with
/// whether it was a wrong guess).
fn agree(
    mut stream: UdtStream,
    peer: SocketAddr,
    credential: &Credential,
    timeout: Duration,
) -> (Outcome, bool) {
    match stream.secure_detailed(credential, Role::Responder, timeout) {
        Ok(()) => (Ok((stream, peer)), false),
        Err((e, wrong_guess)) => (Err(io::Error::new(e.kind(), format!("{peer}: {e}"))), wrong_guess),
    }
}

fn run(queue: &AcceptQueue, shards: &[Arc<Mux>], options: &Options, deliver: &Deliver, spent: &AtomicBool) {
    let Some(credential) = options.security.clone() else { return };
    let agreeing = Arc::new(Mutex::new(Agreeing::default()));
    // Ends when the listener closes its queue.
    while let Ok(accepted) = queue.pop(None) {
        let mux = &shards[accepted.shard];
        if !mux.try_add_handle() {
            // The listener is closing: its I/O thread takes no new stream.
            continue;
        }
        let peer = accepted.conn.peer_addr();
        let stream = UdtStream::wrap(accepted.conn, Arc::clone(mux), options);
        let Some(slot) = AgreementSlot::take(&agreeing, peer) else {
            tracing::warn!(%peer, "too many key agreements at once (in all or from this source): connection closed");
            continue;
        };
        if matches!(credential, Credential::CodePhrase(_)) {
            // One agreement at a time: each may test one guess of the phrase, and a wrong
            // guess must spend the listener before another guess is tried.
            let (outcome, wrong_guess) = agree(stream, peer, &credential, options.handshake_timeout);
            drop(slot);
            let _ = deliver(outcome);
            if wrong_guess {
                spend(queue, shards, spent);
                return;
            }
            continue;
        }
        let (deliver, credential, timeout) =
            (Arc::clone(deliver), credential.clone(), options.handshake_timeout);
        let spawned = std::thread::Builder::new().name("udt-agree".into()).spawn(move || {
            let (outcome, _) = agree(stream, peer, &credential, timeout);
            drop(slot);
            // A listener gone meanwhile drops (closes) the stream.
            let _ = deliver(outcome);
        });
        if let Err(e) = spawned {
            tracing::warn!(%peer, error = %e, "cannot start a key agreement: connection closed");
        }
    }
}

/// A wrong guess spent the code phrase: stop listening, close what waits, and mark the
/// listener spent (later `accept`s fail with [`spent_error`]).
fn spend(queue: &AcceptQueue, shards: &[Arc<Mux>], spent: &AtomicBool) {
    spent.store(true, Ordering::SeqCst);
    for mux in shards {
        mux.stop_listening();
    }
    for left in queue.close() {
        shards[left.shard].close_unaccepted(&left.conn);
    }
    tracing::warn!("a wrong guess spent the code phrase: the listener takes no more connections");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ip: &str) -> SocketAddr {
        SocketAddr::new(ip.parse().expect("address"), 9000)
    }

    #[test]
    fn places_are_given_back_on_every_path_and_limited_per_source() {
        let agreeing = Arc::new(Mutex::new(Agreeing::default()));
        let mut held: Vec<_> =
            (0..MAX_AGREEING_PER_SOURCE).map(|_| AgreementSlot::take(&agreeing, at("10.0.0.1"))).collect();
        assert!(held.iter().all(Option::is_some));
        assert!(AgreementSlot::take(&agreeing, at("10.0.0.1")).is_none(), "per-source limit");
        // One /64 is one source; another source still gets a place.
        let v6 = AgreementSlot::take(&agreeing, at("2001:db8::1"));
        assert!(v6.is_some());
        assert_eq!(source_of(at("2001:db8::1")), source_of(at("2001:db8::ffff:1")));
        assert!(AgreementSlot::take(&agreeing, at("10.0.0.2")).is_some());
        held.pop();
        assert!(AgreementSlot::take(&agreeing, at("10.0.0.1")).is_some(), "a dropped slot is given back");
        drop(held);
        drop(v6);
        // Many more agreements than places, one after the other: nothing leaks.
        for i in 0..10 * MAX_AGREEING {
            let peer = SocketAddr::new(IpAddr::from([10, 1, (i / 256) as u8, i as u8]), 1);
            assert!(AgreementSlot::take(&agreeing, peer).is_some(), "place {i}");
        }
        let a = agreeing.lock().expect("lock");
        assert_eq!((a.total, a.by_source.len()), (0, 0));
    }

    #[test]
    fn the_total_is_limited() {
        let agreeing = Arc::new(Mutex::new(Agreeing::default()));
        let held: Vec<_> = (0..MAX_AGREEING)
            .map(|i| AgreementSlot::take(&agreeing, SocketAddr::new(IpAddr::from([10, 2, 0, i as u8]), 1)))
            .collect();
        assert!(held.iter().all(Option::is_some));
        assert!(AgreementSlot::take(&agreeing, at("10.9.9.9")).is_none());
    }
}
