//! The default controller scaled: on a path whose rate and RTT are both k times another's (its
//! buffer, one BDP, k^2 times) it settles to the same utilization against time counted in
//! round trips (docs/congestion-control.md, "The default controller"). Its parameters are
//! path-relative (rounds, fractions of a queue, packets queued per flow), so nothing in it is
//! tuned to one path's scale; its approach is in packets per round, which is not scale-free.
//! Replay with `UDT_SIM_SEED=<seed>`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use udt_lab::scenario::{ms, DumbbellRun, QueueChoice};
use udt_sim::rng::seed_from_env;
use udt_sim::CcChoice;

const MBPS: u64 = 1_000_000;

/// Utilization of one default flow over `steps` windows of two round trips each, on `rate`
/// Mb/s and `rtt_ms` with a one-BDP DropTail buffer.
fn trajectory(rate: u64, rtt_ms: u64, steps: usize) -> Vec<f64> {
    let cc = CcChoice::parse(udt_cc::DEFAULT_CC).unwrap();
    let rtt = ms(rtt_ms as f64);
    let mut r = DumbbellRun::uniform("scale", rate * MBPS, rtt, 1, cc);
    let bdp = (rate * MBPS) as f64 * rtt.as_secs_f64() / (1500.0 * 8.0);
    r.queue = QueueChoice::DropTail(bdp.ceil() as usize);
    // Buffers for the path and its queue, as a user would set them for a long path.
    r.buffers = Some((3.0 * bdp).ceil() as u32);
    r.time = rtt * 2 * (steps as u32 + 1);
    r.warmup = Duration::ZERO;
    r.seed = seed_from_env(1);
    let result = r.run().unwrap_or_else(|e| panic!("seed {}: {e}", r.seed));
    let trace = result.trace.as_ref().expect("a dumbbell run keeps its trace");
    (0..steps)
        .map(|i| {
            let span = trace.samples(rtt * 2 * i as u32, rtt * 2 * (i as u32 + 1));
            trace.mean_mbps(0, span) / rate as f64
        })
        .collect()
}

#[test]
fn scaling_rate_and_rtt_by_k_keeps_the_normalised_steady_state() {
    // 60 windows of two round trips: slow start, the first queue, and the steady state. RTTs
    // well above the 10 ms ACK period, which does not scale.
    let k = 3;
    let a = trajectory(20, 100, 60);
    let b = trajectory(20 * k, 100 * k, 60);
    let mean_diff = |from: usize| {
        a[from..].iter().zip(&b[from..]).map(|(x, y)| (x - y).abs()).sum::<f64>() / (a.len() - from) as f64
    };
    eprintln!(
        "seed {}: mean |difference| {:.3} over the run, {:.3} over its second half\n{a:.2?}\n{b:.2?}",
        seed_from_env(1),
        mean_diff(0),
        mean_diff(a.len() / 2)
    );
    // The approach is not scale-free: the window moves in packets per round, with a velocity
    // that doubles per round, and a path k times longer and faster holds k^2 times the packets,
    // so after the first queue the scaled flow needs about log2(k^2) more rounds to settle.
    // Once settled, the two are the same.
    let late = mean_diff(a.len() / 2);
    assert!(late < 0.02, "second half: mean |difference| {late}\n{a:?}\n{b:?}");
    for (name, t) in [("k = 1", &a), ("k = 3", &b)] {
        let half = &t[t.len() / 2..];
        let mean = half.iter().sum::<f64>() / half.len() as f64;
        assert!(mean > 0.95, "{name}: second half {mean}: {t:?}");
    }
}
