//! A set of integers kept as ranges: [`RangeSet`], after s2n-quic's `interval_set`.
//!
//! A receiver's record of what arrived is mostly long runs with a few holes, so the set stores
//! runs, not members: memory grows with the number of holes, never with the numbers a peer
//! names, and a set over `u64` can hold the whole domain.
//!
//! Invariants: the ranges are inclusive `start..=end`, sorted, disjoint and never touching (two
//! ranges with nothing between them are one range); `len` is the number of members, saturating
//! at `u64::MAX` (reached only by a `u64` set holding all 2^64 values). No operation panics,
//! whatever the values: ranges given with `start > end` are empty.

use std::collections::btree_map;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::iter::Peekable;
use std::ops::RangeInclusive;

/// An integer type a [`RangeSet`] can hold.
pub trait Bound: Copy + Ord + Debug {
    /// The value after `self`, if any.
    fn successor(self) -> Option<Self>;
    /// The value before `self`, if any.
    fn predecessor(self) -> Option<Self>;
    /// How many values `start..=end` holds (`start <= end`), saturating at `u64::MAX`.
    fn span(start: Self, end: Self) -> u64;
}

macro_rules! bound {
    ($($t:ty),*) => {$(
        impl Bound for $t {
            fn successor(self) -> Option<Self> {
                self.checked_add(1)
            }
            fn predecessor(self) -> Option<Self> {
                self.checked_sub(1)
            }
            fn span(start: Self, end: Self) -> u64 {
                u64::try_from(end.abs_diff(start)).unwrap_or(u64::MAX).saturating_add(1)
            }
        }
    )*};
}
bound!(u8, u16, u32, u64, usize);

/// A set of integers stored as disjoint ranges.
#[derive(Clone, PartialEq, Eq)]
pub struct RangeSet<T: Bound> {
    /// Start to inclusive end.
    ranges: BTreeMap<T, T>,
    len: u64,
}

impl<T: Bound> Default for RangeSet<T> {
    fn default() -> Self {
        RangeSet { ranges: BTreeMap::new(), len: 0 }
    }
}

impl<T: Bound> Debug for RangeSet<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.ranges()).finish()
    }
}

impl<T: Bound> RangeSet<T> {
    /// An empty set.
    pub fn new() -> Self {
        RangeSet::default()
    }

    /// The number of members (saturating at `u64::MAX`).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when the set has no member.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The number of disjoint ranges the members form.
    pub fn range_count(&self) -> usize {
        self.ranges.len()
    }

    /// Remove every member.
    pub fn clear(&mut self) {
        self.ranges.clear();
        self.len = 0;
    }

    /// The smallest member.
    pub fn min(&self) -> Option<T> {
        self.ranges.keys().next().copied()
    }

    /// The largest member.
    pub fn max(&self) -> Option<T> {
        self.ranges.values().next_back().copied()
    }

    /// True when `value` is a member.
    pub fn contains(&self, value: T) -> bool {
        self.covering(value).is_some()
    }

    /// True when every value of `range` is a member (an empty range is contained).
    pub fn contains_range(&self, range: RangeInclusive<T>) -> bool {
        let (start, end) = (*range.start(), *range.end());
        start > end || self.covering(start).is_some_and(|(_, e)| e >= end)
    }

    /// How many values of `range` are members.
    pub fn count_in(&self, range: RangeInclusive<T>) -> u64 {
        let (start, end) = (*range.start(), *range.end());
        if start > end {
            return 0;
        }
        let before = self.ranges.range(..start).next_back().filter(|(_, &e)| e >= start);
        before
            .into_iter()
            .chain(self.ranges.range(start..=end))
            .map(|(&s, &e)| T::span(s.max(start), e.min(end)))
            .fold(0u64, u64::saturating_add)
    }

    /// Add `value`; true when it was not a member.
    pub fn insert(&mut self, value: T) -> bool {
        self.insert_range(value..=value) == 1
    }

    /// Add every value of `range`; how many were not members.
    pub fn insert_range(&mut self, range: RangeInclusive<T>) -> u64 {
        let (start, end) = (*range.start(), *range.end());
        if start > end {
            return 0;
        }
        let added = T::span(start, end).saturating_sub(self.count_in(start..=end));
        if added == 0 {
            return 0;
        }
        let (mut lo, mut hi) = (start, end);
        // A range starting before `start` that overlaps it or ends right before it.
        if let Some((&s, &e)) = self.ranges.range(..start).next_back() {
            if e >= start || e.successor() == Some(start) {
                lo = s;
                hi = hi.max(e);
                self.ranges.remove(&s);
            }
        }
        // Ranges starting inside `range` or right after its end.
        loop {
            let next = match end.successor() {
                Some(after) => self.ranges.range(start..=after).next(),
                None => self.ranges.range(start..).next(),
            };
            let Some((&s, &e)) = next else { break };
            hi = hi.max(e);
            self.ranges.remove(&s);
        }
        self.ranges.insert(lo, hi);
        self.len = self.len.saturating_add(added);
        added
    }

