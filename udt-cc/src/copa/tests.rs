//! Tests of Copa: the mode switch, the approach to the target, and properties over arbitrary
//! reports (the closed loop is in `udt-lab/tests/cc_family.rs`).

use std::collections::VecDeque;
use std::time::Duration;

use proptest::prelude::*;

use super::mode::ModeDetector;
use super::*;
use crate::tcp::script::Script;
use crate::AckReport;
use udt_proto::queue_delay::QueueReport;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn at(millis: u64) -> Instant {
    Instant::ZERO + ms(millis)
}

/// A scripted driver: full ACKs every 10 ms with a chosen queue report and arrival rate, each
/// acknowledging what was sent one RTT (100 ms) before.
struct Driver {
    sc: Script,
    cc: Copa,
    /// The standing and largest queueing delay the receiver reports.
    queue: (Duration, Duration),
    /// The last sequence sent at each of the last ten steps, oldest first.
    in_flight: VecDeque<u32>,
    /// The link's capacity the receiver reports, packets/s (0: none).
    capacity: u32,
    /// A hole the cumulative ACK stops at (a lost packet not yet repaired).
    hole: Option<u32>,
}

impl Driver {
    /// A flow on a 100 ms path.
    fn new() -> Self {
        let mut sc = Script::new();
        let mut cc = Copa::new(CopaConfig::default());
        cc.init(&mut sc.ctx());
        Driver {
            sc,
            cc,
            queue: (Duration::ZERO, Duration::ZERO),
            in_flight: VecDeque::new(),
            capacity: 0,
            hole: None,
        }
    }

    /// 10 ms pass; the flow sent at its rate, and what it sent an RTT ago is acknowledged, the
    /// receiver reporting `delivered` packets/s.
    fn ack(&mut self, delivered: u32) {
        self.sc.now += ms(10);
        let sent = (self.cc.rate() * 0.01).round() as u32;
        for _ in 0..sent {
            self.sc.sent += 1;
            let seq = SeqNo::new(self.sc.sent);
            self.cc.on_packet_sent(&mut self.sc.ctx(), seq, false);
        }
        self.in_flight.push_back(self.sc.sent);
        let acked = if self.in_flight.len() > 10 { self.in_flight.pop_front() } else { None };
        let ack = SeqNo::new(acked.unwrap_or(0).min(self.hole.unwrap_or(u32::MAX)));
        let mut ctx = self.sc.ctx();
        ctx.last_ack = ack;
        ctx.bandwidth = self.capacity;
        let queue = Some(QueueReport { min: self.queue.0, max: self.queue.1 });
        ctx.ack = Some(AckReport { rtt: ms(100), recv_rate: delivered, capacity: self.capacity, queue });
        self.cc.on_ack(&mut ctx, ack);
    }

    /// A flow on a link of `capacity` packets/s (the receiver's packet-pair reports), past its
    /// first three rounds.
    fn on_link(capacity: u32) -> Self {
        let mut d = Driver::new();
        d.capacity = capacity;
        d.run(ms(300));
        d
    }

    /// ACKs for `span`, the receiver reporting what the flow sends (nothing in the flow's
    /// first RTT, before any packet arrived).
    fn run(&mut self, span: Duration) {
        for _ in 0..span.as_millis() / 10 {
            let arrived = self.in_flight.len() >= 10;
            let rate = if arrived { self.cc.rate() as u32 } else { 0 };
            self.ack(rate);
        }
    }

    /// Past slow start: three rounds on an empty queue, then a report of a 50 ms queue.
    fn past_slow_start(&mut self) {
        self.run(ms(300));
        self.queue = (ms(50), ms(50));
        self.ack(self.cc.rate() as u32);
        assert!(!self.cc.in_slow_start());
    }

    /// A NAK of one packet.
    fn lose(&mut self) {
        self.lose_many(1);
    }

    /// A NAK of the last `n` packets sent.
    fn lose_many(&mut self, n: u32) {
        let last = SeqNo::new(self.sc.sent);
        let first = SeqNo::new(self.sc.sent + 1 - n);
        let mut ctx = self.sc.ctx();
        ctx.bandwidth = self.capacity;
        self.cc.on_loss(&mut ctx, &[(first, last)]);
    }
}

// ---- The mode switch -------------------------------------------------------------------------

#[test]
fn a_queue_that_empties_every_few_rounds_keeps_the_default_mode() {
    let mut m = ModeDetector::default();
    let round = ms(100);
    for k in 0..200u64 {
        // A sawtooth between 0 and 5 ms over four rounds: Copa flows among themselves.
        let q = (k % 40) as f64 * 0.125e-3;
        m.handle_sample(at(k * 10), q, q, round, 0.0);
        assert!(!m.competitive(), "at {k}");
    }
}

#[test]
fn a_queue_that_never_empties_for_five_rounds_reveals_a_competitor_and_an_empty_one_ends_it() {
    let mut m = ModeDetector::default();
    let round = ms(100);
    m.handle_sample(at(0), 0.0, 0.0, round, 0.0);
    // Standing between 20 and 30 ms: never within a tenth of the peak.
    let mut t = 10;
    while t <= 500 {
        let q = 0.02 + (t % 100) as f64 * 1e-4;
        m.handle_sample(at(t), q, 0.03, round, 0.0);
        assert!(!m.competitive(), "only {t} ms without an empty queue");
        t += 10;
    }
    m.handle_sample(at(520), 0.025, 0.03, round, 0.0);
    assert!(m.competitive());
    // The competitor's own drain empties the queue for less than a round: it stays.
    for t in [530, 560, 590] {
        m.handle_sample(at(t), 0.002, 0.03, round, 0.0);
        assert!(m.competitive(), "at {t}");
    }
    m.handle_sample(at(600), 0.02, 0.03, round, 0.0);
    // Empty for a whole round: it has left.
    for t in (610..=710).step_by(10) {
        m.handle_sample(at(t), 0.002, 0.03, round, 0.0);
    }
    assert!(!m.competitive());
}

