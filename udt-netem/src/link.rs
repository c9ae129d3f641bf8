//! One direction of the emulated link, sans-IO: a packet arriving at `now` gets a
//! [`Verdict`], the fate of the packet and of its duplicate if one is made.
//!
//! Each copy goes through the stages in order: random loss ([`LossProcess`]), the rate-limited
//! DropTail queue ([`Bottleneck`]), delay with jitter and reordering ([`DelayLine`]); a copy
//! that survives is marked for corruption with probability `corrupt`. The duplicate (made with
//! probability `duplicate`) is an independent second arrival at the same `now`, as in netem.
//!
//! Invariants: the model never reads a clock (time is the caller's `now`, a duration since an
//! arbitrary epoch, non-decreasing between calls) and all randomness comes from its own
//! [`SimRng`], so a seed and a sequence of `(now, len)` fix every verdict.

use std::time::Duration;

use crate::config::LinkConfig;
use crate::impair::{Bottleneck, DelayLine, LossProcess, SimRng};

/// What happens to one copy of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Lost by the random loss model.
    Lost,
    /// Dropped because the bottleneck queue was full.
    QueueDrop,
    /// To be delivered.
    Deliver(Delivery),
}

/// A delivered copy: when, and how it was impaired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    /// Release time (same epoch as `now`).
    pub at: Duration,
    /// Flip one bit before delivering it (see [`corrupt_packet`]).
    pub corrupt: bool,
    /// Picked for reordering (held back so that later packets overtake it).
    pub reordered: bool,
}

/// The fates of a packet and of its duplicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// The original packet.
    pub original: Fate,
    /// The duplicate, when one was made.
    pub duplicate: Option<Fate>,
}

/// The impairment model of one direction.
#[derive(Debug, Clone)]
pub struct Link {
    rng: SimRng,
    loss: LossProcess,
    bottleneck: Bottleneck,
    delay: DelayLine,
    duplicate: f64,
    corrupt: f64,
}

impl Link {
    /// The model of `cfg`, its random numbers seeded with `seed`.
    pub fn new(cfg: &LinkConfig, seed: u64) -> Self {
        Self {
            rng: SimRng::seed(seed),
            loss: LossProcess::new(cfg.loss),
            bottleneck: Bottleneck::new(cfg.rate_bps, cfg.queue),
            delay: DelayLine::new(cfg),
            duplicate: cfg.duplicate,
            corrupt: cfg.corrupt,
        }
    }

    /// A packet of `len` bytes arrives at `now` (non-decreasing between calls).
    pub fn handle_packet(&mut self, now: Duration, len: usize) -> Verdict {
        let dup = self.rng.chance(self.duplicate);
        let original = self.fate(now, len);
        let duplicate = dup.then(|| self.fate(now, len));
        Verdict { original, duplicate }
    }

    fn fate(&mut self, now: Duration, len: usize) -> Fate {
        if self.loss.handle_packet(&mut self.rng) {
            return Fate::Lost;
        }
        let Some(departed) = self.bottleneck.handle_arrival(now, len) else {
            return Fate::QueueDrop;
        };
        let s = self.delay.handle_departure(departed, &mut self.rng);
        let corrupt = self.rng.chance(self.corrupt);
        Fate::Deliver(Delivery { at: s.at, corrupt, reordered: s.reordered })
    }

    /// Flips one random bit of `packet` with this link's random numbers (see
    /// [`corrupt_packet`]).
    pub fn corrupt(&mut self, packet: &mut [u8]) -> Option<usize> {
        corrupt_packet(packet, &mut self.rng)
    }

    /// The bottleneck's current backlog in packets.
    pub fn backlog_packets(&self) -> usize {
        self.bottleneck.backlog_packets()
    }
}

