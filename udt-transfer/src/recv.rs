//! Receiving: a [`Receiver`] takes sessions from senders into one directory.
//!
//! What a sender may do to this host, in order of the checks: a path must be made of plain
//! names ([`crate::protocol::check_path`]); a top-level name that begins with a dot needs
//! [`ReceiveOptions::allow_dotfiles`] ([`consent`]); everything is written below the output
//! directory through directory descriptors, never following a symbolic link
//! ([`crate::landing`]); an existing file is kept when the sender proves it holds the same
//! (same size and BLAKE3), or by [`ReceiveOptions::update`] and
//! [`ReceiveOptions::ignore_existing`], else refused unless [`ReceiveOptions::force`]; the
//! bytes go to a private temporary file, hashed as they arrive, and only a file whose BLAKE3
//! hash matches the sender's is moved into place. Permissions are the sender's at most, masked
//! by this host's umask, never group- or other-writable, and only on what this session created.
//! Nothing is deleted unless [`ReceiveOptions::delete`] allows a sender's request, and then only
//! inside the directories the session sent.
//!
//! Every connection is greeted at once ([`greet`]), so a sender knows it reached a receiver and
//! whether it waits its turn; [`Receiver::serve`] then runs the session. Several sessions may
//! run at once on one receiver (one thread each): a path being received by one is refused to
//! the others ([`claims`]).
//!
//! Modules: [`claims`] (names being received now), [`consent`] (the dotfile rule), [`session`]
//! (one connection's exchange), [`prepare`] (accepting an entry), [`data`] (a file's bytes and
//! its commit).

mod claims;
mod consent;
mod data;
mod join;
mod member;
mod order;
mod prepare;
mod ranges;
mod session;
mod store;
mod stripe;

use std::io::{self, Write};
use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use udt::UdtStream;

use crate::landing::{self, mode, Root, Swept, Ttl};
use crate::protocol::{self, Status, VERSION};
use crate::{Cancel, Error, Observer};
use claims::Claims;
use join::Joins;
use session::Ctx;

/// How to receive.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReceiveOptions {
    /// Replace files that already exist (default: refuse them).
    pub force: bool,
    /// Keep an existing file that is as new as the sender's or newer (by modification time);
    /// replace an older one (rsync's `--update`).
    pub update: bool,
    /// Keep every existing file, whatever the sender's (rsync's `--ignore-existing`).
    pub ignore_existing: bool,
    /// Accept top-level names that begin with a dot (`.ssh`, `.bashrc`; default: refuse them).
    pub allow_dotfiles: bool,
    /// Refuse any file larger than this, before any of it is written (files that would not
    /// fit the free space are refused anyway).
    pub max_size: Option<u64>,
    /// How long an interrupted transfer's part may be resumed (default 3 days); older parts
    /// are removed when a session meets them and by [`Receiver::sweep`].
    pub partial_ttl: Ttl,
    /// Drop a sender that sends nothing for this long while the connection stays up (default
    /// 30 s; `None`: as long as the connection lives).
    pub idle_timeout: Option<Duration>,
    /// Honour a sender's request to delete, in each directory it sends, what its tree does not
    /// have (rsync's `--delete`; default: refuse such a session). Only below the output
    /// directory, never through a symbolic link, and never what the sender's exclude patterns
    /// match.
    pub delete: bool,
    /// Stops the sessions (the sender is told why): [`Error::Interrupted`].
    pub cancel: Cancel,
}

impl Default for ReceiveOptions {
    fn default() -> ReceiveOptions {
        ReceiveOptions {
            force: false,
            update: false,
            ignore_existing: false,
            allow_dotfiles: false,
            max_size: None,
            partial_ttl: Ttl(Some(Duration::from_secs(3 * 86_400))),
            idle_timeout: Some(Duration::from_secs(30)),
            delete: false,
            cancel: Cancel::never(),
        }
    }
}

/// What a session that ran to its end did (per file: the events).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReceiveReport {
    /// Files the sender announced.
    pub files: usize,
    /// Files stored, verified.
    pub stored: usize,
    /// Files kept as they were: identical to the sender's, or kept by `update` or
    /// `ignore_existing`.
    pub skipped: usize,
    /// Paths (as sent) of the files and directories that failed or were refused.
    pub failed: Vec<String>,
    /// Bytes received of the stored files.
    pub bytes: u64,
    /// Paths deleted at the sender's request ([`ReceiveOptions::delete`]).
    pub deleted: Vec<String>,
    /// Time from the session's acceptance to its end.
    pub took: Duration,
}

