//! The async API (feature `tokio`): [`AsyncUdtListener`] and [`AsyncUdtStream`], which implements
//! tokio's `AsyncRead` and `AsyncWrite`, so a UDT connection drops into async programs.
//!
//! No runtime thread is added: the same I/O thread that serves blocking sockets wakes async
//! tasks. As `&TcpStream` in the standard library, `&AsyncUdtStream` reads and writes too, so a
//! connection shared between tasks (an `Arc`) can be written by one while another samples its
//! counters or reads it. An operation that would block registers the task's waker while holding the
//! connection's lock; the I/O thread touches the connection only under that lock and, after a
//! round that changed what callers wait for (see `view.rs`), wakes every registered task, so no
//! wake-up is lost.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use udt_proto::buffer::RecvChunk;
use udt_proto::connection::{CloseReason, ConnError, Snapshot, State};

use crate::acceptor;
use crate::addr::resolve;
use crate::clock;
use crate::error;
use crate::listener::UdtListener;
use crate::options::Options;
use crate::secure::handshake::Role;
use crate::stream::UdtStream;

/// `stream` after the key agreement `options` ask for (none: as it is). The agreement is a few
/// blocking reads and writes of the connection: it runs on a thread of its own while the task
/// awaits it.
async fn secured(stream: UdtStream, options: &Options, role: Role) -> io::Result<UdtStream> {
    let Some(credential) = options.security.clone() else { return Ok(stream) };
    let timeout = options.handshake_timeout;
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new().name("udt-handshake".into()).spawn(move || {
        let mut stream = stream;
        let result = stream.secure(&credential, role, timeout).map(|()| stream);
        let _ = tx.send(result);
    })?;
    rx.await.map_err(|_| io::Error::other("the key agreement's thread stopped"))?
}

/// A secured listener's key agreements (`acceptor.rs`): their outcomes, and whether a
/// wrong guess spent its code phrase.
#[derive(Debug)]
struct Agreed {
    rx: tokio::sync::mpsc::Receiver<acceptor::Outcome>,
    spent: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// A listening UDT socket for async programs.
#[derive(Debug)]
pub struct AsyncUdtListener {
    inner: UdtListener,
    /// With `Options::security`: the key agreements' outcomes, once the first `accept` started
    /// them (`acceptor.rs`).
    agreed: tokio::sync::Mutex<Option<Agreed>>,
}

impl AsyncUdtListener {
    /// Listen on `addr` (binding does not block).
    pub fn bind_with(addr: impl ToSocketAddrs, options: Options) -> io::Result<Self> {
        Ok(AsyncUdtListener { inner: UdtListener::bind_with(addr, options)?, agreed: Default::default() })
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// The next connection. With `Options::security`, the next one whose key agreement
    /// completed: agreements run concurrently on threads of their own (at most
    /// `Options::handshake_timeout` each), so a peer that stalls delays nobody else; a peer that
    /// fails its agreement is an error, as with [`UdtListener::accept`].
    pub async fn accept(&self) -> io::Result<(AsyncUdtStream, SocketAddr)> {
        if self.inner.options.security.is_none() {
            let (stream, peer) = std::future::poll_fn(|cx| self.inner.poll_accept(cx.waker())).await?;
            return Ok((AsyncUdtStream { inner: stream }, peer));
        }
        let mut agreed = self.agreed.lock().await;
        if agreed.is_none() {
            let (tx, rx) = tokio::sync::mpsc::channel(acceptor::MAX_WAITING);
            // Full (nobody accepting): the outcome is dropped, its connection closed.
            let deliver: acceptor::Deliver = std::sync::Arc::new(move |outcome| {
                !matches!(tx.try_send(outcome), Err(tokio::sync::mpsc::error::TrySendError::Closed(_)))
            });
            let spent = acceptor::start(
                std::sync::Arc::clone(self.inner.mux.accept_queue()),
                self.inner.shards().to_vec(),
                self.inner.options.clone(),
                deliver,
            )?;
            *agreed = Some(Agreed { rx, spent });
        }
        let agreed = agreed.as_mut().ok_or_else(|| io::Error::other("no key agreements"))?;
        let (stream, peer) = agreed.rx.recv().await.ok_or_else(|| {
            if agreed.spent.load(std::sync::atomic::Ordering::SeqCst) {
                acceptor::spent_error()
            } else {
                io::Error::new(io::ErrorKind::NotConnected, "the listener is closed")
            }
        })??;
        Ok((AsyncUdtStream { inner: stream }, peer))
    }
}

/// A UDT connection for async programs.
#[derive(Debug)]
pub struct AsyncUdtStream {
    inner: UdtStream,
}

impl AsyncUdtStream {
    /// Connect to a UDT listener from this process's shared client port (as
    /// [`UdtStream::connect_with`]; the blocking and async connections share it).
    pub async fn connect_with(addr: impl ToSocketAddrs, options: Options) -> io::Result<Self> {
        let peer = resolve(addr)?;
        // The multiplexer comes with the stream's handle counted.
        let mux = crate::shared::client_mux(peer, &options)?;
        let stream = AsyncUdtStream { inner: UdtStream::start(mux, peer, &options, false)? };
        std::future::poll_fn(|cx| stream.poll_connected(cx)).await?;
        Ok(AsyncUdtStream { inner: secured(stream.inner, &options, Role::Initiator).await? })
    }

