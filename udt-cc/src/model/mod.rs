//! The model controller (`model`, also `udt`): a model-based rate controller in the structure of
//! BBR (Cardwell et al., ACM Queue 2016; BBRv3's loss bound), fed by UDT's own signals and
//! driving UDT's rate-based pacing. docs/congestion-control.md has the one-page explanation and
//! the state diagram. The default ([`crate::copa`]) hands it a flow whose receiver is UDT4's.
//!
//! The model: the bottleneck bandwidth `bw` is the windowed maximum, over the last
//! `bw_window_cycles` probe cycles ([`filters::MaxFilter`]), of each round's delivery rate: the
//! mean of the packet arrival rates the receiver reported in the round's full ACKs (thesis
//! §3.4), once it can have measured one (17 packets; a UDT4 receiver's first reports are made
//! up); before, the mean of the rates the sender measured itself from its cumulative ACK
//! (`delivery.rs`, what any receiver's ACKs tell); the propagation RTT `min_rtt` is the windowed minimum of the
//! receiver's ACK/ACK2 RTT, reported in every full ACK ([`filters::MinFilter`]); `BDP = bw x
//! min_rtt`. A round is one `min_rtt`, or two ACK periods (SYN) if longer, since no rate report
//! comes faster, or the time to deliver 50 packets if longer still (a rate counted over fewer is
//! too coarse). Losses are the queue's or the link's (`queue.rs`, `losses.rs`): a loss window spans two ACK
//! periods (the same time scale for every flow, whatever its RTT), and its loss events (runs of
//! consecutive NAKed packets sent after the last decrease) are congestion when the standing
//! queue of the last round is at least `standing_queue` of the deepest one of the last probe
//! cycles and above `queue_floor` of `min_rtt`: an overflow drops at the buffer's depth, a
//! faulty link at any depth, so losses with an empty queue change nothing, at any loss rate.
//! The standing queue is the receiver's one-way measure, the smallest queueing delay of an ACK
//! period (`Policy::queue_delay_reports`, which this controller declares), or from a UDT4
//! receiver the smoothed RTT over `min_rtt`. After a decrease, only reports on packets sent
//! after it count (a round trip with the queue in it): one queue is answered once, as TCP
//! answers one window's losses once, and a queue that falls since is draining, not answered.
//!
//! Control: pacing rate `gain x min(bw, bw_cap)`, where `bw_cap` is the loss bound (infinite
//! until congestion); window `gain_w x bw x (min_rtt + SYN)` (a delivery is acknowledged one
//! RTT plus up to one ACK period after the packet left) plus the unacknowledged packets sent
//! before that horizon: they wait behind a hole at the receiver or in the loss list, and no
//! longer occupy the path (UDT acknowledges cumulatively, so they count in flight). States:
//! * **Startup** (gain `startup_gain`; the window is the initial window plus what was
//!   delivered, so it doubles per round trip as TCP's slow start and a flow starting beside
//!   a TCP flow fills the path no faster than it): until the bandwidth grew by less than
//!   `full_bw_growth`
//!   over `full_bw_rounds` rounds, or a congested loss window; then
//! * **Drain** (gain `1 / startup_gain`): until the standing queue is at most the floor (below),
//!   the packets in flight are at most one BDP, or `drain_max_rounds`; then
//! * **ProbeBW**: Cruise (gain 1, a random 2-6 rounds and 32-64 ACK periods; `probe_down_gain`
//!   for as long as the model says drains a queue above the floor that no competitor holds:
//!   the flow's own) -> Up
//!   (`probe_up_gain`, one round) -> Down (`probe_down_gain`, until the model says the probe's
//!   queue is gone, `(probe_up_gain - 1) / (1 - probe_down_gain)` times the probe's length, or
//!   from one round on when the reports show it; at most `drain_max_rounds`) -> Cruise, or Up
//!   again when the link delivered the whole probe with no queue (not while the bound is below
//!   the rate the last decrease answered: that room is what the decrease released).
//!   Congestion during Up or Down, or within two rounds after the probe, was caused by the
//!   probe: the probe ends and the bound becomes the rate delivered (at least `loss_beta` of the
//!   estimate). Congestion while cruising means another flow took more or the bottleneck
//!   slowed: the bound becomes `loss_beta` times the rate (a multiplicative decrease); the
//!   newest rate, with a drain of the measured queue, when the newest reports show less than
//!   that already (the path changed under the flow). A queue that stands through a cruise at
//!   the estimate, or through a decrease (congestion again with the queue back at the depth
//!   the last decrease answered), while the flow gets what it paces at, is another flow's: the
//!   flow's own falls once it sends less. It starts the competitive mode (`compete.rs`): no probes, the bound follows CUBIC's
//!   curve from the decrease, until the bound regains the estimate with no queue standing or
//!   no queue stood for the curve's regrowth time (the competitor left). A cycle
//!   without congestion raises the bound by
//!   `cap_increase` of the link's capacity (the packet-pair estimate): the same additive step
//!   for every flow on the link, so with the decrease it is AIMD, which converges to equal
//!   shares, and with cycles of equal length in time whatever the RTT (the thesis' DAIMD makes
//!   its increase a function of the link, not of the flow, for the same reason).
//! * **ProbeRTT** (from any state, when `min_rtt` was not refreshed for `min_rtt_window`
//!   ProbeRTT durations): gain `probe_rtt_gain` for one round plus the RTT report's settling
//!   time (8 ACK periods: the receiver's RTT is a 1/8 moving average); the minimum seen
//!   meanwhile becomes `min_rtt`.
//!
//! Invariants: the period is finite and positive and the window finite and at least 4 packets
//! whatever the inputs; the estimators only hold samples, and forget them (bandwidth after its
//! window of rounds, RTT after ProbeRTT); nothing reads a clock or a global RNG (`ctx.now`,
//! `ctx.rng`); every transition emits a `tracing` debug event on target `udt::cc`.

