//! `udt perf`: an iperf3-style memory-to-memory throughput test.
//!
//! - `udt perf server [--listen ADDR:PORT]` (default `9001`, every address of both families: iperf3's 5201 is left alone
//!   so the two can run side by side) receives tests and prints receive-side lines.
//! - `udt perf client HOST:PORT [--time S] [--parallel N] [--json]` opens N UDT connections,
//!   sends a 32-byte test header on each (see [`TestHeader`] and the Protocol section of `README.md`), checks the
//!   server's greeting (so that reaching another service fails at once), then writes
//!   from a preallocated buffer as fast as it can for S seconds, printing one line per stream
//!   (and a SUM line) every interval, and a summary (with Jain's fairness index and the spread
//!   of the streams' rates for several). `--rate RATE` (`-b`) caps each connection's
//!   rate (UDT4's `UDT_MAXBW`). Its connections run as tasks on a small tokio runtime
//!   (`tasks.rs`), not a thread each. `-R` has the server send; `--bidir` both at once, on two
//!   sets of N connections (iperf3's way: UDT has no half-close, so a direction ends with its
//!   connection), reported per direction.
//! - `udt perf --self` runs a server on 127.0.0.1:0 inside this process and a client against
//!   it: a real transfer over loopback that needs no second host.
//!
//! Interval rates are payload put on the wire in that interval, retransmissions included
//! (UDT4's `mbpsSendRate`); the summary counts the application bytes the peer acknowledged, over
//! the time until the last of them was acknowledged. CPU time is the whole process's (with
//! `--self`, sender and receiver together). `--json` prints one line per test, in one schema
//! at both ends ([`TestReport`]); `-q` drops the interval lines.

mod client;
mod direction;
mod fairness;
mod round;
mod server;
mod tasks;

use std::io::{self, Write};
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;
use udt::Snapshot;

pub use fairness::Fairness;

use crate::security::{self, SecurityArgs, Side};
use crate::{link, net, units};

/// Arguments of `udt perf`.
#[derive(clap::Args, Debug)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    arg_required_else_help = true
)]
pub struct Args {
    /// Server or client.
    #[command(subcommand)]
    pub mode: Option<Mode>,
    /// Run a server on 127.0.0.1 in this process and a client against it (loopback test).
    #[arg(long = "self", required = true)]
    pub self_test: bool,
    /// Test options for --self.
    #[command(flatten)]
    pub test: TestOpts,
}

/// `udt perf server` or `udt perf client`.
#[derive(clap::Subcommand, Debug)]
pub enum Mode {
    /// Receive tests from `udt perf client` and print receive-side lines.
    Server(ServerArgs),
    /// Run a test against a `udt perf server`.
    Client(ClientArgs),
}

/// Arguments of `udt perf server`.
#[derive(clap::Args, Debug)]
pub struct ServerArgs {
    /// Address to listen on: ADDR:PORT, :PORT or PORT.
    #[arg(short, long, value_name = "ADDR:PORT", default_value = "9001", value_parser = net::parse_listen)]
    pub listen: SocketAddr,
    /// Exit after one test (iperf3's --one-off).
    #[arg(short = '1', long)]
    pub one_off: bool,
    /// Print each test's result as one JSON object on one line (the client's schema) instead of
    /// lines.
    #[arg(long)]
    pub json: bool,
    /// Time between interval lines (a bare number is seconds).
    #[arg(short, long, value_name = "SECS", default_value = "1", value_parser = crate::units::parse_positive_secs)]
    pub interval: Duration,
    /// Maximum segment size in bytes, IP and UDP headers included (UDT4 default 1500).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(76..=65535))]
    pub mss: Option<u32>,
    /// Congestion control, NAME[:key=value,...] (`udt cc list`; default copa). What the receiver
    /// reports (ACK interval, rates) follows the sending end's controller.
    #[arg(long, value_name = "NAME[:K=V,...]", value_parser = net::parse_cc)]
    pub cc: Option<net::CcArg>,
    /// Declare the peer gone after this many seconds without hearing from it (default 10).
    #[arg(long, value_name = "SECS", value_parser = crate::link::parse_peer_timeout)]
    pub peer_timeout: Option<std::time::Duration>,
    /// I/O threads serving the port: each connection stays on one, the connections of a test
    /// spread over them (one flow uses one thread whatever this is).
    #[arg(long, value_name = "N", default_value = "1", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub io_threads: u16,
    #[command(flatten)]
    pub security: SecurityArgs,
}

