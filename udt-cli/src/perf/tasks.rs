//! The tasks of a `udt perf client`'s connections, on a small tokio runtime over the library's
//! async API: a writer per sending connection, a reader per receiving one. A thousand
//! connections are a thousand tasks on [`WORKERS`] threads, not a thousand threads that take
//! turns with the I/O thread that serves them all.
//!
//! Invariants: a task never blocks its thread (every wait is an await on the connection's
//! waker, a timer or the stop channel); a writer stops writing once its stop channel says so
//! (or once it wrote its limit) and then waits at most [`DRAIN_LIMIT`] for the acknowledgement
//! of the rest; a reader ends with its connection, or when told to stop.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use tokio::io::AsyncWriteExt;
use tokio::runtime::Runtime;
use tokio::sync::watch;
use udt::AsyncUdtStream;

use crate::interrupt;

/// Most threads of a client's runtime: the connections' work between the I/O thread's wake-ups
/// is copying into and out of their buffers, which two threads keep up with on this machine's
/// loopback.
pub const WORKERS: usize = 2;
/// How long, after sending stopped, a writer waits for the peer to acknowledge the rest.
pub const DRAIN_LIMIT: Duration = Duration::from_secs(60);
/// How often a writer waiting for acknowledgements looks at Ctrl-C.
const DRAIN_POLL: Duration = Duration::from_millis(100);

/// The runtime for at most `tasks` tasks at once: [`WORKERS`] threads, but no more than the
/// tasks, and one fewer than the cores (the I/O thread keeps one busy), at least one. A thread
/// more than the work needs only costs wake-ups: tokio wakes an idle worker to look for work
/// each time a task is woken. On two cores, paced at 100 Mb/s over loopback (each end wakes
/// about a thousand times a second), a server with one thread spent about a fifth less CPU
/// than with two, and at `-P 100` and `-P 1000` one thread a side carried as much.
pub fn runtime(tasks: usize) -> io::Result<Runtime> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS.min(cores.saturating_sub(1)).min(tasks).max(1))
        .thread_name("perf-task")
        .enable_time()
        .build()
}

/// What a writer ends with: bytes written, when the last was acknowledged.
pub type Written = Result<(u64, Instant)>;

/// Write `buf` over and over until `stop` (or `limit` bytes), counting on `written`, then wait
/// for the acknowledgement of everything.
pub async fn write_until(
    stream: Arc<AsyncUdtStream>,
    buf: Arc<[u8]>,
    mut stop: watch::Receiver<bool>,
    limit: Option<u64>,
    written: Arc<AtomicU64>,
) -> Written {
    let (mut sent, mut off) = (0u64, 0usize);
    let mut w = &*stream;
    while !*stop.borrow() && limit.is_none_or(|limit| sent < limit) {
        let left = limit.map_or(usize::MAX, |limit| usize::try_from(limit - sent).unwrap_or(usize::MAX));
        let end = buf.len().min(off.saturating_add(left));
        tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => break,
            r = w.write(&buf[off..end]) => match r {
                Ok(n) => {
                    sent += n as u64;
                    written.fetch_add(n as u64, Ordering::Relaxed);
                    off = (off + n) % buf.len();
                }
                Err(e) => return Err(e).context(format!("sending failed after {sent} bytes")),
            },
        }
    }
    let deadline = Instant::now() + DRAIN_LIMIT;
    loop {
        if interrupt::requested() {
            return Err(interrupt::error().into());
        }
        match tokio::time::timeout(DRAIN_POLL, stream.flush_acknowledged()).await {
            Ok(Ok(())) => return Ok((sent, Instant::now())),
            Ok(Err(e)) => return Err(e).context("waiting for the acknowledgement of the last data"),
            Err(_) if Instant::now() >= deadline => {
                let now = stream.stats(false).now;
                bail!(
                    "the peer did not acknowledge the last data within {} s ({} packets in flight, \
                     its window {} packets, {} bytes of the send buffer free)",
                    DRAIN_LIMIT.as_secs(),
                    now.flight,
                    now.flow_window,
                    now.send_buf_free_bytes
                )
            }
            Err(_) => {}
        }
    }
}

/// What a reader ends with: bytes read, when the last arrived, the error if it failed.
#[derive(Debug, Default)]
pub struct Read {
    /// Bytes read.
    pub bytes: u64,
    /// When the last of them arrived.
    pub last: Option<Instant>,
    /// Why it ended early.
    pub error: Option<String>,
}

/// Read `stream` to its end (or until `stop`) up to `size` bytes at a time, counting on `read`.
/// The bytes are looked at where they landed ([`AsyncUdtStream::read_chunks`]): the kernel's
/// copy is the only one, as for a TCP receiver's `recv`.
pub async fn read_to_end(
    stream: Arc<AsyncUdtStream>,
    mut stop: watch::Receiver<bool>,
    size: usize,
    read: Arc<AtomicU64>,
) -> Read {
    let mut chunks = Vec::new();
    let mut out = Read::default();
    loop {
        tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => {
                out.error = Some("interrupted".into());
                return out;
            }
            got = stream.read_chunks(size, &mut chunks) => match got {
                Ok(0) => return out,
                Ok(n) => {
                    out.bytes += n as u64;
                    read.fetch_add(n as u64, Ordering::Relaxed);
                    out.last = Some(Instant::now());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    out.error = Some(e.to_string());
                    return out;
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use udt::{AsyncUdtListener, Options};

    /// A writer with a limit writes exactly that, a reader reads it all, and a stopped reader
    /// says why it ended.
    #[test]
    fn a_writer_writes_its_limit_and_a_reader_reads_it_all() {
        let rt = runtime(WORKERS).unwrap();
        rt.block_on(async {
            let listener = AsyncUdtListener::bind_with("127.0.0.1:0", Options::default()).unwrap();
            let addr = listener.local_addr().unwrap();
            let (_never, idle) = watch::channel(false);
            let accept = tokio::spawn(async move { listener.accept().await.unwrap().0 });
            let client = Arc::new(AsyncUdtStream::connect_with(addr, Options::default()).await.unwrap());
            let server = Arc::new(accept.await.unwrap());
            // Nothing written yet: the reader waits until told to stop.
            let (stop, stopped) = watch::channel(false);
            let waiting = tokio::spawn(read_to_end(Arc::clone(&server), stopped, 4096, Arc::default()));
            stop.send(true).unwrap();
            let got = tokio::time::timeout(Duration::from_secs(5), waiting).await.unwrap().unwrap();
            assert_eq!((got.bytes, got.error.as_deref()), (0, Some("interrupted")));

            let buf: Arc<[u8]> = vec![7u8; 1000].into();
            let (written, read) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
            let reader = tokio::spawn(read_to_end(server, idle.clone(), 4096, Arc::clone(&read)));
            let (sent, _) = write_until(Arc::clone(&client), buf, idle, Some(123_457), Arc::clone(&written))
                .await
                .unwrap();
            assert_eq!((sent, written.load(Ordering::SeqCst)), (123_457, 123_457));
            Arc::try_unwrap(client).unwrap().close().await.unwrap();
            let got = tokio::time::timeout(Duration::from_secs(30), reader).await.unwrap().unwrap();
            assert_eq!((got.bytes, got.error), (123_457, None));
            assert_eq!(read.load(Ordering::SeqCst), 123_457);
        });
    }
}
