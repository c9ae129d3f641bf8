//! `udt.connect`, `udt.listen` and `udt.Listener`: opening connections.
//!
//! `connect` runs the runtime's connect (the UDT handshake, then the key agreement when a key
//! or code phrase is given) on a thread of its own and waits for it in slices, so Ctrl-C and
//! `timeout` end the wait; a connection that completes after the caller gave up is closed.
//! `Listener.accept` waits in slices on a listener whose own accept timeout is one slice.
//!
//! Invariant: a `Listener`'s runtime listener is taken out under its write lock by `close`;
//! every call after that raises `udt.NotConnectedError`.

use std::io;
use std::sync::{mpsc, Mutex, RwLock};
use std::time::Duration;

use pyo3::prelude::*;
use udt::{UdtListener, UdtStream};

use crate::errors;
use crate::options::{addr_tuple, is_message, resolve, Choice};
use crate::stream::Stream;
use crate::wait::{self, SLICE};

/// Connect to a UDT listener at `addr` (`(host, port)` or `"host:port"`).
///
/// `cc` chooses the congestion control (`"udt"`, `"cubic:beta=0.7"`, ...: `udt cc list`);
/// `key` (the shared secret as bytes, or a key file's path) or `code` (a code phrase) make
/// the connection encrypted and authenticated, and the listener must have the same; neither
/// gives a plain UDT4 connection. `timeout` limits the connect and becomes the stream's
/// timeout. `mode="message"` opens a message connection.
#[pyfunction]
#[pyo3(signature = (addr, *, cc = None, key = None, code = None, timeout = None, mode = None, mss = None, peer_timeout = None))]
#[allow(clippy::too_many_arguments)]
pub fn connect(
    py: Python<'_>,
    addr: &Bound<'_, PyAny>,
    cc: Option<&str>,
    key: Option<&Bound<'_, PyAny>>,
    code: Option<&str>,
    timeout: Option<f64>,
    mode: Option<&str>,
    mss: Option<u32>,
    peer_timeout: Option<f64>,
) -> PyResult<Stream> {
    let timeout = wait::timeout_from_secs(timeout)?;
    let peer_timeout = wait::timeout_from_secs(peer_timeout)?;
    let choice = Choice { cc, key, code, mode, mss, peer_timeout, listens: false };
    let mut options = choice.options(py)?;
    if let Some(t) = timeout {
        options.config.connect_timeout = t;
        options.handshake_timeout = t;
    }
    let message = is_message(&options);
    let target = resolve(py, addr)?;
    let stream = open(py, wait::deadline(timeout), move || UdtStream::connect_with(target, options))?;
    Stream::wrap(stream, message, timeout).map_err(|e| errors::from_io(py, &e))
}

/// Run `connect` on a thread of its own and wait for it until `deadline`.
pub fn open(
    py: Python<'_>,
    deadline: Option<std::time::Instant>,
    connect: impl FnOnce() -> io::Result<UdtStream> + Send + 'static,
) -> PyResult<UdtStream> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("udt-py connect".into())
        .spawn(move || {
            // If the caller gave up meanwhile, the stream comes back here and is closed.
            let _ = tx.send(connect());
        })
        .map_err(|e| errors::from_io(py, &e))?;
    match wait::answer(py, rx, deadline, "connect")? {
        Some(Ok(stream)) => Ok(stream),
        Some(Err(e)) => Err(errors::from_io(py, &e)),
        None => Err(errors::raise(py, "Error", 0, "the connecting thread ended without an answer")),
    }
}

/// Listen for UDT connections on `addr` (`(host, port)` or `"host:port"`; port 0 picks a free
/// one: see `local_addr`).
///
/// `backlog` is the most connections kept accepted at once (taken by `accept` or not); `key`
/// or `code` require every peer to have the same credential (a code phrase is spent by the
/// first wrong guess: `accept` then raises `udt.AuthenticationError` for good); `cc`, `mode`,
/// `mss` and `peer_timeout` apply to every accepted connection.
#[pyfunction]
#[pyo3(signature = (addr, *, backlog = None, cc = None, key = None, code = None, mode = None, mss = None, peer_timeout = None))]
#[allow(clippy::too_many_arguments)]
pub fn listen(
    py: Python<'_>,
    addr: &Bound<'_, PyAny>,
    backlog: Option<usize>,
    cc: Option<&str>,
    key: Option<&Bound<'_, PyAny>>,
    code: Option<&str>,
    mode: Option<&str>,
    mss: Option<u32>,
    peer_timeout: Option<f64>,
) -> PyResult<Listener> {
    let peer_timeout = wait::timeout_from_secs(peer_timeout)?;
    let choice = Choice { cc, key, code, mode, mss, peer_timeout, listens: true };
    let mut options = choice.options(py)?;
    if let Some(backlog) = backlog {
        options.max_accepted = backlog.max(1);
    }
    let at = resolve(py, addr)?;
    Listener::bind(py, at, options)
}

