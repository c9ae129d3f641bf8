//! Per-direction counters, written by that direction's forwarder thread and read at any time
//! by others ([`DirectionCounters::snapshot`]), and the histogram of release errors (how late
//! a packet was written against its scheduled release time).
//!
//! Invariants: counters only grow; updates are relaxed atomic adds without allocation, so a
//! snapshot taken while running may be a few packets inconsistent between fields, never torn
//! within one.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use serde::Serialize;

/// Sub-buckets per power of two in [`Histogram`]: about 3% relative precision.
const SUB_BITS: u32 = 5;
const SUB: usize = 1 << SUB_BITS;
/// Values below `2 * SUB` ns are counted exactly; above, log-linear up to 2^64 ns.
const BUCKETS: usize = 2 * SUB + (64 - SUB_BITS as usize - 1) * SUB;

/// A log-linear histogram of nanosecond values, lock-free to record.
#[derive(Debug)]
pub struct Histogram {
    buckets: Box<[AtomicU64]>,
    count: AtomicU64,
    sum: AtomicU64,
    max: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum: AtomicU64::new(0),
            max: AtomicU64::new(0),
        }
    }
}

fn bucket_of(v: u64) -> usize {
    if v < 2 * SUB as u64 {
        return v as usize;
    }
    let exp = 63 - v.leading_zeros(); // >= SUB_BITS + 1
    let sub = ((v >> (exp - SUB_BITS)) as usize) & (SUB - 1);
    2 * SUB + (exp - SUB_BITS - 1) as usize * SUB + sub
}

/// The middle of bucket `i`'s range of values.
fn bucket_mid(i: usize) -> u64 {
    if i < 2 * SUB {
        return i as u64;
    }
    let exp = (i - 2 * SUB) / SUB + SUB_BITS as usize + 1;
    let sub = ((i - 2 * SUB) % SUB) as u64;
    let width = 1u64 << (exp - SUB_BITS as usize);
    ((SUB as u64 + sub) << (exp - SUB_BITS as usize)) + width / 2
}

impl Histogram {
    /// Records one value in nanoseconds.
    pub fn record(&self, nanos: u64) {
        if let Some(b) = self.buckets.get(bucket_of(nanos)) {
            b.fetch_add(1, Relaxed);
        }
        self.count.fetch_add(1, Relaxed);
        self.sum.fetch_add(nanos, Relaxed);
        self.max.fetch_max(nanos, Relaxed);
    }

    /// Count, mean, median, 99th percentile and maximum, in microseconds.
    pub fn summary(&self) -> ErrorSummary {
        let count = self.count.load(Relaxed);
        if count == 0 {
            return ErrorSummary::default();
        }
        let counts: Vec<u64> = self.buckets.iter().map(|b| b.load(Relaxed)).collect();
        let total: u64 = counts.iter().sum();
        let quantile = |q: f64| -> f64 {
            let rank = ((total as f64 * q).ceil() as u64).max(1);
            let mut seen = 0;
            for (i, c) in counts.iter().enumerate() {
                seen += c;
                if seen >= rank {
                    return bucket_mid(i) as f64 / 1e3;
                }
            }
            0.0
        };
        ErrorSummary {
            count,
            mean_us: self.sum.load(Relaxed) as f64 / count as f64 / 1e3,
            p50_us: quantile(0.5),
            p99_us: quantile(0.99),
            max_us: self.max.load(Relaxed) as f64 / 1e3,
        }
    }
}

/// Statistics of the release error: actual write time minus scheduled release time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ErrorSummary {
    /// Packets measured.
    pub count: u64,
    /// Mean, microseconds.
    pub mean_us: f64,
    /// Median, microseconds (bucket middle, about 3% precision).
    pub p50_us: f64,
    /// 99th percentile, microseconds.
    pub p99_us: f64,
    /// Maximum, microseconds.
    pub max_us: f64,
}

