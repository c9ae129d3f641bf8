//! What the I/O thread keeps under the multiplexer's state lock ([`MuxState`]): the protocol
//! endpoint, the connections by socket id, their armed deadlines, this round's work and the
//! work carried over to the next, and the backlog of datagrams the kernel's full send buffer
//! refused.
//!
//! Invariant: a connection is in a round's `work` at most once ([`Slot::round`] marks the
//! round that put it there); `carry` holds, in order, the connections the full send buffer kept
//! from transmitting, which [`MuxState::begin_round`] puts first in the next round's work;
//! `senders` counts the slots whose `sends` is set.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use udt_proto::buffer::RxDatagram;
use udt_proto::endpoint::Endpoint;
use udt_proto::SocketId;

use crate::conn::ConnShared;
use crate::pace;
use crate::shard::Forwarded;
use crate::timers::Timers;

/// The I/O thread's state (behind the multiplexer's state lock).
pub(super) struct MuxState {
    pub endpoint: Endpoint,
    pub conns: HashMap<SocketId, Slot>,
    pub out: Outbox,
    /// Each connection's next deadline (`poll_timeout`), as of the last time it was served.
    pub timers: Timers,
    /// The connections this round serves, in order (each once: see [`Slot::round`]).
    pub work: Vec<SocketId>,
    /// Connections the kernel's full send buffer kept from transmitting, in the order they are
    /// served first next round: those it skipped, then the one it cut short (see `service`).
    pub carry: Vec<SocketId>,
    /// The current round's number.
    pub round: u64,
    /// The ready queue's spare allocation (swapped with `Mux::ready` each round).
    pub ready_spare: Vec<SocketId>,
    /// The inbox's spare allocation (see `Mux::receive_forwarded`).
    pub forwarded: Vec<Forwarded>,
    /// Per sibling I/O thread, the buffers of the datagrams it forwarded to go back to it (kept
    /// for their allocations).
    pub give_back: Vec<Vec<RxDatagram>>,
    /// The gap before the next round woken by a deadline: [`pace::burst_gap`] of the fastest
    /// connection that sent data in the last round ([`pace::MIN_GAP`] if none did).
    pub gap: Duration,
    /// This round received data for a connection that acknowledges every few packets: its
    /// peer times round trips on those ACKs, so its data gathers no longer than
    /// [`pace::MIN_GATHER`].
    pub count_acked: bool,
    /// This round received a data packet shorter than a full one, which ended a write of the
    /// peer's (a request, a message): someone may wait for it, so the next sleep does not gather.
    pub write_ended: bool,
    /// Connections whose last service left a data packet waiting for its send time
    /// ([`Slot::sends`]).
    pub senders: usize,
}

/// A connection as the I/O thread keeps it.
pub(super) struct Slot {
    pub shared: Arc<ConnShared>,
    /// The last round that put the connection in `work`.
    pub round: u64,
    /// Its last service left a data packet waiting for its send time
    /// ([`udt_proto::connection::Connection::has_data_waiting`]): its deadline is a pacing one.
    pub sends: bool,
}

/// What the kernel has not taken yet.
#[derive(Default)]
pub(super) struct Outbox {
    /// Datagrams refused for a full send buffer, to send before anything else.
    pub backlog: VecDeque<Deferred>,
}

/// A datagram the kernel refused for a full send buffer: its bytes, copied out of the
/// connection's buffers, and its destination.
pub(super) struct Deferred {
    pub dest: socket2::SockAddr,
    pub bytes: Vec<u8>,
}

impl MuxState {
    /// The state of a new multiplexer: no connection, nothing armed or waiting.
    pub fn new(endpoint: Endpoint) -> MuxState {
        MuxState {
            endpoint,
            conns: HashMap::new(),
            out: Outbox::default(),
            timers: Timers::default(),
            work: Vec::new(),
            carry: Vec::new(),
            round: 0,
            ready_spare: Vec::new(),
            forwarded: Vec::new(),
            give_back: Vec::new(),
            gap: pace::MIN_GAP,
            count_acked: false,
            write_ended: false,
            senders: 0,
        }
    }

    /// Keep a new connection (not yet in any round's work).
    pub fn insert(&mut self, shared: Arc<ConnShared>) {
        self.conns.insert(shared.id, Slot { shared, round: 0, sends: false });
    }

    /// Put connection `id` in this round's work (once); its shared state, unless it is gone.
    pub fn enlist(&mut self, id: SocketId) -> Option<&ConnShared> {
        let slot = self.conns.get_mut(&id)?;
        if slot.round != self.round {
            slot.round = self.round;
            self.work.push(id);
        }
        Some(&slot.shared)
    }

    /// Start a round: a new number, and the work carried over from the last one first.
    pub fn begin_round(&mut self) {
        self.round += 1;
        self.count_acked = false;
        self.write_ended = false;
        self.work.clear();
        let mut carry = std::mem::take(&mut self.carry);
        for &id in &carry {
            self.enlist(id);
        }
        carry.clear();
        self.carry = carry;
    }
}
