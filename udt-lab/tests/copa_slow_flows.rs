//! Slow flows of the default controller beside a buffer filler: seven flows of 34-72 ms on
//! 18.7 Mb/s, a packet every 3-7 ms each, and a NewReno flow that keeps the 109-packet buffer
//! (1.4 BDP) full. A flow learns of a loss from its next packet, which reads the buffer up to
//! its own packet spacing short of full (the queue drained meanwhile): the flows must still
//! take their losses for the buffer's overflows, lose few packets, and leave NewReno its share.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use udt_lab::scenario::{ms, DumbbellRun, FlowDef, QueueChoice};
use udt_sim::link::{GilbertElliott, LossModel};
use udt_sim::CcChoice;

const RATE_BPS: u64 = 18_700_000;
const RTTS_MS: [f64; 7] = [48.8, 35.0, 72.2, 35.0, 33.9, 37.8, 40.9];

#[test]
fn slow_flows_beside_newreno_answer_a_full_buffer_and_leave_it_half_its_share() {
    let cc = CcChoice::default_cc();
    let mut r = DumbbellRun::uniform("slow flows", RATE_BPS, ms(48.8), 1, cc);
    r.flows =
        RTTS_MS.iter().map(|&rtt| FlowDef { cc, rtt: ms(rtt), start: Duration::ZERO, stop: None }).collect();
    r.flows.push(FlowDef { cc: CcChoice::newreno(), rtt: ms(31.6), start: Duration::ZERO, stop: None });
    r.queue = QueueChoice::DropTail(109);
    r.loss = LossModel::GilbertElliott(GilbertElliott::from_rate_and_burst(0.0015, 5.4));
    r.time = Duration::from_secs(20);
    r.warmup = Duration::from_secs(10);
    let res = r.run().unwrap();
    let flows: Vec<String> = res.flows.iter().map(|f| format!("{:.2}", f.mean_mbps)).collect();
    eprintln!(
        "util {:.1}%, loss {:.3}%, flows [{}] Mb/s",
        res.measures.utilization * 100.0,
        res.measures.loss_rate * 100.0,
        flows.join(" ")
    );
    let share = RATE_BPS as f64 / 1e6 / 8.0;
    let tcp = res.flows.last().unwrap().mean_mbps;
    assert!(tcp >= 0.5 * share, "NewReno {tcp:.2} Mb/s of a share of {share:.2}");
    assert!(res.measures.loss_rate < 0.05, "loss {:.3}%", res.measures.loss_rate * 100.0);
    assert!(res.measures.utilization >= 0.9, "utilization {:.3}", res.measures.utilization);
}
