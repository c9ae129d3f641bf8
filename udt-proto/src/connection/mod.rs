//! One UDT connection as a sans-IO state machine.
//!
//! # The polling contract
//!
//! A driver (runtime, simulator, test) owns a [`Connection`] and a UDP path to its peer:
//!
//! 1. Every datagram from the peer goes to [`Connection::handle_datagram`] with the current time
//!    (or to [`Connection::handle_datagram_buf`], which may keep the buffer instead of copying
//!    the payload). The driver (or [`crate::endpoint::Endpoint`]) has already matched the source
//!    address.
//! 2. When the time returned by [`Connection::poll_timeout`] is reached (a time in the past means
//!    "now"), it calls [`Connection::handle_timeout`].
//! 3. After either call, and after any application call (`write`, `read`, `close`, ...), it calls
//!    [`Connection::poll_transmit`] until it returns `None`, sending each datagram, then reads
//!    [`Connection::poll_event`] until `None`, then asks `poll_timeout` again.
//!
//! `poll_transmit` releases control packets first, then at most one data packet per call when
//! the pacing schedule allows it at `now`; when data is waiting for its send time, `poll_timeout`
//! returns that time. Nothing here reads a clock, owns a socket or uses a global RNG.
//!
//! # Layout
//! `mod.rs` holds the state and the public API; `handshake.rs` connection setup, `sender.rs` the
//! sending half (ACK/NAK/EXP handling, pacing), `receiver.rs` the receiving half (loss
//! detection, ACK/NAK generation, estimates), `transmit.rs` the encoding of queued control
//! packets, `timers.rs`, `rtt.rs`, `rate_sampling.rs` and `stats.rs` the pieces they share.
//!
//! Time never goes back: every `now` a driver passes (to `handle_datagram`, `handle_timeout`,
//! `poll_transmit`, `send_msg`, `close`, `stats`) is at least the latest one before it
//! ([`Connection::latest_now`]; checked in debug builds). A driver whose clock sources may
//! disagree (kernel receive timestamps and the clock, say) clamps to it.
//!
//! Invariants: `link` is `Some` exactly from establishment on; the send buffer's head is the
//! peer's last acknowledged sequence (`last_ack`); every sequence in the sender's loss list was
//! sent and is not acknowledged; every sequence in the receiver's loss list lies between its read
//! position and the largest sequence received; after `Closed`, only an already queued shutdown
//! leaves `poll_transmit`.

mod config;
mod event;
mod handshake;
mod policy_exchange;
mod rate_sampling;
mod receiver;
mod rtt;
mod sender;
mod timers;
mod transmit;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use rand_core::RngCore;

use crate::buffer::{RecvBuffer, RecvChunk, RxDatagram, SendBuffer};
use crate::cc::{CcContext, CongestionControl, CustomMessage};
use crate::packet::{Ack, DropRequest, Handshake, Packet};
use crate::seq::{AckNo, MsgNo, SeqNo, SocketId};
use crate::time::Instant;

pub use crate::policy::{Offer, Policy, POLICY_SUBTYPE};
pub use crate::stats;
pub use crate::stats::{Counters, InstantValues, Snapshot, Stats};
pub use config::{Config, ConfigError, Mode, DEFAULT_BUFFER_PKTS};
pub use event::{CloseReason, ConnError, Event};
pub use handshake::TRANSCRIPT_LEN;
pub use policy_exchange::MAX_UNANSWERED_OFFERS;

use rate_sampling::{AckHistory, ArrivalEstimator};
use rtt::RttEstimator;
use timers::{Timer, TimerTable};

/// Shutdown packets sent on close (see `send_shutdown_and_finish`).
const SHUTDOWN_COPIES: usize = 3;
/// The rate-control and ACK interval SYN (protocol notes §3).
pub const SYN: Duration = Duration::from_millis(10);
/// Minimum EXP interval unit (UDT4 `m_ullMinExpInt`).
const MIN_EXP: Duration = Duration::from_millis(300);
/// Floor for a congestion control's RTO and ACK-period overrides: a zero would make a timer
/// due again at once after every expiry.
const MIN_OVERRIDE: Duration = Duration::from_millis(1);
/// Light ACK every this many packets between full ACKs (UDT4 `m_iSelfClockInterval`).
const LIGHT_ACK_EVERY: u32 = 64;