mod compete;
mod config;
mod delivery;
mod filters;
mod losses;
mod queue;
mod reports;

use std::time::Duration;

pub use config::ModelConfig;
use delivery::{DeliverySampler, RateMean};
pub use filters::{MaxFilter, MinFilter};
use queue::QueueGauge;

use crate::first_rtt::FirstRtt;
use crate::send_times::SendTimes;

use super::{CcContext, CcFactory, CongestionControl, Policy};
use udt_proto::seq::SeqNo;
use udt_proto::time::Instant;

/// ACK periods the receiver's reported RTT needs to reflect a change (a 1/8 moving average).
const RTT_REPORT_SETTLE_ACKS: u32 = 8;
/// UDT sends every 16th packet right after the one before (the packet pair, protocol notes §4),
/// so 16 packets take 15 periods: the period is stretched by 16/15 to send at the rate meant.
const PAIR_FACTOR: f64 = 16.0 / 15.0;
/// ACK periods between two rate reports, at most: a receiver includes its rates in a full ACK
/// when more than one SYN has passed since the last (UDT4), so every first or second ACK.
const RATE_REPORT_ACKS: u32 = 2;
/// Packets a round spans at least: a rate counted over n packets is off by up to 1/n.
const ROUND_MIN_PACKETS: f64 = 50.0;
/// Weight of one loss window in the link's loss rate: a moving average over 16 windows (a
/// third of a second), long enough to count a few percent on slow flows.
const LINK_LOSS_GAIN: f64 = 1.0 / 16.0;
/// Largest link loss rate the bandwidth sample is corrected for: past a half, the delivered
/// fraction is too small a divisor to trust.
const MAX_LINK_LOSS: f64 = 0.5;
/// The smallest window, packets: a packet pair and its ACK clock.
const MIN_WINDOW: f64 = 4.0;
/// The fastest pacing, packets per second (ten per microsecond: 116 Gb/s of full-size packets,
/// past the fastest paths the tool is for; UDT4's floor of one per microsecond would hold a
/// flow under 12 Gb/s).
const MAX_RATE: f64 = 1e7;
/// Packets the receiver must have had before its rate reports mean anything: a UDT4 receiver
/// reports the median of its last 16 arrival gaps, its window starting full of made-up 1 s
/// gaps (1 packet/s); 16 gaps take 17 packets. Until then the sender's own measurement stands
/// in ([`delivery`]).
const REPORT_WARMUP_PACKETS: u64 = 17;
/// The rate a UDT4 receiver reports from its made-up start (the median of 1 s gaps), packets/s:
/// no receiver measuring a flow in its first packets reports it.
const UDT4_MADE_UP_RATE: u32 = 1;

/// The phases of ProbeBW.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Pacing at the estimate.
    Cruise,
    /// Pacing above it to find more.
    Up,
    /// Pacing below it to drain what the probe queued.
    Down,
}

/// The controller's states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Exponential search for the bandwidth.
    Startup,
    /// Draining Startup's queue.
    Drain,
    /// Cruising with periodic probes.
    ProbeBw(Phase),
    /// Draining to measure the propagation RTT.
    ProbeRtt,
}

