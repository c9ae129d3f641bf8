//! `udt cat HOST:PORT` / `udt cat --listen ADDR:PORT`: netcat for UDT. Standard input goes out
//! as a raw UDT stream and the peer's stream comes out on standard output, with no framing of
//! ours, so it talks to any UDT4 stream peer and composes with pipes
//! (`tar c dir | udt cat host:9000`, `udt cat --listen :9000 | tar x`). The one exception: a
//! stream that opens with the magic of another `udt` protocol (`UDTF`, `UDTR`, `UDTP`) is
//! refused and none of it written, so a protocol header never passes for data.
//!
//! UDT has no half-close (no way to say "I am done sending, keep talking to me"), so the end of
//! a session is decided locally:
//! - When standard input ends, we wait until the peer has acknowledged everything we sent
//!   (`flush_acknowledged`), then keep copying the peer's data to standard output until the
//!   peer closes, or until nothing has arrived for the idle timeout; then we close.
//! - The idle timeout is `--idle-timeout SECS` if given (0: close as soon as everything is
//!   acknowledged). Without it, a side that sent data waits two round trips of silence (at
//!   least 20 ms: what the peer sent before it saw our end has arrived by then, and a prompt
//!   reply has begun), and a side that sent nothing (a pure receiver, like
//!   `udt cat --listen :9000 > file < /dev/null`) waits for the peer to close, however long.
//! - When the peer closes, we finish writing what it sent and exit. If some of our input was
//!   then still unacknowledged, that data was lost: we say so and exit 1.
//!
//! `--listen --keep-listening` (netcat's `-l -k`) serves one connection after another until
//! Ctrl-C, and only receives: each connection's bytes go to standard output whole, in the order
//! the connections were accepted (one that arrives meanwhile waits its turn; its sender's
//! writes block until then), each until its peer closes; standard input is not read. A
//! connection that fails (a foreign protocol, a peer lost) is reported, and the next is served.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, Weak};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use udt::UdtStream;

use crate::security::{self, SecurityArgs, Side};
use crate::{interrupt, link, net};

/// Size of a standard-input read.
const STDIN_CHUNK: usize = 256 * 1024;
/// Size of a stream read.
const STREAM_CHUNK: usize = 1 << 20;
/// How often blocked reads of the stream look up to check whether to stop.
/// (Short: closing waits for the reader to look up.)
const POLL: Duration = Duration::from_millis(20);
/// After our input ended and was acknowledged, when we sent data: close once nothing has
/// arrived for this many round trips (what the peer sent meanwhile has arrived by then), and
/// at least [`IDLE_FLOOR`].
const IDLE_ROUND_TRIPS: u32 = 2;
/// The least idle time before closing (a loopback RTT is microseconds; the ACK clock is 10 ms).
const IDLE_FLOOR: Duration = Duration::from_millis(20);
/// How long a normal close may wait for the peer to acknowledge the rest.
const CLOSE_LIMIT: Duration = Duration::from_secs(30);
/// How long a close after an error may wait.
const ERROR_CLOSE_LIMIT: Duration = Duration::from_secs(1);

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
    /// With --listen: serve one connection after another until Ctrl-C (netcat's -k), writing
    /// each one's bytes to standard output in turn, whole, until its peer closes; standard
    /// input is not read (nothing is sent).
    #[arg(short, long, requires = "listen", conflicts_with = "target")]
    pub keep_listening: bool,
    /// After standard input ends and is acknowledged, close once the peer has been silent this
    /// long (0: at once; a bare number is seconds). Default: two round trips (at least 20 ms)
    /// if we sent anything, so a request's reply must start within that (give more for a slow
    /// server), else wait for the peer to close.
    #[arg(short = 'i', long, value_name = "SECS", value_parser = crate::units::parse_secs)]
    pub idle_timeout: Option<Duration>,
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
    #[command(flatten)]
    pub security: SecurityArgs,
}

