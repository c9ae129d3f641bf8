//! Sender and receiver loss lists (thesis §2.3.2.2) over a wrap-aware range set.
//!
//! Both lists store inclusive ranges of [`SeqNo`] in wrapping order, merged when they overlap or
//! touch, so a burst of 3,000 lost packets is one node. All live numbers of a connection lie
//! within a window far smaller than 2^30, which makes wrapping comparison consistent inside a
//! list; inserting numbers further apart than that is a caller bug (the lists then give
//! meaningless answers, but never panic).
//!
//! Layout: the ranges live in a `VecDeque`, oldest first. Positions are found by binary search on
//! the signed distance ([`SeqNo::diff`]) from the front range's start, so the order is correct
//! across the wrap from `0x7FFF_FFFF` to 0. Appending after the last range, the common case on
//! both sides, is O(1); other inserts and removals are O(log n) plus the cost of shifting the
//! shorter side of the deque (a receiver insert overlapping ranges with other bookkeeping, which
//! the connection does not normally do, rebuilds the tail of the list). The number of sequence
//! numbers held is kept in a counter, so `len` is O(1). This replaces the static linked list of UDT4 (thesis Figure 2-8) with the same
//! one-node-per-loss-event idea.
//!
//! The receiver's list also keeps, per range, when it was last reported in a NAK and how many
//! times, so lost packets are re-reported after an increasing interval (thesis §2.2.3). Ranges
//! with different bookkeeping are kept as separate (possibly adjacent) nodes; splitting a range
//! copies its bookkeeping to both halves.

use std::collections::VecDeque;
use std::time::Duration;

use crate::seq::SeqNo;
use crate::time::Instant;

/// One inclusive range with a per-range tag (`()` for the sender, report bookkeeping for the
/// receiver).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Node<T> {
    start: SeqNo,
    end: SeqNo,
    tag: T,
}

impl<T> Node<T> {
    fn len(&self) -> u32 {
        self.start.len_to(self.end)
    }
}

/// Disjoint inclusive ranges in wrapping order; adjacent ranges with equal tags are merged.
#[derive(Clone, Debug)]
struct RangeSet<T> {
    nodes: VecDeque<Node<T>>,
    /// Sequence numbers held (sum of the node lengths).
    count: usize,
}

impl<T> Default for RangeSet<T> {
    fn default() -> Self {
        RangeSet { nodes: VecDeque::new(), count: 0 }
    }
}

impl<T: Copy + PartialEq> RangeSet<T> {
    /// Signed distance of `s` from the front range's start (the search key).
    fn key(base: SeqNo, s: SeqNo) -> i64 {
        i64::from(s.diff(base))
    }

    /// Index of the first node whose end is at or after offset `k` from `base`.
    fn first_ending_from(&self, base: SeqNo, k: i64) -> usize {
        self.nodes.partition_point(|n| Self::key(base, n.end) < k)
    }

    /// Index of the first node whose start is after offset `k` from `base`.
    fn first_starting_after(&self, base: SeqNo, k: i64) -> usize {
        self.nodes.partition_point(|n| Self::key(base, n.start) <= k)
    }

    /// Append `node` after the last one, merging when it touches it with an equal tag.
    fn push_merge(&mut self, node: Node<T>) {
        if let Some(back) = self.nodes.back_mut() {
            if back.tag == node.tag && back.end.next() == node.start {
                back.end = node.end;
                return;
            }
        }
        self.nodes.push_back(node);
    }

