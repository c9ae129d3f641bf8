//! TCP Vegas (thesis §5.3.4 `CVegas`; Brakmo & Peterson, "TCP Vegas: End to End Congestion
//! Avoidance on a Global Internet", IEEE JSAC 13(8), 1995, §3.2-3.3; behaviour checked against
//! Linux `net/ipv4/tcp_vegas.c`): a [`TcpVariant`] that keeps between `alpha` and `beta` of its
//! packets queued at the bottleneck.
//!
//! Owns its [`Timing`] (departure times, per-round RTT statistics, `baseRTT` = the smallest RTT
//! seen) and the Vegas slow-start phase. Once per round (RTT), at the ACK that ends it, with
//! `RTT` = the smallest sample of the round:
//!
//! ```text
//! diff = (Expected - Actual) * baseRTT = cwnd * (RTT - baseRTT) / RTT     [packets queued]
//! congestion avoidance:  diff < alpha -> cwnd += 1;  diff > beta -> cwnd -= 1;  else hold
//! slow start:            diff > gamma -> cwnd = min(cwnd, w * baseRTT / RTT + 1), leave
//!                        otherwise grow exponentially, but only every other round
//! ```
//!
//! In slow start `diff` uses `w`, the window when the round began, not the current one: a round's
//! ACKs are for packets sent during the previous round, so at the end of a growth round they
//! describe the constant window of the hold round before it (the paper's reason for holding).
//! Like Reno's, Vegas slow start overshoots: the growth round that detects the queue has already
//! doubled the window, so the queue peaks near `2w - BDP` just before the exit.
//!
//! Between round ends the window does not change, except during a growth round of slow start
//! (one packet per packet acknowledged). Loss and timeout are Reno's (the [`Tcp`](super::tcp::Tcp)
//! base: half the window; a timeout also restarts Vegas slow start). Defaults `alpha = 2`,
//! `beta = 4`, `gamma = 1` (Linux). Steady state on a path of its own: `alpha..beta` packets
//! queued, full utilization once the bottleneck buffer holds `beta` packets per flow.
//!
//! Invariants: the window changes by at most one packet per round in congestion avoidance; a
//! decrease never takes it below 2 packets (Linux); the Vegas slow-start flag only goes from set
//! to clear on a `diff > gamma` round or a loss, and back on a timeout.
//!
//! Deviations: `diff` divides by `RTT` as in the paper (Linux divides by `baseRTT`, which makes
//! it slightly larger); a round with fewer than 3 RTT samples makes no Vegas decision and its
//! ending ACK gets Reno's increase instead (Linux `cntRTT <= 2`); slow start grows every other
//! round as in the paper (Linux grows every round); `ssthresh` is left to the base (Linux lowers
//! it to `cwnd - 1` on a Vegas decrease): the variant's own slow-start flag decides the phase,
//! the base's only caps a slow-start increase at `ssthresh`; RTT samples are taken per UDT ACK
//! (the receiver acknowledges every `ack` packets, default 2) rather than per TCP segment.

use super::tcp::{TcpState, TcpVariant};
use super::timing::{AckSample, Timing};
use super::CcContext;
use udt_proto::seq::SeqNo;

/// Vegas thresholds, packets queued at the bottleneck.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VegasConfig {
    /// Below this many packets queued the window grows by one per round.
    pub alpha: f64,
    /// Above this many packets queued the window shrinks by one per round.
    pub beta: f64,
    /// Slow start ends when more than this many packets are queued.
    pub gamma: f64,
}

impl Default for VegasConfig {
    fn default() -> Self {
        VegasConfig { alpha: 2.0, beta: 4.0, gamma: 1.0 }
    }
}

/// TCP Vegas as a variant of the TCP base.
#[derive(Clone, Debug)]
pub struct Vegas {
    config: VegasConfig,
    timing: Timing,
    slow_start: bool,
    growth_round: bool,
    round_start_cwnd: f64,
    delta: f64,
    last_diff: Option<f64>,
}

