//! The model controller's parameters: every one in path-relative units (rounds, BDPs, gains as
//! fractions of the estimated bandwidth), with its reason. One struct, so `udt cc list` and the
//! documentation show the whole controller's tuning surface.
//!
//! Invariants (checked by [`ModelConfig::validate`]): gains are positive and finite; the probe
//! gains bracket 1; the queue fractions are strictly between 0 and 1; every count of
//! rounds is at least 1.

/// Parameters of [`super::ModelCc`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelConfig {
    /// Startup pacing and window gain, x bandwidth: `2 / ln 2`, the smallest gain that doubles
    /// the delivery rate every round (BBR).
    pub startup_gain: f64,
    /// Startup ends when the bandwidth estimate grew by less than this factor over
    /// [`ModelConfig::full_bw_rounds`] rounds: a pipe that is full stops growing (BBR: 1.25).
    pub full_bw_growth: f64,
    /// Rounds without [`ModelConfig::full_bw_growth`] that mean the pipe is full (BBR: 3; fewer
    /// mistakes a delayed ACK stream for a plateau).
    pub full_bw_rounds: u32,
    /// A round without growth also ends Startup at once when the RTT shows a queue above this
    /// fraction of `min_rtt`: two signals agreeing that the bottleneck is full (a plateau alone
    /// waits `full_bw_rounds`, since ACK timing can fake one; a queue alone can be another
    /// flow's).
    pub startup_queue: f64,
    /// Pacing gain of the probe-up phase, x bandwidth: finds 25% more in one round if it is there.
    pub probe_up_gain: f64,
    /// Pacing gain of the probe-down phase: `1 / probe_up_gain`, which drains in one round the
    /// queue the probe built if the probe found nothing.
    pub probe_down_gain: f64,
    /// Cruise rounds between probes, at least: drawn uniformly from this inclusive range,
    /// randomised so that flows sharing a link do not probe in step.
    pub cruise_rounds: (u32, u32),
    /// A cruise also lasts at least this many ACK periods (SYN), drawn uniformly from the
    /// range: the same probing cadence in time for every flow on a link whatever its RTT, as
    /// UDT's fixed control interval makes its increase RTT-independent (thesis §3.3), and no
    /// more often than Reno regrows a halved window of a few dozen packets.
    pub cruise_syn: (u32, u32),
    /// Window on the packets in flight, x BDP: one BDP in the pipe, one for ACK and pacing jitter
    /// and a probe's queue (BBR).
    pub cwnd_gain: f64,
    /// Probe cycles the bandwidth max filter remembers: the current and the previous one, so
    /// each probe's result lasts until the next probe (BBRv3).
    pub bw_window_cycles: u32,
    /// The minimum RTT expires after this many ProbeRTT durations without a sample at or below it;
    /// ProbeRTT's cost is then `(1 - probe_rtt_gain) / min_rtt_window` of the rate (under 1%).
    pub min_rtt_window: u32,
    /// Pacing gain during ProbeRTT: drains half a BDP of standing queue per round.
    pub probe_rtt_gain: f64,
    /// A loss is congestion when the standing queue of the last round reaches this fraction of
    /// the deepest standing queue of the last probe cycles (`queue.rs`): an overflow drops at
    /// the buffer's depth, a faulty link at any depth. A half: a competitor that fills the
    /// buffer keeps it between CUBIC's 0.7 and full after its decrease, while a paced flow
    /// alone keeps it near empty.
    pub standing_queue: f64,
    /// Probe cycles the deepest standing queue is remembered over: the buffer's depth as the
    /// flow has seen it fill (Startup's overshoot, a competitor's overflows), longer than one
    /// probe's own queue, which shows only how much the probe added.
    pub queue_peak_cycles: u32,
    /// Below this fraction of `min_rtt` a queue does not stand (jitter and the flow's own
    /// packet pairs); a buffer shallower than that is not told from jitter either.
    pub queue_floor: f64,
    /// Multiplicative decrease of the bandwidth cap per congested loss window that our own probe
    /// did not cause (someone else took more of the link): 0.7, CUBIC's and BBRv3's beta.
    pub loss_beta: f64,
    /// A probe cycle without congestion raises the loss bound by this fraction of the link's
    /// capacity (additive: the same step for every flow sharing the link, whatever its rate
    /// or RTT; a bound at 0.7 of a lone flow's rate is regained in 5 cycles).
    pub cap_increase: f64,
    /// Longest Drain and longest ProbeBW Down, rounds: `ln(startup queue) / ln(startup_gain)`
    /// for any queue Startup can build within its window; a queue that outlasts it is another
    /// flow's.
    pub drain_max_rounds: u32,
    /// Packets sent before the first bandwidth sample, per initial RTT (UDT4's 16).
    pub initial_window: f64,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            startup_gain: 2.0 / std::f64::consts::LN_2,
            full_bw_growth: 1.25,
            full_bw_rounds: 3,
            startup_queue: 0.25,
            probe_up_gain: 1.25,
            probe_down_gain: 0.8,
            cruise_rounds: (2, 6),
            cruise_syn: (32, 64),
            cwnd_gain: 2.0,
            bw_window_cycles: 2,
            min_rtt_window: 64,
            probe_rtt_gain: 0.5,
            standing_queue: 0.5,
            queue_peak_cycles: 8,
            queue_floor: 1.0 / 16.0,
            loss_beta: 0.7,
            cap_increase: 1.0 / 16.0,
            drain_max_rounds: 3,
            initial_window: 16.0,
        }
    }
}

impl ModelConfig {
    /// Check the invariants; the message names the parameter.
    pub fn validate(&self) -> Result<(), String> {
        let positive = [
            ("startup_gain", self.startup_gain),
            ("full_bw_growth", self.full_bw_growth),
            ("probe_up_gain", self.probe_up_gain),
            ("probe_down_gain", self.probe_down_gain),
            ("cwnd_gain", self.cwnd_gain),
            ("probe_rtt_gain", self.probe_rtt_gain),
            ("initial_window", self.initial_window),
        ];
        for (name, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("{name}={v} must be positive"));
            }
        }
        if self.probe_up_gain < 1.0 || self.probe_down_gain > 1.0 || self.startup_gain <= 1.0 {
            return Err("probe_up_gain and startup_gain must be at least 1, probe_down_gain at most 1".into());
        }
        for (name, v) in [
            ("standing_queue", self.standing_queue),
            ("queue_floor", self.queue_floor),
            ("loss_beta", self.loss_beta),
            ("cap_increase", self.cap_increase),
        ] {
            if !(v > 0.0 && v < 1.0) {
                return Err(format!("{name}={v} must be strictly between 0 and 1"));
            }
        }
        for (what, (lo, hi)) in [("cruise rounds", self.cruise_rounds), ("cruise SYNs", self.cruise_syn)] {
            if lo == 0 || hi < lo {
                return Err(format!("{what} {lo}..={hi} must be a non-empty range from 1"));
            }
        }
        if self.full_bw_rounds == 0
            || self.bw_window_cycles == 0
            || self.min_rtt_window == 0
            || self.drain_max_rounds == 0
            || self.queue_peak_cycles == 0
        {
            return Err("round counts must be at least 1".into());
        }
        Ok(())
    }
}
