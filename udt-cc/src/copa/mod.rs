//! The default congestion control: Copa (Arun & Balakrishnan, "Copa: Practical Delay-Based
//! Congestion Control for the Internet", NSDI 2018) on UDT's signals: a target rate from the
//! measured queueing delay, approached with a velocity, and a competitive mode entered only
//! while a buffer-filling competitor keeps the queue from emptying.
//!
//! Signals. The queueing delay `d_q` is the receiver's one-way measure, the smallest queueing
//! delay of an ACK period (`Policy::queue_delay_reports`, which this controller declares: Copa's
//! standing RTT less its minimum, with no clock on the path that ACK delays blur), less its
//! floor, the smallest such sample over [`FLOOR_WINDOW`] (a sliding window kept as sub-window
//! minima, `window_min.rs`: the sample of the moment its window runs out never stands in for the
//! minimum) but the first report, which reads zero
//! by construction (a real receiver's never reaches zero: its scheduling and the path's jitter
//! add some 0.1 ms to every packet, which is no queue, and would hold a flow to 2 packets per
//! 0.1 ms, 240 Mb/s), and averaged over the reports that cover the last half round (Copa's
//! standing RTT spans half a round; a mean, where Copa takes the least, because the flows that
//! share a queue see the same mean whatever their RTTs). A UDT4 receiver measures no queue,
//! and its RTT reports are a 1/8 moving average that lags a queue by rounds, too late for a
//! delay target. So the model controller ([`ModelCc`]), which needs no queue reports to fill a
//! path, drives the flow from its start until the receiver's first queue report, which hands
//! the flow to Copa from its first round (one round trip in: our receiver reports once the
//! sender's policy offer reached it); once the peer has left every policy offer unanswered
//! (`CcContext::peer_udt4`, a second or more in), the model keeps the flow for the rest of the
//! connection. The *round* `R` is
//! the smoothed RTT, or two ACK periods if longer: no report comes faster, so on a path shorter
//! than that the flow moves once per two reports (Copa's dynamics on an RTT of `R`).
//!
//! Control (paper §2-3). The state is the window `W` (packets per round trip); the rate is `λ = W /
//! (R_0 + d_q)`, `R_0` the smallest smoothed RTT of [`FLOOR_WINDOW`] (or two ACK periods if
//! longer): as under a window's ACK clock, a queue the flow builds slows it at once and settles at
//! what `W` holds beyond the pipe, where a rate alone would keep filling it for as long as it stays
//! above the link. Target `λ_t = 1 / (δ d_q)`: `1/δ` packets of this flow queued at the bottleneck,
//! in the default mode the larger of [`QUEUE_SHARE`] (0.1 ms) of the bottleneck's packet-pair
//! capacity and the paper's two packets, for [`FLOOR_WINDOW`] after the buffer overflowed at most
//! [`OVERFLOW_BUFFER_SHARE`] of what it holds (below the paper's two packets where it holds
//! fewer than 128: flows alone then stop overflowing it, and leave a TCP flow room for its bursts).
//! In slow start each full ACK adds the packets the receiver got since the last one (its arrival
//! rate over the time between them; a cumulative ACK stalls behind every hole for a round) to
//! `W`, doubling it per round, until `λ > λ_t` once, the buffer overflows (below), or `λ` reaches
//! the bottleneck's capacity by packet pairs (beyond it the flow only queues, twice as much each
//! round the report takes); afterwards `W` moves `v / δ` packets per round toward the target, in
//! proportion to the time since the last ACK rather than per packet acknowledged as in the paper
//! (a paced flow's cumulative ACK stalls behind holes, and when it sends more than the path
//! takes: the moments it must move most). Above the target, the rate is also held to the largest arrival rate
//! the receiver reported over the last two rounds over one less the share of the packets the link
//! lost in them (lost with no queue standing): sending more than the path drains only
//! lengthens the queue (Copa's window bounds this; UDT paces), and the link's random losses leave
//! it drained at the link's rate. The velocity `v` doubles each round once the flow has been on the
//! same side of its target for [`VELOCITY_ROUNDS`] rounds and returns to 1 when the side changes,
//! so a flow far from its target gets there in a logarithmic number of rounds. The side is judged
//! at each round's end on the mean queue of the last [`DIRECTION_ROUNDS`] rounds: flows that share
//! a queue all see its cycle (it empties every few rounds), and a side taken from the last half
//! round would turn every flow's velocity with it, so one far above its share would shed no faster
//! than the others gain. A step against the side the velocity was built for is of velocity 1. Below
//! the target the rate stays within [`PROBE_GAIN`] of the largest arrival rate reported over two
//! rounds (reports lag a round: a doubling velocity would otherwise carry the rate far past the
//! link), and a round in which that bound held the window back returns the velocity to 1: the path
//! did not keep up, and where its bottleneck is no queue (a CPU) a velocity would carry every flow
//! on it up in proportion to what it already gets. Above it, a round sheds at least [`SHED_GAIN`]
//! of the packets the flow keeps queued beyond its `1/δ` (FAST TCP's update): Copa's equal steps
//! move every flow alike and keep the differences between them, while this step takes more from the
//! flow that queues more. Flows of any RTT see the same `d_q` and so share one target: equal rates,
//! `n/δ` packets queued for `n` flows.
//!
//! Losses. A loss is the link's, repaired and not answered at any loss rate, unless the queue
//! has not been nearly empty (below) for a whole round (a stall of a host or a link lifts
//! every packet's delay for a moment, a full buffer stays full) and is longer than one packet
//! takes on the link (a base delay that rose by less, as when a link slows, reads as a queue
//! that never empties until the floor follows), and the report of the ACK period in which the
//! receiver found it missing shows the queue at the longest it reached before in
//! [`FLOOR_WINDOW`] (less the time between the flow's own packets around the loss: a queue
//! drains no faster than time passes, so the packet that revealed the loss read at least that
//! much less), and no longer (a buffer drops only when full, and a full buffer is a
//! ceiling the queue meets again and again; random losses meet a standing queue at every
//! level, the top of a swing that reaches further than ever included). One reported so means
//! the buffer overflowed: the flows' `n/δ` packets do not fit in it, or a competitor fills
//! it. A round with such a loss halves `1/δ` (to no less than a sixteenth of the paper's two
//! packets, [`MIN_INV_DELTA_SHARE`]), but not the round right after a halving, whose reports
//! are of packets sent before it; a round without raises it by one, up to the default mode's
//! outside the competitive mode (TCP's AIMD, on the packets the flow keeps queued).
//!
//! Competitive mode (paper §2.2). Copa flows alone empty the queue every few rounds (the
//! velocity overshoots the target both ways); a queue whose standing delay stayed above
//! [`NEARLY_EMPTY`] of its recent peak (the largest queueing delay of the last
//! [`PEAK_ROUNDS`] rounds), and above the paper's `1/δ` packets on the link (a queue no longer
//! than Copa keeps itself; queues come in whole packets, a long time on a slow link, where a
//! flow's own cycle never falls to a tenth of its peak), for [`COMPETITOR_ROUNDS`] rounds is
//! held by a flow that fills buffers. Then the flow competes as TCP (Reno) does, on its rate:
//! `1/δ` grows past the default mode's, each round without an overflow by as much as raises the
//! target rate `1/(δ d_q)` by a packet per round trip each round trip
//! (`Copa::competitive_step`), and a round with one halves it. The mode ends when the queue has been nearly empty for a
//! whole round (a buffer filler's own drain empties it only for a moment), and `1/δ` then
//! halves each round back to the default mode's. While the mode lasts the floor and the minimum
//! RTT are not renewed: their windows' minimum is then the competitor's standing queue.
//!
//! Pacing and window: the period is `1/λ` (stretched for UDT's packet pairs); the window is
//! twice what the rate keeps in flight over a round trip and an ACK period, plus the packets
//! held behind holes (sent more than that long ago and not acknowledged: UDT acknowledges
//! cumulatively, so a loss list would otherwise stall a lossy path).
//!
//! Start on a long path. The receiver's RTT reports begin at its guess of 100 ms: until one
//! is a measurement ([`FirstRtt`]: at least 7/8 of the flow's own timing of an acknowledged
//! packet, less an ACK period) none sets `R_0`, which is then that own timing, and none below
//! that bound ever does (a real receiver's reports can fall back to its guess after a first
//! one that reached it, and climb from there for a few ACK periods); and until then a timeout,
//! whose timer ran on the guess, is no loss of the path: it neither halves `W` nor ends slow
//! start.
//!
//! Invariants: the rate is finite, positive and at most [`MAX_RATE`]; the window finite and at
//! least [`MIN_WINDOW`]; until the first queue report every output is the model controller's,
//! and after the verdict that the peer is UDT4's it always is (a later report changes nothing);
//! after a queue report before that verdict, never again; `1/δ` at least
//! [`MIN_INV_DELTA_SHARE`] of the paper's and, outside the competitive mode, never growing past
//! the default mode's; nothing reads a clock or a global RNG; mode changes emit a
//! `tracing` debug event on target `udt::cc`.