/// Arguments of `udt perf client`.
#[derive(clap::Args, Debug)]
pub struct ClientArgs {
    /// The `udt perf server`.
    #[arg(value_name = "HOST:PORT", value_parser = net::parse_target)]
    pub target: String,
    /// Test options.
    #[command(flatten)]
    pub test: TestOpts,
}

/// Options of a test (client and --self).
#[derive(clap::Args, Debug, Clone)]
pub struct TestOpts {
    /// Time to send (`10`, `500ms`, `2m`; a bare number is seconds).
    #[arg(short, long, value_name = "SECS", default_value = "10", value_parser = crate::units::parse_positive_secs)]
    pub time: Duration,
    /// Parallel connections (at most 4096; they share one UDP port and one I/O thread).
    #[arg(short = 'P', long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=MAX_PARALLEL as i64))]
    pub parallel: u32,
    /// Time between interval lines (a bare number is seconds).
    #[arg(short, long, value_name = "SECS", default_value = "1", value_parser = crate::units::parse_positive_secs)]
    pub interval: Duration,
    /// Print one JSON object on one line at the end (parameters, intervals, summary) instead of
    /// lines; `perf server --json` prints the same schema.
    #[arg(long)]
    pub json: bool,
    /// Maximum segment size in bytes, IP and UDP headers included (UDT4 default 1500).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(76..=65535))]
    pub mss: Option<u32>,
    /// Congestion control, NAME[:key=value,...] (`udt cc list`; default copa). What the receiver
    /// reports (ACK interval, rates) follows the sending end's controller.
    #[arg(long, value_name = "NAME[:K=V,...]", value_parser = net::parse_cc)]
    pub cc: Option<net::CcArg>,
    /// Declare the peer gone after this many seconds without hearing from it (default 10).
    #[arg(long, value_name = "SECS", value_parser = crate::link::parse_peer_timeout)]
    pub peer_timeout: Option<std::time::Duration>,
    /// Cap each connection's sending rate, in bits per second of UDT packets (UDT4 `UDT_MAXBW`):
    /// 10mbit, 500m, 1gbit, 10mbps (a bare number is bits per second). Default: no cap.
    /// Aliases: -b, --bandwidth.
    #[arg(short = 'b', long = "rate", alias = "bandwidth", value_name = "RATE", value_parser = crate::units::parse_rate_cap)]
    pub bandwidth: Option<u64>,
    /// Send this many bytes in all (split over the parallel streams) instead of for --time:
    /// 1G, 500MiB, 10000000 (iperf3's -n).
    #[arg(short = 'n', long = "bytes", value_name = "SIZE", value_parser = units::parse_size, conflicts_with = "omit")]
    pub bytes: Option<u64>,
    /// Reverse: the server sends and the client receives (iperf3's -R).
    #[arg(short = 'R', long, conflicts_with = "bytes")]
    pub reverse: bool,
    /// Both directions at once (iperf3's --bidir): N connections on which the client sends and
    /// N on which the server sends, each direction reported on its own. The server sends for a
    /// time, so not with -n; -R is one direction of it.
    #[arg(long, conflicts_with_all = ["bytes", "reverse"])]
    pub bidir: bool,
    /// Leave the first SECS of sending out of the results (slow start; iperf3's -O): their
    /// intervals are marked omitted, and the summary counts from there; --time follows them.
    #[arg(short = 'O', long, value_name = "SECS", value_parser = crate::units::parse_positive_secs)]
    pub omit: Option<Duration>,
    /// Encryption (a client needs the server's code phrase or key; `--self` encrypts with a
    /// key of its own unless `--insecure`).
    #[command(flatten)]
    pub security: SecurityArgs,
}

