//! Our sender against a receiver that behaves as UDT4 4.11's does (`FlowSpec::udt4_receiver`):
//! timer and light ACKs only, its median-filtered arrival speed and packet-pair capacity
//! (starting from its made-up 1 packet/s and 1000 packets/s), no repeated NAKs. Every UDT4
//! deployment is such a receiver; the default controller must fill a path to it from the
//! signals it sends, as it does to ours.
//!
//! The path: 1 Gb/s, 10 ms, DropTail queue of one BDP, UDT4's buffers (8192 packets), 20 s of
//! virtual time measured after the first 6. Replay with `UDT_SIM_SEED=<seed>`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use udt_lab::scenario::{ms, DumbbellRun};
use udt_sim::rng::seed_from_env;
use udt_sim::CcChoice;

const GBPS: u64 = 1_000_000_000;
/// UDT4's default receive buffer and flow window bound, packets.
const UDT4_BUFFERS: u32 = 8192;

fn utilization(cc: &str, udt4_receiver: bool) -> f64 {
    let mut r = DumbbellRun::uniform(cc, GBPS, ms(10.0), 1, CcChoice::parse(cc).unwrap());
    r.time = Duration::from_secs(20);
    r.warmup = Duration::from_secs(6);
    r.seed = seed_from_env(1);
    r.buffers = Some(UDT4_BUFFERS);
    r.udt4_receivers = udt4_receiver;
    let res = r.run().unwrap_or_else(|e| panic!("{cc}, seed {}: {e}", r.seed));
    let u = res.measures.utilization;
    eprintln!(
        "{cc} -> {} receiver: utilization {:.1}% (seed {})",
        if udt4_receiver { "UDT4" } else { "our" },
        u * 100.0,
        r.seed
    );
    u
}

/// The default controller (Copa, whose delay target needs the one-way queue a UDT4 receiver
/// does not measure, hands the flow to the model controller once the peer left its policy
/// offers unanswered) fills at least 90% of the path to a UDT4 receiver, as to ours.
#[test]
fn the_default_fills_a_path_to_a_udt4_receiver() {
    let cc = udt_cc::DEFAULT_CC;
    let to_udt4 = utilization(cc, true);
    assert!(to_udt4 >= 0.9, "default -> UDT4 receiver: {:.1}% of 1 Gb/s", to_udt4 * 100.0);
    let to_ours = utilization(cc, false);
    assert!(to_ours >= 0.9, "default -> our receiver: {:.1}% of 1 Gb/s", to_ours * 100.0);
}

/// The model controller alone, from the first packet, fills it too.
#[test]
fn the_model_controller_fills_a_path_to_a_udt4_receiver() {
    let to_udt4 = utilization("model", true);
    assert!(to_udt4 >= 0.9, "model -> UDT4 receiver: {:.1}% of 1 Gb/s", to_udt4 * 100.0);
}
