//! Tests of the model controller: transitions driven by scripted ACK reports, properties over
//! arbitrary inputs and a snapshot of the shipped default's response (the closed loop is in
//! `closed_loop_tests.rs`).

use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::tcp::script::Script;
use crate::AckReport;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A scripted driver: ACKs with chosen reports, losses by counter.
struct Driver {
    sc: Script,
    cc: ModelCc,
    ack: u32,
    /// Packets in flight the ACKs report.
    flight: u32,
    /// The standing queue the receiver reports (`None`: a UDT4 receiver, no report).
    queue: Option<Duration>,
}

impl Driver {
    fn new() -> Self {
        let mut sc = Script::new();
        let mut cc = ModelCc::new(ModelConfig::default());
        cc.init(&mut sc.ctx());
        let mut d = Driver { sc, cc, ack: 0, flight: 0, queue: None };
        d.send(1);
        d
    }

    fn send(&mut self, n: u32) {
        for _ in 0..n {
            self.sc.sent += 1;
            self.sc.stats.total.pkts_sent += 1;
            let seq = SeqNo::new(self.sc.sent);
            self.cc.on_packet_sent(&mut self.sc.ctx(), seq, false);
        }
    }

    /// Advance by `dt`, having sent `rate x dt` packets, and deliver one ACK reporting `rtt` and
    /// `rate` (packets/s).
    fn ack(&mut self, dt: Duration, rtt: Duration, rate: u32) {
        self.sc.now += dt;
        self.send((f64::from(rate) * dt.as_secs_f64()) as u32);
        self.ack = self.sc.sent;
        let mut ctx = self.sc.ctx();
        ctx.last_ack = SeqNo::new(self.ack);
        ctx.flight = self.flight;
        let queue = self.queue.map(|q| udt_proto::queue_delay::QueueReport { min: q, max: q });
        ctx.ack = Some(AckReport { rtt, recv_rate: rate, capacity: 0, queue });
        self.cc.on_ack(&mut ctx, SeqNo::new(self.ack));
    }

    /// [`Self::ack`] on a link that gives the flow at most `rate` and at most what it paces at
    /// (a competitor holding the queue takes the rest): the flow gets what it sends.
    fn ack_paced(&mut self, dt: Duration, rtt: Duration, rate: u32) {
        let pacing = PAIR_FACTOR / self.cc.send_period().as_secs_f64();
        self.ack(dt, rtt, (f64::from(rate)).min(pacing) as u32);
    }

    /// A NAK of `n` of the packets sent last, every other one (a paced flow's overflow: each
    /// loss its own event).
    fn lose(&mut self, n: u64) {
        self.sc.stats.total.snd_loss += n;
        let last = SeqNo::new(self.sc.sent);
        let ranges: Vec<(SeqNo, SeqNo)> =
            (0..n as i32).map(|k| (last.add(-2 * k), last.add(-2 * k))).rev().collect();
        if !ranges.is_empty() {
            self.cc.on_loss(&mut self.sc.ctx(), &ranges);
        }
    }

    /// ACKs every 10 ms for `span` at `rate` and `rtt`.
    fn steady(&mut self, span: Duration, rtt: Duration, rate: u32) {
        let steps = (span.as_millis() / 10) as u32;
        for _ in 0..steps {
            self.ack(ms(10), rtt, rate);
        }
    }

    /// A driver whose receiver reports an empty queue, cruising past the probe that follows
    /// its first cruise (congestion during a probe bounds the rate to what was delivered, not
    /// by `loss_beta`).
    fn settled_with_queue_reports() -> Self {
        let mut d = Driver::new();
        d.queue = Some(Duration::ZERO);
        d.reach_cruise();
        d.steady(ms(1000), ms(100), 10_000);
        while d.cc.state() != State::ProbeBw(Phase::Cruise) {
            d.ack(ms(10), ms(100), 10_000);
        }
        d
    }

    fn reach_cruise(&mut self) {
        self.steady(ms(1000), ms(100), 10_000);
        for _ in 0..100 {
            if self.cc.state() == State::ProbeBw(Phase::Cruise) {
                return;
            }
            self.ack(ms(10), ms(100), 10_000);
        }
        panic!("no cruise: {:?}", self.cc.state());
    }
}