#[test]
fn a_queue_of_no_more_than_copas_own_packets_is_nearly_empty_on_a_slow_link() {
    // 1 Mb/s: a packet takes 12 ms on the link, the paper's two packets 24 ms. A flow's own
    // cycle swings the queue between one and eight packets: its trough never falls to a tenth
    // of its peak, but holds no more than Copa keeps itself.
    let packet = 0.012;
    let round = ms(100);
    let samples = |m: &mut ModeDetector, own_share: f64| {
        for k in 0..200u64 {
            let q = packet * (1 + k % 8) as f64;
            m.handle_sample(at(k * 10), q, q, round, own_share);
        }
    };
    let mut m = ModeDetector::default();
    samples(&mut m, 2.0 * packet);
    assert!(!m.competitive(), "a queue of two packets at each trough is no buffer filler's");
    // Read against its peak alone, the same queue never empties.
    let mut m = ModeDetector::default();
    samples(&mut m, 0.0);
    assert!(m.competitive());
}

#[test]
fn the_mode_switch_ignores_samples_that_are_not_delays() {
    let mut m = ModeDetector::default();
    m.handle_sample(at(0), 0.0, 0.0, ms(10), 0.0);
    for t in 1..100 {
        m.handle_sample(at(t * 10), f64::NAN, 0.1, ms(10), 0.0);
        m.handle_sample(at(t * 10), -1.0, 0.1, ms(10), 0.0);
        m.handle_sample(at(t * 10), 0.05, f64::INFINITY, ms(10), 0.0);
    }
    assert!(!m.competitive());
}

// ---- The approach to the target --------------------------------------------------------------

#[test]
fn slow_start_doubles_per_round_on_an_empty_queue_and_ends_at_the_target() {
    let mut d = Driver::new();
    let start = d.cc.rate();
    d.run(ms(500));
    assert!(d.cc.in_slow_start());
    // Five rounds of 100 ms, the first without ACKs: 2^4.
    let growth = d.cc.rate() / start;
    assert!((10.0..=20.0).contains(&growth), "grew {growth:.1}x in five rounds");
    // A queue of 2 ms: the target is 1/δ = 2 packets per 2 ms, 1000 packets/s, below the rate.
    // The standing queue is the mean of half a round's reports: once they all read 2 ms,
    // slow start has ended, the rate having grown by at most half a round's doubling.
    let rate = d.cc.rate();
    assert!(rate > 1000.0, "{rate}");
    d.queue = (ms(2), ms(2));
    for _ in 0..5 {
        d.ack(d.cc.rate() as u32);
    }
    assert!(!d.cc.in_slow_start());
    assert!(d.cc.rate() <= rate * 2f64.sqrt(), "{rate} -> {}", d.cc.rate());
}

#[test]
fn a_floor_the_measure_never_falls_below_is_no_queue() {
    // A real receiver's standing queue never reaches zero: 100-120 us on every report. Taken
    // as a queue that never empties, it would be a competitor's, and 2 packets per 0.1 ms
    // would hold the flow to 20,000 packets/s; less the floor, the queue empties every third
    // report and the 20 us of jitter above the floor hold the flow to 100,000.
    let mut d = Driver::new();
    for k in 0..150u64 {
        d.queue = (Duration::from_micros(100 + k % 3 * 10), Duration::from_micros(120));
        d.ack(d.cc.rate() as u32);
        assert!(!d.cc.competitive(), "at {k}");
    }
    assert!(d.cc.rate() > 50_000.0, "{}", d.cc.rate());
}

#[test]
fn a_queue_read_within_the_measures_resolution_above_the_floor_is_none() {
    let mut d = Driver::new();
    d.run(ms(100));
    // Stamps and arrivals are whole microseconds of two clocks, the arrival carried over from
    // the kernel's stamp: readings of no queue spread over 4 us, and at a million packets a
    // second a reading of 2 us would be a target of a million, one of 1 us of two million.
    for us in [1, 2, 3, 4] {
        d.queue = (Duration::from_micros(us), Duration::from_micros(us));
        d.run(ms(200));
        assert_eq!(d.cc.queue, Some(0.0), "{us} us");
    }
    d.queue = (Duration::from_micros(6), Duration::from_micros(6));
    d.run(ms(100));
    assert!((d.cc.queue.unwrap() - 2e-6).abs() < 1e-12, "{:?}", d.cc.queue);
}

#[test]
fn when_the_floor_window_moves_on_the_queue_of_that_moment_stays_a_queue() {
    let mut d = Driver::new();
    // A floor of 1 ms, never read again: the receiver's readings then lie 0.05-0.9 ms above it
    // (nearly empty every fifth report, as Copa alone leaves a queue).
    d.queue = (ms(1), ms(1));
    d.run(ms(200));
    for k in 0..1000u64 {
        let reading = Duration::from_micros(if k % 5 == 0 { 1050 } else { 1500 + k % 5 * 100 });
        d.queue = (reading, reading);
        d.ack(d.cc.rate() as u32);
        assert!(!d.cc.competitive(), "at {k}");
    }
    // The window of 10 s has moved past the 1 ms reading just as a 6 ms queue stands: the
    // floor is the least reading of the rest of the window (1.05 ms), not the 6 ms of now.
    d.queue = (ms(6), ms(6));
    d.ack(d.cc.rate() as u32);
    let floor = d.cc.floor.get().unwrap();
    assert_eq!(floor, Duration::from_micros(1050));
    assert!(d.cc.queue.unwrap() > 0.001, "{:?}", d.cc.queue);
}

#[test]
fn a_first_report_of_zero_sets_no_floor() {
    // The receiver's base is the delay of the first packets, so its first report reads zero;
    // every later packet of a paced flow reads 220-260 us more (the emulator's figure). Taken
    // as a floor, that zero would leave 0.23 ms of queue that never empties: a competitor.
    let mut d = Driver::new();
    d.ack(d.cc.rate() as u32);
    for k in 0..150u64 {
        d.queue = (Duration::from_micros(220 + k % 5 * 10), Duration::from_micros(260 + k % 7 * 100));
        d.ack(d.cc.rate() as u32);
        assert!(!d.cc.competitive(), "at {k}");
    }
    assert!(d.cc.rate() > 8_000.0, "{}", d.cc.rate());
}

