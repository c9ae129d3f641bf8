//! The measures of thesis chapter 4 (docs/evaluation.md), as pure functions of throughputs.
//!
//! * efficiency E: the sum of the flows' average throughputs;
//! * Jain's fairness F = (sum x)^2 / (n sum x^2);
//! * stability S: the mean over flows of the sample standard deviation (m - 1) of a flow's
//!   per-interval throughput divided by its mean;
//! * TCP friendliness T: mean throughput of the TCP flows running beside UDT flows over the
//!   mean throughput of as many TCP flows running alone (the fair share of TCP);
//! * convergence: time from a flow's start until its throughput first reaches 90% of its fair
//!   share.
//!
//! Invariants: every function is total (empty or all-zero inputs give a defined value, never a
//! NaN): fairness of nothing is 1, stability of a silent flow is not counted.

/// Arithmetic mean (0 for no values).
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

/// Sample standard deviation (m - 1); 0 for fewer than two values.
pub fn sample_stddev(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    (xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64).sqrt()
}

/// Efficiency index: sum of average throughputs.
pub fn efficiency(avgs: &[f64]) -> f64 {
    avgs.iter().sum()
}

/// Jain's fairness index; 1 when there is nothing to compare.
pub fn jain(avgs: &[f64]) -> f64 {
    let sum: f64 = avgs.iter().sum();
    let sq: f64 = avgs.iter().map(|x| x * x).sum();
    if avgs.is_empty() || sq <= 0.0 {
        1.0
    } else {
        sum * sum / (avgs.len() as f64 * sq)
    }
}

/// Stability index over per-flow sample series; flows with a zero mean are left out.
pub fn stability(series: &[&[f64]]) -> f64 {
    let per_flow: Vec<f64> = series
        .iter()
        .filter_map(|s| {
            let m = mean(s);
            (m > 0.0 && s.len() >= 2).then(|| sample_stddev(s) / m)
        })
        .collect();
    mean(&per_flow)
}

/// TCP friendliness index: mean TCP throughput beside UDT over mean TCP throughput alone.
pub fn friendliness(tcp_beside_udt: &[f64], tcp_alone: &[f64]) -> Option<f64> {
    let alone = mean(tcp_alone);
    (!tcp_beside_udt.is_empty() && alone > 0.0).then(|| mean(tcp_beside_udt) / alone)
}

/// Index of the first sample at or after `from` whose value reaches `fraction` of `share(k)`,
/// the fair share at sample `k`.
pub fn first_reaching(
    samples: &[f64],
    from: usize,
    fraction: f64,
    share: impl Fn(usize) -> f64,
) -> Option<usize> {
    (from..samples.len()).find(|&k| samples[k] >= fraction * share(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_match_hand_computations() {
        assert_eq!(jain(&[10.0, 10.0, 10.0]), 1.0);
        assert!((jain(&[1.0, 0.0]) - 0.5).abs() < 1e-12);
        assert_eq!(jain(&[]), 1.0);
        assert_eq!(efficiency(&[1.0, 2.5]), 3.5);
        // samples 1, 2, 3: mean 2, sample stddev 1 -> 0.5; a constant flow 0.
        let a = [1.0, 2.0, 3.0];
        let b = [5.0, 5.0, 5.0];
        assert!((stability(&[&a, &b]) - 0.25).abs() < 1e-12);
        assert_eq!(stability(&[&[0.0, 0.0]]), 0.0);
        assert_eq!(friendliness(&[5.0], &[10.0, 10.0]), Some(0.5));
        assert_eq!(friendliness(&[], &[1.0]), None);
        assert_eq!(first_reaching(&[0.0, 50.0, 95.0, 99.0], 0, 0.9, |_| 100.0), Some(2));
        assert_eq!(first_reaching(&[0.0, 50.0], 0, 0.9, |_| 100.0), None);
    }
}
