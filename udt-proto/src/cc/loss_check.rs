//! Is this loss congestion? The test behind the native algorithm's delay-checked loss response
//! (`udt:delay=true`, the runtime's default; see [`super::native`]): a generalisation of the thesis' noisy-link option
//! (§3.5.2) that tells link errors from congestion by the queue they come with.
//!
//! A DropTail bottleneck drops when its queue is full, so a congestion loss comes with a full
//! queue; a link error comes with whatever queue there is. [`LossCheck`] measures the queue at
//! the moment of each loss:
//! * **The loss's own RTT**: the receiver sends a NAK as soon as the packet after a gap arrives,
//!   so `now - sent(last lost + 1)` when the NAK arrives is an RTT sample taken by the packet that
//!   followed the loss through the same queue, with no smoothing lag. Send times are kept in a
//!   ring indexed by sequence number (allocated once at [`LossCheck::init`], sized from the flow
//!   window, 8 bytes a packet). A retransmitted or overwritten slot gives no sample; the smoothed
//!   RTT stands in for it.
//! * **Base RTT**: the minimum over the connection of those samples, of one timed packet at a
//!   time (the first packet sent while none is pending, ended by the first full ACK beyond it)
//!   and of the packet just before each full ACK's point (`ack - 1`, the newest packet the
//!   receiver had in order when it acknowledged; from the ring, never a retransmission).
//!   Samples can only be late (SYN-timer ACKs, holes), so the minimum converges from above.
//!   The `ack - 1` sample is what makes it converge: the timed packet waits for the receiver's
//!   next ACK, up to a SYN, which on short paths is the whole RTT (measured on Fig. 4-6: no
//!   timed sample below 8 ms for the 0.001-1 ms flows, whose true RTT is 0.1-1.1 ms), and on a
//!   1 s path its ACK is held behind the holes being repaired; loss samples are all taken at a
//!   full queue. With them alone the base took in a standing queue (8 ms for a 0.1 ms flow,
//!   1009 ms for the 1 s one), every later loss looked like a link error and the flow took two
//!   to three times its share.
//!
//! A new loss report (one that reaches past every earlier report; re-reports of the same holes
//! carry no news and are not congestion) is congestion when, with `queue = sample - base`:
//! 1. the queue is above the threshold `max(0.5 ms, max_queue / 2)`, where `max_queue` is the
//!    longest queue a loss's own sample has shown on this connection (the smoothed RTT is kept
//!    out of it: its 100 ms start value and its lag would inflate it): DropTail drops at a
//!    full queue, so a loss with the queue under half its usual peak is a link error. The
//!    threshold adapts to the buffer: 0.5 ms on shallow ones (below that host noise would pass
//!    for a queue), half of it on deep ones. (With 1 ms, a BDP queue at 1 Gb/s and 1 ms, 83
//!    packets, never showed more than the floor once the base was right: two flows shared it
//!    at F = 0.54, one flow used 91%; with 0.5 ms, 0.9994 and 96.8%.) A buffer shallower than
//!    the floor never shows a queue at all: on a path whose base RTT is at most
//!    [`BLIND_PATH_RTT`] (1 ms, where a buffer of a BDP or of the thesis' 10 packets can be
//!    that shallow), a loss under the threshold is a link error only once some loss has shown
//!    a queue above the floor ([`LossCheck::buffer_shown`]); until then it goes on to rules 2
//!    and 3 as an overflow would (1 Gb/s, 0.1 ms, 10 packets, ten flows: F 0.73 and 2.6% loss
//!    before, 0.9966 and 0.05% with it; docs/deviations.md B22);
//! 2. the last decrease has had time to reach the queue: after a decrease, the losses of
//!    packets sent before it are not congestion for [`HOLD_RTTS`] (1.5) smoothed RTTs: one for
//!    the decrease to show in the queue, half of one to spare. A packet sent after the decrease
//!    left at the lower rate; if it is still dropped at a full queue, that is news (the thesis'
//!    congestion epoch, §3.5.1, which starts with the first loss sent after the last
//!    decrease), but only at a queue within a quarter threshold of the longest seen, the
//!    buffer's limit: after a decrease a deep queue stays long for an RTT or more, and a link
//!    error there is not an overflow (counting those cut 100 Mb/s, 300 ms, 1% loss from 95.6%
//!    to 93.7% in the simulator). With the hold on every loss, a flow could decrease at most
//!    once per 1.5 of its RTTs (a 1 s flow every 1.5 s, a 1 ms flow every 15 ms) while the
//!    short flows answered every overflow, and Fig. 4-6's 1 s flow took up to twice its share
//!    (seeds 1-8: mean F 0.955; 0.9815 with the epoch). Shorter holds over-react to random
//!    loss on long paths (Fig. 4-16, 100 ms, 1%: 68% at one RTT). Whatever the RTT, the hold
//!    lasts at least [`MIN_HOLD`] (one SYN) for every loss: a sub-millisecond flow otherwise
//!    decreased several times in one overflow, each packet it sent after a decrease dropped by
//!    the same full queue. The controller may still take a held loss for a later overflow
//!    ([`LossCheck::sent_after_event`], docs/deviations.md B21);
//! 3. the queue is not draining: after that, a loss whose queue is more than a quarter
//!    threshold shorter than at the last decrease shows the decrease working (once the queue falls below the threshold the episode
//!    is over).
//!
//! Slow start's overshoot is answered when slow start ends (the period is set to the receiver's
//! arrival rate, which is what the path delivers): losses of packets sent before that moment
//! ([`LossCheck::on_slow_start_exit`]) still teach the base and the queue, but are neither
//! congestion nor counted toward the loss rate. (Without this, the hundreds of overshoot losses
//! that keep arriving for an RTT after the exit cut a 100 Mb/s, 10 ms flow to 67 Mb/s, three
//! decreases, on the emulated path.)
//!
//! Independently, a loss rate above [`MAX_TOLERATED_LOSS`] over the last window (an RTT and at
//! least [`LOSS_WINDOW_PACKETS`] packets) is congestion whatever the delay says: a buffer too
//! shallow to show a queue must not make the flow ignore heavy overflow. It too waits out the
//! hold: the losses reported in the RTT after a decrease were sent before it, and while the
//! window-limited sender slows down they are a growing fraction of a shrinking window. (Without
//! the hold, one overflow of a 100 ms queue at 100 Mb/s brought four more decreases within
//! 50 ms, the period from 120 to 220 us, and five seconds to recover.)
//!
//! Invariants: the base RTT only decreases and `max_queue` only grows; at most one ACK sample is
//! pending; until the first sample there is no base and every loss is congestion (the unmodified
//! algorithm); nothing is allocated after `init`.