/// Startup's window is the initial window plus what was delivered, as TCP's slow start (the
/// model's `startup_gain x bw x RTT` would let the flow outgrow a TCP flow starting beside it);
/// packets that arrived behind a hole count too, by the receiver's arrival-rate reports.
#[test]
fn startup_grows_its_window_by_what_was_delivered() {
    let iw = ModelConfig::default().initial_window;
    let mut d = Driver::new();
    d.queue = Some(Duration::ZERO);
    for _ in 0..5 {
        d.ack(ms(10), ms(100), 10_000);
    }
    assert_eq!(d.cc.state(), State::Startup);
    let delivered = f64::from(d.ack);
    let window = d.cc.congestion_window();
    assert!(window <= iw + delivered + 1.0, "{window} after {delivered} delivered");
    // Arrivals the ACK point has not reached (a hole at the receiver) grow it as well.
    let before = d.cc.congestion_window();
    for _ in 0..3 {
        d.sc.now += ms(10);
        d.send(100);
        let mut ctx = d.sc.ctx();
        ctx.last_ack = SeqNo::new(d.ack);
        let queue = Some(udt_proto::queue_delay::QueueReport { min: Duration::ZERO, max: Duration::ZERO });
        ctx.ack = Some(AckReport { rtt: ms(100), recv_rate: 10_000, capacity: 0, queue });
        d.cc.on_ack(&mut ctx, SeqNo::new(d.ack));
    }
    assert_eq!(d.cc.state(), State::Startup);
    // 300 arrived; the reports before counted a little less than the ACKs (the first one covers
    // only its own instant), so the window grows by most of them, never by more.
    let grown = d.cc.congestion_window() - before;
    assert!((150.0..=300.0).contains(&grown), "{before} -> {}", d.cc.congestion_window());
}

/// Delivers `per_ack` packets per 10 ms ACK while the receiver reports `reported` packets/s.
fn deliver_reporting(d: &mut Driver, acks: u32, per_ack: u32, reported: u32) {
    for _ in 0..acks {
        d.sc.now += ms(10);
        d.send(per_ack);
        d.ack = d.sc.sent;
        let mut ctx = d.sc.ctx();
        ctx.last_ack = SeqNo::new(d.ack);
        ctx.ack = Some(AckReport { rtt: ms(50), recv_rate: reported, capacity: 0, queue: None });
        d.cc.on_ack(&mut ctx, SeqNo::new(d.ack));
    }
}

/// A receiver whose first reports are UDT4's made-up 1 packet/s reports UDT4's median
/// estimator afterwards: its reports (here a burst's 500,000 packets/s) are not the flow's,
/// and the estimate follows what the ACKs delivered (10,000 packets/s). One whose first
/// reports are "unknown" (ours) is believed once it can have measured.
#[test]
fn a_udt4_estimators_reports_give_way_to_the_acknowledged_rate() {
    let mut udt4 = Driver::new();
    deliver_reporting(&mut udt4, 1, 1, 1);
    deliver_reporting(&mut udt4, 200, 100, 500_000);
    let bw = udt4.cc.bandwidth();
    assert!((9_000.0..=11_000.0).contains(&bw), "UDT4's receiver: {bw}");
    let mut ours = Driver::new();
    deliver_reporting(&mut ours, 1, 1, 0);
    deliver_reporting(&mut ours, 200, 100, 12_000);
    let bw = ours.cc.bandwidth();
    assert!((11_000.0..=12_500.0).contains(&bw), "our receiver: {bw}");
}

