//! Stopping a transfer from outside: a [`Cancel`] is polled by every blocking read and write
//! of a session (every [`crate::link::POLL`]), so a session stops within one slice of being
//! asked to, tells the peer why, and returns [`crate::Error::Interrupted`].
//!
//! Invariant: a token only ever goes from "running" to "stop requested", never back.

use std::fmt;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Whether a stop was asked for: a flag set from elsewhere (a signal handler, another thread),
/// or a function asked each time.
#[derive(Clone)]
pub struct Cancel(Check);

#[derive(Clone)]
enum Check {
    Never,
    Flag(Arc<AtomicBool>),
    With(Arc<dyn Fn() -> bool + Send + Sync>),
}

impl Cancel {
    /// A token that never asks to stop.
    pub fn never() -> Cancel {
        Cancel(Check::Never)
    }

    /// A token that asks to stop once `flag` is set.
    pub fn from_flag(flag: Arc<AtomicBool>) -> Cancel {
        Cancel(Check::Flag(flag))
    }

    /// A token that asks to stop once `check` returns true.
    pub fn from_fn(check: impl Fn() -> bool + Send + Sync + 'static) -> Cancel {
        Cancel(Check::With(Arc::new(check)))
    }

    /// Whether a stop was asked for.
    pub fn requested(&self) -> bool {
        match &self.0 {
            Check::Never => false,
            Check::Flag(flag) => flag.load(Ordering::SeqCst),
            Check::With(check) => check(),
        }
    }

    /// The I/O error a wait returns once a stop was asked for.
    pub(crate) fn error() -> io::Error {
        io::Error::other("interrupted")
    }
}

impl Default for Cancel {
    fn default() -> Cancel {
        Cancel::never()
    }
}

impl fmt::Debug for Cancel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Cancel").field(&self.requested()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        assert!(!Cancel::never().requested());
        let flag = Arc::new(AtomicBool::new(false));
        let cancel = Cancel::from_flag(Arc::clone(&flag));
        assert!(!cancel.requested());
        flag.store(true, Ordering::SeqCst);
        assert!(cancel.requested());
        assert!(Cancel::from_fn(|| true).requested());
    }
}