use std::time::Duration;

use crate::seq::SeqNo;
use crate::time::Instant;

/// Flag on a ring entry's sequence number: the packet was retransmitted.
const RETRANSMITTED: u32 = 1 << 31;
/// Ring sizes, entries.
const MIN_SLOTS: usize = 64;
const MAX_SLOTS: usize = 1 << 20;

/// After a decrease, losses are not congestion for this many smoothed RTTs.
pub const HOLD_RTTS: f64 = 1.5;
/// After a decrease, no loss is congestion for this long, whenever its packet was sent: one
/// SYN, the rate control's own interval.
pub const MIN_HOLD: Duration = Duration::from_millis(10);
/// The smallest queue delay taken for a queue.
pub const MIN_THRESHOLD: Duration = Duration::from_micros(500);
/// Paths whose base RTT is at most this (a LAN's, a data centre's) may have buffers too
/// shallow for the queue test to see fill: there a loss at a short queue is a link error only
/// once some loss has shown a queue above [`MIN_THRESHOLD`].
pub const BLIND_PATH_RTT: Duration = Duration::from_millis(1);
/// The loss-rate window lasts at least an RTT and this many packets sent.
pub const LOSS_WINDOW_PACKETS: u64 = 256;
/// A loss fraction over the last window above this is congestion whatever the delay says.
pub const MAX_TOLERATED_LOSS: f64 = 0.05;

/// The congestion test of the delay-checked loss response.
#[derive(Clone, Debug, Default)]
pub struct LossCheck {
    /// The packet being timed and when it left.
    pending: Option<(SeqNo, Instant)>,
    /// Smallest RTT sample so far.
    base: Option<Duration>,
    /// Largest queue delay (smoothed RTT - base) seen so far.
    max_queue: Duration,
    /// No loss is congestion before this time (set by a decrease).
    hold_until: Option<Instant>,
    /// When the last decrease was ([`MIN_HOLD`]).
    decreased_at: Option<Instant>,
    /// Send time (ring microseconds) of the newest packet lost in the report that began the
    /// current congestion event ([`LossCheck::on_congestion_event`]).
    event_sent: Option<u32>,
    /// The last packet sent at the last decrease: the hold covers only the losses up to it.
    decreased_through: Option<SeqNo>,
    /// The queue at the last decrease, while its episode lasts.
    queue_at_decrease: Option<Duration>,
    /// Send times by sequence number: `(seq | RETRANSMITTED, microseconds since start)`.
    sent: Vec<(u32, u32)>,
    /// When the ring's times start.
    start: Instant,
    /// The largest sequence number reported lost so far.
    highest_reported: Option<SeqNo>,
    /// The last packet sent when slow start ended: losses up to it are its overshoot.
    overshoot_through: Option<SeqNo>,
    /// The loss-rate window: when it started, packets sent and lost in it.
    window_start: Instant,
    window_sent: u64,
    window_lost: u64,
    /// Packets sent in the last complete window.
    last_window_sent: u64,
    /// The loss fraction of the last complete window.
    last_loss_rate: f64,
}

impl LossCheck {
    /// No sample yet.
    pub fn new() -> Self {
        LossCheck::default()
    }

    /// Allocate the send-time ring for a flow window of `max_window` packets; times count from
    /// `now`.
    pub fn init(&mut self, now: Instant, max_window: u32) {
        let slots = (max_window as usize).next_power_of_two().clamp(MIN_SLOTS, MAX_SLOTS);
        self.sent = vec![(u32::MAX, 0); slots];
        self.start = now;
    }

