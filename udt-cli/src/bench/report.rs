//! The benchmark's results: rows per path and shared runs, printed as Markdown tables (the
//! paths under a heading per rate, each table headed by its path: rate, RTT, loss each way) or
//! as one JSON object (each path with its `rate_bps`, `loss_percent` and
//! `reverse_loss_percent`).
//!
//! Invariant: a row is exactly one of measured (`status` "ok", `flow` set), skipped (a
//! prerequisite is missing) or failed (`error` says why); a skipped or failed row never
//! stops the benchmark.

use serde::Serialize;
use udt_netem::{DirectionStats, EmulatorStats};

use super::flow::Flow;
use super::path::{mbps, PathSpec};
use super::shared::SharedRun;

/// How a row ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Measured.
    Ok,
    /// Not run: something it needs is missing.
    Skipped,
    /// Ran and failed.
    Failed,
}

/// One system on one path.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The system, as `--systems` names it.
    pub system: String,
    /// How it ended.
    pub status: Status,
    /// Why it was skipped or failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The measurement (with `--repeat`, the run with the median goodput).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow: Option<Flow>,
    /// With `--repeat`: every measured run's goodput, Mb/s, in run order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub goodputs_mbps: Vec<f64>,
    /// With `--repeat`: runs that failed while others were measured.
    #[serde(skip_serializing_if = "is_zero")]
    pub failed_runs: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Row {
    /// A row from a run's outcome; errors starting with `skipped: ` make skipped rows.
    pub fn from_result(system: String, result: anyhow::Result<Flow>) -> Row {
        match result {
            Ok(flow) => Row::measured(system, flow),
            Err(e) => {
                let text = format!("{e:#}");
                let (status, error) = match text.strip_prefix("skipped: ") {
                    Some(why) => (Status::Skipped, why.to_string()),
                    None => (Status::Failed, text),
                };
                Row {
                    system,
                    status,
                    error: Some(error),
                    flow: None,
                    goodputs_mbps: Vec::new(),
                    failed_runs: 0,
                }
            }
        }
    }

    fn measured(system: String, flow: Flow) -> Row {
        Row {
            system,
            status: Status::Ok,
            error: None,
            flow: Some(flow),
            goodputs_mbps: Vec::new(),
            failed_runs: 0,
        }
    }

    /// A row from repeated runs: the run with the median goodput (the lower middle one for an
    /// even count) and every run's goodput; the first error when none was measured.
    pub fn from_runs(system: String, runs: Vec<anyhow::Result<Flow>>) -> Row {
        let total = runs.len();
        let mut first_error = None;
        let mut flows = Vec::new();
        for run in runs {
            match run {
                Ok(f) => flows.push(f),
                Err(e) if first_error.is_none() => first_error = Some(e),
                Err(_) => {}
            }
        }
        if flows.is_empty() {
            let e = first_error.unwrap_or_else(|| anyhow::anyhow!("no run"));
            return Row::from_result(system, Err(e));
        }
        let goodputs: Vec<f64> = flows.iter().map(|f| f.goodput_mbps).collect();
        let mut order: Vec<usize> = (0..flows.len()).collect();
        order.sort_by(|&a, &b| goodputs[a].total_cmp(&goodputs[b]));
        let median = order[(order.len() - 1) / 2];
        let failed = (total - flows.len()) as u32;
        let mut row = Row::measured(system, flows.swap_remove(median));
        if total > 1 {
            row.goodputs_mbps = goodputs;
            row.failed_runs = failed;
        }
        row
    }
}

/// Everything measured on one path.
#[derive(Clone, Debug, Serialize)]
pub struct PathReport {
    /// The path.
    pub path: PathSpec,
    /// One row per system.
    pub rows: Vec<Row>,
    /// The emulator's counters over all runs on this path.
    pub emulator: Option<EmulatorStats>,
}

/// The whole benchmark.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The command line.
    pub command: String,
    /// Seconds of sending per run.
    pub time_s: f64,
    /// Per path.
    pub paths: Vec<PathReport>,
    /// Shared runs.
    pub shared: Vec<SharedRun>,
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.digits$}"))
}

/// `3.2e-3` style for small ratios, `0` for zero.
fn ratio(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(0.0) => "0".into(),
        Some(x) if x < 0.01 => format!("{x:.1e}"),
        Some(x) => format!("{x:.3}"),
    }
}

