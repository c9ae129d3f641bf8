//! An end host: UDP sockets running UDT endpoints with their applications, constant-bit-rate
//! UDP sources and UDP sinks.
//!
//! Each socket is one UDP port with one application:
//! * a **bulk UDT sender**: an [`Endpoint`] that connects to its peer at the flow's start time,
//!   keeps 128 to 512 packets waiting in its send buffer (the application always has data; a
//!   small backlog keeps the copies in cache) and closes at the stop time (no linger: unsent
//!   data is dropped, a shutdown goes out);
//! * a **UDT receiver**: a listening [`Endpoint`] that accepts one connection and reads
//!   everything as soon as it is readable (a draining application);
//! * a **CBR source**: fixed-size datagrams at a rate that follows a schedule;
//! * a **sink**: counts what arrives.
//!
//! The host drives `udt-proto` by its polling contract: after every datagram and every due
//! deadline it lets the application read and write, drains `poll_transmit` onto its uplink,
//! drains `poll_event`, and asks for a wake-up at the earliest `poll_timeout` of its sockets.
//! Datagrams for an established connection go straight to it when their destination socket id
//! and source address match it (what [`Endpoint::handle_datagram`] would decide, without a hash
//! lookup); everything else goes through the endpoint.
//!
//! Invariants: a socket's cached wake-up is its earliest deadline and is never in the past after
//! the socket ran (a deadline still due after 64 rounds is pushed 1 us ahead and counted in
//! `deadline_stalls`); a bulk sender never runs out of data while connected; a corrupted datagram is dropped and counted (`checksum_drops`) when the host
//! checks UDP checksums (the default), else handed to `udt-proto` as is.

use std::net::SocketAddr;
use std::time::Duration;

use udt_proto::connection::{CloseReason, Config, Connection, Event, State};
use udt_proto::endpoint::{DatagramEvent, Endpoint};
use udt_proto::packet::Packet;
use udt_proto::{Instant, SocketId};

use crate::bulk::BulkApp;
use crate::node::{Cx, Node, Route};
use crate::packet::{Addr, Datagram, IP_UDP_OVERHEAD};
use crate::rng::SimRng;

/// A bulk sender refills its send buffer when fewer packets than this wait to be sent...
const LOW_WATER: u64 = 128;
/// ... up to this many.
const HIGH_WATER: u64 = 512;
/// Most rounds of timeout, application and transmission per socket and event.
const MAX_ROUNDS: usize = 64;

/// Zeros the bulk senders write and the CBR sources send.
static ZEROS: [u8; 1 << 16] = [0u8; 1 << 16];

/// Counters of one socket.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SocketStats {
    /// Application bytes read (UDT receiver) or payload bytes received (sink).
    pub bytes_received: u64,
    /// Application bytes written (UDT sender) or payload bytes sent (CBR).
    pub bytes_sent: u64,
    /// Datagrams that arrived at the socket.
    pub datagrams_in: u64,
    /// Datagrams the socket sent.
    pub datagrams_out: u64,
    /// When the UDT connection was established.
    pub connected_at: Option<Instant>,
    /// When the UDT connection ended, and why.
    pub closed: Option<(Instant, CloseReason)>,
}

/// Phase of a bulk sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Waiting,
    Running,
    Stopped,
}

/// What runs on a socket.
enum App {
    BulkSender {
        config: Option<Config>,
        start: Instant,
        stop: Option<Instant>,
        phase: Phase,
    },
    Receiver,
    Cbr(Cbr),
    Sink,
    /// One end of an RBUDP, Tsunami or FOBS flow.
    Bulk(Box<BulkApp>),
}

/// A constant-bit-rate source.
struct Cbr {
    payload: usize,
    /// (time, bits per second of IP packets), in time order.
    schedule: Vec<(Instant, u64)>,
    next_change: usize,
    rate: u64,
    next_send: Option<Instant>,
    stop: Option<Instant>,
}

impl Cbr {
    /// Apply schedule entries due by `now`.
    fn update_rate(&mut self, now: Instant) {
        while let Some(&(at, rate)) = self.schedule.get(self.next_change) {
            if at > now {
                break;
            }
            self.next_change += 1;
            let was_idle = self.rate == 0;
            self.rate = rate;
            if rate == 0 {
                self.next_send = None;
            } else if was_idle || self.next_send.is_none() {
                self.next_send = Some(at);
            }
        }
        if self.stop.is_some_and(|s| s <= now) {
            self.rate = 0;
            self.next_send = None;
            self.next_change = self.schedule.len();
        }
    }

