//! FAST TCP (thesis §5.3.4 `CFAST`, §3.6; Jin, Wei & Low, "FAST TCP: Motivation, Architecture,
//! Algorithms, Performance", IEEE Infocom 2004, the window control algorithm): a [`TcpVariant`] that steers
//! the window so that `alpha` of its packets sit in the bottleneck queue.
//!
//! Owns its [`Timing`] and, like `CFAST` in the thesis, reuses the Vegas machinery with a
//! different control formula. Every other round (the thesis: "FAST TCP tunes the congestion
//! window size every two RTTs"), at the ACK that ends the round, with `RTT` = the mean RTT sample
//! of that round and `baseRTT` the smallest RTT seen:
//!
//! ```text
//! w <- min{ 2w, (1 - gamma) w + gamma (baseRTT / RTT * w + alpha) }
//! ```
//!
//! The fixed point is `w (RTT - baseRTT) / RTT = alpha`: `alpha` packets queued per flow, and
//! full utilization of a clean path whose buffer holds `alpha` packets per flow. Between updates
//! the window holds. Loss: the window and `ssthresh` drop to 7/8 of the window once per loss
//! event (thesis: "on each packet loss event, FAST still decreases its window size by 1/8");
//! timeout: the base's window of one packet with `ssthresh` at 7/8, and slow start again.
//!
//! Slow start is Vegas' (exponential growth every other round, the queue estimate checked at
//! each round end against the window the round's packets were sent with), but it ends when the
//! estimated queue exceeds `alpha / 2` instead of one packet, and then sets the window to its
//! equilibrium estimate `min(cwnd, w * baseRTT / RTT + alpha)`.
//!
//! Defaults: `gamma = 0.5` (paper); `alpha = 200` packets, the value of the paper's 1 Gb/s-class
//! experiments: a path needs `alpha` packets of buffer per flow (at 1 Gb/s and 1456-byte payloads
//! 200 packets are 2.3 ms of queue). Use a smaller `alpha` on slow or shallow-buffered paths.
//!
//! Invariants: an update at most doubles the window; the window is finite and at least 2 after a
//! decrease; updates happen only at round ends with at least one RTT sample.
//!
//! Deviations: no pacing or burst control (the Linux FAST patch has both; ACK clocking only
//! here); `RTT` is the round's mean, not the per-ACK EWMA of the paper; `alpha` is fixed (the
//! paper's `alpha(w, qdelay)` adaptation is not implemented); the slow-start exit threshold
//! `alpha / 2` is ours (the paper does not specify one): FAST's update closes the rest of the gap
//! in a few rounds, and a threshold well above one packet keeps delay jitter from ending slow
//! start at a small window, from which FAST grows by only `gamma * alpha` per two rounds.

use super::tcp::{TcpState, TcpVariant};
use super::timing::{AckSample, Timing};
use super::CcContext;
use udt_proto::seq::SeqNo;

/// FAST TCP parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FastConfig {
    /// Packets each flow keeps queued at the bottleneck in equilibrium.
    pub alpha: f64,
    /// Update smoothing, in (0, 1].
    pub gamma: f64,
}

impl Default for FastConfig {
    fn default() -> Self {
        FastConfig { alpha: 200.0, gamma: 0.5 }
    }
}

/// FAST TCP as a variant of the TCP base.
#[derive(Clone, Debug)]
pub struct Fast {
    config: FastConfig,
    timing: Timing,
    slow_start: bool,
    growth_round: bool,
    update_due: bool,
    round_start_cwnd: f64,
    delta: f64,
}

impl Fast {
    /// FAST with `config`.
    pub fn new(config: FastConfig) -> Self {
        Fast {
            config,
            timing: Timing::new(),
            slow_start: true,
            growth_round: true,
            update_due: true,
            round_start_cwnd: 2.0,
            delta: 0.0,
        }
    }

    /// The timing records.
    pub fn timing(&self) -> &Timing {
        &self.timing
    }

    /// Whether slow start is still on.
    pub fn in_slow_start(&self) -> bool {
        self.slow_start
    }

    /// The FAST update for window `w` at `rtt` (seconds) with base RTT `base`.
    pub fn target(&self, w: f64, base: f64, rtt: f64) -> f64 {
        let g = self.config.gamma;
        (2.0 * w).min((1.0 - g) * w + g * (base / rtt * w + self.config.alpha))
    }