#[test]
fn slow_start_grows_by_what_arrived_while_the_cumulative_ack_stalls_behind_a_hole() {
    let mut d = Driver::new();
    d.run(ms(200));
    // A packet of the last round is lost: the cumulative ACK stops at it for the round its
    // repair takes, but the receiver keeps reporting what arrives. W still doubles per round.
    d.hole = Some(d.sc.sent - 5);
    let w = d.cc.w;
    d.run(ms(200));
    assert_eq!(d.cc.last_ack, SeqNo::new(d.sc.sent.min(d.hole.unwrap())));
    assert!(d.cc.in_slow_start());
    let growth = d.cc.w / w;
    assert!((3.0..=4.0 + 1e-9).contains(&growth), "W grew {growth:.2}x in two rounds behind a hole");
}

#[test]
fn slow_start_grows_no_faster_than_a_doubling_per_round_whatever_the_arrivals_reported() {
    let mut d = Driver::new();
    d.run(ms(200));
    // Arrival rates measured over bursts, far above what the flow sends, while the cumulative
    // ACK waits at a hole: W at most doubles in the round.
    d.hole = Some(d.cc.last_ack.value());
    let w = d.cc.w;
    for _ in 0..10 {
        d.ack(1_000_000);
    }
    assert!(d.cc.in_slow_start());
    assert!(d.cc.w <= 2.0 * w + 1e-9, "W {w} -> {} in a round", d.cc.w);
    assert!(d.cc.w >= 1.9 * w, "W {w} -> {} in a round", d.cc.w);
}

#[test]
fn slow_start_ends_at_the_bottlenecks_capacity_before_any_queue_is_reported() {
    let mut d = Driver::new();
    d.capacity = 2000;
    d.run(ms(1000));
    // 16 packets a round double to 2,000 packets/s (200 a round) in under four rounds, with
    // the queue still empty: slow start ended there, not a round's doubling later.
    assert!(!d.cc.in_slow_start());
    assert!(d.cc.rate() <= 2000.0 * 1.25, "{}", d.cc.rate());
    assert!(d.cc.rate() >= 2000.0 * 0.9, "{}", d.cc.rate());
}

#[test]
fn an_overflow_ends_slow_start() {
    let mut d = Driver::new();
    d.capacity = 100_000;
    d.run(ms(300));
    // A queue stands, short of the target (10 packets, 0.1 ms of the link, per 0.5 ms: 20,000
    // packets/s), and peaks at 1 ms in every report: a buffer's ceiling.
    d.queue = (Duration::from_micros(500), ms(1));
    d.run(ms(200));
    assert!(d.cc.in_slow_start());
    assert!(d.cc.rate() < 5_000.0, "{}", d.cc.rate());
    // A loss at that ceiling: the buffer is full, and slow start ends.
    d.lose();
    d.run(ms(20));
    assert!(!d.cc.in_slow_start());
}

#[test]
fn below_the_target_the_rate_grows_and_the_velocity_doubles_after_three_rounds() {
    let mut d = Driver::new();
    d.past_slow_start();
    // The target with a standing queue of 1 ms is 2000 packets/s, three times the rate: it
    // grows, by 2 packets per round for three rounds, then twice as fast every round.
    d.queue = (ms(1), ms(20));
    let before = d.cc.rate();
    d.run(ms(800));
    assert!(!d.cc.competitive());
    assert_eq!(d.cc.velocity(), 32.0);
    assert!(d.cc.rate() > before + 300.0, "{before} -> {}", d.cc.rate());
    assert!(d.cc.rate() < 2000.0);
}

#[test]
fn the_standing_queue_is_the_mean_of_the_reports_covering_the_last_half_round() {
    // Shorter flows cycle the queue between empty and 4 ms every ACK period, ten times a round
    // of this 100 ms flow. Its standing queue is their mean, 2 ms: target 1000 packets/s,
    // where each report alone would say "no queue" (no target) or "4 ms" (500) in turn.
    let mut d = Driver::new();
    d.past_slow_start();
    let mut rates = Vec::new();
    for k in 0..3000u64 {
        d.queue = if k % 2 == 0 { (ms(0), ms(4)) } else { (ms(4), ms(4)) };
        d.ack(d.cc.rate() as u32);
        if k >= 2000 {
            rates.push(d.cc.rate());
        }
    }
    let mean = rates.iter().sum::<f64>() / rates.len() as f64;
    assert!((800.0..1250.0).contains(&mean), "mean rate {mean:.0} packets/s, target 1000");
}

#[test]
fn where_half_a_round_is_one_ack_period_the_last_report_alone_is_the_standing_queue() {
    // A 10 ms path: the round is two ACK periods, and the report that came last covers the
    // whole of its second half. One that read a queue after one that read none is the queue.
    let mut d = Driver::new();
    d.sc.rtt = ms(10);
    d.run(ms(300));
    d.queue = (ms(2), ms(2));
    d.ack(d.cc.rate() as u32);
    d.queue = (ms(4), ms(4));
    d.ack(d.cc.rate() as u32);
    assert!(!d.cc.in_slow_start());
    // Less the measure's resolution.
    assert!((d.cc.queue.unwrap() - (0.004 - QUEUE_RESOLUTION)).abs() < 1e-12, "{:?}", d.cc.queue);
}

#[test]
fn above_the_target_the_rate_falls_and_never_exceeds_what_was_delivered() {
    let mut d = Driver::new();
    d.run(ms(700));
    let rate = d.cc.rate();
    // A 10 ms queue: target 200 packets/s. The receiver gets half of what the flow sent: once
    // the reports of two rounds say so, the flow sends no more than that.
    d.queue = (ms(10), ms(10));
    let delivered = (rate / 2.0) as u32;
    for _ in 0..30 {
        d.ack(delivered);
    }
    assert!(d.cc.rate() <= f64::from(delivered), "{} > {delivered}", d.cc.rate());
    let held = d.cc.rate();
    for _ in 0..50 {
        d.ack(delivered);
    }
    assert!(d.cc.rate() < held);
}

