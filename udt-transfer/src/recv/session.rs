//! One connection's exchange: the session header, then every message answered in the order it
//! is read (an entry with its go-ahead or refusal, a file's data with its verdict), then, for a
//! sender that asked and a receiver that allows it, what the sender's tree lacks is deleted from
//! the directories it sent ([`crate::landing::prune`]), then the session's directories get their
//! metadata and the connection closes.
//!
//! Invariants: a delete request is refused at the header unless allowed, and carried out only
//! after the session's End was read (never after a broken session); at most [`MAX_AHEAD`] files
//! wait for their data; whatever happens, the
//! directories this session created get their permissions and times once it ends
//! ([`SessionDirs::finish`]); a failure on this side is told to the sender (`Status abort`)
//! before closing, one of the sender's is not.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{self, Read};
use std::sync::Arc;
use std::time::{Duration, Instant};

use udt::UdtStream;

use super::claims::Claims;
use super::data::{compare_file, receive_file};
use super::join::{Identity, Joins, Striped};
use super::member::serve_member;
use super::prepare::{prepare, Accepted, Target};
use super::stripe::receive_striped;
use super::{consent, ReceiveOptions, ReceiveReport};
use crate::landing::{self, walk, Id, Keep, Root, SessionDirs};
use crate::link::Link;
use crate::protocol::{self, FileHeader, Header, Kind, Status, Tag, VERSION};
use crate::{Error, Event, Exclude, Observer};

/// How long a connected peer has to send its header (a `udt send` sends it at once).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a normal close may wait for the sender's last acknowledgements.
const CLOSE_LIMIT: Duration = Duration::from_secs(10);
/// How long an error path waits to tell the sender why.
const ERROR_LIMIT: Duration = Duration::from_secs(1);

/// Files announced and accepted but whose data has not come yet, at most: what a sender's
/// window of announcements needs (the sender's module uses 256), and a bound on what a hostile
/// one makes the receiver remember.
const MAX_AHEAD: usize = 1024;

/// What every session of this receiver shares.
#[derive(Clone, Copy)]
pub struct Ctx<'c> {
    /// The output directory and the receiver's identity.
    pub root: &'c Root,
    /// Paths being received now.
    pub claims: &'c Claims,
    /// Replace existing files.
    pub force: bool,
    /// Keep existing files as new as the sender's or newer; replace older ones.
    pub update: bool,
    /// Keep every existing file.
    pub ignore_existing: bool,
    /// The sender understands `have` and `skip` ([`protocol::FLAG_SKIPS`]).
    pub skips: bool,
    /// The largest file taken.
    pub max_size: Option<u64>,
    /// Top-level names that begin with a dot are taken.
    pub allow_dotfiles: bool,
    /// A sender's delete request is honoured.
    pub allow_delete: bool,
    /// The receiver's open striped transfers.
    pub joins: &'c Joins,
    /// How long a striped file may wait for its next range.
    pub idle: Option<Duration>,
}

/// Serve one connection and close it: normally once all is acknowledged, after a failure with
/// the reason sent first (unless the sender is the one that stopped).
pub fn serve(
    stream: UdtStream,
    ctx: &Ctx<'_>,
    options: &ReceiveOptions,
    observer: &mut dyn Observer,
) -> Result<ReceiveReport, Error> {
    let identity = Identity::of(&stream);
    let mut link = Link::new(stream, options.cancel.clone(), observer);
    let mut report = ReceiveReport::default();
    let mut start = None;
    link.set_idle_limit(options.idle_timeout);
    let result = receive(&mut link, ctx, identity, &mut report, &mut start);
    if let Some(start) = start {
        report.took = start.elapsed();
        link.event(Event::SessionEnded { files: report.files, took: report.took });
    }
    close(link, result).map(|()| report)
}

