//! `UdtStream`: one UDT connection as a blocking, std::net-style socket.
//!
//! Stream sockets implement `Read` and `Write`; message sockets use `send_msg` / `recv_msg`.
//! Every blocking call waits on the connection's condvar, which the I/O thread signals after a
//! round that changed what callers wait for (`view.rs`), and honours the read or write timeout.
//! A call wakes the I/O thread only when it brought the connection's next deadline nearer. Dropping the stream
//! closes it: buffered data keeps being sent in the background for up to the linger time;
//! `close` does the same but waits for it.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

use udt_proto::buffer::RecvChunk;
use udt_proto::connection::{CloseReason, ConnError, Connection, Snapshot, State};

use crate::addr::resolve;
use crate::clock;
use crate::conn::ConnShared;
use crate::error;
use crate::mux::Mux;
use crate::options::Options;
use crate::secure::handshake::{self, KeySink, Keys, Role};
use crate::secure::seal::Sealer;
use crate::secure::{Credential, HandshakeError, SealCounters};

/// The stream with one deadline for a whole exchange: each read or write gets the time left,
/// so a peer that trickles bytes cannot stretch it.
struct Deadline<'a> {
    stream: &'a mut UdtStream,
    until: std::time::Instant,
}

impl Deadline<'_> {
    fn left(&self) -> io::Result<Duration> {
        let left = self.until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "the key agreement timed out"));
        }
        Ok(left)
    }
}

impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.stream.read_timeout = Some(self.left()?);
        self.stream.read(buf)
    }
}

impl Write for Deadline<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stream.write_timeout = Some(self.left()?);
        self.stream.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Hands a handshake's keys to the connection's sealing (locks in the I/O thread's order:
/// the connection, then its sealing).
struct SealSink<'a>(&'a ConnShared);

impl KeySink for SealSink<'_> {
    fn install(&mut self, keys: Keys) -> bool {
        let conn = self.0.lock();
        // Under the connection's lock: the I/O thread cannot deliver anything in between.
        if !conn.is_receive_side_idle() {
            return false;
        }
        *self.0.seal.lock().unwrap_or_else(|e| e.into_inner()) = Some(Sealer::new(keys.send, keys.recv));
        self.0.secured.store(true, std::sync::atomic::Ordering::Release);
        true
    }

    fn activate(&mut self) {
        let conn = self.0.lock();
        if let (Some(s), Some(next)) =
            (self.0.seal.lock().unwrap_or_else(|e| e.into_inner()).as_mut(), conn.next_send_seq())
        {
            s.activate(next);
        }
    }
}

/// How long a refused key agreement waits for the refusal to be acknowledged.
const REFUSAL_LINGER: Duration = Duration::from_secs(2);

/// Largest chunk copied into the send buffer per lock hold, so the I/O thread is never blocked
/// for long by a big write.
const WRITE_CHUNK: usize = 256 * 1024;

/// What a call on a connection would find now ([`UdtStream::readiness`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Readiness {
    /// Bytes a stream read would return (message mode: bytes of complete messages).
    pub readable_bytes: usize,
    /// Bytes a stream write would take.
    pub writable_bytes: usize,
    /// Connecting or connected: neither end has closed it and the peer was not lost.
    pub open: bool,
    /// Everything written has been acknowledged.
    pub flushed: bool,
}

/// A UDT connection.
#[derive(Debug)]
pub struct UdtStream {
    pub(crate) shared: Arc<ConnShared>,
    pub(crate) mux: Arc<Mux>,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
}

impl UdtStream {
    /// Connect to a UDT listener with default options.
    pub fn connect(addr: impl ToSocketAddrs) -> io::Result<UdtStream> {
        UdtStream::connect_with(addr, Options::default())
    }

