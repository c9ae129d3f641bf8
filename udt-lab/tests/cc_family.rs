//! Simulator checks of the congestion-control family (Composable UDT, thesis chapter 5): every
//! algorithm of the `udt-proto` catalog on a clean 1 Gb/s, 100 ms path, and the loss-based ones
//! under random loss against their response functions (thesis Table 3-1, RFC 3649, RFC 9438).
//!
//! Each check names what the algorithm is expected to do and why; the measured values (seed 1)
//! are in the comments and in the catalog table of docs/congestion-control.md. Replay with
//! `UDT_SIM_SEED=<seed>`.
//!
//! The clean path: one flow, DropTail queue of one BDP (8333 packets), 60 s, measured over the
//! last 42 s (the dumbbell default warm-up of 30%). The lossy path: the same link (never the
//! bottleneck at these rates: no queue forms), random loss p on data packets, window in packets
//! per RTT = mean throughput x 100 ms / 1500 bytes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use udt_lab::report::RunResult;
use udt_lab::scenario::{ms, DumbbellRun};
use udt_sim::link::LossModel;
use udt_sim::rng::seed_from_env;
use udt_sim::CcChoice;

const GBPS: u64 = 1_000_000_000;
const RTT_S: f64 = 0.1;

/// Buffers and flow window of every flow, packets: these checks are of the algorithms, not of
/// the runtime's default buffers, so the flows get room for the path as a user would set it
/// (`UDT_SNDBUF`, `UDT_RCVBUF`, `UDT_FC`): 2 BDP (the path and a full one-BDP queue) and a
/// quarter more for the ACK interval, 2 x 8333 x 5/4, rounded up (the measured values below
/// were taken with these buffers).
const BUFFERS: u32 = 21_000;

fn run(spec: &str, n: usize, loss: f64, time: u64) -> RunResult {
    let cc = CcChoice::parse(spec).unwrap();
    let mut r = DumbbellRun::uniform(spec, GBPS, ms(RTT_S * 1e3), n, cc);
    r.time = Duration::from_secs(time);
    r.warmup = Duration::from_secs_f64(time as f64 * 0.3);
    r.seed = seed_from_env(1);
    r.buffers = Some(BUFFERS);
    if loss > 0.0 {
        r.loss = LossModel::Bernoulli(loss);
    }
    let res = r.run().unwrap_or_else(|e| panic!("{spec}, seed {}: {e}", r.seed));
    eprintln!(
        "{spec}: loss {loss}: util {:.1}%, flows {:?} Mb/s, F {:.4}, seed {}",
        res.measures.utilization * 100.0,
        res.flows.iter().map(|f| (f.mean_mbps * 10.0).round() / 10.0).collect::<Vec<_>>(),
        res.measures.fairness,
        r.seed
    );
    res
}

/// Packets per RTT of the single flow.
fn window(res: &RunResult) -> f64 {
    res.flows[0].mean_mbps * 1e6 / (1500.0 * 8.0) * RTT_S
}

fn clean(spec: &str, at_least: f64) {
    let res = run(spec, 1, 0.0, 60);
    let u = res.measures.utilization;
    assert!(u >= at_least, "{spec}: utilization {:.1}% < {:.0}%", u * 100.0, at_least * 100.0);
}

/// `measured / expected` must lie within `[lo, hi]` at each p.
fn response(spec: &str, expected: impl Fn(f64) -> f64, lo: f64, hi: f64, ps: &[(f64, u64)]) {
    for &(p, time) in ps {
        let w = window(&run(spec, 1, p, time));
        let e = expected(p);
        let ratio = w / e;
        assert!(
            (lo..=hi).contains(&ratio),
            "{spec} at p={p}: {w:.1} packets/RTT, expected {e:.1} (ratio {ratio:.2} outside [{lo}, {hi}])"
        );
    }
}

// ---- Clean 1 Gb/s, 100 ms path -------------------------------------------------------------

/// The thesis' algorithm (`daimd`): measured 90.3%. The DAIMD increase reaches the link within
/// the thesis' ~7.5 s plus slow start, then oscillates below it.
#[test]
fn clean_daimd() {
    clean("daimd", 0.85);
}

/// NewReno: measured 63.6%. Slow start overshoots the BDP + queue (2 BDP), two reductions leave
/// the window near BDP/2, and +1 packet per RTT needs ~400 s to come back: at least 50%.
#[test]
fn clean_newreno() {
    clean("newreno", 0.5);
}

/// UDP blast at 900 Mb/s: measured 96.0% = 900 x 16/15 (the packet pair: every 16th packet
/// leaves without waiting a period, as in UDT4), with no reaction to anything.
#[test]
fn clean_blast() {
    let res = run("blast:rate=900m", 1, 0.0, 30);
    let u = res.measures.utilization;
    assert!((0.94..=0.97).contains(&u), "blast: {:.1}%", u * 100.0);
}

