//! The impairments' random numbers: a seeded xoshiro256++ generator with the few draws the
//! models need. Invariant: the same seed gives the same sequence of draws, and a draw with
//! probability 0 consumes no randomness (so turning on one impairment does not shift another's
//! stream when the other is off).

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A deterministic random number generator for the impairment models.
#[derive(Debug, Clone)]
pub struct SimRng {
    inner: Xoshiro256PlusPlus,
}

impl SimRng {
    /// A generator whose whole sequence is fixed by `seed`.
    pub fn seed(seed: u64) -> Self {
        Self { inner: Xoshiro256PlusPlus::seed_from_u64(seed) }
    }

    /// Uniform in [0, 1), with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.inner.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p` (false without drawing when `p <= 0`).
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }

    /// Uniform in [0, n) for n > 0 (0 when n == 0), without modulo bias worth mentioning for
    /// the packet-sized ranges used here (multiply-shift on 64 bits).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.inner.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A standard normal draw (Box-Muller; one of the pair is discarded, which keeps the
    /// generator free of cached state).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit(); // (0, 1]: ln is finite
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_sane_moments() {
        let (mut a, mut b) = (SimRng::seed(7), SimRng::seed(7));
        for _ in 0..100 {
            assert_eq!(a.unit().to_bits(), b.unit().to_bits());
        }
        let n = 200_000;
        let (mut sum, mut sq, mut hits) = (0.0, 0.0, 0);
        for _ in 0..n {
            let x = a.normal();
            sum += x;
            sq += x * x;
            hits += usize::from(a.chance(0.25));
            assert!(a.below(10) < 10);
        }
        let mean = sum / n as f64;
        let var = sq / n as f64 - mean * mean;
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((var - 1.0).abs() < 0.02, "var {var}");
        let frac = hits as f64 / n as f64;
        assert!((frac - 0.25).abs() < 0.005, "{frac}");
        let mut c = a.clone();
        assert!(!a.chance(0.0));
        assert_eq!(a.unit().to_bits(), c.unit().to_bits(), "chance(0) drew");
        assert!(a.chance(1.0));
    }
}