/// `; median of 3 runs: 90.1 / 92.4 / 93.0 Mb/s` for a repeated row.
fn runs_note(r: &Row) -> String {
    if r.goodputs_mbps.len() < 2 {
        return String::new();
    }
    let list: Vec<String> = r.goodputs_mbps.iter().map(|g| format!("{g:.1}")).collect();
    let failed = if r.failed_runs > 0 { format!(", {} failed", r.failed_runs) } else { String::new() };
    format!("; median of {} runs: {} Mb/s{failed}", r.goodputs_mbps.len(), list.join(" / "))
}

/// `emulator A to B over all runs: 574086 packets in, 0 random losses, ...` for one direction.
fn emulator_line(direction: &str, d: &DirectionStats) -> String {
    format!(
        "\nemulator {direction} over all runs: {} packets in, {} random losses, {} queue drops, {} kernel drops, release error p99 {:.2} ms\n",
        d.packets_in,
        d.lost,
        d.queue_drops,
        d.tun_drops.map_or("?".into(), |n| n.to_string()),
        d.release_error.p99_us / 1000.0
    )
}

/// The Markdown tables: the paths under a heading per rate, then the shared runs.
pub fn text(report: &Report) -> String {
    let mut s = String::new();
    let mut rate = None;
    for p in &report.paths {
        if rate != Some(p.path.rate_bps) {
            rate = Some(p.path.rate_bps);
            s.push_str(&format!("\n## {} Mb/s\n", mbps(p.path.rate_bps)));
        }
        s.push_str(&format!("\n### {}, {} s per run\n\n", p.path.label(), report.time_s));
        s.push_str(
            "| system | goodput Mb/s | goodput % | util % | retx/delivered | CPU s/GB send | CPU s/GB recv | note |\n",
        );
        s.push_str("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
        for r in &p.rows {
            match &r.flow {
                Some(f) => s.push_str(&format!(
                    "| {} | {:.1} | {:.1} | {:.1} | {} | {} | {} | {}{}{} |\n",
                    r.system,
                    f.goodput_mbps,
                    f.goodput_share * 100.0,
                    f.utilization * 100.0,
                    ratio(f.retx_per_delivered),
                    opt(f.cpu_send_s_per_gb, 1),
                    opt(f.cpu_recv_s_per_gb, 1),
                    f.note.as_deref().unwrap_or(""),
                    runs_note(r),
                    super::steps::text(&f.phases)
                )),
                None => s.push_str(&format!(
                    "| {} | - | - | - | - | - | - | {}: {} |\n",
                    r.system,
                    if r.status == Status::Skipped { "skipped" } else { "FAILED" },
                    r.error.as_deref().unwrap_or("").replace('|', "/")
                )),
            }
        }
        if let Some(e) = &p.emulator {
            s.push_str(&emulator_line("A to B", &e.a_to_b));
            s.push_str(&emulator_line("B to A", &e.b_to_a));
        }
    }
    if !report.shared.is_empty() {
        s.push_str("\n### Shared runs (flows started together)\n\n");
        s.push_str("| path | flows | goodputs Mb/s | shares % | total util % | Jain index |\n");
        s.push_str("| --- | --- | --- | --- | ---: | ---: |\n");
        for r in &report.shared {
            if let Some(e) = &r.error {
                s.push_str(&format!("| {} | {} | FAILED: {} | | | |\n", r.path, r.name, e.replace('|', "/")));
                continue;
            }
            let join = |f: &dyn Fn(&super::shared::SharedFlow) -> String| {
                r.flows.iter().map(f).collect::<Vec<_>>().join(" / ")
            };
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                r.path,
                r.name,
                join(&|f| format!("{:.1}", f.flow.goodput_mbps)),
                join(&|f| format!("{:.0}", f.share * 100.0)),
                opt(r.utilization.map(|u| u * 100.0), 1),
                opt(r.jain, 3)
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::flow::Raw;
    use super::*;

    /// A flow of `mbps` over one second on a 100 Mb/s link.
    fn flow(mbps: f64) -> anyhow::Result<Flow> {
        let raw = Raw { bytes: (mbps * 1e6 / 8.0) as u64, seconds: 1.0, ..Raw::default() };
        Ok(Flow::new(raw, 100_000_000, None, None))
    }

    #[test]
    fn repeated_runs_report_the_median_run_and_every_goodput() {
        let row = Row::from_runs("udt".into(), vec![flow(90.0), flow(70.0), flow(95.0)]);
        assert_eq!(row.status, Status::Ok);
        assert!((row.flow.as_ref().unwrap().goodput_mbps - 90.0).abs() < 1e-6);
        assert_eq!(row.goodputs_mbps.len(), 3);
        assert!(runs_note(&row).contains("median of 3 runs: 90.0 / 70.0 / 95.0 Mb/s"));
        // an even count takes the lower middle run; a failed run is counted, not hidden
        let row = Row::from_runs(
            "udt".into(),
            vec![flow(80.0), Err(anyhow::anyhow!("lost")), flow(60.0), flow(90.0), flow(70.0)],
        );
        assert!((row.flow.as_ref().unwrap().goodput_mbps - 70.0).abs() < 1e-6);
        assert_eq!(row.failed_runs, 1);
        assert!(runs_note(&row).ends_with(", 1 failed"));
    }

    #[test]
    fn a_single_run_or_no_measured_run_is_an_ordinary_row() {
        let row = Row::from_runs("udt".into(), vec![flow(90.0)]);
        assert!(row.goodputs_mbps.is_empty() && runs_note(&row).is_empty());
        let row = Row::from_runs(
            "udt4".into(),
            vec![Err(anyhow::anyhow!("skipped: no peer")), Err(anyhow::anyhow!("skipped: no peer"))],
        );
        assert_eq!((row.status, row.error.as_deref()), (Status::Skipped, Some("no peer")));
    }

    #[test]
    fn utilization_counts_each_systems_headers_and_the_goodput_share_does_not() {
        // UDT: 1456 payload bytes in each 1500-byte packet; 97.07 Mb/s of payload fills 100 Mb/s.
        let raw = Raw {
            bytes: (1456.0 / 1500.0 * 100e6 / 8.0) as u64,
            seconds: 1.0,
            payload_per_packet: Some(1456),
            ..Raw::default()
        };
        let f = Flow::new(raw, 100_000_000, None, None);
        assert!((f.goodput_share - 0.9707).abs() < 1e-4, "{}", f.goodput_share);
        assert!((f.utilization - 1.0).abs() < 1e-6, "{}", f.utilization);
        // TCP with timestamps: 1448 of 1500.
        let raw = Raw { bytes: 12_000_000, seconds: 1.0, payload_per_packet: Some(1448), ..Raw::default() };
        let f = Flow::new(raw, 100_000_000, None, None);
        assert!((f.utilization - 0.96 * 1500.0 / 1448.0).abs() < 1e-9);
        // Unknown framing: no headers are added.
        let f = flow(90.0).unwrap();
        assert_eq!(f.utilization, f.goodput_share);
        let report = Report {
            command: "udt bench".into(),
            time_s: 1.0,
            paths: vec![PathReport {
                path: PathSpec::new(100_000_000, 10.0, 0.0, 0.0),
                rows: vec![Row::measured("udt".into(), f)],
                emulator: None,
            }],
            shared: Vec::new(),
        };
        let table = text(&report);
        assert!(table.contains("| goodput Mb/s | goodput % | util % |"), "{table}");
    }

    #[test]
    fn tables_are_grouped_and_headed_by_rate() {
        let path = |rate, loss| PathReport {
            path: PathSpec::new(rate, 100.0, loss, loss),
            rows: vec![Row::from_result("udt".into(), Err(anyhow::anyhow!("skipped: no peer")))],
            emulator: None,
        };
        let report = Report {
            command: "udt bench".into(),
            time_s: 10.0,
            paths: vec![
                path(50_000_000, 0.0),
                path(50_000_000, 1.0),
                path(100_000_000, 0.0),
                path(100_000_000, 1.0),
            ],
            shared: Vec::new(),
        };
        let table = text(&report);
        assert_eq!(table.matches("\n## ").count(), 2, "{table}");
        let (fifty, hundred) =
            (table.find("\n## 50 Mb/s\n").unwrap(), table.find("\n## 100 Mb/s\n").unwrap());
        assert!(fifty < hundred);
        let heading =
            "### 100 Mb/s, RTT 100 ms, loss 1% / 1% (A to B / B to A), queue 834 packets, 10 s per run";
        assert!(table[hundred..].contains(heading), "{table}");
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["paths"][2]["path"]["rate_bps"], 100_000_000);
        assert_eq!(json["paths"][3]["path"]["reverse_loss_percent"], 1.0);
    }
}
