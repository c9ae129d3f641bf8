//! A connection shared between its I/O thread and the application's handles ([`ConnShared`]):
//! the protocol state machine under a mutex, the condvar and async wakers blocked callers wait
//! on, and the connection's sealing once a secure handshake installed keys, with the opening
//! of the datagrams it receives (`secure/seal.rs`).
//!
//! Invariants:
//! - Lock order: the connection (`conn`) before its sealing (`seal`) and before the view
//!   blocked callers last saw (`signalled`), never the other way round. `secured` is set only once `seal` holds keys, so a connection
//!   that is not secured costs the I/O thread no lock of its sealing.
//! - Blocked callers are counted under the connection's lock ([`ConnShared::wait`]), so the
//!   I/O thread, which signals after releasing the lock it changed the connection under,
//!   cannot miss one; it signals only when what they wait for changed (`view.rs`).
//! - Once the peer seals, nothing it sends is taken in clear; this end seals from the first
//!   packet of the peer's it opened.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use udt_proto::buffer::RxDatagram;
use udt_proto::connection::Connection;
use udt_proto::packet::Packet;
use udt_proto::{Instant, SocketId};

use crate::addr::canonical;
use crate::secure::seal::{Incoming, Sealer};
use crate::test_hooks::ConnHooks;
use crate::view::{self, View};

/// A connection shared between the I/O thread and the application.
#[derive(Debug)]
pub(crate) struct ConnShared {
    /// The connection's (local) socket id: its key in the multiplexer.
    pub id: SocketId,
    /// In the multiplexer's ready queue (see `Mux::wake`): set by whoever queues it, cleared
    /// by the I/O thread before it serves the connection.
    pub queued: AtomicBool,
    /// The protocol state machine.
    pub conn: Mutex<Connection>,
    /// Signalled when the I/O thread changed what blocked callers wait for (see [`View`]).
    pub changed: Condvar,
    /// Async tasks waiting on this connection, woken with the condvar.
    pub wakers: Mutex<Vec<std::task::Waker>>,
    /// Threads blocked on `changed` (counted under the connection's lock).
    waiters: AtomicUsize,
    /// The view blocked callers last saw (signalled by the I/O thread, or left by an
    /// application call, which signals any other waiter itself) and what the I/O thread needs
    /// to pace readers' wake-ups ([`view::Signalled`]). Used under the connection's lock only.
    signalled: Mutex<view::Signalled>,
    /// The connection's packet sealing, once a secure handshake installed keys
    /// (`secure/seal.rs`). Locked after `conn`, never before it.
    pub seal: Mutex<Option<Sealer>>,
    /// `seal` holds keys: the I/O thread looks at it only then.
    pub secured: AtomicBool,
    /// What the crate's unit tests count (empty in every other build).
    pub hooks: ConnHooks,
}

impl ConnShared {
    /// Share a connection the endpoint made.
    pub fn new(conn: Connection) -> Arc<Self> {
        Arc::new(ConnShared {
            id: conn.local_id(),
            queued: AtomicBool::new(false),
            conn: Mutex::new(conn),
            changed: Condvar::new(),
            wakers: Mutex::new(Vec::new()),
            waiters: AtomicUsize::new(0),
            signalled: Mutex::new(view::Signalled::default()),
            seal: Mutex::new(None),
            secured: AtomicBool::new(false),
            hooks: ConnHooks::default(),
        })
    }

