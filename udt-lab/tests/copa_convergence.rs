//! Flows of the default controller that start apart converge on a long path: the shorter round
//! trip doubles more often in slow start and leaves it with several times the other's rate, and
//! Copa's steps of `1/δ` packets a round must then move windows of thousands of packets
//! (docs/congestion-control.md, "Where it stands"). Checks the current controller fails are
//! `#[ignore]`d with the measured value; run them with
//! `cargo test --release -p udt-lab --test copa_convergence -- --ignored`. Replay with
//! `UDT_SIM_SEED=<seed>`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use udt_lab::scenario::{ms, DumbbellRun, FlowDef, QueueChoice};
use udt_sim::rng::seed_from_env;
use udt_sim::CcChoice;

const MBPS: u64 = 1_000_000;

/// Two default flows of 300 and 600 ms on 50 Mb/s with a one-BDP buffer (at the longer RTT),
/// both from time zero, measured over the second half of 60 s (fifty of the longer round
/// trips): Jain's index at least 0.95 (the sweep's target for its p5) and the link at least 90%
/// used. Measured F = 0.8097 on seed 1 (37.0 and 12.8 Mb/s; seeds 2-4 0.7379, 0.8342, 0.7764,
/// the 300 ms flow ahead each time): each flow keeps two packets
/// queued (50 Mb/s is under 240 Mb/s), the windows are 750 and 1,500 packets, and a flow moves
/// two packets a round at velocity 1.
#[test]
#[ignore = "measured F = 0.8097 on seed 1 (37.0 and 12.8 Mb/s; target 0.95): steps of two packets a round against windows of a thousand"]
fn flows_of_different_rtts_on_a_long_path_converge() {
    let cc = CcChoice::parse(udt_cc::DEFAULT_CC).unwrap();
    let mut r = DumbbellRun::uniform("convergence", 50 * MBPS, ms(600.0), 2, cc);
    r.flows = [300.0, 600.0]
        .iter()
        .map(|&rtt| FlowDef { cc, rtt: ms(rtt), start: Duration::ZERO, stop: None })
        .collect();
    let bdp = (50 * MBPS) as f64 * 0.6 / (1500.0 * 8.0);
    r.queue = QueueChoice::DropTail(bdp.ceil() as usize);
    r.time = Duration::from_secs(60);
    r.warmup = Duration::from_secs(30);
    r.seed = seed_from_env(1);
    let res = r.run().unwrap_or_else(|e| panic!("seed {}: {e}", r.seed));
    let rates: Vec<f64> = res.flows.iter().map(|f| f.mean_mbps).collect();
    let f = res.measures.fairness;
    eprintln!("seed {}: F = {f:.4}, flows {rates:?} Mb/s", r.seed);
    assert!(f >= 0.95, "seed {}: F = {f:.4}, flows {rates:?} Mb/s", r.seed);
    let u = res.measures.utilization;
    assert!(u >= 0.9, "seed {}: utilization {u:.3}", r.seed);
}
