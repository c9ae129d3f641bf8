//! The multiplexer: one UDP socket, one I/O thread, many UDT connections (protocol notes §8).
//! This module owns its lifecycle: binding the socket and starting the thread, the count of
//! application handles that keeps the thread running, and the calls applications make on it
//! (open a connection, listen, queue a connection for the thread with [`Mux::wake`]).
//!
//! The I/O thread owns the socket and the protocol endpoint; connections live in
//! [`ConnShared`] (a mutex and a condvar) shared with the application's handles. Each round the
//! thread receives what the socket holds and routes it (`route.rs`), serves the connections
//! with work, transmits what they have to send (`transmit.rs`), and sleeps until the earliest
//! deadline, a datagram, or a wake-up from an application call (`io_loop.rs`). What it keeps
//! under its lock is in `state.rs`.
//!
//! A listener's port may have several I/O threads ([`crate::shard`]): each is one `Mux` with its
//! own socket, endpoint and connections, sharing the port with `SO_REUSEPORT` and the listener's
//! accept queue; a datagram that reaches the wrong one is forwarded to its owner (`route.rs`).
//!
//! Lock order: the multiplexer's state, then a connection, then the ready queue (taken alone
//! too). Application calls take only their connection's lock, then (released) the ready
//! queue's, and the multiplexer's, without a connection lock, to register or accept.
//!
//! Invariant: the thread runs while a handle (listener or stream) is alive or a connection is
//! still closing; a connection is forgotten once closed and drained. [`Mux::bind`] counts the
//! binder's handle before the thread starts, so the thread cannot find itself alone (and stop)
//! before the caller has made its listener or stream, however long the caller is delayed. The
//! thread stops by swapping a handle count of 0 for `STOPPED`: a caller that finds the
//! multiplexer without holding a handle (the shared client registry, [`crate::shared`]) adds
//! one with [`Mux::try_add_handle`], which either counts before the thread could stop or is
//! refused because it has.

mod io_loop;
mod route;
mod state;
#[cfg(test)]
mod test_access;
#[cfg(test)]
mod tests;
mod transmit;

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Duration;

use rand_core::{OsRng, RngCore};
use udt_proto::connection::Config;
use udt_proto::endpoint::Endpoint;
use udt_proto::SocketId;

use self::state::MuxState;
use crate::accept_queue::AcceptQueue;
use crate::addr::in_family_of;
use crate::clock;
use crate::conn::ConnShared;
use crate::options::Options;
use crate::shard::Inbox;
use crate::sys::{self, EventFd};
use crate::test_hooks::MuxHooks;

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
    /// What the crate's unit tests count and inject (empty in every other build).
    hooks: MuxHooks,
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
            state: Mutex::new(MuxState::new(endpoint)),
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
            hooks: MuxHooks::new(options.hooks()),
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
        st.insert(Arc::clone(&shared));
        drop(st);
        self.wake(&shared);
        Ok(shared)
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
}
