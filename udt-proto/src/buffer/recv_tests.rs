//! Unit tests of `recv`.

use super::*;
use crate::seq::SocketId;

fn s(v: u32) -> SeqNo {
    SeqNo::new(v)
}

fn hdr(seq: u32, boundary: Boundary, msg: u32, in_order: bool) -> DataHeader {
    DataHeader { seq: s(seq), boundary, in_order, msg: MsgNo::new(msg), timestamp: 0, dst: SocketId(0) }
}

fn solo(seq: u32) -> DataHeader {
    hdr(seq, Boundary::Solo, seq.wrapping_add(1), false)
}

fn read_msg(b: &mut RecvBuffer) -> Option<Vec<u8>> {
    let mut out = [0u8; 256];
    let n = b.read_message(&mut out)?.unwrap();
    Some(out[..n].to_vec())
}

use Boundary::{First, Last, Middle, Solo};

#[test]
fn stream_reads_contiguous_prefix_only() {
    let mut b = RecvBuffer::new(8, 4, s(10));
    assert_eq!(b.insert(&solo(11), b"efgh"), InsertOutcome::Stored);
    assert_eq!(b.contiguous_end(), s(10));
    assert_eq!(b.readable_bytes(), 0);
    assert_eq!(b.read_stream(&mut [0; 16]), 0);
    assert_eq!(b.free_packets(), 8);
    assert_eq!(b.insert(&solo(10), b"abcd"), InsertOutcome::Stored);
    assert_eq!(b.insert(&solo(13), b"mn"), InsertOutcome::Stored);
    assert_eq!(b.contiguous_end(), s(12));
    assert_eq!(b.free_packets(), 6);
    assert_eq!(b.readable_bytes(), 8);
    let mut out = [0u8; 5];
    assert_eq!(b.read_stream(&mut out), 5);
    assert_eq!(&out, b"abcde");
    assert_eq!(b.readable_bytes(), 3);
    assert_eq!(b.read_seq(), s(11)); // packet 11 is partly read
    assert_eq!(b.free_packets(), 7);
    assert_eq!(b.insert(&solo(12), b"ijkl"), InsertOutcome::Stored);
    assert_eq!(b.readable_bytes(), 9);
    let mut out = [0u8; 16];
    assert_eq!(b.read_stream(&mut out), 9);
    assert_eq!(&out[..9], b"fghijklmn");
    assert_eq!(b.read_seq(), s(14));
    assert_eq!(b.free_packets(), 8);
    assert_eq!(b.insert(&solo(13), b"zz"), InsertOutcome::Duplicate);
}

#[test]
fn duplicate_and_beyond_capacity() {
    let mut b = RecvBuffer::new(4, 4, s(0x7FFF_FFFE));
    assert_eq!(b.insert(&solo(0x7FFF_FFFE), b"a"), InsertOutcome::Stored);
    assert_eq!(b.insert(&solo(0x7FFF_FFFE), b"a"), InsertOutcome::Duplicate);
    assert_eq!(b.insert(&solo(1), b"d"), InsertOutcome::Stored); // 4th slot, across 0
    assert_eq!(b.insert(&solo(2), b"e"), InsertOutcome::BeyondCapacity);
    assert_eq!(b.insert(&solo(0x7FFF_FFFD), b"z"), InsertOutcome::Duplicate);
    assert_eq!(b.read_stream(&mut [0; 8]), 1);
    // The read position moved: one more slot is available.
    assert_eq!(b.insert(&solo(0x7FFF_FFFE), b"a"), InsertOutcome::Duplicate);
    assert_eq!(b.insert(&solo(2), b"e"), InsertOutcome::Stored);
    assert_eq!(b.insert(&solo(0x7FFF_FFFF), b"b"), InsertOutcome::Stored);
    assert_eq!(b.insert(&solo(0), b"c"), InsertOutcome::Stored);
    assert_eq!(b.contiguous_end(), s(3));
    let mut out = [0u8; 8];
    assert_eq!(b.read_stream(&mut out), 4);
    assert_eq!(&out[..4], b"bcde");
    // Truncation to the slot size.
    assert_eq!(b.insert(&solo(3), b"123456"), InsertOutcome::Stored);
    assert_eq!(b.readable_bytes(), 4);
}

