//! FOBS' connection setup as sans-IO sessions (FOBS.md, "Setup"): [`Server`] (the data sender)
//! and [`Client`] (the receiver) run the request, the accept or refusal and the joining of
//! control channel 1, then the transfer itself ([`SenderSession`], [`ReceiverSession`]), so a
//! driver runs a whole transfer, setup included, by `now` and bytes alone.
//!
//! The receiver writes its request (file name, UDP port, acknowledgement scheme) on channel 0;
//! the sender answers with an accept (the session token, drawn by the driver and passed in, the
//! file's size and geometry, its own UDP port) or a refusal; the receiver then presents the
//! token on channel 1, and both run their transfer sessions. Over sockets the sender's driver
//! asks [`Server::vet_hello`] about every connection on its listener before it becomes
//! channel 1.
//!
//! Invariants: each setup step is bounded by `Params::setup_timeout` from the time the step
//! began; the sender opens a name only through its opener (a confined lookup over sockets);
//! no datagram leaves before channel 1 is joined; bytes that follow a setup message in the
//! same read reach the transfer session, in order.

use std::collections::VecDeque;

use udt_proto::time::Instant;

use super::params::{Params, Transfer};
use super::receiver::ReceiverSession;
use super::sender::SenderSession;
use super::wire::{self, Accept, Message, MAX_NAME};
use crate::session::{Counters, Event, Session};
use crate::storage::{Sink, Source};

/// Opens the source of a requested name, or says why not (one line, sent to the receiver).
pub type Opener<'a, S> = Box<dyn FnMut(&str) -> Result<S, String> + Send + 'a>;

/// Why a setup did not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupError {
    /// Refused, with the reason sent (sender) or received (receiver).
    Refused(String),
    /// The peer broke the setup protocol.
    Protocol(String),
    /// A step took longer than the setup timeout.
    TimedOut(String),
}

impl SetupError {
    fn line(&self) -> String {
        match self {
            SetupError::Refused(why) => format!("refused: {why}"),
            SetupError::Protocol(why) => format!("protocol error: {why}"),
            SetupError::TimedOut(why) => why.clone(),
        }
    }
}

/// Where a setup stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupState {
    /// Messages still to exchange.
    Pending,
    /// Channel 0 is done and the sender waits for channel 1 (a [`Server`] only).
    AwaitingHello,
    /// The transfer session runs.
    Running,
    /// The setup failed.
    Failed(SetupError),
}