/// Live counters of one direction.
#[derive(Debug, Default)]
pub struct DirectionCounters {
    /// Packets read from the source TUN device.
    pub packets_in: AtomicU64,
    /// Bytes (IP packets) read.
    pub bytes_in: AtomicU64,
    /// Packets written to the destination TUN device (duplicates included).
    pub delivered: AtomicU64,
    /// Bytes written.
    pub bytes_delivered: AtomicU64,
    /// Dropped by the bottleneck's full queue.
    pub queue_drops: AtomicU64,
    /// Lost by the random loss model.
    pub lost: AtomicU64,
    /// Duplicates made.
    pub duplicated: AtomicU64,
    /// Packets held back for reordering.
    pub reordered: AtomicU64,
    /// Packets with a flipped bit.
    pub corrupted: AtomicU64,
    /// Dropped because the per-direction packet limit (`max_packets_in_flight`) was reached.
    pub buffer_drops: AtomicU64,
    /// Writes to the destination device that failed (the packet is dropped).
    pub write_errors: AtomicU64,
    /// Release error of every delivered packet.
    pub release_error: Histogram,
}

impl DirectionCounters {
    /// Adds `n` to counter `c`.
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Relaxed);
    }

    /// A copy of the counters, with the release-error summary, over `elapsed` of running.
    pub fn snapshot(&self, elapsed: Duration) -> DirectionStats {
        let secs = elapsed.as_secs_f64();
        let bytes_delivered = self.bytes_delivered.load(Relaxed);
        DirectionStats {
            packets_in: self.packets_in.load(Relaxed),
            bytes_in: self.bytes_in.load(Relaxed),
            delivered: self.delivered.load(Relaxed),
            bytes_delivered,
            queue_drops: self.queue_drops.load(Relaxed),
            lost: self.lost.load(Relaxed),
            duplicated: self.duplicated.load(Relaxed),
            reordered: self.reordered.load(Relaxed),
            corrupted: self.corrupted.load(Relaxed),
            buffer_drops: self.buffer_drops.load(Relaxed),
            write_errors: self.write_errors.load(Relaxed),
            tun_drops: None,
            delivered_bps: if secs > 0.0 { bytes_delivered as f64 * 8.0 / secs } else { 0.0 },
            release_error: self.release_error.summary(),
        }
    }
}

/// A snapshot of one direction's counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DirectionStats {
    /// Packets read from the source device.
    pub packets_in: u64,
    /// Bytes read.
    pub bytes_in: u64,
    /// Packets written to the destination device.
    pub delivered: u64,
    /// Bytes written.
    pub bytes_delivered: u64,
    /// Dropped by the full bottleneck queue.
    pub queue_drops: u64,
    /// Lost by the random loss model.
    pub lost: u64,
    /// Duplicates made.
    pub duplicated: u64,
    /// Held back for reordering.
    pub reordered: u64,
    /// Corrupted.
    pub corrupted: u64,
    /// Dropped for lack of packet buffers.
    pub buffer_drops: u64,
    /// Failed writes.
    pub write_errors: u64,
    /// Dropped by the kernel on the source TUN device before the emulator read them (its
    /// queue was full: the emulator fell behind); `None` when unknown.
    pub tun_drops: Option<u64>,
    /// Mean delivered rate over the run, bits per second.
    pub delivered_bps: f64,
    /// Release error (lateness against the schedule).
    pub release_error: ErrorSummary,
}

/// A p99 release error above this, microseconds, means the emulator fell behind its schedule:
/// one packet in a hundred was held a millisecond or more past its release time, which a path
/// of the configured delay never does (the forwarders release on time to within tens of
/// microseconds on an idle machine).
pub const FELL_BEHIND_P99_US: f64 = 1000.0;

impl DirectionStats {
    /// The emulator did not keep to its schedule in this direction: its p99 release error is
    /// above [`FELL_BEHIND_P99_US`], or the kernel dropped packets it did not read in time.
    /// Delays (and losses) were then larger and more variable than configured, for every
    /// system measured through it.
    pub fn fell_behind(&self) -> bool {
        self.release_error.p99_us > FELL_BEHIND_P99_US || self.tun_drops.is_some_and(|n| n > 0)
    }
}

