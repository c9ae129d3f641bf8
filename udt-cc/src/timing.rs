//! Per-packet timing shared by the delay- and model-based controllers (thesis §5.3.4 and
//! footnote 7: "CVegas reuses a timing class"): departure times, RTT samples, RTT rounds and
//! delivery-rate samples.
//!
//! [`Timing`] owns a ring of per-packet records indexed by sequence number. It starts at
//! [`MIN_SLOTS`] and doubles when more packets are in flight than it holds, up to a limit sized
//! at [`Timing::init`] from the negotiated flow window: memory follows the flight, not the
//! window (a 262,144-packet window would otherwise commit 25 MB per connection up front).
//! * **Departures**: [`Timing::on_sent`] records each data packet's send time, whether it is a
//!   retransmission, and the delivery state at that moment.
//! * **RTT**: on each ACK `a` (next expected), [`Timing::on_ack`] takes the sample
//!   `now - sent(a - 1)` for the newest acknowledged packet, unless that packet was retransmitted
//!   (Karn's rule: the ACK may be for either copy). The minimum over the connection is
//!   `baseRTT` (Vegas, FAST); the minimum, mean and count of the samples of the current round are
//!   kept for once-per-RTT decisions.
//! * **Rounds**: a round ends with the ACK that acknowledges the largest sequence number sent
//!   when it began (Linux `tcp_vegas.c` `beg_snd_nxt`; equivalent to the BBR draft's
//!   `next_round_delivered`). The ending ACK's own sample belongs to the round it ends.
//! * **Delivery rate** (draft-cheng-iccrg-delivery-rate-estimation-00 §3, simplified): the
//!   connection keeps `delivered` (packets cumulatively acknowledged), `delivered_time` (when the
//!   count last grew) and `first_sent_time` (send time of the packet most recently acknowledged).
//!   Each packet remembers those three at its departure. On an ACK for packet P = `a - 1`:
//!   `rate = (delivered - P.delivered) / max(P.sent - P.first_sent, now - P.delivered_time)`.
//!   The sample is discarded when the interval is shorter than the minimum RTT (draft §3.3: ACK
//!   compression would inflate it) or zero.
//!
//! Invariants: the ring length is a power of two between [`MIN_SLOTS`] and its limit (at most
//! [`MAX_SLOTS`]), and grows only; a slot
//! is used only when it holds the sequence number asked for, so an overwritten or never-written
//! slot gives no sample rather than a wrong one; `delivered` never decreases; RTT samples are
//! non-negative.
//!
//! Deviations from the rate-estimation draft: `delivered` counts cumulative acknowledgement only
//! (UDT has no SACK: packets received beyond a hole count when the hole is filled); the
//! application-limited marking is omitted (the controller context does not say whether the
//! sender ran out of data), so samples taken while application-limited count as ordinary ones
//! (they can only lower a windowed maximum, never raise it); with more packets in flight than
//! the ring holds (a flow window above [`MAX_SLOTS`]) the oldest records are lost and give no
//! samples.

use std::time::Duration;

use super::CcContext;
use udt_proto::seq::SeqNo;
use udt_proto::time::Instant;

/// Smallest ring, records.
pub const MIN_SLOTS: usize = 64;
/// Largest ring, records (about 40 MB).
pub const MAX_SLOTS: usize = 1 << 20;

const EMPTY: u32 = u32::MAX; // never a 31-bit sequence number

#[derive(Clone, Copy, Debug)]
struct Slot {
    seq: u32,
    retransmitted: bool,
    sent: Instant,
    delivered: u64,
    delivered_time: Instant,
    first_sent: Instant,
}

const EMPTY_SLOT: Slot = Slot {
    seq: EMPTY,
    retransmitted: false,
    sent: Instant::ZERO,
    delivered: 0,
    delivered_time: Instant::ZERO,
    first_sent: Instant::ZERO,
};

/// RTT statistics of one completed round.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RoundStats {
    /// Smallest RTT sample of the round.
    pub min_rtt: Option<Duration>,
    /// Mean of the round's RTT samples.
    pub mean_rtt: Option<Duration>,
    /// Number of RTT samples in the round.
    pub samples: u32,
}

/// A delivery-rate sample: `delivered` packets over `interval`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateSample {
    /// Packets delivered between the sampled packet's departure and its acknowledgement.
    pub delivered: u64,
    /// The sampling interval (longer of the send and ACK intervals).
    pub interval: Duration,
}

impl RateSample {
    /// The rate in packets per second.
    pub fn per_sec(&self) -> f64 {
        self.delivered as f64 / self.interval.as_secs_f64()
    }
}

