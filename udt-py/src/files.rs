//! `Stream.sendfile` and `Stream.recvfile` (UDT4's `sendfile`/`recvfile`): a byte range of a
//! file to or from a stream connection, moved in chunks with positioned I/O and the GIL
//! released.
//!
//! A file is a path or a Python file object; a file object is reopened through
//! `/proc/self/fd/N` (so the runtime's own `File` reads or writes it, without taking over the
//! object's descriptor), and its position is left after the bytes moved, as
//! `socket.sendfile` does.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use pyo3::prelude::*;

use crate::errors;

/// Bytes moved per file operation.
const CHUNK: usize = 1 << 20;

/// A file a call was given: opened here, and the Python object to leave positioned, if any.
struct Given<'py> {
    file: File,
    object: Option<Bound<'py, PyAny>>,
}

/// Open `file` (a path, or an object with `fileno()`) for reading or writing.
fn open<'py>(py: Python<'py>, file: &Bound<'py, PyAny>, write: bool) -> PyResult<Given<'py>> {
    let (path, object) = match file.extract::<PathBuf>() {
        Ok(path) => (path, None),
        Err(_) => {
            let fd: i32 = file
                .call_method0("fileno")
                .and_then(|n| n.extract())
                .map_err(|_| errors::value_error("a file is a path or a file object with fileno()"))?;
            if write {
                // Whatever the object buffered must reach the file before our bytes do.
                file.call_method0("flush")?;
            }
            (PathBuf::from(format!("/proc/self/fd/{fd}")), Some(file.clone()))
        }
    };
    let mut options = OpenOptions::new();
    if write {
        options.write(true).create(object.is_none());
    } else {
        options.read(true);
    }
    let opened = py.detach(|| options.open(&path));
    let file = opened.map_err(|e| {
        let what = if object.is_some() { "the file object".to_string() } else { path.display().to_string() };
        errors::raise(py, "Error", e.raw_os_error().unwrap_or(0), &format!("cannot open {what}: {e}"))
    })?;
    Ok(Given { file, object })
}

impl Given<'_> {
    /// Leave a file object's position at `at`.
    fn position(&self, at: u64) -> PyResult<()> {
        if let Some(object) = &self.object {
            object.call_method1("seek", (at,))?;
        }
        Ok(())
    }
}

/// `Stream.sendfile`: each chunk read from the file goes to `write_all`.
pub fn send(
    py: Python<'_>,
    file: &Bound<'_, PyAny>,
    offset: u64,
    count: Option<u64>,
    mut write_all: impl FnMut(&[u8]) -> PyResult<()>,
) -> PyResult<u64> {
    let given = open(py, file, false)?;
    let len = match count {
        Some(c) => c,
        None => {
            let size = given.file.metadata().map_err(|e| errors::from_io(py, &e))?.len();
            size.saturating_sub(offset)
        }
    };
    let mut buf = vec![0u8; CHUNK.min(usize::try_from(len).unwrap_or(CHUNK)).max(1)];
    let mut done = 0u64;
    while done < len {
        let want = usize::try_from(len - done).unwrap_or(usize::MAX).min(buf.len());
        let read = py.detach(|| given.file.read_at(&mut buf[..want], offset + done));
        let n = read.map_err(|e| errors::from_io(py, &e))?;
        if n == 0 {
            let e = io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("the file ended after {done} of {len} bytes"),
            );
            return Err(errors::from_io(py, &e));
        }
        write_all(&buf[..n])?;
        done += n as u64;
    }
    given.position(offset + done)?;
    Ok(done)
}

/// `Stream.recvfile`: `read(n)` gives at most `n` bytes of the stream (none at its end).
pub fn recv(
    py: Python<'_>,
    file: &Bound<'_, PyAny>,
    offset: u64,
    count: u64,
    mut read: impl FnMut(usize) -> PyResult<Vec<u8>>,
) -> PyResult<u64> {
    let given = open(py, file, true)?;
    let mut done = 0u64;
    while done < count {
        let want = usize::try_from(count - done).unwrap_or(usize::MAX).min(CHUNK);
        let data = read(want)?;
        if data.is_empty() {
            let e = io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("the connection closed after {done} of {count} bytes"),
            );
            return Err(errors::from_io(py, &e));
        }
        let written = py.detach(|| given.file.write_all_at(&data, offset + done));
        written.map_err(|e| errors::from_io(py, &e))?;
        done += data.len() as u64;
    }
    given.position(offset + done)?;
    Ok(done)
}