    /// The window change this ACK calls for.
    fn decide(&mut self, cwnd: f64, sample: &AckSample) -> f64 {
        let acked = f64::from(sample.acked);
        let Some(round) = sample.round_end else {
            return if self.slow_start && self.growth_round { acked } else { 0.0 };
        };
        let Some(base) = self.timing.base_rtt().map(|b| b.as_secs_f64()) else { return 0.0 };
        if self.slow_start {
            if let (Some(rtt), true) = (round.min_rtt, round.samples >= 3) {
                let (w, rtt) = (self.round_start_cwnd, rtt.as_secs_f64().max(base));
                if rtt > 0.0 && w * (rtt - base) / rtt > self.config.alpha / 2.0 {
                    self.slow_start = false;
                    self.update_due = false; // the next round still shows the old window
                    let target = (w * base / rtt + self.config.alpha).max(2.0);
                    return target.min(cwnd) - cwnd;
                }
            }
            let grow = self.growth_round;
            let delta = if grow { acked } else { 0.0 };
            self.growth_round = !grow;
            self.round_start_cwnd = cwnd + delta;
            return delta;
        }
        let due = self.update_due;
        self.update_due = !due;
        match round.mean_rtt.map(|r| r.as_secs_f64()) {
            Some(rtt) if due && rtt > 0.0 => self.target(cwnd, base, rtt.max(base)).max(2.0) - cwnd,
            _ => 0.0,
        }
    }
}

impl Default for Fast {
    fn default() -> Self {
        Fast::new(FastConfig::default())
    }
}

impl TcpVariant for Fast {
    fn name(&self) -> &'static str {
        "fast"
    }

    fn slow_start(&mut self, _state: &TcpState, _ctx: &CcContext<'_>, _acked: f64) -> f64 {
        self.delta
    }

    fn increase(&mut self, _state: &TcpState, _ctx: &CcContext<'_>, _acked: f64) -> f64 {
        self.delta
    }

    fn ssthresh_after_loss(&mut self, state: &TcpState, _ctx: &CcContext<'_>) -> f64 {
        self.slow_start = false;
        state.cwnd * 7.0 / 8.0
    }

    fn ssthresh_after_timeout(&mut self, state: &TcpState, _ctx: &CcContext<'_>) -> f64 {
        self.slow_start = true;
        self.growth_round = true;
        self.round_start_cwnd = 1.0;
        state.cwnd * 7.0 / 8.0
    }

    fn on_init(&mut self, state: &TcpState, ctx: &mut CcContext<'_>) {
        self.timing.init(ctx);
        self.slow_start = true;
        self.growth_round = true;
        self.update_due = true;
        self.round_start_cwnd = state.cwnd;
        self.delta = 0.0;
    }

    fn on_ack(&mut self, state: &TcpState, ctx: &mut CcContext<'_>, ack: SeqNo, _acked: u32) {
        let sample = self.timing.on_ack(ctx, ack);
        self.delta = self.decide(state.cwnd, &sample);
    }

    fn on_packet_sent(&mut self, ctx: &mut CcContext<'_>, seq: SeqNo, retransmission: bool) {
        self.timing.on_sent(ctx, seq, retransmission);
    }

    fn on_recovery_end(&mut self, _state: &TcpState, ctx: &mut CcContext<'_>) {
        // The next round's packets were all sent with the reduced window: update at its end.
        self.timing.restart_round(ctx);
        self.update_due = true;
    }
}

#[cfg(test)]
mod tests {
    use std::ops::RangeInclusive;
    use std::time::Duration;

    use super::*;
    use crate::tcp::script::Script;
    use crate::tcp::{Tcp, TcpConfig};
    use crate::timing::path::Path;
    use crate::CongestionControl;
    use udt_proto::time::Instant;