    /// Add `start..=end` tagged `tag`; numbers already present keep their tag. Returns how many
    /// numbers were new.
    // thesis §2.3.2.2, Figure 2-9: insert with merging of overlapping and continuous nodes.
    fn insert(&mut self, start: SeqNo, end: SeqNo, tag: T) -> u32 {
        if end.is_before(start) {
            return 0;
        }
        let new_len = start.len_to(end);
        let (base, back_end) = match (self.nodes.front(), self.nodes.back()) {
            (Some(f), Some(b)) => (f.start, b.end),
            _ => {
                self.nodes.push_back(Node { start, end, tag });
                self.count = self.count.saturating_add(new_len as usize);
                return new_len;
            }
        };
        // The common case: after everything in the list.
        if start.is_after(back_end) {
            self.push_merge(Node { start, end, tag });
            self.count = self.count.saturating_add(new_len as usize);
            return new_len;
        }
        let ks = Self::key(base, start);
        let ke = Self::key(base, end);
        // Nodes lo..hi overlap or touch start..=end.
        let lo = self.first_ending_from(base, ks - 1);
        let hi = self.first_starting_after(base, ke + 1);
        if lo >= hi {
            self.nodes.insert(lo, Node { start, end, tag });
            self.count = self.count.saturating_add(new_len as usize);
            return new_len;
        }
        let same_tag = self.nodes.range(lo..hi).all(|n| n.tag == tag);
        if same_tag {
            let first = self.nodes[lo].start;
            let last = self.nodes[hi - 1].end;
            let existing: u64 = self.nodes.range(lo..hi).map(|n| u64::from(n.len())).sum();
            let merged = Node { start: start.min_wrapping(first), end: end.max_wrapping(last), tag };
            let added = u64::from(merged.len()).saturating_sub(existing);
            self.nodes[lo] = merged;
            self.nodes.drain(lo + 1..hi);
            self.count = self.count.saturating_add(added as usize);
            return u32::try_from(added).unwrap_or(u32::MAX);
        }
        // Mixed tags (receiver only, rare): rebuild the touched part, filling the gaps between
        // the old nodes with new nodes tagged `tag`.
        let mut rest = self.nodes.split_off(lo);
        let mut cursor = start;
        let mut added: u32 = 0;
        for _ in lo..hi {
            let Some(n) = rest.pop_front() else { break };
            if cursor.is_before(n.start) && !end.is_before(cursor) {
                let gap_end = end.min_wrapping(n.start.prev());
                self.push_merge(Node { start: cursor, end: gap_end, tag });
                added = added.saturating_add(cursor.len_to(gap_end));
            }
            self.push_merge(n);
            cursor = cursor.max_wrapping(n.end.next());
        }
        if !end.is_before(cursor) {
            self.push_merge(Node { start: cursor, end, tag });
            added = added.saturating_add(cursor.len_to(end));
        }
        if let Some(n) = rest.pop_front() {
            self.push_merge(n);
        }
        self.nodes.append(&mut rest);
        self.count = self.count.saturating_add(added as usize);
        added
    }

    /// Remove `start..=end`; returns how many numbers were removed.
    fn remove_range(&mut self, start: SeqNo, end: SeqNo) -> u32 {
        if end.is_before(start) {
            return 0;
        }
        let Some(base) = self.nodes.front().map(|f| f.start) else {
            return 0;
        };
        let lo = self.first_ending_from(base, Self::key(base, start));
        let hi = self.first_starting_after(base, Self::key(base, end));
        if lo >= hi {
            return 0;
        }
        let mut removed: u32 = 0;
        let (mut a, mut b) = (lo, hi);
        let first = self.nodes[lo];
        if first.start.is_before(start) {
            if first.end.is_after(end) {
                // Split one node in two; both halves keep the tag.
                self.nodes[lo].end = start.prev();
                self.nodes.insert(lo + 1, Node { start: end.next(), end: first.end, tag: first.tag });
                let n = start.len_to(end);
                self.count = self.count.saturating_sub(n as usize);
                return n;
            }
            removed = removed.saturating_add(start.len_to(first.end));
            self.nodes[lo].end = start.prev();
            a = lo + 1;
        }
        if b > a {
            let last = self.nodes[b - 1];
            if last.end.is_after(end) {
                removed = removed.saturating_add(last.start.len_to(end));
                self.nodes[b - 1].start = end.next();
                b -= 1;
            }
        }
        if b > a {
            for n in self.nodes.drain(a..b) {
                removed = removed.saturating_add(n.len());
            }
        }
        self.count = self.count.saturating_sub(removed as usize);
        removed
    }

    /// Remove every number before `seq`.
    fn remove_before(&mut self, seq: SeqNo) {
        while let Some(front) = self.nodes.front_mut() {
            if front.end.is_before(seq) {
                let n = front.len();
                self.nodes.pop_front();
                self.count = self.count.saturating_sub(n as usize);
            } else {
                if front.start.is_before(seq) {
                    let n = front.start.len_to(seq.prev());
                    front.start = seq;
                    self.count = self.count.saturating_sub(n as usize);
                }
                break;
            }
        }
    }

