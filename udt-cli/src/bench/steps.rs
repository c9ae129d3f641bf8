//! `--rate-steps`: the bottleneck's rate changing during each run, in path-relative terms (a
//! factor of the path's rate from a time on), and how a flow followed it: its goodput in each
//! phase, and how long after each change the bottleneck's queueing delay took to fall back
//! under a quarter of the path's RTT.
//!
//! Invariants: steps come in increasing time with factors above zero; the emulator's schedule
//! restarts as each run is launched, so a step's time counts from the run's start (the
//! transfer itself starts a few hundred milliseconds later, the time its programs take to
//! start); phases cover the run from 0 to its end, one per step and one before the first.

use serde::Serialize;

use super::flow::{Flow, Point};
use udt_netem::RateStep;

/// From `at_s` seconds into the run, the bottleneck runs at `factor` times the path's rate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RateChange {
    /// Seconds since the run's start.
    pub at_s: f64,
    /// Of the path's rate.
    pub factor: f64,
}

/// `TIME:FACTOR,...`: `5s:50%,10s:100%` (a bare time is seconds; a factor is a fraction, `0.5`,
/// or a percentage, `50%`, up to 10 times the path's rate).
pub fn parse(s: &str) -> Result<Vec<RateChange>, String> {
    let mut steps: Vec<RateChange> = Vec::new();
    for pair in s.split(',').map(str::trim) {
        let (at, factor) =
            pair.split_once(':').ok_or_else(|| format!("{pair:?}: a step is TIME:FACTOR, e.g. 5s:50%"))?;
        let at_s = udt_units::parse_duration(at.trim(), Some(udt_units::TimeUnit::Secs))
            .map_err(|e| e.to_string())?
            .as_secs_f64();
        let factor = match factor.trim().strip_suffix('%') {
            Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
            None => factor.trim().parse::<f64>(),
        }
        .map_err(|_| format!("{factor:?}: a factor of the path's rate, 0.5 or 50%"))?;
        if !(factor > 0.0 && factor <= 10.0) {
            return Err(format!("{factor}: the factor must be above 0 and at most 10"));
        }
        if steps.last().is_some_and(|last| last.at_s >= at_s) {
            return Err(format!("{s:?}: steps come in increasing time"));
        }
        steps.push(RateChange { at_s, factor });
    }
    Ok(steps)
}

/// The emulator's steps for a path of `rate_bps`.
pub fn emulator_steps(steps: &[RateChange], rate_bps: u64) -> Vec<RateStep> {
    steps
        .iter()
        .map(|s| RateStep {
            at: std::time::Duration::from_secs_f64(s.at_s),
            rate_bps: ((rate_bps as f64 * s.factor).round() as u64).max(1000),
        })
        .collect()
}

/// One stretch of a run at one rate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Phase {
    /// Seconds since the run's start.
    pub from_s: f64,
    /// Its end (the run's last interval for the last phase).
    pub to_s: f64,
    /// The bottleneck's rate, Mb/s.
    pub link_mbps: f64,
    /// The flow's mean goodput over the phase's intervals, Mb/s.
    pub goodput_mbps: Option<f64>,
    /// Seconds from the phase's start until the bottleneck's queueing delay was back under a
    /// quarter of the RTT (a bucket's longest wait), if it was within the phase.
    pub queue_settled_s: Option<f64>,
}