    fn interval(&self) -> Duration {
        let bits = ((self.payload + IP_UDP_OVERHEAD) * 8) as u64;
        Duration::from_nanos(bits * 1_000_000_000 / self.rate.max(1))
    }

    fn wake(&self) -> Option<Instant> {
        let change = self.schedule.get(self.next_change).map(|&(t, _)| t);
        min_opt(min_opt(self.next_send, change), self.stop.filter(|_| self.next_send.is_some()))
    }
}

/// One UDP port of a host.
pub struct Socket {
    port: u16,
    peer: Option<Addr>,
    app: App,
    endpoint: Option<Endpoint>,
    conn: Option<Connection>,
    wake: Option<Instant>,
    stats: SocketStats,
}

impl Socket {
    /// The counters of a bulk flow's session on this socket.
    pub fn bulk_counters(&self) -> Option<udt_bulk::Counters> {
        match &self.app {
            App::Bulk(app) => Some(app.counters()),
            _ => None,
        }
    }

    /// How a bulk flow's session on this socket ended, if it did.
    pub fn bulk_end(&self) -> Option<crate::bulk::BulkEnd> {
        match &self.app {
            App::Bulk(app) => app.end(),
            _ => None,
        }
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The UDT connection, once there is one.
    pub fn connection(&self) -> Option<&Connection> {
        self.conn.as_ref()
    }

    /// The UDT connection, mutable (e.g. for `stats`).
    pub fn connection_mut(&mut self) -> Option<&mut Connection> {
        self.conn.as_mut()
    }

    /// The endpoint (UDT sockets only).
    pub fn endpoint(&self) -> Option<&Endpoint> {
        self.endpoint.as_ref()
    }

    /// Counters.
    pub fn stats(&self) -> SocketStats {
        self.stats
    }
}

/// Counters of a host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostStats {
    /// Datagrams received.
    pub datagrams_in: u64,
    /// Datagrams sent.
    pub datagrams_out: u64,
    /// Dropped: no socket on the port, or addressed to another host.
    pub no_socket: u64,
    /// Dropped: corrupted (failed the UDP checksum).
    pub checksum_drops: u64,
    /// A socket still had a deadline in the past after running; it was pushed 1 us ahead.
    pub deadline_stalls: u64,
    /// Connections that could not be opened (configuration rejected).
    pub open_failures: u64,
}