impl Vegas {
    /// Vegas with `config`.
    pub fn new(config: VegasConfig) -> Self {
        Vegas {
            config,
            timing: Timing::new(),
            slow_start: true,
            growth_round: true,
            round_start_cwnd: 2.0,
            delta: 0.0,
            last_diff: None,
        }
    }

    /// The timing records.
    pub fn timing(&self) -> &Timing {
        &self.timing
    }

    /// Whether Vegas slow start is still on.
    pub fn in_slow_start(&self) -> bool {
        self.slow_start
    }

    /// The estimated queue (`diff`) at the last round decision.
    pub fn last_diff(&self) -> Option<f64> {
        self.last_diff
    }

    /// The window change this ACK calls for.
    fn decide(&mut self, cwnd: f64, sample: &AckSample) -> f64 {
        let acked = f64::from(sample.acked);
        let base = self.timing.base_rtt().map(|b| b.as_secs_f64());
        if self.slow_start {
            // Checked at each round end against the window the round's packets were sent with
            // (the window at the round's start, constant when the round ending is a growth round).
            let round = sample.round_end.unwrap_or_default();
            if let (Some(base), Some(rtt), true) = (base, round.min_rtt, round.samples >= 3) {
                let (w, rtt) = (self.round_start_cwnd, rtt.as_secs_f64().max(base));
                let diff = if rtt > 0.0 { w * (rtt - base) / rtt } else { 0.0 };
                self.last_diff = Some(diff);
                if diff > self.config.gamma {
                    self.slow_start = false;
                    let target = (w * base / rtt + 1.0).max(2.0);
                    return target.min(cwnd) - cwnd;
                }
            }
            let grow = self.growth_round;
            let delta = if grow { acked } else { 0.0 };
            if sample.round_end.is_some() {
                self.growth_round = !grow;
                self.round_start_cwnd = cwnd + delta;
            }
            return delta;
        }
        let Some(round) = sample.round_end else { return 0.0 };
        let (Some(base), Some(rtt)) = (base, round.min_rtt) else { return self.reno(cwnd, acked) };
        if round.samples < 3 || rtt.is_zero() {
            return self.reno(cwnd, acked);
        }
        let rtt = rtt.as_secs_f64();
        let diff = cwnd * (rtt - base) / rtt;
        self.last_diff = Some(diff);
        if diff > self.config.beta {
            (-1.0f64).max(2.0 - cwnd).min(0.0)
        } else if diff < self.config.alpha {
            1.0
        } else {
            0.0
        }
    }

    fn reno(&self, cwnd: f64, acked: f64) -> f64 {
        if self.slow_start {
            acked
        } else {
            acked / cwnd
        }
    }
}

impl Default for Vegas {
    fn default() -> Self {
        Vegas::new(VegasConfig::default())
    }
}