/// Run `udt perf`; `quiet` drops the interval lines (summaries still print).
pub fn run(args: &Args, quiet: bool) -> Result<()> {
    match &args.mode {
        Some(Mode::Server(s)) => {
            let mut options = link::with_peer_timeout(server::options(s.mss, s.cc.as_ref()), s.peer_timeout);
            options.io_threads = usize::from(s.io_threads);
            let security = security::resolve(&s.security, Side::Listens, "perf server")?;
            security.apply(&mut options);
            let mss = options.config.mss;
            let listener = net::listen(s.listen, options)?;
            let local = listener.local_addr().context("reading the bound address")?;
            security::show_code(
                &security,
                "perf server",
                &format!("udt perf client HOST:{}", local.port()),
                s.json,
            );
            if s.json {
                // Standard output is for the JSON lines only.
                if !quiet {
                    eprintln!("udt perf server: listening on {local}");
                }
            } else if !quiet {
                println!("udt perf server listening on {local}");
            }
            let output = match (s.json, quiet) {
                (true, _) => server::Output::Json,
                (false, false) => server::Output::Text { intervals: true },
                (false, true) => server::Output::Text { intervals: false },
            };
            server::serve(listener, s.one_off, output, s.interval, mss, security.is_code())?;
            Ok(())
        }
        Some(Mode::Client(c)) => {
            let output = client_output(&c.test, quiet);
            let result = client::run(&c.target, &c.test, output)?;
            if c.test.json {
                print_json(&result)?;
            }
            Ok(())
        }
        None => run_self(&args.test, quiet),
    }
}

/// What a client prints as it goes.
fn client_output(test: &TestOpts, quiet: bool) -> client::Output {
    if test.json {
        client::Output::None
    } else if quiet {
        client::Output::Summary
    } else {
        client::Output::Intervals
    }
}

/// `udt perf --self`: server and client in this process over loopback.
fn run_self(test: &TestOpts, quiet: bool) -> Result<()> {
    let mut options = link::with_peer_timeout(server::options(test.mss, test.cc.as_ref()), test.peer_timeout);
    // Both ends in this process: a key of its own, unless told otherwise.
    let given = &test.security;
    let security = if given.insecure || given.code.is_some() || given.key_file.is_some() {
        security::resolve(given, Side::Connects, "perf")?
    } else {
        security::Security::Key(security::random_key())
    };
    security.apply(&mut options);
    let mss = options.config.mss;
    let listener = net::listen(SocketAddr::from(([127, 0, 0, 1], 0)), options)?;
    let addr = listener.local_addr().context("reading the bound address")?;
    let interval = test.interval;
    let server = std::thread::Builder::new()
        .name("perf-server".into())
        .spawn(move || server::serve(listener, true, server::Output::Silent, interval, mss, false))?;
    let mut result = client::run_with(&addr.to_string(), test, client_output(test, quiet), &security)?;
    // The server finishes once every stream has been read to its end.
    let served = server
        .join()
        .map_err(|_| anyhow::anyhow!("the in-process server panicked"))?
        .context("the in-process server failed")?
        .unwrap_or_default();
    match &mut result.bidir_reverse {
        Some(reverse) => {
            result.summary.receiver = served.received.map(Box::new);
            reverse.summary.receiver = served.sent.map(Box::new);
        }
        None => result.summary.receiver = served.received.or(served.sent).map(Box::new),
    }
    if test.json {
        return print_json(&result);
    }
    let server_line = |what: &str, r: &Summary| {
        println!(
            "{what}: {} bytes ({}) in {:.2} s = {}, {} packets lost, {} duplicates",
            r.bytes,
            units::bytes(r.bytes),
            r.seconds,
            units::bits(r.bits_per_second),
            r.loss,
            r.duplicates
        );
    };
    if let Some(r) = &result.summary.receiver {
        server_line(if test.reverse { "sender" } else { "receiver" }, r);
    }
    if let Some(r) = result.bidir_reverse.as_ref().and_then(|d| d.summary.receiver.as_ref()) {
        server_line("sender (server to client)", r);
    }
    Ok(())
}

/// Print a value as one line of JSON on standard output.
fn print_json(value: &impl Serialize) -> Result<()> {
    let text = serde_json::to_string(value).context("encoding JSON")?;
    let mut out = io::stdout().lock();
    writeln!(out, "{text}").context("writing standard output")?;
    out.flush().context("writing standard output")
}

/// Most parallel streams of one test: what `-P` takes and what a server accepts in a header.
/// The client's connections share one UDP port and I/O thread (each is a task);
/// the server's listener keeps up to `udt::DEFAULT_MAX_ACCEPTED` (16,384) connections.
pub const MAX_PARALLEL: u32 = 4096;

/// How long a client waits for the server's greeting, and a server for a client's header.
pub const GREETING_TIMEOUT: Duration = Duration::from_secs(5);