mod mode;
mod window_min;

use std::collections::VecDeque;
use std::time::Duration;

use crate::first_rtt::FirstRtt;
use crate::model::{ModelCc, ModelConfig};
use crate::send_times::SendTimes;
use crate::{CcContext, CcFactory, CongestionControl, Policy};
use mode::ModeDetector;
use std::cmp::Reverse;
use udt_proto::seq::SeqNo;
use udt_proto::time::Instant;
use window_min::{WindowMax, WindowMin};

/// Rounds of movement in one direction after which the velocity doubles every round (paper §2.1).
pub const VELOCITY_ROUNDS: u32 = 3;
/// Rounds over which the mean queue sets the direction the velocity builds in (the four RTTs of
/// the paper's windows, §2.2): a flow's own direction outlasts the queue's cycle.
pub const DIRECTION_ROUNDS: u32 = 4;
/// A standing queue at most this fraction of the recent peak is "nearly empty" (paper §2.2).
pub const NEARLY_EMPTY: f64 = 0.1;
/// Rounds the recent peak of the queueing delay spans (paper §2.2: four RTTs).
pub const PEAK_ROUNDS: u32 = 4;
/// Rounds without a nearly empty queue that reveal a buffer-filling competitor (paper §2.2: five).
pub const COMPETITOR_ROUNDS: u32 = 5;
/// Below the target, the rate stays within this factor of the largest arrival rate of the last
/// two rounds (BBR's probing gain): reports lag a round, and a doubling velocity would carry
/// the rate well past the link before the queue it builds is reported.
pub const PROBE_GAIN: f64 = 1.25;
/// Above the target, a round sheds at least this fraction of the packets the flow keeps queued
/// beyond its `1/δ` (FAST TCP's update, whose `γ` is 0.5, taken at half: the queue reports lag
/// a round, and the packets already shed in it are not yet seen).
pub const SHED_GAIN: f64 = 0.25;
/// Losses with a standing queue may halve `1/δ` down to this fraction of the paper's two
/// packets (four halvings below them): `n` flows' shares, `n/δ` packets, overflow a buffer
/// smaller than that; at a sixteenth, `n` flows fit in `n/8` packets.
pub const MIN_INV_DELTA_SHARE: f64 = 1.0 / 16.0;
/// The least queue each flow keeps in the default mode, as a time on the bottleneck: `1/δ` is
/// at least this much of the receiver's packet-pair capacity, and never under the paper's two
/// packets (but after an overflow, [`OVERFLOW_BUFFER_SHARE`]). Copa's `δ = 0.5` keeps two
/// packets, a millisecond or two on the 10-100 Mb/s paths it was designed on, and 1-20 us at
/// 1-10 Gb/s: there the equilibrium queue, `n/δ` packets, drowns in the queue's own swings (it
/// empties and overshoots by milliseconds), and a flow far above its share sees its target only
/// in the rare moments the queue stands between its level and the others'. The receiver's
/// timing noise (0.1 ms: its scheduling and the path's jitter) is the least queue a real
/// receiver can tell from none; two packets are more than that below 240 Mb/s, where the
/// paper's share stands. Where `n` shares do not fit in the buffer, the buffer overflows and the
/// share is at most [`OVERFLOW_BUFFER_SHARE`] of it for [`FLOOR_WINDOW`].
pub const QUEUE_SHARE: Duration = Duration::from_micros(100);
/// For [`FLOOR_WINDOW`] after the buffer overflowed, a flow's default share is at most this
/// fraction of what the buffer holds (the longest queue of that window on the packet-pair
/// capacity), and never under the least share the overflows' halvings reach
/// ([`MIN_INV_DELTA_SHARE`] of the paper's two packets): `n` flows keep `n/64` of a full buffer,
/// so up to 32 leave a buffer filler beside them (TCP's sawtooth) at least half of a buffer of
/// 8 packets or more. Two packets each would not: five flows fill a buffer of ten, overflow it
/// again each time their shares regrow, and a TCP flow beside them finds it full at each of its
/// bursts. Drop-tail losses fall on some flows and miss others: where [`QUEUE_SHARE`] fits this
/// bound, the flows that met the overflow keep the share of those that did not, and their
/// targets, `1/(δ d_q)` on the one queue, stay together (a share of two packets after each
/// overflow met would part them by up to the ratio of the shares, fifty at 10 Gb/s).
pub const OVERFLOW_BUFFER_SHARE: f64 = 1.0 / 64.0;
/// How long the floor of the queueing delay is kept (the paper's window of the minimum RTT, 10 s).
pub const FLOOR_WINDOW: Duration = Duration::from_secs(10);
/// The queueing delay's resolution, seconds: a reading this far above the floor may be no queue.
/// A reading is `arrival - stamp` in whole microseconds: the sender's stamp truncated (up to
/// 1 us), the arrival truncated (1 us) after the kernel's receive stamp was carried over to the
/// runtime's clock through a clock pair read within 2 us (up to 1 us either way, 2 us of spread).
/// Queue-free readings thus spread over 4 us, and the floor, their least, is at the bottom of
/// that spread. Above half a million packets a second (6 Gb/s) `1/δ` packets queue for less than
/// 4 us: read without this, the spread alone would set the target, from twice the rate at a
/// reading of 1 us to half of it at 4, and hold a flow whose bottleneck is a host's CPU (which
/// works in batches, so a shorter queue idles it) under what the host delivers.
pub const QUEUE_RESOLUTION: f64 = 4e-6;
/// UDT sends every 16th packet right after the one before (the packet pair), so 16 packets
/// take 15 periods.
const PAIR_FACTOR: f64 = 16.0 / 15.0;
/// The smallest window, packets: a packet pair and its ACK clock.
pub const MIN_WINDOW: f64 = 4.0;
/// The fastest pacing, packets per second (ten per microsecond: 116 Gb/s of full-size packets,
/// past the fastest paths the tool is for; UDT4's floor of one per microsecond would hold a
/// flow under 12 Gb/s).
pub const MAX_RATE: f64 = 1e7;

