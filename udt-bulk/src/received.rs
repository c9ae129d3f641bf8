//! The one record of what arrived, for all three protocols: a [`RangeSet`] of packet or block
//! numbers (Tsunami's held
//! blocks, RBUDP's [`crate::rbudp::bitmap::Bitmap`], FOBS' [`crate::fobs::chunk::ChunkMap`]),
//! and its bit-map wire form shared by RBUDP and FOBS: the member `first + k` is bit `k % 8`,
//! least significant first, of byte `k / 8`.
//!
//! Invariants: nothing here indexes past a slice, whatever its length or the counts given; bits
//! past the count a caller names are never read as members.

use std::ops::Range;

use udt_proto::range_set::RangeSet;

/// The members of `set` within `window` as bits: member `window.start + k` sets bit `k % 8` of
/// byte `k / 8`; `ceil(len / 8)` bytes.
pub fn to_bits(set: &RangeSet<u32>, window: Range<u32>) -> Vec<u8> {
    let n = window.end.saturating_sub(window.start) as usize;
    let mut out = vec![0u8; n.div_ceil(8)];
    if n == 0 {
        return out;
    }
    for run in set.ranges_within(window.start..=window.end - 1) {
        let from = (run.start() - window.start) as usize;
        let to = (run.end() - window.start) as usize + 1;
        set_bits(&mut out, from..to);
    }
    out
}

/// Set bits `range` of `out` (bit `k % 8` of byte `k / 8`); bits past `out` are ignored.
pub fn set_bits(out: &mut [u8], range: Range<usize>) {
    let mut k = range.start;
    while k < range.end {
        let Some(byte) = out.get_mut(k / 8) else { return };
        if k % 8 == 0 && range.end - k >= 8 {
            *byte = 0xff;
            k += 8;
        } else {
            *byte |= 1 << (k % 8);
            k += 1;
        }
    }
}

/// Each run of set bits among the first `count` bits of `bits`, in ascending order, as a range
/// of bit offsets given to `run`; bits past `count` or past the slice are not read.
pub fn for_each_run(bits: &[u8], count: u32, mut run: impl FnMut(Range<u32>)) {
    // Every offset is below `count`, a u32.
    let limit = count.min(u32::try_from(bits.len().saturating_mul(8)).unwrap_or(u32::MAX));
    let mut push = |r: Range<u64>| run(r.start as u32..r.end as u32);
    let limit = u64::from(limit);
    let mut open: Option<u64> = None;
    for (k, &byte) in bits.iter().enumerate() {
        let base = k as u64 * 8;
        if base >= limit {
            break;
        }
        match byte {
            0xff if base + 8 <= limit => {
                open.get_or_insert(base);
            }
            0 => {
                if let Some(start) = open.take() {
                    push(start..base);
                }
            }
            _ => {
                for b in 0..8u64 {
                    let off = base + b;
                    if off >= limit {
                        break;
                    }
                    if byte >> b & 1 == 1 {
                        open.get_or_insert(off);
                    } else if let Some(start) = open.take() {
                        push(start..off);
                    }
                }
            }
        }
    }
    if let Some(start) = open {
        push(start..limit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bit_runs(bits: &[u8], count: u32) -> Vec<Range<u32>> {
        let mut runs = vec![];
        for_each_run(bits, count, |r| runs.push(r));
        runs
    }

    #[test]
    fn bits_go_least_significant_first() {
        let set: RangeSet<u32> = [4, 5, 7, 12, 19].into_iter().collect();
        assert_eq!(to_bits(&set, 4..20), vec![0b1011, 0b1000_0001]);
        assert_eq!(bit_runs(&[0b1011, 0b1000_0001], 16), vec![0..2, 3..4, 8..9, 15..16]);
        assert_eq!(bit_runs(&[0xff, 0xff, 0x01], 17), vec![0..17]);
        assert_eq!(bit_runs(&[0xff, 0xff], 12), vec![0..12], "bits past the count are not read");
        assert_eq!(bit_runs(&[0xff], 100), vec![0..8], "nor past the slice");
        assert!(to_bits(&set, 7..7).is_empty());
    }

    proptest! {
        #[test]
        fn bits_round_trip(
            members in proptest::collection::vec(0u32..300, 0..200),
            start in 0u32..100,
            len in 0u32..200,
        ) {
            let set: RangeSet<u32> = members.iter().copied().collect();
            let bits = to_bits(&set, start..start + len);
            prop_assert_eq!(bits.len(), (len as usize).div_ceil(8));
            let back: Vec<u32> = bit_runs(&bits, len).into_iter().flatten().map(|k| k + start).collect();
            let want: Vec<u32> = (start..start + len).filter(|v| set.contains(*v)).collect();
            prop_assert_eq!(back, want);
        }
    }
}
