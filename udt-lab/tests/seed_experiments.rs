//! The seed papers' comparisons in the simulator, on small paths so they run in seconds: every
//! bulk transfer arrives byte for byte (the receiving sessions check every byte against the
//! generated file), RBUDP follows He et al.'s model on loss-free paths, FOBS' segmented
//! acknowledgements over TCP waste less than whole-chunk maps over UDP (Dickens et al.), and a
//! blast protocol takes its set rate from a TCP flow sharing its bottleneck.

use std::time::Duration;

use udt_lab::seeds::{self, Axis, Setup};

fn setup() -> Setup {
    Setup {
        bw_bps: 100_000_000,
        rtt: Duration::from_millis(100),
        loss: 0.001,
        size: 10_000_000,
        limit: Duration::from_secs(30),
        seed: 3,
        jobs: 2,
    }
}

#[test]
fn every_protocol_completes_byte_exact_across_loss_and_rtt() {
    let s = setup();
    let mut results = seeds::ren(Axis::Loss, &[0.0, 0.01], &s).expect("runs");
    results.extend(seeds::ren(Axis::Rtt, &[2.0, 300.0], &s).expect("runs"));
    for r in &results {
        let bulk = ["rbudp", "tsunami", "fobs"].contains(&r.protocol.as_str());
        if bulk {
            assert!(r.completed, "{} {}: {:?}", r.label, r.protocol, r.failure);
            assert_eq!(r.delivered, r.size, "{} {}", r.label, r.protocol);
            assert!(r.goodput_mbps < 100.0, "{} {}: above the link", r.label, r.protocol);
        }
    }
    // Ren et al.: the blast protocols hold their throughput through 1% loss where TCP collapses.
    let at = |label: &str, protocol: &str| {
        results.iter().find(|r| r.label == label && r.protocol == protocol).expect("a row").goodput_mbps
    };
    assert!(at("loss 1%", "rbudp") > 5.0 * at("loss 1%", "bic"));
    assert!(at("loss 1%", "tsunami") > 5.0 * at("loss 1%", "bic"));
}

#[test]
fn rbudp_follows_its_model_on_loss_free_paths() {
    let rows = seeds::rbudp_model(&setup(), &[1_000_000, 20_000_000], &[10.0, 200.0], &[0.02]).expect("runs");
    for r in rows.iter().filter(|r| r.run.loss == 0.0) {
        assert!(r.run.completed, "{}", r.run.label);
        let error = (r.measured_ratio - r.model_ratio).abs() / r.model_ratio;
        assert!(error < 0.1, "{}: measured {} vs model {}", r.run.label, r.measured_ratio, r.model_ratio);
        assert_eq!(r.resend_rounds, 0, "{}: no loss, one blast", r.run.label);
    }
    let lossy = rows.iter().find(|r| r.run.loss > 0.0).expect("the lossy row");
    assert!(lossy.run.completed && lossy.resend_rounds >= 1, "2% loss needs re-blasts");
}

#[test]
fn fobs_segmented_acknowledgements_waste_less_than_chunk_maps() {
    let results = seeds::fobs_acks(&setup(), &[0.02]).expect("runs");
    let (segmented, maps) = (&results[0], &results[1]);
    assert!(segmented.completed && maps.completed, "{:?} {:?}", segmented.failure, maps.failure);
    assert_eq!(segmented.protocol, "fobs");
    assert!(
        segmented.sent_per_needed < maps.sent_per_needed,
        "segmented {} vs maps {}",
        segmented.sent_per_needed,
        maps.sent_per_needed
    );
}

#[test]
fn a_blast_protocol_takes_its_rate_from_tcp() {
    let s = Setup { size: 20_000_000, ..setup() };
    let results = seeds::beside_tcp(&s).expect("runs");
    let alone = results.iter().find(|r| r.label == "cubic alone").expect("the reference run");
    let rbudp = results.iter().find(|r| r.protocol == "rbudp").expect("rbudp");
    assert!(rbudp.completed);
    let beside = rbudp.competitor_mbps.expect("measured");
    assert!(beside < alone.goodput_mbps / 2.0, "cubic beside rbudp {beside} vs alone {}", alone.goodput_mbps);
}