/// What the copying threads tell the main thread.
enum Event {
    /// Standard input ended and everything sent was acknowledged; `sent` bytes in all, the last
    /// of them acknowledged `ack_wait` after standard input ended (a bound on the round trip
    /// before the connection has measured one).
    InputDone { sent: u64, ack_wait: Duration },
    /// Reading standard input or sending failed.
    InputFailed(anyhow::Error),
    /// The peer closed and all it sent was written out.
    PeerClosed,
    /// Receiving or writing standard output failed.
    OutputFailed(anyhow::Error),
}

/// Wait for the one connection, a slice at a time so that Ctrl-C stops the wait at once.
fn accept_or_stop(listener: &mut udt::UdtListener) -> Result<(UdtStream, SocketAddr)> {
    listener.set_accept_timeout(Some(POLL));
    loop {
        match listener.accept() {
            Ok(conn) => return Ok(conn),
            Err(_) if interrupt::requested() => return Err(interrupt::error().into()),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock) => {}
            Err(e) => return Err(anyhow::Error::new(e).context("waiting for a connection")),
        }
    }
}

/// Run `udt cat`.
pub fn run(args: &Args, quiet: bool) -> Result<()> {
    let mut options = link::with_peer_timeout(net::options(args.mss, args.cc.as_ref()), args.peer_timeout);
    options.read_timeout = Some(POLL);
    options.write_timeout = Some(POLL);
    options.config.max_bandwidth = args.rate.map(|bits| bits / 8);
    let side = if args.target.is_some() { Side::Connects } else { Side::Listens };
    let security = security::resolve(&args.security, side, "cat")?;
    security.apply(&mut options);
    let stream = match (&args.target, args.listen) {
        (Some(target), _) => net::connect(target, options)?,
        (None, Some(addr)) => {
            let mut listener = net::listen(addr, options)?;
            let local = listener.local_addr().context("reading the bound address")?;
            if !quiet {
                eprintln!("udt cat: listening on {local}");
            }
            security::show_code(&security, "cat", &format!("udt cat HOST:{}", local.port()), false);
            if args.keep_listening {
                return keep_listening(listener);
            }
            let (stream, peer) = accept_or_stop(&mut listener)?;
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

    // The input thread may block on standard input for ever: it holds the stream only while
    // writing, so that the main thread can always take it back to close it.
    let input = {
        let (weak, tx, holding, stop) =
            (Arc::downgrade(&stream), tx.clone(), Arc::clone(&holding), Arc::clone(&stop));
        thread::Builder::new().name("stdin".into()).spawn(move || {
            let event = match copy_input(&weak, &holding, &stop) {
                Ok((sent, ack_wait)) => Event::InputDone { sent, ack_wait },
                Err(e) => Event::InputFailed(e),
            };
            let _ = tx.send(event);
        })?
    };
    let output = {
        let (stream, stop, last) = (Arc::clone(&stream), Arc::clone(&stop), Arc::clone(&last_received));
        thread::Builder::new().name("stdout".into()).spawn(move || {
            let event = match copy_output(&stream, &|| stop.load(Ordering::SeqCst), &last) {
                Ok(()) => Event::PeerClosed,
                Err(e) => Event::OutputFailed(e),
            };
            let _ = tx.send(event);
        })?
    };

    let mut input_done: Option<(Instant, Duration)> = None; // (when, idle timeout)
    let ended = loop {
        // Once input is done, wake when the idle timeout may have passed, not a poll later.
        let wait = input_done.map_or(POLL, |(since, idle)| {
            let last = *last_received.lock().unwrap_or_else(|e| e.into_inner());
            (since.max(last) + idle)
                .saturating_duration_since(Instant::now())
                .clamp(Duration::from_millis(1), POLL)
        });
        match rx.recv_timeout(wait) {
            Ok(Event::InputDone { sent, ack_wait }) => {
                // The connection's RTT starts at UDT's 100 ms guess: a short exchange has no
                // better one, but its acknowledgement's wait bounds the round trip.
                let rtt = Duration::from_micros(stream.stats(false).now.rtt_us).min(ack_wait);
                let default = (rtt * IDLE_ROUND_TRIPS).max(IDLE_FLOOR);
                let idle = args.idle_timeout.or((sent > 0).then_some(default));
                tracing::debug!(sent, ?idle, "standard input done, all acknowledged");
                input_done = idle.map(|idle| (Instant::now(), idle));
                if input_done.is_none() {
                    tracing::debug!("waiting for the peer to close");
                }
            }
            Ok(Event::PeerClosed) => break Ok(true),
            Ok(Event::InputFailed(e)) | Ok(Event::OutputFailed(e)) => break Err(e),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                break Err(anyhow::anyhow!("internal error: copying threads vanished"))
            }
        }
        if interrupt::requested() {
            break Err(interrupt::error().into());
        }
        if let Some((since, idle)) = input_done {
            let last = *last_received.lock().unwrap_or_else(|e| e.into_inner());
            if Instant::now().duration_since(since.max(last)) >= idle {
                tracing::debug!("idle timeout: closing");
                break Ok(false);
            }
        }
    };

    if let Ok(true) = ended {
        // Input the peer never acknowledged is lost: say so.
        if holding.load(Ordering::SeqCst) || stream.flush_acknowledged().is_err() {
            bail!("the peer closed the connection before all of standard input was delivered");
        }
        let _ = output.join();
        return Ok(());
    }
    // Our side ends the session (idle timeout, error, Ctrl-C): close, so that the peer hears
    // of it at once.
    stop.store(true, Ordering::SeqCst);
    let _ = output.join();
    let linger = if ended.is_ok() { CLOSE_LIMIT } else { ERROR_CLOSE_LIMIT };
    let mut stream = stream;
    let deadline = Instant::now() + POLL * 5;
    loop {
        match Arc::try_unwrap(stream) {
            Ok(s) => {
                link::close_within(s, linger);
                break;
            }
            Err(s) if Instant::now() < deadline => {
                stream = s;
                thread::sleep(Duration::from_millis(10));
            }
            Err(_) => {
                tracing::debug!("stream still shared at exit");
                break;
            }
        }
    }
    if ended.is_ok() {
        let _ = input.join();
    }
    ended.map(|_| ())
}

/// `--listen --keep-listening`: each connection's bytes to standard output in turn, until
/// Ctrl-C.
fn keep_listening(mut listener: udt::UdtListener) -> Result<()> {
    loop {
        let (stream, peer) = accept_or_stop(&mut listener)?;
        tracing::info!(%peer, "connection");
        let last = Mutex::new(Instant::now());
        let received = copy_output(&stream, &interrupt::requested, &last);
        link::close_within(stream, ERROR_CLOSE_LIMIT);
        if interrupt::requested() {
            return Err(interrupt::error().into());
        }
        if let Err(e) = received {
            eprintln!("udt cat: the connection from {peer} failed: {e:#}; still listening");
        }
    }
}

/// Copy standard input into the stream until it ends, then wait for the acknowledgement of
/// everything. Returns the bytes sent and how long the acknowledgement took after the input
/// ended. Holds the stream only while writing; stops early (with an error) when `stop` is set.
fn copy_input(stream: &Weak<UdtStream>, holding: &AtomicBool, stop: &AtomicBool) -> Result<(u64, Duration)> {
    let mut stdin = io::stdin().lock();
    let mut buf = vec![0u8; STDIN_CHUNK];
    let mut sent = 0u64;
    let stopped = || anyhow::anyhow!("stopped before standard input was sent");
    loop {
        let n = match stdin.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).context("reading standard input"),
        };
        holding.store(true, Ordering::SeqCst);
        let mut rest = &buf[..n];
        while !rest.is_empty() {
            let Some(s) = stream.upgrade().filter(|_| !stop.load(Ordering::SeqCst)) else {
                return Err(stopped());
            };
            match (&*s).write(rest) {
                Ok(k) => rest = &rest[k..],
                Err(e) if is_poll_timeout(&e) => {}
                Err(e) => return Err(sending_failed(e, sent)),
            }
        }
        holding.store(false, Ordering::SeqCst);
        sent += n as u64;
    }
    let ended = Instant::now();
    loop {
        let Some(s) = stream.upgrade().filter(|_| !stop.load(Ordering::SeqCst)) else {
            return Err(stopped());
        };
        match s.flush_acknowledged() {
            Ok(()) => return Ok((sent, ended.elapsed())),
            Err(e) if is_poll_timeout(&e) => {}
            Err(e) => return Err(sending_failed(e, sent)),
        }
    }
}