/// What one ACK taught.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AckSample {
    /// Packets newly acknowledged (zero for an ACK that does not advance).
    pub acked: u32,
    /// RTT of the newest acknowledged packet, unless it was retransmitted or not recorded.
    pub rtt: Option<Duration>,
    /// Delivery-rate sample, when valid.
    pub rate: Option<RateSample>,
    /// Statistics of the round this ACK ended, if it ended one.
    pub round_end: Option<RoundStats>,
}

/// The timing records of one connection (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct Timing {
    slots: Vec<Slot>,
    /// The ring's largest length: the flow window's, as a power of two.
    limit: usize,
    last_ack: SeqNo,
    delivered: u64,
    delivered_time: Instant,
    first_sent_time: Instant,
    base_rtt: Option<Duration>,
    last_rtt: Option<Duration>,
    round_end_seq: SeqNo,
    rounds: u64,
    round: RoundStats,
    round_sum: Duration,
}

impl Timing {
    /// Empty; call [`Timing::init`] before use.
    pub fn new() -> Self {
        Timing::default()
    }

    /// Allocate the ring for `ctx.max_window` packets in flight and reset every statistic.
    pub fn init(&mut self, ctx: &CcContext<'_>) {
        let want = (ctx.max_window as usize).saturating_add(1).next_power_of_two();
        self.limit = want.clamp(MIN_SLOTS, MAX_SLOTS);
        self.slots.clear();
        self.slots.resize(MIN_SLOTS, EMPTY_SLOT);
        self.last_ack = ctx.last_ack;
        self.delivered = 0;
        self.delivered_time = ctx.now;
        self.first_sent_time = ctx.now;
        self.base_rtt = None;
        self.last_rtt = None;
        self.round_end_seq = ctx.snd_curr_seq;
        self.rounds = 0;
        self.round = RoundStats::default();
        self.round_sum = Duration::ZERO;
    }

    fn index(&self, seq: SeqNo) -> usize {
        seq.value() as usize & (self.slots.len().wrapping_sub(1))
    }

    /// Make the ring hold every packet from the ACK point to `seq`, within its limit.
    fn grow_for(&mut self, seq: SeqNo) {
        let span = usize::try_from(seq.diff(self.last_ack)).unwrap_or(0).saturating_add(1);
        if span <= self.slots.len() || self.slots.len() >= self.limit {
            return;
        }
        let len = span.next_power_of_two().min(self.limit);
        let old = std::mem::replace(&mut self.slots, vec![EMPTY_SLOT; len]);
        for slot in old.into_iter().filter(|s| s.seq != EMPTY) {
            self.slots[slot.seq as usize & (len - 1)] = slot;
        }
    }

    /// Record the departure of `seq` at `ctx.now`.
    pub fn on_sent(&mut self, ctx: &CcContext<'_>, seq: SeqNo, retransmission: bool) {
        if self.slots.is_empty() {
            return;
        }
        self.grow_for(seq);
        // Nothing else in flight: the next sample's intervals start now (draft §3.2).
        if !retransmission && seq == ctx.last_ack {
            self.first_sent_time = ctx.now;
            self.delivered_time = ctx.now;
        }
        let i = self.index(seq);
        self.slots[i] = Slot {
            seq: seq.value(),
            retransmitted: retransmission,
            sent: ctx.now,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent: self.first_sent_time,
        };
    }

    /// Account for an ACK of everything before `ack`.
    pub fn on_ack(&mut self, ctx: &CcContext<'_>, ack: SeqNo) -> AckSample {
        let newly = ack.diff(self.last_ack);
        if newly <= 0 {
            return AckSample::default();
        }
        let now = ctx.now;
        self.last_ack = ack;
        self.delivered += newly as u64;
        self.delivered_time = now;
        let mut out = AckSample { acked: newly as u32, ..AckSample::default() };
        let newest = ack.prev();
        if let Some(slot) = self.slots.get(self.index(newest)).copied().filter(|s| s.seq == newest.value()) {
            if !slot.retransmitted {
                let rtt = now - slot.sent;
                self.base_rtt = Some(self.base_rtt.map_or(rtt, |b| b.min(rtt)));
                self.last_rtt = Some(rtt);
                self.round.min_rtt = Some(self.round.min_rtt.map_or(rtt, |m| m.min(rtt)));
                self.round.samples += 1;
                self.round_sum += rtt;
                out.rtt = Some(rtt);
            }
            let interval = (slot.sent - slot.first_sent).max(now - slot.delivered_time);
            let floor = self.base_rtt.unwrap_or(Duration::ZERO);
            if !interval.is_zero() && interval >= floor {
                out.rate = Some(RateSample { delivered: self.delivered - slot.delivered, interval });
            }
            self.first_sent_time = slot.sent;
        }
        if ack.is_after(self.round_end_seq) {
            let mut stats = std::mem::take(&mut self.round);
            if stats.samples > 0 {
                stats.mean_rtt = Some(self.round_sum / stats.samples);
            }
            self.round_sum = Duration::ZERO;
            self.round_end_seq = ctx.snd_curr_seq;
            self.rounds += 1;
            out.round_end = Some(stats);
        }
        out
    }

