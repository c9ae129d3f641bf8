//! Per-packet impairments other than loss and delay: reordering, duplication, corruption.
//!
//! Reordering holds a packet back by an extra delay so that later packets overtake it (see
//! [`crate::delay`]). Duplication delivers a second copy of a packet at the same time as the
//! first. Corruption damages a delivered packet: the model draws one random word for it when it
//! decides, and the user applies that word to the bytes with [`flip_byte`] (one byte of a UDP
//! payload, as the simulator carries it) or [`flip_bit_past_ip_header`] (one bit of a whole IP
//! packet, as the emulator carries it); a duplicate made of a corrupted packet is damaged the
//! same way.
//!
//! Invariant: each function here changes exactly one byte (or bit) of a non-empty buffer and
//! nothing of an empty one.

use std::time::Duration;

use crate::rng::scale;

/// Impairments of a link, each a per-packet probability.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Impairments {
    /// Probability a packet is held back by `reorder_delay`.
    pub reorder: f64,
    /// Extra delay of a reordered packet.
    pub reorder_delay: Duration,
    /// Probability a packet is delivered twice.
    pub duplicate: f64,
    /// Probability a packet is damaged.
    pub corrupt: f64,
}

impl Impairments {
    /// Whether every impairment is off.
    pub fn is_none(&self) -> bool {
        self.reorder <= 0.0 && self.duplicate <= 0.0 && self.corrupt <= 0.0
    }
}

/// Change one byte of `payload`, picked by `word`, to another value picked by `word`. Returns
/// the index of the byte, or `None` for an empty payload.
pub fn flip_byte(payload: &mut [u8], word: u64) -> Option<usize> {
    if payload.is_empty() {
        return None;
    }
    let at = (word % payload.len() as u64) as usize;
    let mask = ((word >> 32) as u8) | 1; // never zero: the byte changes
    payload[at] ^= mask;
    Some(at)
}

/// Flip one bit of the IP packet `packet`, picked by `word`, past its IP header (IPv4 IHL or
/// the 40-byte IPv6 header), so that the kernel does not simply drop it for a bad header
/// checksum; if there is nothing past the header, anywhere in the packet. Returns the index of
/// the flipped bit, or `None` for an empty packet. The receiving kernel's TCP or UDP checksum
/// still catches the damage (UDP with checksum 0 excepted), so to an application corruption
/// mostly looks like loss, counted in the `InCsumErrors` of `nstat`.
pub fn flip_bit_past_ip_header(packet: &mut [u8], word: u64) -> Option<usize> {
    let header = match packet.first().map(|b| b >> 4) {
        Some(4) => usize::from(packet[0] & 0x0f) * 4,
        Some(6) => 40,
        _ => 0,
    };
    let start = if header < packet.len() { header } else { 0 };
    let bits = (packet.len() - start) * 8;
    if bits == 0 {
        return None;
    }
    let bit = start * 8 + scale(word, bits as u64) as usize;
    packet[bit / 8] ^= 0x80 >> (bit % 8);
    Some(bit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{stream, SimRng};
    use rand_core::RngCore;

    #[test]
    fn corruption_changes_exactly_one_byte() {
        let mut rng = stream(1, 9);
        for _ in 0..100 {
            let mut p = [7u8; 40];
            let at = flip_byte(&mut p, rng.next_u64()).unwrap();
            assert_ne!(p[at], 7);
            assert_eq!(p.iter().filter(|&&b| b != 7).count(), 1);
        }
        assert_eq!(flip_byte(&mut [], 5), None);
    }

    #[test]
    fn corruption_flips_exactly_one_bit_past_the_header() {
        let mut rng = SimRng::seed(8);
        for _ in 0..1000 {
            let mut p = vec![0u8; 100];
            p[0] = 0x45; // IPv4, 20-byte header
            let orig = p.clone();
            let bit = flip_bit_past_ip_header(&mut p, rng.next_u64()).unwrap();
            assert!((160..800).contains(&bit));
            let diff: u32 = p.iter().zip(&orig).map(|(a, b)| (a ^ b).count_ones()).sum();
            assert_eq!(diff, 1);
        }
        let mut v6 = vec![0x60u8; 41]; // IPv6, one byte past the 40-byte header
        let bit = flip_bit_past_ip_header(&mut v6, rng.next_u64()).unwrap();
        assert!((320..328).contains(&bit));
        assert_eq!((v6[40] ^ 0x60).count_ones(), 1);
        let mut short = vec![0x45u8; 10]; // header claims 20 bytes: flip anywhere
        assert!(flip_bit_past_ip_header(&mut short, rng.next_u64()).unwrap() < 80);
        assert_eq!(flip_bit_past_ip_header(&mut [], rng.next_u64()), None);
    }
}
