//! When each packet of new data left, from the ACK point on, and which were reported lost: the
//! sender's own round-trip samples and the send-time horizon of the window's hole allowance.
//!
//! An ACK that advances the ACK point to `ack` without passing a reported loss arrived one round
//! trip after packet `ack - 1` left, plus at most the gap to the next packet (a receiver
//! acknowledges on its timer everything that arrived before it fired). An ACK that passes a
//! loss was held by the hole: `ack - 1` arrived long before it, so it gives no sample. The
//! receiver's RTT report is a 1/8 moving average of its ACK/ACK2 pairs, one per ACK period: it
//! trails a change of the queue by about eight ACK periods. These samples do not.
//!
//! How long the ACK waited at the receiver is unknown: it left between the arrivals of `ack - 1`
//! and `ack`, so the time since `ack` left is a lower bound of that packet's round trip (and of
//! the queue it met), tight while the sender is busy, while the sample of `ack - 1` is an upper
//! bound, loose by up to an ACK period when the sender paused after it.
//!
//! Invariants: entries are in sending order, sequence numbers and times increasing; the front is
//! the last entry at or before the ACK point (older ones are forgotten); loss ranges are sorted
//! and at or after the ACK point; a sample is never shorter than the round trip of the packet it
//! times.

use std::collections::VecDeque;
use std::time::Duration;

use crate::seq::SeqNo;
use crate::time::Instant;

/// One round-trip sample: an upper bound and, when the next packet was sent, a lower bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// `now` less the send time of `ack - 1`: at least that packet's round trip.
    pub rtt: Duration,
    /// `now` less the send time of `ack`: at most that packet's round trip.
    pub floor: Option<Duration>,
}

/// Send times of new data, one entry per packet.
#[derive(Clone, Debug, Default)]
pub struct SendTimes {
    entries: VecDeque<(SeqNo, Instant)>,
    /// Reported losses not yet acknowledged, inclusive ranges, sorted by their first number.
    losses: VecDeque<(SeqNo, SeqNo)>,
}

impl SendTimes {
    /// Packet `seq` of new data left at `now` (resends are not recorded: a sample times the
    /// first transmission, so it can only be longer than the true round trip).
    pub fn record(&mut self, seq: SeqNo, now: Instant) {
        if self.entries.back().is_none_or(|&(last, _)| seq.is_after(last)) {
            self.entries.push_back((seq, now));
        }
    }

    /// Packets `first..=last` were reported lost (or, after a timeout, may have been).
    pub fn lost(&mut self, first: SeqNo, last: SeqNo) {
        if last.is_before(first) {
            return;
        }
        let i = self.losses.partition_point(|&(f, _)| f.is_before(first));
        self.losses.insert(i, (first, last));
    }

    /// The round trip an ACK arriving at `now` that advanced the ACK point from `from` to `ack`
    /// (next expected) shows: `now` less the send time of `ack - 1`. `None` when the advance
    /// passed or stopped at a reported loss, that packet is not recorded, or the sample would be
    /// zero.
    pub fn sample(&self, from: SeqNo, ack: SeqNo, now: Instant) -> Option<Sample> {
        let last = ack.add(-1);
        // Sorted by first number: the ranges starting at or before `ack` are at the front. An ACK
        // that stops at a hole (`ack` lost) was sent when the receiver's timer fired, up to an
        // ACK period after `ack - 1` arrived: no sample either.
        let passed_hole = self
            .losses
            .iter()
            .take_while(|&&(first, _)| !first.is_after(ack))
            .any(|&(_, end)| !end.is_before(from));
        if passed_hole {
            return None;
        }
        let i = self.entries.partition_point(|&(seq, _)| !seq.is_after(last));
        let &(seq, sent) = self.entries.get(i.checked_sub(1)?)?;
        let rtt = now.saturating_since(sent);
        let floor = self
            .entries
            .get(i)
            .filter(|&&(next, _)| next == ack)
            .map(|&(_, t)| now.saturating_since(t))
            .filter(|d| !d.is_zero());
        (seq == last && !rtt.is_zero()).then_some(Sample { rtt, floor })
    }