    /// Connect to a UDT listener from this process's shared client port: outgoing connections
    /// share one ephemeral UDP port and one I/O thread per address family and per set of
    /// socket-level options (UDP buffer sizes, `reuse_address`, `receive_gather`, MSS); options
    /// that differ there get a port of their own. UDT tells connections apart by socket id, so
    /// any number may run from one port, to one peer or many. The port and its thread go away
    /// once its last connection has closed. [`UdtListener::connect`](crate::UdtListener::connect)
    /// connects from a listener's port instead.
    pub fn connect_with(addr: impl ToSocketAddrs, options: Options) -> io::Result<UdtStream> {
        let peer = resolve(addr)?;
        let mux = crate::shared::client_mux(peer, &options)?;
        options.hooks().after_bind();
        UdtStream::open(mux, peer, options, false)
    }

    /// Rendezvous with `peer` from `local`: both sides call this towards each other.
    pub fn rendezvous(
        local: impl ToSocketAddrs,
        peer: impl ToSocketAddrs,
        options: Options,
    ) -> io::Result<UdtStream> {
        let (local, peer) = (resolve(local)?, resolve(peer)?);
        let mux = Mux::bind(local, &options)?;
        options.hooks().after_bind();
        UdtStream::open(mux, peer, options, true)
    }

