//! `udt recv [--listen ADDR:PORT] [--out DIR]`: receive files from `udt send`. `udt recv
//! [USER@]HOST:PATH... [DIR]` pulls: it starts the `udt send` there through ssh; `udt recv
//! --bootstrap` is the far end of a push ([`crate::remote`]).
//!
//! Every connection is greeted at once (so a sender knows it reached a `udt recv`); transfers
//! are served one at a time (or up to `--max-transfers` with `--keep-listening`), and a sender
//! that must wait is told so.
//!
//! What a sender may do to this host is the `udt-transfer` library's [`Receiver`]'s rules
//! (`--out`, `--force`, `--allow-dotfiles`, `--max-size`, `--partial-ttl`, `--idle-timeout` are
//! its options): plain names only, confinement below `--out` through directory descriptors,
//! dotfiles at the top only with consent, existing files kept unless forced, permissions masked
//! by the umask, bytes verified with BLAKE3 before they are moved into place.
//!
//! Modules: [`accept`] (the listener's thread and queue); this one parses the arguments, runs
//! the sessions and prints.

mod accept;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use udt::UdtStream;
use udt_transfer::{greet, Cancel, ReceiveOptions, Receiver, Ttl, Turn};

use crate::link;
use crate::observe::Shown;
use crate::progress;
use crate::remote::spec::{self, RemotePath};
use crate::remote::{far, ssh::Far, ssh::SshArgs};
use crate::security::{self, SecurityArgs, Side};
use crate::units;
use crate::{interrupt, net};
use accept::{accept_in_background, next_connection};

/// Arguments of `udt recv`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Address to listen on: ADDR:PORT, :PORT or PORT.
    #[arg(short, long, value_name = "ADDR:PORT", default_value = "9000", value_parser = net::parse_listen)]
    pub listen: SocketAddr,
    /// Files and directories to fetch from a host reached by ssh ([USER@]HOST:PATH, one host;
    /// a `udt send` is started there), then, optionally, the directory to write into (as
    /// --out). Without them, `udt recv` listens for a `udt send`.
    #[arg(value_name = "[USER@]HOST:PATH... [DIR]")]
    pub operands: Vec<String>,
    /// Directory the files are written into (default: the current one; created if missing).
    #[arg(short, long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Replace files that already exist in the output directory (a file the sender proves
    /// identical, same size and BLAKE3, is kept as it is without this).
    #[arg(short, long)]
    pub force: bool,
    /// Keep an existing file as new as the sender's or newer (modification time); replace an
    /// older one.
    #[arg(short, long, conflicts_with = "force")]
    pub update: bool,
    /// Keep every existing file, whatever the sender's.
    #[arg(long, conflicts_with_all = ["force", "update"])]
    pub ignore_existing: bool,
    /// Let a sender that asks (`udt send --delete`) delete, in each directory it sends, what
    /// its tree does not have (rsync's --delete): only below the output directory, never
    /// through a symbolic link, never what its --exclude matches; each path deleted is listed.
    /// Without it such a sender is refused. Pulling: ask the far sender for it.
    #[arg(long)]
    pub delete: bool,
    /// Pulling: cap the far sender's rate, in bits per second of UDT packets (10mbit, 500m,
    /// 1gbit; `udt send --rate`). Default: no cap.
    #[arg(long, value_name = "RATE", value_parser = crate::units::parse_rate_cap)]
    pub rate: Option<u64>,
    /// Pulling: leave out what matches PATTERN (repeatable): `*.o`, `.git`, `sub/*.tmp`,
    /// `/top/build`, `cache/` (directories only), as rsync reads them.
    #[arg(long, value_name = "PATTERN")]
    pub exclude: Vec<String>,
    /// Accept top-level names that begin with a dot (`.ssh`, `.bashrc`, `.config/...`), which
    /// are refused by default: in a home directory they configure programs. Names with dots
    /// inside a tree (`proj/.gitignore`) are always accepted.
    #[arg(long)]
    pub allow_dotfiles: bool,
    /// Resume an interrupted file only from a part younger than this (72h, 3d, 90m; 0: never
    /// resume). Older parts are removed when a transfer meets them, and at startup.
    #[arg(long, value_name = "DURATION", default_value = "3d", value_parser = parse_ttl)]
    pub partial_ttl: Ttl,
    /// Serve one transfer after another (one at a time) instead of exiting after the first.
    #[arg(short, long)]
    pub keep_listening: bool,
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
    /// I/O threads serving the port: each connection stays on one, and the connections of a
    /// striped transfer (`udt send -P N`) spread over them, so N threads can carry N streams
    /// where the cores are free. Default 1.
    #[arg(long, value_name = "N", default_value = "1", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub io_threads: u16,
    /// One JSON object per line on standard output: one per file, then a total per transfer.
    #[arg(long)]
    pub json: bool,
    /// Refuse any file larger than this (bytes, or 500M = 500 x 10^6, 2GiB = 2 x 2^30), before any of it is
    /// written. Files that would not fit the free space of --out are refused anyway.
    #[arg(long, value_name = "SIZE", value_parser = units::parse_size)]
    pub max_size: Option<u64>,
    /// With --keep-listening: transfers served at once; later senders wait their turn.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub max_transfers: u32,
    /// Drop a sender that sends nothing for this many seconds while the connection stays up
    /// (default 30).
    #[arg(long, value_name = "SECS", default_value = "30", value_parser = link::parse_peer_timeout)]
    pub idle_timeout: Duration,
    #[command(flatten)]
    pub security: SecurityArgs,
    #[command(flatten)]
    pub ssh: SshArgs,
}

