//! `udt cat HOST:PORT` / `udt cat --listen ADDR:PORT`: netcat for UDT. Standard input goes out
//! as a raw UDT stream and the peer's stream comes out on standard output, with no framing of
//! ours, so it talks to any UDT4 stream peer and composes with pipes
//! (`tar c dir | udt cat host:9000`, `udt cat --listen :9000 | tar x`).
//!
//! UDT has no half-close (no way to say "I am done sending, keep talking to me"), so the end of
//! a session is decided locally:
//! - When standard input ends, we wait until the peer has acknowledged everything we sent
//!   (`flush_acknowledged`), then keep copying the peer's data to standard output until the
//!   peer closes, or until nothing has arrived for the idle timeout; then we close.
//! - The idle timeout is `--idle-timeout SECS` if given (0: close as soon as everything is
//!   acknowledged). Without it, a side that sent data waits 1 s of silence (enough to collect
//!   a prompt reply), and a side that sent nothing (a pure receiver, like
//!   `udt cat --listen :9000 > file < /dev/null`) waits for the peer to close, however long.
//! - When the peer closes, we finish writing what it sent and exit. If some of our input was
//!   then still unacknowledged, that data was lost: we say so and exit 1.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use udt::UdtStream;

use crate::net;

/// Size of a standard-input read.
const STDIN_CHUNK: usize = 256 * 1024;
/// Size of a stream read.
const STREAM_CHUNK: usize = 1 << 20;
/// How often blocked reads of the stream look up to check whether to stop.
const POLL: Duration = Duration::from_millis(100);
/// Default idle timeout after our input ended, when we sent data.
const DEFAULT_IDLE_AFTER_SENDING: Duration = Duration::from_secs(1);

/// Arguments of `udt cat`.
#[derive(clap::Args, Debug)]
#[command(group = clap::ArgGroup::new("peer").required(true).args(["target", "listen"]))]
pub struct Args {
    /// The peer to connect to.
    #[arg(value_name = "HOST:PORT", value_parser = net::parse_target)]
    pub target: Option<String>,
    /// Accept one connection on ADDR:PORT (or :PORT, PORT) instead of connecting.
    #[arg(short, long, value_name = "ADDR:PORT", value_parser = net::parse_listen)]
    pub listen: Option<SocketAddr>,
    /// After standard input ends, close once the peer has been silent this many seconds
    /// (0: at once). Default: 1 if we sent anything, else wait for the peer to close.
    #[arg(short = 'i', long, value_name = "SECS", value_parser = parse_secs)]
    pub idle_timeout: Option<Duration>,
    /// Maximum segment size in bytes, IP and UDP headers included (UDT4 default 1500).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(76..=65535))]
    pub mss: Option<u32>,
    /// Congestion control, NAME[:key=value,...] (`udt cc list`; default udt). TCP-like ones
    /// (newreno, cubic, ...) should run at both ends: the receiver's sets the ACK interval.
    #[arg(long, value_name = "NAME[:K=V,...]", value_parser = net::parse_cc)]
    pub cc: Option<net::CcArg>,
}

/// Parse non-negative seconds, fractions allowed.
fn parse_secs(s: &str) -> Result<Duration, String> {
    let secs: f64 = s.parse().map_err(|_| format!("`{s}` is not a number of seconds"))?;
    Duration::try_from_secs_f64(secs).map_err(|_| format!("`{s}` is not a valid number of seconds"))
}

/// What the copying threads tell the main thread.
enum Event {
    /// Standard input ended and everything sent was acknowledged; `sent` bytes in all.
    InputDone { sent: u64 },
    /// Reading standard input or sending failed.
    InputFailed(anyhow::Error),
    /// The peer closed and all it sent was written out.
    PeerClosed,
    /// Receiving or writing standard output failed.
    OutputFailed(anyhow::Error),
}

