//! Data calls on connected sockets: `send`/`recv` (stream sockets), `sendmsg`/`recvmsg`
//! (message sockets), files (`sendfile2`/`recvfile2`) and `perfmon`, with UDT4's results:
//! a receive on a connection the peer has closed, once everything was read, fails with
//! `ECONNLOST` (UDT4 has no end-of-stream value), and a message longer than the caller's
//! buffer is cut to it (the rest is dropped).

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::time::Duration;

use udt::{Mode, UdtStream};

use crate::error::{self, Context, Result, UdtError};
use crate::perf::CPerfMon;
use crate::socket::{self, SockOpts};

/// Run `f` on the stream of connected socket `u` of `mode` (`wrong`: the error for the other
/// mode).
fn with_stream<T>(
    u: i32,
    mode: Mode,
    wrong: i32,
    f: impl FnOnce(&UdtStream, &SockOpts) -> Result<T>,
) -> Result<T> {
    let s = socket::get(u)?;
    if s.mode != mode {
        return Err(UdtError::new(wrong));
    }
    let (conn, opts) = s.conn()?;
    let guard = conn.stream()?;
    let stream = guard.as_ref().ok_or(UdtError::new(error::UDT_ERR_NOCONN))?;
    f(stream, &opts)
}

fn send_ctx(opts: &SockOpts) -> Context {
    Context::Send { nonblocking: !opts.snd_syn }
}

fn recv_ctx(opts: &SockOpts) -> Context {
    Context::Recv { nonblocking: !opts.rcv_syn }
}

/// `send`: waits until some of `buf` fits the send buffer, then takes as much as fits now.
pub fn send(u: i32, buf: &[u8]) -> Result<usize> {
    with_stream(u, Mode::Stream, error::UDT_ERR_DGRAMILL, |stream, opts| {
        if buf.is_empty() {
            return Ok(0);
        }
        let mut w = stream;
        let mut done = w.write(buf).map_err(|e| error::from_io(&e, send_ctx(opts)))?;
        while done < buf.len() && stream.readiness().writable_bytes > 0 {
            match w.write(&buf[done..]) {
                Ok(n) => done += n,
                Err(_) => break,
            }
        }
        Ok(done)
    })
}

/// `recv`: waits for data, returns what is there (at most `buf.len()` bytes).
pub fn recv(u: i32, buf: &mut [u8]) -> Result<usize> {
    with_stream(u, Mode::Stream, error::UDT_ERR_DGRAMILL, |stream, opts| {
        if buf.is_empty() {
            return Ok(0);
        }
        let mut r = stream;
        match r.read(buf) {
            Ok(0) => Err(UdtError::new(error::UDT_ERR_CONNLOST)),
            Ok(n) => Ok(n),
            Err(e) => Err(error::from_io(&e, recv_ctx(opts))),
        }
    })
}

/// `sendmsg`: one message, dropped if not delivered within `ttl_ms` (negative: never).
pub fn sendmsg(u: i32, buf: &[u8], ttl_ms: i32, in_order: bool) -> Result<usize> {
    with_stream(u, Mode::Message, error::UDT_ERR_STREAMILL, |stream, opts| {
        if buf.is_empty() {
            return Err(UdtError::new(error::UDT_ERR_INVPARAM));
        }
        let ttl = u64::try_from(ttl_ms).ok().map(Duration::from_millis);
        stream.send_msg(buf, ttl, in_order).map_err(|e| error::from_io(&e, send_ctx(opts)))?;
        Ok(buf.len())
    })
}

