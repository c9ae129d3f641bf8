//! The server of `udt perf`: accepts connections, groups them into tests by the test id of
//! their header, reads each to its end (or, for a reversed test, writes to it for the test's
//! time), and samples `stats(true)` every interval. Each connection is a task on a small tokio
//! runtime (`tasks.rs`), as the client's are, not a thread; each test has a reporting thread.
//! The two directions of a `--bidir` test are
//! two tests here (their ids differ in the lowest bit), each reported on its own; a one-off
//! server waits for both.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use udt::{AsyncUdtStream, Options, UdtListener};

use super::{
    bps, print_json, recv_line, recv_title, Interval, Role, Sample, Start, StreamSummary, Summary,
    TestHeader, TestReport, GREETING_TIMEOUT,
};
use crate::cpu::CpuTime;
use crate::protocol::{self, describe_magic};
use crate::{interrupt, net, units};

/// Read size of a test's only stream; tests of many streams read less at a time (see
/// [`read_size`]).
const BUFFER: usize = 1 << 20;
/// What a test's read buffers may add up to, at most, before each is cut to [`MIN_BUFFER`].
const BUFFERS_TOTAL: usize = 64 << 20;
/// The smallest read size.
const MIN_BUFFER: usize = 64 << 10;

/// Read size of each of `streams` streams: 1 MiB, but no more than their share of 64 MiB (and
/// no less than 64 KiB), so that `-P 1000` does not hold a gigabyte of received packets.
pub(super) fn read_size(streams: u32) -> usize {
    (BUFFERS_TOTAL / streams.max(1) as usize).clamp(MIN_BUFFER, BUFFER)
}
/// How long accept waits before checking whether a one-off test has finished.
const ACCEPT_POLL: Duration = Duration::from_millis(100);
/// How often a reversed test waiting for its last acknowledgement looks at Ctrl-C.
const WRITE_POLL: Duration = Duration::from_millis(100);
/// How long a reversed test waits for the acknowledgement of its last data.
const DRAIN_LIMIT: Duration = Duration::from_secs(60);
/// How long after the announced duration a test with missing streams is given up.
const GRACE: Duration = Duration::from_secs(10);

/// How results are shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// Lines: a header and summary per test, and with `intervals` a line per interval.
    Text {
        /// Interval lines too (not with `-q`).
        intervals: bool,
    },
    /// One JSON object on one line per test at its end.
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
    /// Counts the streams that ended; the reporter sleeps on it between its interval lines.
    ends: Arc<Ends>,
}

/// Stream ends of a test, counted and signalled to its reporter (which would otherwise poll for
/// them, waking the receiving process many times a second).
#[derive(Default)]
struct Ends {
    count: Mutex<u64>,
    signal: Condvar,
}

