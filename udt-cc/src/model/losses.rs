//! The model controller's answer to loss: which losses are the queue's (congestion) and which
//! the link's (`queue.rs`), the decrease, the loss bound's additive increase, and the mode in
//! which the flow competes with another that fills the queue. The state machine and the
//! estimators are in `mod.rs`.
//!
//! Invariants: a decrease answers the losses of packets sent before it once; the bound never
//! falls below four packets per round trip; the bandwidth sample is corrected only for losses
//! with an empty queue, and never above the packet-pair capacity.

use super::compete::Epoch;
use super::{ModelCc, Phase, State, LINK_LOSS_GAIN, MAX_LINK_LOSS, MIN_WINDOW, RATE_REPORT_ACKS};

/// Packets of queue that always stand out from jitter in a standing (per-period minimum)
/// sample: the floor never asks for more.
const FLOOR_PACKETS: f64 = 10.0;
use crate::CcContext;
use std::time::Duration;
use udt_proto::seq::SeqNo;

impl ModelCc {
    /// A flow that fills the queue shares the bottleneck: the competitive mode's epoch runs
    /// ([`compete`](super::compete)), from a queue standing at the end of a cruise or through a
    /// decrease, until the competitor leaves ([`Self::follow_epoch`]).
    pub(super) fn competing(&self) -> bool {
        self.epoch.is_some()
    }

    /// At the end of a cruise the queue stands though the flow paced at its estimate: another
    /// flow keeps it, the link is full, and a probe would only overflow it. The flow competes:
    /// no probe, and without a decrease yet the epoch's curve starts from the current rate.
    pub(super) fn handle_held_queue(&mut self, ctx: &CcContext<'_>) {
        if self.epoch.is_none() {
            let from = if self.bw_cap.is_finite() { self.bw_cap } else { self.bw.get() };
            self.epoch = Some(Epoch::at(ctx.now, from));
            self.bw_cap = from;
        }
        tracing::debug!(target: "udt::cc", bound = self.bw_cap, "udt model: queue held by another flow");
    }

    /// While competing, the bound follows the epoch's curve; once it regains the estimate the
    /// flow had with no queue standing, or no queue has stood for the epoch's regrowth time and
    /// two round trips (the competitor left), the mode ends. With the queue
    /// standing the curve goes on beyond the estimate, into the competitor's queue, until its
    /// overflow brings the next decrease.
    pub(super) fn follow_epoch(&mut self, ctx: &CcContext<'_>) {
        let Some(epoch) = self.epoch else { return };
        if self.state != State::ProbeBw(Phase::Cruise) {
            return;
        }
        // The round trip of the flow's control loop as it is now: the RTT with the queue in it
        // (a TCP flow's window turns into a rate over it) and one ACK period (the reports come
        // no faster).
        let rtt = self.last_rtt.unwrap_or_default().max(self.rtt_estimate()) + ctx.syn_interval;
        let bound = epoch.rate_at(ctx.now, rtt).max(self.min_rate(ctx));
        let stands = self.queue_stands();
        if stands {
            self.queue_stood_at = ctx.now;
        }
        let quiet = ctx.now >= self.queue_stood_at.max(epoch.start()) + epoch.regrowth(rtt) + rtt * 2;
        if (bound >= self.bw.get() || quiet) && !stands {
            // Probes go on from the bound: the estimate may be a rate from before the
            // competitor came, which the path may no longer have.
            self.epoch = None;
            // The room the competitor left is capacity that came, not the flow's own release:
            // probes that find it regrow by their gain ([`Self::regrowing`]).
            self.last_rate_max = None;
            self.bw_cap = if bound >= self.bw.get() { f64::INFINITY } else { bound };
            tracing::debug!(target: "udt::cc", bound, "udt model: competitor gone");
        } else {
            self.bw_cap = bound;
        }
    }