/// `recvmsg`: one message, cut to `buf`'s length if longer.
pub fn recvmsg(u: i32, buf: &mut [u8]) -> Result<usize> {
    with_stream(u, Mode::Message, error::UDT_ERR_STREAMILL, |stream, opts| {
        if buf.is_empty() {
            return Err(UdtError::new(error::UDT_ERR_INVPARAM));
        }
        let got = match stream.recv_msg(buf) {
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
                // The message is longer than `buf`: take it whole, keep the head (UDT4 does).
                let mut whole = vec![0u8; stream.readiness().readable_bytes.max(buf.len() + 1)];
                let n = stream.recv_msg(&mut whole).map_err(|e| error::from_io(&e, recv_ctx(opts)))?;
                let keep = n.min(buf.len());
                buf[..keep].copy_from_slice(&whole[..keep]);
                Ok(keep)
            }
            other => other.map_err(|e| error::from_io(&e, recv_ctx(opts))),
        }?;
        if got == 0 {
            return Err(UdtError::new(error::UDT_ERR_CONNLOST));
        }
        Ok(got)
    })
}

/// `sendfile2`: `size` bytes of the file at `path` from `*offset`; advances `offset`.
pub fn sendfile(u: i32, path: &str, offset: &mut i64, size: i64) -> Result<i64> {
    let start = u64::try_from(*offset).map_err(|_| UdtError::new(error::UDT_ERR_INVPARAM))?;
    let len = u64::try_from(size).map_err(|_| UdtError::new(error::UDT_ERR_INVPARAM))?;
    let sent = with_stream(u, Mode::Stream, error::UDT_ERR_DGRAMILL, |stream, opts| {
        let file = File::open(path).map_err(|e| error::from_io(&e, Context::FileRead))?;
        stream.send_file(&file, start, len).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => UdtError::new(error::UDT_ERR_INVRDOFF),
            _ => error::from_io(&e, send_ctx(opts)),
        })
    })?;
    *offset += sent as i64;
    Ok(sent as i64)
}

/// `recvfile2`: `size` bytes into the file at `path` (created, emptied) from `*offset`;
/// advances `offset`.
pub fn recvfile(u: i32, path: &str, offset: &mut i64, size: i64) -> Result<i64> {
    let start = u64::try_from(*offset).map_err(|_| UdtError::new(error::UDT_ERR_INVPARAM))?;
    let len = u64::try_from(size).map_err(|_| UdtError::new(error::UDT_ERR_INVPARAM))?;
    let got = with_stream(u, Mode::Stream, error::UDT_ERR_DGRAMILL, |stream, opts| {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| error::from_io(&e, Context::FileWrite))?;
        stream.recv_file(&file, start, len).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => UdtError::new(error::UDT_ERR_CONNLOST),
            _ => error::from_io(&e, recv_ctx(opts)),
        })
    })?;
    *offset += got as i64;
    Ok(got as i64)
}

/// `perfmon`: the connection's counters; `clear` starts a new interval.
pub fn perfmon(u: i32, clear: bool) -> Result<CPerfMon> {
    let s = socket::get(u)?;
    let (conn, opts) = s.conn()?;
    let guard = conn.stream()?;
    let stream = guard.as_ref().ok_or(UdtError::new(error::UDT_ERR_NOCONN))?;
    if !stream.readiness().open {
        return Err(UdtError::new(error::UDT_ERR_CONNLOST));
    }
    Ok(CPerfMon::from_snapshot(&stream.stats(clear), opts.options.config.mss))
}

/// Bytes in the send buffer not yet acknowledged (`UDT_SNDDATA`) and ready to read
/// (`UDT_RCVDATA`).
pub fn buffered(u: i32) -> Result<(usize, usize)> {
    let s = socket::get(u)?;
    let (conn, opts) = s.conn()?;
    let guard = conn.stream()?;
    let stream = guard.as_ref().ok_or(UdtError::new(error::UDT_ERR_NOCONN))?;
    let config = &opts.options.config;
    let capacity = config.send_buffer_pkts as usize * udt::Config::payload_size(config.mss);
    let free = stream.stats(false).now.send_buf_free_bytes as usize;
    Ok((capacity.saturating_sub(free), stream.readiness().readable_bytes))
}
