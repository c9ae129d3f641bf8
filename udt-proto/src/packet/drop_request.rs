//! Message drop request body (protocol notes §1, type 7).
//!
//! Additional info: the message number. Body: first sequence number of the message, then one past
//! its last (as UDT4 4.11 codes it; the draft says "last").

use super::{EmitError, ParseError};
use crate::seq::{MsgNo, SeqNo};

/// A message drop request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DropRequest {
    /// The dropped message (additional-info word, masked to 29 bits on parse).
    pub msg: MsgNo,
    /// First sequence number of the message.
    pub first: SeqNo,
    /// One past the last sequence number of the message.
    pub end_exclusive: SeqNo,
}

impl DropRequest {
    /// Parse from the additional-info word and the 8-byte body (longer bodies: extra ignored).
    pub fn parse(info: u32, body: &[u8]) -> Result<Self, ParseError> {
        todo!()
    }
    /// Write the 8-byte body.
    pub fn emit_body(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        todo!()
    }
}
