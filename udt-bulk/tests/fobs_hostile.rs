//! Hostile input, property-tested (the same drive as `fuzz/fuzz_targets/fobs_input.rs`, run on
//! every `cargo test`): arbitrary bytes as datagrams and as control bytes on either channel of
//! a FOBS sender and receiver never panic, and whatever decodes re-encodes to the same bytes;
//! a receiver that already has every byte (waiting for the sender's digest) ends Done whatever
//! arrives, never Failed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use proptest::prelude::*;
use udt_bulk::fobs::wire::{self, Datagram, Message, Report};
use udt_bulk::fobs::{AckScheme, Params, ReceiverSession, SenderSession, Transfer};
use udt_bulk::storage::{Memory, Pattern};
use udt_bulk::{Event, Instant, Session};

/// Frames that decode, with hostile field values.
fn frames() -> impl Strategy<Value = Vec<u8>> {
    let report = (any::<u64>(), any::<u64>(), any::<u64>())
        .prop_map(|(received, highest_seq, busy_us)| Report { received, highest_seq, busy_us });
    prop_oneof![
        (any::<u32>(), any::<u32>(), any::<u64>()).prop_map(|(chunk, segment, last_seq)| {
            Message::EndOfSegment { chunk: chunk % 4, segment: segment % 5, last_seq }
        }),
        (any::<u32>(), any::<bool>(), any::<u64>()).prop_map(|(chunk, want_nack, last_seq)| Message::Done {
            chunk: chunk % 4,
            pass: 0,
            want_nack,
            last_seq
        }),
        (any::<u32>(), any::<u32>(), report.clone(), proptest::collection::vec(any::<u8>(), 0..4)).prop_map(
            |(chunk, segment, report, bits)| Message::SegmentBits {
                chunk: chunk % 4,
                segment: segment % 5,
                report,
                bits
            }
        ),
        (any::<u32>(), any::<u32>(), report.clone()).prop_map(|(chunk, segment, report)| {
            Message::SegmentAck { chunk: chunk % 4, segment: segment % 5, report }
        }),
        (any::<u32>(), report.clone(), proptest::collection::vec(0u32..12, 0..12))
            .prop_map(|(chunk, report, missing)| Message::Nack { chunk: chunk % 4, report, missing }),
        (any::<u32>(), report.clone())
            .prop_map(|(chunk, report)| Message::Complete { chunk: chunk % 4, report }),
        report.prop_map(|report| Message::Progress { report }),
        any::<[u8; 32]>().prop_map(|blake3| Message::Digest { blake3 }),
        any::<String>().prop_map(|reason| Message::Abort { reason }),
    ]
    .prop_map(|m| m.encode())
}

/// Hands `receiver` every packet of the file: it waits for the digest from then on.
fn deliver_all(receiver: &mut ReceiverSession<Memory>, t: &Transfer) {
    let g = t.geometry;
    let mut seq = 0;
    for chunk in 0..g.chunks() {
        for packet in 0..g.chunk_len(chunk) {
            seq += 1;
            let mut d = vec![0u8; wire::DATA_HEADER + g.packet_len(chunk, packet)];
            wire::encode_data_header(&mut d, chunk, packet, seq).unwrap();
            receiver.handle_datagram(Instant::ZERO, &d);
        }
    }
    assert_eq!(receiver.counters().delivered, g.size);
}

/// Records `(what, bytes)` into a sender and a receiver of a small transfer; with `complete`
/// the receiver has every byte first.
fn drive(scheme: AckScheme, complete: bool, records: &[(u8, Vec<u8>)]) {
    let t = Transfer::new(300, 16, 8, 3, scheme).unwrap();
    let mut sender = SenderSession::new(Pattern { seed: 1, len: 300 }, t, &Params::default());
    let mut receiver = ReceiverSession::new(Memory::default(), t);
    if complete {
        deliver_all(&mut receiver, &t);
    }
    let mut buf = vec![0u8; 2048];
    let mut now = Instant::ZERO;
    for (what, bytes) in records {
        let to_receiver = what & 1 == 1;
        let s: &mut dyn Session = if to_receiver { &mut receiver } else { &mut sender };
        now += Duration::from_micros(u64::from(*what));
        match (what >> 1) % 5 {
            0 => s.handle_datagram(now, bytes),
            1 => s.handle_control(now, 0, bytes),
            2 => s.handle_control(now, 1, bytes),
            3 => s.handle_timeout(now),
            _ => s.handle_control_closed(now, usize::from(what >> 4) % 3),
        }
        for _ in 0..64 {
            if s.poll_datagram(now, &mut buf).is_none() {
                break;
            }
        }
        while s.poll_control().is_some() {}
        while let Some(event) = s.poll_event() {
            assert!(
                !(complete && to_receiver && matches!(event, Event::Failed(_))),
                "a receiver with every byte failed: {event:?}"
            );
        }
        let _ = (s.poll_timeout(), s.counters());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic_and_what_decodes_re_encodes(data in proptest::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(Datagram::Map(part)) = wire::decode_datagram(&data) {
            prop_assert_eq!(wire::encode_map(&part), data.clone());
        }
        if let Ok(Some((msg, used))) = wire::decode_frame(&data) {
            if !matches!(msg, Message::Refuse { .. } | Message::Abort { .. }) {
                prop_assert_eq!(msg.encode(), data[..used].to_vec());
            }
        }
        let records: Vec<(u8, Vec<u8>)> = data.chunks(9).map(|c| (c[0], c[1..].to_vec())).collect();
        for complete in [false, true] {
            drive(AckScheme::SegmentedTcp, complete, &records);
            drive(AckScheme::ChunkMapUdp, complete, &records);
        }
    }

    #[test]
    fn well_formed_messages_with_hostile_fields_never_panic(
        records in proptest::collection::vec((any::<u8>(), frames()), 0..40),
    ) {
        for complete in [false, true] {
            drive(AckScheme::SegmentedTcp, complete, &records);
            drive(AckScheme::ChunkMapUdp, complete, &records);
        }
    }
}
