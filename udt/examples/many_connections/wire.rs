//! The test message: 64 bytes a connection sends on a schedule, built so that the receiver can
//! tell a lost, reordered, corrupted or foreign message from the one it expects.
//!
//! Layout (little-endian): connection index u32 | sequence number u32 | send time u64 (ns since
//! the Unix epoch, the same clock in both processes) | kind u8 (0 data, 1 end) | 47 bytes of a
//! pattern of (index, sequence). The end marker's sequence number is the count of data
//! messages the connection sent before it.

use std::time::{SystemTime, UNIX_EPOCH};

/// Bytes of every message.
pub const LEN: usize = 64;
const KIND_DATA: u8 = 0;
const KIND_END: u8 = 1;
const PATTERN_START: usize = 17;

/// A decoded message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message {
    /// The sending connection's index (0-based, assigned by the client).
    pub index: u32,
    /// Data: its sequence number. End: how many data messages came before.
    pub seq: u32,
    /// When it was sent, ns since the Unix epoch.
    pub sent_ns: u64,
    /// The end marker (no more messages on this connection).
    pub end: bool,
}

/// Nanoseconds since the Unix epoch.
pub fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

fn pattern(index: u32, seq: u32, i: usize) -> u8 {
    (index.wrapping_mul(31).wrapping_add(seq.wrapping_mul(7)) as usize).wrapping_add(i) as u8
}

/// Encode `m` with its send time set to now.
pub fn encode(index: u32, seq: u32, end: bool) -> [u8; LEN] {
    let mut b = [0u8; LEN];
    b[0..4].copy_from_slice(&index.to_le_bytes());
    b[4..8].copy_from_slice(&seq.to_le_bytes());
    b[8..16].copy_from_slice(&now_ns().to_le_bytes());
    b[16] = if end { KIND_END } else { KIND_DATA };
    for (i, byte) in b.iter_mut().enumerate().skip(PATTERN_START) {
        *byte = pattern(index, seq, i);
    }
    b
}

/// Decode a message, or say what is wrong with it.
pub fn decode(b: &[u8; LEN]) -> Result<Message, String> {
    let word = |r: std::ops::Range<usize>| -> [u8; 4] { b[r].try_into().unwrap_or_default() };
    let index = u32::from_le_bytes(word(0..4));
    let seq = u32::from_le_bytes(word(4..8));
    let sent_ns = u64::from_le_bytes(b[8..16].try_into().unwrap_or_default());
    let end = match b[16] {
        KIND_DATA => false,
        KIND_END => true,
        k => return Err(format!("unknown kind {k}")),
    };
    if let Some(i) = (PATTERN_START..LEN).find(|&i| b[i] != pattern(index, seq, i)) {
        return Err(format!("corrupt byte {i} of message {seq} of connection {index}"));
    }
    Ok(Message { index, seq, sent_ns, end })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_round_trips_and_a_flipped_byte_is_caught() {
        let mut b = encode(7, 42, false);
        let m = decode(&b).unwrap();
        assert_eq!((m.index, m.seq, m.end), (7, 42, false));
        b[40] ^= 1;
        assert!(decode(&b).is_err());
    }
}
