//! `udt perf`: an iperf3-style memory-to-memory throughput test.
//!
//! - `udt perf server [--listen ADDR:PORT]` (default 0.0.0.0:9001: iperf3's 5201 is left alone
//!   so the two can run side by side) receives tests and prints receive-side lines.
//! - `udt perf client HOST:PORT [--time S] [--parallel N] [--json]` opens N UDT connections,
//!   sends a 32-byte test header on each (see [`TestHeader`] and `PROTOCOL.md`), then writes
//!   from a preallocated buffer as fast as it can for S seconds, printing one line per stream
//!   (and a SUM line) every interval, and a summary. `--bandwidth RATE` caps each connection's
//!   rate (UDT4's `UDT_MAXBW`).
//! - `udt perf --self` runs a server on 127.0.0.1:0 inside this process and a client against
//!   it: a real transfer over loopback that needs no second host.
//!
//! Interval rates are payload put on the wire in that interval, retransmissions included
//! (UDT4's `mbpsSendRate`); the summary counts the application bytes the peer acknowledged, over
//! the time until the last of them was acknowledged. CPU time is the whole process's (with
//! `--self`, sender and receiver together).

mod client;
mod server;

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::{net, units};

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
    #[arg(short, long, value_name = "ADDR:PORT", default_value = "0.0.0.0:9001", value_parser = net::parse_listen)]
    pub listen: SocketAddr,
    /// Exit after one test (iperf3's --one-off).
    #[arg(short = '1', long)]
    pub one_off: bool,
    /// Print each test's result as one JSON object instead of lines.
    #[arg(long)]
    pub json: bool,
    /// Seconds between interval lines.
    #[arg(short, long, value_name = "SECS", default_value = "1", value_parser = parse_positive_secs)]
    pub interval: Duration,
    /// Maximum segment size in bytes, IP and UDP headers included (UDT4 default 1500).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(76..=65535))]
    pub mss: Option<u32>,
    /// Congestion control, NAME[:key=value,...] (`udt cc list`; default udt). TCP-like ones
    /// (newreno, cubic, ...) should run at both ends: the receiver's sets the ACK interval.
    #[arg(long, value_name = "NAME[:K=V,...]", value_parser = net::parse_cc)]
    pub cc: Option<net::CcArg>,
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
    /// Seconds to send.
    #[arg(short, long, value_name = "SECS", default_value = "10", value_parser = parse_positive_secs)]
    pub time: Duration,
    /// Parallel connections.
    #[arg(short = 'P', long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=128))]
    pub parallel: u32,
    /// Seconds between interval lines.
    #[arg(short, long, value_name = "SECS", default_value = "1", value_parser = parse_positive_secs)]
    pub interval: Duration,
    /// Print one JSON object at the end (intervals and summary) instead of lines.
    #[arg(long)]
    pub json: bool,
    /// Maximum segment size in bytes, IP and UDP headers included (UDT4 default 1500).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(76..=65535))]
    pub mss: Option<u32>,
    /// Congestion control, NAME[:key=value,...] (`udt cc list`; default udt). TCP-like ones
    /// (newreno, cubic, ...) should run at both ends: the receiver's sets the ACK interval.
    #[arg(long, value_name = "NAME[:K=V,...]", value_parser = net::parse_cc)]
    pub cc: Option<net::CcArg>,
    /// Cap each connection's sending rate, in bits per second of UDT packets (UDT4 `UDT_MAXBW`):
    /// 10mbit, 500m, 1gbit. Default: no cap.
    #[arg(short = 'b', long, value_name = "RATE", value_parser = parse_bandwidth)]
    pub bandwidth: Option<u64>,
}

/// A rate cap in bits per second (`udt netem`'s syntax), not zero.
fn parse_bandwidth(s: &str) -> Result<u64, String> {
    match udt_netem::units::parse_rate(s) {
        Ok(0) => Err("a rate cap must be above zero (leave --bandwidth out for no cap)".into()),
        Ok(bits) => Ok(bits),
        Err(e) => Err(e.to_string()),
    }
}