#[test]
fn zero_capacity_does_not_panic() {
    let mut b = RecvBuffer::new(0, 4, s(0));
    assert_eq!(b.insert(&solo(0), b"a"), InsertOutcome::BeyondCapacity);
    b.drop_range(s(0), s(5));
    assert_eq!(b.read_stream(&mut [0; 4]), 0);
    assert!(b.read_message(&mut [0; 4]).is_none());
    assert_eq!(b.free_packets(), 0);
    assert_eq!(b.contiguous_end(), s(0));
}

#[test]
fn message_is_all_or_nothing() {
    let mut b = RecvBuffer::new(8, 2, s(0));
    b.insert(&hdr(0, First, 1, true), b"ab");
    b.insert(&hdr(2, Last, 1, true), b"e");
    assert_eq!(b.next_message_len(), None);
    assert_eq!(read_msg(&mut b), None);
    b.insert(&hdr(1, Middle, 1, true), b"cd");
    assert_eq!(b.next_message_len(), Some(5));
    let mut small = [0u8; 4];
    assert_eq!(b.read_message(&mut small), Some(Err(RecvMsgError::BufferTooSmall { len: 5, cap: 4 })));
    assert_eq!(b.next_message_len(), Some(5));
    assert_eq!(read_msg(&mut b).unwrap(), b"abcde");
    assert_eq!(read_msg(&mut b), None);
    assert_eq!(b.read_seq(), s(3));
    assert_eq!(b.free_packets(), 8);
}

#[test]
fn out_of_order_message_is_delivered_past_a_hole() {
    let mut b = RecvBuffer::new(16, 4, s(100));
    // 100: lost. 101..=102: message 2 (out of order). 103: message 3 in order.
    b.insert(&hdr(101, First, 2, false), b"AAAA");
    b.insert(&hdr(102, Last, 2, false), b"B");
    b.insert(&hdr(103, Solo, 3, true), b"C");
    b.insert(&hdr(104, Solo, 4, false), b"D");
    assert_eq!(b.next_message_len(), Some(5));
    assert_eq!(read_msg(&mut b).unwrap(), b"AAAAB");
    assert_eq!(read_msg(&mut b).unwrap(), b"D"); // in-order 3 must wait
    assert_eq!(read_msg(&mut b), None);
    assert_eq!(b.read_seq(), s(100));
    assert_eq!(b.contiguous_end(), s(100));
    b.insert(&hdr(100, Solo, 1, true), b"Z");
    assert_eq!(b.contiguous_end(), s(105));
    assert_eq!(read_msg(&mut b).unwrap(), b"Z");
    assert_eq!(read_msg(&mut b).unwrap(), b"C");
    assert_eq!(read_msg(&mut b), None);
    assert_eq!(b.read_seq(), s(105));
    assert_eq!(b.free_packets(), 16);
    // Read out-of-order slots count as resolved: a retransmitted copy is a duplicate.
    assert_eq!(b.insert(&hdr(102, Last, 2, false), b"B"), InsertOutcome::Duplicate);
}

#[test]
fn in_order_message_waits_for_everything_before_it() {
    let mut b = RecvBuffer::new(16, 4, s(0));
    b.insert(&hdr(0, First, 1, false), b"a");
    b.insert(&hdr(2, Solo, 2, true), b"b");
    assert_eq!(read_msg(&mut b), None);
    // Message 1 completes: read first, then 2.
    b.insert(&hdr(1, Last, 1, false), b"c");
    assert_eq!(read_msg(&mut b).unwrap(), b"ac");
    assert_eq!(read_msg(&mut b).unwrap(), b"b");
}

