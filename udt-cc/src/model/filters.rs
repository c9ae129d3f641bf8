//! The model's estimators: a windowed maximum of delivery-rate samples over the last N periods
//! (the controller's probe cycles) and a windowed minimum of RTT samples that expires.
//!
//! Invariants: [`MaxFilter::get`] is the largest sample of the last `N` periods (the current one
//! included), so a sample older than `N` periods never counts; [`MinFilter::get`] is the smallest
//! sample since the filter was last refreshed, and [`MinFilter::expired`] tells when that is
//! older than its window, so an RTT that rose for good (a route change) is adopted after one
//! window.

use std::time::Duration;

use udt_proto::time::Instant;

/// Windowed maximum over periods (rounds, probe cycles): one slot per period, in a ring.
#[derive(Clone, Debug)]
pub struct MaxFilter {
    slots: Vec<f64>,
    round: u64,
}

impl MaxFilter {
    /// A filter remembering `rounds` rounds (at least 1).
    pub fn new(rounds: u32) -> Self {
        MaxFilter { slots: vec![0.0; rounds.max(1) as usize], round: 0 }
    }

    /// Record `sample` in round `round` (rounds never go back).
    pub fn update(&mut self, round: u64, sample: f64) {
        if !sample.is_finite() || sample <= 0.0 {
            return;
        }
        self.advance(round);
        let i = (self.round % self.slots.len() as u64) as usize;
        self.slots[i] = self.slots[i].max(sample);
    }

    /// Move to `round`, forgetting the rounds that fall out of the window.
    pub fn advance(&mut self, round: u64) {
        let n = self.slots.len() as u64;
        let steps = round.saturating_sub(self.round).min(n);
        for k in 1..=steps {
            let i = ((self.round + k) % n) as usize;
            self.slots[i] = 0.0;
        }
        self.round = self.round.max(round);
    }

    /// The maximum over the window (0 with no sample).
    pub fn get(&self) -> f64 {
        self.slots.iter().copied().fold(0.0, f64::max)
    }

    /// Forget everything.
    pub fn reset(&mut self) {
        self.slots.iter_mut().for_each(|s| *s = 0.0);
    }
}

/// Windowed minimum with a refresh time.
#[derive(Clone, Copy, Debug, Default)]
pub struct MinFilter {
    value: Option<Duration>,
    stamp: Instant,
}

impl MinFilter {
    /// Record `sample` at `now`: a sample at or below the minimum replaces it and refreshes it.
    pub fn update(&mut self, now: Instant, sample: Duration) {
        if self.value.is_none_or(|v| sample <= v) {
            self.value = Some(sample);
            self.stamp = now;
        }
    }

    /// Replace the minimum outright (the end of a ProbeRTT that measured `sample`).
    pub fn reset_to(&mut self, now: Instant, sample: Duration) {
        self.value = Some(sample);
        self.stamp = now;
    }

    /// The minimum, if any sample came.
    pub fn get(&self) -> Option<Duration> {
        self.value
    }

    /// Whether the minimum was last refreshed more than `window` before `now`.
    pub fn expired(&self, now: Instant, window: Duration) -> bool {
        self.value.is_some() && now - self.stamp > window
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn max_filter_keeps_the_best_of_its_window_and_forgets_older_rounds() {
        let mut f = MaxFilter::new(3);
        f.update(0, 10.0);
        f.update(1, 5.0);
        f.update(2, 7.0);
        assert_eq!(f.get(), 10.0);
        f.update(3, 6.0); // round 0 leaves the window
        assert_eq!(f.get(), 7.0);
        f.advance(10); // a long silence forgets everything
        assert_eq!(f.get(), 0.0);
        f.update(10, 3.0);
        f.update(10, 4.0);
        assert_eq!(f.get(), 4.0);
    }

    #[test]
    fn max_filter_ignores_bad_samples() {
        let mut f = MaxFilter::new(2);
        for bad in [f64::NAN, f64::INFINITY, -1.0, 0.0] {
            f.update(0, bad);
        }
        assert_eq!(f.get(), 0.0);
    }

    #[test]
    fn min_filter_refreshes_on_equal_samples_and_expires() {
        let mut f = MinFilter::default();
        let t0 = Instant::ZERO;
        assert!(!f.expired(t0 + ms(1000), ms(1)));
        f.update(t0, ms(50));
        f.update(t0 + ms(10), ms(60));
        assert_eq!(f.get(), Some(ms(50)));
        assert!(f.expired(t0 + ms(101), ms(100)));
        f.update(t0 + ms(90), ms(50));
        assert!(!f.expired(t0 + ms(101), ms(100)));
        f.reset_to(t0 + ms(200), ms(80)); // the path got longer: adopted at once
        assert_eq!(f.get(), Some(ms(80)));
    }
}