#[test]
fn startup_paces_at_the_startup_gain_and_ends_on_a_plateau() {
    let mut d = Driver::new();
    assert_eq!(d.cc.state(), State::Startup);
    // Before any sample: the initial window per the initial RTT (100 ms).
    // UDT's packet pair sends 16 packets per 15 periods: the period carries 16/15.
    let rate = |d: &Driver| PAIR_FACTOR / d.cc.send_period().as_secs_f64();
    assert!((rate(&d) - 160.0).abs() < 1e-3, "{}", rate(&d));
    d.ack(ms(10), ms(100), 1000);
    let gain = 1000.0 / rate(&d);
    assert!((gain - 1.0 / ModelConfig::default().startup_gain).abs() < 1e-3, "{gain}");
    // Growing 2x per round: still Startup.
    let mut rate = 1000;
    for _ in 0..5 {
        rate *= 2;
        d.steady(ms(100), ms(100), rate);
        assert_eq!(d.cc.state(), State::Startup);
    }
    // A plateau of three rounds with a queue (more in flight than a BDP, RTT up): Drain, then
    // (RTT back at its minimum) ProbeBW.
    d.flight = rate;
    d.steady(ms(300), ms(130), rate);
    d.ack(ms(10), ms(130), rate);
    assert_eq!(d.cc.state(), State::Drain);
    d.ack(ms(10), ms(100), rate);
    assert_eq!(d.cc.state(), State::ProbeBw(Phase::Cruise));
}

#[test]
fn probe_bw_cycles_cruise_up_down() {
    let mut d = Driver::new();
    d.reach_cruise();
    let mut seen = vec![d.cc.state()];
    for _ in 0..300 {
        d.ack(ms(10), ms(100), 10_000);
        if seen.last() != Some(&d.cc.state()) {
            seen.push(d.cc.state());
        }
    }
    let cycle = [Phase::Cruise, Phase::Up, Phase::Down];
    for (i, s) in seen.iter().enumerate() {
        assert_eq!(*s, State::ProbeBw(cycle[i % 3]), "{seen:?}");
    }
    assert!(seen.len() >= 6, "{seen:?}");
}

/// Losses with a queue that stands through the flow's own decrease say a competitor fills the
/// queue (the flow's own queue falls once it sends less): the flow stops probing and its bound
/// follows CUBIC's curve from the decrease, though the queue is then gone (the competitor
/// backed off too; the room is the competitor's to regrow into). Once no queue has stood for
/// the curve's regrowth time `K` and two round trips, the competitor has gone: probes resume,
/// and one the link delivers whole lifts the bound by its gain and is followed by the next at
/// once.
#[test]
fn beside_a_competitor_the_bound_follows_cubics_curve_until_no_queue_stood_for_its_regrowth() {
    let mut d = Driver::settled_with_queue_reports();
    let estimate = d.cc.bandwidth();
    // One decrease, and the queue stands on: losses with it again start the competitive mode.
    d.queue = Some(ms(25));
    let mut decreases = 0;
    let mut last = estimate;
    while !d.cc.competing() {
        d.ack_paced(ms(10), ms(125), 10_000);
        d.lose(10);
        if d.cc.bandwidth() < last * 0.9 {
            decreases += 1;
        }
        last = d.cc.bandwidth();
        assert!(decreases <= 2, "{decreases} decreases on a held queue without competing");
    }
    assert_eq!(decreases, 2, "the first decrease alone is the flow's own AIMD");
    let decreased_at = d.sc.now;
    let cut = d.cc.bandwidth();
    let beta = ModelConfig::default().loss_beta;
    // Beta of what the flow got after the first decrease: beta of the estimate, paced at 1 or,
    // draining its share of the queue, at Down's gain.
    let down = ModelConfig::default().probe_down_gain;
    let (low, high) = (estimate * beta * beta * down, estimate * beta * beta);
    assert!(cut >= low * 0.98 && cut <= high * 1.02, "{cut} not in {low}..{high}");
    let k = d.cc.epoch.expect("an epoch").regrowth(ms(110)).as_secs_f64();
    d.queue = Some(Duration::ZERO);
    let mut trajectory = Vec::new();
    while d.cc.competing() {
        assert_ne!(d.cc.state(), State::ProbeBw(Phase::Up), "a probe beside a competitor");
        d.ack(ms(10), ms(100), 10_000);
        trajectory.push(((d.sc.now - decreased_at).as_secs_f64(), d.cc.bandwidth()));
        assert!(d.sc.now < decreased_at + Duration::from_secs(30), "still competing");
    }
    // The curve: concave up to K (rising, and by less in its second half than in its first).
    let at = |t: f64| trajectory.iter().find(|&&(s, _)| s >= t).map(|&(_, b)| b).unwrap();
    assert!(at(1.0) > cut && at(k / 2.0) > at(1.0), "{trajectory:?}");
    assert!(at(k) - at(k / 2.0) < at(k / 2.0) - cut, "concave: {trajectory:?}");
    let left = trajectory.last().unwrap().0;
    assert!(left >= k && left < k + 0.5, "the mode left after {left} s, K = {k} s");
    // Probes resume: the first with room lifts the estimate by the probe's gain.
    while d.cc.state() != State::ProbeBw(Phase::Up) {
        d.ack(ms(10), ms(100), 10_000);
    }
    let before = d.cc.bandwidth();
    while d.cc.state() != State::ProbeBw(Phase::Down) {
        d.ack(ms(10), ms(100), 12_500);
    }
    while d.cc.state() == State::ProbeBw(Phase::Down) {
        d.ack(ms(10), ms(100), 12_500);
    }
    assert_eq!(d.cc.state(), State::ProbeBw(Phase::Up));
    let gain = ModelConfig::default().probe_up_gain;
    assert!(d.cc.bandwidth() >= before * gain * 0.99, "{before} -> {}", d.cc.bandwidth());
}

