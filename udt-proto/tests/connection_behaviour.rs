//! Connection behaviour in virtual time: message mode with TTL, rendezvous, broken peers,
//! refused and timed-out connects, duplicate handshakes, hostile input, close and misuse.

// Test code: helpers outside #[test] functions may panic on failure too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use support::{test_data, LinkModel, Pair, Side};
use udt_proto::connection::{CloseReason, Config, ConfigError, ConnError, Event, Mode, State};
use udt_proto::packet::{
    Ack, AckInfo, Control, ControlPacket, DropRequest, Handshake, LossEntry, NakList, Packet, RequestType,
    SocketType,
};
use udt_proto::{AckNo, MsgNo, SeqNo, SocketId};

fn connected_pair(seed: u64, link: LinkModel, config: Config) -> Pair {
    let mut pair = Pair::new(seed, link, link, config.clone());
    pair.connect(config);
    assert!(pair.run_until(Duration::from_secs(10), |p| p.connected()), "seed {seed}: not connected");
    pair
}

/// A message that describes itself: index, length, then bytes derived from the index.
fn message(index: u32, len: usize) -> Vec<u8> {
    let mut m = test_data(len.max(8), index as u64 + 7);
    m[..4].copy_from_slice(&index.to_be_bytes());
    m[4..8].copy_from_slice(&(len.max(8) as u32).to_be_bytes());
    m
}

#[test]
fn message_mode_ttl_drops_expired_messages_and_delivers_the_rest_intact() {
    ttl_messages(false);
}

#[test]
fn message_mode_ttl_with_kept_datagrams() {
    // The same with a receive buffer that keeps the datagrams it is handed instead of copying.
    ttl_messages(true);
}

fn ttl_messages(owned_server: bool) {
    // A fixed 20 Mb/s rate so that messages leave at once whatever the loss (the native
    // control's collapse under 15% random loss would make them expire in the queue instead).
    let cc = std::sync::Arc::new(udt_proto::cc::FixedFactory { bits_per_sec: 20_000_000 });
    let config = Config { mode: Mode::Message, cc, ..Config::default() };
    // 100 ms RTT and 15% loss: a retransmission takes at least an RTT, so 30 ms TTLs expire.
    let link = LinkModel { delay: Duration::from_millis(50), loss: 0.15, ..LinkModel::default() };
    let mut pair = connected_pair(11, link, config);
    pair.owned_server = owned_server;
    let total = 400u32;
    let mut next = 0u32;
    let mut received: Vec<Vec<u8>> = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    let spec = |i: u32| -> (usize, Option<Duration>, bool) {
        let len = 8 + (i as usize * 7919) % 4_000;
        let ttl = if i % 2 == 0 { None } else { Some(Duration::from_millis(30)) };
        (len, ttl, i % 3 == 0)
    };
    let t0 = pair.now;
    let done = pair.run_until(Duration::from_secs(600), |p| {
        let now = p.now;
        let client = p.client.as_mut().unwrap();
        // One message every 10 ms, so most are sent before their TTL and some expire while
        // their lost packets wait for retransmission (exercising drop requests).
        while next < total && now >= t0 + Duration::from_millis(10) * next {
            let (len, ttl, in_order) = spec(next);
            match client.send_msg(now, &message(next, len), ttl, in_order) {
                Ok(_) => next += 1,
                Err(ConnError::WouldBlock) => break,
                Err(e) => panic!("send_msg: {e}"),
            }
        }
        let server = p.server.as_mut().unwrap();
        while let Ok(n) = server.recv_msg(&mut buf) {
            received.push(buf[..n].to_vec());
        }
        next == total && client.is_flushed() && server.readable_bytes() == 0 && {
            // everything without a TTL arrived
            let got: std::collections::HashSet<u32> =
                received.iter().map(|m| u32::from_be_bytes([m[0], m[1], m[2], m[3]])).collect();
            (0..total).filter(|i| i % 2 == 0).all(|i| got.contains(&i))
        }
    });
    if !done {
        let got: std::collections::HashSet<u32> =
            received.iter().map(|m| u32::from_be_bytes([m[0], m[1], m[2], m[3]])).collect();
        let missing: Vec<u32> = (0..total).filter(|i| i % 2 == 0 && !got.contains(i)).collect();
        let now = pair.now;
        let c = pair.client.as_mut().unwrap();
        let flushed = c.is_flushed();
        let cs = c.stats(now, false);
        let ss = pair.server.as_mut().unwrap().stats(now, false);
        panic!(
            "not all messages without TTL arrived: next {next}, got {}, missing {:?}, flushed {flushed}\nclient {:?}\nserver {:?}\nsender {:?}\nreceiver {:?}",
            received.len(), &missing[..missing.len().min(20)], pair.client.as_ref().unwrap(), pair.server.as_ref().unwrap(), cs.total, ss.total
        );
    }
    let mut seen = std::collections::HashSet::new();
    let mut last_in_order: Option<u32> = None;
    for m in &received {
        let index = u32::from_be_bytes([m[0], m[1], m[2], m[3]]);
        let (len, _, in_order) = spec(index);
        assert_eq!(m, &message(index, len), "message {index} corrupted");
        assert!(seen.insert(index), "message {index} delivered twice");
        if in_order {
            assert!(
                last_in_order.is_none_or(|l| l < index),
                "in-order message {index} after {last_in_order:?}"
            );
            last_in_order = Some(index);
        }
    }
    let now = pair.now;
    let sender = pair.client.as_mut().unwrap().stats(now, false);
    let receiver = pair.server.as_mut().unwrap().stats(now, false);
    let dropped = total as usize - received.len();
    eprintln!(
        "messages: {} of {total} delivered, {dropped} dropped by TTL ({} before sending); sender drop requests {}, receiver got {}",
        received.len(),
        sender.total.msgs_expired_unsent,
        sender.total.msgs_dropped_ttl,
        receiver.total.drop_requests_recv
    );
    assert!(dropped > 0, "no message expired: the test does not exercise TTL");
    assert!(sender.total.msgs_dropped_ttl >= 10, "too few drop requests to exercise them");
    assert!(receiver.total.drop_requests_recv > 0);
    assert!(received.len() > total as usize / 2 + 20, "most TTL messages should still arrive");
    assert_eq!(pair.owned_kept > 0, owned_server, "datagrams kept by the receive buffer");
}

