//! What one invocation of `udt bench` runs ([`Plan`]): the paths of the matrix (rate x RTT x
//! loss, in that nesting, so the paths of one rate are consecutive), the systems, the sending
//! time and the paths that get shared runs.
//!
//! Invariants: no two paths are equal (repeated values in a list count once); shared runs are
//! on at most one path per rate unless `--shared-all`, and never with `--quick` or
//! `--no-shared`.

use std::time::Duration;

use super::args::Args;
use super::path::{PathSpec, ReverseLoss};
use super::system::System;

/// What one invocation runs, after `--quick` and `--files` are applied.
pub struct Plan {
    /// The paths, grouped by rate.
    pub paths: Vec<PathSpec>,
    /// The systems, run on every path in this order.
    pub systems: Vec<System>,
    /// Sending time of each run.
    pub time: Duration,
    /// Indexes into `paths` that get shared runs.
    pub shared_on: Vec<usize>,
}

/// `xs` without repeats, in first-seen order.
fn distinct<T: PartialEq + Copy>(xs: &[T]) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(xs.len());
    for &x in xs {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

/// The heavy-loss cells of `--heavy-loss`, percent: from where a loss-based controller
/// collapses to where the link keeps only nine packets in ten.
const HEAVY_LOSSES: [f64; 3] = [3.0, 5.0, 10.0];

impl Plan {
    /// The plan of `args`.
    pub fn new(args: &Args) -> Plan {
        let (rates, rtts, losses, reverse, time, mut systems) = if args.quick {
            let systems = vec![System::Udt { cc: None }, System::Tcp { cc: "cubic".into() }];
            (vec![50_000_000], vec![20.0], vec![0.0], ReverseLoss::Percent(0.0), 3.0, systems)
        } else {
            let systems = if args.systems.is_empty() { System::defaults() } else { args.systems.clone() };
            (args.rate.clone(), args.rtt.clone(), args.loss.clone(), args.reverse_loss, args.time, systems)
        };
        systems.dedup();
        if args.files && !systems.contains(&System::UdtFile) {
            systems.push(System::UdtFile);
        }
        let mut losses = losses;
        if args.heavy_loss && !args.quick {
            losses.extend(HEAVY_LOSSES);
        }
        let (rtts, losses) = (distinct(&rtts), distinct(&losses));
        let mut paths = Vec::new();
        for &rate in &distinct(&rates) {
            for &rtt in &rtts {
                for &loss in &losses {
                    let mut path = PathSpec::new(rate, rtt, loss, reverse.of(loss));
                    path.rate_steps = args.rate_steps.clone().unwrap_or_default();
                    path.jitter_ms = if args.quick { 0.0 } else { args.jitter };
                    paths.push(path);
                }
            }
        }
        let shared_on = if args.quick || args.no_shared {
            Vec::new()
        } else if args.shared_all {
            (0..paths.len()).collect()
        } else {
            distinct(&rates).into_iter().filter_map(|rate| shared_path(&paths, rate)).collect()
        };
        Plan { paths, systems, time: Duration::from_secs_f64(time), shared_on }
    }
}

/// The path at `rate` for the shared runs: the 100 ms loss-free one, else the least lossy
/// (both ways) with the RTT nearest 100 ms.
fn shared_path(paths: &[PathSpec], rate: u64) -> Option<usize> {
    let score = |p: &PathSpec| (p.loss_percent + p.reverse_loss_percent, (p.rtt_ms - 100.0).abs());
    (0..paths.len())
        .filter(|&i| paths[i].rate_bps == rate)
        .min_by(|&a, &b| score(&paths[a]).partial_cmp(&score(&paths[b])).unwrap_or(std::cmp::Ordering::Equal))
}

#[cfg(test)]
mod tests {
    use super::super::args::parse;
    use super::*;

    fn plan(argv: &[&str]) -> Plan {
        Plan::new(&parse(argv).unwrap())
    }

    #[test]
    fn defaults_make_rates_x_rtts_x_losses_grouped_by_rate() {
        let p = plan(&[]);
        assert_eq!(p.paths.len(), 3 * 3 * 3);
        assert_eq!(p.systems.len(), 6);
        assert_eq!(p.time, Duration::from_secs(10));
        let rates: Vec<u64> = p.paths.iter().map(|p| p.rate_bps).collect();
        assert_eq!(&rates[..9], &[50_000_000; 9]);
        assert_eq!(&rates[9..18], &[100_000_000; 9]);
        assert_eq!(&rates[18..], &[200_000_000; 9]);
        let first: Vec<(f64, f64)> = p.paths[..4].iter().map(|p| (p.rtt_ms, p.loss_percent)).collect();
        assert_eq!(first, vec![(10.0, 0.0), (10.0, 0.1), (10.0, 1.0), (100.0, 0.0)]);
        let slugs: Vec<String> = p.paths.iter().map(PathSpec::slug).collect();
        assert!(slugs.iter().enumerate().all(|(i, s)| !slugs[..i].contains(s)), "{slugs:?}");
    }

    #[test]
    fn heavy_loss_adds_three_lossy_cells_to_every_rate_and_rtt() {
        let p = plan(&["--rate", "100mbit", "--rtt", "20", "--loss", "0,5%", "--heavy-loss"]);
        let cells: Vec<(f64, f64)> =
            p.paths.iter().map(|p| (p.loss_percent, p.reverse_loss_percent)).collect();
        assert_eq!(cells, vec![(0.0, 0.0), (5.0, 5.0), (3.0, 3.0), (10.0, 10.0)]);
        assert_eq!(plan(&["--heavy-loss"]).paths.len(), 3 * 3 * 6);
        assert_eq!(plan(&["--heavy-loss", "--quick"]).paths.len(), 1);
    }

    #[test]
    fn reverse_loss_defaults_to_the_data_loss_and_0_turns_it_off() {
        for path in plan(&[]).paths {
            assert_eq!(path.reverse_loss_percent, path.loss_percent);
        }
        let p = plan(&["--reverse-loss", "0"]);
        assert_eq!(p.paths.len(), 27);
        assert!(p.paths.iter().all(|p| p.reverse_loss_percent == 0.0));
        assert!(p.paths.iter().any(|p| p.loss_percent == 1.0));
        let p = plan(&["--loss", "0,1%", "--reverse-loss", "0.5%"]);
        let pairs: Vec<(f64, f64)> =
            p.paths[..2].iter().map(|p| (p.loss_percent, p.reverse_loss_percent)).collect();
        assert_eq!(pairs, vec![(0.0, 0.5), (1.0, 0.5)]);
    }

    #[test]
    fn shared_runs_on_each_rates_100ms_loss_free_path() {
        let p = plan(&[]);
        let shared: Vec<(u64, f64, f64, f64)> = p
            .shared_on
            .iter()
            .map(|&i| &p.paths[i])
            .map(|p| (p.rate_bps, p.rtt_ms, p.loss_percent, p.reverse_loss_percent))
            .collect();
        assert_eq!(
            shared,
            vec![
                (50_000_000, 100.0, 0.0, 0.0),
                (100_000_000, 100.0, 0.0, 0.0),
                (200_000_000, 100.0, 0.0, 0.0)
            ]
        );
        // Without a 100 ms loss-free path: the least lossy path nearest 100 ms, per rate.
        let p = plan(&["--rate", "100mbit", "--rtt", "10,300", "--loss", "1%,0.1%"]);
        assert_eq!(p.shared_on.len(), 1);
        assert_eq!((p.paths[p.shared_on[0]].rtt_ms, p.paths[p.shared_on[0]].loss_percent), (10.0, 0.1));
        assert_eq!(plan(&["--shared-all"]).shared_on.len(), 27);
        assert!(plan(&["--no-shared"]).shared_on.is_empty());
    }

    #[test]
    fn quick_is_one_loss_free_path_whatever_else_is_given() {
        let p = plan(&["--quick", "--rate", "1gbit,2gbit", "--loss", "1%", "--reverse-loss", "5%"]);
        assert_eq!(p.paths.len(), 1);
        let q = &p.paths[0];
        assert_eq!(
            (q.rate_bps, q.rtt_ms, q.loss_percent, q.reverse_loss_percent),
            (50_000_000, 20.0, 0.0, 0.0)
        );
        assert!(p.shared_on.is_empty());
        assert_eq!(p.systems.len(), 2);
        assert_eq!(p.time, Duration::from_secs(3));
    }

    #[test]
    fn repeats_count_once_and_files_add_the_file_system() {
        let p = plan(&["--rate", "100mbit,100mbit", "--rtt", "10,10ms", "--loss", "0,0%", "--files"]);
        assert_eq!(p.paths.len(), 1);
        assert!(p.systems.contains(&System::UdtFile));
    }
}
