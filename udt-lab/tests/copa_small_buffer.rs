//! The default controller in a buffer smaller than the flows' shares of the queue: alone, its
//! flows keep the link busy without overflowing the buffer again and again; beside a TCP flow,
//! they leave it room for its bursts. Five flows of RTTs 3 to 6 ms on 60 Mb/s, a DropTail buffer
//! of 10 packets (half the BDP of a 4 ms path): the paper's two packets each would fill it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use udt_lab::report::RunResult;
use udt_lab::scenario::{ms, DumbbellRun, FlowDef, QueueChoice};
use udt_sim::CcChoice;

const RATE_BPS: u64 = 60_000_000;
const RTTS_MS: [f64; 5] = [3.0, 3.5, 4.0, 5.0, 6.0];

/// The five default flows, and a NewReno flow of 4 ms beside them with `tcp`.
fn small_buffer(tcp: bool) -> RunResult {
    let cc = CcChoice::default_cc();
    let mut r = DumbbellRun::uniform("small buffer", RATE_BPS, ms(4.0), 1, cc);
    r.flows =
        RTTS_MS.iter().map(|&rtt| FlowDef { cc, rtt: ms(rtt), start: Duration::ZERO, stop: None }).collect();
    if tcp {
        r.flows.push(FlowDef { cc: CcChoice::newreno(), rtt: ms(4.0), start: Duration::ZERO, stop: None });
    }
    r.queue = QueueChoice::DropTail(10);
    r.time = Duration::from_secs(30);
    r.warmup = Duration::from_secs(10);
    let res = r.run().unwrap();
    let flows: Vec<String> = res.flows.iter().map(|f| format!("{:.1}", f.mean_mbps)).collect();
    eprintln!(
        "tcp {tcp}: util {:.1}%, F {:.4}, loss {:.3}%, flows [{}] Mb/s",
        res.measures.utilization * 100.0,
        res.measures.fairness,
        res.measures.loss_rate * 100.0,
        flows.join(" ")
    );
    res
}

#[test]
fn beside_tcp_in_a_small_buffer_tcp_keeps_at_least_half_its_share() {
    let res = small_buffer(true);
    let share = RATE_BPS as f64 / 1e6 / 6.0;
    let tcp = res.flows.last().unwrap().mean_mbps;
    assert!(tcp >= 0.5 * share, "NewReno {tcp:.1} Mb/s of a share of {share:.1}");
    assert!(res.measures.utilization >= 0.9, "utilization {:.3}", res.measures.utilization);
}

#[test]
fn alone_in_a_small_buffer_the_flows_fill_the_link_and_share_it() {
    let res = small_buffer(false);
    assert!(res.measures.utilization >= 0.95, "utilization {:.3}", res.measures.utilization);
    assert!(res.measures.fairness >= 0.95, "F {:.4}", res.measures.fairness);
    assert!(res.measures.loss_rate < 0.01, "loss {:.3}%", res.measures.loss_rate * 100.0);
}