/// Close a connection: normally once all is acknowledged, after a failure on this side with
/// the reason sent first.
pub fn close(mut link: Link<'_>, result: Result<(), Failure>) -> Result<(), Error> {
    match result {
        Ok(()) => {
            link.close(CLOSE_LIMIT);
            Ok(())
        }
        Err(Failure::Peer(e)) => {
            link.close(ERROR_LIMIT);
            Err(e)
        }
        Err(Failure::Here(e)) => {
            let reason = if link.cancelled() || matches!(e, Error::Interrupted) {
                "the receiver was interrupted".to_string()
            } else {
                e.chain()
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
    /// The sender stopped, vanished or is not a sender of this protocol: nothing to tell it.
    Peer(Error),
    /// Something on this side (a stop request, a broken rule): the sender is told.
    Here(Error),
}

/// A read from the sender failed: its end of the connection, unless it was our stop request.
pub fn from_peer(link: &Link<'_>, e: io::Error, what: impl FnOnce() -> String) -> Failure {
    if link.cancelled() {
        return Failure::Here(Error::Interrupted);
    }
    let what = what();
    match e.kind() {
        io::ErrorKind::UnexpectedEof => {
            Failure::Peer(Error::SenderStopped(format!("the connection closed {what}")))
        }
        io::ErrorKind::InvalidData => Failure::Here(Error::Malformed { when: what, source: e }),
        _ => Failure::Peer(Error::io(format!("the connection failed {what}"), e)),
    }
}

/// A write to the sender failed.
fn to_peer(link: &Link<'_>, e: io::Error) -> Failure {
    if link.cancelled() {
        return Failure::Here(Error::Interrupted);
    }
    Failure::Peer(Error::io("answering the sender", e))
}

/// Answer the sender.
pub fn answer(link: &mut Link<'_>, status: &Status) -> Result<(), Failure> {
    status.write(link).map_err(|e| to_peer(link, e))
}

/// A file or directory failed: reported and told.
fn failed(link: &mut Link<'_>, report: &mut ReceiveReport, path: &str, reason: &str) {
    report.failed.push(path.to_string());
    link.event(Event::FileFailed { path, reason });
}

/// The exchange of one session; `start` is set once it is accepted.
fn receive(
    link: &mut Link<'_>,
    ctx: &Ctx<'_>,
    identity: Identity,
    report: &mut ReceiveReport,
    start: &mut Option<Instant>,
) -> Result<(), Failure> {
    link.set_deadline(Some(HEADER_TIMEOUT), "`udt send` header");
    let header = match Header::read(link) {
        Ok(h) => h,
        Err(e) if e.kind() == io::ErrorKind::InvalidData => {
            return Err(Failure::Peer(Error::NotASender(e.to_string())))
        }
        Err(e) if e.kind() == io::ErrorKind::TimedOut && !link.cancelled() => {
            return Err(Failure::Peer(Error::NotASender(format!(
                "the peer is not a `udt send` (no header within {} s)",
                HEADER_TIMEOUT.as_secs()
            ))))
        }
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof && !link.cancelled() => {
            return Err(Failure::Peer(Error::NotASender(
                "the peer closed the connection before sending a `udt send` header".into(),
            )))
        }
        // Nothing was received: whatever broke the connection, the receiver's one transfer is
        // still to come.
        Err(e) if !link.cancelled() => {
            return Err(Failure::Peer(Error::NotASender(format!(
                "the connection failed before a `udt send` header: {e}"
            ))))
        }
        Err(e) => return Err(from_peer(link, e, || "before the header".into())),
    };
    link.set_deadline(None, "");
    if header.version != VERSION {
        let refusal = Error::SenderVersion(header.version);
        answer(link, &Status::Error(refusal.to_string()))?;
        return Err(Failure::Peer(refusal));
    }
    if header.flags & protocol::FLAG_JOIN != 0 {
        let cancel = link.cancel().clone();
        return serve_member(link, ctx.joins, identity, &cancel);
    }
    let registration = match header.flags & protocol::FLAG_STRIPES {
        0 => None,
        _ => Some(open_striped(link, ctx, identity)?),
    };
    let delete = header.flags & protocol::FLAG_DELETE != 0;
    if delete && !ctx.allow_delete {
        let refusal = "this `udt recv` deletes nothing a sender does not send: start it with --delete \
                       (or send without --delete)";
        answer(link, &Status::Error(refusal.into()))?;
        return Err(Failure::Peer(Error::DeleteNotAllowed));
    }
    answer(link, &Status::Ok)?;
    *start = Some(Instant::now());
    link.event(Event::SessionStarted { entries: header.file_count });
    tracing::info!(entries = header.file_count, "transfer accepted");

    // Directories get their permissions and times once everything inside them is written.
    let mut dirs = SessionDirs::default();
    let ctx = &Ctx { skips: header.flags & protocol::FLAG_SKIPS != 0, ..*ctx };
    let mut pruning = delete.then(Pruning::default);
    let striped = registration.as_ref().map(|r| &r.striped);
    let result = session_messages(link, (header.file_count, striped), ctx, report, &mut dirs, &mut pruning);
    let result = match (result, pruning) {
        (Ok(()), Some(pruning)) => prune(link, ctx, report, pruning),
        (result, _) => result,
    };
    dirs.finish(ctx.root);
    result
}

/// The stripe message that follows a striped session's header: its token opened for the
/// transfer's other connections, or the session refused.
fn open_striped<'j>(
    link: &mut Link<'_>,
    ctx: &Ctx<'j>,
    identity: Identity,
) -> Result<super::join::Registration<'j>, Failure> {
    let stripe = protocol::read_message_tag(link).and_then(|tag| match tag {
        Tag::Stripe => protocol::read_stripe(link),
        _ => Err(protocol::invalid("a striped session's header without its stripe message")),
    });
    let (token, connections) = stripe.map_err(|e| from_peer(link, e, || "after the header".into()))?;
    match ctx.joins.open(token, connections, identity) {
        Ok(registration) => Ok(registration),
        Err(why) => {
            answer(link, &Status::Error(why.clone()))?;
            Err(Failure::Peer(Error::Protocol(format!("refused a striped transfer: {why}"))))
        }
    }
}

/// What a session with a delete request gathers for pruning at its end.
#[derive(Default)]
struct Pruning {
    /// The sender's exclude patterns, once its request came.
    exclude: Option<Exclude>,
    /// Every path announced.
    announced: HashSet<String>,
    /// The directories announced and walked, with the identity they were walked with.
    dirs: BTreeMap<String, Id>,
}

/// Delete what the sender's tree does not have from the directories it sent, tell the sender
/// each path (or why one stays), then `ok`.
fn prune(
    link: &mut Link<'_>,
    ctx: &Ctx<'_>,
    report: &mut ReceiveReport,
    pruning: Pruning,
) -> Result<(), Failure> {
    let Some(exclude) = pruning.exclude else {
        return Err(Failure::Here(Error::Protocol("a delete request without its patterns".into())));
    };
    let busy = |path: &str| ctx.claims.held(path);
    let keep = Keep { announced: &pruning.announced, exclude: &exclude, busy: &busy };
    let pruned = landing::prune(ctx.root, &pruning.dirs, &keep);
    for path in pruned.deleted {
        answer(link, &Status::Deleted(path.clone()))?;
        link.event(Event::Deleted { path: &path });
        report.deleted.push(path);
    }
    for (path, why) in pruned.failed {
        answer(link, &Status::Error(format!("not deleted: {}: {why}", protocol::display_name(&path))))?;
        failed(link, report, &path, &format!("not deleted: {why}"));
    }
    answer(link, &Status::Ok)
}

/// An accepted file waiting for its data (or for the sender's proof that it holds the file
/// this receiver has).
struct Pending<'c> {
    fh: FileHeader,
    target: Accepted<'c>,
    lossy: String,
}

