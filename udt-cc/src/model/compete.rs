//! The model controller's competitive mode: beside a flow that fills the queue (a queue that
//! stands through a cruise at the estimate, or through a decrease), the loss bound follows
//! CUBIC's window curve turned into a rate (RFC 9438 §4), so the flow takes what a CUBIC flow
//! of its RTT would, the Internet's default TCP being the competitor it meets most.
//!
//! After a decrease from the rate `r_max` (window `W_max = r_max x RTT`), the bound is
//! `max(W_cubic(t), W_est(t)) / RTT` with `W_cubic(t) = C (t - K)^3 + W_max`,
//! `K = cbrt((W_max - W_0) / C)`, `W_0 = beta W_max` the window the decrease left, and Reno's
//! line `W_est(t) = W_0 + alpha t / RTT`,
//! `alpha = 3 (1 - beta) / (1 + beta)` (RFC 9438 §4.3); with fast convergence (§4.7), a decrease
//! from less than the last one's rate returns only to `r_max (1 + beta) / 2`, so a flow that has
//! more than its share releases some. `C` = 0.4 and `beta` is the controller's `loss_beta` (0.7,
//! CUBIC's). The mode ends when the competitor has left: the bound regains the bandwidth
//! estimate the flow had before with no queue standing, or no queue has stood for `K` and two
//! round trips (a competitor that backed off with the flow is back where it lost by `K`, its
//! queue standing again). The estimate then paces again, and probes resume.
//!
//! Invariants: the bound is finite and positive while the mode lasts; `K` is at most 65,535 s;
//! the curve is a function of the time since the epoch began and the RTT, nothing else.

use std::time::Duration;

use udt_proto::time::Instant;

/// CUBIC's scaling constant, packets per second cubed (RFC 9438 §4.2).
const CUBIC_C: f64 = 0.4;

/// A congestion epoch of the competitive mode: from one decrease to the next.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Epoch {
    /// When the decrease happened.
    start: Instant,
    /// The rate it left, packets/s: `beta` of the rate before.
    rate_start: f64,
    /// The rate the curve returns to (the rate before, after fast convergence), packets/s.
    rate_max: f64,
    /// Reno's additive increase for this `beta`, packets per RTT per RTT.
    alpha: f64,
}

impl Epoch {
    /// An epoch that begins at `now` after a decrease from `rate` (packets/s) by `beta`;
    /// `last_max` is the rate before the previous decrease (fast convergence).
    pub fn after_decrease(now: Instant, rate: f64, beta: f64, last_max: Option<f64>) -> Self {
        let beta = beta.clamp(0.0, 1.0);
        let rate_max = match last_max {
            Some(last) if rate < last => rate * (1.0 + beta) / 2.0,
            _ => rate,
        };
        let alpha = 3.0 * (1.0 - beta) / (1.0 + beta);
        Epoch { start: now, rate_start: rate * beta, rate_max, alpha }
    }

    /// An epoch that begins at `now` at `rate` without a decrease (the queue stands though no
    /// loss came): the curve's convex part from here (`K` = 0), as CUBIC probes beyond `W_max`.
    pub fn at(now: Instant, rate: f64) -> Self {
        Epoch { start: now, rate_start: rate, rate_max: rate, alpha: 0.0 }
    }

    /// When the epoch began.
    pub fn start(&self) -> Instant {
        self.start
    }

    /// `K`: how long after the decrease the curve is back at the rate before (a CUBIC
    /// competitor of the same rate and RTT is back where it lost then, its queue standing again).
    pub fn regrowth(&self, rtt: Duration) -> Duration {
        let rtt = rtt.as_secs_f64().max(1e-6);
        Duration::from_secs_f64(self.k(self.rate_start * rtt, self.rate_max * rtt))
    }

    fn k(&self, w_start: f64, w_max: f64) -> f64 {
        ((w_max - w_start).max(0.0) / CUBIC_C).cbrt().min(f64::from(u16::MAX))
    }

    /// The bound at `now` for a flow whose RTT is `rtt`, packets/s.
    pub fn rate_at(&self, now: Instant, rtt: Duration) -> f64 {
        let rtt = rtt.as_secs_f64().max(1e-6);
        let t = now.saturating_since(self.start).as_secs_f64();
        let (w_start, w_max) = (self.rate_start * rtt, self.rate_max * rtt);
        let k = self.k(w_start, w_max);
        let cubic = CUBIC_C * (t - k).powi(3) + w_max;
        let reno = w_start + self.alpha * t / rtt;
        let rate = cubic.max(reno) / rtt;
        if rate.is_finite() {
            rate.max(f64::MIN_POSITIVE)
        } else {
            f64::MAX
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RTT: Duration = Duration::from_millis(100);

    fn after(epoch: &Epoch, secs: f64) -> f64 {
        epoch.rate_at(epoch.start + Duration::from_secs_f64(secs), RTT)
    }

    /// From `beta` of the rate, concave back to the rate at `K`, flat around it, convex after:
    /// for 10,000 packets/s at 100 ms (`W_max` 1,000), `K` = cbrt(300 / 0.4) = 9.09 s.
    #[test]
    fn the_curve_returns_to_the_rate_before_at_k() {
        let e = Epoch::after_decrease(Instant::ZERO, 10_000.0, 0.7, None);
        let k = e.regrowth(RTT).as_secs_f64();
        assert!((k - 9.086).abs() < 0.01, "{k}");
        assert!((after(&e, 0.0) - 7_000.0).abs() < 1.0);
        assert!(after(&e, 3.0) > 8_000.0 && after(&e, 3.0) < 9_800.0, "{}", after(&e, 3.0));
        assert!((after(&e, k) - 10_000.0).abs() < 1.0);
        assert!(after(&e, k + 1.0) - 10_000.0 < 10.0, "flat around the rate before");
        assert!(after(&e, k + 6.0) > 10_500.0, "convex beyond");
    }

    /// A decrease from less than the last one's rate returns only to `(1 + beta) / 2` of it;
    /// an epoch without a decrease starts at its plateau.
    #[test]
    fn fast_convergence_and_the_held_queues_epoch() {
        let e = Epoch::after_decrease(Instant::ZERO, 8_000.0, 0.7, Some(10_000.0));
        let k = e.regrowth(RTT).as_secs_f64();
        assert!((after(&e, k) - 6_800.0).abs() < 1.0, "{}", after(&e, k));
        let held = Epoch::at(Instant::ZERO, 5_000.0);
        assert_eq!(held.regrowth(RTT), Duration::ZERO);
        assert!((after(&held, 0.0) - 5_000.0).abs() < 1e-6);
        assert!(after(&held, 2.0) > 5_000.0);
    }

    #[test]
    fn the_bound_is_finite_and_positive_for_any_input() {
        for rate in [0.0, 1e-9, 1.0, 1e12, f64::MAX] {
            for rtt in [Duration::ZERO, Duration::from_nanos(1), Duration::from_secs(100)] {
                let e = Epoch::after_decrease(Instant::ZERO, rate, 0.7, Some(rate * 2.0));
                for t in [0.0, 1.0, 1e6] {
                    let b = e.rate_at(Instant::ZERO + Duration::from_secs_f64(t), rtt);
                    assert!(b.is_finite() && b > 0.0, "{rate} {rtt:?} {t}: {b}");
                }
            }
        }
    }
}