/// Parse positive seconds (fractions allowed), at most a day.
fn parse_positive_secs(s: &str) -> Result<Duration, String> {
    let secs: f64 = s.parse().map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err(format!("`{s}` is not between 0 and 86400 seconds"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Run `udt perf`.
pub fn run(args: &Args) -> Result<()> {
    match &args.mode {
        Some(Mode::Server(s)) => {
            let listener = net::listen(s.listen, server::options(s.mss, s.cc.as_ref()))?;
            let local = listener.local_addr().context("reading the bound address")?;
            if !s.json {
                println!("udt perf server listening on {local}");
            }
            let output = if s.json { server::Output::Json } else { server::Output::Text };
            server::serve(listener, s.one_off, output, s.interval)?;
            Ok(())
        }
        Some(Mode::Client(c)) => {
            let result = client::run(&c.target, &c.test, !c.test.json)?;
            if c.test.json {
                print_json(&result)?;
            }
            Ok(())
        }
        None => run_self(&args.test),
    }
}

/// `udt perf --self`: server and client in this process over loopback.
fn run_self(test: &TestOpts) -> Result<()> {
    let listener =
        net::listen(SocketAddr::from(([127, 0, 0, 1], 0)), server::options(test.mss, test.cc.as_ref()))?;
    let addr = listener.local_addr().context("reading the bound address")?;
    let interval = test.interval;
    let server = std::thread::Builder::new()
        .name("perf-server".into())
        .spawn(move || server::serve(listener, true, server::Output::Silent, interval))?;
    let mut result = client::run(&addr.to_string(), test, !test.json)?;
    // The server finishes once every stream has been read to its end.
    let receiver = server
        .join()
        .map_err(|_| anyhow::anyhow!("the in-process server panicked"))?
        .context("the in-process server failed")?;
    result.summary.receiver = receiver;
    if test.json {
        print_json(&result)?;
    } else if let Some(r) = &result.summary.receiver {
        println!(
            "receiver: {} bytes ({}) in {:.2} s = {}, {} packets lost, {} duplicates",
            r.bytes,
            units::bytes(r.bytes),
            r.seconds,
            units::bits(r.bits_per_second),
            r.loss,
            r.duplicates
        );
    }
    Ok(())
}

/// Print a value as pretty JSON on standard output.
fn print_json(value: &impl Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value).context("encoding JSON")?;
    println!("{text}");
    Ok(())
}

/// The 32 bytes a client sends first on each connection (little-endian):
/// `"UDTP" | version u16 | flags u16 | test id u64 | stream index u32 (1-based) |
/// stream count u32 | duration ms u32 | reserved u32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TestHeader {
    /// Groups the parallel streams of one test on the server.
    pub test_id: u64,
    /// Which stream this is, 1-based.
    pub index: u32,
    /// How many streams the test has.
    pub count: u32,
    /// How long the client will send.
    pub duration_ms: u32,
}

impl TestHeader {
    /// Magic of a perf connection.
    pub const MAGIC: [u8; 4] = *b"UDTP";
    /// Version of the header.
    pub const VERSION: u16 = 1;
    /// Length on the wire.
    pub const LEN: usize = 32;

    /// The wire form.
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[..4].copy_from_slice(&Self::MAGIC);
        b[4..6].copy_from_slice(&Self::VERSION.to_le_bytes());
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
        };
        if h.count == 0 || h.count > 1024 || h.index == 0 || h.index > h.count {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "udt perf header: bad stream index"));
        }
        Ok(h)
    }
}

/// Sender-side reading of one stream (or the sum, `id` 0) over one interval.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SendSample {
    /// Stream index (1-based); 0 for the sum.
    pub id: u32,
    /// Interval start, seconds since the test started.
    pub start: f64,
    /// Interval end.
    pub end: f64,
    /// Payload bytes put on the wire, retransmissions included.
    pub bytes: u64,
    /// `bytes` as bits per second.
    pub bits_per_second: f64,
    /// Smoothed RTT, ms (the mean over streams for the sum).
    pub rtt_ms: f64,
    /// Packet-sending period, µs (the mean over streams for the sum).
    pub send_period_us: f64,
    /// Congestion window, packets.
    pub cwnd_pkts: f64,
    /// Flow window (the receiver's free buffer), packets.
    pub flow_window_pkts: u64,
    /// The receiver's packet-pair estimate of the link capacity, packets/s (the sum over streams
    /// for the sum).
    pub link_capacity_pkts: u64,
    /// The receiver's arrival rate, packets/s (the sum over streams for the sum).
    pub recv_rate_pkts: u64,
    /// Packets retransmitted.
    pub retransmits: u64,
    /// Packets reported lost by the receiver (NAKs).
    pub loss: u64,
}

/// Receiver-side reading of one stream (or the sum, `id` 0) over one interval.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RecvSample {
    /// Stream index (1-based); 0 for the sum.
    pub id: u32,
    /// Interval start, seconds since the test started.
    pub start: f64,
    /// Interval end.
    pub end: f64,
    /// Payload bytes received (duplicates excluded).
    pub bytes: u64,
    /// `bytes` as bits per second.
    pub bits_per_second: f64,
    /// Smoothed RTT, ms.
    pub rtt_ms: f64,
    /// Packets detected missing.
    pub loss: u64,
    /// Duplicate packets.
    pub duplicates: u64,
}

/// One interval: a sample per stream and their sum.
#[derive(Clone, Debug, Serialize)]
pub struct Interval<S> {
    /// Start, seconds since the test started.
    pub start: f64,
    /// End.
    pub end: f64,
    /// One sample per stream.
    pub streams: Vec<S>,
    /// The sum over streams.
    pub sum: S,
}

/// What the receiver saw of a whole test.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReceiverSummary {
    /// Payload bytes received.
    pub bytes: u64,
    /// From the first stream's start to the last stream's end.
    pub seconds: f64,
    /// `bytes` over `seconds`.
    pub bits_per_second: f64,
    /// Packets detected missing.
    pub loss: u64,
    /// Duplicate packets received.
    pub duplicates: u64,
    /// Streams that ended with an error.
    pub errors: Vec<String>,
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
fn send_line(s: &SendSample) -> String {
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
fn recv_line(s: &RecvSample) -> String {
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
        let h = TestHeader { test_id: 0x0123_4567_89ab_cdef, index: 2, count: 4, duration_ms: 10_000 };
        let b = h.encode();
        assert_eq!(&b[..4], b"UDTP");
        assert_eq!(TestHeader::decode(&b).unwrap(), h);
        let mut bad = b;
        bad[16] = 5;
        assert!(TestHeader::decode(&bad).is_err());
        bad[0] = b'X';
        assert!(TestHeader::decode(&bad).is_err());
    }

    #[test]
    fn lines_line_up() {
        let s = SendSample { id: 1, start: 0.0, end: 1.0, bytes: 118 << 20, ..SendSample::default() };
        assert_eq!(send_title().len(), send_line(&s).len());
        let r = RecvSample { id: 0, ..RecvSample::default() };
        assert_eq!(recv_title().len(), recv_line(&r).len());
    }
}
