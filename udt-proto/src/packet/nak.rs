//! NAK loss-list encoding (thesis §2.3.2.2; protocol notes §1 "NAK encoding").
//!
//! A list of 32-bit words: a word with bit 31 set starts a range whose inclusive end is the next
//! word; otherwise the word is one lost sequence number. `0x00000003 0x80000006 0x0000000F
//! 0x00000012` means 3, 6..=15, 18. Entries are kept as written (a range may name start > end,
//! or start == end, which the connection judges), so parse-then-emit is byte-exact.
//!
//! To send a NAK, [`NakList::encode`] the entries into a scratch buffer and
//! [`NakList::parse`] the written bytes into the value carried by
//! [`Control::Nak`](super::Control::Nak).

use super::{EmitError, ParseError};
use crate::seq::SeqNo;

/// Bit 31 of a loss-list word: this word starts a range (protocol notes §1 "NAK encoding").
const RANGE_BIT: u32 = 0x8000_0000;

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
        match self {
            LossEntry::Single(s) => (s, s),
            LossEntry::Range(s, e) => (s, e),
        }
    }
    /// The canonical entry for an inclusive range: `Single` when start == end.
    pub fn from_bounds(start: SeqNo, end: SeqNo) -> Self {
        if start == end {
            LossEntry::Single(start)
        } else {
            LossEntry::Range(start, end)
        }
    }
    /// Words this entry takes on the wire (1 or 2).
    pub fn words(self) -> usize {
        match self {
            LossEntry::Single(_) => 1,
            LossEntry::Range(..) => 2,
        }
    }
}

/// A validated NAK body borrowed from the packet (no allocation to parse).
///
/// Invariant: `bytes` is non-empty, a multiple of 4 bytes long, and every word with bit 31 set
/// is followed by a word with bit 31 clear.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NakList<'a> {
    bytes: &'a [u8],
}

/// The big-endian words of `bytes` (a trailing partial word is skipped).
fn words(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    bytes.chunks_exact(4).map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
}

