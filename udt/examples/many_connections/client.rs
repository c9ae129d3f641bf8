//! The client: opens every connection from one UDP port (a `UdtListener`'s, through
//! `UdtListener::connect`), then a few threads, each owning a share of the connections, write
//! each connection's messages on schedule with blocking writes (a 64-byte write never waits for
//! long: the send buffer has room).
//!
//! Connection `i` of `n` sends message 0 as it connects, then message `k` at
//! `t0 + (k - 1) * interval + i * interval / n` while that is before `t0 + seconds` (so sends are
//! spread evenly over each interval), then (`send_ends`) its end marker.

use std::io::Write;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use udt::{UdtListener, UdtStream};

use crate::wire;

/// Wake-ups closer together than this are merged: the thread sends whatever is due.
const SLACK: Duration = Duration::from_millis(2);
/// A connecting thread stops after this many failed connects.
const MAX_CONNECT_ERRORS: usize = 10;

/// One client connection.
#[derive(Debug)]
pub struct Conn {
    index: u32,
    stream: UdtStream,
    /// Data messages written.
    pub sent: u32,
    /// The first write error.
    pub error: Option<String>,
}

impl Conn {
    fn send(&mut self, end: bool) {
        if self.error.is_some() {
            return;
        }
        match self.stream.write_all(&wire::encode(self.index, self.sent, end)) {
            Ok(()) if !end => self.sent += 1,
            Ok(()) => {}
            Err(e) => self.error = Some(format!("write: {e}")),
        }
    }
}

/// What the connect phase did.
#[derive(Debug)]
pub struct Connected {
    /// The connections, one list per sending thread.
    pub shares: Vec<Vec<Conn>>,
    /// Failed connects, and the first error.
    pub failed: usize,
    /// The first connect error.
    pub first_error: Option<String>,
}

/// Open `n` connections to `server` from `clients`' port on `threads` threads; each sends its
/// message 0 at once.
pub fn connect_all(clients: &UdtListener, server: SocketAddr, n: u32, threads: u32) -> Connected {
    let mut connected = Connected { shares: Vec::new(), failed: 0, first_error: None };
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    let (mut mine, mut errors) = (Vec::new(), Vec::new());
                    for index in (t..n).step_by(threads as usize) {
                        if errors.len() >= MAX_CONNECT_ERRORS {
                            break;
                        }
                        match clients.connect(server) {
                            Ok(stream) => {
                                let mut conn = Conn { index, stream, sent: 0, error: None };
                                conn.send(false);
                                mine.push(conn);
                            }
                            Err(e) => errors.push(format!("connect {index}: {e}")),
                        }
                    }
                    (mine, errors)
                })
            })
            .collect();
        for h in handles {
            let (mine, errors) = h.join().expect("connecting thread");
            connected.failed += errors.len();
            if connected.first_error.is_none() {
                connected.first_error = errors.into_iter().next();
            }
            connected.shares.push(mine);
        }
    });
    connected
}

/// Send every share's messages on schedule from `t0` for `seconds` (`interval` zero: none,
/// just wait), one thread per share.
pub fn send_all(shares: &mut [Vec<Conn>], n: u32, t0: Instant, interval: Duration, seconds: Duration) {
    std::thread::scope(|scope| {
        for share in shares.iter_mut() {
            scope.spawn(move || send_share(share, n, t0, interval, seconds));
        }
    });
}

/// Send every connection's end marker.
pub fn send_ends(shares: &mut [Vec<Conn>]) {
    for conn in shares.iter_mut().flatten() {
        conn.send(true);
    }
}

fn send_share(share: &mut [Conn], n: u32, t0: Instant, interval: Duration, seconds: Duration) {
    let end = t0 + seconds;
    if interval.is_zero() {
        std::thread::sleep(end.saturating_duration_since(Instant::now()));
        return;
    }
    // Bounded: every round moves the due times one interval on, towards `end`.
    for round in 0u32.. {
        let round_start = t0 + interval * round;
        if round_start >= end {
            break;
        }
        for conn in share.iter_mut() {
            let due = round_start + interval.mul_f64(f64::from(conn.index) / f64::from(n));
            if due >= end {
                break;
            }
            let now = Instant::now();
            if due > now + SLACK {
                std::thread::sleep(due - now);
            }
            conn.send(false);
        }
    }
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

/// Sum the counters of every connection in `shares`.
pub fn totals(shares: &[Vec<Conn>]) -> Totals {
    let mut t = Totals::default();
    for conn in shares.iter().flatten() {
        let s = conn.stream.stats(false);
        t.pkts_sent += s.total.pkts_sent;
        t.retransmits += s.total.retransmits;
        t.timeouts += s.total.timeouts;
        t.unacknowledged += u64::from(s.now.flight > 0);
    }
    t
}