/// The model-based controller (see the module documentation).
#[derive(Clone, Debug)]
pub struct ModelCc {
    config: ModelConfig,
    state: State,
    round: u64,
    round_start: Instant,
    rounds_left: u32,
    bw: MaxFilter,
    cycle: u64,
    cruise_until: Instant,
    /// Congestion was seen since the last probe began.
    probe_congested: bool,
    /// This round's rates as the receiver reported them, and as the ACK point advanced
    /// ([`delivery`]).
    round_reported: RateMean,
    round_acked: RateMean,
    /// Packets acknowledged since the start (up to [`REPORT_WARMUP_PACKETS`]).
    acked_packets: u64,
    /// The receiver's reports are UDT4's estimator, the median gap of its last 16 arrivals
    /// (it reported [`UDT4_MADE_UP_RATE`] in the warm-up): the speed of bursts, not of the
    /// flow, so the sender's own measurement replaces them for good.
    median_reports: bool,
    last_rate_at: Option<Instant>,
    delivery: DeliverySampler,
    last_round_bw: f64,
    /// This round's pacing rate (time-weighted), and the means of the last two rounds, newest
    /// first, packets/s: the receiver's reports describe packets sent up to a round before.
    round_paced: RateMean,
    paced_rounds: [f64; 2],
    paced_at: Option<Instant>,
    bw_cap: f64,
    min_rtt: MinFilter,
    /// The sender's own round trip until the receiver's reports are measurements.
    first_rtt: FirstRtt,
    last_rtt: Option<Duration>,
    init_rtt: Duration,
    full_bw: f64,
    full_bw_count: u32,
    filled_pipe: bool,
    loss_sent: u64,
    /// Packets the sender had counted lost when the current loss window opened.
    loss_reported: u64,
    /// The link's own loss rate: the lost fraction of windows without a standing queue, a
    /// moving average over [`LINK_LOSS_GAIN`]'s inverse of them.
    link_loss: f64,
    /// The receiver's packet-pair capacity, packets/s, once reported.
    pair_capacity: Option<f64>,
    /// When the current loss window opened.
    loss_start: Instant,
    /// Loss events (runs of consecutive lost packets) of the current loss window, reported for
    /// the first time and sent after the last decrease (earlier ones were answered by it).
    loss_counted: u64,
    /// The first sequence number whose loss may still count: past every one counted and
    /// every one sent before the last decrease.
    count_from: Option<SeqNo>,
    probe_end_round: Option<u64>,
    probe_rtt_until: Option<Instant>,
    probe_rtt_min: Option<Duration>,
    last_ack: SeqNo,
    /// When new data left, from the checkpoint at or before the ACK point on.
    sent_at: SendTimes,
    timed_out: bool,
    /// Packets delivered in Startup: acknowledged, and arrived as the receiver's rate reports
    /// count them (behind holes too, as TCP's SACK counts them); Startup's window is the
    /// initial window plus the larger, so it doubles per round trip as TCP's slow start does
    /// ([`ModelCc::update_outputs`]).
    startup_acked: f64,
    startup_arrived: f64,
    period: Duration,
    window: f64,
    /// The standing queue, which tells the queue's losses from the link's ([`queue`]).
    queue: QueueGauge,
    /// The receiver reports the one-way queueing delay (the RTT fallback is then unused).
    queue_reports: bool,
    /// The last standing-queue sample.
    last_queue: Option<Duration>,
    /// The deepest standing-queue sample since the current probe began, seconds.
    cycle_queue: f64,
    /// When the last cruise began (the probe cycle's start).
    cruise_started: Instant,
    /// The competitive mode's congestion epoch, while a competitor fills the queue
    /// ([`compete`]).
    epoch: Option<compete::Epoch>,
    /// The rate the last decrease answered: CUBIC's fast convergence, and the bound regrows
    /// additively below it ([`ModelCc::regrowing`]); forgotten when a competitor leaves.
    last_rate_max: Option<f64>,
    /// When a queue last stood while competing.
    queue_stood_at: Instant,
    /// When the current state began.
    state_since: Instant,
    /// Cruising at Down's gain to drain the flow's own queue ([`ModelCc::check_own_queue`]),
    /// until `own_drain_until`; no new drain before `own_drain_next`.
    draining_own_queue: bool,
    own_drain_until: Instant,
    own_drain_next: Instant,
    /// When the current probe began pacing above the estimate.
    probe_started: Instant,
    /// When ProbeBW Down has drained what its probe queued, by the model ([`ModelCc::enter`]).
    probe_drained_at: Instant,
    /// The estimate the current probe paced above, and the most its rounds delivered
    /// ([`ModelCc::after_probe`]), packets/s.
    probe_base: f64,
    probe_delivered: f64,
}

