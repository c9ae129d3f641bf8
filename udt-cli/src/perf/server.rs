//! The receiving side of `udt perf`: accepts connections, groups them into tests by the test
//! id of their header, reads each to its end, and samples `stats(true)` every interval.

use std::collections::HashMap;
use std::io::{self, Read};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Serialize;
use udt::{Options, UdtListener, UdtStream};

use super::{bps, recv_line, recv_title, Interval, ReceiverSummary, RecvSample, TestHeader};
use crate::cpu::CpuTime;
use crate::{net, units};

/// Read size.
const BUFFER: usize = 1 << 20;
/// How long accept waits before checking whether a one-off test has finished.
const ACCEPT_POLL: Duration = Duration::from_millis(100);
/// How long after the announced duration a test with missing streams is given up.
const GRACE: Duration = Duration::from_secs(10);

/// How results are shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// Lines as the test runs.
    Text,
    /// One JSON object per test at its end.
    Json,
    /// Nothing (`--self`: the client prints).
    Silent,
}

/// Socket options of the server.
pub fn options(mss: Option<u32>, cc: Option<&net::CcArg>) -> Options {
    net::options(mss, cc)
}

/// A test in progress.
struct Test {
    header: TestHeader,
    peer: SocketAddr,
    start: Instant,
    cpu_start: CpuTime,
    streams: Mutex<Vec<Arc<Member>>>,
}

/// One connection of a test.
struct Member {
    index: u32,
    stream: Arc<UdtStream>,
    bytes: AtomicU64,
    /// When its last byte arrived (or, with none, when it ended), and the error if it failed.
    ended: Mutex<Option<(Instant, Option<String>)>>,
}

/// The JSON object printed per test with `--json`.
#[derive(Serialize)]
struct TestJson<'a> {
    peer: String,
    streams: u32,
    intervals: &'a [Interval<RecvSample>],
    summary: &'a ReceiverSummary,
    cpu_user_s: f64,
    cpu_system_s: f64,
}

type Registry = Arc<Mutex<HashMap<u64, Arc<Test>>>>;

/// Serve tests; with `one_off`, return the receiver's view of the first one when it ends.
pub fn serve(
    mut listener: UdtListener,
    one_off: bool,
    output: Output,
    interval: Duration,
) -> Result<Option<ReceiverSummary>> {
    listener.set_accept_timeout(Some(ACCEPT_POLL));
    let registry: Registry = Arc::default();
    let (done_tx, done_rx) = mpsc::channel::<ReceiverSummary>();
    loop {
        if one_off {
            if let Ok(summary) = done_rx.try_recv() {
                return Ok(Some(summary));
            }
        }
        let (stream, peer) = match listener.accept() {
            Ok(x) => x,
            Err(e) if matches!(e.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock) => continue,
            Err(e) => return Err(e).context("accepting a connection"),
        };
        let (registry, done_tx) = (Arc::clone(&registry), done_tx.clone());
        thread::Builder::new().name("perf-reader".into()).spawn(move || {
            if let Err(e) = handle(stream, peer, &registry, done_tx, output, interval) {
                tracing::warn!(%peer, "perf connection: {e:#}");
            }
        })?;
    }
}

