//! `udt send FILE... HOST:PORT`: send files to a `udt recv`, each verified end to end with
//! BLAKE3 (protocol in `protocol.rs` and `PROTOCOL.md`).
//!
//! Every argument is checked before connecting (`tree.rs`): a file is sent under its name
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

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::interrupt;
use crate::link::{self, Link};
use crate::net;
use crate::progress::{self, FileProgress};
use crate::protocol::{self, AbortScope, FileHeader, Greeting, Header, Kind, Start, Status, CHUNK, VERSION};
use crate::report::Report;
use crate::security::{self, SecurityArgs, Side};
use crate::tree::{self, Entry};

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
    #[command(flatten)]
    pub security: SecurityArgs,
}

/// Run `udt send`.
pub fn run(args: &Args, quiet: bool) -> Result<()> {
    let mode = progress::Mode::detect(quiet);
    let mut report = Report::new("send", args.json);
    let sources = tree::collect(&args.files, args.rename.as_deref(), &mut report);
    let announced = sources.iter().filter(|e| e.kind == Kind::File).count() + report.failures().len();
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

/// The whole exchange; `session_start` is set once the receiver accepted the session (the
/// time spent queued behind another transfer is not the transfer's).
///
/// Entries are announced up to [`WINDOW`] ahead of the data being sent, and the receiver
/// answers each message as it reads it, so its answers come back in the order of what was
/// sent: a go-ahead per announced entry, a verdict per file's data ([`Expect`]). Many small
/// files then cost a round trip per window, not one each.
fn session(
    link: &mut Link,
    target: &str,
    sources: &[Entry],
    mode: progress::Mode,
    report: &mut Report,
    session_start: &mut Option<Instant>,
) -> Result<()> {
    let count = sources.len() as u32;
    link.write_all(&Header::new(count).encode()).context("sending the transfer header")?;
    // The first window of announcements goes with the transfer's header: the receiver reads
    // them once it accepts the transfer, and the round trip of waiting first is saved.
    let mut expect = VecDeque::new();
    let mut announced = 0;
    announce(link, sources, &mut announced, WINDOW, &mut expect)?;
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
            Status::Resume { .. } => bail!("protocol error: a resume status for the transfer"),
        }
    }
    *session_start = Some(Instant::now());

    for (i, src) in sources.iter().enumerate() {
        announce(link, sources, &mut announced, i + WINDOW, &mut expect)?;
        let answer = next_go_ahead(link, sources, i, &mut expect, report)?;
        send_one(link, i, src, answer, mode, report, &mut expect)
            .with_context(|| format!("sending {} ({} of {count})", src.shown, i + 1))?;
    }
    protocol::write_message_tag(link, protocol::Tag::End).context("ending the transfer")?;
    while !expect.is_empty() {
        next_go_ahead(link, sources, sources.len(), &mut expect, report)?;
    }
    Ok(())
}

/// Entries announced ahead of the data being sent, at most.
const WINDOW: usize = 256;

/// What the receiver answers next, in order.
enum Expect {
    /// Its go-ahead (or refusal) for entry `.0`.
    GoAhead(usize),
    /// Its verdict on the data of file `.0` ([`Sent`] says how the sending went).
    Verdict(usize, Sent),
}

/// How a file's data went on this side.
struct Sent {
    took: Duration,
    /// Bytes of the file sent this time (less than its size when it resumed).
    bytes: u64,
    hash: blake3::Hash,
    /// Why this side gave the file up (an abort record was sent instead of the hash).
    failure: Option<String>,
}

/// Announce entries up to (not including) `until`.
fn announce(
    link: &mut Link,
    sources: &[Entry],
    announced: &mut usize,
    until: usize,
    expect: &mut VecDeque<Expect>,
) -> Result<()> {
    while *announced < sources.len().min(until) {
        protocol::write_message_tag(link, protocol::Tag::Entry).context("announcing an entry")?;
        write_file_header(link, &sources[*announced])?;
        expect.push_back(Expect::GoAhead(*announced));
        *announced += 1;
    }
    Ok(())
}

