//! Delivery latency of the test messages: a shared histogram with geometric buckets (10% wide,
//! 1 us to about 100 s), safe to fill from many tasks at once.

use std::sync::atomic::{AtomicU64, Ordering};

/// Each bucket's upper bound is this much above its lower bound.
const RATIO: f64 = 1.1;
const BUCKETS: usize = 200;

/// The latencies of a run: message 0 of each connection (sent as it opened, so it also waited
/// for the listener to accept) and all the others.
#[derive(Debug)]
pub struct Latencies {
    /// Message 0 of each connection.
    pub first: Latency,
    /// Messages 1 and on.
    pub steady: Latency,
}

impl Latencies {
    /// Empty histograms.
    pub fn new() -> Latencies {
        Latencies { first: Latency::new(), steady: Latency::new() }
    }
}

/// Latency histogram in microseconds.
#[derive(Debug)]
pub struct Latency {
    buckets: Vec<AtomicU64>,
    max_us: AtomicU64,
}

impl Latency {
    /// An empty histogram.
    pub fn new() -> Latency {
        Latency { buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(), max_us: AtomicU64::new(0) }
    }

    /// Count one latency of `us` microseconds.
    pub fn record(&self, us: u64) {
        let k = (((us + 1) as f64).ln() / RATIO.ln()) as usize;
        self.buckets[k.min(BUCKETS - 1)].fetch_add(1, Ordering::Relaxed);
        self.max_us.fetch_max(us, Ordering::Relaxed);
    }

    /// Messages counted.
    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).sum()
    }

    /// The `q` quantile (0..=1) in ms, as its bucket's upper bound (0 when empty).
    pub fn quantile_ms(&self, q: f64) -> f64 {
        let total = self.count();
        if total == 0 {
            return 0.0;
        }
        let rank = ((q * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (k, b) in self.buckets.iter().enumerate() {
            seen += b.load(Ordering::Relaxed);
            if seen >= rank {
                let upper_us = RATIO.powi(k as i32 + 1) - 1.0;
                return (upper_us / 1e3).min(self.max_ms());
            }
        }
        self.max_ms()
    }

    /// The largest latency counted, ms.
    pub fn max_ms(&self) -> f64 {
        self.max_us.load(Ordering::Relaxed) as f64 / 1e3
    }

    /// Messages slower than `ms` (to the bucket's resolution: those in buckets wholly above it).
    pub fn above_ms(&self, ms: f64) -> u64 {
        let us = ms * 1e3;
        self.buckets
            .iter()
            .enumerate()
            .filter(|(k, _)| RATIO.powi(*k as i32) - 1.0 >= us)
            .map(|(_, b)| b.load(Ordering::Relaxed))
            .sum()
    }
}