#[test]
fn oldest_complete_message_first() {
    let mut b = RecvBuffer::new(16, 4, s(0));
    b.insert(&hdr(5, Solo, 5, false), b"5");
    b.insert(&hdr(3, Solo, 3, false), b"3");
    b.insert(&hdr(8, Solo, 8, false), b"8");
    assert_eq!(read_msg(&mut b).unwrap(), b"3");
    b.insert(&hdr(1, Solo, 1, false), b"1");
    assert_eq!(read_msg(&mut b).unwrap(), b"1");
    assert_eq!(read_msg(&mut b).unwrap(), b"5");
    assert_eq!(read_msg(&mut b).unwrap(), b"8");
    assert_eq!(read_msg(&mut b), None);
    for i in [0, 2, 4, 6, 7] {
        b.insert(&hdr(i, Solo, i, true), &[b'0' + i as u8]);
    }
    for i in [0, 2, 4, 6, 7] {
        assert_eq!(read_msg(&mut b).unwrap(), vec![b'0' + i as u8]);
    }
    assert_eq!(b.read_seq(), s(9));
}

#[test]
fn drop_range_resolves_empty_slots_and_partial_messages() {
    let mut b = RecvBuffer::new(16, 4, s(0));
    b.insert(&hdr(0, Solo, 1, true), b"a");
    // Message 2 = 1..=4, packets 1 and 4 arrived; message 3 = 5, in order.
    b.insert(&hdr(1, First, 2, true), b"b");
    b.insert(&hdr(4, Last, 2, true), b"e");
    b.insert(&hdr(5, Solo, 3, true), b"f");
    assert_eq!(b.contiguous_end(), s(2));
    assert_eq!(b.free_packets(), 14);
    // UDT4-style request: from the lost packet 2 to one past the message.
    b.drop_range(s(2), s(5));
    assert_eq!(b.contiguous_end(), s(6));
    assert_eq!(b.free_packets(), 16 - 6);
    assert_eq!(read_msg(&mut b).unwrap(), b"a");
    assert_eq!(read_msg(&mut b).unwrap(), b"f"); // packet 1 was discarded with its message
    assert_eq!(read_msg(&mut b), None);
    assert_eq!(b.read_seq(), s(6));
    assert_eq!(b.insert(&hdr(3, Middle, 2, true), b"d"), InsertOutcome::Duplicate);
    // A range entirely before the read position or beyond the window is ignored.
    b.drop_range(s(0), s(6));
    b.drop_range(s(100), s(200));
    b.drop_range(s(9), s(8));
    assert_eq!(b.contiguous_end(), s(6));
    // A range reaching past the window is clipped.
    b.drop_range(s(20), s(1000));
    assert_eq!(b.contiguous_end(), s(6));
    b.drop_range(s(6), s(20));
    assert_eq!(b.contiguous_end(), s(22));
    assert_eq!(b.read_seq(), s(22));
    assert_eq!(b.free_packets(), 16);
}

#[test]
fn drop_range_discards_a_complete_unread_message() {
    let mut b = RecvBuffer::new(8, 4, s(0));
    b.insert(&hdr(1, First, 2, false), b"x");
    b.insert(&hdr(2, Last, 2, false), b"y");
    b.drop_range(s(1), s(3));
    assert_eq!(read_msg(&mut b), None);
    b.insert(&hdr(0, Solo, 1, false), b"z");
    assert_eq!(read_msg(&mut b).unwrap(), b"z");
    assert_eq!(read_msg(&mut b), None);
    assert_eq!(b.read_seq(), s(3));
}

#[test]
fn broken_and_orphan_packets_are_discarded_at_the_front() {
    let mut b = RecvBuffer::new(8, 4, s(0));
    // Message 1 interrupted by a Solo of message 2: it can never complete.
    b.insert(&hdr(0, First, 1, true), b"a");
    b.insert(&hdr(1, Solo, 2, true), b"b");
    // An orphan Last.
    b.insert(&hdr(2, Last, 7, true), b"c");
    b.insert(&hdr(3, Solo, 3, true), b"d");
    assert_eq!(b.next_message_len(), Some(1));
    assert_eq!(read_msg(&mut b).unwrap(), b"b");
    assert_eq!(read_msg(&mut b).unwrap(), b"d");
    assert_eq!(read_msg(&mut b), None);
    assert_eq!(b.read_seq(), s(4));
    // A message longer than the whole buffer can never complete either.
    b.insert(&hdr(4, First, 9, true), b"e");
    for i in 5..12 {
        b.insert(&hdr(i, Middle, 9, true), b"f");
    }
    assert_eq!(b.free_packets(), 0);
    assert_eq!(read_msg(&mut b), None);
    assert_eq!(b.free_packets(), 8);
}