/// Copa's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CopaConfig {
    /// `δ` of the default mode: the flow keeps `1/δ` packets queued (paper: 0.5).
    pub delta: f64,
    /// Packets of the first round.
    pub initial_window: f64,
}

impl Default for CopaConfig {
    fn default() -> Self {
        CopaConfig { delta: 0.5, initial_window: 16.0 }
    }
}

/// The direction the rate moved over the last round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    Up,
    Down,
}

/// The Copa controller (see the module documentation).
#[derive(Clone, Debug)]
pub struct Copa {
    config: CopaConfig,
    /// Packets per second: `W` over the round trip the flow sees now, its base plus the
    /// standing queue.
    rate: f64,
    /// `W`, packets per round trip (the controller's state; Copa's congestion window).
    w: f64,
    /// The smallest smoothed RTT of the last [`FLOOR_WINDOW`] (the round trip without a queue).
    base_rtt: WindowMin,
    /// The sender's own round trip until the receiver's RTT reports are measurements.
    first_rtt: FirstRtt,
    slow_start: bool,
    velocity: f64,
    direction: Option<Direction>,
    same_direction_rounds: u32,
    round_start: Instant,
    /// The largest arrival rate the receiver reported in this round and the last, packets/s.
    round_delivered: f64,
    last_delivered: f64,
    /// When the rate was last moved.
    updated_at: Instant,
    /// A loss was reported in this round while the queue stood (the buffer overflowed).
    round_congested: bool,
    /// The probe's bound held the window back in this round: the path did not keep up.
    probe_capped: bool,
    /// Packets sent, and packets the link lost (reported lost with no queue standing), in
    /// this round and the last.
    sent: [f64; 2],
    link_lost: [f64; 2],
    /// The last round halved `1/δ`.
    halved_last_round: bool,
    /// `1/δ` now: packets the flow keeps queued (AIMD on congestive losses).
    inv_delta: f64,
    /// The receiver's packet-pair capacity, packets/s (0 until one is plausible).
    capacity: f64,
    /// When a loss was last judged the buffer's overflow.
    overflowed_at: Option<Instant>,
    /// The queue at that overflow, seconds above the floor: what the buffer holds, kept for
    /// [`FLOOR_WINDOW`] (the windowed largest can drop its sub-window before that).
    overflow_queue: f64,
    mode: ModeDetector,
    /// The standing queueing delay, seconds: the mean of the standing queues of the reports
    /// that cover the last half round.
    queue: Option<f64>,
    /// The reports that cover the last half round: when each came, and the standing queue it
    /// reported.
    standing: VecDeque<(Instant, f64)>,
    /// The mean standing queue of the last [`DIRECTION_ROUNDS`] rounds, seconds.
    long_queue: f64,
    /// The smallest standing queue reported lately (the measure's floor).
    floor: WindowMin,
    /// The largest queue reported over [`FLOOR_WINDOW`], above the floor: the buffer's size,
    /// once the queue met it again.
    largest: WindowMax,
    /// Packets reported lost with the queue standing, to be judged on the next report: the
    /// buffer's overflow if its queue then reached the largest before it again, the link's
    /// otherwise.
    pending_lost: f64,
    /// The longest the flow's own packets were apart around a pending loss, seconds: from the
    /// last packet sent before a lost run to the first after it, the one that revealed it.
    pending_gap: f64,
    /// A queue report has arrived (the first is no floor sample).
    reported: bool,
    last_ack: SeqNo,
    sent_at: SendTimes,
    period: Duration,
    window: f64,
    /// The model controller: it drives the flow until the receiver's first queue report, and
    /// for good once the receiver turned out to be UDT4's.
    model: Option<Box<ModelCc>>,
    /// The receiver is known: ours (it reported a queue; the model is gone) or UDT4's.
    decided: bool,
}

