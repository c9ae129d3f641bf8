//! One direction of a client's test: its connections, their tasks (`tasks.rs`) and counters,
//! its intervals, and its summary. A plain test has one direction (the client sends), `-R` one
//! (the client receives and reports as a receiver: bytes received, losses detected,
//! duplicates), `--bidir` one of each.
//!
//! Invariants: a sending stream's time ends when its last byte was acknowledged, a receiving
//! stream's with its last byte (as the server counts a forward test); with `-O`, both count
//! from the end of the omitted seconds, and the bytes moved before it are left out.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use tokio::runtime::Runtime;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use udt::AsyncUdtStream;

use super::tasks::{self, Read, Written};
use super::{bps, print_fairness, recv_line, send_line, Interval, Role, Sample, StreamSummary, Summary};
use crate::cpu::CpuTime;
use crate::units;

/// Which way the data goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The client writes.
    Send,
    /// The server writes, the client reads.
    Receive,
}

/// The tasks of a direction.
enum Tasks {
    Writers(Vec<JoinHandle<Written>>),
    Readers(Vec<JoinHandle<Read>>),
}

/// One direction of a test.
pub struct Direction {
    /// Which way.
    pub kind: Kind,
    /// Its connections, in the order of their stream index.
    pub streams: Vec<Arc<AsyncUdtStream>>,
    /// Added to a stream's index (1-based) for its label: the server-to-client half of a
    /// `--bidir` test follows the other's numbers, as iperf3's.
    pub id_offset: u32,
    /// Bytes each stream moved so far (written or read).
    moved: Vec<Arc<AtomicU64>>,
    /// What each had moved when the results started (`-O`).
    before: Vec<u64>,
    tasks: Tasks,
    /// One per interval sampled.
    pub intervals: Vec<Interval<Sample>>,
    /// Still sampled each interval.
    pub running: bool,
}

impl Direction {
    /// Start a writer on each of `streams`, stream `i` writing `limit(i)` bytes (or until
    /// `stop`), from `buf`.
    pub fn send(
        rt: &Runtime,
        streams: Vec<Arc<AsyncUdtStream>>,
        id_offset: u32,
        buf: &Arc<[u8]>,
        stop: &watch::Receiver<bool>,
        limit: impl Fn(usize) -> Option<u64>,
    ) -> Direction {
        let moved: Vec<Arc<AtomicU64>> = streams.iter().map(|_| Arc::default()).collect();
        let writers = streams
            .iter()
            .zip(&moved)
            .enumerate()
            .map(|(i, (s, m))| {
                let task =
                    tasks::write_until(Arc::clone(s), Arc::clone(buf), stop.clone(), limit(i), Arc::clone(m));
                rt.spawn(task)
            })
            .collect();
        Direction::new(Kind::Send, streams, id_offset, moved, Tasks::Writers(writers))
    }

    /// Start a reader on each of `streams`, reading `size` bytes at a time until the server
    /// closes it (or until `stop`).
    pub fn receive(
        rt: &Runtime,
        streams: Vec<Arc<AsyncUdtStream>>,
        id_offset: u32,
        size: usize,
        stop: &watch::Receiver<bool>,
    ) -> Direction {
        let moved: Vec<Arc<AtomicU64>> = streams.iter().map(|_| Arc::default()).collect();
        let readers = streams
            .iter()
            .zip(&moved)
            .map(|(s, m)| rt.spawn(tasks::read_to_end(Arc::clone(s), stop.clone(), size, Arc::clone(m))))
            .collect();
        Direction::new(Kind::Receive, streams, id_offset, moved, Tasks::Readers(readers))
    }

    fn new(
        kind: Kind,
        streams: Vec<Arc<AsyncUdtStream>>,
        id_offset: u32,
        moved: Vec<Arc<AtomicU64>>,
        tasks: Tasks,
    ) -> Direction {
        let before = vec![0; streams.len()];
        Direction { kind, streams, id_offset, moved, before, tasks, intervals: Vec::new(), running: true }
    }

    /// Whether the direction is over: every stream ended; or, in a timed test, a writer that
    /// ended (it failed: writers of a timed test run until told to stop).
    pub fn over(&self, timed: bool) -> bool {
        match &self.tasks {
            Tasks::Writers(w) if timed => w.iter().any(JoinHandle::is_finished),
            Tasks::Writers(w) => w.iter().all(JoinHandle::is_finished),
            Tasks::Readers(r) => r.iter().all(JoinHandle::is_finished),
        }
    }

    /// Read and clear every stream's counters over an interval.
    pub fn sample(&self, start: f64, end: f64, omitted: bool) -> Interval<Sample> {
        let role = match self.kind {
            Kind::Send => Role::Client,
            Kind::Receive => Role::Server,
        };
        let samples: Vec<Sample> = self
            .streams
            .iter()
            .enumerate()
            .map(|(i, s)| Sample::of(&s.stats(true), self.id_offset + i as u32 + 1, role, start, end))
            .collect();
        let sum = Sample::sum(&samples, start, end);
        Interval { start, end, omitted, streams: samples, sum }
    }

