//! The client of `udt perf`: N connections, each written from one preallocated buffer as
//! fast as the protocol takes it; the main thread samples `stats(true)` every interval. A
//! reversed test (`-R`) receives instead ([`super::reverse`]).

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use udt::UdtStream;

use super::{
    bps, send_line, send_title, Interval, Role, Sample, Start, StreamSummary, Summary, TestHeader, TestOpts,
    TestReport, GREETING_TIMEOUT,
};
use crate::cpu::CpuTime;
use crate::protocol::{self, Greeting};
use crate::security::{self, Security, Side};
use crate::{interrupt, link, net, units};

/// The buffer every write comes from.
const BUFFER: usize = 1 << 20;
/// How long a blocked write waits before looking at the stop flag again.
const WRITE_POLL: Duration = Duration::from_millis(100);
/// How long to wait, after sending stopped, for the peer to acknowledge the rest.
const DRAIN_LIMIT: Duration = Duration::from_secs(60);

/// What the client prints as the test runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// The header, a line per interval, the summary.
    Intervals,
    /// The header and the summary (`-q`).
    Summary,
    /// Nothing (`--json`: the caller prints the report).
    None,
}

/// Connections opened (or closed) at once around a test: each is a handshake and a greeting
/// (or a shutdown) that waits on the I/O thread's rounds, so a thousand one by one took seconds.
const AT_ONCE: usize = 16;

