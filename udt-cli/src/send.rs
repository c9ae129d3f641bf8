//! `udt send FILE... HOST:PORT`: send files to a `udt recv`, each verified end to end with
//! BLAKE3 (protocol in `protocol.rs` and `PROTOCOL.md`).
//!
//! Every file is checked and opened before connecting; one that cannot be sent (missing, a
//! directory, a name the receiver would refuse) is reported and left out, and the others still
//! go. Only the file name travels (`a/b/c.txt` arrives as `c.txt`; `--as NAME` renames a single
//! file). A file the receiver refuses (it exists, say) is skipped and reported; a file that
//! fails on this side while being sent (it shrank) is aborted with its reason, which the
//! receiver prints at once. Exit status 1 if any file failed, 130 if interrupted.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::interrupt;
use crate::link::{self, Link};
use crate::net;
use crate::progress::{self, FileProgress};
use crate::protocol::{self, AbortScope, FileHeader, Greeting, Header, Status, CHUNK, VERSION};
use crate::report::Report;
use crate::security::{self, SecurityArgs, Side};

/// How long the receiver has to greet us once connected. A `udt recv` greets at once, a
/// `udt perf` server too, and a `udt cat --listen` closes on seeing our header.
pub const GREETING_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a normal close may wait for the receiver's last acknowledgements.
const CLOSE_LIMIT: Duration = Duration::from_secs(10);
/// How long an error path waits to tell the receiver, or to learn the receiver's reason.
const ERROR_LIMIT: Duration = Duration::from_secs(1);

/// Arguments of `udt send`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Files to send: regular files; only their names are kept, not their directories.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Where `udt recv` listens.
    #[arg(value_name = "HOST:PORT", value_parser = net::parse_target)]
    pub target: String,
    /// Send the file under this name instead of its own (one FILE only).
    #[arg(long = "as", value_name = "NAME")]
    pub rename: Option<OsString>,
    /// One JSON object per line on standard output: one per file, then a total.
    #[arg(long)]
    pub json: bool,
    /// Maximum segment size in bytes, IP and UDP headers included (UDT4 default 1500).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(76..=65535))]
    pub mss: Option<u32>,
    /// Congestion control, NAME[:key=value,...] (`udt cc list`; default udt). TCP-like ones
    /// (newreno, cubic, ...) should run at both ends: the receiver's sets the ACK interval.
    #[arg(long, value_name = "NAME[:K=V,...]", value_parser = net::parse_cc)]
    pub cc: Option<net::CcArg>,
    /// Declare the peer gone after this many seconds without hearing from it (default 10).
    #[arg(long, value_name = "SECS", value_parser = crate::link::parse_peer_timeout)]
    pub peer_timeout: Option<std::time::Duration>,
    #[command(flatten)]
    pub security: SecurityArgs,
}

/// One file ready to go.
struct Source {
    /// The name sent.
    name: String,
    /// The name as printed.
    shown: String,
    file: File,
    size: u64,
    mode: u32,
}

/// Run `udt send`.
pub fn run(args: &Args, quiet: bool) -> Result<()> {
    let mode = progress::Mode::detect(quiet);
    let mut report = Report::new("send", args.json);
    let sources = prepare(args, &mut report);
    let announced = args.files.len();
    if sources.is_empty() {
        report.total(announced, Duration::ZERO);
        bail!("nothing to send: {}", refusal_summary(&report, announced));
    }
    let count = u32::try_from(sources.len()).context("too many files")?;

    let security = security::resolve(&args.security, Side::Connects, "send")?;
    let mut options = link::with_peer_timeout(net::options(args.mss, args.cc.as_ref()), args.peer_timeout);
    security.apply(&mut options);
    let stream = net::connect(&args.target, options)?;
    tracing::info!(peer = %args.target, files = count, "connected");
    let mut link = Link::new(stream);
    let mut session_start = None;
    let result = session(&mut link, &args.target, &sources, mode, &mut report, &mut session_start);
    let took = session_start.map(|s: Instant| s.elapsed()).unwrap_or_default();
    match &result {
        Ok(()) => link.close(CLOSE_LIMIT),
        Err(_) => link.close(ERROR_LIMIT),
    }
    if session_start.is_some() {
        report.total(announced, took);
    }
    result?;
    if !report.failures().is_empty() {
        bail!("{}", refusal_summary(&report, announced));
    }
    Ok(())
}

/// `2 of 3 files failed: a, b`.
fn refusal_summary(report: &Report, announced: usize) -> String {
    let failed = report.failures();
    let plural = if announced == 1 { "" } else { "s" };
    format!("{} of {announced} file{plural} failed: {}", failed.len(), failed.join(", "))
}