impl fmt::Display for DirectionStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "  in {} packets ({} bytes), delivered {} packets ({} bytes, {})",
            self.packets_in,
            self.bytes_in,
            self.delivered,
            self.bytes_delivered,
            format_bits(self.delivered_bps)
        )?;
        writeln!(
            f,
            "  queue drops {}, lost {}, duplicated {}, reordered {}, corrupted {}, buffer drops {}, write errors {}",
            self.queue_drops,
            self.lost,
            self.duplicated,
            self.reordered,
            self.corrupted,
            self.buffer_drops,
            self.write_errors
        )?;
        if let Some(n) = self.tun_drops.filter(|&n| n > 0) {
            writeln!(f, "  dropped by the kernel before the emulator read them (it fell behind): {n}")?;
        }
        let e = &self.release_error;
        write!(
            f,
            "  release error: mean {:.1} us, p50 {:.1} us, p99 {:.1} us, max {:.1} us",
            e.mean_us, e.p50_us, e.p99_us, e.max_us
        )
    }
}

/// Both directions.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EmulatorStats {
    /// Time since the forwarders started, seconds.
    pub elapsed_s: f64,
    /// A to B.
    pub a_to_b: DirectionStats,
    /// B to A.
    pub b_to_a: DirectionStats,
}

/// A rate in bits per second as `1.20 Gb/s`, `940 Mb/s`, `12.5 kb/s`.
pub fn format_bits(bits_per_sec: f64) -> String {
    let (value, unit) = if bits_per_sec >= 1e9 {
        (bits_per_sec / 1e9, "Gb/s")
    } else if bits_per_sec >= 1e6 {
        (bits_per_sec / 1e6, "Mb/s")
    } else if bits_per_sec >= 1e3 {
        (bits_per_sec / 1e3, "kb/s")
    } else {
        (bits_per_sec.max(0.0), "b/s")
    };
    if value >= 100.0 || unit == "b/s" {
        format!("{value:.0} {unit}")
    } else if value >= 10.0 {
        format!("{value:.1} {unit}")
    } else {
        format!("{value:.2} {unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotonic_and_tight() {
        let mut prev = 0;
        for v in 0..100_000u64 {
            assert!(bucket_of(v) >= prev);
            prev = bucket_of(v);
        }
        for v in (0..100_000u64).chain((0..64).map(|s| 1u64 << s)).chain([u64::MAX]) {
            let b = bucket_of(v);
            assert!(b < BUCKETS, "{v}");
            let mid = bucket_mid(b) as f64;
            assert!((mid - v as f64).abs() <= v as f64 * 0.032 + 0.5, "{v} -> {mid}");
        }
    }

    #[test]
    fn percentiles() {
        let h = Histogram::default();
        assert_eq!(h.summary(), ErrorSummary::default());
        for i in 1..=1000u64 {
            h.record(i * 1000); // 1..=1000 us
        }
        let s = h.summary();
        assert_eq!(s.count, 1000);
        assert!((s.mean_us - 500.5).abs() < 1e-9);
        assert!((s.p50_us - 500.0).abs() < 16.0, "{s:?}");
        assert!((s.p99_us - 990.0).abs() < 32.0, "{s:?}");
        assert_eq!(s.max_us, 1000.0);
    }

    #[test]
    fn falling_behind_is_a_late_percentile_or_a_kernel_drop() {
        let late = |p99_us| DirectionStats {
            release_error: ErrorSummary { p99_us, ..ErrorSummary::default() },
            ..DirectionStats::default()
        };
        assert!(!late(56.0).fell_behind());
        assert!(!late(FELL_BEHIND_P99_US).fell_behind());
        assert!(late(8_800.0).fell_behind());
        assert!(DirectionStats { tun_drops: Some(1), ..late(10.0) }.fell_behind());
        assert!(!DirectionStats { tun_drops: Some(0), ..late(10.0) }.fell_behind());
    }

    #[test]
    fn formats_rates() {
        assert_eq!(format_bits(100e6), "100 Mb/s");
        assert_eq!(format_bits(1.2e9), "1.20 Gb/s");
        assert_eq!(format_bits(12.5e3), "12.5 kb/s");
    }
}
