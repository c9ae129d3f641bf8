//! The client's side of a reversed test (`udt perf client -R`, iperf3's `-R`): the server sends
//! on every connection for the test's time and closes it; the client reads each to its end and
//! reports as a receiver does (bytes received, losses detected, duplicates).
//!
//! Invariants: a stream's time ends with its last byte (as the server counts a forward test);
//! the test ends when every stream ended, or on Ctrl-C; reads wait at most [`READ_POLL`] so a
//! stop is seen at once.

use std::io::Read;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use anyhow::Result;
use udt::UdtStream;

use super::client::Output;
use super::{bps, recv_line, Interval, Role, Sample, Start, StreamSummary, Summary, TestOpts, TestReport};
use crate::cpu::CpuTime;
use crate::{interrupt, units};

/// How long a read waits before looking at the stop request again.
const READ_POLL: Duration = Duration::from_millis(50);
/// Bytes read at once.
const READ_SIZE: usize = 1 << 20;

/// What a reader ends with: bytes, when the last arrived, the error if it failed.
type Ended = (u64, Option<Instant>, Option<String>);

/// Receive on every stream until the server closes them; the report of a receiving client.
/// `streams` read with a timeout of [`READ_POLL`] ([`prepare`]).
pub fn receive(
    streams: Vec<Arc<UdtStream>>,
    start: Start,
    opts: &TestOpts,
    output: Output,
) -> Result<TestReport> {
    let cpu0 = CpuTime::now();
    let t0 = Instant::now();
    for s in &streams {
        s.stats(true);
    }
    let readers: Vec<JoinHandle<Ended>> = streams
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let s = Arc::clone(s);
            thread::Builder::new().name(format!("perf-reader-{}", i + 1)).spawn(move || read_to_end(&s))
        })
        .collect::<std::io::Result<_>>()?;

    let mut intervals = Vec::new();
    let (mut last, mut k) = (t0, 1u32);
    loop {
        let tick = t0 + opts.interval * k;
        let over = |readers: &[JoinHandle<Ended>]| readers.iter().all(|r| r.is_finished());
        while Instant::now() < tick && !over(&readers) && !interrupt::requested() {
            thread::sleep((tick - Instant::now()).min(Duration::from_millis(20)));
        }
        let now = Instant::now();
        if now - last >= Duration::from_millis(50) || !over(&readers) {
            let interval = sample(&streams, (last - t0).as_secs_f64(), (now - t0).as_secs_f64());
            if output == Output::Intervals {
                for s in &interval.streams {
                    println!("{}", recv_line(s));
                }
                if interval.streams.len() > 1 {
                    println!("{}", recv_line(&interval.sum));
                }
            }
            intervals.push(interval);
            last = now;
        }
        k += 1;
        if over(&readers) || interrupt::requested() {
            break;
        }
    }
    if interrupt::requested() {
        return Err(interrupt::error().into());
    }
    let cpu = CpuTime::now().since(&cpu0);
    let mut per_stream = Vec::with_capacity(streams.len());
    let mut errors = Vec::new();
    for (i, (reader, stream)) in readers.into_iter().zip(&streams).enumerate() {
        let (bytes, last_data, error) =
            reader.join().map_err(|_| anyhow::anyhow!("reader thread {} panicked", i + 1))?;
        if let Some(e) = error {
            errors.push(format!("stream {}: {e}", i + 1));
        }
        let snap = stream.stats(false);
        let seconds = last_data.map_or(0.0, |t| (t - t0).as_secs_f64());
        per_stream.push(StreamSummary {
            id: i as u32 + 1,
            bytes,
            seconds,
            bits_per_second: bps(bytes, seconds),
            retransmits: snap.total.retransmits,
            loss: snap.total.rcv_loss,
            duplicates: snap.total.dup_recv,
            rtt_ms: snap.now.rtt_us as f64 / 1000.0,
        });
    }
    let mut summary = Summary::over(per_stream, &cpu);
    summary.errors = errors;
    if output != Output::None {
        println!("- - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -");
        println!(
            "{} bytes ({}) in {:.2} s = {}, {} lost, {} duplicates  receiver",
            summary.bytes,
            units::bytes(summary.bytes),
            summary.seconds,
            units::bits(summary.bits_per_second),
            summary.loss,
            summary.duplicates
        );
        for e in &summary.errors {
            println!("error: {e}");
        }
    }
    if summary.bytes == 0 {
        anyhow::bail!(
            "nothing arrived: the server sent nothing back (a `udt perf server` of a version without \
             -R receives instead)"
        );
    }
    Ok(TestReport { role: Role::Client, start, intervals, summary })
}

/// Set up a connection of a reversed test for [`receive`].
pub fn prepare(stream: &mut UdtStream) {
    stream.set_read_timeout(Some(READ_POLL));
}

/// Read `stream` to its end.
fn read_to_end(stream: &UdtStream) -> Ended {
    let mut buf = vec![0u8; READ_SIZE];
    let (mut bytes, mut last) = (0u64, None);
    let mut r = stream;
    loop {
        if interrupt::requested() {
            return (bytes, last, Some("interrupted".into()));
        }
        match r.read(&mut buf) {
            Ok(0) => return (bytes, last, None),
            Ok(n) => {
                bytes += n as u64;
                last = Some(Instant::now());
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return (bytes, last, Some(e.to_string())),
        }
    }
}

/// Read and clear every stream's counters, as a receiver's.
fn sample(streams: &[Arc<UdtStream>], start: f64, end: f64) -> Interval<Sample> {
    let samples: Vec<Sample> = streams
        .iter()
        .enumerate()
        .map(|(i, s)| Sample::read(s, i as u32 + 1, Role::Server, start, end))
        .collect();
    let sum = Sample::sum(&samples, start, end);
    Interval { start, end, omitted: false, streams: samples, sum }
}