#[test]
fn a_velocity_built_going_up_never_carries_the_rate_down() {
    let mut d = Driver::new();
    d.past_slow_start();
    // Far below the target (1 us of queue): the velocity grows over eight rounds.
    d.queue = (Duration::from_micros(1), ms(20));
    d.run(ms(800));
    assert!(d.cc.velocity() >= 16.0, "{}", d.cc.velocity());
    // The queue turns the target below the rate: the step down is one of velocity 1 (the
    // window falls by at most a plain step of 1/δ packets over the ACK's tenth of a round,
    // or the flow's queued packets' shed share, not by the velocity's).
    d.queue = (ms(10), ms(20));
    let (w, rate) = (d.cc.w, d.cc.rate());
    d.ack(rate as u32);
    let plain = d.cc.inverse_delta() * 0.1;
    let shed = SHED_GAIN * (rate * 0.01 - d.cc.inverse_delta()) * 0.1;
    let fell = w - d.cc.w;
    assert!(fell > 0.0 && fell <= plain.max(shed) + 1e-9, "W {w} -> {}", d.cc.w);
}

#[test]
fn below_the_target_the_rate_runs_at_most_a_quarter_ahead_of_what_was_delivered() {
    let mut d = Driver::new();
    d.past_slow_start();
    // An empty queue (the target is unbounded) but the receiver gets only 1000 packets/s.
    d.queue = (Duration::ZERO, ms(20));
    for _ in 0..200 {
        let before = d.cc.rate();
        d.ack(1000);
        assert!(d.cc.rate() <= 1250.0 + 1e-9 || d.cc.rate() <= before + 1e-9, "{}", d.cc.rate());
    }
    assert!(d.cc.rate() > 1200.0, "{}", d.cc.rate());
}

#[test]
fn above_the_target_a_flow_that_sends_more_sheds_more() {
    // Two flows see the same 10 ms queue (a target of 200 packets/s): the one sending ten
    // times more keeps ten times more packets queued and sheds a quarter of them a round, more
    // than the other's velocity step: the ratio of the rates falls (additive steps keep it).
    let mut small = Driver::new();
    let mut large = Driver::new();
    small.cc.rate = 1_000.0;
    large.cc.rate = 10_000.0;
    for d in [&mut small, &mut large] {
        d.cc.slow_start = false;
        d.ack(d.cc.rate() as u32);
        d.queue = (ms(10), ms(10));
    }
    for _ in 0..30 {
        small.ack(small.cc.rate() as u32);
        large.ack(large.cc.rate() as u32);
    }
    let (s, l) = (small.cc.rate(), large.cc.rate());
    assert!(1_000.0 - s < 0.15 * (10_000.0 - l), "small 1000 -> {s}, large 10000 -> {l}");
    assert!(l / s < 9.9, "{l} / {s}");
}

#[test]
fn losses_with_a_standing_queue_halve_the_queue_share_and_it_regrows_to_the_default() {
    let mut d = Driver::new();
    // The receiver measures the link at 100,000 packets a second: a tenth of a millisecond of it
    // is ten packets, the default share.
    d.capacity = 100_000;
    d.run(ms(300));
    assert_eq!(d.cc.inverse_delta(), 10.0);
    // A buffer smaller than the flows' shares: the queue stands at its longest, and every round
    // overflows. The round after a halving reports what was sent before it: only every other
    // one halves; and for the floor's window the default is a 64th of the buffer.
    d.queue = (ms(5), ms(6));
    d.run(ms(100));
    let mut shares = vec![];
    for _ in 0..16 {
        d.lose();
        d.run(ms(100));
        shares.push(d.cc.inverse_delta());
    }
    assert_eq!(shares[..4], [5.0, 5.0, 2.5, 2.5]);
    assert_eq!(d.cc.inverse_delta(), 2.0 / 16.0);
    // No more losses: one packet per round back to the default, which while the overflow is
    // recent is at most a 64th of the buffer (its longest queue, 6 ms of 100,000 packets a
    // second: under ten packets), and no further.
    d.queue = (Duration::ZERO, ms(6));
    d.run(ms(2000));
    let buffer = d.cc.largest.get().map(|Reverse(q)| q.as_secs_f64() * 100_000.0).unwrap();
    assert!((550.0..=600.0).contains(&buffer), "{buffer}");
    // The same queue, kept as a duration in the window and as seconds at the overflow.
    let bounded = |share: f64| (share - buffer * OVERFLOW_BUFFER_SHARE).abs() < 1e-9;
    assert!(bounded(d.cc.inverse_delta()), "{}", d.cc.inverse_delta());
    d.run(ms(4000));
    assert!(bounded(d.cc.inverse_delta()), "{}", d.cc.inverse_delta());
    // Ten seconds on, the buffer has not overflowed again: back to a tenth of a millisecond of the
    // link.
    d.run(ms(5000));
    assert_eq!(d.cc.inverse_delta(), 10.0);
}

