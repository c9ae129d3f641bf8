//! The named experiments of thesis chapter 4, and free-form runs.
//!
//! Every scenario takes [`Params`]: the free-form parameters (bw, rtt, loss, queue, flows, time,
//! cc, seed, ...) override the scenario's own values (a grid dimension given a value shrinks to
//! that value), `full` selects the thesis' durations and complete grids instead of the short
//! defaults that keep tests and demos quick. A scenario returns a [`Report`]: one row of
//! measures per run.
//!
//! Invariants: a scenario's runs are independent simulations, each a function of its
//! parameters and the seed, so running them in parallel ([`Params::jobs`]) changes nothing but
//! the wall time.

mod dumbbell;
mod dynamics;
mod efficiency;
mod errors;
mod exec;
mod fairness;
mod friendliness;
mod parking;
mod similarity;

use std::path::PathBuf;
use std::time::Duration;

use crate::report::Report;
use udt_sim::flow::CcChoice;

pub use dumbbell::{run_result, DumbbellRun, FlowDef, QueueChoice};
pub use exec::{execute, execute_any, execute_in_order, AnyJob, Job};
pub use parking::{
    parking_lot_bottleneck, parking_lot_shares, PARKING_LOT_FLOWS, PARKING_LOT_MBPS, TABLE_4_2,
};

/// Free-form parameters; `None` keeps the scenario's value.
#[derive(Clone, Debug)]
pub struct Params {
    /// Bottleneck capacity, Mb/s.
    pub bw_mbps: Option<f64>,
    /// Round-trip propagation time, ms.
    pub rtt_ms: Option<f64>,
    /// Random (non-congestion) loss rate of the bottleneck.
    pub loss: Option<f64>,
    /// Mean loss burst in packets: Gilbert-Elliott loss instead of Bernoulli.
    pub burst: Option<f64>,
    /// Random loss rate of the way back (ACKs, NAKs, ACK2s), with the same burst model.
    pub reverse_loss: Option<f64>,
    /// Jitter of the one-way delay in each direction, ms: uniform in +-jitter, never reordering
    /// (the emulator's `--jitter`).
    pub jitter_ms: Option<f64>,
    /// Queue limit in packets (default max(BDP, 10)).
    pub queue_pkts: Option<usize>,
    /// RED instead of DropTail.
    pub red: bool,
    /// Every receiver behaves as UDT4 4.11's (`FlowSpec::udt4_receiver`): no reports beyond
    /// UDT4's, whatever the sender's controller asks for.
    pub udt4_receivers: bool,
    /// Number of flows.
    pub flows: Option<usize>,
    /// Virtual time per run, s.
    pub time_s: Option<f64>,
    /// Measures start after this, s.
    pub warmup_s: Option<f64>,
    /// Sampling interval, s.
    pub sample_s: Option<f64>,
    /// Congestion control (a catalog specification); `None`: the scenario's, which is
    /// [`CcChoice::default_cc`] unless the scenario is about another algorithm (Fig. 4-16: the
    /// thesis' noisy-link option; Table 5-2 and the TCP side of the friendliness runs: NewReno).
    pub cc: Option<CcChoice>,
    /// Seed.
    pub seed: u64,
    /// Thesis durations and full grids.
    pub full: bool,
    /// Runs in parallel.
    pub jobs: usize,
    /// Capture the bottleneck of the first run to this pcap file.
    pub pcap: Option<PathBuf>,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            bw_mbps: None,
            rtt_ms: None,
            loss: None,
            burst: None,
            reverse_loss: None,
            jitter_ms: None,
            queue_pkts: None,
            red: false,
            udt4_receivers: false,
            flows: None,
            time_s: None,
            warmup_s: None,
            sample_s: None,
            cc: None,
            seed: 1,
            full: false,
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            pcap: None,
        }
    }
}

