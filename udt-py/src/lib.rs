//! # udt-py: UDT for Python
//!
//! The native half of the Python package `udt` (built by maturin from `pyproject.toml` into
//! the extension module `udt._udt`; the Python half, `python/udt/`, re-exports it with the
//! exception classes and type stubs). It wraps the runtime (`udt`, package `udt-net`) and the
//! file protocol of `udt send`/`udt recv` (`udt-transfer`):
//!
//! - `listener.rs`: `udt.connect`, `udt.listen` and `udt.Listener`;
//! - `stream.rs`: `udt.Stream`, a socket-like connection (stream and message mode), with
//!   `files.rs` for `sendfile`/`recvfile` and `stats.rs` for `stats()`;
//! - `transfer.rs`: `udt.send_files` and `udt.receive_files`, with `events.rs` for the
//!   `progress` callback's dicts;
//! - `wait.rs`: every blocking call releases the GIL and waits in short slices, between which
//!   Python's signal handlers run (Ctrl-C interrupts) and the caller's timeout is checked;
//! - `options.rs`: the keyword arguments (`cc`, `key`, `code`, `mode`, ...) as the runtime's
//!   options, a key file's key derived as the `udt` tool derives it;
//! - `errors.rs`: `io::Error`s as the package's exceptions (`udt.Error`, an `OSError`, and its
//!   subclasses that also subclass the matching builtin, such as `udt.TimeoutError`).
//!
//! The package's documentation is `docs/python.md`; its tests are the pytest suite in
//! `tests/`, run by `scripts/test-python.sh`.

mod errors;
mod events;
mod files;
mod listener;
mod options;
mod stats;
mod stream;
mod transfer;
mod wait;

use pyo3::prelude::*;

/// The extension module `udt._udt`.
#[pymodule]
#[pyo3(name = "_udt")]
fn udt_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<stream::Stream>()?;
    m.add_class::<listener::Listener>()?;
    m.add_function(wrap_pyfunction!(listener::connect, m)?)?;
    m.add_function(wrap_pyfunction!(listener::listen, m)?)?;
    m.add_function(wrap_pyfunction!(transfer::send_files, m)?)?;
    m.add_function(wrap_pyfunction!(transfer::receive_files, m)?)?;
    m.add("SLICE_SECONDS", wait::SLICE.as_secs_f64())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
