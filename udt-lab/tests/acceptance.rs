//! CI-sized acceptance checks of the issue against the thesis' numbers (chapter 4), on the
//! real `udt-proto` connections. The full set runs by command:
//! `cargo run --release -p udt-lab --example sim -- <fig4-2|fig4-3|...> --full`.
//!
//! Targets are the thesis' and are never loosened. Checks the current core fails are
//! `#[ignore]`d with the measured value and the reason (see udt-lab/README.md); run them with
//! `cargo test -p udt-lab --test acceptance -- --ignored`. Replay with `UDT_SIM_SEED=<seed>`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use udt_lab::report::RunResult;
use udt_lab::scenario::{ms, DumbbellRun, FlowDef};
use udt_sim::link::LossModel;
use udt_sim::rng::seed_from_env;
use udt_sim::CcChoice;

const MBPS: u64 = 1_000_000;

/// The default controller (the catalog's `udt`, docs/congestion-control.md); the checks of the
/// thesis' own algorithm name `daimd`.
const DEFAULT_CC: &str = udt_cc::DEFAULT_CC;

fn default_cc() -> CcChoice {
    CcChoice::parse(DEFAULT_CC).unwrap()
}

/// `n` flows of `cc` on `bw` Mb/s and `rtt` ms, DropTail max(BDP, 10), measured over
/// [`warmup`, `time`] seconds.
fn dumbbell(bw: u64, rtt: f64, n: usize, cc: CcChoice, time: u64, warmup: u64) -> DumbbellRun {
    let mut r = DumbbellRun::uniform("acceptance", bw * MBPS, ms(rtt), n, cc);
    r.time = Duration::from_secs(time);
    r.warmup = Duration::from_secs(warmup);
    r.seed = seed_from_env(1);
    r
}

fn run(r: &DumbbellRun) -> RunResult {
    let res = r.run().unwrap_or_else(|e| panic!("seed {}: {e}", r.seed));
    let flows: Vec<String> = res.flows.iter().map(|f| format!("{:.1}", f.mean_mbps)).collect();
    eprintln!(
        "{} Mb/s, {} flows {}: util {:.1}%, F {:.4}, S {:.3}, loss {:.3}%, conv {:?} s; flows [{}] Mb/s; seed {}; {:.2} M deliveries/s",
        res.params.bw_mbps,
        res.params.flows,
        res.params.cc,
        res.measures.utilization * 100.0,
        res.measures.fairness,
        res.measures.stability,
        res.measures.loss_rate * 100.0,
        res.measures.convergence_s,
        flows.join(" "),
        r.seed,
        res.deliveries_per_sec / 1e6,
    );
    res
}

/// Thesis Fig. 4-2: one flow above 94% utilization. Measured 95.1% (seed 1). With the thesis'
/// rate correction (§2.3.2.4, `daimd:rc=true`, on by default until this was measured) it was 77.1%:
/// after a loss burst it raised the period to a "measured" period that included a window stall,
/// from 126 us to 1233 us, and the flow needed ~7 s to recover. UDT4 has no rate correction,
/// and udt-proto now leaves it off by default.
#[test]
fn one_flow_100mbps_10ms_above_94_percent() {
    let res = run(&dumbbell(100, 10.0, 1, CcChoice::daimd(), 60, 20));
    assert!(
        res.measures.utilization > 0.94,
        "seed {}: {:.1}%",
        res.params.seed,
        res.measures.utilization * 100.0
    );
}

/// Thesis Fig. 4-3: parallel flows share fairly (F > 0.9). Measured 0.987 (seed 1).
#[test]
fn four_flows_share_fairly() {
    let res = run(&dumbbell(100, 10.0, 4, CcChoice::daimd(), 60, 20));
    assert!(res.measures.fairness > 0.9, "seed {}: F = {:.4}", res.params.seed, res.measures.fairness);
    assert!(
        res.measures.utilization > 0.8,
        "seed {}: {:.1}%",
        res.params.seed,
        res.measures.utilization * 100.0
    );
}

/// Chapter 3: from zero to 90% of an idle 1 Gb/s link in about 7.5 s after slow start. The
/// check allows 7.5 s plus 2.5 s for slow start and takes the time to reach and hold 90% for
/// 1 s. Measured 5.2 s (seed 1).
#[test]
fn converges_to_90_percent_of_idle_gigabit() {
    let res = run(&dumbbell(1000, 10.0, 1, CcChoice::daimd(), 15, 5));
    let conv = res.measures.convergence_s.expect("never reached 90% of the link");
    assert!(conv <= 10.0, "seed {}: {conv} s", res.params.seed);
}

