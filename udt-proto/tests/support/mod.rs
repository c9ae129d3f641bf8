//! In-memory pair harness: two UDT endpoints joined by a simulated link, in virtual time.
//!
//! Each direction has a rate (serialisation delay), a one-way delay, a drop-tail queue, and
//! seeded random loss, reordering (an extra delay for some packets) and duplication. Time jumps to
//! the next event: a datagram arrival or a connection deadline. Nothing touches a socket or a
//! clock; the same seed gives the same run.

// Test support: each test binary uses part of it, and a panic is the right failure here.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod pcap;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::SocketAddr;
use std::time::Duration;

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use udt_proto::buffer::RxDatagram;
use udt_proto::connection::{Config, Connection, Event, State};
use udt_proto::endpoint::{DatagramEvent, Endpoint};
use udt_proto::Instant;

/// Impairments of one direction.
#[derive(Clone, Copy, Debug)]
pub struct LinkModel {
    /// Bits per second (serialisation); `None` = infinitely fast.
    pub rate_bps: Option<u64>,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Drop-tail queue limit in packets.
    pub queue_pkts: usize,
    /// Probability a packet is lost.
    pub loss: f64,
    /// Probability a packet is delayed by `reorder_delay` extra (arrives after later ones).
    pub reorder: f64,
    /// Extra delay of reordered packets.
    pub reorder_delay: Duration,
    /// Probability a packet is delivered twice.
    pub duplicate: f64,
    /// Drop everything (a dead peer / cut cable).
    pub blackhole: bool,
}

impl Default for LinkModel {
    fn default() -> Self {
        LinkModel {
            rate_bps: Some(1_000_000_000),
            delay: Duration::from_millis(5),
            queue_pkts: 2000,
            loss: 0.0,
            reorder: 0.0,
            reorder_delay: Duration::from_millis(2),
            duplicate: 0.0,
            blackhole: false,
        }
    }
}

/// Per-direction counters of the link.
#[derive(Clone, Copy, Debug, Default)]
pub struct LinkStats {
    pub sent: u64,
    pub lost: u64,
    pub queue_drops: u64,
    pub reordered: u64,
    pub duplicated: u64,
    pub delivered: u64,
}

struct Direction {
    model: LinkModel,
    busy_until: Instant,
    queued: usize,
    stats: LinkStats,
}

/// Which side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Side {
    Client,
    Server,
}

/// A datagram on the link: (arrival time, tie-break, destination, queue-release marker, bytes).
type InFlight = Reverse<(Instant, u64, Side, bool, Vec<u8>)>;
/// A test's datagram filter: return false to drop a datagram (side = destination).
type Filter = Box<dyn FnMut(Side, &[u8]) -> bool>;

/// Steps [`Pair::run_until`] allows without virtual time moving (every due event of an
/// instant is handled in one step, so a healthy run needs a handful).
pub const MAX_STEPS_AT_ONE_INSTANT: u64 = 100_000;

/// Datagrams one connection may hand out in one [`Pair::flush`] (a whole send buffer is far
/// fewer).
pub const MAX_DATAGRAMS_PER_FLUSH: u64 = 10_000_000;

/// A simulated pair of endpoints.
pub struct Pair {
    pub now: Instant,
    pub client: Option<Connection>,
    pub server: Option<Connection>,
    pub client_ep: Endpoint,
    pub server_ep: Endpoint,
    pub client_addr: SocketAddr,
    pub server_addr: SocketAddr,
    to_server: Direction,
    to_client: Direction,
    in_flight: BinaryHeap<InFlight>,
    counter: u64,
    rng: Xoshiro256PlusPlus,
    pub client_events: Vec<Event>,
    pub server_events: Vec<Event>,
    buf: Vec<u8>,
    /// Optional filter: return false to drop a datagram (side = destination).
    pub filter: Option<Filter>,
    /// The client transmits with `poll_transmit_ref` (header + payload range, no copy).
    pub vectored_client: bool,
    /// The server receives with `handle_datagram_buf`, like a runtime receiving into buffers its
    /// receive buffer may keep (no copy).
    pub owned_server: bool,
    /// The server's landing buffer (when `owned_server`).
    landing: RxDatagram,
    /// Datagrams the server's receive buffer kept (when `owned_server`).
    pub owned_kept: u64,
}

