//! What the application can observe of a connection, so the I/O thread signals blocked callers
//! only when something they might wait for changed, not after every round (a futex wake and a
//! context switch per paced packet otherwise).
//!
//! Invariant: every change the I/O thread makes that could unblock a caller (data to read,
//! room to write, everything acknowledged, the control queue drained, a state change, a data
//! packet arrived) changes the [`View`], and the I/O thread only moves each part one way (more
//! to read, more room, ...), so it cannot undo a change and come back to the view it compares
//! with. An application call that changes the connection records the view it leaves
//! (`ConnShared::touch`) and signals other blocked callers itself.

use udt_proto::connection::{Connection, State};
use udt_proto::Instant;

/// The connection as blocked callers see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct View {
    state: State,
    readable: usize,
    writable: usize,
    flushed: bool,
    drained: bool,
    data_received: u64,
}

impl View {
    /// Read the view of `conn`.
    pub fn of(conn: &Connection) -> View {
        View {
            state: conn.state(),
            readable: conn.readable_bytes(),
            writable: conn.writable_bytes(),
            flushed: conn.is_flushed(),
            drained: conn.is_drained(),
            data_received: conn.counters().pkts_recv,
        }
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
