//! Which byte order a sender writes its sequence numbers in. RBUDP does not say: the reference
//! writes its host order and a receiver that sees an out-of-range number assumes a byte-swapped
//! sender (seed-protocols.md, RBUDP step 3). The reference flips its guess on any stray number;
//! ours decides once per transfer.
//!
//! Rule: a number is in range when it is in `0..packets`. While undecided, a datagram whose
//! number is in range in exactly one order decides that order; one that reads the same both
//! ways (0, palindromes) is taken; one that is in range both ways with different values is
//! ambiguous and left for the re-blast (unless [`SeqReader::settle`] decided); one in range
//! neither way is malformed. Once decided, a number out of range in the decided order is
//! malformed. At the end of a blast that left ambiguous datagrams, [`SeqReader::settle`] takes
//! little-endian, the reference's x86 order, so a transfer always progresses.

/// A byte order of sequence numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteOrder {
    /// Least significant byte first (x86 senders, and ours).
    Little,
    /// Most significant byte first.
    Big,
}

/// What a datagram's header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqRead {
    /// The packet's sequence number.
    Seq(u32),
    /// In range in both orders with different values, and the order is not decided yet.
    Ambiguous,
    /// In range in no order that fits.
    OutOfRange,
}

/// The byte order decision of one transfer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeqReader {
    order: Option<ByteOrder>,
}

impl SeqReader {
    /// The order, once decided.
    pub fn order(&self) -> Option<ByteOrder> {
        self.order
    }

    /// Read the raw header of a datagram of a transfer of `packets` packets.
    pub fn read(&mut self, raw: [u8; 4], packets: u32) -> SeqRead {
        let fits = |v: i32| u32::try_from(v).ok().filter(|&s| s < packets);
        let le = fits(i32::from_le_bytes(raw));
        let be = fits(i32::from_be_bytes(raw));
        let (chosen, decides) = match (self.order, le, be) {
            (Some(ByteOrder::Little), _, _) => (le, None),
            (Some(ByteOrder::Big), _, _) => (be, None),
            (None, Some(l), None) => (Some(l), Some(ByteOrder::Little)),
            (None, None, Some(b)) => (Some(b), Some(ByteOrder::Big)),
            (None, Some(l), Some(b)) if l == b => (Some(l), None),
            (None, Some(_), Some(_)) => return SeqRead::Ambiguous,
            (None, None, None) => (None, None),
        };
        if decides.is_some() {
            self.order = decides;
        }
        chosen.map_or(SeqRead::OutOfRange, SeqRead::Seq)
    }

    /// End of a blast that left ambiguous datagrams: decide little-endian if still undecided.
    pub fn settle(&mut self) {
        self.order.get_or_insert(ByteOrder::Little);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_little_endian_sender_is_recognised_at_its_first_telling_number() {
        let mut r = SeqReader::default();
        assert_eq!(r.read(0u32.to_le_bytes(), 100), SeqRead::Seq(0), "0 reads the same both ways");
        assert_eq!(r.order(), None);
        assert_eq!(r.read(1u32.to_le_bytes(), 100), SeqRead::Seq(1));
        assert_eq!(r.order(), Some(ByteOrder::Little));
        assert_eq!(r.read(99u32.to_le_bytes(), 100), SeqRead::Seq(99));
        assert_eq!(r.read(100u32.to_le_bytes(), 100), SeqRead::OutOfRange);
        assert_eq!(r.read(1u32.to_be_bytes(), 100), SeqRead::OutOfRange, "decided once: no flip");
    }

    #[test]
    fn a_big_endian_sender_is_recognised_by_the_out_of_range_test() {
        let mut r = SeqReader::default();
        assert_eq!(r.read(5u32.to_be_bytes(), 100), SeqRead::Seq(5));
        assert_eq!(r.order(), Some(ByteOrder::Big));
        assert_eq!(r.read(42u32.to_be_bytes(), 100), SeqRead::Seq(42));
        assert_eq!(r.read(42u32.to_le_bytes(), 100), SeqRead::OutOfRange);
    }

    #[test]
    fn numbers_in_range_both_ways_wait_for_a_telling_one_or_the_end_of_the_blast() {
        // 2^24 + 10 packets: 1 little-endian reads as 2^24 big-endian, in range too.
        let packets = (1 << 24) + 10;
        let mut r = SeqReader::default();
        assert_eq!(r.read(1u32.to_le_bytes(), packets), SeqRead::Ambiguous);
        assert_eq!(r.order(), None);
        r.settle();
        assert_eq!(r.order(), Some(ByteOrder::Little));
        assert_eq!(r.read(1u32.to_le_bytes(), packets), SeqRead::Seq(1));
        // A settled order is not overridden.
        let mut r = SeqReader { order: Some(ByteOrder::Big) };
        r.settle();
        assert_eq!(r.order(), Some(ByteOrder::Big));
    }

    #[test]
    fn numbers_out_of_range_both_ways_are_malformed_and_decide_nothing() {
        let mut r = SeqReader::default();
        for raw in [[0xff; 4], [0x80, 0, 0, 0x80], 1000u32.to_le_bytes()] {
            assert_eq!(r.read(raw, 100), SeqRead::OutOfRange);
        }
        assert_eq!(r.order(), None);
        assert_eq!(r.read([0; 4], 0), SeqRead::OutOfRange, "no packets: nothing is in range");
    }
}
