//! Protocol edge cases: drop requests naming unsent packets or skipping a gap, a forged drop
//! request, the ACK-history ring (RTT on a fast path), one SYN cookie per connection, ACK2 pacing,
//! the handshake answer of a connection closed as soon as it was accepted.

// Test code: helpers outside #[test] functions may panic on failure too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use support::{LinkModel, Pair};
use udt_proto::cc::{CcFactory, CongestionControl, FixedRate};
use udt_proto::connection::{Config, Mode};
use udt_proto::endpoint::DatagramEvent;
use udt_proto::packet::{Control, ControlPacket, DropRequest, Packet, RequestType};
use udt_proto::{MsgNo, SeqNo, SocketId};

/// A fixed-rate controller with a tiny window, to keep messages partly unsent.
#[derive(Debug)]
struct SmallWindow(f64);

impl CcFactory for SmallWindow {
    fn build(&self) -> Box<dyn CongestionControl> {
        Box::new(FixedRate::new(Duration::from_micros(100), self.0))
    }
}

fn message_config(window: f64) -> Config {
    Config { mode: Mode::Message, cc: Arc::new(SmallWindow(window)), ..Config::default() }
}

fn link(ms: u64) -> LinkModel {
    LinkModel { delay: Duration::from_millis(ms), ..LinkModel::default() }
}

/// Drop the first `times` transmissions of each listed data sequence offset (from the ISN).
fn drop_data(pair: &mut Pair, isn: SeqNo, plan: &[(i32, u32)]) {
    let plan: Vec<(SeqNo, u32)> = plan.iter().map(|&(off, n)| (isn.add(off), n)).collect();
    support::drop_data_packets(pair, &plan);
}

fn receive_all(pair: &mut Pair, limit: Duration, want: usize) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    let mut buf = vec![0u8; 100_000];
    pair.run_until(limit, |p| {
        while let Ok(n) = p.server.as_mut().unwrap().recv_msg(&mut buf) {
            got.push(buf[..n].to_vec());
        }
        got.len() >= want
    });
    got
}

#[test]
fn an_expired_partly_sent_message_does_not_stall_the_connection() {
    let isn = SeqNo::new(1000);
    let config = Config { initial_seq: Some(isn), ..message_config(2.0) };
    let mut pair = Pair::new(81, link(5), link(5), config.clone());
    pair.connect(config);
    assert!(pair.run_until(Duration::from_secs(5), |p| p.connected()));
    drop_data(&mut pair, isn, &[(0, 1)]);
    let now = pair.now;
    let c = pair.client.as_mut().unwrap();
    // A 4-packet message with a 5 ms TTL: the window lets 2 out, the first is lost.
    c.send_msg(now, &vec![1u8; 4 * 1456], Some(Duration::from_millis(5)), false).unwrap();
    c.send_msg(now, b"after", None, false).unwrap();
    let got = receive_all(&mut pair, Duration::from_secs(30), 1);
    assert_eq!(got, vec![b"after".to_vec()], "the message after the expired one must arrive");
    let c = pair.client.as_mut().unwrap();
    assert!(c.counters().msgs_dropped_ttl >= 1);
    assert_eq!(c.counters().dropped_invalid, 0, "no ACK may look beyond what was sent");
    assert!(pair.run_until(Duration::from_secs(5), |p| p.client.as_ref().unwrap().is_flushed()));
}