pub const CLIENT: &str = "127.0.0.1:5000";
pub const SERVER: &str = "127.0.0.1:9000";

impl Pair {
    /// A pair whose server listens with `server_config`; the client is not connected yet.
    pub fn new(seed: u64, to_server: LinkModel, to_client: LinkModel, server_config: Config) -> Pair {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let now = Instant::from_micros(1_000_000);
        let client_ep = Endpoint::new(now, Box::new(Xoshiro256PlusPlus::seed_from_u64(rng.next_u64())));
        let mut server_ep = Endpoint::new(now, Box::new(Xoshiro256PlusPlus::seed_from_u64(rng.next_u64())));
        server_ep.listen(server_config).expect("valid server config");
        Pair {
            now,
            client: None,
            server: None,
            client_ep,
            server_ep,
            client_addr: CLIENT.parse().unwrap(),
            server_addr: SERVER.parse().unwrap(),
            to_server: Direction {
                model: to_server,
                busy_until: now,
                queued: 0,
                stats: LinkStats::default(),
            },
            to_client: Direction {
                model: to_client,
                busy_until: now,
                queued: 0,
                stats: LinkStats::default(),
            },
            in_flight: BinaryHeap::new(),
            counter: 0,
            rng,
            client_events: Vec::new(),
            server_events: Vec::new(),
            buf: vec![0u8; 65_536],
            filter: None,
            vectored_client: false,
            owned_server: false,
            landing: RxDatagram::empty(),
            owned_kept: 0,
        }
    }

    /// Start the client's connection.
    pub fn connect(&mut self, config: Config) {
        let conn = self.client_ep.connect(config, self.server_addr, self.now).expect("valid client config");
        self.client = Some(conn);
    }

    pub fn link_stats(&self, towards: Side) -> LinkStats {
        match towards {
            Side::Server => self.to_server.stats,
            Side::Client => self.to_client.stats,
        }
    }

    pub fn link_model_mut(&mut self, towards: Side) -> &mut LinkModel {
        match towards {
            Side::Server => &mut self.to_server.model,
            Side::Client => &mut self.to_client.model,
        }
    }

    pub fn conn(&mut self, side: Side) -> Option<&mut Connection> {
        match side {
            Side::Client => self.client.as_mut(),
            Side::Server => self.server.as_mut(),
        }
    }

    /// Drain both connections' transmissions onto the link and collect their events.
    ///
    /// Panics if one connection hands out more than [`MAX_DATAGRAMS_PER_FLUSH`] datagrams at
    /// one instant (a transmit loop that never ends).
    pub fn flush(&mut self) {
        for side in [Side::Client, Side::Server] {
            for sent in 0.. {
                assert!(sent < MAX_DATAGRAMS_PER_FLUSH, "{side:?} sent {sent} datagrams at {:?}", self.now);
                let now = self.now;
                let Some(conn) = (match side {
                    Side::Client => self.client.as_mut(),
                    Side::Server => self.server.as_mut(),
                }) else {
                    break;
                };
                let bytes = if side == Side::Client && self.vectored_client {
                    let Some(t) = conn.poll_transmit_ref(now, &mut self.buf) else { break };
                    let mut bytes = self.buf[..t.len].to_vec();
                    if let Some(range) = t.payload {
                        bytes.extend_from_slice(&conn.send_storage()[range]);
                    }
                    bytes
                } else {
                    let Some(n) = conn.poll_transmit(now, &mut self.buf) else { break };
                    self.buf[..n].to_vec()
                };
                let dest = if side == Side::Client { Side::Server } else { Side::Client };
                self.send(dest, bytes);
            }
            let events = match side {
                Side::Client => &mut self.client_events,
                Side::Server => &mut self.server_events,
            };
            let conn = match side {
                Side::Client => self.client.as_mut(),
                Side::Server => self.server.as_mut(),
            };
            if let Some(conn) = conn {
                while let Some(e) = conn.poll_event() {
                    events.push(e);
                }
            }
        }
    }