    /// A data packet left at `now`.
    pub fn on_sent(&mut self, now: Instant, seq: SeqNo, retransmission: bool) {
        self.window_sent += 1;
        if !self.sent.is_empty() {
            let mask = self.sent.len() - 1;
            let t = self.micros(now);
            let slot = &mut self.sent[seq.value() as usize & mask];
            let flag =
                if retransmission || slot.0 & !RETRANSMITTED == seq.value() { RETRANSMITTED } else { 0 };
            *slot = (seq.value() | flag, t);
        }
        match self.pending {
            Some((timed, _)) if retransmission && timed == seq => self.pending = None,
            Some(_) => {}
            None if !retransmission => self.pending = Some((seq, now)),
            None => {}
        }
    }

    /// A full ACK at `now` says everything before `ack` arrived; `rtt` is the smoothed RTT.
    pub fn on_ack(&mut self, now: Instant, ack: SeqNo, rtt: Duration) {
        if let Some((timed, sent)) = self.pending {
            if ack.is_after(timed) {
                let sample = now.saturating_since(sent);
                self.base = Some(self.base.map_or(sample, |b| b.min(sample)));
                self.pending = None;
            }
        }
        // The newest packet the receiver had in order when it sent this ACK arrived shortly
        // before it: a sample without the ACK timer's wait.
        if let Some(sample) = self.sample_of(now, ack.prev()) {
            self.base = Some(self.base.map_or(sample, |b| b.min(sample)));
        }
        if let Some(queue) = self.queue(rtt) {
            if queue <= self.threshold().unwrap_or(MIN_THRESHOLD) {
                // The queue has drained: the last decrease's episode is over.
                self.queue_at_decrease = None;
            }
        }
        if now.saturating_since(self.window_start) >= rtt && self.window_sent >= LOSS_WINDOW_PACKETS {
            self.last_loss_rate =
                if self.window_sent > 0 { self.window_lost as f64 / self.window_sent as f64 } else { 0.0 };
            self.window_start = now;
            self.last_window_sent = self.window_sent;
            self.window_sent = 0;
            self.window_lost = 0;
        }
    }

    /// The rate was decreased at `now` with the smoothed RTT `rtt`, on a loss that saw `queue`.
    pub fn on_decrease(&mut self, now: Instant, rtt: Duration, queue: Option<Duration>, last_sent: SeqNo) {
        self.hold_until = Some(now + rtt.mul_f64(HOLD_RTTS));
        self.decreased_at = Some(now);
        self.decreased_through = Some(last_sent);
        // A loss without a sample of its own measured the smoothed RTT, which lags and starts at
        // 100 ms: never more than the longest queue a sample showed. (Unclamped, a 1 ms path's
        // episode began at a "queue" of tens of ms and never ended: every later loss, at the
        // full 1 ms queue, looked like draining, and the flow took 895 of 1000 Mb/s from nine
        // others.)
        self.queue_at_decrease = queue.map(|q| q.min(self.max_queue));
    }

    /// Slow start ended on a loss report, with `last_sent` the last packet sent so far: the
    /// period now matches what the path delivers, and any loss among the packets up to
    /// `last_sent` is slow start's overshoot, already answered. Reports of them are neither
    /// congestion nor counted toward the loss rate.
    pub fn on_slow_start_exit(&mut self, last_sent: SeqNo) {
        self.overshoot_through = Some(last_sent);
    }

    /// A loss report whose newest lost packet is `newest_lost` began a congestion event: later
    /// losses are measured against when that packet left ([`LossCheck::sent_after_event`]).
    pub fn on_congestion_event(&mut self, newest_lost: SeqNo) {
        if let Some(t) = self.send_micros(newest_lost) {
            self.event_sent = Some(t);
        }
    }

    /// `lost` left more than `gap` after the packet whose loss began the current congestion
    /// event: it was dropped by a later overflow than the one that event answered.
    pub fn sent_after_event(&self, lost: SeqNo, gap: Duration) -> bool {
        let (Some(event), Some(t)) = (self.event_sent, self.send_micros(lost)) else {
            return false;
        };
        // Ring times wrap; the difference of two recent ones does not.
        t.wrapping_sub(event) as i32 > gap.as_micros().min(i32::MAX as u128) as i32
    }

    /// The smallest RTT sample so far.
    pub fn base_rtt(&self) -> Option<Duration> {
        self.base
    }

    /// The largest queue delay seen so far.
    pub fn max_queue(&self) -> Duration {
        self.max_queue
    }

    /// A loss has shown a queue longer than [`MIN_THRESHOLD`]: the buffer is deep enough for
    /// the queue test to see it fill. Until then a loss at a short queue is not taken for a
    /// link error (module docs, rule 1).
    pub fn buffer_shown(&self) -> bool {
        self.max_queue > MIN_THRESHOLD || self.base.is_some_and(|b| b > BLIND_PATH_RTT)
    }