    /// The blocking socket behind this one.
    pub fn into_std(self) -> UdtStream {
        self.inner
    }

    /// An established (or connecting) blocking socket as an async one: a connection set up
    /// with the blocking API (a connect with fallbacks, a greeting) served by tasks from then
    /// on. Its read and write timeouts no longer apply.
    pub fn from_std(stream: UdtStream) -> Self {
        AsyncUdtStream { inner: stream }
    }

    /// The congestion control's name.
    pub fn congestion_control(&self) -> &'static str {
        self.inner.congestion_control()
    }

    /// Wait until everything written has been acknowledged by the peer (as
    /// [`UdtStream::flush_acknowledged`]); an error once the connection closed with data
    /// unacknowledged.
    pub async fn flush_acknowledged(&self) -> io::Result<()> {
        std::future::poll_fn(|cx| self.poll_acknowledged(cx)).await
    }

    fn poll_acknowledged(&self, cx: &Context<'_>) -> Poll<io::Result<()>> {
        let conn = self.inner.shared.lock();
        if conn.is_flushed() {
            return Poll::Ready(Ok(()));
        }
        if let State::Closed(reason) = conn.state() {
            return Poll::Ready(Err(error::closed(reason)));
        }
        self.inner.shared.register(cx.waker());
        Poll::Pending
    }

    /// Read without copying, as [`UdtStream::read_chunks`]: waits until data arrives, then
    /// lends whole packets' payloads adding up to at most `max` bytes (at least one packet)
    /// into `out`, after giving back the chunks still in it; `Ok(0)` at end of stream.
    pub async fn read_chunks(&self, max: usize, out: &mut Vec<RecvChunk>) -> io::Result<usize> {
        std::future::poll_fn(|cx| self.poll_read_chunks(cx, max, out)).await
    }

    fn poll_read_chunks(
        &self,
        cx: &Context<'_>,
        max: usize,
        out: &mut Vec<RecvChunk>,
    ) -> Poll<io::Result<usize>> {
        self.poll_op(cx, |conn| conn.read_chunks(max, out))
    }

    /// Performance counters; `clear` starts a new interval.
    pub fn stats(&self, clear: bool) -> Snapshot {
        self.inner.stats(clear)
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.peer_addr()
    }

    /// The local UDP address (shared with the other connections of its multiplexer, as
    /// [`UdtStream::local_addr`]).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    fn poll_connected(&self, cx: &Context<'_>) -> Poll<io::Result<()>> {
        let conn = self.inner.shared.lock();
        match conn.state() {
            State::Connected => Poll::Ready(Ok(())),
            State::Closed(reason) => Poll::Ready(Err(error::closed(reason))),
            State::Connecting => {
                self.inner.shared.register(cx.waker());
                Poll::Pending
            }
        }
    }

