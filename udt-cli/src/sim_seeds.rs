//! `udt sim ren-size|ren-loss|ren-rtt|rbudp-model|fobs-acks|beside-tcp`: the seed papers'
//! comparisons in the simulator ([`udt_lab::seeds`]): a table (or JSON with `--json`) and,
//! with `--svg FILE`, a plot of goodput against the varied value.
//!
//! Free-form parameters: `--rate` (default 1000 Mb/s), `--rtt` (default 300 ms), `--loss`
//! (default 0.1%) for what does not vary, `--time` (seconds before a transfer is given up,
//! default 60), `--seed`, `--jobs`, `--full` (the papers' whole ranges, and 1 GB files instead
//! of 200 MB where the size does not vary).

use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use serde::Serialize;
use udt_lab::seeds::{self, Axis, Setup};
use udt_sim::rng::seed_from_env;
use udt_sim::transfer::TransferResult;

use crate::sim_args::Args;

/// The experiments this module runs, with one line each for `udt sim list`.
pub const EXPERIMENTS: &[(&str, &str)] = &[
    (
        "ren-size",
        "Ren et al. Fig. 2: RBUDP, Tsunami, UDT, TCP, FOBS goodput vs file size, 1 Gb/s, 300 ms, 0.1%",
    ),
    ("ren-loss", "Ren et al. Fig. 4: the same vs random loss 0-1%"),
    ("ren-rtt", "Ren et al. Fig. 5: the same vs RTT 2-600 ms"),
    (
        "rbudp-model",
        "He et al.: RBUDP's B/B_send against 1/(1 + RTT x B_send / S_total), and its resend rounds",
    ),
    (
        "fobs-acks",
        "Dickens et al.: FOBS segmented acks over TCP vs whole-chunk maps over UDP, loss both ways",
    ),
    (
        "beside-tcp",
        "each protocol beside a TCP CUBIC flow on one bottleneck: what the blast protocols do to TCP",
    ),
];

/// Whether `name` is one of these experiments.
pub fn is_experiment(name: &str) -> bool {
    EXPERIMENTS.iter().any(|(n, _)| *n == name)
}

