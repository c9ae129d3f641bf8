//! The benchmark's results: rows per path and shared runs, printed as Markdown tables or as
//! one JSON object.
//!
//! Invariant: a row is exactly one of measured (`status` "ok", `flow` set), skipped (a
//! prerequisite is missing) or failed (`error` says why); a skipped or failed row never
//! stops the benchmark.

use serde::Serialize;
use udt_netem::EmulatorStats;

use super::flow::Flow;
use super::path::PathSpec;
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
    /// The measurement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow: Option<Flow>,
}

impl Row {
    /// A row from a run's outcome; errors starting with `skipped: ` make skipped rows.
    pub fn from_result(system: String, result: anyhow::Result<Flow>) -> Row {
        match result {
            Ok(flow) => Row { system, status: Status::Ok, error: None, flow: Some(flow) },
            Err(e) => {
                let text = format!("{e:#}");
                match text.strip_prefix("skipped: ") {
                    Some(why) => Row { system, status: Status::Skipped, error: Some(why.into()), flow: None },
                    None => Row { system, status: Status::Failed, error: Some(text), flow: None },
                }
            }
        }
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

/// The Markdown tables.
pub fn text(report: &Report) -> String {
    let mut s = String::new();
    for p in &report.paths {
        s.push_str(&format!("\n### {}, {} s per run\n\n", p.path.label(), report.time_s));
        s.push_str(
            "| system | goodput Mb/s | util % | retx/delivered | CPU s/GB send | CPU s/GB recv | note |\n",
        );
        s.push_str("| --- | ---: | ---: | ---: | ---: | ---: | --- |\n");
        for r in &p.rows {
            match &r.flow {
                Some(f) => s.push_str(&format!(
                    "| {} | {:.1} | {:.1} | {} | {} | {} | {} |\n",
                    r.system,
                    f.goodput_mbps,
                    f.utilization * 100.0,
                    ratio(f.retx_per_delivered),
                    opt(f.cpu_send_s_per_gb, 1),
                    opt(f.cpu_recv_s_per_gb, 1),
                    f.note.as_deref().unwrap_or("")
                )),
                None => s.push_str(&format!(
                    "| {} | - | - | - | - | - | {}: {} |\n",
                    r.system,
                    if r.status == Status::Skipped { "skipped" } else { "FAILED" },
                    r.error.as_deref().unwrap_or("").replace('|', "/")
                )),
            }
        }
        if let Some(e) = &p.emulator {
            let d = &e.a_to_b;
            s.push_str(&format!(
                "\nemulator A to B over all runs: {} packets in, {} random losses, {} queue drops, {} kernel drops, release error p99 {:.2} ms\n",
                d.packets_in,
                d.lost,
                d.queue_drops,
                d.tun_drops.map_or("?".into(), |n| n.to_string()),
                d.release_error.p99_us / 1000.0
            ));
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