/// Thesis Fig. 4-4: flows started 5 s apart are fair after 50 s (thesis: F above 0.999;
/// issue: above 0.99). Measured F = 0.998 on 100 Mb/s, 1 ms (seed 1). With the rate correction
/// (`daimd:rc=true`) it was 0.62: at ~125 packets/s a flow sends 1-2 packets per SYN, so the measured
/// period ((now - sample start) / packets) overestimates the real one and, applied only
/// upwards, ratchets the period up faster than the 0.01-packet increase brings it down.
#[test]
fn staggered_starts_are_fair_after_convergence() {
    let mut r = dumbbell(100, 1.0, 10, CcChoice::daimd(), 80, 50);
    for (i, f) in r.flows.iter_mut().enumerate() {
        f.start = Duration::from_secs(5 * i as u64);
    }
    let res = run(&r);
    assert!(res.measures.fairness > 0.99, "seed {}: F = {:.4}", res.params.seed, res.measures.fairness);
}

/// Thesis Fig. 4-6: 7 flows with RTT 0.001..1000 ms on 100 Mb/s (thesis F = 0.978, issue at
/// least 0.97). Measured F = 0.9774 (seed 1): 12.0, 12.3, 12.8, 12.5, 12.7, 11.7, 7.4 Mb/s, the
/// 1000 ms flow short (with `daimd:rc=true`: 0.44, the starvation described above); seeds 2-4
/// 0.9627, 0.9620, 0.9448, the 1 s flow at 5.1-7.2 Mb/s (UDT4's slow start ends at the flow
/// window, the runtime's 262,144 packets). Over 200 s it is
/// worse (F = 0.91, 1 s flow 4.0 Mb/s): not the window, queue or run length but `udt-proto`'s
/// rate control, which increases only on an advancing ACK, and the receiver sends none while a
/// loss is repaired (one RTT: a second for this flow). Evidence and proposal: udt-lab/README.md,
/// "Why they differ", item 6.
#[test]
#[ignore = "measured F = 0.9774 on seed 1 but 0.9448-0.9627 on seeds 2-4 (target 0.97): the 1 s flow gets 5-7 of 13 Mb/s, no increase while a loss is repaired (one RTT); see README item 6"]
fn seven_rtts_share_fairly() {
    assert_seven_rtts_share_fairly(CcChoice::daimd());
}

/// Fig. 4-6's layout: 7 flows of `cc` with RTTs 0.001 ms to 1 s on 100 Mb/s, an 83-packet
/// queue, 60 s measured after 18; Jain's index at least 0.97.
fn assert_seven_rtts_share_fairly(cc: CcChoice) {
    assert_seven_rtts_share_fairly_seeded(cc, seed_from_env(1));
}

/// [`assert_seven_rtts_share_fairly`] on `seed`.
fn assert_seven_rtts_share_fairly_seeded(cc: CcChoice, seed: u64) {
    let f = seven_rtts_fairness(cc, seed);
    assert!(f >= 0.97, "seed {seed}: F = {f:.4}");
}

/// Jain's index of Fig. 4-6's layout (see [`assert_seven_rtts_share_fairly`]) on `seed`.
fn seven_rtts_fairness(cc: CcChoice, seed: u64) -> f64 {
    seven_rtts_fairness_over(cc, seed, 60, 18)
}

/// [`seven_rtts_fairness`] over `secs`, measured after `warmup`.
fn seven_rtts_fairness_over(cc: CcChoice, seed: u64, secs: u64, warmup: u64) -> f64 {
    let mut r = dumbbell(100, 1.0, 7, cc, secs, warmup);
    r.seed = seed;
    let rtts = [0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0];
    r.flows =
        rtts.iter().map(|&rtt| FlowDef { cc, rtt: ms(rtt), start: Duration::ZERO, stop: None }).collect();
    r.queue = udt_lab::scenario::QueueChoice::DropTail(83);
    run(&r).measures.fairness
}

/// Seeds 1-8, or only the one `UDT_SIM_SEED` names.
fn eight_seeds() -> Vec<u64> {
    match std::env::var("UDT_SIM_SEED") {
        Ok(_) => vec![seed_from_env(1)],
        Err(_) => (1..=8).collect(),
    }
}

/// Thesis Fig. 4-16: with the noisy-link option one flow stays above 80% at 1% random loss.
/// Measured 17.5% (seed 1), as the thesis' algorithm does under random loss: each loss event past the last decrease starts an epoch and cuts the rate by
/// 1/9, and the increase of formula (2-1) cannot win that back at 1% loss.
#[test]
#[ignore = "measured 20.2% (target 80%): the native controller under 1% random loss, even with the noisy-link rule; see README"]
fn noisy_link_keeps_80_percent_at_1_percent_loss() {
    assert_keeps_80_percent_at_1_percent_loss(CcChoice::parse("daimd:noisy=true").unwrap(), 10.0);
}

