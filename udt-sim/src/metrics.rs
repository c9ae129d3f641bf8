//! The measures of thesis chapter 4, as pure functions of throughputs.
//!
//! * efficiency E: the sum of the flows' average throughputs;
//! * Jain's fairness F = (sum x)^2 / (n sum x^2);
//! * stability S: the mean over flows of the sample standard deviation (m - 1) of a flow's
//!   per-interval throughput divided by its mean;
//! * TCP friendliness T: mean throughput of the TCP flows running beside UDT flows over the
//!   mean throughput of as many TCP flows running alone (the fair share of TCP);
//! * convergence: time from a flow's start until its throughput first reaches 90% of its fair
//!   share;
//! * max-min fair shares of flows over a network of links (the fair share of a multi-bottleneck
//!   topology, Fig. 4-9 / 4-10), and Jain's index of throughputs normalised by those shares.
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

/// Max-min fair shares by progressive filling: every flow's rate grows at the same pace until a
/// link it crosses is full, then stays. `paths[f]` lists the indices into `capacities` of the
/// links flow f crosses. A flow that crosses no link is unconstrained (infinity); indices past
/// `capacities` are ignored.
pub fn max_min_shares(capacities: &[f64], paths: &[&[usize]]) -> Vec<f64> {
    let crosses = |f: usize, l: usize| paths[f].contains(&l);
    let mut share = vec![0.0; paths.len()];
    let mut frozen: Vec<bool> = paths.iter().map(|p| !p.iter().any(|&l| l < capacities.len())).collect();
    let mut left: Vec<f64> = capacities.iter().map(|c| c.max(0.0)).collect();
    while frozen.iter().any(|f| !f) {
        let active = |l: usize| (0..paths.len()).filter(|&f| !frozen[f] && crosses(f, l)).count();
        // The smallest equal increment that fills some link.
        let step = (0..left.len())
            .filter(|&l| active(l) > 0)
            .map(|l| left[l] / active(l) as f64)
            .fold(f64::INFINITY, f64::min);
        let full: Vec<usize> =
            (0..left.len()).filter(|&l| active(l) > 0 && left[l] / active(l) as f64 <= step).collect();
        let used: Vec<f64> = (0..left.len()).map(|l| step * active(l) as f64).collect();
        for (rest, used) in left.iter_mut().zip(used) {
            *rest -= used;
        }
        for f in 0..paths.len() {
            if !frozen[f] {
                share[f] += step;
                frozen[f] = full.iter().any(|&l| crosses(f, l));
            }
        }
    }
    for (f, p) in paths.iter().enumerate() {
        if !p.iter().any(|&l| l < capacities.len()) {
            share[f] = f64::INFINITY;
        }
    }
    share
}

/// Jain's index of `avgs[i] / shares[i]` (Jain's own normalisation by the fair allocation): 1
/// when every flow gets exactly its share, whatever the shares are. Pairs whose share is not
/// positive and finite are left out.
pub fn jain_normalised(avgs: &[f64], shares: &[f64]) -> f64 {
    let ratios: Vec<f64> =
        avgs.iter().zip(shares).filter(|(_, &s)| s > 0.0 && s.is_finite()).map(|(&x, &s)| x / s).collect();
    jain(&ratios)
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

    #[test]
    fn max_min_shares_fill_the_tightest_links_first() {
        // Fig. 4-9 at x = 80: AB crosses the shared 200 Mb/s link, AC that one and the 80 Mb/s one.
        assert_eq!(max_min_shares(&[200.0, 80.0], &[&[0], &[0, 1]]), vec![120.0, 80.0]);
        // A parking lot with a long flow: it gets half of the 10 Mb/s link, the rest fill up.
        let s = max_min_shares(&[100.0, 10.0, 100.0], &[&[0, 1, 2], &[0], &[1], &[2]]);
        assert_eq!(s, vec![5.0, 95.0, 5.0, 95.0]);
        assert_eq!(max_min_shares(&[10.0], &[&[]]), vec![f64::INFINITY]);
        assert!((jain_normalised(&[90.0, 5.0], &[90.0, 5.0]) - 1.0).abs() < 1e-12);
        assert!((jain_normalised(&[45.0, 5.0], &[90.0, 5.0]) - jain(&[0.5, 1.0])).abs() < 1e-12);
    }
}