    /// Start a new round now (after a window reduction, samples of the old window are stale).
    pub fn restart_round(&mut self, ctx: &CcContext<'_>) {
        self.round = RoundStats::default();
        self.round_sum = Duration::ZERO;
        self.round_end_seq = ctx.snd_curr_seq;
    }

    /// The smallest RTT seen on the connection.
    pub fn base_rtt(&self) -> Option<Duration> {
        self.base_rtt
    }

    /// The latest RTT sample.
    pub fn last_rtt(&self) -> Option<Duration> {
        self.last_rtt
    }

    /// Rounds completed.
    pub fn rounds(&self) -> u64 {
        self.rounds
    }

    /// Packets delivered (cumulatively acknowledged) since `init`.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Ring length, records.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// The longest the ring may grow, records.
    pub fn limit(&self) -> usize {
        self.limit
    }
}

/// Test support: a single-bottleneck path for closed-loop tests of the controllers.
///
/// One sender with an infinitely fast access link, a FIFO bottleneck of `capacity` packets/s with
/// an unlimited buffer, a fixed two-way propagation delay `base`, and a receiver acknowledging
/// every packet. The sender sends whenever the congestion window allows and the pacing period
/// has passed. In steady state the bottleneck queue is `flight - capacity * base`.
#[cfg(test)]
pub(crate) mod path {
    use std::collections::VecDeque;
    use std::time::Duration;

    use crate::tcp::script::Script;
    use crate::{CcContext, CongestionControl};
    use udt_proto::seq::SeqNo;
    use udt_proto::time::Instant;

    pub struct Path {
        pub sc: Script,
        pub capacity: f64,
        pub base: Duration,
        pub link_free: Instant,
        pub next_seq: u32,
        pub last_ack: u32,
        pub in_flight: VecDeque<(u32, Instant)>,
        pub next_send: Instant,
        pub max_queue_seen: f64,
    }

    impl Path {
        pub fn new(capacity: f64, base: Duration) -> Self {
            let mut sc = Script::new();
            sc.max_window = 100_000;
            sc.rtt = base;
            Path {
                sc,
                capacity,
                base,
                link_free: Instant::ZERO,
                next_seq: 1,
                last_ack: 1,
                in_flight: VecDeque::new(),
                next_send: Instant::ZERO,
                max_queue_seen: 0.0,
            }
        }

        /// Packets the bottleneck holds at `now` (queued plus the one in service).
        pub fn queue(&self) -> f64 {
            (self.link_free - self.sc.now).as_secs_f64() * self.capacity
        }

        pub fn ctx(&mut self) -> CcContext<'_> {
            let (last_ack, sent, flight) = (self.last_ack, self.next_seq - 1, self.in_flight.len() as u32);
            self.sc.sent = sent;
            let mut c = self.sc.ctx();
            c.last_ack = SeqNo::new(last_ack);
            c.flight = flight;
            c
        }

        pub fn init(&mut self, cc: &mut dyn CongestionControl) {
            cc.init(&mut self.ctx());
        }

