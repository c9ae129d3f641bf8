//! Data packet header (protocol notes §1, "Data packet header").
//!
//! Word 0: bit 31 = 0, bits 30..0 sequence number. Word 1: bits 31..30 boundary, bit 29 in-order,
//! bits 28..0 message number. Word 2: timestamp (us). Word 3: destination socket id.

use super::{EmitError, ParseError};
use crate::seq::{MsgNo, SeqNo, SocketId};

/// Length of the data header.
pub const DATA_HEADER_LEN: usize = 16;

/// Position of a packet within its message (word 1, bits 31..30).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Boundary {
    /// `00`: a middle packet.
    Middle,
    /// `01`: the last packet.
    Last,
    /// `10`: the first packet.
    First,
    /// `11`: the whole message in one packet.
    Solo,
}

impl Boundary {
    /// From the two wire bits.
    pub fn from_bits(b: u32) -> Boundary {
        todo!()
    }
    /// The two wire bits.
    pub fn bits(self) -> u32 {
        todo!()
    }
    /// This packet starts a message (First or Solo).
    pub fn is_first(self) -> bool {
        todo!()
    }
    /// This packet ends a message (Last or Solo).
    pub fn is_last(self) -> bool {
        todo!()
    }
}

/// The plain value of a data header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataHeader {
    /// Sequence number.
    pub seq: SeqNo,
    /// Position within the message.
    pub boundary: Boundary,
    /// In-order delivery flag.
    pub in_order: bool,
    /// Message number.
    pub msg: MsgNo,
    /// Microseconds since the sender started (wire timestamp).
    pub timestamp: u32,
    /// Destination socket id.
    pub dst: SocketId,
}

impl DataHeader {
    /// Write the 16 header bytes at the start of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        todo!()
    }
}

/// A checked view over a data packet's bytes.
#[derive(Clone, Copy, Debug)]
pub struct DataView<'a> {
    bytes: &'a [u8],
}

impl<'a> DataView<'a> {
    /// Validate that `bytes` holds at least a data header with bit 31 clear.
    pub fn new_checked(bytes: &'a [u8]) -> Result<Self, ParseError> {
        todo!()
    }
    /// Sequence number.
    pub fn seq(&self) -> SeqNo {
        todo!()
    }
    /// Destination socket id.
    pub fn dst(&self) -> SocketId {
        todo!()
    }
    /// The whole header as a value.
    pub fn header(&self) -> DataHeader {
        todo!()
    }
    /// The payload after the header (may be empty).
    pub fn payload(&self) -> &'a [u8] {
        todo!()
    }
}