/// A pull: `udt recv [USER@]HOST:PATH... [DIR]`.
#[derive(Debug)]
pub struct Pull {
    /// The host, as ssh and the UDT connection are given it.
    pub remote: RemotePath,
    /// The far paths.
    pub paths: Vec<String>,
    /// Where the files land.
    pub out: PathBuf,
}

/// The pull `args` ask for, if any, or the usage error in their operands.
pub fn pull(args: &Args) -> Result<Option<Pull>, String> {
    let Some((last, first)) = args.operands.split_last() else { return Ok(None) };
    let (sources, dir) = match spec::parse_remote(last) {
        Some(_) => (args.operands.as_slice(), None),
        None => (first, Some(PathBuf::from(last))),
    };
    let out = match (dir, &args.out) {
        (Some(_), Some(_)) => return Err("give the directory as DIR or as --out, not both".into()),
        (Some(dir), None) => dir,
        (None, out) => out.clone().unwrap_or_else(|| PathBuf::from(".")),
    };
    let mut remote: Option<RemotePath> = None;
    let mut paths = Vec::new();
    for operand in sources {
        let Some(r) = spec::parse_remote(operand) else {
            return Err(format!(
                "`{operand}` is not [USER@]HOST:PATH (only the last operand may be the local directory)"
            ));
        };
        if r.path.is_empty() {
            return Err(format!("`{operand}` names no path on {}", r.host));
        }
        if remote.as_ref().is_some_and(|first| first.destination != r.destination) {
            return Err("every HOST:PATH of one `udt recv` names the same host".into());
        }
        paths.push(r.path.clone());
        remote.get_or_insert(r);
    }
    match remote {
        Some(remote) => Ok(Some(Pull { remote, paths, out })),
        None => Err("give [USER@]HOST:PATH to fetch before the directory".into()),
    }
}

/// The usage error in `args`, if any (exit 2).
pub fn check_usage(args: &Args) -> Result<(), String> {
    if (!args.exclude.is_empty() || args.rate.is_some()) && listens(args) {
        return Err(
            "--exclude and --rate are the sender's choice: give them to `udt send` (or pull with HOST:PATH)"
                .into(),
        );
    }
    pull(args).map(drop)
}

/// Whether `args` listen for a `udt send` the user starts (and show or take its credential).
pub fn listens(args: &Args) -> bool {
    !args.ssh.bootstrap && args.operands.is_empty()
}

/// The receiver for `out`, created if missing (as scp and rsync do), with `args`' rules.
fn receiver(args: &Args, out: &Path, quiet: bool) -> Result<Receiver> {
    let mut options = ReceiveOptions::default();
    options.force = args.force;
    options.update = args.update;
    options.ignore_existing = args.ignore_existing;
    options.allow_dotfiles = args.allow_dotfiles;
    options.max_size = args.max_size;
    options.partial_ttl = args.partial_ttl;
    options.idle_timeout = Some(args.idle_timeout);
    options.delete = args.delete;
    options.cancel = Cancel::from_fn(interrupt::requested);
    std::fs::create_dir_all(out).with_context(|| format!("cannot create the directory {}", out.display()))?;
    // First, before any thread of ours that creates files starts (it reads the umask).
    let receiver = Receiver::new(out, options)?;
    let swept = receiver.sweep();
    if swept.removed > 0 && !quiet {
        eprintln!(
            "udt recv: removed {} expired partial file{} (older than --partial-ttl)",
            swept.removed,
            if swept.removed == 1 { "" } else { "s" }
        );
    }
    if swept.cut_short {
        tracing::info!(seen = swept.seen, "the startup sweep of partial files stopped at its bound");
    }
    Ok(receiver)
}