    /// The queue delay above which a loss may be congestion, once a base is known.
    pub fn threshold(&self) -> Option<Duration> {
        self.base.map(|_| (self.max_queue / 2).max(MIN_THRESHOLD))
    }

    /// Classify the loss report `lost` arriving at `now` with the smoothed RTT `rtt` (module
    /// docs); counts its packets toward the loss rate. The queue it measured, when it measured
    /// one, goes with the verdict, for [`LossCheck::on_decrease`].
    pub fn classify(&mut self, now: Instant, rtt: Duration, lost: &[(SeqNo, SeqNo)]) -> Verdict {
        let newest = lost.iter().map(|&(_, b)| b).reduce(|x, y| if y.is_after(x) { y } else { x });
        // Slow start's overshoot was answered when it ended: its losses teach the base and the
        // queue, but are neither congestion nor part of the loss rate.
        let overshoot = match (self.overshoot_through, newest) {
            (Some(end), Some(n)) if !n.is_after(end) => true,
            (Some(_), Some(_)) => {
                self.overshoot_through = None; // past it for good (and sequence numbers wrap)
                false
            }
            _ => false,
        };
        if !overshoot {
            self.window_lost += lost.iter().map(|&(a, b)| u64::from(a.len_to(b))).sum::<u64>();
        }
        let fresh = match (newest, self.highest_reported) {
            (Some(n), Some(h)) => n.is_after(h),
            (Some(_), None) => true,
            (None, _) => false,
        };
        if fresh {
            self.highest_reported = newest;
        }
        let sample = newest.filter(|_| fresh).and_then(|n| self.sample_after(now, n));
        if let Some(s) = sample {
            let base = self.base.map_or(s, |b| b.min(s));
            self.base = Some(base);
            self.max_queue = self.max_queue.max(s - base);
        }
        let queue = self.queue(sample.unwrap_or(rtt));
        if overshoot {
            return Verdict { congestion: false, queue, reason: Reason::Overshoot };
        }
        // The window in progress is measured against at least the last one's size, so that the
        // first loss of a fresh window is not a large fraction of few packets.
        let sent = self.window_sent.max(self.last_window_sent).max(1) as f64;
        // Only the losses of packets sent before the decrease wait for it to act; a packet
        // sent at the lower rate and still dropped is news of congestion.
        let sent_since = match (newest, self.decreased_through) {
            (Some(n), Some(d)) => n.is_after(d),
            _ => false,
        };
        let in_hold = self.hold_until.is_some_and(|t| now < t);
        let in_min_hold = self.decreased_at.is_some_and(|t| now.saturating_since(t) < MIN_HOLD);
        let held = (in_hold && !sent_since) || in_min_hold;
        if !held
            && (self.last_loss_rate > MAX_TOLERATED_LOSS
                || self.window_lost as f64 / sent > MAX_TOLERATED_LOSS)
        {
            return Verdict { congestion: true, queue, reason: Reason::LossRate };
        }
        let (Some(q), Some(threshold)) = (queue, self.threshold()) else {
            return Verdict { congestion: true, queue, reason: Reason::NoBase };
        };
        let reason = if !fresh {
            Reason::Repeated
        } else if q <= threshold && self.buffer_shown() {
            Reason::ShortQueue
        } else if held || (in_hold && q + threshold / 4 < self.max_queue) {
            // Within the hold, a packet sent after the decrease counts only when the buffer is
            // at its limit: a deep queue stays long for an RTT or more after a decrease, and a
            // link error there is not an overflow.
            Reason::Held
        } else if self.queue_at_decrease.is_some_and(|at| q + threshold / 4 < at) {
            Reason::Draining
        } else {
            Reason::FullQueue
        };
        Verdict { congestion: reason == Reason::FullQueue, queue, reason }
    }

    /// The RTT sample of the packet after `last_lost`: the NAK left the receiver when it arrived.
    fn sample_after(&self, now: Instant, last_lost: SeqNo) -> Option<Duration> {
        self.sample_of(now, last_lost.next())
    }

    /// `now` less the send time of `packet`, if the ring still holds its only transmission.
    fn sample_of(&self, now: Instant, packet: SeqNo) -> Option<Duration> {
        if self.sent.is_empty() {
            return None;
        }
        let (seq, t) = self.sent[packet.value() as usize & (self.sent.len() - 1)];
        if seq != packet.value() {
            return None; // overwritten, never sent, or retransmitted (flag set)
        }
        Some(Duration::from_micros(u64::from(self.micros(now).wrapping_sub(t))))
    }

    /// When `packet` last left (ring microseconds), if the ring still holds it.
    fn send_micros(&self, packet: SeqNo) -> Option<u32> {
        if self.sent.is_empty() {
            return None;
        }
        let (seq, t) = self.sent[packet.value() as usize & (self.sent.len() - 1)];
        (seq & !RETRANSMITTED == packet.value()).then_some(t)
    }

    /// Microseconds since the ring's start, wrapping (differences stay right for 71 minutes).
    fn micros(&self, now: Instant) -> u32 {
        now.saturating_since(self.start).as_micros() as u32
    }

    fn queue(&self, rtt: Duration) -> Option<Duration> {
        self.base.map(|b| rtt.saturating_sub(b))
    }
}