impl ModelCc {
    /// A controller with `config` (validated by the catalog; a bad one is clamped, never used
    /// to produce an infinite rate).
    pub fn new(config: ModelConfig) -> Self {
        ModelCc {
            config,
            state: State::Startup,
            round: 0,
            round_start: Instant::ZERO,
            rounds_left: 0,
            bw: MaxFilter::new(config.bw_window_cycles),
            cycle: 0,
            cruise_until: Instant::ZERO,
            probe_congested: false,
            round_reported: RateMean::default(),
            round_acked: RateMean::default(),
            acked_packets: 0,
            median_reports: false,
            last_rate_at: None,
            delivery: DeliverySampler::default(),
            last_round_bw: 0.0,
            round_paced: RateMean::default(),
            paced_rounds: [0.0; 2],
            paced_at: None,
            bw_cap: f64::INFINITY,
            min_rtt: MinFilter::default(),
            first_rtt: FirstRtt::default(),
            last_rtt: None,
            init_rtt: Duration::from_millis(100),
            full_bw: 0.0,
            full_bw_count: 0,
            filled_pipe: false,
            loss_sent: 0,
            loss_reported: 0,
            link_loss: 0.0,
            pair_capacity: None,
            loss_start: Instant::ZERO,
            loss_counted: 0,
            count_from: None,
            probe_end_round: None,
            probe_rtt_until: None,
            probe_rtt_min: None,
            last_ack: SeqNo::new(0),
            sent_at: SendTimes::default(),
            timed_out: false,
            startup_acked: 0.0,
            startup_arrived: 0.0,
            period: Duration::from_millis(1),
            window: config.initial_window.max(MIN_WINDOW),
            queue: QueueGauge::new(config.queue_peak_cycles),
            queue_reports: false,
            last_queue: None,
            cycle_queue: 0.0,
            cruise_started: Instant::ZERO,
            epoch: None,
            last_rate_max: None,
            queue_stood_at: Instant::ZERO,
            state_since: Instant::ZERO,
            draining_own_queue: false,
            own_drain_until: Instant::ZERO,
            own_drain_next: Instant::ZERO,
            probe_started: Instant::ZERO,
            probe_drained_at: Instant::ZERO,
            probe_base: 0.0,
            probe_delivered: 0.0,
        }
    }

    /// The current state.
    pub fn state(&self) -> State {
        self.state
    }

    /// The bandwidth estimate the pacing uses, packets/s (0 before the first sample).
    pub fn bandwidth(&self) -> f64 {
        if self.competing() && self.bw_cap.is_finite() {
            // Competing with a flow that fills the queue: the rate is the loss bound's AIMD.
            self.bw_cap
        } else {
            self.bw.get().min(self.bw_cap)
        }
    }

