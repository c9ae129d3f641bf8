//! A transfer's events ([`udt_transfer::Event`]) as the dicts a `progress` callback gets.
//!
//! The transfer runs on a worker thread; each event is copied into an [`Owned`] one there and
//! sent to the calling thread, which turns it into a dict (`{"kind": "file_done", "path": ...,
//! "bytes": ..., "seconds": ..., "blake3": ...}`) and calls the callback with the GIL held.
//! Consecutive `moved` events are merged into one before the call, so a slow callback never
//! holds the transfer up and is called at most once per batch of progress.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use udt_transfer::Event;

/// One value of an event's dict.
#[derive(Debug, Clone)]
pub enum Value {
    Text(String),
    Count(u64),
    Seconds(f64),
}

/// An event, owned: its kind and its fields.
#[derive(Debug, Clone)]
pub struct Owned {
    pub kind: &'static str,
    pub fields: Vec<(&'static str, Value)>,
}

/// What a worker thread sends the calling thread.
pub enum Message<R> {
    /// An event for the callback.
    Event(Owned),
    /// The transfer's end.
    Done(R),
}

/// A path as the callback is given it: as sent (it may hold any character a file name may).
fn text(s: &str) -> Value {
    Value::Text(s.to_string())
}

/// The owned copy of `event` (`None` for events of kinds added later).
pub fn own(event: &Event<'_>) -> Option<Owned> {
    let (kind, fields): (&'static str, Vec<(&'static str, Value)>) = match *event {
        Event::Skipped { path, what } => ("skipped", vec![("path", text(path)), ("what", text(what))]),
        Event::Waiting { reason } => ("waiting", vec![("reason", text(reason))]),
        Event::SessionStarted { entries } => {
            ("session_started", vec![("entries", Value::Count(entries.into()))])
        }
        Event::Resuming { path, offset } => {
            ("resuming", vec![("path", text(path)), ("offset", Value::Count(offset))])
        }
        Event::SetAside { path, temp, reason } => {
            ("set_aside", vec![("path", text(path)), ("temp", text(temp)), ("reason", text(reason))])
        }
        Event::DataStarted { path, bytes } => {
            ("data_started", vec![("path", text(path)), ("bytes", Value::Count(bytes))])
        }
        Event::Moved { bytes } => ("moved", vec![("bytes", Value::Count(bytes))]),
        Event::Idle => ("idle", vec![]),
        Event::DataEnded => ("data_ended", vec![]),
        Event::FileDone { path, bytes, took, hash } => {
            let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
            (
                "file_done",
                vec![
                    ("path", text(path)),
                    ("bytes", Value::Count(bytes)),
                    ("seconds", Value::Seconds(took.as_secs_f64())),
                    ("blake3", Value::Text(hex)),
                ],
            )
        }
        Event::Unchanged { path, reason } => {
            ("unchanged", vec![("path", text(path)), ("reason", text(reason))])
        }
        Event::FileFailed { path, reason } => {
            ("file_failed", vec![("path", text(path)), ("reason", text(reason))])
        }
        Event::SessionEnded { files, took } => (
            "session_ended",
            vec![("files", Value::Count(files as u64)), ("seconds", Value::Seconds(took.as_secs_f64()))],
        ),
        _ => return None,
    };
    Some(Owned { kind, fields })
}

/// Merge `next` into `last` if both are `moved` (their bytes added); otherwise `false`.
pub fn merge(last: &mut Owned, next: &Owned) -> bool {
    if last.kind != "moved" || next.kind != "moved" {
        return false;
    }
    let add = |e: &Owned| match e.fields.first() {
        Some((_, Value::Count(n))) => *n,
        _ => 0,
    };
    let sum = add(last) + add(next);
    last.fields = vec![("bytes", Value::Count(sum))];
    true
}

/// The event as the callback's dict.
pub fn to_dict<'py>(py: Python<'py>, event: &Owned) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("kind", event.kind)?;
    for (name, value) in &event.fields {
        match value {
            Value::Text(s) => dict.set_item(*name, s)?,
            Value::Count(n) => dict.set_item(*name, *n)?,
            Value::Seconds(s) => dict.set_item(*name, *s)?,
        }
    }
    Ok(dict)
}