/// The phases of a run on a path of `rate_bps` and `rtt_ms`, from the flow's intervals and the
/// data direction's queueing delay per [`udt_netem::Timeline::BUCKET`].
pub fn phases(
    steps: &[RateChange],
    rate_bps: u64,
    rtt_ms: f64,
    intervals: &[Point],
    queue_ms: &[f64],
) -> Vec<Phase> {
    let bucket_s = udt_netem::Timeline::BUCKET.as_secs_f64();
    let end = intervals.last().map_or(0.0, |p| p.t).max(queue_ms.len() as f64 * bucket_s);
    let mut bounds: Vec<(f64, f64)> = vec![(0.0, 1.0)];
    bounds.extend(steps.iter().filter(|s| s.at_s < end).map(|s| (s.at_s, s.factor)));
    let mut out = Vec::with_capacity(bounds.len());
    for (i, &(from_s, factor)) in bounds.iter().enumerate() {
        let to_s = bounds.get(i + 1).map_or(end, |b| b.0);
        let inside: Vec<f64> =
            intervals.iter().filter(|p| p.t > from_s && p.t <= to_s).map(|p| p.mbps).collect();
        let goodput_mbps = (!inside.is_empty()).then(|| inside.iter().sum::<f64>() / inside.len() as f64);
        let first = (from_s / bucket_s).ceil() as usize;
        let last = ((to_s / bucket_s).floor() as usize).min(queue_ms.len());
        let queue_settled_s = (first..last)
            .find(|&k| queue_ms[k] <= rtt_ms / 4.0)
            .map(|k| (k as f64 * bucket_s - from_s).max(0.0));
        out.push(Phase {
            from_s,
            to_s,
            link_mbps: rate_bps as f64 * factor / 1e6,
            goodput_mbps,
            queue_settled_s,
        });
    }
    out
}

/// `f` with the queueing delay it met and its phases, for a run on a path with `steps`.
pub fn annotate(mut f: Flow, steps: &[RateChange], rate_bps: u64, rtt_ms: f64, queue_ms: Vec<f64>) -> Flow {
    f.phases = phases(steps, rate_bps, rtt_ms, &f.intervals, &queue_ms);
    f.queue_delay_ms = queue_ms;
    f
}

/// One line per phase for the text report.
pub fn text(phases: &[Phase]) -> String {
    phases
        .iter()
        .map(|p| {
            format!(
                "{:.1}-{:.1} s at {:.1} Mb/s: {} Mb/s, queue under RTT/4 {}",
                p.from_s,
                p.to_s,
                p.link_mbps,
                p.goodput_mbps.map_or_else(|| "-".into(), |g| format!("{g:.1}")),
                p.queue_settled_s.map_or_else(|| "never".into(), |s| format!("after {s:.1} s")),
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_parse_in_path_relative_terms() {
        let s = parse("5s:50%, 10:1").unwrap();
        assert_eq!(s, vec![RateChange { at_s: 5.0, factor: 0.5 }, RateChange { at_s: 10.0, factor: 1.0 }]);
        for bad in ["5s", "5s:0", "5s:11", "10s:50%,5s:1", "x:1", "5s:half"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let e = emulator_steps(&s, 100_000_000);
        assert_eq!((e[0].rate_bps, e[1].rate_bps), (50_000_000, 100_000_000));
    }

    #[test]
    fn phases_read_goodput_and_the_queues_settling() {
        let steps = parse("1s:50%,2s:100%").unwrap();
        let intervals: Vec<Point> = (1..=30)
            .map(|k| Point { t: k as f64 * 0.1, mbps: if k <= 10 || k > 20 { 90.0 } else { 45.0 } })
            .collect();
        // RTT 40 ms: settled under 10 ms. The halving leaves 30 ms for 0.3 s.
        let mut queue = vec![2.0; 30];
        for q in &mut queue[10..13] {
            *q = 30.0;
        }
        let p = phases(&steps, 100_000_000, 40.0, &intervals, &queue);
        assert_eq!(p.len(), 3);
        assert_eq!((p[1].from_s, p[1].to_s, p[1].link_mbps), (1.0, 2.0, 50.0));
        assert!((p[1].goodput_mbps.unwrap() - 45.0).abs() < 1e-9);
        assert!((p[1].queue_settled_s.unwrap() - 0.3).abs() < 1e-9, "{p:?}");
        assert_eq!(p[0].queue_settled_s, Some(0.0));
        assert!(text(&p).contains("at 50.0 Mb/s: 45.0 Mb/s, queue under RTT/4 after 0.3 s"), "{}", text(&p));
    }
}