/// An arriving datagram: borrowed bytes (the payload is copied when stored) or a datagram the
/// receive buffer may take.
#[derive(Debug)]
enum Incoming<'a> {
    Bytes(&'a [u8]),
    Datagram(&'a mut RxDatagram),
}

impl Incoming<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Incoming::Bytes(b) => b,
            Incoming::Datagram(d) => d.bytes(),
        }
    }
}

/// How the connection was set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// We connected to a listener.
    Caller,
    /// A listener accepted us.
    Accepted,
    /// Both sides connected to each other.
    Rendezvous,
}

/// Connection state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Handshaking.
    Connecting,
    /// Data can flow.
    Connected,
    /// Ended.
    Closed(CloseReason),
}

/// One datagram from [`Connection::poll_transmit_ref`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// Bytes written at the start of the caller's buffer: a whole control packet, or the
    /// header of a data packet.
    pub len: usize,
    /// For a data packet: its payload's range in [`Connection::send_storage`], to be sent right
    /// after the header.
    pub payload: Option<std::ops::Range<usize>>,
}

/// A control packet waiting to be sent.
#[derive(Clone, Debug)]
enum PendingControl {
    Handshake { hs: Handshake, dst: SocketId },
    KeepAlive,
    Ack(Ack),
    Nak(Vec<(SeqNo, SeqNo)>),
    Ack2(AckNo),
    Shutdown,
    DropRequest(DropRequest),
    Custom(CustomMessage),
}

/// Sending half, present once connected.
#[derive(Debug)]
struct Sender {
    buf: SendBuffer,
    loss: crate::loss_list::SendLossList,
    /// Next sequence the peer expects (everything before it acknowledged).
    last_ack: SeqNo,
    /// The point of the last full ACK (light ACKs move `last_ack` only).
    last_full_ack: SeqNo,
    /// Peer's advertised free buffer, packets.
    flow_window: u32,
    /// Earliest time the next data packet may leave.
    next_send: Instant,
    /// Peer-reported arrival rate and capacity, packets/s, smoothed.
    peer_recv_rate: u32,
    peer_bandwidth: u32,
    /// Rate-correction sampling (thesis §2.3.2.4): start of the window, packets sent in it, and
    /// whether the sender ran out of data in it.
    sample_start: Instant,
    sample_pkts: u32,
    sample_idle: bool,
    /// When the sender last had data and was not idle (for send_busy_us).
    busy_since: Option<Instant>,
    /// The last ACK2 sent: its time and ACK number (UDT4 sends at most one per SYN).
    last_ack2: Option<(Instant, AckNo)>,
}

/// Receiving half, present once connected.
#[derive(Debug)]
struct Receiver {
    buf: RecvBuffer,
    loss: crate::loss_list::RecvLossList,
    /// Largest sequence received.
    largest: SeqNo,
    /// Last sequence acknowledged by a full ACK.
    last_ack_sent: SeqNo,
    /// Largest ACK confirmed by an ACK2.
    last_ack2: SeqNo,
    last_ack_no: AckNo,
    last_ack_time: Option<Instant>,
    last_rates_time: Option<Instant>,
    history: AckHistory,
    arrivals: ArrivalEstimator,
    /// One-way queueing delay of arrivals, reported when the peer's policy asks for it.
    queue_delay: crate::queue_delay::QueueDelay,
    pkts_since_ack: u32,
    /// Data packets received shorter than a full one (each ended a write of the peer's).
    writes_ended: u64,
    light_acks: u32,
    /// Send an ACK even if nothing new arrived: the application freed buffer space.
    window_update: bool,
    /// Free packets advertised in the last full ACK.
    advertised: u32,
}

/// Sender and receiver, created at establishment.
#[derive(Debug)]
struct Link {
    tx: Sender,
    rx: Receiver,
}

