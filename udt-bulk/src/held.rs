//! A sink a session either borrows (the socket setup keeps the file and hands it in) or owns
//! (the simulator builds sessions that live on their own).
//!
//! Two variants rather than a `Box<dyn Sink + 'a>`: an owned sink is `'static`, so a session
//! that owns one holds no borrow, and one that borrows holds nothing it must drop.

use std::ops::{Deref, DerefMut};

use crate::storage::Sink;

/// Borrowed or owned sink.
pub enum HeldSink<'a> {
    /// Borrowed from the caller for the session's life.
    Borrowed(&'a mut (dyn Sink + 'a)),
    /// Owned by the session.
    Owned(Box<dyn Sink>),
}

impl<'a> Deref for HeldSink<'a> {
    type Target = dyn Sink + 'a;
    fn deref(&self) -> &(dyn Sink + 'a) {
        match self {
            HeldSink::Borrowed(t) => &**t,
            HeldSink::Owned(t) => &**t,
        }
    }
}

impl<'a> DerefMut for HeldSink<'a> {
    fn deref_mut(&mut self) -> &mut (dyn Sink + 'a) {
        match self {
            HeldSink::Borrowed(t) => &mut **t,
            HeldSink::Owned(t) => &mut **t,
        }
    }
}