#[test]
fn a_drop_request_after_a_gap_does_not_acknowledge_the_gap() {
    let isn = SeqNo::new(5000);
    let config = Config { initial_seq: Some(isn), ..message_config(64.0) };
    let mut pair = Pair::new(82, link(5), link(5), config.clone());
    pair.connect(config);
    assert!(pair.run_until(Duration::from_secs(5), |p| p.connected()));
    // A (no TTL) and B (1 ms TTL) are the last packets sent and both are lost, so the receiver
    // sees no gap. The EXP timeout retransmits A (lost again) and turns B into a drop request;
    // only then is C sent. The receiver must NAK A, not acknowledge past it.
    drop_data(&mut pair, isn, &[(0, 2), (1, 1)]);
    let now = pair.now;
    let c = pair.client.as_mut().unwrap();
    c.send_msg(now, b"message A", None, false).unwrap();
    c.send_msg(now, b"message B", Some(Duration::from_millis(1)), false).unwrap();
    pair.run_until(Duration::from_secs(1), |p| p.server.as_ref().unwrap().counters().drop_requests_recv > 0);
    assert!(pair.server.as_ref().unwrap().counters().drop_requests_recv > 0, "no drop request arrived");
    let now = pair.now;
    pair.client.as_mut().unwrap().send_msg(now, b"message C", None, false).unwrap();
    let mut got = receive_all(&mut pair, Duration::from_secs(30), 2);
    got.sort();
    assert_eq!(got, vec![b"message A".to_vec(), b"message C".to_vec()]);
    assert!(pair.run_until(Duration::from_secs(5), |p| p.client.as_ref().unwrap().is_flushed()));
}

#[test]
fn a_forged_drop_request_far_ahead_is_rejected() {
    let config = Config::default();
    let mut pair = Pair::new(83, link(5), link(5), config.clone());
    pair.connect(config);
    assert!(pair.run_until(Duration::from_secs(5), |p| p.connected()));
    let server_id = pair.server.as_ref().unwrap().local_id();
    let now = pair.now;
    let forged = DropRequest {
        msg: MsgNo::new(9),
        first: SeqNo::new(1 << 29),
        end_exclusive: SeqNo::new((1 << 29) + 5),
    };
    let mut buf = [0u8; 64];
    let n = ControlPacket { timestamp: 0, dst: server_id, body: Control::DropRequest(forged) }
        .emit(&mut buf)
        .unwrap();
    let s = pair.server.as_mut().unwrap();
    let before = s.counters().dropped_invalid;
    s.handle_datagram(now, &buf[..n]);
    assert_eq!(s.counters().dropped_invalid, before + 1);
    // The transfer is unaffected.
    let data = support::test_data(2_000_000, 4);
    assert!(stream_through(&mut pair, &data) == data);
}

/// A stream sender never drops data, so in stream mode a drop request (inside the window,
/// where a message-mode one would be taken) can only be forged: it is refused, and the bytes
/// it names still arrive.
#[test]
fn a_drop_request_in_stream_mode_is_refused_and_loses_nothing() {
    let isn = SeqNo::new(7000);
    let config = Config { initial_seq: Some(isn), ..Config::default() };
    let mut pair = Pair::new(85, link(5), link(5), config.clone());
    pair.connect(config);
    assert!(pair.run_until(Duration::from_secs(5), |p| p.connected()));
    let server_id = pair.server.as_ref().unwrap().local_id();
    let forged = DropRequest { msg: MsgNo::new(1), first: isn.add(2), end_exclusive: isn.add(40) };
    let mut buf = [0u8; 64];
    let n = ControlPacket { timestamp: 0, dst: server_id, body: Control::DropRequest(forged) }
        .emit(&mut buf)
        .unwrap();
    let now = pair.now;
    let s = pair.server.as_mut().unwrap();
    let before = s.counters().dropped_invalid;
    s.handle_datagram(now, &buf[..n]);
    assert_eq!(s.counters().dropped_invalid, before + 1, "refused");
    let data = support::test_data(200_000, 6);
    assert!(stream_through(&mut pair, &data) == data, "the bytes the forged request named arrived");
}

/// Write `data` at the client and read at the server until as many bytes arrived (30 s of
/// virtual time at most); what arrived.
fn stream_through(pair: &mut Pair, data: &[u8]) -> Vec<u8> {
    let mut written = 0;
    let mut got = Vec::new();
    let mut chunk = vec![0u8; 65536];
    assert!(pair.run_until(Duration::from_secs(30), |p| {
        written += p.client.as_mut().unwrap().write(&data[written..]).unwrap_or(0);
        while let Ok(n) = p.server.as_mut().unwrap().read(&mut chunk) {
            got.extend_from_slice(&chunk[..n]);
        }
        got.len() == data.len()
    }));
    got
}