/// A listening UDT socket (from `udt.listen`).
#[pyclass(module = "udt", frozen)]
pub struct Listener {
    inner: RwLock<Option<UdtListener>>,
    timeout: Mutex<Option<Duration>>,
    message: bool,
    local: std::net::SocketAddr,
}

impl Listener {
    /// Bind `at` with `options` (its accept timeout a slice).
    pub fn bind(py: Python<'_>, at: std::net::SocketAddr, options: udt::Options) -> PyResult<Listener> {
        let message = is_message(&options);
        let bound = py.detach(|| UdtListener::bind_with(at, options));
        let mut listener = bound.map_err(|e| errors::from_io(py, &e))?;
        listener.set_accept_timeout(Some(SLICE));
        let local = listener.local_addr().map_err(|e| errors::from_io(py, &e))?;
        Ok(Listener { inner: RwLock::new(Some(listener)), timeout: Mutex::new(None), message, local })
    }

    /// Limit how long `accept` waits (`None`: no limit).
    pub fn settimeout_duration(&self, timeout: Option<Duration>) {
        *self.timeout.lock().unwrap_or_else(|e| e.into_inner()) = timeout;
    }

    /// The bound address as `(host, port)`.
    pub fn local_addr_tuple(&self) -> (String, u16) {
        addr_tuple(self.local)
    }

    /// The next connection, as the runtime gives it, waiting at most the listener's timeout.
    pub fn accept_stream(&self, py: Python<'_>) -> PyResult<(UdtStream, std::net::SocketAddr)> {
        let deadline = wait::deadline(*self.timeout.lock().unwrap_or_else(|e| e.into_inner()));
        wait::sliced(py, deadline, "accept", || {
            let guard = self.inner.read().unwrap_or_else(|e| e.into_inner());
            match guard.as_ref() {
                Some(listener) => listener.accept(),
                None => Err(io::Error::new(io::ErrorKind::NotConnected, "the listener is closed")),
            }
        })
    }
}

#[pymethods]
impl Listener {
    /// Wait for the next connection: returns `(stream, (host, port))`. With a key or code
    /// phrase, a peer that failed the key agreement raises (`udt.AuthenticationError` for a
    /// wrong credential); call `accept` again for the next peer.
    fn accept(&self, py: Python<'_>) -> PyResult<(Stream, (String, u16))> {
        let (stream, peer) = self.accept_stream(py)?;
        let stream = Stream::wrap(stream, self.message, None).map_err(|e| errors::from_io(py, &e))?;
        Ok((stream, addr_tuple(peer)))
    }

    /// Limit how long `accept` waits, in seconds (`None`: no limit).
    fn settimeout(&self, timeout: Option<f64>) -> PyResult<()> {
        *self.timeout.lock().unwrap_or_else(|e| e.into_inner()) = wait::timeout_from_secs(timeout)?;
        Ok(())
    }

    /// How long `accept` waits at most, in seconds (`None`: no limit).
    fn gettimeout(&self) -> Option<f64> {
        self.timeout.lock().unwrap_or_else(|e| e.into_inner()).map(|t| t.as_secs_f64())
    }

    /// Stop listening (connections accepted earlier stay open). Closing twice does nothing.
    fn close(&self, py: Python<'_>) {
        let taken = self.inner.write().unwrap_or_else(|e| e.into_inner()).take();
        py.detach(|| drop(taken));
    }

    /// Whether `close` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.read().unwrap_or_else(|e| e.into_inner()).is_none()
    }

    /// The bound address `(host, port)` (the real port when bound to port 0).
    #[getter]
    fn local_addr(&self) -> (String, u16) {
        addr_tuple(self.local)
    }

    /// The bound address, as `socket.getsockname()`.
    fn getsockname(&self) -> (String, u16) {
        addr_tuple(self.local)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _kind: Option<&Bound<'_, PyAny>>,
        _value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        self.close(py);
        false
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { " closed" } else { "" };
        format!("<udt.Listener{state} local={}>", self.local)
    }
}
