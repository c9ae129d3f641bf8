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

use std::time::Duration;

use udt_proto::connection::{Config, Connection, Mode, State, SYN};
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

/// The most a streaming reader's wake-up holds back past [`READ_LOW_WATER`]: a slow stream's
/// reader is woken once an ACK interval's data is there (UDT4 makes data readable only at its
/// ACKs, every 10 ms), but no later than this much has come, which a core's L2 cache holds: the
/// reader finds the bytes where the I/O thread left them. At 100 Mb/s a reader woken at 64 KiB
/// woke 190 times a second, at about the cost of one of the I/O thread's wake-ups each; at 10
/// Gb/s an ACK interval brings 12 MB.
pub(crate) const READ_HOLD_MAX: usize = 1 << 20;

/// The longest a reader's wake-up waits for [`READ_LOW_WATER`] while data streams in: five ACK
/// intervals. A thousand connections streaming a packet at a time then cost at most 20,000
/// wake-ups a second, not one per packet.
pub(crate) const READ_WAIT: Duration = Duration::from_millis(50);

/// What the I/O thread last showed blocked callers of a connection, and what it needs to pace
/// the wake-ups of a reader.
///
/// Readers of a stream are woken when data to read appears, at once if it is worth it: there is
/// [`READ_LOW_WATER`] of it (or a quarter of a smaller receive buffer), or a packet shorter than a
/// full one arrived (a write ended there: a request, a typed line, the end of a transfer; nothing
/// more of it is on its way), or it came within an ACK interval of the first data that arrived
/// after a quiet spell of [`READ_WAIT`] or after this end had sent some (a request, or the answer
/// to what this end sent: the reader awaits all of it, which may span packets and rounds), or it is
/// a message. Otherwise (data streaming in, a full packet at a time: hundreds of connections
/// sharing a port each get a packet or two per round) the wake-up waits until that much has come,
/// or [`READ_WAIT`] has passed since the first of it (the I/O thread arms a timer for that); and
/// past that much, until an ACK interval ([`SYN`]) has passed since the first of it or
/// [`READ_HOLD_MAX`] (at most a quarter of the receive buffer) has come. The core's arrival-rate
/// and capacity estimates are not touched, nor its acknowledgements (the receive buffer holds
/// what waits): only the application's wake-up waits.
#[derive(Debug, Default)]
pub(crate) struct Signalled {
    /// The view blocked callers last saw (`None`: none yet).
    pub view: Option<View>,
    /// Data packets received and payload bytes stored, as of the last round.
    recv_seen: u64,
    bytes_seen: u64,
    /// Since when there has been data to read that blocked readers were not shown.
    unshown_since: Option<Instant>,
    /// Data packets this end had sent when data last arrived, and when that was.
    sent_at_arrival: u64,
    last_arrival: Option<Instant>,
    /// When data first arrived after a quiet spell or after this end had sent some: a request
    /// or the peer's answer began.
    burst_began: Option<Instant>,
}

impl Signalled {
    /// After a round of the I/O thread at `now`: whether blocked callers must be signalled,
    /// recording what they are shown, and when the I/O thread must look again for a reader's
    /// wake-up it holds back (`None`: none held).
    pub fn changed(&mut self, conn: &Connection, now: Instant) -> (bool, Option<Instant>) {
        let view = View::of(conn);
        let c = conn.counters();
        let packets = c.pkts_recv.saturating_sub(self.recv_seen);
        let bytes = c.bytes_recv.saturating_sub(self.bytes_seen);
        // Duplicates count as packets and store no bytes: a round with one looks short, and the
        // reader is woken early, never late.
        let full = Config::payload_size(conn.config().mss);
        // Worth a wake-up: READ_LOW_WATER, or a quarter of a smaller receive buffer (held
        // longer, it would fill and stop the sender).
        let quarter = conn.config().recv_buffer_pkts as usize * full / 4;
        let low_water = READ_LOW_WATER.min(quarter);
        let hold_max = READ_HOLD_MAX.min(quarter);
        let full = full as u64;
        let write_ended = packets > 0 && bytes < packets * full;
        if packets > 0 {
            // Data after a quiet spell, or the first after this end sent some: a request or
            // an answer begins, and the reader wants all of it as it comes.
            let quiet_before = self.last_arrival.is_none_or(|t| now.saturating_since(t) >= READ_WAIT);
            if quiet_before || c.pkts_sent != self.sent_at_arrival {
                self.burst_began = Some(now);
            }
            self.sent_at_arrival = c.pkts_sent;
            self.last_arrival = Some(now);
        }
        self.recv_seen = c.pkts_recv;
        self.bytes_seen = c.bytes_recv;
        let in_burst = self.burst_began.is_some_and(|t| now.saturating_since(t) < SYN);
        let unshown = view.readable && !self.view.is_some_and(|v| v.readable);
        let since = if unshown { *self.unshown_since.get_or_insert(now) } else { now };
        let readable = conn.readable_bytes();
        let wake_at = if readable < low_water { since + READ_WAIT } else { since + SYN };
        let hold = unshown
            && conn.config().mode == Mode::Stream
            && readable < hold_max
            && !write_ended
            && !in_burst
            && now < wake_at;
        let shown = View { readable: view.readable && !hold, ..view };
        let changed = self.view != Some(shown);
        // Signalled for another change, a waiting reader sees the data too.
        self.view = Some(if changed { view } else { shown });
        if !hold || changed {
            self.unshown_since = None;
        }
        (changed, (hold && !changed).then_some(wake_at))
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
