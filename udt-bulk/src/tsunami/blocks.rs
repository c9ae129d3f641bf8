//! Which blocks a receiver holds: a set of block numbers kept as disjoint, non-adjacent ranges,
//! so that a file of 2^32 blocks costs nothing up front and memory grows only with the gaps
//! (each range needs at least one datagram that actually arrived, never a size the peer
//! announced).
//!
//! Invariants: ranges are half-open `[start, end)`, sorted, disjoint and never touching (two
//! ranges that touch are merged); `len` is the number of block numbers held.

use std::collections::BTreeMap;

/// A set of block numbers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlockSet {
    ranges: BTreeMap<u64, u64>,
    len: u64,
}

impl BlockSet {
    /// How many blocks are held.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when no block is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many disjoint ranges hold them (for tests and bounds).
    pub fn ranges(&self) -> usize {
        self.ranges.len()
    }

    /// True when `block` is held.
    pub fn contains(&self, block: u64) -> bool {
        self.ranges.range(..=block).next_back().is_some_and(|(_, &end)| block < end)
    }

    /// Add `block`; false when it was held already.
    pub fn insert(&mut self, block: u64) -> bool {
        if self.contains(block) || block == u64::MAX {
            return false;
        }
        let mut start = block;
        let mut end = block + 1;
        // A range ending right at `block` extends to cover it.
        if let Some((&s, &e)) = self.ranges.range(..block).next_back() {
            if e == block {
                start = s;
                self.ranges.remove(&s);
            }
        }
        // A range starting right after it joins too.
        if let Some(e) = self.ranges.remove(&end) {
            end = e;
        }
        self.ranges.insert(start, end);
        self.len += 1;
        true
    }

    /// The block numbers in `[from, to)` not held, in ascending order.
    pub fn missing(&self, from: u64, to: u64) -> Missing<'_> {
        let covering = self.ranges.range(..=from).next_back().filter(|(_, &end)| end > from);
        let next = covering.map_or(from, |(_, &end)| end);
        Missing { ranges: self.ranges.range(next..), next, to }
    }
}

/// The iterator of [`BlockSet::missing`].
pub struct Missing<'a> {
    ranges: std::collections::btree_map::Range<'a, u64, u64>,
    next: u64,
    to: u64,
}

impl Iterator for Missing<'_> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        loop {
            if self.next >= self.to {
                return None;
            }
            match self.ranges.clone().next() {
                Some((&start, &end)) if start <= self.next => {
                    self.ranges.next();
                    self.next = self.next.max(end);
                }
                _ => {
                    let block = self.next;
                    self.next += 1;
                    return Some(block);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ranges_merge_as_blocks_fill_the_gaps() {
        let mut set = BlockSet::default();
        for b in [1, 2, 3, 7, 8, 5] {
            assert!(set.insert(b));
        }
        assert!(!set.insert(2), "already held");
        assert_eq!((set.len(), set.ranges()), (6, 3));
        assert_eq!(set.missing(1, 10).collect::<Vec<_>>(), vec![4, 6, 9]);
        assert_eq!(set.missing(5, 8).collect::<Vec<_>>(), vec![6]);
        assert_eq!(set.missing(9, 9).count(), 0);
        set.insert(4);
        set.insert(6);
        assert_eq!((set.len(), set.ranges()), (8, 1));
        assert!(set.contains(1) && set.contains(8) && !set.contains(0) && !set.contains(9));
        assert_eq!(set.missing(1, 9).count(), 0);
    }

    #[test]
    fn block_numbers_past_32_bits_are_fine() {
        let mut set = BlockSet::default();
        let far = u64::from(u32::MAX) + 10;
        assert!(set.insert(far));
        assert!(!set.insert(u64::MAX), "the one number a range cannot end after");
        assert_eq!(set.missing(far - 2, far + 2).collect::<Vec<_>>(), vec![far - 2, far - 1, far + 1]);
    }

    proptest! {
        #[test]
        fn behaves_like_a_plain_set(blocks in proptest::collection::vec(0u64..200, 0..300)) {
            let mut set = BlockSet::default();
            let mut plain = std::collections::BTreeSet::new();
            for b in blocks {
                prop_assert_eq!(set.insert(b), plain.insert(b));
            }
            prop_assert_eq!(set.len(), plain.len() as u64);
            let missing: Vec<u64> = (0..210).filter(|b| !plain.contains(b)).collect();
            prop_assert_eq!(set.missing(0, 210).collect::<Vec<_>>(), missing);
            let some: Vec<u64> = (37..150).filter(|b| !plain.contains(b)).collect();
            prop_assert_eq!(set.missing(37, 150).collect::<Vec<_>>(), some);
        }
    }
}
