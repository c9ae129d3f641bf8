//! One connection's exchange: the session header, then every message answered in the order it
//! is read (an entry with its go-ahead or refusal, a file's data with its verdict), then the
//! session's directories get their metadata and the connection closes.
//!
//! Invariants: at most [`MAX_AHEAD`] files wait for their data; whatever happens, the
//! directories this session created get their permissions and times once it ends
//! ([`SessionDirs::finish`]); a failure on this side is told to the sender (`Status abort`)
//! before closing, one of the sender's is not.

use std::collections::HashMap;
use std::io::{self, Read};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use udt::UdtStream;

use super::claims::Claims;
use super::data::receive_file;
use super::prepare::{prepare, Target};
use super::{consent, Args};
use crate::interrupt;
use crate::landing::{walk, Root, SessionDirs};
use crate::link::Link;
use crate::progress;
use crate::protocol::{self, FileHeader, Header, Kind, Status, Tag, VERSION};
use crate::report::Report;

/// How long a connected peer has to send its header (a `udt send` sends it at once).
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a normal close may wait for the sender's last acknowledgements.
const CLOSE_LIMIT: Duration = Duration::from_secs(10);
/// How long an error path waits to tell the sender why.
const ERROR_LIMIT: Duration = Duration::from_secs(1);

/// Files announced and accepted but whose data has not come yet, at most: what a sender's
/// window of announcements needs (`send.rs` uses 256), and a bound on what a hostile one makes
/// the receiver remember.
const MAX_AHEAD: usize = 1024;

/// What every session of this receiver shares.
pub struct Ctx<'c> {
    /// `--out` and the receiver's identity.
    pub root: &'c Root,
    /// Paths being received now.
    pub claims: &'c Claims,
    /// Replace existing files.
    pub force: bool,
    /// The largest file taken.
    pub max_size: Option<u64>,
    /// Top-level names that begin with a dot are taken.
    pub allow_dotfiles: bool,
}

/// Serve one connection and close it: normally once all is acknowledged, after a failure with
/// the reason sent first (unless the sender is the one that stopped).
pub fn serve(stream: UdtStream, ctx: &Ctx<'_>, args: &Args, mode: progress::Mode) -> Result<()> {
    let mut link = Link::new(stream);
    let mut report = Report::new("recv", args.json);
    let mut session = Session { announced: 0, start: None };
    link.set_idle_limit(Some(args.idle_timeout));
    let result = receive(&mut link, ctx, mode, &mut report, &mut session);
    if let Some(start) = session.start {
        report.total(session.announced, start.elapsed());
    }
    match result {
        Ok(()) => {
            link.close(CLOSE_LIMIT);
            if !report.failures().is_empty() {
                let failed = report.failures();
                bail!("{} of {} files failed: {}", failed.len(), session.announced, failed.join(", "));
            }
            Ok(())
        }
        Err(Failure::Peer(e)) => {
            link.close(ERROR_LIMIT);
            Err(e)
        }
        Err(Failure::Here(e)) => {
            let reason = if interrupt::requested() {
                "the receiver was interrupted".to_string()
            } else {
                format!("{e:#}")
            };
            let mut status = Vec::new();
            if Status::Abort(reason).write(&mut status).is_ok() {
                link.write_urgent(&status, ERROR_LIMIT);
            }
            link.close(ERROR_LIMIT);
            Err(e)
        }
    }
}

/// Why a session ended early.
pub enum Failure {
    /// The sender stopped, vanished or is not a `udt send`: nothing to tell it.
    Peer(anyhow::Error),
    /// Something on this side (a Ctrl-C, a broken rule): the sender is told.
    Here(anyhow::Error),
}

/// What a session announced and when it started.
struct Session {
    announced: usize,
    start: Option<Instant>,
}

/// A read from the sender failed: its end of the connection, unless it was our Ctrl-C.
pub fn from_peer(e: io::Error, what: impl FnOnce() -> String) -> Failure {
    if interrupt::requested() {
        return Failure::Here(anyhow::Error::new(e));
    }
    let what = what();
    match e.kind() {
        io::ErrorKind::UnexpectedEof => {
            Failure::Peer(anyhow::anyhow!("the sender stopped: the connection closed {what}"))
        }
        io::ErrorKind::InvalidData => {
            Failure::Here(anyhow::Error::new(e).context(format!("protocol error {what}")))
        }
        _ => Failure::Peer(anyhow::Error::new(e).context(format!("the connection failed {what}"))),
    }
}

/// A write to the sender failed.
fn to_peer(e: io::Error) -> Failure {
    if interrupt::requested() {
        return Failure::Here(anyhow::Error::new(e));
    }
    Failure::Peer(anyhow::Error::new(e).context("answering the sender"))
}