/// A bottleneck that halves under the flow: the newest reports show half the rate while the
/// rounds before still count the old one, and losses come with a standing queue. The decrease
/// applies to the newest rate, and the flow paces at Down's gain for as long as the model says
/// the measured queue takes to drain (25 ms at gain 0.8: 125 ms), then at the bound.
#[test]
fn a_rate_drop_decreases_from_the_newest_rate_and_drains_the_queue() {
    let config = ModelConfig::default();
    let rate = |d: &Driver| PAIR_FACTOR / d.cc.send_period().as_secs_f64();
    let mut d = Driver::settled_with_queue_reports();
    let bw = d.cc.bandwidth();
    d.queue = Some(ms(25));
    let mut steps = 0;
    while d.cc.bandwidth() >= bw * 0.99 && steps < 40 {
        d.ack(ms(10), ms(125), 5_000);
        d.lose(10);
        steps += 1;
    }
    let cut = d.cc.bandwidth();
    assert!(cut <= 5_000.0 * config.loss_beta * 1.01, "{bw} -> {cut}");
    assert!((rate(&d) / cut - config.probe_down_gain).abs() < 1e-3, "{} at {cut}", rate(&d));
    d.queue = Some(Duration::ZERO);
    for _ in 0..13 {
        d.ack(ms(10), ms(100), 5_000);
    }
    assert!((rate(&d) / d.cc.bandwidth() - 1.0).abs() < 1e-3, "{} at {}", rate(&d), d.cc.bandwidth());
}

/// Steps of 10 ms ACKs reporting `rtt` until the controller is in `state`; the time then.
fn until_state(d: &mut Driver, state: State, rtt: Duration) -> Instant {
    for _ in 0..300 {
        if d.cc.state() == state {
            return d.sc.now;
        }
        d.ack(ms(10), rtt, 10_000);
    }
    panic!("never reached {state:?}: {:?}", d.cc.state());
}

#[test]
fn probe_down_drains_what_the_probe_queued_by_the_model() {
    let mut d = Driver::new();
    d.reach_cruise();
    // The probe queues: more than a BDP (1000 packets) in flight and the RTT 30% up; the
    // reports go on showing that queue for a round trip after Down began (they lag).
    let up = until_state(&mut d, State::ProbeBw(Phase::Up), ms(100));
    d.flight = 1500;
    let down = until_state(&mut d, State::ProbeBw(Phase::Down), ms(130));
    let cruise = until_state(&mut d, State::ProbeBw(Phase::Cruise), ms(130));
    // At gains 1.25 and 0.8 Down drains the probe's queue in 1.25 times the probe's length.
    let config = ModelConfig::default();
    let ratio = (config.probe_up_gain - 1.0) / (1.0 - config.probe_down_gain);
    let expected = (down - up).mul_f64(ratio);
    let took = cruise - down;
    assert!(took >= expected && took <= expected + ms(10), "Down took {took:?}, the model {expected:?}");
}