impl<'a> NakList<'a> {
    /// Validate a NAK body: non-empty, a multiple of 4 bytes, every range start followed by an
    /// end word without bit 31.
    pub fn parse(body: &'a [u8]) -> Result<Self, ParseError> {
        if body.is_empty() || body.len() % 4 != 0 {
            return Err(ParseError::BadLength { what: "NAK", len: body.len() });
        }
        let mut it = words(body);
        while let Some(w) = it.next() {
            if w & RANGE_BIT != 0 {
                match it.next() {
                    None => return Err(ParseError::UnterminatedRange),
                    Some(end) if end & RANGE_BIT != 0 => return Err(ParseError::BadRangeEnd),
                    Some(_) => {}
                }
            }
        }
        Ok(NakList { bytes: body })
    }
    /// Body bytes (for re-emission).
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }
    /// The entries in wire order.
    pub fn iter(&self) -> impl Iterator<Item = LossEntry> + 'a {
        let mut it = words(self.bytes);
        std::iter::from_fn(move || {
            let w = it.next()?;
            if w & RANGE_BIT != 0 {
                // Validated by `parse`: an end word follows; `?` only guards the impossible case.
                let end = it.next()?;
                Some(LossEntry::Range(SeqNo::new(w), SeqNo::new(end)))
            } else {
                Some(LossEntry::Single(SeqNo::new(w)))
            }
        })
    }
    /// Encode `entries` into `buf`; returns the bytes written.
    ///
    /// Entries are written as given (a `Range` with equal bounds stays two words; use
    /// [`LossEntry::from_bounds`] for the compact form). On
    /// [`EmitError::BufferTooSmall`] `need` is the size of the whole list and `buf` may have
    /// been partly written.
    pub fn encode(entries: impl IntoIterator<Item = LossEntry>, buf: &mut [u8]) -> Result<usize, EmitError> {
        let mut need = 0usize;
        let mut fits = true;
        for e in entries {
            let mut put = |v: u32| {
                if let Some(dst) = buf.get_mut(need..need + 4) {
                    dst.copy_from_slice(&v.to_be_bytes());
                } else {
                    fits = false;
                }
                need += 4;
            };
            match e {
                LossEntry::Single(s) => put(s.value()),
                LossEntry::Range(s, end) => {
                    put(s.value() | RANGE_BIT);
                    put(end.value());
                }
            }
        }
        if fits {
            Ok(need)
        } else {
            Err(EmitError::BufferTooSmall { need, got: buf.len() })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_of(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_be_bytes()).collect()
    }

    fn s(v: u32) -> SeqNo {
        SeqNo::new(v)
    }

    #[test]
    fn thesis_example() {
        let body = bytes_of(&[3, 0x8000_0006, 0xF, 0x12]);
        let nak = NakList::parse(&body).unwrap();
        let entries: Vec<_> = nak.iter().collect();
        assert_eq!(
            entries,
            [LossEntry::Single(s(3)), LossEntry::Range(s(6), s(15)), LossEntry::Single(s(18))]
        );
        assert_eq!(nak.as_bytes(), &body[..]);
        let mut buf = [0xa5u8; 20];
        assert_eq!(NakList::encode(entries, &mut buf), Ok(16));
        assert_eq!(&buf[..16], &body[..]);
        assert_eq!(&buf[16..], &[0xa5; 4]);
    }

    #[test]
    fn readme_examples() {
        let single = bytes_of(&[0x244b_5d7d]);
        assert_eq!(
            NakList::parse(&single).unwrap().iter().collect::<Vec<_>>(),
            [LossEntry::Single(s(608_918_909))]
        );
        let range = bytes_of(&[0xa44b_61ea, 0x244b_61eb]);
        assert_eq!(
            NakList::parse(&range).unwrap().iter().collect::<Vec<_>>(),
            [LossEntry::Range(s(608_920_042), s(608_920_043))]
        );
    }

    #[test]
    fn entries_are_kept_as_written() {
        // start > end and start == end both survive parse and encode unchanged.
        let body = bytes_of(&[0x8000_0009, 0x2, 0x8000_0005, 0x5, 0x7FFF_FFFF, 0x8000_0000, 0]);
        let entries: Vec<_> = NakList::parse(&body).unwrap().iter().collect();
        assert_eq!(
            entries,
            [
                LossEntry::Range(s(9), s(2)),
                LossEntry::Range(s(5), s(5)),
                LossEntry::Single(s(0x7FFF_FFFF)),
                LossEntry::Range(s(0), s(0)),
            ]
        );
        let mut buf = [0xa5u8; 28];
        assert_eq!(NakList::encode(entries, &mut buf), Ok(28));
        assert_eq!(&buf[..], &body[..]);
    }

    #[test]
    fn malformed_bodies_are_rejected() {
        assert_eq!(NakList::parse(&[]), Err(ParseError::BadLength { what: "NAK", len: 0 }));
        let body = bytes_of(&[1, 0x8000_0002, 3]);
        for len in 0..body.len() {
            let r = NakList::parse(&body[..len]);
            match len {
                4 => assert_eq!(r.unwrap().iter().collect::<Vec<_>>(), [LossEntry::Single(s(1))]),
                8 => assert_eq!(r, Err(ParseError::UnterminatedRange)),
                _ => assert_eq!(r, Err(ParseError::BadLength { what: "NAK", len })),
            }
        }
        assert_eq!(NakList::parse(&bytes_of(&[0x8000_0001])), Err(ParseError::UnterminatedRange));
        assert_eq!(NakList::parse(&bytes_of(&[0x8000_0001, 0x8000_0002])), Err(ParseError::BadRangeEnd));
    }

    #[test]
    fn entry_helpers() {
        assert_eq!(LossEntry::from_bounds(s(4), s(4)), LossEntry::Single(s(4)));
        assert_eq!(LossEntry::from_bounds(s(4), s(6)), LossEntry::Range(s(4), s(6)));
        assert_eq!(LossEntry::Single(s(4)).bounds(), (s(4), s(4)));
        assert_eq!(LossEntry::Range(s(4), s(6)).bounds(), (s(4), s(6)));
        assert_eq!(LossEntry::Single(s(4)).words(), 1);
        assert_eq!(LossEntry::Range(s(4), s(6)).words(), 2);
    }

    #[test]
    fn encode_needs_room() {
        let entries = [LossEntry::Single(s(1)), LossEntry::Range(s(2), s(3))];
        let mut buf = [0xa5u8; 11];
        assert_eq!(NakList::encode(entries, &mut buf), Err(EmitError::BufferTooSmall { need: 12, got: 11 }));
        let mut buf = [0xa5u8; 0];
        assert_eq!(NakList::encode(entries, &mut buf), Err(EmitError::BufferTooSmall { need: 12, got: 0 }));
        assert_eq!(NakList::encode([], &mut buf), Ok(0));
    }
}
