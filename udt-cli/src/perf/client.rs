//! The client of `udt perf`: opens the test's connections, runs each as a task on a small tokio
//! runtime (`tasks.rs`: a writer from one preallocated buffer as fast as the protocol takes it,
//! or with `-R` a reader; `--bidir` both, on two sets of connections, `direction.rs`), and
//! samples `stats(true)` every interval on the calling thread.
//!
//! The first connection goes through the tool's connect (every address the target resolves
//! to, errors that name the usual causes) and reads the server's greeting, so that reaching
//! another service fails at once; the others connect to the address that answered, as tasks,
//! [`AT_ONCE`] at a time.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::runtime::Runtime;
use tokio::sync::{watch, Semaphore};
use udt::{AsyncUdtStream, Options, UdtStream};

use super::direction::{Direction, Kind};
use super::{send_title, DirectionReport, Role, Start, TestHeader, TestOpts, TestReport, GREETING_TIMEOUT};
use crate::cpu::CpuTime;
use crate::protocol::{self, Greeting};
use crate::security::{self, Security, Side};
use crate::{interrupt, link, net, units};

/// The buffer every write comes from.
const BUFFER: usize = 1 << 20;
/// How long a blocked write of the first connection's header waits before trying again.
const WRITE_POLL: Duration = Duration::from_millis(100);
/// Connections being opened at once: each is a handshake (and, secured, a key agreement on a
/// thread of its own) and a greeting, which wait on the I/O thread's rounds.
const AT_ONCE: usize = 64;
/// How long closing a connection may take at the end (its data is acknowledged by then).
const CLOSE_LIMIT: Duration = Duration::from_secs(10);

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
    // A task per connection: N, or 2N with --bidir.
    let tasks = if opts.bidir { opts.parallel.saturating_mul(2) } else { opts.parallel };
    let rt = super::tasks::runtime(tasks as usize).context("starting the runtime of the test's tasks")?;

    // The connections: N on which the client sends (unless -R), N on which it receives (-R,
    // --bidir), the latter a test of its own to the server with --bidir.
    let test_id = test_id();
    let ms = |d: Duration| u32::try_from(d.as_millis()).unwrap_or(u32::MAX);
    let omit = opts.omit.unwrap_or(Duration::ZERO);
    let n = opts.parallel;
    let mut headers = Vec::new();
    if !opts.reverse {
        let h = |index| TestHeader {
            test_id,
            index,
            count: n,
            duration_ms: ms(opts.time),
            reverse: false,
            bidir: opts.bidir,
        };
        headers.extend((1..=n).map(h));
    }
    if opts.reverse || opts.bidir {
        // The server sends for the omitted seconds too.
        let h = |index| TestHeader {
            test_id: if opts.bidir { test_id ^ 1 } else { test_id },
            index,
            count: n,
            duration_ms: ms(omit + opts.time),
            reverse: true,
            bidir: opts.bidir,
        };
        headers.extend((1..=n).map(h));
    }
    let (first, peer) = open_first(target, options.clone(), &headers[0])?;
    let mut streams = vec![Arc::new(AsyncUdtStream::from_std(first))];
    streams.extend(rt.block_on(open_rest(peer, &options, &headers[1..]))?.into_iter().map(Arc::new));

    // The name the controller gives itself, with the parameters as typed when --cc had any.
    let name = streams[0].congestion_control();
    let cc = match opts.cc.as_ref().and_then(|c| c.spec.split_once(':')) {
        Some((_, params)) if !params.trim().is_empty() => format!("{name}:{params}"),
        _ => name.to_string(),
    };
    if output != Output::None {
        print_header(target, opts, mss, &cc, output == Output::Intervals);
    }

    let (stop_writing, writing) = watch::channel(false);
    let (stop_reading, reading) = watch::channel(false);
    let cpu0 = CpuTime::now();
    let t0 = Instant::now();
    for s in &streams {
        s.stats(true);
    }
    let mut directions = Vec::new();
    let receiving = if opts.reverse { std::mem::take(&mut streams) } else { streams.split_off(n as usize) };
    if !opts.reverse {
        let buf: Arc<[u8]> = (0..BUFFER).map(|i| (i % 251) as u8).collect::<Vec<u8>>().into();
        // -n: each stream's share of the bytes (the first ones take the remainder).
        let share = |i: usize| {
            opts.bytes.map(|total| {
                let n = u64::from(n);
                total / n + u64::from((i as u64) < total % n)
            })
        };
        directions.push(Direction::send(&rt, streams, 0, &buf, &writing, share));
    }
    if !receiving.is_empty() {
        let offset = if opts.bidir { n } else { 0 };
        let size = super::server::read_size(n);
        directions.push(Direction::receive(&rt, receiving, offset, size, &reading));
    }

    let counted_from = drive(&mut directions, opts, output, t0);
    let _ = stop_writing.send(true);
    if interrupt::requested() {
        let _ = stop_reading.send(true);
    }
    // Writers stop (and, on Ctrl-C, give up waiting for acknowledgements), readers end with
    // their connections (or on Ctrl-C).
    let mut ended = Vec::new();
    let mut failure = None;
    for d in &mut directions {
        match d.join(&rt) {
            Ok(e) => ended.push(e),
            Err(e) => {
                let _ = stop_reading.send(true);
                failure.get_or_insert(e);
            }
        }
    }
    if interrupt::requested() {
        failure = Some(interrupt::error().into());
    }
    if let Some(e) = failure {
        // Tell the server at once rather than leave it waiting for the dead-peer timeout.
        close_all(&rt, directions.into_iter().flat_map(|d| d.streams), Duration::from_millis(500));
        return Err(e);
    }
    let cpu = CpuTime::now().since(&cpu0);
    let summaries: Vec<_> =
        directions.iter().zip(ended).map(|(d, e)| d.summary(e, counted_from.unwrap_or(t0), &cpu)).collect();
    if output != Output::None {
        for (d, s) in directions.iter().zip(&summaries) {
            d.print_summary(s, tag(opts, d.kind));
        }
    }

    let mut parts = directions.into_iter().zip(summaries);
    let streams_of = |d: &Direction| d.streams.clone();
    let (first, summary) = parts.next().context("a test without connections")?;
    let mut all = streams_of(&first);
    let reverse = parts.next().map(|(d, summary)| {
        all.extend(streams_of(&d));
        Box::new(DirectionReport { intervals: d.intervals, summary })
    });
    drop(parts);
    if opts.reverse && summary.bytes == 0 {
        bail!(
            "nothing arrived: the server sent nothing back (a `udt perf server` of a version without \
             -R receives instead)"
        );
    }
    let intervals = first.intervals;
    drop(first.streams);
    close_all(&rt, all, CLOSE_LIMIT);
    Ok(TestReport {
        role: Role::Client,
        start: Start {
            peer: target.to_string(),
            streams: n,
            duration_s: opts.time.as_secs_f64(),
            bytes: opts.bytes,
            omit_s: opts.omit.map(|d| d.as_secs_f64()),
            reverse: opts.reverse,
            bidir: opts.bidir,
            mss,
            congestion_control: cc,
        },
        intervals,
        summary,
        bidir_reverse: reverse,
    })
}