impl Copa {
    /// A controller with `config`.
    pub fn new(config: CopaConfig) -> Self {
        let inv_delta = 1.0 / config.delta;
        Copa {
            config,
            rate: 1.0,
            w: config.initial_window,
            base_rtt: WindowMin::default(),
            first_rtt: FirstRtt::default(),
            slow_start: true,
            velocity: 1.0,
            direction: None,
            same_direction_rounds: 0,
            round_start: Instant::ZERO,
            round_delivered: 0.0,
            last_delivered: 0.0,
            updated_at: Instant::ZERO,
            round_congested: false,
            probe_capped: false,
            sent: [0.0; 2],
            link_lost: [0.0; 2],
            halved_last_round: false,
            inv_delta,
            capacity: 0.0,
            overflowed_at: None,
            overflow_queue: 0.0,
            mode: ModeDetector::default(),
            queue: None,
            standing: VecDeque::new(),
            long_queue: 0.0,
            model: None,
            decided: false,
            floor: WindowMin::default(),
            largest: WindowMax::default(),
            pending_lost: 0.0,
            pending_gap: 0.0,
            reported: false,
            last_ack: SeqNo::new(0),
            sent_at: SendTimes::default(),
            period: Duration::from_secs(1),
            window: MIN_WINDOW,
        }
    }

    /// Whether the model controller took over (the receiver is UDT4's).
    pub fn fell_back(&self) -> bool {
        self.decided && self.model.is_some()
    }

    /// Whether the competitive mode is on.
    pub fn competitive(&self) -> bool {
        self.mode.competitive()
    }

    /// Whether the flow is still in slow start.
    pub fn in_slow_start(&self) -> bool {
        self.slow_start
    }

    /// The pacing rate, packets/s.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The velocity.
    pub fn velocity(&self) -> f64 {
        self.velocity
    }

    /// `1/δ` now.
    pub fn inverse_delta(&self) -> f64 {
        self.inv_delta
    }

    /// The default mode's `1/δ` at `now`: [`QUEUE_SHARE`] of the bottleneck's capacity, at least
    /// the paper's `1/δ`; the paper's alone until the receiver reported a plausible capacity
    /// (below [`MAX_RATE`]: packet pairs inside one receive batch read as unlimited); for
    /// [`FLOOR_WINDOW`] after a buffer overflowed (it holds less than the flows' shares), at most
    /// [`OVERFLOW_BUFFER_SHARE`] of the longest queue of that window (or at the overflow, if
    /// longer) on that capacity, down to the least share the overflows' halvings reach
    /// ([`MIN_INV_DELTA_SHARE`] of the paper's).
    fn default_inv_delta(&self, now: Instant) -> f64 {
        let paper = 1.0 / self.config.delta;
        let default = paper.max(self.capacity * QUEUE_SHARE.as_secs_f64());
        if self.capacity > 0.0
            && self.overflowed_at.is_some_and(|at| now.saturating_since(at) <= FLOOR_WINDOW)
        {
            let largest = self.largest.get().map_or(0.0, |Reverse(d)| d.as_secs_f64());
            let buffer = largest.max(self.overflow_queue) * self.capacity;
            return default.min(buffer * OVERFLOW_BUFFER_SHARE).max(MIN_INV_DELTA_SHARE * paper);
        }
        default
    }

    fn round(ctx: &CcContext<'_>) -> Duration {
        ctx.rtt.max(ctx.syn_interval * 2)
    }

    /// The receiver's packet-pair capacity: the first plausible one sets `1/δ` to the default
    /// mode's (the flow starts with the paper's two packets).
    fn handle_capacity(&mut self, ctx: &CcContext<'_>) {
        let capacity = f64::from(ctx.bandwidth);
        if capacity <= 0.0 || capacity >= MAX_RATE {
            return;
        }
        let first = self.capacity == 0.0;
        self.capacity = capacity;
        if first && !self.mode.competitive() {
            self.inv_delta = self.inv_delta.max(self.default_inv_delta(ctx.now));
        }
    }

