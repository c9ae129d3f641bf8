//! The sending side of `udt perf`: N connections, each written from one preallocated buffer as
//! fast as the protocol takes it; the main thread samples `stats(true)` every interval.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use serde::Serialize;
use udt::UdtStream;

use super::{bps, send_line, send_title, Interval, ReceiverSummary, SendSample, TestHeader, TestOpts};
use crate::cpu::CpuTime;
use crate::{net, units};

/// The buffer every write comes from.
const BUFFER: usize = 1 << 20;
/// How long a blocked write waits before looking at the stop flag again.
const WRITE_POLL: Duration = Duration::from_millis(100);
/// How long to wait, after sending stopped, for the peer to acknowledge the rest.
const DRAIN_LIMIT: Duration = Duration::from_secs(60);

/// Everything a client run produced (the `--json` object).
#[derive(Debug, Serialize)]
pub struct ClientResult {
    /// Test parameters.
    pub start: Start,
    /// One entry per interval.
    pub intervals: Vec<Interval<SendSample>>,
    /// The totals.
    pub summary: Summary,
}

/// Test parameters.
#[derive(Debug, Serialize)]
pub struct Start {
    /// The server.
    pub peer: String,
    /// Parallel connections.
    pub streams: u32,
    /// Seconds of sending asked for.
    pub duration_s: f64,
    /// Maximum segment size, bytes.
    pub mss: u32,
    /// Congestion control.
    pub congestion_control: String,
}

/// Totals of one stream.
#[derive(Debug, Serialize)]
pub struct StreamSummary {
    /// Stream index, 1-based.
    pub id: u32,
    /// Application bytes written and acknowledged.
    pub bytes: u64,
    /// From the start until the last byte was acknowledged.
    pub seconds: f64,
    /// `bytes` over `seconds`.
    pub bits_per_second: f64,
    /// Packets retransmitted.
    pub retransmits: u64,
    /// Packets reported lost.
    pub loss: u64,
    /// Smoothed RTT at the end, ms.
    pub rtt_ms: f64,
}

/// Totals of the test.
#[derive(Debug, Serialize)]
pub struct Summary {
    /// Application bytes written and acknowledged, all streams.
    pub bytes: u64,
    /// From the start until the last byte was acknowledged.
    pub seconds: f64,
    /// `bytes` over `seconds`.
    pub bits_per_second: f64,
    /// The same in Gb/s.
    pub gbps: f64,
    /// Packets retransmitted.
    pub retransmits: u64,
    /// Packets reported lost.
    pub loss: u64,
    /// Mean smoothed RTT at the end, ms.
    pub rtt_ms: f64,
    /// CPU seconds in user mode (the whole process).
    pub cpu_user_s: f64,
    /// CPU seconds in the kernel (the whole process).
    pub cpu_system_s: f64,
    /// CPU seconds (user + system) per 10^9 bytes moved.
    pub cpu_s_per_gb: f64,
    /// Per stream.
    pub streams: Vec<StreamSummary>,
    /// What the receiver saw (only with `--self`, where it is in this process).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receiver: Option<ReceiverSummary>,
}

/// What a writer thread returns: bytes written, when the last was acknowledged.
type WriterResult = Result<(u64, Instant)>;