/// The session's messages, each answered as it is read: an entry with its go-ahead (or
/// refusal), a file's data with its verdict, until the end.
fn session_messages<'c>(
    link: &mut Link<'_>,
    (count, striped): (u32, Option<&Arc<Striped>>),
    ctx: &Ctx<'c>,
    report: &mut ReceiveReport,
    dirs: &mut SessionDirs,
    pruning: &mut Option<Pruning>,
) -> Result<(), Failure> {
    let mut pending: HashMap<u32, Pending<'c>> = HashMap::new();
    let mut entries = 0u32;
    loop {
        let tag = protocol::read_message_tag(link)
            .map_err(|e| from_peer(link, e, || format!("after {entries} of {count} entries")))?;
        match tag {
            Tag::End => return Ok(()),
            Tag::Delete => {
                let patterns = protocol::read_patterns(link)
                    .map_err(|e| from_peer(link, e, || "in the delete request".into()))?;
                match pruning.as_mut() {
                    Some(p) if p.exclude.is_none() && entries == 0 => {
                        p.exclude = Some(Exclude::new(&patterns))
                    }
                    _ => return Err(Failure::Here(Error::Protocol(
                        "a delete request out of place (without the header's flag, twice, or after entries)"
                            .into(),
                    ))),
                }
            }
            Tag::Entry => {
                if entries == count {
                    return Err(Failure::Here(Error::Protocol(format!(
                        "more than the {count} entries announced"
                    ))));
                }
                let index = entries;
                entries += 1;
                let fh = FileHeader::read(link)
                    .map_err(|e| from_peer(link, e, || format!("before entry {} of {count}", index + 1)))?;
                let lossy = String::from_utf8_lossy(&fh.name).into_owned();
                if let Some(p) = pruning.as_mut() {
                    p.announced.insert(lossy.clone());
                }
                if fh.kind == Kind::Dir {
                    match make_dir(&fh, ctx, dirs) {
                        Ok((path, id)) => {
                            answer(link, &Status::Ok)?;
                            if let Some(p) = pruning.as_mut() {
                                p.dirs.insert(path.clone(), id);
                            }
                            dirs.want(path, fh.mode, fh.mtime);
                        }
                        Err(msg) => {
                            answer(link, &Status::Error(msg.clone()))?;
                            failed(link, report, &lossy, &msg);
                        }
                    }
                    continue;
                }
                report.files += 1;
                let prepared = if pending.len() >= MAX_AHEAD {
                    Err(format!("more than {MAX_AHEAD} files announced ahead of their data"))
                } else {
                    prepare(&fh, ctx, dirs, &lossy, link)
                };
                match prepared {
                    Ok(Accepted::Skip(reason)) => {
                        answer(link, &Status::Skip(reason.clone()))?;
                        report.skipped += 1;
                        link.event(Event::Unchanged { path: &lossy, reason: &reason });
                    }
                    Ok(target) => {
                        let go = match &target {
                            Accepted::Receive(Target { held: Some(held), .. }) => {
                                Status::Resume { offset: held.len }
                            }
                            Accepted::Compare(_) => Status::Have,
                            _ => Status::Ok,
                        };
                        answer(link, &go)?;
                        pending.insert(index, Pending { fh, target, lossy });
                    }
                    Err(msg) => {
                        answer(link, &Status::Error(msg.clone()))?;
                        failed(link, report, &lossy, &msg);
                    }
                }
            }
            Tag::Stripe | Tag::Join => {
                return Err(Failure::Here(Error::Protocol(
                    "a stripe or join message in the middle of a session".into(),
                )))
            }
            Tag::Striped => {
                let Some(striped) = striped else {
                    return Err(Failure::Here(Error::Protocol(
                        "striped data in a session that is not striped".into(),
                    )));
                };
                let mut index = [0u8; 4];
                link.read_exact(&mut index)
                    .map_err(|e| from_peer(link, e, || "before a file's data".into()))?;
                let index = u32::from_le_bytes(index);
                let Some(Pending { fh, target: Accepted::Receive(target), lossy }) = pending.remove(&index)
                else {
                    return Err(Failure::Here(Error::Protocol(format!(
                        "striped data for entry {index}, which was not accepted for its data or was sent already"
                    ))));
                };
                let replace = ctx.force || target.replace;
                let result = receive_striped(link, striped, (index, &fh, &lossy), target, replace, ctx.idle)?;
                stored(link, report, &lossy, result)?;
            }
            Tag::Data => {
                let mut index = [0u8; 4];
                link.read_exact(&mut index)
                    .map_err(|e| from_peer(link, e, || "before a file's data".into()))?;
                let index = u32::from_le_bytes(index);
                let Some(Pending { fh, target, lossy }) = pending.remove(&index) else {
                    return Err(Failure::Here(Error::Protocol(format!(
                        "data for entry {index}, which was not accepted or was sent already"
                    ))));
                };
                let target = match target {
                    Accepted::Receive(target) => target,
                    Accepted::Compare(held) => {
                        match compare_file(link, &fh, &held)? {
                            Ok(reason) => {
                                answer(link, &Status::Skip(reason.clone()))?;
                                report.skipped += 1;
                                link.event(Event::Unchanged { path: &lossy, reason: &reason });
                            }
                            Err(msg) => {
                                answer(link, &Status::Error(msg.clone()))?;
                                failed(link, report, &lossy, &msg);
                            }
                        }
                        continue;
                    }
                    Accepted::Skip(_) => continue,
                };
                let replace = ctx.force || target.replace;
                let result = receive_file(link, &fh, target, replace, &lossy)?;
                stored(link, report, &lossy, result)?;
            }
        }
    }
}

