//! One flow of one system across the emulated path: the context runs share ([`Ctx`]), the
//! measurement a finished flow yields ([`Flow`]), and [`Started`], which starts a system's
//! server (in namespace B) and client (in A) and turns their outputs into a [`Flow`].
//!
//! Invariants: every figure is the receiver's view of application bytes (what arrived, not
//! what was sent); CPU times are GNU time's user + system of each whole process; the
//! processes of a [`Started`] are killed if it is dropped unfinished.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use super::child::{Finished, TimedChild};
use super::path::{PathSpec, PACKET_BYTES};
use super::system::System;
use super::{files, iperf, seed, udt4, udt_perf};

/// How long a client may run past `--time` (UDT's sender waits up to 60 s for the last
/// acknowledgements, UDT4 lingers on close) before it is killed.
pub const CLIENT_GRACE: Duration = Duration::from_secs(75);
/// How long a server may take to finish once its client has.
pub const SERVER_GRACE: Duration = Duration::from_secs(15);

/// What every run on one path shares.
#[derive(Debug)]
pub struct Ctx {
    /// The path.
    pub path: PathSpec,
    /// Namespace of the clients (senders).
    pub ns_a: String,
    /// Namespace of the servers (receivers).
    pub ns_b: String,
    /// The servers' address.
    pub addr_b: Ipv4Addr,
    /// The clients' address (where the seed protocols' servers listen: they hold the data).
    pub addr_a: Ipv4Addr,
    /// Sending time of each run.
    pub time: Duration,
    /// The `udt` binary (this one).
    pub udt_exe: PathBuf,
    /// `udt4_perf`, if built.
    pub udt4: Option<PathBuf>,
    /// The directory of the Tsunami and RBUDP reference programs, if built.
    pub seed_peers: Option<PathBuf>,
    /// Scratch directory for outputs and files.
    pub dir: PathBuf,
}

/// One point of a throughput-over-time series: receiver-side Mb/s over the interval ending
/// at `t` seconds.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Point {
    /// Interval end, seconds since the flow started.
    pub t: f64,
    /// Mb/s of application bytes in that interval.
    pub mbps: f64,
}

/// The measurement of one flow.
#[derive(Clone, Debug, Serialize)]
pub struct Flow {
    /// Application bytes delivered to the receiver.
    pub bytes: u64,
    /// Over this many seconds (the receiver's clock).
    pub seconds: f64,
    /// `bytes` over `seconds`, Mb/s.
    pub goodput_mbps: f64,
    /// Goodput over the configured link rate.
    pub goodput_share: f64,
    /// The link's capacity used by the IP packets of new data: goodput with each system's
    /// headers (a full packet of [`PACKET_BYTES`] carries its [`Raw::payload_per_packet`]), over
    /// the link rate, as the simulator and the thesis count it. Retransmissions are not in it.
    pub utilization: f64,
    /// Bytes retransmitted, when the system reports it.
    pub retx_bytes: Option<u64>,
    /// `retx_bytes` per delivered byte.
    pub retx_per_delivered: Option<f64>,
    /// CPU seconds of the sending process.
    pub cpu_send_s: Option<f64>,
    /// CPU seconds of the receiving process.
    pub cpu_recv_s: Option<f64>,
    /// Sender CPU seconds per 10^9 delivered bytes.
    pub cpu_send_s_per_gb: Option<f64>,
    /// Receiver CPU seconds per 10^9 delivered bytes.
    pub cpu_recv_s_per_gb: Option<f64>,
    /// Receiver-side throughput per interval (empty when the system does not report it).
    pub intervals: Vec<Point>,
    /// With `--rate-steps`: the longest queueing delay at the bottleneck (data direction) per
    /// 100 ms since the run's start, ms.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub queue_delay_ms: Vec<f64>,
    /// With `--rate-steps`: the run's stretches at each rate ([`super::steps`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<super::steps::Phase>,
    /// Anything worth knowing about how it was measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The raw figures a system's parser extracts.
#[derive(Debug, Default)]
pub struct Raw {
    /// Application bytes delivered.
    pub bytes: u64,
    /// Receiver's seconds.
    pub seconds: f64,
    /// Bytes retransmitted, if known.
    pub retx_bytes: Option<u64>,
    /// Receiver-side series.
    pub intervals: Vec<Point>,
    /// A remark.
    pub note: Option<String>,
    /// Application bytes a full-size packet of this system carries ([`PACKET_BYTES`] on the
    /// link); `None`: counted as payload only (utilization = goodput share).
    pub payload_per_packet: Option<u64>,
}

impl Flow {
    /// The derived figures of `raw` on a link of `rate_bps`, with each side's CPU seconds.
    pub fn new(raw: Raw, rate_bps: u64, cpu_send_s: Option<f64>, cpu_recv_s: Option<f64>) -> Flow {
        let goodput_mbps = if raw.seconds > 0.0 { raw.bytes as f64 * 8.0 / raw.seconds / 1e6 } else { 0.0 };
        let goodput_share = goodput_mbps * 1e6 / rate_bps.max(1) as f64;
        let wire_per_payload =
            raw.payload_per_packet.filter(|&p| p > 0).map_or(1.0, |p| PACKET_BYTES as f64 / p as f64);
        let gb = raw.bytes as f64 / 1e9;
        let per_gb = |cpu: Option<f64>| cpu.filter(|_| gb > 0.0).map(|c| c / gb);
        Flow {
            bytes: raw.bytes,
            seconds: raw.seconds,
            goodput_mbps,
            goodput_share,
            utilization: goodput_share * wire_per_payload,
            retx_bytes: raw.retx_bytes,
            retx_per_delivered: raw.retx_bytes.filter(|_| raw.bytes > 0).map(|r| r as f64 / raw.bytes as f64),
            cpu_send_s,
            cpu_recv_s,
            cpu_send_s_per_gb: per_gb(cpu_send_s),
            cpu_recv_s_per_gb: per_gb(cpu_recv_s),
            intervals: raw.intervals,
            queue_delay_ms: Vec::new(),
            phases: Vec::new(),
            note: raw.note,
        }
    }
}

/// The two commands of one system's flow.
#[derive(Debug, Default)]
pub struct Commands {
    /// The receiver, run in namespace B (in A when `server_holds_data`).
    pub server: Vec<String>,
    /// The sender, run in namespace A (in B when `server_holds_data`).
    pub client: Vec<String>,
    /// The server is the data's source (a pulling protocol): it runs in A, the client in B.
    pub server_holds_data: bool,
    /// The server never exits by itself: it is stopped once the client is done.
    pub server_lingers: bool,
}

/// A flow whose server is running (and, after [`Started::start_client`], its client).
#[derive(Debug)]
pub struct Started {
    system: System,
    tag: String,
    client_cmd: Vec<String>,
    client_ns: String,
    server_lingers: bool,
    server: TimedChild,
    client: Option<(TimedChild, Instant)>,
}

impl Started {
    /// Starts the server of `system`'s flow number `slot` (flows running at once need distinct
    /// slots: they pick ports and file names).
    pub fn start_server(ctx: &Ctx, system: &System, slot: u16) -> Result<Started> {
        let cmds = match system {
            System::Udt { cc } => udt_perf::commands(ctx, cc.as_deref(), slot),
            System::UdtFile => files::commands(ctx, slot)?,
            System::Udt4 => udt4::commands(ctx, slot)?,
            System::Tcp { cc } => iperf::commands(ctx, Some(cc), slot),
            System::Udp => iperf::commands(ctx, None, slot),
            System::Seed(p) => seed::commands(ctx, *p, slot)?,
            System::SeedRef(p) => seed::reference_commands(ctx, *p, slot)?,
        };
        let tag = format!("{}-{}-{slot}", ctx.path.slug(), system.to_string().replace(':', "_"));
        let (server_ns, client_ns) =
            if cmds.server_holds_data { (&ctx.ns_a, &ctx.ns_b) } else { (&ctx.ns_b, &ctx.ns_a) };
        let server = TimedChild::spawn(server_ns, &format!("{tag}-server"), &cmds.server, &ctx.dir)?;
        Ok(Started {
            system: system.clone(),
            tag,
            client_cmd: cmds.client,
            client_ns: client_ns.clone(),
            server_lingers: cmds.server_lingers,
            server,
            client: None,
        })
    }

