//! Scalable TCP (Kelly, "Scalable TCP: Improving Performance in Highspeed Wide Area Networks",
//! CCR 2003; thesis §5.3.3, Table 3-1) as a [`TcpVariant`]: multiplicative increase,
//! multiplicative decrease above a legacy window, Reno below it.
//!
//! * **Increase** (congestion avoidance, window above `lwnd`): `cwnd += a` per packet
//!   acknowledged, i.e. the window grows by the factor `1 + a` per RTT, so the time to recover
//!   from a loss does not depend on the window (`ln(1/(1-b)) / a` RTTs: 13.4 RTTs by default).
//! * **Decrease** (window above `lwnd`): `ssthresh = cwnd * (1 - b)`; timeouts use the same
//!   threshold (Linux `tcp_scalable` has one `ssthresh` function for both).
//! * **Legacy window** `lwnd` (Kelly §2: 16 packets): at or below it the window follows Reno
//!   (`1/cwnd` per packet, halved on a loss). Kelly's choice puts the switch where the two response
//!   functions cross (Reno's `1.22/sqrt(p)` meets `0.08/p` near w = 19), so a small Scalable flow
//!   is exactly as aggressive as a Reno one. `lwnd=0` switches it off.
//!
//! **Parameters and the two readings.** Kelly (and Linux) recommend `a = 0.01` per acknowledged
//! packet and `b = 0.125`. The thesis' Table 3-1 writes the increase as `0.1w` per RTT (which is
//! `a = 0.1` per packet) with the response function `0.8/p`; the two agree with each other, since
//! `0.1 / (0.125 p) = 0.8/p`, but `a = 0.1` is ten times Kelly's value, whose `0.01w` per RTT gives
//! `0.08/p`. The default is Kelly's published `a = 0.01`, the value the algorithm was designed and
//! measured with; `scalable:a=0.1` gives the thesis table's reading.
//!
//! **Response function** (above `lwnd`, one loss event per `1/p` packets): a cycle adds `a/p` to
//! the window, which must equal the decrease `b * W`, so the peak window is `W = a / (b p)`
//! (= 0.08/p by default; 0.8/p with `a = 0.1`). The window grows geometrically between losses, so
//! the mean window (packets per RTT) is `a / (p ln(1/(1-b)))` = 0.0749/p by default, 94% of the
//! peak. Checked against a deterministic-loss run in the tests.
//!
//! Differences from Linux `tcp_scalable`: Linux has no legacy window for the decrease (always
//! 7/8) and grows by `1/min(cwnd, 100)` per packet, i.e. Reno up to 100 packets and `a` above; we
//! follow Kelly's paper (legacy Reno AIMD up to `lwnd` for both increase and decrease).
//!
//! Invariants: stateless apart from its parameters; `0 < a`, `0 < b < 1`, `lwnd >= 0`.

use super::tcp::{TcpState, TcpVariant};
use super::CcContext;

/// Scalable TCP's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scalable {
    /// Window increase per acknowledged packet above the legacy window (Kelly: 0.01).
    pub a: f64,
    /// Fraction of the window removed per loss event above the legacy window (Kelly: 0.125).
    pub b: f64,
    /// Legacy window, packets: at or below it, Reno (Kelly: 16; 0 = never).
    pub lwnd: f64,
}

impl Default for Scalable {
    fn default() -> Self {
        Scalable { a: 0.01, b: 0.125, lwnd: 16.0 }
    }
}

impl Scalable {
    fn legacy(&self, state: &TcpState) -> bool {
        state.cwnd <= self.lwnd
    }
}

impl TcpVariant for Scalable {
    fn name(&self) -> &'static str {
        "scalable"
    }

    fn increase(&mut self, state: &TcpState, _ctx: &CcContext<'_>, acked: f64) -> f64 {
        if self.legacy(state) {
            acked / state.cwnd
        } else {
            self.a * acked
        }
    }

    fn ssthresh_after_loss(&mut self, state: &TcpState, _ctx: &CcContext<'_>) -> f64 {
        if self.legacy(state) {
            state.cwnd / 2.0
        } else {
            state.cwnd * (1.0 - self.b)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::response::{mean_window, Loss};
    use crate::tcp::script::Script;
    use crate::tcp::{Tcp, TcpConfig};
    use crate::CongestionControl;
    use udt_proto::seq::SeqNo;

    #[test]
    fn one_percent_per_packet_and_seven_eighths() {
        let mut sc = Script::new();
        let mut cc = Tcp::new(TcpConfig { ack_every: 1, initial_window: 2.0 }, Scalable::default());
        cc.init(&mut sc.ctx());
        sc.sent = 10_000;
        cc.on_ack(&mut sc.ctx(), SeqNo::new(198)); // slow start to 200
        cc.on_loss(&mut sc.ctx(), &[(SeqNo::new(199), SeqNo::new(199))]);
        assert_eq!(cc.congestion_window(), 175.0);
        cc.on_ack(&mut sc.ctx(), SeqNo::new(10_001)); // recovery over
        cc.on_ack(&mut sc.ctx(), SeqNo::new(10_101)); // 100 packets: +1
        assert!((cc.congestion_window() - 176.0).abs() < 1e-9, "{}", cc.congestion_window());
        assert_eq!(cc.name(), "scalable");
    }

    #[test]
    fn legacy_window_is_reno() {
        let mut sc = Script::new();
        let mut cc = Tcp::new(TcpConfig { ack_every: 1, initial_window: 2.0 }, Scalable::default());
        cc.init(&mut sc.ctx());
        sc.sent = 1000;
        cc.on_ack(&mut sc.ctx(), SeqNo::new(14)); // 16 packets
        cc.on_loss(&mut sc.ctx(), &[(SeqNo::new(15), SeqNo::new(15))]);
        assert_eq!(cc.congestion_window(), 8.0);
        cc.on_ack(&mut sc.ctx(), SeqNo::new(1001));
        cc.on_ack(&mut sc.ctx(), SeqNo::new(1009)); // 8 packets at window 8: +1
        assert_eq!(cc.congestion_window(), 9.0);
        // Without a legacy window the same loss takes an eighth.
        let mut cc = Tcp::new(
            TcpConfig { ack_every: 1, initial_window: 2.0 },
            Scalable { lwnd: 0.0, ..Scalable::default() },
        );
        sc.sent = 0; // a fresh connection: nothing sent before init
        cc.init(&mut sc.ctx());
        sc.sent = 1000;
        cc.on_ack(&mut sc.ctx(), SeqNo::new(14));
        cc.on_loss(&mut sc.ctx(), &[(SeqNo::new(15), SeqNo::new(15))]);
        assert_eq!(cc.congestion_window(), 14.0);
    }

    #[test]
    fn response_function() {
        for (a, p) in [(0.01, 1e-4), (0.01, 1e-5), (0.1, 1e-5)] {
            let s = Scalable { a, ..Scalable::default() };
            let w = mean_window(s, Loss::periodic(p));
            let expect = a / (p * (1.0f64 / (1.0 - s.b)).ln());
            assert!((w / expect - 1.0).abs() < 0.05, "a={a} p={p}: {w} vs {expect}");
        }
    }
}