    /// Put a datagram on the link towards `dest`.
    pub fn send(&mut self, dest: Side, bytes: Vec<u8>) {
        let now = self.now;
        let dir = match dest {
            Side::Server => &mut self.to_server,
            Side::Client => &mut self.to_client,
        };
        dir.stats.sent += 1;
        if dir.model.blackhole {
            dir.stats.lost += 1;
            return;
        }
        if dir.queued >= dir.model.queue_pkts {
            dir.stats.queue_drops += 1;
            return;
        }
        let r = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        if r < dir.model.loss {
            dir.stats.lost += 1;
            return;
        }
        // Serialisation through the bottleneck, then propagation.
        let start = dir.busy_until.max(now);
        let tx = dir
            .model
            .rate_bps
            .map(|bps| Duration::from_nanos(((bytes.len() as u64 + 28) * 8 * 1_000_000_000) / bps))
            .unwrap_or_default();
        dir.busy_until = start + tx;
        dir.queued += 1;
        let mut arrival = dir.busy_until + dir.model.delay;
        let r = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        if r < dir.model.reorder {
            arrival += dir.model.reorder_delay;
            dir.stats.reordered += 1;
        }
        let r = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let dup = r < dir.model.duplicate;
        if dup {
            dir.stats.duplicated += 1;
        }
        // The queue slot is released when the packet leaves the bottleneck: model it with a
        // zero-byte marker event at busy_until.
        self.counter += 1;
        self.in_flight.push(Reverse((dir.busy_until, self.counter, dest, true, Vec::new())));
        if dup {
            self.counter += 1;
            self.in_flight.push(Reverse((
                arrival + Duration::from_micros(1),
                self.counter,
                dest,
                false,
                bytes.clone(),
            )));
        }
        self.counter += 1;
        self.in_flight.push(Reverse((arrival, self.counter, dest, false, bytes)));
    }

    fn next_deadline(&mut self) -> Option<Instant> {
        let mut t = self.in_flight.peek().map(|Reverse((t, ..))| *t);
        for conn in [self.client.as_mut(), self.server.as_mut()].into_iter().flatten() {
            if let Some(d) = conn.poll_timeout() {
                t = Some(t.map_or(d, |x| x.min(d)));
            }
        }
        t
    }

    fn deliver(&mut self, dest: Side, bytes: &[u8]) {
        if let Some(f) = self.filter.as_mut() {
            if !f(dest, bytes) {
                return;
            }
        }
        let now = self.now;
        match dest {
            Side::Server => {
                let (from, ep) = (self.client_addr, &mut self.server_ep);
                let mut out = [0u8; 128];
                match ep.handle_datagram(now, from, bytes, &mut out) {
                    DatagramEvent::Route(id) => {
                        if let Some(s) = self.server.as_mut().filter(|s| s.local_id() == id) {
                            if self.owned_server {
                                // As the kernel would: into whatever buffer came back last time.
                                if self.landing.capacity() < bytes.len() {
                                    self.landing = RxDatagram::with_capacity(bytes.len());
                                }
                                self.landing.storage_mut()[..bytes.len()].copy_from_slice(bytes);
                                self.landing.set_len(bytes.len());
                                s.handle_datagram_buf(now, &mut self.landing);
                                if self.landing.is_empty() {
                                    self.owned_kept += 1;
                                } else {
                                    assert_eq!(
                                        self.landing.bytes(),
                                        bytes,
                                        "a datagram not kept is left alone"
                                    );
                                }
                            } else {
                                s.handle_datagram(now, bytes);
                            }
                        }
                    }
                    DatagramEvent::Accepted(conn) => {
                        if self.server.is_none() {
                            self.server = Some(*conn);
                        }
                    }
                    DatagramEvent::Respond(n) => self.send(Side::Client, out[..n].to_vec()),
                    DatagramEvent::Dropped => {}
                }
            }
            Side::Client => {
                let (from, ep) = (self.server_addr, &mut self.client_ep);
                let mut out = [0u8; 128];
                match ep.handle_datagram(now, from, bytes, &mut out) {
                    DatagramEvent::Route(id) => {
                        if let Some(c) = self.client.as_mut().filter(|c| c.local_id() == id) {
                            c.handle_datagram(now, bytes);
                        }
                    }
                    DatagramEvent::Respond(n) => self.send(Side::Server, out[..n].to_vec()),
                    _ => {}
                }
            }
        }
    }

