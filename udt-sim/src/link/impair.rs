//! Per-packet impairments other than loss: reordering, duplication, corruption.
//!
//! Reordering delays a packet by an extra amount so that later packets overtake it.
//! Duplication delivers a second copy right after the first. Corruption flips one byte of the
//! UDP payload to a different value and marks the datagram, so that a host checking UDP
//! checksums drops it (the realistic case) while one that does not hands the damaged bytes to
//! `udt-proto`, which must drop and count whatever does not parse.

use std::time::Duration;

use rand_core::RngCore;

use crate::packet::Datagram;
use crate::rng::SimRng;

/// Impairments of a link, each a per-packet probability.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Impairments {
    /// Probability a packet is held back by `reorder_delay`.
    pub reorder: f64,
    /// Extra delay of a reordered packet.
    pub reorder_delay: Duration,
    /// Probability a packet is delivered twice.
    pub duplicate: f64,
    /// Probability a packet has one byte flipped.
    pub corrupt: f64,
}

impl Impairments {
    /// Whether every impairment is off.
    pub fn is_none(&self) -> bool {
        self.reorder <= 0.0 && self.duplicate <= 0.0 && self.corrupt <= 0.0
    }
}

/// Flip one random byte of `d`'s payload to another value and mark it corrupted.
pub(crate) fn corrupt(d: &mut Datagram, rng: &mut SimRng) {
    d.corrupted = true;
    let p = d.payload_mut();
    if p.is_empty() {
        return;
    }
    let r = rng.next_u64();
    let at = (r % p.len() as u64) as usize;
    let mask = ((r >> 32) as u8) | 1; // never zero: the byte changes
    p[at] ^= mask;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Addr, BufPool};
    use crate::rng::stream;

    #[test]
    fn corruption_changes_exactly_one_byte() {
        let mut pool = BufPool::new(64);
        let mut rng = stream(1, 9);
        for _ in 0..100 {
            let mut d = pool.datagram(Addr::default(), Addr::default(), &[7u8; 40]);
            corrupt(&mut d, &mut rng);
            assert!(d.corrupted);
            assert_eq!(d.payload().iter().filter(|&&b| b != 7).count(), 1);
            pool.recycle(d);
        }
    }
}