    /// Close: flush (at most the linger time), send the shutdown, and wait until it has left.
    pub async fn close(self) -> io::Result<()> {
        {
            let mut conn = self.inner.shared.lock();
            let now = clock::now_for(&conn);
            conn.close(now);
            self.inner.shared.touch(&conn);
        }
        self.inner.mux.wake(&self.inner.shared);
        std::future::poll_fn(|cx| self.poll_closed(cx)).await
    }

    fn poll_closed(&self, cx: &Context<'_>) -> Poll<io::Result<()>> {
        let conn = self.inner.shared.lock();
        match conn.state() {
            State::Closed(CloseReason::Local | CloseReason::PeerShutdown) if conn.is_drained() => {
                Poll::Ready(Ok(()))
            }
            State::Closed(reason) if conn.is_drained() => Poll::Ready(Err(error::closed(reason))),
            _ => {
                self.inner.shared.register(cx.waker());
                Poll::Pending
            }
        }
    }
}

impl AsyncUdtStream {
    /// Run `op` on the connection once: ready with its result, or pending (the waker
    /// registered) on `WouldBlock`. The I/O thread is woken afterwards only if the call
    /// brought the connection's next deadline nearer (a read may make a window update due:
    /// the core then brings its ACK timer forward), as [`UdtStream`]'s blocking calls do.
    fn poll_op<T>(
        &self,
        cx: &Context<'_>,
        op: impl FnOnce(&mut udt_proto::connection::Connection) -> Result<T, ConnError>,
    ) -> Poll<io::Result<T>> {
        let mut conn = self.inner.shared.lock();
        let before = conn.poll_timeout();
        match op(&mut conn) {
            Ok(v) => {
                let wake = self.inner.shared.changed_by_app(&mut conn, before);
                drop(conn);
                if wake {
                    self.inner.mux.wake(&self.inner.shared);
                }
                Poll::Ready(Ok(v))
            }
            Err(ConnError::WouldBlock) => {
                self.inner.shared.register(cx.waker());
                Poll::Pending
            }
            Err(e) => Poll::Ready(Err(error::from_conn(e))),
        }
    }

    fn poll_read_shared(&self, cx: &Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let n = std::task::ready!(self.poll_op(cx, |conn| conn.read(buf.initialize_unfilled())))?;
        buf.advance(n);
        Poll::Ready(Ok(()))
    }

    fn poll_write_shared(&self, cx: &Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let chunk = &data[..data.len().min(256 * 1024)];
        self.poll_op(cx, |conn| conn.write(chunk))
    }

    /// Close the connection (UDT has no half-close): flush, shut down, wait for it to leave.
    fn poll_shutdown_shared(&self, cx: &Context<'_>) -> Poll<io::Result<()>> {
        {
            let mut conn = self.inner.shared.lock();
            if conn.state() == State::Connected {
                let now = clock::now_for(&conn);
                conn.close(now);
                self.inner.shared.touch(&conn);
                drop(conn);
                self.inner.mux.wake(&self.inner.shared);
            }
        }
        self.poll_closed(cx)
    }
}

impl AsyncRead for AsyncUdtStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_read_shared(cx, buf)
    }
}

impl AsyncWrite for AsyncUdtStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        self.get_mut().poll_write_shared(cx, data)
    }

    /// Written data is with the protocol already.
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// Close the connection (UDT has no half-close): flush, shut down, wait for it to leave.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_shutdown_shared(cx)
    }
}

impl AsyncRead for &AsyncUdtStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_read_shared(cx, buf)
    }
}

impl AsyncWrite for &AsyncUdtStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        self.get_mut().poll_write_shared(cx, data)
    }

    /// Written data is with the protocol already.
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// Close the connection (UDT has no half-close): flush, shut down, wait for it to leave.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_shutdown_shared(cx)
    }
}