#[test]
fn probe_down_ends_at_a_rounds_end_once_the_reports_show_the_queue_gone() {
    let mut d = Driver::new();
    d.queue = Some(Duration::ZERO);
    d.reach_cruise();
    // The probe lasts one round and the model would drain for 1.25 of it; the reports on
    // packets sent in Down show no queue, so Down ends with its own first round.
    let up = until_state(&mut d, State::ProbeBw(Phase::Up), ms(100));
    let down = until_state(&mut d, State::ProbeBw(Phase::Down), ms(100));
    let cruise = until_state(&mut d, State::ProbeBw(Phase::Cruise), ms(100));
    let round = down - up;
    assert!(cruise - down <= round + ms(10), "Down took {:?} after a probe of {round:?}", cruise - down);
}

#[test]
fn a_loss_below_the_threshold_changes_nothing() {
    let mut d = Driver::new();
    d.reach_cruise();
    let bw = d.cc.bandwidth();
    // 2% of what is sent, for many loss windows.
    for _ in 0..200 {
        d.ack(ms(10), ms(100), 10_000);
        d.lose(2);
    }
    assert!((d.cc.bandwidth() - bw).abs() < 1e-6 * bw, "{} of {bw}", d.cc.bandwidth());
}

/// Losses of packets sent before a decrease count for nothing after it: with the queue still
/// standing in the reports, the old packets reported again and again bring no second decrease.
#[test]
fn a_decrease_answers_what_was_sent_before_it() {
    let mut d = Driver::new();
    d.queue = Some(Duration::ZERO);
    d.reach_cruise();
    d.steady(ms(1000), ms(100), 10_000);
    let bw = d.cc.bandwidth();
    d.queue = Some(ms(25));
    // Overflow until a decrease (one during a probe only ends the probe).
    let mut after = bw;
    for _ in 0..60 {
        d.ack(ms(10), ms(125), 10_000);
        d.lose(20);
        after = d.cc.bandwidth();
        if after < bw * 0.75 {
            break;
        }
    }
    assert!(after < bw * 0.75, "{after} of {bw}");
    let old = SeqNo::new(d.sc.sent);
    for _ in 0..50 {
        d.ack(ms(10), ms(125), 10_000);
        let again: Vec<(SeqNo, SeqNo)> = (0..20).map(|k| (old.add(-2 * k), old.add(-2 * k))).rev().collect();
        d.cc.on_loss(&mut d.sc.ctx(), &again);
    }
    assert!(d.cc.bandwidth() >= after - 1e-6, "{} after {after}", d.cc.bandwidth());
}

#[test]
fn sustained_overflow_while_cruising_decreases_the_rate() {
    let mut d = Driver::new();
    d.queue = Some(Duration::ZERO);
    d.reach_cruise();
    let bw = d.cc.bandwidth();
    // 20% of what is sent is lost while the rate stays and the queue stands.
    d.queue = Some(ms(25));
    let mut lowest = bw;
    for _ in 0..60 {
        d.ack(ms(10), ms(125), 10_000);
        d.lose(20);
        lowest = lowest.min(d.cc.bandwidth());
    }
    assert!(lowest <= bw * ModelConfig::default().loss_beta + 1e-9, "{lowest} of {bw}");
}

/// After a decrease, the room a probe finds is what the decrease released: the bound regains
/// it by the additive step per probe, not by the probe's gain (which would keep the ratios of
/// flows that decreased together), and the probe's gain applies again once the bound is back
/// at the rate the decrease answered.
#[test]
fn after_a_decrease_the_bound_regrows_additively_to_the_rate_it_answered() {
    let mut d = Driver::settled_with_queue_reports();
    let before = d.cc.bandwidth();
    d.queue = Some(ms(25));
    while d.cc.bandwidth() > before * 0.9 {
        d.ack_paced(ms(10), ms(125), 10_000);
        d.lose(20);
    }
    let cut = d.cc.bandwidth();
    assert!(cut <= before * ModelConfig::default().loss_beta * 1.01, "{cut} of {before}");
    // The queue empties; the link would carry 25% more than the flow had.
    d.queue = Some(Duration::ZERO);
    // The step is a sixteenth of the link's capacity as the flow knows it: at most the link.
    let step = ModelConfig::default().cap_increase * 12_500.0;
    let gain = ModelConfig::default().probe_up_gain;
    let mut probes = 0;
    let mut last = cut;
    for _ in 0..3000 {
        let was_down = d.cc.state() == State::ProbeBw(Phase::Down);
        d.ack_paced(ms(10), ms(100), 12_500);
        let now = d.cc.bandwidth();
        if was_down && d.cc.state() != State::ProbeBw(Phase::Down) {
            probes += 1;
            if last < before * 0.99 {
                assert!(now <= last + step * 1.01, "probe {probes}: {last} -> {now}, step {step}");
            }
            last = now;
        }
        if last >= before * gain {
            break;
        }
    }
    assert!(probes >= 3, "{probes} probes regained {cut} -> {last}");
    assert!(last >= before * gain, "the probe's gain never applied again: {last} of {before}");
}

