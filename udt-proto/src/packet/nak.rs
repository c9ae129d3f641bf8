//! NAK loss-list encoding (thesis §2.3.2.2; protocol notes §1 "NAK encoding").
//!
//! A list of 32-bit words: a word with bit 31 set starts a range whose inclusive end is the next
//! word; otherwise the word is one lost sequence number. `0x00000003 0x80000006 0x0000000F
//! 0x00000012` means 3, 6..=15, 18. Entries are kept as written (a range may name start > end,
//! which the connection rejects), so parse-then-emit is byte-exact.

use super::{EmitError, ParseError};
use crate::seq::SeqNo;

/// One entry of a loss report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossEntry {
    /// One lost sequence number (one word).
    Single(SeqNo),
    /// An inclusive range (two words, the first with bit 31 set).
    Range(SeqNo, SeqNo),
}

impl LossEntry {
    /// The entry as an inclusive (start, end) pair.
    pub fn bounds(self) -> (SeqNo, SeqNo) {
        todo!()
    }
    /// The canonical entry for an inclusive range: `Single` when start == end.
    pub fn from_bounds(start: SeqNo, end: SeqNo) -> Self {
        todo!()
    }
    /// Words this entry takes on the wire (1 or 2).
    pub fn words(self) -> usize {
        todo!()
    }
}

/// A validated NAK body borrowed from the packet (no allocation to parse).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NakList<'a> {
    bytes: &'a [u8],
}

impl<'a> NakList<'a> {
    /// Validate a NAK body: non-empty, a multiple of 4 bytes, every range start followed by an
    /// end word without bit 31.
    pub fn parse(body: &'a [u8]) -> Result<Self, ParseError> {
        todo!()
    }
    /// Body bytes (for re-emission).
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }
    /// The entries in wire order.
    pub fn iter(&self) -> impl Iterator<Item = LossEntry> + 'a {
        // placeholder so the signature compiles; replace
        std::iter::empty()
    }
    /// Encode `entries` into `buf`; returns the bytes written.
    pub fn encode(entries: impl IntoIterator<Item = LossEntry>, buf: &mut [u8]) -> Result<usize, EmitError> {
        todo!()
    }
}