    /// The results count from now (the end of the omitted seconds).
    pub fn count_from_here(&mut self) {
        self.before = self.moved.iter().map(|m| m.load(Ordering::SeqCst)).collect();
    }

    /// Print an interval's lines (the SUM line only with several streams), each followed by
    /// `tag` (a `--bidir` test's direction).
    pub fn print_interval(&self, interval: &Interval<Sample>, tag: &str) {
        let omitted = if interval.omitted { "  (omitted)" } else { "" };
        let line = |s: &Sample| match self.kind {
            Kind::Send => send_line(s),
            Kind::Receive => recv_line(s),
        };
        for s in &interval.streams {
            println!("{}{tag}{omitted}", line(s));
        }
        if interval.streams.len() > 1 {
            println!("{}{tag}{omitted}", line(&interval.sum));
        }
    }

    /// Wait for the tasks (writers: until their data was acknowledged); the error of the first
    /// writer that failed. Readers' errors are reported in the summary instead.
    pub fn join(&mut self, rt: &Runtime) -> Result<Ended> {
        let mut ended = Vec::with_capacity(self.streams.len());
        match &mut self.tasks {
            Tasks::Writers(writers) => {
                let mut failure = None;
                for (i, w) in writers.drain(..).enumerate() {
                    let label = self.id_offset + i as u32 + 1;
                    match rt.block_on(w).context("a writer task panicked").and_then(|r| r) {
                        Ok((bytes, acked)) => ended.push(Read { bytes, last: Some(acked), error: None }),
                        Err(e) => {
                            failure.get_or_insert(e.context(format!("stream {label}")));
                        }
                    }
                }
                if let Some(e) = failure {
                    return Err(e);
                }
            }
            Tasks::Readers(readers) => {
                for r in readers.drain(..) {
                    ended.push(rt.block_on(r).context("a reader task panicked")?);
                }
            }
        }
        Ok(Ended(ended))
    }

    /// The totals of streams that ended as `ended` says, counted from `counted_from`, with the
    /// process's CPU time `cpu`.
    pub fn summary(&self, ended: Ended, counted_from: Instant, cpu: &CpuTime) -> Summary {
        let mut per_stream = Vec::with_capacity(self.streams.len());
        let mut errors = Vec::new();
        for (i, (s, end)) in self.streams.iter().zip(ended.0).enumerate() {
            let id = self.id_offset + i as u32 + 1;
            if let Some(e) = end.error {
                errors.push(format!("stream {id}: {e}"));
            }
            let snap = s.stats(false);
            let seconds = end.last.map_or(0.0, |t| t.saturating_duration_since(counted_from).as_secs_f64());
            let bytes = end.bytes.saturating_sub(self.before[i]);
            per_stream.push(StreamSummary {
                id,
                bytes,
                seconds,
                bits_per_second: bps(bytes, seconds),
                retransmits: snap.total.retransmits,
                loss: match self.kind {
                    Kind::Send => snap.total.snd_loss,
                    Kind::Receive => snap.total.rcv_loss,
                },
                duplicates: snap.total.dup_recv,
                rtt_ms: snap.now.rtt_us as f64 / 1000.0,
            });
        }
        let mut summary = Summary::over(per_stream, cpu);
        summary.errors = errors;
        summary
    }

    /// Print the summary `s` of this direction, each line followed by `tag`.
    pub fn print_summary(&self, s: &Summary, tag: &str) {
        println!("- - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -");
        match self.kind {
            Kind::Send => print_send_summary(s, tag),
            Kind::Receive => println!(
                "{} bytes ({}) in {:.2} s = {}, {} lost, {} duplicates  receiver{tag}",
                s.bytes,
                units::bytes(s.bytes),
                s.seconds,
                units::bits(s.bits_per_second),
                s.loss,
                s.duplicates
            ),
        }
        print_fairness(s);
        for e in &s.errors {
            println!("error: {e}");
        }
    }
}

/// How each stream of a direction ended, in stream order.
pub struct Ended(Vec<Read>);

/// The summary of the sending end.
fn print_send_summary(s: &Summary, tag: &str) {
    println!(
        "{:<5} {:>13} {:>10} {:>11} {:>6} {:>6}",
        "[ ID]", "Interval", "Transfer", "Bitrate", "Retr", "Loss"
    );
    let line = |label: String, secs: f64, bytes: u64, bits: f64, retr: u64, loss: u64| {
        println!(
            "{label:<5} {:>13} {:>10} {:>11} {retr:>6} {loss:>6}  sender{tag}",
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
