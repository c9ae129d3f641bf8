//! Sender and receiver loss lists (thesis §2.3.2.2) over a wrap-aware range set.
//!
//! Both lists store inclusive ranges of [`SeqNo`] in wrapping order, merged when they overlap or
//! touch, so a burst of 3,000 lost packets is one node. All live numbers of a connection lie
//! within a window far smaller than 2^30, which makes wrapping comparison consistent inside a
//! list; inserting numbers further apart than that is a caller bug.
//!
//! The receiver's list also keeps, per range, when it was last reported in a NAK and how many
//! times, so lost packets are re-reported after an increasing interval (thesis §2.2.3).

use std::time::Duration;

use crate::seq::SeqNo;
use crate::time::Instant;

/// The sender's loss list: sequence numbers to retransmit, first the oldest.
#[derive(Clone, Debug, Default)]
pub struct SendLossList {
    _todo: (),
}

impl SendLossList {
    /// An empty list.
    pub fn new() -> Self {
        todo!()
    }
    /// Add `start..=end` (start must not be after end); returns how many numbers were new.
    pub fn insert(&mut self, start: SeqNo, end: SeqNo) -> u32 {
        todo!()
    }
    /// Remove every number before `seq` (an ACK for `seq` arrived).
    pub fn remove_before(&mut self, seq: SeqNo) {
        todo!()
    }
    /// Remove `start..=end`.
    pub fn remove_range(&mut self, start: SeqNo, end: SeqNo) {
        todo!()
    }
    /// Remove and return the oldest number.
    pub fn pop_first(&mut self) -> Option<SeqNo> {
        todo!()
    }
    /// The oldest number.
    pub fn first(&self) -> Option<SeqNo> {
        todo!()
    }
    /// Whether `seq` is in the list.
    pub fn contains(&self, seq: SeqNo) -> bool {
        todo!()
    }
    /// Numbers in the list.
    pub fn len(&self) -> usize {
        todo!()
    }
    /// No numbers in the list.
    pub fn is_empty(&self) -> bool {
        todo!()
    }
    /// Ranges, oldest first.
    pub fn ranges(&self) -> impl Iterator<Item = (SeqNo, SeqNo)> + '_ {
        std::iter::empty()
    }
    /// Remove everything.
    pub fn clear(&mut self) {
        todo!()
    }
}

/// The receiver's loss list: sequence numbers detected missing, with NAK report bookkeeping.
#[derive(Clone, Debug, Default)]
pub struct RecvLossList {
    _todo: (),
}

impl RecvLossList {
    /// An empty list.
    pub fn new() -> Self {
        todo!()
    }
    /// Record `start..=end` as lost, reported once at `now` (the connection NAKs it at once).
    /// Usually appended after the last range; overlapping numbers keep their old bookkeeping.
    pub fn insert(&mut self, start: SeqNo, end: SeqNo, now: Instant) -> u32 {
        todo!()
    }
    /// `seq` arrived: remove it (splitting its range); true if it was in the list.
    pub fn remove(&mut self, seq: SeqNo) -> bool {
        todo!()
    }
    /// Remove `start..=end` (a message drop request covered it); returns how many were removed.
    pub fn remove_range(&mut self, start: SeqNo, end: SeqNo) -> u32 {
        todo!()
    }
    /// Remove every number before `seq`.
    pub fn remove_before(&mut self, seq: SeqNo) {
        todo!()
    }
    /// The oldest missing number.
    pub fn first(&self) -> Option<SeqNo> {
        todo!()
    }
    /// Whether `seq` is in the list.
    pub fn contains(&self, seq: SeqNo) -> bool {
        todo!()
    }
    /// Numbers in the list.
    pub fn len(&self) -> usize {
        todo!()
    }
    /// No numbers in the list.
    pub fn is_empty(&self) -> bool {
        todo!()
    }
    /// Ranges, oldest first.
    pub fn ranges(&self) -> impl Iterator<Item = (SeqNo, SeqNo)> + '_ {
        std::iter::empty()
    }
    /// Ranges due for a repeated report: a range reported `k` times, last at `t`, is due when
    /// `now >= t + k * interval`. Pushes due ranges (oldest first) into `out` until it holds
    /// `max_ranges`, and marks each pushed range as reported at `now` (k + 1).
    pub fn collect_due(
        &mut self,
        now: Instant,
        interval: Duration,
        max_ranges: usize,
        out: &mut Vec<(SeqNo, SeqNo)>,
    ) {
        todo!()
    }
}