    /// The ACK's queue report: the receiver's one-way standing queue and peak.
    fn handle_queue_report(&mut self, ctx: &CcContext<'_>, round: Duration) {
        let Some(report) = ctx.ack else { return };
        let sample = report.queue.map(|q| (q.min.as_secs_f64(), q.max.as_secs_f64()));
        let Some((standing, peak)) = sample else { return };
        // Less the floor: the smallest standing queue of the last FLOOR_WINDOW (Copa's
        // RTTmin window). A real receiver's measure never reaches zero (its scheduling and the
        // path's jitter add 0.1 ms or so to every packet), and that floor is no queue: a flow
        // whose target it set would stop below the link at 2 packets per 0.1 ms.
        // While a competitor holds the queue, its standing queue is no floor: the window's
        // minimum is then kept until the competitor leaves.
        // The first report is no sample of it: the receiver's base is the delay of the packets
        // that report describes, so it reads zero whatever lifts every later packet's delay
        // (0.22-0.26 ms on the emulator, once the flow is paced), and a floor of zero would
        // leave that lift as a queue that never empties, a competitor's, for the whole window.
        if std::mem::replace(&mut self.reported, true) {
            if !self.mode.competitive() {
                self.floor.expire(ctx.now, FLOOR_WINDOW);
            }
            self.floor.update(ctx.now, Duration::from_secs_f64(standing), FLOOR_WINDOW);
        }
        let floor = self.floor.get().map_or(0.0, |f| f.as_secs_f64());
        let above = |q: f64| (q - floor - QUEUE_RESOLUTION).max(0.0);
        let (standing, peak) = (above(standing), above(peak));
        self.handle_pending_losses(ctx, peak);
        // Copa's standing RTT spans half a round (paper §2.1): here the mean of the reports
        // that cover it (each covers the ACK period before it, so the last alone where half a
        // round is one period). Flows of every RTT on one queue share the mean; the least
        // over a long round is the trough of the short flows' cycles, and one report alone a
        // random phase of them.
        let horizon = (round / 2).saturating_sub(ctx.syn_interval);
        let long = round * DIRECTION_ROUNDS;
        while self.standing.front().is_some_and(|&(t, _)| ctx.now.saturating_since(t) > long) {
            self.standing.pop_front();
        }
        self.standing.push_back((ctx.now, standing));
        let mean = |from: Duration| {
            let recent = self.standing.iter().filter(|&&(t, _)| ctx.now.saturating_since(t) <= from);
            let (sum, n) = recent.fold((0.0, 0usize), |(s, n), &(_, q)| (s + q, n + 1));
            sum / n.max(1) as f64
        };
        self.queue = Some(mean(horizon));
        self.long_queue = mean(long);
        let was = self.mode.competitive();
        // The paper's 1/δ packets on the link (its packet-pair capacity, or the flow's own rate
        // if more or none): a queue no longer than a Copa flow keeps itself.
        let link_rate = f64::from(ctx.bandwidth).max(self.rate).max(1.0);
        let own_share = 1.0 / (self.config.delta * link_rate);
        self.mode.handle_sample(ctx.now, standing, peak, round, own_share);
        if self.mode.competitive() != was {
            tracing::debug!(target: "udt::cc", competitive = !was, queue_ms = standing * 1e3, "copa mode");
        }
    }

    /// Judge the losses reported since the last report by this report's `peak` queue (above
    /// the floor, seconds; the report covers the ACK period in which the receiver found them
    /// missing). A buffer overflows only when full: its queue is then the longest it can be, a
    /// ceiling it met before in the window (the largest of the window before this report,
    /// within two packets' time on the link and the measure's resolution either way, and the
    /// time between the flow's own packets around the loss below it: a queue drains no faster
    /// than time passes, so the packet that revealed the loss, sent that long after the last
    /// before it, found at least the full buffer less that time; a slow flow beside others that
    /// keep a buffer full reads it up to its own packet spacing short of its ceiling). A loss
    /// while the queue stood shorter is the link's, though it came with a queue standing: on a
    /// lossy link with a standing queue (flows that share it, or a slower link the floor has not
    /// followed), random losses meet the queue at every level; and so is one at a queue longer
    /// than any before, the top of a swing that reached further than ever (a buffer's first
    /// overflow is judged the link's: the next meets the same ceiling).
    fn handle_pending_losses(&mut self, ctx: &CcContext<'_>, peak: f64) {
        self.largest.expire(ctx.now, FLOOR_WINDOW);
        let before = self.largest.get().map(|Reverse(d)| d.as_secs_f64());
        self.largest.update(ctx.now, Reverse(Duration::from_secs_f64(peak.max(0.0))), FLOOR_WINDOW);
        let pending = std::mem::take(&mut self.pending_lost);
        let gap = std::mem::take(&mut self.pending_gap);
        if pending <= 0.0 {
            return;
        }
        let link_rate = f64::from(ctx.bandwidth).max(self.rate).max(1.0);
        let tolerance = QUEUE_RESOLUTION + 2.0 / link_rate;
        if before.is_some_and(|b| peak - b <= tolerance && b - peak <= tolerance + gap) {
            self.round_congested = true;
            self.overflowed_at = Some(ctx.now);
            self.overflow_queue = peak.max(before.unwrap_or(0.0));
        } else {
            self.link_lost[1] += pending;
        }
    }

