//! The one seeded random generator: xoshiro256++ with the draws the link model and its users
//! need.
//!
//! A simulation derives one independent stream per node from its seed with [`stream`] (a
//! SplitMix64 finaliser of the seed and the stream number), so the order in which nodes run
//! never changes what another node draws; the emulator seeds one generator per direction with
//! [`SimRng::seed`]. Invariants: the same seed gives the same sequence; [`SimRng::chance`] with
//! probability 0 draws nothing, so an impairment that is off leaves the sequence to the others;
//! [`SimRng`] implements [`RngCore`] by passing every call through to xoshiro256++, so a
//! consumer of `RngCore` sees exactly the generator's stream.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A deterministic random number generator (xoshiro256++).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimRng {
    inner: Xoshiro256PlusPlus,
}

/// A stream seed derived from `seed` and `stream` (SplitMix64 finaliser of both).
pub fn derive(seed: u64, stream: u64) -> u64 {
    let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The generator of stream `stream` of a run seeded with `seed`.
pub fn stream(seed: u64, stream: u64) -> SimRng {
    SimRng::seed(derive(seed, stream))
}

impl SimRng {
    /// A generator whose whole sequence is fixed by `seed` (xoshiro's `seed_from_u64`).
    pub fn seed(seed: u64) -> Self {
        SimRng { inner: Xoshiro256PlusPlus::seed_from_u64(seed) }
    }

    /// Uniform in [0, 1), with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.inner.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`; draws nothing when `p <= 0`.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }

    /// Uniform in [0, n) for n > 0 (0 when n == 0), by multiply-shift on 64 bits (no modulo
    /// bias worth mentioning for packet-sized ranges).
    pub fn below(&mut self, n: u64) -> u64 {
        scale(self.inner.next_u64(), n)
    }

    /// A standard normal draw (Box-Muller; the second of the pair is discarded, which keeps the
    /// generator free of cached state).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit(); // (0, 1]: ln is finite
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

/// `word` (uniform over u64) mapped uniformly onto [0, n) by multiply-shift.
pub fn scale(word: u64, n: u64) -> u64 {
    ((u128::from(word) * u128::from(n)) >> 64) as u64
}

impl RngCore for SimRng {
    fn next_u32(&mut self) -> u32 {
        self.inner.next_u32()
    }

    fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.inner.fill_bytes(dest);
    }

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        self.inner.try_fill_bytes(dest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_differ_and_repeat() {
        assert_ne!(derive(1, 0), derive(1, 1));
        assert_ne!(derive(1, 0), derive(2, 0));
        assert_eq!(stream(7, 3).next_u64(), stream(7, 3).next_u64());
        let mut r = stream(1, 1);
        let mean = (0..10_000).map(|_| r.unit()).sum::<f64>() / 10_000.0;
        assert!((mean - 0.5).abs() < 0.02);
    }

    #[test]
    fn passes_xoshiro_through() {
        let mut ours = SimRng::seed(11);
        let mut theirs = Xoshiro256PlusPlus::seed_from_u64(11);
        assert_eq!(ours.next_u64(), theirs.next_u64());
        assert_eq!(ours.next_u32(), theirs.next_u32());
        let (mut a, mut b) = ([0u8; 13], [0u8; 13]);
        ours.fill_bytes(&mut a);
        theirs.fill_bytes(&mut b);
        assert_eq!(a, b);
        assert_eq!(stream(3, 4), SimRng { inner: Xoshiro256PlusPlus::seed_from_u64(derive(3, 4)) });
    }

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
        assert_eq!(scale(u64::MAX, 10), 9);
        assert_eq!(scale(0, 10), 0);
    }
}
