//! What `udt serve` and `udt fetch` share: the protocol choice, its tuning flags, and the calls
//! into [`udt_bulk`] with the tool's progress display and interrupt handling.
//!
//! Secure by default: none of these protocols encrypts and only Tsunami authenticates (an MD5
//! challenge with a shared secret, weak by today's standards), so both commands refuse to run
//! without `--insecure`. The Tsunami secret comes from a file or the environment, never from
//! the command line (other users can read a process's arguments).

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use clap::ValueEnum;
use udt_bulk::driver::RunOptions;
use udt_bulk::storage::FileSink;

use crate::progress::{FileProgress, Mode};

/// A seed paper's protocol.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// Tsunami UDP 1.1: TCP control, UDP blocks, loss-driven inter-packet delay.
    Tsunami,
    /// Reliable Blast UDP (QUANTA RBUDP 1.0): blast at a set rate, bitmap of what arrived.
    Rbudp,
    /// FOBS: chunks and segments, acknowledgements over TCP.
    Fobs,
}

impl Protocol {
    /// The lower-case name of `--protocol`.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Tsunami => "tsunami",
            Protocol::Rbudp => "rbudp",
            Protocol::Fobs => "fobs",
        }
    }

    /// The protocol's own name.
    pub fn title(self) -> &'static str {
        match self {
            Protocol::Tsunami => "Tsunami",
            Protocol::Rbudp => "RBUDP",
            Protocol::Fobs => "FOBS",
        }
    }

    /// The control port its servers listen on by default (the reference programs' ports).
    pub fn default_port(self) -> u16 {
        match self {
            Protocol::Tsunami => 46224,
            Protocol::Rbudp => 38000,
            Protocol::Fobs => 38100,
        }
    }
}

/// Flags both ends take.
#[derive(clap::Args, Debug)]
pub struct Tuning {
    /// Sending rate in bits per second (10mbit, 500m, 1gbit, 10mbps; a bare number is bits per
    /// second). RBUDP has no congestion control:
    /// `udt serve --protocol rbudp` needs it, and it should not exceed the path's capacity.
    /// Tsunami: the target rate the fetching end asks for (default 650m, the reference's).
    /// FOBS: the most the serving end's rate control may reach.
    #[arg(long, value_name = "RATE", value_parser = crate::units::parse_rate_cap)]
    pub rate: Option<u64>,
    /// Payload bytes per datagram: Tsunami's block size (the fetching end's choice, default
    /// 1024), RBUDP's payload (both ends must give the same, default 1460), FOBS' packet payload
    /// (default 1400; both ends must agree).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(16..=65000))]
    pub block_size: Option<u32>,
    /// Tsunami's shared secret: a file holding it (the first line); or set UDT_TSUNAMI_SECRET.
    #[arg(long, value_name = "FILE")]
    pub secret_file: Option<PathBuf>,
    /// Fail when nothing arrives from the peer for this long (a bare number is seconds).
    #[arg(long, value_name = "SECS", default_value = "30", value_parser = crate::link::parse_peer_timeout)]
    pub idle_timeout: Duration,
    /// Required: these protocols do not encrypt (and RBUDP and FOBS do not authenticate), so
    /// anyone on the path reads the data and, for RBUDP and FOBS, anyone who reaches the port
    /// can fetch what is served.
    #[arg(long)]
    pub insecure: bool,
}

/// Which end runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// `udt serve`.
    Serves,
    /// `udt fetch`.
    Fetches,
}

/// A protocol's parameters.
#[derive(Debug)]
pub enum Params {
    /// Tsunami.
    Tsunami(udt_bulk::tsunami::Params),
    /// RBUDP.
    Rbudp(udt_bulk::rbudp::Params),
    /// FOBS.
    Fobs(udt_bulk::fobs::Params),
}

