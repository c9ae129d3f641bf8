//! What the application can observe of a connection, so the I/O thread signals blocked callers
//! only when something they might wait for changed, not after every round (a futex wake and a
//! context switch per paced packet otherwise).
//!
//! The view holds readiness, not amounts: blocked callers wait for a state, for data to read
//! (any), for room to write (any, in stream mode: a stream write takes what fits; a message
//! needs room for all of it, so in message mode the amount), for everything acknowledged and,
//! once closed, for the control queue to drain. A change of amount that leaves readiness as it was wakes
//! nobody: a thread waiting for its last data to be acknowledged is not woken by every packet
//! the I/O thread sends or every acknowledgement that frees room.
//!
//! Invariant: every change the I/O thread makes that could unblock a caller (data to read when
//! there was none, room to write when there was none, everything acknowledged, the control
//! queue drained, a state change) changes the [`View`], and the I/O thread only moves each part
//! one way (more to read, more room, ...), so it cannot undo a change and come back to the view
//! it compares with. An application call that changes the connection records the view it
//! leaves (`ConnShared::touch`) and signals other blocked callers itself.

use udt_proto::connection::{Connection, Mode, State, SYN};
use udt_proto::Instant;

/// The connection as blocked callers see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct View {
    state: State,
    readable: bool,
    /// Stream mode: 1 with room to write, 0 without; message mode: the bytes of room.
    writable: usize,
    flushed: bool,
    /// Closed, and the control queue (the shutdown) has left: what `close` waits for. (Before
    /// the close the queue empties and fills with every round; nobody waits for that.)
    drained: bool,
}

impl View {
    /// Read the view of `conn`.
    pub fn of(conn: &Connection) -> View {
        let room = conn.writable_bytes();
        View {
            state: conn.state(),
            readable: conn.readable_bytes() > 0,
            writable: match conn.config().mode {
                Mode::Message => room,
                Mode::Stream => room.min(1),
            },
            flushed: conn.is_flushed(),
            drained: matches!(conn.state(), State::Closed(_)) && conn.is_drained(),
        }
    }
}

/// Bytes to read that are worth a wake-up of their own while data streams in: a reader woken
/// for them reads about 44 full packets per futex wake and context switch (a few microseconds
/// each), instead of one.
pub(crate) const READ_LOW_WATER: usize = 64 * 1024;

/// What the I/O thread last showed blocked callers of a connection, and what it needs to pace
/// the wake-ups of a reader.
///
/// Readers of a stream are woken when data to read appears, at once if it is worth it: there is
/// [`READ_LOW_WATER`] of it, or it came after a quiet spell of an ACK interval (a request, a
/// typed line: no more is on its way), or within an ACK interval of the first data that
/// arrived after this end had sent some (a conversation: the reader awaits the answer to what
/// it sent, which may span packets), or it is a message. Otherwise (data streaming in,
/// a little at a time: hundreds of connections sharing a port each get a packet or two per
/// round) the wake-up waits for the connection's next acknowledgement, which the receiver sends
/// every ACK interval (`SYN`, 10 ms) or 64 packets while data arrives (protocol notes §3.3) —
/// UDT4's own pace: its readers see data when it is acknowledged. The core's arrival-rate and
/// capacity estimates are not touched: only the application's wake-up waits.
#[derive(Debug, Default)]
pub(crate) struct Signalled {
    /// The view blocked callers last saw (`None`: none yet).
    pub view: Option<View>,
    /// Data packets received, acknowledgements sent, and data packets sent, as of the last round.
    recv_seen: u64,
    acks_seen: u64,
    /// Data packets this end had sent when data last arrived, and when that was.
    sent_at_arrival: u64,
    last_arrival: Option<Instant>,
    /// When data first arrived after this end had sent some: the peer's answer began.
    answer_began: Option<Instant>,
}

impl Signalled {
    /// After a round of the I/O thread at `now`: whether blocked callers must be signalled,
    /// recording what they are shown.
    pub fn changed(&mut self, conn: &Connection, now: Instant) -> bool {
        let view = View::of(conn);
        let c = conn.counters();
        let arrived = c.pkts_recv != self.recv_seen;
        let quiet_before = self.last_arrival.is_none_or(|t| now.saturating_since(t) >= SYN);
        if arrived {
            if c.pkts_sent != self.sent_at_arrival {
                self.answer_began = Some(now);
            }
            self.recv_seen = c.pkts_recv;
            self.sent_at_arrival = c.pkts_sent;
            self.last_arrival = Some(now);
        }
        let answering = self.answer_began.is_some_and(|t| now.saturating_since(t) < SYN);
        let shown_readable = self.view.is_some_and(|v| v.readable);
        let wait_for_ack = view.readable
            && !shown_readable
            && conn.config().mode == Mode::Stream
            && conn.readable_bytes() < READ_LOW_WATER
            && c.acks_sent == self.acks_seen
            && !answering
            && !quiet_before;
        self.acks_seen = c.acks_sent;
        let shown = View { readable: view.readable && !wait_for_ack, ..view };
        let changed = self.view != Some(shown);
        // Signalled for another change, a waiting reader sees the data too.
        self.view = Some(if changed { view } else { shown });
        changed
    }
}

/// Whether an application call that moved the connection's next deadline from `before` to
/// `after` must wake the I/O thread: only if the deadline came nearer (new data to send on an
/// idle connection, a window update, a close). Otherwise the thread's current sleep already
/// ends in time, and waking it would cost a round for nothing.
pub(crate) fn deadline_came_nearer(before: Option<Instant>, after: Option<Instant>) -> bool {
    match (before, after) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some(b), Some(a)) => a < b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_nearer_deadline_needs_a_wake() {
        let t = |us: u64| Some(Instant::from_nanos(us * 1000));
        assert!(deadline_came_nearer(None, t(5)));
        assert!(deadline_came_nearer(t(10), t(5)));
        assert!(!deadline_came_nearer(t(5), t(5)));
        assert!(!deadline_came_nearer(t(5), t(10)));
        assert!(!deadline_came_nearer(t(5), None));
        assert!(!deadline_came_nearer(None, None));
    }
}