        /// Run until `until`; returns the number of packets delivered.
        pub fn run(&mut self, cc: &mut dyn CongestionControl, until: Instant) -> u64 {
            let mut delivered = 0;
            loop {
                let can_send = (self.in_flight.len() as f64) < cc.congestion_window().floor();
                let send_at = self.next_send.max(self.sc.now);
                let ack_at = self.in_flight.front().map(|&(_, t)| t);
                let send_first = can_send && ack_at.is_none_or(|a| send_at < a);
                let at = if send_first { send_at } else { ack_at.unwrap_or(until) };
                if at >= until {
                    self.sc.now = until;
                    return delivered;
                }
                self.sc.now = at;
                if send_first {
                    let seq = self.next_seq;
                    self.next_seq += 1;
                    let depart = self.link_free.max(at) + Duration::from_secs_f64(1.0 / self.capacity);
                    self.link_free = depart;
                    self.in_flight.push_back((seq, depart + self.base));
                    self.max_queue_seen = self.max_queue_seen.max(self.queue());
                    cc.on_packet_sent(&mut self.ctx(), SeqNo::new(seq), false);
                    self.next_send = at + cc.send_period();
                } else if let Some((seq, _)) = self.in_flight.pop_front() {
                    self.last_ack = seq + 1;
                    delivered += 1;
                    cc.on_ack(&mut self.ctx(), SeqNo::new(seq + 1));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::script::Script;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn ring_limit_is_sized_from_the_flow_window_and_starts_small() {
        let mut sc = Script::new();
        sc.max_window = 25_600;
        let mut t = Timing::new();
        t.init(&sc.ctx());
        assert_eq!((t.capacity(), t.limit()), (MIN_SLOTS, 32_768));
        sc.max_window = 2;
        t.init(&sc.ctx());
        assert_eq!((t.capacity(), t.limit()), (MIN_SLOTS, MIN_SLOTS));
        sc.max_window = u32::MAX;
        t.init(&sc.ctx());
        assert_eq!((t.capacity(), t.limit()), (MIN_SLOTS, MAX_SLOTS));
    }

    /// The ring grows with the packets in flight and keeps the records it held: 5,000 packets
    /// sent before any ACK, then every one acknowledged gives its RTT sample.
    #[test]
    fn ring_grows_with_the_flight_and_keeps_its_records() {
        let mut sc = Script::new();
        sc.max_window = 262_144;
        let mut t = Timing::new();
        t.init(&sc.ctx());
        for s in 1..=5000u32 {
            sc.now = Instant::ZERO + Duration::from_micros(u64::from(s));
            sc.sent = s;
            t.on_sent(&sc.ctx(), SeqNo::new(s), false);
        }
        assert_eq!(t.capacity(), 8192);
        sc.now = Instant::ZERO + ms(100);
        for s in 1..=5000u32 {
            let sample = t.on_ack(&sc.ctx(), SeqNo::new(s + 1));
            let want = ms(100) - Duration::from_micros(u64::from(s));
            assert_eq!(sample.rtt, Some(want), "packet {s}");
        }
    }

    #[test]
    fn rtt_of_newest_acked_packet_with_karn_and_rounds() {
        let mut sc = Script::new();
        sc.max_window = 1000;
        // Script's ISN: snd_curr_seq = 0 is "sent" at init, last_ack = 0.
        let mut t = Timing::new();
        t.init(&sc.ctx());
        for s in 0..10 {
            sc.now = Instant::ZERO + ms(s);
            sc.sent = s as u32;
            t.on_sent(&sc.ctx(), SeqNo::new(s as u32), false);
        }
        // ACK 5 at 105 ms: packet 4 left at 4 ms -> 101 ms; the round that began at init ends.
        sc.now = Instant::ZERO + ms(105);
        let a = t.on_ack(&sc.ctx(), SeqNo::new(5));
        assert_eq!(a.acked, 5);
        assert_eq!(a.rtt, Some(ms(101)));
        let r = a.round_end.expect("round 0 ends");
        assert_eq!((r.min_rtt, r.samples), (Some(ms(101)), 1));
        assert_eq!(t.rounds(), 1);
        // Packet 7 is retransmitted at 120 ms: no RTT from ACK 8 (Karn), but packet 9 gives one.
        sc.now = Instant::ZERO + ms(120);
        t.on_sent(&sc.ctx(), SeqNo::new(7), true);
        sc.now = Instant::ZERO + ms(130);
        let a = t.on_ack(&sc.ctx(), SeqNo::new(8));
        assert_eq!((a.acked, a.rtt, a.round_end), (3, None, None));
        // A repeated ACK teaches nothing.
        assert_eq!(t.on_ack(&sc.ctx(), SeqNo::new(8)), AckSample::default());
        sc.now = Instant::ZERO + ms(140);
        let a = t.on_ack(&sc.ctx(), SeqNo::new(10)); // passes seq 9, the round's end
        assert_eq!(a.rtt, Some(ms(131)));
        let r = a.round_end.expect("round 1 ends");
        assert_eq!((r.min_rtt, r.mean_rtt, r.samples), (Some(ms(131)), Some(ms(131)), 1));
        assert_eq!(t.base_rtt(), Some(ms(101)));
        assert_eq!(t.delivered(), 10);
    }

    #[test]
    fn delivery_rate_of_a_paced_flow() {
        // 1000 packets/s (one per ms) over a 50 ms path: each ACK acknowledges one packet.
        let mut sc = Script::new();
        sc.max_window = 1000;
        let mut t = Timing::new();
        t.init(&sc.ctx());
        let mut last = None;
        for k in 0..300u32 {
            let now = Instant::ZERO + ms(u64::from(k));
            // First the ACK for packet k - 50 (sent 50 ms ago), then packet k leaves.
            if k >= 50 {
                sc.now = now;
                sc.sent = k - 1;
                let a = t.on_ack(&sc.ctx(), SeqNo::new(k - 49));
                assert_eq!(a.rtt, Some(ms(50)));
                if let Some(r) = a.rate {
                    last = Some(r);
                }
            }
            sc.now = now;
            sc.sent = k;
            t.on_sent(&sc.ctx(), SeqNo::new(k), false);
        }
        // Steady state: 50 packets delivered per 50 ms.
        let r = last.expect("rate samples");
        assert_eq!(r.interval, ms(50));
        assert_eq!(r.delivered, 50);
        assert!((r.per_sec() - 1000.0).abs() < 1e-6);
    }
}