/// Check and open every file; report and leave out the ones that cannot be sent.
fn prepare(args: &Args, report: &mut Report) -> Vec<Source> {
    let mut names = HashSet::new();
    let mut sources = Vec::with_capacity(args.files.len());
    for path in &args.files {
        let lossy = path.to_string_lossy();
        let shown_path = protocol::display_name(&lossy);
        let mut refuse = |reason: String| report.failed(&lossy, &shown_path, &reason);
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) => {
                refuse(format!("cannot read it: {e}"));
                continue;
            }
        };
        if meta.is_dir() {
            refuse(
                "is a directory; udt send sends regular files (for a tree: tar c DIR | udt cat HOST:PORT)"
                    .into(),
            );
            continue;
        }
        if !meta.is_file() {
            refuse("is not a regular file".into());
            continue;
        }
        let Some(raw) = args.rename.as_deref().or_else(|| path.file_name()) else {
            refuse("has no file name".into());
            continue;
        };
        let name = match protocol::check_name(raw.as_bytes()) {
            Ok(name) => name.to_string(),
            Err(e) => {
                refuse(format!("cannot be sent under this name: {e} (rename it with --as NAME)"));
                continue;
            }
        };
        if !names.insert(name.clone()) {
            refuse(format!(
                "another file of this batch is also named \"{}\"; the receiver keeps only names",
                protocol::display_name(&name)
            ));
            continue;
        }
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) => {
                refuse(format!("cannot open it: {e}"));
                continue;
            }
        };
        let shown = protocol::display_name(&name);
        sources.push(Source {
            name,
            shown,
            file,
            size: meta.len(),
            mode: meta.permissions().mode() & 0o7777,
        });
    }
    sources
}

/// The whole exchange; `session_start` is set once the receiver accepted the session (the
/// time spent queued behind another transfer is not the transfer's).
fn session(
    link: &mut Link,
    target: &str,
    sources: &[Source],
    mode: progress::Mode,
    report: &mut Report,
    session_start: &mut Option<Instant>,
) -> Result<()> {
    let count = sources.len() as u32;
    link.write_all(&Header::new(count).encode()).context("sending the transfer header")?;
    // The first file's header goes with the transfer's: the receiver reads them in order, and
    // the round trip of waiting for the transfer's answer first is saved (PROTOCOL.md).
    if let Some(first) = sources.first() {
        write_file_header(link, first)?;
    }
    greet(link, target)?;

    let mut said_waiting = false;
    loop {
        match read_status(link).context("waiting for the receiver to accept the transfer")? {
            Status::Ok => break,
            Status::Wait(msg) => {
                if !said_waiting {
                    let why = if msg.is_empty() { "busy".into() } else { protocol::display_name(&msg) };
                    eprintln!("udt send: waiting for the receiver ({why})...");
                    said_waiting = true;
                }
            }
            Status::Error(msg) => bail!("the receiver refused the transfer: {msg}"),
            Status::Abort(msg) => bail!("the receiver stopped: {msg}"),
        }
    }
    *session_start = Some(Instant::now());

    for (i, src) in sources.iter().enumerate() {
        send_one(link, src, sources.get(i + 1), mode, report)
            .with_context(|| format!("sending {} ({} of {count})", src.shown, i + 1))?;
    }
    Ok(())
}

/// Read the receiver's greeting: anything but a `udt recv` of our version ends the session.
fn greet(link: &mut Link, target: &str) -> Result<()> {
    link.set_deadline(Some(GREETING_TIMEOUT), "greeting from the receiver");
    let not_recv = |why: String| anyhow::anyhow!("the peer at {target} is not a `udt recv` ({why})");
    let greeting = match protocol::read_greeting(link) {
        Ok(g) => g,
        Err(e) if e.kind() == io::ErrorKind::TimedOut => {
            return Err(not_recv(format!("no greeting within {} s", GREETING_TIMEOUT.as_secs())))
        }
        Err(e) if interrupt::requested() => return Err(e.into()),
        Err(e) => {
            return Err(not_recv(format!(
                "it closed the connection without a greeting: {}",
                closed_reason(&e)
            )))
        }
    };
    link.set_deadline(None, "");
    match greeting {
        Greeting::Receiver(v) if v == VERSION => Ok(()),
        Greeting::Receiver(v) => bail!(
            "the receiver at {target} speaks protocol version {v}, this sender version {VERSION}: \
             use the same version of udt at both ends"
        ),
        Greeting::PerfServer(_) => Err(not_recv("it is a `udt perf server`".into())),
        Greeting::Other(what) => Err(not_recv(what)),
    }
}

/// An end-of-stream read error in words.
fn closed_reason(e: &io::Error) -> String {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        "end of stream".into()
    } else {
        e.to_string()
    }
}

/// Read a status; the receiver closing instead is said so.
fn read_status(link: &mut Link) -> Result<Status> {
    Status::read(link).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            anyhow::anyhow!("the receiver closed the connection")
        } else {
            e.into()
        }
    })
}

