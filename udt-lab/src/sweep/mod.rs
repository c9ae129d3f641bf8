//! The sweep: random scenarios nobody tuned on, drawn deterministically from a seed, each
//! measured for utilization, fairness, TCP friendliness and retransmission efficiency, and the
//! distribution of each figure over the sample next to the benchmark's targets
//! (`udt sim sweep --count N --seed S`).
//!
//! * [`mod@draw`]: what a scenario is and how it is drawn;
//! * [`budget`]: how long it runs and the cap on its work;
//! * [`measure`]: running it (and its TCP-only twin) and its figures;
//! * [`summary`]: the distributions and the targets; [`text`]: the human-readable report.
//!
//! Invariants: a sweep is a function of its seed, count, controller and budget: scenario `i`
//! is drawn from the seed and `i` alone, every run is an independent simulation seeded by its
//! scenario, and runs spread over threads ([`SweepConfig::jobs`]) come back in order, so
//! everything but the wall times repeats exactly.

pub mod budget;
pub mod draw;
pub mod measure;
pub mod summary;
pub mod text;

use serde::Serialize;
use udt_proto::connection::Config;

use crate::scenario::{execute_in_order, AnyJob};
use udt_sim::flow::CcChoice;

pub use budget::{Budget, Plan};
pub use draw::{draw, Drawn, Loss};
pub use measure::{Outcome, RunFigures};
pub use summary::{Distribution, Summary, Target};

/// What to sweep.
#[derive(Clone, Debug)]
pub struct SweepConfig {
    /// Number of scenarios.
    pub count: usize,
    /// Seed of the draws.
    pub seed: u64,
    /// Controller of the UDT flows.
    pub cc: CcChoice,
    /// Run lengths and the packet cap.
    pub budget: Budget,
    /// Runs in parallel.
    pub jobs: usize,
}

impl SweepConfig {
    /// `count` scenarios of `seed` with the default controller, budget and parallelism.
    pub fn new(count: usize, seed: u64) -> Self {
        SweepConfig {
            count,
            seed,
            cc: CcChoice::default_cc(),
            budget: Budget::default(),
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// One scenario and its figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScenarioResult {
    /// The scenario.
    pub scenario: Drawn,
    /// Its figures.
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// A sweep's results.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepReport {
    /// Controller of the UDT flows (catalog specification).
    pub cc: String,
    /// Seed of the draws.
    pub seed: u64,
    /// Number of scenarios.
    pub count: usize,
    /// The budget.
    pub budget: Budget,
    /// Every flow's window (smallest of its buffers and flow window), packets: the runtime's
    /// default configuration.
    pub window_pkts: u32,
    /// Every scenario.
    pub scenarios: Vec<ScenarioResult>,
    /// The distributions and targets.
    pub summary: Summary,
}

impl SweepReport {
    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// Wall-clock seconds of every run, summed (even when they ran in parallel).
    pub fn wall_s(&self) -> f64 {
        self.scenarios
            .iter()
            .map(|s| s.outcome.run.wall_s + s.outcome.baseline.as_ref().map_or(0.0, |b| b.wall_s))
            .sum()
    }
}

/// A flow's window with the runtime's default configuration, packets.
pub fn default_window() -> u32 {
    let c = Config::default();
    c.send_buffer_pkts.min(c.recv_buffer_pkts).min(c.flow_window)
}

/// Run the sweep.
pub fn run(config: &SweepConfig) -> Result<SweepReport, String> {
    let window = default_window();
    let drawn: Vec<Drawn> = (0..config.count).map(|i| draw(config.seed, i)).collect();
    let plans: Vec<Plan> = drawn.iter().map(|d| config.budget.plan(d, window)).collect();
    let mut jobs: Vec<AnyJob<RunFigures>> = Vec::new();
    let mut cost: Vec<u64> = Vec::new();
    // Per scenario: the index of its run and, with a TCP-like flow, of the first of its three
    // other runs (NewReno only; beside CUBIC; CUBIC only).
    let mut slots: Vec<(usize, Option<usize>)> = Vec::new();
    for (d, plan) in drawn.iter().zip(&plans) {
        let run = measure::dumbbell(d, plan, config.cc, CcChoice::newreno());
        let mut runs = vec![run.clone()];
        if d.tcp_rtt_ms.is_some() {
            let beside_cubic = measure::dumbbell(d, plan, config.cc, CcChoice::cubic());
            runs.push(measure::baseline(&run, CcChoice::newreno()));
            runs.push(measure::baseline(&beside_cubic, CcChoice::cubic()));
            runs.push(beside_cubic);
        }
        slots.push((jobs.len(), (runs.len() > 1).then_some(jobs.len() + 1)));
        for r in runs {
            jobs.push(Box::new(move || measure::run_figures(&r)));
            cost.push(plan.packet_bound);
        }
    }
    // The longest first, so no thread is left alone with one at the end.
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(cost[i]));
    let mut figures: Vec<Option<RunFigures>> =
        execute_in_order(jobs, &order, config.jobs)?.into_iter().map(Some).collect();
    let mut results: Vec<(Drawn, Outcome)> = Vec::with_capacity(drawn.len());
    for ((d, plan), (main, twin)) in drawn.into_iter().zip(plans).zip(slots) {
        let run = figures[main].take().ok_or("a run is missing")?;
        let baseline = twin.and_then(|t| figures[t].take());
        let cubic = twin.and_then(|t| Some((figures[t + 2].take()?, figures[t + 1].take()?)));
        let outcome = measure::outcome(&d, plan, run, baseline, cubic);
        results.push((d, outcome));
    }
    let summary = Summary::of(&results);
    Ok(SweepReport {
        cc: config.cc.label(),
        seed: config.seed,
        count: config.count,
        budget: config.budget,
        window_pkts: window,
        scenarios: results
            .into_iter()
            .map(|(scenario, outcome)| ScenarioResult { scenario, outcome })
            .collect(),
        summary,
    })
}