/// The 32 bytes a client sends first on each connection (little-endian):
/// `"UDTP" | version u16 | flags u16 (bit 0: reversed, the server sends; bit 1: one direction of
/// a --bidir test) | test id u64 | stream index u32 (1-based) | stream count u32 | duration ms
/// u32 | reserved u32`. The two directions of a --bidir test are two tests to the server, with
/// ids that differ in their lowest bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TestHeader {
    /// Groups the parallel streams of one test on the server.
    pub test_id: u64,
    /// Which stream this is, 1-based.
    pub index: u32,
    /// How many streams the test has.
    pub count: u32,
    /// How long the client will send (or, reversed, the server).
    pub duration_ms: u32,
    /// The server sends and the client receives (`-R`; flags bit 0).
    pub reverse: bool,
    /// One direction of a `--bidir` test (flags bit 1): the other is the test whose id differs
    /// in its lowest bit.
    pub bidir: bool,
}

impl TestHeader {
    /// Magic of a perf connection.
    pub const MAGIC: [u8; 4] = crate::protocol::PERF_MAGIC;
    /// Version of the header.
    pub const VERSION: u16 = 1;
    /// Length on the wire.
    pub const LEN: usize = 32;
    /// The flag of a reversed test: the server sends.
    pub const FLAG_REVERSE: u16 = 1;
    /// The flag of one direction of a `--bidir` test.
    pub const FLAG_BIDIR: u16 = 2;

    /// The wire form.
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[..4].copy_from_slice(&Self::MAGIC);
        b[4..6].copy_from_slice(&Self::VERSION.to_le_bytes());
        let flags =
            if self.reverse { Self::FLAG_REVERSE } else { 0 } | if self.bidir { Self::FLAG_BIDIR } else { 0 };
        b[6..8].copy_from_slice(&flags.to_le_bytes());
        b[8..16].copy_from_slice(&self.test_id.to_le_bytes());
        b[16..20].copy_from_slice(&self.index.to_le_bytes());
        b[20..24].copy_from_slice(&self.count.to_le_bytes());
        b[24..28].copy_from_slice(&self.duration_ms.to_le_bytes());
        b
    }

    /// Parse and check.
    pub fn decode(b: &[u8; Self::LEN]) -> io::Result<TestHeader> {
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        if b[..4] != Self::MAGIC {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "not a udt perf client (bad magic)"));
        }
        let version = u16::from_le_bytes([b[4], b[5]]);
        if version != Self::VERSION {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("udt perf header version {version}, expected {}", Self::VERSION),
            ));
        }
        let mut id = [0u8; 8];
        id.copy_from_slice(&b[8..16]);
        let h = TestHeader {
            test_id: u64::from_le_bytes(id),
            index: u32_at(16),
            count: u32_at(20),
            duration_ms: u32_at(24),
            reverse: u16::from_le_bytes([b[6], b[7]]) & Self::FLAG_REVERSE != 0,
            bidir: u16::from_le_bytes([b[6], b[7]]) & Self::FLAG_BIDIR != 0,
        };
        if h.count == 0 || h.count > MAX_PARALLEL || h.index == 0 || h.index > h.count {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "udt perf header: bad stream index"));
        }
        Ok(h)
    }
}

/// Which end of a test a report comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// `udt perf client` (the sending end).
    Client,
    /// `udt perf server` (the receiving end).
    Server,
}

/// One test as either end reports it: the `--json` line of `perf client`, `perf server` and
/// `perf --self` (one schema, same field names at both ends).
#[derive(Debug, Serialize)]
pub struct TestReport {
    /// Which end wrote it.
    pub role: Role,
    /// Test parameters.
    pub start: Start,
    /// One entry per interval.
    pub intervals: Vec<Interval<Sample>>,
    /// The totals.
    pub summary: Summary,
    /// The server-to-client direction of a `--bidir` test (the fields above are the
    /// client-to-server one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bidir_reverse: Option<Box<DirectionReport>>,
}

/// One direction of a `--bidir` test beside the other.
#[derive(Debug, Serialize)]
pub struct DirectionReport {
    /// One entry per interval.
    pub intervals: Vec<Interval<Sample>>,
    /// The totals.
    pub summary: Summary,
}

