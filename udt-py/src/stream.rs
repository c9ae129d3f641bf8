//! `udt.Stream`: one UDT connection as a socket-like Python object.
//!
//! Stream connections use `send`/`sendall`/`recv`/`recv_into`/`sendfile`/`recvfile`, message
//! connections `send_msg`/`recv_msg`. Every blocking call releases the GIL and waits in slices
//! (`wait.rs`), so other threads run, Ctrl-C interrupts it, and the stream's timeout
//! (`settimeout`, a whole call's limit) raises `udt.TimeoutError`.
//!
//! Invariants: the wrapped [`UdtStream`]'s own read and write timeouts are [`SLICE`]; calls
//! share it through a read lock (one thread may send while another receives), `close` takes it
//! out under the write lock, and every call after that raises `udt.NotConnectedError`.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::{mpsc, Mutex, RwLock};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyInt, PyMemoryView};
use udt::UdtStream;

use crate::errors;
use crate::files;
use crate::options::addr_tuple;
use crate::stats;
use crate::wait::{self, SLICE};

/// Largest message `recv_msg` takes by default.
const DEFAULT_MSG_BUFSIZE: usize = 1 << 20;

/// A UDT connection (from `udt.connect` or `Listener.accept`).
///
/// A stream connection works like a connected TCP socket (`send`, `sendall`, `recv`,
/// `recv_into`, `sendfile`, `recvfile`); a message connection (`mode="message"`) sends and
/// receives whole messages (`send_msg`, `recv_msg`). Use it as a context manager, or call
/// `close()`, so buffered data is delivered before the process exits.
#[pyclass(module = "udt", frozen)]
pub struct Stream {
    inner: RwLock<Option<UdtStream>>,
    /// The caller's limit for one blocking call (`None`: for ever).
    timeout: Mutex<Option<Duration>>,
    /// A reusable buffer for `recv_into` (taken if free; a concurrent call makes its own).
    scratch: Mutex<Vec<u8>>,
    message: bool,
    local: SocketAddr,
    peer: SocketAddr,
}

/// The error of a call on a closed stream.
fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "the stream is closed")
}

/// The bytes of a bytes-like object (`bytes` as they are; anything else with the buffer
/// protocol copied through `bytes(...)`).
pub fn bytes_like<'py>(data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    if let Ok(b) = data.cast::<PyBytes>() {
        return Ok(b.clone());
    }
    if data.is_instance_of::<PyInt>() || data.is_instance_of::<pyo3::types::PyString>() {
        return Err(pyo3::exceptions::PyTypeError::new_err("a bytes-like object is required"));
    }
    let converted = data.py().get_type::<PyBytes>().call1((data,))?;
    Ok(converted.cast_into::<PyBytes>()?)
}

impl Stream {
    /// Wrap a connected stream (its timeouts become slices), with the caller's `timeout`.
    pub fn wrap(mut stream: UdtStream, message: bool, timeout: Option<Duration>) -> io::Result<Stream> {
        stream.set_read_timeout(Some(SLICE));
        stream.set_write_timeout(Some(SLICE));
        let (local, peer) = (stream.local_addr()?, stream.peer_addr()?);
        Ok(Stream {
            inner: RwLock::new(Some(stream)),
            timeout: Mutex::new(timeout),
            scratch: Mutex::new(Vec::new()),
            message,
            local,
            peer,
        })
    }

