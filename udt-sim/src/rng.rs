//! Seeds and random numbers: one seed per simulation, one independent generator per node.
//!
//! Every random choice (losses, reordering, corruption, RED drops, socket ids, initial sequence
//! numbers, the native congestion control's random decrease) is drawn from a generator that a
//! node owns, seeded from the simulation seed and the node's index by [`derive()`]. The order in
//! which nodes run therefore never changes what another node draws, and the same seed gives the
//! same run. Nothing reads a clock or a global RNG. The generator is `udt-link`'s, the one the
//! emulator uses too.

pub use udt_link::rng::{derive, stream, SimRng};

/// Environment variable that overrides the seed of tests and of the example.
pub const SEED_ENV: &str = "UDT_SIM_SEED";

/// A uniform draw in [0, 1) (53 random bits).
pub fn uniform(rng: &mut SimRng) -> f64 {
    rng.unit()
}

/// The seed from [`SEED_ENV`] if set and valid, else `default`.
pub fn seed_from_env(default: u64) -> u64 {
    std::env::var(SEED_ENV).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(default)
}