/// `udt recv --bootstrap`: the far end of `udt send PATH... HOST:DIR`.
fn run_far(args: &Args, quiet: bool) -> Result<()> {
    let key = far::read_key()?;
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("."));
    let receiver = receiver(args, &out, quiet)?;
    let mut options = link::with_peer_timeout(net::options(args.mss, args.cc.as_ref()), args.peer_timeout);
    options.security = Some(key);
    let listener = far::listen(args.ssh.port_range, options)?;
    far::announce(&listener)?;
    let (stream, peer) = far::accept_one(listener)?;
    greet(&stream, Turn::Now)?;
    serve(&receiver, stream, args.json, progress::Mode::detect(quiet))
        .with_context(|| format!("transfer from {peer}"))
}

/// `udt recv HOST:PATH... [DIR]`: start `udt send` there through ssh and receive from it.
fn run_pull(args: &Args, pull: Pull, quiet: bool) -> Result<()> {
    let receiver = receiver(args, &pull.out, quiet)?;
    let mut far_args = crate::send::shared_far_args(args.mss, args.peer_timeout);
    if let Some(cc) = &args.cc {
        far_args.push(format!("--cc {}", spec::quote(&cc.spec)));
    }
    if let Some(bits) = args.rate {
        far_args.push(format!("--rate {bits}"));
    }
    if args.delete {
        far_args.push("--delete".into());
    }
    for pattern in &args.exclude {
        far_args.push(format!("--exclude {}", spec::quote(pattern)));
    }
    far_args.push("--".into());
    far_args.extend(pull.paths.iter().map(|p| spec::quote_path(p)));
    let remote = &pull.remote;
    let mut far = Far::start(&args.ssh, &remote.destination, &remote.host, "send", &far_args, "recv")?;
    let options = link::with_peer_timeout(net::options(args.mss, args.cc.as_ref()), args.peer_timeout);
    let stream = match far.connect(options) {
        Ok(stream) => stream,
        Err(e) => {
            far.finish(false)?;
            return Err(e);
        }
    };
    let result = greet(&stream, Turn::Now)
        .map_err(anyhow::Error::from)
        .and_then(|()| serve(&receiver, stream, args.json, progress::Mode::detect(quiet)));
    far.finish(result.is_ok())?;
    result.with_context(|| format!("transfer from {}", remote.host))
}