/// Vegas: measured 100.0%: keeps 2-4 packets queued, so the link stays busy.
#[test]
fn clean_vegas() {
    clean("vegas", 0.95);
}

/// FAST: measured 100.0%: keeps alpha = 200 packets queued.
#[test]
fn clean_fast() {
    clean("fast", 0.95);
}

/// BBR v1: measured 93.8%: ProbeRTT (200 ms per 10 s) and the 0.75 gain phases cost the rest.
/// (93.6% before its delivery-rate samples were held to the receiver's capacity estimate; with
/// a flow window 5% larger, 59% then: samples of 2.4 times the link from the cumulative ACK
/// that fills a hole, udt-proto `cc::bbr`.)
#[test]
fn clean_bbr() {
    clean("bbr", 0.9);
}

/// Copa: keeps 1/δ = 2 packets queued and ignores random loss in its default mode: it fills
/// the clean path, and at p = 1% it still fills most of it (a loss-based TCP gets 1.22/sqrt(p)
/// packets per RTT: 12 packets, 0.15% of this path). Measured 99.8% and 82.7%.
#[test]
fn clean_copa() {
    clean("copa", 0.95);
    let u = run("copa", 1, 0.01, 60).measures.utilization;
    assert!(u >= 0.75, "copa at p = 1%: utilization {:.1}%", u * 100.0);
}

/// GTP with the receiver capacity set to 900 Mb/s: the single flow is allocated all of it.
#[test]
fn clean_gtp() {
    clean("gtp:capacity=900m", 0.9);
}

/// Scalable TCP: measured 96.5%: MIMD recovers from the slow-start overshoot in a few RTTs.
#[test]
fn clean_scalable() {
    clean("scalable", 0.9);
}

/// HighSpeed TCP: measured 99.5%: at 8000 packets a(w) is ~70 packets per RTT and b(w) ~0.14.
#[test]
fn clean_highspeed() {
    clean("highspeed", 0.95);
}

/// BiC: measured 99.5%: the binary search returns to the window of the last loss in ~12 RTTs.
#[test]
fn clean_bic() {
    clean("bic", 0.95);
}

/// CUBIC: measured 99.8%: the cubic function returns to W_max within K = 11 s and plateaus.
#[test]
fn clean_cubic() {
    clean("cubic", 0.95);
}

/// Westwood+: measured 12.7%. Expected to be low on this path: its bandwidth estimate is a
/// per-RTT sample filtered twice (7/8 per sample), so at the end of slow start, when the rate
/// doubles every RTT, it lags by several RTTs; the first loss sets the window to that estimate
/// times the minimum RTT (~690 packets against a BDP of 8333) and Reno's +1 per RTT needs
/// minutes to return (Linux's Westwood+ uses the same filters). Its strength is random loss,
/// below. The check is that it does not collapse further.
#[test]
fn clean_westwood() {
    clean("westwood", 0.1);
}

// ---- Response functions under random loss ------------------------------------------------

/// Reno (thesis Table 3-1): 1.22 / sqrt(p). Measured ratios 0.92, 1.07, 1.06 at p = 1e-2, 1e-3,
/// 1e-4 (random rather than periodic loss; NewReno recovery holds the window for an RTT).
#[test]
fn response_newreno() {
    response("newreno", |p| 1.22 / p.sqrt(), 0.8, 1.25, &[(1e-2, 200), (1e-3, 300), (1e-4, 300)]);
}

/// Vegas under loss is Reno (its delay rule never sees a queue here): 1.22 / sqrt(p).
/// Measured ratios 0.98, 1.10, 1.08.
#[test]
fn response_vegas() {
    response("vegas", |p| 1.22 / p.sqrt(), 0.8, 1.25, &[(1e-2, 200), (1e-3, 300)]);
}

/// The thesis' algorithm, `daimd` (thesis (3-10), Table 3-1): sqrt(alpha / (beta p)) packets
/// per SYN with alpha = 1 packet per SYN on a 1 Gb/s link (stage ceil(log10(L - C(x))) - 9 = 0) and beta = 1/9, i.e.
/// 3 / sqrt(p) packets per SYN, 30 / sqrt(p) per 100 ms RTT. Measured 0.37, 0.48, 0.61 of it at
/// p = 1e-2, 1e-3, 1e-4: the model assumes an increase every SYN, but UDT4's algorithm skips
/// the increase in every SYN that saw a loss report (`m_bLoss`), which at these rates is a large
/// share of the SYNs (at p = 1e-2, 3000 packets/s, a loss every 3 ms). The stated tolerance is
/// therefore [0.3, 1.0] of the model; the slope (0.61 per decade of p, model 0.5) is checked by
/// the ratios' growth.
#[test]
fn response_daimd() {
    response("daimd", |p| 30.0 / p.sqrt(), 0.3, 1.0, &[(1e-2, 200), (1e-3, 200), (1e-4, 200)]);
}