/// A blocking call's slice running out.
fn is_poll_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock)
}

/// The error for a failed send after `sent` bytes.
fn sending_failed(e: io::Error, sent: u64) -> anyhow::Error {
    if e.kind() == io::ErrorKind::BrokenPipe {
        anyhow::anyhow!("the peer closed the connection before all of standard input was delivered")
    } else {
        anyhow::anyhow!("sending failed after {sent} bytes: {e}")
    }
}

/// The magics that open the other `udt` protocols, and what a peer sending one is.
const FOREIGN_MAGICS: [(&[u8; 4], &str); 3] = [
    (b"UDTF", "a `udt send` (receive files with `udt recv`)"),
    (b"UDTR", "a `udt recv` (send files to it with `udt send`)"),
    (b"UDTP", "a `udt perf` server or client"),
];

/// Bytes held back at the start of the stream while they could still be the beginning of
/// another `udt` protocol's magic: such a peer is refused and its header never written out.
#[derive(Default)]
struct Opening {
    held: Vec<u8>,
    /// The start has been cleared (or written out).
    done: bool,
}

impl Opening {
    /// Take `data` from the stream; returns what may be written now, or an error naming the
    /// peer when the stream opens with a foreign magic.
    fn take<'a>(&'a mut self, data: &'a [u8]) -> Result<std::borrow::Cow<'a, [u8]>> {
        if self.done {
            return Ok(data.into());
        }
        self.held.extend_from_slice(data);
        let len = self.held.len().min(4);
        for (magic, what) in FOREIGN_MAGICS {
            if self.held[..len] == magic[..len] {
                if len == 4 {
                    bail!("the peer is {what}, not a `udt cat` peer: refused, nothing written");
                }
                return Ok(Vec::new().into());
            }
        }
        self.done = true;
        Ok(std::mem::take(&mut self.held).into())
    }

