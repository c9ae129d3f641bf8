//! Determinism: the same description and seed give the same trace (every delivery hashed),
//! a different seed a different one, and running runs in parallel changes nothing.
//! Replay a failure with `UDT_SIM_SEED=<seed>`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use udt_lab::scenario::{execute, ms, DumbbellRun, Job};
use udt_sim::link::{GilbertElliott, LossModel};
use udt_sim::rng::seed_from_env;
use udt_sim::CcChoice;

/// Two UDT flows and a TCP-like one through a bursty-lossy bottleneck, for a few seconds.
fn scenario(seed: u64) -> DumbbellRun {
    let mut r = DumbbellRun::uniform("det", 100_000_000, ms(10.0), 3, CcChoice::daimd());
    r.flows[2].cc = CcChoice::newreno();
    r.flows[1].start = Duration::from_millis(500);
    r.flows[0].stop = Some(Duration::from_secs(3));
    r.loss = LossModel::GilbertElliott(GilbertElliott::from_rate_and_burst(0.002, 3.0));
    r.time = Duration::from_secs(4);
    r.warmup = Duration::from_secs(1);
    r.seed = seed;
    r
}

#[test]
fn same_seed_same_trace_different_seed_different_trace() {
    let seed = seed_from_env(7);
    let a = scenario(seed).run().unwrap();
    let b = scenario(seed).run().unwrap();
    assert_eq!(a.trace_hash, b.trace_hash, "seed {seed}: two runs differ");
    assert_eq!(a.measures, b.measures, "seed {seed}");
    assert_eq!(a.deliveries, b.deliveries, "seed {seed}");
    assert!(a.deliveries > 10_000, "seed {seed}: only {} deliveries", a.deliveries);
    let c = scenario(seed + 1).run().unwrap();
    assert_ne!(a.trace_hash, c.trace_hash, "seeds {seed} and {}: same trace", seed + 1);
}

#[test]
fn parallel_runs_give_the_same_results() {
    let seed = seed_from_env(11);
    let jobs = |n: usize| -> Vec<Job> {
        (0..n).map(|i| Box::new(move || scenario(seed + i as u64).run()) as Job).collect()
    };
    let one: Vec<String> = execute(jobs(3), 1).unwrap().into_iter().map(|r| r.trace_hash).collect();
    let two: Vec<String> = execute(jobs(3), 2).unwrap().into_iter().map(|r| r.trace_hash).collect();
    assert_eq!(one, two, "seed {seed}: thread count changed the results");
}