#[test]
fn after_a_small_buffer_overflowed_the_share_is_a_64th_of_it_and_after_a_large_one_its_own() {
    // 100,000 packets a second, a tenth of a millisecond is ten packets. The queue stands at the
    // buffer's ceiling and a loss is reported: the buffer overflowed.
    let overflow = |buffer: Duration, capacity: u32| {
        let mut d = Driver::new();
        d.capacity = capacity;
        d.run(ms(300));
        d.queue = (buffer / 2, buffer);
        d.run(ms(100));
        d.lose();
        d.run(ms(100));
        d.queue = (Duration::ZERO, buffer);
        d.run(ms(2000));
        let held = d.cc.largest.get().map(|Reverse(q)| q.as_secs_f64() * f64::from(capacity)).unwrap();
        (d.cc.inverse_delta(), held)
    };
    // 60 packets of buffer: a 64th of it, under one packet (thirty flows at the paper's two
    // packets each would fill it).
    let (share, held) = overflow(Duration::from_micros(600), 100_000);
    assert!((55.0..=60.0).contains(&held), "{held}");
    assert_eq!(share, held * OVERFLOW_BUFFER_SHARE);
    assert!(share < 1.0, "{share}");
    // 6 packets: a 64th is under the least share the halvings reach, which stands.
    assert_eq!(overflow(ms(6), 1_000).0, MIN_INV_DELTA_SHARE * 2.0);
    // 6,000 packets: a 64th is more than a tenth of a millisecond of the link, which stands: the
    // flow keeps the share of a flow beside it that met no loss.
    assert_eq!(overflow(ms(60), 100_000).0, 10.0);
}

#[test]
fn the_buffer_an_overflow_measured_bounds_the_share_for_the_whole_floor_window() {
    // 100,000 packets a second; a 60-packet buffer overflows.
    let mut d = Driver::new();
    d.capacity = 100_000;
    d.run(ms(300));
    let buffer = Duration::from_micros(600);
    d.queue = (buffer / 2, buffer);
    // Late in the part of the window of the largest queue that the first reports began.
    d.run(ms(1500));
    d.lose();
    d.run(ms(100));
    let held = d.cc.largest.get().map(|Reverse(q)| q.as_secs_f64() * 100_000.0).unwrap();
    // From then on the queue peaks at a tenth of it: once the overflow's part of the window of
    // the largest queue has gone, the largest is that tenth, but the buffer is what it was.
    d.queue = (Duration::ZERO, buffer / 10);
    d.run(ms(9500));
    let largest = d.cc.largest.get().map(|Reverse(q)| q.as_secs_f64() * 100_000.0).unwrap();
    assert!(largest < held / 2.0, "largest {largest} of {held}");
    assert_eq!(d.cc.inverse_delta(), held * OVERFLOW_BUFFER_SHARE);
}

#[test]
fn after_an_overflow_with_no_capacity_measured_the_share_is_the_papers() {
    // Packet pairs inside one receive batch read as unlimited: the buffer cannot be counted in
    // packets, and the paper's two packets stand.
    let mut d = Driver::new();
    d.capacity = u32::MAX;
    d.run(ms(300));
    d.queue = (ms(1), ms(2));
    d.run(ms(100));
    d.lose();
    d.run(ms(100));
    d.queue = (Duration::ZERO, ms(2));
    d.run(ms(2000));
    assert!(d.cc.overflowed_at.is_some(), "the loss was judged an overflow");
    assert_eq!(d.cc.inverse_delta(), 2.0);
}

#[test]
fn the_share_is_two_packets_below_a_tenth_of_a_millisecond_of_the_link_or_with_no_capacity() {
    // 10,000 packets a second (120 Mb/s): a tenth of a millisecond is one packet; the paper's
    // two stand. A capacity the receiver could not measure (pairs inside one receive batch read
    // as unlimited) sets nothing.
    for capacity in [10_000, u32::MAX] {
        let mut d = Driver::new();
        d.capacity = capacity;
        d.run(ms(300));
        assert_eq!(d.cc.inverse_delta(), 2.0, "capacity {capacity}");
    }
}

#[test]
fn losses_while_a_delay_lifts_the_queue_for_less_than_a_round_are_the_links() {
    let mut d = Driver::new();
    d.run(ms(300));
    // A host or link on the path stalls: every packet is 5 ms late for half a round, and the
    // link loses packets meanwhile. No buffer stood full: the share of the queue is kept.
    for _ in 0..5 {
        d.queue = (Duration::ZERO, ms(6));
        d.run(ms(50));
        d.queue = (ms(5), ms(6));
        for _ in 0..5 {
            d.ack(d.cc.rate() as u32);
            d.lose();
        }
    }
    assert_eq!(d.cc.inverse_delta(), 2.0);
    assert!(!d.cc.competitive());
}

#[test]
fn losses_with_a_standing_queue_shorter_than_a_packets_time_on_the_link_are_the_links() {
    let mut d = Driver::new();
    d.run(ms(300));
    // The link slowed: every packet is serialised 0.1 ms longer, and the floor of the last
    // 10 s reads that as a queue that never empties; the link loses a packet a round. At about
    // a thousand packets a second (no capacity reported) such a queue is shorter than one
    // packet's time on the link: no buffer that overflows, so the flow's share of the queue is
    // not halved (the queue that never empties reads as a competitor's until the floor follows).
    d.past_slow_start();
    d.queue = (Duration::from_micros(100), Duration::from_micros(100));
    for _ in 0..30 {
        for _ in 0..10 {
            d.ack(1000);
        }
        d.lose();
    }
    assert!(d.cc.rate() * 100e-6 < 1.0, "{}", d.cc.rate());
    assert!(d.cc.inverse_delta() >= 2.0, "{}", d.cc.inverse_delta());
}

#[test]
fn losses_with_a_standing_queue_short_of_its_longest_are_the_links() {
    let mut d = Driver::on_link(10_000);
    // The queue stands at 3-4 ms and once reached 12 ms (the buffer's size): a random loss
    // every round, each reported while the queue is at 4 ms (further below than the flow's
    // packets are apart, 1.4-2.7 ms), is the link's.
    d.queue = (ms(5), ms(12));
    d.run(ms(100));
    d.queue = (ms(3), ms(4));
    for _ in 0..10 {
        d.run(ms(100));
        d.lose();
    }
    d.run(ms(100));
    // Never halved (the queue that never empties reads as a competitor's: the share grows).
    let share = d.cc.inverse_delta();
    assert!(share >= 2.0, "{share}");
    // The same loss with the queue at its longest: the buffer overflowed.
    d.queue = (ms(5), ms(12));
    d.lose();
    d.run(ms(100));
    let halved = d.cc.inverse_delta();
    assert!(halved < 0.6 * share, "{share} -> {halved}");
}

