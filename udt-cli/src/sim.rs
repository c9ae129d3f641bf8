//! `udt sim`: run the simulator's scenarios (thesis chapter 4 experiments) in virtual time.
//!
//! `udt sim list` names them; `udt sim fig4-3 [--json] [--svg FILE] [--seed N] [--full]` runs
//! one, with free-form parameters (`--bw --rtt --loss --queue --flows --time --cc ...`).
//! `udt sim sweep --count N --seed S [--json] [--time S] [--max-packets N] [--cc SPEC]` runs N
//! random scenarios drawn from the seed and prints each one's figures and their distributions
//! (`udt_sim::sweep`). `--cc` takes the catalog's specifications (`udt cc list`), default
//! `udt_cc::DEFAULT_CC`. The simulator is deterministic: the seed is printed with the
//! results and the same seed gives the same numbers (`UDT_SIM_SEED` also sets it).

use std::path::PathBuf;

use anyhow::{anyhow, Result};
use udt_sim::rng::seed_from_env;
use udt_sim::scenario::{self, Params, SCENARIOS};
use udt_sim::sweep::{self, SweepConfig};
use udt_sim::CcChoice;

/// Arguments of `udt sim`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scenario name (`list` shows them): fig4-2, fig4-3, fig4-4, ..., or `sweep`.
    pub scenario: String,
    /// `sweep`: number of random scenarios (default 20).
    #[arg(long, value_name = "N")]
    pub count: Option<usize>,
    /// `sweep`: cap on the data packets of one run (runs that would exceed it are shortened).
    #[arg(long, value_name = "N")]
    pub max_packets: Option<u64>,
    /// Print one JSON object (parameters, each flow's throughput, the measures) on stdout; the
    /// table goes to standard error.
    #[arg(long)]
    pub json: bool,
    /// Write a throughput-over-time plot per flow (SVG).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Also print one line per flow.
    #[arg(long)]
    pub flows_table: bool,
    /// Seed (default 1, or UDT_SIM_SEED).
    #[arg(long)]
    pub seed: Option<u64>,
    /// The thesis' durations and full grids instead of the short defaults.
    #[arg(long)]
    pub full: bool,
    /// RED instead of DropTail at the bottleneck.
    #[arg(long)]
    pub red: bool,
    /// Bottleneck capacity, Mb/s.
    #[arg(long, value_name = "MBPS")]
    pub bw: Option<String>,
    /// Round-trip propagation time, ms.
    #[arg(long, value_name = "MS")]
    pub rtt: Option<String>,
    /// Random loss rate of the bottleneck (0.01 = 1%).
    #[arg(long, value_name = "P")]
    pub loss: Option<String>,
    /// Mean loss burst in packets (Gilbert-Elliott loss), for both directions.
    #[arg(long, value_name = "PKTS")]
    pub burst: Option<String>,
    /// Random loss rate of the way back from the receiver: ACKs, NAKs (0.01 = 1%).
    #[arg(long, value_name = "P")]
    pub reverse_loss: Option<String>,
    /// Bottleneck queue in packets (default max(BDP, 10)).
    #[arg(long, value_name = "PKTS")]
    pub queue: Option<String>,
    /// Number of flows.
    #[arg(long, value_name = "N")]
    pub flows: Option<String>,
    /// Virtual seconds per run (`sweep`: every scenario's, instead of 100 RTTs, at least 10 s).
    #[arg(long, value_name = "S")]
    pub time: Option<String>,
    /// Congestion control of the UDT flows, `NAME[:key=value,...]` from the catalog (`udt cc
    /// list`): `udt`, `daimd:noisy=true`, `newreno:ack=1`, `blast:rate=50m`, ... Default: the
    /// scenario's (`udt_cc::DEFAULT_CC` unless the scenario is about another algorithm).
    #[arg(long, value_name = "SPEC")]
    pub cc: Option<String>,
    /// Runs in parallel.
    #[arg(long, value_name = "N")]
    pub jobs: Option<String>,
    /// Capture the bottleneck of the first run to this pcap file.
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<String>,
}