/// Losses with an empty queue are the link's: 10% of what is sent, reported by a receiver that
/// measures no queue, change nothing for 100 round trips (isolated loss changes nothing).
#[test]
fn losses_with_an_empty_queue_change_nothing() {
    let mut d = Driver::new();
    d.queue = Some(Duration::ZERO);
    d.reach_cruise();
    let bw = d.cc.bandwidth();
    for _ in 0..1000 {
        d.ack(ms(10), ms(100), 10_000);
        d.lose(10);
    }
    let after = d.cc.bandwidth();
    assert!(after >= bw * 0.99, "{after} of {bw}");
}

/// The same losses with a standing queue (a quarter of the RTT, its recent peak) are
/// congestion: the rate falls by `loss_beta` per decrease, at most one decrease per round trip
/// of reports after the last one.
#[test]
fn losses_with_a_standing_queue_are_congestion() {
    let mut d = Driver::settled_with_queue_reports();
    let bw = d.cc.bandwidth();
    d.queue = Some(ms(25));
    let mut bounds = vec![];
    for _ in 0..40 {
        d.ack(ms(10), ms(125), 10_000);
        d.lose(10);
        // The decreases (between them the bound follows the competitive mode's curve).
        if bounds.last().is_none_or(|&b| d.cc.bandwidth() < b * 0.99) {
            bounds.push(d.cc.bandwidth());
        }
    }
    assert!(bounds.len() >= 3, "{bounds:?}");
    let beta = ModelConfig::default().loss_beta;
    assert!((bounds[1] / bw - beta).abs() < 1e-6, "{bounds:?} from {bw}");
    // 400 ms of reports: one decrease per RTT (100 ms) plus two ACK periods at most.
    assert!(bounds.len() <= 5, "{bounds:?}");
}

/// A UDT4 receiver sends no queue report: the smoothed RTT over its minimum stands in, so a
/// queue built behind the flow (the RTT up by half) with losses is congestion, and losses at the
/// minimum RTT are not.
#[test]
fn without_queue_reports_the_rtt_tells_the_queue() {
    let mut d = Driver::new();
    d.reach_cruise();
    let bw = d.cc.bandwidth();
    for _ in 0..300 {
        d.ack(ms(10), ms(100), 10_000);
        d.lose(5);
    }
    assert!(d.cc.bandwidth() >= bw * 0.99, "empty queue: {} of {bw}", d.cc.bandwidth());
    for _ in 0..100 {
        d.ack(ms(10), ms(150), 10_000);
        d.lose(5);
    }
    assert!(
        d.cc.bandwidth() <= bw * ModelConfig::default().loss_beta + 1e-6,
        "standing: {}",
        d.cc.bandwidth()
    );
}

