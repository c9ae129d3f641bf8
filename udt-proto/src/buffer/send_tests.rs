//! Unit tests of `send`.

use super::*;

const T0: Instant = Instant::from_micros(1_000_000);

fn s(v: u32) -> SeqNo {
    SeqNo::new(v)
}

fn take(b: &mut SendBuffer, now: Instant) -> Option<(SeqNo, Vec<u8>, MsgNo, Boundary, bool)> {
    b.take_new(now).map(|(seq, p)| (seq, p.payload.to_vec(), p.msg, p.boundary, p.in_order))
}

#[test]
fn stream_fills_unsent_tail_then_new_packets() {
    let mut b = SendBuffer::new(4, 10, s(100));
    assert_eq!(b.free_bytes(), 40);
    assert_eq!(b.write_stream(b"abc"), 3);
    assert_eq!(b.free_packets(), 3);
    assert_eq!(b.free_bytes(), 37);
    assert_eq!(b.write_stream(b"defghijklmn"), 11); // fills "abc" to 10, then 4 more
    assert_eq!(b.free_packets(), 2);
    assert_eq!(b.unsent_packets(), 2);
    let (seq, p, m1, bd, io) = take(&mut b, T0).unwrap();
    assert_eq!((seq, &p[..], bd, io), (s(100), &b"abcdefghij"[..], Boundary::Solo, false));
    assert_eq!(m1, MsgNo::FIRST);
    let (seq, p, m2, _, _) = take(&mut b, T0).unwrap();
    assert_eq!((seq, &p[..]), (s(101), &b"klmn"[..]));
    assert_eq!(m2, m1.next());
    // The tail was sent: new bytes go to a new packet.
    assert_eq!(b.free_bytes(), 20);
    assert_eq!(b.write_stream(b"op"), 2);
    let (seq, p, m3, _, _) = take(&mut b, T0).unwrap();
    assert_eq!((seq, &p[..], m3), (s(102), &b"op"[..], m2.next()));
    assert!(take(&mut b, T0).is_none());
    assert_eq!(b.unacked_packets(), 3);
    assert_eq!(b.next_seq(), s(103));
}

#[test]
fn stream_room_has_a_low_water_mark_on_unsent_packets() {
    assert_eq!(SendBuffer::new(16, 10, s(0)).stream_room(), 160, "no limit: the free space");
    let mut b = SendBuffer::new(16, 10, s(0)).with_unsent_limit(4);
    assert_eq!(b.stream_room(), 40, "up to the limit");
    assert_eq!(b.write_stream(&[1; 25]), 25);
    // Three packets (10, 10, 5 bytes) unsent: one more packet's worth (the room left in
    // the tail packet is not counted).
    assert_eq!(b.stream_room(), 10, "under the limit, the rest of it");
    assert_eq!(b.write_stream(&[1; 25]), 10, "a write stops at the limit");
    // Four unsent, the limit reached: no room until half of them have left.
    assert_eq!(b.stream_room(), 0);
    take(&mut b, T0).unwrap();
    assert_eq!(b.stream_room(), 0, "three unsent: still above the mark");
    assert_eq!(b.write_stream(&[1; 5]), 0);
    take(&mut b, T0).unwrap();
    assert_eq!(b.stream_room(), 20, "two unsent: room up to the limit again");
    assert_eq!(b.write_stream(&[1; 5]), 5);
    assert_eq!(b.stream_room(), 20, "filling again, up to the limit in as many writes");
    assert_eq!(b.unacked_packets(), 2, "sent packets still occupy the buffer");
    // The free space bounds it too.
    assert_eq!(SendBuffer::new(2, 10, s(0)).with_unsent_limit(8).stream_room(), 20);
}

#[test]
fn stream_write_stops_when_full() {
    let mut b = SendBuffer::new(2, 4, s(0));
    assert_eq!(b.write_stream(&[7; 11]), 8);
    assert_eq!(b.write_stream(&[7; 1]), 0);
    assert_eq!(b.free_bytes(), 0);
    assert_eq!(b.write_message(b"x", None, false, T0), Err(WriteMsgError::Full));
}

