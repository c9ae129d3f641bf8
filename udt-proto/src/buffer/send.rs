//! The send buffer (thesis §2.3.2.3; UDT4 `CSndBuffer`), stream and message modes.
//!
//! Packets are addressed by sequence number: the packet at position `i` from the head (the
//! oldest unacknowledged) has sequence `head_seq + i`, because packets take their numbers in
//! order when first sent, and only whole unsent messages are ever removed from the unsent
//! region. Regions: [head, next_new) sent and unacknowledged, [next_new, tail) unsent.
//!
//! Stream mode: `write_stream` appends bytes, filling the unsent tail packet first, then new
//! full packets; each packet started by a write gets a new message number, boundary Solo,
//! in-order false. Message mode: `write_message` stores one message as First/Middle/Last (or
//! Solo) packets with one message number, its in-order flag and an optional TTL counted from the
//! write. A message is all-or-nothing: it goes in whole or not at all.
//!
//! TTL: a message whose TTL passed before its first packet was sent is removed by `take_new`
//! without using sequence numbers (counted in `expired_unsent_msgs`). Once partly sent, its
//! remaining packets still take their sequence numbers in order; `lookup` of any of its packets
//! then answers `Expired` with the message's full sequence range so the connection can send a
//! drop request instead of data. A message has passed its TTL once `now > write time + ttl`
//! (strictly, as UDT4 compares). Because that range can name packets not sent yet, the peer may
//! acknowledge past `next_seq`: such an ACK is valid up to [`SendBuffer::committed_end`], and
//! `acknowledge` then releases the unsent rest of the message too.
//!
//! Storage: one `Vec<u8>` of payload bytes (slot `i` at `i * payload_size`) and one metadata
//! record per slot, committed as data needs them: a new slot is made only when no freed one is
//! left, so the slots in use are `0..slots.len()` with `slots.len()` the most packets ever held
//! at once, never above the capacity, and the byte storage grows by doubling up to it (an idle
//! connection holds no payload storage, a busy one about what its path keeps in flight). The
//! sequence order is a ring of slot indices (a `VecDeque<u32>`) and the freed slots are a stack
//! of indices, the most recently freed on top (still in the caches), so skipping an expired
//! unsent message in the middle of the buffer moves a few `u32` indices, never payload bytes.
//! Payload ranges handed out by [`SendBuffer::lookup`] and [`SendBuffer::take_new`] are offsets
//! into [`SendBuffer::storage`], valid across growth.

use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

use crate::packet::Boundary;
use crate::seq::{MsgNo, SeqNo};
use crate::time::Instant;

/// A packet to send, borrowed from the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutPacket<'a> {
    /// Payload bytes.
    pub payload: &'a [u8],
    /// Message number.
    pub msg: MsgNo,
    /// Position within the message.
    pub boundary: Boundary,
    /// In-order delivery flag.
    pub in_order: bool,
}

/// Result of looking up a sequence number for retransmission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup<'a> {
    /// The packet, ready to resend.
    Packet(OutPacket<'a>),
    /// Its message's TTL expired: drop `first..end_exclusive` (the whole message's numbers).
    Expired {
        /// The message.
        msg: MsgNo,
        /// Its first sequence number.
        first: SeqNo,
        /// One past its last sequence number.
        end_exclusive: SeqNo,
    },
    /// Before the head: already acknowledged.
    Acknowledged,
    /// Not sent yet (at or after next_new): a NAK naming it is bogus.
    NotSent,
}

/// Why a message was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WriteMsgError {
    /// Larger than the whole buffer can ever hold.
    #[error("message of {len} bytes exceeds the send buffer ({max} bytes)")]
    TooLarge {
        /// Message length.
        len: usize,
        /// Largest message the buffer holds.
        max: usize,
    },
    /// Not enough free space now; try again after acknowledgements.
    #[error("send buffer full")]
    Full,
    /// Empty messages are not sent.
    #[error("empty message")]
    Empty,
}

/// Largest number of packet slots a buffer holds; larger requests are clamped (positions must
/// stay far inside the 2^30 sequence comparison window).
pub const MAX_CAPACITY_PKTS: usize = 1 << 28;

/// Stream writes may always leave this many packets unsent (when the unsent limit is at least
/// this), however few are in flight (see `SendBuffer::stream_room`).
pub const UNSENT_FLOOR_PKTS: usize = 64;

/// The window over which the send buffer counts the packets it hands out (its recent rate).
pub const RATE_WINDOW: Duration = Duration::from_millis(2);