#[test]
fn a_loss_read_short_of_the_longest_queue_by_less_than_the_flows_own_packet_gap_is_an_overflow() {
    let mut d = Driver::on_link(10_000);
    d.queue = (ms(5), ms(12));
    d.run(ms(100));
    // The queue stands 4 ms short of the 12 ms it reached: a lone loss, its neighbours sent
    // 2 periods (under 4 ms) apart, is the link's.
    d.queue = (ms(5), ms(8));
    let period = d.cc.send_period();
    assert!(period * 2 < ms(4) - ms(1), "{period:?}");
    d.lose();
    d.run(ms(100));
    let share = d.cc.inverse_delta();
    assert!(share >= 2.0, "{share}");
    // A run of losses whose neighbours went out more than 4 ms apart: the buffer may have
    // drained that much before the next packet revealed them, so it was full.
    let run = (ms(5).as_secs_f64() / d.cc.send_period().as_secs_f64()).ceil() as u32;
    d.lose_many(run);
    d.run(ms(100));
    let halved = d.cc.inverse_delta();
    assert!(halved < 0.6 * share, "{share} -> {halved}");
}

#[test]
fn a_loss_at_a_queue_longer_than_any_before_is_the_links_and_at_that_length_again_an_overflow() {
    let mut d = Driver::new();
    d.capacity = 100_000;
    d.run(ms(300));
    // The queue stands, and each round it reaches further than ever in the window (a
    // velocity's overshoot): a random loss at each new longest finds no buffer seen full.
    for k in 2..=9 {
        d.queue = (ms(k), ms(2 * k));
        d.run(ms(100));
        d.queue = (ms(k), ms(2 * k + 2));
        d.lose();
        d.run(ms(100));
    }
    let share = d.cc.inverse_delta();
    assert!(share >= 10.0, "{share}");
    // A loss where the queue reaches the same longest again: the buffer's ceiling, full.
    d.lose();
    d.run(ms(100));
    let halved = d.cc.inverse_delta();
    assert!(halved < 0.6 * share, "{share} -> {halved}");
}

#[test]
fn a_standing_queue_enters_the_competitive_mode_where_the_queue_share_follows_aimd() {
    // A link of 10,000 packets/s: 20 ms of queue are 200 packets, a buffer filler's.
    let mut d = Driver::on_link(10_000);
    // A buffer filler keeps 20-30 ms standing: after five rounds the mode is competitive, and
    // 1/δ grows each round without loss (as TCP's rate, below), past the default.
    for k in 0..100 {
        d.queue = (ms(20 + k % 10), ms(30));
        d.ack(d.cc.rate() as u32);
    }
    assert!(d.cc.competitive());
    let grown = d.cc.inverse_delta();
    assert!(grown > 2.0, "1/delta {grown}");
    // A round with a loss halves it.
    d.lose();
    for _ in 0..10 {
        d.ack(d.cc.rate() as u32);
    }
    assert!(d.cc.inverse_delta() <= (grown + 1.0) / 2.0 + 1.0, "{} from {grown}", d.cc.inverse_delta());
    // The competitor leaves: after a round of empty queue the mode ends, and the share halves
    // each round back to the default.
    d.queue = (Duration::ZERO, ms(30));
    d.run(ms(120));
    assert!(!d.cc.competitive());
    d.run(ms(1000));
    assert_eq!(d.cc.inverse_delta(), 2.0);
}

/// The competitive mode's `1/δ` grows so that the flow's target rate, `1/δ` over the queue,
/// grows as TCP's rate does, a packet per round trip each round trip: the same whatever the
/// depth of the buffer the competitor fills, so `1/δ` grows in proportion to that depth.
#[test]
fn in_the_competitive_mode_the_target_rate_grows_as_tcps_does_whatever_the_buffer() {
    let mut growth = Vec::new();
    for queue_ms in [5u64, 50] {
        let mut d = Driver::new();
        d.run(ms(300));
        d.queue = (ms(queue_ms), ms(queue_ms + 1));
        d.run(ms(1000));
        assert!(d.cc.competitive());
        let before = d.cc.inverse_delta();
        d.run(ms(1000));
        let rounds = 10.0;
        let per_round = (d.cc.inverse_delta() - before) / rounds;
        // TCP: a packet per round trip, the round trip being the base (100 ms) and the queue.
        let rtt_now = 0.1 + queue_ms as f64 * 1e-3;
        let tcp_rate_growth = 0.1 / (rtt_now * rtt_now);
        let target_growth = per_round / (queue_ms as f64 * 1e-3);
        growth.push(per_round);
        assert!(
            (target_growth / tcp_rate_growth - 1.0).abs() < 0.1,
            "queue {queue_ms} ms: target +{target_growth} packets/s a round, TCP +{tcp_rate_growth}"
        );
    }
    assert!(growth[1] > 4.0 * growth[0], "{growth:?}");
}

/// A receiver that reports no queue (UDT4's): the model controller drives the flow from its
/// start (its Startup raises the rate from what the ACKs deliver), and keeps it once the peer
/// has left every policy offer unanswered, whatever comes later.
#[test]
fn a_udt4_receiver_leaves_the_flow_to_the_model_controller() {
    let mut d = Driver::new();
    let first = d.cc.send_period();
    let no_queue_ack = |d: &mut Driver, udt4: bool| {
        d.sc.now += ms(10);
        let sent = (1e-2 / d.cc.send_period().as_secs_f64()).ceil() as u32;
        for _ in 0..sent {
            d.sc.sent += 1;
            let seq = SeqNo::new(d.sc.sent);
            d.cc.on_packet_sent(&mut d.sc.ctx(), seq, false);
        }
        let ack = SeqNo::new(d.sc.sent.saturating_sub(10 * sent));
        let mut ctx = d.sc.ctx();
        ctx.last_ack = ack;
        ctx.peer_udt4 = udt4;
        ctx.ack = Some(AckReport { rtt: ms(100), recv_rate: 1, capacity: 0, queue: None });
        d.cc.on_ack(&mut ctx, ack);
    };
    for _ in 0..40 {
        no_queue_ack(&mut d, false);
    }
    assert!(!d.cc.fell_back(), "no verdict yet");
    assert!(d.cc.send_period() < first, "the model controller did not raise the rate before the verdict");
    for _ in 0..200 {
        no_queue_ack(&mut d, true);
    }
    assert!(d.cc.fell_back());
    assert!(
        d.cc.send_period() < first / 4,
        "the model controller did not raise the rate: period {:?}, first {first:?}",
        d.cc.send_period()
    );
    // A queue report after the verdict changes nothing.
    d.ack(d.cc.rate() as u32);
    assert!(d.cc.fell_back());
}

