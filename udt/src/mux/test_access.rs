//! What the crate's unit tests read of a multiplexer and how they line up work for one round.

use super::Mux;

impl Mux {
    /// `sendmsg` calls so far.
    pub(crate) fn sendmsg_calls(&self) -> u32 {
        self.hooks.sends()
    }

    /// Lock the multiplexer's state: the I/O thread stops at its next round until the guard
    /// is dropped (tests line up work for one round with it).
    pub(crate) fn hold_rounds(&self) -> impl Drop + '_ {
        self.lock_state()
    }

    /// The times the core was asked for datagrams at, each with the number of the `transmit`
    /// call that asked.
    pub(crate) fn built(&self) -> Vec<(u64, udt_proto::Instant)> {
        self.hooks.built()
    }

    /// Datagrams this I/O thread handed to another one of the port.
    pub(crate) fn forwards(&self) -> u64 {
        self.hooks.forwards()
    }

    /// Connections this I/O thread keeps.
    pub(crate) fn connection_count(&self) -> usize {
        self.lock_state().conns.len()
    }

    /// Rounds the I/O thread has run, and connections it served in them.
    pub(crate) fn served(&self) -> (u64, u64) {
        self.hooks.served()
    }
}
