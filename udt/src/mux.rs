//! The multiplexer: one UDP socket, one I/O thread, many UDT connections (protocol notes §8).
//!
//! The I/O thread owns the socket and the protocol [`Endpoint`]; connections live in
//! [`ConnShared`] (a mutex and a condvar) shared with the application's handles. Each round the
//! thread receives what the socket holds, routes it, serves the connections with work (runs
//! their due timers, transmits what they have to send), and sleeps until the earliest deadline,
//! a datagram, or a wake-up from an application call (an eventfd). Sleeps end within
//! microseconds of the deadline (1 µs timer slack, the last few microseconds spun), but no
//! sooner than `pace::MIN_GAP` after the round began: at shorter packet periods each round sends
//! the packets due since the last one as one burst, and the core's pacing keeps the average rate
//! exact (see `pace.rs`).
//!
//! A round costs O(connections with work), not O(connections): idle connections are not looked
//! at. A connection has work in a round when
//! - it received a datagram (`receive`), or was just accepted;
//! - an application call queued it ([`Mux::wake`]: a call that brought its next deadline nearer,
//!   a close, a new connection), in the ready queue that has a lock of its own;
//! - its deadline, armed in the timer heap ([`crate::timers`]) when it was last served, has come;
//! - the kernel's full send buffer kept it from transmitting last round (`MuxState::carry`).
//!
//! Invariant (no connection misses a timer or a wake-up): every connection the thread keeps is,
//! at any time, either queued or in this round's work, or armed in the heap at or before its
//! `poll_timeout()` (`None`: not armed). Serving a connection re-arms it at its new
//! `poll_timeout()`; datagrams reach a connection only in `receive`, which puts it in the work;
//! an application call that leaves the deadline where it was or later needs nothing (the armed
//! entry comes first; a round that finds nothing due re-arms it), and one that brings it nearer
//! queues the connection. The round's sleep deadline is the heap's earliest.
//!
//! Wake-ups cost more than the work of a paced packet, so there are as few as possible: the
//! thread signals a connection's blocked callers only when what they wait for changed
//! (`view.rs`), and an application call wakes the thread only when it brought the connection's
//! next deadline nearer.
//!
//! A full kernel send buffer (`EWOULDBLOCK`) loses nothing: the datagrams the kernel refused,
//! which the core has already counted as sent, are copied to a backlog; no connection
//! transmits again until the backlog has left, oldest first, and meanwhile the thread also
//! waits for the socket to be writable. Only a datagram the kernel rejects with another error is
//! lost (counted), as the network may lose any. Connections take turns: those the full buffer
//! kept from transmitting are served first next round, in order, then the one it cut short, so
//! that on a shared port none starves; a closed connection is forgotten only once its shutdown
//! has left.
//!
//! Received data is copied once between the kernel and the application: the kernel writes each
//! datagram into a buffer of its own ([`crate::landing`]), the connection's receive buffer keeps
//! that buffer, and the application's read copies the payload out. Sent data likewise: the
//! kernel reads payloads straight from the send buffer (GSO iovecs, [`TxBatch`]), except the
//! tail of a run that the next connections to the same peer fill up (staged, then sent with
//! theirs) and control packets, which gather in runs of their own.
//!
//! A listener's port may have several I/O threads ([`crate::shard`]): each is one `Mux` with its
//! own socket, endpoint and connections, sharing the port with `SO_REUSEPORT` and the listener's
//! accept queue; a datagram that reaches the wrong one (the kernel steers a whole GSO or GRO
//! batch by its first datagram) is forwarded to its owner's inbox and handled there at its
//! kernel arrival time.
//!
//! Lock order: the multiplexer's state, then a connection, then the ready queue (taken alone
//! too). Application calls take only their connection's lock, then (released) the ready
//! queue's, and the multiplexer's, without a connection lock, to register or accept.
//! Invariant: the thread runs while a handle (listener or stream) is alive or a connection is
//! still closing; a connection is forgotten once closed and drained. [`Mux::bind`] counts the
//! binder's handle before the thread starts, so the thread cannot find itself alone (and stop)
//! before the caller has made its listener or stream, however long the caller is delayed. The
//! thread stops by swapping a handle count of 0 for `STOPPED`: a caller that finds the
//! multiplexer without holding a handle (the shared client registry, [`crate::shared`]) adds
//! one with [`Mux::try_add_handle`], which either counts before the thread could stop or is
//! refused because it has.

use std::collections::{HashMap, VecDeque};
use std::io::{self, IoSlice};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Duration;

use rand_core::{OsRng, RngCore};
use udt_proto::buffer::RxDatagram;
use udt_proto::connection::{Config, Connection, State};
use udt_proto::endpoint::{DatagramEvent, Endpoint};
use udt_proto::packet::Packet;
use udt_proto::{Instant, SocketId};

use crate::accept_queue::{AcceptQueue, Accepted};
use crate::clock;
use crate::landing::{Landing, Layout};
use crate::options::Options;
use crate::pace::{self, Wait};
use crate::secure::seal::{Incoming, Sealer};
use crate::shard::{self, Forwarded, Inbox};
use crate::sys::{self, EventFd};
use crate::timers::Timers;
use crate::tx_batch::{Entry, Flush, Payload, TxBatch, GSO_MAX_SEGMENTS};
use crate::view::{self, View};

/// At most this many datagrams are received per round, so transmission is not starved.
const RECV_BATCH: usize = 256;

/// While the kernel's send buffer is full, rounds whose deadline has passed wait at least this
/// long for it to have room (the socket becoming writable ends the wait at once).
const BLOCKED_WAIT: Duration = Duration::from_millis(1);

/// Largest UDP datagram we handle.
const MAX_DATAGRAM: usize = 65_536;

/// How long the I/O thread lingers with no handle and no connection before it stops.
const IDLE_LINGER: Duration = Duration::from_millis(50);

/// The handle count of a multiplexer whose I/O thread has stopped: no handle can be added.
const STOPPED: usize = usize::MAX;

/// Which of a port's I/O threads a multiplexer is ([`crate::shard`]).
pub(crate) struct Shard {
    pub index: usize,
    pub count: usize,
    pub accept: Arc<AcceptQueue>,
}

impl Shard {
    /// The port's only I/O thread.
    pub fn alone() -> Shard {
        Shard { index: 0, count: 1, accept: Arc::default() }
    }
}

/// A connection shared between the I/O thread and the application.
#[derive(Debug)]
pub(crate) struct ConnShared {
    /// The connection's (local) socket id: its key in the multiplexer.
    id: SocketId,
    /// In the multiplexer's ready queue (see [`Mux::wake`]): set by whoever queues it, cleared
    /// by the I/O thread before it serves the connection.
    queued: AtomicBool,
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
    /// Signals that found a blocked thread (tests count wake-ups with it).
    #[cfg(test)]
    pub signals: AtomicUsize,
}

