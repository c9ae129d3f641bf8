//! The network elements with real UDT traffic: corruption (with and without UDP checksums),
//! MTU, duplication and reordering, Gilbert-Elliott loss, RED, the CBR rate schedule, flow start
//! and stop times, and PCAP export. Replay a failure with `UDT_SIM_SEED=<seed>`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use udt_sim::link::{GilbertElliott, Impairments, LinkConfig, LossModel, QueueConfig, RedConfig};
use udt_sim::network::Network;
use udt_sim::rng::seed_from_env;
use udt_sim::topology::shapes::{dumbbell, Dumbbell, BOTTLENECK};
use udt_sim::{CcChoice, FlowSpec};

const SECOND: Duration = Duration::from_secs(1);

/// `n` pairs over a 100 Mb/s, 10 ms bottleneck shaped by `tweak`.
fn pairs(n: usize, tweak: impl FnOnce(&mut LinkConfig)) -> Dumbbell {
    let mut fwd = LinkConfig::new(100_000_000, Duration::from_millis(5), 100);
    tweak(&mut fwd);
    let rev = LinkConfig::new(100_000_000, Duration::from_millis(5), 10_000);
    dumbbell(fwd, rev, &vec![LinkConfig::ideal(); n])
}

fn udt_flow(d: &mut Dumbbell, i: usize) -> FlowSpec {
    FlowSpec::udt(format!("f{i}"), d.senders[i], d.receivers[i], CcChoice::daimd())
}

fn receiver_counters(net: &Network, flow: usize) -> udt_proto::connection::Counters {
    let f = &net.flows()[flow];
    net.sim().host(f.dst).unwrap().socket(f.dst_port).unwrap().connection().unwrap().counters()
}

#[test]
fn corruption_is_dropped_by_checksum_or_counted_by_udt() {
    let seed = seed_from_env(3);
    for checksum in [true, false] {
        // 1% of data packets and 10% of control packets (ACK, ACK2, NAK: mostly header) damaged.
        let mut fwd = LinkConfig::new(100_000_000, Duration::from_millis(5), 100);
        fwd.impair = Impairments { corrupt: 0.01, ..Impairments::default() };
        let mut rev = LinkConfig::new(100_000_000, Duration::from_millis(5), 10_000);
        rev.impair = Impairments { corrupt: 0.1, ..Impairments::default() };
        let mut d = dumbbell(fwd, rev, &[LinkConfig::ideal()]);
        let mut f = udt_flow(&mut d, 0);
        // Stop the flow a second before counting, so no corrupted packet is still in flight
        // when the counts are compared.
        f.stop = Some(Duration::from_secs(5));
        d.topo.flow(f);
        if !checksum {
            d.topo.without_udp_checksum();
        }
        let mut net = d.topo.build(seed).unwrap();
        net.run_until(6 * SECOND);
        let corrupted = net.link_stats(BOTTLENECK).unwrap().corrupted;
        let corrupted_back = net.link_stats(&format!("{BOTTLENECK}-rev")).unwrap().corrupted;
        let flow = &net.flows()[0];
        let hosts = [(flow.src, flow.src_port), (flow.dst, flow.dst_port)];
        let (mut checksum_drops, mut udt_drops) = (0, 0);
        for (node, port) in hosts {
            let host = net.sim().host(node).unwrap();
            checksum_drops += host.stats().checksum_drops;
            let sock = host.socket(port).unwrap();
            let c = sock.connection().unwrap().counters();
            udt_drops += c.dropped_invalid + c.dropped_no_room + sock.endpoint().unwrap().stats().dropped;
        }
        assert!(
            corrupted > 20 && corrupted_back > 20,
            "seed {seed}: {corrupted} and {corrupted_back} corrupted"
        );
        // 1% corruption is 1% loss to UDT: slow, but it keeps going.
        assert!(net.progress(0).bytes > 1_000_000, "seed {seed}: the flow stalled");
        if checksum {
            assert_eq!(checksum_drops, corrupted + corrupted_back, "seed {seed}");
            assert_eq!(udt_drops, 0, "seed {seed}");
        } else {
            assert_eq!(checksum_drops, 0, "seed {seed}");
            // Flipped header bytes make unparsable or misaddressed packets: UDT drops and
            // counts them; flipped payload bytes go through (UDT has no checksum of its own).
            assert!(udt_drops > 0, "seed {seed}: nothing counted as dropped by UDT");
        }
    }
}