    /// The propagation RTT estimate.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt.get()
    }

    /// `min_rtt`, or before the first trusted report the first packet's own round trip, or
    /// before that the connection's start value.
    fn rtt_estimate(&self) -> Duration {
        self.min_rtt.get().or(self.first_rtt.own()).unwrap_or(self.init_rtt)
    }

    /// One RTT, but at least [`RATE_REPORT_ACKS`] ACK periods (no rate report comes faster) and
    /// the time to deliver
    /// [`ROUND_MIN_PACKETS`] at the estimated rate (a rate counted over fewer packets is
    /// quantised too coarsely for a maximum filter, which would pick the high errors).
    fn round_len(&self, ctx: &CcContext<'_>) -> Duration {
        let bw = self.bandwidth();
        let counting = if bw > 0.0 {
            Duration::from_secs_f64((ROUND_MIN_PACKETS / bw).min(60.0))
        } else {
            Duration::ZERO
        };
        self.rtt_estimate().max(ctx.syn_interval * RATE_REPORT_ACKS).max(counting)
    }

    fn probe_rtt_len(&self, ctx: &CcContext<'_>) -> Duration {
        self.round_len(ctx) + ctx.syn_interval * RTT_REPORT_SETTLE_ACKS
    }

    fn enter(&mut self, ctx: &mut CcContext<'_>, state: State) {
        let rounds = match state {
            State::Drain => {
                // Startup's overshoot is reported in the rounds after it, like a probe's.
                self.probe_end_round = Some(self.round);
                self.config.drain_max_rounds
            }
            State::ProbeBw(Phase::Cruise) => {
                if self.state == State::Drain {
                    self.probe_end_round = Some(self.round);
                }
                if self.state == State::ProbeBw(Phase::Down) {
                    self.raise_bound_after_probe(ctx);
                }
                self.cruise_started = ctx.now;
                let (lo, hi) = self.config.cruise_rounds;
                let (slo, shi) = self.config.cruise_syn;
                let syns = slo + ctx.rng.next_u32() % (shi - slo + 1);
                self.cruise_until = ctx.now + ctx.syn_interval * syns;
                lo + (ctx.rng.next_u32() % (hi - lo + 1))
            }
            State::ProbeBw(Phase::Up) => {
                if self.state == State::ProbeBw(Phase::Down) {
                    self.raise_bound_after_probe(ctx);
                }
                self.probe_base = self.bandwidth();
                self.probe_delivered = 0.0;
                self.probe_congested = false;
                self.cycle_queue = 0.0;
                self.cycle += 1;
                self.bw.advance(self.cycle);
                self.queue.advance(self.cycle);
                self.probe_started = ctx.now;
                1
            }
            State::ProbeBw(Phase::Down) => {
                self.probe_end_round = Some(self.round);
                // If the probe found nothing, it queued `probe_up_gain - 1` of the estimate for
                // as long as it lasted, and Down drains `1 - probe_down_gain` of it per unit of
                // time: the model says when that queue is gone, a round trip before the
                // receiver's reports can show it.
                let queued = (self.config.probe_up_gain - 1.0).max(0.0);
                let drained = (1.0 - self.config.probe_down_gain).max(f64::EPSILON);
                let probed = ctx.now.saturating_since(self.probe_started);
                self.probe_drained_at = ctx.now + probed.mul_f64((queued / drained).min(f64::from(u16::MAX)));
                self.config.drain_max_rounds
            }
            State::Startup | State::ProbeRtt => 0,
        };
        tracing::debug!(
            target: "udt::cc",
            from = ?self.state,
            to = ?state,
            bw_pkts = self.bandwidth(),
            min_rtt_us = self.min_rtt.get().map_or(0, |d| d.as_micros() as u64),
            "udt model: state"
        );
        self.state = state;
        self.state_since = ctx.now;
        self.rounds_left = rounds;
    }

    fn handle_round(&mut self, ctx: &mut CcContext<'_>) {
        if ctx.now < self.round_start + self.round_len(ctx) {
            return;
        }
        self.round += 1;
        self.round_start = ctx.now;
        self.bw.update(self.cycle, self.bw_sample());
        if matches!(self.state, State::ProbeBw(Phase::Up | Phase::Down)) {
            self.probe_delivered = self.probe_delivered.max(self.bw_sample());
        }
        tracing::trace!(target: "udt::cc", round = self.round, state = ?self.state, bw = self.bw.get(), cap = self.bw_cap, round_bw = self.round_bw(), reported = self.round_reported.mean(), acked = self.round_acked.mean(), n = self.round_samples(), rtt = ?self.last_rtt, min = ?self.min_rtt.get(), window = self.window, flight = ctx.flight, q_recent = self.queue.recent(), q_peak = self.queue.peak(), "udt model: round");
        let sampled = self.round_samples() > 0;
        if sampled {
            // A round without a rate report (reports come every other ACK on short paths)
            // keeps the last round's rate.
            self.last_round_bw = self.round_bw();
            self.paced_rounds = [self.round_paced.mean(), self.paced_rounds[0]];
            self.round_paced.clear();
        }
        self.round_reported.clear();
        self.round_acked.clear();
        match self.state {
            State::Startup if sampled => self.check_full_pipe(ctx),
            State::Startup => {}
            State::Drain | State::ProbeBw(_) => {
                self.rounds_left = self.rounds_left.saturating_sub(1);
                let cruising = self.state == State::ProbeBw(Phase::Cruise) && ctx.now < self.cruise_until;
                // Down lasts one round, and on until the probe's queue is gone: at gain
                // 1/probe_up_gain a round drains less than the probe's round queued whenever the
                // round is longer than the RTT, and cruising at the estimate never drains the rest.
                let draining =
                    self.state == State::ProbeBw(Phase::Down) && self.rounds_left > 0 && !self.drained(ctx);
                let done = match self.state {
                    State::ProbeBw(Phase::Down) => !draining,
                    _ => self.rounds_left == 0 && !cruising,
                };
                self.follow_epoch(ctx);
                if done {
                    let next = match self.state {
                        State::ProbeBw(Phase::Cruise)
                            if self.queue_stands() && self.gets_what_it_sends(self.last_round_bw) =>
                        {
                            self.handle_held_queue(ctx);
                            Phase::Cruise
                        }
                        // Beside a competitor the bound is the epoch's curve: no probe.
                        State::ProbeBw(Phase::Cruise) if self.competing() => Phase::Cruise,
                        State::ProbeBw(Phase::Cruise) => Phase::Up,
                        State::ProbeBw(Phase::Up) => Phase::Down,
                        State::ProbeBw(Phase::Down) => self.after_probe(),
                        _ => Phase::Cruise,
                    };
                    self.enter(ctx, State::ProbeBw(next));
                }
            }
            State::ProbeRtt => {}
        }
    }

    fn check_full_pipe(&mut self, ctx: &mut CcContext<'_>) {
        let bw = self.bw.get();
        if bw <= 0.0 {
            return;
        }
        if bw >= self.full_bw * self.config.full_bw_growth {
            self.full_bw = bw;
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        if self.full_bw_count >= self.config.full_bw_rounds
            || self.queue_fraction() > self.config.startup_queue
        {
            self.filled_pipe = true;
            self.enter(ctx, State::Drain);
        }
    }

    /// Drain ends once the reports (or the packets in flight) show the queue gone; ProbeBW
    /// Down once the model says its probe's queue is gone, or at a round's end when the reports
    /// show it ([`Self::handle_round`]).
    fn check_drained(&mut self, ctx: &mut CcContext<'_>) {
        let done = match self.state {
            State::Drain => self.drained(ctx),
            State::ProbeBw(Phase::Down) => ctx.now >= self.probe_drained_at,
            _ => false,
        };
        if done {
            let next = if self.state == State::Drain { Phase::Cruise } else { self.after_probe() };
            self.enter(ctx, State::ProbeBw(next));
        }
    }

    /// Where ProbeBW goes when Down ends: a probe the link delivered whole (its rate rose by at
    /// least half the probe's gain, with no congestion and no queue) found room, and the next
    /// probe follows at once, so the rate grows by the probe's gain every probe instead of
    /// every cycle (a bottleneck that sped up, a competitor that left); else Cruise. Not while
    /// regrowing after a decrease ([`Self::regrowing`]).
    fn after_probe(&self) -> Phase {
        let grown = 1.0 + (self.config.probe_up_gain - 1.0) / 2.0;
        let room = self.queue_floor().is_some_and(|floor| self.cycle_queue <= floor.as_secs_f64());
        if !self.probe_congested
            && !self.competing()
            && !self.regrowing()
            && room
            && self.probe_base > 0.0
            && self.probe_delivered >= grown * self.probe_base
        {
            Phase::Up
        } else {
            Phase::Cruise
        }
    }

    /// A probe cycle that met no congestion raises the loss bound by the same amount for every
    /// flow on the link, a fraction of the link's capacity: with the multiplicative decrease
    /// this is AIMD, which converges to equal shares (Chiu and Jain), and with cycles of equal
    /// length in time it is RTT-fair (the thesis' DAIMD makes its increase a function of the
    /// link, not of the flow). A probe that built no queue found the link with room for its
    /// gain: the bound rises to the probe's rate (no competitor holds the queue to share),
    /// unless the room is what the last decrease released ([`Self::regrowing`]).
    fn raise_bound_after_probe(&mut self, ctx: &CcContext<'_>) {
        if self.probe_congested {
            return;
        }
        let additive = self.bw_cap + self.increase_step(ctx);
        // Beside a competitor that backed off, a probe finds room too, but the room is the
        // competitor's to regrow into: only the additive step.
        let room = !self.competing()
            && !self.regrowing()
            && self.queue_floor().is_some_and(|floor| self.cycle_queue <= floor.as_secs_f64());
        self.bw_cap = if room { additive.max(self.bw_cap * self.config.probe_up_gain) } else { additive };
        // Beside a competitor the bound stays: the epoch's curve sets it.
        if self.bw_cap >= self.bw.get() && !self.competing() {
            self.bw_cap = f64::INFINITY;
        }
    }

    /// The loss bound is below the rate the last decrease answered: the room a probe finds
    /// is the room the decrease released (every flow that met the overflow released some),
    /// not capacity that came; it is regained by the additive step alone, the same for every
    /// flow (AIMD, which converges), not by the probe's gain, which keeps the flows' ratios.
    pub(super) fn regrowing(&self) -> bool {
        self.last_rate_max.is_some_and(|max| self.bw_cap < max)
    }

    /// The queue is gone: the standing queue is at most the floor ([`Self::queue_floor`]) in
    /// a report on packets sent since the state began (a round trip into it: earlier reports
    /// tell the queue before the drain, smaller than the one Startup or a probe left), or the
    /// packets in flight at an ACK are at most one BDP.
    fn drained(&self, ctx: &CcContext<'_>) -> bool {
        let reports_current = ctx.now >= self.state_since + self.rtt_estimate();
        let queue_gone = match (self.last_queue, self.queue_floor()) {
            (Some(queue), Some(floor)) => reports_current && queue <= floor,
            _ => false,
        };
        queue_gone || f64::from(ctx.flight) <= self.bdp()
    }

    fn check_probe_rtt(&mut self, ctx: &mut CcContext<'_>) {
        let len = self.probe_rtt_len(ctx);
        match self.probe_rtt_until {
            None if self.min_rtt.expired(ctx.now, len * self.config.min_rtt_window) => {
                self.probe_rtt_until = Some(ctx.now + len);
                self.probe_rtt_min = None;
                self.enter(ctx, State::ProbeRtt);
            }
            Some(until) if ctx.now >= until => {
                self.probe_rtt_until = None;
                let measured = self.probe_rtt_min.or(self.last_rtt).or(self.min_rtt.get());
                if let Some(rtt) = measured {
                    self.min_rtt.reset_to(ctx.now, rtt);
                }
                let next = if self.filled_pipe { State::ProbeBw(Phase::Cruise) } else { State::Startup };
                self.enter(ctx, next);
            }
            _ => {}
        }
    }

    /// The last standing-queue sample, as a fraction of `min_rtt` (0 when unknown).
    fn queue_fraction(&self) -> f64 {
        match (self.last_queue, self.min_rtt.get()) {
            (Some(queue), Some(min)) if !min.is_zero() => queue.as_secs_f64() / min.as_secs_f64(),
            _ => 0.0,
        }
    }

    fn bdp(&self) -> f64 {
        self.bandwidth() * self.rtt_estimate().as_secs_f64()
    }

    fn pacing_gain(&self) -> f64 {
        match self.state {
            State::Startup => self.config.startup_gain,
            State::Drain => 1.0 / self.config.startup_gain,
            State::ProbeBw(Phase::Cruise) if self.draining_own_queue => self.config.probe_down_gain,
            State::ProbeBw(Phase::Cruise) => 1.0,
            State::ProbeBw(Phase::Up) => self.config.probe_up_gain,
            State::ProbeBw(Phase::Down) => self.config.probe_down_gain,
            State::ProbeRtt => self.config.probe_rtt_gain,
        }
    }

    /// Cruising at the estimate keeps whatever queue there is: one above the floor, while no
    /// competitor holds it, is the flow's own (a probe's rest, an estimate above the link). It
    /// is drained at Down's gain for as long as the model says that takes (`q` at gain `g`
    /// takes `q / (1 - g)`), so the link's losses meet an empty queue. The reports describe the
    /// queue a round trip late: only those on packets sent in the cruise count, and the next
    /// drain waits for reports on packets sent after this one.
    fn check_own_queue(&mut self, now: Instant, syn: Duration) {
        if self.draining_own_queue && now >= self.own_drain_until {
            self.draining_own_queue = false;
        }
        if self.state != State::ProbeBw(Phase::Cruise) {
            self.draining_own_queue = false;
            return;
        }
        // Beside a competitor the queue is not the flow's own: only the drain a decrease
        // started runs on ([`Self::drain_queue`]).
        if self.competing() {
            return;
        }
        let Some((queue, floor)) = self.last_queue.zip(self.queue_floor()) else { return };
        // Reports on packets sent before the cruise tell the probe's queue, which Down drained.
        let reports_current = now >= self.state_since + self.rtt_estimate() + syn * RATE_REPORT_ACKS;
        if self.draining_own_queue || queue <= floor || now < self.own_drain_next || !reports_current {
            return;
        }
        self.drain_queue(now, syn, queue);
    }

    /// Cruise at Down's gain for as long as the model says a standing queue of `queue` takes to
    /// drain (at gain `g`, `queue / (1 - g)`); the next drain of the flow's own queue waits for
    /// reports on packets sent after this one.
    pub(super) fn drain_queue(&mut self, now: Instant, syn: Duration, queue: Duration) {
        let drained = (1.0 - self.config.probe_down_gain).max(f64::EPSILON);
        self.own_drain_until = now + queue.mul_f64((1.0 / drained).min(f64::from(u16::MAX)));
        self.own_drain_next = self.own_drain_until + self.rtt_estimate() + syn * RATE_REPORT_ACKS;
        self.draining_own_queue = true;
    }

    /// Unacknowledged packets sent more than one RTT and one ACK period ago: each has arrived and
    /// waits behind a hole at the receiver, or was lost and waits in the loss list; either way
    /// it no longer occupies the path. UDT acknowledges cumulatively, so they count in flight.
    fn held_behind_holes(&self, ctx: &CcContext<'_>) -> f64 {
        self.sent_at.held_behind_holes(ctx.now, self.rtt_estimate(), ctx.syn_interval, self.last_ack)
    }

    /// Recompute the period and the window from the model.
    fn update_outputs(&mut self, ctx: &CcContext<'_>) {
        let bw = self.bandwidth();
        let rate = if bw > 0.0 {
            self.pacing_gain() * bw
        } else {
            self.config.initial_window / self.init_rtt.as_secs_f64().max(1e-6)
        };
        let rate = if rate.is_finite() && rate > 0.0 { rate.min(MAX_RATE) } else { 1.0 };
        self.period = Duration::from_secs_f64(PAIR_FACTOR / rate);
        let window = if bw > 0.0 {
            let gain =
                if self.state == State::Startup { self.config.startup_gain } else { self.config.cwnd_gain };
            // Not in Startup with a standing queue: there the holes are the overshoot's own
            // losses, and the window is what bounds the overshoot (BBR). With an empty queue
            // they are the link's, and a window that counted them would stall the doubling.
            let held = if self.timed_out || (self.state == State::Startup && self.queue_stands()) {
                0.0
            } else {
                self.held_behind_holes(ctx)
            };
            let model = gain * bw * (self.rtt_estimate() + ctx.syn_interval).as_secs_f64() + held;
            if self.state == State::Startup {
                // Startup grows as TCP's slow start, by what was delivered: beside a TCP flow
                // starting with it, the pacing gain alone would grow the rate by `startup_gain`
                // per round, and the TCP flow, meeting the queue first, would leave slow start
                // (HyStart) far below its share.
                let delivered = self.startup_acked.max(self.startup_arrived);
                model.min(self.config.initial_window + delivered + held)
            } else {
                model
            }
        } else {
            f64::from(ctx.max_window)
        };
        self.window = if window.is_finite() { window.max(MIN_WINDOW) } else { MIN_WINDOW };
    }
}

