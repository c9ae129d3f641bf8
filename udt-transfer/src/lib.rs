//! Files and directory trees over a UDT stream: the protocol of `udt send` and `udt recv`
//! (described in this crate's `PROTOCOL.md`), as a library.
//!
//! - Sending: [`Plan::collect`] expands paths (files, directory trees) into entries, then
//!   [`send`] sends them over a connected [`udt::UdtStream`]. Each file is verified end to end
//!   with BLAKE3; a file the receiver holds part of (an interrupted transfer) resumes where that
//!   part ends, once the sender proved it holds the same bytes.
//! - Receiving: a [`Receiver`] writes into one directory with the rules of
//!   [`recv`](crate::Receiver): paths confined below it (no `..`, no symbolic link followed,
//!   every call relative to a directory descriptor), top-level dotfiles only with consent,
//!   existing files kept unless forced, permissions the sender's at most and masked by the
//!   umask, bytes in a private temporary file until their hash matches, expired parts swept.
//!   Accept a connection, [`greet`] it, then [`Receiver::serve`] it.
//! - Parallel streams: with [`SendOptions::striping`] ([`Striping`]: a random token, a count, a
//!   way to open more connections) a transfer goes over several connections, large files in
//!   ranges over all of them, each file verified as one; the receiver serves the further
//!   connections like any other ([`Receiver::serve`]), or at once from its accepting thread
//!   ([`Receiver::members`]).
//! - Both report what happens through an [`Observer`] ([`Event`]: per-file outcomes, progress,
//!   resumes) and stop on a [`Cancel`]; the library prints nothing (diagnostics go to
//!   `tracing`). A session that broke off returns an [`Error`].
//!
//! [`protocol`] is the wire format itself (framing, statuses, the name rules), self-contained.
//!
//! ```no_run
//! use std::path::PathBuf;
//! use udt_transfer::{send, Ignore, Plan, SendOptions};
//!
//! let plan = Plan::collect(&[PathBuf::from("photos")], None, &mut Ignore);
//! let stream = udt::UdtStream::connect("192.0.2.1:9000")?;
//! let report = send(stream, &plan, &SendOptions::default(), &mut Ignore)?;
//! println!("{} of {} files sent", report.sent, report.files);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod cancel;
mod error;
mod exclude;
mod landing;
mod link;
mod observer;
pub mod protocol;
mod recv;
mod send;
mod tree;

pub use cancel::Cancel;
pub use error::Error;
pub use exclude::Exclude;
pub use landing::{Swept, Ttl};
pub use link::{close_within, POLL};
pub use observer::{Event, Ignore, Observer};
pub use protocol::{display_name, Kind};
pub use recv::{greet, Members, ReceiveOptions, ReceiveReport, Receiver, Turn};
pub use send::{send, SendOptions, SendReport, Striping, GREETING_TIMEOUT, STRIPE_MIN};
pub use tree::{Entry, Plan};

/// The README's example, compiled as a doc-test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
