//! Tsunami's rate control loop: the client reports an error rate, the server scales its
//! inter-packet delay (IPD) by it (seed-protocols.md, Tsunami: "Client behaviour" and "Server
//! rate control"; Meiss 2002 as described by Ren et al. 2008).
//!
//! Units are the protocol's: delays in microseconds, rates in bits per second, error rates in
//! percent x 1000 (100,000 is 100 %). The arithmetic is the reference's, in `f64`, and the
//! result is always finite and within [base IPD, max(base IPD, 10,000 us)], whatever the
//! client's factors and reports (a zero denominator is refused before a transfer starts).

use std::time::Duration;

/// The largest IPD the server slows down to, microseconds.
pub const MAX_IPD_US: f64 = 10_000.0;
/// An error rate of 100 %, which a server assumes when the client is silent.
pub const FULL_ERROR: u32 = 100_000;

/// The client's knobs of the server's rate control, as sent in the transfer request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateControl {
    /// Error rate above which the server slows down, percent x 1000.
    pub threshold: u32,
    /// Slow-down factor, numerator and denominator (nonzero).
    pub slower: (u16, u16),
    /// Speed-up factor, numerator and denominator (nonzero).
    pub faster: (u16, u16),
}

/// The server's inter-packet delay.
#[derive(Debug, Clone, PartialEq)]
pub struct Ipd {
    base_us: u32,
    current_us: f64,
    control: RateControl,
}

impl Ipd {
    /// The delay for `block_size`-byte blocks at `target_rate` bit/s: base = 8e6 x block /
    /// rate microseconds (integer division, as the reference), starting at 3 x base. `None` for
    /// a zero rate or a zero denominator in `control`.
    pub fn new(block_size: u32, target_rate: u32, control: RateControl) -> Option<Self> {
        if target_rate == 0 || control.slower.1 == 0 || control.faster.1 == 0 {
            return None;
        }
        let base = 8_000_000u64 * u64::from(block_size) / u64::from(target_rate);
        let base_us = u32::try_from(base).unwrap_or(u32::MAX);
        Some(Ipd { base_us, current_us: 3.0 * f64::from(base_us), control })
    }

    /// The base delay, microseconds.
    pub fn base_us(&self) -> u32 {
        self.base_us
    }

    /// The current delay, microseconds.
    pub fn current_us(&self) -> f64 {
        self.current_us
    }

    /// Apply one error-rate report: above the threshold, multiply by
    /// 1 + (slower - 1) x (1 + err - threshold) / (100000 - threshold); otherwise by faster; then
    /// clamp to [base, 10,000 us] (base wins when it is larger).
    pub fn on_error_rate(&mut self, error_rate: u32) {
        let c = self.control;
        let threshold = f64::from(c.threshold);
        if error_rate > c.threshold {
            let slower = f64::from(c.slower.0) / f64::from(c.slower.1) - 1.0;
            let excess = (1.0 + f64::from(error_rate) - threshold) / (100_000.0 - threshold);
            self.current_us *= 1.0 + slower * excess;
        } else {
            self.current_us *= f64::from(c.faster.0) / f64::from(c.faster.1);
        }
        if self.current_us.is_nan() {
            self.current_us = MAX_IPD_US;
        }
        self.current_us = self.current_us.min(MAX_IPD_US).max(f64::from(self.base_us));
    }

    /// The gap between two datagrams: the current delay, at least one microsecond.
    pub fn gap(&self) -> Duration {
        Duration::from_nanos((self.current_us.max(1.0) * 1000.0) as u64)
    }
}

/// The client's error rate: an IIR filter over the share of blocks it asked for again, sent to
/// the server every update period.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorReport {
    history: f64,
    rate: f64,
}

impl ErrorReport {
    /// A filter keeping `history_percent` of the previous value (the reference's `history`,
    /// 25 by default; values over 100 count as 100).
    pub fn new(history_percent: u8) -> Self {
        ErrorReport { history: f64::from(history_percent.min(100)) / 100.0, rate: 0.0 }
    }