/// A datagram as a driver would receive it: a (here blank) header, then the payload.
fn datagram(payload: &[u8], capacity: usize) -> RxDatagram {
    let mut d = RxDatagram::with_capacity(capacity);
    let len = DATA_HEADER_LEN + payload.len();
    d.storage_mut()[DATA_HEADER_LEN..len].copy_from_slice(payload);
    d.set_len(len);
    d
}

#[test]
fn insert_datagram_keeps_the_buffer_and_hands_back_the_latest_spare() {
    let mut b = RecvBuffer::new(2, 4, s(0));
    let mut d = datagram(b"abcd", 32);
    let first = d.storage().as_ptr();
    assert_eq!(b.insert_datagram(&solo(0), &mut d), InsertOutcome::Stored);
    // No spare yet: the driver gets an empty datagram without storage back.
    assert!(d.is_empty());
    assert_eq!(d.capacity(), 0);
    // The payload was not copied: the slot holds the very buffer received into.
    assert_eq!(b.packets[b.phys(0)].storage().as_ptr(), first);
    let mut e = datagram(b"ef", 32);
    let second = e.storage().as_ptr();
    assert_eq!(b.insert_datagram(&solo(1), &mut e), InsertOutcome::Stored);
    let mut out = [0u8; 3];
    assert_eq!(b.read_stream(&mut out), 3);
    assert_eq!(&out, b"abc");
    // Slot 0 is still partly unread: sequence 2 is beyond capacity, and left alone.
    let mut f = datagram(b"gh", 32);
    let before = f.clone();
    assert_eq!(b.insert_datagram(&solo(2), &mut f), InsertOutcome::BeyondCapacity);
    assert_eq!(f, before);
    assert_eq!(b.insert_datagram(&solo(1), &mut f), InsertOutcome::Duplicate);
    assert_eq!(f, before);
    let mut out = [0u8; 8];
    assert_eq!(b.read_stream(&mut out), 3);
    assert_eq!(&out[..3], b"def");
    // Both buffers are spares now; the one freed last comes back first, emptied.
    assert_eq!(b.insert_datagram(&solo(2), &mut f), InsertOutcome::Stored);
    assert!(f.is_empty());
    assert_eq!(f.storage().as_ptr(), second);
    let mut g = datagram(b"ij", 32);
    assert_eq!(b.insert_datagram(&solo(3), &mut g), InsertOutcome::Stored);
    assert_eq!(g.storage().as_ptr(), first);
    assert_eq!(b.read_stream(&mut out), 4);
    assert_eq!(&out[..4], b"ghij");
    // Discarded packets free their buffers too.
    let mut h = datagram(b"kl", 32);
    let third = h.storage().as_ptr();
    assert_eq!(b.insert_datagram(&solo(5), &mut h), InsertOutcome::Stored);
    b.drop_range(s(4), s(6));
    let mut k = datagram(b"mn", 32);
    assert_eq!(b.insert_datagram(&solo(6), &mut k), InsertOutcome::Stored);
    assert_eq!(k.storage().as_ptr(), third);
}

#[test]
fn insert_datagram_truncates_to_the_slot_size_like_insert() {
    let mut b = RecvBuffer::new(4, 4, s(0));
    let mut d = datagram(b"123456", 64);
    assert_eq!(b.insert_datagram(&solo(0), &mut d), InsertOutcome::Stored);
    assert_eq!(b.readable_bytes(), 4);
    // A datagram with a header only (the connection drops those first) stores nothing.
    let mut h = datagram(b"", 64);
    assert_eq!(b.insert_datagram(&solo(1), &mut h), InsertOutcome::Stored);
    assert_eq!(b.readable_bytes(), 4);
    let mut out = [0u8; 8];
    assert_eq!(b.read_stream(&mut out), 4);
    assert_eq!(&out[..4], b"1234");
}

