//! The sender's rate and congestion control, and its round-trip estimate.
//!
//! The paper adds "rate and congestion control" to FOBS and shows that without it a fast sender
//! into a thin receiving link loses most of what it sends (Kannan et al. 2003 §3, §5.1.2,
//! §5.2.2); it says the loss percentage is computed from each acknowledgement in the
//! process-feedback state and the sender then moves to a "control state" (§3.2.1), but not the
//! rule. Ours, in path-relative terms (FOBS.md, "Rate control"):
//!
//! - Every acknowledgement carries the receiver's cumulative [`Report`]. Between two reports
//!   `Δseq` datagrams were sent (the span of send sequence numbers) and `Δreceived` arrived over
//!   `Δt` of the receiver's clock: the sample's loss is `1 - Δreceived/Δseq` and its receive
//!   rate `Δreceived · datagram bits / Δt`. A sample spans at least `min_sample` datagrams
//!   (a segment's worth), so it is not one packet's noise.
//! - Loss above the tolerance: the path could not carry the rate; pace at the measured receive
//!   rate less 1/16 (room for the bottleneck queue to drain), never cutting more than half and
//!   never raising the rate in one step.
//! - Loss within the tolerance and a receive rate of at least half the pacing rate (the path,
//!   not an idle sender, limited the sample): probe upwards by 1/16 of the rate.
//! - Otherwise keep the rate. Always within `[min_rate, max_rate]`.
//!
//! With rate control off the sender paces at `max_rate` throughout.
//!
//! The round-trip estimate (RFC 6298 style smoothing) times a datagram's send to the first
//! report whose highest sequence number covers it, so it includes the data path's queueing;
//! [`RttEstimator::hold`] is how long the sender waits for an acknowledgement before it sends
//! an announced packet again.
//!
//! Invariants: the rate is always finite and within its bounds; nothing here reads a clock.

use std::time::Duration;

use super::params::Params;
use super::wire::Report;

/// Back off to this fraction below the measured receive rate.
const BACKOFF_MARGIN: f64 = 1.0 / 16.0;
/// Probe upwards by this fraction of the rate per clean sample.
const INCREASE: f64 = 1.0 / 16.0;

/// One judged span of reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Fraction of the datagrams sent in the span that did not arrive, in [0, 1].
    pub loss: f64,
    /// What the receiver received over the span, bits per second (`None` if no time passed).
    pub receive_bps: Option<f64>,
}

/// The rule: the next pacing rate from the current one and a sample (see the module doc).
pub fn next_rate(rate: f64, sample: Sample, tolerance: f64, min: f64, max: f64) -> f64 {
    let next = if sample.loss > tolerance {
        let measured = sample.receive_bps.unwrap_or(rate * (1.0 - sample.loss));
        (measured * (1.0 - BACKOFF_MARGIN)).clamp(rate / 2.0, rate)
    } else if sample.receive_bps.is_some_and(|r| r >= rate / 2.0) {
        rate * (1.0 + INCREASE)
    } else {
        rate
    };
    if next.is_finite() {
        next.clamp(min, max)
    } else {
        min
    }
}

/// The sender's pacing rate, adapted from the receiver's reports.
#[derive(Debug, Clone)]
pub struct RateControl {
    enabled: bool,
    rate: f64,
    min: f64,
    max: f64,
    tolerance: f64,
    datagram_bits: f64,
    min_sample: u64,
    last: Option<Report>,
    base: Option<Report>,
    samples: u64,
}

impl RateControl {
    /// From the sender's `params` (rates already checked), for datagrams of `datagram_bytes`,
    /// judging spans of at least `min_sample` datagrams.
    pub fn new(params: &Params, datagram_bytes: usize, min_sample: u32) -> Self {
        let max = params.max_rate_bps.max(1) as f64;
        let min = (params.min_rate_bps.max(1) as f64).min(max);
        let rate = if params.rate_control { params.initial_rate_bps as f64 } else { max };
        RateControl {
            enabled: params.rate_control,
            rate: rate.clamp(min, max),
            min,
            max,
            tolerance: params.loss_tolerance,
            datagram_bits: datagram_bytes as f64 * 8.0,
            min_sample: u64::from(min_sample.max(1)),
            last: None,
            base: None,
            samples: 0,
        }
    }

    /// The pacing rate, bits per second.
    pub fn rate_bps(&self) -> u64 {
        self.rate as u64
    }

    /// Spans judged so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// The time one datagram of `bytes` takes at the pacing rate.
    pub fn gap(&self, bytes: usize) -> Duration {
        Duration::from_nanos((bytes as f64 * 8e9 / self.rate).round() as u64)
    }

    /// A report arrived. True if it is fresh (it covers a later datagram than any before); a
    /// fresh report closes a span once the span is long enough, and the span is judged.
    pub fn on_report(&mut self, report: Report) -> bool {
        if self.last.is_some_and(|l| report.highest_seq <= l.highest_seq || report.at_us < l.at_us) {
            return false;
        }
        self.last = Some(report);
        let Some(base) = self.base else {
            self.base = Some(report);
            return true;
        };
        let sent = report.highest_seq - base.highest_seq;
        if sent < self.min_sample {
            return true;
        }
        let received = report.received.saturating_sub(base.received);
        let loss = (1.0 - received as f64 / sent as f64).clamp(0.0, 1.0);
        let span_us = report.at_us.saturating_sub(base.at_us);
        let receive_bps = (span_us > 0).then(|| received as f64 * self.datagram_bits * 1e6 / span_us as f64);
        self.base = Some(report);
        self.samples += 1;
        if self.enabled {
            self.rate =
                next_rate(self.rate, Sample { loss, receive_bps }, self.tolerance, self.min, self.max);
        }
        true
    }
}

