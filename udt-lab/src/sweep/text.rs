//! The sweep as text: one line per scenario, then each figure's distribution with the targets
//! that apply to it marked pass or FAIL; and several controllers' sweeps of the same draws side
//! by side.

use super::summary::Distribution;
use super::{ScenarioResult, SweepReport};

/// The figures in print order: (field, description).
const FIGURES: [(&str, &str); 6] = [
    ("utilization_single", "utilization, single flow"),
    ("utilization_multi", "utilization, multi-flow"),
    ("fairness", "fairness (Jain, UDT flows)"),
    ("friendliness", "TCP friendliness T (NewReno)"),
    ("friendliness_cubic", "TCP friendliness T (CUBIC)"),
    ("retransmissions_per_loss", "retransmissions per loss"),
];

/// The whole report.
pub fn render(r: &SweepReport) -> String {
    let b = &r.budget;
    let length = match b.time_s {
        Some(t) => format!("runs of {t} s"),
        None => format!("runs of {} RTTs of the longest RTT, at least {} s", b.run_rtts, b.min_time_s),
    };
    let mut out = format!(
        "sweep: {} scenarios, seed {}, cc {}\n  {length}, measured over the second half; at most {} data \
         packets per run; flows' window {} packets (the runtime's defaults)\n",
        r.count, r.seed, r.cc, b.max_packets, r.window_pkts
    );
    out.push_str(&format!(
        "{:>4} {:>8} {:>13} {:>6} {:>16} {:>13} {:>13} | {:>5} {:>6} {:>5} {:>5} {:>8} {:>6}\n",
        "#",
        "Mb/s",
        "RTT ms",
        "flows",
        "queue",
        "loss data",
        "loss ack",
        "util%",
        "F",
        "T",
        "Tc",
        "rtx/lost",
        "time s"
    ));
    for s in &r.scenarios {
        out.push_str(&line(s));
    }
    out.push_str(&format!(
        "\n{:<28} {:>4} {:>8} {:>8} {:>8}  targets\n",
        "figure", "n", "p5", "median", "p95"
    ));
    for (field, about) in FIGURES {
        let dist = r.summary.figure(field);
        let targets: Vec<String> = r
            .summary
            .targets
            .iter()
            .filter(|t| t.figure == field)
            .map(|t| {
                let verdict = match t.pass {
                    Some(true) => "pass",
                    Some(false) => "FAIL",
                    None => "n/a",
                };
                format!("{} >= {} {verdict}", t.statistic, t.at_least)
            })
            .collect();
        out.push_str(&format!("{about:<28} {}  {}\n", stats(dist), targets.join("; ")));
    }
    out.push_str(&format!(
        "capped: {} of {} scenarios; {:.1} s of wall time in runs (summed over threads)\n",
        r.summary.capped,
        r.count,
        r.wall_s()
    ));
    out
}

/// Several controllers' sweeps of the same scenarios (same seed and count), side by side: per
/// figure, each controller's median and, in parentheses, its 5th percentile.
pub fn render_peers(reports: &[SweepReport]) -> String {
    let Some(first) = reports.first() else { return String::new() };
    let width = reports.iter().map(|r| r.cc.len()).max().unwrap_or(0).max(15);
    let mut out = format!(
        "peers on the same {} scenarios of seed {}: median (p5)
{:<28}",
        first.count, first.seed, "figure"
    );
    for r in reports {
        out.push_str(&format!(" {:>width$}", r.cc));
    }
    out.push('\n');
    for (field, about) in FIGURES {
        out.push_str(&format!("{about:<28}"));
        for r in reports {
            let cell = r
                .summary
                .figure(field)
                .map_or_else(|| "-".to_string(), |d| format!("{:.3} ({:.3})", d.median, d.p5));
            out.push_str(&format!(" {cell:>width$}"));
        }
        out.push('\n');
    }
    out
}

fn stats(d: Option<Distribution>) -> String {
    match d {
        Some(d) => format!("{:>4} {:>8.4} {:>8.4} {:>8.4}", d.n, d.p5, d.median, d.p95),
        None => format!("{:>4} {:>8} {:>8} {:>8}", 0, "-", "-", "-"),
    }
}

fn line(s: &ScenarioResult) -> String {
    let d = &s.scenario;
    let o = &s.outcome;
    let opt = |v: Option<f64>, p: usize| v.map_or_else(|| "-".to_string(), |x| format!("{x:.p$}"));
    let all: Vec<f64> = d.udt_rtt_ms.iter().chain(&d.tcp_rtt_ms).copied().collect();
    let (lo, hi) = all.iter().fold((f64::MAX, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
    let rtt = if hi > lo { format!("{lo:.1}-{hi:.1}") } else { format!("{lo:.2}") };
    let flows = format!("{}{}", d.udt_rtt_ms.len(), if d.tcp_rtt_ms.is_some() { "+tcp" } else { "" });
    let queue = format!("{:.2} BDP {}", d.queue_bdp, d.queue_pkts);
    format!(
        "{:>4} {:>8.1} {:>13} {:>6} {:>16} {:>13} {:>13} | {:>5.1} {:>6} {:>5} {:>5} {:>8} {:>6.1}{}\n",
        d.index,
        d.bw_bps as f64 / 1e6,
        rtt,
        flows,
        queue,
        d.forward_loss.label(),
        d.reverse_loss.label(),
        o.utilization * 100.0,
        opt(o.fairness, 4),
        opt(o.friendliness, 2),
        opt(o.friendliness_cubic, 2),
        opt(o.retransmissions_per_loss, 2),
        o.plan.time.as_secs_f64(),
        if o.plan.capped { " capped" } else { "" },
    )
}