    /// Open a connection on a multiplexer and wait for the handshake. Takes over a handle the
    /// caller counted on `mux` (the one [`Mux::bind`] returns with, or one it added).
    pub(crate) fn open(
        mux: Arc<Mux>,
        peer: SocketAddr,
        options: Options,
        rendezvous: bool,
    ) -> io::Result<UdtStream> {
        let mut stream = UdtStream::start(mux, peer, &options, rendezvous)?;
        {
            let mut conn = stream.shared.lock();
            loop {
                match conn.state() {
                    // A shutdown comes only from a peer that completed the handshake: the
                    // connection was made, and the peer closed it before this thread looked
                    // (a server that accepts and closes at once). What it sent is readable,
                    // then the end of the stream.
                    State::Connected | State::Closed(CloseReason::PeerShutdown) => break,
                    State::Closed(reason) => return Err(error::closed(reason)),
                    State::Connecting => conn = stream.shared.wait(conn, None),
                }
            }
        }
        if let Some(credential) = &options.security {
            if rendezvous {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "security is not available for rendezvous connections (neither end is the initiator)",
                ));
            }
            stream.secure(credential, Role::Initiator, options.handshake_timeout)?;
        }
        Ok(stream)
    }

    /// Run the key agreement as `role` and switch the connection to sealed datagrams; the
    /// connection is closed if it fails (`secure/handshake.rs`).
    pub(crate) fn secure(
        &mut self,
        credential: &Credential,
        role: Role,
        timeout: Duration,
    ) -> io::Result<()> {
        self.secure_detailed(credential, role, timeout).map_err(|(e, _)| e)
    }

    /// [`secure`](Self::secure), telling also whether a failure was the peer's wrong guess of
    /// the credential (which spends a one-time code phrase).
    pub(crate) fn secure_detailed(
        &mut self,
        credential: &Credential,
        role: Role,
        timeout: Duration,
    ) -> Result<(), (io::Error, bool)> {
        let Some(transcript) = self.shared.lock().handshake_transcript() else {
            let e = io::Error::new(
                io::ErrorKind::Unsupported,
                "security needs a regular (not rendezvous) connection that is set up",
            );
            return Err((e, false));
        };
        let saved = (self.read_timeout, self.write_timeout);
        let shared = Arc::clone(&self.shared);
        let until = std::time::Instant::now() + timeout;
        let result = handshake::run(
            &mut Deadline { stream: self, until },
            role,
            credential,
            &transcript,
            &mut SealSink(&shared),
        );
        if matches!(
            result,
            Err(HandshakeError::WrongCredential(_)
                | HandshakeError::OtherMode { .. }
                | HandshakeError::ChangedOnPath(_)
                | HandshakeError::NotSecure)
        ) {
            // The refusal we wrote (or, to a plain peer, our opening, which tells it that this
            // end encrypts) must reach the peer before the connection closes (the process may
            // exit right after): wait briefly for its acknowledgement.
            self.write_timeout = Some(REFUSAL_LINGER);
            let _ = self.flush_acknowledged();
        }
        (self.read_timeout, self.write_timeout) = saved;
        result.map_err(|e| {
            let wrong_guess = e.is_wrong_guess();
            let kind = match &e {
                HandshakeError::Io(io) => io.kind(),
                // Only a wrong guess is PermissionDenied: it spends a one-time code phrase.
                HandshakeError::WrongCredential(_) => io::ErrorKind::PermissionDenied,
                HandshakeError::OtherMode { .. }
                | HandshakeError::ChangedOnPath(_)
                | HandshakeError::NotSecure
                | HandshakeError::Malformed(_)
                | HandshakeError::Injected => io::ErrorKind::InvalidData,
            };
            (io::Error::new(kind, e), wrong_guess)
        })
    }

    /// The UDT handshake as this end saw it (the caller's request and the listener's answer:
    /// version, socket type, ISN, MSS, flow window and socket id of each), which a secured
    /// connection binds into its key agreement; `None` for rendezvous connections.
    pub fn handshake_transcript(&self) -> Option<[u8; crate::secure::handshake::TRANSCRIPT_LEN]> {
        self.shared.lock().handshake_transcript()
    }

    /// What the connection's sealing counted (`None`: not a secured connection).
    pub fn seal_counters(&self) -> Option<SealCounters> {
        let _conn = self.shared.lock();
        let seal = self.shared.seal.lock().unwrap_or_else(|e| e.into_inner());
        seal.as_ref().map(Sealer::counters)
    }

    /// Start a connection on a multiplexer without waiting for the handshake; takes over a
    /// handle the caller counted on `mux`, which is given back if the start fails.
    pub(crate) fn start(
        mux: Arc<Mux>,
        peer: SocketAddr,
        options: &Options,
        rendezvous: bool,
    ) -> io::Result<UdtStream> {
        match mux.open(options.connection_config(), peer, rendezvous) {
            Ok(shared) => Ok(UdtStream::wrap(shared, mux, options)),
            Err(e) => {
                mux.drop_handle();
                Err(e)
            }
        }
    }

    /// Wrap an established or connecting connection (the multiplexer's handle count is the
    /// caller's business).
    pub(crate) fn wrap(shared: Arc<ConnShared>, mux: Arc<Mux>, options: &Options) -> UdtStream {
        UdtStream { shared, mux, read_timeout: options.read_timeout, write_timeout: options.write_timeout }
    }

    /// The peer's address (an IPv4 peer of a dual-stack IPv6 socket as IPv4).
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.shared.peer_addr())
    }

    /// The local UDP address (shared with the other connections of its multiplexer: see
    /// [`connect_with`](Self::connect_with)).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.mux.local_addr())
    }

    /// Limit how long a read waits (`None`: forever).
    pub fn set_read_timeout(&mut self, timeout: Option<Duration>) {
        self.read_timeout = timeout;
    }

    /// Limit how long a write waits (`None`: forever).
    pub fn set_write_timeout(&mut self, timeout: Option<Duration>) {
        self.write_timeout = timeout;
    }

    /// Performance counters (UDT4 `perfmon`); `clear` starts a new interval.
    pub fn stats(&self, clear: bool) -> Snapshot {
        let mut conn = self.shared.lock();
        let now = clock::now_for(&conn);
        conn.stats(now, clear)
    }

    /// What a call would find now, without waiting: for readiness polling such as UDT4's
    /// `epoll` and `select`.
    pub fn readiness(&self) -> Readiness {
        let conn = self.shared.lock();
        Readiness {
            readable_bytes: conn.readable_bytes(),
            writable_bytes: conn.writable_bytes(),
            open: !matches!(conn.state(), State::Closed(_)),
            flushed: conn.is_flushed(),
        }
    }

    /// The congestion control's name.
    pub fn congestion_control(&self) -> &'static str {
        self.shared.lock().cc_name()
    }

    /// Datagrams this socket's UDP port lost because the kernel rejected them with an error
    /// (as the network may lose any; the protocol retransmits them). A full kernel send buffer
    /// loses none: see [`udp_send_deferred`](Self::udp_send_deferred).
    pub fn udp_send_drops(&self) -> u64 {
        self.mux.send_drops()
    }

    /// Datagrams this socket's UDP port found the kernel's send buffer full for, and sent later
    /// when it had room.
    pub fn udp_send_deferred(&self) -> u64 {
        self.mux.send_deferred()
    }

    /// Send one message (message sockets): whole or not at all, dropped by the sender if not
    /// delivered within `ttl`, delivered after every earlier message if `in_order`. Blocks while
    /// the send buffer is full.
    pub fn send_msg(&self, data: &[u8], ttl: Option<Duration>, in_order: bool) -> io::Result<()> {
        self.blocking(self.write_timeout, "send_msg", |conn| {
            let now = clock::now_for(conn);
            conn.send_msg(now, data, ttl, in_order)
        })?;
        Ok(())
    }

    /// Read without copying (stream sockets): blocks as [`Read::read`] does, then lends whole
    /// packets' payloads adding up to at most `max` bytes (at least one packet) into `out`, in
    /// the buffers the kernel received them into; returns the bytes lent, `Ok(0)` at end of
    /// stream. The chunks still in `out` are given back to the connection first, as buffers
    /// for the next packets, so a reader that keeps one `Vec` across calls allocates nothing
    /// and each payload byte is copied once on the receiving side, by the kernel (a dropped
    /// chunk just frees its buffer).
    pub fn read_chunks(&self, max: usize, out: &mut Vec<RecvChunk>) -> io::Result<usize> {
        self.blocking(self.read_timeout, "read", |conn| conn.read_chunks(max, out))
    }

    /// Receive one whole message (message sockets); `Ok(0)` once the peer has closed and every
    /// message was read.
    pub fn recv_msg(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.blocking(self.read_timeout, "recv_msg", |conn| conn.recv_msg(buf))
    }

    /// Wait until everything written has been acknowledged by the peer.
    pub fn flush_acknowledged(&self) -> io::Result<()> {
        self.blocking(self.write_timeout, "flush", |conn| {
            if conn.is_flushed() {
                Ok(())
            } else if let State::Closed(reason) = conn.state() {
                Err(ConnError::Closed(reason))
            } else {
                Err(ConnError::WouldBlock)
            }
        })
    }

    /// Close: send what is buffered (for at most the linger time), then shut down; returns once
    /// the shutdown packet has been handed to the socket, so a process may exit right after.
    pub fn close(self) -> io::Result<()> {
        {
            let mut conn = self.shared.lock();
            let now = clock::now_for(&conn);
            conn.close(now);
            self.shared.touch(&conn);
        }
        self.mux.wake(&self.shared);
        let linger = self.shared.lock().config().linger.unwrap_or_default();
        let deadline = std::time::Instant::now() + linger + Duration::from_secs(1);
        let mut conn = self.shared.lock();
        loop {
            match conn.state() {
                State::Closed(CloseReason::Local) | State::Closed(CloseReason::PeerShutdown)
                    if conn.is_drained() =>
                {
                    return Ok(())
                }
                State::Closed(reason) if conn.is_drained() => return Err(error::closed(reason)),
                _ => {}
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(error::timed_out("close"));
            }
            conn = self.shared.wait(conn, Some(left));
        }
    }

    /// Run `op` on the connection until it stops answering `WouldBlock`, waiting for the I/O
    /// thread in between, at most `timeout`. The I/O thread is woken afterwards only if the
    /// call brought the connection's next deadline nearer (its sleep would otherwise end late).
    fn blocking<T>(
        &self,
        timeout: Option<Duration>,
        what: &str,
        mut op: impl FnMut(&mut Connection) -> Result<T, ConnError>,
    ) -> io::Result<T> {
        let deadline = timeout.map(|t| std::time::Instant::now() + t);
        let mut conn: MutexGuard<'_, Connection> = self.shared.lock();
        loop {
            let before = conn.poll_timeout();
            match op(&mut conn) {
                Ok(v) => {
                    let wake = self.shared.changed_by_app(&mut conn, before);
                    drop(conn);
                    if wake {
                        self.mux.wake(&self.shared);
                    }
                    return Ok(v);
                }
                Err(ConnError::WouldBlock) => {}
                Err(e) => return Err(error::from_conn(e)),
            }
            let timeout = match deadline {
                None => None,
                Some(d) => {
                    let left = d.saturating_duration_since(std::time::Instant::now());
                    if left.is_zero() {
                        return Err(error::timed_out(what));
                    }
                    Some(left)
                }
            };
            conn = self.shared.wait(conn, timeout);
        }
    }
}

