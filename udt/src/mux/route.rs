//! Receiving and routing: the I/O thread reads what the socket holds and hands each datagram
//! to the connection it is for, to the endpoint (handshakes for the listener, which may accept
//! a connection), or, on a port with several I/O threads, to the thread that owns it.
//!
//! Received data is copied once between the kernel and the application: the kernel writes each
//! datagram into a buffer of its own ([`crate::landing`]), the connection's receive buffer keeps
//! that buffer, and the application's read copies the payload out. Datagrams the kernel
//! gathered into one buffer are handed over as bytes.
//!
//! A datagram that reaches the wrong I/O thread of a port (the kernel steers a whole GSO or GRO
//! batch by its first datagram) is forwarded in its buffer to its owner's inbox
//! ([`crate::shard`]) and handled there at its kernel arrival time; the buffers its connections
//! do not keep go back to the thread that received them.
//!
//! Invariant: every connection a datagram reaches is in the round's work (`MuxState::enlist`),
//! so the round serves it; a connection the endpoint accepts is kept, enlisted and queued for
//! the listener in the same step.

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use udt_proto::buffer::RxDatagram;
use udt_proto::endpoint::DatagramEvent;
use udt_proto::packet::Packet;
use udt_proto::{Instant, SocketId};

use super::state::MuxState;
use super::Mux;
use crate::accept_queue::Accepted;
use crate::clock;
use crate::conn::ConnShared;
use crate::landing::{Landing, Layout};
use crate::shard::{self, Forwarded};

/// At most this many datagrams are received per round, so transmission is not starved.
const RECV_BATCH: usize = 256;

