//! Sending: a [`Plan`]'s entries to a receiver, each file verified end to end with BLAKE3.
//!
//! A file the receiver refuses (it exists, say) is skipped and reported; a file the receiver
//! holds part of (an interrupted transfer) is sent from where that part ends, with the BLAKE3
//! hash of our bytes before it as proof that we hold them (the receiver learns nothing it did
//! not have, and tells us nothing about its part but its length); if the receiver's part
//! differs, that file fails and the next session sends it whole. A file that fails on this side
//! while being sent (it shrank) is aborted with its reason, which the receiver reports at once.
//!
//! Entries are announced up to [`WINDOW`] ahead of the data being sent, and the receiver
//! answers each message as it reads it, so its answers come back in the order of what was sent:
//! a go-ahead per announced entry, a verdict per file's data ([`Expect`]). Many small files then
//! cost a round trip per window, not one each.

mod file;
mod read_ahead;
mod stripe;

use std::collections::VecDeque;
use std::io::{self, Write};
use std::time::{Duration, Instant};

use udt::UdtStream;

use crate::link::Link;
use crate::protocol::{self, FileHeader, Greeting, Header, Status, VERSION};
use crate::tree::{Entry, Plan};
use crate::{Cancel, Error, Event, Observer};
use file::{send_file, Sent};
use stripe::Members;
pub use stripe::{Striping, STRIPE_MIN};

/// How long the receiver has to greet us once connected. A `udt recv` greets at once, a
/// `udt perf` server too, and a `udt cat --listen` closes on seeing our header.
pub const GREETING_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a normal close may wait for the receiver's last acknowledgements.
const CLOSE_LIMIT: Duration = Duration::from_secs(10);
/// How long an error path waits to tell the receiver, or to learn the receiver's reason.
pub(crate) const ERROR_LIMIT: Duration = Duration::from_secs(1);
/// Entries announced ahead of the data being sent, at most.
const WINDOW: usize = 256;

/// How to send.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct SendOptions {
    /// Stops the session (it tells the receiver why): [`Error::Interrupted`].
    pub cancel: Cancel,
    /// Ask the receiver to delete, in each directory sent, what the plan does not have
    /// (rsync's `--delete`), keeping what these patterns match: give the exclude patterns the
    /// plan was collected with. A receiver that does not allow it refuses the session
    /// ([`Error::Refused`]). Leave it off when the plan left out something that could not be
    /// read ([`Plan::failed`]): the receiver would delete its copy.
    pub delete: Option<Vec<String>>,
    /// Stripe the transfer over several connections (`udt send -P N`): files of at least
    /// [`STRIPE_MIN`] bytes go in ranges over all of them, smaller ones whole on the session's.
    /// A receiver that predates striping is refused before anything is sent
    /// ([`Error::StripingUnsupported`]).
    pub striping: Option<Striping>,
}

/// What a session that ran to its end did (per file: the events).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SendReport {
    /// Files the session was about ([`Plan::files`]).
    pub files: usize,
    /// Files stored and verified by the receiver.
    pub sent: usize,
    /// Paths of the files that failed, were refused or could not be sent (the plan's too).
    pub failed: Vec<String>,
    /// Files the receiver holds already (identical) or keeps its own of: not sent, no failure.
    pub skipped: usize,
    /// Bytes sent of the verified files.
    pub bytes: u64,
    /// Paths the receiver deleted ([`SendOptions::delete`]), relative to its directory.
    pub deleted: Vec<String>,
    /// Time from the receiver's acceptance of the session to its end.
    pub took: Duration,
}

