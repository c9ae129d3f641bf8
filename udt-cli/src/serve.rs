//! `udt serve --protocol tsunami|rbudp|fobs PATH`: the sending end of the seed papers'
//! protocols. They pull: the end that holds the data listens, the other connects and asks for
//! a file by name (the reference `tsunamid` and RBUDP `sendfile` work so), which is why they
//! have `serve`/`fetch` rather than `send`/`recv` (see docs/protocols.md).
//!
//! Serves PATH (one file, by its name, or a directory, any regular file under it) and nothing
//! else ([`udt_bulk::confine`]); one connection, or one after another with --keep-listening.
//! None of the three protocols encrypts, so serving needs --insecure; Tsunami also needs its
//! shared secret.

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;

use crate::bulk::{self, Protocol, Tuning};
use crate::progress::Mode;
use crate::protocol::display_name;
use crate::report::Report;
use crate::{interrupt, net};

/// `udt serve` arguments.
#[derive(Parser, Debug)]
pub struct Args {
    /// The protocol spoken: tsunami (Tsunami UDP 1.1), rbudp (QUANTA RBUDP 1.0) or fobs.
    #[arg(long, value_enum)]
    pub protocol: Protocol,
    /// What to serve: one file (fetched by its name) or a directory (any regular file under it).
    #[arg(value_name = "FILE|DIR")]
    pub path: PathBuf,
    /// Where to listen for the control connection [default: the protocol's own port on all
    /// addresses: tsunami 46224, rbudp 38000, fobs 38100].
    #[arg(short, long, value_name = "ADDR:PORT", value_parser = net::parse_listen)]
    pub listen: Option<SocketAddr>,
    /// Serve one fetch after another instead of exiting after the first.
    #[arg(short, long)]
    pub keep_listening: bool,
    /// One JSON object per line on standard output: one per file served.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub tuning: Tuning,
}

/// Run `udt serve`.
pub fn run(args: &Args, quiet: bool) -> Result<()> {
    let params = bulk::params(args.protocol, &args.tuning, bulk::Side::Serves)?;
    std::fs::metadata(&args.path).with_context(|| format!("cannot serve {}", args.path.display()))?;
    let listen =
        args.listen.unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], args.protocol.default_port())));
    let listener = TcpListener::bind(listen).with_context(|| format!("cannot listen on {listen}"))?;
    let mode = Mode::detect(quiet);
    if mode != Mode::Quiet {
        let local = listener.local_addr()?;
        eprintln!(
            "udt serve: listening on {local}, serving {} over {} (udt fetch --protocol {} HOST:{} NAME)",
            args.path.display(),
            args.protocol.title(),
            args.protocol.name(),
            local.port()
        );
    }
    let mut report = Report::new("serve", args.json);
    let stop = interrupt::register()?;
    wake_on_interrupt(&listener)?;
    loop {
        let outcome =
            bulk::serve(args.protocol, &listener, &args.path, &params, &stop, args.tuning.idle_timeout, mode);
        match outcome {
            Ok(served) => {
                let shown = display_name(&served.name);
                report.unverified(&served.name, &shown, served.bytes, served.took, None);
            }
            Err(e) if interrupt::requested() => return Err(e),
            Err(e) if args.keep_listening => eprintln!("udt serve: {e:#}"),
            Err(e) => return Err(e),
        }
        if !args.keep_listening {
            break;
        }
    }
    Ok(())
}

/// The protocols' sessions wait for their control connection in a blocking `accept`: on Ctrl-C
/// a thread connects to the listener itself, so that the wait ends at once (the session then
/// fails on that empty connection and the command exits as interrupted).
fn wake_on_interrupt(listener: &TcpListener) -> Result<()> {
    let mut addr = listener.local_addr()?;
    if addr.ip().is_unspecified() {
        addr.set_ip(match addr {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    std::thread::Builder::new().name("serve-wake".into()).spawn(move || {
        while !interrupt::requested() {
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1));
    })?;
    Ok(())
}
