//! `send_file` / `recv_file` (UDT4 `sendfile` / `recvfile`): a byte range of a `File` to or from a
//! stream connection. Reads and writes use positioned I/O, so the file's cursor is not moved.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;

use crate::stream::UdtStream;

/// Bytes moved per file operation.
const CHUNK: usize = 1 << 20;

impl UdtStream {
    /// Send `len` bytes of `file` starting at `offset`; returns the bytes sent. Fails with
    /// `UnexpectedEof` if the file is shorter.
    pub fn send_file(&self, file: &File, offset: u64, len: u64) -> io::Result<u64> {
        let mut buf = vec![0u8; CHUNK.min(len as usize).max(1)];
        let mut done = 0u64;
        while done < len {
            let want = ((len - done) as usize).min(buf.len());
            let n = file.read_at(&mut buf[..want], offset + done)?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("file ended after {done} of {len} bytes"),
                ));
            }
            (&*self).write_all(&buf[..n])?;
            done += n as u64;
        }
        Ok(done)
    }

    /// Receive `len` bytes into `file` starting at `offset`; returns the bytes received. Fails
    /// with `UnexpectedEof` if the peer closes early.
    pub fn recv_file(&self, file: &File, offset: u64, len: u64) -> io::Result<u64> {
        let mut buf = vec![0u8; CHUNK.min(len as usize).max(1)];
        let mut done = 0u64;
        while done < len {
            let want = ((len - done) as usize).min(buf.len());
            let n = (&*self).read(&mut buf[..want])?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("connection closed after {done} of {len} bytes"),
                ));
            }
            file.write_all_at(&buf[..n], offset + done)?;
            done += n as u64;
        }
        Ok(done)
    }
}