/// Send `plan` over `stream` (a fresh connection to a receiver), then close it. `Ok` once the
/// session ran to its end, whatever became of each file (see the report and the events);
/// `Err` when the session broke off.
pub fn send(
    stream: UdtStream,
    plan: &Plan,
    options: &SendOptions,
    observer: &mut dyn Observer,
) -> Result<SendReport, Error> {
    let mut link = Link::new(stream, options.cancel.clone(), observer);
    let mut session = Session {
        sources: plan.entries(),
        report: SendReport { files: plan.files(), failed: plan.failed().to_vec(), ..SendReport::default() },
        expect: VecDeque::new(),
        announced: 0,
        start: None,
        delete: options.delete.as_deref(),
        striping: options.striping.as_ref(),
        members: None,
    };
    let mut result = session.run(&mut link);
    if let Some(members) = session.members.take() {
        // A joined connection that failed is the cause, whatever it broke on this one.
        if let (Err(e), Some(why)) = (&mut result, members.failure()) {
            if !options.cancel.requested() {
                *e = Error::ConnectionLost(why);
            }
        }
        members.finish(result.is_ok());
    }
    let took = session.start.map(|s| s.elapsed());
    match &result {
        Ok(()) => link.close(CLOSE_LIMIT),
        Err(_) => link.close(ERROR_LIMIT),
    }
    if let Some(took) = took {
        observer.event(Event::SessionEnded { files: session.report.files, took });
        session.report.took = took;
    }
    result.map(|()| session.report)
}

/// What the receiver answers next, in order.
enum Expect {
    /// Its go-ahead (or refusal) for entry `.0`.
    GoAhead(usize),
    /// Its verdict on the data of file `.0` ([`Sent`] says how the sending went).
    Verdict(usize, Sent),
}

/// One session's state.
struct Session<'p> {
    sources: &'p [Entry],
    report: SendReport,
    expect: VecDeque<Expect>,
    /// Entries announced so far.
    announced: usize,
    /// When the receiver accepted the session.
    start: Option<Instant>,
    /// The exclude patterns of a delete request.
    delete: Option<&'p [String]>,
    /// How to stripe the transfer, if at all.
    striping: Option<&'p Striping>,
    /// The joined connections of a striped transfer, once joined.
    members: Option<Members>,
}

