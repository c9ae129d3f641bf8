//! `UdtListener`: accepts UDT connections on one UDP port. Accepted connections share the port
//! (one multiplexer), and so can outgoing connections opened with [`UdtListener::connect`].

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use crate::mux::Mux;
use crate::options::Options;
use crate::stream::{resolve, UdtStream};

/// A listening UDT socket.
#[derive(Debug)]
pub struct UdtListener {
    pub(crate) mux: Arc<Mux>,
    pub(crate) options: Options,
    accept_timeout: Option<Duration>,
}

impl UdtListener {
    /// Listen on `addr` with default options.
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<UdtListener> {
        UdtListener::bind_with(addr, Options::default())
    }

    /// Listen on `addr`; accepted connections get `options`, and at most
    /// `options.max_accepted` are alive at once.
    pub fn bind_with(addr: impl ToSocketAddrs, options: Options) -> io::Result<UdtListener> {
        // The multiplexer comes with this listener's handle counted.
        let mux = Mux::bind(resolve(addr)?, &options)?;
        options.hooks().after_bind();
        if let Err(e) = mux.listen(options.config.clone(), options.max_accepted) {
            mux.drop_handle();
            return Err(e);
        }
        Ok(UdtListener { mux, options, accept_timeout: None })
    }

    /// The bound address (with the real port when bound to port 0).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.mux.local_addr())
    }

    /// Limit how long `accept` waits (`None`: forever).
    pub fn set_accept_timeout(&mut self, timeout: Option<Duration>) {
        self.accept_timeout = timeout;
    }

    /// Wait for the next connection.
    pub fn accept(&self) -> io::Result<(UdtStream, SocketAddr)> {
        let shared = self.mux.accept(self.accept_timeout)?;
        self.mux.add_handle();
        let peer = shared.peer_addr();
        Ok((UdtStream::wrap(shared, Arc::clone(&self.mux), &self.options), peer))
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
}

impl Drop for UdtListener {
    fn drop(&mut self) {
        self.mux.stop_listening();
        self.mux.drop_handle();
    }
}
