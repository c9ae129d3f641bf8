//! Rust errors as the package's Python exceptions.
//!
//! The exception classes live in Python (`udt/_errors.py`), because each subclasses both
//! `udt.Error` (an `OSError`) and the builtin exception a socket program already catches
//! (`udt.TimeoutError` is a `TimeoutError`, `udt.ConnectionResetError` a
//! `ConnectionResetError`, ...), which needs multiple inheritance. An `io::Error` becomes the
//! class of its kind, with the matching `errno` where one fits and the message as `strerror`.

use std::io;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// The Python module that holds the exception classes.
const ERRORS_MODULE: &str = "udt._errors";

/// An instance of the exception class `class` of `udt._errors`, built as `class(errno, message)`
/// (`errno` 0: only the message).
pub fn raise(py: Python<'_>, class: &str, errno: i32, message: &str) -> PyErr {
    let built = py.import(ERRORS_MODULE).and_then(|m| m.getattr(class)).and_then(|cls| {
        if errno == 0 {
            cls.call1((message,))
        } else {
            cls.call1((errno, message))
        }
    });
    match built {
        Ok(instance) => PyErr::from_value(instance),
        // The package is broken (its Python half missing): say so instead of the error.
        Err(e) => e,
    }
}

/// The exception class and errno for an `io::Error` of this kind.
fn class_of(kind: io::ErrorKind) -> (&'static str, i32) {
    use io::ErrorKind::*;
    match kind {
        TimedOut | WouldBlock => ("TimeoutError", libc::ETIMEDOUT),
        ConnectionRefused => ("ConnectionRefusedError", libc::ECONNREFUSED),
        ConnectionReset => ("ConnectionResetError", libc::ECONNRESET),
        ConnectionAborted => ("ConnectionAbortedError", libc::ECONNABORTED),
        BrokenPipe => ("BrokenPipeError", libc::EPIPE),
        NotConnected => ("NotConnectedError", libc::ENOTCONN),
        PermissionDenied => ("AuthenticationError", libc::EACCES),
        InvalidData => ("SecurityError", libc::EPROTO),
        AddrInUse => ("AddressInUseError", libc::EADDRINUSE),
        AddrNotAvailable => ("Error", libc::EADDRNOTAVAIL),
        InvalidInput => ("Error", libc::EINVAL),
        Unsupported => ("Error", libc::EOPNOTSUPP),
        NotFound => ("Error", libc::ENOENT),
        _ => ("Error", 0),
    }
}

/// An `io::Error` as the package's exception (an OS error number the error carries wins).
pub fn from_io(py: Python<'_>, e: &io::Error) -> PyErr {
    let (class, errno) = class_of(e.kind());
    let errno = e.raw_os_error().unwrap_or(errno);
    raise(py, class, errno, &e.to_string())
}

/// A transfer that broke off, as the package's exception: the class of the I/O failure that
/// ended it where there is one, `udt.TransferError` otherwise; the message is the whole chain
/// (`sending a (1 of 2): the receiver stopped: disk full`).
pub fn from_transfer(py: Python<'_>, e: &udt_transfer::Error) -> PyErr {
    let message = e.chain();
    match e.root() {
        udt_transfer::Error::Io { source, .. } => {
            let (class, errno) = class_of(source.kind());
            let class = if class == "Error" { "TransferError" } else { class };
            raise(py, class, source.raw_os_error().unwrap_or(errno), &message)
        }
        udt_transfer::Error::NotADirectory(_) => raise(py, "TransferError", libc::ENOTDIR, &message),
        _ => raise(py, "TransferError", 0, &message),
    }
}

/// A `ValueError` for an argument the library refuses.
pub fn value_error(message: impl Into<String>) -> PyErr {
    PyValueError::new_err(message.into())
}