    /// Forget the entries before the ACK point `ack`, keeping the last one at or before it, and
    /// the losses it acknowledged.
    pub fn acknowledge(&mut self, ack: SeqNo) {
        let i = self.entries.partition_point(|&(seq, _)| !seq.is_after(ack));
        if i > 1 {
            self.entries.drain(..i - 1);
        }
        self.losses.retain(|&(_, last)| !last.is_before(ack));
    }

    /// The last sequence number sent at or before `horizon`, if any is recorded.
    pub fn sent_by(&self, horizon: Instant) -> Option<SeqNo> {
        let i = self.entries.partition_point(|&(_, t)| t <= horizon);
        Some(self.entries.get(i.checked_sub(1)?)?.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn a_sample_times_the_last_packet_the_ack_covers() {
        let mut t = SendTimes::default();
        for k in 0..10u32 {
            t.record(SeqNo::new(100 + k), at(u64::from(k)));
        }
        // ACK up to 105 (next expected): packet 104 left at 4 ms.
        assert_eq!(
            t.sample(SeqNo::new(100), SeqNo::new(105), at(54)),
            Some(Sample { rtt: Duration::from_millis(50), floor: Some(Duration::from_millis(49)) })
        );
        // Not recorded (before the first entry), or a zero sample: none.
        assert_eq!(t.sample(SeqNo::new(99), SeqNo::new(100), at(60)), None);
        assert_eq!(t.sample(SeqNo::new(100), SeqNo::new(101), at(0)), None);
    }

    #[test]
    fn resends_are_not_recorded_and_acknowledged_entries_go() {
        let mut t = SendTimes::default();
        t.record(SeqNo::new(1), at(1));
        t.record(SeqNo::new(2), at(2));
        t.record(SeqNo::new(1), at(30)); // a resend of 1: ignored
        t.record(SeqNo::new(3), at(3));
        assert_eq!(
            t.sample(SeqNo::new(1), SeqNo::new(2), at(41)).map(|s| s.rtt),
            Some(Duration::from_millis(40))
        );
        t.acknowledge(SeqNo::new(3));
        assert_eq!(t.sent_by(at(3)), Some(SeqNo::new(3)));
        assert_eq!(t.sent_by(at(2)), None);
        assert_eq!(
            t.sample(SeqNo::new(3), SeqNo::new(4), at(13)),
            Some(Sample { rtt: Duration::from_millis(10), floor: None })
        );
    }

    #[test]
    fn sequence_numbers_wrap() {
        let mut t = SendTimes::default();
        let top = SeqNo::new(crate::seq::SEQ_MAX);
        t.record(top, at(1));
        t.record(top.next(), at(2));
        assert_eq!(t.sample(top, top.next().next(), at(12)).map(|s| s.rtt), Some(Duration::from_millis(10)));
    }

    #[test]
    fn an_ack_that_passes_a_hole_gives_no_sample() {
        let mut t = SendTimes::default();
        for k in 0..20u32 {
            t.record(SeqNo::new(k), at(u64::from(k)));
        }
        t.lost(SeqNo::new(12), SeqNo::new(13));
        t.lost(SeqNo::new(5), SeqNo::new(5)); // reported late, out of order
                                              // Up to 4: clean. Stopped at the hole at 5, or past it: none. And so on.
        assert!(t.sample(SeqNo::new(0), SeqNo::new(4), at(100)).is_some());
        assert_eq!(t.sample(SeqNo::new(0), SeqNo::new(5), at(100)), None);
        t.acknowledge(SeqNo::new(5));
        assert_eq!(t.sample(SeqNo::new(5), SeqNo::new(9), at(100)), None);
        t.acknowledge(SeqNo::new(9));
        assert!(t.sample(SeqNo::new(9), SeqNo::new(11), at(100)).is_some());
        assert_eq!(t.sample(SeqNo::new(9), SeqNo::new(12), at(100)), None);
        assert_eq!(t.sample(SeqNo::new(9), SeqNo::new(15), at(100)), None);
        t.acknowledge(SeqNo::new(15));
        assert!(t.sample(SeqNo::new(15), SeqNo::new(19), at(100)).is_some());
    }
}
