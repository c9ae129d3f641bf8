//! `UdtListener`: accepts UDT connections on one UDP port. Accepted connections share the port
//! (one multiplexer, or with `Options::io_threads` one of the port's I/O threads each, see
//! `shard.rs`), and so can outgoing connections opened with [`UdtListener::connect`].

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::accept_queue::{AcceptQueue, Accepted};
use crate::acceptor::Acceptor;
use crate::addr::resolve;
use crate::mux::{Mux, Shard};
use crate::options::Options;
use crate::stream::UdtStream;

/// A listening UDT socket.
#[derive(Debug)]
pub struct UdtListener {
    /// The port's first I/O thread (outgoing connections use it).
    pub(crate) mux: Arc<Mux>,
    /// Every I/O thread of the port, by index (the first is `mux`).
    shards: Vec<Arc<Mux>>,
    pub(crate) options: Options,
    accept_timeout: Option<Duration>,
    /// With `Options::security`: the key agreements, started by the first `accept`.
    acceptor: Mutex<Option<Arc<Acceptor>>>,
}

impl UdtListener {
    /// Listen on `addr` with default options.
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<UdtListener> {
        UdtListener::bind_with(addr, Options::default())
    }

    /// Listen on `addr`; accepted connections get `options`, and at most
    /// `options.max_accepted` are alive at once, served by `options.io_threads` threads.
    ///
    /// With a code phrase (`Options::security`), the phrase must be hard enough to guess
    /// ([`crate::secure::MIN_CODE_BITS`]; `InvalidInput` otherwise), and the listener is spent
    /// by the first wrong guess: `accept` reports that peer's failure, then fails for good.
    pub fn bind_with(addr: impl ToSocketAddrs, options: Options) -> io::Result<UdtListener> {
        if let Some(crate::secure::Credential::CodePhrase(code)) = &options.security {
            crate::secure::check_code_strength(code)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        }
        let addr = resolve(addr)?;
        let shards = bind_shards(addr, &options)?;
        let listener = UdtListener {
            mux: Arc::clone(&shards[0]),
            shards,
            options,
            accept_timeout: None,
            acceptor: Mutex::new(None),
        };
        listener.options.hooks().after_bind();
        let per_thread = listener.options.max_accepted.div_ceil(listener.shards.len());
        for mux in &listener.shards {
            // On failure, dropping the listener gives every thread its handle back.
            mux.listen(listener.options.connection_config(), per_thread)?;
        }
        listener.mux.accept_queue().open();
        Ok(listener)
    }