#[test]
fn rtt_converges_on_a_fast_path() {
    // 2 ms RTT: every ACK2 comes back before the next ACK, the case a broken ACK history missed
    // (the estimate stayed near its 100 ms start value). A fixed 200 Mb/s on a 1 Gb/s link keeps
    // the queue empty, so the true RTT is 2 ms plus serialisation.
    let cc = Arc::new(udt_proto::cc::FixedFactory { bits_per_sec: 200_000_000 });
    let config = Config { cc, ..Config::default() };
    let mut pair = Pair::new(84, link(1), link(1), config.clone());
    pair.connect(config);
    assert!(pair.run_until(Duration::from_secs(5), |p| p.connected()));
    // ~3 s: the 7/8 smoothing needs ~100 samples to forget its 100 ms start value (samples
    // themselves are exact: 2000 us).
    let data = support::test_data(80_000_000, 5);
    let mut written = 0;
    let mut chunk = vec![0u8; 1 << 20];
    let mut read = 0;
    assert!(pair.run_until(Duration::from_secs(60), |p| {
        written += p.client.as_mut().unwrap().write(&data[written..]).unwrap_or(0);
        while let Ok(n) = p.server.as_mut().unwrap().read(&mut chunk) {
            read += n;
        }
        read == data.len()
    }));
    let now = pair.now;
    let receiver_rtt = pair.server.as_mut().unwrap().stats(now, false).now.rtt_us;
    let sender_rtt = pair.client.as_mut().unwrap().stats(now, false).now.rtt_us;
    assert!((2_000..2_100).contains(&receiver_rtt), "receiver RTT {receiver_rtt} us");
    assert!((2_000..2_100).contains(&sender_rtt), "sender RTT {sender_rtt} us");
}

#[test]
fn one_cookie_admits_one_connection_and_the_listener_is_bounded() {
    let mut pair = Pair::new(85, link(1), link(1), Config::default());
    let client = pair.client_addr;
    let now = pair.now;
    let request = support::handshake_request;
    let mut out = [0u8; 128];
    // Get one cookie for socket id 1.
    let DatagramEvent::Respond(n) =
        pair.server_ep.handle_datagram(now, client, &request(1, 0, RequestType::Request), &mut out)
    else {
        panic!("no cookie reply")
    };
    let Ok(Packet::Control(ControlPacket { body: Control::Handshake(reply), .. })) = Packet::parse(&out[..n])
    else {
        panic!("cookie reply does not parse")
    };
    let cookie = reply.cookie;
    let mut accepted = 0;
    for id in 1..=200 {
        let ev = pair.server_ep.handle_datagram(
            now,
            client,
            &request(id, cookie, RequestType::Response),
            &mut out,
        );
        if matches!(ev, DatagramEvent::Accepted(_)) {
            accepted += 1;
        }
    }
    assert_eq!(accepted, 1, "a cookie must admit only the connection it was issued for");
    assert_eq!(pair.server_ep.stats().bad_cookies, 199);

    // With a bound of 3, a fourth live connection is refused even with a valid cookie.
    pair.server_ep.set_max_accepted(3);
    let mut admitted = 1;
    for id in 1000..1010 {
        let DatagramEvent::Respond(n) =
            pair.server_ep.handle_datagram(now, client, &request(id, 0, RequestType::Request), &mut out)
        else {
            panic!("no cookie reply")
        };
        let Ok(Packet::Control(ControlPacket { body: Control::Handshake(r), .. })) = Packet::parse(&out[..n])
        else {
            panic!()
        };
        match pair.server_ep.handle_datagram(
            now,
            client,
            &request(id, r.cookie, RequestType::Response),
            &mut out,
        ) {
            DatagramEvent::Accepted(_) => admitted += 1,
            DatagramEvent::Respond(n) => {
                // Over the bound: UDT4's rejection, so the client fails at once.
                let Ok(Packet::Control(ControlPacket { body: Control::Handshake(r), .. })) =
                    Packet::parse(&out[..n])
                else {
                    panic!("not a handshake")
                };
                assert_eq!(r.request_type, RequestType::Rejected);
            }
            other => panic!("neither accepted nor rejected: {other:?}"),
        }
    }
    assert_eq!(admitted, 3);
    assert!(pair.server_ep.stats().over_limit >= 7);
}