/// Flips one random bit of `packet` past its IP header (IPv4 IHL or the 40-byte IPv6 header)
/// so that the kernel does not simply drop it for a bad header checksum; if there is nothing
/// past the header, anywhere in the packet. Returns the index of the flipped bit, or `None`
/// for an empty packet. The receiving kernel's TCP or UDP checksum will still catch the damage
/// (UDP with checksum 0 excepted), so to an application corruption mostly looks like loss,
/// counted in the `InCsumErrors` of `nstat`.
pub fn corrupt_packet(packet: &mut [u8], rng: &mut SimRng) -> Option<usize> {
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
    let bit = start * 8 + rng.below(bits as u64) as usize;
    packet[bit / 8] ^= 0x80 >> (bit % 8);
    Some(bit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Loss, QueueLimit};

    const MS: Duration = Duration::from_millis(1);

    fn deliveries(v: &Verdict) -> Vec<Delivery> {
        [Some(v.original), v.duplicate]
            .into_iter()
            .flatten()
            .filter_map(|f| match f {
                Fate::Deliver(d) => Some(d),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn rate_plus_delay_gives_serialization_then_propagation() {
        let cfg = LinkConfig {
            rate_bps: 12_000_000,
            delay: MS * 20,
            queue: QueueLimit::Packets(10),
            ..Default::default()
        };
        let mut link = Link::new(&cfg, 1);
        let v: Vec<Verdict> = (0..12).map(|_| link.handle_packet(Duration::ZERO, 1500)).collect();
        for (i, v) in v.iter().enumerate().take(10) {
            let at = MS * (21 + i as u32);
            assert_eq!(v.original, Fate::Deliver(Delivery { at, corrupt: false, reordered: false }));
        }
        assert_eq!(v[10].original, Fate::QueueDrop);
        assert_eq!(link.backlog_packets(), 10);
    }

    #[test]
    fn same_seed_same_verdicts() {
        let cfg = LinkConfig {
            rate_bps: 50_000_000,
            delay: MS * 5,
            jitter: MS,
            loss: Loss::Bernoulli { p: 0.05 },
            reorder: 0.01,
            duplicate: 0.01,
            corrupt: 0.01,
            ..Default::default()
        };
        let run = |seed| {
            let mut link = Link::new(&cfg, seed);
            (0..5000u32).map(|i| link.handle_packet(Duration::from_micros(50) * i, 1200)).collect::<Vec<_>>()
        };
        assert_eq!(run(9), run(9));
        assert_ne!(run(9), run(10));
    }

    #[test]
    fn duplication_and_corruption_counts() {
        let cfg = LinkConfig { duplicate: 0.02, corrupt: 0.01, ..Default::default() };
        let mut link = Link::new(&cfg, 5);
        let n = 100_000;
        let (mut dups, mut delivered, mut corrupt) = (0, 0, 0);
        for i in 0..n {
            let v = link.handle_packet(Duration::from_micros(10) * i, 1000);
            dups += usize::from(v.duplicate.is_some());
            let d = deliveries(&v);
            delivered += d.len();
            corrupt += d.iter().filter(|d| d.corrupt).count();
        }
        assert!((dups as i64 - 2000).abs() < 180, "dups {dups}");
        assert_eq!(delivered, n as usize + dups);
        assert!((corrupt as i64 - 1020).abs() < 130, "corrupt {corrupt}");
    }

    #[test]
    fn loss_rate_through_the_link() {
        let cfg = LinkConfig { loss: Loss::Bernoulli { p: 0.001 }, ..Default::default() };
        let mut link = Link::new(&cfg, 6);
        let n = 1_000_000u32;
        let lost =
            (0..n).filter(|&i| link.handle_packet(Duration::from_micros(1) * i, 100).original == Fate::Lost);
        let lost = lost.count();
        // Binomial(1e6, 0.001): sd ~ 31.6.
        assert!((lost as i64 - 1000).abs() < 130, "lost {lost}");
    }

    #[test]
    fn reorder_counts_through_the_link() {
        let cfg = LinkConfig { delay: MS * 10, reorder: 0.01, reorder_delay: MS, ..Default::default() };
        let mut link = Link::new(&cfg, 7);
        let ats: Vec<Delivery> = (0..100_000u32)
            .flat_map(|i| deliveries(&link.handle_packet(Duration::from_micros(20) * i, 1000)))
            .collect();
        let picked = ats.iter().filter(|d| d.reordered).count();
        assert!((picked as i64 - 1000).abs() < 130, "picked {picked}");
        // Count arrivals out of order at the receiver: each picked packet is passed by the
        // ~50 packets sent in the following 1 ms.
        let mut sorted: Vec<(Duration, usize)> = ats.iter().enumerate().map(|(i, d)| (d.at, i)).collect();
        sorted.sort();
        let late = sorted.windows(2).filter(|w| w[1].1 < w[0].1).count();
        assert!((late as i64 - picked as i64).abs() <= 10, "late {late} picked {picked}");
    }

    #[test]
    fn corruption_flips_exactly_one_bit_past_the_header() {
        let mut rng = SimRng::seed(8);
        for _ in 0..1000 {
            let mut p = vec![0u8; 100];
            p[0] = 0x45; // IPv4, 20-byte header
            let orig = p.clone();
            let bit = corrupt_packet(&mut p, &mut rng).unwrap();
            assert!((160..800).contains(&bit));
            let diff: u32 = p.iter().zip(&orig).map(|(a, b)| (a ^ b).count_ones()).sum();
            assert_eq!(diff, 1);
        }
        let mut v6 = vec![0x60u8; 41]; // IPv6, one byte past the 40-byte header
        let bit = corrupt_packet(&mut v6, &mut rng).unwrap();
        assert!((320..328).contains(&bit));
        assert_eq!((v6[40] ^ 0x60).count_ones(), 1);
        let mut short = vec![0x45u8; 10]; // header claims 20 bytes: flip anywhere
        assert!(corrupt_packet(&mut short, &mut rng).unwrap() < 80);
        assert_eq!(corrupt_packet(&mut [], &mut rng), None);
    }
}