/// Test parameters.
#[derive(Debug, Serialize)]
pub struct Start {
    /// The other end.
    pub peer: String,
    /// Parallel connections.
    pub streams: u32,
    /// Seconds of sending the client asked for (after the omitted ones).
    #[serde(serialize_with = "round::micro")]
    pub duration_s: f64,
    /// Bytes to send in all instead (`-n`), if given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Seconds left out of the results at the start (`-O`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub omit_s: Option<f64>,
    /// The server sent and the client received (`-R`; written only when true).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub reverse: bool,
    /// Both directions at once (`--bidir`; written only when true). On the server, each
    /// direction is a test of its own with this set.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub bidir: bool,
    /// Maximum segment size of this end, bytes.
    pub mss: u32,
    /// Congestion control of this end.
    pub congestion_control: String,
}

/// One stream (or the sum, `id` 0) over one interval, as this end's counters saw it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Sample {
    /// Stream index (1-based); 0 for the sum.
    pub id: u32,
    /// Interval start, seconds since the test started.
    #[serde(serialize_with = "round::micro")]
    pub start: f64,
    /// Interval end.
    #[serde(serialize_with = "round::micro")]
    pub end: f64,
    /// Client: payload bytes put on the wire, retransmissions included. Server: payload bytes
    /// received, duplicates excluded.
    pub bytes: u64,
    /// `bytes` as bits per second.
    #[serde(serialize_with = "round::whole")]
    pub bits_per_second: f64,
    /// Smoothed RTT, ms (the mean over streams for the sum).
    #[serde(serialize_with = "round::milli")]
    pub rtt_ms: f64,
    /// Packet-sending period, µs (the mean over streams for the sum).
    #[serde(serialize_with = "round::milli")]
    pub send_period_us: f64,
    /// Congestion window, packets.
    #[serde(serialize_with = "round::milli")]
    pub cwnd_pkts: f64,
    /// Flow window (the peer's free buffer), packets.
    pub flow_window_pkts: u64,
    /// The packet-pair estimate of the link capacity, packets/s (summed for the sum); `null`
    /// until there is one.
    pub link_capacity_pkts: Option<u64>,
    /// The arrival rate, packets/s (summed for the sum).
    pub recv_rate_pkts: u64,
    /// Packets retransmitted (by this end).
    pub retransmits: u64,
    /// Client: packets reported lost by the receiver (NAKs). Server: packets detected missing.
    pub loss: u64,
    /// Duplicate packets received (by this end).
    pub duplicates: u64,
}

impl Sample {
    /// The sample of counters `snap` (read with `clear`) as stream `id` of a `role` end.
    pub fn of(snap: &Snapshot, id: u32, role: Role, start: f64, end: f64) -> Sample {
        let secs = snap.interval_len.as_secs_f64();
        let (bytes, loss) = match role {
            Role::Client => (snap.interval.bytes_sent, snap.interval.snd_loss),
            Role::Server => (snap.interval.bytes_recv, snap.interval.rcv_loss),
        };
        Sample {
            id,
            start,
            end,
            bytes,
            bits_per_second: bps(bytes, secs),
            rtt_ms: snap.now.rtt_us as f64 / 1000.0,
            send_period_us: snap.now.send_period_us,
            cwnd_pkts: snap.now.congestion_window,
            flow_window_pkts: u64::from(snap.now.flow_window),
            link_capacity_pkts: round::estimate(snap.now.bandwidth_pkts),
            recv_rate_pkts: u64::from(snap.now.recv_rate_pkts),
            retransmits: snap.interval.retransmits,
            loss,
            duplicates: snap.interval.dup_recv,
        }
    }

    /// The sum over `samples` (means for RTT and sending period).
    pub fn sum(samples: &[Sample], start: f64, end: f64) -> Sample {
        let n = samples.len().max(1) as f64;
        Sample {
            id: 0,
            start,
            end,
            bytes: samples.iter().map(|s| s.bytes).sum(),
            bits_per_second: samples.iter().map(|s| s.bits_per_second).sum(),
            rtt_ms: samples.iter().map(|s| s.rtt_ms).sum::<f64>() / n,
            send_period_us: samples.iter().map(|s| s.send_period_us).sum::<f64>() / n,
            cwnd_pkts: samples.iter().map(|s| s.cwnd_pkts).sum(),
            flow_window_pkts: samples.iter().map(|s| s.flow_window_pkts).sum(),
            link_capacity_pkts: samples.iter().filter_map(|s| s.link_capacity_pkts).reduce(|a, b| a + b),
            recv_rate_pkts: samples.iter().map(|s| s.recv_rate_pkts).sum(),
            retransmits: samples.iter().map(|s| s.retransmits).sum(),
            loss: samples.iter().map(|s| s.loss).sum(),
            duplicates: samples.iter().map(|s| s.duplicates).sum(),
        }
    }
}