    /// The sealing state, when the connection is secured (call with the connection locked).
    pub fn sealer(&self) -> Option<MutexGuard<'_, Option<Sealer>>> {
        self.secured.load(Ordering::Acquire).then(|| self.seal.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Feed a received datagram of a secured connection: opened in place once the peer seals
    /// (then the connection keeps the buffer, as for a plain one), through a copy before.
    pub fn deliver_sealed_buf(
        &self,
        conn: &mut Connection,
        at: Instant,
        datagram: &mut RxDatagram,
        scratch: &mut Vec<u8>,
    ) {
        let Some(mut seal) = self.sealer() else {
            conn.handle_datagram_buf(at, datagram);
            return;
        };
        let Some(sealer) = seal.as_mut() else { return };
        if !sealer.is_peer_sealed() {
            drop(seal);
            self.deliver_sealed(conn, at, datagram.bytes(), scratch);
            return;
        }
        let len = datagram.len();
        let is_data = Packet::peek_is_data(datagram.bytes());
        match sealer.handle_incoming(&mut datagram.storage_mut()[..len], is_data) {
            Incoming::Opened(n) => {
                seal_from_now(sealer, conn);
                datagram.set_len(n);
                conn.handle_datagram_buf(at, datagram);
            }
            // After the peer sealed, nothing is taken in clear.
            Incoming::Plain | Incoming::Drop => {}
        }
    }

    /// Feed a datagram of a secured connection: opened (or dropped) first. `scratch` holds the
    /// copy it is opened in.
    pub fn deliver_sealed(&self, conn: &mut Connection, at: Instant, bytes: &[u8], scratch: &mut Vec<u8>) {
        let Some(mut seal) = self.sealer() else {
            conn.handle_datagram(at, bytes);
            return;
        };
        let Some(sealer) = seal.as_mut() else { return };
        scratch.clear();
        scratch.extend_from_slice(bytes);
        match sealer.handle_incoming(scratch, Packet::peek_is_data(bytes)) {
            Incoming::Plain => conn.handle_datagram(at, bytes),
            Incoming::Opened(n) => {
                seal_from_now(sealer, conn);
                conn.handle_datagram(at, &scratch[..n]);
            }
            Incoming::Drop => {}
        }
    }

    /// Wake blocked threads and async tasks (no system call when nobody waits).
    pub fn notify(&self) {
        if self.waiters.load(Ordering::SeqCst) > 0 {
            self.hooks.signalled();
            self.changed.notify_all();
        }
        let wakers = std::mem::take(&mut *self.wakers.lock().unwrap_or_else(|e| e.into_inner()));
        for w in wakers {
            w.wake();
        }
    }

    /// Block on `changed` (at most `timeout`), releasing the connection's lock meanwhile.
    pub fn wait<'a>(
        &self,
        conn: MutexGuard<'a, Connection>,
        timeout: Option<Duration>,
    ) -> MutexGuard<'a, Connection> {
        // Counted while the lock is held: the I/O thread, which looks after releasing the
        // lock it changed the connection under, cannot miss this waiter.
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let conn = match timeout {
            None => self.changed.wait(conn).unwrap_or_else(|e| e.into_inner()),
            Some(t) => self.changed.wait_timeout(conn, t).unwrap_or_else(|e| e.into_inner()).0,
        };
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        conn
    }

    /// Register an async task to wake at the next change. Call it while holding the
    /// connection's lock, after finding the operation would block, so no change is missed.
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub fn register(&self, waker: &std::task::Waker) {
        register_waker(&mut self.wakers.lock().unwrap_or_else(|e| e.into_inner()), waker);
    }

    /// The peer's address as the application sees it: an IPv4 peer of a dual-stack IPv6 socket
    /// as IPv4, not IPv4-mapped IPv6 (the connection keeps the socket's form, which its
    /// datagrams arrive from and go to).
    pub fn peer_addr(&self) -> SocketAddr {
        canonical(self.lock().peer_addr())
    }

    /// Lock the connection (a poisoned lock means a panic elsewhere: keep going with the state).
    pub fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// After an application call changed `conn` (still locked): record the view it left, so
    /// the I/O thread compares its later changes with that, and signal any other caller
    /// blocked on the connection if the view changed (a close, say; a write that left the view
    /// as it was concerns nobody, not the thread blocked reading the same connection).
    pub fn touch(&self, conn: &Connection) {
        let view = Some(View::of(conn));
        let changed = {
            let mut signalled = self.signalled.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::replace(&mut signalled.view, view) != view
        };
        if changed {
            self.notify();
        }
    }

    /// [`touch`](Self::touch) after an application call that found the connection's next
    /// deadline at `before`; returns whether the I/O thread must be woken.
    pub fn changed_by_app(&self, conn: &mut Connection, before: Option<Instant>) -> bool {
        self.touch(conn);
        view::deadline_came_nearer(before, conn.poll_timeout())
    }

    /// I/O thread, with `conn` locked after a round at `now`: whether blocked callers must be
    /// signalled, and when to serve the connection again for a reader's wake-up held back (see
    /// [`view::Signalled::changed`]).
    pub fn needs_signal(&self, conn: &Connection, now: Instant) -> (bool, Option<Instant>) {
        self.signalled.lock().unwrap_or_else(|e| e.into_inner()).changed(conn, now)
    }
}

/// Add `waker` to `wakers` unless a waker that wakes the same task is there already: a task
/// polled again and again while it waits stays one entry (at most one per task).
#[cfg_attr(not(any(test, feature = "tokio")), allow(dead_code))]
pub(crate) fn register_waker(wakers: &mut Vec<std::task::Waker>, waker: &std::task::Waker) {
    if !wakers.iter().any(|w| w.will_wake(waker)) {
        wakers.push(waker.clone());
    }
}

/// A packet from the peer opened: the peer holds the keys, so this end seals from now on (the
/// responder of a key agreement begins here, without waiting for the confirmation to be read;
/// `secure/seal.rs`). Everything sent so far went in clear.
fn seal_from_now(sealer: &mut Sealer, conn: &Connection) {
    if !sealer.is_active() {
        if let Some(next) = conn.next_send_seq() {
            sealer.activate(next);
        }
    }
}