    fn current_timeout(&self) -> Option<Duration> {
        *self.timeout.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Run `op` on the open stream, in slices (`what` is the runtime's name for the call).
    pub fn sliced<T: Send>(
        &self,
        py: Python<'_>,
        deadline: Option<std::time::Instant>,
        what: &str,
        mut op: impl FnMut(&UdtStream) -> io::Result<T> + Send,
    ) -> PyResult<T> {
        wait::sliced(py, deadline, what, || {
            let guard = self.inner.read().unwrap_or_else(|e| e.into_inner());
            guard.as_ref().map_or_else(|| Err(closed()), &mut op)
        })
    }

    /// Read into `buf` (one call of the runtime, at most `buf.len()` bytes) before `deadline`.
    fn read_into(
        &self,
        py: Python<'_>,
        buf: &mut [u8],
        deadline: Option<std::time::Instant>,
    ) -> PyResult<usize> {
        self.sliced(py, deadline, "read", |mut s| s.read(buf))
    }

    /// Write all of `data` before `deadline`.
    pub fn write_all(
        &self,
        py: Python<'_>,
        data: &[u8],
        deadline: Option<std::time::Instant>,
    ) -> PyResult<()> {
        let mut done = 0;
        while done < data.len() {
            done += self.sliced(py, deadline, "write", |mut s| s.write(&data[done..]))?;
        }
        Ok(())
    }

    /// The deadline of a call starting now.
    pub fn call_deadline(&self) -> Option<std::time::Instant> {
        wait::deadline(self.current_timeout())
    }

    /// Read at most `len` bytes into a fresh buffer before `deadline`.
    pub fn read_vec(
        &self,
        py: Python<'_>,
        len: usize,
        deadline: Option<std::time::Instant>,
    ) -> PyResult<Vec<u8>> {
        let mut buf = vec![0u8; len];
        let n = self.read_into(py, &mut buf, deadline)?;
        buf.truncate(n);
        Ok(buf)
    }
}

#[pymethods]
impl Stream {
    /// Send some of `data` (a bytes-like object); returns how many bytes were taken, at least
    /// one unless `data` is empty.
    fn send(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<usize> {
        let data = bytes_like(data)?;
        let bytes = data.as_bytes();
        if bytes.is_empty() {
            return Ok(0);
        }
        let deadline = self.call_deadline();
        self.sliced(py, deadline, "write", |mut s| s.write(bytes))
    }

    /// Send all of `data` (a bytes-like object); the timeout limits the whole call.
    fn sendall(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let data = bytes_like(data)?;
        self.write_all(py, data.as_bytes(), self.call_deadline())
    }

    /// Receive at most `bufsize` bytes; `b""` once the peer closed and everything was read.
    fn recv<'py>(&self, py: Python<'py>, bufsize: usize) -> PyResult<Bound<'py, PyBytes>> {
        let buf = self.read_vec(py, bufsize, self.call_deadline())?;
        Ok(PyBytes::new(py, &buf))
    }

    /// Receive into `buffer` (a writable bytes-like object: `bytearray`, `memoryview`,
    /// `array`, ...), at most `nbytes` bytes (0: its length); returns how many arrived (0 once
    /// the peer closed and everything was read).
    #[pyo3(signature = (buffer, nbytes = 0))]
    fn recv_into(&self, py: Python<'_>, buffer: &Bound<'_, PyAny>, nbytes: usize) -> PyResult<usize> {
        let target = if let Ok(array) = buffer.cast::<PyByteArray>() {
            Target::ByteArray(array.clone())
        } else {
            let view = PyMemoryView::from(buffer)?.call_method1("cast", ("B",))?;
            Target::View(view)
        };
        let len = target.len()?;
        let want = if nbytes == 0 { len } else { nbytes };
        if want > len {
            return Err(errors::value_error("nbytes is greater than the length of the buffer"));
        }
        let mut own = Vec::new();
        let mut shared = self.scratch.try_lock();
        let scratch = match shared.as_mut() {
            Ok(s) => &mut **s,
            Err(_) => &mut own,
        };
        if scratch.len() < want {
            scratch.resize(want, 0);
        }
        let n = self.read_into(py, &mut scratch[..want], self.call_deadline())?;
        target.fill(&scratch[..n])?;
        Ok(n)
    }

    /// Send one message (message mode): whole or not at all; dropped unless delivered within
    /// `ttl` seconds (`None`: never dropped); delivered after every earlier message if
    /// `in_order`.
    #[pyo3(signature = (data, ttl = None, in_order = true))]
    fn send_msg(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        ttl: Option<f64>,
        in_order: bool,
    ) -> PyResult<()> {
        let ttl = wait::timeout_from_secs(ttl)?;
        let data = bytes_like(data)?;
        let bytes = data.as_bytes();
        let deadline = self.call_deadline();
        self.sliced(py, deadline, "send_msg", |s| s.send_msg(bytes, ttl, in_order))
    }

    /// Receive one whole message (message mode) of at most `bufsize` bytes; `b""` once the
    /// peer closed and every message was read.
    #[pyo3(signature = (bufsize = DEFAULT_MSG_BUFSIZE))]
    fn recv_msg<'py>(&self, py: Python<'py>, bufsize: usize) -> PyResult<Bound<'py, PyBytes>> {
        let mut buf = vec![0u8; bufsize];
        let deadline = self.call_deadline();
        let n = self.sliced(py, deadline, "recv_msg", |s| s.recv_msg(&mut buf))?;
        Ok(PyBytes::new(py, &buf[..n]))
    }

    /// Send `count` bytes (`None`: to its end) of `file` from `offset`: a binary file object
    /// or a path. Returns the bytes sent; a file object's position is left after them.
    #[pyo3(signature = (file, offset = 0, count = None))]
    fn sendfile(
        &self,
        py: Python<'_>,
        file: &Bound<'_, PyAny>,
        offset: u64,
        count: Option<u64>,
    ) -> PyResult<u64> {
        let deadline = self.call_deadline();
        files::send(py, file, offset, count, |chunk| self.write_all(py, chunk, deadline))
    }

    /// Receive `count` bytes into `file` at `offset`: a binary file object opened for writing
    /// or a path (created if missing). Returns the bytes received; a file object's position
    /// is left after them.
    #[pyo3(signature = (file, count, offset = 0))]
    fn recvfile(&self, py: Python<'_>, file: &Bound<'_, PyAny>, count: u64, offset: u64) -> PyResult<u64> {
        let deadline = self.call_deadline();
        files::recv(py, file, offset, count, |n| self.read_vec(py, n, deadline))
    }

    /// Limit how long each blocking call may take, in seconds (`None`: no limit); a call that
    /// runs out raises `udt.TimeoutError`.
    fn settimeout(&self, timeout: Option<f64>) -> PyResult<()> {
        *self.timeout.lock().unwrap_or_else(|e| e.into_inner()) = wait::timeout_from_secs(timeout)?;
        Ok(())
    }

    /// The limit of each blocking call in seconds (`None`: none).
    fn gettimeout(&self) -> Option<f64> {
        self.current_timeout().map(|t| t.as_secs_f64())
    }

    /// The connection's performance counters as a dict; `clear=True` starts a new interval.
    #[pyo3(signature = (clear = false))]
    fn stats<'py>(&self, py: Python<'py>, clear: bool) -> PyResult<Bound<'py, PyDict>> {
        let guard = self.inner.read().unwrap_or_else(|e| e.into_inner());
        let stream = guard.as_ref().ok_or_else(|| errors::from_io(py, &closed()))?;
        stats::to_dict(py, &stream.stats(clear), stream.congestion_control())
    }

    /// Close: deliver what is buffered (up to the linger time), then shut the connection down.
    /// Returns once the peer was told, so the process may exit right after. Closing twice does
    /// nothing.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self.inner.write().unwrap_or_else(|e| e.into_inner()).take();
        let Some(stream) = taken else { return Ok(()) };
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("udt-py close".into())
            .spawn(move || {
                let _ = tx.send(stream.close());
            })
            .map_err(|e| errors::from_io(py, &e))?;
        match wait::answer(py, rx, None, "close")? {
            Some(Ok(())) | None => Ok(()),
            // The peer closed first: nothing is lost.
            Some(Err(e)) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
            Some(Err(e)) => Err(errors::from_io(py, &e)),
        }
    }

    /// Whether `close` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.read().unwrap_or_else(|e| e.into_inner()).is_none()
    }

    /// `"stream"` or `"message"`.
    #[getter]
    fn mode(&self) -> &'static str {
        if self.message {
            "message"
        } else {
            "stream"
        }
    }

    /// The local UDP address `(host, port)` (shared with the other connections of its port).
    #[getter]
    fn local_addr(&self) -> (String, u16) {
        addr_tuple(self.local)
    }

    /// The peer's address `(host, port)`.
    #[getter]
    fn peer_addr(&self) -> (String, u16) {
        addr_tuple(self.peer)
    }

    /// The local address, as `socket.getsockname()`.
    fn getsockname(&self) -> (String, u16) {
        addr_tuple(self.local)
    }

    /// The peer's address, as `socket.getpeername()`.
    fn getpeername(&self) -> (String, u16) {
        addr_tuple(self.peer)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        kind: Option<&Bound<'_, PyAny>>,
        _value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let closing = self.close(py);
        // An exception on its way out wins over a failure to close.
        if kind.is_none() {
            closing?;
        }
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { " closed" } else { "" };
        format!("<udt.Stream{state} mode={} local={} peer={}>", self.mode(), self.local, self.peer)
    }
}