/// One interval: a sample per stream and their sum.
#[derive(Clone, Debug, Serialize)]
pub struct Interval<S> {
    /// Start, seconds since the test started.
    #[serde(serialize_with = "round::micro")]
    pub start: f64,
    /// End.
    #[serde(serialize_with = "round::micro")]
    pub end: f64,
    /// Within the first seconds `--omit` leaves out of the summary (written only when true).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub omitted: bool,
    /// One sample per stream.
    pub streams: Vec<S>,
    /// The sum over streams.
    pub sum: S,
}

/// Totals of one stream.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StreamSummary {
    /// Stream index, 1-based.
    pub id: u32,
    /// Client: application bytes written and acknowledged. Server: payload bytes received.
    pub bytes: u64,
    /// From the start until the last byte was acknowledged (client) or arrived (server).
    #[serde(serialize_with = "round::micro")]
    pub seconds: f64,
    /// `bytes` over `seconds`.
    #[serde(serialize_with = "round::whole")]
    pub bits_per_second: f64,
    /// Packets retransmitted (by this end).
    pub retransmits: u64,
    /// Packets lost (as in [`Sample::loss`]).
    pub loss: u64,
    /// Duplicate packets received.
    pub duplicates: u64,
    /// Smoothed RTT at the end, ms.
    #[serde(serialize_with = "round::milli")]
    pub rtt_ms: f64,
}

/// Totals of a test, as one end saw it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    /// Bytes, all streams (as in [`StreamSummary::bytes`]).
    pub bytes: u64,
    /// From the start until the last stream's end.
    #[serde(serialize_with = "round::micro")]
    pub seconds: f64,
    /// `bytes` over `seconds`.
    #[serde(serialize_with = "round::whole")]
    pub bits_per_second: f64,
    /// The same in Gb/s.
    #[serde(serialize_with = "round::micro")]
    pub gbps: f64,
    /// Packets retransmitted.
    pub retransmits: u64,
    /// Packets lost.
    pub loss: u64,
    /// Duplicate packets received.
    pub duplicates: u64,
    /// Mean smoothed RTT at the end, ms.
    #[serde(serialize_with = "round::milli")]
    pub rtt_ms: f64,
    /// CPU seconds in user mode (the whole process).
    #[serde(serialize_with = "round::micro")]
    pub cpu_user_s: f64,
    /// CPU seconds in the kernel (the whole process).
    #[serde(serialize_with = "round::micro")]
    pub cpu_system_s: f64,
    /// CPU seconds (user + system) per 10^9 bytes moved.
    #[serde(serialize_with = "round::micro")]
    pub cpu_s_per_gb: f64,
    /// Per stream.
    pub streams: Vec<StreamSummary>,
    /// How evenly the streams shared the path (several streams that moved anything).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fairness: Option<Fairness>,
    /// Streams that ended with an error, and streams that never connected.
    pub errors: Vec<String>,
    /// The server's summary (only with `--self`, where it is in this process).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receiver: Option<Box<Summary>>,
}

impl Summary {
    /// Totals over `streams`, with the process's CPU time `cpu` over the test.
    pub fn over(streams: Vec<StreamSummary>, cpu: &crate::cpu::CpuTime) -> Summary {
        let bytes: u64 = streams.iter().map(|s| s.bytes).sum();
        let seconds = streams.iter().map(|s| s.seconds).fold(0.0, f64::max);
        let n = streams.len().max(1) as f64;
        Summary {
            bytes,
            seconds,
            bits_per_second: bps(bytes, seconds),
            gbps: bps(bytes, seconds) / 1e9,
            retransmits: streams.iter().map(|s| s.retransmits).sum(),
            loss: streams.iter().map(|s| s.loss).sum(),
            duplicates: streams.iter().map(|s| s.duplicates).sum(),
            rtt_ms: streams.iter().map(|s| s.rtt_ms).sum::<f64>() / n,
            cpu_user_s: cpu.user.as_secs_f64(),
            cpu_system_s: cpu.system.as_secs_f64(),
            cpu_s_per_gb: if bytes > 0 { cpu.total().as_secs_f64() / (bytes as f64 / 1e9) } else { 0.0 },
            fairness: Fairness::over(&streams.iter().map(|s| s.bits_per_second).collect::<Vec<_>>()),
            streams,
            errors: Vec::new(),
            receiver: None,
        }
    }
}

