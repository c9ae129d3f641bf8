//! One random scenario of the sweep, drawn from the sweep's seed and its index alone.
//!
//! Every scenario is a dumbbell (Fig. 4-1 / 4-5) with:
//! * a bottleneck of 10 Mb/s to 10 Gb/s, log-uniform;
//! * a round-trip propagation time of 1 to 1000 ms, log-uniform: the first UDT flow's RTT;
//! * 1 to 8 UDT flows, uniform; flows after the first get the drawn RTT times 3^(u - 1/2), u
//!   uniform in [0, 1), so every RTT lies within a factor of sqrt(3) of the drawn one and any two
//!   within a factor of 3;
//! * with probability 1/3, one TCP-like flow (NewReno) beside them, its RTT drawn the same way;
//! * a DropTail queue of 0.1 to 2 BDP at the drawn RTT, log-uniform, at least 10 packets (the
//!   thesis' max(BDP, 10));
//! * random loss drawn independently for the data direction and the way back (ACKs): none,
//!   Bernoulli or bursty (Gilbert-Elliott, mean burst 2-10 packets, uniform), each with
//!   probability 1/3, at a rate log-uniform in [0.01%, 10%];
//! * a seed of its own for the simulation.
//!
//! All flows start at time zero. Invariant: scenario `i` of seed `s` is the same whatever the
//! sweep's count, controller or budget (its generator is the stream `STREAM + i` of `s`), so a
//! scenario can be replayed alone.

use std::time::Duration;

use rand_core::RngCore;
use serde::Serialize;

use udt_sim::link::{GilbertElliott, LossModel};
use udt_sim::rng::{self, uniform, SimRng};

/// First stream number of the sweep's scenarios (scenario `i` uses `STREAM + i`).
pub const STREAM: u64 = 0x5357_4545_5000_0000;

/// Bottleneck capacity range, bits/s (log-uniform).
pub const BW_BPS: (f64, f64) = (10e6, 10e9);
/// Round-trip propagation time range, ms (log-uniform).
pub const RTT_MS: (f64, f64) = (1.0, 1000.0);
/// Largest ratio between two flows' RTTs.
pub const RTT_SPREAD: f64 = 3.0;
/// Most UDT flows.
pub const MAX_UDT_FLOWS: usize = 8;
/// Probability of a TCP-like flow beside the UDT flows.
pub const TCP_CHANCE: f64 = 1.0 / 3.0;
/// Queue range in BDPs at the drawn RTT (log-uniform).
pub const QUEUE_BDP: (f64, f64) = (0.1, 2.0);
/// Smallest queue, packets.
pub const MIN_QUEUE: usize = 10;
/// Random loss rate range when there is loss (log-uniform).
pub const LOSS_RATE: (f64, f64) = (1e-4, 0.1);
/// Mean loss burst range of bursty loss, packets (uniform).
pub const BURST: (f64, f64) = (2.0, 10.0);

/// Random loss of one direction.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Loss {
    /// No random loss.
    None,
    /// Each packet lost independently.
    Bernoulli {
        /// Loss rate.
        rate: f64,
    },
    /// Gilbert-Elliott loss in bursts.
    Bursty {
        /// Long-run loss rate.
        rate: f64,
        /// Mean burst, packets.
        burst: f64,
    },
}

impl Loss {
    /// The link's loss model.
    pub fn model(&self) -> LossModel {
        match *self {
            Loss::None => LossModel::None,
            Loss::Bernoulli { rate } => LossModel::Bernoulli(rate),
            Loss::Bursty { rate, burst } => {
                LossModel::GilbertElliott(GilbertElliott::from_rate_and_burst(rate, burst))
            }
        }
    }

    /// A short description: `-`, `0.123%`, `0.123%/b4.2`.
    pub fn label(&self) -> String {
        match *self {
            Loss::None => "-".into(),
            Loss::Bernoulli { rate } => format!("{:.3}%", rate * 100.0),
            Loss::Bursty { rate, burst } => format!("{:.3}%/b{burst:.1}", rate * 100.0),
        }
    }
}

/// One drawn scenario.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Drawn {
    /// Its index in the sweep.
    pub index: usize,
    /// Bottleneck capacity, bits/s.
    pub bw_bps: u64,
    /// The drawn RTT, ms (the first UDT flow's).
    pub rtt_ms: f64,
    /// Each UDT flow's RTT, ms.
    pub udt_rtt_ms: Vec<f64>,
    /// The TCP-like flow's RTT, ms, if there is one.
    pub tcp_rtt_ms: Option<f64>,
    /// Queue limit in BDPs at the drawn RTT, as drawn.
    pub queue_bdp: f64,
    /// Queue limit, packets.
    pub queue_pkts: usize,
    /// Random loss of the data direction.
    pub forward_loss: Loss,
    /// Random loss of the way back (ACKs, NAKs).
    pub reverse_loss: Loss,
    /// Seed of its simulations.
    pub seed: u64,
}

impl Drawn {
    /// Every flow's RTT, the UDT flows' first.
    pub fn rtts(&self) -> Vec<Duration> {
        self.udt_rtt_ms.iter().chain(&self.tcp_rtt_ms).map(|&m| micros(m)).collect()
    }