/// Answer a file's data with its verdict, and report it.
fn stored(
    link: &mut Link<'_>,
    report: &mut ReceiveReport,
    path: &str,
    result: Result<super::data::Stored, String>,
) -> Result<(), Failure> {
    match result {
        Ok((took, hash, moved)) => {
            answer(link, &Status::Ok)?;
            report.stored += 1;
            report.bytes += moved;
            link.event(Event::FileDone { path, bytes: moved, took, hash: *hash.as_bytes() });
        }
        Err(msg) => {
            answer(link, &Status::Error(msg.clone()))?;
            failed(link, report, path, &msg);
        }
    }
    Ok(())
}

/// A directory entry: its path checked, the directory made where missing. Returns the path
/// relative to the output directory and the directory's identity, or the refusal for the sender.
fn make_dir(fh: &FileHeader, ctx: &Ctx<'_>, dirs: &mut SessionDirs) -> Result<(String, Id), String> {
    let parts = protocol::check_path(&fh.name)?;
    consent::check(&parts, ctx.allow_dotfiles)?;
    let dir = walk(ctx.root.dir(), &parts, Some(dirs.created_mut()))?;
    let id = Id::of(&dir).map_err(|e| format!("cannot check the directory: {e}"))?;
    Ok((parts.join("/"), id))
}