/// The fairness line of a summary of several streams.
fn print_fairness(summary: &Summary) {
    if let Some(f) = &summary.fairness {
        println!(
            "fairness over {} streams: Jain {:.3}; per stream min {}, median {}, max {}",
            summary.streams.len(),
            f.jain,
            units::bits(f.min_bits_per_second),
            units::bits(f.median_bits_per_second),
            units::bits(f.max_bits_per_second)
        );
    }
}

/// `[  1]` or `[SUM]`.
fn label(id: u32) -> String {
    if id == 0 {
        "[SUM]".into()
    } else {
        format!("[{id:>3}]")
    }
}

/// `0.00-1.00 s`.
fn span(start: f64, end: f64) -> String {
    format!("{start:.2}-{end:.2} s")
}

/// Column titles of sender lines.
fn send_title() -> String {
    format!(
        "{:<5} {:>13} {:>10} {:>11} {:>9} {:>10} {:>7} {:>7} {:>6} {:>6}",
        "[ ID]", "Interval", "Transfer", "Bitrate", "RTT", "Period", "cwnd", "flow", "Retr", "Loss"
    )
}

/// One sender line.
fn send_line(s: &Sample) -> String {
    format!(
        "{:<5} {:>13} {:>10} {:>11} {:>6.2} ms {:>7.2} us {:>7.0} {:>7} {:>6} {:>6}",
        label(s.id),
        span(s.start, s.end),
        units::bytes(s.bytes),
        units::bits(s.bits_per_second),
        s.rtt_ms,
        s.send_period_us,
        s.cwnd_pkts,
        s.flow_window_pkts,
        s.retransmits,
        s.loss
    )
}

/// Column titles of receiver lines.
fn recv_title() -> String {
    format!(
        "{:<5} {:>13} {:>10} {:>11} {:>9} {:>6} {:>6}",
        "[ ID]", "Interval", "Transfer", "Bitrate", "RTT", "Loss", "Dup"
    )
}

/// One receiver line.
fn recv_line(s: &Sample) -> String {
    format!(
        "{:<5} {:>13} {:>10} {:>11} {:>6.2} ms {:>6} {:>6}",
        label(s.id),
        span(s.start, s.end),
        units::bytes(s.bytes),
        units::bits(s.bits_per_second),
        s.rtt_ms,
        s.loss,
        s.duplicates
    )
}

/// Bits per second of `bytes` over `secs`.
fn bps(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 * 8.0 / secs
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip() {
        let h = TestHeader {
            test_id: 0x0123_4567_89ab_cdef,
            index: 2,
            count: 4,
            duration_ms: 10_000,
            reverse: false,
            bidir: false,
        };
        let b = h.encode();
        assert_eq!(&b[..4], b"UDTP");
        assert_eq!(TestHeader::decode(&b).unwrap(), h);
        let reversed = TestHeader { reverse: true, ..h };
        assert_eq!(reversed.encode()[6..8], [1, 0]);
        assert_eq!(TestHeader::decode(&reversed.encode()).unwrap(), reversed);
        let both = TestHeader { reverse: true, bidir: true, ..h };
        assert_eq!(both.encode()[6..8], [3, 0]);
        assert_eq!(TestHeader::decode(&both.encode()).unwrap(), both);
        let mut bad = b;
        bad[16] = 5;
        assert!(TestHeader::decode(&bad).is_err());
        bad[0] = b'X';
        assert!(TestHeader::decode(&bad).is_err());
    }

    #[test]
    fn a_server_takes_tests_of_up_to_max_parallel_streams() {
        let h = |count| TestHeader {
            test_id: 1,
            index: count,
            count,
            duration_ms: 1000,
            reverse: false,
            bidir: false,
        };
        assert!(TestHeader::decode(&h(MAX_PARALLEL).encode()).is_ok());
        assert!(TestHeader::decode(&h(MAX_PARALLEL + 1).encode()).is_err());
    }

    #[test]
    fn lines_line_up() {
        let s = Sample { id: 1, start: 0.0, end: 1.0, bytes: 118 << 20, ..Sample::default() };
        assert_eq!(send_title().len(), send_line(&s).len());
        let r = Sample { id: 0, ..Sample::default() };
        assert_eq!(recv_title().len(), recv_line(&r).len());
    }
}