/// Take one whole frame from the front of `buf`: the message and the bytes after it.
fn take_frame(buf: &mut Vec<u8>) -> Result<Option<(Message, Vec<u8>)>, String> {
    match wire::decode_frame(buf) {
        Ok(Some((msg, used))) => {
            let rest = buf.split_off(used.min(buf.len()));
            buf.clear();
            Ok(Some((msg, rest)))
        }
        Ok(None) => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

/// Queued control bytes and events, and the failure, common to both ends.
#[derive(Default)]
struct Shared {
    out: VecDeque<(usize, Vec<u8>)>,
    events: VecDeque<Event>,
    failure: Option<SetupError>,
}

impl Shared {
    fn fail(&mut self, why: SetupError) {
        if self.failure.is_none() {
            self.events.push_back(Event::Failed(why.line()));
            self.failure = Some(why);
        }
    }
}

enum ServerState<'a, S: Source> {
    Request { deadline: Instant, open: Opener<'a, S> },
    Hello { deadline: Instant, session: SenderSession<S> },
    Running(SenderSession<S>),
    Ended,
}

/// The data sender's end of one FOBS transfer, setup included.
pub struct Server<'a, S: Source> {
    params: Params,
    token: u64,
    udp_port: u16,
    name: Option<String>,
    data_port: Option<u16>,
    buf: Vec<u8>,
    state: ServerState<'a, S>,
    shared: Shared,
}

impl<'a, S: Source> Server<'a, S> {
    /// A sender starting at `now` that answers a request with `token` (drawn by the driver
    /// from a good random source) and its data socket's `udp_port`, opening names with `open`.
    pub fn new(
        now: Instant,
        params: &Params,
        token: u64,
        udp_port: u16,
        open: Opener<'a, S>,
    ) -> Result<Self, String> {
        params.check_rates().map_err(|e| format!("FOBS parameters: {e}"))?;
        Ok(Server {
            params: params.clone(),
            token,
            udp_port,
            name: None,
            data_port: None,
            buf: Vec::new(),
            state: ServerState::Request { deadline: now + params.setup_timeout, open },
            shared: Shared::default(),
        })
    }

    /// The name the receiver asked for, once it did.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The receiver's UDP port, once its request is accepted.
    pub fn data_port(&self) -> Option<u16> {
        self.data_port
    }

    /// Where the setup stands.
    pub fn setup_state(&self) -> SetupState {
        match (&self.shared.failure, &self.state) {
            (Some(e), _) => SetupState::Failed(e.clone()),
            (None, ServerState::Request { .. }) => SetupState::Pending,
            (None, ServerState::Hello { .. }) => SetupState::AwaitingHello,
            (None, ServerState::Running(_) | ServerState::Ended) => SetupState::Running,
        }
    }

    /// Whether `frame`, the first message of a connection, makes it this transfer's channel 1:
    /// a hello with the session's token from the receiver's host (`same_host`); otherwise the
    /// reason to send back before closing it.
    pub fn vet_hello(&self, frame: &[u8], same_host: bool) -> Result<(), String> {
        let msg = match wire::decode_frame(frame) {
            Ok(Some((msg, _))) => msg,
            Ok(None) => return Err("a setup message shorter than its header says".into()),
            Err(e) => return Err(e.to_string()),
        };
        match msg {
            Message::Hello { token } if token == self.token && same_host => match self.state {
                ServerState::Hello { .. } => Ok(()),
                _ => Err("no transfer is waiting for its second connection".into()),
            },
            Message::Hello { .. } => Err("unknown session token".into()),
            Message::Request { .. } => Err("busy: another transfer is being set up; try again".into()),
            other => Err(format!("expected a hello, got {}", other.name())),
        }
    }

    fn session(&mut self) -> Option<&mut SenderSession<S>> {
        match &mut self.state {
            ServerState::Running(s) => Some(s),
            _ => None,
        }
    }

    fn refuse(&mut self, reason: String) {
        self.shared.out.push_back((0, Message::Refuse { reason: reason.clone() }.encode()));
        self.shared.fail(SetupError::Refused(reason));
        self.state = ServerState::Ended;
    }

    fn on_request(&mut self, now: Instant, msg: Message, rest: &[u8]) {
        let ServerState::Request { open, .. } = &mut self.state else { return };
        let (udp_port, scheme, name) = match msg {
            Message::Request { udp_port, scheme, name } => (udp_port, scheme, name),
            other => {
                let why = format!("expected a request, got {}", other.name());
                self.shared.out.push_back((0, Message::Refuse { reason: why.clone() }.encode()));
                self.shared.fail(SetupError::Protocol(why));
                self.state = ServerState::Ended;
                return;
            }
        };
        self.name = Some(name.clone());
        if udp_port == 0 {
            return self.refuse("the request names UDP port 0".into());
        }
        let source = match open(&name) {
            Ok(source) => source,
            Err(reason) => return self.refuse(reason),
        };
        let size = source.len();
        let transfer = match Transfer::from_params(size, &self.params, scheme) {
            Ok(t) => t,
            Err(e) => return self.refuse(format!("cannot send {name}: {e}")),
        };
        let g = transfer.geometry;
        let accept = Accept {
            token: self.token,
            size,
            chunk_packets: g.chunk_packets,
            segment_packets: g.segment_packets,
            payload: g.payload,
            udp_port: self.udp_port,
            scheme,
        };
        self.shared.out.push_back((0, Message::Accept(accept).encode()));
        self.shared.events.push_back(Event::DataPeerPort(udp_port));
        self.data_port = Some(udp_port);
        let mut session = SenderSession::new(source, transfer, &self.params);
        if !rest.is_empty() {
            session.handle_control(now, 0, rest);
        }
        self.state = ServerState::Hello { deadline: now + self.params.setup_timeout, session };
    }

    fn on_hello_bytes(&mut self, now: Instant, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        let frame = self.buf.clone();
        let rest = match take_frame(&mut self.buf) {
            Ok(None) => return,
            Ok(Some((_, rest))) => rest,
            Err(why) => return self.fail_protocol(why),
        };
        if let Err(why) = self.vet_hello(&frame, true) {
            return self.fail_protocol(why);
        }
        let state = std::mem::replace(&mut self.state, ServerState::Ended);
        if let ServerState::Hello { mut session, .. } = state {
            if !rest.is_empty() {
                session.handle_control(now, 1, &rest);
            }
            self.state = ServerState::Running(session);
        }
    }

    fn fail_protocol(&mut self, why: String) {
        self.shared.fail(SetupError::Protocol(why));
        self.state = ServerState::Ended;
    }
}

impl<S: Source> Session for Server<'_, S> {
    fn handle_control(&mut self, now: Instant, channel: usize, bytes: &[u8]) {
        match (&mut self.state, channel) {
            (ServerState::Running(s), _) => s.handle_control(now, channel, bytes),
            (ServerState::Request { .. }, 0) => {
                self.buf.extend_from_slice(bytes);
                match take_frame(&mut self.buf) {
                    Ok(None) => {}
                    Ok(Some((msg, rest))) => self.on_request(now, msg, &rest),
                    Err(why) => self.fail_protocol(why),
                }
            }
            (ServerState::Hello { session, .. }, 0) => session.handle_control(now, 0, bytes),
            (ServerState::Hello { .. }, 1) => self.on_hello_bytes(now, bytes),
            (ServerState::Ended, _) => {}
            (_, other) => self.fail_protocol(format!("bytes on control channel {other} during setup")),
        }
    }

    fn handle_control_closed(&mut self, now: Instant, channel: usize) {
        match &mut self.state {
            ServerState::Running(s) => s.handle_control_closed(now, channel),
            ServerState::Ended => {}
            _ => self.fail_protocol("the peer closed the connection during setup".into()),
        }
    }

    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) {
        if let Some(s) = self.session() {
            s.handle_datagram(now, datagram);
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        let limit = self.params.setup_timeout;
        match &mut self.state {
            ServerState::Running(s) => s.handle_timeout(now),
            ServerState::Request { deadline, .. } if now >= *deadline => {
                self.shared
                    .fail(SetupError::TimedOut(format!("no request from the receiver within {limit:?}")));
                self.state = ServerState::Ended;
            }
            ServerState::Hello { deadline, .. } if now >= *deadline => {
                let why = format!("the receiver did not open control channel 1 within {limit:?}");
                self.shared.fail(SetupError::TimedOut(why));
                self.state = ServerState::Ended;
            }
            _ => {}
        }
    }

    fn poll_control(&mut self) -> Option<(usize, Vec<u8>)> {
        self.shared.out.pop_front().or_else(|| self.session()?.poll_control())
    }

    fn poll_datagram(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        self.session()?.poll_datagram(now, buf)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match &self.state {
            ServerState::Running(s) => s.poll_timeout(),
            ServerState::Request { deadline, .. } | ServerState::Hello { deadline, .. } => Some(*deadline),
            ServerState::Ended => None,
        }
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.shared.events.pop_front().or_else(|| self.session()?.poll_event())
    }

    fn counters(&self) -> Counters {
        match &self.state {
            ServerState::Running(s) | ServerState::Hello { session: s, .. } => s.counters(),
            _ => Counters::default(),
        }
    }

    fn max_datagram(&self) -> usize {
        match &self.state {
            ServerState::Running(s) => s.max_datagram(),
            _ => max_datagram(&self.params),
        }
    }
}

