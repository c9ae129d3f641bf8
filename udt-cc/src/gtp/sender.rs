//! The sending half of a GTP controller: paces at the rate the receiver allocated.
//!
//! Until the first allocation arrives the sender uses a conservative initial rate. An allocation
//! replaces the rate (capped at the sender's own request, if any); an allocation numbered at or
//! before the last one adopted is stale (reordered) and ignored. Between allocations a loss
//! report or a timeout cuts the rate by 1/8, at most once per RTT, so a sender whose feedback is
//! lost does not keep overrunning; the next allocation overrides the cut.
//!
//! Invariants: the rate is at least [`MIN_RATE`] bits/s; the period is `MSS * 8 / rate`, at
//! least 1 ns.

use std::time::Duration;

use super::manager::MIN_RATE;
use udt_proto::time::Instant;

/// The multiplicative decrease on loss between allocations (UDT native's factor).
const DECREASE: f64 = 1.0 / 8.0;

/// Sender-side state of one connection.
#[derive(Debug)]
pub(super) struct SenderSide {
    /// Current rate, bits/s of MSS-sized packets.
    pub(super) rate: u64,
    /// The number and rate of the last allocation adopted.
    pub(super) allocation: Option<(u32, u64)>,
    /// The sender's own ceiling (0: none).
    request: u64,
    last_decrease: Option<Instant>,
}

/// `mss * 8 / bits_per_sec` seconds, rounded to the nanosecond, at least 1 ns.
pub(super) fn period_for(bits_per_sec: u64, mss: u32) -> Duration {
    let bits = u128::from(bits_per_sec.max(1));
    let nanos = (u128::from(mss) * 8 * 1_000_000_000 + bits / 2) / bits;
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX).max(1))
}

impl SenderSide {
    /// A sender starting at `initial` bits/s that never wants more than `request` (0: no limit).
    pub(super) fn new(initial: u64, request: u64) -> Self {
        let rate = if request > 0 { initial.min(request) } else { initial };
        SenderSide { rate: rate.max(MIN_RATE), allocation: None, request, last_decrease: None }
    }

    /// An allocation arrived. Returns whether it exceeds the request (the receiver has not
    /// seen the request yet: send it again).
    pub(super) fn on_allocation(&mut self, number: u32, bits_per_sec: u64) -> bool {
        if let Some((last, _)) = self.allocation {
            if number.wrapping_sub(last) as i32 <= 0 {
                return false;
            }
        }
        self.allocation = Some((number, bits_per_sec));
        let capped = if self.request > 0 { bits_per_sec.min(self.request) } else { bits_per_sec };
        self.rate = capped.max(MIN_RATE);
        self.request > 0 && bits_per_sec > self.request
    }

    /// A loss report or a timeout at `now`: cut the rate unless it was cut less than `rtt` ago.
    pub(super) fn on_congestion(&mut self, now: Instant, rtt: Duration) {
        if self.last_decrease.is_some_and(|t| now.saturating_since(t) < rtt) {
            return;
        }
        self.last_decrease = Some(now);
        self.rate = (self.rate as f64 * (1.0 - DECREASE)).round().max(MIN_RATE as f64) as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods() {
        assert_eq!(period_for(12_000_000, 1500), Duration::from_millis(1));
        assert_eq!(period_for(1_000_000_000, 1500), Duration::from_micros(12));
        assert_eq!(period_for(0, 1500), Duration::from_secs(12_000));
        assert_eq!(period_for(u64::MAX, 1500), Duration::from_nanos(1));
    }

    #[test]
    fn stale_allocations_and_requests() {
        let mut s = SenderSide::new(10_000_000, 0);
        assert!(!s.on_allocation(5, 200_000_000));
        assert!(!s.on_allocation(4, 900_000_000));
        assert_eq!(s.rate, 200_000_000);
        assert!(!s.on_allocation(u32::MAX.wrapping_add(6), 300_000_000)); // 5 again: stale
        assert_eq!(s.rate, 200_000_000);
        let mut s = SenderSide::new(10_000_000, 50_000_000);
        assert!(s.on_allocation(1, 200_000_000));
        assert_eq!(s.rate, 50_000_000);
        assert!(!s.on_allocation(2, 40_000_000));
        assert_eq!(s.rate, 40_000_000);
    }

    #[test]
    fn decrease_once_per_rtt() {
        let mut s = SenderSide::new(80_000_000, 0);
        let rtt = Duration::from_millis(10);
        s.on_congestion(Instant::from_micros(1000), rtt);
        assert_eq!(s.rate, 70_000_000);
        s.on_congestion(Instant::from_micros(10_999), rtt);
        assert_eq!(s.rate, 70_000_000);
        s.on_congestion(Instant::from_micros(11_000), rtt);
        assert_eq!(s.rate, 61_250_000);
        let mut s = SenderSide::new(MIN_RATE, 0);
        s.on_congestion(Instant::ZERO, rtt);
        assert_eq!(s.rate, MIN_RATE);
    }
}
