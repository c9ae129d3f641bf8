//! A set of byte ranges of one file, as a striped transfer's ranges arrive on several
//! connections: disjoint half-open intervals, adjacent ones merged, so its size follows the
//! number of holes, not the number of ranges.
//!
//! Invariant: the intervals never overlap; an insertion that would overlap one is refused and
//! changes nothing.

use std::collections::BTreeMap;

/// Disjoint byte ranges `[start, end)`.
#[derive(Debug, Default)]
pub struct Ranges(BTreeMap<u64, u64>);

impl Ranges {
    /// Add `[start, end)` (`start < end`); `false` (and nothing added) if it overlaps a range
    /// already in.
    pub fn insert(&mut self, start: u64, end: u64) -> bool {
        if start >= end {
            return false;
        }
        let before = self.0.range(..end).next_back().map(|(&s, &e)| (s, e));
        if before.is_some_and(|(_, e)| e > start) {
            return false;
        }
        let (mut lo, mut hi) = (start, end);
        if let Some((s, e)) = before.filter(|&(_, e)| e == start) {
            self.0.remove(&s);
            lo = s;
            debug_assert_eq!(e, start);
        }
        if let Some(e) = self.0.remove(&end) {
            hi = e;
        }
        self.0.insert(lo, hi);
        true
    }

    /// Remove `[start, end)`, which was inserted whole (a range given back unwritten).
    pub fn remove(&mut self, start: u64, end: u64) {
        let Some((&s, &e)) = self.0.range(..=start).next_back() else { return };
        if e < end {
            return;
        }
        self.0.remove(&s);
        if s < start {
            self.0.insert(s, start);
        }
        if end < e {
            self.0.insert(end, e);
        }
    }

    /// Where the run of bytes in the set that begins at `from` ends (`from` if none does).
    pub fn prefix_end(&self, from: u64) -> u64 {
        match self.0.range(..=from).next_back() {
            Some((_, &e)) if e >= from => e,
            _ => from,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_and_overlaps_are_refused() {
        let mut r = Ranges::default();
        assert!(r.insert(10, 20));
        assert!(r.insert(30, 40));
        assert!(!r.insert(15, 16), "inside");
        assert!(!r.insert(5, 11), "across the start");
        assert!(!r.insert(39, 45), "across the end");
        assert!(!r.insert(0, 100), "around");
        assert!(!r.insert(10, 20), "the same again");
        assert!(!r.insert(7, 7), "empty");
        assert_eq!(r.prefix_end(10), 20);
        assert!(r.insert(20, 30), "the hole between");
        assert_eq!(r.prefix_end(10), 40);
        assert_eq!(r.0.len(), 1, "merged");
        assert!(r.insert(0, 10));
        assert_eq!((r.prefix_end(0), r.prefix_end(41)), (40, 41));
        r.remove(20, 30);
        assert_eq!(r.prefix_end(0), 20);
        assert!(r.insert(20, 30));
        assert_eq!(r.prefix_end(0), 40);
    }
}