    /// Whether the flow gets (`delivered`, packets/s as the receiver reports them) the rate it
    /// paced at in the rounds the reports describe (the last two, the reports lagging by up to
    /// a round), to the resolution the controller reads rates with: half a probe's gain, the
    /// growth that tells a probe found room ([`ModelCc::after_probe`]). A queue that
    /// stands or refills while it does is another flow's. One the flow paces into beyond what
    /// it gets is (also) its own; and while it gets more than it paces at, a queue is emptying
    /// into its delivery (its own, which reports show a round trip late).
    pub(super) fn gets_what_it_sends(&self, delivered: f64) -> bool {
        let [last, before] = self.paced_rounds;
        let (low, high) = (last.min(before), last.max(before));
        let slack = 1.0 + (self.config.probe_up_gain - 1.0).max(0.0) / 2.0;
        low > 0.0 && delivered * slack >= low && delivered <= high * slack
    }

    /// The round's delivery rate as the bottleneck's rate: packets the link lost with an empty
    /// queue went through the bottleneck too (or could have), so the delivery rate is divided
    /// by the link's own delivered fraction; never above the packet-pair capacity, so losses
    /// the queue cannot show (a buffer under the floor) never inflate it, and not at all
    /// without one.
    pub(super) fn bw_sample(&self) -> f64 {
        self.through_bottleneck(self.round_bw())
    }

    /// `delivered` (packets/s) as the rate through the bottleneck ([`Self::bw_sample`]).
    pub(super) fn through_bottleneck(&self, delivered: f64) -> f64 {
        match self.pair_capacity {
            Some(capacity) if capacity > delivered => {
                (delivered / (1.0 - self.link_loss.clamp(0.0, MAX_LINK_LOSS))).min(capacity)
            }
            _ => delivered,
        }
    }

    /// Close the loss window when it is long enough, and judge it. A window spans
    /// [`RATE_REPORT_ACKS`] ACK periods and enough packets to tell a loss rate, the same time
    /// scale for every flow whatever its RTT: flows sharing a bottleneck see its overflows
    /// alike and answer each one, as the thesis' DAIMD answers loss events on the SYN clock.
    /// Losses of packets sent before the last decrease do not count (the decrease answered
    /// them), so a long RTT's late reports are not answered twice.
    pub(super) fn check_loss_window(&mut self, ctx: &mut CcContext<'_>) {
        if ctx.now < self.loss_start + ctx.syn_interval * RATE_REPORT_ACKS {
            return;
        }
        let sent = ctx.stats.total.pkts_sent.saturating_sub(self.loss_sent);
        let lost_packets = ctx.stats.total.snd_loss.saturating_sub(self.loss_reported);
        let lost = std::mem::take(&mut self.loss_counted);
        self.loss_sent = ctx.stats.total.pkts_sent;
        self.loss_reported = ctx.stats.total.snd_loss;
        self.loss_start = ctx.now;
        let standing = self.queue_stands();
        if !standing {
            self.queue.forget_decrease(ctx.now);
        }
        let draining =
            lost > 0 && standing && self.queue_floor().is_some_and(|floor| self.queue.check_draining(floor));
        if draining {
            tracing::debug!(target: "udt::cc", now = ?ctx.now, queue = self.queue.recent(), "udt model: the queue drains");
        }
        if lost > 0 && standing && !draining {
            self.raise_count_from(ctx.snd_curr_seq.next());
            self.handle_congestion(ctx, lost as f64 / sent.max(1) as f64);
        } else if sent > 0 && !standing {
            // The link's own loss: what a window without a standing queue lost (with one, the
            // losses of packets sent before the last decrease are the queue's, not the link's).
            let fraction = (lost_packets as f64 / sent as f64).min(1.0);
            self.link_loss += (fraction - self.link_loss) * LINK_LOSS_GAIN;
        }
    }

    /// Whether the losses of now are the queue's: it stands at `standing_queue` of its recent
    /// peak and above `queue_floor` of `min_rtt` ([`queue`]). Before any RTT report no queue
    /// is known to stand: the first round's losses are the link's (a queue that Startup fills
    /// shows in the reports before it overflows).
    pub(super) fn queue_stands(&self) -> bool {
        self.queue_floor().is_some_and(|floor| self.queue.stands(self.config.standing_queue, floor))
    }

