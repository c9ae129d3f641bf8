//! Blocking calls that Python can interrupt: every wait runs with the GIL released, in slices
//! of at most [`SLICE`], and between two slices takes the GIL back to run the signal handlers
//! (`py.check_signals()`: Ctrl-C raises `KeyboardInterrupt` there) and to check the caller's
//! deadline.
//!
//! Invariant: the runtime objects these helpers drive have their own timeouts set to
//! [`SLICE`], so no call of theirs blocks longer; a slice that ran out is told apart from a
//! real failure by its exact error (`"<what> timed out"`, the runtime's message for it).

use std::io;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use crate::errors;

/// Longest a blocking call waits without giving Python a chance to run its signal handlers;
/// also how late a caller's timeout may fire at most.
pub const SLICE: Duration = Duration::from_millis(20);

/// The instant a call with `timeout` gives up (`None`: never).
pub fn deadline(timeout: Option<Duration>) -> Option<Instant> {
    timeout.map(|t| Instant::now() + t)
}

/// Whether `e` is the runtime's answer to a slice of a call `what` running out.
fn is_slice_timeout(e: &io::Error, what: &str) -> bool {
    e.kind() == io::ErrorKind::TimedOut && e.to_string() == format!("{what} timed out")
}

/// The exception of a call `what` whose caller's timeout passed.
pub fn timed_out(py: Python<'_>, what: &str) -> PyErr {
    errors::raise(py, "TimeoutError", libc::ETIMEDOUT, &format!("{what} timed out"))
}

/// Between two slices: run the signal handlers, then give up if `deadline` passed.
pub fn between_slices(py: Python<'_>, deadline: Option<Instant>, what: &str) -> PyResult<()> {
    py.check_signals()?;
    if deadline.is_some_and(|d| Instant::now() >= d) {
        return Err(timed_out(py, what));
    }
    Ok(())
}

/// Run `op`, a call of the runtime named `what` that gives up after one slice, with the GIL
/// released, until it completes, fails, `deadline` passes (`udt.TimeoutError`) or a signal
/// handler raises.
pub fn sliced<T: Send>(
    py: Python<'_>,
    deadline: Option<Instant>,
    what: &str,
    mut op: impl FnMut() -> io::Result<T> + Send,
) -> PyResult<T> {
    loop {
        match py.detach(&mut op) {
            Ok(v) => return Ok(v),
            Err(e) if is_slice_timeout(&e, what) => between_slices(py, deadline, what)?,
            Err(e) => return Err(errors::from_io(py, &e)),
        }
    }
}

/// `rx.recv_timeout(SLICE)` with the GIL released. The receiver moves through the call and
/// comes back (it may not be shared with the detached closure: it is not `Sync`).
pub fn recv_slice<T: Send>(
    py: Python<'_>,
    rx: mpsc::Receiver<T>,
) -> (Result<T, mpsc::RecvTimeoutError>, mpsc::Receiver<T>) {
    py.detach(move || (rx.recv_timeout(SLICE), rx))
}

/// Wait for `rx`'s answer (a worker thread's), with the GIL released, in slices: `None` once
/// the worker is gone without answering.
pub fn answer<T: Send>(
    py: Python<'_>,
    mut rx: mpsc::Receiver<T>,
    deadline: Option<Instant>,
    what: &str,
) -> PyResult<Option<T>> {
    loop {
        let (got, back) = recv_slice(py, rx);
        rx = back;
        match got {
            Ok(v) => return Ok(Some(v)),
            Err(mpsc::RecvTimeoutError::Timeout) => between_slices(py, deadline, what)?,
            Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(None),
        }
    }
}

/// A Python timeout in seconds (`None`: wait for ever) as a duration; negative, NaN and
/// infinite values are refused.
pub fn timeout_from_secs(seconds: Option<f64>) -> PyResult<Option<Duration>> {
    match seconds {
        None => Ok(None),
        Some(s) if s.is_finite() && s >= 0.0 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => Err(errors::value_error(format!("timeout must be None or a number >= 0, not {s}"))),
    }
}
