//! Random loss on a link: Bernoulli, and Gilbert-Elliott for bursts.
//!
//! A loss model decides, packet by packet, whether a packet that has been serialised is lost on
//! the wire (a link error, not a congestion drop). Gilbert-Elliott is a two-state Markov chain
//! (good, bad) stepped once per packet, each state with its own loss probability.

use crate::rng::{chance, SimRng};

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

    /// Long-run loss rate.
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
#[derive(Debug)]
pub(crate) struct LossState {
    model: LossModel,
    bad: bool,
}

impl LossState {
    pub(crate) fn new(model: LossModel) -> Self {
        LossState { model, bad: false }
    }

    /// Whether the next packet is lost.
    #[inline]
    pub(crate) fn lose(&mut self, rng: &mut SimRng) -> bool {
        match self.model {
            LossModel::None => false,
            LossModel::Bernoulli(p) => chance(rng, p),
            LossModel::GilbertElliott(g) => {
                let flip = if self.bad { g.bad_to_good } else { g.good_to_bad };
                if chance(rng, flip) {
                    self.bad = !self.bad;
                }
                chance(rng, if self.bad { g.loss_bad } else { g.loss_good })
            }
        }
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
}
