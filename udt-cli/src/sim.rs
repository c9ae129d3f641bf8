//! `udt sim`: run `udt-lab`'s experiments (thesis chapter 4) in the simulator, in virtual time.
//!
//! `udt sim list` names them; `udt sim fig4-3 [--json] [--svg FILE] [--seed N] [--full]` runs
//! one, with free-form parameters (`--rate --rtt --loss --queue --flows --time --cc ...`, in
//! the grammar of [`udt_units`]: `--rate 100mbit`, `--rtt 100ms`, `--loss 1%`).
//! `udt sim sweep --count N --seed S [--json] [--time S] [--max-packets N] [--cc SPEC]` runs N
//! random scenarios drawn from the seed and prints each one's figures and their distributions
//! (`udt_lab::sweep`). `--cc` takes the catalog's specifications (`udt cc list`), default
//! `udt_cc::DEFAULT_CC`; for the sweep, several comma-separated (`--cc udt,bbr`), which run the
//! same scenarios and print side by side. The simulator is deterministic: the seed is printed with the
//! results and the same seed gives the same numbers (`UDT_SIM_SEED` also sets it).

use anyhow::{anyhow, Result};
use udt_lab::scenario::{self, Params, SCENARIOS};
use udt_lab::sweep::{self, SweepConfig};
use udt_sim::rng::seed_from_env;
use udt_sim::CcChoice;

pub use crate::sim_args::Args;

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
    let mut params = Params {
        seed: a.seed.unwrap_or_else(|| seed_from_env(1)),
        full: a.full,
        red: a.red,
        udt4_receivers: a.udt4_receiver,
        ..Params::default()
    };
    params.bw_mbps = a.bw;
    params.rtt_ms = a.rtt;
    params.loss = a.loss;
    params.burst = a.burst;
    params.reverse_loss = a.reverse_loss;
    params.jitter_ms = a.jitter;
    params.queue_pkts = a.queue;
    params.flows = a.flows;
    params.time_s = a.time;
    if let Some(spec) = &a.cc {
        params.cc = Some(CcChoice::parse(spec).map_err(|e| anyhow!("--cc: {e}"))?);
    }
    if let Some(jobs) = a.jobs {
        params.jobs = jobs.max(1);
    }
    params.pcap = a.pcap.as_ref().map(std::path::PathBuf::from);
    params.validate().map_err(|e| anyhow!("{e}"))?;
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
        udt_lab::plot::svg(&report, path).map_err(|e| anyhow!("plot: {e}"))?;
        eprintln!("plot written to {}", path.display());
    }
    Ok(())
}

/// The usage errors `udt sim` finds before running (exit 2): an unknown scenario, flags the
/// scenario does not take, a `--cc` the catalog refuses.
pub fn check_usage(a: &Args) -> Result<(), String> {
    let known = a.scenario == "list"
        || a.scenario == "sweep"
        || SCENARIOS.iter().any(|sc| sc.name == a.scenario)
        || crate::sim_seeds::is_experiment(&a.scenario);
    if !known {
        return Err(format!("no scenario {:?}: `udt sim list` names them", a.scenario));
    }
    if a.scenario != "sweep" && (a.count.is_some() || a.max_packets.is_some()) {
        return Err("--count and --max-packets are for `udt sim sweep`".into());
    }
    if a.scenario == "sweep" {
        let unused = [
            ("rate (--bw)", a.bw.is_some()),
            ("rtt", a.rtt.is_some()),
            ("loss", a.loss.is_some()),
            ("burst", a.burst.is_some()),
            ("reverse-loss", a.reverse_loss.is_some()),
            ("jitter", a.jitter.is_some()),
            ("queue", a.queue.is_some()),
            ("flows", a.flows.is_some()),
            ("pcap", a.pcap.is_some()),
            ("svg", a.svg.is_some()),
            ("red", a.red),
            ("udt4-receiver", a.udt4_receiver),
            ("full", a.full),
            ("flows-table", a.flows_table),
        ];
        if let Some((flag, _)) = unused.iter().find(|(_, given)| *given) {
            return Err(format!("--{flag} does not apply to the sweep, which draws its scenarios"));
        }
    }
    if let Some(spec) = &a.cc {
        let specs = if a.scenario == "sweep" { split_specs(spec) } else { vec![spec.clone()] };
        for spec in specs {
            CcChoice::parse(&spec).map_err(|e| format!("--cc: {e}"))?;
        }
    }
    Ok(())
}

/// A comma-separated list of catalog specifications: a piece with `=` and no `:` continues the
/// previous one's parameters (`daimd:noisy=true,x=1,bbr` is `daimd:noisy=true,x=1` and `bbr`).
fn split_specs(list: &str) -> Vec<String> {
    let mut specs: Vec<String> = Vec::new();
    for piece in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match specs.last_mut() {
            Some(last) if piece.contains('=') && !piece.contains(':') => {
                last.push(',');
                last.push_str(piece);
            }
            _ => specs.push(piece.to_string()),
        }
    }
    specs
}

/// Run `udt sim sweep`.
fn run_sweep(a: &Args) -> Result<()> {
    let mut config = SweepConfig::new(a.count.unwrap_or(20), a.seed.unwrap_or_else(|| seed_from_env(1)));
    if let Some(t) = a.time {
        config.budget.time_s = Some(t);
    }
    if let Some(n) = a.max_packets {
        config.budget.max_packets = n.max(1);
    }
    if let Some(j) = a.jobs {
        config.jobs = j.max(1);
    }
    let specs = a.cc.as_deref().map_or_else(Vec::new, split_specs);
    let ccs = if specs.is_empty() {
        vec![config.cc]
    } else {
        specs.iter().map(|s| CcChoice::parse(s).map_err(|e| anyhow!("--cc: {e}"))).collect::<Result<_>>()?
    };
    let seed = config.seed;
    let mut reports = Vec::with_capacity(ccs.len());
    for cc in ccs {
        config.cc = cc;
        let report = sweep::run(&config).map_err(|e| anyhow!("{e} (seed {seed})"))?;
        let text = sweep::text::render(&report);
        if a.json {
            eprint!("{text}");
        } else {
            print!("{text}");
        }
        reports.push(report);
    }
    if reports.len() > 1 {
        let peers = sweep::text::render_peers(&reports);
        if a.json {
            eprint!("\n{peers}");
        } else {
            print!("\n{peers}");
        }
    }
    if a.json {
        match reports.as_slice() {
            [one] => println!("{}", one.to_json()),
            many => {
                let all: Vec<serde_json::Value> =
                    many.iter().map(|r| serde_json::from_str(&r.to_json())).collect::<Result<_, _>>()?;
                println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "peers": all }))?);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::split_specs;

    #[test]
    fn a_list_of_specifications_keeps_each_ones_parameters() {
        assert_eq!(split_specs("udt,bbr"), ["udt", "bbr"]);
        assert_eq!(split_specs("daimd:noisy=true,x=1,bbr, cubic"), ["daimd:noisy=true,x=1", "bbr", "cubic"]);
        assert_eq!(split_specs("newreno:ack=1"), ["newreno:ack=1"]);
        assert!(split_specs(",").is_empty());
    }
}