impl Session<'_> {
    /// The whole exchange.
    fn run(&mut self, link: &mut Link<'_>) -> Result<(), Error> {
        let count = u32::try_from(self.sources.len()).map_err(|_| Error::TooManyEntries)?;
        let mut header = Header::new(count);
        if self.delete.is_some() {
            header.flags |= protocol::FLAG_DELETE;
        }
        if let Some(striping) = self.striping {
            // Only to a receiver that says it takes them: one that predates striping would take
            // the stripe message for a protocol error.
            if greet(link)? & protocol::HELLO_STRIPES == 0 {
                return Err(Error::StripingUnsupported);
            }
            header.flags |= protocol::FLAG_STRIPES;
            link.write_all(&header.encode())
                .and_then(|()| protocol::write_message_tag(link, protocol::Tag::Stripe))
                .and_then(|()| protocol::write_stripe(link, &striping.token, striping.connections))
                .map_err(|e| io_error(link, "sending the transfer header", e))?;
        } else if let Err(e) = self.open_before_greeting(link, header) {
            // Written before the greeting was read: a peer that is not a receiver may have
            // closed the connection already, and its greeting (or its absence) says why.
            return Err(greet(link).err().unwrap_or(e));
        }
        if self.striping.is_some() {
            self.open_announcements(link)?;
        } else {
            greet(link)?;
        }
        loop {
            let what = "waiting for the receiver to accept the transfer";
            match read_status(link).map_err(|e| io_error(link, what, e))? {
                Status::Ok => break,
                Status::Wait(msg) => link.event(Event::Waiting { reason: &msg }),
                Status::Error(msg) => return Err(Error::Refused(msg)),
                Status::Abort(msg) => return Err(Error::ReceiverStopped(msg)),
                Status::Resume { .. } | Status::Have | Status::Skip(_) | Status::Deleted(_) => {
                    return Err(Error::Protocol("protocol error: a file's status for the transfer".into()))
                }
            }
        }
        if let Some(striping) = self.striping {
            let members = Members::join(striping, link.cancel())?;
            link.set_cancel(members.cancel_with(link.cancel()));
            self.members = Some(members);
        }
        self.start = Some(Instant::now());
        link.event(Event::SessionStarted { entries: count });

        let sources = self.sources;
        for (i, src) in sources.iter().enumerate() {
            self.announce(link, i + WINDOW)?;
            let answer = self.next_go_ahead(link, i)?;
            let wrap = |e: Error| match e {
                Error::Interrupted => Error::Interrupted,
                e => Error::Sending {
                    path: src.path.clone(),
                    index: i + 1,
                    count: sources.len(),
                    source: Box::new(e),
                },
            };
            let members = self.members.as_ref();
            if let Some(sent) = send_file(link, (i, members), src, answer, &mut self.report).map_err(wrap)? {
                self.expect.push_back(Expect::Verdict(i, sent));
            }
        }
        protocol::write_message_tag(link, protocol::Tag::End)
            .map_err(|e| io_error(link, "ending the transfer", e))?;
        while !self.expect.is_empty() {
            self.next_go_ahead(link, sources.len())?;
        }
        if self.delete.is_some() {
            self.deletions(link)?;
        }
        Ok(())
    }

    /// After the last answer of a session with a delete request: what the receiver deleted
    /// and could not delete, until its `ok`.
    fn deletions(&mut self, link: &mut Link<'_>) -> Result<(), Error> {
        loop {
            let what = "waiting for the receiver's deletions";
            match read_status(link).map_err(|e| io_error(link, what, e))? {
                Status::Ok => return Ok(()),
                Status::Deleted(path) => {
                    link.event(Event::Deleted { path: &path });
                    self.report.deleted.push(path);
                }
                Status::Error(msg) => failed(link, &mut self.report, "--delete", &msg),
                Status::Abort(msg) => return Err(Error::ReceiverStopped(msg)),
                _ => return Err(Error::Protocol("protocol error: a file's status after the end".into())),
            }
        }
    }

    /// The transfer's header and everything that goes with it before the receiver's greeting.
    fn open_before_greeting(&mut self, link: &mut Link<'_>, header: Header) -> Result<(), Error> {
        link.write_all(&header.encode()).map_err(|e| io_error(link, "sending the transfer header", e))?;
        self.open_announcements(link)
    }

    /// The delete request and the first window of announcements: they go with the transfer's
    /// header, and the receiver reads them once it accepts the transfer, which saves the round
    /// trip of waiting first.
    fn open_announcements(&mut self, link: &mut Link<'_>) -> Result<(), Error> {
        if let Some(patterns) = self.delete {
            protocol::write_message_tag(link, protocol::Tag::Delete)
                .and_then(|()| protocol::write_patterns(link, patterns))
                .map_err(|e| io_error(link, "asking the receiver to delete", e))?;
        }
        self.announce(link, WINDOW)
    }

    /// Announce entries up to (not including) `until`.
    fn announce(&mut self, link: &mut Link<'_>, until: usize) -> Result<(), Error> {
        while self.announced < self.sources.len().min(until) {
            let src = &self.sources[self.announced];
            protocol::write_message_tag(link, protocol::Tag::Entry)
                .map_err(|e| io_error(link, "announcing an entry", e))?;
            FileHeader {
                kind: src.kind,
                name: src.path.as_bytes().to_vec(),
                size: src.size,
                mode: src.mode,
                mtime: src.mtime,
            }
            .write(link)
            .map_err(|e| io_error(link, format!("announcing {}", protocol::display_name(&src.path)), e))?;
            self.expect.push_back(Expect::GoAhead(self.announced));
            self.announced += 1;
        }
        Ok(())
    }

    /// Read the receiver's answers in order until the go-ahead for entry `i` (reporting the
    /// verdicts that come before it); with `i` past the last entry, read one answer.
    fn next_go_ahead(&mut self, link: &mut Link<'_>, i: usize) -> Result<Status, Error> {
        while let Some(next) = self.expect.pop_front() {
            let status =
                read_status(link).map_err(|e| io_error(link, "waiting for the receiver's answer", e))?;
            if let Status::Abort(msg) = &status {
                return Err(Error::ReceiverStopped(msg.clone()));
            }
            match next {
                Expect::GoAhead(j) if j == i => return Ok(status),
                Expect::GoAhead(j) => {
                    return Err(Error::Protocol(format!(
                        "protocol error: the go-ahead for entry {j} came out of order"
                    )))
                }
                Expect::Verdict(j, sent) => {
                    let path = self.sources[j].path.as_str();
                    match (status, sent.failure) {
                        (
                            Status::Wait(_)
                            | Status::Resume { .. }
                            | Status::Have
                            | Status::Abort(_)
                            | Status::Deleted(_),
                            _,
                        ) => {
                            return Err(Error::Protocol(
                                "protocol error: an unexpected status after a file's data".into(),
                            ))
                        }
                        (_, Some(reason)) => {
                            failed(link, &mut self.report, path, &format!("{reason}; not sent"))
                        }
                        (Status::Skip(reason), None) => {
                            self.report.skipped += 1;
                            link.event(Event::Unchanged { path, reason: &reason });
                        }
                        (Status::Ok, None) if sent.compared => {
                            return Err(Error::Protocol(
                                "protocol error: `ok` for a file compared, not sent".into(),
                            ))
                        }
                        (Status::Ok, None) => {
                            self.report.sent += 1;
                            self.report.bytes += sent.bytes;
                            let hash = *sent.hash.as_bytes();
                            link.event(Event::FileDone { path, bytes: sent.bytes, took: sent.took, hash });
                        }
                        (Status::Error(msg), None) => {
                            failed(link, &mut self.report, path, &format!("failed on the receiver: {msg}"))
                        }
                    }
                    if i >= self.sources.len() {
                        return Ok(Status::Ok);
                    }
                }
            }
        }
        Ok(Status::Ok)
    }
}