#[test]
fn mtu_drops_oversized_packets() {
    let seed = seed_from_env(4);
    for mss in [1500, 1400] {
        let mut d = pairs(1, |l| l.mtu = Some(1400));
        let f = udt_flow(&mut d, 0).mss(mss);
        d.topo.flow(f);
        let mut net = d.topo.build(seed).unwrap();
        net.run_until(2 * SECOND);
        let link = net.link_stats(BOTTLENECK).unwrap();
        if mss == 1500 {
            assert!(link.mtu_drops > 0, "seed {seed}");
            assert_eq!(net.progress(0).bytes, 0, "seed {seed}: full-size packets crossed a 1400-byte MTU");
        } else {
            assert_eq!(link.mtu_drops, 0, "seed {seed}");
            assert!(net.progress(0).bytes > 1_000_000, "seed {seed}");
        }
    }
}

#[test]
fn duplication_and_reordering_reach_udt() {
    let seed = seed_from_env(5);
    let imp =
        Impairments { reorder: 0.01, reorder_delay: Duration::from_millis(2), duplicate: 0.01, corrupt: 0.0 };
    let mut d = pairs(1, |l| l.impair = imp);
    let f = udt_flow(&mut d, 0);
    d.topo.flow(f);
    let mut net = d.topo.build(seed).unwrap();
    net.run_until(6 * SECOND);
    let link = net.link_stats(BOTTLENECK).unwrap();
    let rx = receiver_counters(&net, 0);
    assert!(link.duplicated > 20 && link.reordered > 20, "seed {seed}: {link:?}");
    assert!(
        rx.dup_recv >= link.duplicated,
        "seed {seed}: {} duplicates seen of {}",
        rx.dup_recv,
        link.duplicated
    );
    assert!(net.progress(0).bytes > 1_000_000, "seed {seed}");
}

#[test]
fn gilbert_elliott_loss_has_its_mean_rate() {
    let seed = seed_from_env(6);
    let ge = GilbertElliott::from_rate_and_burst(0.01, 4.0);
    let mut d = pairs(1, |l| l.loss = LossModel::GilbertElliott(ge));
    let n = d.senders.len();
    let (s, r) = (d.senders[n - 1], d.receivers[n - 1]);
    d.topo.flow(FlowSpec::cbr("cbr", s, r, 1472, vec![(Duration::ZERO, 50_000_000)]));
    let mut net = d.topo.build(seed).unwrap();
    net.run_until(10 * SECOND);
    let link = net.link_stats(BOTTLENECK).unwrap();
    let rate = link.lost as f64 / link.sent as f64;
    assert!((rate - 0.01).abs() < 0.003, "seed {seed}: loss rate {rate}");
}

#[test]
fn red_drops_early_under_overload() {
    let seed = seed_from_env(7);
    let red = RedConfig::ns2_auto(500, 100_000_000, Duration::from_millis(5));
    let mut d = pairs(1, |l| l.queue = QueueConfig::Red(red));
    let (s, r) = (d.senders[0], d.receivers[0]);
    d.topo.flow(FlowSpec::cbr("cbr", s, r, 1472, vec![(Duration::ZERO, 120_000_000)]));
    let mut net = d.topo.build(seed).unwrap();
    net.run_until(5 * SECOND);
    let link = net.link_stats(BOTTLENECK).unwrap();
    // NS-2's automatic weight averages over ~25,000 packets here, so the buffer still fills
    // while the average climbs; early drops then take over.
    assert!(link.early_drops > 1000, "seed {seed}: {link:?}");
    assert!(red.min_th > 60.0 && red.weight < 1e-4, "{red:?}");
}

