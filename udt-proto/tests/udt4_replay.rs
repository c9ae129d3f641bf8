//! Replay of real UDT4 4.11 sessions against our connection.
//!
//! The `sendfile_recvfile_*.pcap` captures hold whole sessions between the reference `recvfile`
//! client and `sendfile` server. We take the client's place: same socket id and initial sequence number,
//! the server's packets fed at their captured times, the client application's writes repeated
//! when the capture shows the reference client sending data. What we emit must be what the
//! reference client emitted: byte for byte for handshakes, data and shutdown (except the
//! timestamp word, which 4.11 leaves 0 for control packets, docs/deviations.md W1, and the two
//! further copies of the shutdown, W10). ACK and ACK2
//! timing is each implementation's own: our ACKs must acknowledge what the reference client's
//! did, and our ACK2s must confirm ACK numbers the server really sent, at most one per SYN. The file bytes we read must be exactly the
//! payloads the server sent.
//!
//! In the 4 MiB capture 3% of the data was dropped after the capture point: every sequence the
//! reference client NAKed appears in the capture before its NAK. We drop exactly those
//! transmissions, so we lose what the reference client lost, and our NAKs must name exactly the
//! sequence numbers its NAKs named.

// Test code: helpers outside #[test] functions may panic on failure too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::{BTreeSet, HashSet};

use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use support::pcap::{read_pcap, vectors_dir, Datagram};
use udt_proto::connection::{Config, Connection, Event, State};
use udt_proto::packet::{Control, ControlPacket, Packet, RequestType};
use udt_proto::{Instant, SeqNo};

/// Bytes of a packet with the timestamp word (bytes 8..12) cleared.
fn without_timestamp(bytes: &[u8]) -> Vec<u8> {
    let mut v = bytes.to_vec();
    if v.len() >= 12 {
        v[8..12].fill(0);
    }
    v
}

fn kind(bytes: &[u8]) -> String {
    match Packet::parse(bytes) {
        Ok(Packet::Data(h, p)) => format!("data seq {} ({} bytes)", h.seq, p.len()),
        Ok(Packet::Control(c)) => format!("{:?}", c.body).chars().take(60).collect(),
        Err(e) => format!("unparseable: {e}"),
    }
}