/// What follows each line of a direction: its name in a `--bidir` test, nothing otherwise.
fn tag(opts: &TestOpts, kind: Kind) -> &'static str {
    match (opts.bidir, kind) {
        (false, _) => "",
        (true, Kind::Send) => "  TX",
        (true, Kind::Receive) => "  RX",
    }
}

/// The test's first line, and with `titles` the interval lines' column titles.
fn print_header(target: &str, opts: &TestOpts, mss: u32, cc: &str, titles: bool) {
    let plural = if opts.parallel == 1 { "" } else { "s" };
    let amount = match (opts.bytes, opts.omit) {
        (Some(bytes), _) => units::bytes(bytes),
        (None, Some(omit)) => {
            format!("{:.1} s after {:.1} s omitted", opts.time.as_secs_f64(), omit.as_secs_f64())
        }
        (None, None) => format!("{:.1} s", opts.time.as_secs_f64()),
    };
    let each_way = if opts.bidir { " each way" } else { "" };
    println!(
        "udt perf: {target}, {} stream{plural}{each_way}, {amount}, MSS {mss}, {cc} congestion control",
        opts.parallel
    );
    if !titles {
        return;
    }
    let (send, recv) = (send_title(), super::recv_title());
    match (opts.reverse, opts.bidir) {
        (true, _) => println!("{recv}"),
        (false, false) => println!("{send}"),
        (false, true) => {
            println!("{send}  TX (client to server)");
            println!("{recv}  RX (server to client)");
        }
    }
}

