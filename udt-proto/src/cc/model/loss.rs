//! The model controller's loss bound: loss windows, what counts as congestion (a loss rate above
//! the threshold, or losses at a queue that stood full), and the decrease that answers it. See
//! the module documentation of [`super`] for the model.
//!
//! Invariants: each reported loss event counts once, and only if its packet was sent after the
//! last decrease; an overflow seen only as a standing queue is answered at most once per probe
//! cycle; the bound never falls below [`super::MIN_WINDOW`] packets per round trip.

use std::time::Duration;

use super::{ModelCc, Phase, State, MIN_WINDOW, RATE_REPORT_ACKS};
use crate::cc::CcContext;
use crate::seq::SeqNo;

impl ModelCc {
    /// Close the loss window when it is long enough, and judge it. A window spans
    /// [`RATE_REPORT_ACKS`] ACK periods and enough packets to tell a loss rate, the same time
    /// scale for every flow whatever its RTT: flows sharing a bottleneck see its overflows
    /// alike and answer each one, as the thesis' DAIMD answers loss events on the SYN clock.
    /// Losses of packets sent before the last decrease do not count (the decrease answered
    /// them), so a long RTT's late reports are not answered twice.
    pub(super) fn check_loss_window(&mut self, ctx: &mut CcContext<'_>) {
        let sent = ctx.stats.total.pkts_sent.saturating_sub(self.loss_sent);
        let enough = self.config.loss_sample / self.config.loss_threshold;
        if ctx.now < self.loss_start + ctx.syn_interval * RATE_REPORT_ACKS || (sent as f64) < enough {
            return;
        }
        let lost = std::mem::take(&mut self.loss_counted);
        let window_rtt = self.window_rtt_min.take();
        let prev_rtt = std::mem::replace(&mut self.prev_window_rtt, window_rtt);
        self.loss_sent = ctx.stats.total.pkts_sent;
        self.loss_start = ctx.now;
        let rate = lost as f64 / sent as f64;
        tracing::trace!(target: "udt::cc", lost, sent, ?window_rtt, ?prev_rtt, qmax = self.queue_max.get(), "udt model: loss window");
        // An overflow is answered once per probe cycle: a queue that stays full after the
        // decrease is another flow's until our next probe.
        let overflow = lost > 0 && !self.overflow_answered && self.overflowed(window_rtt, prev_rtt);
        if rate > self.config.loss_threshold || overflow {
            self.raise_count_from(ctx.snd_curr_seq.next());
            self.handle_congestion(ctx, rate);
        }
    }

    /// Whether a loss window's losses met a full queue: its smallest own sample (`window_rtt`)
    /// and the previous window's (`prev_rtt`) show a queue at `overflow_queue` of the largest
    /// queue of the last probe cycles and at least [`ModelCc::queue_threshold`], not shrinking
    /// since (a draining queue is being answered already): a queue that stood full for two loss
    /// windows, longer than another flow's probe queues it. A drop-tail queue drops only
    /// when full; link errors strike at any queue, mostly at the near-empty one of a flow pacing
    /// at its estimate.
    pub(super) fn overflowed(&self, window_rtt: Option<Duration>, prev_rtt: Option<Duration>) -> bool {
        let (Some(rtt), Some(min)) = (window_rtt, self.min_rtt.get()) else {
            return false;
        };
        let bw = self.bandwidth();
        if bw <= 0.0 {
            return false;
        }
        let noise = self.config.queue_noise_gaps / bw;
        let floor = self.queue_threshold().max(self.config.overflow_queue * self.queue_max.get());
        let full = |rtt: Duration| rtt.saturating_sub(min).as_secs_f64() >= floor;
        // Full in the previous window too, and not shrinking since.
        let stood = prev_rtt.is_some_and(|p| full(p) && rtt.as_secs_f64() + noise >= p.as_secs_f64());
        full(rtt) && stood
    }

    /// The smallest delay above `min_rtt`, seconds, that is a queue: `standing_queue` of
    /// `min_rtt` and `queue_noise_gaps` gaps between our packets (infinite before estimates).
    pub(super) fn queue_threshold(&self) -> f64 {
        let bw = self.bandwidth();
        match self.min_rtt.get() {
            Some(min) if bw > 0.0 => {
                (self.config.standing_queue * min.as_secs_f64()).max(self.config.queue_noise_gaps / bw)
            }
            _ => f64::INFINITY,
        }
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

    /// Congestion: the loss bound falls (see the module documentation).
    pub(super) fn handle_congestion(&mut self, ctx: &mut CcContext<'_>, loss_rate: f64) {
        let delivered = self.last_round_bw.max(self.round_bw());
        tracing::debug!(target: "udt::cc", loss_rate, state = ?self.state, delivered, "udt model: congestion");
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
                let bound = if probe_caused { delivered.max(beta).min(base) } else { beta };
                self.overflow_answered |= !probe_caused;
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
