//! GTP end to end: several connections into one receiver whose accepted connections share one
//! `GtpFactory` (one group manager), each pair of endpoints on its own simulated 1 Gb/s link.
//! The receiver's configured capacity is the bottleneck GTP shares; the senders' rates must
//! converge to their max-min fair shares of it, and the data must arrive byte for byte.
//!
//! The pair harness joins one client to one server, so the pairs run in lockstep virtual time:
//! every pair is advanced to the same instant, in steps of 100 us, before time moves on. A pair
//! may process an event up to one step early relative to the others; the shared manager only
//! sees times passed in and tolerates that.

// Test code: a panic is the right failure here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../udt-proto/tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::Duration;

use support::{test_data, LinkModel, Pair};
use udt_cc::gtp::{GtpConfig, GtpFactory, ManagerConfig};
use udt_cc::{factory, CcFactory};
use udt_proto::connection::Config;
use udt_proto::Instant;

const STEP: Duration = Duration::from_micros(100);

/// One sender -> receiver connection and the application on both ends.
struct Flow {
    pair: Pair,
    data: Vec<u8>,
    written: usize,
    received: Vec<u8>,
    closed: bool,
    started: bool,
}

struct Group {
    flows: Vec<Flow>,
    now: Instant,
    receiver: Arc<GtpFactory>,
}

impl Group {
    /// `sizes.len()` flows; flow i sends `sizes[i]` bytes; the receiver's capacity is `capacity`.
    fn new(capacity: u64, sizes: &[usize]) -> Group {
        let manager = ManagerConfig { capacity, ..ManagerConfig::default() };
        let receiver = Arc::new(GtpFactory::new(GtpConfig { manager, ..GtpConfig::default() }));
        let server_cc: Arc<dyn CcFactory> = receiver.clone();
        let flows = sizes
            .iter()
            .enumerate()
            .map(|(i, &len)| {
                let server = Config { cc: Arc::clone(&server_cc), ..Config::default() };
                let link =
                    LinkModel { delay: Duration::from_millis(5 + 2 * i as u64), ..LinkModel::default() };
                Flow {
                    pair: Pair::new(100 + i as u64, link, link, server),
                    data: test_data(len, 7 + i as u64),
                    written: 0,
                    received: Vec::with_capacity(len),
                    closed: false,
                    started: false,
                }
            })
            .collect();
        Group { now: Instant::from_micros(1_000_000), flows, receiver }
    }

    /// Give flow `i` a bottleneck of `bps` with a `queue_pkts` queue towards the receiver.
    fn bottleneck(&mut self, i: usize, bps: u64, queue_pkts: usize) {
        let link = self.flows[i].pair.link_model_mut(support::Side::Server);
        link.rate_bps = Some(bps);
        link.queue_pkts = queue_pkts;
    }

    /// Connect flow `i` (its sender builds its own GTP controller from the catalog).
    fn start(&mut self, i: usize) {
        let cc = factory("gtp").unwrap();
        // A pair's clock stands still until it starts: bring it to the group's time first.
        self.flows[i].pair.now = self.now;
        self.flows[i].pair.connect(Config { cc, ..Config::default() });
        self.flows[i].started = true;
    }

    /// Advance every started flow in lockstep by `d`, writing and reading as the application.
    fn run(&mut self, d: Duration) {
        let end = self.now + d;
        while self.now < end {
            self.now += STEP;
            let t = self.now;
            for f in self.flows.iter_mut().filter(|f| f.started) {
                let Flow { pair, data, written, received, closed, .. } = f;
                let mut buf = vec![0u8; 256 * 1024];
                pair.run_until(Duration::from_secs(3600), |p| {
                    if let (Some(c), Some(s)) = (p.client.as_mut(), p.server.as_mut()) {
                        while *written < data.len() {
                            match c.write(&data[*written..]) {
                                Ok(n) if n > 0 => *written += n,
                                _ => break,
                            }
                        }
                        if *written == data.len() && !*closed {
                            c.close(p.now);
                            *closed = true;
                        }
                        while let Ok(n) = s.read(&mut buf) {
                            if n == 0 {
                                break;
                            }
                            received.extend_from_slice(&buf[..n]);
                        }
                    }
                    p.now >= t
                });
            }
        }
    }

    /// Flow `i`'s sending rate as its controller sets it, Mb/s.
    fn sender_mbps(&mut self, i: usize) -> f64 {
        let now = self.flows[i].pair.now;
        let period_us = self.flows[i].pair.client.as_mut().unwrap().stats(now, false).now.send_period_us;
        1500.0 * 8.0 / period_us
    }

    /// Bytes received by every flow so far.
    fn received(&self) -> Vec<usize> {
        self.flows.iter().map(|f| f.received.len()).collect()
    }

