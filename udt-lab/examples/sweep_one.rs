//! Run one scenario of a sweep (`udt sim sweep --seed S`, scenario `--index I`) as the sweep
//! runs it, and print the packets every flow sent and lost over the run and its throughput
//! second by second: to see how a scenario's figure came about, beside the controller's events.
//!
//! ```text
//! cargo run --release -p udt-lab --example sweep_one -- --seed S --index I [--cc SPEC]
//!     [--tcp cubic|newreno]
//! ```
//!
//! The scenario is drawn from the seed and the index alone, so this is the run the sweep
//! measured (with `--tcp cubic`, the run beside CUBIC). `RUST_LOG=udt::sim=debug,udt::cc=debug`
//! prints the controller's events on standard error, each in a span naming the flow's port
//! (flow i's sender is port 10000 + i).

use std::process::ExitCode;

use udt_lab::sweep::{default_window, draw, measure, Budget};
use udt_sim::flow::CcChoice;

mod common;

struct Args {
    seed: u64,
    index: usize,
    cc: CcChoice,
    tcp: CcChoice,
}

fn parse() -> Result<Args, String> {
    let mut a = Args { seed: 1, index: 0, cc: CcChoice::default_cc(), tcp: CcChoice::newreno() };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--seed" => a.seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--index" => a.index = value()?.parse().map_err(|e| format!("--index: {e}"))?,
            "--cc" => a.cc = CcChoice::parse(&value()?)?,
            "--tcp" => {
                a.tcp = match value()?.as_str() {
                    "cubic" => CcChoice::cubic(),
                    "newreno" => CcChoice::newreno(),
                    other => return Err(format!("--tcp takes cubic or newreno, not {other}")),
                }
            }
            _ => {
                return Err("usage: sweep_one --seed S --index I [--cc SPEC] [--tcp cubic|newreno]".into());
            }
        }
    }
    Ok(a)
}

fn main() -> ExitCode {
    // `RUST_LOG=udt::cc=debug` adds the controller's transitions and decisions, on stderr.
    common::init_logs();
    let a = match common::args_or_usage(parse()) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let drawn = draw(a.seed, a.index);
    let plan = Budget::default().plan(&drawn, default_window());
    let run = measure::dumbbell(&drawn, &plan, a.cc, a.tcp);
    let result = match run.run() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("sweep_one: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("# {drawn:?}");
    println!("# measured from {:.1} s of {:.1} s", plan.warmup.as_secs_f64(), plan.time.as_secs_f64());
    if let Some(trace) = &result.trace {
        let per_second = (1.0 / trace.interval.as_secs_f64()).round().max(1.0) as usize;
        // What each flow lost over the whole run: who overflows a shared buffer, who pays.
        println!("# packets over the run: sent (with retransmissions), received, retransmitted, lost");
        for flow in &trace.flows {
            if let Some(p) = flow.progress.last() {
                let lost = 1.0 - p.recv_pkts as f64 / p.sent_pkts.max(1) as f64;
                println!(
                    "# {:>8} {} {} {} {:.2}%",
                    flow.cc,
                    p.sent_pkts,
                    p.recv_pkts,
                    p.retransmits,
                    lost.max(0.0) * 100.0
                );
            }
        }
        println!("# Mb/s in each second, one line per flow");
        for flow in &trace.flows {
            let seconds: Vec<String> = flow
                .mbps
                .chunks(per_second)
                .map(|c| format!("{:.0}", c.iter().sum::<f64>() / c.len() as f64))
                .collect();
            println!("{:>8} {}", flow.cc, seconds.join(" "));
        }
    }
    let means: Vec<String> = result.flows.iter().map(|f| format!("{:.1}", f.mean_mbps)).collect();
    println!("mean over the measured window, Mb/s: {}", means.join(" "));
    ExitCode::SUCCESS
}