/// An end host node.
pub struct Host {
    index: u32,
    uplink: Route,
    sockets: Vec<Socket>,
    scratch: Vec<u8>,
    check_udp_checksum: bool,
    stats: HostStats,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("index", &self.index)
            .field("sockets", &self.sockets.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Host {
    /// Host number `index` (its address is [`Addr`] `{ host: index }`), sending along `uplink`.
    pub fn new(index: u32, uplink: Route) -> Self {
        Host {
            index,
            uplink,
            sockets: Vec::new(),
            scratch: vec![0u8; 1 << 16],
            check_udp_checksum: true,
            stats: HostStats::default(),
        }
    }

    /// Whether corrupted datagrams are dropped as by a UDP checksum (default) or handed to UDT.
    pub fn set_udp_checksum(&mut self, on: bool) {
        self.check_udp_checksum = on;
    }

    /// Where it sends datagrams.
    pub fn uplink(&self) -> &Route {
        &self.uplink
    }

    /// Its index.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Counters.
    pub fn stats(&self) -> HostStats {
        self.stats
    }

    /// The address of socket `port` on this host.
    pub fn socket_addr(&self, port: u16) -> Addr {
        Addr { host: self.index, port }
    }

    /// Its sockets.
    pub fn sockets(&self) -> &[Socket] {
        &self.sockets
    }

    /// The socket on `port`.
    pub fn socket(&self, port: u16) -> Option<&Socket> {
        self.sockets.iter().find(|s| s.port == port)
    }

    /// The socket on `port`, mutable.
    pub fn socket_mut(&mut self, port: u16) -> Option<&mut Socket> {
        self.sockets.iter_mut().find(|s| s.port == port)
    }

    fn add(&mut self, port: u16, peer: Option<Addr>, app: App, endpoint: Option<Endpoint>) {
        self.sockets.push(Socket {
            port,
            peer,
            app,
            endpoint,
            conn: None,
            wake: None,
            stats: SocketStats::default(),
        });
    }

    /// A bulk UDT sender on `port` that connects to `peer` at `start` and closes at `stop`.
    pub fn add_bulk_sender(
        &mut self,
        port: u16,
        peer: Addr,
        config: Config,
        start: Instant,
        stop: Option<Instant>,
        rng: SimRng,
    ) {
        let endpoint = Endpoint::new(Instant::ZERO, Box::new(rng));
        let app = App::BulkSender { config: Some(config), start, stop, phase: Phase::Waiting };
        self.add(port, Some(peer), app, Some(endpoint));
    }

    /// A UDT receiver on `port` listening with `config`.
    pub fn add_receiver(&mut self, port: u16, config: Config, rng: SimRng) -> Result<(), String> {
        let mut endpoint = Endpoint::new(Instant::ZERO, Box::new(rng));
        endpoint.listen(config).map_err(|e| e.to_string())?;
        self.add(port, None, App::Receiver, Some(endpoint));
        Ok(())
    }

    /// A CBR source on `port` sending `payload`-byte datagrams to `peer`; `schedule` lists
    /// (time, rate in bits/s of IP packets), the rate before the first entry being zero.
    pub fn add_cbr(
        &mut self,
        port: u16,
        peer: Addr,
        payload: usize,
        mut schedule: Vec<(Instant, u64)>,
        stop: Option<Instant>,
    ) {
        schedule.sort_by_key(|&(t, _)| t);
        let cbr = Cbr { payload: payload.max(1), schedule, next_change: 0, rate: 0, next_send: None, stop };
        self.add(port, Some(peer), App::Cbr(cbr), None);
    }

    /// A sink on `port`.
    pub fn add_sink(&mut self, port: u16) {
        self.add(port, None, App::Sink, None);
    }

    /// One end of a bulk flow on `port`, talking to `peer`, starting at `start`.
    pub fn add_bulk_session(
        &mut self,
        port: u16,
        peer: Addr,
        session: Box<dyn udt_bulk::Session + Send>,
        start: Instant,
    ) {
        let app = App::Bulk(Box::new(BulkApp::new(session, start)));
        self.add(port, Some(peer), app, None);
    }

    /// The span of one event at this host: its index and the virtual time in ms, so that the
    /// core's `tracing` events (`RUST_LOG=udt::sim=debug,udt::cc=debug udt sim ...`) name the
    /// host and the moment (and, inside, the socket's port).
    fn span(&self, now: Instant) -> tracing::Span {
        tracing::debug_span!(target: "udt::sim", "host", i = self.index, t_ms = now.as_micros() as f64 / 1e3)
    }

    /// Earliest wake-up of all sockets.
    fn next_wake(&self) -> Option<Instant> {
        self.sockets.iter().fold(None, |acc, s| min_opt(acc, s.wake))
    }

    /// Run socket `si` at `now`: application, transmissions, events, next deadline.
    fn drive(&mut self, si: usize, now: Instant, cx: &mut Cx<'_>) {
        let Host { index, uplink, sockets, scratch, stats, .. } = self;
        let sock = &mut sockets[si];
        let _span = socket_span(sock.port).entered();
        let src = Addr { host: *index, port: sock.port };
        if let App::Bulk(app) = &mut sock.app {
            let peer = sock.peer.unwrap_or_default();
            let sock_stats = &mut sock.stats;
            sock.wake = app.drive(now, src, peer, cx, |cx, d| {
                sock_stats.bytes_sent += d.len() as u64;
                send(uplink, cx, now, d, stats, sock_stats);
            });
            let c = app.counters();
            sock.stats.bytes_received = c.delivered;
            return;
        }
        if let App::Cbr(cbr) = &mut sock.app {
            cbr.update_rate(now);
            while let Some(at) = cbr.next_send.filter(|&t| t <= now) {
                let peer = sock.peer.unwrap_or_default();
                let d = cx.pool().datagram(src, peer, &ZEROS[..cbr.payload.min(ZEROS.len())]);
                send(uplink, cx, now, d, stats, &mut sock.stats);
                sock.stats.bytes_sent += cbr.payload as u64;
                cbr.next_send = Some(at + cbr.interval());
                cbr.update_rate(at);
            }
            sock.wake = cbr.wake();
            return;
        }
        let Some(conn) = sock.conn.as_mut() else {
            sock.wake = app_deadline(&sock.app);
            return;
        };
        let peer = sock.peer.unwrap_or_default();
        for _ in 0..MAX_ROUNDS {
            if conn.poll_timeout().is_some_and(|t| t <= now) {
                conn.handle_timeout(now);
            }
            // The application: read everything, keep some data waiting to be sent.
            match &mut sock.app {
                App::Receiver => loop {
                    match conn.read(scratch) {
                        Ok(n) if n > 0 => sock.stats.bytes_received += n as u64,
                        _ => break,
                    }
                },
                App::BulkSender { phase: Phase::Running, .. } => top_up(conn, &mut sock.stats),
                _ => {}
            }
            let mut sent = 0;
            loop {
                let mut buf = cx.pool().take();
                match conn.poll_transmit(now, &mut buf) {
                    Some(n) => {
                        let d = Datagram::new(src, peer, buf, n);
                        send(uplink, cx, now, d, stats, &mut sock.stats);
                        sent += 1;
                    }
                    None => {
                        cx.pool().give(buf);
                        break;
                    }
                }
            }
            while let Some(ev) = conn.poll_event() {
                match ev {
                    Event::Connected => sock.stats.connected_at = Some(now),
                    Event::Closed(reason) => sock.stats.closed = Some((now, reason)),
                }
            }
            let refill = sent > 0
                && matches!(sock.app, App::BulkSender { phase: Phase::Running, .. })
                && unsent_packets(conn, &sock.stats) < LOW_WATER;
            if !refill && conn.poll_timeout().is_none_or(|t| t > now) {
                break;
            }
        }
        let mut wake = min_opt(conn.poll_timeout(), app_deadline(&sock.app));
        if wake.is_some_and(|t| t <= now) {
            stats.deadline_stalls += 1;
            wake = Some(now + Duration::from_micros(1));
        }
        sock.wake = wake;
    }

    /// Start or stop a bulk sender whose time has come.
    fn lifecycle(&mut self, si: usize, now: Instant) {
        let sock = &mut self.sockets[si];
        let App::BulkSender { config, start, stop, phase, .. } = &mut sock.app else { return };
        if *phase == Phase::Waiting && *start <= now {
            *phase = Phase::Running;
            let (Some(cfg), Some(ep), Some(peer)) = (config.take(), sock.endpoint.as_mut(), sock.peer) else {
                return;
            };
            match ep.connect(cfg, peer.socket_addr(), now) {
                Ok(c) => sock.conn = Some(c),
                Err(_) => {
                    self.stats.open_failures += 1;
                    *phase = Phase::Stopped;
                }
            }
        }
        if *phase == Phase::Running && stop.is_some_and(|s| s <= now) {
            *phase = Phase::Stopped;
            if let Some(c) = sock.conn.as_mut() {
                c.close(now);
            }
        }
    }

    /// Hand a datagram to socket `si`.
    fn deliver(&mut self, si: usize, now: Instant, d: &Datagram, cx: &mut Cx<'_>) {
        let sock = &mut self.sockets[si];
        let _span = socket_span(sock.port).entered();
        sock.stats.datagrams_in += 1;
        match &mut sock.app {
            App::Sink => {
                sock.stats.bytes_received += d.len() as u64;
                return;
            }
            App::Cbr(_) => return,
            App::Bulk(app) => {
                app.handle(now, d);
                return;
            }
            _ => {}
        }
        let bytes = d.payload();
        let from: SocketAddr = d.src.socket_addr();
        if let Some(conn) = sock.conn.as_mut() {
            let id = Packet::peek_destination(bytes);
            if id.is_some_and(|id| id != SocketId(0) && id == conn.local_id()) && conn.peer_addr() == from {
                conn.handle_datagram(now, bytes);
                return;
            }
        }
        let Some(ep) = sock.endpoint.as_mut() else { return };
        let mut resp = cx.pool().take();
        match ep.handle_datagram(now, from, bytes, &mut resp) {
            DatagramEvent::Route(id) => {
                cx.pool().give(resp);
                if let Some(conn) = sock.conn.as_mut().filter(|c| c.local_id() == id) {
                    conn.handle_datagram(now, bytes);
                }
            }
            DatagramEvent::Accepted(conn) => {
                cx.pool().give(resp);
                if sock.conn.is_none() {
                    sock.peer = Some(d.src);
                    sock.conn = Some(*conn);
                } else {
                    ep.forget(conn.local_id());
                }
            }
            DatagramEvent::Respond(n) => {
                let reply = Datagram::new(Addr { host: self.index, port: sock.port }, d.src, resp, n);
                send(&self.uplink, cx, now, reply, &mut self.stats, &mut sock.stats);
            }
            DatagramEvent::Dropped => cx.pool().give(resp),
        }
    }
}

/// Packets written by the application and not yet sent once.
fn unsent_packets(conn: &Connection, stats: &SocketStats) -> u64 {
    let payload = Config::payload_size(conn.mss()).max(1) as u64;
    let c = conn.counters();
    (stats.bytes_sent / payload).saturating_sub(c.pkts_sent - c.retransmits)
}

/// The bulk application: when fewer than [`LOW_WATER`] packets wait to be sent, write whole
/// packets up to [`HIGH_WATER`]. A small backlog keeps the bytes in cache between the write
/// and the send (a full 12 MB send buffer made the copies memory-bound) and changes nothing
/// for the protocol: the sender never runs dry, which is all "always has data" means.
fn top_up(conn: &mut Connection, stats: &mut SocketStats) {
    if conn.state() != State::Connected {
        return;
    }
    let unsent = unsent_packets(conn, stats);
    if unsent >= LOW_WATER {
        return;
    }
    let payload = Config::payload_size(conn.mss()).max(1);
    let step = ZEROS.len() / payload * payload;
    let mut left = ((HIGH_WATER - unsent) as usize * payload).min(conn.writable_bytes() / payload * payload);
    while left > 0 {
        match conn.write(&ZEROS[..left.min(step)]) {
            Ok(n) if n > 0 => {
                left = left.saturating_sub(n);
                stats.bytes_sent += n as u64;
            }
            _ => break,
        }
    }
}

/// Put a datagram on the uplink.
fn send(
    uplink: &Route,
    cx: &mut Cx<'_>,
    now: Instant,
    d: Datagram,
    host: &mut HostStats,
    sock: &mut SocketStats,
) {
    host.datagrams_out += 1;
    sock.datagrams_out += 1;
    match uplink.next(d.dst.host) {
        Some(next) => cx.send(now, next, d),
        None => cx.recycle(d),
    }
}

/// The start or stop time a bulk sender waits for.
fn app_deadline(app: &App) -> Option<Instant> {
    match app {
        App::BulkSender { phase: Phase::Waiting, start, .. } => Some(*start),
        App::BulkSender { phase: Phase::Running, stop, .. } => *stop,
        _ => None,
    }
}

/// The span of the work for one socket, inside its host's: the port names the flow.
fn socket_span(port: u16) -> tracing::Span {
    tracing::debug_span!(target: "udt::sim", "socket", port = port)
}

fn min_opt(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

impl Node for Host {
    fn on_datagram(&mut self, now: Instant, d: Datagram, cx: &mut Cx<'_>) {
        let _span = self.span(now).entered();
        self.stats.datagrams_in += 1;
        let si = if d.dst.host == self.index {
            self.sockets.iter().position(|s| s.port == d.dst.port)
        } else {
            None
        };
        let Some(si) = si else {
            self.stats.no_socket += 1;
            cx.recycle(d);
            return;
        };
        if d.corrupted && self.check_udp_checksum {
            self.stats.checksum_drops += 1;
            cx.recycle(d);
            return;
        }
        self.deliver(si, now, &d, cx);
        cx.recycle(d);
        self.drive(si, now, cx);
        cx.set_wake(self.next_wake());
    }

    fn on_wake(&mut self, now: Instant, cx: &mut Cx<'_>) {
        let _span = self.span(now).entered();
        for si in 0..self.sockets.len() {
            if self.sockets[si].wake.is_some_and(|t| t <= now) {
                self.lifecycle(si, now);
                self.drive(si, now, cx);
            }
        }
        cx.set_wake(self.next_wake());
    }

    fn on_start(&mut self, now: Instant, cx: &mut Cx<'_>) {
        let _span = self.span(now).entered();
        for si in 0..self.sockets.len() {
            self.lifecycle(si, now);
            self.drive(si, now, cx);
        }
        cx.set_wake(self.next_wake());
    }
}