/// Read the receiver's answers in order until the go-ahead for entry `i` (reporting the
/// verdicts that come before it); with `i` past the last entry, read one answer.
fn next_go_ahead(
    link: &mut Link,
    sources: &[Entry],
    i: usize,
    expect: &mut VecDeque<Expect>,
    report: &mut Report,
) -> Result<Status> {
    while let Some(next) = expect.pop_front() {
        let status = read_status(link).context("waiting for the receiver's answer")?;
        if let Status::Abort(msg) = &status {
            bail!("the receiver stopped: {msg}");
        }
        match next {
            Expect::GoAhead(j) if j == i => return Ok(status),
            Expect::GoAhead(j) => bail!("protocol error: the go-ahead for entry {j} came out of order"),
            Expect::Verdict(j, sent) => {
                let src = &sources[j];
                match (status, sent.failure) {
                    (Status::Wait(_) | Status::Resume { .. } | Status::Abort(_), _) => {
                        bail!("protocol error: an unexpected status after a file's data")
                    }
                    (_, Some(reason)) => report.failed(&src.path, &src.shown, &format!("{reason}; not sent")),
                    (Status::Ok, None) => report.ok(&src.path, &src.shown, sent.bytes, sent.took, &sent.hash),
                    (Status::Error(msg), None) => {
                        report.failed(&src.path, &src.shown, &format!("failed on the receiver: {msg}"))
                    }
                }
                if i >= sources.len() {
                    return Ok(Status::Ok);
                }
            }
        }
    }
    Ok(Status::Ok)
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
fn write_file_header(link: &mut Link, src: &Entry) -> Result<()> {
    FileHeader {
        kind: src.kind,
        name: src.path.as_bytes().to_vec(),
        size: src.size,
        mode: src.mode,
        mtime: src.mtime,
    }
    .write(link)
    .with_context(|| format!("announcing {}", src.shown))
}

/// Where to start sending `file` when the receiver holds `offset` bytes of it: there, with the
/// hash of our first `offset` bytes as proof (the hasher goes on from them), if we have that
/// many; else from the start.
fn resume_point(mut file: &File, offset: u64, size: u64) -> io::Result<(Start, blake3::Hasher)> {
    let mut hasher = blake3::Hasher::new();
    if offset == 0 || offset > size {
        return Ok((Start::Whole, hasher));
    }
    let mut left = offset;
    let mut buf = vec![0u8; CHUNK];
    while left > 0 {
        let want = usize::try_from(left).unwrap_or(usize::MAX).min(CHUNK);
        let n = file.read(&mut buf[..want])?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        left -= n as u64;
    }
    if left == 0 {
        return Ok((Start::Resume { offset, prefix_hash: *hasher.finalize().as_bytes() }, hasher));
    }
    file.seek(io::SeekFrom::Start(0))?;
    Ok((Start::Whole, blake3::Hasher::new()))
}

/// Act on the receiver's `answer` to entry `i`: nothing for a directory or a refusal
/// (reported), else the file's data (from where the receiver's part ends, if it offered one,
/// with our proof), whose verdict is then expected. An error is fatal to the
/// connection.
fn send_one(
    link: &mut Link,
    i: usize,
    src: &Entry,
    answer: Status,
    mode: progress::Mode,
    report: &mut Report,
    expect: &mut VecDeque<Expect>,
) -> Result<()> {
    let held = match answer {
        Status::Ok => None,
        Status::Resume { offset } => Some(offset),
        Status::Error(msg) => {
            report.failed(&src.path, &src.shown, &format!("refused by the receiver: {msg}"));
            return Ok(());
        }
        Status::Abort(msg) => bail!("the receiver stopped: {msg}"),
        Status::Wait(_) => bail!("protocol error: a `wait` status in the middle of the session"),
    };
    if src.kind == Kind::Dir {
        return Ok(());
    }
    protocol::write_message_tag(link, protocol::Tag::Data).context("sending data")?;
    link.write_all(&(i as u32).to_le_bytes()).context("sending data")?;

    // Opened only now: a tree of any size holds one file open at a time.
    let opened = File::open(&src.source).map_err(|e| format!("cannot open it: {e}"));
    let mut local_failure = opened.as_ref().err().cloned();
    let (start, mut hasher) = match (&opened, held) {
        (Ok(file), Some(offset)) => match resume_point(file, offset, src.size) {
            Ok(x) => x,
            Err(e) => {
                local_failure = Some(format!("reading the file failed: {e}"));
                (Start::Whole, blake3::Hasher::new())
            }
        },
        _ => (Start::Whole, blake3::Hasher::new()),
    };
    if let Start::Resume { offset, .. } = start {
        eprintln!(
            "udt send: {}: the receiver holds {} of it already: resuming (if its part matches ours)",
            src.shown,
            crate::units::bytes(offset)
        );
    }
    if let Err(e) = protocol::write_start(link, &start) {
        return Err(write_failed(link, e));
    }
    let start = start.offset();
    link.progress = Some(FileProgress::new(mode, &src.shown, src.size - start));
    let mut buf = vec![0u8; 4 + CHUNK.min(usize::try_from(src.size).unwrap_or(CHUNK))];
    let mut done = start;
    let file = opened.ok();
    while done < src.size && local_failure.is_none() {
        let Some(file) = &file else { break };
        if interrupt::requested() {
            return Err(stop_session(link, "the sender was interrupted"));
        }
        let want = usize::try_from(src.size - done).unwrap_or(usize::MAX).min(CHUNK);
        let n = match (&*file).read(&mut buf[4..4 + want]) {
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
    let took = link.progress.take().map(FileProgress::finish).unwrap_or_default();
    let sent = Sent { took, bytes: src.size - start, hash: hasher.finalize(), failure: local_failure };
    expect.push_back(Expect::Verdict(i, sent));
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