impl ConnShared {
    fn new(conn: Connection) -> Arc<Self> {
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
            #[cfg(test)]
            signals: AtomicUsize::new(0),
        })
    }

    /// The sealing state, when the connection is secured (call with the connection locked).
    fn sealer(&self) -> Option<MutexGuard<'_, Option<Sealer>>> {
        self.secured.load(Ordering::Acquire).then(|| self.seal.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Feed a received datagram of a secured connection: opened in place once the peer seals
    /// (then the connection keeps the buffer, as for a plain one), through a copy before.
    fn deliver_sealed_buf(
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
    fn deliver_sealed(&self, conn: &mut Connection, at: Instant, bytes: &[u8], scratch: &mut Vec<u8>) {
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
            #[cfg(test)]
            self.signals.fetch_add(1, Ordering::SeqCst);
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
    fn needs_signal(&self, conn: &Connection, now: Instant) -> (bool, Option<Instant>) {
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

/// `addr` with an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) shown as the IPv4 address.
pub(crate) fn canonical(addr: SocketAddr) -> SocketAddr {
    SocketAddr::new(addr.ip().to_canonical(), addr.port())
}

/// `peer` in the form a socket bound at `local` sends to and receives from: an IPv4 peer of an
/// IPv6 (dual-stack) socket as IPv4-mapped IPv6, so that the endpoint's routes and cookies
/// match the source addresses the socket reports; an IPv4-mapped peer of an IPv4 socket as
/// IPv4. An IPv4 socket cannot reach an IPv6 peer: `InvalidInput` at once rather than a
/// connect that times out.
pub(crate) fn in_family_of(local: SocketAddr, peer: SocketAddr) -> io::Result<SocketAddr> {
    match (local, peer) {
        (SocketAddr::V6(_), SocketAddr::V4(p)) => {
            Ok(SocketAddr::new(p.ip().to_ipv6_mapped().into(), p.port()))
        }
        (SocketAddr::V4(_), SocketAddr::V6(p)) => match p.ip().to_ipv4_mapped() {
            Some(v4) => Ok(SocketAddr::new(v4.into(), p.port())),
            None => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("cannot reach the IPv6 address {peer} from the IPv4 socket {local}"),
            )),
        },
        _ => Ok(peer),
    }
}

struct MuxState {
    endpoint: Endpoint,
    conns: HashMap<SocketId, Slot>,
    out: Outbox,
    /// Each connection's next deadline (`poll_timeout`), as of the last time it was served.
    timers: Timers,
    /// The connections this round serves, in order (each once: see [`Slot::round`]).
    work: Vec<SocketId>,
    /// Connections the kernel's full send buffer kept from transmitting, in the order they are
    /// served first next round: those it skipped, then the one it cut short (see `service`).
    carry: Vec<SocketId>,
    /// The current round's number.
    round: u64,
    /// The ready queue's spare allocation (swapped with [`Mux::ready`] each round).
    ready_spare: Vec<SocketId>,
    /// The inbox's spare allocation (see [`Mux::receive_forwarded`]).
    forwarded: Vec<Forwarded>,
    /// The gap before the next round woken by a deadline: [`pace::burst_gap`] of the fastest
    /// connection that sent data in the last round ([`pace::MIN_GAP`] if none did).
    gap: Duration,
    /// This round received data for a connection that acknowledges every few packets: its
    /// peer times round trips on those ACKs, so its data gathers no longer than
    /// [`pace::MIN_GATHER`].
    count_acked: bool,
}

/// A connection as the I/O thread keeps it.
struct Slot {
    shared: Arc<ConnShared>,
    /// The last round that put the connection in `work`.
    round: u64,
}

impl MuxState {
    /// Put connection `id` in this round's work (once); its shared state, unless it is gone.
    fn enlist(&mut self, id: SocketId) -> Option<&ConnShared> {
        let slot = self.conns.get_mut(&id)?;
        if slot.round != self.round {
            slot.round = self.round;
            self.work.push(id);
        }
        Some(&slot.shared)
    }

    /// Start a round: a new number, and the work carried over from the last one first.
    fn begin_round(&mut self) {
        self.round += 1;
        self.count_acked = false;
        self.work.clear();
        let mut carry = std::mem::take(&mut self.carry);
        for &id in &carry {
            self.enlist(id);
        }
        carry.clear();
        self.carry = carry;
    }
}

/// What the kernel has not taken yet.
#[derive(Default)]
struct Outbox {
    /// Datagrams refused for a full send buffer, to send before anything else.
    backlog: VecDeque<Deferred>,
}

/// A datagram the kernel refused for a full send buffer: its bytes, copied out of the
/// connection's buffers, and its destination.
struct Deferred {
    dest: socket2::SockAddr,
    bytes: Vec<u8>,
}

/// One bound UDP port and its I/O thread.
pub(crate) struct Mux {
    socket: UdpSocket,
    wake: EventFd,
    state: Mutex<MuxState>,
    /// Connections application calls queued for the I/O thread ([`Mux::wake`]): a lock of its
    /// own, taken for a push or a swap, never while waiting for the multiplexer's state.
    ready: Mutex<Vec<SocketId>>,
    /// Where connections the endpoint accepts go (shared by a listener's shards).
    accept: Arc<AcceptQueue>,
    /// This thread's index among the port's I/O threads, and their number ([`crate::shard`]).
    shard: usize,
    shards: usize,
    /// The port's other I/O threads, by index (this one's entry dangles): set once, after all
    /// are bound, before any datagram can need forwarding.
    siblings: OnceLock<Vec<Weak<Mux>>>,
    /// Datagrams the other shards received for this one.
    inbox: Inbox,
    local_addr: SocketAddr,
    handles: AtomicUsize,
    /// Datagram size the receive buffers are first laid out for (the configured MSS's).
    rx_segment: usize,
    /// Datagrams refused for a full send buffer so far (each sent later, from the backlog), and
    /// datagrams the kernel rejected with another error (lost, as on the network). Outside
    /// the state's lock: applications read them without waiting for a round.
    deferred: AtomicU64,
    drops: AtomicU64,
    /// Sends use UDP GSO; cleared for good at the first refusal.
    gso: AtomicBool,
    /// How long datagrams may gather while data keeps arriving (`Options::receive_gather`).
    gather: Duration,
    /// Faults the crate's unit tests inject.
    #[cfg(test)]
    hooks: crate::options::TestHooks,
    /// `sendmsg` calls so far (for `hooks.refuse_sends`, and tests that count them).
    #[cfg(test)]
    sends: std::sync::atomic::AtomicU32,
    /// Datagrams handed to another I/O thread of the port.
    #[cfg(test)]
    forwards: std::sync::atomic::AtomicU64,
    /// Rounds so far, and connections served in them (one count per connection per round).
    #[cfg(test)]
    served: (std::sync::atomic::AtomicU64, std::sync::atomic::AtomicU64),
}

impl std::fmt::Debug for Mux {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mux").field("local_addr", &self.local_addr).finish_non_exhaustive()
    }
}

impl Mux {
    /// Bind a UDP socket at `addr` and start its I/O thread. Returns with one handle counted,
    /// the caller's: it passes it on to the listener or stream it makes, or gives it back with
    /// [`drop_handle`](Self::drop_handle). (Counted before the thread starts: a handle added
    /// after `bind` returned could come after the thread, alone, had stopped.)
    pub fn bind(addr: SocketAddr, options: &Options) -> io::Result<Arc<Mux>> {
        Mux::bind_shard(addr, options, Shard::alone())
    }

    /// [`bind`](Self::bind) as shard `shard.index` of a port's `shard.count` I/O threads
    /// ([`crate::shard`]; the caller sets `SO_REUSEPORT` in `options` and links the shards
    /// with [`set_siblings`](Self::set_siblings)).
    pub fn bind_shard(addr: SocketAddr, options: &Options, shard: Shard) -> io::Result<Arc<Mux>> {
        let socket = crate::udp::bind(addr, options)?;
        let local_addr = socket.local_addr()?;
        // With GRO the kernel coalesces datagrams; without, each receive returns one.
        sys::enable_gro(socket.as_raw_fd());
        sys::enable_rx_timestamps(socket.as_raw_fd());
        // The SYN-cookie key (128 bits), socket ids and the seeds of each connection's
        // generator (its ISN first) come from the operating system's generator, so none can be
        // predicted from another connection's: the core draws from no global RNG.
        let mut cookie_key = [0u8; 16];
        OsRng
            .try_fill_bytes(&mut cookie_key)
            .map_err(|e| io::Error::other(format!("no OS randomness: {e}")))?;
        let rng = Box::new(OsRng);
        let mut endpoint = Endpoint::with_cookie_key(clock::now(), rng, cookie_key);
        if shard.count > 1 {
            endpoint.set_id_class(shard.index as u32, shard.count as u32);
        }
        let mux = Arc::new(Mux {
            socket,
            wake: EventFd::new()?,
            state: Mutex::new(MuxState {
                endpoint,
                conns: HashMap::new(),
                out: Outbox::default(),
                timers: Timers::default(),
                work: Vec::new(),
                carry: Vec::new(),
                round: 0,
                ready_spare: Vec::new(),
                forwarded: Vec::new(),
                gap: pace::MIN_GAP,
                count_acked: false,
            }),
            ready: Mutex::new(Vec::new()),
            accept: shard.accept,
            shard: shard.index,
            shards: shard.count,
            siblings: OnceLock::new(),
            inbox: Inbox::default(),
            local_addr,
            handles: AtomicUsize::new(1),
            rx_segment: (options.config.mss as usize).saturating_sub(udt_proto::packet::IP_UDP_OVERHEAD),
            deferred: AtomicU64::new(0),
            drops: AtomicU64::new(0),
            gso: AtomicBool::new(true),
            gather: options.receive_gather,
            #[cfg(test)]
            hooks: options.hooks(),
            #[cfg(test)]
            sends: std::sync::atomic::AtomicU32::new(0),
            #[cfg(test)]
            served: Default::default(),
            #[cfg(test)]
            forwards: Default::default(),
        });
        let thread_mux = Arc::clone(&mux);
        std::thread::Builder::new()
            .name(format!("udt-io {local_addr}"))
            .spawn(move || thread_mux.run())
            .map_err(|e| io::Error::other(format!("cannot start the I/O thread: {e}")))?;
        Ok(mux)
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The UDP socket's descriptor (to attach a steering program to the port's group).
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        self.socket.as_raw_fd()
    }

    fn lock_state(&self) -> MutexGuard<'_, MuxState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An application handle now refers to this multiplexer. Only for a caller that holds a
    /// handle already (a listener, or a stream being accepted from it): the thread cannot have
    /// stopped. Anyone else uses [`try_add_handle`](Self::try_add_handle).
    pub fn add_handle(&self) {
        self.handles.fetch_add(1, Ordering::SeqCst);
    }

    /// Count a new handle unless the I/O thread has stopped (it stops only with no handles, and
    /// marks that in the count itself, so a handle is either counted before the thread could
    /// see itself alone or refused). For a caller that found the multiplexer without holding a
    /// handle: the shared client registry ([`crate::shared`]).
    pub fn try_add_handle(&self) -> bool {
        self.handles
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n != STOPPED).then(|| n + 1))
            .is_ok()
    }

    /// An application handle went away.
    pub fn drop_handle(&self) {
        self.handles.fetch_sub(1, Ordering::SeqCst);
        self.wake.notify();
    }

    /// Have the I/O thread serve `conn` in its next round (new data to send, a close, a read
    /// that freed buffer space), waking it. Call after changing the connection, with its lock
    /// released. Queues the connection once however often it is called before that round: the
    /// thread clears `queued` before it locks the connection, so a change made before this call
    /// is either seen by a round that has yet to lock it, or queues it anew.
    pub fn wake(&self, conn: &ConnShared) {
        if self.enqueue(conn) {
            self.wake.notify();
        }
    }

    /// Put `conn` in the ready queue unless it is there already; whether it was put there (then
    /// the caller wakes the thread).
    fn enqueue(&self, conn: &ConnShared) -> bool {
        if conn.queued.swap(true, Ordering::SeqCst) {
            return false;
        }
        self.ready.lock().unwrap_or_else(|e| e.into_inner()).push(conn.id);
        true
    }

    /// The port's other I/O threads, by index (this one's own entry is not used).
    pub fn set_siblings(&self, siblings: Vec<Weak<Mux>>) {
        let _ = self.siblings.set(siblings);
    }

    /// The queue accepted connections go to.
    pub fn accept_queue(&self) -> &Arc<AcceptQueue> {
        &self.accept
    }

    /// Start accepting connections with `config`, at most `max_accepted` alive at once (this
    /// thread's; the caller opens the accept queue).
    pub fn listen(&self, config: Config, max_accepted: usize) -> io::Result<()> {
        let mut st = self.lock_state();
        st.endpoint.listen(config).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        st.endpoint.set_max_accepted(max_accepted);
        Ok(())
    }

    /// Stop accepting (the caller then closes the accept queue).
    pub fn stop_listening(&self) {
        self.lock_state().endpoint.stop_listening();
    }

    /// Close a connection this thread accepted that nobody took.
    pub fn close_unaccepted(&self, c: &ConnShared) {
        let mut conn = c.lock();
        let now = clock::at(&conn, clock::now());
        conn.close(now);
        c.touch(&conn);
        drop(conn);
        self.wake(c);
    }

    /// Start a connection (regular or rendezvous) to `peer` from this port.
    pub fn open(&self, config: Config, peer: SocketAddr, rendezvous: bool) -> io::Result<Arc<ConnShared>> {
        let peer = in_family_of(self.local_addr, peer)?;
        let mut st = self.lock_state();
        let now = clock::now();
        let conn = if rendezvous {
            st.endpoint.rendezvous(config, peer, now)
        } else {
            st.endpoint.connect(config, peer, now)
        }
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let shared = ConnShared::new(conn);
        st.conns.insert(shared.id, Slot { shared: Arc::clone(&shared), round: 0 });
        drop(st);
        self.wake(&shared);
        Ok(shared)
    }

    /// `sendmsg` calls so far.
    #[cfg(test)]
    pub(crate) fn sendmsg_calls(&self) -> u32 {
        self.sends.load(Ordering::Relaxed)
    }

    /// Lock the multiplexer's state: the I/O thread stops at its next round until the guard
    /// is dropped (tests line up work for one round with it).
    #[cfg(test)]
    pub(crate) fn hold_rounds(&self) -> impl Drop + '_ {
        self.lock_state()
    }

    /// Datagrams this I/O thread handed to another one of the port.
    #[cfg(test)]
    pub(crate) fn forwards(&self) -> u64 {
        self.forwards.load(Ordering::Relaxed)
    }

    /// Connections this I/O thread keeps.
    #[cfg(test)]
    pub(crate) fn connection_count(&self) -> usize {
        self.lock_state().conns.len()
    }

    /// Rounds the I/O thread has run, and connections it served in them.
    #[cfg(test)]
    fn served(&self) -> (u64, u64) {
        (self.served.0.load(Ordering::Relaxed), self.served.1.load(Ordering::Relaxed))
    }

    /// Datagrams the kernel rejected with an error other than a full send buffer (lost, as on
    /// the network; the protocol retransmits them).
    pub fn send_drops(&self) -> u64 {
        self.drops.load(Ordering::Relaxed)
    }

    /// Datagrams the kernel first refused for a full send buffer (each sent later, when it had
    /// room: none is lost).
    pub fn send_deferred(&self) -> u64 {
        self.deferred.load(Ordering::Relaxed)
    }

    /// The I/O thread.
    fn run(self: Arc<Self>) {
        sys::set_timer_slack(Duration::from_micros(1));
        let mut landing = Landing::new(self.rx_segment);
        let mut outbuf = vec![0u8; MAX_DATAGRAM];
        let mut batch = TxBatch::default();
        let mut control = TxBatch::default();
        let mut idle_since_empty: Option<std::time::Instant> = None;
        let mut gathering = pace::Gathering::new(self.gather, clock::now());
        // Whether the socket may hold datagrams: false only after a wait in which `poll`
        // watched it and saw none, so that a round woken by a deadline does not spend a read on
        // an empty socket (about one failed `recvmsg` per round otherwise: 3,400 a second when
        // sending at 100 Mb/s). A datagram arriving after that wait ends the next one at once.
        let mut readable = true;
        loop {
            let round_start = clock::now();
            let gather;
            let gap;
            let blocked;
            let next = {
                let mut st = self.lock_state();
                st.begin_round();
                let mut data = if self.shards > 1 { self.receive_forwarded(&mut st, &mut outbuf) } else { 0 };
                if readable {
                    data += self.receive(&mut st, &mut landing, &mut outbuf);
                }
                let now = clock::now();
                let next = self.service(&mut st, now, &mut outbuf, &mut batch, &mut control);
                gap = st.gap;
                gather = gathering.after_round(round_start, data, st.count_acked);
                blocked = !st.out.backlog.is_empty();
                let alone = self.handles.load(Ordering::SeqCst) == 0;
                if alone && st.conns.is_empty() && !blocked {
                    // Nothing refers to us and nothing is closing: linger briefly for stray
                    // handshakes, then stop.
                    let since = *idle_since_empty.get_or_insert_with(std::time::Instant::now);
                    // Stop only if no handle came meanwhile: from now on none can be added.
                    if since.elapsed() > IDLE_LINGER
                        && self
                            .handles
                            .compare_exchange(0, STOPPED, Ordering::SeqCst, Ordering::SeqCst)
                            .is_ok()
                    {
                        return;
                    }
                    Some(now + Duration::from_millis(10))
                } else {
                    idle_since_empty = None;
                    next
                }
            };
            readable = if blocked {
                self.sleep_until_writable(next)
            } else {
                self.sleep_until(next, round_start, gap, gather)
            };
        }
    }

    /// Receive and route up to `RECV_BATCH` reads (each may hold many coalesced datagrams).
    /// Datagrams that landed aligned go to their connection as buffers it may keep (no copy);
    /// gathered ones as bytes.
    ///
    /// Each read's datagrams are handled at the time the kernel received them (its timestamp,
    /// kept in order), which is what the receiver's arrival-rate and packet-pair estimates
    /// measure. (The round's start time for all, as before, biased them: a long round's many
    /// packets all took its early start, and the arrival rate read 12,100 packets/s on a link
    /// delivering 8,300. The time each read returned instead made queued packets read back to
    /// back look microseconds apart.) Without timestamps, the time the read returned. A
    /// connection gets that time clamped to the latest it was given (`clock::at`): a stamp can
    /// be earlier than the last round's `now`.
    fn receive(&self, st: &mut MuxState, landing: &mut Landing, outbuf: &mut [u8]) -> usize {
        let mut data = 0;
        let mut count_acked = false;
        // Where secured connections' datagrams are opened.
        let mut scratch = Vec::new();
        for _ in 0..RECV_BATCH {
            let (from, layout) = match landing.receive(self.socket.as_raw_fd()) {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // ICMP errors (e.g. port unreachable) surface here on Linux: ignore them,
                    // the protocol's timers deal with silent peers.
                    tracing::trace!(error = %e, "receive");
                    continue;
                }
            };
            // Handed to a connection through `clock::at`: no earlier than what it saw before.
            let now = clock::arrival(landing.stamp());
            match layout {
                Layout::Aligned(count) => {
                    let mut k = 0;
                    while k < count {
                        let datagram = landing.datagram_mut(k);
                        k += 1;
                        if self.forwarded(from, datagram.bytes(), now) {
                            continue;
                        }
                        data += usize::from(Packet::peek_is_data(datagram.bytes()));
                        let Some(id) = self.route(st, now, from, datagram.bytes(), outbuf) else { continue };
                        let Some(c) = st.enlist(id) else { continue };
                        let dst = Packet::peek_destination(datagram.bytes()).filter(|&d| d != SocketId(0));
                        let mut conn = c.lock();
                        let at = clock::at(&conn, now);
                        let secured = c.secured.load(Ordering::Acquire);
                        if secured {
                            c.deliver_sealed_buf(&mut conn, at, datagram, &mut scratch);
                        } else {
                            conn.handle_datagram_buf(at, datagram);
                        }
                        count_acked |= conn.acknowledges_by_count();
                        // The rest of the batch for the same socket id, under the same lock: same
                        // sender, same id, so the endpoint would route them alike.
                        while k < count && dst.is_some() {
                            let next = landing.datagram_mut(k);
                            if Packet::peek_destination(next.bytes()) != dst {
                                break;
                            }
                            data += usize::from(Packet::peek_is_data(next.bytes()));
                            let at = clock::at(&conn, now);
                            if secured {
                                c.deliver_sealed_buf(&mut conn, at, next, &mut scratch);
                            } else {
                                conn.handle_datagram_buf(at, next);
                            }
                            k += 1;
                        }
                    }
                }
                Layout::Gathered { len, segment } => {
                    for datagram in landing.gathered()[..len].chunks(segment) {
                        if self.forwarded(from, datagram, now) {
                            continue;
                        }
                        data += usize::from(Packet::peek_is_data(datagram));
                        let id = self.route(st, now, from, datagram, outbuf);
                        if let Some(c) = id.and_then(|id| st.enlist(id)) {
                            let mut conn = c.lock();
                            let at = clock::at(&conn, now);
                            c.deliver_sealed(&mut conn, at, datagram, &mut scratch);
                            count_acked |= conn.acknowledges_by_count();
                        }
                    }
                }
            }
        }
        st.count_acked |= count_acked;
        data
    }

    /// With several I/O threads on the port: if the datagram belongs to another one
    /// ([`shard::owner`]), hand it over (copied, with its arrival time) and say so.
    fn forwarded(&self, from: SocketAddr, bytes: &[u8], at: Instant) -> bool {
        if self.shards <= 1 {
            return false;
        }
        let owner = shard::owner(bytes, self.shards);
        if owner == self.shard {
            return false;
        }
        // A sibling that is gone (its listener closing) had no connection left: dropped.
        if let Some(sibling) = self.siblings.get().and_then(|s| s.get(owner)).and_then(Weak::upgrade) {
            #[cfg(test)]
            self.forwards.fetch_add(1, Ordering::Relaxed);
            if sibling.inbox.push(Forwarded { from, bytes: bytes.to_vec(), at }) {
                sibling.wake.notify();
            }
        }
        true
    }

    /// Route the datagrams other I/O threads forwarded, each at its kernel arrival time;
    /// returns the data packets among them.
    fn receive_forwarded(&self, st: &mut MuxState, outbuf: &mut [u8]) -> usize {
        let mut forwarded = std::mem::take(&mut st.forwarded);
        self.inbox.take(&mut forwarded);
        let mut data = 0;
        let mut count_acked = false;
        let mut scratch = Vec::new();
        for f in forwarded.drain(..) {
            data += usize::from(Packet::peek_is_data(&f.bytes));
            if let Some(c) = self.route(st, f.at, f.from, &f.bytes, outbuf).and_then(|id| st.enlist(id)) {
                let mut conn = c.lock();
                let at = clock::at(&conn, f.at);
                c.deliver_sealed(&mut conn, at, &f.bytes, &mut scratch);
                count_acked |= conn.acknowledges_by_count();
            }
        }
        st.forwarded = forwarded;
        st.count_acked |= count_acked;
        data
    }

    /// Route one datagram: the id of the connection it is for (which may be gone), or `None`
    /// when the endpoint handled it (a handshake for the listener) or dropped it. A connection
    /// it accepts is in this round's work.
    fn route(
        &self,
        st: &mut MuxState,
        now: Instant,
        from: SocketAddr,
        bytes: &[u8],
        outbuf: &mut [u8],
    ) -> Option<SocketId> {
        match st.endpoint.handle_datagram(now, from, bytes, outbuf) {
            DatagramEvent::Route(id) => return Some(id),
            DatagramEvent::Accepted(conn) => {
                let shared = ConnShared::new(*conn);
                let id = shared.id;
                st.conns.insert(id, Slot { shared: Arc::clone(&shared), round: 0 });
                st.enlist(id);
                self.accept.push(Accepted { shard: self.shard, conn: shared });
            }
            DatagramEvent::Respond(len) => {
                let _ = self.socket.send_to(&outbuf[..len], from);
            }
            DatagramEvent::Dropped => {}
        }
        None
    }

    /// Serve the connections with work: run their due timers, transmit, signal the
    /// application, re-arm their deadlines. Returns the earliest deadline of all.
    ///
    /// A connection has work this round when it is in `st.work` already (carried over from the
    /// last round, or it received a datagram), an application call queued it ([`Mux::wake`]),
    /// or its deadline has come. The others are not touched: their deadline is armed in
    /// `st.timers`, at or before what `poll_timeout` says (only application calls change an
    /// unserved connection, and one that brings its deadline nearer queues it).
    fn service(
        &self,
        st: &mut MuxState,
        now: Instant,
        outbuf: &mut [u8],
        batch: &mut TxBatch,
        control: &mut TxBatch,
    ) -> Option<Instant> {
        // The connections application calls queued; each unmarked before it is locked below.
        let mut ready = std::mem::take(&mut st.ready_spare);
        std::mem::swap(&mut ready, &mut *self.ready.lock().unwrap_or_else(|e| e.into_inner()));
        for id in ready.drain(..) {
            if let Some(slot) = st.conns.get(&id) {
                slot.shared.queued.store(false, Ordering::SeqCst);
            }
            st.enlist(id);
        }
        st.ready_spare = ready;
        while let Some(id) = st.timers.pop_due(now) {
            st.enlist(id);
        }
        #[cfg(test)]
        {
            self.served.0.fetch_add(1, Ordering::Relaxed);
            self.served.1.fetch_add(st.work.len() as u64, Ordering::Relaxed);
        }
        let mut finished = Vec::new();
        let MuxState { conns, out, timers, work, carry, .. } = st;
        // What the kernel refused before leaves first; until it has, nothing new is sent (the
        // connections keep it: their packets are due, not lost).
        let mut writable = self.flush_backlog(out);
        // While the kernel's buffer is full, connections take turns: those it kept from
        // transmitting are served first next round, in order, and the one it cut short after
        // them. (Always in the same order, the connections served first would fill the buffer
        // round after round, and those after them would starve.)
        let mut cut = None;
        let mut gap = Duration::MAX;
        batch.clear();
        control.clear();
        for (i, &id) in work.iter().enumerate() {
            let Some(Slot { shared, .. }) = conns.get(&id) else { continue };
            let mut conn = shared.lock();
            // An application call may have given the connection a later time since `now` was read.
            let now = clock::at(&conn, now);
            if conn.poll_timeout().is_some_and(|t| t <= now) {
                conn.handle_timeout(now);
            }
            if writable {
                // A run left unfilled may take the next connections' datagrams (same peer).
                let more = i + 1 < work.len();
                let sent = conn.counters().pkts_sent;
                let mut seal = shared.sealer();
                let sealer = seal.as_mut().and_then(|s| s.as_mut()).filter(|s| s.is_active());
                writable = self.transmit(&mut conn, sealer, now, outbuf, batch, control, out, more);
                drop(seal);
                if conn.counters().pkts_sent != sent {
                    gap = gap.min(pace::burst_gap(conn.send_period(), conn.config().max_pacing_debt));
                }
                if !writable {
                    cut = Some(id);
                }
            } else {
                carry.push(id);
            }
            let mut deadline = conn.poll_timeout();
            if matches!(conn.state(), State::Closed(_)) && deadline.is_none() {
                if conn.is_drained() {
                    finished.push(id);
                } else {
                    // Its shutdown has yet to leave (the kernel's buffer was full this round):
                    // kept, and served again as soon as there is room.
                    deadline = Some(now);
                }
            }
            let (signal, wake_at) = shared.needs_signal(&conn, now);
            timers.arm(id, udt_proto::time::earliest(deadline, wake_at));
            drop(conn);
            if signal {
                shared.notify();
            }
        }
        // What the last connections left in an unfilled run (staged: no connection is locked).
        // Refused for a full buffer, they are in the backlog: no connection was cut short.
        if writable && self.flush_run(&[], outbuf, batch, batch.entries.len(), out) {
            self.flush_run(&[], outbuf, control, control.entries.len(), out);
        }
        batch.clear();
        control.clear();
        carry.extend(cut);
        st.gap = if gap == Duration::MAX { pace::MIN_GAP } else { gap };
        for id in finished {
            conns.remove(&id);
            timers.disarm(id);
            st.endpoint.forget(id);
        }
        let next = st.timers.next();
        if st.carry.is_empty() {
            next
        } else {
            // Connections wait for room in the kernel's buffer: serve them as soon as it has.
            Some(next.map_or(now, |n| n.min(now)))
        }
    }

    /// Wait for the next round (see `pace.rs`): until `deadline` but no sooner than `gap` after
    /// `round_start`, or a datagram, or a wake-up; with `gather` (data is streaming
    /// in), datagrams do not end the wait, which lasts at most `gather` from `round_start`.
    /// Returns whether the socket may hold datagrams now ([`sys::Ready::socket`]).
    fn sleep_until(
        &self,
        deadline: Option<Instant>,
        round_start: Instant,
        gap: Duration,
        gather: Option<Duration>,
    ) -> bool {
        let plan = match gather {
            Some(gather) => pace::plan_streaming(deadline, round_start, clock::now(), gap, gather),
            None => pace::plan(deadline, round_start, clock::now(), gap),
        };
        // While data streams in, datagrams gather in the socket's buffer (each keeps its kernel
        // timestamp) and only the application or the timeout end the sleep.
        let (socket, timeout) = match plan {
            Wait::Now => return true,
            Wait::Spin(until) => {
                while clock::now() < until {
                    std::hint::spin_loop();
                }
                return true;
            }
            Wait::Sleep(timeout) => (self.socket.as_raw_fd(), timeout),
            Wait::Gather(timeout) => (-1, Some(timeout)),
        };
        self.wait(socket, timeout, false)
    }

    /// Wait while the kernel's send buffer is full (the backlog is not empty): until the socket
    /// is writable or readable, a wake-up, or `deadline`, but at least [`BLOCKED_WAIT`] when the
    /// deadline has passed (packets are due, but cannot leave before the buffer has room).
    /// Returns whether the socket may hold datagrams.
    fn sleep_until_writable(&self, deadline: Option<Instant>) -> bool {
        let timeout = deadline.map(|d| d.saturating_since(clock::now()).max(BLOCKED_WAIT));
        self.wait(self.socket.as_raw_fd(), timeout, true)
    }

    /// [`sys::wait`] on `socket` (negative: not watched) and the wake-up eventfd, for
    /// writability too when `writable`; drains the eventfd. Returns whether the socket may
    /// hold datagrams.
    fn wait(&self, socket: std::os::fd::RawFd, timeout: Option<Duration>, writable: bool) -> bool {
        match sys::wait(socket, self.wake.raw(), timeout, writable) {
            Ok(ready) => {
                if ready.wake {
                    self.wake.drain();
                }
                ready.socket
            }
            Err(e) => {
                tracing::warn!(error = %e, "ppoll failed");
                std::thread::sleep(Duration::from_millis(1));
                true
            }
        }
    }

    /// Send everything `conn` has to send now. Datagrams are gathered into runs for UDP GSO:
    /// equal sizes to one peer, the last possibly shorter (at most 64 segments and 64 KB).
    /// Data payloads are not copied: each datagram is its header (written into `outbuf`) plus
    /// its payload's range of the connection's send storage, handed to the kernel as iovecs.
    /// Control packets (ACKs, ACK2s, NAKs, keep-alives: a few dozen bytes) gather in runs of
    /// their own (`control`, copied), so that they do not cut the data runs short.
    ///
    /// With `more` (other connections follow in this round), the runs not yet full are kept,
    /// the data run's payloads staged ([`TxBatch::stage`]), for the next connections' datagrams
    /// to the same peer to join: many connections between two ports then share GSO sends as
    /// one flow does. Runs kept for another peer are sent first. Returns false when the
    /// kernel's buffer filled up (what it refused is in the backlog).
    #[allow(clippy::too_many_arguments)]
    #[allow(clippy::too_many_arguments)]
    fn transmit(
        &self,
        conn: &mut Connection,
        mut sealer: Option<&mut Sealer>,
        now: Instant,
        outbuf: &mut [u8],
        batch: &mut TxBatch,
        control: &mut TxBatch,
        out: &mut Outbox,
        more: bool,
    ) -> bool {
        let dest = socket2::SockAddr::from(conn.peer_addr());
        if batch.dest.as_ref().is_some_and(|d| *d != dest)
            || control.dest.as_ref().is_some_and(|d| *d != dest)
        {
            // Another peer's runs, staged: no storage of this connection's in them.
            if !self.flush_run(&[], outbuf, batch, batch.entries.len(), out)
                || !self.flush_run(&[], outbuf, control, control.entries.len(), out)
            {
                return false;
            }
            batch.clear();
            control.clear();
        }
        batch.dest = Some(dest.clone());
        control.dest = Some(dest);
        loop {
            // Room for another header (or a whole control packet) in the header buffer.
            if batch.used + 2048 > outbuf.len()
                && !self.flush_run(conn.send_storage(), outbuf, batch, batch.entries.len(), out)
            {
                return false;
            }
            let Some(t) = conn.poll_transmit_ref(now, &mut outbuf[batch.used..]) else { break };
            if let Some(sealer) = sealer.as_deref_mut() {
                // Sealed into the staging buffer, header, payload and all (a control run: the
                // sealed datagrams are copies, not the send storage).
                let header = &outbuf[batch.used..batch.used + t.len];
                let payload = t.payload.map_or(&[][..], |p| &conn.send_storage()[p]);
                let at = control.staged.len();
                if !sealer.seal(header, payload, &mut control.staged) {
                    continue;
                }
                let entry = Entry { header: 0..0, payload: Some(Payload::Staged(at..control.staged.len())) };
                let n = match control.add(entry) {
                    Flush::Nothing => continue,
                    Flush::All => control.entries.len(),
                    Flush::AllButLast => control.entries.len() - 1,
                };
                if !self.flush_run(&[], outbuf, control, n, out) {
                    return false;
                }
                continue;
            }
            let (run, entry) = match t.payload {
                Some(p) => {
                    let header = batch.used..batch.used + t.len;
                    batch.used += t.len;
                    (&mut *batch, Entry { header, payload: Some(Payload::Storage(p)) })
                }
                None => {
                    let at = control.staged.len();
                    control.staged.extend_from_slice(&outbuf[batch.used..batch.used + t.len]);
                    (&mut *control, Entry { header: 0..0, payload: Some(Payload::Staged(at..at + t.len)) })
                }
            };
            let n = match run.add(entry) {
                Flush::Nothing => continue,
                Flush::All => run.entries.len(),
                Flush::AllButLast => run.entries.len() - 1,
            };
            if !self.flush_run(conn.send_storage(), outbuf, run, n, out) {
                return false;
            }
        }
        // A closed connection's last packets leave now: `close` returns once they have been
        // handed to the kernel, and the process may exit then.
        if more && !matches!(conn.state(), State::Closed(_)) {
            batch.stage(conn.send_storage());
            return true;
        }
        self.flush_run(conn.send_storage(), outbuf, batch, batch.entries.len(), out)
            && self.flush_run(&[], outbuf, control, control.entries.len(), out)
    }

    /// Send the first `n` entries of `batch` as one run (one GSO call, or one call each when
    /// GSO is off or refused), keeping any later entries; `storage` is the send storage of the
    /// connection being served (empty when none is). Returns false when the kernel's buffer is
    /// full: then the entries not sent, the run's and any later ones, are copied to the
    /// backlog (the core counted them as sent) and the batch is emptied. A datagram the kernel
    /// rejects with another error is lost like on the network (counted in `drops`).
    fn flush_run(
        &self,
        storage: &[u8],
        outbuf: &[u8],
        batch: &mut TxBatch,
        n: usize,
        out: &mut Outbox,
    ) -> bool {
        if n == 0 {
            return true;
        }
        let Some(dest) = batch.dest.clone() else { return true };
        let payload = |p: &Payload| match p {
            Payload::Storage(r) => &storage[r.clone()],
            Payload::Staged(r) => &batch.staged[r.clone()],
        };
        // Header and payload of each datagram, borrowed for this call only.
        let mut iov = [IoSlice::new(&[]); 2 * (GSO_MAX_SEGMENTS + 1)];
        let mut k = 0;
        for e in &batch.entries[..n] {
            iov[k] = IoSlice::new(&outbuf[e.header.clone()]);
            k += 1;
            if let Some(p) = &e.payload {
                iov[k] = IoSlice::new(payload(p));
                k += 1;
            }
        }
        // The first entry the kernel refused for a full buffer (`n`: none).
        let mut refused = n;
        let mut sent_as_run = false;
        if n > 1 && self.gso.load(Ordering::Relaxed) {
            match self.send(&iov[..k], Some(batch.segment as u16), &dest) {
                Ok(_) => sent_as_run = true,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    refused = 0;
                    sent_as_run = true;
                }
                Err(e) => {
                    tracing::info!(error = %e, "UDP GSO refused; sending datagrams one by one");
                    self.gso.store(false, Ordering::Relaxed);
                }
            }
        }
        if !sent_as_run {
            let mut at = 0;
            for (i, e) in batch.entries[..n].iter().enumerate() {
                let parts = 1 + usize::from(e.payload.is_some());
                match self.send(&iov[at..at + parts], None, &dest) {
                    Ok(_) => {}
                    Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                        refused = i;
                        break;
                    }
                    Err(err) => {
                        tracing::debug!(error = %err, "sendmsg");
                        self.drops.fetch_add(1, Ordering::Relaxed);
                    }
                }
                at += parts;
            }
        }
        if refused < n {
            for e in &batch.entries[refused..] {
                let bytes = [&outbuf[e.header.clone()], e.payload.as_ref().map_or(&[][..], payload)].concat();
                out.backlog.push_back(Deferred { dest: dest.clone(), bytes });
            }
            self.deferred.fetch_add((batch.entries.len() - refused) as u64, Ordering::Relaxed);
            batch.clear();
            return false;
        }
        batch.sent(n);
        true
    }

    /// Send the backlog, oldest first; returns whether it is empty now (false: the kernel's
    /// buffer is full again).
    fn flush_backlog(&self, out: &mut Outbox) -> bool {
        while let Some(d) = out.backlog.front() {
            match self.send(&[IoSlice::new(&d.bytes)], None, &d.dest) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e) => {
                    tracing::debug!(error = %e, "sendmsg");
                    self.drops.fetch_add(1, Ordering::Relaxed);
                }
            }
            out.backlog.pop_front();
        }
        true
    }

    /// One `sendmsg` on the socket (see [`sys::send_iov`]). The crate's unit tests may have it
    /// refuse some sends as a full buffer would ([`crate::options::TestHooks`]).
    fn send(&self, iov: &[IoSlice<'_>], segment: Option<u16>, dest: &socket2::SockAddr) -> io::Result<usize> {
        #[cfg(test)]
        {
            let every = self.hooks.refuse_sends;
            let nth = self.sends.fetch_add(1, Ordering::Relaxed);
            if every > 0 && nth % every == every - 1 {
                return Err(io::ErrorKind::WouldBlock.into());
            }
        }
        sys::send_iov(self.socket.as_raw_fd(), iov, segment, dest)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::{Poll, Wake, Waker};

    struct Task;
    impl Wake for Task {
        fn wake(self: Arc<Self>) {}
    }

    #[test]
    fn a_task_polling_accept_again_and_again_is_one_waker() {
        let listener = crate::listener::UdtListener::bind("127.0.0.1:0").unwrap();
        let queue = listener.accept_queue();
        let task = Waker::from(Arc::new(Task));
        for _ in 0..1000 {
            // Each poll gets the task's waker anew, as an executor hands it (a clone).
            assert!(matches!(queue.poll(&task.clone()), Poll::Pending));
        }
        assert_eq!(queue.waker_count(), 1);
        // Another task waits too: one more.
        let other = Waker::from(Arc::new(Task));
        assert!(matches!(queue.poll(&other), Poll::Pending));
        assert!(matches!(queue.poll(&other), Poll::Pending));
        assert_eq!(queue.waker_count(), 2);
    }

    /// Connections sharing a port whose kernel send buffer keeps filling up take turns: the
    /// one served first in a round is not served first in the next, so neither starves.
    #[test]
    fn connections_sharing_a_full_send_buffer_take_turns() {
        use crate::listener::UdtListener;
        use crate::stream::UdtStream;
        use std::io::{Read, Write};
        use std::sync::atomic::AtomicU64;

        const BYTES: usize = 8_000_000;
        let listener = UdtListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // Every 3rd send is refused as by a full buffer: each round's sending ends early.
        let mut options = Options::default();
        options.hooks.refuse_sends = 3;
        options.write_timeout = Some(Duration::from_secs(30));
        options.read_timeout = Some(Duration::from_secs(30));
        let mut clients = Vec::new();
        let mut received = Vec::new();
        for _ in 0..2 {
            clients.push(UdtStream::connect_with(addr, options.clone()).unwrap());
            let (mut server, _) = listener.accept().unwrap();
            let count = Arc::new(AtomicU64::new(0));
            received.push(Arc::clone(&count));
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 64 * 1024];
                while let Ok(n @ 1..) = server.read(&mut buf) {
                    count.fetch_add(n as u64, Ordering::SeqCst);
                }
            });
        }
        assert_eq!(clients[0].local_addr().unwrap(), clients[1].local_addr().unwrap());
        let data: Arc<[u8]> = vec![7u8; BYTES].into();
        let writers: Vec<_> = clients
            .into_iter()
            .map(|mut c| {
                let data = Arc::clone(&data);
                std::thread::spawn(move || {
                    c.write_all(&data).unwrap();
                    c.close().unwrap();
                })
            })
            .collect();
        // When the first has delivered everything, the other has had its turns too.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let other = loop {
            let got: Vec<u64> = received.iter().map(|c| c.load(Ordering::SeqCst)).collect();
            if got[0] == BYTES as u64 {
                break got[1];
            }
            if got[1] == BYTES as u64 {
                break got[0];
            }
            assert!(std::time::Instant::now() < deadline, "no transfer finished: {got:?}");
            std::thread::sleep(Duration::from_millis(1));
        };
        for w in writers {
            w.join().unwrap();
        }
        assert!(other >= BYTES as u64 / 4, "one connection starved: {other} of {BYTES} bytes");
    }

    /// With many idle connections on a port and one busy, a round serves the connections with
    /// work (the busy one, and the few idle ones whose timer came), not every connection.
    #[test]
    fn a_round_serves_the_connections_with_work_not_every_connection() {
        use crate::listener::UdtListener;
        use std::io::{Read, Write};

        const IDLE: usize = 200;
        let listener = UdtListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // The clients share one port (and one I/O thread) of their own.
        let clients = UdtListener::bind("127.0.0.1:0").unwrap();
        let mut idle = Vec::new();
        for _ in 0..IDLE {
            let client = clients.connect(addr).unwrap();
            let (server, _) = listener.accept().unwrap();
            idle.push((client, server));
        }
        let mut busy = clients.connect(addr).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        let reader = std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            let mut total = 0;
            while let Ok(n @ 1..) = server.read(&mut buf) {
                total += n;
            }
            total
        });
        let (muxes, before): (Vec<_>, Vec<_>) =
            [&listener.mux, &clients.mux].into_iter().map(|m| (Arc::clone(m), m.served())).unzip();
        // Data in small writes, so that both ends keep having work for many rounds.
        let chunk = [5u8; 4096];
        let started = std::time::Instant::now();
        let mut sent = 0;
        while started.elapsed() < Duration::from_millis(500) {
            busy.write_all(&chunk).unwrap();
            sent += chunk.len();
        }
        busy.close().unwrap();
        assert_eq!(reader.join().unwrap(), sent);
        for (mux, (rounds0, served0)) in muxes.iter().zip(before) {
            let (rounds, served) = mux.served();
            let (rounds, served) = (rounds - rounds0, served - served0);
            let per_round = served as f64 / rounds as f64;
            eprintln!("{rounds} rounds served {served} connections ({per_round:.2} a round)");
            assert!(rounds > 20, "only {rounds} rounds");
            // Every connection in every round would be more than IDLE a round.
            assert!(per_round < 10.0, "{per_round:.1} connections served a round, of {} alive", IDLE + 1);
        }
        drop(idle);
    }

    /// Idle connections that an application call gives work to are served at once, not at
    /// their next timer (a keep-alive some hundreds of milliseconds away): each exchange of a
    /// byte each way, on one idle connection among many, takes a few round trips of the I/O
    /// threads, not an EXP interval.
    #[test]
    fn an_idle_connection_given_work_is_served_at_once() {
        use crate::listener::UdtListener;
        use std::io::{Read, Write};

        const CONNECTIONS: usize = 50;
        let options = Options {
            read_timeout: Some(Duration::from_secs(10)),
            write_timeout: Some(Duration::from_secs(10)),
            ..Options::default()
        };
        let listener = UdtListener::bind_with("127.0.0.1:0", options.clone()).unwrap();
        let addr = listener.local_addr().unwrap();
        let clients = UdtListener::bind_with("127.0.0.1:0", options).unwrap();
        let mut pairs = Vec::new();
        for _ in 0..CONNECTIONS {
            let client = clients.connect(addr).unwrap();
            let (server, _) = listener.accept().unwrap();
            pairs.push((client, server));
        }
        let mut times = Vec::new();
        for pass in 0..3u8 {
            // Idle long enough for every timer but the keep-alives to have stopped.
            std::thread::sleep(Duration::from_millis(300));
            for (client, server) in &mut pairs {
                let started = std::time::Instant::now();
                let mut b = [0u8; 1];
                client.write_all(&[pass]).unwrap();
                server.read_exact(&mut b).unwrap();
                assert_eq!(b[0], pass);
                server.write_all(&[pass + 100]).unwrap();
                client.read_exact(&mut b).unwrap();
                assert_eq!(b[0], pass + 100);
                times.push(started.elapsed());
            }
        }
        times.sort();
        let median = times[times.len() / 2];
        eprintln!("exchanges: median {median:?}, slowest {:?}", times[times.len() - 1]);
        assert!(median < Duration::from_millis(50), "median exchange {median:?}");
    }

    #[test]
    fn a_full_kernel_send_buffer_loses_nothing_the_core_sent() {
        use crate::listener::UdtListener;
        use crate::stream::UdtStream;
        use std::io::{Read, Write};

        let listener = UdtListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // The client's kernel refuses every 5th send as if its buffer were full: GSO runs,
        // single datagrams, ACKs and the backlog's own retries alike.
        let mut options = Options::default();
        options.hooks.refuse_sends = 5;
        let data: Vec<u8> = (0..4_000_000u32).map(|i| (i * 7 + i / 1000) as u8).collect();
        let expected = data.clone();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).unwrap();
            got
        });
        let mut client = UdtStream::connect_with(addr, options).unwrap();
        client.write_all(&data).unwrap();
        client.flush_acknowledged().unwrap();
        let deferred = client.udp_send_deferred();
        let drops = client.udp_send_drops();
        let stats = client.stats(false);
        client.close().unwrap();
        let got = server.join().unwrap();
        assert!(got == expected, "received {} of {} bytes, or other bytes", got.len(), expected.len());
        assert!(deferred > 0, "the hook refused no send");
        // Every datagram the core counted as sent reached the kernel.
        assert_eq!(drops, 0, "datagrams dropped by the runtime");
        eprintln!("deferred {deferred}, retransmitted {}", stats.total.retransmits);
    }
}
