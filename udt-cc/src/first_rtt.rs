//! The round trip before the receiver has measured one, for the rate controllers (`udt`,
//! `copa`): a receiver reports its start value as the RTT (UDT4's 100 ms) until its first ACK2
//! comes back, and UDT4's 1/8 average climbs from there for rounds. On a longer path a minimum
//! taken over such reports would keep the guess, and pace the flow over a round trip several
//! times too short.
//!
//! The sender's own timing stands in: the first packet's round trip, then, until a report is
//! trusted, the shortest round trip of the newest checkpoint an ACK covers (the first packet's
//! was longer if it or its ACK was lost). A report is a measurement once it reaches 7/8 of that
//! own timing less an ACK period (the ACK's own delay); from then on every non-zero one is.
//!
//! Invariants: once trusted, always trusted; a zero report is never a measurement; the own
//! timing only shrinks after its first sample.

use std::time::Duration;

use crate::send_times::SendTimes;
use udt_proto::seq::SeqNo;
use udt_proto::time::Instant;

/// The sender's own round trip and whether the reports are trusted (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct FirstRtt {
    first_sent: Option<Instant>,
    own: Option<Duration>,
    trusted: bool,
}

impl FirstRtt {
    /// Data left at `now`.
    pub fn handle_sent(&mut self, now: Instant) {
        self.first_sent.get_or_insert(now);
    }

    /// An ACK at `now` newly acknowledged packets: the first one times the first packet.
    pub fn handle_ack(&mut self, now: Instant) {
        if self.own.is_none() {
            self.own = self.first_sent.map(|first| now.saturating_since(first));
        }
    }

    /// After [`handle_ack`](Self::handle_ack), once `sent_at` has dropped the checkpoints the
    /// ACK of everything before `ack` passed: until a report is trusted, the newest checkpoint
    /// it covers times its own packet.
    pub fn handle_checkpoint(&mut self, now: Instant, ack: SeqNo, sent_at: &SendTimes) {
        if !self.trusted {
            if let Some((_, sent)) = sent_at.oldest().filter(|&(seq, _)| seq.is_before(ack)) {
                let sample = now.saturating_since(sent);
                self.own = Some(self.own.map_or(sample, |own| own.min(sample)));
            }
        }
    }

    /// Whether a reported `rtt` is a measurement, `syn` the ACK period.
    pub fn trust(&mut self, rtt: Duration, syn: Duration) -> bool {
        if rtt.is_zero() {
            return false;
        }
        if !self.trusted {
            if !self.plausible(rtt, syn) {
                return false;
            }
            self.trusted = true;
        }
        true
    }

    /// Whether a reported `rtt` reaches 7/8 of the sender's own timing less the ACK period
    /// `syn`, whether or not a report was trusted before: a receiver whose first ACK2 has not
    /// come back still reports its guess, and its 1/8 average climbs from there, after a first
    /// report that reached the own timing (one the sender's handshake timing set).
    pub fn plausible(&self, rtt: Duration, syn: Duration) -> bool {
        let floor = self.own.map(|own| own.saturating_sub(syn) * 7 / 8);
        !rtt.is_zero() && floor.is_none_or(|floor| rtt >= floor)
    }

    /// Whether a report has been a measurement.
    pub fn trusted(&self) -> bool {
        self.trusted
    }

    /// The sender's own round trip, once an ACK came.
    pub fn own(&self) -> Option<Duration> {
        self.own
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_report_below_the_flows_own_round_trip_is_the_receivers_guess_until_one_reaches_it() {
        let mut f = FirstRtt::default();
        let mut sent_at = SendTimes::default();
        for k in 0..8 {
            let now = Instant::ZERO + ms(k);
            f.handle_sent(now);
            sent_at.handle_sent(now, SeqNo::new(k as u32), false);
        }
        // The first ACK comes 700 ms after the first packet, the receiver still at 100 ms.
        sent_at.handle_ack(SeqNo::new(4));
        f.handle_ack(Instant::ZERO + ms(700));
        f.handle_checkpoint(Instant::ZERO + ms(700), SeqNo::new(4), &sent_at);
        assert!(f.own().is_some_and(|own| own <= ms(700) && own >= ms(690)), "{:?}", f.own());
        assert!(!f.trust(ms(100), ms(10)));
        assert!(!f.trust(Duration::ZERO, ms(10)));
        assert!(!f.trusted());
        // A measured report: trusted, and from then on every non-zero one.
        assert!(f.trust(ms(695), ms(10)));
        assert!(f.trust(ms(100), ms(10)));
        assert!(!f.trust(Duration::ZERO, ms(10)));
    }

    #[test]
    fn a_report_below_the_own_timing_is_implausible_after_one_was_trusted_too() {
        let mut f = FirstRtt::default();
        f.handle_sent(Instant::ZERO);
        f.handle_ack(Instant::ZERO + ms(300));
        assert!(f.trust(ms(275), ms(10)));
        assert!(f.plausible(ms(275), ms(10)));
        // 7/8 of 290 ms is 253.75 ms.
        assert!(!f.plausible(ms(103), ms(10)));
        assert!(!f.plausible(ms(253), ms(10)));
        assert!(f.plausible(ms(254), ms(10)));
        assert!(!f.plausible(Duration::ZERO, ms(10)));
    }

    #[test]
    fn before_any_ack_every_non_zero_report_is_trusted() {
        let mut f = FirstRtt::default();
        assert!(f.trust(ms(100), ms(10)));
        assert!(f.trusted());
    }
}
