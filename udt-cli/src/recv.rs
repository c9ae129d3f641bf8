//! `udt recv [--listen ADDR:PORT] [--out DIR]`: receive files from `udt send`.
//!
//! Every connection is greeted at once (so a sender knows it reached a `udt recv`); transfers
//! are served one at a time (or up to `--max-transfers` with `--keep-listening`), and a sender
//! that must wait is told so.
//!
//! What a sender may do to this host, in order of the checks: a path must be made of plain
//! names ([`crate::protocol::check_path`]); a top-level name that begins with a dot needs
//! `--allow-dotfiles` ([`consent`]); everything is written below `--out` through directory
//! descriptors, never following a symbolic link ([`crate::landing`]); an existing file is
//! refused unless `--force`; the bytes go to a private temporary file, hashed as they arrive,
//! and only a file whose BLAKE3 hash matches the sender's is moved into place. Permissions are
//! the sender's at most, masked by this host's umask, never group- or other-writable, and only
//! on what this session created.
//!
//! Modules: [`accept`] (the listener's thread and queue), [`claims`] (names being received
//! now), [`consent`] (the dotfile rule), [`session`] (one connection's exchange), [`prepare`]
//! (accepting an entry), [`data`] (a file's bytes and its commit).

mod accept;
mod claims;
mod consent;
mod data;
mod prepare;
mod session;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::landing::{self, mode, Root, Ttl};
use crate::link;
use crate::progress;
use crate::security::{self, SecurityArgs, Side};
use crate::units;
use crate::{interrupt, net};
use accept::{accept_in_background, next_connection};
use claims::Claims;
use session::{serve, Ctx};

/// Arguments of `udt recv`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Address to listen on: ADDR:PORT, :PORT or PORT.
    #[arg(short, long, value_name = "ADDR:PORT", default_value = "9000", value_parser = net::parse_listen)]
    pub listen: SocketAddr,
    /// Directory the files are written into (must exist).
    #[arg(short, long, value_name = "DIR", default_value = ".")]
    pub out: PathBuf,
    /// Replace files that already exist in the output directory.
    #[arg(short, long)]
    pub force: bool,
    /// Accept top-level names that begin with a dot (`.ssh`, `.bashrc`, `.config/...`), which
    /// are refused by default: in a home directory they configure programs. Names with dots
    /// inside a tree (`proj/.gitignore`) are always accepted.
    #[arg(long)]
    pub allow_dotfiles: bool,
    /// Resume an interrupted file only from a part younger than this (72h, 3d, 90m; 0: never
    /// resume). Older parts are removed when a transfer meets them, and at startup.
    #[arg(long, value_name = "DURATION", default_value = "3d", value_parser = landing::parse_ttl)]
    pub partial_ttl: Ttl,
    /// Serve one transfer after another (one at a time) instead of exiting after the first.
    #[arg(short, long)]
    pub keep_listening: bool,
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
    /// One JSON object per line on standard output: one per file, then a total per transfer.
    #[arg(long)]
    pub json: bool,
    /// Refuse any file larger than this (bytes, or 500M, 2G, 10GB), before any of it is
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
}

/// Run `udt recv`.
pub fn run(args: &Args, quiet: bool) -> Result<()> {
    // First, before any thread of ours that creates files starts.
    let umask = mode::read_umask();
    let root = Root::open(&args.out, umask, args.partial_ttl)?;
    let swept = landing::sweep(&root);
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
    let mode = progress::Mode::detect(quiet);

    let security = security::resolve(&args.security, Side::Listens, "recv")?;
    if args.keep_listening && security.is_code() {
        bail!(
            "a code phrase serves one transfer; --keep-listening takes many: give both ends a shared \
             --key-file FILE (or --insecure on a trusted network)"
        );
    }
    let mut options = link::with_peer_timeout(net::options(args.mss, args.cc.as_ref()), args.peer_timeout);
    security.apply(&mut options);
    let listener = net::listen(args.listen, options)?;
    let local = listener.local_addr().context("reading the bound address")?;
    if !quiet {
        eprintln!("udt recv: listening on {local}, writing into {}", root.shown().display());
    }
    security::show_code(&security, "recv", &format!("udt send FILE... HOST:{}", local.port()));
    let max = if args.keep_listening { args.max_transfers as usize } else { 1 };
    // Several files' bars at once would overwrite each other: lines instead.
    let mode = if max > 1 && mode == progress::Mode::Bar { progress::Mode::Lines } else { mode };
    let queue = accept_in_background(listener, args.keep_listening, max, security.is_code())?;
    let claims = Claims::default();
    let ctx = Ctx {
        root: &root,
        claims: &claims,
        force: args.force,
        max_size: args.max_size,
        allow_dotfiles: args.allow_dotfiles,
    };
    if !args.keep_listening {
        let (stream, peer) = next_connection(&queue, None)?;
        tracing::info!(%peer, "serving a connection");
        return serve(stream, &ctx, args, mode).with_context(|| format!("transfer from {peer}"));
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
            let (done_tx, pending, ctx) = (done_tx.clone(), Arc::clone(&queue.pending), &ctx);
            std::thread::Builder::new().name(format!("recv {peer}")).spawn_scoped(scope, move || {
                if let Err(e) = serve(stream, ctx, args, mode) {
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
