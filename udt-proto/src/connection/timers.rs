//! The connection's timers as a small table (protocol notes §3): each an optional deadline, the
//! next wake-up is the earliest. Data pacing is not here: it is the sender's next send time.

use crate::time::Instant;

/// The timers of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timer {
    /// Full ACK every SYN (or the congestion control's ACK period).
    Ack,
    /// Re-report of still-missing packets (thesis §2.2.3).
    Nak,
    /// Retransmission timeout / keep-alive / broken-peer detection.
    Exp,
    /// Handshake request resend.
    HandshakeResend,
    /// Give up connecting.
    ConnectDeadline,
    /// Give up flushing on close.
    Linger,
}

const COUNT: usize = 6;

impl Timer {
    const ALL: [Timer; COUNT] =
        [Timer::Ack, Timer::Nak, Timer::Exp, Timer::HandshakeResend, Timer::ConnectDeadline, Timer::Linger];

    fn index(self) -> usize {
        self as usize
    }
}

/// Deadlines of every timer.
#[derive(Clone, Debug, Default)]
pub struct TimerTable {
    deadlines: [Option<Instant>; COUNT],
}

impl TimerTable {
    /// Arm `timer` for `at`.
    pub fn set(&mut self, timer: Timer, at: Instant) {
        self.deadlines[timer.index()] = Some(at);
    }

    /// Disarm `timer`.
    pub fn stop(&mut self, timer: Timer) {
        self.deadlines[timer.index()] = None;
    }

    /// The deadline of `timer`.
    pub fn get(&self, timer: Timer) -> Option<Instant> {
        self.deadlines[timer.index()]
    }

    /// Whether `timer` is armed and due at `now`.
    pub fn is_due(&self, timer: Timer, now: Instant) -> bool {
        self.get(timer).is_some_and(|t| t <= now)
    }

    /// The earliest deadline.
    pub fn next(&self) -> Option<Instant> {
        self.deadlines.iter().flatten().min().copied()
    }

    /// Disarm everything.
    pub fn clear(&mut self) {
        self.deadlines = [None; COUNT];
    }

    /// Timers due at `now`, in table order.
    pub fn due(&self, now: Instant) -> impl Iterator<Item = Timer> + '_ {
        Timer::ALL.into_iter().filter(move |t| self.is_due(*t, now))
    }
}