#[test]
fn stream_does_not_fill_a_message_tail() {
    let mut b = SendBuffer::new(4, 10, s(0));
    b.write_message(b"abc", None, true, T0).unwrap();
    assert_eq!(b.free_bytes(), 30);
    b.write_stream(b"de");
    let (_, p, _, bd, io) = take(&mut b, T0).unwrap();
    assert_eq!((&p[..], bd, io), (&b"abc"[..], Boundary::Solo, true));
    let (_, p, _, _, io) = take(&mut b, T0).unwrap();
    assert_eq!((&p[..], io), (&b"de"[..], false));
}

#[test]
fn message_is_all_or_nothing() {
    let mut b = SendBuffer::new(4, 10, s(0));
    assert_eq!(b.write_message(b"", None, false, T0), Err(WriteMsgError::Empty));
    assert_eq!(b.write_message(&[1; 41], None, false, T0), Err(WriteMsgError::TooLarge { len: 41, max: 40 }));
    let m = b.write_message(&[1; 25], None, true, T0).unwrap();
    assert_eq!(m, MsgNo::FIRST);
    assert_eq!(b.free_packets(), 1);
    assert_eq!(b.write_message(&[2; 11], None, false, T0), Err(WriteMsgError::Full));
    assert_eq!(b.free_packets(), 1);
    assert_eq!(b.unsent_packets(), 3);
    let mut got = Vec::new();
    while let Some((seq, p, msg, bd, io)) = take(&mut b, T0) {
        assert_eq!(msg, m);
        assert!(io);
        got.push((seq, p.len(), bd));
    }
    assert_eq!(
        got,
        vec![(s(0), 10, Boundary::First), (s(1), 10, Boundary::Middle), (s(2), 5, Boundary::Last)]
    );
    assert_eq!(b.write_message(&[2; 10], None, false, T0), Ok(m.next()));
    assert_eq!(b.acknowledge(s(2)), 2);
    assert_eq!(b.free_packets(), 2);
    assert_eq!(b.head_seq(), s(2));
}

#[test]
fn ttl_expired_before_send_is_skipped_without_sequence_numbers() {
    let mut b = SendBuffer::new(8, 10, s(50));
    let ttl = Some(Duration::from_millis(10));
    let m1 = b.write_message(&[1; 15], ttl, false, T0).unwrap();
    let m2 = b.write_message(&[2; 5], ttl, false, T0).unwrap();
    let m3 = b.write_message(&[3; 5], None, false, T0).unwrap();
    assert_eq!(b.free_packets(), 4);
    // At exactly T0 + ttl nothing expired yet (strict comparison).
    let (seq, _, msg, _, _) = take(&mut b, T0 + Duration::from_millis(10)).unwrap();
    assert_eq!((seq, msg), (s(50), m1));
    // m1 is partly sent: its second packet still goes, with the next number.
    let late = T0 + Duration::from_millis(11);
    let (seq, _, msg, bd, _) = take(&mut b, late).unwrap();
    assert_eq!((seq, msg, bd), (s(51), m1, Boundary::Last));
    // m2 expired before any packet was sent: skipped.
    let (seq, p, msg, _, _) = take(&mut b, late).unwrap();
    assert_eq!((seq, msg, p[0]), (s(52), m3, 3));
    assert_eq!(b.expired_unsent_msgs(), 1);
    assert_eq!(b.free_packets(), 5);
    assert_ne!(m2, m3);
    assert!(take(&mut b, late).is_none());
    assert!(b.lookup(s(52), late) != Lookup::NotSent);
    assert_eq!(b.lookup(s(53), late), Lookup::NotSent);
}

#[test]
fn ttl_expired_after_partial_send_reports_whole_range() {
    let mut b = SendBuffer::new(8, 10, s(0x7FFF_FFFE));
    let m0 = b.write_message(&[9; 10], None, false, T0).unwrap();
    let ttl = Some(Duration::from_millis(10));
    let m1 = b.write_message(&[1; 35], ttl, true, T0).unwrap(); // 4 packets
    take(&mut b, T0).unwrap(); // m0 at 0x7FFF_FFFE
    take(&mut b, T0).unwrap(); // m1[0] at 0x7FFF_FFFF
    take(&mut b, T0).unwrap(); // m1[1] at 0
    let late = T0 + Duration::from_millis(20);
    let expired = Lookup::Expired { msg: m1, first: s(0x7FFF_FFFF), end_exclusive: s(3) };
    assert_eq!(b.lookup(s(0x7FFF_FFFF), late), expired);
    assert_eq!(b.lookup(s(0), late), expired);
    // Not yet sent packets: NotSent (a NAK naming them is bogus).
    assert_eq!(b.lookup(s(1), late), Lookup::NotSent);
    // Before the deadline: the packet itself.
    match b.lookup(s(0), T0) {
        Lookup::Packet(p) => assert_eq!((p.msg, p.boundary), (m1, Boundary::Middle)),
        other => panic!("{other:?}"),
    }
    match b.lookup(s(0x7FFF_FFFE), late) {
        Lookup::Packet(p) => assert_eq!((p.msg, p.payload), (m0, &[9u8; 10][..])),
        other => panic!("{other:?}"),
    }
    // Remaining packets of the partly sent message still take their numbers.
    let (seq, _, msg, _, _) = take(&mut b, late).unwrap();
    assert_eq!((seq, msg), (s(1), m1));
    assert_eq!(b.lookup(s(1), late), expired);
    assert_eq!(b.acknowledge(s(0)), 2);
    assert_eq!(b.lookup(s(0x7FFF_FFFF), late), Lookup::Acknowledged);
    assert_eq!(b.lookup(s(0), late), expired);
    assert_eq!(b.expired_unsent_msgs(), 0);
}

