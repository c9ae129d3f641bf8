//! Connection setup (protocol notes §7; thesis §2.2.2; UDT4 `CUDT::connect`).
//!
//! * Caller: request type 1 with cookie 0 to destination 0, resent every 250 ms; the listener's
//!   cookie reply (type 1, cookie set) is echoed with type -1; the final answer (type -1) carries
//!   the accepted socket's id, the negotiated MSS and the caller's ISN, which both directions use.
//! * Accepted: built by the listener from a verified request; connected at once; answers every
//!   repeated request with the same final answer.
//! * Rendezvous: both sides send type 0 (to destination 0, then to the peer's id once known);
//!   on receiving 0, or -1 while still at 0, a side switches to -1; a side at -1 receiving -1 or
//!   -2 is connected; a connected side answers a peer's repeated request with -2. Each side keeps
//!   its own ISN. Deviation (docs/deviations.md): a side at 0 that receives -1 connects at once
//!   instead of waiting for the peer's next resend (UDT4 waits up to 250 ms).
//!
//! Hostile handshakes (wrong version, socket type, absurd MSS or window, unexpected type) are
//! dropped and counted; 4.11's -2 answers carry version 0 and are accepted.

use std::net::SocketAddr;

use rand_core::RngCore;

use super::{
    CloseReason, Config, ConfigError, Connection, Event, Link, Mode, PendingControl, Receiver, Role, Sender,
    State, Timer,
};
use crate::buffer::{RecvBuffer, SendBuffer};
use crate::loss_list::{RecvLossList, SendLossList};
use crate::packet::{Handshake, RequestType, SocketType, MAX_MSS, MIN_MSS};
use crate::seq::SocketId;
use crate::time::Instant;

/// Handshake progress.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct HandshakeState {
    /// The request we (re)send while connecting.
    pub request: Option<Handshake>,
    /// The accepted side's final answer, repeated for duplicate requests.
    pub answer: Option<Handshake>,
    /// The caller's final request and the listener's answer, as this end sent or received
    /// them (see [`Connection::handshake_transcript`]).
    pub agreed: Option<(Handshake, Handshake)>,
}

/// Bytes of [`Connection::handshake_transcript`].
pub const TRANSCRIPT_LEN: usize = 48;

impl Mode {
    /// The handshake socket-type word for this mode.
    pub fn socket_type(self) -> SocketType {
        match self {
            Mode::Stream => SocketType::Stream,
            Mode::Message => SocketType::Datagram,
        }
    }
}

/// The flow window we advertise in handshakes: min(receive buffer, flow-control limit).
fn advertised_window(config: &Config) -> u32 {
    config.recv_buffer_pkts.min(config.flow_window)
}

impl Connection {
    /// Start a regular connection to a listener at `peer`.
    pub fn connect(
        config: Config,
        local_id: SocketId,
        peer: SocketAddr,
        now: Instant,
        rng: Box<dyn RngCore + Send>,
    ) -> Result<Connection, ConfigError> {
        Connection::start(config, Role::Caller, local_id, peer, now, rng)
    }

    /// Start a rendezvous connection with `peer` (which does the same towards us).
    pub fn rendezvous(
        config: Config,
        local_id: SocketId,
        peer: SocketAddr,
        now: Instant,
        rng: Box<dyn RngCore + Send>,
    ) -> Result<Connection, ConfigError> {
        Connection::start(config, Role::Rendezvous, local_id, peer, now, rng)
    }

    /// Queue the first request of a caller (type 1) or rendezvous side (type 0) and arm the
    /// resend and give-up timers.
    fn start(
        config: Config,
        role: Role,
        local_id: SocketId,
        peer: SocketAddr,
        now: Instant,
        rng: Box<dyn RngCore + Send>,
    ) -> Result<Connection, ConfigError> {
        let mut c = Connection::new_common(config, role, local_id, peer, now, rng)?;
        let (request_type, give_up) = match role {
            Role::Rendezvous => (RequestType::Rendezvous, c.config.rendezvous_timeout),
            _ => (RequestType::Request, c.config.connect_timeout),
        };
        c.hs.request = Some(c.own_handshake(request_type, 0));
        c.queue_request();
        c.timers.set(Timer::HandshakeResend, now + c.config.handshake_resend);
        c.timers.set(Timer::ConnectDeadline, now + give_up);
        Ok(c)
    }

    /// Build the accepted side of a connection from a request the listener verified (type -1
    /// with a valid cookie, version 4, matching socket type). Connected at once; the final
    /// answer is queued.
    pub fn accept(
        config: Config,
        local_id: SocketId,
        peer: SocketAddr,
        request: &Handshake,
        now: Instant,
        rng: Box<dyn RngCore + Send>,
    ) -> Result<Connection, ConfigError> {
        let mut c = Connection::new_common(config, Role::Accepted, local_id, peer, now, rng)?;
        c.peer_id = request.socket_id;
        c.mss = request.mss.clamp(MIN_MSS, MAX_MSS).min(c.config.mss);
        c.peer_flow_window = request.flow_window.max(2);
        // protocol notes §7: the caller's ISN serves both directions.
        c.local_isn = request.initial_seq;
        c.peer_isn = request.initial_seq;
        let mut answer = c.own_handshake(RequestType::Response, request.cookie);
        answer.mss = c.mss;
        c.hs.answer = Some(answer);
        c.hs.agreed = Some((*request, answer));
        c.control.push_back(PendingControl::Handshake { hs: answer, dst: c.peer_id });
        c.establish(now);
        Ok(c)
    }