/// Scalable TCP (Kelly 2003, a = 0.01 per packet, b = 1/8): mean window
/// a / (p ln(1 / (1 - b))) = 0.075 / p (thesis Table 3-1 writes 0.8 / p for a = 0.1, available
/// as `scalable:a=0.1`). Measured ratios 0.87 and 1.19 at p = 1e-3, 1e-4.
#[test]
fn response_scalable() {
    response("scalable", |p| 0.01 / (p * (8.0f64 / 7.0).ln()), 0.8, 1.25, &[(1e-3, 300), (1e-4, 300)]);
}

/// HighSpeed TCP (RFC 3649, thesis Table 3-1): 0.12 / p^0.835 above Low_Window = 38 packets,
/// Reno's 1.22 / sqrt(p) below. Measured ratios 1.13 and 1.17 at p = 1e-3, 1e-4.
#[test]
fn response_highspeed() {
    let f = |p: f64| (0.12 / p.powf(0.835)).max(1.22 / p.sqrt());
    response("highspeed", f, 0.8, 1.25, &[(1e-3, 300), (1e-4, 300)]);
}

/// CUBIC (RFC 9438 §5.1, C = 0.4, beta = 0.7): (C (3 + beta) / (4 (1 - beta)))^(1/4) RTT^(3/4)
/// / p^(3/4) = 1.054 RTT^0.75 / p^0.75 (RTT in seconds), and Reno's 1.22 / sqrt(p) in the
/// Reno-friendly region. Measured ratios 1.00, 1.22, 1.37 at p = 1e-2, 1e-3, 1e-4: the formula is
/// derived for periodic loss; with random loss some cycles run long, and CUBIC's convex growth
/// past W_max gains more from a long cycle than it loses to a short one (the unit test's
/// periodic model in `cc/cubic.rs` matches 1.054 within 8%). Tolerance [0.8, 1.5].
#[test]
fn response_cubic() {
    let f = |p: f64| (1.054 * RTT_S.powf(0.75) / p.powf(0.75)).max(1.22 / p.sqrt());
    response("cubic", f, 0.8, 1.5, &[(1e-2, 200), (1e-3, 300), (1e-4, 300)]);
}

/// BiC (Smax = 32, Smin = 0.01, beta = 1/8): between two bounds. Above: AIMD(Smax, beta), the
/// large-window limit sqrt(Smax (2 - beta) / (2 beta p)) = 15.5 / sqrt(p) (the thesis' 24.65 /
/// sqrt(p) could not be derived, see `cc/bic.rs`). Below: the periodic-loss model of the unit
/// tests with fast convergence, 2.9 / sqrt(p) at 1e-3 and 6.9 / sqrt(p) at 1e-4, whose binary
/// search near W_max makes the exponent steeper than 0.5 at these windows. Measured 166.5 and
/// 1018 packets per RTT (5.3 / sqrt(p) and 10.2 / sqrt(p)).
#[test]
fn response_bic() {
    for (p, model) in [(1e-3, 2.9), (1e-4, 6.9)] {
        let w = window(&run("bic", 1, p, 300));
        let (lo, hi) = (model / p.sqrt(), 15.5 / p.sqrt());
        assert!((lo..=hi).contains(&w), "bic at p={p}: {w:.1} packets/RTT outside [{lo:.1}, {hi:.1}]");
    }
}

/// Westwood+ under random loss: a loss sets the window to the bandwidth estimate times the
/// minimum RTT instead of halving it, so random loss (which does not lower the delivered rate
/// much) costs less than Reno's response. Measured 2.8 and 5.0 times Reno's 1.22 / sqrt(p) at
/// p = 1e-3, 1e-4; the check asks for 1.5 times.
#[test]
fn westwood_keeps_more_than_reno_under_random_loss() {
    response("westwood", |p| 1.22 / p.sqrt(), 1.5, 10.0, &[(1e-3, 300), (1e-4, 300)]);
}

/// BBR v1 ignores random loss up to its design point: at 0.1% loss it keeps measured 92.0% of
/// the link (92.7% before its samples were held to the capacity estimate), about 185 times
/// Reno's rate at the same loss.
#[test]
fn bbr_is_insensitive_to_random_loss() {
    let res = run("bbr", 1, 1e-3, 60);
    assert!(res.measures.utilization > 0.85, "bbr at 0.1% loss: {:.1}%", res.measures.utilization * 100.0);
}

// ---- Group control -----------------------------------------------------------------------

/// GTP (thesis §5.3.5): three flows to receivers sharing one group manager with a capacity of
/// 900 Mb/s get equal allocations (F > 0.99) and together fill the allocation.
#[test]
fn gtp_shares_the_receiver_capacity() {
    let res = run("gtp:capacity=900m", 3, 0.0, 30);
    assert!(res.measures.fairness > 0.99, "F = {:.4}", res.measures.fairness);
    assert!(res.measures.utilization > 0.85, "{:.1}%", res.measures.utilization * 100.0);
}
