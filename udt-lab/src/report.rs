//! Results of a scenario: one row of measures per run, printed as a table or written as JSON.
//!
//! JSON carries, per run, the parameters, each flow's mean throughput, utilization,
//! efficiency, fairness, stability, loss rate, convergence time, friendliness when TCP flows
//! take part, the thesis' figure for comparison when there is one, the wall time and the
//! simulation speed. Throughputs are Mb/s of IP packets of new data (see [`udt_sim::run`]).

use serde::Serialize;

use udt_sim::run::{Measures, RunTrace};

/// Parameters of one run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunParams {
    /// Bottleneck capacity, Mb/s.
    pub bw_mbps: f64,
    /// Round-trip propagation time of each flow, ms.
    pub rtt_ms: Vec<f64>,
    /// Random loss rate on the bottleneck.
    pub loss: f64,
    /// Queue discipline (`droptail` or `red`).
    pub queue: String,
    /// Queue limit, packets.
    pub queue_pkts: usize,
    /// Number of flows (CBR included).
    pub flows: usize,
    /// Congestion control(s).
    pub cc: String,
    /// Virtual time simulated, s.
    pub time_s: f64,
    /// Measures start after this, s.
    pub warmup_s: f64,
    /// Sampling interval, s.
    pub sample_s: f64,
    /// Seed.
    pub seed: u64,
    /// Jitter of the bottleneck's one-way delay each way, ms (uniform in +-jitter); left out
    /// when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<f64>,
    /// Every receiver behaved as UDT4 4.11's (`--udt4-receiver`); left out when not.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub udt4_receivers: bool,
}

/// One flow's result.
#[derive(Clone, Debug, Serialize)]
pub struct FlowResult {
    /// Label.
    pub label: String,
    /// Congestion control or `cbr`.
    pub cc: String,
    /// Start, s.
    pub start_s: f64,
    /// Stop, s.
    pub stop_s: Option<f64>,
    /// Mean throughput over the measurement window, Mb/s.
    pub mean_mbps: f64,
}

/// One run.
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    /// What varies in this run (e.g. `1000Mb/s 10ms`).
    pub label: String,
    /// Parameters.
    pub params: RunParams,
    /// Per-flow results.
    pub flows: Vec<FlowResult>,
    /// The measures.
    #[serde(flatten)]
    pub measures: Measures,
    /// The thesis' figure for this run, when it gives one.
    pub thesis: Option<String>,
    /// Wall-clock seconds.
    pub wall_s: f64,
    /// Datagrams handed to nodes.
    pub deliveries: u64,
    /// Deliveries per wall-clock second.
    pub deliveries_per_sec: f64,
    /// Data packets sent by the UDT flows.
    pub data_packets: u64,
    /// Hash of every delivery (hex).
    pub trace_hash: String,
    /// The samples (plots).
    #[serde(skip)]
    pub trace: Option<RunTrace>,
}

/// A scenario's results.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Scenario name.
    pub scenario: String,
    /// What it reproduces.
    pub about: String,
    /// What the thesis reports.
    pub thesis: String,
    /// Full (thesis-length) or short run.
    pub full: bool,
    /// Seed.
    pub seed: u64,
    /// The runs.
    pub runs: Vec<RunResult>,
    /// Remarks (how this differs from the thesis' set-up).
    pub notes: Vec<String>,
}

impl Report {
    /// Total wall-clock seconds of the runs (summed, even when they ran in parallel).
    pub fn wall_s(&self) -> f64 {
        self.runs.iter().map(|r| r.wall_s).sum()
    }

    /// Deliveries per wall-clock second over all runs.
    pub fn deliveries_per_sec(&self) -> f64 {
        let d: u64 = self.runs.iter().map(|r| r.deliveries).sum();
        d as f64 / self.wall_s().max(1e-9)
    }

    /// Data packets per wall-clock second over all runs.
    pub fn data_packets_per_sec(&self) -> f64 {
        let d: u64 = self.runs.iter().map(|r| r.data_packets).sum();
        d as f64 / self.wall_s().max(1e-9)
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// The table of measures, one row per run.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let mode = if self.full { "full, " } else { "" };
        out.push_str(&format!("{} ({mode}seed {})\n", self.scenario, self.seed));
        out.push_str(&format!("  {}\n  thesis: {}\n", self.about, self.thesis));
        let w = self.runs.iter().map(|r| r.label.len()).max().unwrap_or(3).max(3);
        out.push_str(&format!(
            "{:<w$} {:>5} {:>10} {:>9} {:>6} {:>7} {:>6} {:>8} {:>7} {:>6}  {}\n",
            "run", "flows", "cc", "E Mb/s", "util%", "F", "S", "loss%", "conv s", "T", "thesis"
        ));
        for r in &self.runs {
            let m = &r.measures;
            let opt = |v: Option<f64>, p: usize| v.map_or_else(|| "-".to_string(), |x| format!("{x:.p$}"));
            out.push_str(&format!(
                "{:<w$} {:>5} {:>10} {:>9.1} {:>6.1} {:>7.4} {:>6.3} {:>8.4} {:>7} {:>6}  {}\n",
                r.label,
                r.params.flows,
                truncate(&r.params.cc, 10),
                m.efficiency_mbps,
                m.utilization * 100.0,
                m.fairness,
                m.stability,
                m.loss_rate * 100.0,
                opt(m.convergence_s, 1),
                opt(m.friendliness, 2),
                r.thesis.as_deref().unwrap_or(""),
            ));
        }
        for n in &self.notes {
            out.push_str(&format!("  note: {n}\n"));
        }
        out.push_str(&format!(
            "  speed: {:.2} M deliveries/s, {:.2} M data packets/s ({:.1} s of wall time in {} runs)\n",
            self.deliveries_per_sec() / 1e6,
            self.data_packets_per_sec() / 1e6,
            self.wall_s(),
            // Rows that are views of another run (no deliveries of their own) are not runs.
            self.runs.iter().filter(|r| r.deliveries > 0).count()
        ));
        out
    }

    /// Per-flow mean throughputs of every run, one line each.
    pub fn flow_table(&self) -> String {
        let mut out = String::new();
        for r in &self.runs {
            let flows: Vec<String> =
                r.flows.iter().map(|f| format!("{} {:.1}", f.label, f.mean_mbps)).collect();
            out.push_str(&format!("{}: {}\n", r.label, flows.join(", ")));
        }
        out
    }
}

fn truncate(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}
