//! One direction of the emulated link: the emulator's [`LinkConfig`] mapped onto `udt-link`'s
//! [`LinkModel`] (the simulator's model too), and its outcomes in the forwarder's terms.
//!
//! A packet arriving at `now` gets a [`Verdict`]: the fate of the packet and, if it is
//! duplicated, of its copy. The stages are the model's: the rate-limited DropTail queue (its
//! limit counts the packets waiting, not the one being serialized), random loss on the wire,
//! corruption, delay with jitter and reordering, duplication (a copy delivered with the
//! original, damaged the same way). A corrupted delivery carries the random word that
//! [`corrupt_packet`] turns into the bit to flip.
//!
//! Invariants: the model never reads a clock (time is the caller's `now`, a duration since an
//! arbitrary epoch, non-decreasing between calls) and all randomness comes from its own seeded
//! generator, so a seed and a sequence of `(now, len)` fix every verdict.

use std::time::Duration;

use udt_link::{
    Dropped, Impairments, Jitter, JitterDist as ModelJitterDist, LinkModel, LossModel, Occupancy,
    QueueConfig, SimRng,
};

pub use udt_link::Delivery;

use crate::config::{JitterDist, LinkConfig, Loss, QueueLimit};
use crate::schedule::{rate_at, RateStep};

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

/// The fates of a packet and of its duplicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// The original packet.
    pub original: Fate,
    /// The duplicate, when one was made (always delivered with the original).
    pub duplicate: Option<Fate>,
    /// How long it waited at the bottleneck, its serialisation included, when it is delivered.
    pub waited: Option<Duration>,
}

/// The impairment model of one direction.
#[derive(Debug, Clone)]
pub struct Link {
    model: LinkModel,
    /// The configured rate and its changes ([`crate::schedule`]).
    base_rate: u64,
    steps: Vec<RateStep>,
    rate: u64,
}

impl Link {
    /// The model of `cfg`, its random numbers seeded with `seed`.
    pub fn new(cfg: &LinkConfig, seed: u64) -> Self {
        Self {
            model: LinkModel::new(model_config(cfg), SimRng::seed(seed)),
            base_rate: cfg.rate_bps,
            steps: cfg.rate_steps.clone(),
            rate: cfg.rate_bps,
        }
    }

    /// Follow the rate schedule to `since` its origin (any order: a restarted origin goes back).
    pub fn follow_schedule(&mut self, since: Duration) {
        let rate = rate_at(self.base_rate, &self.steps, since);
        if rate != self.rate {
            self.rate = rate;
            self.model.set_rate((rate > 0).then_some(rate));
        }
    }

    /// A packet of `len` bytes arrives at `now` (non-decreasing between calls).
    pub fn handle_packet(&mut self, now: Duration, len: usize) -> Verdict {
        match self.model.handle_packet(now, len) {
            Ok(p) => Verdict {
                original: Fate::Deliver(p.delivery),
                duplicate: p.duplicated.then_some(Fate::Deliver(p.delivery)),
                waited: Some(p.on_wire.at.saturating_sub(now)),
            },
            Err(Dropped::Lost) => Verdict { original: Fate::Lost, duplicate: None, waited: None },
            Err(Dropped::Full | Dropped::Early | Dropped::Mtu) => {
                Verdict { original: Fate::QueueDrop, duplicate: None, waited: None }
            }
        }
    }

    /// What the bottleneck's queue holds at `now` (not before the last arrival).
    pub fn occupancy(&self, now: Duration) -> Occupancy {
        self.model.occupancy(now)
    }
}

/// The shared model's configuration of the emulator's `cfg`: rate 0 is an infinitely fast
/// link; there is no MTU (the TUN devices have theirs).
pub fn model_config(cfg: &LinkConfig) -> udt_link::LinkConfig {
    let queue = match cfg.queue {
        QueueLimit::Packets(n) => QueueConfig::DropTailPackets(n as usize),
        QueueLimit::Bytes(b) => QueueConfig::DropTailBytes(usize::try_from(b).unwrap_or(usize::MAX)),
    };
    let dist = match cfg.jitter_dist {
        JitterDist::Uniform => ModelJitterDist::Uniform,
        JitterDist::Normal => ModelJitterDist::Normal,
    };
    let loss = match cfg.loss {
        Loss::None => LossModel::None,
        Loss::Bernoulli { p } => LossModel::Bernoulli(p),
        Loss::GilbertElliott(ge) => LossModel::GilbertElliott(ge.model()),
    };
    udt_link::LinkConfig {
        rate_bps: (cfg.rate_bps > 0).then_some(cfg.rate_bps),
        delay: cfg.delay,
        jitter: Jitter { amount: cfg.jitter, dist },
        queue,
        loss,
        impair: Impairments {
            reorder: cfg.reorder,
            reorder_delay: cfg.reorder_delay,
            duplicate: cfg.duplicate,
            corrupt: cfg.corrupt,
        },
        mtu: None,
    }
}

/// Flips the bit of the IP packet `packet` that the corrupted delivery's `word` picks, past its
/// IP header (see [`udt_link::flip_bit_past_ip_header`]); returns its index, `None` for an
/// empty packet.
pub fn corrupt_packet(packet: &mut [u8], word: u64) -> Option<usize> {
    udt_link::flip_bit_past_ip_header(packet, word)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::GeParams;

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
        // One in service and ten waiting.
        for (i, v) in v.iter().enumerate().take(11) {
            let at = MS * (21 + i as u32);
            assert_eq!(v.original, Fate::Deliver(Delivery { at, corrupt: None, reordered: false }));
        }
        assert_eq!(v[11].original, Fate::QueueDrop);
        assert_eq!(
            link.occupancy(Duration::ZERO),
            Occupancy { waiting: 10, waiting_bytes: 15_000, in_service: true }
        );
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
            if let [a, b] = d[..] {
                assert_eq!(a, b, "a copy is delivered with the original, damaged the same way");
            }
            delivered += d.len();
            corrupt += d.iter().filter(|d| d.corrupt.is_some()).count();
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
    fn configuration_maps_onto_the_model() {
        let ge = GeParams { p: 0.01, r: 0.25, loss_bad: 0.9, loss_good: 0.001 };
        let cfg = LinkConfig {
            rate_bps: 0,
            queue: QueueLimit::Bytes(64_000),
            jitter: MS,
            jitter_dist: JitterDist::Normal,
            loss: Loss::GilbertElliott(ge),
            ..Default::default()
        };
        let m = model_config(&cfg);
        assert_eq!(m.rate_bps, None);
        assert_eq!(m.queue, QueueConfig::DropTailBytes(64_000));
        assert_eq!(m.jitter, Jitter { amount: MS, dist: ModelJitterDist::Normal });
        assert_eq!(m.loss.mean_loss(), ge.mean_loss());
        assert_eq!(m.mtu, None);
        let m = model_config(&LinkConfig { rate_bps: 1, queue: QueueLimit::Packets(7), ..cfg });
        assert_eq!((m.rate_bps, m.queue), (Some(1), QueueConfig::DropTailPackets(7)));
    }
}
