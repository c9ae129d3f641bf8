//! The contract between a protocol session and whatever drives it (the socket [`crate::driver`]
//! or the simulator).
//!
//! A session is one transfer between two ends: one or more reliable, ordered control channels
//! (TCP connections, numbered from 0 in the order the protocol opens them) and one unreliable
//! data path (UDP datagrams). The driver feeds it what arrives (`handle_*`), asks it for what to
//! send (`poll_*`) and sleeps until [`Session::poll_timeout`].
//!
//! Invariants the driver keeps: `now` never goes backwards; control bytes are delivered in order
//! and may be split or merged arbitrarily; a datagram is delivered whole or not at all, possibly
//! duplicated or reordered. Invariants the session keeps: [`Session::poll_datagram`] returns a
//! datagram only when one is due at `now` (pacing is the session's job), and
//! [`Session::poll_timeout`] covers the next due datagram as well as every timer; after
//! [`Event::Done`] or [`Event::Failed`] the session sends no more datagrams, though it may
//! still have control bytes to flush.

use udt_proto::time::Instant;

/// What a session reports to its driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Data datagrams go from now on to the control peer's address at this UDP port (Tsunami's
    /// client names its port in the control exchange).
    DataPeerPort(u16),
    /// The transfer's size, in bytes, became known (a receiver learns it from the sender).
    Size(u64),
    /// The session expects to hear nothing from its peer for about this long from now (an
    /// RBUDP sender's first blast): a driver's limit on silence grows by it.
    QuietFor(std::time::Duration),
    /// The transfer completed: every byte is in the sink (receiver) or known received (sender).
    Done,
    /// The session failed; the reason is one line for the user.
    Failed(String),
}

/// What a session counted. Datagram counts are whole datagrams, bytes are UDP payload bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Data datagrams sent, originals and retransmissions.
    pub datagrams_sent: u64,
    /// Of those, retransmissions (a block or packet sent again).
    pub retransmitted: u64,
    /// UDP payload bytes sent.
    pub bytes_sent: u64,
    /// Data datagrams received and accepted.
    pub datagrams_received: u64,
    /// Of those, ones already held (duplicates).
    pub duplicates: u64,
    /// Datagrams or control messages dropped as malformed or out of range.
    pub malformed: u64,
    /// File bytes known to be at the receiver (the sender's view) or written to the sink (the
    /// receiver's).
    pub delivered: u64,
    /// The file's size, once known.
    pub size: Option<u64>,
    /// Protocol rounds (RBUDP blasts, Tsunami restarts, FOBS chunks), for reports.
    pub rounds: u64,
}

/// One end of one transfer, sans-IO.
pub trait Session {
    /// Bytes read from control channel `channel`, in order, split anywhere.
    fn handle_control(&mut self, now: Instant, channel: usize, bytes: &[u8]);
    /// Control channel `channel` reached its end (the peer closed it or it broke).
    fn handle_control_closed(&mut self, now: Instant, channel: usize);
    /// One datagram from the data peer.
    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]);
    /// Time passed: run whatever timer is due at `now` (calling it early is harmless).
    fn handle_timeout(&mut self, now: Instant);
    /// The next bytes to write on a control channel.
    fn poll_control(&mut self) -> Option<(usize, Vec<u8>)>;
    /// The next data datagram if one is due at `now`, written into `buf` (at least
    /// [`Session::max_datagram`] bytes); its length.
    fn poll_datagram(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize>;
    /// When the session next needs [`Session::handle_timeout`] or has a datagram due; `None`
    /// while it only waits for input.
    fn poll_timeout(&self) -> Option<Instant>;
    /// The next event.
    fn poll_event(&mut self) -> Option<Event>;
    /// What the session counted so far.
    fn counters(&self) -> Counters;
    /// The largest datagram this session sends or accepts.
    fn max_datagram(&self) -> usize;
    /// A receiving session's copy of the BLAKE3 digest the sending end computed over the whole
    /// file, when the sender is one of ours and sent it (see [`crate::digest`]); `None` from a
    /// reference peer, which has no such message, and from every sending session.
    fn peer_digest(&self) -> Option<[u8; 32]> {
        None
    }
}