impl Mux {
    /// Receive and route up to `RECV_BATCH` reads (each may hold many coalesced datagrams).
    /// Datagrams that landed aligned go to their connection as buffers it may keep (no copy);
    /// gathered ones as bytes.
    ///
    /// Each read's datagrams are handled at the time the kernel received them (its timestamp,
    /// kept in order), which is what the receiver's arrival-rate and packet-pair estimates
    /// measure. (The round's start time for all would bias them: a long round's many packets
    /// would all take its early start, and the arrival rate read 12,100 packets/s on a link
    /// delivering 8,300. The time each read returned would make queued packets read back to
    /// back look microseconds apart.) Without timestamps, the time the read returned. A
    /// connection gets that time clamped to the latest it was given (`clock::at`): a stamp can
    /// be earlier than the last round's `now`.
    pub(super) fn receive(&self, st: &mut MuxState, landing: &mut Landing, outbuf: &mut [u8]) -> usize {
        let mut data = 0;
        let mut count_acked = false;
        let mut write_ended = false;
        // Where secured connections' datagrams are opened.
        let mut scratch = Vec::new();
        for _ in 0..RECV_BATCH {
            let (from, layout) = match landing.receive(self.socket.as_raw_fd()) {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // ICMP errors (e.g. port unreachable) surface here on Linux: ignore them,
                    // the protocol's timers deal with silent peers.
                    tracing::trace!(error = %e, "receive");
                    continue;
                }
            };
            // Handed to a connection through `clock::at`: no earlier than what it saw before.
            let now = clock::arrival(landing.stamp());
            match layout {
                Layout::Aligned(count) => {
                    let mut k = 0;
                    while k < count {
                        let datagram = landing.datagram_mut(k);
                        k += 1;
                        if let Some(owner) = self.foreign_owner(datagram.bytes()) {
                            self.forward(owner, from, std::mem::take(datagram), now);
                            continue;
                        }
                        data += usize::from(Packet::peek_is_data(datagram.bytes()));
                        let Some(id) = self.route(st, now, from, datagram.bytes(), outbuf) else { continue };
                        let Some(c) = st.enlist(id) else { continue };
                        let dst = Packet::peek_destination(datagram.bytes()).filter(|&d| d != SocketId(0));
                        let mut conn = c.lock();
                        let writes_ended = conn.writes_ended();
                        let at = clock::at(&conn, now);
                        let secured = c.secured.load(Ordering::Acquire);
                        if secured {
                            c.deliver_sealed_buf(&mut conn, at, datagram, &mut scratch);
                        } else {
                            conn.handle_datagram_buf(at, datagram);
                        }
                        count_acked |= conn.acknowledges_by_count();
                        // The rest of the batch for the same socket id, under the same lock: same
                        // sender, same id, so the endpoint would route them alike.
                        while k < count && dst.is_some() {
                            let next = landing.datagram_mut(k);
                            if Packet::peek_destination(next.bytes()) != dst {
                                break;
                            }
                            data += usize::from(Packet::peek_is_data(next.bytes()));
                            let at = clock::at(&conn, now);
                            if secured {
                                c.deliver_sealed_buf(&mut conn, at, next, &mut scratch);
                            } else {
                                conn.handle_datagram_buf(at, next);
                            }
                            k += 1;
                        }
                        write_ended |= conn.writes_ended() != writes_ended;
                    }
                }
                Layout::Gathered { len, segment } => {
                    for datagram in landing.gathered()[..len].chunks(segment) {
                        if let Some(owner) = self.foreign_owner(datagram) {
                            self.forward(owner, from, RxDatagram::from_bytes(datagram), now);
                            continue;
                        }
                        data += usize::from(Packet::peek_is_data(datagram));
                        let id = self.route(st, now, from, datagram, outbuf);
                        if let Some(c) = id.and_then(|id| st.enlist(id)) {
                            let mut conn = c.lock();
                            let writes_ended = conn.writes_ended();
                            let at = clock::at(&conn, now);
                            c.deliver_sealed(&mut conn, at, datagram, &mut scratch);
                            count_acked |= conn.acknowledges_by_count();
                            write_ended |= conn.writes_ended() != writes_ended;
                        }
                    }
                }
            }
        }
        st.count_acked |= count_acked;
        st.write_ended |= write_ended;
        data
    }

    /// With several I/O threads on the port: the one a datagram of `bytes` belongs to
    /// ([`shard::owner`]) if it is another.
    fn foreign_owner(&self, bytes: &[u8]) -> Option<usize> {
        if self.shards <= 1 {
            return None;
        }
        let owner = shard::owner(bytes, self.shards);
        (owner != self.shard).then_some(owner)
    }

    /// The sibling I/O thread `index`, if it still runs.
    fn sibling(&self, index: usize) -> Option<Arc<Mux>> {
        self.siblings.get().and_then(|s| s.get(index)).and_then(Weak::upgrade)
    }

    /// Hand `datagram` (received at `at`) over to its owner, I/O thread `owner`.
    fn forward(&self, owner: usize, from: SocketAddr, datagram: RxDatagram, at: Instant) {
        // A sibling that is gone (its listener closing) had no connection left: dropped.
        if let Some(sibling) = self.sibling(owner) {
            self.hooks.forwarded();
            if sibling.inbox.push(Forwarded { from, datagram, at, origin: self.shard }) {
                sibling.wake.notify();
            }
        }
    }

    /// Route the datagrams other I/O threads forwarded, each at its kernel arrival time, and
    /// give the buffers the connections did not keep back to the threads they came from;
    /// returns the data packets among them.
    pub(super) fn receive_forwarded(&self, st: &mut MuxState, outbuf: &mut [u8]) -> usize {
        let mut forwarded = std::mem::take(&mut st.forwarded);
        self.inbox.take(&mut forwarded);
        let mut data = 0;
        let mut count_acked = false;
        let mut write_ended = false;
        let mut scratch = Vec::new();
        let mut back: Vec<Vec<RxDatagram>> = std::mem::take(&mut st.give_back);
        back.resize_with(self.shards, Vec::new);
        for mut f in forwarded.drain(..) {
            data += usize::from(Packet::peek_is_data(f.datagram.bytes()));
            let route = self.route(st, f.at, f.from, f.datagram.bytes(), outbuf);
            if let Some(c) = route.and_then(|id| st.enlist(id)) {
                let mut conn = c.lock();
                let writes_ended = conn.writes_ended();
                let at = clock::at(&conn, f.at);
                if c.secured.load(Ordering::Acquire) {
                    c.deliver_sealed_buf(&mut conn, at, &mut f.datagram, &mut scratch);
                } else {
                    conn.handle_datagram_buf(at, &mut f.datagram);
                }
                count_acked |= conn.acknowledges_by_count();
                write_ended |= conn.writes_ended() != writes_ended;
            }
            if f.datagram.capacity() > 0 {
                if let Some(bufs) = back.get_mut(f.origin) {
                    bufs.push(f.datagram);
                }
            }
        }
        for (origin, bufs) in back.iter_mut().enumerate() {
            if !bufs.is_empty() {
                match self.sibling(origin) {
                    Some(sibling) => sibling.inbox.give_back(bufs),
                    None => bufs.clear(),
                }
            }
        }
        st.give_back = back;
        st.forwarded = forwarded;
        st.count_acked |= count_acked;
        st.write_ended |= write_ended;
        data
    }

    /// Route one datagram: the id of the connection it is for (which may be gone), or `None`
    /// when the endpoint handled it (a handshake for the listener) or dropped it. A connection
    /// it accepts is in this round's work.
    fn route(
        &self,
        st: &mut MuxState,
        now: Instant,
        from: SocketAddr,
        bytes: &[u8],
        outbuf: &mut [u8],
    ) -> Option<SocketId> {
        match st.endpoint.handle_datagram(now, from, bytes, outbuf) {
            DatagramEvent::Route(id) => return Some(id),
            DatagramEvent::Accepted(conn) => {
                let shared = ConnShared::new(*conn);
                let id = shared.id;
                st.insert(Arc::clone(&shared));
                st.enlist(id);
                self.accept.push(Accepted { shard: self.shard, conn: shared });
            }
            DatagramEvent::Respond(len) => {
                let _ = self.socket.send_to(&outbuf[..len], from);
            }
            DatagramEvent::Dropped => {}
        }
        None
    }
}
