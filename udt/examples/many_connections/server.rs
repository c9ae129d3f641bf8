//! The listener (the child process): accepts the client's connections on one port with the
//! async API, one tokio task per connection on a single-threaded runtime, and checks that every
//! message arrives intact and in order. Talks to the parent over its standard input and output:
//!
//! - out `port P` once bound; in `connected K` once the client has opened all it could (the
//!   listener then stops waiting for more than K); out `accepted A SECS`;
//! - in `ended` once the client has sent every connection's end marker; out `report k=v ...`
//!   once every connection has ended, or 30 s after `ended`, or at a hard deadline (the
//!   connections still reading are then told to stop, and counted as starved).

use std::collections::HashSet;
use std::io::BufRead;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use udt::{AsyncUdtListener, AsyncUdtStream, Options};

use crate::latency::Latencies;
use crate::procfs;
use crate::wire;

/// Give up accepting after this long without a new connection.
const ACCEPT_GAP: Duration = Duration::from_secs(30);
/// How long connections may take to end after the client said `ended`.
const END_GRACE: Duration = Duration::from_secs(30);
/// How long a connection told to stop may take to do so.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// What one connection delivered.
#[derive(Debug, Default)]
struct Checked {
    /// Data messages received intact and in order.
    received: u64,
    /// Data messages the client says it sent (from the end marker; `None` if none came).
    expected: Option<u64>,
    /// The first thing that went wrong.
    error: Option<String>,
    /// Payload bytes the connection had stored for reading (its `bytes_recv` counter).
    stored: u64,
    /// Payload bytes read from it.
    read: u64,
    /// Data packets it received, and lost packets it detected.
    pkts_recv: u64,
    rcv_loss: u64,
}

/// What the parent tells the listener, as its standard input's reader thread sees it.
#[derive(Debug, Default)]
struct Control {
    connected: AtomicUsize,
    ended: AtomicBool,
}

/// Run the listener for up to `n` connections that send for about `seconds`.
pub fn run(n: usize, seconds: f64) {
    let control = Arc::new(Control { connected: AtomicUsize::new(n), ended: AtomicBool::new(false) });
    let reader = Arc::clone(&control);
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines().map_while(Result::ok) {
            if let Some(k) = line.strip_prefix("connected ").and_then(|k| k.trim().parse().ok()) {
                reader.connected.store(k, Ordering::SeqCst);
            } else if line.trim() == "ended" {
                reader.ended.store(true, Ordering::SeqCst);
            }
        }
        // Standard input closed: the parent is gone or done; end as if it had said so.
        reader.ended.store(true, Ordering::SeqCst);
    });
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("runtime");
    runtime.block_on(serve(n, seconds, &control));
}