    /// The next report, after an interval in which the last batch asked for `requested`
    /// blocks and `received` datagrams arrived: history x previous + (1 - history) x 50,000 x
    /// (requested / (1 + requested + received) + ring fill). Our receiver writes each block
    /// as it lands and has no ring buffer, so its ring fill is 0.
    pub fn update(&mut self, requested: u64, received: u64) -> u32 {
        let requested = requested as f64;
        let fraction = requested / (1.0 + requested + received as f64);
        self.rate = self.history * self.rate + (1.0 - self.history) * 50_000.0 * fraction;
        self.rate as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULT: RateControl = RateControl { threshold: 7500, slower: (25, 24), faster: (5, 6) };

    #[test]
    fn the_delay_starts_at_three_times_the_base() {
        // 8e6 x 1024 / 650e6 = 12.6 -> 12 us, integer division as the reference.
        let ipd = Ipd::new(1024, 650_000_000, DEFAULT).unwrap();
        assert_eq!(ipd.base_us(), 12);
        assert_eq!(ipd.current_us(), 36.0);
        let slow = Ipd::new(1400, 1_000_000, DEFAULT).unwrap();
        assert_eq!(slow.base_us(), 11_200);
        assert!(Ipd::new(1024, 0, DEFAULT).is_none());
        assert!(Ipd::new(1024, 1, RateControl { slower: (1, 0), ..DEFAULT }).is_none());
        assert!(Ipd::new(1024, 1, RateControl { faster: (1, 0), ..DEFAULT }).is_none());
    }

    #[test]
    fn reports_below_the_threshold_speed_up_down_to_the_base() {
        let mut ipd = Ipd::new(1000, 80_000_000, DEFAULT).unwrap(); // base 100 us, start 300
        ipd.on_error_rate(7500);
        assert!((ipd.current_us() - 250.0).abs() < 1e-9, "x 5/6: {}", ipd.current_us());
        ipd.on_error_rate(0);
        assert!((ipd.current_us() - 250.0 * 5.0 / 6.0).abs() < 1e-9);
        for _ in 0..20 {
            ipd.on_error_rate(0);
        }
        assert_eq!(ipd.current_us(), 100.0, "never below the base");
    }

    #[test]
    fn reports_above_the_threshold_slow_down_in_proportion_to_the_excess() {
        let mut ipd = Ipd::new(1000, 80_000_000, DEFAULT).unwrap(); // 300 us
                                                                    // err 20,000: 1 + (25/24 - 1) x (1 + 12,500) / 92,500.
        ipd.on_error_rate(20_000);
        let factor = 1.0 + (25.0 / 24.0 - 1.0) * (12_501.0 / 92_500.0);
        assert!((ipd.current_us() - 300.0 * factor).abs() < 1e-9, "{}", ipd.current_us());
        // A silent client counts as 100 %: 1 + (1/24) x 92,501 / 92,500.
        let before = ipd.current_us();
        ipd.on_error_rate(FULL_ERROR);
        let factor = 1.0 + (1.0 / 24.0) * (92_501.0 / 92_500.0);
        assert!((ipd.current_us() - before * factor).abs() < 1e-9);
        for _ in 0..1000 {
            ipd.on_error_rate(FULL_ERROR);
        }
        assert_eq!(ipd.current_us(), MAX_IPD_US, "never above 10 ms");
    }

    #[test]
    fn a_base_above_the_ceiling_wins_and_odd_factors_stay_in_range() {
        let mut slow = Ipd::new(1400, 1_000_000, DEFAULT).unwrap();
        slow.on_error_rate(FULL_ERROR);
        assert_eq!(slow.current_us(), 11_200.0);
        for control in [
            RateControl { threshold: 100_000, slower: (25, 24), faster: (5, 6) },
            RateControl { threshold: 200_000, slower: (1, 65_535), faster: (65_535, 1) },
            RateControl { threshold: 0, slower: (65_535, 1), faster: (0, 1) },
        ] {
            let mut ipd = Ipd::new(1000, 80_000_000, control).unwrap();
            for err in [0, 1, 7500, 99_999, 100_000, 100_001, u32::MAX] {
                ipd.on_error_rate(err);
                let us = ipd.current_us();
                assert!(us.is_finite() && (100.0..=MAX_IPD_US).contains(&us), "{control:?} {err}: {us}");
            }
        }
    }

    #[test]
    fn the_gap_is_the_delay_with_a_floor_of_a_microsecond() {
        let ipd = Ipd::new(1000, 80_000_000, DEFAULT).unwrap();
        assert_eq!(ipd.gap(), Duration::from_micros(300));
        let fast = Ipd::new(64, 650_000_000, DEFAULT).unwrap();
        assert_eq!(fast.base_us(), 0);
        assert_eq!(fast.gap(), Duration::from_micros(1));
    }

    #[test]
    fn the_error_report_filters_the_requested_share() {
        let mut report = ErrorReport::new(25);
        // 100 asked again of 899 received: 0.75 x 50,000 x 100 / 1000 = 3750.
        assert_eq!(report.update(100, 899), 3750);
        // Then a clean interval: 0.25 x 3750 = 937.5.
        assert_eq!(report.update(0, 1000), 937);
        assert_eq!(report.update(0, 0), 234);
        // All asked again, nothing received: close to 50,000 x 0.75 plus history.
        let mut worst = ErrorReport::new(0);
        assert_eq!(worst.update(2048, 0), 49_975);
        assert_eq!(ErrorReport::new(200).update(10, 10), 0, "history over 100 keeps all of it");
    }
}