impl Ends {
    fn count(&self) -> u64 {
        *self.count.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sleep until a stream ends after `seen` were counted, or until `until`.
    fn wait(&self, seen: u64, until: Instant) {
        let count = self.count.lock().unwrap_or_else(|e| e.into_inner());
        let left = until.saturating_duration_since(Instant::now());
        let _ = self.signal.wait_timeout_while(count, left, |n| *n == seen);
    }
}

/// One connection of a test.
struct Member {
    index: u32,
    stream: Arc<AsyncUdtStream>,
    bytes: AtomicU64,
    /// When its last byte arrived (or, with none, when it ended), and the error if it failed.
    ended: Mutex<Option<(Instant, Option<String>)>>,
    /// Its test's count of ended streams.
    ends: Arc<Ends>,
}

impl Member {
    /// The stream ended: its last byte came `when`, with `error` if it failed.
    fn end(&self, when: Instant, error: Option<String>) {
        *self.ended.lock().unwrap_or_else(|e| e.into_inner()) = Some((when, error));
        *self.ends.count.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.ends.signal.notify_all();
    }
}

type Registry = Arc<Mutex<HashMap<u64, Arc<Test>>>>;

/// A finished test: its header and this end's summary.
type Done = (TestHeader, Summary);

/// The server's view of a client's test (both directions of a `--bidir` one).
#[derive(Debug, Default)]
pub struct Served {
    /// Of the test in which the client sent and this end received.
    pub received: Option<Summary>,
    /// Of the test in which this end sent (`-R`, the other half of `--bidir`).
    pub sent: Option<Summary>,
}

impl Served {
    /// The first client's test among `done` once it is complete: its one direction, or both
    /// of a `--bidir` test.
    fn first_complete(done: &mut Vec<Done>) -> Option<Served> {
        let first = done.first()?.0;
        let partner = first.test_id ^ 1;
        let wanted = |h: &TestHeader| h.test_id == first.test_id || (first.bidir && h.test_id == partner);
        if first.bidir && !done.iter().any(|(h, _)| h.test_id == partner) {
            return None;
        }
        let mut served = Served::default();
        for (h, summary) in done.drain(..).filter(|(h, _)| wanted(h)) {
            if h.reverse {
                served.sent = Some(summary);
            } else {
                served.received = Some(summary);
            }
        }
        Some(served)
    }
}

/// Serve tests; with `one_off`, return this end's view of the first client's test when it ends.
pub fn serve(
    mut listener: UdtListener,
    one_off: bool,
    output: Output,
    interval: Duration,
    mss: u32,
    one_time_code: bool,
) -> Result<Option<Served>> {
    listener.set_accept_timeout(Some(ACCEPT_POLL));
    // Tests come and go: as many tasks as the runtime takes.
    let rt = super::tasks::runtime(usize::MAX).context("starting the runtime of the connections' tasks")?;
    let registry: Registry = Arc::default();
    let (done_tx, done_rx) = mpsc::channel::<Done>();
    let mut done = Vec::new();
    loop {
        if interrupt::requested() {
            return Err(interrupt::error().into());
        }
        if one_off {
            done.extend(done_rx.try_iter());
            if let Some(served) = Served::first_complete(&mut done) {
                return Ok(Some(served));
            }
        }
        let (stream, peer) = match listener.accept() {
            Ok(x) => x,
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied && one_time_code => {
                anyhow::bail!(
                    "a client failed the key agreement ({e}); the code phrase is spent: start the \
                     server again for a new one (or share a --key-file)"
                )
            }
            Err(e) if crate::security::is_peer_failure(&e) => {
                if !matches!(e.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock) {
                    eprintln!("udt perf server: refused a connection: {e}");
                }
                continue;
            }
            Err(e) => return Err(e).context("accepting a connection"),
        };
        let (registry, done_tx) = (Arc::clone(&registry), done_tx.clone());
        let stream = AsyncUdtStream::from_std(stream);
        rt.spawn(async move {
            if let Err(e) = handle(stream, peer, &registry, done_tx, output, interval, mss).await {
                tracing::warn!(%peer, "perf connection: {e:#}");
            }
        });
    }
}

/// Greet a connection, read its header, join its test (starting the test's reporter if it is
/// the first), then read it to the end. A peer that is not a `udt perf client` is refused.
async fn handle(
    stream: AsyncUdtStream,
    peer: SocketAddr,
    registry: &Registry,
    done: mpsc::Sender<Done>,
    output: Output,
    interval: Duration,
    mss: u32,
) -> Result<()> {
    (&stream)
        .write_all(&protocol::hello(TestHeader::MAGIC, TestHeader::VERSION))
        .await
        .context("greeting the client")?;
    let mut head = [0u8; TestHeader::LEN];
    let header = match tokio::time::timeout(GREETING_TIMEOUT, (&stream).read_exact(&mut head)).await {
        Ok(Ok(_)) => TestHeader::decode(&head).map_err(|e| {
            if head[..4] == TestHeader::MAGIC {
                e.to_string()
            } else {
                format!("not a `udt perf client`: {}", describe_magic(&head[..4]))
            }
        }),
        Err(_) => {
            Err(format!("not a `udt perf client`: no test header within {} s", GREETING_TIMEOUT.as_secs()))
        }
        Ok(Err(e)) => Err(format!("no test header: {e}")),
    };
    let header = match header {
        Ok(h) => h,
        Err(msg) => {
            if output != Output::Silent {
                eprintln!("udt perf server: connection from {peer} refused: {msg}");
            }
            // Deliver the shutdown, so the client says at once what it got.
            let _ = tokio::time::timeout(Duration::from_secs(1), stream.close()).await;
            return Ok(());
        }
    };
    stream.stats(true);
    let stream = Arc::new(stream);
    let member = {
        let mut tests = registry.lock().unwrap_or_else(|e| e.into_inner());
        let test = tests.entry(header.test_id).or_insert_with(|| {
            let test = Arc::new(Test {
                header,
                peer,
                start: Instant::now(),
                cpu_start: CpuTime::now(),
                streams: Mutex::new(Vec::new()),
                ends: Arc::default(),
            });
            let (test2, registry2) = (Arc::clone(&test), Arc::clone(registry));
            let spawned = thread::Builder::new().name("perf-report".into()).spawn(move || {
                let summary = report(&test2, output, interval, mss);
                registry2.lock().unwrap_or_else(|e| e.into_inner()).remove(&test2.header.test_id);
                let _ = done.send((test2.header, summary));
            });
            if let Err(e) = spawned {
                tracing::error!("cannot start the reporter thread: {e}");
            }
            test
        });
        let ends = Arc::clone(&test.ends);
        let member = Arc::new(Member {
            index: header.index,
            stream,
            bytes: AtomicU64::new(0),
            ended: Mutex::new(None),
            ends,
        });
        test.streams.lock().unwrap_or_else(|e| e.into_inner()).push(Arc::clone(&member));
        member
    };

    if header.reverse {
        let deadline =
            test_start(registry, header.test_id) + Duration::from_millis(u64::from(header.duration_ms));
        let error = send_until(&member, deadline).await.err().map(|e| format!("{e:#}"));
        member.end(Instant::now(), error);
        return Ok(());
    }
    // The bytes are looked at where they landed: the kernel's copy is the only one, as for a
    // TCP receiver's `recv`.
    let size = read_size(header.count);
    let mut chunks = Vec::new();
    let mut last_data = None;
    let error = loop {
        match member.stream.read_chunks(size, &mut chunks).await {
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
    member.end(when, error);
    Ok(())
}

/// Print interval lines until every stream of the test has ended; return the totals.
fn report(test: &Test, output: Output, interval: Duration, mss: u32) -> Summary {
    let text = matches!(output, Output::Text { .. });
    let interval_lines = output == Output::Text { intervals: true };
    if text {
        let plural = if test.header.count == 1 { "" } else { "s" };
        let bidir = match (test.header.bidir, test.header.reverse) {
            (false, _) => "",
            (true, false) => " (--bidir: the client's half)",
            (true, true) => " (--bidir: this end's half)",
        };
        println!(
            "test from {}: {} stream{plural}, {:.1} s{bidir}",
            test.peer,
            test.header.count,
            f64::from(test.header.duration_ms) / 1000.0
        );
        if interval_lines {
            println!("{}", recv_title());
        }
    }
    let announced = Duration::from_millis(u64::from(test.header.duration_ms));
    let mut intervals = Vec::new();
    let mut last = test.start;
    let mut k = 1u32;
    loop {
        let tick = test.start + interval * k;
        let mut finished = false;
        // Until the tick, or sooner when the last stream ends (or the streams not yet connected
        // are given up, `GRACE` after the announced end).
        let give_up = test.start + announced + GRACE;
        while Instant::now() < tick {
            let seen = test.ends.count();
            finished = all_ended(test, announced);
            if finished {
                break;
            }
            let until = if Instant::now() <= give_up { tick.min(give_up) } else { tick };
            test.ends.wait(seen, until + Duration::from_millis(1));
        }
        let now = Instant::now();
        finished = finished || all_ended(test, announced);
        if now - last >= Duration::from_millis(50) || !finished {
            let sample = sample(test, (last - test.start).as_secs_f64(), (now - test.start).as_secs_f64());
            if interval_lines {
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

    let mut members = test.streams.lock().unwrap_or_else(|e| e.into_inner()).clone();
    members.sort_by_key(|m| m.index);
    let mut per_stream = Vec::with_capacity(members.len());
    let mut errors = Vec::new();
    let mut cc = String::new();
    for m in &members {
        let snap = m.stream.stats(false);
        cc = m.stream.congestion_control().to_string();
        let bytes = m.bytes.load(Ordering::Relaxed);
        let mut seconds = 0.0;
        if let Some((when, error)) = &*m.ended.lock().unwrap_or_else(|e| e.into_inner()) {
            seconds = (*when - test.start).as_secs_f64();
            if let Some(e) = error {
                errors.push(format!("stream {}: {e}", m.index));
            }
        }
        per_stream.push(StreamSummary {
            id: m.index,
            bytes,
            seconds,
            bits_per_second: bps(bytes, seconds),
            retransmits: snap.total.retransmits,
            loss: if test.header.reverse { snap.total.snd_loss } else { snap.total.rcv_loss },
            duplicates: snap.total.dup_recv,
            rtt_ms: snap.now.rtt_us as f64 / 1000.0,
        });
    }
    let missing = test.header.count as usize - members.len().min(test.header.count as usize);
    if missing > 0 {
        errors.push(format!("{missing} of {} streams never connected", test.header.count));
    }
    let cpu = CpuTime::now().since(&test.cpu_start);
    let mut summary = Summary::over(per_stream, &cpu);
    summary.errors = errors;
    match output {
        Output::Text { .. } => {
            println!("- - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -");
            println!(
                "{} bytes ({}) in {:.2} s = {}, {} lost, {} duplicates, CPU {:.2} s user + {:.2} s sys  {}",
                summary.bytes,
                units::bytes(summary.bytes),
                summary.seconds,
                units::bits(summary.bits_per_second),
                summary.loss,
                summary.duplicates,
                summary.cpu_user_s,
                summary.cpu_system_s,
                if test.header.reverse { "sender" } else { "receiver" }
            );
            super::print_fairness(&summary);
            for e in &summary.errors {
                println!("error: {e}");
            }
        }
        Output::Json => {
            let report = TestReport {
                role: Role::Server,
                start: Start {
                    peer: test.peer.to_string(),
                    streams: test.header.count,
                    duration_s: announced.as_secs_f64(),
                    bytes: None,
                    omit_s: None,
                    reverse: test.header.reverse,
                    bidir: test.header.bidir,
                    mss,
                    congestion_control: cc,
                },
                intervals,
                summary,
                bidir_reverse: None,
            };
            if let Err(e) = print_json(&report) {
                tracing::error!("{e:#}");
            }
            return report.summary;
        }
        Output::Silent => {}
    }
    summary
}

/// When the test `id` started (now, if it is gone).
fn test_start(registry: &Registry, id: u64) -> Instant {
    registry.lock().unwrap_or_else(|e| e.into_inner()).get(&id).map_or_else(Instant::now, |t| t.start)
}

/// A reversed test's stream: write from one buffer until `deadline` (or Ctrl-C), counting the
/// bytes, then wait for the acknowledgement of everything. The connection closes when the
/// test is reported and its last handle goes.
async fn send_until(member: &Member, deadline: Instant) -> Result<()> {
    let buf: Vec<u8> = (0..BUFFER).map(|i| (i % 251) as u8).collect();
    let mut w = &*member.stream;
    let mut off = 0;
    let until = tokio::time::Instant::from_std(deadline);
    while Instant::now() < deadline && !interrupt::requested() {
        tokio::select! {
            biased;
            _ = tokio::time::sleep_until(until) => break,
            r = w.write(&buf[off..]) => {
                let n = r.context("sending")?;
                member.bytes.fetch_add(n as u64, Ordering::Relaxed);
                off = (off + n) % buf.len();
            }
        }
    }
    let drain = Instant::now() + DRAIN_LIMIT;
    loop {
        match tokio::time::timeout(WRITE_POLL, member.stream.flush_acknowledged()).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(e)) => return Err(e).context("waiting for the acknowledgement of the last data"),
            Err(_) if Instant::now() < drain && !interrupt::requested() => {}
            Err(_) => anyhow::bail!("the last data was not acknowledged within {} s", DRAIN_LIMIT.as_secs()),
        }
    }
}

/// Whether the test is over: every stream connected and ended, or the ones that connected
/// ended and the rest are overdue.
fn all_ended(test: &Test, announced: Duration) -> bool {
    let members = test.streams.lock().unwrap_or_else(|e| e.into_inner());
    let ended = members.iter().all(|m| m.ended.lock().unwrap_or_else(|e| e.into_inner()).is_some());
    ended && (members.len() >= test.header.count as usize || test.start.elapsed() > announced + GRACE)
}

/// Read and clear every stream's counters.
fn sample(test: &Test, start: f64, end: f64) -> Interval<Sample> {
    // A reversed test's server is the sending end: its counters are a sender's.
    let role = if test.header.reverse { Role::Client } else { Role::Server };
    let members = test.streams.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let mut samples: Vec<Sample> =
        members.iter().map(|m| Sample::of(&m.stream.stats(true), m.index, role, start, end)).collect();
    samples.sort_by_key(|s| s.id);
    let sum = Sample::sum(&samples, start, end);
    Interval { start, end, omitted: false, streams: samples, sum }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_buffers_of_many_streams_add_up_to_little() {
        assert_eq!(read_size(1), BUFFER);
        assert_eq!(read_size(64), BUFFER);
        assert_eq!(read_size(128), 512 << 10);
        assert!(read_size(1000) * 1000 <= BUFFERS_TOTAL);
        assert_eq!(read_size(4096), MIN_BUFFER);
    }
}