#[test]
fn ack2_is_sent_at_most_once_per_syn() {
    let mut pair = Pair::new(86, link(1), link(1), Config::default());
    pair.connect(Config::default());
    assert!(pair.run_until(Duration::from_secs(5), |p| p.connected()));
    let c = pair.client.as_mut().unwrap();
    c.write(&[1u8; 4 * 1456]).unwrap();
    let now = pair.now;
    let mut buf = [0u8; 2048];
    let mut sent = Vec::new();
    while let Some(n) = c.poll_transmit(now, &mut buf) {
        sent.push(buf[..n].to_vec());
    }
    let isn = match Packet::parse(&sent[0]) {
        Ok(Packet::Data(h, _)) => h.seq,
        _ => panic!("expected data"),
    };
    let id = c.local_id();
    // Four full ACKs with distinct numbers, all at the same instant (a burst, as UDT4 sends
    // after several short packets).
    for k in 1..=4u32 {
        let ack = udt_proto::packet::Ack {
            ack_no: udt_proto::AckNo::new(100 + k),
            next_expected: isn.add(k as i32),
            info: Some(udt_proto::packet::AckInfo {
                rtt_us: 1000,
                rtt_var_us: 100,
                avail_buf_pkts: 8000,
                rates: None,
                queue: None,
            }),
        };
        let mut out = [0u8; 64];
        let n = ControlPacket { timestamp: 0, dst: id, body: Control::Ack(ack) }.emit(&mut out).unwrap();
        c.handle_datagram(now, &out[..n]);
    }
    let mut ack2s = 0;
    while let Some(n) = c.poll_transmit(now, &mut buf) {
        if let Ok(Packet::Control(ControlPacket { body: Control::Ack2(_), .. })) = Packet::parse(&buf[..n]) {
            ack2s += 1;
        }
    }
    assert_eq!(ack2s, 1, "one ACK2 per SYN (UDT4)");
}

/// A connection the application closes as soon as it is accepted, before the driver sent
/// anything: its handshake answer still leaves, ahead of the shutdown, so the caller connects
/// and then sees the end instead of waiting for an answer until its connect timeout.
#[test]
fn a_connection_closed_at_acceptance_still_answers_the_handshake() {
    let mut pair = Pair::new(86, link(1), link(1), Config::default());
    let (client, now) = (pair.client_addr, pair.now);
    let request = |cookie: u32, kind: RequestType| support::handshake_request(42, cookie, kind);
    let mut out = [0u8; 128];
    let DatagramEvent::Respond(n) =
        pair.server_ep.handle_datagram(now, client, &request(0, RequestType::Request), &mut out)
    else {
        panic!("no cookie reply")
    };
    let Ok(Packet::Control(ControlPacket { body: Control::Handshake(reply), .. })) = Packet::parse(&out[..n])
    else {
        panic!("cookie reply does not parse")
    };
    let DatagramEvent::Accepted(mut conn) =
        pair.server_ep.handle_datagram(now, client, &request(reply.cookie, RequestType::Response), &mut out)
    else {
        panic!("not accepted")
    };
    conn.close(now);
    let mut kinds = Vec::new();
    let mut buf = vec![0u8; 2048];
    while let Some(n) = conn.poll_transmit(now, &mut buf) {
        match Packet::parse(&buf[..n]) {
            Ok(Packet::Control(ControlPacket { body: Control::Handshake(hs), dst, .. })) => {
                assert_eq!(dst, SocketId(42));
                kinds.push(format!("handshake {:?}", hs.request_type));
            }
            Ok(Packet::Control(ControlPacket { body: Control::Shutdown, .. })) => {
                kinds.push("shutdown".into())
            }
            Ok(Packet::Control(ControlPacket { body: Control::Ack(_), .. })) => kinds.push("ack".into()),
            other => panic!("unexpected datagram {other:?}"),
        }
    }
    assert_eq!(kinds.first().map(String::as_str), Some("handshake Response"), "sent: {kinds:?}");
    assert!(kinds.iter().skip(1).any(|k| k == "shutdown"), "sent: {kinds:?}");
    assert_eq!(kinds.iter().filter(|k| k.starts_with("handshake")).count(), 1, "sent: {kinds:?}");
}
