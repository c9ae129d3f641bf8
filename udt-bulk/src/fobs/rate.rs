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
//!   `Δbusy` of the receiver's receiving time (silences, when the sender idled, left out): the
//!   sample's loss is `1 - Δreceived/Δseq`, its receive rate `R = Δreceived · datagram bits /
//!   Δbusy`, and its send rate `S` is what the sender's own clock says it took to send those
//!   `Δseq` datagrams (the rate the sample was sent at, which lags the pacing rate by the
//!   feedback delay). A sample spans at least `min_sample` datagrams (a segment's worth), so it
//!   is not one packet's noise.
//! - Congestion control — loss above the tolerance: the path could not carry `S`. Pace at what
//!   got through, less 1/16 (room for the bottleneck queue to drain): the larger of `R` and
//!   `S · (1 - loss)`. Never cut below a quarter nor raise the rate in one step.
//! - Rate control — loss within the tolerance but `R` below `S` by more than 1/32: the path or
//!   the receiving host takes less than is sent and a queue is building (the paper's
//!   fat-to-thin case). Pace at `R` less 1/16, so the queue drains; the same bounds.
//! - Otherwise the path carried what was sent: probe upwards by 1/16 of the rate — or, in
//!   start-up (before the first back-off), double it, so that a modest initial rate finds a
//!   fast path within a few samples.
//! - A sample without receiving time keeps the rate. Always within `[min_rate, max_rate]`.
//!
//! With rate control off the sender paces at `max_rate` throughout.
//!
//! The round-trip estimate (RFC 6298 style smoothing) times a datagram's send to the first
//! report whose highest sequence number covers it, so it includes the data path's queueing;
//! [`RttEstimator::hold`] is how long the sender waits for an acknowledgement before it sends
//! an announced packet again.
//!
//! Invariants: the rate is always finite and within its bounds; nothing here reads a clock.

use std::collections::VecDeque;
use std::time::Duration;

use udt_proto::time::Instant;

use super::params::Params;
use super::wire::Report;

/// Back off to this fraction below the measured receive rate.
const BACKOFF_MARGIN: f64 = 1.0 / 16.0;
/// Probe upwards by this fraction of the rate per clean sample.
pub const INCREASE: f64 = 1.0 / 16.0;
/// A receive rate this fraction below the pacing rate means a queue is building.
const QUEUE_SIGN: f64 = 1.0 / 32.0;

/// One judged span of reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Fraction of the datagrams sent in the span that did not arrive, in [0, 1].
    pub loss: f64,
    /// What the receiver received over the span while data flowed, bits per second (`None` if
    /// no receiving time passed).
    pub receive_bps: Option<f64>,
    /// The rate the span's datagrams were sent at, bits per second (`None`: the pacing rate).
    pub send_bps: Option<f64>,
}

/// The rule's constants for one step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// Loss fraction tolerated.
    pub tolerance: f64,
    /// Lowest rate, bits per second.
    pub min: f64,
    /// Highest rate, bits per second.
    pub max: f64,
    /// Fraction to grow by on a clean sample: 1 (doubling) in start-up, then [`INCREASE`].
    pub increase: f64,
}

/// The rule: the next pacing rate from the current one and a sample (see the module doc).
pub fn next_rate(rate: f64, sample: Sample, bounds: &Bounds) -> f64 {
    let Bounds { tolerance, min, max, increase } = *bounds;
    if sample.loss.is_nan() {
        return rate.clamp(min, max);
    }
    let sent = sample.send_bps.filter(|s| s.is_finite() && *s > 0.0).unwrap_or(rate);
    let next = match sample.receive_bps.filter(|r| r.is_finite()) {
        _ if sample.loss > tolerance => {
            let through = sample.receive_bps.unwrap_or(0.0).max(sent * (1.0 - sample.loss));
            (through * (1.0 - BACKOFF_MARGIN)).clamp(rate / 4.0, rate)
        }
        Some(r) if r < sent * (1.0 - QUEUE_SIGN) => (r * (1.0 - BACKOFF_MARGIN)).clamp(rate / 4.0, rate),
        Some(_) => rate * (1.0 + increase),
        None => rate,
    };
    if next.is_finite() {
        next.clamp(min, max)
    } else {
        min
    }
}