/// One UDT connection.
pub struct Connection {
    config: Config,
    role: Role,
    state: State,
    local_id: SocketId,
    peer_id: SocketId,
    peer_addr: SocketAddr,
    /// Sequence numbers we send with / the peer sends with.
    local_isn: SeqNo,
    peer_isn: SeqNo,
    /// Negotiated MSS; payload per packet is MSS - 44.
    mss: u32,
    /// Peer's flow window from the handshake.
    peer_flow_window: u32,
    start: Instant,
    /// The latest `now` a driver passed in: time given later must not be earlier.
    latest_now: Instant,
    rng: Box<dyn RngCore + Send>,
    hs: handshake::HandshakeState,
    timers: TimerTable,
    control: VecDeque<PendingControl>,
    events: VecDeque<Event>,
    stats: Stats,
    cc: Box<dyn CongestionControl>,
    /// This end's policy: the configuration's, or the controller's declaration.
    own_policy: Policy,
    /// The policy in force: this end's sending half; the receiving half as the peer's offer
    /// asked, UDT4's until then.
    policy: Policy,
    exchange: policy_exchange::Exchange,
    rtt: RttEstimator,
    exp_count: u32,
    /// When the peer was last heard from, or (as in UDT4) the last EXP expiry after it.
    last_response: Instant,
    /// When a packet from the peer last arrived (or the connection was established): what
    /// `Config::peer_idle_timeout` measures from.
    last_heard: Instant,
    link: Option<Link>,
    /// The application called close; we are flushing (linger).
    closing: bool,
    /// The peer sent a shutdown: reads hit end of stream after the buffer drains.
    peer_shutdown: bool,
    /// Scratch space for encoding NAK bodies.
    scratch: Vec<u8>,
    /// Scratch list of loss ranges (NAK handling and re-reports), kept to avoid allocating.
    ranges: Vec<(SeqNo, SeqNo)>,
    /// What the full ACK being handled reported, for `on_ack` only ([`CcContext::ack`]).
    ack_report: Option<crate::cc::AckReport>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("role", &self.role)
            .field("state", &self.state)
            .field("local_id", &self.local_id)
            .field("peer_id", &self.peer_id)
            .field("peer_addr", &self.peer_addr)
            .field("exp_count", &self.exp_count)
            .field(
                "tx",
                &self.link.as_ref().map(|l| {
                    (
                        l.tx.last_ack,
                        l.tx.buf.next_seq(),
                        l.tx.buf.unsent_packets(),
                        l.tx.loss.len(),
                        l.tx.loss.first(),
                    )
                }),
            )
            .field(
                "rx",
                &self.link.as_ref().map(|l| {
                    (
                        l.rx.largest,
                        l.rx.last_ack_sent,
                        l.rx.last_ack2,
                        l.rx.buf.contiguous_end(),
                        l.rx.loss.len(),
                        l.rx.loss.first(),
                    )
                }),
            )
            .finish_non_exhaustive()
    }
}

impl Connection {
    fn new_common(
        config: Config,
        role: Role,
        local_id: SocketId,
        peer_addr: SocketAddr,
        now: Instant,
        mut rng: Box<dyn RngCore + Send>,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        let isn = config.initial_seq.unwrap_or_else(|| SeqNo::new(rng.next_u32()));
        let cc = config.cc.build();
        let policy = config.policy.unwrap_or_else(|| config.cc.policy());
        Ok(Connection {
            mss: config.mss,
            peer_flow_window: config.flow_window,
            config,
            role,
            state: State::Connecting,
            local_id,
            peer_id: SocketId(0),
            peer_addr,
            local_isn: isn,
            peer_isn: isn,
            start: now,
            latest_now: now,
            rng,
            hs: handshake::HandshakeState::default(),
            timers: TimerTable::default(),
            control: VecDeque::new(),
            events: VecDeque::new(),
            stats: Stats::new(now),
            cc,
            own_policy: policy,
            policy: policy.receiving_as(&Policy::UDT4),
            exchange: Default::default(),
            rtt: RttEstimator::default(),
            exp_count: 1,
            last_response: now,
            last_heard: now,
            link: None,
            closing: false,
            peer_shutdown: false,
            scratch: Vec::new(),
            ranges: Vec::new(),
            ack_report: None,
        })
    }

    /// The latest time a driver passed in (at first, the creation time). Every later `now`
    /// must be at least this: a driver clamps times from other sources to it.
    pub fn latest_now(&self) -> Instant {
        self.latest_now
    }

    /// Note `now`, given by the driver to an entry point: time is monotonic (a debug build
    /// panics at an earlier `now`, which would otherwise pass unseen through saturating
    /// arithmetic).
    fn advance(&mut self, now: Instant) {
        debug_assert!(
            now >= self.latest_now,
            "time went back: now {now:?} is earlier than the {:?} given before",
            self.latest_now
        );
        self.latest_now = self.latest_now.max(now);
    }

    /// Our socket id.
    pub fn local_id(&self) -> SocketId {
        self.local_id
    }