#[test]
fn rendezvous_connects_and_carries_data_both_ways() {
    let link = LinkModel { delay: Duration::from_millis(20), ..LinkModel::default() };
    let mut pair = Pair::new(21, link, link, Config::default());
    pair.server_ep.stop_listening();
    let (caddr, saddr, now) = (pair.client_addr, pair.server_addr, pair.now);
    pair.client = Some(pair.client_ep.rendezvous(Config::default(), saddr, now).unwrap());
    pair.server = Some(pair.server_ep.rendezvous(Config::default(), caddr, now).unwrap());
    assert!(pair.run_until(Duration::from_secs(5), |p| p.connected()), "rendezvous did not connect");
    assert!(pair.now - now < Duration::from_millis(200), "took {:?}", pair.now - now);
    assert!(pair.client_events.contains(&Event::Connected));
    let a = test_data(500_000, 1);
    let b = test_data(300_000, 2);
    let (mut got_a, mut got_b) = (Vec::new(), Vec::new());
    let (mut wa, mut wb) = (0, 0);
    let mut chunk = vec![0u8; 65536];
    let ok = pair.run_until(Duration::from_secs(30), |p| {
        let c = p.client.as_mut().unwrap();
        wa += c.write(&a[wa..]).unwrap_or(0);
        while let Ok(n) = c.read(&mut chunk) {
            got_b.extend_from_slice(&chunk[..n]);
        }
        let s = p.server.as_mut().unwrap();
        wb += s.write(&b[wb..]).unwrap_or(0);
        while let Ok(n) = s.read(&mut chunk) {
            got_a.extend_from_slice(&chunk[..n]);
        }
        got_a.len() == a.len() && got_b.len() == b.len()
    });
    assert!(ok);
    assert!(got_a == a && got_b == b);
}