impl Read for UdtStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self).read(buf)
    }
}

impl Read for &UdtStream {
    /// Blocks until data arrives; `Ok(0)` at end of stream (the peer closed and all was read).
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // A read may free buffer space the peer should hear about (a window update): the core
        // then brings its ACK timer forward, and `blocking` wakes the I/O thread.
        self.blocking(self.read_timeout, "read", |conn| conn.read(buf))
    }
}

impl Write for UdtStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&*self).write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        (&*self).flush()
    }
}

impl Write for &UdtStream {
    /// Blocks until some of `buf` fits the send buffer.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let chunk = &buf[..buf.len().min(WRITE_CHUNK)];
        self.blocking(self.write_timeout, "write", |conn| conn.write(chunk))
    }

    /// Data is handed to the protocol on `write`; nothing to flush. Use
    /// [`UdtStream::flush_acknowledged`] to wait for the peer's acknowledgement.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for UdtStream {
    fn drop(&mut self) {
        {
            let mut conn = self.shared.lock();
            let now = clock::now_for(&conn);
            conn.close(now);
            self.shared.touch(&conn);
        }
        self.mux.wake(&self.shared);
        self.mux.drop_handle();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::listener::UdtListener;
    use std::sync::mpsc;

    /// Options whose binding caller is delayed past the I/O thread's idle linger (50 ms), as on
    /// a loaded machine.
    fn delayed() -> Options {
        let mut o = Options::default();
        o.hooks.after_bind = Duration::from_millis(300);
        o
    }

    /// Run `f` on a thread and wait at most 20 s for its answer: a hang fails the test instead
    /// of hanging it.
    fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(20)).unwrap_or_else(|_| panic!("{what} hung"))
    }

    #[test]
    fn a_connect_delayed_after_binding_still_connects() {
        let listener = UdtListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || listener.accept().map(|(s, _)| s));
        let client = within("connect", move || UdtStream::connect_with(addr, delayed()));
        let mut client = client.expect("connect");
        let mut server = server.join().unwrap().expect("accept");
        client.write_all(b"ping").unwrap();
        let mut buf = [0u8; 4];
        server.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"ping");
    }

    #[test]
    fn a_listener_delayed_after_binding_still_accepts() {
        let mut listener = within("bind", || UdtListener::bind_with("127.0.0.1:0", delayed())).unwrap();
        listener.set_accept_timeout(Some(Duration::from_secs(15)));
        let addr = listener.local_addr().unwrap();
        let client = std::thread::spawn(move || UdtStream::connect(addr));
        let accepted = within("accept", move || listener.accept().map(|(s, _)| s));
        // Kept until the client has connected (dropping it would close the connection).
        let _server = accepted.expect("accept");
        client.join().unwrap().expect("connect");
    }

    /// Poll `f` every millisecond for at most 10 s until it holds.
    fn eventually(what: &str, mut f: impl FnMut() -> bool) {
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while !f() {
            assert!(std::time::Instant::now() < until, "{what} never happened");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn readiness_follows_data_and_the_peer_s_close() {
        let listener = UdtListener::bind("127.0.0.1:0").unwrap();
        assert_eq!(listener.pending(), 0);
        let client = UdtStream::connect(listener.local_addr().unwrap()).unwrap();
        eventually("a connection waiting for accept", || listener.pending() == 1);
        let (server, _) = listener.accept().unwrap();
        assert_eq!(listener.pending(), 0);
        let idle = server.readiness();
        assert!(idle.open && idle.flushed && idle.writable_bytes > 0);
        assert_eq!(idle.readable_bytes, 0);
        (&client).write_all(b"hello").unwrap();
        eventually("the bytes to read", || server.readiness().readable_bytes == 5);
        eventually("the acknowledgement", || client.readiness().flushed);
        client.close().unwrap();
        eventually("the peer's close", || !server.readiness().open);
        assert_eq!(server.readiness().readable_bytes, 5, "what arrived stays readable");
    }
}
