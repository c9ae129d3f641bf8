//! Random loss: independent (Bernoulli) or bursty (Gilbert-Elliott).
//!
//! The Gilbert-Elliott chain steps once per packet, then the packet is lost with the loss
//! probability of the state it is in. With `loss_bad = 1` and `loss_good = 0`, loss bursts
//! are the bad-state sojourns: geometric with mean `1 / r` packets, and the long-run loss rate
//! is `p / (p + r)`.

use crate::config::Loss;
use crate::impair::SimRng;

/// The state of a loss model.
#[derive(Debug, Clone)]
pub struct LossProcess {
    model: Loss,
    bad: bool,
}

impl LossProcess {
    /// A loss process in the good state.
    pub fn new(model: Loss) -> Self {
        Self { model, bad: false }
    }

    /// Decides the fate of the next packet: true when it is lost.
    pub fn handle_packet(&mut self, rng: &mut SimRng) -> bool {
        match self.model {
            Loss::None => false,
            Loss::Bernoulli { p } => rng.chance(p),
            Loss::GilbertElliott(ge) => {
                let flip = if self.bad { ge.r } else { ge.p };
                if rng.chance(flip) {
                    self.bad = !self.bad;
                }
                rng.chance(if self.bad { ge.loss_bad } else { ge.loss_good })
            }
        }
    }

    /// Whether a Gilbert-Elliott chain is in its bad state (always false for other models).
    pub fn in_bad_state(&self) -> bool {
        self.bad
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::GeParams;

    #[test]
    fn bernoulli_rate_is_near_p() {
        let mut rng = SimRng::seed(1);
        let mut loss = LossProcess::new(Loss::Bernoulli { p: 0.01 });
        let n = 100_000;
        let lost = (0..n).filter(|_| loss.handle_packet(&mut rng)).count();
        // Binomial sd = sqrt(n p (1-p)) ~ 31.5; allow 4 sd.
        assert!((lost as i64 - 1000).abs() < 126, "lost {lost}");
        let mut none = LossProcess::new(Loss::None);
        assert!((0..1000).all(|_| !none.handle_packet(&mut rng)));
    }

    #[test]
    fn gilbert_elliott_bursts_have_mean_one_over_r() {
        let ge = GeParams { p: 0.01, r: 0.25, loss_bad: 1.0, loss_good: 0.0 };
        let mut rng = SimRng::seed(2);
        let mut loss = LossProcess::new(Loss::GilbertElliott(ge));
        let n = 200_000;
        let (mut lost, mut bursts, mut prev) = (0u64, 0u64, false);
        for _ in 0..n {
            let l = loss.handle_packet(&mut rng);
            lost += u64::from(l);
            bursts += u64::from(l && !prev);
            prev = l;
        }
        let mean_burst = lost as f64 / bursts as f64;
        assert!((mean_burst - 4.0).abs() < 0.3, "mean burst {mean_burst}");
        let rate = lost as f64 / n as f64;
        assert!((rate - ge.mean_loss()).abs() < 0.006, "rate {rate} vs {}", ge.mean_loss());
    }

    #[test]
    fn gilbert_elliott_partial_loss_matches_stationary_mix() {
        let ge = GeParams { p: 0.05, r: 0.2, loss_bad: 0.5, loss_good: 0.01 };
        let mut rng = SimRng::seed(3);
        let mut loss = LossProcess::new(Loss::GilbertElliott(ge));
        let n = 200_000;
        let lost = (0..n).filter(|_| loss.handle_packet(&mut rng)).count();
        let rate = lost as f64 / n as f64;
        // 0.2 * 0.5 + 0.8 * 0.01 = 0.108
        assert!((rate - 0.108).abs() < 0.006, "rate {rate}");
    }
}
