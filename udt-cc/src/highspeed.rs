//! HighSpeed TCP (RFC 3649; thesis Table 3-1) as a [`TcpVariant`]: Reno's AIMD with an increase
//! `a(w)` and a decrease `b(w)` that depend on the window, chosen so that the response function
//! is a straight line in log-log scale from Reno's at `Low_Window` to `High_Window` at `High_P`.
//!
//! RFC 3649 §5, with w the congestion window in packets and logs in any base:
//! * `Low_P` is Reno's loss rate at `Low_Window` (RFC 3649 §1: `w = 1.2/sqrt(p)`, so
//!   `Low_P = (1.2 / Low_Window)^2` ≈ 1e-3 for 38 packets);
//! * the response function `w = Low_Window * (p / Low_P)^S` with
//!   `S = (log High_Window - log Low_Window) / (log High_P - log Low_P)` (-0.835), i.e.
//!   `p(w) = Low_P * (w / Low_Window)^(1/S)` (0.078/w^1.2 with the RFC's rounding);
//! * `b(w) = (High_Decrease - 0.5) (log w - log Low_Window) / (log High_Window - log Low_Window)
//!   + 0.5`;
//! * `a(w) = w^2 p(w) 2 b(w) / (2 - b(w))`, the increase that makes AIMD(a, b) have the response
//!   `w` at `p(w)`.
//!
//! In congestion avoidance the window grows by `a(w)/w` per acknowledged packet; a loss event sets
//! `ssthresh = (1 - b(w)) w` (timeouts too). At or below `Low_Window` it is Reno (`a = 1`,
//! `b = 0.5`). The values are computed from the formulas at the current window rather than looked
//! up in a table like Linux's `hstcp_aimd_vals` (RFC 3649 Appendix B), so they change smoothly.
//!
//! Two choices the RFC leaves open, both as Linux: `a(w)` is at least 1 (the formula gives 0.96
//! just above `Low_Window`, less than Reno's increase, because the RFC's Reno response `1.2/sqrt(p)`
//! rounds the `sqrt(1.5) = 1.22` that AIMD(1, 0.5) has);
//! above `High_Window` both `a` and `b` keep their `High_Window` values (Linux's last table row;
//! the RFC's `b(w)` would keep falling and eventually go negative).
//!
//! **Response function** (one loss event per `1/p` packets): `w = 0.12 / p^0.835` packets per RTT
//! between `Low_Window` and `High_Window` (exactly `38 (p / Low_P)^S`, S = -0.8351), Reno's
//! `1.22/sqrt(p)` below. Checked against a deterministic-loss run in the tests.
//!
//! Invariants: `2 <= Low_Window < High_Window`, `0 < High_P < Low_P`, `0 < High_Decrease <= 0.5`
//! (checked when built from a specification); `a(w) >= 1` and `High_Decrease <= b(w) <= 0.5`.

use super::tcp::{TcpState, TcpVariant};
use super::CcContext;

/// HighSpeed TCP's response-function parameters (RFC 3649 §5).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HighSpeed {
    /// Below this window HighSpeed TCP is Reno (RFC: 38 packets).
    pub low_window: f64,
    /// The window reached at `high_p` (RFC: 83000 packets, 10 Gb/s at 100 ms with 1500 bytes).
    pub high_window: f64,
    /// Loss rate at `high_window` (RFC: 1e-7).
    pub high_p: f64,
    /// `b(high_window)` (RFC: 0.1).
    pub high_decrease: f64,
}

impl Default for HighSpeed {
    fn default() -> Self {
        HighSpeed { low_window: 38.0, high_window: 83_000.0, high_p: 1e-7, high_decrease: 0.1 }
    }
}

impl HighSpeed {
    /// Reno's loss rate at `low_window` (`w = 1.2 / sqrt(p)`).
    pub fn low_p(&self) -> f64 {
        (1.2 / self.low_window).powi(2)
    }

    /// The response function's exponent S (negative).
    pub fn s(&self) -> f64 {
        (self.high_window.ln() - self.low_window.ln()) / (self.high_p.ln() - self.low_p().ln())
    }

    /// The response function: packets per RTT at loss rate `p`.
    pub fn response(&self, p: f64) -> f64 {
        let w = self.low_window * (p / self.low_p()).powf(self.s());
        if w <= self.low_window {
            (1.5 / p).sqrt()
        } else {
            w
        }
    }

