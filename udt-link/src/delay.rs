//! Propagation delay with jitter, and reordering.
//!
//! A packet whose serialisation ended at `on_wire` reaches the far end at
//! `on_wire + delay + j`, where `j` is the jitter draw (uniform in [-jitter, +jitter], or normal
//! with standard deviation `jitter` truncated to +-3 of them; none without jitter) and the delay
//! is never below zero. Jitter never reorders: an arrival earlier than the previous one is moved
//! up to it (like a real path whose delay varies but which keeps packets in order), so the mean
//! delay rises a little when the jitter is large against the gaps between packets. A packet
//! picked for reordering is instead released `reorder_delay` after its own jittered time and
//! does not hold back the ones behind it, which therefore overtake it.
//!
//! Invariants: arrivals of packets not picked for reordering are non-decreasing when their
//! `on_wire` times are; without jitter nothing is drawn for the delay, and each arrival is
//! exactly `on_wire + delay` (plus `reorder_delay` if picked).

use std::time::Duration;

use crate::rng::SimRng;

/// The distribution of the jitter added to the one-way delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum JitterDist {
    /// Uniform in [-jitter, +jitter].
    #[default]
    Uniform,
    /// Normal with standard deviation `jitter`, truncated to +-3 standard deviations.
    Normal,
}

/// Jitter of the one-way delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Jitter {
    /// Amplitude (uniform) or standard deviation (normal); zero for none.
    pub amount: Duration,
    /// Its distribution.
    pub dist: JitterDist,
}

impl Jitter {
    /// Whether there is no jitter.
    pub fn is_none(&self) -> bool {
        self.amount.is_zero()
    }
}

/// When a packet reaches the far end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Release {
    /// Arrival time at the far end (same epoch as `on_wire`).
    pub at: Duration,
    /// The packet was picked for reordering.
    pub reordered: bool,
}

/// Delay, jitter and reordering of one link.
#[derive(Clone, Debug)]
pub struct DelayLine {
    delay: Duration,
    jitter: Jitter,
    reorder: f64,
    reorder_delay: Duration,
    last_release: Duration,
}

impl DelayLine {
    /// A line of `delay` with `jitter`, reordering with probability `reorder` by
    /// `reorder_delay`.
    pub fn new(delay: Duration, jitter: Jitter, reorder: f64, reorder_delay: Duration) -> Self {
        DelayLine { delay, jitter, reorder, reorder_delay, last_release: Duration::ZERO }
    }

    /// A packet went onto the wire, its serialisation ending at `on_wire`: when it arrives.
    /// Draws the jitter (if any), then the reordering chance.
    pub fn handle_on_wire(&mut self, on_wire: Duration, rng: &mut SimRng) -> Release {
        let release = on_wire + self.jittered_delay(rng);
        if rng.chance(self.reorder) {
            return Release { at: release + self.reorder_delay, reordered: true };
        }
        let at = release.max(self.last_release);
        self.last_release = at;
        Release { at, reordered: false }
    }

    fn jittered_delay(&self, rng: &mut SimRng) -> Duration {
        if self.jitter.is_none() {
            return self.delay;
        }
        let unit = match self.jitter.dist {
            JitterDist::Uniform => rng.unit() * 2.0 - 1.0,
            JitterDist::Normal => rng.normal().clamp(-3.0, 3.0),
        };
        let secs = self.delay.as_secs_f64() + unit * self.jitter.amount.as_secs_f64();
        Duration::from_secs_f64(secs.max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn line(delay: Duration, amount: Duration, dist: JitterDist, reorder: f64) -> DelayLine {
        DelayLine::new(delay, Jitter { amount, dist }, reorder, MS)
    }

    #[test]
    fn fixed_delay_is_exact_and_draws_nothing() {
        let mut rng = SimRng::seed(1);
        let untouched = rng.clone();
        let mut d = line(MS * 50, Duration::ZERO, JitterDist::Uniform, 0.0);
        for i in 0..100u32 {
            assert_eq!(d.handle_on_wire(MS * i, &mut rng), Release { at: MS * (50 + i), reordered: false });
        }
        assert_eq!(rng, untouched);
    }

    #[test]
    fn uniform_jitter_stays_in_bounds_and_in_order() {
        let mut rng = SimRng::seed(2);
        let mut d = line(MS * 20, MS * 2, JitterDist::Uniform, 0.0);
        let (mut last, mut sum, n) = (Duration::ZERO, 0.0, 20_000u32);
        for i in 0..n {
            let departed = MS * 5 * i; // gaps (5 ms) above the jitter's range (4 ms): no clamping
            let s = d.handle_on_wire(departed, &mut rng);
            let delay = s.at - departed;
            assert!(delay >= MS * 18 && delay <= MS * 22, "{delay:?}");
            assert!(s.at >= last);
            last = s.at;
            sum += delay.as_secs_f64();
        }
        let mean_ms = sum / f64::from(n) * 1e3;
        assert!((mean_ms - 20.0).abs() < 0.2, "mean {mean_ms} ms");
    }

    #[test]
    fn dense_traffic_with_jitter_is_never_reordered() {
        let mut rng = SimRng::seed(3);
        let mut d = line(MS * 10, MS * 5, JitterDist::Normal, 0.0);
        let mut last = Duration::ZERO;
        for i in 0..10_000u32 {
            let departed = Duration::from_micros(10) * i;
            let s = d.handle_on_wire(departed, &mut rng);
            assert!(s.at >= last && !s.reordered);
            assert!(s.at <= departed + MS * 25, "normal jitter is truncated at 3 sd");
            last = s.at;
        }
    }

    #[test]
    fn reordering_lets_later_packets_overtake() {
        let mut rng = SimRng::seed(4);
        let mut d = line(MS * 10, Duration::ZERO, JitterDist::Uniform, 0.05);
        let n = 100_000u32;
        let releases: Vec<Release> =
            (0..n).map(|i| d.handle_on_wire(Duration::from_micros(100) * i, &mut rng)).collect();
        let picked = releases.iter().filter(|s| s.reordered).count();
        assert!((picked as i64 - 5000).abs() < 300, "picked {picked}");
        // A picked packet (1 ms extra at 100 us spacing) is overtaken by the next one unless
        // that one was picked too.
        let overtaken = releases.windows(2).filter(|w| w[0].reordered && w[1].at < w[0].at).count();
        let expected = releases.windows(2).filter(|w| w[0].reordered && !w[1].reordered).count();
        assert_eq!(overtaken, expected);
        assert!(overtaken > 4000);
    }
}