#[test]
fn cbr_follows_its_schedule() {
    let seed = seed_from_env(8);
    let mut d = pairs(1, |_| {});
    let (s, r) = (d.senders[0], d.receivers[0]);
    let schedule = vec![(Duration::ZERO, 10_000_000), (2 * SECOND, 30_000_000), (4 * SECOND, 0)];
    d.topo.flow(FlowSpec::cbr("cbr", s, r, 1472, schedule));
    let mut net = d.topo.build(seed).unwrap();
    let mut at = |t: Duration| {
        net.run_until(t);
        net.progress(0).bytes as f64 * 8.0 * 1500.0 / 1472.0 / 1e6
    };
    let ms = |v: u64| Duration::from_millis(v);
    let (a, b) = (at(ms(100)), at(ms(1900)));
    let (c, e) = (at(ms(2100)), at(ms(3900)));
    let (f, g) = (at(ms(4100)), at(ms(6000)));
    assert!(((b - a) / 1.8 - 10.0).abs() < 0.1, "seed {seed}: {} Mb/s in phase 1", (b - a) / 1.8);
    assert!(((e - c) / 1.8 - 30.0).abs() < 0.1, "seed {seed}: {} Mb/s in phase 2", (e - c) / 1.8);
    assert!(g - f < 0.01, "seed {seed}: sent after the rate went to zero");
}

#[test]
fn flows_start_and_stop_on_time() {
    let seed = seed_from_env(9);
    let mut d = pairs(2, |_| {});
    let early = udt_flow(&mut d, 0).stopping(2 * SECOND);
    let late = udt_flow(&mut d, 1).starting(SECOND);
    d.topo.flow(early);
    d.topo.flow(late);
    let mut net = d.topo.build(seed).unwrap();
    net.run_until(SECOND - SECOND / 10);
    assert_eq!(net.progress(1).bytes, 0, "seed {seed}: the late flow started early");
    assert!(net.progress(0).bytes > 0, "seed {seed}");
    net.run_until(2 * SECOND + SECOND / 5);
    let stopped = net.progress(0).bytes;
    net.run_until(4 * SECOND);
    assert_eq!(net.progress(0).bytes, stopped, "seed {seed}: the flow went on after its stop time");
    assert!(net.progress(1).bytes > 1_000_000, "seed {seed}");
}

#[test]
fn pcap_capture_records_every_packet_on_the_wire() {
    let seed = seed_from_env(10);
    let path = std::env::temp_dir().join(format!("udt-sim-test-{}-{seed}.pcap", std::process::id()));
    let mut d = pairs(1, |_| {});
    let f = udt_flow(&mut d, 0);
    d.topo.flow(f);
    d.topo.capture(d.bottleneck, &path);
    let mut net = d.topo.build(seed).unwrap();
    net.run_until(SECOND / 2);
    let sent = net.link_stats(BOTTLENECK).unwrap().sent;
    let written = net.finish_captures().unwrap();
    assert_eq!(written, vec![(BOTTLENECK.to_string(), sent)]);
    let bytes = std::fs::read(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(&bytes[0..4], &0xa1b2_3c4du32.to_le_bytes());
    // Walk the records: each is a 16-byte header and an IPv4/UDP packet to port 30000.
    let (mut off, mut records) = (24, 0u64);
    while off < bytes.len() {
        let incl = u32::from_le_bytes(bytes[off + 8..off + 12].try_into().unwrap()) as usize;
        let ip = &bytes[off + 16..off + 16 + incl];
        assert_eq!(ip[0], 0x45);
        assert_eq!(ip[9], 17);
        assert_eq!(u16::from_be_bytes([ip[22], ip[23]]), 30_000);
        off += 16 + incl;
        records += 1;
    }
    assert_eq!(records, sent, "seed {seed}");
}
