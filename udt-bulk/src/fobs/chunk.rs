//! Chunk and segment bookkeeping (Kannan et al. 2003 §3): where each packet of the file lies
//! ([`Geometry`]) and which packets of the current chunk are held or acknowledged
//! ([`ChunkMap`]).
//!
//! A file of `size` bytes is cut into packets of `payload` bytes (the last one shorter), the
//! packets into chunks of `chunk_packets` (the last one shorter), each chunk into segments of
//! `segment_packets` (the last one shorter). Packets and segments are numbered from 0 within
//! their chunk. Invariants: every function here is total over its documented domain and
//! saturates or returns `None` outside it, so a hostile number never panics; a [`ChunkMap`]
//! holds packets of its chunk (below its length) only.

use std::ops::Range;

use udt_proto::range_set::RangeSet;

use crate::received;

/// How a file is cut into chunks, segments and packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// File size in bytes.
    pub size: u64,
    /// File bytes per packet.
    pub payload: u16,
    /// Packets per chunk (the last chunk may hold fewer).
    pub chunk_packets: u32,
    /// Packets per segment (the last segment of a chunk may hold fewer).
    pub segment_packets: u32,
}

impl Geometry {
    /// Packets in the whole file.
    pub fn packets(&self) -> u64 {
        self.size.div_ceil(u64::from(self.payload.max(1)))
    }

    /// Chunks in the whole file (0 for an empty file).
    pub fn chunks(&self) -> u32 {
        let n = self.packets().div_ceil(u64::from(self.chunk_packets.max(1)));
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// Packets in chunk `chunk` (0 past the end).
    pub fn chunk_len(&self, chunk: u32) -> u32 {
        let first = u64::from(chunk) * u64::from(self.chunk_packets);
        let left = self.packets().saturating_sub(first);
        u32::try_from(left.min(u64::from(self.chunk_packets))).unwrap_or(0)
    }

    /// Bytes in chunk `chunk`.
    pub fn chunk_bytes(&self, chunk: u32) -> u64 {
        let start = self.offset(chunk, 0);
        let end = self.offset(chunk.saturating_add(1), 0);
        end.saturating_sub(start)
    }

    /// Byte offset of packet `packet` of chunk `chunk` (clamped to the file's size).
    pub fn offset(&self, chunk: u32, packet: u32) -> u64 {
        let index = u64::from(chunk) * u64::from(self.chunk_packets) + u64::from(packet);
        index.saturating_mul(u64::from(self.payload)).min(self.size)
    }

    /// Bytes in packet `packet` of chunk `chunk` (0 past the end).
    pub fn packet_len(&self, chunk: u32, packet: u32) -> usize {
        let start = self.offset(chunk, packet);
        let end = start.saturating_add(u64::from(self.payload)).min(self.size);
        usize::try_from(end - start).unwrap_or(0)
    }

    /// Segments in chunk `chunk`.
    pub fn segments(&self, chunk: u32) -> u32 {
        self.chunk_len(chunk).div_ceil(self.segment_packets.max(1))
    }

    /// The segment holding packet `packet`.
    pub fn segment_of(&self, packet: u32) -> u32 {
        packet / self.segment_packets.max(1)
    }

    /// Packets of segment `segment` of chunk `chunk` (empty past the end).
    pub fn segment_range(&self, chunk: u32, segment: u32) -> Range<u32> {
        let len = self.chunk_len(chunk);
        let start = segment.saturating_mul(self.segment_packets).min(len);
        let end = start.saturating_add(self.segment_packets).min(len);
        start..end
    }
}

/// Which packets of a chunk are held (receiver) or acknowledged (sender).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkMap {
    set: RangeSet<u32>,
    len: u32,
}

impl ChunkMap {
    /// A map of `len` packets, none set.
    pub fn new(len: u32) -> Self {
        ChunkMap { set: RangeSet::new(), len }
    }

    /// Clear and resize for a chunk of `len` packets.
    pub fn reset(&mut self, len: u32) {
        self.set.clear();
        self.len = len;
    }

    /// Packets in the chunk.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// True for a chunk of no packets.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Packets set.
    pub fn count(&self) -> u32 {
        // Members are below `len`, a u32.
        self.set.len() as u32
    }

    /// Packets not set.
    pub fn missing(&self) -> u32 {
        self.len - self.count()
    }

    /// Every packet is set.
    pub fn is_complete(&self) -> bool {
        self.count() == self.len
    }

    /// Whether packet `i` is set (false past the end).
    pub fn get(&self, i: u32) -> bool {
        i < self.len && self.set.contains(i)
    }

    /// Set packet `i`; true if it was not set before (false past the end).
    pub fn set(&mut self, i: u32) -> bool {
        i < self.len && self.set.insert(i)
    }

    /// Set every packet of `range` (clamped to the chunk); how many were newly set.
    pub fn set_range(&mut self, range: Range<u32>) -> u32 {
        let end = range.end.min(self.len);
        if range.start >= end {
            return 0;
        }
        // At most `len` members, a u32.
        self.set.insert_range(range.start..=end - 1) as u32
    }

    /// Set every packet; how many were newly set.
    pub fn set_all(&mut self) -> u32 {
        self.set_range(0..self.len)
    }

    /// Whether every packet of `range` is set.
    pub fn all_in(&self, range: Range<u32>) -> bool {
        range.end <= self.len && (range.is_empty() || self.set.contains_range(range.start..=range.end - 1))
    }