impl Params {
    /// Set one parameter by name: `bw`, `rtt`, `loss`, `burst`, `reverse-loss`, `jitter`, `queue`, `red`,
    /// `udt4-receiver`, `flows`, `time`,
    /// `warmup`, `sample`, `cc`, `seed`, `full`, `jobs`, `pcap`.
    /// An invalid value leaves the parameters unchanged.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let mut next = self.clone();
        next.set_unchecked(key, value)?;
        next.validate()?;
        *self = next;
        Ok(())
    }

    fn set_unchecked(&mut self, key: &str, value: &str) -> Result<(), String> {
        fn num<T: std::str::FromStr>(key: &str, v: &str) -> Result<T, String>
        where
            T::Err: std::fmt::Display,
        {
            v.parse().map_err(|e| format!("{key} {v:?}: {e}"))
        }
        match key {
            "bw" => self.bw_mbps = Some(num(key, value)?),
            "rtt" => self.rtt_ms = Some(num(key, value)?),
            "loss" => self.loss = Some(num(key, value)?),
            "burst" => self.burst = Some(num(key, value)?),
            "reverse-loss" => self.reverse_loss = Some(num(key, value)?),
            "jitter" => self.jitter_ms = Some(num(key, value)?),
            "queue" => self.queue_pkts = Some(num(key, value)?),
            "red" => self.red = num(key, value)?,
            "udt4-receiver" => self.udt4_receivers = num(key, value)?,
            "flows" => self.flows = Some(num(key, value)?),
            "time" => self.time_s = Some(num(key, value)?),
            "warmup" => self.warmup_s = Some(num(key, value)?),
            "sample" => self.sample_s = Some(num(key, value)?),
            "cc" => self.cc = Some(CcChoice::parse(value)?),
            "seed" => self.seed = num(key, value)?,
            "full" => self.full = num(key, value)?,
            "jobs" => self.jobs = num::<usize>(key, value)?.max(1),
            "pcap" => self.pcap = Some(PathBuf::from(value)),
            _ => return Err(format!("unknown parameter {key:?}")),
        }
        Ok(())
    }

    /// Check the values.
    pub fn validate(&self) -> Result<(), String> {
        if self.loss.is_some_and(|l| !(0.0..1.0).contains(&l)) {
            return Err("loss must be in [0, 1)".into());
        }
        if self.reverse_loss.is_some_and(|l| !(0.0..1.0).contains(&l)) {
            return Err("reverse-loss must be in [0, 1)".into());
        }
        if self.jitter_ms.is_some_and(|j| !(0.0..=60_000.0).contains(&j)) {
            return Err("jitter must be between 0 and 60 s".into());
        }
        if self.bw_mbps.is_some_and(|b| b <= 0.0) || self.rtt_ms.is_some_and(|r| r < 0.0) {
            return Err("bw must be positive and rtt not negative".into());
        }
        if self.time_s.is_some_and(|t| t <= 0.0) || self.sample_s.is_some_and(|t| t <= 0.0) {
            return Err("time and sample must be positive".into());
        }
        Ok(())
    }

    /// Run length: the parameter, else `short` or `full` seconds.
    pub fn time(&self, short: f64, full: f64) -> Duration {
        secs(self.time_s.unwrap_or(if self.full { full } else { short }))
    }

    /// Warm-up: the parameter, else `fraction` of `time`.
    pub fn warmup(&self, time: Duration, fraction: f64) -> Duration {
        self.warmup_s.map_or(time.mul_f64(fraction), secs).min(time)
    }

    /// Sampling interval: the parameter, else `default` seconds.
    pub fn sample(&self, default: f64) -> Duration {
        secs(self.sample_s.unwrap_or(default))
    }

    /// The values of one grid dimension: the override alone, else the short or full list.
    pub fn grid<T: Copy>(&self, over: Option<T>, short: &[T], full: &[T]) -> Vec<T> {
        match over {
            Some(v) => vec![v],
            None if self.full => full.to_vec(),
            None => short.to_vec(),
        }
    }
}

/// Seconds as a duration (negative and NaN are zero).
pub fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or(Duration::ZERO)
}

/// Milliseconds as a duration.
pub fn ms(v: f64) -> Duration {
    secs(v / 1000.0)
}

/// A named experiment.
#[derive(Clone, Copy)]
pub struct Scenario {
    /// Name (`fig4-3`).
    pub name: &'static str,
    /// One line on what it reproduces.
    pub about: &'static str,
    /// Run it.
    pub run: fn(&Params) -> Result<Report, String>,
}

impl std::fmt::Debug for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scenario").field("name", &self.name).finish()
    }
}

/// Every named scenario.
pub const SCENARIOS: &[Scenario] = &[
    Scenario { name: "fig4-2", about: efficiency::FIG4_2, run: efficiency::fig4_2 },
    Scenario { name: "fig4-3", about: efficiency::FIG4_3, run: efficiency::fig4_3 },
    Scenario { name: "fig4-4", about: fairness::FIG4_4, run: fairness::fig4_4 },
    Scenario { name: "fig4-6", about: fairness::FIG4_6, run: fairness::fig4_6 },
    Scenario { name: "fig4-7", about: fairness::FIG4_7, run: fairness::fig4_7 },
    Scenario { name: "fig4-8", about: dynamics::FIG4_8, run: dynamics::fig4_8 },
    Scenario { name: "fig4-9", about: dynamics::FIG4_9, run: dynamics::fig4_9 },
    Scenario { name: "fig4-10", about: parking::FIG4_10, run: parking::fig4_10 },
    Scenario { name: "fig4-11", about: friendliness::FIG4_11, run: friendliness::fig4_11 },
    Scenario { name: "fig4-12", about: efficiency::FIG4_12, run: efficiency::fig4_12 },
    Scenario { name: "fig4-13", about: friendliness::FIG4_13, run: friendliness::fig4_13 },
    Scenario { name: "fig4-14", about: efficiency::FIG4_14, run: efficiency::fig4_14 },
    Scenario { name: "fig4-15", about: errors::FIG4_15, run: errors::fig4_15 },
    Scenario { name: "fig4-16", about: errors::FIG4_16, run: errors::fig4_16 },
    Scenario { name: "convergence", about: efficiency::CONVERGENCE, run: efficiency::convergence },
    Scenario { name: "table5-2", about: similarity::TABLE5_2, run: similarity::table5_2 },
    Scenario { name: "custom", about: efficiency::CUSTOM, run: efficiency::custom },
];

/// The scenario called `name`.
pub fn find(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

/// Run the scenario called `name`.
pub fn run(name: &str, params: &Params) -> Result<Report, String> {
    let s = find(name).ok_or_else(|| {
        let names: Vec<&str> = SCENARIOS.iter().map(|s| s.name).collect();
        format!("unknown scenario {name:?}; known: {}", names.join(", "))
    })?;
    (s.run)(params)
}

/// A report shell for scenario `name`.
pub(crate) fn report(name: &str, about: &str, thesis: &str, p: &Params) -> Report {
    Report {
        scenario: name.to_string(),
        about: about.to_string(),
        thesis: thesis.to_string(),
        full: p.full,
        seed: p.seed,
        runs: Vec::new(),
        notes: Vec::new(),
    }
}