#[test]
fn a_silent_peer_is_declared_broken() {
    let mut pair = connected_pair(31, LinkModel::default(), Config::default());
    let data = test_data(10_000_000, 3);
    pair.client.as_mut().unwrap().write(&data).unwrap();
    pair.run_until(Duration::from_millis(20), |_| false);
    // The server dies: nothing reaches it and it sends nothing.
    pair.link_model_mut(Side::Server).blackhole = true;
    pair.link_model_mut(Side::Client).blackhole = true;
    let silent_since = pair.now;
    let broke = pair.run_until(Duration::from_secs(120), |p| {
        p.client_events.contains(&Event::Closed(CloseReason::ConnectionLost))
    });
    assert!(broke, "client never declared the connection lost");
    let after = pair.now - silent_since;
    // UDT4: EXP count above 16 and more than 5 s of silence: about 46 s with 300 ms units.
    assert!(
        after > Duration::from_secs(30) && after < Duration::from_secs(60),
        "declared lost after {after:?}"
    );
    assert_eq!(pair.client.as_ref().unwrap().state(), State::Closed(CloseReason::ConnectionLost));
    let err = pair.client.as_mut().unwrap().write(b"x").unwrap_err();
    assert_eq!(err, ConnError::Closed(CloseReason::ConnectionLost));
}

#[test]
fn an_idle_connection_stays_up_on_keep_alives_and_breaks_when_the_peer_goes() {
    let mut pair = connected_pair(32, LinkModel::default(), Config::default());
    pair.run_until(Duration::from_secs(120), |_| false);
    assert!(pair.connected(), "idle connection dropped although the peer answers keep-alives");
    pair.link_model_mut(Side::Client).blackhole = true;
    let t0 = pair.now;
    assert!(pair.run_until(Duration::from_secs(120), |p| {
        p.client_events.contains(&Event::Closed(CloseReason::ConnectionLost))
    }));
    assert!(pair.now - t0 > Duration::from_secs(30));
}

#[test]
fn connect_without_listener_times_out_after_about_three_seconds() {
    let mut pair = Pair::new(41, LinkModel::default(), LinkModel::default(), Config::default());
    pair.server_ep.stop_listening();
    let t0 = pair.now;
    pair.connect(Config::default());
    assert!(pair.run_until(Duration::from_secs(10), |p| {
        p.client_events.contains(&Event::Closed(CloseReason::ConnectTimedOut))
    }));
    let took = pair.now - t0;
    assert!(took >= Duration::from_secs(3) && took < Duration::from_millis(3300), "{took:?}");
    // 250 ms resends: about 12 requests, like the captured UDT4 client.
    let sent = pair.link_stats(Side::Server).sent;
    assert!((11..=14).contains(&sent), "{sent} requests");
}

#[test]
fn socket_type_mismatch_is_refused() {
    let mut pair = Pair::new(42, LinkModel::default(), LinkModel::default(), Config::default());
    pair.connect(Config { mode: Mode::Message, ..Config::default() });
    assert!(pair.run_until(Duration::from_secs(5), |p| {
        p.client_events.contains(&Event::Closed(CloseReason::Refused))
    }));
    assert_eq!(pair.server_ep.stats().rejections, 1);
}

#[test]
fn a_lost_final_answer_is_answered_again_without_a_second_connection() {
    let mut pair = Pair::new(43, LinkModel::default(), LinkModel::default(), Config::default());
    let mut dropped = false;
    pair.filter = Some(Box::new(move |dest, bytes| {
        if dest == Side::Client && !dropped {
            if let Ok(Packet::Control(ControlPacket { body: Control::Handshake(hs), .. })) =
                Packet::parse(bytes)
            {
                if hs.request_type == RequestType::Response {
                    dropped = true;
                    return false;
                }
            }
        }
        true
    }));
    pair.connect(Config::default());
    let t0 = pair.now;
    assert!(pair.run_until(Duration::from_secs(5), |p| p.connected()));
    assert!(pair.now - t0 >= Duration::from_millis(250), "the resend should have been needed");
    assert_eq!(pair.server_ep.stats().accepted, 1);
    assert_eq!(pair.server_ep.connection_count(), 1);
}

