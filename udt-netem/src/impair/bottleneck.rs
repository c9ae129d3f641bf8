//! The bottleneck: a link of fixed rate fed by a DropTail queue.
//!
//! Packets are serialized one after another at `rate_bps`; a packet arriving at `now` starts
//! when the link is free and departs (its last bit leaves) `len * 8 / rate` later. The queue
//! holds every packet not yet fully serialized, the one on the wire included; an arrival that
//! would exceed the limit (in packets or bytes) is dropped. Rate 0 means an infinitely fast
//! link: no serialization time and no queue. Lengths are IP packet lengths (TUN carries no
//! link-layer header).
//!
//! Invariants: departure times are non-decreasing; the backlog never exceeds the limit.

use std::collections::VecDeque;
use std::time::Duration;

use crate::config::QueueLimit;

/// Rate limiter with a DropTail queue.
#[derive(Debug, Clone)]
pub struct Bottleneck {
    rate_bps: u64,
    limit: QueueLimit,
    /// (departure time, length) of every packet not yet fully serialized, oldest first.
    backlog: VecDeque<(Duration, u32)>,
    backlog_bytes: u64,
    busy_until: Duration,
}

impl Bottleneck {
    /// A bottleneck of `rate_bps` bits per second (0: unlimited) with the given queue limit.
    pub fn new(rate_bps: u64, limit: QueueLimit) -> Self {
        let capacity = match limit {
            QueueLimit::Packets(n) => n.min(1 << 16) as usize,
            QueueLimit::Bytes(b) => (b / 1500).min(1 << 16) as usize,
        };
        let capacity = if rate_bps == 0 { 0 } else { capacity + 1 };
        Self {
            rate_bps,
            limit,
            backlog: VecDeque::with_capacity(capacity),
            backlog_bytes: 0,
            busy_until: Duration::ZERO,
        }
    }

    /// Time to serialize `len` bytes at the configured rate (zero when unlimited).
    pub fn serialization_time(&self, len: usize) -> Duration {
        if self.rate_bps == 0 {
            return Duration::ZERO;
        }
        let nanos = (len as u128 * 8 * 1_000_000_000) / u128::from(self.rate_bps);
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// A packet of `len` bytes arrives at `now`: its departure time, or `None` when the queue
    /// is full and it is dropped. `now` must not go backwards between calls.
    pub fn handle_arrival(&mut self, now: Duration, len: usize) -> Option<Duration> {
        if self.rate_bps == 0 {
            return Some(now);
        }
        while let Some(&(departure, bytes)) = self.backlog.front() {
            if departure > now {
                break;
            }
            self.backlog.pop_front();
            self.backlog_bytes -= u64::from(bytes);
        }
        let len32 = u32::try_from(len).unwrap_or(u32::MAX);
        let full = match self.limit {
            QueueLimit::Packets(n) => self.backlog.len() >= n as usize,
            QueueLimit::Bytes(b) => self.backlog_bytes + u64::from(len32) > b,
        };
        if full {
            return None;
        }
        let departure = self.busy_until.max(now) + self.serialization_time(len);
        self.busy_until = departure;
        self.backlog.push_back((departure, len32));
        self.backlog_bytes += u64::from(len32);
        Some(departure)
    }

    /// Packets in the queue (the one being serialized included) as of the last arrival.
    pub fn backlog_packets(&self) -> usize {
        self.backlog.len()
    }

    /// Bytes in the queue as of the last arrival.
    pub fn backlog_bytes(&self) -> u64 {
        self.backlog_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn serializes_back_to_back_at_the_rate() {
        // 1500 bytes at 12 Mbit/s = 1 ms each.
        let mut b = Bottleneck::new(12_000_000, QueueLimit::Packets(100));
        assert_eq!(b.serialization_time(1500), MS);
        let t0 = Duration::from_secs(1);
        let deps: Vec<_> = (0..5).map(|_| b.handle_arrival(t0, 1500).unwrap()).collect();
        assert_eq!(deps, (1..=5).map(|i| t0 + MS * i).collect::<Vec<_>>());
        // An idle link sends immediately.
        assert_eq!(b.handle_arrival(t0 + MS * 100, 750), Some(t0 + MS * 100 + MS / 2));
    }

    #[test]
    fn long_run_throughput_equals_rate() {
        let rate = 100_000_000;
        let mut b = Bottleneck::new(rate, QueueLimit::Packets(10_000));
        let mut last = Duration::ZERO;
        let n = 10_000u64;
        for _ in 0..n {
            last = b.handle_arrival(Duration::ZERO, 1250).unwrap(); // 100 us each
        }
        assert_eq!(last, Duration::from_micros(100) * n as u32);
        let achieved = (n * 1250 * 8) as f64 / last.as_secs_f64();
        assert!((achieved - rate as f64).abs() < 1.0, "{achieved}");
    }

    #[test]
    fn droptail_in_packets() {
        let mut b = Bottleneck::new(12_000_000, QueueLimit::Packets(3));
        let t = Duration::ZERO;
        assert!(b.handle_arrival(t, 1500).is_some());
        assert!(b.handle_arrival(t, 1500).is_some());
        assert!(b.handle_arrival(t, 1500).is_some());
        assert_eq!(b.handle_arrival(t, 1500), None, "fourth packet overflows");
        assert_eq!(b.backlog_packets(), 3);
        // After the first departs (1 ms) there is room for one more, which queues behind the rest.
        assert_eq!(b.handle_arrival(MS, 1500), Some(MS * 4));
        assert_eq!(b.handle_arrival(MS, 1500), None);
    }

    #[test]
    fn droptail_in_bytes_and_overload_drop_fraction() {
        let mut b = Bottleneck::new(12_000_000, QueueLimit::Bytes(4000));
        assert!(b.handle_arrival(Duration::ZERO, 1500).is_some());
        assert!(b.handle_arrival(Duration::ZERO, 1500).is_some());
        assert_eq!(b.handle_arrival(Duration::ZERO, 1500), None);
        assert!(b.handle_arrival(Duration::ZERO, 1000).is_some(), "a smaller packet still fits");
        assert_eq!(b.backlog_bytes(), 4000);

        // Offer twice the rate for a long time: about half is dropped.
        let mut b = Bottleneck::new(12_000_000, QueueLimit::Packets(50));
        let (mut sent, mut dropped) = (0, 0);
        for i in 0..20_000u32 {
            match b.handle_arrival(MS / 2 * i, 1500) {
                Some(_) => sent += 1,
                None => dropped += 1,
            }
        }
        assert!((dropped - 10_000i32).abs() < 100, "sent {sent} dropped {dropped}");
    }

    #[test]
    fn unlimited_rate_passes_everything_at_once() {
        let mut b = Bottleneck::new(0, QueueLimit::Packets(1));
        for i in 0..1000u32 {
            assert_eq!(b.handle_arrival(MS * i, 1500), Some(MS * i));
        }
    }
}