/// Announce `src` to the receiver.
fn write_file_header(link: &mut Link, src: &Source) -> Result<()> {
    FileHeader { name: src.name.as_bytes().to_vec(), size: src.size, mode: src.mode }
        .write(link)
        .with_context(|| format!("announcing {}", src.shown))
}

/// Send one file, whose header is already on its way, and announce `next` as soon as this
/// file's bytes are out (before its verdict comes back: one round trip saved per file). An
/// error is fatal to the connection; the file's own outcome goes to `report`.
fn send_one(
    link: &mut Link,
    src: &Source,
    next: Option<&Source>,
    mode: progress::Mode,
    report: &mut Report,
) -> Result<()> {
    match read_status(link).context("waiting for the receiver's answer")? {
        Status::Ok => {}
        Status::Error(msg) => {
            if let Some(next) = next {
                write_file_header(link, next)?;
            }
            report.failed(&src.name, &src.shown, &format!("refused by the receiver: {msg}"));
            return Ok(());
        }
        Status::Abort(msg) => bail!("the receiver stopped: {msg}"),
        Status::Wait(_) => bail!("protocol error: a `wait` status in the middle of the session"),
    }

    link.progress = Some(FileProgress::new(mode, &src.shown, src.size));
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; 4 + CHUNK.min(usize::try_from(src.size).unwrap_or(CHUNK))];
    let mut done = 0u64;
    let mut local_failure = None;
    while done < src.size {
        if interrupt::requested() {
            return Err(stop_session(link, "the sender was interrupted"));
        }
        let want = usize::try_from(src.size - done).unwrap_or(usize::MAX).min(CHUNK);
        let n = match (&src.file).read(&mut buf[4..4 + want]) {
            Ok(0) => {
                local_failure =
                    Some(format!("the file shrank while being sent ({done} of {} bytes)", src.size));
                break;
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                local_failure = Some(format!("reading the file failed after {done} bytes: {e}"));
                break;
            }
        };
        buf[..4].copy_from_slice(&protocol::chunk_prefix(n));
        if let Err((e, written)) = link.write_tracked(&buf[..4 + n]) {
            if interrupt::requested() && link.write_urgent(&buf[written..4 + n], ERROR_LIMIT) {
                return Err(stop_session(link, "the sender was interrupted"));
            }
            return Err(write_failed(link, e));
        }
        hasher.update(&buf[4..4 + n]);
        done += n as u64;
        if let Some(p) = &mut link.progress {
            p.add(n as u64);
        }
    }
    let sent = match &local_failure {
        Some(reason) => protocol::write_abort(link, AbortScope::File, reason),
        None => link.write_all(hasher.finalize().as_bytes()),
    };
    if let Err(e) = sent {
        return Err(write_failed(link, e));
    }
    if let Some(next) = next {
        write_file_header(link, next)?;
    }
    let status = read_status(link).context("waiting for the receiver's verdict")?;
    let took = link.progress.take().map(FileProgress::finish).unwrap_or_default();
    match (status, local_failure) {
        (Status::Abort(msg), _) => bail!("the receiver stopped: {msg}"),
        (Status::Wait(_), _) => bail!("protocol error: a `wait` status in the middle of the session"),
        (_, Some(reason)) => report.failed(&src.name, &src.shown, &format!("{reason}; not sent")),
        (Status::Ok, None) => report.ok(&src.name, &src.shown, src.size, took, &hasher.finalize()),
        (Status::Error(msg), None) => {
            report.failed(&src.name, &src.shown, &format!("failed on the receiver: {msg}"))
        }
    }
    Ok(())
}

/// Writing to the receiver failed: a Ctrl-C (the receiver will see the connection close), or
/// the receiver stopped (find its reason among what it sent last).
fn write_failed(link: &mut Link, e: io::Error) -> anyhow::Error {
    if interrupt::requested() {
        link.progress.take().map(FileProgress::finish);
        return anyhow::Error::new(interrupt::error());
    }
    link.progress.take().map(FileProgress::finish);
    link.set_deadline(Some(ERROR_LIMIT), "reason from the receiver");
    while let Ok(status) = Status::read(link) {
        if let Status::Abort(msg) | Status::Error(msg) = status {
            return anyhow::anyhow!("the receiver stopped: {msg}");
        }
    }
    anyhow::Error::new(e).context("sending to the receiver")
}

/// In the middle of a file's data: tell the receiver the session ends, and why.
fn stop_session(link: &mut Link, reason: &str) -> anyhow::Error {
    link.progress.take().map(FileProgress::finish);
    let mut record = Vec::new();
    if protocol::write_abort(&mut record, AbortScope::Session, reason).is_ok() {
        link.write_urgent(&record, ERROR_LIMIT);
    }
    anyhow::Error::new(interrupt::error())
}