/// Smoothed round-trip time and its variation.
#[derive(Debug, Clone, Copy)]
pub struct RttEstimator {
    srtt: Duration,
    rttvar: Duration,
    measured: bool,
}

impl RttEstimator {
    /// Assume `initial` until the first sample.
    pub fn new(initial: Duration) -> Self {
        RttEstimator { srtt: initial, rttvar: initial / 2, measured: false }
    }

    /// A measured round trip.
    pub fn sample(&mut self, rtt: Duration) {
        if !self.measured {
            self.srtt = rtt;
            self.rttvar = rtt / 2;
            self.measured = true;
            return;
        }
        let diff = self.srtt.abs_diff(rtt);
        self.rttvar = (self.rttvar * 3 + diff) / 4;
        self.srtt = (self.srtt * 7 + rtt) / 8;
    }

    /// The smoothed round-trip time.
    pub fn srtt(&self) -> Duration {
        self.srtt
    }

    /// How long after announcing a packet (end-of-segment or DONE) the sender waits for its
    /// acknowledgement before sending it again: `srtt + 4 · rttvar`.
    pub fn hold(&self) -> Duration {
        self.srtt + self.rttvar * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: f64 = 1e6;
    const MAX: f64 = 1e10;

    fn sample(loss: f64, receive_bps: f64) -> Sample {
        Sample { loss, receive_bps: Some(receive_bps) }
    }

    #[test]
    fn heavy_loss_backs_off_to_just_under_the_measured_receive_rate() {
        // Sending 100 Mb/s into a path that delivers 80: pace at 80 less 1/16.
        let r = next_rate(100e6, sample(0.2, 80e6), 0.02, MIN, MAX);
        assert!((r - 75e6).abs() < 1.0, "{r}");
    }

    #[test]
    fn a_back_off_never_halves_more_than_once_nor_raises_the_rate() {
        assert_eq!(next_rate(100e6, sample(0.9, 1e6), 0.02, MIN, MAX), 50e6);
        assert_eq!(next_rate(100e6, sample(0.5, 500e6), 0.02, MIN, MAX), 100e6);
        assert_eq!(next_rate(100e6, Sample { loss: 0.3, receive_bps: None }, 0.02, MIN, MAX), 65.625e6);
    }

    #[test]
    fn clean_samples_probe_upwards_only_when_the_path_carried_the_rate() {
        assert_eq!(next_rate(16e6, sample(0.0, 15e6), 0.02, MIN, MAX), 17e6);
        assert_eq!(next_rate(16e6, sample(0.01, 15e6), 0.02, MIN, MAX), 17e6, "within tolerance");
        assert_eq!(next_rate(16e6, sample(0.0, 2e6), 0.02, MIN, MAX), 16e6, "an idle sender does not grow");
    }

    #[test]
    fn the_rate_stays_within_its_bounds() {
        assert_eq!(next_rate(MAX, sample(0.0, MAX), 0.02, MIN, MAX), MAX);
        assert_eq!(next_rate(MIN, sample(1.0, 0.0), 0.02, MIN, MAX), MIN);
        assert_eq!(next_rate(MIN, sample(f64::NAN, f64::NAN), 0.02, MIN, MAX), MIN);
    }

    fn report(received: u64, highest_seq: u64, at_us: u64) -> Report {
        Report { received, highest_seq, at_us }
    }

    #[test]
    fn reports_are_judged_in_spans_of_at_least_min_sample_datagrams() {
        let params = Params { initial_rate_bps: 100_000_000, ..Params::default() };
        // 1250-byte datagrams: 10_000 bits each.
        let mut rc = RateControl::new(&params, 1250, 100);
        assert!(rc.on_report(report(0, 1, 0)));
        assert!(rc.on_report(report(40, 50, 1_000)), "fresh but too short to judge");
        assert_eq!((rc.samples(), rc.rate_bps()), (0, 100_000_000));
        // 100 sent, 60 arrived in 10 ms: 40% loss, 60 Mb/s received.
        assert!(rc.on_report(report(60, 101, 10_000)));
        assert_eq!(rc.samples(), 1);
        assert_eq!(rc.rate_bps(), 56_250_000);
        assert!(!rc.on_report(report(60, 101, 10_000)), "a repeated report is stale");
        assert!(!rc.on_report(report(80, 90, 20_000)), "an older sequence is stale");
    }

    #[test]
    fn without_rate_control_the_sender_paces_at_the_maximum() {
        let params = Params { rate_control: false, max_rate_bps: 1_000_000_000, ..Params::default() };
        let mut rc = RateControl::new(&params, 1250, 10);
        rc.on_report(report(0, 1, 0));
        rc.on_report(report(1, 100, 1_000));
        assert_eq!((rc.samples(), rc.rate_bps()), (1, 1_000_000_000));
        assert_eq!(rc.gap(1250), Duration::from_micros(10));
    }

    #[test]
    fn the_round_trip_estimate_starts_from_its_first_sample_and_smooths() {
        let mut rtt = RttEstimator::new(Duration::from_millis(100));
        assert_eq!(rtt.hold(), Duration::from_millis(300));
        rtt.sample(Duration::from_millis(20));
        assert_eq!((rtt.srtt(), rtt.hold()), (Duration::from_millis(20), Duration::from_millis(60)));
        for _ in 0..100 {
            rtt.sample(Duration::from_millis(20));
        }
        assert!(rtt.hold() < Duration::from_millis(21), "a steady path holds about one round trip");
        rtt.sample(Duration::from_millis(100));
        assert!(rtt.srtt() == Duration::from_millis(30));
    }
}