/// Receives into one directory; shared by the sessions of all its connections.
#[derive(Debug)]
pub struct Receiver {
    root: Root,
    claims: Claims,
    joins: Arc<Joins>,
    options: ReceiveOptions,
}

impl Receiver {
    /// A receiver writing into the directory `out` (which must exist). Reads the process's
    /// umask, which can mean setting it for an instant: create the receiver before threads
    /// that create files start.
    pub fn new(out: &Path, options: ReceiveOptions) -> Result<Receiver, Error> {
        let umask = mode::read_umask();
        let root = Root::open(out, umask, options.partial_ttl)?;
        Ok(Receiver { root, claims: Claims::default(), joins: Arc::default(), options })
    }

    /// The output directory as resolved when it was opened (for this host's messages; never
    /// sent to a sender).
    pub fn out(&self) -> &Path {
        self.root.shown()
    }

    /// Remove what interrupted transfers left below the output directory and nobody resumed
    /// within [`ReceiveOptions::partial_ttl`] (a bounded walk; see [`Swept`]).
    pub fn sweep(&self) -> Swept {
        landing::sweep(&self.root)
    }

    /// Run one session on `stream`, a connection already greeted ([`greet`]), and close it:
    /// normally once all is acknowledged, after a failure with the reason sent first (unless
    /// the sender is the one that stopped). `Ok` once the session ran to its end, whatever
    /// became of each file (see the report and the events).
    pub fn serve(&self, stream: UdtStream, observer: &mut dyn Observer) -> Result<ReceiveReport, Error> {
        let ctx = Ctx {
            root: &self.root,
            claims: &self.claims,
            force: self.options.force,
            update: self.options.update,
            ignore_existing: self.options.ignore_existing,
            skips: false,
            max_size: self.options.max_size,
            allow_dotfiles: self.options.allow_dotfiles,
            allow_delete: self.options.delete,
            joins: &self.joins,
            idle: self.options.idle_timeout,
        };
        session::serve(stream, &ctx, &self.options, observer)
    }

    /// A handle on this receiver's striped transfers, for the thread that accepts connections:
    /// see [`Members`].
    pub fn members(&self) -> Members {
        Members { joins: Arc::clone(&self.joins), options: self.options.clone() }
    }
}

/// The striped transfers of a [`Receiver`] (`udt send -P N`), shared with the thread that
/// accepts connections: a striped session's other connections come while its session is
/// served, so they must be served at once, whatever the number of transfers being served.
#[derive(Clone, Debug)]
pub struct Members {
    joins: Arc<Joins>,
    options: ReceiveOptions,
}

impl Members {
    /// Whether a striped transfer whose session came from `ip` still waits for connections to
    /// join (for at most 10 s after its session was accepted): a new connection from there is
    /// most likely one of them, to be served at once with [`Members::serve`].
    pub fn expects(&self, ip: IpAddr) -> bool {
        self.joins.expects(ip)
    }

    /// Serve a connection (greeted) that joins a striped transfer until the transfer ends; a
    /// connection that is not one is refused.
    pub fn serve(&self, stream: UdtStream) -> Result<(), Error> {
        member::serve_stream(stream, &self.joins, &self.options)
    }
}

/// Where a newly accepted connection stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Turn<'a> {
    /// It is served now.
    Now,
    /// It waits for other sessions to end (told so, with this reason).
    Wait(&'a str),
    /// It is refused (with this reason); close it.
    Refused(&'a str),
}

/// Greet a newly accepted connection at once, so its sender knows it reached a receiver of
/// this protocol, and tell it its turn.
pub fn greet(mut stream: &UdtStream, turn: Turn<'_>) -> io::Result<()> {
    let mut first =
        protocol::hello_with_flags(protocol::RECEIVER_MAGIC, VERSION, protocol::HELLO_STRIPES).to_vec();
    match turn {
        Turn::Now => {}
        Turn::Wait(why) => Status::Wait(why.into()).write(&mut first)?,
        Turn::Refused(why) => Status::Error(why.into()).write(&mut first)?,
    }
    stream.write_all(&first)
}