/// The largest datagram either end of a transfer under `params` sends or accepts.
fn max_datagram(params: &Params) -> usize {
    let payload = usize::from(params.payload);
    (wire::DATA_HEADER + payload).max(wire::MAP_HEADER + payload)
}

enum ClientState<K: Sink> {
    Request { deadline: Instant, sink: K },
    Running(Box<ReceiverSession<K>>),
    Ended,
}

/// The receiving end of one FOBS transfer, setup included.
pub struct Client<K: Sink> {
    params: Params,
    buf: Vec<u8>,
    data_port: Option<u16>,
    state: ClientState<K>,
    shared: Shared,
}

impl<K: Sink> Client<K> {
    /// A receiver starting at `now` that asks for `name` (relative to the sender's root), to
    /// receive datagrams on `udp_port`, into `sink`.
    pub fn new(now: Instant, params: &Params, name: &str, udp_port: u16, sink: K) -> Result<Self, String> {
        if name.len() > MAX_NAME {
            return Err(format!("a name of {} bytes is over FOBS' limit of {MAX_NAME}", name.len()));
        }
        let request = Message::Request { udp_port, scheme: params.ack_scheme, name: name.to_owned() };
        let mut shared = Shared::default();
        shared.out.push_back((0, request.encode()));
        Ok(Client {
            params: params.clone(),
            buf: Vec::new(),
            data_port: None,
            state: ClientState::Request { deadline: now + params.setup_timeout, sink },
            shared,
        })
    }

    /// Where the setup stands (a client never waits for a hello).
    pub fn setup_state(&self) -> SetupState {
        match (&self.shared.failure, &self.state) {
            (Some(e), _) => SetupState::Failed(e.clone()),
            (None, ClientState::Request { .. }) => SetupState::Pending,
            (None, _) => SetupState::Running,
        }
    }

