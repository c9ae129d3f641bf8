//! `udt sim`: run the simulator's scenarios (thesis chapter 4 experiments) in virtual time.
//!
//! `udt sim list` names them; `udt sim fig4-3 [--json] [--svg FILE] [--seed N] [--full]` runs
//! one, with free-form parameters (`--bw --rtt --loss --queue --flows --time --cc ...`). The
//! simulator is deterministic: the seed is printed with the results and the same seed gives the
//! same numbers (`UDT_SIM_SEED` also sets it).

use std::path::PathBuf;

use anyhow::{anyhow, Result};
use udt_sim::rng::seed_from_env;
use udt_sim::scenario::{self, Params, SCENARIOS};

/// Arguments of `udt sim`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scenario name (`list` shows them): fig4-2, fig4-3, fig4-4, ...
    pub scenario: String,
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
    /// Mean loss burst in packets (Gilbert-Elliott loss).
    #[arg(long, value_name = "PKTS")]
    pub burst: Option<String>,
    /// Bottleneck queue in packets (default max(BDP, 10)).
    #[arg(long, value_name = "PKTS")]
    pub queue: Option<String>,
    /// Number of flows.
    #[arg(long, value_name = "N")]
    pub flows: Option<String>,
    /// Virtual seconds per run.
    #[arg(long, value_name = "S")]
    pub time: Option<String>,
    /// Congestion control of the UDT flows, `NAME[:key=value,...]` from the catalog (`udt cc
    /// list`): `udt`, `daimd:noisy=true`, `newreno:ack=1`, `blast:rate=50m`, ... Default: the
    /// scenario's (`udt_proto::cc::DEFAULT_CC` unless the scenario is about another algorithm).
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
        return Ok(());
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
