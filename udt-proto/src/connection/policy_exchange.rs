//! The policy exchange: each end tells the other what its sender needs the other's receiver to
//! report ([`Offer`], a user-defined control packet), and its receiver does what the peer asked.
//!
//! An end whose policy asks anything beyond UDT4's receiver behaviour offers once it knows the
//! peer is connected: a caller at establishment (its listener answered, so it is connected), an
//! accepted or rendezvous side at the first packet the peer sends after the handshake (a UDT4
//! peer still connecting takes any other packet as a failed handshake). It offers again with its
//! ACK2s and at its loss reports (which keep coming where a hole holds the ACKs back), once per
//! RTT + 4 RTTVar (the time an answer takes), at most [`MAX_UNANSWERED_OFFERS`] times in all
//! until it hears from the peer and without bound afterwards (the peer is then known to be
//! ours), until an offer from the peer with `heard` set proves its own got through: a lost offer
//! is repaired while its end sends data, and a UDT4 peer (which hands the packets to its
//! congestion control, whose default ignores them) costs a few. Once the last has gone an answer
//! time with no offer from the peer, the controller is told the peer is UDT4's
//! (`CcContext::peer_udt4`).
//!
//! An offer with `heard` unset is answered with ours, `heard` set, and so is the first offer an
//! end hears whatever its flag; no other is: no exchange loops (an end answers a `heard` offer
//! once), and the answer stops the other end's repeats. An end that heard the peer before its
//! own offer got through repeats with `heard` set, and the first of those to arrive must be
//! answered, or it would repeat for the whole connection. Hearing the peer's offer is
//! not proof that ours arrived: the peer's unprompted one (a receiver's, at the first data
//! packet) may cross ours, lost, and our answer may be lost too; the peer's receiver would then
//! report as UDT4's for the whole connection (a receiver sends no ACK2s, so it repeats nothing
//! while it only receives). So an end repeats until it has the proof, its repeats made after
//! hearing the peer carrying `heard` (not answered). Until the peer's offer arrives, this end's
//! receiver behaves as UDT4's.

use std::collections::VecDeque;
use std::time::Duration;

use super::{Connection, PendingControl, Role};
use crate::cc::CustomMessage;
use crate::policy::{Offer, Policy, POLICY_SUBTYPE};
use crate::time::Instant;

/// Offers this end sends unprompted (at establishment and with ACK2s) before giving up.
pub const MAX_UNANSWERED_OFFERS: u8 = 4;

/// Progress of the exchange on one connection.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Exchange {
    /// An offer from the peer arrived (it is one of ours).
    pub heard_peer: bool,
    /// An offer from the peer that had heard ours arrived: ours got through.
    pub peer_heard_us: bool,
    /// Offers sent unprompted.
    pub unanswered_sent: u8,
    /// When the last one left.
    pub last_sent: Option<Instant>,
    /// The first offer was made (or there was nothing to ask when it was due).
    pub started: bool,
}

impl Exchange {
    /// Every offer this end makes unprompted was sent (each an answer time after the one
    /// before) and none was answered by `now`, an `answer_time` after the last: the peer is
    /// UDT4's. Until the last offer's answer has had its time, the last offer may be the one
    /// that got through.
    pub fn gave_up(&self, now: Instant, answer_time: Duration) -> bool {
        !self.heard_peer
            && self.unanswered_sent >= MAX_UNANSWERED_OFFERS
            && self.last_sent.is_some_and(|t| now - t >= answer_time)
    }

    /// This end sent an ACK2, or handled a loss report, at `now`: offer again while the peer
    /// has not shown it heard ours and an answer to the last one has had `answer_time` to come.
    pub fn repeat_offer(
        &mut self,
        now: Instant,
        answer_time: Duration,
        own: &Policy,
        control: &mut VecDeque<PendingControl>,
    ) {
        if !self.peer_heard_us && self.last_sent.is_none_or(|t| now - t >= answer_time) {
            self.offer_unprompted(now, own, control);
        }
    }

    /// Offer unless nothing is asked, or [`MAX_UNANSWERED_OFFERS`] went out to a peer not yet
    /// heard from (it may be UDT4's). A peer heard from is ours: this end repeats until it has
    /// the proof its offer got through, however many that takes (a start on a full buffer can
    /// lose every one of the first few, and the peer's receiver would report as UDT4's for the
    /// whole connection).
    fn offer_unprompted(&mut self, now: Instant, own: &Policy, control: &mut VecDeque<PendingControl>) {
        if !own.asks_beyond_udt4() || (!self.heard_peer && self.unanswered_sent >= MAX_UNANSWERED_OFFERS) {
            return;
        }
        self.unanswered_sent = self.unanswered_sent.saturating_add(1);
        self.last_sent = Some(now);
        queue_offer(own, self.heard_peer, control);
    }
}

fn queue_offer(own: &Policy, heard: bool, control: &mut VecDeque<PendingControl>) {
    let (info, data) = Offer { wants: *own, heard }.encode();
    control.push_back(PendingControl::Custom(CustomMessage { subtype: POLICY_SUBTYPE, info, data }));
}

impl Connection {
    /// The connection is established: a caller offers now, the other roles at the peer's
    /// first packet ([`Connection::note_peer_connected`]).
    pub(super) fn start_policy_exchange(&mut self, now: Instant) {
        if self.role == Role::Caller {
            self.note_peer_connected(now);
        }
    }

    /// A packet from the connected peer arrived (or, for a caller, the listener answered): the
    /// first offer goes out.
    pub(super) fn note_peer_connected(&mut self, now: Instant) {
        if !self.exchange.started {
            self.exchange.started = true;
            self.exchange.offer_unprompted(now, &self.own_policy, &mut self.control);
        }
    }

    /// A user-defined control packet of the policy sub-type arrived: the receiving half follows
    /// it, and an offer that has not heard ours is answered.
    pub(super) fn handle_policy_offer(&mut self, info: u32, data: &[u8]) {
        let Some(offer) = Offer::decode(info, data) else {
            self.stats.total.dropped_invalid += 1;
            return;
        };
        self.policy = self.policy.receiving_as(&offer.wants);
        if let Some(link) = self.link.as_mut() {
            link.rx.history.raise_capacity(super::rate_sampling::AckHistory::capacity_for(
                self.config.recv_buffer_pkts.max(self.config.flow_window),
                self.policy.ack_interval,
            ));
        }
        let first = !std::mem::replace(&mut self.exchange.heard_peer, true);
        self.exchange.peer_heard_us |= offer.heard;
        if !offer.heard || first {
            queue_offer(&self.own_policy, true, &mut self.control);
        }
    }

    /// Whether a user-defined control packet is a policy offer (handled by the connection, not
    /// the congestion control).
    pub(super) fn is_policy_offer(subtype: u16) -> bool {
        subtype == POLICY_SUBTYPE
    }
}