    /// Number of flows, the TCP-like one included.
    pub fn flows(&self) -> usize {
        self.udt_rtt_ms.len() + usize::from(self.tcp_rtt_ms.is_some())
    }
}

/// Scenario `index` of the sweep seeded with `seed`.
pub fn draw(seed: u64, index: usize) -> Drawn {
    let mut r = rng::stream(seed, STREAM.wrapping_add(index as u64));
    let bw_bps = log_uniform(&mut r, BW_BPS).round() as u64;
    let rtt_ms = to_micros(log_uniform(&mut r, RTT_MS));
    let n = (1 + (uniform(&mut r) * MAX_UDT_FLOWS as f64) as usize).min(MAX_UDT_FLOWS);
    let mut udt_rtt_ms = vec![rtt_ms];
    for _ in 1..n {
        udt_rtt_ms.push(spread(&mut r, rtt_ms));
    }
    let tcp = uniform(&mut r) < TCP_CHANCE;
    let tcp_rtt_ms = spread(&mut r, rtt_ms);
    let queue_bdp = log_uniform(&mut r, QUEUE_BDP);
    let bdp = bw_bps as f64 * rtt_ms / 1e3 / (1500.0 * 8.0);
    let queue_pkts = ((queue_bdp * bdp).round() as usize).max(MIN_QUEUE);
    let forward_loss = draw_loss(&mut r);
    let reverse_loss = draw_loss(&mut r);
    Drawn {
        index,
        bw_bps,
        rtt_ms,
        udt_rtt_ms,
        tcp_rtt_ms: tcp.then_some(tcp_rtt_ms),
        queue_bdp,
        queue_pkts,
        forward_loss,
        reverse_loss,
        seed: r.next_u64(),
    }
}

fn draw_loss(r: &mut SimRng) -> Loss {
    let kind = uniform(r);
    let rate = log_uniform(r, LOSS_RATE);
    let burst = BURST.0 + uniform(r) * (BURST.1 - BURST.0);
    if kind < 1.0 / 3.0 {
        Loss::None
    } else if kind < 2.0 / 3.0 {
        Loss::Bernoulli { rate }
    } else {
        Loss::Bursty { rate, burst }
    }
}

/// A draw between `lo` and `hi`, uniform in the logarithm.
fn log_uniform(r: &mut SimRng, (lo, hi): (f64, f64)) -> f64 {
    (lo.ln() + uniform(r) * (hi.ln() - lo.ln())).exp()
}

/// `rtt_ms` times a factor within sqrt(RTT_SPREAD) either way, log-uniform.
fn spread(r: &mut SimRng, rtt_ms: f64) -> f64 {
    to_micros(rtt_ms * RTT_SPREAD.powf(uniform(r) - 0.5))
}

/// Milliseconds rounded to whole microseconds.
fn to_micros(ms: f64) -> f64 {
    (ms * 1e3).round() / 1e3
}

/// Milliseconds (whole microseconds) as a duration.
fn micros(ms: f64) -> Duration {
    Duration::from_micros((ms * 1e3).round().max(0.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_stay_in_their_ranges_and_repeat() {
        let all: Vec<Drawn> = (0..500).map(|i| draw(1, i)).collect();
        for d in &all {
            let bw = d.bw_bps as f64;
            assert!((BW_BPS.0..=BW_BPS.1).contains(&bw), "{d:?}");
            assert!((RTT_MS.0..=RTT_MS.1).contains(&d.rtt_ms), "{d:?}");
            assert!((1..=MAX_UDT_FLOWS).contains(&d.udt_rtt_ms.len()), "{d:?}");
            let rtts: Vec<f64> = d.udt_rtt_ms.iter().chain(&d.tcp_rtt_ms).copied().collect();
            let (lo, hi) = rtts.iter().fold((f64::MAX, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
            assert!(hi / lo <= RTT_SPREAD * 1.0001, "{d:?}");
            assert!((QUEUE_BDP.0..=QUEUE_BDP.1).contains(&d.queue_bdp) && d.queue_pkts >= MIN_QUEUE);
            for l in [d.forward_loss, d.reverse_loss] {
                if let Loss::Bernoulli { rate } | Loss::Bursty { rate, .. } = l {
                    assert!((LOSS_RATE.0..=LOSS_RATE.1).contains(&rate), "{d:?}");
                }
            }
        }
        // Every kind of scenario occurs.
        assert!(all.iter().any(|d| d.tcp_rtt_ms.is_some()) && all.iter().any(|d| d.tcp_rtt_ms.is_none()));
        assert!(all.iter().any(|d| d.udt_rtt_ms.len() == 1) && all.iter().any(|d| d.udt_rtt_ms.len() == 8));
        for kind in [|l: &Loss| *l == Loss::None, |l: &Loss| matches!(l, Loss::Bursty { .. })] {
            assert!(all.iter().any(|d| kind(&d.forward_loss)) && all.iter().any(|d| kind(&d.reverse_loss)));
        }
        // A scenario depends on the seed and its index only.
        assert_eq!(draw(1, 17), all[17]);
        assert_ne!(draw(2, 17), all[17]);
        assert_eq!(all[3].rtts().len(), all[3].flows());
    }
}
