//! `udt send FILE... HOST:PORT`: send files to a `udt recv`, each verified end to end with
//! BLAKE3 (the protocol is the `udt-transfer` library's, described in its `PROTOCOL.md`).
//!
//! Every argument is checked before connecting ([`Plan::collect`]): a file is sent under its name
//! (`a/b/c.txt` arrives as `c.txt`; `--as NAME` renames a single argument), a directory as a
//! tree with paths relative to its parent, symbolic links inside it skipped; one that cannot be
//! sent (missing, a name the receiver would refuse) is reported and left out, and the others
//! still go. A file the receiver refuses (it exists, say) is skipped and reported; a file the
//! receiver holds part of (an interrupted transfer) is sent from where that part ends, with the
//! BLAKE3 hash of our bytes before it as proof that we hold them (the receiver learns nothing it
//! did not have, and tells us nothing about its part but its length); if the receiver's part
//! differs, that file fails and the next run sends it whole. A file that fails on this side
//! while being sent (it shrank) is aborted with its reason, which the receiver prints at once.
//! Exit status 1 if any file failed, 130 if interrupted.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use udt_transfer::{protocol::VERSION, Cancel, Error, Plan, SendOptions};

use crate::interrupt;
use crate::link;
use crate::net;
use crate::observe::Shown;
use crate::progress;
use crate::report::Report;
use crate::security::{self, SecurityArgs, Side};

/// Arguments of `udt send`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Files and directories to send: a file arrives under its name (not its directories), a
    /// directory as a tree (permissions and modification times kept; symbolic links inside it
    /// are skipped).
    #[arg(required = true, value_name = "FILE|DIR")]
    pub files: Vec<PathBuf>,
    /// Where `udt recv` listens.
    #[arg(value_name = "HOST:PORT", value_parser = net::parse_target)]
    pub target: String,
    /// Send the file (or directory) under this name instead of its own (one argument only).
    #[arg(long = "as", value_name = "NAME")]
    pub rename: Option<OsString>,
    /// One JSON object per line on standard output: one per file, then a total.
    #[arg(long)]
    pub json: bool,
    /// Maximum segment size in bytes, IP and UDP headers included (UDT4 default 1500).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(76..=65535))]
    pub mss: Option<u32>,
    /// Congestion control, NAME[:key=value,...] (`udt cc list`; default udt). What the receiver
    /// reports (ACK interval, rates) follows the sending end's controller.
    #[arg(long, value_name = "NAME[:K=V,...]", value_parser = net::parse_cc)]
    pub cc: Option<net::CcArg>,
    /// Declare the peer gone after this many seconds without hearing from it (default 10).
    #[arg(long, value_name = "SECS", value_parser = crate::link::parse_peer_timeout)]
    pub peer_timeout: Option<std::time::Duration>,
    /// Cap the sending rate, in bits per second of UDT packets (UDT4 `UDT_MAXBW`): 10mbit,
    /// 500m, 1gbit, 10mbps (a bare number is bits per second). Default: no cap.
    #[arg(long, value_name = "RATE", value_parser = crate::units::parse_rate_cap)]
    pub rate: Option<u64>,
    #[command(flatten)]
    pub security: SecurityArgs,
}

/// Run `udt send`.
pub fn run(args: &Args, quiet: bool) -> Result<()> {
    let mut shown = Shown::new("send", args.json, progress::Mode::detect(quiet));
    let plan = Plan::collect(&args.files, args.rename.as_deref(), &mut shown);
    let announced = plan.files();
    if plan.entries().is_empty() {
        shown.report.total(announced, Duration::ZERO);
        bail!("nothing to send: {}", refusal_summary(&shown.report, announced));
    }
    let count = u32::try_from(plan.entries().len()).context("too many files")?;

    let security = security::resolve(&args.security, Side::Connects, "send")?;
    let mut options = link::with_peer_timeout(net::options(args.mss, args.cc.as_ref()), args.peer_timeout);
    options.config.max_bandwidth = args.rate.map(|bits| bits / 8);
    security.apply(&mut options);
    let stream = net::connect(&args.target, options)?;
    tracing::info!(peer = %args.target, files = count, "connected");
    let mut options = SendOptions::default();
    options.cancel = Cancel::from_fn(interrupt::requested);
    udt_transfer::send(stream, &plan, &options, &mut shown).map_err(|e| naming(e, &args.target))?;
    if !shown.report.failures().is_empty() {
        bail!("{}", refusal_summary(&shown.report, announced));
    }
    Ok(())
}

/// The session's error, naming the peer as the user gave it where it is about the peer.
fn naming(e: Error, target: &str) -> anyhow::Error {
    match e {
        Error::NotAReceiver(why) => anyhow!("the peer at {target} is not a `udt recv` ({why})"),
        Error::ReceiverVersion(v) => anyhow!(
            "the receiver at {target} speaks protocol version {v}, this sender version {VERSION}: \
             use the same version of udt at both ends"
        ),
        e => e.into(),
    }
}

/// `2 of 3 files failed: a, b`.
fn refusal_summary(report: &Report, announced: usize) -> String {
    let failed = report.failures();
    let plural = if announced == 1 { "" } else { "s" };
    format!("{} of {announced} file{plural} failed: {}", failed.len(), failed.join(", "))
}