/// `f` on every item, on up to [`AT_ONCE`] threads; the results in the items' order, or the
/// first error (the items not started by then are skipped).
pub(super) fn in_parallel<I, T, F>(items: I, f: F) -> Result<Vec<T>>
where
    I: IntoIterator,
    I::IntoIter: Send,
    I::Item: Send,
    T: Send,
    F: Fn(I::Item) -> Result<T> + Sync,
{
    let queue = std::sync::Mutex::new(items.into_iter().enumerate());
    let failed = AtomicBool::new(false);
    let next = || queue.lock().unwrap_or_else(|e| e.into_inner()).next();
    let mut done: Vec<(usize, T)> = thread::scope(|scope| {
        let workers: Vec<_> = (0..AT_ONCE)
            .map(|_| {
                scope.spawn(|| -> Result<Vec<(usize, T)>> {
                    let mut out = Vec::new();
                    while let Some((i, item)) = next() {
                        if failed.load(Ordering::SeqCst) {
                            break;
                        }
                        match f(item) {
                            Ok(t) => out.push((i, t)),
                            Err(e) => {
                                failed.store(true, Ordering::SeqCst);
                                return Err(e);
                            }
                        }
                    }
                    Ok(out)
                })
            })
            .collect();
        let mut all = Vec::new();
        let mut first_error = None;
        for w in workers {
            match w.join().unwrap_or_else(|_| Err(anyhow::anyhow!("a worker thread panicked"))) {
                Ok(out) => all.extend(out),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(all), Err)
    })?;
    done.sort_unstable_by_key(|&(i, _)| i);
    Ok(done.into_iter().map(|(_, t)| t).collect())
}

/// What a writer thread returns: bytes written, when the last was acknowledged.
type WriterResult = Result<(u64, Instant)>;

/// Run a test against `target`, printing as `output` says, secured as `opts` ask.
pub fn run(target: &str, opts: &TestOpts, output: Output) -> Result<TestReport> {
    let security = security::resolve(&opts.security, Side::Connects, "perf client")?;
    run_with(target, opts, output, &security)
}

/// [`run`] with the security decided.
pub fn run_with(target: &str, opts: &TestOpts, output: Output, security: &Security) -> Result<TestReport> {
    let mut options = link::with_peer_timeout(net::options(opts.mss, opts.cc.as_ref()), opts.peer_timeout);
    security.apply(&mut options);
    options.write_timeout = Some(WRITE_POLL);
    // UDT_MAXBW counts bytes per second of UDT packets.
    options.config.max_bandwidth = opts.bandwidth.map(|bits| bits / 8);
    let mss = options.config.mss;
    let test_id = test_id();
    let duration_ms = u32::try_from(opts.time.as_millis()).unwrap_or(u32::MAX);

    let open = |index: u32| -> Result<UdtStream> {
        let mut stream = net::connect(target, options.clone())?;
        let header = TestHeader { test_id, index, count: opts.parallel, duration_ms, reverse: opts.reverse };
        write_patiently(&mut stream, &header.encode()).context("sending the test header")?;
        if let Err(e) = greet(&mut stream, target) {
            // Deliver the header and the shutdown, so the peer says at once what it got (it
            // would otherwise hear nothing until its peer timeout once this process exits).
            link::close_within(stream, Duration::from_millis(500));
            return Err(e);
        }
        if opts.reverse {
            super::reverse::prepare(&mut stream);
        }
        Ok(stream)
    };
    let streams: Vec<Arc<UdtStream>> =
        in_parallel(1..=opts.parallel, open)?.into_iter().map(Arc::new).collect();
    // The name the controller gives itself, with the parameters as typed when --cc had any.
    let name = streams.first().map(|s| s.congestion_control()).unwrap_or("?");
    let cc = match opts.cc.as_ref().and_then(|c| c.spec.split_once(':')) {
        Some((_, params)) if !params.trim().is_empty() => format!("{name}:{params}"),
        _ => name.to_string(),
    };
    if output != Output::None {
        let plural = if opts.parallel == 1 { "" } else { "s" };
        let amount = match (opts.bytes, opts.omit) {
            (Some(bytes), _) => units::bytes(bytes),
            (None, Some(omit)) => {
                format!("{:.1} s after {:.1} s omitted", opts.time.as_secs_f64(), omit.as_secs_f64())
            }
            (None, None) => format!("{:.1} s", opts.time.as_secs_f64()),
        };
        println!(
            "udt perf: {target}, {} stream{plural}, {amount}, MSS {mss}, {cc} congestion control",
            opts.parallel
        );
        if output == Output::Intervals {
            println!("{}", if opts.reverse { super::recv_title() } else { send_title() });
        }
    }

    if opts.reverse {
        let start = Start {
            peer: target.to_string(),
            streams: opts.parallel,
            duration_s: opts.time.as_secs_f64(),
            bytes: None,
            omit_s: None,
            reverse: true,
            mss,
            congestion_control: cc,
        };
        return super::reverse::receive(streams, start, opts, output);
    }
    let buf: Arc<[u8]> = (0..BUFFER).map(|i| (i % 251) as u8).collect::<Vec<u8>>().into();
    let stop = Arc::new(AtomicBool::new(false));
    // -n: each stream's share of the bytes (the first ones take the remainder).
    let share = |i: usize| {
        opts.bytes.map(|total| {
            let n = u64::from(opts.parallel);
            total / n + u64::from((i as u64) < total % n)
        })
    };
    let written: Vec<Arc<AtomicU64>> = streams.iter().map(|_| Arc::new(AtomicU64::new(0))).collect();
    let omit = opts.omit.unwrap_or(Duration::ZERO);
    let cpu0 = CpuTime::now();
    let t0 = Instant::now();
    for s in &streams {
        s.stats(true);
    }
    let writers: Vec<JoinHandle<WriterResult>> = streams
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let (s, buf, stop) = (Arc::clone(s), Arc::clone(&buf), Arc::clone(&stop));
            let (limit, written) = (share(i), Arc::clone(&written[i]));
            thread::Builder::new()
                .name(format!("perf-writer-{}", i + 1))
                .spawn(move || write_until(&s, &buf, &stop, limit, &written))
        })
        .collect::<io::Result<_>>()?;

    // With -n the test ends when every stream has sent its share; with a time, at the end of
    // it (or when a writer fails).
    let end = if opts.bytes.is_some() { None } else { Some(t0 + omit + opts.time) };
    let over = |writers: &[JoinHandle<WriterResult>]| match end {
        Some(_) => writers.iter().any(|w| w.is_finished()),
        None => writers.iter().all(|w| w.is_finished()),
    };
    let mut intervals = Vec::new();
    let mut last = t0;
    // Ticks count from the start, and again from the end of the omitted seconds.
    let (mut base, mut k) = (t0, 1u32);
    // Where the results start: the end of the omitted seconds, and what each stream had
    // written by then.
    let mut counted_from: Option<(Instant, Vec<u64>)> = omit.is_zero().then(|| (t0, vec![0; streams.len()]));
    loop {
        let mut tick = base + opts.interval * k;
        if let Some(end) = end {
            tick = tick.min(end);
        }
        let omit_end = t0 + omit;
        if counted_from.is_none() && tick > omit_end {
            tick = omit_end;
        }
        // Sleep to the tick, but notice a writer that failed, and a Ctrl-C.
        while Instant::now() < tick && !over(&writers) && !interrupt::requested() {
            thread::sleep((tick - Instant::now()).min(Duration::from_millis(20)));
        }
        let now = Instant::now();
        let mut interval = sample(&streams, (last - t0).as_secs_f64(), (now - t0).as_secs_f64());
        interval.omitted = counted_from.is_none();
        if counted_from.is_none() && now >= omit_end {
            counted_from = Some((now, written.iter().map(|w| w.load(Ordering::SeqCst)).collect()));
            (base, k) = (now, 1);
        } else {
            k += 1;
        }
        if output == Output::Intervals {
            print_interval(&interval);
        }
        intervals.push(interval);
        last = now;
        if end.is_some_and(|end| now >= end) || over(&writers) || interrupt::requested() {
            break;
        }
    }
    stop.store(true, Ordering::SeqCst);
    let (counted_from, written_before) = counted_from.unwrap_or_else(|| (t0, vec![0; streams.len()]));

    let mut results = Vec::with_capacity(writers.len());
    let mut failure = None;
    for (i, w) in writers.into_iter().enumerate() {
        match w.join().map_err(|_| anyhow::anyhow!("writer thread {} panicked", i + 1)) {
            Ok(Ok(r)) => results.push(r),
            Ok(Err(e)) | Err(e) => {
                failure.get_or_insert(e.context(format!("stream {}", i + 1)));
            }
        }
    }
    if let Some(e) = failure {
        // Tell the server at once rather than leave it waiting for the dead-peer timeout.
        for s in streams {
            if let Ok(s) = Arc::try_unwrap(s) {
                link::close_within(s, Duration::from_millis(500));
            }
        }
        return Err(e);
    }
    let cpu = CpuTime::now().since(&cpu0);

    let mut per_stream = Vec::with_capacity(streams.len());
    for (i, (s, (bytes, acked))) in streams.iter().zip(&results).enumerate() {
        let snap = s.stats(false);
        let secs = acked.saturating_duration_since(counted_from).as_secs_f64();
        let bytes = bytes.saturating_sub(written_before[i]);
        per_stream.push(StreamSummary {
            id: i as u32 + 1,
            bytes,
            seconds: secs,
            bits_per_second: bps(bytes, secs),
            retransmits: snap.total.retransmits,
            loss: snap.total.snd_loss,
            duplicates: snap.total.dup_recv,
            rtt_ms: snap.now.rtt_us as f64 / 1000.0,
        });
    }
    let close = |s: Arc<UdtStream>| -> Result<()> {
        match Arc::try_unwrap(s) {
            Ok(s) => {
                if let Err(e) = net::close(s) {
                    tracing::warn!("closing a test connection: {e}");
                }
            }
            Err(_) => tracing::warn!("a test connection is still shared at the end"),
        }
        Ok(())
    };
    in_parallel(streams, close)?;

    let summary = Summary::over(per_stream, &cpu);
    if output != Output::None {
        print_summary(&summary);
    }
    Ok(TestReport {
        role: Role::Client,
        start: Start {
            peer: target.to_string(),
            streams: opts.parallel,
            duration_s: opts.time.as_secs_f64(),
            bytes: opts.bytes,
            omit_s: opts.omit.map(|d| d.as_secs_f64()),
            reverse: false,
            mss,
            congestion_control: cc,
        },
        intervals,
        summary,
    })
}