    /// Advance to the next event and process everything due then. Returns false when nothing
    /// will ever happen again.
    pub fn step(&mut self) -> bool {
        self.flush();
        let Some(next) = self.next_deadline() else { return false };
        self.now = self.now.max(next);
        let now = self.now;
        while let Some(Reverse((t, ..))) = self.in_flight.peek() {
            if *t > now {
                break;
            }
            let Reverse((_, _, dest, marker, bytes)) = self.in_flight.pop().unwrap();
            let dir = match dest {
                Side::Server => &mut self.to_server,
                Side::Client => &mut self.to_client,
            };
            if marker {
                dir.queued -= 1;
                continue;
            }
            dir.stats.delivered += 1;
            self.deliver(dest, &bytes);
        }
        for conn in [self.client.as_mut(), self.server.as_mut()].into_iter().flatten() {
            if conn.poll_timeout().is_some_and(|t| t <= now) {
                conn.handle_timeout(now);
            }
        }
        self.flush();
        true
    }

    /// Step until `done` or until `limit` of virtual time passes; returns whether `done` held.
    ///
    /// Panics if virtual time stops moving for [`MAX_STEPS_AT_ONE_INSTANT`] steps: a
    /// connection that keeps asking to be woken "now" would otherwise spin the test forever.
    pub fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&mut Pair) -> bool) -> bool {
        let end = self.now + limit;
        let (mut instant, mut steps_at_instant) = (self.now, 0u64);
        loop {
            if done(self) {
                return true;
            }
            if self.now > end || !self.step() {
                return done(self);
            }
            if self.now == instant {
                steps_at_instant += 1;
                assert!(
                    steps_at_instant < MAX_STEPS_AT_ONE_INSTANT,
                    "virtual time stuck at {:?} for {steps_at_instant} steps",
                    self.now
                );
            } else {
                (instant, steps_at_instant) = (self.now, 0);
            }
        }
    }

    pub fn connected(&self) -> bool {
        self.client.as_ref().is_some_and(|c| c.state() == State::Connected)
            && self.server.as_ref().is_some_and(|s| s.state() == State::Connected)
    }
}

/// Deterministic pseudo-random test data.
pub fn test_data(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut v = vec![0u8; len];
    rng.fill_bytes(&mut v);
    v
}

/// Result of a one-way stream transfer.
#[derive(Debug)]
pub struct TransferReport {
    pub bytes: usize,
    pub virtual_time: Duration,
    pub sender: udt_proto::connection::Snapshot,
    pub receiver: udt_proto::connection::Snapshot,
    pub link: LinkStats,
}

