//! What a transfer tells its caller while it runs: every file's outcome, progress of the file
//! being moved, and the moments a user would want to hear about (queued at a busy receiver,
//! resuming, something set aside). The library prints nothing; a program shows these as it
//! likes (the `udt` tool: progress bars, summary lines, JSON).
//!
//! Invariants: per file, [`Event::DataStarted`] comes before its [`Event::Moved`] and
//! [`Event::Idle`] events and [`Event::DataEnded`] after them; a file's outcome
//! ([`Event::FileDone`], [`Event::Unchanged`] or [`Event::FileFailed`]) comes once, after its
//! data ended (a file compared or skipped moves no data and has no data events). Paths are
//! the `/`-separated paths as sent, which may hold anything a file name may (pass them through
//! [`crate::display_name`] before showing them on a terminal); reasons are safe to show.

use std::time::Duration;

/// One thing that happened in a transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event<'a> {
    /// Sending: something under a directory is left out: a symbolic link (never followed) or
    /// not a regular file. Not a failure.
    Skipped {
        /// Its path.
        path: &'a str,
        /// What it is.
        what: &'a str,
    },
    /// Sending: the receiver is busy and has queued the transfer (possibly said again).
    Waiting {
        /// The receiver's words (may be empty).
        reason: &'a str,
    },
    /// The session was accepted: this many entries follow. A session's time runs from here.
    SessionStarted {
        /// Entries (files and directories) announced.
        entries: u32,
    },
    /// Sending: the receiver holds the first `offset` bytes of this file from an interrupted
    /// transfer; the data goes on from there if the receiver's part matches ours.
    Resuming {
        /// The file's path.
        path: &'a str,
        /// Bytes the receiver holds.
        offset: u64,
    },
    /// Receiving: something in the way of a file's temporary file is not this receiver's own
    /// part: it is left as it is and the file is received whole under another name.
    SetAside {
        /// The file's path.
        path: &'a str,
        /// The name of what is set aside, in the file's directory.
        temp: &'a str,
        /// Why it is not used.
        reason: &'a str,
    },
    /// A file's data starts moving.
    DataStarted {
        /// The file's path.
        path: &'a str,
        /// Bytes to move this time (less than the file's size when it resumes).
        bytes: u64,
    },
    /// More of the current file's data moved.
    Moved {
        /// Bytes, since the last event.
        bytes: u64,
    },
    /// A wait of [`crate::POLL`] went by with no byte of the current file moving.
    Idle,
    /// The current file's data stopped moving (all of it, or the file or session failed).
    DataEnded,
    /// A file arrived whole and verified (BLAKE3 at both ends).
    FileDone {
        /// The file's path.
        path: &'a str,
        /// Bytes moved this time.
        bytes: u64,
        /// Time its data took.
        took: Duration,
        /// BLAKE3 of the whole file.
        hash: [u8; 32],
    },
    /// A file not moved, and no failure: the receiver holds it identical (same size and
    /// BLAKE3), or keeps its own by its rules (`--update`, `--ignore-existing`).
    Unchanged {
        /// The file's path.
        path: &'a str,
        /// Why, safe to show.
        reason: &'a str,
    },
    /// `--delete`: the receiver deleted this path (relative to its directory), which the
    /// sender's tree does not have.
    Deleted {
        /// The path deleted.
        path: &'a str,
    },
    /// A file or directory failed, was refused, or could not be sent.
    FileFailed {
        /// Its path (as given, for what could not be sent at all).
        path: &'a str,
        /// Why, safe to show.
        reason: &'a str,
    },
    /// The session ended (normally or not), after [`Event::SessionStarted`].
    SessionEnded {
        /// Files the session was about, failures found before sending included.
        files: usize,
        /// Time from its start.
        took: Duration,
    },
}

/// Receives a transfer's events, in order, on the thread that runs the transfer.
pub trait Observer {
    /// One event.
    fn event(&mut self, event: Event<'_>);
}

impl<F: FnMut(Event<'_>)> Observer for F {
    fn event(&mut self, event: Event<'_>) {
        self(event)
    }
}

/// An observer that ignores everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ignore;

impl Observer for Ignore {
    fn event(&mut self, _: Event<'_>) {}
}