async fn serve(n: usize, seconds: f64, control: &Control) {
    let listener = AsyncUdtListener::bind_with("127.0.0.1:0", Options::default()).expect("bind");
    let baseline = procfs::resident_bytes(std::process::id()).0;
    println!("port {}", listener.local_addr().expect("local address").port());
    let latency = Arc::new(Latencies::new());
    let started = Instant::now();
    let (stop, stopped) = watch::channel(false);
    let mut tasks: Vec<JoinHandle<(Checked, AsyncUdtStream)>> = Vec::with_capacity(n);
    let mut ports = HashSet::new();
    let mut last = Instant::now();
    while tasks.len() < n.min(control.connected.load(Ordering::SeqCst)) && last.elapsed() < ACCEPT_GAP {
        // Short waits, so that a lower `connected` count is seen in time.
        let Ok(accepted) = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await else {
            continue;
        };
        let (stream, peer) = accepted.expect("accept");
        ports.insert(peer.port());
        last = Instant::now();
        tasks.push(tokio::spawn(check(stream, Arc::clone(&latency), stopped.clone())));
    }
    println!("accepted {} {:.3}", tasks.len(), started.elapsed().as_secs_f64());
    let accepted_at = Instant::now();
    let hard_deadline = accepted_at + Duration::from_secs_f64(seconds) + Duration::from_secs(120);
    let mut ended_at = None;
    loop {
        if tasks.iter().all(JoinHandle::is_finished) {
            break;
        }
        if control.ended.load(Ordering::SeqCst) {
            let at = *ended_at.get_or_insert_with(Instant::now);
            if at.elapsed() > END_GRACE {
                break;
            }
        }
        if Instant::now() > hard_deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (rss, hwm) = procfs::resident_bytes(std::process::id());
    // Connections still reading stop now (and return their stream, for its counters).
    let _ = stop.send(true);
    let stop_deadline = Instant::now() + STOP_GRACE;
    while !tasks.iter().all(JoinHandle::is_finished) && Instant::now() < stop_deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut results = Vec::with_capacity(tasks.len());
    let mut streams = Vec::with_capacity(tasks.len());
    for task in tasks {
        if !task.is_finished() {
            task.abort();
            results.push(Checked { error: Some("did not stop".into()), ..Checked::default() });
            continue;
        }
        match task.await {
            Ok((checked, stream)) => {
                results.push(checked);
                streams.push(stream);
            }
            Err(e) => results.push(Checked { error: Some(format!("task: {e}")), ..Checked::default() }),
        }
    }
    report(&results, &latency, ports.len(), baseline, rss, hwm);
    drop(streams);
}

/// Read `stream`'s messages until its end marker (or until told to stop), checking each.
async fn check(
    mut stream: AsyncUdtStream,
    latency: Arc<Latencies>,
    mut stop: watch::Receiver<bool>,
) -> (Checked, AsyncUdtStream) {
    let mut checked = Checked::default();
    let mut index = None;
    let mut buf = [0u8; wire::LEN];
    // Bounded by the end marker, the peer's close or error, or the listener's stop.
    loop {
        let read = tokio::select! {
            r = stream.read_exact(&mut buf) => r,
            _ = stop.wait_for(|s| *s) => {
                checked.error = Some(format!("no end marker in time ({} messages)", checked.received));
                break;
            }
        };
        if let Err(e) = read {
            checked.error = Some(format!("read after {} messages: {e}", checked.received));
            break;
        }
        checked.read += wire::LEN as u64;
        let m = match wire::decode(&buf) {
            Ok(m) => m,
            Err(e) => {
                checked.error = Some(e);
                break;
            }
        };
        if *index.get_or_insert(m.index) != m.index {
            checked.error = Some(format!("connection {:?} got a message of connection {}", index, m.index));
            break;
        }
        if m.end {
            checked.expected = Some(u64::from(m.seq));
            break;
        }
        if u64::from(m.seq) != checked.received {
            checked.error = Some(format!("message {} where {} was due", m.seq, checked.received));
            break;
        }
        checked.received += 1;
        let us = wire::now_ns().saturating_sub(m.sent_ns) / 1000;
        // Message 0 was sent as the connection opened and waited for `accept`: kept apart.
        if m.seq == 0 {
            latency.first.record(us)
        } else {
            latency.steady.record(us)
        }
    }
    let total = stream.stats(false).total;
    (checked.stored, checked.pkts_recv, checked.rcv_loss) =
        (total.bytes_recv, total.pkts_recv, total.rcv_loss);
    (checked, stream)
}

/// Print the `report` line.
fn report(results: &[Checked], latency: &Latencies, client_ports: usize, baseline: u64, rss: u64, hwm: u64) {
    let received: u64 = results.iter().map(|c| c.received).sum();
    let starved = results.iter().filter(|c| c.error.is_some() || c.expected != Some(c.received)).count();
    let errors = results.iter().filter(|c| c.error.is_some()).count();
    let first_error = results.iter().find_map(|c| c.error.clone()).unwrap_or_default();
    let unread: u64 = results.iter().map(|c| c.stored.saturating_sub(c.read)).sum();
    let pkts_recv: u64 = results.iter().map(|c| c.pkts_recv).sum();
    let rcv_loss: u64 = results.iter().map(|c| c.rcv_loss).sum();
    println!(
        "report accepted={} client_ports={client_ports} received={received} \
         starved={starved} errors={errors} rss_baseline={baseline} rss_final={rss} rss_peak={hwm} \
         latency_p50_ms={:.3} latency_p99_ms={:.3} latency_max_ms={:.3} late_1s={} first_latency_max_ms={:.3} \
         unread_bytes={unread} data_pkts_recv={pkts_recv} rcv_loss={rcv_loss} first_error={}",
        results.len(),
        latency.steady.quantile_ms(0.5),
        latency.steady.quantile_ms(0.99),
        latency.steady.max_ms(),
        latency.steady.above_ms(1000.0),
        latency.first.max_ms(),
        first_error.replace(' ', "_"),
    );
}
