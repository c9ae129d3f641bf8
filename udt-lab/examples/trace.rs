//! Watch one UDT sender from the inside: its perfmon readings (sending period, windows, rates,
//! RTT, losses) at a fixed interval of virtual time, on a dumbbell (`--loss`: random loss both
//! ways).
//!
//! ```text
//! cargo run --release -p udt-lab --example trace -- [--bw MBPS] [--rtt MS] [--flows N]
//!     [--time S] [--every S] [--from S] [--flow I] [--cc SPEC] [--seed N]
//!     [--rtts MS,MS,...] [--queue PKTS] [--loss P] [--stagger S]
//! ```
//!
//! `RUST_LOG=udt::cc=debug` (or `trace`) prints the controller's events on standard error.
//!
//! `--cc SPEC` takes any specification of the `udt-proto` catalog (`udt cc list`), default
//! `udt_cc::DEFAULT_CC`.
//!
//! `--stagger S` starts flow `i` at `i S` seconds (Fig. 4-4's layout with `--stagger 5`).
//!
//! `--rtts` gives every flow its own RTT (the Fig. 4-5 layout: access delays, one flow per RTT,
//! e.g. `--rtts 0.001,0.01,0.1,1,10,100,1000 --queue 83 --flow 6` for Fig. 4-6's 1 s flow).
//!
//! Useful to see why a run of a scenario looks the way it does, e.g. how the period moves
//! around a loss event (`--every 0.005 --from 29.8`).

use std::process::ExitCode;

use std::time::Duration;
use udt_sim::engine::AnyNode;
use udt_sim::link::LossModel;
use udt_sim::rng::seed_from_env;

use udt_lab::scenario::{ms, secs, DumbbellRun, FlowDef, QueueChoice};
use udt_sim::CcChoice;

mod common;

struct Args {
    bw: f64,
    rtt: f64,
    flows: usize,
    time: f64,
    every: f64,
    from: f64,
    flow: usize,
    cc: CcChoice,
    seed: u64,
    rtts: Vec<f64>,
    queue: Option<usize>,
    loss: f64,
    stagger: f64,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        bw: 100.0,
        rtt: 10.0,
        flows: 1,
        time: 20.0,
        every: 1.0,
        from: 0.0,
        flow: 0,
        cc: CcChoice::default_cc(),
        seed: seed_from_env(1),
        rtts: Vec::new(),
        queue: None,
        loss: 0.0,
        stagger: 0.0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        let bad = |e: &dyn std::fmt::Display| format!("{flag}: {e}");
        match flag.as_str() {
            "--bw" => a.bw = value()?.parse().map_err(|e| bad(&e))?,
            "--rtt" => a.rtt = value()?.parse().map_err(|e| bad(&e))?,
            "--flows" => a.flows = value()?.parse().map_err(|e| bad(&e))?,
            "--time" => a.time = value()?.parse().map_err(|e| bad(&e))?,
            "--every" => a.every = value()?.parse().map_err(|e| bad(&e))?,
            "--from" => a.from = value()?.parse().map_err(|e| bad(&e))?,
            "--flow" => a.flow = value()?.parse().map_err(|e| bad(&e))?,
            "--seed" => a.seed = value()?.parse().map_err(|e| bad(&e))?,
            "--cc" => a.cc = CcChoice::parse(&value()?)?,
            "--loss" => a.loss = value()?.parse().map_err(|e| bad(&e))?,
            "--stagger" => a.stagger = value()?.parse().map_err(|e| bad(&e))?,
            "--queue" => a.queue = Some(value()?.parse().map_err(|e| bad(&e))?),
            "--rtts" => {
                a.rtts = value()?
                    .split(',')
                    .map(|v| v.trim().parse::<f64>().map_err(|e| bad(&e)))
                    .collect::<Result<_, _>>()?;
                a.flows = a.rtts.len();
            }
            _ => {
                return Err(
                    "usage: trace [--bw MBPS] [--rtt MS] [--flows N] [--time S] [--every S] [--from S] \
                            [--flow I] [--cc NAME] [--seed N] [--rtts MS,MS,...] [--queue PKTS] [--loss P]"
                        .into(),
                )
            }
        }
    }
    if a.flows == 0 || a.flow >= a.flows || a.every <= 0.0 || a.bw <= 0.0 {
        return Err("need --flows > --flow, and positive --every and --bw".into());
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
    let mut run = DumbbellRun::uniform("trace", (a.bw * 1e6) as u64, ms(a.rtt), a.flows, a.cc);
    run.seed = a.seed;
    if !a.rtts.is_empty() {
        run.flows = a
            .rtts
            .iter()
            .map(|&r| FlowDef { cc: a.cc, rtt: ms(r), start: Duration::ZERO, stop: None })
            .collect();
    }
    for (i, f) in run.flows.iter_mut().enumerate() {
        f.start = Duration::from_secs_f64(a.stagger * i as f64);
    }
    if let Some(q) = a.queue {
        run.queue = QueueChoice::DropTail(q);
    }
    if a.loss > 0.0 {
        run.loss = LossModel::Bernoulli(a.loss);
        run.reverse_loss = LossModel::Bernoulli(a.loss);
    }
    let mut net = match run.build() {
        Ok(n) => n,
        Err(e) => {
            eprintln!("trace: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "# {} Mb/s, {} ms, {} flows of {}, flow {} seen from its sender; seed {}",
        a.bw,
        a.rtt,
        a.flows,
        a.cc.label(),
        a.flow,
        a.seed
    );
    println!("#      t  send Mb/s  period us     cwnd  flow win  flight  bw pkt/s rate pkt/s  rtt us  lost  retx  naks probes");
    let flow = net.flows()[a.flow].clone();
    let steps = (a.time / a.every).round() as u64;
    let mut cleared = false;
    for k in 1..=steps {
        let t = secs(a.every * k as f64);
        net.run_until(t);
        if t.as_secs_f64() < a.from {
            continue;
        }
        let now = net.sim().now();
        let Some(AnyNode::Host(h)) = net.sim_mut().node_mut(flow.src) else { break };
        let Some(c) = h.socket_mut(flow.src_port).and_then(|s| s.connection_mut()) else { continue };
        let s = c.stats(now, true);
        if !cleared {
            cleared = true; // the first reading covers everything before --from
            continue;
        }
        println!(
            "{:8.3} {:10.2} {:10.2} {:8.1} {:9} {:7} {:9} {:10} {:7} {:5} {:5} {:5} {:6}",
            t.as_secs_f64(),
            s.send_mbps,
            s.now.send_period_us,
            s.now.congestion_window,
            s.now.flow_window,
            s.now.flight,
            s.now.bandwidth_pkts,
            s.now.recv_rate_pkts,
            s.now.rtt_us,
            s.interval.snd_loss,
            s.interval.retransmits,
            s.interval.naks_recv,
            s.interval.head_probes
        );
    }
    ExitCode::SUCCESS
}