    /// The regular (non-rendezvous) handshake as this end saw it: for the caller's final
    /// request and the listener's answer, each as 6 big-endian words (version, socket type,
    /// ISN, MSS, flow window, socket id). Both ends compute the same bytes unless something on
    /// the path changed a handshake; a secured connection binds them into its key agreement, so
    /// such a change fails the agreement. `None` before the connection is set up, and for
    /// rendezvous connections.
    pub fn handshake_transcript(&self) -> Option<[u8; TRANSCRIPT_LEN]> {
        let (request, answer) = self.hs.agreed?;
        let mut out = [0u8; TRANSCRIPT_LEN];
        for (i, hs) in [request, answer].iter().enumerate() {
            let words = [
                hs.version,
                hs.socket_type.word(),
                hs.initial_seq.value(),
                hs.mss,
                hs.flow_window,
                hs.socket_id.0,
            ];
            for (j, w) in words.iter().enumerate() {
                let at = (i * 6 + j) * 4;
                out[at..at + 4].copy_from_slice(&w.to_be_bytes());
            }
        }
        Some(out)
    }

    /// A repeated request for this (accepted) connection: answer it again.
    pub fn handle_duplicate_request(&mut self) {
        if let Some(answer) = self.hs.answer {
            self.control.push_back(PendingControl::Handshake { hs: answer, dst: self.peer_id });
        }
    }

    fn own_handshake(&self, request_type: RequestType, cookie: u32) -> Handshake {
        Handshake {
            version: 4,
            socket_type: self.config.mode.socket_type(),
            initial_seq: self.local_isn,
            mss: self.mss,
            flow_window: advertised_window(&self.config),
            request_type,
            socket_id: self.local_id,
            cookie,
            // An IPv4 peer reaching a dual-stack IPv6 socket appears as ::ffff:a.b.c.d: it is
            // told its address as IPv4, the form a UDT4 IPv4 socket reads (word 0).
            peer_ip: Handshake::encode_peer_ip(self.peer_addr.ip().to_canonical()),
        }
    }

    fn queue_request(&mut self) {
        if let Some(hs) = self.hs.request {
            // UDT4 sends regular requests to destination 0; rendezvous ones to the peer's id
            // once known.
            let dst = if self.role == Role::Rendezvous { self.peer_id } else { SocketId(0) };
            self.control.retain(|c| !matches!(c, PendingControl::Handshake { .. }));
            self.control.push_back(PendingControl::Handshake { hs, dst });
        }
    }

    pub(super) fn on_handshake_resend(&mut self, now: Instant) {
        if self.state == State::Connecting {
            self.queue_request();
            self.timers.set(Timer::HandshakeResend, now + self.config.handshake_resend);
        }
    }

    pub(super) fn on_connect_deadline(&mut self) {
        if self.state == State::Connecting {
            self.finish(CloseReason::ConnectTimedOut);
        }
    }

    /// A handshake arrived (destination 0 or our id).
    pub(super) fn handle_handshake(&mut self, now: Instant, hs: &Handshake) {
        if hs.request_type == RequestType::Rejected {
            if self.state == State::Connecting {
                self.finish(CloseReason::Refused);
            }
            return;
        }
        let is_rdv_connected_answer = hs.request_type == RequestType::RendezvousConnected;
        // 4.11's -2 answers carry version 0 and socket type 0: only their ids matter.
        let right_kind =
            is_rdv_connected_answer || (hs.version == 4 && hs.socket_type == self.config.mode.socket_type());
        let acceptable = right_kind && (MIN_MSS..=MAX_MSS).contains(&hs.mss) && hs.flow_window >= 2;
        if !acceptable {
            self.stats.total.dropped_invalid += 1;
            return;
        }
        match (self.state, self.role) {
            (State::Connecting, Role::Caller) => self.caller_handshake(now, hs),
            (State::Connecting, Role::Rendezvous) => self.rendezvous_handshake(now, hs),
            (State::Connected, Role::Accepted)
                if hs.socket_id == self.peer_id && !is_rdv_connected_answer =>
            {
                // The peer is alive, still waiting for our answer.
                self.last_heard = now;
                self.arm_exp();
                self.handle_duplicate_request();
            }
            // UDT4 processCtrl case 0: a connected rendezvous socket answers with -2.
            (State::Connected, Role::Rendezvous)
                if hs.socket_id == self.peer_id && !is_rdv_connected_answer =>
            {
                self.last_heard = now;
                self.arm_exp();
                let answer = self.own_handshake(RequestType::RendezvousConnected, 0);
                self.control.push_back(PendingControl::Handshake { hs: answer, dst: self.peer_id });
            }
            _ => {}
        }
    }