/// What [`LossCheck::classify`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The report is a congestion signal.
    pub congestion: bool,
    /// The queue it measured (loss sample or smoothed RTT, less the base), once a base is known.
    pub queue: Option<Duration>,
    /// Why.
    pub reason: Reason,
}

/// The rule that decided a [`Verdict`] (module docs), for logs and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Congestion: no base RTT yet, so every loss is (the unmodified algorithm).
    NoBase,
    /// Congestion: more than [`MAX_TOLERATED_LOSS`] of the last window was lost.
    LossRate,
    /// Congestion: the queue was near its longest, no decrease pending, not draining.
    FullQueue,
    /// Not congestion: slow start's overshoot, answered by its exit.
    Overshoot,
    /// Not congestion: the report reaches no further than an earlier one.
    Repeated,
    /// Not congestion: the queue was under the threshold (a link error).
    ShortQueue,
    /// Not congestion: the last decrease has not had time to act.
    Held,
    /// Not congestion: the queue is shorter than at the last decrease.
    Draining,
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn at(ms: u64) -> Instant {
        Instant::from_micros(ms * 1000)
    }

    fn seq(v: u32) -> SeqNo {
        SeqNo::new(v)
    }

    /// A check with a ring, base RTT `base_ms` from an ACK sample at time `base_ms`, and
    /// packets 1..=`sent` sent at that time.
    fn with_base(base_ms: u64, sent: u32) -> LossCheck {
        let mut c = LossCheck::new();
        c.init(at(0), 1 << 16);
        c.on_sent(at(0), seq(0), false);
        c.on_ack(at(base_ms), seq(1), MS * base_ms as u32);
        for s in 1..=sent {
            c.on_sent(at(base_ms), seq(s), false);
        }
        c
    }

    /// Send `seq` at `sent_ms` and report `seq - 1` lost when the NAK comes back at `nak_ms`.
    fn loss_seen(c: &mut LossCheck, seq_after: u32, sent_ms: u64, nak_ms: u64, rtt: Duration) -> Verdict {
        c.on_sent(at(sent_ms), seq(seq_after), false);
        c.classify(at(nak_ms), rtt, &[(seq(seq_after - 1), seq(seq_after - 1))])
    }

    #[test]
    fn slow_start_overshoot_is_neither_congestion_nor_loss_rate() {
        let mut c = with_base(10, 400);
        c.on_slow_start_exit(seq(400));
        // 300 of 400 lost: far above the tolerated rate, and with a long queue, yet answered.
        let v = loss_seen(&mut c, 401, 10, 40, 30 * MS);
        assert!(!v.congestion);
        assert_eq!(v.queue, Some(20 * MS), "the sample still measures the queue");
        assert!(!c.classify(at(41), 30 * MS, &[(seq(1), seq(299))]).congestion);
        assert_eq!(c.max_queue(), 20 * MS);
        // Past the exit point the usual test applies: a full queue is congestion.
        assert!(loss_seen(&mut c, 403, 45, 75, 30 * MS).congestion);
    }

    #[test]
    fn without_a_sample_every_loss_is_congestion() {
        let mut c = LossCheck::new();
        assert_eq!(c.base_rtt(), None);
        assert!(c.classify(at(1), Duration::ZERO, &[(seq(3), seq(3))]).congestion);
    }

    #[test]
    fn times_one_packet_at_a_time_and_keeps_the_minimum() {
        let mut c = LossCheck::new();
        c.on_sent(at(0), seq(10), false);
        c.on_sent(at(1), seq(11), false); // not timed: one sample at a time
        c.on_ack(at(30), seq(10), 30 * MS); // 10 not acknowledged yet
        assert_eq!(c.base_rtt(), None);
        c.on_ack(at(40), seq(12), 40 * MS);
        assert_eq!(c.base_rtt(), Some(40 * MS));
        c.on_sent(at(50), seq(12), false);
        c.on_ack(at(75), seq(13), 30 * MS);
        assert_eq!(c.base_rtt(), Some(25 * MS));
        c.on_sent(at(80), seq(13), false);
        c.on_ack(at(200), seq(14), 30 * MS); // a late sample does not raise the base
        assert_eq!(c.base_rtt(), Some(25 * MS));
    }

    #[test]
    fn the_packet_before_the_ack_point_times_the_path_without_the_ack_wait() {
        let mut c = LossCheck::new();
        c.init(at(0), 1 << 16);
        for s in 0..10 {
            c.on_sent(at(s), seq(s as u32), false);
        }
        // 9 arrived at 1 + 9 ms; the receiver's ACK timer sent the ACK 8 ms later: the timed
        // packet (0) says 19 ms, the packet before the ACK point (9) says 11.
        c.on_ack(at(20), seq(10), 19 * MS);
        assert_eq!(c.base_rtt(), Some(11 * MS));
        // A retransmitted packet before the ACK point gives no sample (which copy arrived?).
        c.on_sent(at(21), seq(10), false);
        c.on_sent(at(22), seq(10), true);
        c.on_ack(at(24), seq(11), 3 * MS);
        assert_eq!(c.base_rtt(), Some(11 * MS));
        // Nor does a slot the ring has reused for a later packet.
        c.on_sent(at(30), seq(11 + (1 << 16)), false);
        c.on_ack(at(31), seq(12), MS);
        assert_eq!(c.base_rtt(), Some(11 * MS));
    }

    #[test]
    fn a_retransmission_cancels_the_ack_sample() {
        let mut c = LossCheck::new();
        c.on_sent(at(0), seq(5), false);
        c.on_sent(at(20), seq(5), true);
        c.on_ack(at(25), seq(6), 25 * MS);
        assert_eq!(c.base_rtt(), None, "the ACK may be for either copy");
        c.on_sent(at(30), seq(4), true); // retransmissions are never timed
        c.on_sent(at(31), seq(6), false);
        c.on_ack(at(41), seq(7), 10 * MS);
        assert_eq!(c.base_rtt(), Some(10 * MS));
    }

    #[test]
    fn sequence_numbers_wrap() {
        let mut c = LossCheck::new();
        c.init(at(0), 64);
        let last = SeqNo::new(crate::seq::SEQ_MAX);
        c.on_sent(at(0), last, false);
        c.on_ack(at(7), last.next(), 7 * MS);
        assert_eq!(c.base_rtt(), Some(7 * MS));
        c.on_sent(at(10), last.next(), false);
        let v = c.classify(at(15), 7 * MS, &[(last, last)]);
        assert_eq!(c.base_rtt(), Some(5 * MS), "the NAK sample of the packet after the wrap");
        assert_eq!(v.queue, Some(Duration::ZERO));
    }

    #[test]
    fn a_loss_without_a_queue_is_a_link_error() {
        let mut c = with_base(100, 1000);
        assert_eq!(c.threshold(), Some(MS / 2));
        let v = loss_seen(&mut c, 2000, 200, 300, 100 * MS);
        assert_eq!(v, Verdict { congestion: false, queue: Some(Duration::ZERO), reason: Reason::ShortQueue });
        c.on_sent(at(300), seq(2010), false);
        let v = c.classify(Instant::from_micros(400_500), 100 * MS, &[(seq(2009), seq(2009))]);
        assert!(!v.congestion, "exactly the threshold is no queue");
        let v = loss_seen(&mut c, 2020, 400, 501, 100 * MS);
        assert_eq!(
            v,
            Verdict { congestion: true, queue: Some(MS), reason: Reason::FullQueue },
            "a queue of a full 1 Gb/s, 1 ms BDP"
        );
    }

    #[test]
    fn on_a_sub_millisecond_path_a_loss_at_a_short_queue_is_congestion_until_one_shows_the_buffer() {
        let us = Instant::from_micros;
        let mut c = LossCheck::new();
        c.init(us(0), 1 << 16);
        c.on_sent(us(0), seq(0), false);
        c.on_ack(us(100), seq(1), MS);
        for s in 1..=1000 {
            c.on_sent(us(100), seq(s), false);
        }
        assert_eq!(c.base_rtt(), Some(Duration::from_micros(100)));
        assert!(!c.buffer_shown());
        // A 10-packet buffer at 1 Gb/s holds 0.12 ms, under the 0.5 ms floor: its overflow
        // must not pass for a link error.
        c.on_sent(us(1_000), seq(2000), false);
        let v = c.classify(us(1_220), MS, &[(seq(1999), seq(1999))]);
        assert_eq!((v.congestion, v.reason), (true, Reason::FullQueue));
        assert!(!c.buffer_shown());
        // A loss that meets 0.6 ms of queue shows a buffer the test can see fill ...
        c.on_sent(us(2_000), seq(2010), false);
        assert!(c.classify(us(2_700), MS, &[(seq(2009), seq(2009))]).congestion);
        assert!(c.buffer_shown());
        // ... and from then on a loss at a short queue is a link error, as on longer paths.
        c.on_sent(us(3_000), seq(2020), false);
        let v = c.classify(us(3_150), MS, &[(seq(2019), seq(2019))]);
        assert_eq!((v.congestion, v.reason), (false, Reason::ShortQueue));
    }

    #[test]
    fn the_loss_sees_the_queue_of_the_packet_after_it_not_the_smoothed_rtt() {
        let mut c = with_base(10, 1000);
        // the smoothed RTT still says 100 ms (its start value); the packet after the loss
        // came back in 10: no queue
        assert!(!loss_seen(&mut c, 2000, 20, 30, 100 * MS).congestion);
        // and the other way round
        assert!(loss_seen(&mut c, 2010, 40, 60, 10 * MS).congestion);
    }

    #[test]
    fn the_threshold_is_half_the_longest_queue_a_loss_saw() {
        let mut c = with_base(100, 1000);
        assert!(loss_seen(&mut c, 2000, 200, 380, 100 * MS).congestion); // an 80 ms queue
        assert_eq!(c.max_queue(), 80 * MS);
        assert_eq!(c.threshold(), Some(40 * MS));
        let mut c2 = c.clone();
        // after the hold of 1.5 smoothed RTTs (300 ms)
        assert!(!loss_seen(&mut c, 2010, 900, 1030, 200 * MS).congestion, "30 ms of 80 is not full");
        assert!(loss_seen(&mut c2, 2010, 900, 1070, 200 * MS).congestion, "70 ms of 80 is");
    }

    #[test]
    fn repeated_reports_are_not_news() {
        let mut c = with_base(10, 1000);
        assert!(loss_seen(&mut c, 2000, 20, 40, 10 * MS).congestion);
        c.on_ack(at(100), seq(1), 10 * MS); // the queue drained: episode over
        let again = c.classify(at(200), 30 * MS, &[(seq(1999), seq(1999))]);
        assert!(!again.congestion);
    }

    #[test]
    fn after_a_decrease_losses_wait_one_and_a_half_rtts_and_a_draining_queue_is_no_congestion() {
        let mut c = with_base(10, 100_000);
        let v = loss_seen(&mut c, 2000, 20, 50, 30 * MS); // 20 ms queue: threshold 10 ms
        assert!(v.congestion);
        c.on_decrease(at(50), 30 * MS, v.queue, seq(100_000));
        let mut held = c.clone();
        assert!(!loss_seen(&mut c, 2010, 64, 94, 30 * MS).congestion, "held until 95 ms");
        assert!(loss_seen(&mut held, 2010, 65, 95, 30 * MS).congestion, "the hold is over at 95 ms");
        // after the hold: a queue a quarter threshold shorter shows the decrease working
        assert!(!loss_seen(&mut c, 2020, 100, 127, 30 * MS).congestion, "17 ms < 20 - 2.5");
        assert!(loss_seen(&mut c, 2030, 120, 148, 30 * MS).congestion, "18 ms: still full");
    }

    #[test]
    fn a_packet_sent_after_the_decrease_and_lost_at_a_full_queue_is_not_held() {
        let mut c = with_base(10, 3000);
        let v = loss_seen(&mut c, 2000, 20, 50, 30 * MS); // 20 ms queue
        assert!(v.congestion);
        c.on_decrease(at(50), 30 * MS, v.queue, seq(2100)); // 2100 was the last one sent
                                                            // 2050 left before the decrease: its loss waits for the decrease to act
        let v = loss_seen(&mut c, 2051, 40, 70, 30 * MS);
        assert_eq!((v.congestion, v.reason), (false, Reason::Held));
        // 2200 left at the lower rate and was still dropped at a full queue
        let v = loss_seen(&mut c, 2201, 55, 75, 30 * MS);
        assert_eq!((v.congestion, v.reason), (true, Reason::FullQueue));
    }

    #[test]
    fn within_a_syn_of_a_decrease_no_loss_is_congestion() {
        let mut c = with_base(1, 3000);
        let v = loss_seen(&mut c, 2000, 1, 4, 3 * MS); // 3 ms queue
        assert!(v.congestion);
        c.on_decrease(at(4), 3 * MS, v.queue, seq(2100)); // the RTT hold ends at 8.5 ms
                                                          // 2200 left after the decrease and was dropped at the full queue: 9 ms is still
                                                          // within the SYN, 14 ms is not.
        let v = loss_seen(&mut c, 2201, 6, 9, 3 * MS);
        assert_eq!((v.congestion, v.reason), (false, Reason::Held));
        let v = loss_seen(&mut c, 2301, 11, 14, 3 * MS);
        assert_eq!((v.congestion, v.reason), (true, Reason::FullQueue));
    }

    #[test]
    fn a_later_overflow_is_told_by_when_its_packet_left() {
        let mut c = with_base(10, 0);
        for (ms, s) in [(100, 50), (200, 60), (300, 70)] {
            c.on_sent(at(ms), seq(s), false);
        }
        assert!(!c.sent_after_event(seq(70), 150 * MS), "no event yet");
        c.on_congestion_event(seq(50));
        assert!(!c.sent_after_event(seq(60), 150 * MS));
        assert!(c.sent_after_event(seq(70), 150 * MS));
        assert!(!c.sent_after_event(seq(80), 150 * MS), "never sent");
    }

    #[test]
    fn within_the_hold_a_packet_sent_after_the_decrease_counts_only_at_the_buffer_limit() {
        let mut c = with_base(10, 0);
        for s in 100..=400 {
            c.on_sent(at(100), seq(s), false);
        }
        // 100 arrived 30 ms after it left: a 20 ms queue, the longest so far
        let v = c.classify(at(130), 30 * MS, &[(seq(99), seq(99))]);
        assert_eq!((v.congestion, v.reason, v.queue), (true, Reason::FullQueue, Some(20 * MS)));
        c.on_decrease(at(130), 30 * MS, v.queue, seq(400)); // held until 175 ms
        for s in 500..=800 {
            c.on_sent(at(140), seq(s), false);
        }
        // sent after the decrease; a 15 ms queue is 5 ms short of the limit: a link error
        let v = c.classify(at(165), 30 * MS, &[(seq(499), seq(499))]);
        assert_eq!((v.congestion, v.reason), (false, Reason::Held));
        // at the limit (20 ms): the buffer overflows even at the lower rate
        let v = c.classify(at(170), 30 * MS, &[(seq(504), seq(504))]);
        assert_eq!((v.congestion, v.reason), (true, Reason::FullQueue));
    }

    #[test]
    fn a_drained_queue_ends_the_episode() {
        let mut c = with_base(10, 100_000);
        let v = loss_seen(&mut c, 2000, 20, 60, 30 * MS); // a 30 ms queue
        c.on_decrease(at(60), 30 * MS, v.queue, seq(100_000));
        c.on_ack(at(150), seq(1), 12 * MS); // smoothed queue 2 ms: drained
        assert!(loss_seen(&mut c, 2010, 200, 230, 30 * MS).congestion, "20 ms now counts again");
    }

    #[test]
    fn heavy_loss_is_congestion_whatever_the_delay() {
        let mut c = with_base(10, 300);
        let burst = |c: &mut LossCheck, from: u32, n: u32| {
            c.classify(at(20), 10 * MS, &[(seq(from), seq(from + n - 1))]).congestion
        };
        assert!(!burst(&mut c, 100, 15), "15 of 300");
        assert!(burst(&mut c, 120, 1), "16 of 300");
        // the next window starts clean but remembers the last one's rate for one window
        c.on_ack(at(30), seq(1), 10 * MS);
        assert!(burst(&mut c, 130, 1));
        for s in 0..300 {
            c.on_sent(at(10), seq(1000 + s), false);
        }
        c.on_ack(at(45), seq(1), 10 * MS);
        assert!(!burst(&mut c, 1100, 1), "1 of at least 300");
        // a window needs its packets as well as its RTT
        assert!(!burst(&mut c, 1110, 13));
        c.on_ack(at(60), seq(1), 10 * MS);
        assert!(!burst(&mut c, 1130, 1), "15 of 300: the window is still open");
    }

    #[test]
    fn heavy_loss_waits_out_the_hold_too() {
        let mut c = with_base(10, 300);
        let report = |c: &mut LossCheck, ms: u64, from: u32, n: u32| {
            c.classify(at(ms), 10 * MS, &[(seq(from), seq(from + n - 1))])
        };
        let v = report(&mut c, 20, 100, 20);
        assert_eq!((v.congestion, v.reason), (true, Reason::LossRate), "20 of 300");
        c.on_decrease(at(20), 10 * MS, v.queue, seq(300));
        // the losses of the next 15 ms were sent before the decrease took effect
        let v = report(&mut c, 34, 130, 20);
        assert_eq!((v.congestion, v.reason), (false, Reason::Held));
        let v = report(&mut c, 35, 160, 1);
        assert_eq!((v.congestion, v.reason), (true, Reason::LossRate), "the hold is over at 35 ms");
    }

    #[test]
    fn each_verdict_names_its_rule() {
        let mut c = with_base(10, 100_000);
        let v = loss_seen(&mut c, 1000, 20, 30, 10 * MS);
        assert_eq!((v.congestion, v.reason), (false, Reason::ShortQueue));
        let v = loss_seen(&mut c, 2000, 40, 70, 30 * MS);
        assert_eq!((v.congestion, v.reason), (true, Reason::FullQueue));
        c.on_decrease(at(70), 30 * MS, v.queue, seq(100_000));
        let repeat = c.classify(at(72), 30 * MS, &[(seq(1999), seq(1999))]);
        assert_eq!((repeat.congestion, repeat.reason), (false, Reason::Repeated));
        let v = loss_seen(&mut c, 2010, 80, 110, 30 * MS);
        assert_eq!((v.congestion, v.reason), (false, Reason::Held));
        let v = loss_seen(&mut c, 2020, 120, 145, 30 * MS);
        assert_eq!((v.congestion, v.reason), (false, Reason::Draining), "a 15 ms queue after 20");
        let mut fresh = LossCheck::new();
        fresh.init(at(0), 64);
        for s in 0..100 {
            fresh.on_sent(at(1), seq(s), false);
        }
        let v = fresh.classify(at(5), 10 * MS, &[(seq(3), seq(3))]);
        assert_eq!((v.congestion, v.reason), (true, Reason::NoBase));
    }

    #[test]
    fn an_episode_started_without_a_sample_is_measured_against_the_longest_queue() {
        // Base 1 ms; a loss at the full 1 ms queue shows the buffer's limit.
        let mut c = with_base(1, 100_000);
        let v = loss_seen(&mut c, 1000, 2, 4, MS);
        assert_eq!((v.congestion, v.queue), (true, Some(MS)));
        // A decrease on a report whose queue came from a lagging smoothed RTT of 50 ms.
        c.on_decrease(at(4), 51 * MS, Some(50 * MS), seq(2000));
        // After the hold, a packet sent at the lower rate is dropped at the same full queue:
        // congestion again, not a queue "draining" from 50 ms.
        let v = loss_seen(&mut c, 3000, 100, 102, 2 * MS);
        assert_eq!((v.congestion, v.reason), (true, Reason::FullQueue));
    }
}