    /// The stream ended: what is still held.
    fn rest(&mut self) -> Vec<u8> {
        self.done = true;
        std::mem::take(&mut self.held)
    }
}

/// Copy the stream to standard output until the peer closes (`Ok`) or `stop` says so (`Ok` too;
/// the caller knows). A stream that opens with another `udt` protocol's magic is refused.
fn copy_output(stream: &UdtStream, stop: &dyn Fn() -> bool, last_received: &Mutex<Instant>) -> Result<()> {
    let mut stdout = io::stdout().lock();
    let mut buf = vec![0u8; STREAM_CHUNK];
    let mut r = stream;
    let mut opening = Opening::default();
    let mut write = |out: &[u8]| -> Result<()> {
        if !out.is_empty() {
            stdout.write_all(out).context("writing standard output")?;
            stdout.flush().context("writing standard output")?;
        }
        Ok(())
    };
    loop {
        match r.read(&mut buf) {
            Ok(0) => return write(&opening.rest()),
            Ok(n) => {
                *last_received.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
                write(&opening.take(&buf[..n])?)?;
            }
            Err(e) if is_poll_timeout(&e) => {
                if stop() {
                    return write(&opening.rest());
                }
            }
            Err(e) => return Err(e).context("receiving from the peer"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreign_magics_are_held_then_refused() {
        let mut o = Opening::default();
        assert!(o.take(b"UD").unwrap().is_empty());
        assert!(o.take(b"T").unwrap().is_empty());
        let e = o.take(b"F\x02\x00").unwrap_err();
        assert!(e.to_string().contains("`udt send`"), "{e}");

        let mut o = Opening::default();
        assert!(o.take(b"UDTP").is_err());

        let mut o = Opening::default();
        assert!(o.take(b"U").unwrap().is_empty());
        assert_eq!(&*o.take(b"DTX and more").unwrap(), b"UDTX and more");
        assert_eq!(&*o.take(b"UDTF later is data").unwrap(), b"UDTF later is data");

        let mut o = Opening::default();
        assert_eq!(&*o.take(b"hi\n").unwrap(), b"hi\n");
        let mut o = Opening::default();
        assert!(o.take(b"UDT").unwrap().is_empty());
        assert_eq!(o.rest(), b"UDT");
    }
}
