//! Random loss on a link: Bernoulli, and Gilbert-Elliott for bursts.
//!
//! A loss model decides, packet by packet, whether a packet that has been serialised is lost on
//! the wire (a link error, not a congestion drop). Gilbert-Elliott is a two-state Markov chain
//! (good, bad) stepped once per packet, then the packet is lost with the loss probability of
//! the state it is in. With `loss_bad = 1` and `loss_good = 0`, loss bursts are the bad-state
//! sojourns: geometric with mean `1 / bad_to_good` packets, and the long-run loss rate is
//! `good_to_bad / (good_to_bad + bad_to_good)`.
//!
//! Invariant: the chain starts in the good state and draws only from the generator it is given.

use crate::rng::SimRng;

/// How a link loses packets at random.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum LossModel {
    /// No random loss.
    #[default]
    None,
    /// Each packet lost independently with this probability.
    Bernoulli(f64),
    /// Bursty loss.
    GilbertElliott(GilbertElliott),
}

/// Gilbert-Elliott parameters (per packet).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GilbertElliott {
    /// Probability of moving from good to bad.
    pub good_to_bad: f64,
    /// Probability of moving from bad to good.
    pub bad_to_good: f64,
    /// Loss probability in the good state.
    pub loss_good: f64,
    /// Loss probability in the bad state.
    pub loss_bad: f64,
}

impl GilbertElliott {
    /// The simple Gilbert model (no loss in good, all lost in bad) with mean loss rate `rate`
    /// and mean burst length `burst` packets.
    pub fn from_rate_and_burst(rate: f64, burst: f64) -> Self {
        let bad_to_good = 1.0 / burst.max(1.0);
        let rate = rate.clamp(0.0, 0.999_999);
        GilbertElliott {
            good_to_bad: rate * bad_to_good / (1.0 - rate),
            bad_to_good,
            loss_good: 0.0,
            loss_bad: 1.0,
        }
    }

    /// Long-run loss rate: the chain's stationary mix of the two states' loss rates.
    pub fn mean_loss(&self) -> f64 {
        let total = self.good_to_bad + self.bad_to_good;
        if total <= 0.0 {
            return self.loss_good;
        }
        let bad = self.good_to_bad / total;
        bad * self.loss_bad + (1.0 - bad) * self.loss_good
    }
}

impl LossModel {
    /// Long-run loss rate.
    pub fn mean_loss(&self) -> f64 {
        match self {
            LossModel::None => 0.0,
            LossModel::Bernoulli(p) => *p,
            LossModel::GilbertElliott(g) => g.mean_loss(),
        }
    }
}

/// A loss model with its state.
#[derive(Debug, Clone)]
pub struct LossState {
    model: LossModel,
    bad: bool,
}

impl LossState {
    /// The process of `model`, in the good state.
    pub fn new(model: LossModel) -> Self {
        LossState { model, bad: false }
    }

    /// Whether the next packet is lost.
    #[inline]
    pub fn lose(&mut self, rng: &mut SimRng) -> bool {
        match self.model {
            LossModel::None => false,
            LossModel::Bernoulli(p) => rng.chance(p),
            LossModel::GilbertElliott(g) => {
                let flip = if self.bad { g.bad_to_good } else { g.good_to_bad };
                if rng.chance(flip) {
                    self.bad = !self.bad;
                }
                rng.chance(if self.bad { g.loss_bad } else { g.loss_good })
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
    use crate::rng::stream;

    #[test]
    fn rates_match_the_models() {
        let mut rng = stream(3, 3);
        let n = 200_000;
        let mut b = LossState::new(LossModel::Bernoulli(0.01));
        let lost = (0..n).filter(|_| b.lose(&mut rng)).count() as f64 / n as f64;
        assert!((lost - 0.01).abs() < 0.002, "{lost}");

        let ge = GilbertElliott::from_rate_and_burst(0.01, 5.0);
        assert!((ge.mean_loss() - 0.01).abs() < 1e-12);
        let mut g = LossState::new(LossModel::GilbertElliott(ge));
        let draws: Vec<bool> = (0..n).map(|_| g.lose(&mut rng)).collect();
        let lost = draws.iter().filter(|&&l| l).count();
        let bursts = draws.windows(2).filter(|w| w[1] && !w[0]).count();
        let rate = lost as f64 / n as f64;
        let mean_burst = lost as f64 / bursts as f64;
        assert!((rate - 0.01).abs() < 0.003, "{rate}");
        assert!((mean_burst - 5.0).abs() < 1.0, "{mean_burst}");
    }

    #[test]
    fn bernoulli_rate_is_near_p() {
        let mut rng = SimRng::seed(1);
        let mut loss = LossState::new(LossModel::Bernoulli(0.01));
        let n = 100_000;
        let lost = (0..n).filter(|_| loss.lose(&mut rng)).count();
        // Binomial sd = sqrt(n p (1-p)) ~ 31.5; allow 4 sd.
        assert!((lost as i64 - 1000).abs() < 126, "lost {lost}");
        let mut none = LossState::new(LossModel::None);
        assert!((0..1000).all(|_| !none.lose(&mut rng)));
    }

    #[test]
    fn gilbert_elliott_bursts_have_mean_one_over_bad_to_good() {
        let ge = GilbertElliott { good_to_bad: 0.01, bad_to_good: 0.25, loss_bad: 1.0, loss_good: 0.0 };
        let mut rng = SimRng::seed(2);
        let mut loss = LossState::new(LossModel::GilbertElliott(ge));
        let n = 200_000;
        let (mut lost, mut bursts, mut prev) = (0u64, 0u64, false);
        for _ in 0..n {
            let l = loss.lose(&mut rng);
            assert_eq!(l, loss.in_bad_state(), "all lost in bad, none in good");
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
        let ge = GilbertElliott { good_to_bad: 0.05, bad_to_good: 0.2, loss_bad: 0.5, loss_good: 0.01 };
        let mut rng = SimRng::seed(3);
        let mut loss = LossState::new(LossModel::GilbertElliott(ge));
        let n = 200_000;
        let lost = (0..n).filter(|_| loss.lose(&mut rng)).count();
        let rate = lost as f64 / n as f64;
        // 0.2 * 0.5 + 0.8 * 0.01 = 0.108
        assert!((rate - 0.108).abs() < 0.006, "rate {rate}");
        assert!((ge.mean_loss() - 0.108).abs() < 1e-12);
    }
}