    /// The sender's UDP port, once its accept came.
    pub fn data_port(&self) -> Option<u16> {
        self.data_port
    }

    /// The receiving session, once it runs.
    pub fn session(&self) -> Option<&ReceiverSession<K>> {
        match &self.state {
            ClientState::Running(s) => Some(&**s),
            _ => None,
        }
    }

    fn session_mut(&mut self) -> Option<&mut ReceiverSession<K>> {
        match &mut self.state {
            ClientState::Running(s) => Some(s),
            _ => None,
        }
    }

    fn fail(&mut self, why: SetupError) {
        self.shared.fail(why);
        self.state = ClientState::Ended;
    }

    fn on_answer(&mut self, now: Instant, msg: Message, rest: &[u8]) {
        let accept = match msg {
            Message::Accept(a) => a,
            Message::Refuse { reason } => return self.fail(SetupError::Refused(reason)),
            other => {
                let why = format!("expected an accept or a refusal, got {}", other.name());
                return self.fail(SetupError::Protocol(why));
            }
        };
        if accept.scheme != self.params.ack_scheme {
            let why = "the sender answered with another acknowledgement scheme".to_string();
            return self.fail(SetupError::Protocol(why));
        }
        if accept.udp_port == 0 {
            return self.fail(SetupError::Protocol("the sender's accept names UDP port 0".into()));
        }
        let transfer = match Transfer::new(
            accept.size,
            accept.payload,
            accept.chunk_packets,
            accept.segment_packets,
            accept.scheme,
        ) {
            Ok(t) => t,
            Err(e) => {
                return self.fail(SetupError::Protocol(format!("the sender's accept is out of range: {e}")))
            }
        };
        let ClientState::Request { sink, .. } = std::mem::replace(&mut self.state, ClientState::Ended) else {
            return;
        };
        self.shared.out.push_back((1, Message::Hello { token: accept.token }.encode()));
        self.shared.events.push_back(Event::DataPeerPort(accept.udp_port));
        self.data_port = Some(accept.udp_port);
        let mut session = Box::new(ReceiverSession::new(sink, transfer));
        if !rest.is_empty() {
            session.handle_control(now, 0, rest);
        }
        self.state = ClientState::Running(session);
    }
}

impl<K: Sink> Session for Client<K> {
    fn handle_control(&mut self, now: Instant, channel: usize, bytes: &[u8]) {
        match (&mut self.state, channel) {
            (ClientState::Running(s), _) => s.handle_control(now, channel, bytes),
            (ClientState::Request { .. }, 0) => {
                self.buf.extend_from_slice(bytes);
                match take_frame(&mut self.buf) {
                    Ok(None) => {}
                    Ok(Some((msg, rest))) => self.on_answer(now, msg, &rest),
                    Err(why) => self.fail(SetupError::Protocol(why)),
                }
            }
            (ClientState::Ended, _) => {}
            (_, other) => {
                self.fail(SetupError::Protocol(format!("bytes on control channel {other} during setup")))
            }
        }
    }

    fn handle_control_closed(&mut self, now: Instant, channel: usize) {
        match &mut self.state {
            ClientState::Running(s) => s.handle_control_closed(now, channel),
            ClientState::Ended => {}
            ClientState::Request { .. } => {
                self.fail(SetupError::Protocol("the peer closed the connection during setup".into()))
            }
        }
    }

    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) {
        if let Some(s) = self.session_mut() {
            s.handle_datagram(now, datagram);
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        match &mut self.state {
            ClientState::Running(s) => s.handle_timeout(now),
            ClientState::Request { deadline, .. } if now >= *deadline => {
                self.fail(SetupError::TimedOut("the peer said nothing in time during setup".into()))
            }
            _ => {}
        }
    }

    fn poll_control(&mut self) -> Option<(usize, Vec<u8>)> {
        self.shared.out.pop_front().or_else(|| self.session_mut()?.poll_control())
    }

    fn poll_datagram(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        self.session_mut()?.poll_datagram(now, buf)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match &self.state {
            ClientState::Running(s) => s.poll_timeout(),
            ClientState::Request { deadline, .. } => Some(*deadline),
            ClientState::Ended => None,
        }
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.shared.events.pop_front().or_else(|| self.session_mut()?.poll_event())
    }

    fn counters(&self) -> Counters {
        self.session().map(|s| s.counters()).unwrap_or_default()
    }

    fn max_datagram(&self) -> usize {
        self.session().map_or_else(|| max_datagram(&self.params), |s| s.max_datagram())
    }

    fn peer_digest(&self) -> Option<[u8; 32]> {
        self.session()?.peer_digest()
    }
}