/// Sample every direction each interval until all are over (or Ctrl-C), printing as `output`
/// says; when the results start (the end of the omitted seconds, if any were).
fn drive(directions: &mut [Direction], opts: &TestOpts, output: Output, t0: Instant) -> Option<Instant> {
    let omit = opts.omit.unwrap_or(Duration::ZERO);
    // With -n a sending direction ends when every stream has sent its share; with a time, at
    // the end of it (or when a writer fails). A receiving one ends with its connections.
    let end = if opts.bytes.is_some() { None } else { Some(t0 + omit + opts.time) };
    let timed = end.is_some();
    let omit_end = t0 + omit;
    let mut last = t0;
    // Ticks count from the start, and again from the end of the omitted seconds.
    let (mut base, mut k) = (t0, 1u32);
    let mut counted_from = omit.is_zero().then_some(t0);
    loop {
        let mut tick = base + opts.interval * k;
        let sending = directions.iter().any(|d| d.running && d.kind == Kind::Send);
        if let (Some(end), true) = (end, sending) {
            tick = tick.min(end);
        }
        if counted_from.is_none() && tick > omit_end {
            tick = omit_end;
        }
        // Sleep to the tick, but notice a direction that ended, and a Ctrl-C.
        let over = |ds: &[Direction]| ds.iter().any(|d| d.running && d.over(timed));
        while Instant::now() < tick && !over(directions) && !interrupt::requested() {
            std::thread::sleep((tick - Instant::now()).min(Duration::from_millis(20)));
        }
        let now = Instant::now();
        let omitted = counted_from.is_none();
        for d in directions.iter_mut().filter(|d| d.running) {
            let over = d.over(timed);
            let ended = match d.kind {
                Kind::Send => over || end.is_some_and(|end| now >= end),
                Kind::Receive => over,
            };
            // A reader's last sliver of an interval is not worth a line.
            let sliver = d.kind == Kind::Receive && now - last < Duration::from_millis(50);
            if !(ended && sliver && !d.intervals.is_empty()) {
                let interval = d.sample((last - t0).as_secs_f64(), (now - t0).as_secs_f64(), omitted);
                if output == Output::Intervals {
                    d.print_interval(&interval, tag(opts, d.kind));
                }
                d.intervals.push(interval);
            }
            d.running = !ended;
        }
        if omitted && now >= omit_end {
            counted_from = Some(now);
            directions.iter_mut().for_each(Direction::count_from_here);
            (base, k) = (now, 1);
        } else {
            k += 1;
        }
        last = now;
        if interrupt::requested() || directions.iter().all(|d| !d.running) {
            return counted_from;
        }
    }
}

/// Open the first connection with the tool's connect and send it `header`; the stream and the
/// address that answered. Anything but a `udt perf server` ends the test here.
fn open_first(target: &str, options: Options, header: &TestHeader) -> Result<(UdtStream, SocketAddr)> {
    let mut stream = net::connect(target, options)?;
    let peer = stream.peer_addr().context("reading the server's address")?;
    if let Err(e) = write_patiently(&mut stream, &header.encode()) {
        // A peer that is not a server may have closed already: its greeting, or its
        // absence, says why.
        greet(&mut stream, target)?;
        return Err(e).context("sending the test header");
    }
    if let Err(e) = greet(&mut stream, target) {
        // Deliver the header and the shutdown, so the peer says at once what it got (it
        // would otherwise hear nothing until its peer timeout once this process exits).
        link::close_within(stream, Duration::from_millis(500));
        return Err(e);
    }
    Ok((stream, peer))
}