/// Run a test against `target`; print lines as it goes if `text`.
pub fn run(target: &str, opts: &TestOpts, text: bool) -> Result<ClientResult> {
    let mut options = net::options(opts.mss, opts.cc.as_ref());
    options.write_timeout = Some(WRITE_POLL);
    // UDT_MAXBW counts bytes per second of UDT packets.
    options.config.max_bandwidth = opts.bandwidth.map(|bits| bits / 8);
    let mss = options.config.mss;
    let test_id = test_id();
    let duration_ms = u32::try_from(opts.time.as_millis()).unwrap_or(u32::MAX);

    let mut streams = Vec::with_capacity(opts.parallel as usize);
    for index in 1..=opts.parallel {
        let mut stream = net::connect(target, options.clone())?;
        let header = TestHeader { test_id, index, count: opts.parallel, duration_ms };
        write_patiently(&mut stream, &header.encode()).context("sending the test header")?;
        streams.push(Arc::new(stream));
    }
    // The name the controller gives itself, with the parameters as typed when --cc had any.
    let name = streams.first().map(|s| s.congestion_control()).unwrap_or("?");
    let cc = match opts.cc.as_ref().and_then(|c| c.spec.split_once(':')) {
        Some((_, params)) if !params.trim().is_empty() => format!("{name}:{params}"),
        _ => name.to_string(),
    };
    if text {
        let plural = if opts.parallel == 1 { "" } else { "s" };
        println!(
            "udt perf: {target}, {} stream{plural}, {:.1} s, MSS {mss}, {cc} congestion control",
            opts.parallel,
            opts.time.as_secs_f64()
        );
        println!("{}", send_title());
    }

    let buf: Arc<[u8]> = (0..BUFFER).map(|i| (i % 251) as u8).collect::<Vec<u8>>().into();
    let stop = Arc::new(AtomicBool::new(false));
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
            thread::Builder::new()
                .name(format!("perf-writer-{}", i + 1))
                .spawn(move || write_until(&s, &buf, &stop))
        })
        .collect::<io::Result<_>>()?;

    let end = t0 + opts.time;
    let mut intervals = Vec::new();
    let mut last = t0;
    let mut k = 1u32;
    loop {
        let tick = (t0 + opts.interval * k).min(end);
        // Sleep to the tick, but notice a writer that failed.
        while Instant::now() < tick && !writers.iter().any(|w| w.is_finished()) {
            thread::sleep((tick - Instant::now()).min(Duration::from_millis(20)));
        }
        let now = Instant::now();
        let interval = sample(&streams, (last - t0).as_secs_f64(), (now - t0).as_secs_f64());
        if text {
            print_interval(&interval);
        }
        intervals.push(interval);
        last = now;
        k += 1;
        if now >= end || writers.iter().any(|w| w.is_finished()) {
            break;
        }
    }
    stop.store(true, Ordering::SeqCst);

    let mut results = Vec::with_capacity(writers.len());
    for (i, w) in writers.into_iter().enumerate() {
        let r = w.join().map_err(|_| anyhow::anyhow!("writer thread {} panicked", i + 1))?;
        results.push(r.with_context(|| format!("stream {}", i + 1))?);
    }
    let cpu = CpuTime::now().since(&cpu0);

    let mut per_stream = Vec::with_capacity(streams.len());
    for (i, (s, (bytes, acked))) in streams.iter().zip(&results).enumerate() {
        let snap = s.stats(false);
        let secs = (*acked - t0).as_secs_f64();
        per_stream.push(StreamSummary {
            id: i as u32 + 1,
            bytes: *bytes,
            seconds: secs,
            bits_per_second: bps(*bytes, secs),
            retransmits: snap.total.retransmits,
            loss: snap.total.snd_loss,
            rtt_ms: snap.now.rtt_us as f64 / 1000.0,
        });
    }
    for s in streams {
        match Arc::try_unwrap(s) {
            Ok(s) => {
                if let Err(e) = net::close(s) {
                    tracing::warn!("closing a test connection: {e}");
                }
            }
            Err(_) => tracing::warn!("a test connection is still shared at the end"),
        }
    }

    let bytes: u64 = per_stream.iter().map(|s| s.bytes).sum();
    let seconds = per_stream.iter().map(|s| s.seconds).fold(0.0, f64::max);
    let n = per_stream.len().max(1) as f64;
    let summary = Summary {
        bytes,
        seconds,
        bits_per_second: bps(bytes, seconds),
        gbps: bps(bytes, seconds) / 1e9,
        retransmits: per_stream.iter().map(|s| s.retransmits).sum(),
        loss: per_stream.iter().map(|s| s.loss).sum(),
        rtt_ms: per_stream.iter().map(|s| s.rtt_ms).sum::<f64>() / n,
        cpu_user_s: cpu.user.as_secs_f64(),
        cpu_system_s: cpu.system.as_secs_f64(),
        cpu_s_per_gb: if bytes > 0 { cpu.total().as_secs_f64() / (bytes as f64 / 1e9) } else { 0.0 },
        streams: per_stream,
        receiver: None,
    };
    if text {
        print_summary(&summary);
    }
    Ok(ClientResult {
        start: Start {
            peer: target.to_string(),
            streams: opts.parallel,
            duration_s: opts.time.as_secs_f64(),
            mss,
            congestion_control: cc,
        },
        intervals,
        summary,
    })
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

/// Write `buf` over and over until `stop`, then wait for the acknowledgement of everything.
fn write_until(stream: &UdtStream, buf: &[u8], stop: &AtomicBool) -> WriterResult {
    let mut sent = 0u64;
    let mut off = 0usize;
    let mut w = stream;
    while !stop.load(Ordering::Relaxed) {
        match w.write(&buf[off..]) {
            Ok(n) => {
                sent += n as u64;
                off = (off + n) % buf.len();
            }
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {}
            Err(e) => return Err(e).context(format!("sending failed after {sent} bytes")),
        }
    }
    let deadline = Instant::now() + DRAIN_LIMIT;
    loop {
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
fn sample(streams: &[Arc<UdtStream>], start: f64, end: f64) -> Interval<SendSample> {
    let samples: Vec<SendSample> = streams
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let snap = s.stats(true);
            let secs = snap.interval_len.as_secs_f64();
            SendSample {
                id: i as u32 + 1,
                start,
                end,
                bytes: snap.interval.bytes_sent,
                bits_per_second: bps(snap.interval.bytes_sent, secs),
                rtt_ms: snap.now.rtt_us as f64 / 1000.0,
                send_period_us: snap.now.send_period_us,
                cwnd_pkts: snap.now.congestion_window,
                flow_window_pkts: u64::from(snap.now.flow_window),
                link_capacity_pkts: u64::from(snap.now.bandwidth_pkts),
                recv_rate_pkts: u64::from(snap.now.recv_rate_pkts),
                retransmits: snap.interval.retransmits,
                loss: snap.interval.snd_loss,
            }
        })
        .collect();
    let n = samples.len().max(1) as f64;
    let sum = SendSample {
        id: 0,
        start,
        end,
        bytes: samples.iter().map(|s| s.bytes).sum(),
        bits_per_second: samples.iter().map(|s| s.bits_per_second).sum(),
        rtt_ms: samples.iter().map(|s| s.rtt_ms).sum::<f64>() / n,
        send_period_us: samples.iter().map(|s| s.send_period_us).sum::<f64>() / n,
        cwnd_pkts: samples.iter().map(|s| s.cwnd_pkts).sum(),
        flow_window_pkts: samples.iter().map(|s| s.flow_window_pkts).sum(),
        link_capacity_pkts: samples.iter().map(|s| s.link_capacity_pkts).sum(),
        recv_rate_pkts: samples.iter().map(|s| s.recv_rate_pkts).sum(),
        retransmits: samples.iter().map(|s| s.retransmits).sum(),
        loss: samples.iter().map(|s| s.loss).sum(),
    };
    Interval { start, end, streams: samples, sum }
}

/// Print an interval's lines (the SUM line only with several streams).
fn print_interval(interval: &Interval<SendSample>) {
    for s in &interval.streams {
        println!("{}", send_line(s));
    }
    if interval.streams.len() > 1 {
        println!("{}", send_line(&interval.sum));
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
