//! Progress ACKs: when the policy asks for them (`Policy::progress_acks`, which the default model
//! controller declares; here set by the application), the receiver sends a full ACK every SYN
//! while data arrives behind a hole that holds its ACK point, the number repeated; a sender
//! whose policy learns from them (`Policy::learn_from_repeated_acks`) runs `on_ack` on each.
//! Without them, UDT4's behaviour: the receiver is silent once the number was confirmed, and the
//! sender ignores repeated ACKs.

// Test code: helpers outside #[test] functions may panic on failure too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::{test_data, LinkModel, Pair};
use udt_proto::cc::{CcContext, CcFactory, CongestionControl, FixedRate, Policy};
use udt_proto::connection::Config;
use udt_proto::SeqNo;

/// 1 ms per packet, a window the flight never fills; records every `on_ack`.
#[derive(Debug)]
struct Recording {
    acks: Arc<Mutex<Vec<u32>>>,
}

impl CcFactory for Recording {
    fn build(&self) -> Box<dyn CongestionControl> {
        Box::new(Recorder {
            inner: FixedRate::new(Duration::from_millis(1), 100_000.0),
            acks: self.acks.clone(),
        })
    }
}

#[derive(Debug)]
struct Recorder {
    inner: FixedRate,
    acks: Arc<Mutex<Vec<u32>>>,
}

impl CongestionControl for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    fn send_period(&self) -> Duration {
        self.inner.send_period()
    }
    fn congestion_window(&self) -> f64 {
        self.inner.congestion_window()
    }
    fn on_ack(&mut self, _ctx: &mut CcContext<'_>, ack: SeqNo) {
        self.acks.lock().unwrap().push(ack.value());
    }
}

const ISN: u32 = 5000;

/// Send 1000 packets (1 s at 1 ms a packet) over a 100 ms RTT, with the first two
/// transmissions of `ISN + 500` lost: a hole of about 300 ms while data keeps arriving.
/// Returns the sender's `on_ack` calls that repeat the hole's number, the receiver's full
/// ACKs, and whether every byte arrived intact.
fn run(progress: bool) -> (usize, u64, bool) {
    let acks = Arc::new(Mutex::new(Vec::new()));
    let config = Config {
        cc: Arc::new(Recording { acks: acks.clone() }),
        policy: Some(Policy::UDT4.with_progress_acks(progress)),
        initial_seq: Some(SeqNo::new(ISN)),
        ..Config::default()
    };
    let link = LinkModel { delay: Duration::from_millis(50), ..LinkModel::default() };
    let mut pair = Pair::new(11, link, link, config.clone());
    pair.connect(config);
    assert!(pair.run_until(Duration::from_secs(5), |p| p.connected()));
    support::drop_data_packets(&mut pair, &[(SeqNo::new(ISN + 500), 2)]);
    let data = test_data(1000 * 1400, 5);
    let (mut written, mut got) = (0, Vec::new());
    let mut buf = vec![0u8; 1 << 20];
    pair.run_until(Duration::from_secs(20), |p| {
        let client = p.client.as_mut().unwrap();
        if written < data.len() {
            written += client.write(&data[written..]).unwrap_or(0);
        }
        let server = p.server.as_mut().unwrap();
        while let Ok(n) = server.read(&mut buf) {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        got.len() >= data.len()
    });
    let repeats = acks.lock().unwrap().iter().filter(|&&a| a == ISN + 500).count();
    let full_acks = pair.server.as_ref().unwrap().counters().acks_sent;
    (repeats, full_acks, got == data)
}

#[test]
fn progress_acks_reach_the_controller_while_a_hole_holds_the_ack_point() {
    let (repeats, acks_with, intact) = run(true);
    assert!(intact, "data corrupted or short");
    // The hole lasts ~300 ms; one progress ACK per 10 ms SYN, less the first few (the ACK
    // that first carries the number, and the NAK's round trip).
    assert!(repeats >= 20, "{repeats} ACKs at the hole's number reached the controller");
    let (repeats, acks_without, intact) = run(false);
    assert!(intact, "data corrupted or short");
    assert!(repeats <= 1, "UDT4: the number is acknowledged once ({repeats} times)");
    assert!(acks_with >= acks_without + 20, "{acks_with} ACKs with progress reports, {acks_without} without");
}
