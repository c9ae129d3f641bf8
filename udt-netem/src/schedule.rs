//! A bottleneck whose rate changes during a run, and the queueing delay each direction's
//! packets met, both timed from an origin that the emulator's user restarts (a benchmark at
//! the start of each transfer: [`crate::EmulatorHandle::restart_schedule`]).
//!
//! Invariants: the rate at a time since the origin is the last step at or before it, the
//! link's own rate before the first; the timeline holds, per [`Timeline::BUCKET`] since the
//! origin, the longest time a packet arriving then waited at the bottleneck (serialisation
//! included), and nothing past [`Timeline::CAPACITY`] buckets. Forwarders write it while the
//! handle reads or restarts it: a sample racing a restart may land in the new run's first
//! bucket, never anywhere else.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

use serde::Serialize;

/// From `at` after the origin, the bottleneck runs at `rate_bps` (bits per second of IP
/// packets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RateStep {
    /// When, since the origin.
    #[serde(rename = "at_us", serialize_with = "micros")]
    pub at: Duration,
    /// The rate from then on, bits per second.
    pub rate_bps: u64,
}

fn micros<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// A schedule of rate steps, as one command-line value.
pub type RateSteps = Vec<RateStep>;

/// The rate at `since` the origin: the last of `steps` (sorted by time) at or before it, else
/// `base`.
pub fn rate_at(base: u64, steps: &[RateStep], since: Duration) -> u64 {
    steps.iter().take_while(|s| s.at <= since).last().map_or(base, |s| s.rate_bps)
}

/// The schedule's origin and one direction's queueing-delay timeline, shared by its
/// forwarder and the emulator's handle.
#[derive(Debug)]
pub struct Timeline {
    /// The origin, nanoseconds since the emulator's epoch.
    origin_ns: AtomicU64,
    /// Longest wait per bucket, microseconds.
    buckets: Box<[AtomicU32]>,
    /// One past the last bucket written since the origin.
    used: AtomicUsize,
}

impl Timeline {
    /// Length of one bucket.
    pub const BUCKET: Duration = Duration::from_millis(100);
    /// Buckets kept: ten minutes.
    pub const CAPACITY: usize = 6000;

    /// An empty timeline whose origin is the epoch.
    pub fn new() -> Self {
        Timeline {
            origin_ns: AtomicU64::new(0),
            buckets: (0..Self::CAPACITY).map(|_| AtomicU32::new(0)).collect(),
            used: AtomicUsize::new(0),
        }
    }

    /// Restart at `now` (since the epoch): the schedule starts again and the timeline is
    /// emptied.
    pub fn restart(&self, now: Duration) {
        let used = self.used.swap(0, Relaxed).min(Self::CAPACITY);
        for b in &self.buckets[..used] {
            b.store(0, Relaxed);
        }
        self.origin_ns.store(u64::try_from(now.as_nanos()).unwrap_or(u64::MAX), Relaxed);
    }

    /// The time since the origin at `now` (since the epoch).
    pub fn since(&self, now: Duration) -> Duration {
        now.saturating_sub(Duration::from_nanos(self.origin_ns.load(Relaxed)))
    }

    /// A packet arriving `since` the origin waited `wait` at the bottleneck.
    pub fn record(&self, since: Duration, wait: Duration) {
        let i = usize::try_from(since.as_nanos() / Self::BUCKET.as_nanos()).unwrap_or(usize::MAX);
        let Some(bucket) = self.buckets.get(i) else { return };
        bucket.fetch_max(u32::try_from(wait.as_micros()).unwrap_or(u32::MAX), Relaxed);
        self.used.fetch_max(i + 1, Relaxed);
    }

    /// The longest wait of each bucket since the origin, milliseconds (0 where no packet came).
    pub fn snapshot(&self) -> Vec<f64> {
        let used = self.used.load(Relaxed).min(Self::CAPACITY);
        self.buckets[..used].iter().map(|b| f64::from(b.load(Relaxed)) / 1000.0).collect()
    }
}

impl Default for Timeline {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn the_rate_is_the_last_step_reached() {
        let steps = [RateStep { at: S * 10, rate_bps: 50 }, RateStep { at: S * 20, rate_bps: 100 }];
        assert_eq!(rate_at(100, &steps, S * 5), 100);
        assert_eq!(rate_at(100, &steps, S * 10), 50);
        assert_eq!(rate_at(100, &steps, S * 19), 50);
        assert_eq!(rate_at(100, &steps, S * 25), 100);
        assert_eq!(rate_at(100, &[], S * 25), 100);
    }

    #[test]
    fn the_timeline_keeps_each_buckets_longest_wait_from_the_origin() {
        let t = Timeline::new();
        t.restart(S * 3);
        assert_eq!(t.since(S * 3 + Timeline::BUCKET * 2), Timeline::BUCKET * 2);
        assert_eq!(t.since(S), Duration::ZERO, "before the origin is the origin");
        t.record(Duration::from_millis(50), Duration::from_millis(4));
        t.record(Duration::from_millis(60), Duration::from_millis(2));
        t.record(Duration::from_millis(250), Duration::from_millis(7));
        assert_eq!(t.snapshot(), vec![4.0, 0.0, 7.0]);
        t.record(S * 100_000, Duration::from_millis(1));
        assert_eq!(t.snapshot().len(), 3, "past the capacity nothing is kept");
        t.restart(S * 10);
        assert!(t.snapshot().is_empty());
        t.record(Duration::ZERO, Duration::from_millis(1));
        assert_eq!(t.snapshot(), vec![1.0]);
    }
}