/// Sequence numbers named by a NAK packet.
fn nak_seqs(bytes: &[u8]) -> Vec<SeqNo> {
    match Packet::parse(bytes) {
        Ok(Packet::Control(ControlPacket { body: Control::Nak(list), .. })) => list
            .iter()
            .flat_map(|e| {
                let (a, b) = e.bounds();
                (0..a.len_to(b)).map(move |i| a.add(i as i32))
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Indices of server data transmissions the reference client never got: followed by a NAK of
/// the reference client naming that sequence before the sequence is transmitted again.
fn dropped_after_capture(frames: &[Datagram], client_port: u16) -> HashSet<usize> {
    let mut dropped = HashSet::new();
    for (i, d) in frames.iter().enumerate() {
        let Ok(Packet::Data(h, _)) = Packet::parse(&d.payload) else { continue };
        if d.src.port() == client_port {
            continue;
        }
        for later in &frames[i + 1..] {
            if later.src.port() != client_port {
                if matches!(Packet::parse(&later.payload), Ok(Packet::Data(h2, _)) if h2.seq == h.seq) {
                    break;
                }
            } else if nak_seqs(&later.payload).contains(&h.seq) {
                dropped.insert(i);
                break;
            }
        }
    }
    dropped
}

#[test]
fn our_client_replays_the_reference_100kb_session() {
    let naks = replay("sendfile_recvfile_100KB.pcap");
    assert!(naks.is_empty());
}

#[test]
fn our_client_replays_the_reference_4mib_session_with_3pct_loss_and_naks_the_same_packets() {
    let naks = replay("sendfile_recvfile_4MiB_3pct_drop.pcap");
    assert_eq!(naks.len(), 88, "the capture's reference client NAKed 88 packets");
}

/// Replay one capture; returns the set of sequence numbers both sides NAKed (asserted equal).
fn replay(file: &str) -> BTreeSet<u32> {
    let (_, frames) = read_pcap(&vectors_dir().join(file));
    let client_port = frames[0].src.port();
    let from_client = |d: &Datagram| d.src.port() == client_port;
    let dropped = dropped_after_capture(&frames, client_port);
    let first = &frames[0];
    let Ok(Packet::Control(ControlPacket { body: Control::Handshake(req), .. })) =
        Packet::parse(&first.payload)
    else {
        panic!("frame 1 is not the client's handshake")
    };
    let t0 = first.time_us;
    let start = Instant::from_micros(1_000_000);
    let at = |d: &Datagram| start + std::time::Duration::from_micros(d.time_us - t0);
    // UDT4's congestion control, default buffers (8192 packets) and flow-control limit
    // (25600): the handshake advertises their minimum.
    let config = Config {
        initial_seq: Some(req.initial_seq),
        cc: std::sync::Arc::new(udt_proto::cc::NativeFactory::default()),
        send_buffer_pkts: 8192,
        recv_buffer_pkts: 8192,
        flow_window: 25_600,
        ..Config::default()
    };
    let peer = std::net::SocketAddr::from(first.dst);
    let mut conn = Connection::connect(
        config,
        req.socket_id,
        peer,
        start,
        Box::new(Xoshiro256PlusPlus::seed_from_u64(7)),
    )
    .unwrap();

    let mut buf = vec![0u8; 2048];
    let mut ours: Vec<Vec<u8>> = Vec::new();
    let mut drain = |conn: &mut Connection, now: Instant, ours: &mut Vec<Vec<u8>>| {
        while let Some(n) = conn.poll_transmit(now, &mut buf) {
            ours.push(buf[..n].to_vec());
        }
    };
    drain(&mut conn, start, &mut ours);

    let mut file = Vec::new();
    let mut sent_by_server = std::collections::BTreeMap::new();
    let mut matched_exact = 0usize;
    let mut reference_acks = Vec::new();
    let mut server_ack_numbers = Vec::new();
    let mut chunk = vec![0u8; 200_000];
    let mut reference_naks = BTreeSet::new();
    for (index, d) in frames.iter().enumerate() {
        let now = at(d);
        if conn.poll_timeout().is_some_and(|t| t <= now) {
            conn.handle_timeout(now);
            drain(&mut conn, now, &mut ours);
        }
        if from_client(d) {
            // What the reference client sent: make our application do the same, then compare.
            let reference = Packet::parse(&d.payload).unwrap();
            match reference {
                Packet::Data(_, payload) => {
                    assert_eq!(conn.write(payload), Ok(payload.len()));
                    drain(&mut conn, now, &mut ours);
                }
                Packet::Control(ControlPacket { body: Control::Shutdown, .. }) => {
                    conn.close(now);
                    drain(&mut conn, now, &mut ours);
                }
                Packet::Control(ControlPacket { body: Control::Ack(a), .. }) => {
                    reference_acks.push(a.next_expected);
                    continue; // our ACK timing is our own; compared below
                }
                Packet::Control(ControlPacket { body: Control::Ack2(_), .. }) => continue,
                Packet::Control(ControlPacket { body: Control::Nak(_), .. }) => {
                    reference_naks.extend(nak_seqs(&d.payload).iter().map(|s| s.value()));
                    continue; // compared as sets below
                }
                _ => {}
            }
            // The same packet must be among what we have emitted and not matched yet.
            let want = without_timestamp(&d.payload);
            let pos = ours.iter().position(|p| without_timestamp(p) == want).unwrap_or_else(|| {
                panic!(
                    "frame {}: the reference client sent {} but we did not; we sent: {:?}",
                    d.number,
                    kind(&d.payload),
                    ours.iter().map(|p| kind(p)).collect::<Vec<_>>()
                )
            });
            ours.remove(pos);
            matched_exact += 1;
        } else {
            match Packet::parse(&d.payload) {
                Ok(Packet::Data(h, p)) => {
                    // In sequence order, once per sequence (retransmissions repeat the bytes).
                    let offset = h.seq.diff(req.initial_seq);
                    sent_by_server.entry(offset).or_insert_with(|| p.to_vec());
                }
                Ok(Packet::Control(ControlPacket { body: Control::Ack(a), .. })) if a.info.is_some() => {
                    server_ack_numbers.push(a.ack_no)
                }
                _ => {}
            }
            if dropped.contains(&index) {
                continue; // lost on the way to the reference client: lose it too
            }
            conn.handle_datagram(now, &d.payload);
            drain(&mut conn, now, &mut ours);
            while let Ok(n) = conn.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                file.extend_from_slice(&chunk[..n]);
            }
        }
    }
    assert_eq!(conn.poll_event(), Some(Event::Connected));
    assert!(matches!(conn.state(), State::Closed(_)));
    // Handshake (2), the two request writes and the shutdown matched byte for byte.
    assert_eq!(matched_exact, 5, "reference packets matched exactly");
    let answer_id = frames
        .iter()
        .filter(|d| !from_client(d))
        .find_map(|d| match Packet::parse(&d.payload) {
            Ok(Packet::Control(ControlPacket { body: Control::Handshake(hs), .. }))
                if hs.request_type == RequestType::Response =>
            {
                Some(hs.socket_id)
            }
            _ => None,
        })
        .expect("the server's final answer");
    assert_eq!(conn.peer_id(), answer_id, "peer id from the final answer");
    // Everything the server sent was read, in order, byte for byte.
    let sent_by_server: Vec<u8> = sent_by_server.into_values().flatten().collect();
    assert_eq!(file.len(), sent_by_server.len());
    assert!(file == sent_by_server, "received bytes differ from the server's payloads");
    // Our ACKs acknowledged everything the reference client acknowledged.
    let our_acks: Vec<SeqNo> = ours
        .iter()
        .filter_map(|p| match Packet::parse(p) {
            Ok(Packet::Control(ControlPacket { body: Control::Ack(a), .. })) => Some(a.next_expected),
            _ => None,
        })
        .collect();
    let last_reference = *reference_acks.last().expect("the reference client acknowledged data");
    assert!(
        our_acks.contains(&last_reference),
        "we never acknowledged up to {last_reference:?}; ours: {our_acks:?}"
    );
    // Nothing else we emitted is unexpected: only ACKs, ACK2s (our own timing) and NAKs remain;
    // every ACK2 confirms an ACK the server sent; our NAKs name exactly the reference's losses.
    let mut ack2s = 0;
    let mut extra_shutdowns = 0;
    let mut our_naks = BTreeSet::new();
    for p in &ours {
        match Packet::parse(p) {
            Ok(Packet::Control(ControlPacket { body: Control::Ack(_), .. })) => {}
            // The reference sends one shutdown (matched above); we send three (W10).
            Ok(Packet::Control(ControlPacket { body: Control::Shutdown, .. })) => extra_shutdowns += 1,
            Ok(Packet::Control(ControlPacket { body: Control::Nak(_), .. })) => {
                our_naks.extend(nak_seqs(p).iter().map(|s| s.value()));
            }
            Ok(Packet::Control(ControlPacket { body: Control::Ack2(no), .. })) => {
                assert!(server_ack_numbers.contains(&no), "ACK2 for {no:?}, which the server never sent");
                ack2s += 1;
            }
            _ => panic!("we sent something the reference client did not: {}", kind(p)),
        }
    }
    assert!(
        ack2s >= 1 && ack2s <= server_ack_numbers.len(),
        "{ack2s} ACK2s for {} ACKs",
        server_ack_numbers.len()
    );
    assert_eq!(extra_shutdowns, 2, "copies of the shutdown beyond the reference's one");
    assert_eq!(our_naks, reference_naks, "NAKed sequence numbers differ from the reference client's");
    our_naks
}
