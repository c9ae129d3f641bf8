//! The sender's head probe: when the policy asks for it (`Policy::head_probe`, here declared by
//! the controller's factory; no controller of the catalog does at present), a retransmission of the
//! oldest unacknowledged packet that is itself lost is sent again one RTT (+ 4 RTTVar + SYN)
//! after it left. The receiver re-reports a loss left unrepaired after the same interval, so
//! both repair a lost retransmission within about one RTT plus the repair timer; the probe
//! also covers a lost re-report.

// Test code: helpers outside #[test] functions may panic on failure too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use support::{test_data, LinkModel, Pair};
use udt_proto::cc::{CcFactory, CongestionControl, FixedRate, Policy};
use udt_proto::connection::Config;
use udt_proto::time::Instant;
use udt_proto::SeqNo;

/// 1 ms per packet and a window far larger than the flight (the window never limits); asks
/// for the head probe when `.0`.
#[derive(Debug)]
struct Paced(bool);

impl CcFactory for Paced {
    fn build(&self) -> Box<dyn CongestionControl> {
        Box::new(Probing { inner: FixedRate::new(Duration::from_millis(1), 100_000.0) })
    }
    fn policy(&self) -> Policy {
        Policy::UDT4.with_head_probe(self.0)
    }
}

#[derive(Debug)]
struct Probing {
    inner: FixedRate,
}

impl CongestionControl for Probing {
    fn name(&self) -> &'static str {
        "probing"
    }
    fn send_period(&self) -> Duration {
        self.inner.send_period()
    }
    fn congestion_window(&self) -> f64 {
        self.inner.congestion_window()
    }
}

const ISN: u32 = 5000;

fn config(probe: bool) -> Config {
    Config { cc: Arc::new(Paced(probe)), initial_seq: Some(SeqNo::new(ISN)), ..Config::default() }
}

/// 50 ms each way: RTT 100 ms.
fn link() -> LinkModel {
    LinkModel { delay: Duration::from_millis(50), ..LinkModel::default() }
}