    /// Packets newly acknowledged by `ack` (its own timing of the flow, for Copa now or once it
    /// takes over), or none once the model controller keeps the flow for good.
    fn handle_acknowledged(&mut self, ctx: &CcContext<'_>, ack: SeqNo) -> f64 {
        if self.decided && self.model.is_some() || !ack.is_after(self.last_ack) {
            return 0.0;
        }
        let acked = f64::from(ack.diff(self.last_ack) as u32);
        self.last_ack = ack;
        self.sent_at.handle_ack(ack);
        self.first_rtt.handle_ack(ctx.now);
        self.first_rtt.handle_checkpoint(ctx.now, ack, &self.sent_at);
        acked
    }

    /// The round trip the flow sees now: its base (the smallest smoothed RTT lately, or two
    /// ACK periods if longer, as the round) plus the standing queue.
    fn round_trip_now(&self, ctx: &CcContext<'_>) -> f64 {
        let measured = self.base_rtt.get().or(self.first_rtt.own());
        let base = measured.unwrap_or(ctx.rtt).max(ctx.syn_interval * 2);
        base.as_secs_f64() + self.queue.unwrap_or(0.0)
    }

    /// Move `W` toward the target: in slow start by the packets delivered since the last
    /// report ([`Copa::slow_start_step`]), afterwards by `v / δ` packets per round, in
    /// proportion to the `elapsed` time (the flow's own packet clock stalls behind holes and
    /// when it sends more than the path takes, the cases where it must move most). The rate is `W` over the round trip seen now: as a
    /// window does under its ACK clock, a queue the flow builds slows it at once, so the queue
    /// settles at what `W` holds beyond the path's pipe within a round trip instead of growing
    /// for as long as the rate is above the link (paper §2.1: Copa's window, paced at
    /// `cwnd / RTTstanding`).
    fn approach_target(&mut self, ctx: &CcContext<'_>, acked: f64, elapsed: Duration, round: Duration) {
        let Some(queue) = self.queue else { return };
        let r = round.as_secs_f64();
        let rtt_now = self.round_trip_now(ctx);
        let rate_now = self.w / rtt_now;
        let target = if queue > 0.0 { self.inv_delta / queue } else { f64::INFINITY };
        let mut w = self.w;
        if self.slow_start {
            // The bottleneck's capacity by packet pairs bounds what the flow can get: a rate
            // past it only queues, by as much again each round until the queue is reported.
            // A buffer that overflowed is full: a doubling only adds to its drops (TCP's slow
            // start ends at a loss; the link's losses, with no queue standing, do not end it).
            let ceiling = if self.capacity > 0.0 { self.capacity * rtt_now } else { f64::INFINITY };
            if rate_now <= target && w < ceiling && !self.round_congested {
                let doubling = self.w * ((elapsed.as_secs_f64() / r).exp2() - 1.0);
                w += Self::slow_start_step(ctx, acked, elapsed, doubling);
                w = w.min(ceiling.max(self.w));
            } else {
                self.slow_start = false;
                tracing::debug!(target: "udt::cc", rate = rate_now, queue_ms = queue * 1e3, capacity = self.capacity, "copa slow start ends");
            }
        }
        if !self.slow_start {
            let share = (elapsed.as_secs_f64() / r).min(1.0);
            // The velocity carries the rate only the way it was built in: a step against it
            // (the queue's own cycle, which every flow on it sees) is Copa's plain one.
            let wanted = if rate_now <= target { Direction::Up } else { Direction::Down };
            let v = if self.direction.is_some_and(|d| d != wanted) { 1.0 } else { self.velocity };
            let step = v * self.inv_delta * share;
            if rate_now <= target {
                w += step;
                // Reports lag a round: a rate further ahead of what the path delivered than
                // BBR's probe is not known to fit, and a velocity would carry it far past it.
                let delivered = self.round_delivered.max(self.last_delivered);
                if delivered > 0.0 {
                    let cap = (PROBE_GAIN * delivered * rtt_now).max(self.w);
                    self.probe_capped |= w > cap;
                    w = w.min(cap);
                }
            } else {
                // At least a share of the packets this flow keeps queued beyond its own
                // (FAST's step): one that sends more sheds more, so flows that start apart
                // converge; Copa's equal steps alone keep their difference.
                let excess = rate_now * queue - self.inv_delta;
                w -= step.max(SHED_GAIN * excess * share);
                // Above the target, sending more than the path drains only adds to the queue:
                // what arrived, and what the link lost on the way (its losses leave the queue
                // drained at the link's rate).
                if self.round_delivered > 0.0 {
                    w = w.min(self.round_delivered * rtt_now / (1.0 - self.link_loss_rate()));
                }
            }
        }
        self.w = w.max(MIN_WINDOW);
        self.rate = (self.w / rtt_now).min(MAX_RATE);
    }

    /// Slow start's growth over `elapsed`: the packets the receiver got in it (its reported
    /// arrival rate over the time), each delivered packet adding one to `W` as in TCP's slow
    /// start; the cumulative ACK (`acked`) only where no rate was reported. A cumulative ACK
    /// stalls behind each hole until its retransmission arrives, a round later: on a lossy path
    /// nearly every round has one, and growing by it halves slow start's pace there. At most
    /// `bound` (a doubling per round over `elapsed`) where the ACK gave less: an arrival rate
    /// measured over a burst is no delivery rate.
    fn slow_start_step(ctx: &CcContext<'_>, acked: f64, elapsed: Duration, bound: f64) -> f64 {
        let arrivals = ctx.ack.map_or(0.0, |a| f64::from(a.recv_rate));
        if arrivals <= 0.0 {
            return acked;
        }
        let delivered = arrivals * elapsed.as_secs_f64();
        if delivered.is_finite() {
            delivered.min(bound.max(acked))
        } else {
            acked
        }
    }