    /// The first packet at or after `from` not set, if any.
    pub fn next_missing(&self, from: u32) -> Option<u32> {
        self.set.first_gap(from..=self.len.checked_sub(1)?)
    }

    /// The packets not set, in order, at most `limit` of them.
    pub fn missing_list(&self, limit: usize) -> Vec<u32> {
        let Some(last) = self.len.checked_sub(1) else { return Vec::new() };
        self.set.gaps(0..=last).flatten().take(limit).collect()
    }

    /// The bits of `range` as bytes, packet `range.start + k` at bit `k % 8` (least significant
    /// first) of byte `k / 8` (FOBS.md, "Bit maps").
    pub fn bits(&self, range: Range<u32>) -> Vec<u8> {
        received::to_bits(&self.set, range)
    }

    /// Set the packets whose bits are set in `bits` (laid out as [`ChunkMap::bits`]), for
    /// `count` packets from `first`; bits past the chunk or past `count` are ignored. How many
    /// were newly set.
    pub fn apply_bits(&mut self, first: u32, count: u32, bits: &[u8]) -> u32 {
        let mut newly = 0;
        received::for_each_run(bits, count, |run| {
            let start = first.saturating_add(run.start);
            let end = first.saturating_add(run.end);
            newly += self.set_range(start..end);
        });
        newly
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry(size: u64) -> Geometry {
        Geometry { size, payload: 100, chunk_packets: 10, segment_packets: 4 }
    }

    #[test]
    fn a_file_cuts_into_chunks_segments_and_a_short_last_packet() {
        let g = geometry(2_550); // 26 packets: chunks of 10, 10, 6; the last packet 50 bytes
        assert_eq!((g.packets(), g.chunks()), (26, 3));
        assert_eq!((g.chunk_len(0), g.chunk_len(2), g.chunk_len(3)), (10, 6, 0));
        assert_eq!((g.chunk_bytes(0), g.chunk_bytes(2), g.chunk_bytes(3)), (1_000, 550, 0));
        assert_eq!((g.segments(0), g.segments(2)), (3, 2));
        assert_eq!(g.segment_range(0, 2), 8..10);
        assert_eq!(g.segment_range(2, 1), 4..6);
        assert_eq!(g.segment_range(2, 9), 6..6);
        assert_eq!(g.offset(1, 3), 1_300);
        assert_eq!((g.packet_len(2, 4), g.packet_len(2, 5), g.packet_len(2, 6)), (100, 50, 0));
        assert_eq!(g.segment_of(9), 2);
    }

    #[test]
    fn exact_multiples_and_empty_files_have_no_stray_chunk() {
        assert_eq!(geometry(2_000).chunks(), 2);
        assert_eq!(geometry(2_000).chunk_len(1), 10);
        assert_eq!(geometry(0).chunks(), 0);
        assert_eq!(geometry(1).chunks(), 1);
        assert_eq!(geometry(1).packet_len(0, 0), 1);
    }

    #[test]
    fn hostile_numbers_saturate() {
        let g =
            Geometry { size: u64::MAX, payload: 65_000, chunk_packets: 1 << 20, segment_packets: 1 << 16 };
        assert_eq!(g.offset(u32::MAX, u32::MAX), u64::MAX);
        assert_eq!(g.packet_len(u32::MAX, u32::MAX), 0);
        assert!(g.segment_range(u32::MAX, u32::MAX).is_empty());
    }

    #[test]
    fn a_map_counts_what_is_set_once() {
        let mut m = ChunkMap::new(130);
        assert!(m.set(0) && m.set(129) && !m.set(129) && !m.set(130));
        assert_eq!((m.count(), m.missing()), (2, 128));
        assert_eq!(m.next_missing(0), Some(1));
        assert_eq!(m.next_missing(129), None);
        assert_eq!(m.set_range(0..64), 63);
        assert_eq!(m.next_missing(0), Some(64));
        assert!(m.all_in(0..64) && !m.all_in(0..65) && !m.all_in(129..131));
        assert_eq!(m.set_all(), 65);
        assert!(m.is_complete());
        assert_eq!(m.next_missing(0), None);
        m.reset(3);
        assert_eq!((m.len(), m.count()), (3, 0));
    }

    #[test]
    fn missing_lists_stop_at_their_limit() {
        let mut m = ChunkMap::new(10);
        m.set_range(2..8);
        assert_eq!(m.missing_list(100), vec![0, 1, 8, 9]);
        assert_eq!(m.missing_list(3), vec![0, 1, 8]);
    }

    #[test]
    fn bits_round_trip_through_another_map() {
        let mut m = ChunkMap::new(20);
        for i in [4, 5, 7, 12, 19] {
            m.set(i);
        }
        let bits = m.bits(4..20);
        assert_eq!(bits, vec![0b1011, 0b1000_0001]);
        let mut other = ChunkMap::new(20);
        assert_eq!(other.apply_bits(4, 16, &bits), 5);
        assert_eq!(other, m);
        assert_eq!(other.apply_bits(4, 16, &bits), 0, "applying again sets nothing new");
    }

    #[test]
    fn applied_bits_past_the_count_or_the_chunk_are_ignored() {
        let mut m = ChunkMap::new(10);
        assert_eq!(m.apply_bits(8, 3, &[0xFF, 0xFF]), 2, "only 8 and 9 exist");
        assert_eq!(m.apply_bits(0, 2, &[0xFF]), 2, "count 2 covers 0 and 1 only");
        assert_eq!(m.apply_bits(u32::MAX, 8, &[0xFF]), 0);
        assert_eq!(m.count(), 4);
    }
}
