//! When new data left: sparse (first sequence, time) checkpoints of the packets sent and not
//! yet acknowledged, for the rate controllers (`udt`, `copa`) that pace rather than count a
//! window. From them: when a packet was sent (to the checkpoints' resolution), and how many
//! unacknowledged packets no longer occupy the path.
//!
//! UDT acknowledges cumulatively: a packet that arrived behind a hole, or was lost and waits in
//! the loss list, counts in flight until the hole is filled. Those sent more than a round trip
//! and an ACK period ago have left the path either way ([`SendTimes::held_behind_holes`]); a
//! window that counted them would stall a lossy path.
//!
//! Invariants: checkpoints are in sending order, at least [`CHECKPOINT_EVERY`] apart; the
//! oldest one kept is at or before the ACK point (the packets from it on are the
//! unacknowledged ones); retransmissions add none (they carry old sequence numbers).

use std::collections::VecDeque;
use std::time::Duration;

use udt_proto::seq::SeqNo;
use udt_proto::time::Instant;

/// Spacing of the checkpoints: an eighth of UDT's ACK period, finer than any feedback.
pub const CHECKPOINT_EVERY: Duration = Duration::from_micros(1250);

/// The checkpoints (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct SendTimes {
    /// (first sequence sent, time), oldest first.
    checkpoints: VecDeque<(SeqNo, Instant)>,
}

impl SendTimes {
    /// New data `seq` left at `now` (retransmissions are not recorded).
    pub fn handle_sent(&mut self, now: Instant, seq: SeqNo, retransmission: bool) {
        if !retransmission && self.checkpoints.back().is_none_or(|&(_, t)| now - t >= CHECKPOINT_EVERY) {
            self.checkpoints.push_back((seq, now));
        }
    }

    /// Everything before `ack` is acknowledged: the checkpoints it passed are dropped, all but
    /// the one at or before it.
    pub fn handle_ack(&mut self, ack: SeqNo) {
        while self.checkpoints.get(1).is_some_and(|&(seq, _)| !seq.is_after(ack)) {
            self.checkpoints.pop_front();
        }
    }

    /// The oldest checkpoint kept.
    pub fn oldest(&self) -> Option<(SeqNo, Instant)> {
        self.checkpoints.front().copied()
    }

    /// When `seq` was sent, to the checkpoints' resolution (the checkpoint at or before it).
    pub fn send_time(&self, seq: SeqNo) -> Option<Instant> {
        self.checkpoints.iter().take_while(|&&(s, _)| !s.is_after(seq)).last().map(|&(_, t)| t)
    }

    /// Unacknowledged packets (from `last_ack` on) sent more than `rtt` and `syn` (one ACK
    /// period) before `now`: each has arrived and waits behind a hole at the receiver, or was
    /// lost and waits in the loss list; either way it no longer occupies the path.
    pub fn held_behind_holes(&self, now: Instant, rtt: Duration, syn: Duration, last_ack: SeqNo) -> f64 {
        let Some(horizon) = now.as_nanos().checked_sub((rtt + syn).as_nanos() as u64) else {
            return 0.0;
        };
        let horizon = Instant::from_nanos(horizon);
        match self.checkpoints.iter().take_while(|&&(_, t)| t <= horizon).last() {
            Some(&(seq, _)) if seq.is_after(last_ack) => f64::from(seq.diff(last_ack) as u32),
            _ => 0.0,
        }
    }
}

/// Checkpoints as given, (first sequence, time) in sending order (a script or a test).
impl FromIterator<(SeqNo, Instant)> for SendTimes {
    fn from_iter<I: IntoIterator<Item = (SeqNo, Instant)>>(iter: I) -> Self {
        SendTimes { checkpoints: iter.into_iter().collect() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(us: u64) -> Instant {
        Instant::ZERO + Duration::from_micros(us)
    }

    #[test]
    fn checkpoints_are_sparse_and_skip_retransmissions() {
        let mut s = SendTimes::default();
        for k in 0..100u32 {
            s.handle_sent(at(u64::from(k) * 100), SeqNo::new(k), false);
        }
        s.handle_sent(at(20_000), SeqNo::new(5), true);
        // Every 1.25 ms: packets 0, 13, 26, ... (100 us apart).
        assert_eq!(s.send_time(SeqNo::new(12)), Some(at(0)));
        assert_eq!(s.send_time(SeqNo::new(13)), Some(at(1300)));
        assert_eq!(s.send_time(SeqNo::new(99)), Some(at(9100)));
        s.handle_ack(SeqNo::new(30));
        assert_eq!(s.oldest(), Some((SeqNo::new(26), at(2600))));
    }

    #[test]
    fn packets_older_than_a_round_trip_and_an_ack_period_are_held_behind_holes() {
        let mut s = SendTimes::default();
        for k in 0..1000u32 {
            s.handle_sent(at(u64::from(k) * 100), SeqNo::new(k), false);
        }
        // At 100 ms, RTT 60 ms + ACK period 10 ms: sent before 30 ms, to the checkpoint.
        let held = s.held_behind_holes(
            at(100_000),
            Duration::from_millis(60),
            Duration::from_millis(10),
            SeqNo::new(0),
        );
        assert!((286.0..=300.0).contains(&held), "{held}");
        assert_eq!(
            s.held_behind_holes(
                at(100_000),
                Duration::from_millis(60),
                Duration::from_millis(10),
                SeqNo::new(400)
            ),
            0.0
        );
        assert_eq!(
            s.held_behind_holes(
                at(1_000),
                Duration::from_millis(60),
                Duration::from_millis(10),
                SeqNo::new(0)
            ),
            0.0
        );
    }
}
