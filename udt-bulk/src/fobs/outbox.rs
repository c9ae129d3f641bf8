//! Control frames a session has written and the driver has not collected yet.
//!
//! Invariant: [`Outbox::due`] is `Some` exactly while frames wait, and names the instant the
//! oldest was queued, so a session's `poll_timeout` wakes its driver for frames queued while
//! it was producing datagrams (the drivers collect control bytes before datagrams).

use std::collections::VecDeque;

use udt_proto::time::Instant;

use super::wire::Message;

/// Queued control frames, by channel.
#[derive(Debug, Default)]
pub struct Outbox {
    queue: VecDeque<(usize, Vec<u8>)>,
    since: Option<Instant>,
    bytes: u64,
}

impl Outbox {
    /// Queue `msg` on `channel` at `now`.
    pub fn push(&mut self, now: Instant, channel: usize, msg: &Message) {
        let frame = msg.encode();
        self.bytes += frame.len() as u64;
        self.queue.push_back((channel, frame));
        self.since.get_or_insert(now);
    }

    /// The oldest frame and its channel.
    pub fn pop(&mut self) -> Option<(usize, Vec<u8>)> {
        let next = self.queue.pop_front();
        if self.queue.is_empty() {
            self.since = None;
        }
        next
    }

    /// When the oldest waiting frame was queued.
    pub fn due(&self) -> Option<Instant> {
        self.since
    }

    /// Control bytes queued so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_leave_in_order_and_the_due_time_follows_the_oldest() {
        let mut out = Outbox::default();
        assert_eq!(out.due(), None);
        out.push(Instant::from_micros(5), 0, &Message::Hello { token: 1 });
        out.push(Instant::from_micros(9), 1, &Message::Hello { token: 2 });
        assert_eq!(out.due(), Some(Instant::from_micros(5)));
        assert_eq!(out.pop(), Some((0, Message::Hello { token: 1 }.encode())));
        assert_eq!(out.pop().map(|(c, _)| c), Some(1));
        assert_eq!((out.pop(), out.due()), (None, None));
        assert_eq!(out.bytes(), 2 * 17);
    }
}