    /// Starts the client (the server should have had a moment to bind).
    pub fn start_client(&mut self, ctx: &Ctx) -> Result<()> {
        let client =
            TimedChild::spawn(&self.client_ns, &format!("{}-client", self.tag), &self.client_cmd, &ctx.dir)?;
        self.client = Some((client, Instant::now()));
        Ok(())
    }

    /// Waits for both ends (within the deadlines) and measures the flow.
    pub fn finish(self, ctx: &Ctx) -> Result<Flow> {
        let Started { system, server, client, server_lingers, .. } = self;
        let Some((client, started)) = client else { anyhow::bail!("the client was never started") };
        let client = client.finish(started + ctx.time + CLIENT_GRACE);
        let server_deadline = Instant::now() + SERVER_GRACE;
        let (client, server) = match client {
            Ok(c) if server_lingers => (c, server.stop()),
            Ok(c) => (c, server.finish(server_deadline)?),
            Err(e) => {
                drop(server);
                return Err(e);
            }
        };
        let raw = parse(&system, ctx, &client, &server)?;
        Ok(Flow::new(raw, ctx.path.rate_bps, client.cpu_s, server.cpu_s))
    }
}

fn parse(system: &System, ctx: &Ctx, client: &Finished, server: &Finished) -> Result<Raw> {
    match system {
        System::Udt { .. } => udt_perf::parse(client, server),
        System::UdtFile => files::parse(ctx, client, server),
        System::Udt4 => udt4::parse(client, server),
        System::Tcp { .. } => iperf::parse_tcp(client),
        System::Udp => iperf::parse_udp(client),
        System::Seed(p) => seed::parse(ctx, client, false, p.name()),
        System::SeedRef(p) => seed::parse(ctx, client, true, &format!("{}-ref", p.name())),
    }
}

/// Runs one flow alone: server, a moment to bind, client, measurement.
pub fn run_alone(ctx: &Ctx, system: &System) -> Result<Flow> {
    let mut started = Started::start_server(ctx, system, 0)?;
    super::interrupt::sleep(Duration::from_millis(400))?;
    started.start_client(ctx)?;
    started.finish(ctx)
}

/// A number from a JSON document by pointer (`/end/sum/bytes`), with an error naming it.
pub fn json_f64(doc: &serde_json::Value, pointer: &str, what: &str) -> Result<f64> {
    doc.pointer(pointer)
        .and_then(serde_json::Value::as_f64)
        .ok_or_else(|| anyhow::anyhow!("{what}: no number at {pointer}"))
}
