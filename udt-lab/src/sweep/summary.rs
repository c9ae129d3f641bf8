//! The distribution of each figure over a sweep, and the benchmark targets next to it.
//!
//! Percentiles interpolate linearly between order statistics (the p-th percentile of n sorted
//! values sits at rank p (n - 1)); a figure no scenario has (e.g. friendliness when no TCP-like
//! flow was drawn) has no distribution. Utilization is split: single-flow scenarios (one UDT
//! flow, nothing beside it) and multi-flow ones (every other).
//!
//! The targets are the benchmark's acceptance thresholds for a controller, printed as pass or
//! fail; nothing here enforces them (tests do not check a controller's quality).

use serde::Serialize;

use super::draw::Drawn;
use super::measure::Outcome;

/// p5, median and p95 of a figure.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Distribution {
    /// Number of values.
    pub n: usize,
    /// 5th percentile.
    pub p5: f64,
    /// Median.
    pub median: f64,
    /// 95th percentile.
    pub p95: f64,
}

impl Distribution {
    /// The distribution of `values` (NaNs left out); `None` if there are none.
    pub fn of(values: &[f64]) -> Option<Self> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(Distribution {
            n: v.len(),
            p5: percentile(&v, 0.05),
            median: percentile(&v, 0.5),
            p95: percentile(&v, 0.95),
        })
    }

    /// The statistic called `name` (`p5`, `median`, `p95`).
    pub fn get(&self, name: &str) -> Option<f64> {
        match name {
            "p5" => Some(self.p5),
            "median" => Some(self.median),
            "p95" => Some(self.p95),
            _ => None,
        }
    }
}

/// The `q`-quantile of the non-empty sorted `v`, interpolated.
fn percentile(v: &[f64], q: f64) -> f64 {
    let rank = q * (v.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (rank - lo as f64)
}

/// One benchmark target.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Target {
    /// The figure (a field of [`Summary`]).
    pub figure: &'static str,
    /// The statistic (`p5`, `median`).
    pub statistic: &'static str,
    /// The threshold it must reach.
    pub at_least: f64,
    /// The sweep's value, when the figure has a distribution.
    pub value: Option<f64>,
    /// Whether it reaches the threshold; `None` without a value.
    pub pass: Option<bool>,
}

/// The benchmark's acceptance thresholds: (figure, statistic, at least).
pub const TARGETS: [(&str, &str, f64); 7] = [
    ("utilization_single", "median", 0.95),
    ("utilization_single", "p5", 0.85),
    ("fairness", "p5", 0.95),
    ("friendliness", "median", 0.8),
    ("friendliness", "p5", 0.5),
    ("friendliness_cubic", "median", 0.8),
    ("friendliness_cubic", "p5", 0.5),
];

/// The distributions of a sweep.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Utilization of single-flow scenarios.
    pub utilization_single: Option<Distribution>,
    /// Utilization of multi-flow scenarios.
    pub utilization_multi: Option<Distribution>,
    /// Jain's index among the UDT flows (two or more).
    pub fairness: Option<Distribution>,
    /// TCP friendliness (NewReno).
    pub friendliness: Option<Distribution>,
    /// TCP friendliness (CUBIC).
    pub friendliness_cubic: Option<Distribution>,
    /// Retransmissions per data packet dropped.
    pub retransmissions_per_loss: Option<Distribution>,
    /// Scenarios shortened to fit the packet cap.
    pub capped: usize,
    /// The targets, pass or fail.
    pub targets: Vec<Target>,
}

impl Summary {
    /// The summary of the scenarios `results`.
    pub fn of(results: &[(Drawn, Outcome)]) -> Self {
        let pick = |f: &dyn Fn(&Drawn, &Outcome) -> Option<f64>| -> Option<Distribution> {
            let v: Vec<f64> = results.iter().filter_map(|(d, o)| f(d, o)).collect();
            Distribution::of(&v)
        };
        let mut s = Summary {
            utilization_single: pick(&|d, o| (d.flows() == 1).then_some(o.utilization)),
            utilization_multi: pick(&|d, o| (d.flows() > 1).then_some(o.utilization)),
            fairness: pick(&|_, o| o.fairness),
            friendliness: pick(&|_, o| o.friendliness),
            friendliness_cubic: pick(&|_, o| o.friendliness_cubic),
            retransmissions_per_loss: pick(&|_, o| o.retransmissions_per_loss),
            capped: results.iter().filter(|(_, o)| o.plan.capped).count(),
            targets: Vec::new(),
        };
        s.targets = TARGETS
            .iter()
            .map(|&(figure, statistic, at_least)| {
                let value = s.figure(figure).and_then(|d| d.get(statistic));
                Target { figure, statistic, at_least, value, pass: value.map(|v| v >= at_least) }
            })
            .collect();
        s
    }

    /// The distribution called `name`.
    pub fn figure(&self, name: &str) -> Option<Distribution> {
        match name {
            "utilization_single" => self.utilization_single,
            "utilization_multi" => self.utilization_multi,
            "fairness" => self.fairness,
            "friendliness" => self.friendliness,
            "friendliness_cubic" => self.friendliness_cubic,
            "retransmissions_per_loss" => self.retransmissions_per_loss,
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_between_order_statistics() {
        let d = Distribution::of(&[3.0, 1.0, 2.0, 5.0, 4.0]).unwrap();
        assert_eq!((d.n, d.median), (5, 3.0));
        assert!((d.p5 - 1.2).abs() < 1e-12 && (d.p95 - 4.8).abs() < 1e-12, "{d:?}");
        let one = Distribution::of(&[0.7]).unwrap();
        assert_eq!((one.p5, one.median, one.p95), (0.7, 0.7, 0.7));
        assert_eq!(Distribution::of(&[]), None);
        assert_eq!(Distribution::of(&[f64::NAN]), None);
    }
}