/// The exchange of one session.
fn receive(
    link: &mut Link,
    ctx: &Ctx<'_>,
    mode: progress::Mode,
    report: &mut Report,
    session: &mut Session,
) -> Result<(), Failure> {
    link.set_deadline(Some(HEADER_TIMEOUT), "`udt send` header");
    let header = match Header::read(link) {
        Ok(h) => h,
        Err(e) if e.kind() == io::ErrorKind::InvalidData => return Err(Failure::Peer(e.into())),
        Err(e) if e.kind() == io::ErrorKind::TimedOut && !interrupt::requested() => {
            return Err(Failure::Peer(anyhow::anyhow!(
                "the peer is not a `udt send` (no header within {} s)",
                HEADER_TIMEOUT.as_secs()
            )))
        }
        Err(e) => return Err(from_peer(e, || "before the header".into())),
    };
    link.set_deadline(None, "");
    if header.version != VERSION {
        let msg = format!("unsupported protocol version {} (this receiver speaks {VERSION})", header.version);
        Status::Error(msg.clone()).write(link).map_err(to_peer)?;
        return Err(Failure::Peer(anyhow::anyhow!(msg)));
    }
    Status::Ok.write(link).map_err(to_peer)?;
    session.start = Some(Instant::now());
    tracing::info!(entries = header.file_count, "transfer accepted");

    // Directories get their permissions and times once everything inside them is written.
    let mut dirs = SessionDirs::default();
    let result = session_messages(link, header.file_count, ctx, mode, report, session, &mut dirs);
    dirs.finish(ctx.root);
    result
}

/// An accepted file waiting for its data.
struct Pending<'c> {
    fh: FileHeader,
    target: Target<'c>,
    lossy: String,
    shown: String,
}

/// The session's messages, each answered as it is read: an entry with its go-ahead (or
/// refusal), a file's data with its verdict, until the end.
fn session_messages<'c>(
    link: &mut Link,
    count: u32,
    ctx: &Ctx<'c>,
    mode: progress::Mode,
    report: &mut Report,
    session: &mut Session,
    dirs: &mut SessionDirs,
) -> Result<(), Failure> {
    let mut pending: HashMap<u32, Pending<'c>> = HashMap::new();
    let mut entries = 0u32;
    loop {
        let tag = protocol::read_message_tag(link)
            .map_err(|e| from_peer(e, || format!("after {entries} of {count} entries")))?;
        match tag {
            Tag::End => return Ok(()),
            Tag::Entry => {
                if entries == count {
                    return Err(Failure::Here(anyhow::Error::new(protocol::invalid(format!(
                        "more than the {count} entries announced"
                    )))));
                }
                let index = entries;
                entries += 1;
                let fh = FileHeader::read(link)
                    .map_err(|e| from_peer(e, || format!("before entry {} of {count}", index + 1)))?;
                let lossy = String::from_utf8_lossy(&fh.name).into_owned();
                let shown = protocol::display_name(&lossy);
                if fh.kind == Kind::Dir {
                    match make_dir(&fh, ctx, dirs) {
                        Ok(path) => {
                            Status::Ok.write(link).map_err(to_peer)?;
                            dirs.want(path, fh.mode, fh.mtime);
                        }
                        Err(msg) => {
                            Status::Error(msg.clone()).write(link).map_err(to_peer)?;
                            report.failed(&lossy, &shown, &msg);
                        }
                    }
                    continue;
                }
                session.announced += 1;
                let prepared = if pending.len() >= MAX_AHEAD {
                    Err(format!("more than {MAX_AHEAD} files announced ahead of their data"))
                } else {
                    prepare(&fh, ctx, dirs, &shown)
                };
                match prepared {
                    Ok(target) => {
                        let answer = match &target.held {
                            Some(held) => Status::Resume { offset: held.len },
                            None => Status::Ok,
                        };
                        answer.write(link).map_err(to_peer)?;
                        pending.insert(index, Pending { fh, target, lossy, shown });
                    }
                    Err(msg) => {
                        Status::Error(msg.clone()).write(link).map_err(to_peer)?;
                        report.failed(&lossy, &shown, &msg);
                    }
                }
            }
            Tag::Data => {
                let mut index = [0u8; 4];
                link.read_exact(&mut index).map_err(|e| from_peer(e, || "before a file's data".into()))?;
                let index = u32::from_le_bytes(index);
                let Some(Pending { fh, target, lossy, shown }) = pending.remove(&index) else {
                    return Err(Failure::Here(anyhow::Error::new(protocol::invalid(format!(
                        "data for entry {index}, which was not accepted or was sent already"
                    )))));
                };
                match receive_file(link, &fh, target, ctx.force, &shown, mode)? {
                    Ok((took, hash, moved)) => {
                        Status::Ok.write(link).map_err(to_peer)?;
                        report.ok(&lossy, &shown, moved, took, &hash);
                    }
                    Err(msg) => {
                        Status::Error(msg.clone()).write(link).map_err(to_peer)?;
                        report.failed(&lossy, &shown, &msg);
                    }
                }
            }
        }
    }
}

/// A directory entry: its path checked, the directory made where missing. Returns the path
/// relative to `--out`, or the refusal for the sender.
fn make_dir(fh: &FileHeader, ctx: &Ctx<'_>, dirs: &mut SessionDirs) -> Result<String, String> {
    let parts = protocol::check_path(&fh.name)?;
    consent::check(&parts, ctx.allow_dotfiles)?;
    walk(ctx.root.dir(), &parts, Some(dirs.created_mut()))?;
    Ok(parts.join("/"))
}