    /// Remove `value`; true when it was a member.
    pub fn remove(&mut self, value: T) -> bool {
        self.remove_range(value..=value) == 1
    }

    /// Remove every value of `range`; how many were members.
    pub fn remove_range(&mut self, range: RangeInclusive<T>) -> u64 {
        let (start, end) = (*range.start(), *range.end());
        if start > end {
            return 0;
        }
        let removed = self.count_in(start..=end);
        if removed == 0 {
            return 0;
        }
        // A range starting before `start` keeps its part before it, and after `end`.
        if let Some((&s, &e)) = self.ranges.range(..start).next_back() {
            if e >= start {
                if let Some(before) = start.predecessor() {
                    self.ranges.insert(s, before);
                }
                if let Some(after) = end.successor().filter(|_| e > end) {
                    self.ranges.insert(after, e);
                }
            }
        }
        // Ranges starting inside `range` keep their part after `end`.
        let inside: Vec<(T, T)> = self.ranges.range(start..=end).map(|(&s, &e)| (s, e)).collect();
        for (s, e) in inside {
            self.ranges.remove(&s);
            if let Some(after) = end.successor().filter(|_| e > end) {
                self.ranges.insert(after, e);
            }
        }
        self.len = self.len.saturating_sub(removed);
        removed
    }

    /// The members as ranges, in ascending order.
    pub fn ranges(&self) -> impl DoubleEndedIterator<Item = RangeInclusive<T>> + '_ {
        self.ranges.iter().map(|(&s, &e)| s..=e)
    }

    /// The members within `window`, as ranges clipped to it, in ascending order.
    pub fn ranges_within(&self, window: RangeInclusive<T>) -> impl Iterator<Item = RangeInclusive<T>> + '_ {
        let (start, end) = (*window.start(), *window.end());
        let first = match self.covering(start) {
            Some((s, _)) if start <= end => s,
            _ => start,
        };
        let tail =
            if start <= end { self.ranges.range(first..=end) } else { self.ranges.range(start..start) };
        tail.map(move |(&s, &e)| s.max(start)..=e.min(end))
    }

    /// The values of `within` that are not members, as ranges in ascending order.
    pub fn gaps(&self, within: RangeInclusive<T>) -> Gaps<'_, T> {
        let (start, end) = (*within.start(), *within.end());
        let next = (start <= end).then_some(start);
        let first = self.ranges.range(..=start).next_back().map_or(start, |(&s, _)| s);
        Gaps { ranges: self.ranges.range(first..).peekable(), next, end }
    }

    /// The smallest value of `within` that is not a member.
    pub fn first_gap(&self, within: RangeInclusive<T>) -> Option<T> {
        self.gaps(within).next().map(|gap| *gap.start())
    }

    /// The range holding `value`, if it is a member.
    fn covering(&self, value: T) -> Option<(T, T)> {
        let (&s, &e) = self.ranges.range(..=value).next_back()?;
        (e >= value).then_some((s, e))
    }
}

impl<T: Bound> Extend<T> for RangeSet<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        for value in iter {
            self.insert(value);
        }
    }
}

impl<T: Bound> FromIterator<T> for RangeSet<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut set = RangeSet::new();
        set.extend(iter);
        set
    }
}

/// The iterator of [`RangeSet::gaps`].
pub struct Gaps<'a, T: Bound> {
    ranges: Peekable<btree_map::Range<'a, T, T>>,
    /// The next value that may start a gap; `None` once past the end.
    next: Option<T>,
    end: T,
}