/// Read one connection's header, join its test (starting the test's reporter if it is the
/// first), then read it to the end.
fn handle(
    mut stream: UdtStream,
    peer: SocketAddr,
    registry: &Registry,
    done: mpsc::Sender<ReceiverSummary>,
    output: Output,
    interval: Duration,
) -> Result<()> {
    let mut head = [0u8; TestHeader::LEN];
    stream.read_exact(&mut head).context("reading the test header")?;
    let header = TestHeader::decode(&head)?;
    stream.stats(true);
    let stream = Arc::new(stream);
    let member =
        Arc::new(Member { index: header.index, stream, bytes: AtomicU64::new(0), ended: Mutex::new(None) });
    {
        let mut tests = registry.lock().unwrap_or_else(|e| e.into_inner());
        let test = tests.entry(header.test_id).or_insert_with(|| {
            let test = Arc::new(Test {
                header,
                peer,
                start: Instant::now(),
                cpu_start: CpuTime::now(),
                streams: Mutex::new(Vec::new()),
            });
            let (test2, registry2) = (Arc::clone(&test), Arc::clone(registry));
            let spawned = thread::Builder::new().name("perf-report".into()).spawn(move || {
                let summary = report(&test2, output, interval);
                registry2.lock().unwrap_or_else(|e| e.into_inner()).remove(&test2.header.test_id);
                let _ = done.send(summary);
            });
            if let Err(e) = spawned {
                tracing::error!("cannot start the reporter thread: {e}");
            }
            test
        });
        test.streams.lock().unwrap_or_else(|e| e.into_inner()).push(Arc::clone(&member));
    }

    let mut buf = vec![0u8; BUFFER];
    let mut r = &*member.stream;
    let mut last_data = None;
    let error = loop {
        match r.read(&mut buf) {
            Ok(0) => break None,
            Ok(n) => {
                member.bytes.fetch_add(n as u64, Ordering::Relaxed);
                last_data = Some(Instant::now());
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => break Some(e.to_string()),
        }
    };
    // The stream's time ends with its last byte, as the reference peer (interop udt4_perf)
    // and iperf3 count it: the end of stream comes one round trip later (the sender's close
    // waits for the last ACK), which on a 300 ms path would add 3% to a 10 s test.
    let when = last_data.unwrap_or_else(Instant::now);
    *member.ended.lock().unwrap_or_else(|e| e.into_inner()) = Some((when, error));
    Ok(())
}

/// Print interval lines until every stream of the test has ended; return the totals.
fn report(test: &Test, output: Output, interval: Duration) -> ReceiverSummary {
    let text = output == Output::Text;
    if text {
        let plural = if test.header.count == 1 { "" } else { "s" };
        println!(
            "test from {}: {} stream{plural}, {:.1} s",
            test.peer,
            test.header.count,
            f64::from(test.header.duration_ms) / 1000.0
        );
        println!("{}", recv_title());
    }
    let announced = Duration::from_millis(u64::from(test.header.duration_ms));
    let mut intervals = Vec::new();
    let mut last = test.start;
    let mut k = 1u32;
    loop {
        let tick = test.start + interval * k;
        let mut finished = false;
        while Instant::now() < tick {
            finished = all_ended(test, announced);
            if finished {
                break;
            }
            thread::sleep((tick - Instant::now()).min(Duration::from_millis(20)));
        }
        let now = Instant::now();
        finished = finished || all_ended(test, announced);
        if now - last >= Duration::from_millis(50) || !finished {
            let sample = sample(test, (last - test.start).as_secs_f64(), (now - test.start).as_secs_f64());
            if text {
                for s in &sample.streams {
                    println!("{}", recv_line(s));
                }
                if sample.streams.len() > 1 {
                    println!("{}", recv_line(&sample.sum));
                }
            }
            intervals.push(sample);
            last = now;
        }
        k += 1;
        if finished {
            break;
        }
    }

    let members = test.streams.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let mut summary = ReceiverSummary::default();
    let mut end = test.start;
    for m in &members {
        summary.bytes += m.bytes.load(Ordering::Relaxed);
        let snap = m.stream.stats(false);
        summary.loss += snap.total.rcv_loss;
        summary.duplicates += snap.total.dup_recv;
        if let Some((when, error)) = &*m.ended.lock().unwrap_or_else(|e| e.into_inner()) {
            end = end.max(*when);
            if let Some(e) = error {
                summary.errors.push(format!("stream {}: {e}", m.index));
            }
        }
    }
    let missing = test.header.count as usize - members.len().min(test.header.count as usize);
    if missing > 0 {
        summary.errors.push(format!("{missing} of {} streams never connected", test.header.count));
    }
    summary.seconds = (end - test.start).as_secs_f64();
    summary.bits_per_second = bps(summary.bytes, summary.seconds);
    let cpu = CpuTime::now().since(&test.cpu_start);
    match output {
        Output::Text => {
            println!("- - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -");
            println!(
                "{} bytes ({}) in {:.2} s = {}, {} lost, {} duplicates, CPU {:.2} s user + {:.2} s sys  receiver",
                summary.bytes,
                units::bytes(summary.bytes),
                summary.seconds,
                units::bits(summary.bits_per_second),
                summary.loss,
                summary.duplicates,
                cpu.user.as_secs_f64(),
                cpu.system.as_secs_f64()
            );
            for e in &summary.errors {
                println!("error: {e}");
            }
        }
        Output::Json => {
            let json = TestJson {
                peer: test.peer.to_string(),
                streams: test.header.count,
                intervals: &intervals,
                summary: &summary,
                cpu_user_s: cpu.user.as_secs_f64(),
                cpu_system_s: cpu.system.as_secs_f64(),
            };
            match serde_json::to_string_pretty(&json) {
                Ok(s) => println!("{s}"),
                Err(e) => tracing::error!("encoding JSON: {e}"),
            }
        }
        Output::Silent => {}
    }
    summary
}

/// Whether the test is over: every stream connected and ended, or the ones that connected
/// ended and the rest are overdue.
fn all_ended(test: &Test, announced: Duration) -> bool {
    let members = test.streams.lock().unwrap_or_else(|e| e.into_inner());
    let ended = members.iter().all(|m| m.ended.lock().unwrap_or_else(|e| e.into_inner()).is_some());
    ended && (members.len() >= test.header.count as usize || test.start.elapsed() > announced + GRACE)
}

/// Read and clear every stream's counters.
fn sample(test: &Test, start: f64, end: f64) -> Interval<RecvSample> {
    let members = test.streams.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let mut samples: Vec<RecvSample> = members
        .iter()
        .map(|m| {
            let snap = m.stream.stats(true);
            let secs = snap.interval_len.as_secs_f64();
            RecvSample {
                id: m.index,
                start,
                end,
                bytes: snap.interval.bytes_recv,
                bits_per_second: bps(snap.interval.bytes_recv, secs),
                rtt_ms: snap.now.rtt_us as f64 / 1000.0,
                loss: snap.interval.rcv_loss,
                duplicates: snap.interval.dup_recv,
            }
        })
        .collect();
    samples.sort_by_key(|s| s.id);
    let n = samples.len().max(1) as f64;
    let sum = RecvSample {
        id: 0,
        start,
        end,
        bytes: samples.iter().map(|s| s.bytes).sum(),
        bits_per_second: samples.iter().map(|s| s.bits_per_second).sum(),
        rtt_ms: samples.iter().map(|s| s.rtt_ms).sum::<f64>() / n,
        loss: samples.iter().map(|s| s.loss).sum(),
        duplicates: samples.iter().map(|s| s.duplicates).sum(),
    };
    Interval { start, end, streams: samples, sum }
}
