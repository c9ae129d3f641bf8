//! The send buffer (thesis §2.3.2.3; UDT4 `CSndBuffer`), stream and message modes.
//!
//! Packets are addressed by sequence number: the packet at position `i` from the head (the
//! oldest unacknowledged) has sequence `head_seq + i`, because every packet is first sent in
//! order exactly once. Regions: [head, next_new) sent and unacknowledged, [next_new, tail) unsent.
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
//! drop request instead of data.

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

/// The send buffer.
#[derive(Debug)]
pub struct SendBuffer {
    _todo: (),
}

impl SendBuffer {
    /// A buffer of `capacity_pkts` packets of `payload_size` bytes; the first packet sent will
    /// carry `first_seq`; message numbers start at [`MsgNo::FIRST`].
    pub fn new(capacity_pkts: usize, payload_size: usize, first_seq: SeqNo) -> Self {
        todo!()
    }
    /// Payload bytes per packet.
    pub fn payload_size(&self) -> usize {
        todo!()
    }
    /// Append stream bytes; returns how many were taken (0 when full).
    pub fn write_stream(&mut self, data: &[u8]) -> usize {
        todo!()
    }
    /// Append one message (all or nothing).
    pub fn write_message(
        &mut self,
        data: &[u8],
        ttl: Option<Duration>,
        in_order: bool,
        now: Instant,
    ) -> Result<MsgNo, WriteMsgError> {
        todo!()
    }
    /// Free packet slots.
    pub fn free_packets(&self) -> usize {
        todo!()
    }
    /// Free bytes a stream write could take now (free slots plus room in the unsent tail packet).
    pub fn free_bytes(&self) -> usize {
        todo!()
    }
    /// Packets sent and not acknowledged.
    pub fn unacked_packets(&self) -> usize {
        todo!()
    }
    /// Packets written and not yet sent.
    pub fn unsent_packets(&self) -> usize {
        todo!()
    }
    /// Nothing unsent and nothing unacknowledged.
    pub fn is_empty(&self) -> bool {
        todo!()
    }
    /// The sequence number the next new packet will get.
    pub fn next_seq(&self) -> SeqNo {
        todo!()
    }
    /// The oldest unacknowledged sequence number (== next_seq when all is acknowledged).
    pub fn head_seq(&self) -> SeqNo {
        todo!()
    }
    /// Take the next unsent packet, marking it sent; skips messages expired before any packet
    /// was sent. Returns its sequence number and contents.
    pub fn take_new(&mut self, now: Instant) -> Option<(SeqNo, OutPacket<'_>)> {
        todo!()
    }
    /// Look up a sent packet for retransmission.
    pub fn lookup(&self, seq: SeqNo, now: Instant) -> Lookup<'_> {
        todo!()
    }
    /// Release every packet before `next_expected`; returns packets released. Numbers beyond
    /// what was sent are a caller bug (the connection validates ACKs first).
    pub fn acknowledge(&mut self, next_expected: SeqNo) -> usize {
        todo!()
    }
    /// Messages dropped by TTL before being sent at all.
    pub fn expired_unsent_msgs(&self) -> u64 {
        todo!()
    }
}