    /// The floor under which a queue does not stand: `queue_floor` of `min_rtt` (before the RTT
    /// reports are plausible, of an acknowledged packet's own round trip), but no more
    /// than [`FLOOR_PACKETS`] at the estimated rate. A standing sample is the smallest delay
    /// of an ACK period, so jitter must hold every packet of the period to reach it; a queue
    /// of a few packets already does, and a long path's flow must see a queue that is short
    /// beside its RTT but shared with shorter ones.
    pub(super) fn queue_floor(&self) -> Option<Duration> {
        let min = self.min_rtt.get().or(self.first_rtt.own())?;
        let floor = min.mul_f64(self.config.queue_floor);
        let bw = self.bandwidth();
        if bw > 0.0 {
            Some(floor.min(Duration::from_secs_f64(FLOOR_PACKETS / bw)))
        } else {
            Some(floor)
        }
    }

    /// A bucket of the gauge's recent maximum: one round trip, at least two ACK periods (a
    /// loss is reported within a round trip of its drop).
    pub(super) fn queue_bucket(&self, syn: Duration) -> Duration {
        self.rtt_estimate().max(syn * RATE_REPORT_ACKS)
    }

    /// Count the reported loss events of packets sent after the last decrease, each once (a
    /// receiver reports a loss again while it stays unrepaired). A run of consecutive lost
    /// packets is one event: a queue that overflows under paced senders drops the excess, one
    /// packet here and one there, while a faulty link loses runs (Gilbert-Elliott bursts), so
    /// counting runs keeps a burst of link errors from passing for the congestion rate.
    pub(super) fn count_losses(&mut self, lost: &[(SeqNo, SeqNo)]) {
        for &(first, last) in lost {
            let from = match self.count_from {
                Some(c) if c.is_after(first) => c,
                _ => first,
            };
            if !from.is_after(last) {
                self.loss_counted += 1;
                self.raise_count_from(last.next());
            }
        }
    }

    pub(super) fn raise_count_from(&mut self, seq: SeqNo) {
        if self.count_from.is_none_or(|c| seq.is_after(c)) {
            self.count_from = Some(seq);
        }
    }