    fn t(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    fn send(cc: &mut Tcp<Fast>, sc: &mut Script, seqs: RangeInclusive<u32>, at: Instant) {
        for s in seqs {
            sc.now = at;
            sc.sent = s;
            cc.on_packet_sent(&mut sc.ctx(), SeqNo::new(s), false);
        }
    }

    fn ack(cc: &mut Tcp<Fast>, sc: &mut Script, seqs: RangeInclusive<u32>, at: Instant) {
        for s in seqs {
            sc.now = at;
            cc.on_ack(&mut sc.ctx(), SeqNo::new(s + 1));
        }
    }

    /// FAST in congestion avoidance at 7/8 of `iw` after a loss, baseRTT 100 ms, with the
    /// packets `iw + 1 ..= last` (returned) sent at 100 ms and a round ending at `last`.
    fn after_loss(sc: &mut Script, iw: u32) -> (Tcp<Fast>, u32) {
        sc.max_window = 100_000;
        let mut cc = Tcp::new(TcpConfig { ack_every: 1, initial_window: f64::from(iw) }, Fast::default());
        cc.init(&mut sc.ctx());
        send(&mut cc, sc, 1..=iw, t(0));
        cc.on_loss(&mut sc.ctx(), &[(SeqNo::new(5), SeqNo::new(5))]);
        let w = f64::from(iw) * 7.0 / 8.0;
        assert_eq!(cc.congestion_window(), w);
        assert_eq!(cc.state().ssthresh, w);
        ack(&mut cc, sc, 1..=iw - 2, t(100));
        let last = iw + w as u32;
        send(&mut cc, sc, iw + 1..=last, t(100));
        ack(&mut cc, sc, iw - 1..=iw, t(150)); // passes the recovery point
        assert!(!cc.state().in_recovery);
        assert_eq!(cc.congestion_window(), w);
        (cc, last)
    }

    #[test]
    fn update_every_other_round_by_the_fast_equation() {
        // w = 700, baseRTT 100 ms, mean RTT 120 ms, alpha 200, gamma 1/2:
        // min(1400, 350 + (700 * 100 / 120 + 200) / 2) = 741.67.
        let mut sc = Script::new();
        let (mut cc, last) = after_loss(&mut sc, 800);
        ack(&mut cc, &mut sc, 801..=last - 1, t(220));
        send(&mut cc, &mut sc, last + 1..=last + 741, t(220));
        ack(&mut cc, &mut sc, last..=last, t(220));
        let expect = 350.0 + (700.0 * 100.0 / 120.0 + 200.0) / 2.0;
        assert!((cc.congestion_window() - expect).abs() < 1e-9, "{}", cc.congestion_window());
        // The next round (RTT 110 ms) only observes: no update.
        ack(&mut cc, &mut sc, last + 1..=last + 741, t(330));
        assert!((cc.congestion_window() - expect).abs() < 1e-9, "{}", cc.congestion_window());
    }

    #[test]
    fn an_update_at_most_doubles_the_window() {
        // w = 70 with no queue: (70 + (70 + 200)) / 2 = 170 is capped at 2w = 140.
        let mut sc = Script::new();
        let (mut cc, last) = after_loss(&mut sc, 80);
        assert_eq!(cc.congestion_window(), 70.0);
        ack(&mut cc, &mut sc, 81..=last, t(200));
        assert_eq!(cc.congestion_window(), 140.0);
        assert_eq!(cc.name(), "fast");
    }

    #[test]
    fn loss_takes_an_eighth_and_timeout_restarts_slow_start() {
        let mut sc = Script::new();
        let (mut cc, last) = after_loss(&mut sc, 800);
        sc.sent = last + 10;
        cc.on_loss(&mut sc.ctx(), &[(SeqNo::new(last + 1), SeqNo::new(last + 1))]);
        assert_eq!(cc.congestion_window(), 700.0 * 7.0 / 8.0);
        cc.on_timeout(&mut sc.ctx());
        assert_eq!(cc.congestion_window(), 1.0);
        assert_eq!(cc.state().ssthresh, 700.0 * 49.0 / 64.0);
        assert!(cc.variant().in_slow_start());
    }

    #[test]
    fn keeps_alpha_packets_queued_on_a_path() {
        // 1000 packets/s, 100 ms: BDP 100 packets; alpha 20 -> window 120, queue 20.
        let mut path = Path::new(1000.0, Duration::from_millis(100));
        let fast = Fast::new(FastConfig { alpha: 20.0, gamma: 0.5 });
        let mut cc = Tcp::new(TcpConfig { ack_every: 1, initial_window: 2.0 }, fast);
        path.init(&mut cc);
        path.run(&mut cc, t(30_000));
        assert!(!cc.variant().in_slow_start());
        let delivered = path.run(&mut cc, t(40_000));
        let w = cc.congestion_window();
        assert!((119.0..=122.0).contains(&w), "window {w}");
        let q = path.queue();
        assert!((18.0..=22.0).contains(&q), "queue {q}");
        assert!(delivered >= 9_990, "{delivered}");
    }
}
