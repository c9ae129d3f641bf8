//! The receive buffer (thesis §2.3.2.3; UDT4 `CRcvBuffer`): placement by sequence offset,
//! stream reads, whole-message reads, free-space accounting for the flow window.
//!
//! Slot `i` from the read position holds sequence `base + i`. A slot is empty, holds a packet,
//! or is resolved without data (its message was dropped, or it was already delivered as part of
//! an out-of-order message). `base` advances past the contiguous run of consumed/resolved slots.
//!
//! Stream reads copy bytes from the contiguous prefix, consuming packets (a partly read packet
//! keeps an offset). Message reads return one whole message: the oldest complete one whose
//! in-order flag is clear anywhere in the buffer, or, in sequence order, a complete in-order
//! message once everything before it is resolved.

use crate::packet::DataHeader;
use crate::seq::SeqNo;

/// What happened to an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsertOutcome {
    /// Stored.
    Stored,
    /// The slot already held it (or it was already read or dropped).
    Duplicate,
    /// Beyond the buffer's capacity from the read position: dropped.
    BeyondCapacity,
}

/// Why a message read failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecvMsgError {
    /// The next message is longer than the caller's buffer; nothing was consumed.
    #[error("message of {len} bytes does not fit a {cap}-byte buffer")]
    BufferTooSmall {
        /// Message length.
        len: usize,
        /// Caller's buffer length.
        cap: usize,
    },
}

/// The receive buffer.
#[derive(Debug)]
pub struct RecvBuffer {
    _todo: (),
}

impl RecvBuffer {
    /// A buffer of `capacity_pkts` slots of `payload_size` bytes; `first_seq` is the first
    /// sequence number the peer will send.
    pub fn new(capacity_pkts: usize, payload_size: usize, first_seq: SeqNo) -> Self {
        todo!()
    }
    /// Store an arriving packet (payload longer than the slot size is truncated to it: the
    /// connection drops such packets before calling).
    pub fn insert(&mut self, header: &DataHeader, payload: &[u8]) -> InsertOutcome {
        todo!()
    }
    /// Mark `first..end_exclusive` resolved without data (message drop request); numbers
    /// outside the buffer's window are ignored.
    pub fn drop_range(&mut self, first: SeqNo, end_exclusive: SeqNo) {
        todo!()
    }
    /// Copy contiguous stream bytes into `out`; returns bytes copied (0 if none ready).
    pub fn read_stream(&mut self, out: &mut [u8]) -> usize {
        todo!()
    }
    /// Bytes a stream read could return now.
    pub fn readable_bytes(&self) -> usize {
        todo!()
    }
    /// Copy one whole message into `out`; `None` when no message is ready.
    pub fn read_message(&mut self, out: &mut [u8]) -> Option<Result<usize, RecvMsgError>> {
        todo!()
    }
    /// Length of the message `read_message` would return next.
    pub fn next_message_len(&self) -> Option<usize> {
        todo!()
    }
    /// The first sequence number not yet arrived or resolved counting from the read position.
    pub fn contiguous_end(&self) -> SeqNo {
        todo!()
    }
    /// Free slots for the flow window: capacity minus slots from the read position up to
    /// `contiguous_end` (at least... the connection reports max(this, 2) like UDT4).
    pub fn free_packets(&self) -> usize {
        todo!()
    }
    /// Slots in the buffer.
    pub fn capacity(&self) -> usize {
        todo!()
    }
}