    fn pop_first(&mut self) -> Option<SeqNo> {
        let front = self.nodes.front_mut()?;
        let s = front.start;
        if front.start == front.end {
            self.nodes.pop_front();
        } else {
            front.start = s.next();
        }
        self.count = self.count.saturating_sub(1);
        Some(s)
    }

    fn first(&self) -> Option<SeqNo> {
        self.nodes.front().map(|n| n.start)
    }

    fn contains(&self, seq: SeqNo) -> bool {
        let Some(base) = self.nodes.front().map(|f| f.start) else {
            return false;
        };
        let k = Self::key(base, seq);
        let i = self.first_ending_from(base, k);
        self.nodes.get(i).is_some_and(|n| Self::key(base, n.start) <= k)
    }

    fn ranges(&self) -> impl Iterator<Item = (SeqNo, SeqNo)> + '_ {
        self.nodes.iter().map(|n| (n.start, n.end))
    }

    fn clear(&mut self) {
        self.nodes.clear();
        self.count = 0;
    }
}

/// The sender's loss list: sequence numbers to retransmit, first the oldest.
///
/// Overlapping and adjacent ranges are always merged into one node.
#[derive(Clone, Debug, Default)]
pub struct SendLossList {
    set: RangeSet<()>,
}

impl SendLossList {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }
    /// Add `start..=end` (start must not be after end); returns how many numbers were new.
    pub fn insert(&mut self, start: SeqNo, end: SeqNo) -> u32 {
        self.set.insert(start, end, ())
    }
    /// Remove every number before `seq` (an ACK for `seq` arrived).
    pub fn remove_before(&mut self, seq: SeqNo) {
        self.set.remove_before(seq);
    }
    /// Remove `start..=end`.
    pub fn remove_range(&mut self, start: SeqNo, end: SeqNo) {
        self.set.remove_range(start, end);
    }
    /// Remove and return the oldest number.
    pub fn pop_first(&mut self) -> Option<SeqNo> {
        self.set.pop_first()
    }
    /// The oldest number.
    pub fn first(&self) -> Option<SeqNo> {
        self.set.first()
    }
    /// Whether `seq` is in the list.
    pub fn contains(&self, seq: SeqNo) -> bool {
        self.set.contains(seq)
    }
    /// Numbers in the list.
    pub fn len(&self) -> usize {
        self.set.count
    }
    /// No numbers in the list.
    pub fn is_empty(&self) -> bool {
        self.set.nodes.is_empty()
    }
    /// Ranges, oldest first.
    pub fn ranges(&self) -> impl Iterator<Item = (SeqNo, SeqNo)> + '_ {
        self.set.ranges()
    }
    /// Remove everything.
    pub fn clear(&mut self) {
        self.set.clear();
    }
}

/// NAK bookkeeping of one receiver range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Report {
    /// When the range was last reported.
    last: Instant,
    /// How many times it was reported.
    count: u32,
}

/// When a receiver reports an unrepaired loss again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rereport {
    /// After `k` intervals, `k` the times it was reported (thesis §2.2.3): a sender that cannot
    /// keep up with its retransmissions is not asked for the same packets faster than it
    /// answers.
    Growing,
    /// After one interval every time: a NAK or its retransmission lost on a lossy link is
    /// repaired one interval later, not `k` (asked for by a sender that resends a packet at
    /// most once per round trip, so a repeated report never duplicates a retransmission in
    /// flight: `Policy::steady_loss_reports`).
    Steady,
}

/// The receiver's loss list: sequence numbers detected missing, with NAK report bookkeeping.
///
/// Adjacent ranges are merged only when their bookkeeping is equal.
#[derive(Clone, Debug, Default)]
pub struct RecvLossList {
    set: RangeSet<Report>,
}

