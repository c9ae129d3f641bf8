//! Message drop request body (protocol notes §1, type 7).
//!
//! Additional info: the message number. Body: first sequence number of the message, then one past
//! its last (as UDT4 4.11 codes it; the draft says "last"). 4.11 never sends it in the captured
//! sessions, so there is no golden vector; the layout follows the notes.

use super::{put_word, word, EmitError, ParseError};
use crate::seq::{MsgNo, SeqNo};

/// Body length of a message drop request.
pub const DROP_REQUEST_BODY_LEN: usize = 8;

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
    /// Parse from the additional-info word and the 8-byte body (longer bodies: extra ignored;
    /// shorter: [`ParseError::Truncated`]). Both sequence words are masked to 31 bits.
    pub fn parse(info: u32, body: &[u8]) -> Result<Self, ParseError> {
        if body.len() < DROP_REQUEST_BODY_LEN {
            return Err(ParseError::Truncated {
                what: "drop request body",
                need: DROP_REQUEST_BODY_LEN,
                got: body.len(),
            });
        }
        Ok(DropRequest {
            msg: MsgNo::new(info),
            first: SeqNo::new(word(body, 0)),
            end_exclusive: SeqNo::new(word(body, 1)),
        })
    }
    /// Write the 8-byte body.
    pub fn emit_body(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        if buf.len() < DROP_REQUEST_BODY_LEN {
            return Err(EmitError::BufferTooSmall { need: DROP_REQUEST_BODY_LEN, got: buf.len() });
        }
        put_word(buf, 0, self.first.value());
        put_word(buf, 1, self.end_exclusive.value());
        Ok(DROP_REQUEST_BODY_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> DropRequest {
        DropRequest {
            msg: MsgNo::new(0x1FFF_FFFF),
            first: SeqNo::new(0x7FFF_FFFE),
            end_exclusive: SeqNo::new(1),
        }
    }

    #[test]
    fn round_trips_into_dirty_buffer() {
        let mut buf = [0xa5u8; 12];
        assert_eq!(sample().emit_body(&mut buf), Ok(8));
        assert_eq!(&buf[..8], &[0x7f, 0xff, 0xff, 0xfe, 0, 0, 0, 1]);
        assert_eq!(&buf[8..], &[0xa5; 4]);
        assert_eq!(DropRequest::parse(0x1FFF_FFFF, &buf[..8]), Ok(sample()));
        // Extra bytes ignored; high bits of the message word masked.
        assert_eq!(DropRequest::parse(0xFFFF_FFFF, &buf), Ok(sample()));
    }

    #[test]
    fn every_truncation_is_an_error() {
        let body = [0u8; 8];
        for len in 0..8 {
            assert_eq!(
                DropRequest::parse(1, &body[..len]),
                Err(ParseError::Truncated { what: "drop request body", need: 8, got: len })
            );
        }
    }

    #[test]
    fn emit_needs_room() {
        let mut buf = [0xa5u8; 7];
        assert_eq!(sample().emit_body(&mut buf), Err(EmitError::BufferTooSmall { need: 8, got: 7 }));
    }
}
