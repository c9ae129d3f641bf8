//! Wrapping sequence arithmetic (protocol notes §2; UDT4 `CSeqNo`, `CAckNo`, `CMsgNo`).
//!
//! * [`SeqNo`]: 31-bit data packet sequence numbers, wrapping from `0x7FFF_FFFF` to 0.
//! * [`MsgNo`]: 29-bit message numbers, wrapping from `2^29 - 1` to 1 (0 is never used).
//! * [`AckNo`]: 31-bit ACK sub-sequence numbers, wrapping from `0x7FFF_FFFF` to 0.
//!
//! None of these types implements `Ord`: wrapping order is only meaningful between values less
//! than half the space apart, so comparisons go through [`SeqNo::diff`] and the named helpers.
//! Invariant: the stored value is always within the type's bit width.

use std::fmt;

/// Largest sequence number value (31 bits).
pub const SEQ_MAX: u32 = 0x7FFF_FFFF;
/// Comparison threshold: values closer than this compare by difference (UDT4 `m_iSeqNoTH`).
const SEQ_THRESHOLD: u32 = 0x3FFF_FFFF;
const SEQ_SPACE: i64 = 1 << 31;

/// A 31-bit data packet sequence number.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SeqNo(u32);

impl SeqNo {
    /// Sequence number `v`, masked to 31 bits.
    pub const fn new(v: u32) -> Self {
        SeqNo(v & SEQ_MAX)
    }

    /// The raw 31-bit value.
    pub const fn value(self) -> u32 {
        self.0
    }

    /// Signed distance `self - other`, in `(-2^30, 2^30]` for numbers closer than the threshold
    /// (UDT4 `CSeqNo::seqoff(other, self)`).
    pub fn diff(self, other: SeqNo) -> i32 {
        let d = self.0 as i64 - other.0 as i64;
        let d = if d.unsigned_abs() < SEQ_THRESHOLD as u64 {
            d
        } else if d < 0 {
            d + SEQ_SPACE
        } else {
            d - SEQ_SPACE
        };
        d as i32
    }

    /// Wrapping comparison (UDT4 `CSeqNo::seqcmp`).
    pub fn cmp_wrapping(self, other: SeqNo) -> std::cmp::Ordering {
        self.diff(other).cmp(&0)
    }

    /// `self` comes strictly before `other`.
    pub fn is_before(self, other: SeqNo) -> bool {
        self.diff(other) < 0
    }

    /// `self` comes strictly after `other`.
    pub fn is_after(self, other: SeqNo) -> bool {
        self.diff(other) > 0
    }

    /// The later of two numbers in wrapping order.
    pub fn max_wrapping(self, other: SeqNo) -> SeqNo {
        if self.is_before(other) {
            other
        } else {
            self
        }
    }

    /// The earlier of two numbers in wrapping order.
    pub fn min_wrapping(self, other: SeqNo) -> SeqNo {
        if other.is_before(self) {
            other
        } else {
            self
        }
    }

    /// `self + n`, wrapping (n may be negative). A method rather than `impl Add<i32>` on
    /// purpose: an operator would make mixing raw integers into wrapping arithmetic look natural.
    #[allow(clippy::should_implement_trait)]
    pub fn add(self, n: i32) -> SeqNo {
        SeqNo(((self.0 as i64 + n as i64).rem_euclid(SEQ_SPACE)) as u32)
    }

    /// The next sequence number.
    pub fn next(self) -> SeqNo {
        self.add(1)
    }

    /// The previous sequence number.
    pub fn prev(self) -> SeqNo {
        self.add(-1)
    }

    /// Number of sequence numbers from `self` to `end` inclusive (UDT4 `CSeqNo::seqlen`);
    /// zero when `end` is before `self`.
    pub fn len_to(self, end: SeqNo) -> u32 {
        let d = end.diff(self);
        if d < 0 {
            0
        } else {
            d as u32 + 1
        }
    }
}

impl fmt::Debug for SeqNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

impl fmt::Display for SeqNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Largest message number value (29 bits).
pub const MSG_MAX: u32 = 0x1FFF_FFFF;
const MSG_THRESHOLD: u32 = 0x0FFF_FFFF;

/// A 29-bit message number; 0 is never used on the wire by a sender.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct MsgNo(u32);

impl MsgNo {
    /// The first message number of a connection.
    pub const FIRST: MsgNo = MsgNo(1);

    /// Message number `v`, masked to 29 bits.
    pub const fn new(v: u32) -> Self {
        MsgNo(v & MSG_MAX)
    }

    /// The raw 29-bit value.
    pub const fn value(self) -> u32 {
        self.0
    }

    /// The next message number, skipping 0 on wrap.
    pub fn next(self) -> MsgNo {
        if self.0 >= MSG_MAX {
            MsgNo(1)
        } else {
            MsgNo(self.0 + 1)
        }
    }

    /// Signed distance `self - other` in wrapping order (UDT4 `CMsgNo::msgoff`).
    pub fn diff(self, other: MsgNo) -> i32 {
        let d = self.0 as i64 - other.0 as i64;
        let space = (MSG_MAX as i64) + 1;
        let d = if d.unsigned_abs() < MSG_THRESHOLD as u64 {
            d
        } else if d < 0 {
            d + space
        } else {
            d - space
        };
        d as i32
    }
}

impl fmt::Debug for MsgNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "msg{}", self.0)
    }
}

/// A 31-bit ACK sub-sequence number (the additional-info word of a full ACK and of ACK2).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AckNo(u32);

impl AckNo {
    /// ACK number `v`, masked to 31 bits.
    pub const fn new(v: u32) -> Self {
        AckNo(v & SEQ_MAX)
    }

    /// The raw value.
    pub const fn value(self) -> u32 {
        self.0
    }

    /// The next ACK number, wrapping from `0x7FFF_FFFF` to 0.
    pub fn next(self) -> AckNo {
        if self.0 >= SEQ_MAX {
            AckNo(0)
        } else {
            AckNo(self.0 + 1)
        }
    }
}

impl fmt::Debug for AckNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ack{}", self.0)
    }
}

/// A UDT socket id: the destination-socket word of every packet (0 = listener / unknown).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct SocketId(pub u32);

impl fmt::Debug for SocketId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sock{:#010x}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seq_wraps_at_31_bits() {
        let max = SeqNo::new(SEQ_MAX);
        assert_eq!(max.next(), SeqNo::new(0));
        assert_eq!(SeqNo::new(0).prev(), max);
        assert_eq!(SeqNo::new(0).diff(max), 1);
        assert_eq!(max.diff(SeqNo::new(0)), -1);
        assert!(max.is_before(SeqNo::new(5)));
        assert_eq!(max.len_to(SeqNo::new(1)), 3);
        assert_eq!(SeqNo::new(1).len_to(max), 0);
        assert_eq!(SeqNo::new(10).add(-11), max);
    }

    #[test]
    fn msg_skips_zero() {
        assert_eq!(MsgNo::new(MSG_MAX).next(), MsgNo::new(1));
        assert_eq!(MsgNo::new(1).diff(MsgNo::new(MSG_MAX)), 2);
    }

    #[test]
    fn ack_wraps_to_zero() {
        assert_eq!(AckNo::new(SEQ_MAX).next(), AckNo::new(0));
    }
}