/// Run `udt sim`.
pub fn run(a: &Args) -> Result<()> {
    if a.scenario == "list" {
        for sc in SCENARIOS {
            println!("{:<12} {}", sc.name, sc.about);
        }
        let sweep = "random scenarios from a seed (--count N): utilization, fairness, T, retransmissions";
        println!("{:<12} {sweep}", "sweep");
        for (name, about) in crate::sim_seeds::EXPERIMENTS {
            println!("{name:<12} {about}");
        }
        return Ok(());
    }
    if crate::sim_seeds::is_experiment(&a.scenario) {
        return crate::sim_seeds::run(a);
    }
    if a.scenario == "sweep" {
        return run_sweep(a);
    }
    if a.count.is_some() || a.max_packets.is_some() {
        return Err(anyhow!("--count and --max-packets are for `udt sim sweep`"));
    }
    let mut params = Params {
        seed: a.seed.unwrap_or_else(|| seed_from_env(1)),
        full: a.full,
        red: a.red,
        ..Params::default()
    };
    let pairs = [
        ("bw", &a.bw),
        ("rtt", &a.rtt),
        ("loss", &a.loss),
        ("burst", &a.burst),
        ("reverse-loss", &a.reverse_loss),
        ("queue", &a.queue),
        ("flows", &a.flows),
        ("time", &a.time),
        ("cc", &a.cc),
        ("jobs", &a.jobs),
        ("pcap", &a.pcap),
    ];
    for (key, value) in pairs {
        if let Some(v) = value {
            params.set(key, v).map_err(|e| anyhow!("--{key}: {e}"))?;
        }
    }
    let seed = params.seed;
    let report = scenario::run(&a.scenario, &params).map_err(|e| {
        anyhow!("{e} (seed {seed}; replay with --seed {seed}); `udt sim list` names the scenarios")
    })?;
    let mut table = report.table();
    if a.flows_table {
        table.push_str(&report.flow_table());
    }
    if a.json {
        eprint!("{table}");
        println!("{}", report.to_json());
    } else {
        print!("{table}");
    }
    if let Some(path) = &a.svg {
        udt_sim::plot::svg(&report, path).map_err(|e| anyhow!("plot: {e}"))?;
        eprintln!("plot written to {}", path.display());
    }
    Ok(())
}

/// Run `udt sim sweep`.
fn run_sweep(a: &Args) -> Result<()> {
    let unused = [
        ("bw", a.bw.is_some()),
        ("rtt", a.rtt.is_some()),
        ("loss", a.loss.is_some()),
        ("burst", a.burst.is_some()),
        ("reverse-loss", a.reverse_loss.is_some()),
        ("queue", a.queue.is_some()),
        ("flows", a.flows.is_some()),
        ("pcap", a.pcap.is_some()),
        ("svg", a.svg.is_some()),
        ("red", a.red),
        ("full", a.full),
        ("flows-table", a.flows_table),
    ];
    if let Some((flag, _)) = unused.iter().find(|(_, given)| *given) {
        return Err(anyhow!("--{flag} does not apply to the sweep, which draws its scenarios"));
    }
    let mut config = SweepConfig::new(a.count.unwrap_or(20), a.seed.unwrap_or_else(|| seed_from_env(1)));
    if let Some(spec) = &a.cc {
        config.cc = CcChoice::parse(spec).map_err(|e| anyhow!("--cc: {e}"))?;
    }
    if let Some(t) = &a.time {
        let t: f64 = t.parse().map_err(|e| anyhow!("--time {t:?}: {e}"))?;
        if !(t > 0.0 && t.is_finite()) {
            return Err(anyhow!("--time must be positive"));
        }
        config.budget.time_s = Some(t);
    }
    if let Some(n) = a.max_packets {
        config.budget.max_packets = n.max(1);
    }
    if let Some(j) = &a.jobs {
        config.jobs = j.parse::<usize>().map_err(|e| anyhow!("--jobs {j:?}: {e}"))?.max(1);
    }
    let seed = config.seed;
    let report = sweep::run(&config).map_err(|e| anyhow!("{e} (seed {seed})"))?;
    let text = sweep::text::render(&report);
    if a.json {
        eprint!("{text}");
        println!("{}", report.to_json());
    } else {
        print!("{text}");
    }
    Ok(())
}
