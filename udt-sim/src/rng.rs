//! Seeds and random numbers: one seed per simulation, one independent generator per node.
//!
//! Every random choice (losses, reordering, corruption, RED drops, socket ids, initial sequence
//! numbers, the native congestion control's random decrease) is drawn from a generator that a
//! node owns, seeded from the simulation seed and the node's index by [`derive()`]. The order in
//! which nodes run therefore never changes what another node draws, and the same seed gives the
//! same run. Nothing reads a clock or a global RNG.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The generator every node uses.
pub type SimRng = Xoshiro256PlusPlus;

/// Environment variable that overrides the seed of tests and of the example.
pub const SEED_ENV: &str = "UDT_SIM_SEED";

/// A stream seed derived from `seed` and `stream` (SplitMix64 finaliser of both).
pub fn derive(seed: u64, stream: u64) -> u64 {
    let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A generator for `stream` of the simulation seeded with `seed`.
pub fn stream(seed: u64, stream: u64) -> SimRng {
    SimRng::seed_from_u64(derive(seed, stream))
}

/// A uniform draw in [0, 1).
pub fn uniform(rng: &mut SimRng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// True with probability `p`; draws nothing when `p` is 0, so an impairment that is off leaves
/// the generator's sequence to the others.
pub fn chance(rng: &mut SimRng, p: f64) -> bool {
    p > 0.0 && uniform(rng) < p
}

/// The seed from [`SEED_ENV`] if set and valid, else `default`.
pub fn seed_from_env(default: u64) -> u64 {
    std::env::var(SEED_ENV).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(default)
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
        let mean = (0..10_000).map(|_| uniform(&mut r)).sum::<f64>() / 10_000.0;
        assert!((mean - 0.5).abs() < 0.02);
    }
}