#[test]
fn ack_after_drop_request_releases_unsent_rest_of_message() {
    let mut b = SendBuffer::new(8, 10, s(0x7FFF_FFFF));
    let ttl = Some(Duration::from_millis(10));
    let m1 = b.write_message(&[1; 40], ttl, false, T0).unwrap(); // 4 packets
    let m2 = b.write_message(&[2; 5], None, false, T0).unwrap();
    assert_eq!(b.committed_end(), s(0x7FFF_FFFF));
    take(&mut b, T0).unwrap(); // m1[0] at 0x7FFF_FFFF
    assert_eq!(b.committed_end(), s(3));
    take(&mut b, T0).unwrap(); // m1[1] at 0
    assert_eq!(b.next_seq(), s(1));
    assert_eq!(b.committed_end(), s(3));
    let late = T0 + Duration::from_millis(11);
    let Lookup::Expired { msg, first, end_exclusive } = b.lookup(s(0), late) else { panic!("not expired") };
    assert_eq!((msg, first, end_exclusive), (m1, s(0x7FFF_FFFF), s(3)));
    // The receiver dropped the whole message and acknowledges past it.
    assert_eq!(b.acknowledge(s(5)), 4); // clamped to committed_end
    assert_eq!((b.head_seq(), b.next_seq(), b.committed_end()), (s(3), s(3), s(3)));
    assert_eq!(b.unsent_packets(), 1);
    assert_eq!(b.free_packets(), 7);
    let (seq, _, msg, _, _) = take(&mut b, late).unwrap();
    assert_eq!((seq, msg), (s(3), m2));
    // Partly acknowledged message: the committed end still reaches its end.
    let m3 = b.write_message(&[3; 30], None, true, late).unwrap();
    take(&mut b, late).unwrap();
    assert_eq!(b.acknowledge(s(5)), 2);
    assert_eq!((b.head_seq(), b.committed_end()), (s(5), s(7)));
    assert_eq!(b.acknowledge(s(7)), 2);
    assert!(b.is_empty());
    assert_eq!(m3, m2.next());
}

#[test]
fn acknowledge_frees_slots_and_clamps() {
    let mut b = SendBuffer::new(4, 8, s(10));
    assert_eq!(b.write_stream(&[5; 32]), 32);
    assert!(!b.is_empty());
    for _ in 0..3 {
        take(&mut b, T0).unwrap();
    }
    assert_eq!(b.acknowledge(s(9)), 0);
    assert_eq!(b.acknowledge(s(10)), 0);
    assert_eq!(b.acknowledge(s(12)), 2);
    assert_eq!(b.free_packets(), 2);
    // Beyond what was sent: only what was sent is released.
    assert_eq!(b.acknowledge(s(100)), 1);
    assert_eq!(b.head_seq(), s(13));
    assert_eq!(b.next_seq(), s(13));
    assert_eq!(b.unsent_packets(), 1);
    take(&mut b, T0).unwrap();
    assert_eq!(b.acknowledge(s(14)), 1);
    assert!(b.is_empty());
    assert_eq!(b.free_packets(), 4);
    // Slots are reused after acknowledgement.
    assert_eq!(b.write_stream(&[6; 32]), 32);
    let (seq, p, _, _, _) = take(&mut b, T0).unwrap();
    assert_eq!((seq, p), (s(14), vec![6; 8]));
}