#[test]
fn messages_mix_copied_and_swapped_packets_out_of_order() {
    let mut b = RecvBuffer::new(8, 4, s(0));
    b.insert(&hdr(2, Last, 1, true), b"ij");
    let mut d = datagram(b"abcd", 20);
    assert_eq!(b.insert_datagram(&hdr(0, First, 1, true), &mut d), InsertOutcome::Stored);
    assert_eq!(read_msg(&mut b), None);
    let mut d = datagram(b"efgh", 20);
    assert_eq!(b.insert_datagram(&hdr(1, Middle, 1, true), &mut d), InsertOutcome::Stored);
    assert_eq!(read_msg(&mut b).unwrap(), b"abcdefghij");
    // Slot 0's buffer, given to `insert` later, is reused in place.
    let mut d = datagram(b"zz", 20);
    assert_eq!(b.insert_datagram(&hdr(3, Solo, 2, false), &mut d), InsertOutcome::Stored);
    b.insert(&hdr(8, Solo, 3, false), b"yy"); // slot 0 again
    assert_eq!(read_msg(&mut b).unwrap(), b"zz");
    assert_eq!(b.insert(&hdr(5, Solo, 4, false), b"x"), InsertOutcome::Stored);
    assert_eq!(read_msg(&mut b).unwrap(), b"x");
    assert_eq!(read_msg(&mut b).unwrap(), b"yy");
}

#[test]
fn free_packets_counts_contiguous_prefix() {
    let mut b = RecvBuffer::new(4, 4, s(0));
    assert_eq!(b.capacity(), 4);
    assert_eq!(b.free_packets(), 4);
    b.insert(&solo(2), b"c");
    assert_eq!(b.free_packets(), 4);
    b.insert(&solo(0), b"a");
    assert_eq!(b.free_packets(), 3);
    b.insert(&solo(1), b"b");
    assert_eq!(b.free_packets(), 1);
    assert_eq!(b.read_stream(&mut [0; 2]), 2);
    assert_eq!(b.free_packets(), 3);
    assert_eq!(b.read_stream(&mut [0; 2]), 1);
    assert_eq!(b.free_packets(), 4);
}

#[test]
fn the_ring_is_committed_as_packets_arrive_and_grows_across_the_wrap() {
    let mut b = RecvBuffer::new(1000, 4, s(0));
    assert_eq!(b.committed_packets(), 0, "nothing before the first packet");
    assert_eq!(b.free_packets(), 1000);
    // Move the read position so the ring wraps before it grows.
    for seq in 0..20 {
        assert_eq!(b.insert(&solo(seq), &seq.to_le_bytes()), InsertOutcome::Stored);
    }
    assert_eq!(b.committed_packets(), MIN_RING);
    let mut out = [0u8; 4 * 20];
    assert_eq!(b.read_stream(&mut out), 80);
    // 20..60 wraps the 32-slot ring; 59 arrives first and makes it grow.
    for seq in (20..60).rev().filter(|q| q % 7 != 0) {
        assert_eq!(b.insert(&solo(seq), &seq.to_le_bytes()), InsertOutcome::Stored);
    }
    assert!(b.committed_packets() >= 40 && b.committed_packets() <= 1000);
    for seq in (21..60).filter(|q| q % 7 == 0) {
        assert_eq!(b.insert(&solo(seq), &seq.to_le_bytes()), InsertOutcome::Stored);
    }
    let mut out = vec![0u8; 4 * 40];
    assert_eq!(b.read_stream(&mut out), 160);
    for (i, chunk) in out.chunks(4).enumerate() {
        assert_eq!(u32::from_le_bytes(chunk.try_into().unwrap()), 20 + i as u32);
    }
    assert_eq!(b.insert(&solo(60 + 999), b"late"), InsertOutcome::Stored, "the capacity is the window");
    assert_eq!(b.committed_packets(), 1000);
    assert_eq!(b.insert(&solo(60 + 1000), b"over"), InsertOutcome::BeyondCapacity);
}

#[test]
fn a_drop_request_beyond_the_ring_resolves_its_numbers() {
    let mut b = RecvBuffer::new(500, 4, s(0));
    b.drop_range(s(0), s(100));
    assert_eq!(b.read_seq(), s(100));
    assert_eq!(b.insert(&solo(100), b"abcd"), InsertOutcome::Stored);
    assert_eq!(b.read_stream(&mut [0; 4]), 4);
}

