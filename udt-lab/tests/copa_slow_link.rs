//! The default controller on slow links, where one packet is a long time on the link (12 ms at
//! 1 Mb/s): a flow alone, and four flows together, keep a queue of a packet or two and never
//! fill a 10-packet buffer. The trough of their own cycle stays a packet above empty, so a
//! queue no longer than the paper's `1/δ` packets must count as nearly empty: read against a
//! tenth of its peak alone, such a queue never empties, the flows take themselves for a buffer
//! filler and compete as TCP, which keeps the buffer full and loses packets every round.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use udt_lab::scenario::{ms, DumbbellRun, QueueChoice};
use udt_sim::CcChoice;

fn run(bw_bps: u64, rtt_ms: f64, flows: usize) -> (f64, f64) {
    let label = format!("{flows} on {} Mb/s, {rtt_ms} ms", bw_bps / 1_000_000);
    let mut r = DumbbellRun::uniform(label.clone(), bw_bps, ms(rtt_ms), flows, CcChoice::default_cc());
    r.queue = QueueChoice::DropTail(10);
    r.time = Duration::from_secs(30);
    r.warmup = Duration::from_secs(10);
    let res = r.run().unwrap();
    let (util, loss) = (res.measures.utilization, res.measures.loss_rate);
    eprintln!("{label}: util {:.1}%, loss {:.3}%", util * 100.0, loss * 100.0);
    (util, loss)
}

#[test]
fn one_flow_on_a_slow_link_keeps_its_buffer_from_overflowing() {
    for rtt_ms in [1.0, 20.0] {
        let (util, loss) = run(1_000_000, rtt_ms, 1);
        assert!(loss < 0.01, "{rtt_ms} ms: loss {:.3}%", loss * 100.0);
        assert!(util >= 0.9, "{rtt_ms} ms: utilization {util:.3}");
    }
}

#[test]
fn four_flows_on_a_slow_short_link_keep_their_buffer_from_overflowing() {
    let (util, loss) = run(10_000_000, 1.3, 4);
    assert!(loss < 0.01, "loss {:.3}%", loss * 100.0);
    assert!(util >= 0.9, "utilization {util:.3}");
}