    /// The share of the packets sent over this round and the last that the link lost (with the
    /// queue not standing), at most a half.
    fn link_loss_rate(&self) -> f64 {
        let sent = self.sent[0] + self.sent[1];
        if sent <= 0.0 {
            return 0.0;
        }
        ((self.link_lost[0] + self.link_lost[1]) / sent).clamp(0.0, 0.5)
    }

    /// The competitive mode's growth of `1/δ` in a round of `round` on a queue of `queue`
    /// seconds and a round trip of `rtt_now` seconds: as TCP's rate grows, one packet per round
    /// trip (`1/rtt_now^2` packets/s each second). The rate `1/δ / d_q` grows by `Δ(1/δ) / d_q`,
    /// so `Δ(1/δ) = d_q round / rtt_now^2`: a packet per round where the competitor's queue is as
    /// long as the round trip, a small share of one where the buffer is a small part of the path
    /// (where a packet a round would outgrow TCP as many times as the round trip is longer than
    /// the queue).
    fn competitive_step(queue: f64, round: Duration, rtt_now: f64) -> f64 {
        let step = queue * round.as_secs_f64() / (rtt_now * rtt_now);
        if step.is_finite() {
            step.max(0.0)
        } else {
            0.0
        }
    }

    /// At the end of a round: the velocity from the direction of the target over the last
    /// [`DIRECTION_ROUNDS`] rounds, and `1/δ`'s AIMD step.
    fn handle_round(&mut self, now: Instant, round: Duration, rtt_now: f64) {
        if now < self.round_start + round {
            return;
        }
        if !self.slow_start {
            // The target of the mean queue over several rounds, not of the last half round's:
            // flows that share a queue all see its cycle (it empties every few rounds), and a
            // direction taken from it would turn every flow's velocity with it, so a flow far
            // above its share would shed no faster than the others gain.
            let target = if self.long_queue > 0.0 { self.inv_delta / self.long_queue } else { f64::INFINITY };
            let direction = if self.rate <= target { Direction::Up } else { Direction::Down };
            // A round in which the probe's bound held the window back: the path did not keep
            // up with the flow (a bottleneck that is no queue, as a CPU, shows no delay), and
            // a velocity would only carry every flow on it up in proportion to what it already
            // gets; the flow grows by plain steps until the path follows.
            if std::mem::take(&mut self.probe_capped) {
                self.direction = Some(direction);
                self.same_direction_rounds = 0;
                self.velocity = 1.0;
            } else if self.direction == Some(direction) {
                self.same_direction_rounds += 1;
                if self.same_direction_rounds >= VELOCITY_ROUNDS {
                    self.velocity = (self.velocity * 2.0).min(self.w.max(1.0));
                }
            } else {
                self.direction = Some(direction);
                self.same_direction_rounds = 0;
                self.velocity = 1.0;
            }
        }
        let default = self.default_inv_delta(now);
        let congested = std::mem::take(&mut self.round_congested);
        self.sent = [0.0, self.sent[1]];
        self.sent.swap(0, 1);
        self.link_lost = [0.0, self.link_lost[1]];
        self.link_lost.swap(0, 1);
        let halve = congested && !self.halved_last_round;
        self.inv_delta = if halve {
            (self.inv_delta / 2.0).max(MIN_INV_DELTA_SHARE / self.config.delta)
        } else if congested {
            // The round after a halving reports packets sent before it took effect.
            self.inv_delta
        } else if self.mode.competitive() {
            self.inv_delta + Self::competitive_step(self.long_queue, round, rtt_now)
        } else if self.inv_delta > default {
            // The competitive mode's share halves each round the competitor seems gone: a
            // buffer filler's own drain (CUBIC's after a loss) empties the queue for a round
            // or two without leaving, and a share reset at once would be lost to it. So does a
            // share above the default's bound after an overflow (a 64th of the buffer).
            (self.inv_delta / 2.0).max(default)
        } else {
            (self.inv_delta + 1.0).min(default)
        };
        tracing::trace!(target: "udt::cc", rate = self.rate, w = self.w, capacity = self.capacity, velocity = self.velocity, inv_delta = self.inv_delta, queue = ?self.queue, long_queue = self.long_queue, "copa round");
        self.halved_last_round = halve;
        self.round_delivered = self.last_delivered;
        self.last_delivered = 0.0;
        self.round_start = now;
    }

    /// The period from the rate; the window twice the rate's flight plus the packets held
    /// behind holes ([`SendTimes::held_behind_holes`]).
    fn update_outputs(&mut self, ctx: &CcContext<'_>) {
        let rate = if self.rate.is_finite() && self.rate > 0.0 { self.rate.min(MAX_RATE) } else { 1.0 };
        self.period = Duration::from_secs_f64(PAIR_FACTOR / rate);
        let in_flight = rate * (ctx.rtt + ctx.syn_interval).as_secs_f64();
        let held = self.sent_at.held_behind_holes(ctx.now, ctx.rtt, ctx.syn_interval, self.last_ack);
        let window = 2.0 * in_flight + held;
        self.window = if window.is_finite() { window.max(MIN_WINDOW) } else { MIN_WINDOW };
    }
}