/// The Tsunami secret: from `--secret-file` or UDT_TSUNAMI_SECRET.
fn tsunami_secret(tuning: &Tuning) -> Result<Vec<u8>> {
    let secret = if let Some(path) = &tuning.secret_file {
        let text = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let line = text.split(|&b| b == b'\n').next().unwrap_or_default();
        line.strip_suffix(b"\r").unwrap_or(line).to_vec()
    } else if let Some(s) = std::env::var_os("UDT_TSUNAMI_SECRET") {
        s.into_encoded_bytes()
    } else {
        bail!("Tsunami needs its shared secret: --secret-file FILE or UDT_TSUNAMI_SECRET")
    };
    if secret.is_empty() {
        bail!("the Tsunami secret is empty");
    }
    Ok(secret)
}

/// The flags a protocol cannot run without: `--insecure` (none of them encrypts), RBUDP's rate
/// at the serving end, Tsunami's secret. The reason, for a usage error, when one is missing.
pub fn check_usage(protocol: Protocol, tuning: &Tuning, side: Side) -> Result<(), String> {
    // Every requirement that is missing, in one message.
    let mut missing = Vec::new();
    if !tuning.insecure {
        missing.push(format!(
            "{} does not encrypt{}: add --insecure to run it anyway (on a trusted network)",
            protocol.title(),
            if protocol == Protocol::Tsunami { "" } else { " or authenticate" }
        ));
    }
    if protocol == Protocol::Rbudp && side == Side::Serves && tuning.rate.is_none() {
        missing.push(udt_bulk::rbudp::NO_RATE.to_string());
    }
    if protocol == Protocol::Tsunami
        && tuning.secret_file.is_none()
        && std::env::var_os("UDT_TSUNAMI_SECRET").is_none()
    {
        missing.push(
            "Tsunami needs its shared secret: --secret-file FILE or UDT_TSUNAMI_SECRET (the original \
             tsunamid's default is `kitten`: UDT_TSUNAMI_SECRET=kitten reaches one started without -s)"
                .into(),
        );
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(missing.join("; and "))
    }
}

/// Check the flags and build the protocol's parameters.
pub fn params(protocol: Protocol, tuning: &Tuning, side: Side) -> Result<Params> {
    check_usage(protocol, tuning, side).map_err(|e| anyhow!(e))?;
    let block = tuning.block_size.map(|b| b as usize);
    Ok(match protocol {
        Protocol::Tsunami => {
            let mut p =
                udt_bulk::tsunami::Params { secret: Some(tsunami_secret(tuning)?), ..Default::default() };
            if let Some(b) = tuning.block_size {
                p.block_size = b;
            }
            if let Some(r) = tuning.rate {
                p.target_rate = u32::try_from(r)
                    .map_err(|_| anyhow!("Tsunami carries the rate in 32 bits: at most 4.29 Gbit/s"))?;
            }
            Params::Tsunami(p)
        }
        Protocol::Rbudp => {
            let mut p = udt_bulk::rbudp::Params { rate_bps: tuning.rate, ..Default::default() };
            if let Some(b) = block {
                p.payload = b;
            }
            Params::Rbudp(p)
        }
        Protocol::Fobs => {
            let mut p = udt_bulk::fobs::Params::default();
            if let Some(r) = tuning.rate {
                p.max_rate_bps = r;
                p.initial_rate_bps = p.initial_rate_bps.min(r);
                p.min_rate_bps = p.min_rate_bps.min(r);
            }
            if let Some(b) = tuning.block_size {
                p.payload =
                    u16::try_from(b).map_err(|_| anyhow!("FOBS packets carry at most 65535 bytes"))?;
            }
            Params::Fobs(p)
        }
    })
}

/// `HOST` or `HOST:PORT` to one address (the first the resolver gives).
pub fn resolve_server(server: &str, default_port: u16) -> Result<SocketAddr> {
    let with_port = if server.parse::<SocketAddr>().is_ok()
        || server.rsplit_once(':').is_some_and(|(h, p)| !h.contains(':') && p.parse::<u16>().is_ok())
    {
        server.to_string()
    } else if server.contains(':') {
        format!("[{server}]:{default_port}")
    } else {
        format!("{server}:{default_port}")
    };
    with_port
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve {server}"))?
        .next()
        .ok_or_else(|| anyhow!("{server} has no address"))
}

/// One file served.
pub struct Served {
    /// The name the client asked for.
    pub name: String,
    /// Bytes sent (the file's size).
    pub bytes: u64,
    /// How long it took.
    pub took: Duration,
}

