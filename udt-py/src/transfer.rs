//! `udt.send_files` and `udt.receive_files`: the protocol of `udt send` and `udt recv`
//! ([`udt_transfer`]), so a script can send to a running `udt recv` and receive from
//! `udt send`.
//!
//! Connecting and accepting happen on the calling thread, in slices (`wait.rs`); the session
//! then runs on a worker thread while the calling thread waits in slices, calls `progress` with
//! each event (`events.rs`) and runs the signal handlers. Ctrl-C or an exception raised by
//! `progress` asks the session to stop ([`Cancel`]: it tells the peer why and ends within a
//! slice of the transfer library), and the exception is raised once the worker has returned.
//!
//! As with the `udt` tool, a transfer is encrypted and authenticated: it needs `key=` or
//! `code=`, or `insecure=True` for a plain UDT peer (`udt recv --insecure`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use udt_transfer::{greet, Cancel, Observer, Plan, ReceiveOptions, Receiver, SendOptions, Turn};

use crate::errors::{self, value_error};
use crate::events::{self, Message, Owned};
use crate::listener::Listener;
use crate::options::{addr_tuple, credential, resolve};
use crate::wait;

/// How soon a silent peer is declared lost (the `udt` tool's default).
const PEER_IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// The runtime's options for a transfer with this credential (`insecure` must say so when
/// there is none).
fn transfer_options(
    py: Python<'_>,
    key: Option<&Bound<'_, PyAny>>,
    code: Option<&str>,
    insecure: bool,
    listens: bool,
) -> PyResult<udt::Options> {
    let security = credential(py, key, code, listens)?;
    match (&security, insecure) {
        (Some(_), true) => return Err(value_error("insecure=True cannot go with key= or code=")),
        (None, false) => {
            return Err(value_error(
                "a transfer is encrypted: give key= (the shared key file, as `udt ... --key-file`), \
                 code= (a code phrase), or insecure=True for a plain peer (`udt recv --insecure`)",
            ))
        }
        _ => {}
    }
    let mut options = udt::Options::default();
    options.set_peer_idle_timeout(Some(PEER_IDLE_TIMEOUT));
    options.security = security;
    Ok(options)
}

/// Send files and directory trees to a `udt recv` (or `udt.receive_files`) at `addr`, as
/// `udt send` does: each file verified end to end with BLAKE3, a file the receiver holds part
/// of resumed. `progress`, if given, is called with a dict per event (`kind`: `data_started`,
/// `moved`, `file_done`, `unchanged`, `file_failed`, ...). Returns a report dict: `files`,
/// `sent`, `skipped` (files the receiver holds already), `failed` (paths), `bytes`, `seconds`.
#[pyfunction]
#[pyo3(signature = (paths, addr, *, key = None, code = None, insecure = false, progress = None, timeout = None))]
#[allow(clippy::too_many_arguments)]
pub fn send_files<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    addr: &Bound<'py, PyAny>,
    key: Option<&Bound<'py, PyAny>>,
    code: Option<&str>,
    insecure: bool,
    progress: Option<Bound<'py, PyAny>>,
    timeout: Option<f64>,
) -> PyResult<Bound<'py, PyDict>> {
    let mut options = transfer_options(py, key, code, insecure, false)?;
    if let Some(t) = wait::timeout_from_secs(timeout)? {
        options.config.connect_timeout = t;
        options.handshake_timeout = t;
    }
    let mut skipped = Vec::new();
    let plan = Plan::collect(&paths, None, &mut |e: udt_transfer::Event<'_>| skipped.extend(events::own(&e)));
    for event in &skipped {
        call(py, progress.as_ref(), event)?;
    }
    if plan.entries().is_empty() {
        let failed = plan.failed().join(", ");
        return Err(errors::raise(py, "TransferError", 0, &format!("nothing to send: {failed}")));
    }
    let target = resolve(py, addr)?;
    let deadline = wait::deadline(wait::timeout_from_secs(timeout)?);
    let stream = crate::listener::open(py, deadline, move || udt::UdtStream::connect_with(target, options))?;
    let cancel = Arc::new(AtomicBool::new(false));
    let send_options = {
        let mut o = SendOptions::default();
        o.cancel = Cancel::from_flag(Arc::clone(&cancel));
        o
    };
    let report = run(py, progress.as_ref(), &cancel, |observer| {
        udt_transfer::send(stream, &plan, &send_options, observer)
    })?;
    let report = report.map_err(|e| errors::from_transfer(py, &e))?;
    let dict = PyDict::new(py);
    dict.set_item("files", report.files)?;
    dict.set_item("sent", report.sent)?;
    dict.set_item("skipped", report.skipped)?;
    dict.set_item("failed", report.failed)?;
    dict.set_item("bytes", report.bytes)?;
    dict.set_item("seconds", report.took.as_secs_f64())?;
    Ok(dict)
}

