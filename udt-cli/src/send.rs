//! `udt send FILE... HOST:PORT`: send files to a `udt recv`, each verified end to end with
//! BLAKE3 (the protocol is the `udt-transfer` library's, described in its `PROTOCOL.md`).
//! `udt send FILE... [USER@]HOST:[DIR]` starts that `udt recv` through ssh first, and
//! `udt send --bootstrap` is the far end of a pull ([`crate::remote`]).
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
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use rand_core::{OsRng, RngCore};
use udt_transfer::protocol::{TOKEN_LEN, VERSION};
use udt_transfer::{Cancel, Error, Exclude, Plan, SendOptions, Striping};

use crate::interrupt;
use crate::link;
use crate::net;
use crate::observe::Shown;
use crate::progress;
use crate::remote::spec::{self, SendTarget};
use crate::remote::{far, ssh::Far, ssh::SshArgs};
use crate::report::Report;
use crate::security::{self, Security, SecurityArgs, Side};

/// Arguments of `udt send`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Files and directories to send, then where to: HOST:PORT, a `udt recv` listening there,
    /// or [USER@]HOST:[DIR], a host reached by ssh (a `udt recv` is started there; `host:` is
    /// the far home directory; a directory named by digits alone is `host:./9000`). A file
    /// arrives under its name (not its directories), a directory as a tree (permissions and
    /// modification times kept; symbolic links inside it are skipped).
    #[arg(required = true, value_name = "FILE|DIR... TARGET")]
    pub operands: Vec<PathBuf>,
    /// Send the file (or directory) under this name instead of its own (one argument only).
    #[arg(long = "as", value_name = "NAME")]
    pub rename: Option<OsString>,
    /// One JSON object per line on standard output: one per file, then a total.
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
    /// Cap the sending rate, in bits per second of UDT packets (UDT4 `UDT_MAXBW`): 10mbit,
    /// 500m, 1gbit, 10mbps (a bare number is bits per second). Default: no cap.
    #[arg(long, value_name = "RATE", value_parser = crate::units::parse_rate_cap)]
    pub rate: Option<u64>,
    /// Leave out what matches PATTERN (repeatable): `*.o`, `.git`, `sub/*.tmp`, `/top/build`,
    /// `cache/` (directories only), as rsync reads them.
    #[arg(long, value_name = "PATTERN")]
    pub exclude: Vec<String>,
    /// To a host reached by ssh: replace files that exist there (see `udt recv --force`).
    #[arg(short, long)]
    pub force: bool,
    /// To a host reached by ssh: keep files there as new as ours or newer, replace older ones.
    #[arg(short, long, conflicts_with = "force")]
    pub update: bool,
    /// To a host reached by ssh: keep every file that exists there.
    #[arg(long, conflicts_with_all = ["force", "update"])]
    pub ignore_existing: bool,
    /// Parallel streams: stripe the transfer over N UDT connections (1 to 16), each from a
    /// port and I/O thread of its own; files of 4 MiB or more go in 1 MiB ranges over all of
    /// them, smaller ones whole on the first; the receiver reassembles and verifies each file as
    /// one (BLAKE3). Default 1, the single-connection protocol: more streams help where one
    /// connection's I/O thread is the limit and cores are free at both ends, not on a 2-core
    /// machine. The `udt recv` must take them (one of this version); HOST:PORT targets only.
    #[arg(short = 'P', long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=16))]
    pub parallel: u16,
    /// Delete, in each directory sent, what this side's tree does not have (rsync's --delete):
    /// only below the target directory, never through a symbolic link, keeping what --exclude
    /// matches; each path deleted is listed. A `udt recv` must allow it (`udt recv --delete`;
    /// sending to [USER@]HOST:DIR starts it so). Not done when something here could not be read.
    #[arg(long)]
    pub delete: bool,
    #[command(flatten)]
    pub security: SecurityArgs,
    #[command(flatten)]
    pub ssh: SshArgs,
}

impl Args {
    /// The files and directories to send (every operand but the target).
    pub fn files(&self) -> &[PathBuf] {
        match self.operands.split_last() {
            Some((_, files)) if !self.ssh.bootstrap => files,
            _ => &self.operands,
        }
    }

    /// Where to send, or why the operands name nowhere (a usage error).
    pub fn target(&self) -> Result<SendTarget, String> {
        match self.operands.as_slice() {
            [] | [_] => {
                Err("give the files and directories to send, then where to: HOST:PORT or [USER@]HOST:[DIR]"
                    .into())
            }
            [.., last] => {
                let text = last.to_str().ok_or_else(|| format!("`{}` is not a target", last.display()))?;
                spec::parse_send_target(text)
            }
        }
    }
}

/// The usage error in `args`, if any (exit 2).
pub fn check_usage(args: &Args) -> Result<(), String> {
    if !args.ssh.bootstrap {
        args.target()?;
    }
    if (args.force || args.update || args.ignore_existing) && connects_directly(args) {
        return Err("--force, --update and --ignore-existing are the receiver's choice: give them to \
                    `udt recv` (or send to [USER@]HOST:DIR, which starts it)"
            .into());
    }
    if args.parallel > 1 && !connects_directly(args) {
        return Err("-P N stripes a transfer to a listening `udt recv`: give HOST:PORT as the target".into());
    }
    if args.rename.is_some() && args.files().len() != 1 {
        return Err("--as NAME renames one file; give exactly one FILE with it".into());
    }
    Ok(())
}

/// Whether `args` connect to a listening `udt recv` (and need its credential).
pub fn connects_directly(args: &Args) -> bool {
    !args.ssh.bootstrap && matches!(args.target(), Ok(SendTarget::Udt(_)))
}