/// The mode switch, one row per situation after a settled cruise with queue reports: the
/// queue the receiver reports from then on, whether the link loses 1% meanwhile, and what the
/// controller does within two seconds (ten cruises at most): compete (a queue it cannot drain
/// is another flow's), and the bound it paces at, as a fraction of the estimate before.
#[test]
fn the_competitive_mode_is_entered_only_for_a_queue_that_stands() {
    struct Row {
        what: &'static str,
        queue: Duration,
        lossy: bool,
        competing: bool,
        rate: (f64, f64),
    }
    let beta = ModelConfig::default().loss_beta;
    let rows = [
        Row {
            what: "empty queue, clean link",
            queue: ms(0),
            lossy: false,
            competing: false,
            rate: (0.99, 1.01),
        },
        Row {
            what: "empty queue, lossy link",
            queue: ms(0),
            lossy: true,
            competing: false,
            rate: (0.99, 1.01),
        },
        Row {
            what: "a queue below the floor (5 packets of jitter), lossy link",
            queue: Duration::from_micros(500),
            lossy: true,
            competing: false,
            rate: (0.99, 1.01),
        },
        Row {
            what: "another flow's standing queue, clean link",
            queue: ms(30),
            lossy: false,
            competing: true,
            rate: (0.99, 1.2),
        },
        Row {
            what: "another flow's standing queue, with losses",
            queue: ms(30),
            lossy: true,
            competing: true,
            rate: (0.0, beta + 0.01),
        },
    ];
    for row in rows {
        let mut d = Driver::settled_with_queue_reports();
        let bw = d.cc.bandwidth();
        d.queue = Some(row.queue);
        for _ in 0..200 {
            d.ack_paced(ms(10), ms(100) + row.queue, 10_000);
            if row.lossy {
                d.lose(1);
            }
        }
        assert_eq!(d.cc.competing(), row.competing, "{}", row.what);
        let rate = d.cc.bandwidth() / bw;
        assert!(rate >= row.rate.0 && rate <= row.rate.1, "{}: {rate:.3} of the estimate", row.what);
        // The competitor leaves: the queue drains, the mode ends once no queue stood for the
        // curve's regrowth time, probes resume and the flow paces on its estimate again.
        d.queue = Some(ms(0));
        for _ in 0..1500 {
            d.ack(ms(10), ms(100), 10_000);
        }
        assert!(!d.cc.competing(), "{}: still competing after the queue went", row.what);
        assert!(
            d.cc.bandwidth() >= bw * 0.99,
            "{}: {} of {bw} after the queue went",
            row.what,
            d.cc.bandwidth()
        );
    }
}

#[test]
fn congestion_in_startup_ends_it() {
    let mut d = Driver::new();
    d.queue = Some(ms(30));
    d.ack(ms(10), ms(100), 1000);
    let mut rate = 1000;
    for _ in 0..4 {
        rate *= 2;
        d.steady(ms(100), ms(100), rate);
        d.lose(u64::from(rate) / 30);
    }
    assert_ne!(d.cc.state(), State::Startup);
}

#[test]
fn probe_rtt_adopts_a_longer_path() {
    let mut d = Driver::new();
    d.reach_cruise();
    assert_eq!(d.cc.min_rtt(), Some(ms(100)));
    // The route changes to 150 ms: the minimum expires after its window, ProbeRTT runs, and
    // the new RTT is adopted.
    let mut probed = false;
    for _ in 0..10_000 {
        d.ack(ms(10), ms(150), 10_000);
        probed |= d.cc.state() == State::ProbeRtt;
        if probed && d.cc.state() != State::ProbeRtt {
            break;
        }
    }
    assert!(probed);
    assert_eq!(d.cc.min_rtt(), Some(ms(150)));
    assert_eq!(d.cc.state(), State::ProbeBw(Phase::Cruise));
}

#[test]
fn the_receivers_start_value_is_not_taken_for_an_rtt() {
    // A 300 ms path whose receiver reports its 100 ms start value first: the first packet's
    // own round trip (305 ms) says it cannot be a measurement.
    let mut d = Driver::new();
    d.ack(ms(305), ms(100), 0);
    assert_eq!(d.cc.min_rtt(), None);
    d.ack(ms(10), ms(300), 100);
    assert_eq!(d.cc.min_rtt(), Some(ms(300)));
}

#[test]
fn a_lost_first_packet_does_not_make_every_report_implausible() {
    // The first packet is lost and repaired 2 s later: its round trip would rule out every
    // report of a 300 ms path. Packets acknowledged since, 300 ms after they left, set the
    // bound instead.
    let mut d = Driver::new();
    d.ack(ms(2000), ms(100), 0);
    assert_eq!(d.cc.min_rtt(), None, "the start value is still implausible");
    d.send(100);
    d.sc.now += ms(300);
    d.ack(ms(0), ms(300), 0);
    assert_eq!(d.cc.min_rtt(), Some(ms(300)));
}