    /// The peer's socket id (0 until known).
    pub fn peer_id(&self) -> SocketId {
        self.peer_id
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> SocketAddr {
        self.peer_addr
    }

    /// Current state.
    pub fn state(&self) -> State {
        self.state
    }

    /// How the connection was set up.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Negotiated MSS.
    pub fn mss(&self) -> u32 {
        self.mss
    }

    /// Largest datagram `poll_transmit` can produce: the buffer it needs.
    pub fn max_datagram_size(&self) -> usize {
        self.config.mss.max(self.mss) as usize - crate::packet::IP_UDP_OVERHEAD
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The congestion control's name.
    pub fn cc_name(&self) -> &'static str {
        self.cc.name()
    }

    /// Data packets received so far that were shorter than a full one: each ended a write of the
    /// peer's (a request, a message, the end of a transfer), which someone may be waiting for
    /// (the receiver acknowledges it at once). A runtime that delays handling datagrams to
    /// batch them stops where this grows.
    pub fn writes_ended(&self) -> u64 {
        self.link.as_ref().map_or(0, |l| l.rx.writes_ended)
    }

    /// Whether this end acknowledges every few data packets (the policy's ACK interval,
    /// the TCP family's delayed ACKs), not only on the ACK timer: the peer then times its
    /// round trips on ACKs that data arrival triggers.
    pub fn acknowledges_by_count(&self) -> bool {
        self.policy.acknowledges_by_count()
    }

    /// The protocol policy in force.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    // ----- inputs -----

    /// A datagram from the peer arrived at `now` (a data payload is copied into the receive
    /// buffer).
    pub fn handle_datagram(&mut self, now: Instant, bytes: &[u8]) {
        self.handle_incoming(now, Incoming::Bytes(bytes));
    }

    /// Like [`handle_datagram`](Self::handle_datagram), without copying: a data packet that is
    /// stored is swapped into the receive buffer, and `datagram` comes back holding an empty
    /// buffer (possibly without storage) for the driver to receive into next. Any other datagram
    /// is left as it was.
    pub fn handle_datagram_buf(&mut self, now: Instant, datagram: &mut RxDatagram) {
        self.handle_incoming(now, Incoming::Datagram(datagram));
    }

    fn handle_incoming(&mut self, now: Instant, incoming: Incoming<'_>) {
        self.advance(now);
        let packet = match Packet::parse(incoming.bytes()) {
            Ok(p) => p,
            Err(e) => {
                tracing::debug!(error = %e, "dropping malformed datagram");
                self.stats.total.dropped_invalid += 1;
                return;
            }
        };
        if matches!(self.state, State::Closed(_)) {
            return;
        }
        match packet {
            Packet::Data(header, _) => {
                if self.state != State::Connected || header.dst != self.local_id {
                    self.stats.total.dropped_invalid += 1;
                    return;
                }
                self.note_response(now);
                self.note_peer_connected(now);
                self.handle_data(now, &header, incoming);
            }
            Packet::Control(ctrl) => {
                use crate::packet::Control;
                if let Control::Handshake(hs) = ctrl.body {
                    if ctrl.dst != self.local_id && ctrl.dst != SocketId(0) {
                        self.stats.total.dropped_invalid += 1;
                        return;
                    }
                    self.handle_handshake(now, &hs);
                    return;
                }
                if self.state != State::Connected || ctrl.dst != self.local_id {
                    self.stats.total.dropped_invalid += 1;
                    return;
                }
                self.note_response(now);
                self.note_peer_connected(now);
                match ctrl.body {
                    Control::Handshake(_) => {}
                    Control::KeepAlive => {}
                    Control::Ack(ack) => self.handle_ack(now, &ack),
                    Control::Nak(list) => self.handle_nak(now, list),
                    Control::CongestionWarning => {
                        self.with_cc(now, |cc, ctx| cc.on_congestion_warning(ctx));
                    }
                    Control::Shutdown => self.handle_shutdown(),
                    Control::Ack2(no) => self.handle_ack2(now, no),
                    Control::DropRequest(req) => self.handle_drop_request(now, &req),
                    Control::Error(code) => {
                        tracing::info!(code, "peer signalled an error; closing");
                        self.finish(CloseReason::PeerShutdown);
                    }
                    // A receiver standing in for UDT4's hands offers to its congestion control, as
                    // UDT4 4.11 does with every user-defined control packet.
                    Control::UserDefined { subtype, info, data }
                        if Self::is_policy_offer(subtype) && !self.config.udt4_estimators =>
                    {
                        self.handle_policy_offer(info, data);
                    }
                    Control::UserDefined { subtype, info, data } => {
                        let msg = CustomMessage { subtype, info, data: data.to_vec() };
                        self.with_cc(now, |cc, ctx| cc.on_custom_message(ctx, &msg));
                        self.drain_cc_messages();
                    }
                }
            }
        }
    }

    /// A deadline from `poll_timeout` passed.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.advance(now);
        let due: Vec<Timer> = self.timers.due(now).collect();
        for timer in due {
            if matches!(self.state, State::Closed(_)) {
                break; // an earlier handler closed the connection
            }
            self.timers.stop(timer);
            match timer {
                Timer::HandshakeResend => self.on_handshake_resend(now),
                Timer::ConnectDeadline => self.on_connect_deadline(),
                Timer::Ack => self.on_ack_timer(now),
                Timer::Nak => self.on_nak_timer(now),
                Timer::Exp => self.on_exp_timer(now),
                Timer::Linger => {
                    if self.closing {
                        self.send_shutdown_and_finish(now, CloseReason::LingerExpired);
                    }
                }
            }
        }
    }