impl RecvLossList {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }
    /// Record `start..=end` as lost, reported once at `now` (the connection NAKs it at once).
    /// Usually appended after the last range; overlapping numbers keep their old bookkeeping.
    /// Returns how many numbers were new (0 when `start` is after `end`).
    pub fn insert(&mut self, start: SeqNo, end: SeqNo, now: Instant) -> u32 {
        self.set.insert(start, end, Report { last: now, count: 1 })
    }
    /// `seq` arrived: remove it (splitting its range); true if it was in the list.
    pub fn remove(&mut self, seq: SeqNo) -> bool {
        self.set.remove_range(seq, seq) == 1
    }
    /// Remove `start..=end` (a message drop request covered it); returns how many were removed.
    pub fn remove_range(&mut self, start: SeqNo, end: SeqNo) -> u32 {
        self.set.remove_range(start, end)
    }
    /// Remove every number before `seq`.
    pub fn remove_before(&mut self, seq: SeqNo) {
        self.set.remove_before(seq);
    }
    /// The oldest missing number.
    pub fn first(&self) -> Option<SeqNo> {
        self.set.first()
    }
    /// Whether `seq` is in the list.
    pub fn contains(&self, seq: SeqNo) -> bool {
        self.set.contains(seq)
    }
    /// Numbers in the list.
    pub fn len(&self) -> usize {
        self.set.count
    }
    /// No numbers in the list.
    pub fn is_empty(&self) -> bool {
        self.set.nodes.is_empty()
    }
    /// Ranges, oldest first. Adjacent ranges may appear separately when their report
    /// bookkeeping differs.
    pub fn ranges(&self) -> impl Iterator<Item = (SeqNo, SeqNo)> + '_ {
        self.set.ranges()
    }
    /// Ranges due for a repeated report: a range reported `k` times, last at `t`, is due when
    /// `now >= t + k * interval` ([`Rereport::Growing`]) or `now >= t + interval`
    /// ([`Rereport::Steady`]). Pushes due ranges (oldest first) into `out` until it holds
    /// `max_ranges`, and marks each pushed range as reported at `now` (k + 1).
    ///
    /// A due range adjacent to a range with the same resulting bookkeeping is merged with it in
    /// the list; when that neighbour was pushed by this call, the entry in `out` is extended
    /// instead of using another one.
    pub fn collect_due(
        &mut self,
        now: Instant,
        interval: Duration,
        schedule: Rereport,
        max_ranges: usize,
        out: &mut Vec<(SeqNo, SeqNo)>,
    ) {
        let nodes = &mut self.set.nodes;
        let mut i = 0;
        let mut prev_pushed = false;
        while i < nodes.len() {
            let n = nodes[i];
            let times = match schedule {
                Rereport::Growing => n.tag.count,
                Rereport::Steady => 1,
            };
            let wait = interval.checked_mul(times).unwrap_or(Duration::MAX);
            if now < n.tag.last + wait {
                prev_pushed = false;
                i += 1;
                continue;
            }
            let tag = Report { last: now, count: n.tag.count.saturating_add(1) };
            let joins_prev = i > 0 && nodes[i - 1].tag == tag && nodes[i - 1].end.next() == n.start;
            if joins_prev && prev_pushed {
                // Continues the range just pushed: extend it rather than use another entry.
                if let Some(last) = out.last_mut() {
                    last.1 = n.end;
                }
            } else {
                if out.len() >= max_ranges {
                    break;
                }
                out.push((n.start, n.end));
            }
            prev_pushed = true;
            if joins_prev {
                nodes[i - 1].end = n.end;
                nodes.remove(i);
                if nodes.get(i).is_some_and(|next| next.tag == tag && n.end.next() == next.start) {
                    // The next range was reported at this same moment already, as below.
                    nodes[i - 1].end = nodes[i].end;
                    nodes.remove(i);
                    prev_pushed = false;
                }
            } else {
                nodes[i].tag = tag;
                if nodes.get(i + 1).is_some_and(|next| next.tag == tag && n.end.next() == next.start) {
                    // The next range was reported at this same moment already (an earlier call
                    // with the same `now`): one range now. It is not due again, so a due range
                    // after it starts a report of its own.
                    nodes[i].end = nodes[i + 1].end;
                    nodes.remove(i + 1);
                    prev_pushed = false;
                }
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: u32) -> SeqNo {
        SeqNo::new(v)
    }

    fn ranges(l: &SendLossList) -> Vec<(u32, u32)> {
        l.ranges().map(|(a, b)| (a.value(), b.value())).collect()
    }

    fn rranges(l: &RecvLossList) -> Vec<(u32, u32)> {
        l.ranges().map(|(a, b)| (a.value(), b.value())).collect()
    }

    const T0: Instant = Instant::from_micros(1_000_000);

    #[test]
    fn send_merges_overlapping_and_adjacent() {
        let mut l = SendLossList::new();
        assert!(l.is_empty());
        assert_eq!(l.insert(s(10), s(12)), 3);
        assert_eq!(l.insert(s(20), s(22)), 3);
        assert_eq!(l.insert(s(13), s(14)), 2); // touches 10..=12
        assert_eq!(ranges(&l), vec![(10, 14), (20, 22)]);
        assert_eq!(l.insert(s(15), s(19)), 5); // fills the gap
        assert_eq!(ranges(&l), vec![(10, 22)]);
        assert_eq!(l.insert(s(5), s(30)), 26 - 13);
        assert_eq!(ranges(&l), vec![(5, 30)]);
        assert_eq!(l.len(), 26);
        assert_eq!(l.insert(s(7), s(9)), 0);
        assert_eq!(l.insert(s(1), s(2)), 2); // before the front
        assert_eq!(ranges(&l), vec![(1, 2), (5, 30)]);
        assert_eq!(l.insert(s(9), s(3)), 0); // start after end: ignored
        assert_eq!(l.len(), 28);
        assert_eq!(l.first(), Some(s(1)));
    }

    #[test]
    fn send_insert_spanning_many_nodes() {
        let mut l = SendLossList::new();
        for i in 0..10 {
            l.insert(s(i * 10), s(i * 10 + 2));
        }
        assert_eq!(l.len(), 30);
        assert_eq!(l.insert(s(5), s(63)), 59 - 18);
        assert_eq!(ranges(&l), vec![(0, 2), (5, 63), (70, 72), (80, 82), (90, 92)]);
        assert_eq!(l.len(), 2 + 1 + 59 + 9);
    }

    #[test]
    fn send_remove_and_split() {
        let mut l = SendLossList::new();
        l.insert(s(10), s(20));
        l.remove_range(s(13), s(15));
        assert_eq!(ranges(&l), vec![(10, 12), (16, 20)]);
        assert_eq!(l.len(), 8);
        assert!(!l.contains(s(14)));
        assert!(l.contains(s(16)));
        l.remove_range(s(0), s(10));
        assert_eq!(ranges(&l), vec![(11, 12), (16, 20)]);
        l.remove_range(s(12), s(17));
        assert_eq!(ranges(&l), vec![(11, 11), (18, 20)]);
        l.remove_before(s(19));
        assert_eq!(ranges(&l), vec![(19, 20)]);
        assert_eq!(l.pop_first(), Some(s(19)));
        assert_eq!(l.pop_first(), Some(s(20)));
        assert_eq!(l.pop_first(), None);
        assert!(l.is_empty());
        assert_eq!(l.len(), 0);
    }

    #[test]
    fn send_wraps_across_zero() {
        let mut l = SendLossList::new();
        let max = 0x7FFF_FFFF;
        assert_eq!(l.insert(s(max - 2), s(1)), 5);
        assert_eq!(ranges(&l), vec![(max - 2, 1)]);
        assert!(l.contains(s(max)));
        assert!(l.contains(s(0)));
        assert!(!l.contains(s(2)));
        assert_eq!(l.insert(s(2), s(3)), 2);
        assert_eq!(l.insert(s(max - 10), s(max - 5)), 6);
        assert_eq!(ranges(&l), vec![(max - 10, max - 5), (max - 2, 3)]);
        l.remove_range(s(max), s(0));
        assert_eq!(ranges(&l), vec![(max - 10, max - 5), (max - 2, max - 1), (1, 3)]);
        l.remove_before(s(max - 1));
        assert_eq!(ranges(&l), vec![(max - 1, max - 1), (1, 3)]);
        assert_eq!(l.len(), 4);
        assert_eq!(l.pop_first(), Some(s(max - 1)));
        assert_eq!(l.first(), Some(s(1)));
    }

    #[test]
    fn recv_keeps_bookkeeping_per_range() {
        let mut l = RecvLossList::new();
        assert_eq!(l.insert(s(10), s(19), T0), 10);
        let t1 = T0 + Duration::from_millis(5);
        // 15..=25 overlaps: 20..=25 are new with (t1, 1); 10..=19 keep (T0, 1).
        assert_eq!(l.insert(s(15), s(25), t1), 6);
        assert_eq!(rranges(&l), vec![(10, 19), (20, 25)]);
        assert_eq!(l.len(), 16);
        let mut out = Vec::new();
        let interval = Duration::from_millis(10);
        l.collect_due(T0 + interval, interval, Rereport::Growing, 10, &mut out);
        assert_eq!(out, vec![(s(10), s(19))]);
        // Filling a gap between differently tagged ranges makes three nodes.
        let mut l = RecvLossList::new();
        l.insert(s(10), s(12), T0);
        l.insert(s(20), s(22), T0);
        assert_eq!(l.insert(s(5), s(30), t1), 26 - 6);
        assert_eq!(rranges(&l), vec![(5, 9), (10, 12), (13, 19), (20, 22), (23, 30)]);
        assert_eq!(l.len(), 26);
        out.clear();
        l.collect_due(T0 + interval, interval, Rereport::Growing, 10, &mut out);
        assert_eq!(out, vec![(s(10), s(12)), (s(20), s(22))]);
    }

    #[test]
    fn recv_remove_splits_and_keeps_bookkeeping() {
        let mut l = RecvLossList::new();
        l.insert(s(100), s(110), T0);
        assert!(l.remove(s(105)));
        assert!(!l.remove(s(105)));
        assert!(!l.remove(s(99)));
        assert_eq!(rranges(&l), vec![(100, 104), (106, 110)]);
        let interval = Duration::from_millis(10);
        let mut out = Vec::new();
        l.collect_due(T0 + interval - Duration::from_micros(1), interval, Rereport::Growing, 10, &mut out);
        assert!(out.is_empty());
        l.collect_due(T0 + interval, interval, Rereport::Growing, 10, &mut out);
        assert_eq!(out, vec![(s(100), s(104)), (s(106), s(110))]);
        assert_eq!(l.remove_range(s(103), s(107)), 4);
        assert_eq!(rranges(&l), vec![(100, 102), (108, 110)]);
        l.remove_before(s(101));
        assert_eq!(rranges(&l), vec![(101, 102), (108, 110)]);
        assert_eq!(l.first(), Some(s(101)));
        assert_eq!(l.len(), 5);
    }

    #[test]
    fn collect_due_interval_grows_with_count() {
        let mut l = RecvLossList::new();
        let iv = Duration::from_millis(10);
        l.insert(s(1), s(1), T0);
        let mut out = Vec::new();
        let mut t = T0;
        // Reported once at T0; due again at T0 + 1*iv, then +2*iv, then +3*iv.
        for k in 1..=4u32 {
            let due = t + iv * k;
            l.collect_due(due - Duration::from_micros(1), iv, Rereport::Growing, 8, &mut out);
            assert!(out.is_empty(), "k = {k}");
            l.collect_due(due, iv, Rereport::Growing, 8, &mut out);
            assert_eq!(out, vec![(s(1), s(1))], "k = {k}");
            out.clear();
            t = due;
        }
    }

    #[test]
    fn steady_rereports_come_every_interval() {
        let mut l = RecvLossList::new();
        let iv = Duration::from_millis(10);
        l.insert(s(1), s(1), T0);
        let mut out = Vec::new();
        for k in 1..=4u32 {
            let due = T0 + iv * k;
            l.collect_due(due - Duration::from_micros(1), iv, Rereport::Steady, 8, &mut out);
            assert!(out.is_empty(), "k = {k}");
            l.collect_due(due, iv, Rereport::Steady, 8, &mut out);
            assert_eq!(out, vec![(s(1), s(1))], "k = {k}");
            out.clear();
        }
    }

    #[test]
    fn collect_due_respects_max_and_order() {
        let mut l = RecvLossList::new();
        let iv = Duration::from_millis(10);
        for i in 0..5 {
            l.insert(s(i * 10), s(i * 10 + 1), T0);
        }
        let mut out = vec![(s(999), s(999))];
        l.collect_due(T0 + iv, iv, Rereport::Growing, 3, &mut out);
        assert_eq!(out, vec![(s(999), s(999)), (s(0), s(1)), (s(10), s(11))]);
        out.clear();
        // The first two are now at k = 2 (due at T0 + 3 iv); the rest still at k = 1.
        l.collect_due(T0 + iv, iv, Rereport::Growing, 10, &mut out);
        assert_eq!(out, vec![(s(20), s(21)), (s(30), s(31)), (s(40), s(41))]);
        out.clear();
        l.collect_due(T0 + iv * 2, iv, Rereport::Growing, 10, &mut out);
        assert!(out.is_empty());
        // A huge interval never overflows.
        l.collect_due(T0, Duration::MAX, Rereport::Growing, 10, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn collect_due_merges_adjacent_ranges_with_equal_bookkeeping() {
        let mut l = RecvLossList::new();
        let iv = Duration::from_millis(10);
        l.insert(s(1), s(5), T0);
        l.insert(s(3), s(8), T0 + iv); // 6..=8 new, different bookkeeping
        assert_eq!(rranges(&l), vec![(1, 5), (6, 8)]);
        let mut out = Vec::new();
        l.collect_due(T0 + iv, iv, Rereport::Growing, 10, &mut out);
        assert_eq!(out, vec![(s(1), s(5))]);
        // Now both are (T0 + iv, 2) vs (T0 + iv, 1): still separate.
        out.clear();
        l.collect_due(T0 + iv * 2, iv, Rereport::Growing, 10, &mut out);
        assert_eq!(out, vec![(s(6), s(8))]);
        assert_eq!(rranges(&l), vec![(1, 5), (6, 8)]);
        // Both at count 2 last T0+iv and T0+2iv: due at T0+3iv and T0+4iv.
        out.clear();
        l.collect_due(T0 + iv * 4, iv, Rereport::Growing, 1, &mut out);
        assert_eq!(out, vec![(s(1), s(8))]);
        assert_eq!(rranges(&l), vec![(1, 8)]);
        assert_eq!(l.len(), 8);
    }

    /// A due range that joins the one before it, when the one after it was reported at this
    /// same moment by an earlier call, makes one range of all three.
    #[test]
    fn a_range_joining_both_neighbours_merges_all_three() {
        let mut l = RecvLossList::new();
        let iv = Duration::from_millis(10);
        let t = T0 + iv * 10;
        l.insert(s(1), s(3), T0);
        l.insert(s(5), s(6), T0);
        // 1..=3 and 5..=6 reported at t (the steady schedule, max 1 range per call: two calls).
        let (mut out, mut more) = (Vec::new(), Vec::new());
        l.collect_due(t, iv, Rereport::Steady, 1, &mut out);
        l.collect_due(t, iv, Rereport::Steady, 1, &mut more);
        assert_eq!((out.as_slice(), more.as_slice()), (&[(s(1), s(3))][..], &[(s(5), s(6))][..]));
        // 4 arrives missing later with a history that makes it due at t with the same count.
        l.insert(s(4), s(4), t - iv);
        out.clear();
        l.collect_due(t, iv, Rereport::Steady, 8, &mut out);
        assert_eq!(out, vec![(s(4), s(4))]);
        assert_eq!(rranges(&l), vec![(1, 6)]);
        assert_eq!(l.len(), 6);
    }

    #[test]
    fn recv_wraps_across_zero() {
        let mut l = RecvLossList::new();
        let max = 0x7FFF_FFFF;
        l.insert(s(max - 1), s(max), T0);
        l.insert(s(0), s(2), T0);
        assert_eq!(rranges(&l), vec![(max - 1, 2)]);
        assert!(l.remove(s(0)));
        assert_eq!(rranges(&l), vec![(max - 1, max), (1, 2)]);
        l.remove_before(s(2));
        assert_eq!(rranges(&l), vec![(2, 2)]);
        assert_eq!(l.len(), 1);
    }
}
