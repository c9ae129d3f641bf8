//! The receiver's tally of the packets it holds, and its wire form (seed-protocols.md, RBUDP
//! step 5): byte 0 is the done flag, then bit `seq % 8`, least significant first, of byte
//! `1 + seq / 8` is 1 when packet `seq` arrived ([`crate::received`]); the unused bits of the
//! last byte are preset to 1, so the sender of the reference, which scans every bit, never asks
//! for a packet past the end. The receiver sends it after every blast; the sender reads it to
//! know what to re-blast.
//!
//! Invariants: the wire form is exactly `packets / 8 + 2` bytes long; the set holds real
//! packets (below `packets`) only, whatever the bytes a peer sent.

use udt_proto::range_set::RangeSet;

use super::wire::WireError;
use crate::received;

/// Which of a transfer's packets the receiver holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bitmap {
    packets: u32,
    held: RangeSet<u32>,
    /// The done flag as a peer sent it.
    done_flag: bool,
}

impl Bitmap {
    /// Bytes of the wire form for `packets` packets.
    pub fn wire_len(packets: u32) -> usize {
        packets as usize / 8 + 2
    }

    /// No packet yet.
    pub fn new(packets: u32) -> Bitmap {
        Bitmap { packets, held: RangeSet::new(), done_flag: false }
    }

    /// A peer's bitmap for `packets` packets: exactly [`Bitmap::wire_len`] bytes. Whatever its
    /// unused bits say, only real packets count.
    pub fn from_wire(packets: u32, wire: &[u8]) -> Result<Bitmap, WireError> {
        let expected = Bitmap::wire_len(packets);
        if wire.len() != expected {
            return Err(WireError::BitmapLength { len: wire.len(), expected });
        }
        let mut held = RangeSet::new();
        received::for_each_run(wire.get(1..).unwrap_or_default(), packets, |run| {
            if let Some(last) = run.end.checked_sub(1) {
                held.insert_range(run.start..=last);
            }
        });
        Ok(Bitmap { packets, held, done_flag: wire.first() == Some(&1) })
    }

    /// The packet count.
    pub fn packets(&self) -> u32 {
        self.packets
    }

    /// Packets held.
    pub fn received(&self) -> u32 {
        // Members are below `packets`, a u32.
        self.held.len() as u32
    }

    /// True when every packet is held.
    pub fn is_complete(&self) -> bool {
        self.received() == self.packets
    }

    /// The done flag as the peer sent it (the reference sender stops when it is exactly 1).
    pub fn done_flag(&self) -> bool {
        self.done_flag
    }

    /// True when packet `seq` is held (false past the end).
    pub fn has(&self, seq: u32) -> bool {
        seq < self.packets && self.held.contains(seq)
    }

    /// Mark packet `seq` held; true when it was not before (false past the end too).
    pub fn set(&mut self, seq: u32) -> bool {
        seq < self.packets && self.held.insert(seq)
    }

    /// The first packet at or after `from` that is not held, in ascending order as the
    /// reference re-blasts.
    pub fn next_missing(&self, from: u32) -> Option<u32> {
        let last = self.packets.checked_sub(1)?;
        self.held.first_gap(from..=last)
    }

    /// The wire form, the done flag set when every packet is held.
    pub fn to_wire(&self) -> Vec<u8> {
        let mut wire = Vec::with_capacity(Bitmap::wire_len(self.packets));
        wire.push(u8::from(self.is_complete()));
        wire.extend(received::to_bits(&self.held, 0..self.packets));
        wire.resize(Bitmap::wire_len(self.packets), 0);
        // The last byte holds the packets past the last multiple of 8, then unused bits.
        if let Some(last) = wire.last_mut() {
            *last |= 0xff << (self.packets % 8);
        }
        wire
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn unused_bits_are_preset_as_the_reference_does() {
        // 10 packets: byte 1 holds 0..7, byte 2 holds 8, 9 and six unused bits.
        let m = Bitmap::new(10);
        assert_eq!(m.to_wire(), vec![0, 0x00, 0b1111_1100]);
        // 8 packets: byte 2 is all unused; 0 packets: byte 1 is.
        assert_eq!(Bitmap::new(8).to_wire(), vec![0, 0, 0xff]);
        assert_eq!(Bitmap::new(0).to_wire(), vec![1, 0xff], "nothing to receive: done");
    }

    #[test]
    fn bits_go_least_significant_first_and_the_flag_follows_completion() {
        let mut m = Bitmap::new(10);
        assert!(m.set(0) && m.set(9));
        assert!(!m.set(9), "already held");
        assert!(!m.set(10) && !m.set(u32::MAX), "past the end");
        assert_eq!(m.to_wire(), vec![0, 0b0000_0001, 0b1111_1110]);
        assert_eq!((m.received(), m.next_missing(0), m.next_missing(2)), (2, Some(1), Some(2)));
        for s in 1..9 {
            m.set(s);
        }
        assert!(m.is_complete());
        assert_eq!(m.to_wire(), vec![1, 0xff, 0xff]);
        assert_eq!(m.next_missing(0), None);
    }

    #[test]
    fn a_peer_bitmap_of_the_wrong_length_is_refused() {
        assert_eq!(Bitmap::from_wire(10, &[0, 0]), Err(WireError::BitmapLength { len: 2, expected: 3 }));
        assert!(Bitmap::from_wire(10, &[0, 0, 0, 0]).is_err());
        assert!(Bitmap::from_wire(0, &[]).is_err());
    }

    #[test]
    fn a_peer_bitmap_counts_real_packets_only() {
        // Unused bits cleared by a careless peer: packet 9 missing, bits past it ignored.
        let m = Bitmap::from_wire(10, &[0, 0xff, 0b0000_0001]).unwrap();
        assert_eq!((m.received(), m.next_missing(0), m.done_flag()), (9, Some(9), false));
        let m = Bitmap::from_wire(10, &[1, 0xff, 0xff]).unwrap();
        assert!(m.is_complete() && m.done_flag());
        assert_eq!(Bitmap::from_wire(8, &[0, 0xff, 0]).unwrap().received(), 8);
    }

    proptest! {
        #[test]
        fn a_bitmap_round_trips_through_its_wire_form(
            packets in 0u32..200,
            set in proptest::collection::vec(0u32..220, 0..100),
        ) {
            let mut m = Bitmap::new(packets);
            for &s in &set {
                m.set(s);
            }
            let back = Bitmap::from_wire(packets, &m.to_wire()).unwrap();
            prop_assert_eq!(back.received(), m.received());
            let missing: Vec<u32> = (0..packets).filter(|&s| !set.contains(&s)).collect();
            let mut walked = vec![];
            let mut from = 0;
            while let Some(s) = back.next_missing(from) {
                walked.push(s);
                from = s + 1;
            }
            prop_assert_eq!(walked, missing);
        }

        #[test]
        fn any_bytes_of_the_right_length_parse_without_panic(
            packets in 0u32..100,
            noise in proptest::collection::vec(any::<u8>(), 0..20),
        ) {
            let mut wire = noise;
            wire.resize(Bitmap::wire_len(packets), 0xa5);
            let m = Bitmap::from_wire(packets, &wire).unwrap();
            prop_assert!(m.received() <= packets);
            prop_assert!(m.next_missing(0).is_none_or(|s| s < packets));
        }
    }
}