/// A file failed: reported and told.
pub(crate) fn failed(link: &mut Link<'_>, report: &mut SendReport, path: &str, reason: &str) {
    report.failed.push(path.to_string());
    link.event(Event::FileFailed { path, reason });
}

/// An I/O failure while doing `context`, or the stop request that caused it.
pub(crate) fn io_error(link: &Link<'_>, context: impl Into<String>, e: io::Error) -> Error {
    if link.cancelled() {
        Error::Interrupted
    } else {
        Error::io(context, e)
    }
}

/// Read the receiver's greeting: anything but a receiver of our version ends the session.
/// Returns its flags ([`protocol::HELLO_STRIPES`]).
fn greet(link: &mut Link<'_>) -> Result<u16, Error> {
    link.set_deadline(Some(GREETING_TIMEOUT), "greeting from the receiver");
    let (greeting, flags) = match protocol::read_greeting_with_flags(link) {
        Ok(g) => g,
        Err(e) if e.kind() == io::ErrorKind::TimedOut && !link.cancelled() => {
            return Err(Error::NotAReceiver(format!("no greeting within {} s", GREETING_TIMEOUT.as_secs())))
        }
        Err(_) if link.cancelled() => return Err(Error::Interrupted),
        Err(e) => {
            return Err(Error::NotAReceiver(format!(
                "it closed the connection without a greeting: {}",
                closed_reason(&e)
            )))
        }
    };
    link.set_deadline(None, "");
    match greeting {
        Greeting::Receiver(v) if v == VERSION => Ok(flags),
        Greeting::Receiver(v) => Err(Error::ReceiverVersion(v)),
        Greeting::PerfServer(_) => Err(Error::NotAReceiver("it is a `udt perf server`".into())),
        Greeting::Other(what) => Err(Error::NotAReceiver(what)),
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
fn read_status(link: &mut Link<'_>) -> io::Result<Status> {
    Status::read(link).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            io::Error::new(io::ErrorKind::UnexpectedEof, "the receiver closed the connection")
        } else {
            e
        }
    })
}