/// A side that closes right after reading acknowledges what it read before its shutdown, so a
/// peer waiting for that acknowledgement (`flush_acknowledged`) sees its data delivered rather
/// than the connection ended under it.
#[test]
fn close_acknowledges_what_was_read_before_the_shutdown() {
    let mut pair = connected_pair(53, LinkModel::default(), Config::default());
    // Two full packets: a short one is acknowledged on arrival anyway.
    let echo = test_data(2 * Config::payload_size(Config::default().mss), 9);
    assert_eq!(pair.server.as_mut().unwrap().write(&echo).unwrap(), echo.len());
    let mut got = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    let mut flushed_at_shutdown = None;
    assert!(pair.run_until(Duration::from_secs(10), |p| {
        if got.len() < echo.len() {
            if let Ok(n) = p.client.as_mut().unwrap().read(&mut chunk) {
                got.extend_from_slice(&chunk[..n]);
                if got.len() == echo.len() {
                    // At once, before the ACK timer: the shutdown follows the read directly.
                    p.client.as_mut().unwrap().close(p.now);
                }
            }
        }
        let s = p.server.as_ref().unwrap();
        if flushed_at_shutdown.is_none() && matches!(s.state(), State::Closed(_)) {
            flushed_at_shutdown = Some(s.is_flushed());
        }
        flushed_at_shutdown.is_some()
    }));
    assert!(got == echo);
    assert!(pair.server_events.contains(&Event::Closed(CloseReason::PeerShutdown)));
    assert_eq!(
        flushed_at_shutdown,
        Some(true),
        "the echo was acknowledged before the shutdown ended the connection"
    );
}

/// UDT4 sends one shutdown; a lost one leaves the peer to its keep-alive timeout (tens of
/// seconds). We send a few: with the first lost, the peer still closes at once.
#[test]
fn a_lost_shutdown_is_covered_by_its_copies() {
    let mut pair = connected_pair(52, LinkModel::default(), Config::default());
    let mut dropped = 0;
    pair.filter = Some(Box::new(move |dest, bytes| {
        if dest == Side::Server
            && dropped == 0
            && matches!(
                Packet::parse(bytes),
                Ok(Packet::Control(ControlPacket { body: Control::Shutdown, .. }))
            )
        {
            dropped += 1;
            return false;
        }
        true
    }));
    let c = pair.client.as_mut().unwrap();
    assert_eq!(c.write(b"bye").unwrap(), 3);
    let t0 = pair.now;
    let mut got = Vec::new();
    let mut chunk = [0u8; 64];
    let mut closed = false;
    assert!(pair.run_until(Duration::from_secs(60), |p| {
        if !closed && p.client.as_ref().unwrap().counters().pkts_sent > 0 {
            p.client.as_mut().unwrap().close(p.now);
            closed = true;
        }
        let s = p.server.as_mut().unwrap();
        loop {
            match s.read(&mut chunk) {
                Ok(0) => return true,
                Ok(n) => got.extend_from_slice(&chunk[..n]),
                Err(_) => return false,
            }
        }
    }));
    assert_eq!(got, b"bye");
    assert!(pair.server_events.contains(&Event::Closed(CloseReason::PeerShutdown)));
    assert!(pair.now - t0 < Duration::from_secs(1), "closed after {:?}", pair.now - t0);
}

#[test]
fn close_flushes_then_the_peer_reads_to_end_of_stream() {
    let mut pair = connected_pair(51, LinkModel { loss: 0.02, ..LinkModel::default() }, Config::default());
    let data = test_data(3_000_000, 5);
    let mut written = 0;
    let mut got = Vec::new();
    let mut chunk = vec![0u8; 100_000];
    let mut eof = false;
    let mut closed = false;
    assert!(pair.run_until(Duration::from_secs(60), |p| {
        let c = p.client.as_mut().unwrap();
        written += c.write(&data[written..]).unwrap_or(0);
        if written == data.len() && !closed {
            c.close(p.now);
            closed = true;
        }
        let s = p.server.as_mut().unwrap();
        loop {
            match s.read(&mut chunk) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => got.extend_from_slice(&chunk[..n]),
                Err(_) => break,
            }
        }
        eof
    }));
    assert!(got == data);
    assert!(pair.client_events.contains(&Event::Closed(CloseReason::Local)));
    assert!(pair.server_events.contains(&Event::Closed(CloseReason::PeerShutdown)));
    let c = pair.client.as_mut().unwrap();
    assert_eq!(c.write(b"late"), Err(ConnError::Closed(CloseReason::Local)));
}