/// Run the experiment `a.scenario`.
pub fn run(a: &Args) -> Result<()> {
    let mut setup = Setup { seed: a.seed.unwrap_or_else(|| seed_from_env(1)), ..Setup::default() };
    if let Some(bw) = a.bw {
        setup.bw_bps = (bw * 1e6) as u64;
    }
    if let Some(rtt) = a.rtt {
        setup.rtt = Duration::from_secs_f64(rtt / 1e3);
    }
    if let Some(loss) = a.loss {
        setup.loss = loss;
    }
    if let Some(t) = a.time {
        setup.limit = Duration::from_secs_f64(t.max(0.1));
    }
    if let Some(j) = a.jobs {
        setup.jobs = j.max(1);
    }
    let name = a.scenario.as_str();
    let axis = match name {
        "ren-size" => Some(Axis::Size),
        "ren-loss" => Some(Axis::Loss),
        "ren-rtt" => Some(Axis::Rtt),
        _ => None,
    };
    let seed = setup.seed;
    let fail = |e: String| anyhow!("{e} (seed {seed})");
    if let Some(axis) = axis {
        if a.full && axis != Axis::Size {
            // Ren et al. moved a 4.5 GB file; the full runs move 1 GB, enough for every
            // protocol's start-up to stop mattering at 1 Gb/s.
            setup.size = 1_000_000_000;
        }
        let values = seeds::grid(axis, a.full);
        let results = seeds::ren(axis, &values, &setup).map_err(fail)?;
        let x_of: fn(&TransferResult) -> f64 = match axis {
            Axis::Size => |r| r.size as f64 / 1e6,
            Axis::Loss => |r| r.loss * 100.0,
            Axis::Rtt => |r| r.rtt_ms,
        };
        let x_label = match axis {
            Axis::Size => "file size, MB",
            Axis::Loss => "random loss, %",
            Axis::Rtt => "RTT, ms",
        };
        emit(a, name, &setup, &results, &transfer_table(&results))?;
        if let Some(path) = &a.svg {
            let title = format!("{name}: {} Mb/s (simulated)", setup.bw_bps as f64 / 1e6);
            udt_lab::seeds_plot::lines(&results, x_of, x_label, &title, path).map_err(|e| anyhow!(e))?;
            eprintln!("plot written to {}", path.display());
        }
        return Ok(());
    }
    match name {
        "rbudp-model" => {
            let sizes: &[u64] = if a.full {
                &[1_000_000, 10_000_000, 100_000_000, 1_000_000_000]
            } else {
                &[1_000_000, 10_000_000, 100_000_000]
            };
            let rtts: &[f64] = if a.full { &[1.0, 10.0, 50.0, 100.0, 300.0] } else { &[10.0, 100.0, 300.0] };
            let rows = seeds::rbudp_model(&setup, sizes, rtts, &[0.001, 0.01, 0.05]).map_err(fail)?;
            let mut t = String::from(
                "| run | B/B_send measured | model | resend rounds | model rounds | sent/needed |\n| --- | ---: | ---: | ---: | ---: | ---: |\n",
            );
            for r in &rows {
                t.push_str(&format!(
                    "| {} | {:.3} | {:.3} | {} | {:.2} | {:.3} |\n",
                    r.run.label,
                    r.measured_ratio,
                    r.model_ratio,
                    r.resend_rounds,
                    r.model_rounds,
                    r.run.sent_per_needed
                ));
            }
            emit(a, name, &setup, &rows, &t)?;
            if let Some(path) = &a.svg {
                udt_lab::seeds_plot::rbudp_model(&rows, path).map_err(|e| anyhow!(e))?;
                eprintln!("plot written to {}", path.display());
            }
        }
        "fobs-acks" => {
            let losses: &[f64] =
                if a.full { &[0.0, 0.001, 0.005, 0.01, 0.02, 0.05] } else { &[0.001, 0.01, 0.02] };
            let results = seeds::fobs_acks(&setup, losses).map_err(fail)?;
            emit(a, name, &setup, &results, &transfer_table(&results))?;
            if let Some(path) = &a.svg {
                let title = "FOBS acknowledgement schemes (simulated)";
                udt_lab::seeds_plot::lines(
                    &results,
                    |r| r.loss * 100.0,
                    "random loss both ways, %",
                    title,
                    path,
                )
                .map_err(|e| anyhow!(e))?;
                eprintln!("plot written to {}", path.display());
            }
        }
        "beside-tcp" => {
            let results = seeds::beside_tcp(&setup).map_err(fail)?;
            emit(a, name, &setup, &results, &transfer_table(&results))?;
            if let Some(path) = &a.svg {
                let alone =
                    results.iter().find(|r| r.competitor_mbps.is_none()).map_or(0.0, |r| r.goodput_mbps);
                udt_lab::seeds_plot::beside(&results, alone, path).map_err(|e| anyhow!(e))?;
                eprintln!("plot written to {}", path.display());
            }
        }
        _ => bail!("unknown experiment {name:?}"),
    }
    Ok(())
}

/// The table of transfers.
fn transfer_table(results: &[TransferResult]) -> String {
    let mut t = String::from(
        "| run | protocol | goodput Mb/s | time s | completed | sent/needed | competitor Mb/s |\n\
         | --- | --- | ---: | ---: | --- | ---: | ---: |\n",
    );
    for r in results {
        t.push_str(&format!(
            "| {} | {} | {:.1} | {:.2} | {} | {:.3} | {} |\n",
            r.label,
            r.protocol,
            r.goodput_mbps,
            r.seconds,
            if r.completed {
                "yes".to_string()
            } else {
                r.failure.clone().unwrap_or_else(|| "no (time limit)".into())
            },
            r.sent_per_needed,
            r.competitor_mbps.map_or("-".into(), |m| format!("{m:.1}")),
        ));
    }
    t
}

/// Print the table (stdout, or stderr with `--json`) and the JSON.
fn emit<T: Serialize>(a: &Args, name: &str, setup: &Setup, rows: &[T], table: &str) -> Result<()> {
    let head = format!(
        "udt sim {name}: {} Mb/s, RTT {} ms, loss {}% where they do not vary; seed {}\n",
        setup.bw_bps as f64 / 1e6,
        setup.rtt.as_secs_f64() * 1e3,
        setup.loss * 100.0,
        setup.seed
    );
    if a.json {
        eprint!("{head}{table}");
        #[derive(Serialize)]
        struct Out<'a, T> {
            experiment: &'a str,
            bw_mbps: f64,
            rtt_ms: f64,
            loss: f64,
            limit_s: f64,
            seed: u64,
            rows: &'a [T],
        }
        let out = Out {
            experiment: name,
            bw_mbps: setup.bw_bps as f64 / 1e6,
            rtt_ms: setup.rtt.as_secs_f64() * 1e3,
            loss: setup.loss,
            limit_s: setup.limit.as_secs_f64(),
            seed: setup.seed,
            rows,
        };
        println!("{}", serde_json::to_string(&out)?);
    } else {
        print!("{head}{table}");
    }
    Ok(())
}