impl CongestionControl for ModelCc {
    fn name(&self) -> &'static str {
        "model"
    }

    fn init(&mut self, ctx: &mut CcContext<'_>) {
        *self = ModelCc::new(self.config);
        self.init_rtt = ctx.rtt.max(ctx.syn_interval);
        self.round_start = ctx.now;
        self.loss_start = ctx.now;
        self.last_ack = ctx.last_ack;
        self.loss_sent = ctx.stats.total.pkts_sent;
        self.loss_reported = ctx.stats.total.snd_loss;
        self.update_outputs(ctx);
    }

    fn on_ack(&mut self, ctx: &mut CcContext<'_>, ack: SeqNo) {
        if let Some(at) = self.paced_at {
            let rate = PAIR_FACTOR / self.period.as_secs_f64().max(f64::MIN_POSITIVE);
            self.round_paced.add(rate, ctx.now.saturating_since(at).as_secs_f64());
        }
        self.paced_at = Some(ctx.now);
        if ack.is_after(self.last_ack) {
            self.first_rtt.handle_ack(ctx.now);
            self.handle_delivery(ctx.now, ack);
            if self.state == State::Startup {
                self.startup_acked += f64::from(ack.diff(self.last_ack) as u32);
            }
            self.last_ack = ack;
            self.sent_at.handle_ack(ack);
            self.first_rtt.handle_checkpoint(ctx.now, ack, &self.sent_at);
            self.timed_out = false;
        }
        if ctx.bandwidth > 0 && ctx.bandwidth < u32::MAX {
            self.pair_capacity = Some(f64::from(ctx.bandwidth));
        }
        if let Some(report) = ctx.ack {
            self.handle_rtt(ctx.now, ctx.syn_interval, &report);
            self.handle_rate(ctx.now, &report);
        }
        self.handle_round(ctx);
        self.check_loss_window(ctx);
        self.check_drained(ctx);
        self.check_probe_rtt(ctx);
        self.check_own_queue(ctx.now, ctx.syn_interval);
        self.update_outputs(ctx);
    }

    fn on_loss(&mut self, ctx: &mut CcContext<'_>, lost: &[(SeqNo, SeqNo)]) {
        self.count_losses(lost);
        self.handle_round(ctx);
        self.check_loss_window(ctx);
        self.update_outputs(ctx);
    }

    fn on_timeout(&mut self, ctx: &mut CcContext<'_>) {
        // The connection counted everything unacknowledged as lost before calling: not losses a
        // receiver reported, so not in the loss rate (only `on_loss` counts).
        self.timed_out = true;
        self.update_outputs(ctx);
    }

    fn on_packet_sent(&mut self, ctx: &mut CcContext<'_>, seq: SeqNo, retransmission: bool) {
        self.first_rtt.handle_sent(ctx.now);
        if !retransmission && (seq == self.last_ack || !self.delivery.started()) {
            // Nothing before it is unacknowledged: delivery counts from here.
            self.delivery.restart(seq, ctx.now);
        }
        self.sent_at.handle_sent(ctx.now, seq, retransmission);
    }

    fn send_period(&self) -> Duration {
        self.period
    }

    fn congestion_window(&self) -> f64 {
        self.window
    }
}

/// Factory for [`ModelCc`].
#[derive(Clone, Copy, Debug, Default)]
pub struct ModelFactory(pub ModelConfig);

impl CcFactory for ModelFactory {
    fn build(&self) -> Box<dyn CongestionControl> {
        Box::new(ModelCc::new(self.0))
    }

    fn policy(&self) -> Policy {
        // Rate-based on a path with errors: it learns from every report, and tells the queue's
        // losses from the link's by the one-way queueing delay (module docs).
        Policy::PROGRESS_REPORTS.with_queue_delay_reports(true)
    }
}

#[cfg(test)]
mod closed_loop_tests;
#[cfg(test)]
mod tests;
