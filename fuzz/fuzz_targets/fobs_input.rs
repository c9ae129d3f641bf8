//! Hostile bytes into every FOBS parser (`udt-bulk/src/fobs/wire.rs`, FOBS.md) and into both
//! session state machines: as datagrams and as control bytes on either channel, split anywhere,
//! interleaved with timers and polls. Nothing may panic or allocate beyond the protocol's
//! bounds; a message that decodes re-encodes to the same bytes (reasons, read lossily, are
//! stable after one round). The first byte also chooses a receiver that already has every byte
//! and waits for the sender's digest (the digest message and that phase): it must end Done
//! whatever arrives, never Failed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use udt_bulk::fobs::wire::{self, Datagram, FrameReader, Message};
use udt_bulk::fobs::{AckScheme, Params, ReceiverSession, SenderSession, Transfer};
use udt_bulk::storage::{Memory, Pattern};
use udt_bulk::{Event, Instant, Session};

fuzz_target!(|data: &[u8]| {
    parsers(data);
    sessions(data);
});

fn parsers(data: &[u8]) {
    match wire::decode_datagram(data) {
        Ok(Datagram::Data { chunk, packet, seq, payload }) => {
            let mut again = vec![0u8; wire::DATA_HEADER];
            wire::encode_data_header(&mut again, chunk, packet, seq).expect("room for a header");
            again.extend_from_slice(payload);
            assert_eq!(again, data);
        }
        Ok(Datagram::Map(part)) => assert_eq!(wire::encode_map(&part), data),
        Err(_) => {}
    }
    if let Some(blake3) = data.first_chunk::<32>() {
        let frame = Message::Digest { blake3: *blake3 }.encode();
        let decoded = wire::decode_frame(&frame).expect("a digest decodes").expect("whole");
        assert_eq!(decoded, (Message::Digest { blake3: *blake3 }, frame.len()));
    }
    if let Ok(Some((msg, used))) = wire::decode_frame(data) {
        let again = msg.encode();
        match msg {
            Message::Refuse { .. } | Message::Abort { .. } => {
                let once = wire::decode_frame(&again).expect("re-parse").expect("whole").0;
                let twice = once.encode();
                assert_eq!(wire::decode_frame(&twice).expect("re-parse").expect("whole").0, once);
            }
            _ => assert_eq!(again, data[..used]),
        }
    }
    let mut reader = FrameReader::default();
    for piece in data.chunks(7) {
        reader.push(piece);
        for _ in 0..64 {
            match reader.next_message() {
                Ok(Some(_)) => continue,
                _ => break,
            }
        }
    }
}

/// Hands `receiver` every packet of the file: it waits for the digest from then on.
fn deliver_all(receiver: &mut ReceiverSession<Memory>, t: &Transfer) {
    let g = t.geometry;
    let mut seq = 0;
    for chunk in 0..g.chunks() {
        for packet in 0..g.chunk_len(chunk) {
            seq += 1;
            let mut d = vec![0u8; wire::DATA_HEADER + g.packet_len(chunk, packet)];
            wire::encode_data_header(&mut d, chunk, packet, seq).expect("room for a header");
            receiver.handle_datagram(Instant::ZERO, &d);
        }
    }
}

/// Records of `[what, length, bytes...]` drive a sender and a receiver of a small transfer.
/// The first byte: bit 0 the acknowledgement scheme, bit 1 a receiver with every byte.
fn sessions(data: &[u8]) {
    let first = data.first().copied().unwrap_or(0);
    let scheme = if first & 1 == 1 { AckScheme::ChunkMapUdp } else { AckScheme::SegmentedTcp };
    let complete = first & 2 == 2;
    let Ok(t) = Transfer::new(300, 16, 8, 3, scheme) else { return };
    let params = Params::default();
    let mut sender = SenderSession::new(Pattern { seed: 1, len: 300 }, t, &params);
    let mut receiver = ReceiverSession::new(Memory::default(), t);
    if complete {
        deliver_all(&mut receiver, &t);
    }
    let sessions: [&mut dyn Session; 2] = [&mut sender, &mut receiver];
    let mut buf = vec![0u8; 2048];
    let mut now = Instant::ZERO;
    let mut rest = data.get(1..).unwrap_or_default();
    for _ in 0..1024 {
        let [what, len, tail @ ..] = rest else { break };
        let n = usize::from(*len).min(tail.len());
        let (bytes, next) = tail.split_at(n);
        rest = next;
        let to_receiver = what & 1 == 1;
        let s = &mut *sessions[usize::from(what & 1)];
        now += std::time::Duration::from_micros(u64::from(*what));
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