/// Send 1000 packets' worth client to server (1 s at 1 ms a packet), dropping the first `drops`
/// transmissions of data packet `ISN + 500` (the RTT estimate has settled by then). Returns the client's head probes, the server's NAKs, when the dropped
/// packet first arrived and when its loss was first reported, and the received bytes.
fn run(drops: u32, probe: bool) -> (u64, u64, Option<Duration>, Option<Duration>, Vec<u8>, Vec<u8>) {
    let mut pair = Pair::new(7, link(), link(), config(probe));
    pair.connect(config(probe));
    assert!(pair.run_until(Duration::from_secs(5), |p| p.connected()));
    let watched = SeqNo::new(ISN + 500);
    let start = pair.now;
    let passed = support::drop_data_packets(&mut pair, &[(watched, drops)]);
    let mut arrived = None::<Instant>;
    let data = test_data(1000 * 1400, 3);
    let mut written = 0;
    let mut got = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut first_nak = None;
    pair.run_until(Duration::from_secs(20), |p| {
        if arrived.is_none() && passed.get() > 0 {
            arrived = Some(p.now);
        }
        let client = p.client.as_mut().unwrap();
        if written < data.len() {
            written += client.write(&data[written..]).unwrap_or(0);
        }
        let server = p.server.as_mut().unwrap();
        if first_nak.is_none() && server.counters().naks_sent > 0 {
            first_nak = Some(p.now - start);
        }
        while let Ok(n) = server.read(&mut buf) {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        got.len() >= data.len()
    });
    let probes = pair.client.as_ref().unwrap().counters().head_probes;
    let naks = pair.server.as_ref().unwrap().counters().naks_sent;
    (probes, naks, arrived.map(|t| t - start), first_nak, got, data)
}

#[test]
fn a_lost_retransmission_of_the_head_is_probed_within_one_repair_interval() {
    let (probes, naks, arrived, first_nak, got, data) = run(2, true);
    assert!(got == data, "data corrupted or short: {} of {} bytes", got.len(), data.len());
    assert_eq!(probes, 1, "one probe for the one lost retransmission");
    // The receiver re-reports after the same interval (RTT + 4 RTTVar + SYN), so the probe and
    // the re-report may both go out: at most one report more.
    assert!((1..=2).contains(&naks), "{naks} NAKs");
    let (arrived, first_nak) = (arrived.unwrap(), first_nak.unwrap());
    // NAK to the sender (50 ms), retransmission lost; the probe leaves one RTT + 4 RTTVar + SYN
    // later (about 110 ms on this steady path) and arrives 50 ms after that.
    let repair = arrived - first_nak;
    assert!(
        repair >= Duration::from_millis(210) && repair < Duration::from_millis(230),
        "third transmission arrived {repair:?} after the first report"
    );
}

#[test]
fn no_probe_when_the_retransmission_arrives() {
    let (probes, naks, arrived, _, got, data) = run(1, true);
    assert!(got == data);
    assert!(arrived.is_some());
    assert_eq!((probes, naks), (0, 1));
}

#[test]
fn no_probe_on_a_clean_path() {
    let (probes, naks, _, _, got, data) = run(0, true);
    assert!(got == data);
    assert_eq!((probes, naks), (0, 0));
}

/// Without the probe the receiver's re-report repairs it, one repair interval (RTT, 4 RTTVar
/// and a SYN: about 110 ms here) after the first report, plus the round trip of the re-report
/// and its retransmission.
#[test]
fn without_the_ask_the_receiver_reports_the_loss_again_after_one_repair_interval() {
    let (probes, naks, arrived, first_nak, got, data) = run(2, false);
    assert!(got == data);
    assert_eq!(probes, 0);
    assert!(naks >= 2, "the receiver's re-report repaired it ({naks} NAKs)");
    let repair = arrived.unwrap() - first_nak.unwrap();
    assert!(
        repair >= Duration::from_millis(210) && repair < Duration::from_millis(240),
        "repaired {repair:?} after the first report"
    );
}

/// A probe for a message whose TTL has passed becomes a drop request, and not one per call:
/// the probe is marked when it fires, so the next is another interval away.
#[test]
fn a_probe_for_an_expired_message_sends_one_drop_request_per_interval() {
    let config = Config { mode: udt_proto::connection::Mode::Message, ..config(true) };
    let mut pair = Pair::new(9, link(), link(), config.clone());
    pair.connect(config);
    assert!(pair.run_until(Duration::from_secs(5), |p| p.connected()));
    support::drop_data_packets(&mut pair, &[(SeqNo::new(ISN + 100), 2)]);
    // 300 one-packet messages, 1 ms apart, each with a 150 ms TTL: message 100's
    // retransmission (after ~100 ms) is still in time, its probe (~110 ms later) is not.
    let mut sent = 0u32;
    let mut got = 0u32;
    let mut buf = vec![0u8; 4096];
    let start = pair.now;
    pair.run_until(Duration::from_secs(10), |p| {
        let now = p.now;
        let client = p.client.as_mut().unwrap();
        // message k is handed over at k ms, as the pacing takes it
        while sent < 300
            && now - start >= Duration::from_millis(u64::from(sent))
            && client.send_msg(now, &[sent as u8; 1000], Some(Duration::from_millis(150)), false).is_ok()
        {
            sent += 1;
        }
        while p.server.as_mut().unwrap().recv_msg(&mut buf).is_ok() {
            got += 1;
        }
        got >= 299 && p.now - start > Duration::from_secs(2)
    });
    let c = pair.client.as_ref().unwrap().counters();
    assert_eq!(got, 299, "every other message arrives");
    assert!(c.head_probes >= 1, "the probe fired");
    assert!(c.msgs_dropped_ttl <= 3, "{} drop requests", c.msgs_dropped_ttl);
}