/// Read the server's greeting: anything but a `udt perf` server ends the test.
fn greet(stream: &mut UdtStream, target: &str) -> Result<()> {
    stream.set_read_timeout(Some(GREETING_TIMEOUT));
    let greeting = protocol::read_greeting(stream);
    stream.set_read_timeout(None);
    let not_perf = |why: String| anyhow::anyhow!("the peer at {target} is not a `udt perf server` ({why})");
    match greeting {
        Ok(Greeting::PerfServer(v)) if v == TestHeader::VERSION => Ok(()),
        Ok(Greeting::PerfServer(v)) => bail!(
            "the `udt perf server` at {target} speaks test header version {v}, this client {}: \
             use the same version of udt at both ends",
            TestHeader::VERSION
        ),
        Ok(Greeting::Receiver(_)) => Err(not_perf("it is a `udt recv`".into())),
        Ok(Greeting::Other(what)) => Err(not_perf(what)),
        Err(e) if e.kind() == io::ErrorKind::TimedOut => {
            Err(not_perf(format!("no greeting within {} s", GREETING_TIMEOUT.as_secs())))
        }
        Err(e) => Err(not_perf(format!("it closed the connection without a greeting: {e}"))),
    }
}

/// A test id unlikely to collide with another client's.
fn test_id() -> u64 {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    nanos ^ (u64::from(std::process::id()) << 32)
}