    /// The loss rate at which the response function gives `w`.
    pub fn p(&self, w: f64) -> f64 {
        self.low_p() * (w / self.low_window).powf(1.0 / self.s())
    }

    /// The decrease b(w): the fraction of the window removed per loss event.
    pub fn b(&self, w: f64) -> f64 {
        if w <= self.low_window {
            return 0.5;
        }
        if w >= self.high_window {
            return self.high_decrease;
        }
        (self.high_decrease - 0.5) * (w.ln() - self.low_window.ln())
            / (self.high_window.ln() - self.low_window.ln())
            + 0.5
    }

    /// The increase a(w): packets added per RTT.
    pub fn a(&self, w: f64) -> f64 {
        if w <= self.low_window {
            return 1.0;
        }
        let w = w.min(self.high_window);
        let b = self.b(w);
        (w * w * self.p(w) * 2.0 * b / (2.0 - b)).max(1.0)
    }
}

impl TcpVariant for HighSpeed {
    fn name(&self) -> &'static str {
        "highspeed"
    }

    fn increase(&mut self, state: &TcpState, _ctx: &CcContext<'_>, acked: f64) -> f64 {
        self.a(state.cwnd) * acked / state.cwnd
    }

    fn ssthresh_after_loss(&mut self, state: &TcpState, _ctx: &CcContext<'_>) -> f64 {
        (1.0 - self.b(state.cwnd)) * state.cwnd
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

    /// RFC 3649 Appendix B's table (w, a(w), b(w)), rounded as the RFC rounds.
    #[test]
    fn matches_the_rfc_table() {
        let h = HighSpeed::default();
        assert!((h.s() + 0.835).abs() < 0.001, "{}", h.s());
        assert!((h.p(1.0) - 0.078).abs() < 0.001, "{}", h.p(1.0));
        for (w, a, b) in [
            (38.0, 1.0, 0.50),
            (118.0, 2.0, 0.44),
            (221.0, 3.0, 0.41),
            (347.0, 4.0, 0.38),
            (495.0, 5.0, 0.37),
            (663.0, 6.0, 0.35),
            (851.0, 7.0, 0.34),
            (1058.0, 8.0, 0.33),
            (1284.0, 9.0, 0.32),
            (83000.0, 72.0, 0.10),
        ] {
            assert!((h.a(w) - a).abs() < 0.55, "a({w}) = {} vs {a}", h.a(w));
            assert!((h.b(w) - b).abs() < 0.01, "b({w}) = {} vs {b}", h.b(w));
        }
        // Clamped beyond High_Window, never below Reno's increase.
        assert_eq!(h.a(1e6), h.a(83000.0));
        assert_eq!(h.b(1e6), 0.1);
        assert_eq!(h.a(39.0), 1.0);
        // The response function: 0.12 / p^0.835.
        for p in [1e-3, 1e-5, 1e-7] {
            let w = h.response(p);
            assert!((w / (0.12 / p.powf(0.835)) - 1.0).abs() < 0.02, "p={p}: {w}");
        }
    }

    #[test]
    fn window_dependent_aimd() {
        let mut sc = Script::new();
        let mut cc = Tcp::new(TcpConfig { ack_every: 1, initial_window: 2.0 }, HighSpeed::default());
        cc.init(&mut sc.ctx());
        sc.sent = 100_000;
        cc.on_ack(&mut sc.ctx(), SeqNo::new(1056)); // slow start to 1058
        cc.on_loss(&mut sc.ctx(), &[(SeqNo::new(1057), SeqNo::new(1057))]);
        let h = HighSpeed::default();
        let w = 1058.0 * (1.0 - h.b(1058.0));
        assert!((cc.congestion_window() - w).abs() < 1e-9, "{}", cc.congestion_window());
        cc.on_ack(&mut sc.ctx(), SeqNo::new(100_001));
        let before = cc.congestion_window();
        cc.on_ack(&mut sc.ctx(), SeqNo::new(100_011));
        let grown = cc.congestion_window() - before;
        assert!((grown - 10.0 * h.a(before) / before).abs() < 1e-9);
        assert_eq!(cc.name(), "highspeed");
    }

    #[test]
    fn response_function() {
        let h = HighSpeed::default();
        for p in [1e-3, 1e-4, 1e-5, 1e-6, 1e-7] {
            let w = mean_window(h, Loss { warmup: 150, ..Loss::periodic(p) });
            let expect = h.response(p);
            assert!((w / expect - 1.0).abs() < 0.05, "p={p}: {w} vs {expect}");
        }
    }
}