#[test]
fn a_close_lingers_at_most_the_linger_time_while_the_peer_reads_nothing() {
    // The server never reads and its buffer holds 64 packets: most of what the client wrote
    // can never leave. Close keeps trying for the linger time (2 s), then gives up. (No unsent
    // limit, so that one write queues more than the server's buffer.)
    let config = Config {
        linger: Some(Duration::from_secs(2)),
        recv_buffer_pkts: 64,
        unsent_limit_pkts: 0,
        ..Config::default()
    };
    let mut pair = connected_pair(71, LinkModel::default(), config);
    let data = test_data(1_000_000, 7);
    let c = pair.client.as_mut().unwrap();
    let written = c.write(&data).unwrap();
    assert!(written > 64 * 1456, "only {written} bytes written");
    let t0 = pair.now;
    c.close(t0);
    assert_eq!(c.state(), State::Connected, "closed at once");
    assert!(pair.run_until(Duration::from_secs(10), |p| {
        p.client_events.contains(&Event::Closed(CloseReason::LingerExpired))
    }));
    let lingered = pair.now - t0;
    assert!(lingered >= Duration::from_secs(2) && lingered < Duration::from_secs(3), "{lingered:?}");
    assert!(pair.run_until(Duration::from_secs(5), |p| {
        p.server_events.contains(&Event::Closed(CloseReason::PeerShutdown))
    }));

    // Without linger the same close is immediate, the unsent data dropped.
    let config = Config { linger: None, recv_buffer_pkts: 64, ..Config::default() };
    let mut pair = connected_pair(72, LinkModel::default(), config);
    let c = pair.client.as_mut().unwrap();
    c.write(&data).unwrap();
    c.close(pair.now);
    assert_eq!(c.state(), State::Closed(CloseReason::Local));
}

#[test]
fn application_misuse_gets_typed_errors() {
    let bad = Config { mss: 0, ..Config::default() };
    assert!(matches!(bad.validate(), Err(ConfigError::Mss(0))));
    let mut ep = udt_proto::endpoint::Endpoint::new(
        udt_proto::Instant::ZERO,
        Box::new(Xoshiro256PlusPlus::seed_from_u64(1)),
    );
    assert!(ep.connect(bad, "127.0.0.1:1".parse().unwrap(), udt_proto::Instant::ZERO).is_err());
    let small = Config { recv_buffer_pkts: 4, ..Config::default() };
    assert!(matches!(small.validate(), Err(ConfigError::TooSmall { .. })));

    let mut pair = connected_pair(61, LinkModel::default(), Config::default());
    let c = pair.client.as_mut().unwrap();
    let now = pair.now;
    assert_eq!(c.send_msg(now, b"m", None, false), Err(ConnError::WrongMode));
    let mut buf = [0u8; 10];
    assert_eq!(c.recv_msg(&mut buf), Err(ConnError::WrongMode));
    assert_eq!(c.read(&mut buf), Err(ConnError::WouldBlock));

    let mut mpair =
        connected_pair(62, LinkModel::default(), Config { mode: Mode::Message, ..Config::default() });
    let c = mpair.client.as_mut().unwrap();
    let huge = vec![0u8; (udt_proto::connection::DEFAULT_BUFFER_PKTS as usize + 1) * 1500];
    assert!(matches!(c.send_msg(now, &huge, None, false), Err(ConnError::MessageTooLarge { .. })));
    assert_eq!(c.send_msg(now, b"", None, false), Err(ConnError::EmptyMessage));
    assert_eq!(c.write(b"x"), Err(ConnError::WrongMode));
    // A message larger than the reader's buffer is kept, not truncated.
    c.send_msg(now, &[7u8; 5000], None, true).unwrap();
    assert!(mpair.run_until(Duration::from_secs(1), |p| {
        matches!(p.server.as_mut().unwrap().recv_msg(&mut []), Err(ConnError::BufferTooSmall { .. }))
    }));
    let s = mpair.server.as_mut().unwrap();
    let mut small = [0u8; 100];
    assert_eq!(s.recv_msg(&mut small), Err(ConnError::BufferTooSmall { len: 5000, cap: 100 }));
    let mut big = vec![0u8; 6000];
    assert_eq!(s.recv_msg(&mut big), Ok(5000));
    assert!(big[..5000].iter().all(|&b| b == 7));
}