    /// Goodput of each flow over the next `d`, Mb/s of payload.
    fn goodput_mbps(&mut self, d: Duration) -> Vec<f64> {
        let before = self.received();
        self.run(d);
        let after = self.received();
        before.iter().zip(&after).map(|(b, a)| (a - b) as f64 * 8.0 / d.as_secs_f64() / 1e6).collect()
    }

    fn group_size(&self) -> usize {
        self.receiver.manager().lock().unwrap().len()
    }

    fn assert_all_data_arrived(&self) {
        for (i, f) in self.flows.iter().enumerate() {
            assert_eq!(f.received.len(), f.data.len(), "flow {i}: length");
            assert!(f.received == f.data, "flow {i}: data differs");
        }
    }
}

/// `actual` within `tolerance` (a fraction) of `expected`.
fn near(actual: f64, expected: f64, tolerance: f64) -> bool {
    (actual - expected).abs() <= expected * tolerance
}

/// Goodput of a sender paced at 1 Mb/s, in Mb/s: rates count 1500-byte packets and goodput
/// their 1456 payload bytes; and the connection sends every 16th packet right after the one
/// before it (UDT4's packet pairs for bandwidth estimation), so 16 packets take 15 periods.
const GOODPUT_PER_MBPS: f64 = 1456.0 / 1500.0 * 16.0 / 15.0;

#[test]
fn three_senders_converge_to_equal_shares_of_the_receiver_capacity() {
    let mut g = Group::new(300_000_000, &[6_000_000, 6_000_000, 6_000_000]);
    for i in 0..3 {
        g.start(i);
    }
    g.run(Duration::from_millis(150));
    assert_eq!(g.group_size(), 3);
    for i in 0..3 {
        let r = g.sender_mbps(i);
        assert!(near(r, 100.0, 0.01), "flow {i}: sender at {r:.1} Mb/s, want 100");
    }
    let goodput = g.goodput_mbps(Duration::from_millis(200));
    for (i, &r) in goodput.iter().enumerate() {
        assert!(near(r, 100.0 * GOODPUT_PER_MBPS, 0.02), "flow {i}: goodput {r:.1} Mb/s, want 103.5");
    }
    g.run(Duration::from_millis(400));
    g.assert_all_data_arrived();
    // Every connection closed: the group is empty again.
    assert_eq!(g.group_size(), 0);
}

#[test]
fn shares_follow_flows_joining_and_leaving() {
    // Flows 0 and 1 send throughout; flow 2 joins at 200 ms with 2.5 MB and leaves when done.
    let mut g = Group::new(300_000_000, &[12_000_000, 12_000_000, 2_500_000]);
    g.start(0);
    g.start(1);
    g.run(Duration::from_millis(200));
    let two: Vec<f64> = (0..2).map(|i| g.sender_mbps(i)).collect();
    assert!(two.iter().all(|&r| near(r, 150.0, 0.01)), "two flows: {two:?}, want 150 each");

    g.start(2);
    g.run(Duration::from_millis(100));
    let three: Vec<f64> = (0..3).map(|i| g.sender_mbps(i)).collect();
    assert!(three.iter().all(|&r| near(r, 100.0, 0.01)), "three flows: {three:?}, want 100 each");
    let goodput = g.goodput_mbps(Duration::from_millis(100));
    assert!(
        goodput.iter().all(|&r| near(r, 100.0 * GOODPUT_PER_MBPS, 0.02)),
        "three flows: goodput {goodput:?}"
    );

    // Flow 2 (2.5 MB at 100 Mb/s: about 200 ms) finishes and closes; the others take its share.
    g.run(Duration::from_millis(250));
    assert_eq!(g.flows[2].received.len(), 2_500_000);
    assert_eq!(g.group_size(), 2);
    let after: Vec<f64> = (0..2).map(|i| g.sender_mbps(i)).collect();
    assert!(after.iter().all(|&r| near(r, 150.0, 0.01)), "after leave: {after:?}, want 150 each");
    g.run(Duration::from_millis(600));
    g.assert_all_data_arrived();
}

#[test]
fn a_flow_behind_a_slower_bottleneck_gets_what_it_can_use_and_the_others_the_rest() {
    // Flow 2 crosses a 50 Mb/s link (100-packet queue) before the receiver: its losses cap its
    // allocation near 50 Mb/s, and max-min gives the other two about (300 - 50) / 2 = 125 each.
    let mut g = Group::new(300_000_000, &[6_000_000, 6_000_000, 3_000_000]);
    g.bottleneck(2, 50_000_000, 100);
    for i in 0..3 {
        g.start(i);
    }
    g.run(Duration::from_millis(400));
    let rates: Vec<f64> = (0..3).map(|i| g.sender_mbps(i)).collect();
    assert!((35.0..65.0).contains(&rates[2]), "bottlenecked flow at {:.1} Mb/s", rates[2]);
    for &r in &rates[..2] {
        assert!((110.0..140.0).contains(&r), "rates {rates:?}: want about 125 for flows 0 and 1");
    }
    g.run(Duration::from_secs(3));
    g.assert_all_data_arrived();
}