/// Packets handed out for sending in the current and the last [`RATE_WINDOW`].
#[derive(Clone, Copy, Debug, Default)]
struct SendRate {
    start: Option<Instant>,
    current: usize,
    last: usize,
}

impl SendRate {
    /// One packet sent at `now`.
    fn count(&mut self, now: Instant) {
        let start = *self.start.get_or_insert(now);
        if now >= start + RATE_WINDOW {
            // The window before this one, or none if a whole window passed without a packet.
            self.last = if now < start + 2 * RATE_WINDOW { self.current } else { 0 };
            self.current = 0;
            self.start = Some(now);
        }
        self.current += 1;
    }

    /// Packets sent in about the last window.
    fn recent(&self) -> usize {
        self.last.max(self.current)
    }
}

/// Metadata of one packet slot.
#[derive(Clone, Copy, Debug)]
struct Slot {
    /// Payload bytes stored.
    len: usize,
    msg: MsgNo,
    boundary: Boundary,
    in_order: bool,
    /// Written by `write_stream` (its unsent tail may be filled further).
    stream: bool,
    /// The message's TTL deadline: expired once `now > deadline`.
    deadline: Option<Instant>,
    /// Index of this packet within its message.
    msg_off: u32,
    /// Packets in the message.
    msg_pkts: u32,
    /// When the packet was last retransmitted, if it was.
    resent: Option<Instant>,
}

impl Slot {
    const EMPTY: Slot = Slot {
        len: 0,
        msg: MsgNo::FIRST,
        boundary: Boundary::Solo,
        in_order: false,
        stream: false,
        deadline: None,
        msg_off: 0,
        msg_pkts: 1,
        resent: None,
    };

    fn expired(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| now > d)
    }
}

/// The send buffer.
pub struct SendBuffer {
    /// Payload bytes: slot `i` at `i * payload_size..`.
    data: Vec<u8>,
    /// Metadata per slot.
    slots: Vec<Slot>,
    /// Slot indices in sequence order from the head: `order[i]` holds `head_seq + i`.
    order: VecDeque<u32>,
    /// Freed slot indices (every index below `slots.len()` not in `order`).
    free: Vec<u32>,
    /// Most packet slots the buffer may hold.
    cap: usize,
    payload_size: usize,
    /// Sequence number of `order[0]`.
    head_seq: SeqNo,
    /// Packets of `order` already sent (the first `sent` entries).
    sent: usize,
    next_msg: MsgNo,
    expired_unsent: u64,
    /// Stream writes may leave at most this many packets unsent (0: no limit).
    unsent_limit: usize,
    /// A stream write reached the unsent limit: no more until half of it has been sent.
    refill_closed: bool,
    /// Packets sent recently (for the unsent limit in force).
    pace: SendRate,
}

impl fmt::Debug for SendBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendBuffer")
            .field("capacity", &self.cap)
            .field("committed", &self.slots.len())
            .field("payload_size", &self.payload_size)
            .field("head_seq", &self.head_seq)
            .field("unacked", &self.sent)
            .field("unsent", &self.unsent_packets())
            .field("free", &self.free_packets())
            .field("next_msg", &self.next_msg)
            .field("expired_unsent", &self.expired_unsent)
            .finish()
    }
}

impl SendBuffer {
    /// A buffer of `capacity_pkts` packets of `payload_size` bytes; the first packet sent will
    /// carry `first_seq`; message numbers start at [`MsgNo::FIRST`]. The capacity is clamped to
    /// [`MAX_CAPACITY_PKTS`] (and so that the byte size fits `isize`). Nothing is allocated
    /// until data is written.
    pub fn new(capacity_pkts: usize, payload_size: usize, first_seq: SeqNo) -> Self {
        let max_by_bytes = (isize::MAX as usize).checked_div(payload_size).unwrap_or(usize::MAX);
        let cap = capacity_pkts.min(MAX_CAPACITY_PKTS).min(max_by_bytes);
        SendBuffer {
            data: Vec::new(),
            slots: Vec::new(),
            order: VecDeque::new(),
            free: Vec::new(),
            cap,
            payload_size,
            head_seq: first_seq,
            sent: 0,
            next_msg: MsgNo::FIRST,
            expired_unsent: 0,
            unsent_limit: 0,
            refill_closed: false,
            pace: SendRate::default(),
        }
    }