/// The sender's pacing rate, adapted from the receiver's reports, and the send times it keeps
/// to judge them.
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
    /// Start-up: no back-off yet, clean samples double the rate.
    starting: bool,
    /// Send times of every [`MARK_EVERY`]th sequence number, oldest first.
    marks: VecDeque<(u64, Instant)>,
}

/// Every this many datagrams, the send time is kept.
const MARK_EVERY: u64 = 4;
/// The most send times kept.
const MAX_MARKS: usize = 1 << 16;

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
            starting: true,
            marks: VecDeque::new(),
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

    /// The datagram with sequence number `seq` left at `now`.
    pub fn on_send(&mut self, seq: u64, now: Instant) {
        if seq % MARK_EVERY == 1 {
            if self.marks.len() >= MAX_MARKS {
                self.marks.pop_front();
            }
            self.marks.push_back((seq, now));
        }
    }

    /// The kept send time of the latest sequence number at or before `seq`.
    fn sent_at(&self, seq: u64) -> Option<(u64, Instant)> {
        let i = self.marks.partition_point(|&(s, _)| s <= seq);
        i.checked_sub(1).and_then(|i| self.marks.get(i)).copied()
    }

    /// A report arrived at `now`. If it is fresh (it covers a later datagram than any before)
    /// it may close a span, which is judged; the round trip it measures (from the send of the
    /// latest datagram it covers) is returned.
    pub fn on_report(&mut self, now: Instant, report: Report) -> Option<Duration> {
        if self.last.is_some_and(|l| report.highest_seq <= l.highest_seq || report.busy_us < l.busy_us) {
            return None;
        }
        self.last = Some(report);
        let rtt = self.sent_at(report.highest_seq).map(|(_, at)| now - at);
        let Some(base) = self.base else {
            self.base = Some(report);
            return rtt;
        };
        let sent = report.highest_seq - base.highest_seq;
        if sent < self.min_sample {
            return rtt;
        }
        let received = report.received.saturating_sub(base.received);
        let loss = (1.0 - received as f64 / sent as f64).clamp(0.0, 1.0);
        let busy_us = report.busy_us.saturating_sub(base.busy_us);
        let receive_bps = (busy_us > 0).then(|| received as f64 * self.datagram_bits * 1e6 / busy_us as f64);
        let send_bps = match (self.sent_at(base.highest_seq), self.sent_at(report.highest_seq)) {
            (Some((a, ta)), Some((b, tb))) if b > a && tb > ta => {
                Some((b - a) as f64 * self.datagram_bits / (tb - ta).as_secs_f64())
            }
            _ => None,
        };
        // Older send times are no longer needed: spans only move forward.
        while self.marks.get(1).is_some_and(|&(s, _)| s <= report.highest_seq) {
            self.marks.pop_front();
        }
        self.base = Some(report);
        self.samples += 1;
        if self.enabled {
            let sample = Sample { loss, receive_bps, send_bps };
            let increase = if self.starting { 1.0 } else { INCREASE };
            let bounds = Bounds { tolerance: self.tolerance, min: self.min, max: self.max, increase };
            let next = next_rate(self.rate, sample, &bounds);
            self.starting &= next >= self.rate;
            self.rate = next;
        }
        rtt
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
    /// acknowledgement before sending it again: `srtt + max(4 · rttvar, srtt / 4)` (the
    /// floor keeps a steady path's hold a little above its round trip).
    pub fn hold(&self) -> Duration {
        self.srtt + (self.rttvar * 4).max(self.srtt / 4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: f64 = 1e6;
    const MAX: f64 = 1e10;
    const B: Bounds = Bounds { tolerance: 0.02, min: MIN, max: MAX, increase: INCREASE };

    fn sample(loss: f64, receive_bps: f64) -> Sample {
        Sample { loss, receive_bps: Some(receive_bps), send_bps: None }
    }

    #[test]
    fn heavy_loss_backs_off_to_just_under_what_got_through() {
        // Sending 100 Mb/s into a path that delivers 80: pace at 80 less 1/16.
        let r = next_rate(100e6, sample(0.2, 80e6), &B);
        assert!((r - 75e6).abs() < 1.0, "{r}");
        // The receiver measured 40 Mb/s over a span in which the sender idled; the loss says
        // 80 got through.
        let r = next_rate(100e6, sample(0.2, 40e6), &B);
        assert!((r - 75e6).abs() < 1.0, "{r}");
        assert_eq!(next_rate(100e6, Sample { loss: 0.3, receive_bps: None, send_bps: None }, &B), 65.625e6);
    }

    #[test]
    fn a_back_off_never_quarters_more_than_once_nor_raises_the_rate() {
        assert_eq!(next_rate(100e6, sample(0.99, 1e6), &B), 25e6);
        assert_eq!(next_rate(100e6, sample(0.5, 500e6), &B), 100e6);
    }

    #[test]
    fn clean_samples_probe_upwards_when_the_path_carried_the_rate() {
        assert_eq!(next_rate(16e6, sample(0.0, 16e6), &B), 17e6);
        assert_eq!(next_rate(16e6, sample(0.01, 15.6e6), &B), 17e6, "within tolerance");
        assert_eq!(next_rate(16e6, Sample { loss: 0.0, receive_bps: None, send_bps: None }, &B), 16e6);
    }

    #[test]
    fn samples_are_judged_against_the_rate_they_were_sent_at() {
        // The rate rose to 100 since the span's datagrams left at 80; 79 arrived: the path
        // carried them, so probe on.
        let s = Sample { loss: 0.0, receive_bps: Some(79e6), send_bps: Some(80e6) };
        assert_eq!(next_rate(100e6, s, &B), 106.25e6);
        // Sent at 80, 40% lost, the receiver saw 30 while data flowed: 48 got through.
        let s = Sample { loss: 0.4, receive_bps: Some(30e6), send_bps: Some(80e6) };
        assert_eq!(next_rate(100e6, s, &B), 45e6);
    }

    #[test]
    fn a_receive_rate_below_the_rate_without_loss_drains_the_queue() {
        // 100 Mb/s into a host or link taking 20: pace at 20 less 1/16, at most a quarter down.
        assert_eq!(next_rate(100e6, sample(0.0, 20e6), &B), 25e6);
        assert_eq!(next_rate(25e6, sample(0.0, 20e6), &B), 18.75e6);
    }

    #[test]
    fn the_rate_stays_within_its_bounds() {
        assert_eq!(next_rate(MAX, sample(0.0, MAX), &B), MAX);
        assert_eq!(next_rate(MIN, sample(1.0, 0.0), &B), MIN);
        assert_eq!(next_rate(MIN, sample(f64::NAN, f64::NAN), &B), MIN);
    }

    fn report(received: u64, highest_seq: u64, busy_us: u64) -> Report {
        Report { received, highest_seq, busy_us }
    }

    #[test]
    fn reports_are_judged_in_spans_of_at_least_min_sample_datagrams() {
        let params = Params { initial_rate_bps: 100_000_000, ..Params::default() };
        // 1250-byte datagrams: 10_000 bits each, sent every 100 us (100 Mb/s).
        let mut rc = RateControl::new(&params, 1250, 100);
        for seq in 1..=200 {
            rc.on_send(seq, Instant::from_micros(seq * 100));
        }
        let at = |ms: u64| Instant::from_micros(ms * 1000);
        assert_eq!(rc.on_report(at(11), report(1, 1, 0)), Some(Duration::from_micros(10_900)));
        assert!(rc.on_report(at(15), report(40, 50, 1_000)).is_some(), "fresh but too short to judge");
        assert_eq!((rc.samples(), rc.rate_bps()), (0, 100_000_000));
        // 100 sent at 100 Mb/s, 60 arrived over 10 ms of receiving: 40% loss, 60 Mb/s.
        assert_eq!(rc.on_report(at(21), report(61, 101, 10_000)), Some(Duration::from_micros(10_900)));
        assert_eq!(rc.samples(), 1);
        assert_eq!(rc.rate_bps(), 56_250_000);
        assert_eq!(rc.on_report(at(22), report(61, 101, 10_000)), None, "a repeated report is stale");
        assert_eq!(rc.on_report(at(23), report(80, 90, 20_000)), None, "an older sequence is stale");
    }

    #[test]
    fn without_rate_control_the_sender_paces_at_the_maximum() {
        let params = Params { rate_control: false, max_rate_bps: 1_000_000_000, ..Params::default() };
        let mut rc = RateControl::new(&params, 1250, 10);
        rc.on_report(Instant::ZERO, report(0, 1, 0));
        rc.on_report(Instant::ZERO, report(1, 100, 1_000));
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
        assert_eq!(rtt.hold(), Duration::from_millis(25), "a steady path holds a round trip and a quarter");
        rtt.sample(Duration::from_millis(100));
        assert!(rtt.srtt() == Duration::from_millis(30));
    }
}