    // ----- outputs -----

    /// The next datagram to send at `now`, written into `buf` (at least
    /// [`max_datagram_size`](Self::max_datagram_size) bytes); returns its length.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        self.advance(now);
        if let Some(n) = self.transmit_control(now, buf) {
            return Some(n);
        }
        if self.state == State::Connected {
            return self.transmit_data(now, buf, true).map(|t| t.len);
        }
        None
    }

    /// Like [`poll_transmit`](Self::poll_transmit), without copying data payloads: for a data
    /// packet only its 16-byte header is written into `buf`, and [`Transmit::payload`] says where
    /// the payload lies in [`send_storage`](Self::send_storage). The datagram is the header
    /// followed by that payload (e.g. two iovecs). The ranges stay valid until the connection is
    /// used mutably for anything but further `poll_transmit_ref` calls.
    pub fn poll_transmit_ref(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        self.advance(now);
        if let Some(len) = self.transmit_control(now, buf) {
            return Some(Transmit { len, payload: None });
        }
        if self.state == State::Connected {
            return self.transmit_data(now, buf, false);
        }
        None
    }

    /// The send buffer's payload storage (see [`poll_transmit_ref`](Self::poll_transmit_ref)).
    pub fn send_storage(&self) -> &[u8] {
        self.link.as_ref().map_or(&[], |l| l.tx.buf.storage())
    }

    /// When the driver must call `handle_timeout` (or `poll_transmit`, for paced data) next.
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        let timers = self.timers.next();
        let data = if self.state == State::Connected { self.next_data_time() } else { None };
        crate::time::earliest(timers, data)
    }

    /// Whether a data packet (new, retransmitted or a probe of the head) waits for its send
    /// time: the connection's next deadline may then be the pacing's, which must be met on time.
    /// Without one, its deadlines are its timers' (ACK, NAK, expiry, handshake, linger), which
    /// the thread running it may serve a little late to serve several in one wake-up.
    pub fn has_data_waiting(&self) -> bool {
        self.state == State::Connected && self.next_data_time().is_some()
    }

    /// The next event for the application.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    // ----- application -----

    /// Queue stream bytes; returns how many were taken.
    pub fn write(&mut self, data: &[u8]) -> Result<usize, ConnError> {
        self.check_writable(Mode::Stream)?;
        let tx = &mut self.link.as_mut().ok_or(ConnError::NotConnected)?.tx;
        let n = tx.buf.write_stream(data);
        if n == 0 && !data.is_empty() {
            return Err(ConnError::WouldBlock);
        }
        Ok(n)
    }

    /// Queue one message (message mode): delivered whole or not at all; dropped by the sender
    /// if not delivered within `ttl`; `in_order` makes the receiver deliver it after every
    /// earlier message.
    pub fn send_msg(
        &mut self,
        now: Instant,
        data: &[u8],
        ttl: Option<Duration>,
        in_order: bool,
    ) -> Result<MsgNo, ConnError> {
        self.advance(now);
        self.check_writable(Mode::Message)?;
        // A message must fit the peer's receive buffer whole, or it can never be delivered.
        let payload = Config::payload_size(self.mss);
        let max = self.peer_flow_window as usize * payload;
        if data.len() > max {
            return Err(ConnError::MessageTooLarge { len: data.len(), max });
        }
        let tx = &mut self.link.as_mut().ok_or(ConnError::NotConnected)?.tx;
        Ok(tx.buf.write_message(data, ttl, in_order, now)?)
    }

    /// Read stream bytes. `Ok(0)` only at end of stream (the peer shut down and everything was
    /// read); `Err(WouldBlock)` when nothing is ready yet.
    pub fn read(&mut self, out: &mut [u8]) -> Result<usize, ConnError> {
        if self.config.mode != Mode::Stream {
            return Err(ConnError::WrongMode);
        }
        let Some(link) = self.link.as_mut() else {
            return Err(self.not_open_error());
        };
        let n = link.rx.buf.read_stream(out);
        if n > 0 || out.is_empty() {
            self.after_read();
            return Ok(n);
        }
        self.empty_read_result()
    }

    /// Read stream bytes without copying them: the chunks left in `out` are given back to the
    /// receive buffer first ([`RecvBuffer::recycle`](crate::buffer::RecvBuffer::recycle)), then
    /// whole packets adding up to at most `max` bytes (at least one) are lent into it
    /// ([`RecvBuffer::take_stream`](crate::buffer::RecvBuffer::take_stream)). Returns the bytes
    /// lent; `Ok(0)` only at end of stream, `Err(WouldBlock)` when nothing is ready yet, as
    /// [`read`](Self::read).
    pub fn read_chunks(&mut self, max: usize, out: &mut Vec<RecvChunk>) -> Result<usize, ConnError> {
        if self.config.mode != Mode::Stream {
            return Err(ConnError::WrongMode);
        }
        let Some(link) = self.link.as_mut() else {
            out.clear();
            return Err(self.not_open_error());
        };
        for chunk in out.drain(..) {
            link.rx.buf.recycle(chunk);
        }
        let n = link.rx.buf.take_stream(max, out);
        if n > 0 {
            self.after_read();
            return Ok(n);
        }
        self.empty_read_result()
    }

    /// Read one whole message into `out`.
    pub fn recv_msg(&mut self, out: &mut [u8]) -> Result<usize, ConnError> {
        if self.config.mode != Mode::Message {
            return Err(ConnError::WrongMode);
        }
        let Some(link) = self.link.as_mut() else {
            return Err(self.not_open_error());
        };
        match link.rx.buf.read_message(out) {
            Some(Ok(n)) => {
                self.after_read();
                Ok(n)
            }
            Some(Err(crate::buffer::RecvMsgError::BufferTooSmall { len, cap })) => {
                Err(ConnError::BufferTooSmall { len, cap })
            }
            None => self.empty_read_result(),
        }
    }

    /// Nothing has arrived past what the application read: no unread bytes, nothing out of
    /// order, nothing resolved ahead. (A secured connection installs its keys only then, so
    /// nothing that came in clear before them is delivered after.)
    pub fn is_receive_side_idle(&self) -> bool {
        self.link
            .as_ref()
            .is_none_or(|l| l.rx.buf.readable_bytes() == 0 && l.rx.largest.next() == l.rx.buf.read_seq())
    }

    /// Bytes a stream read would return now.
    pub fn readable_bytes(&self) -> usize {
        self.link.as_ref().map_or(0, |l| l.rx.buf.readable_bytes())
    }

    /// Bytes a stream write would take now.
    pub fn writable_bytes(&self) -> usize {
        match (&self.link, self.state) {
            // Message mode's buffer has no unsent limit: this is its free space.
            (Some(l), State::Connected) if !self.closing => l.tx.buf.stream_room(),
            _ => 0,
        }
    }

    /// No control packet is waiting to leave (after a close: the shutdown has been handed to
    /// the driver).
    pub fn is_drained(&self) -> bool {
        self.control.is_empty()
    }

    /// The sequence number the next new data packet will carry (`None` before the connection
    /// is set up): a secured connection's boundary between what it sent in clear and sealed.
    pub fn next_send_seq(&self) -> Option<SeqNo> {
        self.link.as_ref().map(|l| l.tx.buf.next_seq())
    }

    /// Everything written has been acknowledged by the peer.
    pub fn is_flushed(&self) -> bool {
        self.link.as_ref().is_none_or(|l| l.tx.buf.is_empty())
    }

    /// Everything written has been acknowledged by a full ACK. A UDT4 receiver hands data to
    /// its application only up to its last full ACK (a light ACK moves the sender's
    /// acknowledged point, not the receiver's readable one), and once it gets a shutdown it
    /// stops reading when the readable part is empty: a shutdown sent on a light ACK alone loses
    /// what that ACK covered. So a closing connection shuts down only once this holds (the
    /// receiver's next ACK timer, one SYN, sends the full ACK).
    fn is_delivered(&self) -> bool {
        self.link.as_ref().is_none_or(|l| l.tx.buf.is_empty() && l.tx.last_full_ack == l.tx.buf.next_seq())
    }

    /// Close: linger until the send buffer is acknowledged (at most `config.linger`), then send
    /// a shutdown. Unsent data is dropped when linger is off.
    pub fn close(&mut self, now: Instant) {
        self.advance(now);
        match self.state {
            State::Closed(_) => {}
            State::Connecting => self.finish(CloseReason::Local),
            State::Connected => {
                if self.closing {
                    return;
                }
                self.closing = true;
                match self.config.linger {
                    Some(linger) if !self.is_delivered() => self.timers.set(Timer::Linger, now + linger),
                    _ => self.send_shutdown_and_finish(now, CloseReason::Local),
                }
            }
        }
    }

    /// Perfmon reading (UDT4 `perfmon`); `clear` starts a new interval.
    pub fn stats(&mut self, now: Instant, clear: bool) -> Snapshot {
        self.advance(now);
        let payload = Config::payload_size(self.mss) as u64;
        let mut values = InstantValues {
            send_period_us: self.cc.send_period().as_secs_f64() * 1e6,
            congestion_window: self.cc.congestion_window(),
            rtt_us: self.rtt.rtt_us(),
            rtt_var_us: self.rtt.var_us(),
            ..InstantValues::default()
        };
        if let Some(l) = &mut self.link {
            // Count the busy period in progress, so a reading mid-transfer includes it.
            if let Some(since) = l.tx.busy_since.as_mut() {
                self.stats.total.send_busy_us += (now - *since).as_micros() as u64;
                *since = now;
            }
            self.stats.total.msgs_expired_unsent = l.tx.buf.expired_unsent_msgs();
            values.flow_window = l.tx.flow_window;
            values.flight = l.tx.buf.unacked_packets() as u32;
            values.bandwidth_pkts = l.tx.peer_bandwidth;
            values.recv_rate_pkts = l.tx.peer_recv_rate;
            values.send_buf_free_bytes = l.tx.buf.free_bytes() as u64;
            values.recv_buf_free_bytes = l.rx.buf.free_packets() as u64 * payload;
        }
        self.stats.snapshot(now, values, clear)
    }

    /// Running totals without starting a new interval.
    pub fn counters(&self) -> Counters {
        let mut c = self.stats.total;
        if let Some(l) = &self.link {
            c.msgs_expired_unsent = l.tx.buf.expired_unsent_msgs();
        }
        c
    }

    // ----- shared helpers -----

    fn check_writable(&self, mode: Mode) -> Result<(), ConnError> {
        if self.config.mode != mode {
            return Err(ConnError::WrongMode);
        }
        match self.state {
            State::Connecting => Err(ConnError::NotConnected),
            State::Closed(r) => Err(ConnError::Closed(r)),
            State::Connected if self.closing => Err(ConnError::Closed(CloseReason::Local)),
            State::Connected => Ok(()),
        }
    }

    fn not_open_error(&self) -> ConnError {
        match self.state {
            State::Closed(r) => ConnError::Closed(r),
            _ => ConnError::NotConnected,
        }
    }

    fn empty_read_result(&self) -> Result<usize, ConnError> {
        match self.state {
            _ if self.peer_shutdown => Ok(0),
            State::Closed(CloseReason::Local) | State::Closed(CloseReason::LingerExpired) => Ok(0),
            State::Closed(r) => Err(ConnError::Closed(r)),
            State::Connecting => Err(ConnError::NotConnected),
            State::Connected => Err(ConnError::WouldBlock),
        }
    }

    /// Any packet from the peer: reset the EXP count (UDT4 `m_iEXPCount = 1`).
    fn note_response(&mut self, now: Instant) {
        self.exp_count = 1;
        self.last_response = now;
        self.last_heard = now;
        if self.state == State::Connected {
            self.arm_exp();
        }
    }

    /// EXP interval (protocol notes §3): count x (RTT + 4 RTTVar) + SYN, at least count x 300 ms;
    /// a congestion control's RTO replaces it without back-off.
    fn exp_interval(&self) -> Duration {
        if let Some(rto) = self.cc.rto() {
            return rto.max(MIN_OVERRIDE);
        }
        let count = self.exp_count;
        let base = self.rto_base() * count + SYN;
        base.max(MIN_EXP * count)
    }

    /// RTT + 4 RTTVar, with the congestion control's RTT override in place of the smoothed RTT.
    fn rto_base(&self) -> Duration {
        match self.cc.rtt() {
            Some(rtt) => rtt + self.rtt.var() * 4,
            None => self.rtt.rto_base(),
        }
    }

    /// Arm the EXP timer: due an EXP interval after the last response, or when the peer-idle
    /// timeout runs out if that is sooner.
    fn arm_exp(&mut self) {
        let mut at = self.last_response + self.exp_interval();
        if let Some(idle) = self.config.peer_idle_timeout {
            at = at.min(self.last_heard + idle);
        }
        self.timers.set(Timer::Exp, at);
    }

    /// Whether `Config::peer_idle_timeout` ran out at `now`.
    fn peer_idle_expired(&self, now: Instant) -> bool {
        self.config.peer_idle_timeout.is_some_and(|idle| now - self.last_heard >= idle)
    }

    /// Run a congestion-control callback with a fresh context.
    fn with_cc<R>(
        &mut self,
        now: Instant,
        f: impl FnOnce(&mut dyn CongestionControl, &mut CcContext<'_>) -> R,
    ) -> R {
        let (recv_rate, bandwidth, snd_curr_seq, last_ack, flight, measured) = match &self.link {
            Some(l) => (
                l.tx.peer_recv_rate,
                l.tx.peer_bandwidth,
                l.tx.buf.next_seq().prev(),
                l.tx.last_ack,
                l.tx.buf.unacked_packets() as u32,
                sender::measured_period(&l.tx, now),
            ),
            None => (0, 0, self.local_isn.prev(), self.local_isn, 0, None),
        };
        let peer_udt4 = self.exchange.gave_up(now, self.rto_base());
        let mut ctx = CcContext {
            now,
            mss: self.mss,
            payload_size: Config::payload_size(self.mss) as u32,
            syn_interval: SYN,
            rtt: self.rtt.rtt(),
            rtt_var: self.rtt.var(),
            recv_rate,
            bandwidth,
            snd_curr_seq,
            last_ack,
            max_window: self.peer_flow_window,
            flight,
            measured_send_period: measured,
            stats: &self.stats,
            ack: self.ack_report.take(),
            peer_udt4,
            rng: &mut *self.rng,
        };
        f(&mut *self.cc, &mut ctx)
    }

    /// Queue the congestion control's custom messages.
    fn drain_cc_messages(&mut self) {
        while let Some(m) = self.cc.poll_custom_message() {
            self.control.push_back(PendingControl::Custom(m));
        }
    }

    fn handle_shutdown(&mut self) {
        self.peer_shutdown = true;
        self.finish(CloseReason::PeerShutdown);
    }

    fn send_shutdown_and_finish(&mut self, now: Instant, reason: CloseReason) {
        // First a full ACK of whatever arrived since the last one: the peer may be waiting for
        // it (a `flush_acknowledged` after its last write), and the shutdown would otherwise
        // end its connection first (the application had read the data, but the peer could not
        // know; seen once in 64 concurrent connections on a loaded machine).
        self.send_full_ack(now, false);
        // Nothing repeats a shutdown (UDT4 sends one): a lost one leaves the peer waiting for
        // its keep-alive timeout, tens of seconds (at 1% loss, most likely why a benchmark's
        // receiver was killed after 15 s). A few copies cost nothing; a peer that took the
        // first drops the others as packets for a closed socket (docs/deviations.md W10).
        for _ in 0..SHUTDOWN_COPIES {
            self.control.push_back(PendingControl::Shutdown);
        }
        self.finish(reason);
    }

    /// Enter `Closed(reason)`: stop every timer, tell the application. Queued shutdowns and
    /// ACKs (the final ACK and shutdown copies) still go out through `poll_transmit`, and so
    /// does an accepted connection's handshake answer not yet sent, ahead of them: without it
    /// a caller whose peer accepted and closed at once would see no answer and time out,
    /// instead of a connection and its end.
    fn finish(&mut self, reason: CloseReason) {
        if matches!(self.state, State::Closed(_)) {
            return;
        }
        if self.state == State::Connected {
            let now = self.last_response;
            self.with_cc(now, |cc, ctx| cc.close(ctx));
        }
        self.state = State::Closed(reason);
        self.timers.clear();
        let answer = self.role == Role::Accepted;
        self.control.retain(|c| match c {
            PendingControl::Shutdown | PendingControl::Ack(_) => true,
            PendingControl::Handshake { .. } => answer,
            _ => false,
        });
        self.events.push_back(Event::Closed(reason));
    }
}
