//! The one pacer of the three protocols: when the next data datagram is due.
//!
//! Each datagram sent moves the due time one gap on from the previous due time, so a sender
//! woken late catches up and keeps its average rate; how far behind `now` the due time may fall
//! (how much lateness is made up in one burst) is the protocol's choice: Tsunami makes up
//! [`crate::tsunami::server::CATCH_UP`], FOBS a few gaps, RBUDP all of it (the reference blasts
//! packet `i` of a round `i` gaps after the round started).
//!
//! Invariants: the due time never goes backwards except through [`Pacer::restart`]; it is at
//! least `now - catch_up + gap` after a send at `now`.

use std::time::Duration;

use udt_proto::time::Instant;

/// How much lateness a sender makes up in one burst.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatchUp {
    /// At most this long behind `now`.
    Within(Duration),
    /// At most this many gaps behind `now` (back-to-back datagrams after an idle spell).
    Gaps(u32),
    /// All of it: every datagram keeps its place in the schedule.
    Unbounded,
}

/// When the next datagram is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacer {
    due: Instant,
    catch_up: CatchUp,
}

impl Pacer {
    /// A pacer with its first datagram due at `start`.
    pub fn new(start: Instant, catch_up: CatchUp) -> Self {
        Pacer { due: start, catch_up }
    }

    /// When the next datagram is due.
    pub fn due(&self) -> Instant {
        self.due
    }

    /// True when a datagram may go at `now`.
    pub fn is_due(&self, now: Instant) -> bool {
        now >= self.due
    }

    /// A datagram went at `now`; the next one is due `gap` after the previous due time, that
    /// moved up to no more than the catch-up allowance behind `now`.
    pub fn on_send(&mut self, now: Instant, gap: Duration) {
        let floor = match self.catch_up {
            CatchUp::Within(limit) => now - limit,
            CatchUp::Gaps(n) => now - gap.saturating_mul(n),
            CatchUp::Unbounded => self.due,
        };
        self.due = self.due.max(floor) + gap;
    }

    /// Start a new schedule: the next datagram is due at `at`.
    pub fn restart(&mut self, at: Instant) {
        self.due = at;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn at(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn a_late_sender_makes_up_what_its_rule_allows() {
        let gap = MS;
        // Woken at 10 ms with the schedule at 0.
        let mut all = Pacer::new(at(0), CatchUp::Unbounded);
        all.on_send(at(10), gap);
        assert_eq!(all.due(), at(1), "every datagram keeps its place");
        let mut two_ms = Pacer::new(at(0), CatchUp::Within(2 * MS));
        two_ms.on_send(at(10), gap);
        assert_eq!(two_ms.due(), at(9));
        let mut four_gaps = Pacer::new(at(0), CatchUp::Gaps(4));
        four_gaps.on_send(at(10), gap);
        assert_eq!(four_gaps.due(), at(7));
        assert!(four_gaps.is_due(at(7)) && !four_gaps.is_due(at(6)));
    }

    #[test]
    fn an_early_or_prompt_sender_keeps_the_gap() {
        let mut p = Pacer::new(at(5), CatchUp::Within(2 * MS));
        p.on_send(at(5), MS);
        p.on_send(at(6), MS);
        assert_eq!(p.due(), at(7));
        p.restart(at(3));
        assert_eq!(p.due(), at(3));
        // Near the epoch the allowance saturates at zero.
        let mut q = Pacer::new(Instant::ZERO, CatchUp::Gaps(8));
        q.on_send(Instant::ZERO, MS);
        assert_eq!(q.due(), at(1));
    }
}