#[test]
fn degenerate_sizes_do_not_panic() {
    let mut b = SendBuffer::new(0, 10, s(0));
    assert_eq!(b.write_stream(b"abc"), 0);
    assert_eq!(b.write_message(b"abc", None, false, T0), Err(WriteMsgError::TooLarge { len: 3, max: 0 }));
    assert!(b.take_new(T0).is_none());
    let mut b = SendBuffer::new(3, 0, s(0));
    assert_eq!(b.write_stream(b"abc"), 0);
    assert!(b.write_message(b"abc", None, false, T0).is_err());
    assert_eq!(b.free_bytes(), 0);
    assert_eq!(b.lookup(s(5), T0), Lookup::NotSent);
}

#[test]
fn storage_is_committed_as_data_needs_it_and_reused() {
    let mut b = SendBuffer::new(65_536, 1000, s(0));
    assert_eq!((b.committed_packets(), b.storage().len()), (0, 0), "an idle buffer holds nothing");
    assert_eq!(b.free_packets(), 65_536);
    assert_eq!(b.write_stream(&[7; 10_000]), 10_000);
    assert_eq!(b.committed_packets(), 10);
    assert!(b.storage().len() >= 10_000 && b.storage().len() <= 20_000);
    for _ in 0..10 {
        b.take_new(Instant::ZERO).unwrap();
    }
    b.acknowledge(s(10));
    assert_eq!(b.write_stream(&[8; 10_000]), 10_000);
    assert_eq!(b.committed_packets(), 10, "freed slots are used before new ones");
    let (_, p) = b.take_new(Instant::ZERO).unwrap();
    assert_eq!(p.payload, &[8; 1000][..]);
}

#[test]
fn storage_grows_to_the_packets_held_not_to_the_next_power_of_two() {
    let mut b = SendBuffer::new(65_536, 1000, s(0));
    assert_eq!(b.write_stream(&[7; 1_025_000]), 1_025_000);
    assert_eq!(b.committed_packets(), 1025);
    // The bytes committed (zero-filled) are those of the slots made, not of 2048 slots.
    assert_eq!(b.storage().len(), 1_025_000);
}

#[test]
fn the_unsent_limit_follows_the_packets_in_flight() {
    let mut b = SendBuffer::new(65_536, 10, s(0)).with_unsent_limit(2048);
    // Nothing in flight: the floor.
    assert_eq!(b.write_stream(&[1; 100_000]), UNSENT_FLOOR_PKTS * 10);
    assert_eq!(b.stream_room(), 0);
    // Sent, not acknowledged: the limit grows with the packets in flight.
    for _ in 0..UNSENT_FLOOR_PKTS {
        b.take_new(T0).unwrap();
    }
    assert_eq!(b.unacked_packets(), UNSENT_FLOOR_PKTS);
    assert_eq!(b.stream_room(), 2 * UNSENT_FLOOR_PKTS * 10);
    assert_eq!(b.write_stream(&[1; 100_000]), 2 * UNSENT_FLOOR_PKTS * 10);
    // Never above the configured limit, however much is in flight.
    while b.take_new(T0).is_some() {}
    assert_eq!(b.unacked_packets(), 3 * UNSENT_FLOOR_PKTS);
    let mut sent = b.unacked_packets();
    while sent < 4096 {
        b.write_stream(&[1; 100_000]);
        while b.take_new(T0).is_some() {
            sent += 1;
        }
    }
    assert_eq!(b.write_stream(&[1; 100_000]), 2048 * 10);
    // All acknowledged: back to the floor, and the memory committed stays what was used.
    while b.take_new(T0).is_some() {}
    let end = b.next_seq();
    b.acknowledge(end);
    assert_eq!(b.unacked_packets(), 0);
    // Nothing in flight, but 4096 packets sent within the last window: the limit.
    assert_eq!(b.write_stream(&[1; 100_000]), 2048 * 10);
    // A window later (with a packet sent), the rate counted is that packet's window.
    while b.take_new(T0).is_some() {}
    let end = b.next_seq();
    b.acknowledge(end);
    let later = T0 + 3 * RATE_WINDOW;
    assert_eq!(b.write_stream(&[1; 10]), 10);
    b.take_new(later).unwrap();
    b.acknowledge(b.next_seq());
    assert_eq!(b.write_stream(&[1; 100_000]), UNSENT_FLOOR_PKTS * 10);
}
