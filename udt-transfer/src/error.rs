//! Why a transfer failed, as one enum a program can match on. The messages are the ones the
//! `udt` tool prints: a variant with a `source` reads `context: source` when its chain is
//! printed ([`Error::chain`]).
//!
//! A file that fails (refused, corrupted, gone on the sender's disk) is not an error of the
//! session: it is an [`crate::Event::FileFailed`] and the session goes on; an `Error` ends the
//! session.

use std::io;
use std::path::PathBuf;

use crate::protocol::{display_name, VERSION};

/// Why a session (or setting up a receiver) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A stop was requested ([`crate::Cancel`]); the peer was told, where it could be.
    #[error("interrupted")]
    Interrupted,
    /// The connection failed (or a local file operation the session needs), while doing what
    /// `context` says.
    #[error("{context}")]
    Io {
        /// What was being done.
        context: String,
        /// The failure.
        #[source]
        source: io::Error,
    },
    /// Sending: the peer is not a receiver of this protocol (why: what it sent or did).
    #[error("the peer is not a `udt recv` ({0})")]
    NotAReceiver(String),
    /// Sending: the receiver speaks another version of the protocol.
    #[error(
        "the receiver speaks protocol version {0}, this sender version {VERSION}: use the same \
         version of udt at both ends"
    )]
    ReceiverVersion(u16),
    /// Sending: the receiver does not take striped transfers (one that predates them).
    #[error(
        "the receiver does not take parallel streams (-P): it is a `udt recv` of an older version; \
         send with -P 1, or update it"
    )]
    StripingUnsupported,
    /// Sending: a connection of a striped transfer could not join it.
    #[error("connection {member} of the {connections} of the striped transfer could not join: {why}")]
    JoinFailed {
        /// Its number (from 1; the session's is 0).
        member: u16,
        /// Connections in all.
        connections: u16,
        /// Why.
        why: String,
    },
    /// Sending: a joined connection of a striped transfer failed (which, and why).
    #[error("{0}")]
    ConnectionLost(String),
    /// Sending: the receiver refused the session.
    #[error("the receiver refused the transfer: {0}")]
    Refused(String),
    /// Sending: the receiver stopped the session, for this reason.
    #[error("the receiver stopped: {0}")]
    ReceiverStopped(String),
    /// Receiving: the peer is not a sender of this protocol, or left before saying it was one
    /// (the whole sentence).
    #[error("{0}")]
    NotASender(String),
    /// Receiving: the sender speaks another version of the protocol.
    #[error("unsupported protocol version {0} (this receiver speaks {VERSION})")]
    SenderVersion(u16),
    /// Receiving: the sender stopped the session or its connection closed (why, and when).
    #[error("the sender stopped: {0}")]
    SenderStopped(String),
    /// The peer broke the protocol (the whole sentence).
    #[error("{0}")]
    Protocol(String),
    /// Receiving: the sender's bytes do not parse, at the moment `when` says.
    #[error("protocol error {when}")]
    Malformed {
        /// When (`after 2 of 3 entries`).
        when: String,
        /// What is wrong.
        #[source]
        source: io::Error,
    },
    /// Sending: a failure while sending one entry (`index` of `count`, from 1).
    #[error("sending {} ({index} of {count})", display_name(.path))]
    Sending {
        /// The entry's path.
        path: String,
        /// Its position, from 1.
        index: usize,
        /// Entries in the session.
        count: usize,
        /// What failed.
        #[source]
        source: Box<Error>,
    },
    /// Sending: more entries than the protocol counts (2^32).
    #[error("too many files")]
    TooManyEntries,
    /// Receiving: the sender asked to delete what it does not send, which this receiver does
    /// not allow ([`crate::ReceiveOptions::delete`]).
    #[error(
        "the sender asked to delete what it does not send (--delete), which this receiver does not \
         allow: start `udt recv` with --delete"
    )]
    DeleteNotAllowed,
    /// Receiving: the output directory is not a directory.
    #[error("{} is not a directory", .0.display())]
    NotADirectory(PathBuf),
}

impl Error {
    /// An [`Error::Io`].
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Error {
        Error::Io { context: context.into(), source }
    }

    /// The error with its sources, `: `-separated (`sending a (1 of 2): the receiver stopped:
    /// disk full`).
    pub fn chain(&self) -> String {
        let mut text = self.to_string();
        let mut source = std::error::Error::source(self);
        while let Some(e) = source {
            text.push_str(": ");
            text.push_str(&e.to_string());
            source = e.source();
        }
        text
    }

    /// The error a [`Error::Sending`] wraps (itself for any other).
    pub fn root(&self) -> &Error {
        match self {
            Error::Sending { source, .. } => source.root(),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_read_as_context_then_cause() {
        let e = Error::Sending {
            path: "a\tb".into(),
            index: 1,
            count: 2,
            source: Box::new(Error::io("sending data", io::Error::other("reset"))),
        };
        assert_eq!(e.chain(), "sending a\\tb (1 of 2): sending data: reset");
        assert!(matches!(e.root(), Error::Io { .. }));
        assert_eq!(Error::ReceiverStopped("full".into()).chain(), "the receiver stopped: full");
    }
}
