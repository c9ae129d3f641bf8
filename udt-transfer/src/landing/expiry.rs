//! How long what an interrupted transfer left may be resumed
//! ([`crate::ReceiveOptions::partial_ttl`]; `udt recv --partial-ttl`).
//!
//! Invariant: a part is judged by its modification time (the last byte written into it); a
//! time in the future counts as fresh. `None` means never resume: every part of this user's is
//! then expired.

use std::time::{Duration, SystemTime};

/// How long an interrupted transfer's part stays resumable; `None`: never resume.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ttl(pub Option<Duration>);

impl Ttl {
    /// Whether a part last written at `mtime` is past its time at `now`.
    pub fn expired(self, mtime: SystemTime, now: SystemTime) -> bool {
        match self.0 {
            None => true,
            Some(ttl) => now.duration_since(mtime).is_ok_and(|age| age > ttl),
        }
    }

    /// Whether parts are kept for a resume at all.
    pub fn resumes(self) -> bool {
        self.0.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry() {
        let now = SystemTime::now();
        let day = Duration::from_secs(86_400);
        let ttl = Ttl(Some(day));
        assert!(!ttl.expired(now - day / 2, now));
        assert!(ttl.expired(now - day * 2, now));
        assert!(!ttl.expired(now + day, now), "a time in the future is fresh");
        assert!(Ttl(None).expired(now, now), "never resume: always expired");
        assert!(!Ttl(None).resumes());
    }
}