    /// Limit stream writes to `limit` packets written and not yet sent (0: no limit), with a
    /// low-water mark at half of it ([`SendBuffer::stream_room`]).
    pub fn with_unsent_limit(mut self, limit: usize) -> Self {
        self.unsent_limit = limit;
        self
    }

    /// The payload storage, for drivers that send payloads in place (see
    /// `Connection::poll_transmit_ref`): packet payloads are ranges of it.
    pub fn storage(&self) -> &[u8] {
        &self.data
    }

    /// Payload bytes per packet.
    pub fn payload_size(&self) -> usize {
        self.payload_size
    }

    /// Packet slots the buffer may hold.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Packet slots committed so far: the most packets held at once.
    pub fn committed_packets(&self) -> usize {
        self.slots.len()
    }

    /// A slot for a new packet: the most recently freed one, or a new one while under the
    /// capacity (growing the byte storage by doubling to cover it).
    fn take_slot(&mut self) -> Option<u32> {
        if let Some(id) = self.free.pop() {
            return Some(id);
        }
        if self.slots.len() >= self.cap {
            return None;
        }
        let id = self.slots.len();
        self.slots.push(Slot::EMPTY);
        // Zero-filled (committed) up to the new slot only: the allocation's capacity doubles
        // (`Vec`'s amortized growth), but pages beyond the length are not touched.
        let need = (id + 1) * self.payload_size;
        if self.data.len() < need {
            self.data.resize(need, 0);
        }
        Some(id as u32)
    }

    /// The unsent stream packet at the tail that can take more bytes: (slot, free bytes in it).
    fn tail_room(&self) -> Option<(usize, usize)> {
        if self.order.len() <= self.sent {
            return None;
        }
        let id = *self.order.back()? as usize;
        let slot = &self.slots[id];
        (slot.stream && slot.len < self.payload_size).then(|| (id, self.payload_size - slot.len))
    }

    /// Copy `bytes` into slot `id` at byte `at`.
    fn copy_in(&mut self, id: usize, at: usize, bytes: &[u8]) {
        let start = id * self.payload_size + at;
        self.data[start..start + bytes.len()].copy_from_slice(bytes);
    }

    /// Append stream bytes, at most [`SendBuffer::stream_room`]; returns how many were taken (0
    /// when full or held at the unsent limit).
    pub fn write_stream(&mut self, data: &[u8]) -> usize {
        if self.payload_size == 0 {
            return 0;
        }
        let data = &data[..data.len().min(self.stream_room())];
        let taken = self.copy_stream(data);
        self.refill_closed = self.unsent_limit > 0 && self.unsent_packets() >= self.unsent_cap();
        taken
    }

    /// Append `data` (already bounded by [`SendBuffer::stream_room`]) to the unsent tail
    /// packet and new packets.
    fn copy_stream(&mut self, data: &[u8]) -> usize {
        let mut taken = 0;
        if let Some((id, room)) = self.tail_room() {
            let n = room.min(data.len());
            let at = self.slots[id].len;
            self.copy_in(id, at, &data[..n]);
            self.slots[id].len += n;
            taken = n;
        }
        while taken < data.len() {
            let Some(id) = self.take_slot() else { break };
            let id = id as usize;
            let n = (data.len() - taken).min(self.payload_size);
            self.copy_in(id, 0, &data[taken..taken + n]);
            self.slots[id] = Slot {
                len: n,
                msg: self.next_msg,
                boundary: Boundary::Solo,
                in_order: false,
                stream: true,
                deadline: None,
                msg_off: 0,
                msg_pkts: 1,
                resent: None,
            };
            self.next_msg = self.next_msg.next();
            self.order.push_back(id as u32);
            taken += n;
        }
        taken
    }

    /// Append one message (all or nothing).
    pub fn write_message(
        &mut self,
        data: &[u8],
        ttl: Option<Duration>,
        in_order: bool,
        now: Instant,
    ) -> Result<MsgNo, WriteMsgError> {
        if data.is_empty() {
            return Err(WriteMsgError::Empty);
        }
        let max = self.cap * self.payload_size;
        if data.len() > max {
            return Err(WriteMsgError::TooLarge { len: data.len(), max });
        }
        // payload_size > 0 here, since data.len() <= max.
        let pkts = data.len().div_ceil(self.payload_size);
        if pkts > self.free_packets() {
            return Err(WriteMsgError::Full);
        }
        let msg = self.next_msg;
        self.next_msg = msg.next();
        let deadline = ttl.map(|t| now + t);
        for (i, chunk) in data.chunks(self.payload_size).enumerate() {
            let Some(id) = self.take_slot() else { break };
            let boundary = match (i == 0, i + 1 == pkts) {
                (true, true) => Boundary::Solo,
                (true, false) => Boundary::First,
                (false, true) => Boundary::Last,
                (false, false) => Boundary::Middle,
            };
            self.copy_in(id as usize, 0, chunk);
            self.slots[id as usize] = Slot {
                len: chunk.len(),
                msg,
                boundary,
                in_order,
                stream: false,
                deadline,
                msg_off: i as u32,
                msg_pkts: pkts as u32,
                resent: None,
            };
            self.order.push_back(id);
        }
        Ok(msg)
    }