/// Run `udt cat`.
pub fn run(args: &Args, quiet: bool) -> Result<()> {
    let mut options = net::options(args.mss, args.cc.as_ref());
    options.read_timeout = Some(POLL);
    let stream = match (&args.target, args.listen) {
        (Some(target), _) => net::connect(target, options)?,
        (None, Some(addr)) => {
            let listener = net::listen(addr, options)?;
            if !quiet {
                let local = listener.local_addr().context("reading the bound address")?;
                eprintln!("udt cat: listening on {local}");
            }
            let (stream, peer) = listener.accept().context("waiting for a connection")?;
            tracing::info!(%peer, "connection");
            // Dropping the listener stops accepting; the connection keeps the port.
            stream
        }
        (None, None) => bail!("give HOST:PORT or --listen ADDR:PORT"),
    };
    let stream = Arc::new(stream);
    let stop = Arc::new(AtomicBool::new(false));
    let last_received = Arc::new(Mutex::new(Instant::now()));
    // Bytes read from standard input but not yet handed to the stream.
    let holding = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();

    let input = {
        let (stream, tx, holding) = (Arc::clone(&stream), tx.clone(), Arc::clone(&holding));
        thread::Builder::new().name("stdin".into()).spawn(move || {
            let event = match copy_input(&stream, &holding) {
                Ok(sent) => Event::InputDone { sent },
                Err(e) => Event::InputFailed(e),
            };
            let _ = tx.send(event);
        })?
    };
    let output = {
        let (stream, stop, last) = (Arc::clone(&stream), Arc::clone(&stop), Arc::clone(&last_received));
        thread::Builder::new().name("stdout".into()).spawn(move || {
            let event = match copy_output(&stream, &stop, &last) {
                Ok(()) => Event::PeerClosed,
                Err(e) => Event::OutputFailed(e),
            };
            let _ = tx.send(event);
        })?
    };

    let mut input_done: Option<(Instant, Duration)> = None; // (when, idle timeout)
    let peer_closed = loop {
        match rx.recv_timeout(POLL) {
            Ok(Event::InputDone { sent }) => {
                let idle = args.idle_timeout.or((sent > 0).then_some(DEFAULT_IDLE_AFTER_SENDING));
                tracing::debug!(sent, ?idle, "standard input done, all acknowledged");
                input_done = idle.map(|idle| (Instant::now(), idle));
                if input_done.is_none() {
                    tracing::debug!("waiting for the peer to close");
                }
            }
            Ok(Event::PeerClosed) => break true,
            Ok(Event::InputFailed(e)) | Ok(Event::OutputFailed(e)) => return Err(e),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => bail!("internal error: copying threads vanished"),
        }
        if let Some((since, idle)) = input_done {
            let last = *last_received.lock().unwrap_or_else(|e| e.into_inner());
            if Instant::now().duration_since(since.max(last)) >= idle {
                tracing::debug!("idle timeout: closing");
                break false;
            }
        }
    };

    if peer_closed {
        // Input the peer never acknowledged is lost: say so.
        if holding.load(Ordering::SeqCst) || stream.flush_acknowledged().is_err() {
            bail!("the peer closed the connection before all of standard input was delivered");
        }
        let _ = output.join();
        return Ok(());
    }
    stop.store(true, Ordering::SeqCst);
    let _ = output.join();
    let _ = input.join();
    match Arc::try_unwrap(stream) {
        Ok(stream) => {
            if let Err(e) = net::close(stream) {
                tracing::debug!("close: {e}");
            }
        }
        Err(_) => tracing::debug!("stream still shared at exit"),
    }
    Ok(())
}

/// Copy standard input into the stream until it ends, then wait for the acknowledgement of
/// everything. Returns the bytes sent.
fn copy_input(stream: &UdtStream, holding: &AtomicBool) -> Result<u64> {
    let mut stdin = io::stdin().lock();
    let mut buf = vec![0u8; STDIN_CHUNK];
    let mut sent = 0u64;
    loop {
        let n = match stdin.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).context("reading standard input"),
        };
        holding.store(true, Ordering::SeqCst);
        let mut w = stream;
        w.write_all(&buf[..n]).map_err(|e| sending_failed(e, sent))?;
        holding.store(false, Ordering::SeqCst);
        sent += n as u64;
    }
    stream.flush_acknowledged().map_err(|e| sending_failed(e, sent))?;
    Ok(sent)
}

/// The error for a failed send after `sent` bytes.
fn sending_failed(e: io::Error, sent: u64) -> anyhow::Error {
    if e.kind() == io::ErrorKind::BrokenPipe {
        anyhow::anyhow!("the peer closed the connection before all of standard input was delivered")
    } else {
        anyhow::anyhow!("sending failed after {sent} bytes: {e}")
    }
}

/// Copy the stream to standard output until the peer closes (`Ok`) or `stop` is set (`Ok` too;
/// the caller knows).
fn copy_output(stream: &UdtStream, stop: &AtomicBool, last_received: &Mutex<Instant>) -> Result<()> {
    let mut stdout = io::stdout().lock();
    let mut buf = vec![0u8; STREAM_CHUNK];
    let mut r = stream;
    loop {
        match r.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                *last_received.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
                stdout.write_all(&buf[..n]).context("writing standard output")?;
                stdout.flush().context("writing standard output")?;
            }
            Err(e) if e.kind() == io::ErrorKind::TimedOut || e.kind() == io::ErrorKind::WouldBlock => {
                if stop.load(Ordering::SeqCst) {
                    return Ok(());
                }
            }
            Err(e) => return Err(e).context("receiving from the peer"),
        }
    }
}