impl<T: Bound> Iterator for Gaps<'_, T> {
    type Item = RangeInclusive<T>;

    fn next(&mut self) -> Option<RangeInclusive<T>> {
        loop {
            let from = self.next.filter(|&v| v <= self.end)?;
            match self.ranges.peek().map(|(&s, &e)| (s, e)) {
                // A range at or before `from`: skip what it covers.
                Some((s, e)) if s <= from => {
                    self.ranges.next();
                    if e >= from {
                        self.next = e.successor();
                    }
                }
                Some((s, e)) => {
                    self.ranges.next();
                    // `s > from`, so `s` has a predecessor.
                    let last = s.predecessor().unwrap_or(from).min(self.end);
                    self.next = if s > self.end { None } else { e.successor() };
                    return Some(from..=last);
                }
                None => {
                    self.next = None;
                    return Some(from..=self.end);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn ranges<T: Bound>(set: &RangeSet<T>) -> Vec<RangeInclusive<T>> {
        set.ranges().collect()
    }

    #[test]
    fn touching_ranges_merge_and_removal_splits() {
        let mut set = RangeSet::new();
        assert_eq!(set.insert_range(1u32..=3), 3);
        assert_eq!(set.insert_range(7..=8), 2);
        assert_eq!(set.insert_range(4..=4), 1);
        assert_eq!(ranges(&set), vec![1..=4, 7..=8]);
        assert_eq!(set.insert_range(0..=9), 4);
        assert_eq!((ranges(&set), set.len()), (vec![0..=9], 10));
        assert_eq!(set.remove_range(3..=5), 3);
        assert!(!set.remove(4));
        assert_eq!(ranges(&set), vec![0..=2, 6..=9]);
        assert_eq!(set.gaps(0..=12).collect::<Vec<_>>(), vec![3..=5, 10..=12]);
        assert_eq!((set.count_in(2..=7), set.first_gap(0..=9), set.len()), (3, Some(3), 7));
        assert!(set.contains_range(6..=9) && !set.contains_range(2..=6));
    }

    #[test]
    fn the_whole_domain_fits() {
        let mut set = RangeSet::new();
        assert_eq!(set.insert_range(0u8..=u8::MAX), 256);
        assert_eq!((set.range_count(), set.gaps(0..=u8::MAX).count()), (1, 0));
        assert!(set.remove(u8::MAX) && set.remove(0));
        assert_eq!(set.gaps(0..=u8::MAX).collect::<Vec<_>>(), vec![0..=0, 255..=255]);
        let mut all = RangeSet::new();
        all.insert_range(0u64..=u64::MAX);
        assert_eq!(all.len(), u64::MAX, "2^64 members saturate");
        assert!(all.contains(u64::MAX) && all.first_gap(0..=u64::MAX).is_none());
    }

    #[test]
    #[allow(clippy::reversed_empty_ranges)]
    fn reversed_ranges_are_empty() {
        let mut set: RangeSet<u32> = [5, 6].into_iter().collect();
        assert_eq!((set.insert_range(9..=2), set.remove_range(6..=5)), (0, 0));
        assert_eq!((set.count_in(6..=5), set.gaps(6..=5).count()), (0, 0));
        assert_eq!(set.ranges_within(6..=5).count(), 0);
        assert!(set.contains_range(9..=2));
        assert_eq!(format!("{set:?}"), "{5..=6}");
        assert_eq!((set.min(), set.max()), (Some(5), Some(6)));
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u16, u16),
        Remove(u16, u16),
    }

    fn op() -> impl Strategy<Value = Op> {
        // Small values, so ranges meet, touch and overlap often; u16 near its end for the edge.
        let value = prop_oneof![0u16..80, (u16::MAX - 8)..=u16::MAX];
        (any::<bool>(), value.clone(), 0u16..12).prop_map(|(insert, start, width)| {
            let end = start.saturating_add(width);
            if insert {
                Op::Insert(start, end)
            } else {
                Op::Remove(start, end)
            }
        })
    }

    proptest! {
        #[test]
        fn behaves_like_a_btree_set(ops in proptest::collection::vec(op(), 0..60), probe in 0u16..100) {
            let mut set = RangeSet::new();
            let mut model = BTreeSet::new();
            for op in ops {
                match op {
                    Op::Insert(s, e) => {
                        let added = (s..=e).filter(|&v| model.insert(v)).count() as u64;
                        prop_assert_eq!(set.insert_range(s..=e), added);
                    }
                    Op::Remove(s, e) => {
                        let removed = (s..=e).filter(|v| model.remove(v)).count() as u64;
                        prop_assert_eq!(set.remove_range(s..=e), removed);
                    }
                }
                prop_assert_eq!(set.len(), model.len() as u64);
            }
            // Members, ranges (disjoint and not touching), gaps, counts and membership.
            let members: Vec<u16> = set.ranges().flatten().collect();
            prop_assert_eq!(&members, &model.iter().copied().collect::<Vec<_>>());
            for pair in ranges(&set).windows(2) {
                prop_assert!(pair[0].end().saturating_add(1) < *pair[1].start());
            }
            let window = probe..=probe.saturating_add(40);
            let gaps: Vec<u16> = set.gaps(window.clone()).flatten().collect();
            let absent: Vec<u16> = window.clone().filter(|v| !model.contains(v)).collect();
            prop_assert_eq!(set.first_gap(window.clone()), absent.first().copied());
            prop_assert_eq!(gaps, absent);
            prop_assert_eq!(set.count_in(window.clone()), window.clone().filter(|v| model.contains(v)).count() as u64);
            prop_assert_eq!(set.contains_range(window.clone()), window.clone().all(|v| model.contains(&v)));
            prop_assert_eq!(set.contains(probe), model.contains(&probe));
            let within: Vec<u16> = set.ranges_within(window.clone()).flatten().collect();
            prop_assert_eq!(within, window.clone().filter(|v| model.contains(v)).collect::<Vec<_>>());
            prop_assert_eq!((set.min(), set.max()), (model.first().copied(), model.last().copied()));
        }

        #[test]
        fn single_inserts_and_removes_match(values in proptest::collection::vec((any::<bool>(), 0u32..64), 0..200)) {
            let mut set = RangeSet::new();
            let mut model = BTreeSet::new();
            for (insert, v) in values {
                if insert {
                    prop_assert_eq!(set.insert(v), model.insert(v));
                } else {
                    prop_assert_eq!(set.remove(v), model.remove(&v));
                }
            }
            prop_assert_eq!(set.ranges().flatten().collect::<Vec<_>>(), model.into_iter().collect::<Vec<_>>());
        }
    }
}