fn joined(chunks: &[RecvChunk]) -> Vec<u8> {
    chunks.iter().flat_map(|c| c.bytes().iter().copied()).collect()
}

#[test]
fn take_stream_lends_the_datagrams_received_into_without_copying() {
    let mut b = RecvBuffer::new(8, 4, s(0));
    let mut d = datagram(b"abcd", 32);
    let first = d.storage().as_ptr();
    assert_eq!(b.insert_datagram(&solo(0), &mut d), InsertOutcome::Stored);
    assert_eq!(b.insert(&solo(1), b"ef"), InsertOutcome::Stored);
    assert_eq!(b.insert(&solo(3), b"kl"), InsertOutcome::Stored);
    let mut out = Vec::new();
    // Only the contiguous prefix, whole packets: 0 and 1, not 3 behind the hole.
    assert_eq!(b.take_stream(64, &mut out), 6);
    assert_eq!(
        out.iter().map(|c| c.bytes().to_vec()).collect::<Vec<_>>(),
        [b"abcd".to_vec(), b"ef".to_vec()]
    );
    assert_eq!(out[0].as_ptr(), first.wrapping_add(DATA_HEADER_LEN));
    assert_eq!((b.readable_bytes(), b.read_seq(), b.free_packets()), (0, s(2), 8));
    assert_eq!(b.take_stream(64, &mut out), 0);
    assert_eq!(b.insert(&solo(2), b"ghij"), InsertOutcome::Stored);
    // Given back, a buffer is the next spare: the next datagram stored hands it to the driver.
    let lent = out.remove(0);
    b.recycle(lent);
    let mut e = datagram(b"mn", 32);
    assert_eq!(b.insert_datagram(&solo(4), &mut e), InsertOutcome::Stored);
    assert_eq!(e.storage().as_ptr(), first);
    out.clear();
    assert_eq!(b.take_stream(64, &mut out), 8);
    assert_eq!(joined(&out), b"ghijklmn");
}

#[test]
fn take_stream_stops_at_its_limit_and_continues_a_partly_read_packet() {
    let mut b = RecvBuffer::new(8, 4, s(0));
    for (i, p) in [b"abcd", b"efgh", b"ijkl"].iter().enumerate() {
        assert_eq!(b.insert(&solo(i as u32), *p), InsertOutcome::Stored);
    }
    let mut two = [0u8; 2];
    assert_eq!(b.read_stream(&mut two), 2);
    let mut out = Vec::new();
    // The rest of packet 0 (2 bytes), then packet 1 fits 6; packet 2 would pass it.
    assert_eq!(b.take_stream(6, &mut out), 6);
    assert_eq!(joined(&out), b"cdefgh");
    // A limit below one packet still lends that packet whole.
    out.clear();
    assert_eq!(b.take_stream(1, &mut out), 4);
    assert_eq!(joined(&out), b"ijkl");
    assert_eq!((b.readable_bytes(), b.read_seq()), (0, s(3)));
    // Read and taken bytes add up to the stream, in order.
    assert_eq!(b.insert(&solo(3), b"mn"), InsertOutcome::Stored);
    let mut rest = [0u8; 8];
    assert_eq!(b.read_stream(&mut rest), 2);
    assert_eq!(&rest[..2], b"mn");
}

#[test]
fn recycled_buffers_are_kept_up_to_the_capacity() {
    let mut b = RecvBuffer::new(2, 4, s(0));
    let mut out = Vec::new();
    for seq in 0..4 {
        let mut d = datagram(b"ab", 32);
        assert_eq!(b.insert_datagram(&solo(seq), &mut d), InsertOutcome::Stored);
        assert_eq!(b.take_stream(64, &mut out), 2);
    }
    assert_eq!(out.len(), 4);
    for c in out.drain(..) {
        b.recycle(c);
    }
    assert_eq!(b.spare.len(), 2);
    // A chunk without storage (a packet stored by copying into an empty slot has one) is not kept.
    b.recycle(RecvChunk::new(RxDatagram::empty(), 0..0));
    assert_eq!(b.spare.len(), 2);
}