/// `write_all` that retries on the write timeout used to poll the stop flag.
fn write_patiently(stream: &mut UdtStream, mut data: &[u8]) -> io::Result<()> {
    let deadline = Instant::now() + DRAIN_LIMIT;
    while !data.is_empty() {
        match stream.write(data) {
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == io::ErrorKind::TimedOut && Instant::now() < deadline => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Write `buf` over and over until `stop` (or `limit` bytes), counting on `written`, then wait
/// for the acknowledgement of everything.
fn write_until(
    stream: &UdtStream,
    buf: &[u8],
    stop: &AtomicBool,
    limit: Option<u64>,
    written: &AtomicU64,
) -> WriterResult {
    let mut sent = 0u64;
    let mut off = 0usize;
    let mut w = stream;
    while !stop.load(Ordering::Relaxed) && limit.is_none_or(|limit| sent < limit) {
        let left = limit.map_or(usize::MAX, |limit| usize::try_from(limit - sent).unwrap_or(usize::MAX));
        let end = buf.len().min(off.saturating_add(left));
        match w.write(&buf[off..end]) {
            Ok(n) => {
                sent += n as u64;
                written.fetch_add(n as u64, Ordering::Relaxed);
                off = (off + n) % buf.len();
            }
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {}
            Err(e) => return Err(e).context(format!("sending failed after {sent} bytes")),
        }
    }
    let deadline = Instant::now() + DRAIN_LIMIT;
    loop {
        if interrupt::requested() {
            return Err(interrupt::error().into());
        }
        match stream.flush_acknowledged() {
            Ok(()) => return Ok((sent, Instant::now())),
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                if Instant::now() >= deadline {
                    bail!("the peer did not acknowledge the last data within {} s", DRAIN_LIMIT.as_secs());
                }
            }
            Err(e) => return Err(e).context("waiting for the acknowledgement of the last data"),
        }
    }
}

/// Read and clear every stream's counters.
fn sample(streams: &[Arc<UdtStream>], start: f64, end: f64) -> Interval<Sample> {
    let samples: Vec<Sample> = streams
        .iter()
        .enumerate()
        .map(|(i, s)| Sample::read(s, i as u32 + 1, Role::Client, start, end))
        .collect();
    let sum = Sample::sum(&samples, start, end);
    Interval { start, end, omitted: false, streams: samples, sum }
}

/// Print an interval's lines (the SUM line only with several streams).
fn print_interval(interval: &Interval<Sample>) {
    let omitted = if interval.omitted { "  (omitted)" } else { "" };
    for s in &interval.streams {
        println!("{}{omitted}", send_line(s));
    }
    if interval.streams.len() > 1 {
        println!("{}{omitted}", send_line(&interval.sum));
    }
}

/// Print the summary.
fn print_summary(s: &Summary) {
    println!("- - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -");
    println!(
        "{:<5} {:>13} {:>10} {:>11} {:>6} {:>6}",
        "[ ID]", "Interval", "Transfer", "Bitrate", "Retr", "Loss"
    );
    let line = |label: String, secs: f64, bytes: u64, bits: f64, retr: u64, loss: u64| {
        println!(
            "{label:<5} {:>13} {:>10} {:>11} {retr:>6} {loss:>6}  sender",
            super::span(0.0, secs),
            units::bytes(bytes),
            units::bits(bits)
        );
    };
    for st in &s.streams {
        line(super::label(st.id), st.seconds, st.bytes, st.bits_per_second, st.retransmits, st.loss);
    }
    if s.streams.len() > 1 {
        line(super::label(0), s.seconds, s.bytes, s.bits_per_second, s.retransmits, s.loss);
    }
    println!(
        "{} bytes in {:.2} s = {:.3} Gb/s, RTT {:.3} ms, CPU {:.2} s user + {:.2} s sys = {:.2} CPU s/GB",
        s.bytes, s.seconds, s.gbps, s.rtt_ms, s.cpu_user_s, s.cpu_system_s, s.cpu_s_per_gb
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_parallel_keeps_the_items_order() {
        let out = in_parallel(0..100u32, |i| Ok(i * 2)).unwrap();
        assert_eq!(out, (0..100).map(|i| i * 2).collect::<Vec<_>>());
    }

    #[test]
    fn in_parallel_returns_an_error_and_stops_starting_items() {
        let started = std::sync::atomic::AtomicUsize::new(0);
        let r = in_parallel(0..10_000u32, |i| {
            started.fetch_add(1, Ordering::SeqCst);
            if i == 5 {
                bail!("item {i} failed");
            }
            thread::sleep(Duration::from_millis(1));
            Ok(i)
        });
        assert_eq!(r.unwrap_err().to_string(), "item 5 failed");
        assert!(started.load(Ordering::SeqCst) < 1_000, "went on after the error");
    }
}
