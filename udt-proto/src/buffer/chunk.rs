//! [`RecvChunk`]: stream bytes lent out of the receive buffer without copying them, in the
//! datagram the kernel received them into ([`RecvBuffer::take_stream`]).
//!
//! A reader that only needs to look at the bytes (hash them, write them to a file, count them)
//! takes whole packets this way instead of copying them out with `read`: the kernel's copy into
//! the datagram is then the only copy of each payload byte on the receiving side, as with TCP's
//! `recv`. Giving a chunk back ([`RecvBuffer::recycle`]) returns its buffer to the receive
//! buffer's spares, so the next datagrams land in memory that is still in the caches and
//! nothing is allocated; a chunk that is dropped instead just frees its buffer.
//!
//! Invariant: `range` lies within the datagram's bytes.
//!
//! [`RecvBuffer::take_stream`]: super::RecvBuffer::take_stream
//! [`RecvBuffer::recycle`]: super::RecvBuffer::recycle

use std::ops::{Deref, Range};

use super::RxDatagram;

/// Stream bytes in a received datagram of their own (see the module documentation).
#[derive(Clone, PartialEq, Eq)]
pub struct RecvChunk {
    datagram: RxDatagram,
    range: Range<usize>,
}

impl std::fmt::Debug for RecvChunk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvChunk").field("len", &self.len()).finish()
    }
}

impl RecvChunk {
    /// The bytes `range` of `datagram` (clamped to its length).
    pub(crate) fn new(datagram: RxDatagram, range: Range<usize>) -> Self {
        let end = range.end.min(datagram.len());
        let start = range.start.min(end);
        RecvChunk { datagram, range: start..end }
    }

    /// The stream bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.datagram.bytes()[self.range.clone()]
    }

    /// Number of stream bytes.
    pub fn len(&self) -> usize {
        self.range.len()
    }

    /// No bytes.
    pub fn is_empty(&self) -> bool {
        self.range.is_empty()
    }

    /// The datagram holding the bytes, to receive into again.
    pub(crate) fn into_datagram(self) -> RxDatagram {
        self.datagram
    }
}

impl Deref for RecvChunk {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.bytes()
    }
}

impl AsRef<[u8]> for RecvChunk {
    fn as_ref(&self) -> &[u8] {
        self.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_past_the_datagram_is_clamped() {
        let c = RecvChunk::new(RxDatagram::from_bytes(b"headpayload"), 4..40);
        assert_eq!(c.bytes(), b"payload");
        assert_eq!((c.len(), c.is_empty()), (7, false));
        let e = RecvChunk::new(RxDatagram::from_bytes(b"ab"), 5..9);
        assert!(e.is_empty());
        assert_eq!(&*RecvChunk::new(RxDatagram::from_bytes(b"xyz"), 1..3), b"yz");
    }
}