    /// Free packet slots.
    pub fn free_packets(&self) -> usize {
        self.free.len() + (self.cap - self.slots.len())
    }

    /// Free bytes a stream write could take now (free slots plus room in the unsent tail packet).
    pub fn free_bytes(&self) -> usize {
        self.free_packets() * self.payload_size + self.tail_room().map_or(0, |(_, room)| room)
    }

    /// Free bytes a stream write may take now. Without an unsent limit, the free bytes. With
    /// one, up to the limit of packets written and not yet sent; and once a write has reached
    /// the limit, nothing until half of it has been sent (a low-water mark, so a blocked
    /// writer is woken once per half limit, not once per packet, and then fills the buffer to
    /// the limit in one go). The limit in force follows the packets in flight (`unsent_cap`):
    /// sending raises it and lowers the unsent count, so a blocked writer is woken by sends;
    /// acknowledgements may lower it (never below the floor), which only ever delays a write.
    pub fn stream_room(&self) -> usize {
        let free = self.free_bytes();
        if self.unsent_limit == 0 {
            return free;
        }
        let limit = self.unsent_cap();
        let unsent = self.unsent_packets();
        if self.refill_closed && unsent > limit / 2 {
            return 0;
        }
        free.min(limit.saturating_sub(unsent) * self.payload_size)
    }

    /// The unsent limit in force (with one set): the configured limit, but no more than twice
    /// the packets in flight or twice those sent in a [`RATE_WINDOW`] (whichever is more), and
    /// no less than [`UNSENT_FLOOR_PKTS`]. A flow's unsent data thus follows what its path
    /// takes: a fast flow keeps the whole limit queued (its writer has milliseconds to refill
    /// it), one of many sharing a link (each with a few packets in flight) a few dozen
    /// packets, not megabytes it would take seconds to send.
    fn unsent_cap(&self) -> usize {
        let need = (2 * self.sent).max(2 * self.pace.recent());
        self.unsent_limit.min(UNSENT_FLOOR_PKTS.max(need))
    }

    /// Packets sent and not acknowledged.
    pub fn unacked_packets(&self) -> usize {
        self.sent
    }

    /// Packets written and not yet sent.
    pub fn unsent_packets(&self) -> usize {
        self.order.len() - self.sent
    }

    /// Nothing unsent and nothing unacknowledged.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The sequence number the next new packet will get.
    pub fn next_seq(&self) -> SeqNo {
        self.head_seq.add(self.sent as i32)
    }

    /// The oldest unacknowledged sequence number (== next_seq when all is acknowledged).
    pub fn head_seq(&self) -> SeqNo {
        self.head_seq
    }

