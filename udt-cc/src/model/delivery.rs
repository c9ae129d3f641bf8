//! The delivery rate, measured two ways, and the round's mean of each.
//!
//! * Reported: the arrival rate the receiver puts in its full ACKs (thesis §3.4). What it
//!   means depends on the receiver: ours counts the packets of each ACK period; UDT4 reports
//!   the median-filtered speed of its last 16 arrivals, which reads 1 packet/s until 16 packets
//!   have arrived (its window starts filled with 1 s gaps) and, on a path that does not space
//!   packets out, the speed of a burst rather than of the flow.
//! * Acknowledged: what the sender measures itself from the cumulative ACK, as BBR does (Cheng
//!   et al., "Delivery Rate Estimation", draft-cheng-iccrg-delivery-rate-estimation): the
//!   packets newly acknowledged over the longer of the time between the two ACKs and the time
//!   over which those packets were sent. It needs nothing but ACKs, which every receiver sends,
//!   and it cannot exceed what the path delivered over a span at least as long as the sending.
//!
//! The model (`round_bw`) takes the receiver's reports, since they count arrivals the ACK
//! point has not reached (behind a hole), except in the first packets: it ignores reports
//! there (a UDT4 receiver's read 1 packet/s until 16 arrival gaps replaced its made-up ones)
//! and paces on its own measurement.
//!
//! Invariants: samples are finite and positive; a span of zero gives no sample.

use crate::send_times::SendTimes;

use udt_proto::seq::SeqNo;
use udt_proto::time::Instant;

/// A time-weighted mean of rate samples.
#[derive(Clone, Copy, Debug, Default)]
pub struct RateMean {
    sum: f64,
    time: f64,
    samples: u32,
}

impl RateMean {
    /// Add `rate` (packets/s), counted over `span` seconds.
    pub fn add(&mut self, rate: f64, span: f64) {
        if rate.is_finite() && rate > 0.0 && span.is_finite() && span > 0.0 {
            self.sum += rate * span;
            self.time += span;
            self.samples += 1;
        }
    }

    /// The mean (0 without samples).
    pub fn mean(&self) -> f64 {
        if self.samples == 0 || self.time <= 0.0 {
            0.0
        } else {
            self.sum / self.time
        }
    }

    /// Samples added since the last [`clear`](Self::clear).
    pub fn samples(&self) -> u32 {
        self.samples
    }

    /// Forget every sample.
    pub fn clear(&mut self) {
        *self = RateMean::default();
    }
}

/// The acknowledged delivery rate: one sample per advance of the ACK point.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeliverySampler {
    /// The ACK point the next sample counts from, and when it was reached.
    from: Option<(SeqNo, Instant)>,
}

impl DeliverySampler {
    /// A packet `seq` leaves while nothing before it is unacknowledged (the first packet, or
    /// the first after the flow went idle): the next sample counts from here, so an idle
    /// time is not taken for a slow path.
    pub fn restart(&mut self, seq: SeqNo, now: Instant) {
        self.from = Some((seq, now));
    }

    /// Whether a packet has left since the start ([`restart`](Self::restart) was called).
    pub fn started(&self) -> bool {
        self.from.is_some()
    }

    /// The ACK point advanced to `ack` at `now`; `sent_at` holds the send-time checkpoints of
    /// new data, at least from the previous ACK point on. Returns
    /// the rate (packets/s) and the span it was counted over (seconds).
    pub fn on_advance(&mut self, ack: SeqNo, now: Instant, sent_at: &SendTimes) -> Option<(f64, f64)> {
        let (from, at) = self.from.replace((ack, now))?;
        if !ack.is_after(from) {
            self.from = Some((from, at));
            return None;
        }
        let packets = f64::from(ack.diff(from) as u32);
        let acked = now.saturating_since(at).as_secs_f64();
        let sent = match (sent_at.send_time(from), sent_at.send_time(ack.prev())) {
            (Some(first), Some(last)) => last.saturating_since(first).as_secs_f64(),
            _ => 0.0,
        };
        let span = acked.max(sent);
        (span > 0.0).then(|| (packets / span, span))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    #[test]
    fn a_sample_spans_the_longer_of_acking_and_sending() {
        let sent: SendTimes = (0..100u32).map(|i| (SeqNo::new(i * 10), at(u64::from(i)))).collect();
        let mut d = DeliverySampler::default();
        d.restart(SeqNo::new(0), at(0));
        // 100 packets sent over 9 ms, acknowledged 10 ms after the start: 10,000 packets/s.
        let (rate, span) = d.on_advance(SeqNo::new(100), at(10), &sent).expect("a sample");
        assert!((rate - 10_000.0).abs() < 1.0 && (span - 0.010).abs() < 1e-9, "{rate} {span}");
        // A hole repaired: the ACK point jumps 500 packets 1 ms later, but they left over 50 ms.
        let (rate, span) = d.on_advance(SeqNo::new(600), at(11), &sent).expect("a sample");
        assert!((span - 0.049).abs() < 1e-9 && (rate - 10_000.0).abs() < 300.0, "{rate} {span}");
        // No advance, no sample; the ACK point stays.
        assert!(d.on_advance(SeqNo::new(600), at(20), &sent).is_none());
    }

    #[test]
    fn means_are_weighted_by_span() {
        let mut m = RateMean::default();
        m.add(100.0, 1.0);
        m.add(1000.0, 0.1);
        m.add(f64::NAN, 1.0);
        m.add(5.0, 0.0);
        assert_eq!(m.samples(), 2);
        assert!((m.mean() - 200.0 / 1.1).abs() < 1e-9);
        m.clear();
        assert_eq!(m.mean(), 0.0);
    }
}