/// Run `udt recv`.
pub fn run(args: &Args, quiet: bool) -> Result<()> {
    if args.ssh.bootstrap {
        return run_far(args, quiet);
    }
    if let Some(pull) = pull(args).map_err(|e| anyhow::anyhow!(e))? {
        return run_pull(args, pull, quiet);
    }
    let receiver = receiver(args, args.out.as_deref().unwrap_or(Path::new(".")), quiet)?;
    let mode = progress::Mode::detect(quiet);

    let security = security::resolve(&args.security, Side::Listens, "recv")?;
    if args.keep_listening && security.is_code() {
        bail!(
            "a code phrase serves one transfer; --keep-listening takes many: give both ends a shared \
             --key-file FILE (or --insecure on a trusted network)"
        );
    }
    let mut options = link::with_peer_timeout(net::options(args.mss, args.cc.as_ref()), args.peer_timeout);
    options.io_threads = usize::from(args.io_threads);
    security.apply(&mut options);
    let listener = net::listen(args.listen, options)?;
    let local = listener.local_addr().context("reading the bound address")?;
    if !quiet {
        eprintln!("udt recv: listening on {local}, writing into {}", receiver.out().display());
    }
    security::show_code(&security, "recv", &format!("udt send FILE... HOST:{}", local.port()), args.json);
    let max = if args.keep_listening { args.max_transfers as usize } else { 1 };
    // Several files' bars at once would overwrite each other: lines instead.
    let mode = if max > 1 && mode == progress::Mode::Bar { progress::Mode::Lines } else { mode };
    let queue =
        accept_in_background(listener, (args.keep_listening, max), security.is_code(), receiver.members())?;
    if !args.keep_listening {
        // A peer that turns out not to be a `udt send` (a stray connection, a secured sender at
        // a receiver run with --insecure) is refused, and the next one served.
        loop {
            let (stream, peer) = next_connection(&queue, None)?;
            tracing::info!(%peer, "serving a connection");
            match serve(&receiver, stream, args.json, mode) {
                Err(e) if is_not_a_sender(&e) => {
                    eprintln!("udt recv: refused a connection from {peer}: {e:#}; still listening");
                    queue.pending.fetch_sub(1, Ordering::SeqCst);
                }
                result => return result.with_context(|| format!("transfer from {peer}")),
            }
        }
    }
    // Up to `max` transfers at once, each on a thread of its own; a Ctrl-C ends them all.
    std::thread::scope(|scope| -> Result<()> {
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let mut running = 0usize;
        loop {
            while running >= max {
                match done_rx.recv_timeout(link::POLL) {
                    Ok(()) => running -= 1,
                    Err(_) if interrupt::requested() => return Err(interrupt::error().into()),
                    Err(_) => {}
                }
            }
            let (stream, peer) = next_connection(&queue, Some((&done_rx, &mut running)))?;
            tracing::info!(%peer, "serving a connection");
            running += 1;
            let (done_tx, pending, receiver) = (done_tx.clone(), Arc::clone(&queue.pending), &receiver);
            std::thread::Builder::new().name(format!("recv {peer}")).spawn_scoped(scope, move || {
                if let Err(e) = serve(receiver, stream, args.json, mode) {
                    if !interrupt::requested() {
                        eprintln!("udt recv: transfer from {peer} failed: {e:#}");
                    }
                }
                pending.fetch_sub(1, Ordering::SeqCst);
                let _ = done_tx.send(());
            })?;
        }
    })
}

/// Whether a session failed because its peer is not a `udt send` at all, or asked for what
/// this receiver does not allow (`--delete`).
fn is_not_a_sender(e: &anyhow::Error) -> bool {
    matches!(
        e.downcast_ref::<udt_transfer::Error>(),
        Some(udt_transfer::Error::NotASender(_) | udt_transfer::Error::DeleteNotAllowed)
    )
}

/// Serve one connection, showing its events; a session in which files failed is an error.
fn serve(receiver: &Receiver, stream: UdtStream, json: bool, mode: progress::Mode) -> Result<()> {
    let mut shown = Shown::new("recv", json, mode);
    let report = receiver.serve(stream, &mut shown)?;
    let failed = shown.report.failures();
    if !failed.is_empty() {
        bail!("{} of {} files failed: {}", failed.len(), report.files, failed.join(", "));
    }
    Ok(())
}

/// Parse `--partial-ttl`: a time in the shared grammar (`90m`, `72h`, `3d`, `1.5h`; a bare
/// number is seconds), or `0` for never.
pub fn parse_ttl(s: &str) -> Result<Ttl, String> {
    let ttl = udt_units::parse_duration(s, Some(udt_units::TimeUnit::Secs))
        .map_err(|e| format!("{e} (such as 72h, 3d, 90m, or 0)"))?;
    Ok(Ttl((!ttl.is_zero()).then_some(ttl)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_durations() {
        assert_eq!(parse_ttl("72h"), Ok(Ttl(Some(Duration::from_secs(72 * 3600)))));
        assert_eq!(parse_ttl("3d"), parse_ttl("72h"));
        assert_eq!(parse_ttl("90m"), Ok(Ttl(Some(Duration::from_secs(5400)))));
        assert_eq!(parse_ttl("45"), Ok(Ttl(Some(Duration::from_secs(45)))));
        assert_eq!(parse_ttl("0"), Ok(Ttl(None)));
        assert_eq!(parse_ttl("0d"), Ok(Ttl(None)));
        assert_eq!(parse_ttl("1.5h"), parse_ttl("90m"));
        for bad in ["", "h", "3w", "-1d", "99999999999999999999d"] {
            assert!(parse_ttl(bad).is_err(), "{bad}");
        }
    }
}