#[test]
fn a_stuck_ack_point_lets_the_window_cover_what_the_receiver_holds() {
    let mut d = Driver::new();
    d.reach_cruise();
    let w0 = d.cc.congestion_window();
    // 1000 packets leave and none is acknowledged for 300 ms (a hole being repaired), while
    // reports keep coming: they have arrived behind the hole, so the window grows by them.
    for _ in 0..10 {
        d.send(100);
        d.sc.now += ms(2);
    }
    d.sc.now += ms(300);
    let mut ctx = d.sc.ctx();
    ctx.ack = Some(AckReport { rtt: ms(100), recv_rate: 10_000, capacity: 0, queue: None });
    d.cc.on_ack(&mut ctx, SeqNo::new(d.ack));
    let w1 = d.cc.congestion_window();
    // Counted from send-time checkpoints: within one checkpoint's packets of the 1000.
    assert!(w1 >= w0 + 800.0 && w1 <= w0 + 1000.0 + 1.0, "{w0} -> {w1}");
    // After a timeout they do not count: the path may be dead.
    d.cc.on_timeout(&mut d.sc.ctx());
    assert!(d.cc.congestion_window() <= w0 + 1.0);
}

proptest! {
    #[test]
    fn outputs_stay_finite_and_bounded(events in proptest::collection::vec((0u8..4, any::<u32>(), any::<u32>(), 0u64..5_000_000), 1..200)) {
        let mut sc = Script::new();
        let mut cc = ModelCc::new(ModelConfig::default());
        cc.init(&mut sc.ctx());
        let mut ack = 0u32;
        for (kind, a, b, dt_us) in events {
            sc.now += Duration::from_micros(dt_us);
            match kind {
                0 => {
                    sc.sent = sc.sent.wrapping_add(1) & 0x7FFF_FFFF;
                    sc.stats.total.pkts_sent += 1;
                    let seq = SeqNo::new(sc.sent);
                    cc.on_packet_sent(&mut sc.ctx(), seq, a % 2 == 0);
                }
                1 => {
                    ack = ack.wrapping_add(a % 1000) & 0x7FFF_FFFF;
                    let mut ctx = sc.ctx();
                    ctx.ack = Some(AckReport { rtt: Duration::from_micros(u64::from(a % 10_000_000)), recv_rate: b, capacity: a, queue: None });
                    cc.on_ack(&mut ctx, SeqNo::new(ack));
                }
                2 => {
                    sc.stats.total.snd_loss += u64::from(b % 100);
                    cc.on_loss(&mut sc.ctx(), &[(SeqNo::new(ack), SeqNo::new(ack))]);
                }
                _ => cc.on_timeout(&mut sc.ctx()),
            }
            let p = cc.send_period();
            prop_assert!(p > Duration::ZERO && p < Duration::from_secs(3600));
            let w = cc.congestion_window();
            prop_assert!(w.is_finite() && w >= MIN_WINDOW);
        }
    }
}

#[test]
fn snapshot_of_the_default_response() {
    // The shipped default over a scripted run: Startup, a plateau, cruising, a congestion
    // episode; one line per 100 ms.
    let mut d = Driver::new();
    let mut lines = Vec::new();
    let mut rate = 500;
    for step in 0..60u32 {
        if step < 8 {
            rate = (rate * 2).min(20_000);
        }
        let rtt = if step < 8 { ms(50) } else { ms(60) };
        for _ in 0..10 {
            d.ack(ms(10), rtt, rate);
            if (40..45).contains(&step) {
                d.lose(u64::from(rate) / 500);
            }
        }
        lines.push(format!(
            "{:>4} ms {:<20} rate {:>8.0} pkt/s window {:>8.1}",
            (step + 1) * 100,
            format!("{:?}", d.cc.state()),
            PAIR_FACTOR / d.cc.send_period().as_secs_f64(),
            d.cc.congestion_window()
        ));
    }
    insta::assert_snapshot!(lines.join("\n"));
}
