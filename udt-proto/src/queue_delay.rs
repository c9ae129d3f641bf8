//! The receiver's queueing-delay estimator (LEDBAT's method, RFC 6817 §3.4.2), from the
//! sender's timestamp in every data packet header.
//!
//! The one-way delay of a packet, read with two unsynchronised clocks, is `arrival - timestamp`
//! plus an unknown constant offset: only differences mean anything. The smallest of them over a
//! base window is the propagation delay plus the offset, so each packet's delay less that base
//! is its queueing delay. The base window is [`BASE_BUCKETS`] buckets of [`BASE_BUCKET`]: the
//! base follows a rising offset (a receiver clock running fast) within one window, so drift
//! adds at most `drift x window` (0.2 ms at 10 ppm, 2 ms at 100 ppm); a falling offset lowers
//! the minimum at once. A route change that lengthens the path is adopted after one window.
//!
//! Per report period (a full ACK), the estimator hands out the smallest and the largest
//! queueing delay of the packets that arrived since the last report: the smallest is the
//! *standing* queue (a burst that passes does not stand; Copa's standing RTT), the largest the
//! queue at its fullest.
//!
//! Invariants: timestamps and arrival times are 32-bit microsecond counters that wrap (every
//! 71.6 minutes); differences are taken modulo 2^32, so the wrap changes nothing as long as the
//! offset moves by less than 2^31 us within a window. A packet's position in the sequence plays
//! no part (reordered and retransmitted packets carry their own send time). A reported delay is
//! never negative; nothing is reported for a period without packets.

use std::time::Duration;

use crate::time::Instant;

/// Length of one bucket of the base minimum.
pub const BASE_BUCKET: Duration = Duration::from_secs(2);
/// Buckets the base minimum spans: 20 s, longer than the default controller's ProbeRTT interval
/// on paths up to about 250 ms (its own drain then refreshes the base), short enough that clock
/// drift adds little.
pub const BASE_BUCKETS: usize = 10;

/// One report: the queueing delay of the packets since the last report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueReport {
    /// The smallest: the standing queue.
    pub min: Duration,
    /// The largest.
    pub max: Duration,
}

/// The estimator (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct QueueDelay {
    /// Bucket minima of the relative delay, newest last, with the bucket's start.
    buckets: Vec<(Instant, u32)>,
    /// Relative delays (minimum, maximum) of the current report period.
    period: Option<(u32, u32)>,
}

/// `a - b` for 32-bit wrapping microsecond values, as a signed difference.
fn wrapping_diff(a: u32, b: u32) -> i64 {
    i64::from(a.wrapping_sub(b) as i32)
}

impl QueueDelay {
    /// A data packet stamped `timestamp` (sender's microseconds) arrived at `now`, which reads
    /// `arrival` on the receiver's microsecond counter (the same counter for every packet).
    pub fn handle_arrival(&mut self, now: Instant, arrival: u32, timestamp: u32) {
        let delay = arrival.wrapping_sub(timestamp);
        match self.buckets.last_mut() {
            Some((start, min)) if now < *start + BASE_BUCKET => {
                if wrapping_diff(delay, *min) < 0 {
                    *min = delay;
                }
            }
            _ => {
                self.buckets.push((now, delay));
                if self.buckets.len() > BASE_BUCKETS {
                    self.buckets.remove(0);
                }
            }
        }
        self.period = Some(match self.period {
            None => (delay, delay),
            Some((lo, hi)) => (
                if wrapping_diff(delay, lo) < 0 { delay } else { lo },
                if wrapping_diff(delay, hi) > 0 { delay } else { hi },
            ),
        });
    }

    /// The base: the smallest relative delay of the window.
    fn base(&self) -> Option<u32> {
        let mut it = self.buckets.iter().map(|&(_, m)| m);
        let first = it.next()?;
        Some(it.fold(first, |lo, m| if wrapping_diff(m, lo) < 0 { m } else { lo }))
    }

    /// The queueing delay of `delay` over the base.
    fn queueing(&self, delay: u32, base: u32) -> Duration {
        Duration::from_micros(wrapping_diff(delay, base).max(0) as u64)
    }