fn control(dst: SocketId, body: Control<'_>) -> Vec<u8> {
    let mut buf = vec![0u8; 2000];
    let n = ControlPacket { timestamp: 0, dst, body }.emit(&mut buf).unwrap();
    buf.truncate(n);
    buf
}

#[test]
fn hostile_input_is_dropped_and_counted_and_the_transfer_still_completes() {
    let mut pair = connected_pair(71, LinkModel::default(), Config::default());
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(99);
    let client_id = pair.client.as_ref().unwrap().local_id();
    let server_addr = pair.server_addr;
    let client_addr = pair.client_addr;
    // More than a fresh connection's send buffer takes at once (it takes more as its packets
    // leave): the rest is written as the transfer goes.
    let data = test_data(100_000, 1);
    let mut written = pair.client.as_mut().unwrap().write(&data).unwrap();
    pair.run_until(Duration::from_millis(5), |_| false);
    // The hostile datagrams arrive now (time given to a connection never goes back).
    let now = pair.now;
    let before = pair.client.as_ref().unwrap().counters().dropped_invalid;

    let c = pair.client.as_mut().unwrap();
    // Random garbage, including random bytes behind a valid header for our id.
    for i in 0..5000 {
        let len = (rng.next_u32() % 1600) as usize;
        let mut junk = vec![0u8; len];
        rng.fill_bytes(&mut junk);
        if i % 2 == 0 && len >= 16 {
            junk[12..16].copy_from_slice(&client_id.0.to_be_bytes());
        }
        c.handle_datagram(now, &junk);
    }
    // An ACK far beyond anything sent.
    let ack = Ack {
        ack_no: AckNo::new(5),
        next_expected: SeqNo::new(rng.next_u32()),
        info: Some(AckInfo { rtt_us: 1, rtt_var_us: 1, avail_buf_pkts: 1 << 30, rates: None, queue: None }),
    };
    c.handle_datagram(now, &control(client_id, Control::Ack(ack)));
    // NAKs with an inverted range and with numbers never sent.
    let mut body = [0u8; 64];
    for entries in [
        vec![LossEntry::Range(SeqNo::new(500), SeqNo::new(400))],
        vec![LossEntry::Single(SeqNo::new(rng.next_u32()))],
    ] {
        let n = NakList::encode(entries, &mut body).unwrap();
        let list = NakList::parse(&body[..n]).unwrap();
        c.handle_datagram(now, &control(client_id, Control::Nak(list)));
    }
    // A drop request wider than any buffer.
    let req = DropRequest { msg: MsgNo::new(3), first: SeqNo::new(0), end_exclusive: SeqNo::new(1 << 29) };
    c.handle_datagram(now, &control(client_id, Control::DropRequest(req)));
    // Handshakes with a wrong version and an absurd MSS.
    let hs = Handshake {
        version: 3,
        socket_type: SocketType::Stream,
        initial_seq: SeqNo::new(1),
        mss: 10,
        flow_window: 0,
        request_type: RequestType::Response,
        socket_id: SocketId(77),
        cookie: 0,
        peer_ip: [0; 4],
    };
    c.handle_datagram(now, &control(client_id, Control::Handshake(hs)));
    let after = c.counters().dropped_invalid;
    assert!(after - before >= 5, "hostile packets not counted: {}", after - before);
    assert_eq!(c.state(), State::Connected);

    // The endpoint survives garbage too, and a bad cookie is not accepted.
    let mut out = [0u8; 128];
    for _ in 0..5000 {
        let len = (rng.next_u32() % 200) as usize;
        let mut junk = vec![0u8; len];
        rng.fill_bytes(&mut junk);
        if len >= 16 {
            junk[12..16].fill(0);
        }
        let _ = pair.server_ep.handle_datagram(now, client_addr, &junk, &mut out);
    }
    let forged = Handshake { version: 4, mss: 1500, flow_window: 8192, cookie: 12345, ..hs };
    let ev = pair.server_ep.handle_datagram(
        now,
        client_addr,
        &control(SocketId(0), Control::Handshake(forged)),
        &mut out,
    );
    assert!(matches!(ev, udt_proto::endpoint::DatagramEvent::Dropped));
    assert!(pair.server_ep.stats().bad_cookies >= 1);
    let _ = server_addr;

    // And the data still arrives intact.
    let mut got = Vec::new();
    let mut chunk = vec![0u8; 65536];
    assert!(pair.run_until(Duration::from_secs(30), |p| {
        written += p.client.as_mut().unwrap().write(&data[written..]).unwrap_or(0);
        while let Ok(n) = p.server.as_mut().unwrap().read(&mut chunk) {
            got.extend_from_slice(&chunk[..n]);
        }
        got.len() >= data.len()
    }));
    assert!(got == data);
}

