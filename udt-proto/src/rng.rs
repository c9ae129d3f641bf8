//! A small deterministic RNG (SplitMix64) for deriving per-connection generators from a driver's
//! RNG, so an endpoint can hand each accepted connection its own stream without a global RNG.

use rand_core::{impls, Error, RngCore};

/// SplitMix64: tiny, fast, statistically fine for protocol randomness (ISNs, socket ids, the
/// random decrease); not for cryptography (SYN cookies mix in a secret through SipHash instead).
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// A generator seeded from another RNG.
    pub fn from_rng(rng: &mut dyn RngCore) -> Self {
        SplitMix64(rng.next_u64())
    }
}

impl RngCore for SplitMix64 {
    fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        impls::fill_bytes_via_next(self, dest)
    }

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}