/// Receive one transfer from `udt send` (or `udt.send_files`) into the directory `out`, as
/// `udt recv` does: listen on `listen`, call `ready((host, port))` once listening, take the
/// first sender whose key agreement succeeds (waiting at most `timeout` seconds), and store its
/// files, verified, below `out` (existing files are kept unless `force`; top-level dotfiles
/// need `allow_dotfiles`; a file larger than `max_size` is refused). `progress` is called as
/// for `send_files`. Returns a report dict: `files`, `stored`, `skipped`, `failed` (paths), `bytes`,
/// `seconds`, `peer`.
#[pyfunction]
#[pyo3(signature = (out, *, listen, key = None, code = None, insecure = false, progress = None, ready = None, timeout = None, force = false, allow_dotfiles = false, max_size = None))]
#[allow(clippy::too_many_arguments)]
pub fn receive_files<'py>(
    py: Python<'py>,
    out: PathBuf,
    listen: &Bound<'py, PyAny>,
    key: Option<&Bound<'py, PyAny>>,
    code: Option<&str>,
    insecure: bool,
    progress: Option<Bound<'py, PyAny>>,
    ready: Option<Bound<'py, PyAny>>,
    timeout: Option<f64>,
    force: bool,
    allow_dotfiles: bool,
    max_size: Option<u64>,
) -> PyResult<Bound<'py, PyDict>> {
    let options = transfer_options(py, key, code, insecure, true)?;
    let cancel = Arc::new(AtomicBool::new(false));
    let mut receive = ReceiveOptions::default();
    receive.force = force;
    receive.allow_dotfiles = allow_dotfiles;
    receive.max_size = max_size;
    receive.cancel = Cancel::from_flag(Arc::clone(&cancel));
    let receiver = Receiver::new(&out, receive).map_err(|e| errors::from_transfer(py, &e))?;
    py.detach(|| receiver.sweep());
    let at = resolve(py, listen)?;
    let listener = Listener::bind(py, at, options)?;
    listener.settimeout_duration(wait::timeout_from_secs(timeout)?);
    if let Some(ready) = &ready {
        ready.call1((listener.local_addr_tuple(),))?;
    }
    let (stream, peer) = listener.accept_stream(py)?;
    let greeted = py.detach(|| greet(&stream, Turn::Now));
    greeted.map_err(|e| errors::from_io(py, &e))?;
    let report = run(py, progress.as_ref(), &cancel, |observer| receiver.serve(stream, observer))?;
    let report = report.map_err(|e| errors::from_transfer(py, &e))?;
    let dict = PyDict::new(py);
    dict.set_item("files", report.files)?;
    dict.set_item("stored", report.stored)?;
    dict.set_item("skipped", report.skipped)?;
    dict.set_item("failed", report.failed)?;
    dict.set_item("bytes", report.bytes)?;
    dict.set_item("seconds", report.took.as_secs_f64())?;
    dict.set_item("peer", addr_tuple(peer))?;
    Ok(dict)
}

/// Call `progress` with `event`'s dict.
fn call(py: Python<'_>, progress: Option<&Bound<'_, PyAny>>, event: &Owned) -> PyResult<()> {
    if let Some(progress) = progress {
        progress.call1((events::to_dict(py, event)?,))?;
    }
    Ok(())
}

/// Run `work` on a worker thread, passing its events to `progress` on this thread; Ctrl-C or
/// an exception of `progress` sets `cancel` and is raised once `work` has returned.
fn run<R: Send>(
    py: Python<'_>,
    progress: Option<&Bound<'_, PyAny>>,
    cancel: &AtomicBool,
    work: impl FnOnce(&mut dyn Observer) -> R + Send,
) -> PyResult<R> {
    let (tx, rx) = mpsc::channel::<Message<R>>();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let events = tx.clone();
            let mut observer = move |e: udt_transfer::Event<'_>| {
                if let Some(owned) = events::own(&e) {
                    let _ = events.send(Message::Event(owned));
                }
            };
            let result = work(&mut observer);
            let _ = tx.send(Message::Done(result));
        });
        pump(py, rx, progress, cancel)
    })
}

/// Wait for the worker's messages until its result, in slices (see [`run`]).
fn pump<R: Send>(
    py: Python<'_>,
    mut rx: mpsc::Receiver<Message<R>>,
    progress: Option<&Bound<'_, PyAny>>,
    cancel: &AtomicBool,
) -> PyResult<R> {
    let mut failure: Option<PyErr> = None;
    let stop = |e: PyErr, failure: &mut Option<PyErr>| {
        cancel.store(true, Ordering::SeqCst);
        failure.get_or_insert(e);
    };
    loop {
        let (got, back) = wait::recv_slice(py, rx);
        rx = back;
        let first = match got {
            Ok(m) => m,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if failure.is_none() {
                    if let Err(e) = py.check_signals() {
                        stop(e, &mut failure);
                    }
                }
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(failure
                    .unwrap_or_else(|| errors::raise(py, "TransferError", 0, "the transfer thread failed")))
            }
        };
        let mut batch: Vec<Owned> = Vec::new();
        let mut done = None;
        for message in std::iter::once(first).chain(rx.try_iter()) {
            match message {
                Message::Event(e) => {
                    if !batch.last_mut().is_some_and(|last| events::merge(last, &e)) {
                        batch.push(e);
                    }
                }
                Message::Done(r) => done = Some(r),
            }
        }
        if failure.is_none() {
            for event in &batch {
                if let Err(e) = call(py, progress, event) {
                    stop(e, &mut failure);
                    break;
                }
            }
        }
        if let Some(result) = done {
            return failure.map_or(Ok(result), Err);
        }
    }
}