/// Connect, send `data` client -> server as a stream, read it all, close; panics with the seed
/// on failure. Returns the received bytes and a report.
pub fn stream_transfer(
    seed: u64,
    data: &[u8],
    to_server: LinkModel,
    to_client: LinkModel,
    config: Config,
    limit: Duration,
) -> (Vec<u8>, TransferReport) {
    let mut pair = Pair::new(seed, to_server, to_client, config.clone());
    pair.connect(config);
    assert!(pair.run_until(Duration::from_secs(30), |p| p.connected()), "seed {seed}: no connection");
    let start = pair.now;
    let mut written = 0usize;
    let mut received = Vec::with_capacity(data.len());
    let mut chunk = vec![0u8; 256 * 1024];
    let mut closed = false;
    let trace =
        std::env::var("UDT_TRACE_MS").ok().and_then(|v| v.parse::<u64>().ok()).map(Duration::from_millis);
    let mut next_trace = start;
    let ok = pair.run_until(limit, |p| {
        if let Some(every) = trace {
            if p.now >= next_trace {
                next_trace = p.now + every;
                let now = p.now;
                let s = p.client.as_mut().unwrap().stats(now, true);
                eprintln!(
                    "t={:>8.3}s send {:>7.1} Mb/s period {:>8.2} us cwnd {:>8.1} flow {:>6} flight {:>6} bw {:>7} rate {:>7} rtt {:>6} loss {:>5} retx {:>5}",
                    (now - start).as_secs_f64(), s.send_mbps, s.now.send_period_us, s.now.congestion_window,
                    s.now.flow_window, s.now.flight, s.now.bandwidth_pkts, s.now.recv_rate_pkts, s.now.rtt_us,
                    s.interval.snd_loss, s.interval.retransmits
                );
            }
        }
        let client = p.client.as_mut().unwrap();
        while written < data.len() {
            match client.write(&data[written..]) {
                Ok(n) => written += n,
                Err(_) => break,
            }
        }
        if written == data.len() && !closed {
            client.close(p.now);
            closed = true;
        }
        let server = p.server.as_mut().unwrap();
        loop {
            match server.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => received.extend_from_slice(&chunk[..n]),
                Err(_) => break,
            }
        }
        received.len() >= data.len()
    });
    let elapsed = pair.now - start;
    assert!(
        ok,
        "seed {seed}: transfer incomplete: {} of {} bytes in {:?}",
        received.len(),
        data.len(),
        elapsed
    );
    let now = pair.now;
    let report = TransferReport {
        bytes: received.len(),
        virtual_time: elapsed,
        sender: pair.client.as_mut().unwrap().stats(now, false),
        receiver: pair.server.as_mut().unwrap().stats(now, false),
        link: pair.link_stats(Side::Server),
    };
    (received, report)
}

/// Drop the first `n` transmissions of each listed data packet `(seq, n)` on its way to the
/// server (replacing any filter). Returns how many transmissions of the listed packets have
/// got through since.
pub fn drop_data_packets(
    pair: &mut Pair,
    plan: &[(udt_proto::SeqNo, u32)],
) -> std::rc::Rc<std::cell::Cell<u32>> {
    let mut left: std::collections::HashMap<u32, u32> = plan.iter().map(|&(s, n)| (s.value(), n)).collect();
    let passed = std::rc::Rc::new(std::cell::Cell::new(0));
    let seen = passed.clone();
    pair.filter = Some(Box::new(move |dest, bytes| {
        if dest != Side::Server {
            return true;
        }
        if let Ok(udt_proto::packet::Packet::Data(h, _)) = udt_proto::packet::Packet::parse(bytes) {
            if let Some(n) = left.get_mut(&h.seq.value()) {
                if *n > 0 {
                    *n -= 1;
                    return false;
                }
                seen.set(seen.get() + 1);
            }
        }
        true
    }));
    passed
}

/// The bytes of a caller's handshake (a first request, or a response carrying `cookie`) from
/// socket `id`, its ISN `id` too, as a UDT4 caller sends it to a listener (destination 0).
pub fn handshake_request(id: u32, cookie: u32, kind: udt_proto::packet::RequestType) -> Vec<u8> {
    use udt_proto::packet::{Control, ControlPacket, Handshake, SocketType};
    let hs = Handshake {
        version: 4,
        socket_type: SocketType::Stream,
        initial_seq: udt_proto::SeqNo::new(id),
        mss: 1500,
        flow_window: 8192,
        request_type: kind,
        socket_id: udt_proto::SocketId(id),
        cookie,
        peer_ip: [0; 4],
    };
    let mut buf = [0u8; 64];
    let n = ControlPacket { timestamp: 0, dst: udt_proto::SocketId(0), body: Control::Handshake(hs) }
        .emit(&mut buf)
        .unwrap();
    buf[..n].to_vec()
}