/// Run `udt send`.
pub fn run(args: &Args, quiet: bool) -> Result<()> {
    let mut shown = Shown::new("send", args.json, progress::Mode::detect(quiet));
    let exclude = Exclude::new(&args.exclude);
    let plan = Plan::collect_excluding(args.files(), args.rename.as_deref(), &exclude, &mut shown);
    let announced = plan.files();
    if plan.entries().is_empty() {
        shown.report.total(announced, Duration::ZERO);
        bail!("nothing to send: {}", refusal_summary(&shown.report, announced));
    }
    let count = u32::try_from(plan.entries().len()).context("too many files")?;
    let mut options = link::with_peer_timeout(net::options(args.mss, args.cc.as_ref()), args.peer_timeout);
    options.config.max_bandwidth = args.rate.map(|bits| bits / 8);
    if args.ssh.bootstrap {
        options.security = Some(far::read_key()?);
        let listener = far::listen(args.ssh.port_range, options)?;
        far::announce(&listener)?;
        let (stream, peer) = far::accept_one(listener)?;
        return transfer(stream, &plan, &mut shown, &peer.to_string(), send_options(args, &plan));
    }
    match args.target().map_err(|e| anyhow!(e))? {
        SendTarget::Udt(target) => {
            let security = security::resolve(&args.security, Side::Connects, "send")?;
            security.apply(&mut options);
            let stream = net::connect(&target, options.clone())?;
            tracing::info!(peer = %target, files = count, "connected");
            let mut send_options = send_options(args, &plan);
            if args.parallel > 1 {
                send_options.striping = Some(striping(&target, &options, args.parallel)?);
            }
            transfer(stream, &plan, &mut shown, &target, send_options).map_err(|e| match security {
                // A `udt recv` that wants a credential closes a plain connection at once: the
                // sender sees the close where it is, waiting for the greeting or already
                // announcing the first entry.
                Security::Plain
                    if ["without a greeting", "the peer closed the connection"]
                        .iter()
                        .any(|close| format!("{e:#}").contains(close)) =>
                {
                    e.context(
                        "a `udt recv` that wants a code phrase or key closes a plain connection: run \
                         `udt send` without --insecure, with the --code it shows (or its --key-file)",
                    )
                }
                _ => e,
            })
        }
        SendTarget::Ssh(remote) => {
            let mut far_args = vec!["--out".to_string(), spec::quote_path(&remote.path)];
            far_args.extend(shared_far_args(args.mss, args.peer_timeout));
            for (given, flag) in [
                (args.force, "--force"),
                (args.update, "--update"),
                (args.ignore_existing, "--ignore-existing"),
                (args.delete, "--delete"),
            ] {
                if given {
                    far_args.push(flag.into());
                }
            }
            let mut far =
                Far::start(&args.ssh, &remote.destination, &remote.host, "recv", &far_args, "send")?;
            let stream = match far.connect(options) {
                Ok(stream) => stream,
                Err(e) => {
                    far.finish(false)?;
                    return Err(e);
                }
            };
            tracing::info!(peer = %remote.host, files = count, "connected");
            let result = transfer(stream, &plan, &mut shown, &remote.host, send_options(args, &plan));
            far.finish(result.is_ok())?;
            result
        }
    }
}

/// Striping over `connections` connections to `target` (`-P`): a fresh random token, and
/// each further connection from a UDP port and I/O thread of its own
/// (`Options::own_client_port`).
fn striping(target: &str, options: &udt::Options, connections: u16) -> Result<Striping> {
    let mut token = [0u8; TOKEN_LEN];
    OsRng.try_fill_bytes(&mut token).map_err(|e| anyhow!("cannot draw a random token: {e}"))?;
    let (target, options) = (target.to_string(), options.clone());
    let options = udt::Options { own_client_port: true, ..options };
    let connect = Arc::new(move || {
        net::connect(&target, options.clone()).map_err(|e| io::Error::other(format!("{e:#}")))
    });
    Ok(Striping { token, connections, connect })
}

/// The far end's options both directions share: `--mss`, `--peer-timeout`.
pub fn shared_far_args(mss: Option<u32>, peer_timeout: Option<Duration>) -> Vec<String> {
    let mut words = Vec::new();
    if let Some(mss) = mss {
        words.push(format!("--mss {mss}"));
    }
    if let Some(t) = peer_timeout {
        words.push(format!("--peer-timeout {}ms", t.as_millis().max(1)));
    }
    words
}

/// How to send `plan`: stopped by Ctrl-C; with `--delete`, the request (unless something
/// could not be read here: the receiver would delete its copy of it, so nothing is deleted,
/// as rsync does after an I/O error).
fn send_options(args: &Args, plan: &Plan) -> SendOptions {
    let mut options = SendOptions::default();
    options.cancel = Cancel::from_fn(interrupt::requested);
    if args.delete && plan.failed().is_empty() {
        options.delete = Some(args.exclude.clone());
    } else if args.delete {
        eprintln!(
            "udt send: --delete not done: {} could not be sent from here, and the receiver would \
             delete its copy",
            plan.failed().join(", ")
        );
    }
    options
}

/// Send `plan` on `stream` (connected to `peer`, as the user named it), showing it on `shown`.
fn transfer(
    stream: udt::UdtStream,
    plan: &Plan,
    shown: &mut Shown,
    peer: &str,
    options: SendOptions,
) -> Result<()> {
    udt_transfer::send(stream, plan, &options, shown).map_err(|e| naming(e, peer))?;
    if !shown.report.failures().is_empty() {
        bail!("{}", refusal_summary(&shown.report, plan.files()));
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