/// Serve one connection from `listener`.
pub fn serve(
    protocol: Protocol,
    listener: &TcpListener,
    path: &Path,
    params: &Params,
    stop: &AtomicBool,
    idle: Duration,
    mode: Mode,
) -> Result<Served> {
    // The name asked for is the session's business; the display shows what is served.
    let mut progress = Progress::new(mode, crate::protocol::display_name(&path.display().to_string()));
    let mut on_progress = |c: &udt_bulk::Counters| progress.update(c);
    let run = RunOptions {
        stop: Some(stop),
        idle_limit: idle,
        on_progress: Some(&mut on_progress),
        ..RunOptions::default()
    };
    let (name, outcome) = match (protocol, params) {
        (Protocol::Tsunami, Params::Tsunami(p)) => {
            let r = udt_bulk::tsunami::serve_connection(listener, path, p, run)?;
            (r.name, r.outcome)
        }
        (Protocol::Rbudp, Params::Rbudp(p)) => {
            let r = udt_bulk::rbudp::serve_connection(listener, path, p, run)?;
            (r.name, r.outcome)
        }
        (Protocol::Fobs, Params::Fobs(p)) => {
            let r = udt_bulk::fobs::serve_connection(listener, path, p, run)?;
            (r.name, r.outcome)
        }
        _ => bail!("parameters of another protocol"),
    };
    progress.finish();
    Ok(Served {
        name,
        bytes: outcome.counters.size.unwrap_or(outcome.counters.delivered),
        took: outcome.elapsed,
    })
}

/// Fetch `name` from `server` into `file`, showing progress as `shown`; with the server's
/// digest when it sent one.
#[allow(clippy::too_many_arguments)]
pub fn fetch(
    protocol: Protocol,
    server: SocketAddr,
    name: &str,
    file: std::fs::File,
    params: &Params,
    stop: &AtomicBool,
    idle: Duration,
    mode: Mode,
    shown: &str,
) -> Result<Fetched> {
    let mut progress = Progress::new(mode, shown.to_string());
    let mut on_progress = |c: &udt_bulk::Counters| progress.update(c);
    let run = RunOptions {
        stop: Some(stop),
        idle_limit: idle,
        on_progress: Some(&mut on_progress),
        ..RunOptions::default()
    };
    let mut sink = FileSink::new(file);
    let outcome = match (protocol, params) {
        (Protocol::Tsunami, Params::Tsunami(p)) => udt_bulk::tsunami::fetch(server, name, &mut sink, p, run),
        (Protocol::Rbudp, Params::Rbudp(p)) => udt_bulk::rbudp::fetch(server, name, &mut sink, p, run),
        (Protocol::Fobs, Params::Fobs(p)) => udt_bulk::fobs::fetch(server, name, &mut sink, p, run),
        _ => bail!("parameters of another protocol"),
    }?;
    progress.finish();
    Ok(Fetched {
        bytes: outcome.counters.size.unwrap_or(outcome.counters.delivered),
        took: outcome.elapsed,
        server_digest: outcome.peer_digest,
    })
}

/// One file fetched.
pub struct Fetched {
    /// Its size.
    pub bytes: u64,
    /// How long it took.
    pub took: Duration,
    /// The server's BLAKE3 of the file, when the server is `udt serve` (the originals send none).
    pub server_digest: Option<[u8; 32]>,
}

/// The progress display of one transfer, shown once the session knows the file's size.
struct Progress {
    mode: Mode,
    name: String,
    bar: Option<FileProgress>,
    shown: u64,
}

impl Progress {
    fn new(mode: Mode, name: String) -> Self {
        Progress { mode, name, bar: None, shown: 0 }
    }

    /// The session's counters now.
    fn update(&mut self, c: &udt_bulk::Counters) {
        let Some(size) = c.size.filter(|&s| s > 0) else { return };
        let (mode, name) = (self.mode, &self.name);
        let bar = self.bar.get_or_insert_with(|| FileProgress::new(mode, name, size));
        bar.add(c.delivered.saturating_sub(self.shown));
        self.shown = self.shown.max(c.delivered);
    }

    fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish();
        }
    }
}