/// One flow of `cc` on 100 Mb/s at `rtt_ms` with 1% random loss, 60 s measured after 20:
/// utilization above 80%.
fn assert_keeps_80_percent_at_1_percent_loss(cc: CcChoice, rtt_ms: f64) {
    let mut r = dumbbell(100, rtt_ms, 1, cc, 60, 20);
    r.loss = LossModel::Bernoulli(0.01);
    let res = run(&r);
    assert!(
        res.measures.utilization > 0.8,
        "seed {}, {rtt_ms} ms: {:.1}%",
        res.params.seed,
        res.measures.utilization * 100.0
    );
}

/// Fig. 4-16 with the default controller (the catalog's `udt`, udt-proto `cc::model`): one flow
/// at 1% random loss on 100 Mb/s stays above 80% at RTT 10 and 100 ms, where the thesis'
/// algorithm, even with its noisy-link rule, does not
/// ([`noisy_link_keeps_80_percent_at_1_percent_loss`]). Measured 98.3% at 10 ms and 98.5% at
/// 100 ms (seed 1).
#[test]
fn default_keeps_80_percent_at_1_percent_loss() {
    for rtt in [10.0, 100.0] {
        assert_keeps_80_percent_at_1_percent_loss(default_cc(), rtt);
    }
}

/// Fig. 4-6's 7 RTTs (0.001 ms to 1 s) on 100 Mb/s with the default controller, over seeds 1-8:
/// mean F at least 0.97 (the target, read over seeds: one seed is one random draw of a
/// chaotic system) and no seed below 0.95. Measured mean F = 0.9938 (seeds 1-8 from 0.9911 to
/// 0.9958).
#[test]
fn seven_rtts_share_fairly_with_the_default() {
    let cc = default_cc();
    let f: Vec<(u64, f64)> = eight_seeds().into_iter().map(|s| (s, seven_rtts_fairness(cc, s))).collect();
    let mean = f.iter().map(|&(_, x)| x).sum::<f64>() / f.len() as f64;
    assert!(mean >= 0.97, "mean F = {mean:.4} over {f:?}");
    for &(seed, x) in &f {
        assert!(x >= 0.95, "seed {seed}: F = {x:.4}");
    }
}

/// The target on every seed: F >= 0.97 on each of seeds 1-8 with the default
/// controller. Measured (see above) 0.9918, 0.9950, 0.9936, 0.9937, 0.9940, 0.9911, 0.9952,
/// 0.9958.
#[test]
fn seven_rtts_share_fairly_with_the_default_on_every_seed() {
    for seed in eight_seeds() {
        assert_seven_rtts_share_fairly_seeded(default_cc(), seed);
    }
}

/// The same over the thesis' 200 s (`udt sim fig4-6 --full`, measured after 60 s), where the
/// 1 s flow has had time to settle wherever its start-up left it. Measured F = 0.9951 (seed 1).
#[test]
fn seven_rtts_share_fairly_over_200_s_with_the_default() {
    let seed = seed_from_env(1);
    let f = seven_rtts_fairness_over(default_cc(), seed, 200, 60);
    assert!(f >= 0.97, "seed {seed}: F = {f:.4}");
}

/// Ten flows of the default controller on a LAN-like path: 1 Gb/s, 0.1 ms, a 10-packet buffer
/// (0.12 ms of queue). The overflows are the only losses: the flows must answer them as
/// congestion and share (F >= 0.98) with under 0.5% of packets lost. Measured F = 0.9978, loss
/// 0.520% (seed 1).
#[test]
#[ignore = "measured loss 0.520% (target under 0.5%; F = 0.9978 meets 0.98), seed 1"]
fn default_flows_share_a_shallow_lan_buffer() {
    let res = run(&dumbbell(1000, 0.1, 10, default_cc(), 30, 10));
    let seed = res.params.seed;
    assert!(res.measures.fairness >= 0.98, "seed {seed}: F = {:.4}", res.measures.fairness);
    assert!(res.measures.loss_rate < 0.005, "seed {seed}: loss {:.3}%", res.measures.loss_rate * 100.0);
}

/// The TCP-like reference flow fills a 100 Mb/s, 10 ms link alone (NewReno with a BDP queue
/// keeps the link busy). Measured 95.1% (seed 1).
#[test]
fn tcp_like_flow_fills_the_link() {
    let res = run(&dumbbell(100, 10.0, 1, CcChoice::newreno(), 60, 20));
    assert!(
        res.measures.utilization > 0.9,
        "seed {}: {:.1}%",
        res.params.seed,
        res.measures.utilization * 100.0
    );
}

/// The speed figure: printed, never asserted (tests check behaviour, not wall time).
#[test]
fn report_simulation_speed() {
    let res = run(&dumbbell(1000, 10.0, 4, CcChoice::daimd(), 5, 1));
    eprintln!(
        "speed (test profile): {:.2} M deliveries/s, {:.2} M data packets/s, {:.2} s wall for 5 s of 4 flows on 1 Gb/s",
        res.deliveries_per_sec / 1e6,
        res.data_packets as f64 / res.wall_s / 1e6,
        res.wall_s
    );
    assert!(res.data_packets > 100_000);
}