    /// The bound address (with the real port when bound to port 0).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.mux.local_addr())
    }

    /// Limit how long `accept` waits (`None`: forever).
    pub fn set_accept_timeout(&mut self, timeout: Option<Duration>) {
        self.accept_timeout = timeout;
    }

    /// Wait for the next connection. With `Options::security`, the next connection whose key
    /// agreement completed: agreements run concurrently, each on a thread of its own and for at
    /// most `Options::handshake_timeout`, so a peer that stalls delays nobody else; a peer that
    /// failed its agreement is an error (its connection closed; call `accept` again for the
    /// next one), except after a wrong guess of a code phrase, which ends the listener: every
    /// later call fails with `PermissionDenied`.
    pub fn accept(&self) -> io::Result<(UdtStream, SocketAddr)> {
        if self.options.security.is_some() {
            let acceptor = {
                let mut slot = self.acceptor.lock().unwrap_or_else(|e| e.into_inner());
                match slot.as_ref() {
                    Some(a) => Arc::clone(a),
                    None => {
                        let queue = Arc::clone(self.mux.accept_queue());
                        let a = Arc::new(Acceptor::start(queue, self.shards.clone(), self.options.clone())?);
                        *slot = Some(Arc::clone(&a));
                        a
                    }
                }
            };
            return acceptor.next(self.accept_timeout);
        }
        let accepted = self.mux.accept_queue().pop(self.accept_timeout)?;
        Ok(self.take(accepted))
    }

    /// Connections waiting for `accept` now (with `Options::security`: connections whose key
    /// agreement has not started yet count too): what readiness polling such as UDT4's `epoll`
    /// reports as a readable listener.
    pub fn pending(&self) -> usize {
        self.mux.accept_queue().pending()
    }

    /// Take an accepted connection if one is waiting; otherwise register `waker` for the next.
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub(crate) fn poll_accept(
        &self,
        waker: &std::task::Waker,
    ) -> std::task::Poll<io::Result<(UdtStream, SocketAddr)>> {
        self.mux.accept_queue().poll(waker).map_ok(|a| self.take(a))
    }

    /// A stream for a connection the queue gave, on the thread that owns it.
    fn take(&self, accepted: Accepted) -> (UdtStream, SocketAddr) {
        let mux = &self.shards[accepted.shard];
        // The listener holds a handle on the thread: it cannot have stopped.
        mux.add_handle();
        let peer = accepted.conn.peer_addr();
        (UdtStream::wrap(accepted.conn, Arc::clone(mux), &self.options), peer)
    }

    /// Connect to `addr` from this listener's port (the multiplexer is shared).
    pub fn connect(&self, addr: impl ToSocketAddrs) -> io::Result<UdtStream> {
        self.mux.add_handle();
        UdtStream::open(Arc::clone(&self.mux), resolve(addr)?, self.options.clone(), false)
    }

    /// An iterator over incoming connections (errors included), like `TcpListener::incoming`.
    pub fn incoming(&self) -> impl Iterator<Item = io::Result<UdtStream>> + '_ {
        std::iter::from_fn(move || Some(self.accept().map(|(s, _)| s)))
    }

    /// The accept queue (tests).
    #[cfg(test)]
    pub(crate) fn accept_queue(&self) -> &AcceptQueue {
        self.mux.accept_queue()
    }

    /// The port's I/O threads.
    #[cfg_attr(not(any(test, feature = "tokio")), allow(dead_code))]
    pub(crate) fn shards(&self) -> &[Arc<Mux>] {
        &self.shards
    }
}

/// Bind the port's I/O threads: one, or `options.io_threads` sockets on one port with
/// `SO_REUSEPORT`, the steering program attached, each thread knowing the others. Each comes
/// with the listener's handle counted.
fn bind_shards(addr: SocketAddr, options: &Options) -> io::Result<Vec<Arc<Mux>>> {
    let count = options.io_threads.max(1);
    if count == 1 {
        return Ok(vec![Mux::bind(addr, options)?]);
    }
    let options = Options { reuse_address: true, ..options.clone() };
    let accept = Arc::new(AcceptQueue::default());
    let mut shards: Vec<Arc<Mux>> = Vec::with_capacity(count);
    let mut at = addr;
    for index in 0..count {
        let shard = Shard { index, count, accept: Arc::clone(&accept) };
        match Mux::bind_shard(at, &options, shard) {
            Ok(mux) => {
                // The others join the port the first one got (port 0: a free one).
                at = mux.local_addr();
                shards.push(mux);
            }
            Err(e) => {
                for mux in &shards {
                    mux.drop_handle();
                }
                return Err(e);
            }
        }
    }
    let steering = if options.hooks().no_steering() {
        Err(io::Error::other("turned off by a test"))
    } else {
        crate::shard::attach_steering(shards[0].raw_fd(), count)
    };
    if let Err(e) = steering {
        // The kernel then spreads by address and port; forwarding keeps datagrams right.
        tracing::info!(error = %e, "no socket-id steering for the port's I/O threads");
    }
    let weak: Vec<_> = shards.iter().map(Arc::downgrade).collect();
    for mux in &shards {
        mux.set_siblings(weak.clone());
    }
    Ok(shards)
}

impl Drop for UdtListener {
    fn drop(&mut self) {
        // Every thread stops accepting before the queue closes: nothing is pushed after.
        for mux in &self.shards {
            mux.stop_listening();
        }
        for accepted in self.mux.accept_queue().close() {
            self.shards[accepted.shard].close_unaccepted(&accepted.conn);
        }
        for mux in &self.shards {
            mux.drop_handle();
        }
    }
}