/// Until the first queue report the model controller paces the flow; the report hands it to
/// Copa, from its first round.
#[test]
fn the_first_queue_report_hands_the_flow_to_copa() {
    let mut d = Driver::new();
    let mut model = ModelCc::new(ModelConfig::default());
    model.init(&mut d.sc.ctx());
    assert_eq!(d.cc.send_period(), model.send_period());
    d.ack(1);
    assert!(d.cc.model.is_none() && !d.cc.fell_back());
    assert!(d.cc.in_slow_start());
    assert_eq!(d.cc.send_period(), d.cc.period);
}

/// A receiver that reported its queue is ours, whatever the offers' fate: Copa keeps the flow.
#[test]
fn a_receiver_that_reported_its_queue_keeps_copa() {
    let mut d = Driver::new();
    d.run(ms(500));
    let mut ctx = d.sc.ctx();
    ctx.peer_udt4 = true;
    d.cc.on_ack(&mut ctx, SeqNo::new(0));
    assert!(!d.cc.fell_back());
}

#[test]
fn a_timeout_halves_the_rate() {
    let mut d = Driver::new();
    d.run(ms(500));
    let rate = d.cc.rate();
    d.cc.on_timeout(&mut d.sc.ctx());
    assert!((d.cc.rate() - rate / 2.0).abs() < 1e-6);
}

/// A fresh flow that sent its first 16 packets at time zero, before any ACK.
fn sixteen_packets_sent() -> (Script, Copa) {
    let mut sc = Script::new();
    let mut cc = Copa::new(CopaConfig::default());
    cc.init(&mut sc.ctx());
    for _ in 0..16 {
        sc.sent += 1;
        let seq = SeqNo::new(sc.sent);
        cc.on_packet_sent(&mut sc.ctx(), seq, false);
    }
    (sc, cc)
}

#[test]
fn on_a_path_longer_than_the_first_guess_timeouts_keep_slow_start_and_the_guess_sets_no_base() {
    // A 700 ms path: the first ACK comes 700 ms after the first packet, while the receiver
    // still reports its start value of 100 ms as the RTT.
    let (mut sc, mut cc) = sixteen_packets_sent();
    // The timer, set on the guess, expires before anything could come back.
    sc.now = at(500);
    cc.on_timeout(&mut sc.ctx());
    assert!(cc.in_slow_start());
    sc.now = at(700);
    let mut ctx = sc.ctx();
    ctx.last_ack = SeqNo::new(9);
    let queue = Some(QueueReport { min: Duration::ZERO, max: Duration::ZERO });
    ctx.ack = Some(AckReport { rtt: ms(100), recv_rate: 100, capacity: 0, queue });
    cc.on_ack(&mut ctx, SeqNo::new(9));
    // A report of 100 ms where the flow's own packet took 700 is no measurement: the rate is
    // W over the flow's own round trip, and a timeout still keeps slow start and W.
    let w = cc.w;
    assert!((cc.rate() - w / 0.7).abs() < 1e-6 * cc.rate(), "{} for W {w}", cc.rate());
    sc.now = at(1200);
    cc.on_timeout(&mut sc.ctx());
    assert!(cc.in_slow_start());
    assert_eq!(cc.w, w);
}

#[test]
fn reports_that_climb_from_the_guess_after_a_measured_one_set_no_base() {
    // A 300 ms path whose first report reached the flow's own timing (275 ms), and whose next
    // ones fell back to the receiver's guess (130, then 103 ms) before climbing again: the
    // base stays the measured round trip, not a third of it for the base's window.
    let (mut sc, mut cc) = sixteen_packets_sent();
    let queue = Some(QueueReport { min: Duration::ZERO, max: Duration::ZERO });
    for (k, rtt) in [275u64, 130, 103, 110].into_iter().enumerate() {
        let k = k as u64;
        sc.now = at(300 + 10 * k);
        sc.rtt = ms(rtt);
        let mut ctx = sc.ctx();
        ctx.last_ack = SeqNo::new(2 + k as u32);
        ctx.ack = Some(AckReport { rtt: ms(rtt), recv_rate: 100, capacity: 0, queue });
        cc.on_ack(&mut ctx, SeqNo::new(2 + k as u32));
    }
    assert_eq!(cc.base_rtt.get(), Some(ms(275)));
}