#[test]
fn same_seed_same_run() {
    let run = |seed| {
        let data = test_data(2_000_000, 9);
        let (_, r) = support::stream_transfer(
            seed,
            &data,
            LinkModel { loss: 0.02, ..LinkModel::default() },
            LinkModel::default(),
            Config::default(),
            Duration::from_secs(60),
        );
        (r.virtual_time, r.sender.total, r.receiver.total)
    };
    assert_eq!(run(5), run(5));
}

#[test]
fn a_slow_reader_stalls_the_sender_without_loss_and_reading_restarts_it_at_once() {
    // A 64-packet receive buffer that the application leaves full for 2 s.
    let config = Config { recv_buffer_pkts: 64, ..Config::default() };
    let mut pair = connected_pair(91, LinkModel::default(), config);
    let data = test_data(2_000_000, 8);
    let mut written = 0;
    pair.run_until(Duration::from_secs(2), |p| {
        written += p.client.as_mut().unwrap().write(&data[written..]).unwrap_or(0);
        false
    });
    let s = pair.server.as_ref().unwrap();
    assert!(s.readable_bytes() > 60 * 1456, "the receive buffer should be full");
    // A full receiver still advertises 2 packets (UDT4's floor, so a lost window update cannot
    // deadlock the connection): the sender probes with 2 packets per ACK round and those are
    // dropped for lack of room, then retransmitted. Nothing more than that probing may overflow.
    let probes = s.counters().dropped_no_room;
    assert!(probes <= 2 * 20, "{probes} packets overflowed the receive buffer in 2 s");
    // Now read everything; the transfer must continue at once, not after a timeout.
    let mut got = Vec::new();
    let mut chunk = vec![0u8; 1 << 20];
    let t0 = pair.now;
    let timeouts_before = pair.client.as_ref().unwrap().counters().timeouts;
    assert!(pair.run_until(Duration::from_secs(60), |p| {
        written += p.client.as_mut().unwrap().write(&data[written..]).unwrap_or(0);
        while let Ok(n) = p.server.as_mut().unwrap().read(&mut chunk) {
            got.extend_from_slice(&chunk[..n]);
        }
        got.len() == data.len()
    }));
    assert!(got == data);
    // 2 MB through a 64-packet window on a 10 ms RTT path: about 22 round trips of 93 KB.
    let took = pair.now - t0;
    assert!(took < Duration::from_millis(600), "took {took:?}");
    let timeouts = pair.client.as_ref().unwrap().counters().timeouts - timeouts_before;
    assert_eq!(timeouts, 0, "once the reader drains the buffer no EXP timeout should be needed");
}