    pub(super) fn handle_congestion(&mut self, ctx: &mut CcContext<'_>, loss_rate: f64) {
        // The queue this decrease answers is back at the depth the last one answered (checked
        // before the gauge restarts for this decrease).
        let refilled = self.queue_floor().is_some_and(|floor| self.queue.held_since_decrease(floor));
        let delivered = self.through_bottleneck(self.last_round_bw.max(self.round_bw()));
        // Reports describe packets sent a round trip before, the queue's delay included: until
        // one round trip as it is now (and two ACK periods) they describe the queue before.
        let rtt_now = self.rtt_estimate() + Duration::from_secs_f64(self.queue.recent().clamp(0.0, 60.0));
        let settled = ctx.now + rtt_now + ctx.syn_interval * RATE_REPORT_ACKS;
        self.queue.restart(ctx.now, settled);
        tracing::debug!(target: "udt::cc", now = ?ctx.now, loss_rate, state = ?self.state, delivered, queue = self.queue.recent(), "udt model: congestion");
        match self.state {
            State::Startup => {
                self.filled_pipe = true;
                self.enter(ctx, State::Drain);
            }
            State::ProbeBw(phase) => {
                self.probe_congested = true;
                // A probe's losses are reported up to a round after they happen and judged at
                // the next round's end: two rounds after the probe they are still its own.
                let probe_caused =
                    phase != Phase::Cruise || self.probe_end_round.is_some_and(|r| self.round <= r + 2);
                let base = self.bandwidth();
                // BBRv3's bw_lo: what was delivered, but never less than beta of the estimate (a
                // round's delivery can be low for reasons other than the link, a stall).
                let beta = base * self.config.loss_beta;
                // Cruising, the decrease applies to the rate the flow got, as TCP's applies to
                // its window, not to an estimate above it: after the bottleneck slowed, or
                // beside a flow that took more, the estimate is what the flow no longer gets,
                // and `beta` of it would leave the queue standing.
                // The newest rate report is what the flow gets now; the last full round may still
                // count the rate before a change. Below what the decrease would leave (`beta` of
                // the rounds' rate), the path changed under the flow (the bottleneck slowed, a
                // flow arrived): the decrease applies to the newest rate, and the queue it
                // measured drains as its own would, so it is gone within a few round trips
                // whichever it was. Else TCP's AIMD on the rate of the last rounds.
                let newest = if self.round_samples() > 0 { self.round_bw() } else { self.last_round_bw };
                let newest = self.through_bottleneck(newest);
                // Another flow fills the queue when it refilled though this flow gets what it
                // sends: its own sending beyond what it gets would grow the queue by more than
                // the floor per round, and then the queue is (also) its own, which the next
                // decrease answers as AIMD (a first decrease that was not quite enough).
                let reported = if self.round_samples() > 0 { self.round_bw() } else { self.last_round_bw };
                let held = refilled && self.gets_what_it_sends(reported);
                let changed = newest > 0.0 && newest < delivered * self.config.loss_beta;
                let got = if changed { newest } else { delivered };
                let got = if got > 0.0 { got.min(base) } else { base };
                let bound =
                    if probe_caused { delivered.max(beta).min(base) } else { got * self.config.loss_beta };
                if !probe_caused {
                    // Beside a competitor (a queue held through a cruise, or through the last
                    // decrease) each decrease starts the curve's next epoch; alone, a decrease
                    // is the loss bound's AIMD.
                    if self.epoch.is_none() && held {
                        tracing::debug!(target: "udt::cc", now = ?ctx.now, newest, base, "udt model: queue refilled by another flow");
                    }
                    if self.epoch.is_some() || held {
                        self.epoch = Some(Epoch::after_decrease(
                            ctx.now,
                            got,
                            self.config.loss_beta,
                            self.last_rate_max,
                        ));
                    }
                    self.last_rate_max = Some(got);
                    if let Some(queue) = self.last_queue.filter(|_| changed) {
                        self.drain_queue(ctx.now, ctx.syn_interval, queue);
                        // The reports on packets sent until the drain's end show that queue
                        // falling: not a new one to answer.
                        self.queue.restart(ctx.now, settled.max(self.own_drain_next));
                    }
                }
                // Never below the smallest window per round trip: a run of congested windows
                // (or heavy random loss) must leave the flow its ACK clock, as TCP keeps one.
                self.bw_cap = bound.max(self.min_rate(ctx));
                if phase == Phase::Up {
                    self.enter(ctx, State::ProbeBw(Phase::Down));
                }
            }
            State::Drain | State::ProbeRtt => {}
        }
    }

    /// The loss bound's additive step at the end of a probe cycle, packets/s: `cap_increase` of
    /// the link's capacity, the same for every flow on the link whatever its RTT (beside a
    /// competitor the epoch's curve sets the bound instead, [`Self::follow_epoch`]).
    pub(super) fn increase_step(&self, ctx: &CcContext<'_>) -> f64 {
        self.config.cap_increase * self.link_capacity(ctx)
    }

    /// The smallest rate, packets/s: [`MIN_WINDOW`] per RTT and ACK period.
    pub(super) fn min_rate(&self, ctx: &CcContext<'_>) -> f64 {
        MIN_WINDOW / (self.rtt_estimate() + ctx.syn_interval).as_secs_f64()
    }

    /// The link's capacity, packets/s: the receiver's packet-pair estimate (thesis §3.4), or
    /// without one (or one below the bandwidth estimate) the bandwidth estimate.
    pub(super) fn link_capacity(&self, ctx: &CcContext<'_>) -> f64 {
        let pairs = f64::from(ctx.bandwidth);
        if ctx.bandwidth > 0 && ctx.bandwidth < u32::MAX && pairs >= self.bw.get() {
            pairs
        } else {
            self.bw.get()
        }
    }
}