    fn out_packet(&self, id: usize) -> OutPacket<'_> {
        let slot = &self.slots[id];
        let start = id * self.payload_size;
        OutPacket {
            payload: &self.data[start..start + slot.len],
            msg: slot.msg,
            boundary: slot.boundary,
            in_order: slot.in_order,
        }
    }

    /// Take the next unsent packet, marking it sent; skips messages expired before any packet
    /// was sent. Returns its sequence number and contents.
    pub fn take_new(&mut self, now: Instant) -> Option<(SeqNo, OutPacket<'_>)> {
        let pos = self.sent;
        // Expired messages at the front of the unsent region give their slots back without
        // taking sequence numbers (all of them is unsent: it starts at the first unsent packet).
        let mut end = pos;
        let mut msgs = 0;
        while let Some(&id) = self.order.get(end) {
            let slot = &self.slots[id as usize];
            if slot.msg_off != 0 || !slot.expired(now) {
                break;
            }
            end = (end + slot.msg_pkts.max(1) as usize).min(self.order.len());
            msgs += 1;
        }
        if end > pos {
            for id in self.order.drain(pos..end) {
                self.free.push(id);
            }
            self.expired_unsent += msgs;
        }
        let id = *self.order.get(pos)? as usize;
        self.sent += 1;
        self.pace.count(now);
        Some((self.head_seq.add(pos as i32), self.out_packet(id)))
    }

    /// Mark the unsent packets before `end_exclusive` as sent without transmitting them: the
    /// rest of an expired message that a drop request now covers. UDT4 skips them the same way,
    /// so the numbers the request names are all "sent" and the peer's ACK past them is valid.
    /// Returns how many were skipped.
    pub fn skip_unsent_before(&mut self, end_exclusive: SeqNo) -> usize {
        let target = end_exclusive.diff(self.head_seq);
        if target <= self.sent as i32 {
            return 0;
        }
        let target = (target as usize).min(self.order.len());
        let skipped = target - self.sent;
        self.sent = target;
        skipped
    }

    /// Look up a sent packet for retransmission.
    pub fn lookup(&self, seq: SeqNo, now: Instant) -> Lookup<'_> {
        let d = seq.diff(self.head_seq);
        if d < 0 {
            return Lookup::Acknowledged;
        }
        let pos = d as usize;
        if pos >= self.sent {
            return Lookup::NotSent;
        }
        let id = self.order[pos] as usize;
        let slot = &self.slots[id];
        if slot.expired(now) {
            let first = seq.add(-(slot.msg_off as i32));
            return Lookup::Expired { msg: slot.msg, first, end_exclusive: first.add(slot.msg_pkts as i32) };
        }
        Lookup::Packet(self.out_packet(id))
    }

    /// Record that the sent packet `seq` was retransmitted at `now` (no effect on a number
    /// that is acknowledged or not sent).
    pub fn mark_resent(&mut self, seq: SeqNo, now: Instant) {
        if let Some(id) = self.sent_slot(seq) {
            self.slots[id].resent = Some(now);
        }
    }

    /// Whether the sent packet `seq` was last retransmitted at or after `since`.
    pub fn resent_since(&self, seq: SeqNo, since: Instant) -> bool {
        self.sent_slot(seq).and_then(|id| self.slots[id].resent).is_some_and(|at| at >= since)
    }

    /// When the oldest unacknowledged packet was last retransmitted, if it was sent and
    /// retransmitted.
    pub fn head_resent_at(&self) -> Option<Instant> {
        self.sent_slot(self.head_seq).and_then(|id| self.slots[id].resent)
    }

    fn sent_slot(&self, seq: SeqNo) -> Option<usize> {
        let d = seq.diff(self.head_seq);
        if d < 0 || d as usize >= self.sent {
            return None;
        }
        Some(self.order[d as usize] as usize)
    }

    /// One past the last sequence number already committed: [`next_seq`](Self::next_seq),
    /// extended to the end of a message whose first packet was sent (its remaining packets
    /// will take the following numbers, and an `Expired` answer names them). A receiver that
    /// got the drop request acknowledges up to here, so an ACK up to this number is valid.
    pub fn committed_end(&self) -> SeqNo {
        self.head_seq.add(self.committed_len() as i32)
    }

    fn committed_len(&self) -> usize {
        let rest = self.order.get(self.sent).map_or(0, |&id| {
            let slot = &self.slots[id as usize];
            if slot.msg_off > 0 {
                slot.msg_pkts.saturating_sub(slot.msg_off) as usize
            } else {
                0
            }
        });
        self.sent + rest
    }

    /// Release every packet before `next_expected`; returns packets released. This includes
    /// the unsent rest of a partly sent message up to [`committed_end`](Self::committed_end)
    /// (the peer acknowledged it after a drop request): those packets are then never sent.
    /// Numbers beyond `committed_end` are a caller bug (the connection validates ACKs first);
    /// they release only what is committed.
    pub fn acknowledge(&mut self, next_expected: SeqNo) -> usize {
        let d = next_expected.diff(self.head_seq);
        if d <= 0 {
            return 0;
        }
        let n = (d as usize).min(self.committed_len());
        for id in self.order.drain(..n) {
            self.free.push(id);
        }
        self.head_seq = self.head_seq.add(n as i32);
        self.sent = self.sent.saturating_sub(n);
        n
    }

    /// Messages dropped by TTL before being sent at all.
    pub fn expired_unsent_msgs(&self) -> u64 {
        self.expired_unsent
    }
}

#[cfg(test)]
#[path = "send_tests.rs"]
mod tests;