impl TcpVariant for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    fn slow_start(&mut self, _state: &TcpState, _ctx: &CcContext<'_>, _acked: f64) -> f64 {
        self.delta
    }

    fn increase(&mut self, _state: &TcpState, _ctx: &CcContext<'_>, _acked: f64) -> f64 {
        self.delta
    }

    fn ssthresh_after_loss(&mut self, state: &TcpState, _ctx: &CcContext<'_>) -> f64 {
        self.slow_start = false;
        state.cwnd / 2.0
    }

    fn ssthresh_after_timeout(&mut self, state: &TcpState, _ctx: &CcContext<'_>) -> f64 {
        self.slow_start = true;
        self.growth_round = true;
        self.round_start_cwnd = 1.0;
        state.cwnd / 2.0
    }

    fn on_init(&mut self, state: &TcpState, ctx: &mut CcContext<'_>) {
        self.timing.init(ctx);
        self.slow_start = true;
        self.growth_round = true;
        self.round_start_cwnd = state.cwnd;
        self.delta = 0.0;
        self.last_diff = None;
    }

    fn on_ack(&mut self, state: &TcpState, ctx: &mut CcContext<'_>, ack: SeqNo, _acked: u32) {
        let sample = self.timing.on_ack(ctx, ack);
        self.delta = self.decide(state.cwnd, &sample);
    }

    fn on_packet_sent(&mut self, ctx: &mut CcContext<'_>, seq: SeqNo, retransmission: bool) {
        self.timing.on_sent(ctx, seq, retransmission);
    }

    fn on_recovery_end(&mut self, _state: &TcpState, ctx: &mut CcContext<'_>) {
        // Samples taken before the reduction describe the old window.
        self.timing.restart_round(ctx);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::tcp::script::Script;
    use crate::tcp::{Tcp, TcpConfig};
    use crate::timing::path::Path;
    use crate::CongestionControl;
    use udt_proto::time::Instant;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn send(cc: &mut Tcp<Vegas>, sc: &mut Script, seqs: std::ops::RangeInclusive<u32>, at: Instant) {
        for s in seqs {
            sc.now = at;
            sc.sent = s;
            cc.on_packet_sent(&mut sc.ctx(), SeqNo::new(s), false);
        }
    }

    /// ACK packets `seqs` one by one at `at`.
    fn ack(cc: &mut Tcp<Vegas>, sc: &mut Script, seqs: std::ops::RangeInclusive<u32>, at: Instant) {
        for s in seqs {
            sc.now = at;
            cc.on_ack(&mut sc.ctx(), SeqNo::new(s + 1));
        }
    }

    fn t(ms_: u64) -> Instant {
        Instant::ZERO + ms(ms_)
    }

    /// A Vegas controller in congestion avoidance at window 50 with baseRTT 100 ms, packets
    /// 101..=150 (sent at 100 ms) in flight and a round ending at 150.
    fn at_window_50(sc: &mut Script) -> Tcp<Vegas> {
        sc.max_window = 10_000;
        let mut cc = Tcp::new(TcpConfig { ack_every: 1, initial_window: 100.0 }, Vegas::default());
        cc.init(&mut sc.ctx());
        send(&mut cc, sc, 1..=100, t(0));
        // A loss report halves the window at once; recovery lasts until 100 is acknowledged.
        cc.on_loss(&mut sc.ctx(), &[(SeqNo::new(50), SeqNo::new(50))]);
        assert_eq!(cc.congestion_window(), 50.0);
        assert!(!cc.variant().in_slow_start());
        // RTT 100 ms sets baseRTT; 101..=150 leave during recovery; the ACK of 100 ends it.
        ack(&mut cc, sc, 1..=98, t(100));
        send(&mut cc, sc, 101..=150, t(100));
        ack(&mut cc, sc, 99..=100, t(150));
        assert!(!cc.state().in_recovery);
        assert_eq!(cc.congestion_window(), 50.0);
        assert_eq!(cc.variant().timing().base_rtt(), Some(ms(100)));
        cc
    }

    #[test]
    fn queue_above_beta_takes_one_packet_off() {
        // baseRTT 100 ms, RTT 110 ms, cwnd 50: diff = 50 * 10 / 110 = 4.55 > beta = 4.
        let mut sc = Script::new();
        let mut cc = at_window_50(&mut sc);
        ack(&mut cc, &mut sc, 101..=150, t(210));
        let diff = cc.variant().last_diff().expect("a decision");
        assert!((diff - 50.0 * 10.0 / 110.0).abs() < 1e-9, "{diff}");
        assert_eq!(cc.congestion_window(), 49.0);
    }

    #[test]
    fn queue_below_alpha_adds_one_and_between_holds() {
        // RTT 102 ms: diff = 50 * 2 / 102 = 0.98 < alpha -> 51.
        let mut sc = Script::new();
        let mut cc = at_window_50(&mut sc);
        ack(&mut cc, &mut sc, 101..=149, t(202));
        send(&mut cc, &mut sc, 151..=201, t(202));
        ack(&mut cc, &mut sc, 150..=150, t(202));
        assert_eq!(cc.congestion_window(), 51.0);
        // RTT 107 ms at 51: diff = 51 * 7 / 107 = 3.34, between alpha and beta -> hold.
        ack(&mut cc, &mut sc, 151..=201, t(309));
        assert!((cc.variant().last_diff().unwrap_or(0.0) - 51.0 * 7.0 / 107.0).abs() < 1e-9);
        assert_eq!(cc.congestion_window(), 51.0);
    }

    #[test]
    fn slow_start_grows_every_other_round_and_exits_above_gamma() {
        // 1000 packets/s, 100 ms: BDP 100 packets. Record the window at each round end.
        let mut path = Path::new(1000.0, ms(100));
        let mut cc = Tcp::new(TcpConfig { ack_every: 1, initial_window: 2.0 }, Vegas::default());
        path.init(&mut cc);
        let mut at_round_end = vec![];
        let mut now = Instant::ZERO;
        while cc.variant().in_slow_start() {
            now += Duration::from_micros(100);
            let rounds = cc.variant().timing().rounds();
            path.run(&mut cc, now);
            if cc.variant().timing().rounds() != rounds {
                at_round_end.push(cc.congestion_window());
            }
            assert!(now < t(5000), "still in slow start: {at_round_end:?}");
        }
        // Growth and hold rounds alternate: 3, 3, 5, 5, 9, 9, ... (one packet per packet
        // acknowledged in a growth round), up to 129 > BDP.
        let grown: Vec<f64> = at_round_end.iter().step_by(2).copied().collect();
        for (i, w) in grown.iter().take(7).enumerate() {
            assert_eq!(*w, f64::from((1u32 << (i + 1)) + 1), "{at_round_end:?}");
            assert_eq!(at_round_end[2 * i + 1], *w, "{at_round_end:?}");
        }
        // The growth round from 129 sees the hold round's queue of 29 packets: diff =
        // 129 * 29 / 129 > gamma; the window falls to 129 * baseRTT / RTT + 1 = BDP + 1 (+1 for
        // the packet in service). The growth round overshot: the queue peaked near 2 * 129 - 100.
        let w = cc.congestion_window();
        assert!((101.0..=103.0).contains(&w), "{w} after {at_round_end:?}");
        assert!((120.0..=160.0).contains(&path.max_queue_seen), "{}", path.max_queue_seen);
    }

    #[test]
    fn timeout_restarts_slow_start_and_loss_halves() {
        let mut sc = Script::new();
        let mut cc = at_window_50(&mut sc);
        cc.on_timeout(&mut sc.ctx());
        assert_eq!(cc.congestion_window(), 1.0);
        assert_eq!(cc.state().ssthresh, 25.0);
        assert!(cc.variant().in_slow_start());
        assert_eq!(cc.name(), "vegas");
    }

    #[test]
    fn keeps_alpha_to_beta_packets_queued_on_a_path() {
        // 1000 packets/s, 100 ms: BDP 100 packets.
        let mut path = Path::new(1000.0, ms(100));
        let mut cc = Tcp::new(TcpConfig { ack_every: 1, initial_window: 2.0 }, Vegas::default());
        path.init(&mut cc);
        path.run(&mut cc, Instant::ZERO + Duration::from_secs(60));
        let delivered = path.run(&mut cc, Instant::ZERO + Duration::from_secs(70));
        let w = cc.congestion_window();
        assert!((102.0..=105.0).contains(&w), "window {w}");
        let q = path.queue();
        assert!((1.0..=5.0).contains(&q), "queue {q}");
        // Full utilization: 10 s at 1000 packets/s.
        assert!(delivered >= 9_990, "{delivered}");
    }
}