impl CongestionControl for Copa {
    fn name(&self) -> &'static str {
        "copa"
    }

    fn init(&mut self, ctx: &mut CcContext<'_>) {
        *self = Copa::new(self.config);
        let round = Self::round(ctx);
        self.rate = self.w / round.as_secs_f64();
        self.round_start = ctx.now;
        self.updated_at = ctx.now;
        self.last_ack = ctx.last_ack;
        self.update_outputs(ctx);
        let mut model = ModelCc::new(ModelConfig::default());
        model.init(ctx);
        self.model = Some(Box::new(model));
    }

    fn on_ack(&mut self, ctx: &mut CcContext<'_>, ack: SeqNo) {
        if !self.decided {
            if ctx.ack.is_some_and(|a| a.queue.is_some()) {
                // The receiver is ours: Copa takes the flow, still in its first round.
                self.decided = true;
                self.model = None;
            } else if ctx.peer_udt4 {
                self.decided = true;
                tracing::debug!(target: "udt::cc", "copa: the receiver reports no queue (UDT4); the model controller keeps the flow");
            }
        }
        let acked = self.handle_acknowledged(ctx, ack);
        if let Some(model) = &mut self.model {
            return model.on_ack(ctx, ack);
        }
        let round = Self::round(ctx);
        self.handle_capacity(ctx);
        self.handle_queue_report(ctx, round);
        if let Some(rate) = ctx.ack.map(|a| f64::from(a.recv_rate)).filter(|&r| r > 0.0) {
            self.round_delivered = self.round_delivered.max(rate);
            self.last_delivered = self.last_delivered.max(rate);
        }
        // The round trip without a queue: like the floor, not renewed while a competitor holds
        // the queue.
        // Nor a report below the flow's own timing, at any time: a receiver's first reports
        // climb from its guess after one that reached it.
        let trusted = self.first_rtt.trust(ctx.rtt, ctx.syn_interval);
        if trusted && self.first_rtt.plausible(ctx.rtt, ctx.syn_interval) {
            if !self.mode.competitive() {
                self.base_rtt.expire(ctx.now, FLOOR_WINDOW);
            }
            self.base_rtt.update(ctx.now, ctx.rtt, FLOOR_WINDOW);
        }
        self.approach_target(ctx, acked, ctx.now.saturating_since(self.updated_at), round);
        self.updated_at = ctx.now;
        let rtt_now = self.round_trip_now(ctx);
        self.handle_round(ctx.now, round, rtt_now);
        self.update_outputs(ctx);
    }

    fn on_loss(&mut self, ctx: &mut CcContext<'_>, lost: &[(SeqNo, SeqNo)]) {
        if let Some(model) = &mut self.model {
            return model.on_loss(ctx, lost);
        }
        // Unless the queue has stood for a whole round, longer than one packet takes on the
        // link (the receiver's packet-pair capacity, or the flow's own rate if more or none),
        // the link lost it: repaired, not answered. A shorter standing queue is no buffer that
        // overflows: a rise of the path's base delay that the floor has not yet followed reads
        // so (a link that slows serialises every packet longer, by less than a packet's time).
        let link_rate = f64::from(ctx.bandwidth).max(self.rate);
        let holds_a_packet = self.queue.is_some_and(|q| q * link_rate >= 1.0);
        let n: u32 = lost.iter().map(|&(a, b)| b.diff(a) as u32 + 1).sum();
        if !self.mode.standing() || !holds_a_packet {
            self.link_lost[1] += f64::from(n);
        } else {
            // Judged on the next report: whether the buffer was full.
            self.pending_lost += f64::from(n);
            let longest_run =
                lost.iter().map(|&(a, b)| (b.diff(a) as u32).saturating_add(1)).max().unwrap_or(1);
            let gap = (f64::from(longest_run) + 1.0) * self.period.as_secs_f64();
            self.pending_gap = self.pending_gap.max(gap);
        }
        self.update_outputs(ctx);
    }

    fn on_timeout(&mut self, ctx: &mut CcContext<'_>) {
        if let Some(model) = &mut self.model {
            return model.on_timeout(ctx);
        }
        // Until a report and a measured round trip came, the timer ran on a guess of the round
        // trip (the receiver's start value, 100 ms): a longer path times out with nothing lost
        // (on a 700 ms path the first ACK comes after the first timeout), and slow start, which
        // alone fills a long path in a few rounds, would end before it began.
        if !self.reported || !self.first_rtt.trusted() {
            self.update_outputs(ctx);
            return;
        }
        // Nothing came back for a timeout: whatever the queue said, the path is not delivering.
        self.w = (self.w / 2.0).max(MIN_WINDOW);
        self.rate = (self.w / self.round_trip_now(ctx)).min(MAX_RATE);
        self.velocity = 1.0;
        self.direction = None;
        self.slow_start = false;
        self.update_outputs(ctx);
    }

    fn on_packet_sent(&mut self, ctx: &mut CcContext<'_>, seq: SeqNo, retransmission: bool) {
        if let Some(model) = &mut self.model {
            model.on_packet_sent(ctx, seq, retransmission);
            if self.decided {
                return;
            }
        }
        // Until the receiver is known, Copa times the packets too: they are its flight once it
        // takes over.
        self.sent_at.handle_sent(ctx.now, seq, retransmission);
        self.first_rtt.handle_sent(ctx.now);
        self.sent[1] += 1.0;
    }

    fn send_period(&self) -> Duration {
        self.model.as_ref().map_or(self.period, |model| model.send_period())
    }

    fn congestion_window(&self) -> f64 {
        self.model.as_ref().map_or(self.window, |model| model.congestion_window())
    }
}

/// Factory for [`Copa`].
#[derive(Clone, Copy, Debug, Default)]
pub struct CopaFactory(pub CopaConfig);

impl CcFactory for CopaFactory {
    fn build(&self) -> Box<dyn CongestionControl> {
        Box::new(Copa::new(self.0))
    }

    fn policy(&self) -> Policy {
        // Rate-based; learns from every report and reads the receiver's one-way queueing delay.
        Policy::PROGRESS_REPORTS.with_queue_delay_reports(true)
    }
}

#[cfg(test)]
mod tests;