    /// The report for the period since the last one (`None` when no packet arrived), and a new
    /// period begins.
    pub fn take_report(&mut self) -> Option<QueueReport> {
        let (lo, hi) = self.period.take()?;
        let base = self.base()?;
        Some(QueueReport { min: self.queueing(lo, base), max: self.queueing(hi, base) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Duration = Duration::from_micros(1);

    /// Packets every `gap_us` from `t0_us` for `n` packets, each delayed by `queue(i)` us over a
    /// 30 ms path, with the receiver's clock `offset` ahead and drifting `ppm`.
    fn feed(
        q: &mut QueueDelay,
        t0_us: u64,
        n: u64,
        gap_us: u64,
        offset: u32,
        ppm: f64,
        queue: impl Fn(u64) -> u64,
    ) {
        for i in 0..n {
            let sent = t0_us + i * gap_us;
            let arrive = sent + 30_000 + queue(i);
            let drift = (arrive as f64 * ppm / 1e6) as u64;
            let arrival = (arrive + drift) as u32;
            q.handle_arrival(
                Instant::ZERO + Duration::from_micros(arrive),
                arrival.wrapping_add(offset),
                sent as u32,
            );
        }
    }

    #[test]
    fn an_empty_path_reports_no_queue_and_a_standing_one_its_depth() {
        let mut q = QueueDelay::default();
        feed(&mut q, 0, 1000, 100, 123_456_789, 0.0, |_| 0);
        assert_eq!(q.take_report(), Some(QueueReport { min: Duration::ZERO, max: Duration::ZERO }));
        // A competitor keeps 12 ms standing, with bursts to 20 ms.
        feed(&mut q, 100_000, 1000, 100, 123_456_789, 0.0, |i| 12_000 + if i % 10 == 0 { 8_000 } else { 0 });
        let r = q.take_report().unwrap();
        assert_eq!(r.min, Duration::from_millis(12));
        assert_eq!(r.max, Duration::from_millis(20));
        assert_eq!(q.take_report(), None, "nothing arrived since");
    }

    #[test]
    fn the_timestamp_wrap_changes_nothing() {
        let mut q = QueueDelay::default();
        // Start 10 ms before the sender's 32-bit microsecond counter wraps, offset near the top.
        let t0 = u64::from(u32::MAX) - 10_000;
        feed(&mut q, t0, 400, 50, u32::MAX - 5, 0.0, |i| if i >= 200 { 3_000 } else { 0 });
        let r = q.take_report().unwrap();
        assert_eq!((r.min, r.max), (Duration::ZERO, Duration::from_millis(3)));
    }

    #[test]
    fn reordering_and_retransmissions_are_measured_by_their_own_send_time() {
        let mut q = QueueDelay::default();
        // Arrivals out of order: each packet's own delay is still 30 ms.
        for i in (0..100u32).rev() {
            let sent = i * 100;
            q.handle_arrival(Instant::ZERO + US * (sent + 30_000), sent + 30_000, sent);
        }
        // A retransmission sent much later, also 30 ms in flight.
        q.handle_arrival(Instant::ZERO + US * 90_000, 90_000, 60_000);
        assert_eq!(q.take_report(), Some(QueueReport { min: Duration::ZERO, max: Duration::ZERO }));
    }

    #[test]
    fn clock_drift_adds_at_most_drift_times_the_window() {
        let mut q = QueueDelay::default();
        // 100 ppm fast receiver clock for an hour, no queue: the base follows.
        let hour_pkts = 3_600_000_000 / 10_000;
        feed(&mut q, 0, hour_pkts, 10_000, 7, 100.0, |_| 0);
        let r = q.take_report().unwrap();
        let bound = Duration::from_secs_f64(100e-6 * (BASE_BUCKET * BASE_BUCKETS as u32).as_secs_f64());
        assert!(r.max <= bound + US, "{:?} over {:?}", r.max, bound);
        // A slow clock lowers the base at once: no queue is ever reported.
        let mut q = QueueDelay::default();
        feed(&mut q, 0, hour_pkts, 10_000, 7, -100.0, |_| 0);
        assert!(q.take_report().unwrap().max <= US);
    }

    #[test]
    fn a_queue_that_stands_longer_than_the_window_becomes_the_base() {
        let mut q = QueueDelay::default();
        feed(&mut q, 0, 100, 1_000, 0, 0.0, |_| 0);
        let _ = q.take_report();
        // 25 s of an 8 ms standing queue: after the window the queue is the new normal.
        feed(&mut q, 100_000, 25_000, 1_000, 0, 0.0, |_| 8_000);
        assert_eq!(q.take_report().unwrap().min, Duration::ZERO);
    }
}