/// Where `recv_into` puts the bytes.
enum Target<'py> {
    ByteArray(Bound<'py, PyByteArray>),
    /// A byte-format memoryview of any other writable buffer.
    View(Bound<'py, PyAny>),
}

impl Target<'_> {
    fn len(&self) -> PyResult<usize> {
        match self {
            Target::ByteArray(a) => Ok(a.len()),
            Target::View(v) => v.len(),
        }
    }

    /// Copy `data` to the start (with the GIL held).
    fn fill(&self, data: &[u8]) -> PyResult<()> {
        match self {
            Target::ByteArray(a) => {
                if data.len() > a.len() {
                    return Err(errors::value_error("the bytearray shrank while receiving into it"));
                }
                #[allow(unsafe_code)]
                // SAFETY: the GIL is held from taking the slice to the end of the copy, so no
                // Python code can resize or free the bytearray meanwhile; its length was just
                // checked.
                unsafe {
                    a.as_bytes_mut()[..data.len()].copy_from_slice(data);
                }
                Ok(())
            }
            Target::View(v) => {
                if data.is_empty() {
                    return Ok(());
                }
                let slice = pyo3::types::PySlice::new(v.py(), 0, data.len() as isize, 1);
                v.set_item(slice, PyBytes::new(v.py(), data))
            }
        }
    }
}
