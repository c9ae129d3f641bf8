//! Control bytes received and not yet consumed: the stream arrives split anywhere, and a
//! session takes whole messages off its front.
//!
//! Invariant: the buffer holds only what arrived and was not consumed; a session consumes
//! every complete message on each arrival, so what stays is less than one message (or one
//! name line, at most [`super::wire::MAX_NAME_LEN`] bytes, before it is refused).

/// Received control bytes.
#[derive(Debug, Default)]
pub struct Inbox {
    bytes: Vec<u8>,
    start: usize,
}

impl Inbox {
    /// Append what arrived.
    pub fn push(&mut self, data: &[u8]) {
        if self.start > 0 && self.start == self.bytes.len() {
            self.bytes.clear();
            self.start = 0;
        }
        self.bytes.extend_from_slice(data);
    }

    /// What is waiting.
    pub fn buffered(&self) -> &[u8] {
        &self.bytes[self.start..]
    }

    /// True when nothing is waiting.
    pub fn is_empty(&self) -> bool {
        self.start == self.bytes.len()
    }

    /// Drop the first `n` waiting bytes (at most all of them).
    pub fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.bytes.len());
        if self.start > 4096 && self.start * 2 > self.bytes.len() {
            self.bytes.drain(..self.start);
            self.start = 0;
        }
    }

    /// The first `N` bytes, consumed, once that many arrived.
    pub fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let head: [u8; N] = self.buffered().get(..N)?.try_into().ok()?;
        self.consume(N);
        Some(head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_come_out_whole_however_the_stream_was_split() {
        let mut inbox = Inbox::default();
        inbox.push(&[1, 2, 3]);
        assert_eq!(inbox.take::<4>(), None);
        inbox.push(&[4, 5]);
        assert_eq!(inbox.take::<4>(), Some([1, 2, 3, 4]));
        assert_eq!(inbox.buffered(), &[5]);
        inbox.consume(10);
        assert!(inbox.is_empty());
        for i in 0..10_000u32 {
            inbox.push(&i.to_be_bytes());
            assert_eq!(inbox.take::<4>(), Some(i.to_be_bytes()));
        }
        assert!(inbox.bytes.len() <= 8200, "consumed bytes are released: {}", inbox.bytes.len());
    }
}