proptest! {
    /// Losses reported while the standing queue is nearly empty (at most a tenth of the
    /// period's peak) are the link's, at any rate and in any pattern, in slow start or after
    /// it: they never slow the flow (they only tell how much more than what arrived the path
    /// drains), and change neither its queue share nor its mode.
    #[test]
    fn isolated_losses_with_an_empty_queue_never_slow_the_flow(
        steps in proptest::collection::vec((0u64..=100, 1_000u64..20_000, any::<bool>()), 1..300),
        slow_start in any::<bool>(),
    ) {
        let mut with_losses = Driver::new();
        let mut without = Driver::new();
        with_losses.cc.slow_start = slow_start;
        without.cc.slow_start = slow_start;
        for (standing_us, peak_us, lose) in steps {
            let q = (Duration::from_micros(standing_us), Duration::from_micros(peak_us));
            with_losses.queue = q;
            without.queue = q;
            if lose {
                with_losses.lose();
            }
            let rate = with_losses.cc.rate() as u32;
            with_losses.ack(rate);
            without.ack(rate);
            prop_assert!(with_losses.cc.rate() >= without.cc.rate());
            prop_assert!(with_losses.cc.send_period() <= without.cc.send_period());
            prop_assert_eq!(with_losses.cc.inverse_delta(), without.cc.inverse_delta());
        }
        prop_assert!(!with_losses.cc.competitive());
    }

    /// Whatever the reports, the period is finite and positive and the window finite and at
    /// least the minimum.
    #[test]
    fn outputs_stay_finite(
        steps in proptest::collection::vec((0u64..100_000, 0u64..2_000_000, 0u32..2_000_000, any::<bool>()), 1..200)
    ) {
        let mut d = Driver::new();
        for (q_us, rtt_us, delivered, lose) in steps {
            d.queue = (Duration::from_micros(q_us), Duration::from_micros(q_us * 2));
            d.sc.rtt = Duration::from_micros(rtt_us);
            if lose {
                d.lose();
            }
            d.ack(delivered);
            let p = d.cc.send_period();
            prop_assert!(p > Duration::ZERO && p < Duration::from_secs(3600));
            let w = d.cc.congestion_window();
            prop_assert!(w.is_finite() && w >= MIN_WINDOW);
            prop_assert!(d.cc.rate().is_finite() && d.cc.rate() > 0.0 && d.cc.rate() <= MAX_RATE);
        }
    }
}

#[test]
fn a_queue_slows_the_flow_at_once_as_its_window_would() {
    let mut d = Driver::new();
    d.past_slow_start();
    d.queue = (Duration::ZERO, ms(1));
    d.run(ms(500));
    let (w, rate) = (d.cc.w, d.cc.rate());
    // A queue as long as the base RTT (100 ms): within half a round the rate halves with it,
    // while the window, which the controller moves a step at a time, loses a few steps.
    d.queue = (ms(100), ms(100));
    for _ in 0..5 {
        d.ack(rate as u32);
    }
    let now = d.cc.rate();
    let round_trip = 0.2 - QUEUE_RESOLUTION;
    assert!((now - d.cc.w / round_trip).abs() < 1e-6 * now, "{now} against W {} over 200 ms", d.cc.w);
    assert!(now <= 0.5 * rate, "{rate} -> {now}");
    assert!(d.cc.w > 0.8 * w, "W {w} -> {}", d.cc.w);
}

#[test]
fn a_flow_far_above_its_share_keeps_its_velocity_through_the_queue_cycle() {
    // The queue cycles as many flows' does: two rounds at 10 ms, one empty. Its mean grants
    // 300 packets/s; this flow sends about ten times that. The empty round turns every step
    // up, but the direction the velocity builds in is the mean's: it keeps growing, and the
    // flow sheds most of its excess within a few cycles.
    let mut d = Driver::new();
    d.past_slow_start();
    d.cc.w = 300.0;
    d.cc.rate = 3000.0;
    let mut fastest: f64 = 0.0;
    for k in 0..150u64 {
        d.queue = if k % 30 < 20 { (ms(10), ms(10)) } else { (Duration::ZERO, ms(10)) };
        let rate = d.cc.rate();
        d.ack(rate as u32);
        fastest = fastest.max(d.cc.velocity());
    }
    assert!(fastest >= 4.0, "velocity at most {fastest}");
    assert!(d.cc.rate() < 1000.0, "{}", d.cc.rate());
}

#[test]
fn above_the_target_the_rate_is_held_to_what_arrived_and_what_the_link_lost() {
    let mut held = Vec::new();
    for standing in [ms(1), ms(10)] {
        let mut d = Driver::new();
        d.past_slow_start();
        // Peaks of 50 ms, the longest queue of the window (the buffer full, as when slow
        // start ended): a 1 ms standing queue is nearly empty, a 10 ms one is not.
        d.queue = (standing, ms(50));
        d.run(ms(100));
        // Far above the target (2000 packets/s at 1 ms, 200 at 10 ms); a tenth of the
        // packets of the last two rounds is reported lost, and 4500 packets/s arrive.
        d.cc.w = 2000.0;
        let sent: f64 = d.cc.sent.iter().sum();
        d.lose_many((sent / 10.0) as u32);
        d.ack(4500);
        let kept = 1.0 - d.cc.link_lost.iter().sum::<f64>() / d.cc.sent.iter().sum::<f64>();
        held.push((d.cc.rate(), kept));
    }
    // With the queue nearly empty the losses are the link's: the path drained what arrived
    // over the share the link kept, about 5000 packets/s.
    let (rate, kept) = held[0];
    assert!(kept < 0.95 && (rate - 4500.0 / kept).abs() < 1e-6 * rate, "{rate} (kept {kept})");
    // With the queue standing and at its longest they overflowed the buffer: it drained what
    // arrived.
    let (rate, kept) = held[1];
    assert!(kept == 1.0 && (rate - 4500.0).abs() < 1e-6 * rate, "{rate} (kept {kept})");
}

#[test]
fn where_the_path_does_not_keep_up_the_velocity_does_not_build() {
    // An empty queue (an unbounded target) on a bottleneck that shows no delay: the receiver
    // gets 1000 packets/s whatever the flow sends. The probe's bound holds the window back
    // every round, and the flow moves by plain steps.
    let mut d = Driver::new();
    d.past_slow_start();
    d.queue = (Duration::ZERO, ms(20));
    for _ in 0..100 {
        d.ack(1000);
    }
    assert!(d.cc.rate() >= 1000.0, "{}", d.cc.rate());
    for _ in 0..300 {
        d.ack(1000);
        assert_eq!(d.cc.velocity(), 1.0);
    }
    // Where the path follows (it delivers what the flow sends), the velocity builds.
    d.run(ms(1000));
    assert!(d.cc.velocity() >= 8.0, "velocity {}", d.cc.velocity());
}
