//! Virtual time for the sans-IO core.
//!
//! The core never reads a clock: every input carries a `now` of type [`Instant`], a count of
//! nanoseconds since an epoch the driver chooses (process start for the runtime, zero for the
//! simulator). Durations are `std::time::Duration`. Nanoseconds, not the microseconds of the
//! UDT4 wire, because packets 1.2 us apart (10 Gb/s) must still give distinct arrival gaps.
//!
//! Invariant: an `Instant` never goes backwards within one connection; drivers guarantee it.

use std::ops::{Add, AddAssign, Sub};
use std::time::Duration;

/// A point in time, in nanoseconds since the driver's epoch.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

impl Instant {
    /// The driver's epoch.
    pub const ZERO: Instant = Instant(0);

    /// An instant `us` microseconds after the epoch.
    pub const fn from_micros(us: u64) -> Self {
        Instant(us.saturating_mul(1000))
    }

    /// An instant `ns` nanoseconds after the epoch.
    pub const fn from_nanos(ns: u64) -> Self {
        Instant(ns)
    }

    /// Whole microseconds since the epoch.
    pub const fn as_micros(self) -> u64 {
        self.0 / 1000
    }

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Time elapsed from `earlier` to `self`, zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// The UDT wire timestamp: microseconds since `start`, truncated to 32 bits.
    pub fn wire_timestamp(self, start: Instant) -> u32 {
        (self.0.saturating_sub(start.0) / 1000) as u32
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(nanos(d)))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(nanos(d)))
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Saturating: an earlier minus a later instant is zero.
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_since(earlier)
    }
}

/// The earlier of two optional deadlines (`None`: no deadline).
pub fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl std::fmt::Debug for Instant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:09}s", self.0 / 1_000_000_000, self.0 % 1_000_000_000)
    }
}

/// Whole microseconds in a duration, saturating at `u64::MAX`.
pub fn duration_micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_keeps_nanos_and_saturates() {
        let t = Instant::from_micros(10);
        assert_eq!((t + Duration::from_nanos(2_999)).as_nanos(), 12_999);
        assert_eq!((t + Duration::from_nanos(2_999)).as_micros(), 12);
        assert_eq!((t - Duration::from_micros(20)).as_micros(), 0);
        assert_eq!(t - Instant::from_micros(30), Duration::ZERO);
        assert_eq!(Instant::from_micros(30) - t, Duration::from_micros(20));
        assert_eq!((t + Duration::MAX).as_nanos(), u64::MAX);
    }

    #[test]
    fn wire_timestamp_wraps() {
        let start = Instant::from_micros(5);
        assert_eq!(Instant::from_micros(5 + (1 << 32) + 7).wire_timestamp(start), 7);
    }
}
