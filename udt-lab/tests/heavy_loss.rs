//! The default controller on paths with heavy random loss (docs/congestion-control.md, "Loss:
//! the queue's or the link's"): losses with an empty queue are the link's and change nothing,
//! at any rate; losses with a standing queue are congestion. Replay with `UDT_SIM_SEED=<seed>`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use udt_lab::report::RunResult;
use udt_lab::scenario::{ms, DumbbellRun};
use udt_sim::link::LossModel;
use udt_sim::rng::seed_from_env;
use udt_sim::CcChoice;

const MBPS: u64 = 1_000_000;

fn lone_flow(bw_mbps: u64, rtt_ms: f64, loss: f64, time: u64, warmup: u64) -> DumbbellRun {
    let cc = CcChoice::parse(udt_cc::DEFAULT_CC).unwrap();
    let mut r = DumbbellRun::uniform("heavy loss", bw_mbps * MBPS, ms(rtt_ms), 1, cc);
    r.loss = LossModel::Bernoulli(loss);
    r.reverse_loss = LossModel::Bernoulli(loss);
    r.time = Duration::from_secs(time);
    r.warmup = Duration::from_secs(warmup);
    r.seed = seed_from_env(1);
    r
}

fn run(r: &DumbbellRun) -> RunResult {
    r.run().unwrap_or_else(|e| panic!("seed {}: {e}", r.seed))
}

/// What a lone flow did over 100 RTTs after start-up under 10% Bernoulli loss each way.
struct HeavyLoss {
    /// Its sending rate on the wire, new data and retransmissions, as a fraction of the link.
    rate: f64,
    /// Retransmissions per data packet the links lost, over the whole run.
    resends_per_loss: f64,
    /// Goodput as a fraction of what the link can deliver, `capacity x (1 - loss)`.
    goodput: f64,
}

fn at_ten_percent_loss(bw: u64, rtt: f64) -> HeavyLoss {
    const LOSS: f64 = 0.10;
    // The handshake itself meets the loss (its packets are retried on a timer): the window
    // starts 20 RTTs after the first data arrives, and runs 100 RTTs.
    let (settle, window) = (rtt * 20.0 / 1000.0, rtt * 100.0 / 1000.0);
    let handshake_allowance = 10.0;
    let r = lone_flow(bw, rtt, LOSS, (handshake_allowance + settle + window).ceil() as u64, 0);
    let result = run(&r);
    let trace = result.trace.as_ref().expect("a dumbbell run keeps its trace");
    let progress = &trace.flows[0].progress;
    let first_data = progress.iter().position(|p| p.bytes > 0).expect("data arrives");
    let start = trace.interval.as_secs_f64() * first_data as f64 + settle;
    let span = trace.samples(Duration::from_secs_f64(start), Duration::from_secs_f64(start + window));
    let (from, to) = (&progress[span.start], &progress[span.end]);
    let sent = (to.sent_pkts - from.sent_pkts) as f64;
    let seconds = trace.interval.as_secs_f64() * span.len() as f64;
    let delivered_bits = (to.bytes - from.bytes) as f64 * 8.0 * 1500.0 / 1456.0;
    HeavyLoss {
        rate: sent * 1500.0 * 8.0 / seconds / (bw * MBPS) as f64,
        resends_per_loss: progress.last().map_or(0, |p| p.retransmits) as f64
            / trace.links.iter().map(|(_, l)| l.data_drops).sum::<u64>().max(1) as f64,
        goodput: delivered_bits / seconds / (bw as f64 * MBPS as f64 * (1.0 - LOSS)),
    }
}

/// 10% Bernoulli loss each way with the queue empty under the paced flow: over 100 RTTs
/// after start-up the flow sends within 10% of the link's rate, repairs each loss with about
/// one retransmission, and delivers most of what the link can.
#[test]
fn ten_percent_random_loss_keeps_the_rate() {
    for (bw, rtt) in [(50u64, 200.0f64), (100, 20.0), (300, 60.0)] {
        let m = at_ten_percent_loss(bw, rtt);
        let what = format!("seed {}: {bw} Mb/s {rtt} ms", seed_from_env(1));
        eprintln!("{what}: rate {:.3} resends {:.3} goodput {:.3}", m.rate, m.resends_per_loss, m.goodput);
        assert!(m.rate >= 0.9, "{what}: sending {:.3} of the link", m.rate);
        assert!(m.resends_per_loss <= 1.1, "{what}: {:.3} retransmissions per loss", m.resends_per_loss);
        // Goodput over a window of 100 RTTs moves with the holes still open at its two ends
        // (up to a few RTTs of data each): a looser bound than the sending rate's.
        assert!(m.goodput >= 0.8, "{what}: goodput {:.3} of capacity x (1 - loss)", m.goodput);
    }
}

/// Half the link is taken by unresponsive cross traffic from 10 s to 20 s, under 5% random
/// loss each way: the queue that the flow's old rate builds stands, so the losses are
/// congestion and the flow follows the link down within a few round trips, leaving the cross
/// traffic its half; once the cross traffic stops it takes the whole link back. Alone, it keeps
/// the whole link through the same loss.
#[test]
fn a_standing_queue_with_loss_backs_off_and_the_flow_recovers() {
    let rtt = 0.040;
    let mut r = lone_flow(100, rtt * 1000.0, 0.05, 30, 0);
    r.cbr =
        Some(vec![(Duration::ZERO, 0), (Duration::from_secs(10), 50 * MBPS), (Duration::from_secs(20), 0)]);
    let result = run(&r);
    let trace = result.trace.as_ref().expect("a dumbbell run keeps its trace");
    let mean = |from: f64, to: f64| {
        let span = trace.samples(Duration::from_secs_f64(from), Duration::from_secs_f64(to));
        trace.mean_mbps(0, span)
    };
    let what = format!("seed {}", r.seed);
    let alone = mean(5.0, 10.0);
    assert!(alone >= 80.0, "{what}: alone {alone:.1} Mb/s at 5% loss");
    // Ten round trips after the cross traffic starts, the flow is at its share.
    let shared = mean(10.0 + 10.0 * rtt, 20.0);
    assert!(shared <= 55.0, "{what}: {shared:.1} Mb/s beside 50 Mb/s of cross traffic");
    assert!(shared >= 35.0, "{what}: {shared:.1} Mb/s of the 47.5 left");
    // And back to the whole link within two seconds of it leaving.
    let after = mean(22.0, 30.0);
    eprintln!(
        "{what}: alone {alone:.1} shared {shared:.1} after {after:.1} (20-22 s: {:.1})",
        mean(20.0, 22.0)
    );
    assert!(after >= 80.0, "{what}: {after:.1} Mb/s once the cross traffic stopped");
}