/// Open a connection to `peer` for each of `headers` (the first has shown it is a `udt perf
/// server`), [`AT_ONCE`] at a time; in the headers' order, or the first error (the connections
/// not started by then are not).
async fn open_rest(
    peer: SocketAddr,
    options: &Options,
    headers: &[TestHeader],
) -> Result<Vec<AsyncUdtStream>> {
    let permits = Arc::new(Semaphore::new(AT_ONCE));
    let failed = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = headers
        .iter()
        .map(|&header| {
            let (permits, failed, options) = (Arc::clone(&permits), Arc::clone(&failed), options.clone());
            tokio::spawn(async move {
                let _permit = permits.acquire().await.map_err(|_| anyhow::anyhow!("no permits"))?;
                if failed.load(Ordering::SeqCst) {
                    return Ok(None);
                }
                let opened = open(peer, options, header).await;
                if opened.is_err() {
                    failed.store(true, Ordering::SeqCst);
                }
                opened.map(Some).with_context(|| format!("stream {}", header.index))
            })
        })
        .collect();
    let mut streams = Vec::with_capacity(tasks.len());
    let mut first_error = None;
    for t in tasks {
        match t.await.context("a connecting task panicked").and_then(|r| r) {
            Ok(Some(s)) => streams.push(s),
            Ok(None) => {}
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    first_error.map_or(Ok(streams), Err)
}

/// Connect to `peer`, send `header`, and check the greeting.
async fn open(peer: SocketAddr, options: Options, header: TestHeader) -> Result<AsyncUdtStream> {
    let stream =
        AsyncUdtStream::connect_with(peer, options).await.with_context(|| format!("connecting to {peer}"))?;
    (&stream).write_all(&header.encode()).await.context("sending the test header")?;
    let mut hello = [0u8; protocol::HELLO_LEN];
    match tokio::time::timeout(GREETING_TIMEOUT, (&stream).read_exact(&mut hello)).await {
        Ok(Ok(_)) if hello == protocol::hello(TestHeader::MAGIC, TestHeader::VERSION) => Ok(stream),
        Ok(Ok(_)) => bail!("the server's greeting on this connection is not the first one's"),
        Ok(Err(e)) => Err(e).context("reading the server's greeting"),
        Err(_) => bail!("no greeting within {} s", GREETING_TIMEOUT.as_secs()),
    }
}

/// Close `streams` at once, each within `limit` (the ones still shared elsewhere are left to
/// close when dropped).
fn close_all(rt: &Runtime, streams: impl IntoIterator<Item = Arc<AsyncUdtStream>>, limit: Duration) {
    let closing: Vec<_> = streams
        .into_iter()
        .filter_map(|s| Arc::try_unwrap(s).ok())
        .map(|s| rt.spawn(async move { tokio::time::timeout(limit, s.close()).await }))
        .collect();
    for c in closing {
        match rt.block_on(c) {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => tracing::warn!("closing a test connection: {e}"),
            Ok(Err(_)) => tracing::warn!("closing a test connection took over {limit:?}"),
            Err(e) => tracing::warn!("closing a test connection: {e}"),
        }
    }
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

/// A test id unlikely to collide with another client's; its lowest bit is clear (a `--bidir`
/// test's other direction sets it).
fn test_id() -> u64 {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    (nanos ^ (u64::from(std::process::id()) << 32)) & !1
}

/// `write_all` that retries on the write timeout.
fn write_patiently(stream: &mut UdtStream, mut data: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let deadline = Instant::now() + super::tasks::DRAIN_LIMIT;
    while !data.is_empty() {
        match stream.write(data) {
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == io::ErrorKind::TimedOut && Instant::now() < deadline => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