    fn caller_handshake(&mut self, now: Instant, hs: &Handshake) {
        let Some(request) = self.hs.request else { return };
        match hs.request_type {
            // The cookie reply: echo the cookie with type -1, at once.
            RequestType::Request if request.request_type == RequestType::Request => {
                if hs.socket_id != self.local_id || hs.initial_seq != self.local_isn {
                    self.stats.total.dropped_invalid += 1;
                    return;
                }
                let mut next = request;
                next.request_type = RequestType::Response;
                next.cookie = hs.cookie;
                self.hs.request = Some(next);
                self.queue_request();
                self.timers.set(Timer::HandshakeResend, now + self.config.handshake_resend);
            }
            RequestType::Response => {
                if hs.initial_seq != self.local_isn || hs.socket_id == SocketId(0) {
                    self.stats.total.dropped_invalid += 1;
                    return;
                }
                self.peer_id = hs.socket_id;
                self.mss = hs.mss.min(self.config.mss);
                self.peer_flow_window = hs.flow_window;
                self.peer_isn = self.local_isn;
                self.hs.agreed = Some((request, *hs));
                self.establish(now);
            }
            _ => self.stats.total.dropped_invalid += 1,
        }
    }

    fn rendezvous_handshake(&mut self, now: Instant, hs: &Handshake) {
        let Some(mut request) = self.hs.request else { return };
        if hs.socket_id == SocketId(0) {
            self.stats.total.dropped_invalid += 1;
            return;
        }
        self.peer_id = hs.socket_id;
        if hs.request_type != RequestType::RendezvousConnected {
            self.peer_isn = hs.initial_seq;
            self.mss = hs.mss.min(self.config.mss);
            self.peer_flow_window = hs.flow_window;
        }
        match (request.request_type, hs.request_type) {
            (RequestType::Rendezvous, RequestType::Rendezvous) => {
                request.request_type = RequestType::Response;
                self.hs.request = Some(request);
                self.queue_request();
            }
            (RequestType::Rendezvous, RequestType::Response) => {
                request.request_type = RequestType::Response;
                self.hs.request = Some(request);
                self.queue_request();
                self.establish(now);
            }
            (RequestType::Response, RequestType::Rendezvous) => self.queue_request(),
            (RequestType::Response, RequestType::Response)
            | (RequestType::Response, RequestType::RendezvousConnected) => self.establish(now),
            _ => self.stats.total.dropped_invalid += 1,
        }
    }

    /// Handshake done: build the sending and receiving halves, start the timers.
    pub(super) fn establish(&mut self, now: Instant) {
        let payload = Config::payload_size(self.mss);
        let tx = Sender {
            buf: SendBuffer::new(self.config.send_buffer_pkts as usize, payload, self.local_isn)
                .with_unsent_limit(match self.config.mode {
                    Mode::Stream => self.config.unsent_limit_pkts as usize,
                    Mode::Message => 0,
                }),
            loss: SendLossList::new(),
            last_ack: self.local_isn,
            last_full_ack: self.local_isn,
            flow_window: self.peer_flow_window,
            next_send: now,
            peer_recv_rate: 0,
            peer_bandwidth: 0,
            sample_start: now,
            sample_pkts: 0,
            sample_idle: false,
            busy_since: None,
            last_ack2: None,
        };
        let rx = Receiver {
            buf: RecvBuffer::new(self.config.recv_buffer_pkts as usize, payload, self.peer_isn),
            loss: RecvLossList::new(),
            largest: self.peer_isn.prev(),
            last_ack_sent: self.peer_isn,
            last_ack2: self.peer_isn,
            last_ack_no: crate::seq::AckNo::new(0),
            last_ack_time: None,
            last_rates_time: None,
            history: super::rate_sampling::AckHistory::with_capacity(
                super::rate_sampling::AckHistory::capacity_for(
                    self.config.recv_buffer_pkts.max(self.config.flow_window),
                    self.policy.ack_interval,
                ),
            ),
            arrivals: if self.config.udt4_estimators {
                super::rate_sampling::ArrivalEstimator::udt4_primed()
            } else {
                Default::default()
            },
            queue_delay: Default::default(),
            pkts_since_ack: 0,
            writes_ended: 0,
            light_acks: 1,
            window_update: false,
            advertised: self.config.recv_buffer_pkts,
        };
        self.link = Some(Link { tx, rx });
        self.state = State::Connected;
        self.timers.stop(Timer::HandshakeResend);
        self.timers.stop(Timer::ConnectDeadline);
        self.exp_count = 1;
        self.last_response = now;
        self.last_heard = now;
        self.arm_exp();
        self.start_policy_exchange(now);
        self.with_cc(now, |cc, ctx| cc.init(ctx));
        self.drain_cc_messages();
        self.events.push_back(Event::Connected);
    }
}
