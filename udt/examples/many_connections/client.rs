//! The client: every connection is a task on a small tokio runtime (`--threads` threads), all
//! opened with the async API from this process's one shared client port (one UDP socket, one
//! I/O thread); each task writes its connection's messages on schedule (a 64-byte write never
//! waits for long: the send buffer has room).
//!
//! Connection `i` of `n` sends message 0 as it connects, then message `k` at
//! `t0 + (k - 1) * interval + i * interval / n` while that is before `t0 + seconds` (so sends are
//! spread evenly over each interval), then (`send_ends`) its end marker.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::runtime::Runtime;
use tokio::sync::Semaphore;
use udt::{AsyncUdtStream, Options};

use crate::wire;

/// Connections being opened at once.
const AT_ONCE: usize = 64;
/// Connecting stops after this many failed connects.
const MAX_CONNECT_ERRORS: usize = 10;

/// One client connection.
#[derive(Debug)]
pub struct Conn {
    index: u32,
    stream: AsyncUdtStream,
    /// Data messages written.
    pub sent: u32,
    /// The first write error.
    pub error: Option<String>,
}

impl Conn {
    async fn send(&mut self, end: bool) {
        if self.error.is_some() {
            return;
        }
        match self.stream.write_all(&wire::encode(self.index, self.sent, end)).await {
            Ok(()) if !end => self.sent += 1,
            Ok(()) => {}
            Err(e) => self.error = Some(format!("write: {e}")),
        }
    }
}

/// What the connect phase did.
#[derive(Debug)]
pub struct Connected {
    /// The connections, in index order.
    pub conns: Vec<Conn>,
    /// Failed connects.
    pub failed: usize,
    /// The first connect error.
    pub first_error: Option<String>,
}

/// The runtime the connections' tasks run on.
pub fn runtime(threads: u32) -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads as usize)
        .enable_time()
        .build()
        .expect("runtime")
}

/// Open `n` connections to `server`, [`AT_ONCE`] at a time; each sends its message 0 at once.
pub fn connect_all(rt: &Runtime, server: SocketAddr, n: u32, options: &Options) -> Connected {
    let permits = Arc::new(Semaphore::new(AT_ONCE));
    let failures = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let tasks: Vec<_> = (0..n)
        .map(|index| {
            let (permits, failures, options) = (Arc::clone(&permits), Arc::clone(&failures), options.clone());
            rt.spawn(async move {
                let _permit = permits.acquire().await.expect("permits");
                if failures.load(std::sync::atomic::Ordering::SeqCst) >= MAX_CONNECT_ERRORS {
                    return None;
                }
                match AsyncUdtStream::connect_with(server, options).await {
                    Ok(stream) => {
                        let mut conn = Conn { index, stream, sent: 0, error: None };
                        conn.send(false).await;
                        Some(Ok(conn))
                    }
                    Err(e) => {
                        failures.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        Some(Err(format!("connect {index}: {e}")))
                    }
                }
            })
        })
        .collect();
    let mut connected = Connected { conns: Vec::new(), failed: 0, first_error: None };
    for t in tasks {
        match rt.block_on(t).expect("connecting task") {
            Some(Ok(conn)) => connected.conns.push(conn),
            Some(Err(e)) => {
                connected.failed += 1;
                connected.first_error.get_or_insert(e);
            }
            None => {}
        }
    }
    connected
}

/// Send every connection's messages on schedule from `t0` for `seconds` (`interval` zero:
/// none, just wait), a task each.
pub fn send_all(
    rt: &Runtime,
    conns: &mut Vec<Conn>,
    n: u32,
    t0: Instant,
    interval: Duration,
    seconds: Duration,
) {
    let end = t0 + seconds;
    if interval.is_zero() {
        std::thread::sleep(end.saturating_duration_since(Instant::now()));
        return;
    }
    let tasks: Vec<_> = conns
        .drain(..)
        .map(|mut conn| {
            rt.spawn(async move {
                let offset = interval.mul_f64(f64::from(conn.index) / f64::from(n));
                // Bounded: every round moves the due time one interval on, towards `end`.
                for round in 0u32.. {
                    let due = t0 + interval * round + offset;
                    if due >= end {
                        break;
                    }
                    tokio::time::sleep_until(due.into()).await;
                    conn.send(false).await;
                }
                conn
            })
        })
        .collect();
    for t in tasks {
        conns.push(rt.block_on(t).expect("sending task"));
    }
}

/// Send every connection's end marker.
pub fn send_ends(rt: &Runtime, conns: &mut [Conn]) {
    rt.block_on(async {
        for conn in conns.iter_mut() {
            conn.send(true).await;
        }
    });
}

/// The client connections' transport counters, summed.
#[derive(Debug, Default)]
pub struct Totals {
    /// Data packets sent, retransmissions included.
    pub pkts_sent: u64,
    /// Retransmitted packets.
    pub retransmits: u64,
    /// EXP timer expiries.
    pub timeouts: u64,
    /// Connections with packets not yet acknowledged.
    pub unacknowledged: u64,
}

/// Sum the counters of every connection.
pub fn totals(conns: &[Conn]) -> Totals {
    let mut t = Totals::default();
    for conn in conns {
        let s = conn.stream.stats(false);
        t.pkts_sent += s.total.pkts_sent;
        t.retransmits += s.total.retransmits;
        t.timeouts += s.total.timeouts;
        t.unacknowledged += u64::from(s.now.flight > 0);
    }
    t
}

/// The client's local UDP port (the one every connection shares).
pub fn port(conns: &[Conn]) -> Option<u16> {
    conns.first().and_then(|c| c.stream.local_addr().ok()).map(|a| a.port())
}
