//! The endpoint of one UDP port: socket-id routing and the listener's side of the handshake
//! (protocol notes §7-8). Sans-IO like the rest: the driver owns the [`Connection`]s and the
//! socket; the endpoint says where each datagram goes.
//!
//! * A datagram for a known socket id is routed to it if its source matches that socket's peer.
//! * A handshake to id 0 goes to a rendezvous socket waiting for that address, else to the
//!   listener: a first request gets a SYN-cookie reply and no state is kept; a request carrying a
//!   valid cookie creates an accepted [`Connection`]; a repeated one is routed to the connection
//!   it created, which answers again; a wrong version or socket type gets a rejection (1002).
//! * Everything else is dropped and counted.
//!
//! Cookies: SipHash-1-3 keyed with the endpoint's random 128-bit key (drawn from the driver's
//! randomness, or given by it: [`Endpoint::with_cookie_key`]) over a byte string this module
//! specifies ([`syn_cookie`]): the peer's address and port, its socket id and initial sequence
//! number, and the minute since the endpoint started. The same key and input give the same
//! cookie on every build and platform (std's `DefaultHasher` promises neither); the current
//! and previous minute are accepted. One cookie therefore admits one connection, not a flood of
//! requests with fresh socket ids. At most `max_accepted` accepted connections are alive at once
//! (UDT4 bounds this with the listen backlog); a further request with a valid cookie gets a
//! rejection (1002), as from UDT4, and is counted. Socket ids:
//! the first random in [1, 2^30], then each new one the previous minus 1 (UDT4), skipping ids in
//! use.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use rand_core::RngCore;
use siphasher::sip::SipHasher13;

use crate::connection::{Config, ConfigError, Connection};
use crate::packet::{Control, ControlPacket, Handshake, Packet, RequestType};
use crate::rng::SplitMix64;
use crate::seq::SocketId;
use crate::time::Instant;

/// `Connection::connect` or `Connection::rendezvous`.
type OpenConnection =
    fn(Config, SocketId, SocketAddr, Instant, Box<dyn RngCore + Send>) -> Result<Connection, ConfigError>;

const COOKIE_BUCKET: Duration = Duration::from_secs(60);
/// Default bound on live accepted connections.
pub const DEFAULT_MAX_ACCEPTED: usize = 1024;
const MAX_SOCKET_ID: u32 = 1 << 30;

/// Where a datagram goes.
#[derive(Debug)]
pub enum DatagramEvent {
    /// Hand it to the connection with this id.
    Route(SocketId),
    /// A new connection was accepted; the datagram was its request (already handled). The
    /// driver stores it and drains its `poll_transmit` (the final answer is queued).
    Accepted(Box<Connection>),
    /// Send the first `n` bytes of the caller's buffer back to the source (cookie reply or
    /// rejection).
    Respond(usize),
    /// Nothing to do (invalid, unexpected or unroutable; counted).
    Dropped,
}

/// Counters of the endpoint itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EndpointStats {
    /// Datagrams that did not parse or could not be routed.
    pub dropped: u64,
    /// Requests carrying a wrong cookie.
    pub bad_cookies: u64,
    /// Cookie replies sent.
    pub cookie_replies: u64,
    /// Rejections sent.
    pub rejections: u64,
    /// Connections accepted.
    pub accepted: u64,
    /// Requests refused because `max_accepted` connections were alive.
    pub over_limit: u64,
}

#[derive(Clone, Copy, Debug)]
struct Route {
    peer: SocketAddr,
}

/// Routing table and listener of one UDP port.
pub struct Endpoint {
    listener: Option<Config>,
    /// SipHash-1-3 key of the SYN cookies.
    cookie_key: [u8; 16],
    epoch: Instant,
    /// Socket ids given out are `id_class` modulo `id_classes` (0 and 1: any).
    id_class: u32,
    id_classes: u32,
    rng: Box<dyn RngCore + Send>,
    routes: HashMap<SocketId, Route>,
    accepted_by_peer: HashMap<(SocketAddr, SocketId), SocketId>,
    rendezvous_by_peer: HashMap<SocketAddr, SocketId>,
    max_accepted: usize,
    stats: EndpointStats,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("listening", &self.listener.is_some())
            .field("connections", &self.routes.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// An endpoint created at `now`, drawing its cookie key, ids and connection RNGs from `rng`.
    /// The key takes one 64-bit draw (spread over the 128 key bits), as the endpoint always drew,
    /// so a seeded simulation replays the same ids and sequence numbers; a runtime that wants a
    /// full 128-bit key passes its own to [`Endpoint::with_cookie_key`].
    pub fn new(now: Instant, mut rng: Box<dyn RngCore + Send>) -> Self {
        let draw = rng.next_u64();
        let mut key = [0u8; 16];
        key[..8].copy_from_slice(&draw.to_le_bytes());
        key[8..].copy_from_slice(&draw.rotate_left(32).wrapping_mul(0x9E37_79B9_7F4A_7C15).to_le_bytes());
        Endpoint::with_cookie_key(now, rng, key)
    }

    /// An endpoint created at `now` whose SYN cookies are keyed with `cookie_key` (a driver
    /// passes 128 bits of its own randomness, e.g. the operating system's, so the key is as
    /// strong as that and not bounded by `rng`'s seed); ids and connection RNGs come from `rng`.
    pub fn with_cookie_key(now: Instant, rng: Box<dyn RngCore + Send>, cookie_key: [u8; 16]) -> Self {
        Endpoint {
            listener: None,
            cookie_key,
            epoch: now,
            id_class: 0,
            id_classes: 1,
            rng,
            routes: HashMap::new(),
            accepted_by_peer: HashMap::new(),
            rendezvous_by_peer: HashMap::new(),
            max_accepted: DEFAULT_MAX_ACCEPTED,
            stats: EndpointStats::default(),
        }
    }

    /// Accept connections with `config` (UDT4 allows one listener per port).
    pub fn listen(&mut self, config: Config) -> Result<(), ConfigError> {
        config.validate()?;
        self.listener = Some(config);
        Ok(())
    }

    /// Bound the number of accepted connections alive at once (default 1024).
    pub fn set_max_accepted(&mut self, max: usize) {
        self.max_accepted = max;
    }

    /// Stop accepting.
    pub fn stop_listening(&mut self) {
        self.listener = None;
    }

    /// Whether a listener is active.
    pub fn is_listening(&self) -> bool {
        self.listener.is_some()
    }

    /// Counters.
    pub fn stats(&self) -> EndpointStats {
        self.stats
    }

    /// Number of connections routed here.
    pub fn connection_count(&self) -> usize {
        self.routes.len()
    }

    /// A fresh socket id not in use (and in the endpoint's class, see
    /// [`set_id_class`](Self::set_id_class)).
    pub fn allocate_id(&mut self) -> SocketId {
        // Drawn afresh each time (UDT4 counts down from a random start): an off-path attacker
        // who learned one id cannot predict the next connection's (a plain connection's
        // shutdown is authenticated by nothing else). With a cryptographic `rng` (the runtime
        // passes the operating system's) ids are unpredictable.
        loop {
            let draw = self.rng.next_u32() % MAX_SOCKET_ID;
            let id = draw - draw % self.id_classes + self.id_class;
            if (1..=MAX_SOCKET_ID).contains(&id) && !self.routes.contains_key(&SocketId(id)) {
                return SocketId(id);
            }
        }
    }

    /// Give connections only socket ids with `id % classes == class`: a runtime that spreads
    /// one port's connections over several endpoints (one per thread) tells from a datagram's
    /// destination id which endpoint it is for. Ids stay random otherwise.
    ///
    /// # Panics
    /// If `class >= classes`.
    pub fn set_id_class(&mut self, class: u32, classes: u32) {
        assert!(class < classes, "id class {class} of {classes}");
        self.id_class = class;
        self.id_classes = classes;
    }

    /// A new RNG for a connection, derived from the endpoint's.
    pub fn connection_rng(&mut self) -> Box<dyn RngCore + Send> {
        Box::new(SplitMix64::from_rng(&mut *self.rng))
    }

    /// Start a regular connection to `peer` from this port.
    pub fn connect(
        &mut self,
        config: Config,
        peer: SocketAddr,
        now: Instant,
    ) -> Result<Connection, ConfigError> {
        self.start(config, peer, now, Connection::connect)
    }

    /// Start a rendezvous connection with `peer` from this port.
    pub fn rendezvous(
        &mut self,
        config: Config,
        peer: SocketAddr,
        now: Instant,
    ) -> Result<Connection, ConfigError> {
        let conn = self.start(config, peer, now, Connection::rendezvous)?;
        self.rendezvous_by_peer.insert(peer, conn.local_id());
        Ok(conn)
    }

    fn start(
        &mut self,
        config: Config,
        peer: SocketAddr,
        now: Instant,
        open: OpenConnection,
    ) -> Result<Connection, ConfigError> {
        let id = self.allocate_id();
        let rng = self.connection_rng();
        let conn = open(config, id, peer, now, rng)?;
        self.routes.insert(id, Route { peer });
        Ok(conn)
    }

    /// The connection `id` is gone: stop routing to it.
    pub fn forget(&mut self, id: SocketId) {
        if let Some(route) = self.routes.remove(&id) {
            self.accepted_by_peer.retain(|_, v| *v != id);
            if self.rendezvous_by_peer.get(&route.peer) == Some(&id) {
                self.rendezvous_by_peer.remove(&route.peer);
            }
        }
    }

    /// Decide where a datagram from `from` goes. `buf` receives a response when the answer is
    /// [`DatagramEvent::Respond`]; it needs 64 bytes.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        from: SocketAddr,
        bytes: &[u8],
        buf: &mut [u8],
    ) -> DatagramEvent {
        let Some(dst) = Packet::peek_destination(bytes) else {
            return self.drop();
        };
        if dst != SocketId(0) {
            return match self.routes.get(&dst) {
                Some(r) if r.peer == from => DatagramEvent::Route(dst),
                _ => self.drop(),
            };
        }
        let hs = match Packet::parse(bytes) {
            Ok(Packet::Control(ControlPacket { body: Control::Handshake(hs), .. })) => hs,
            _ => return self.drop(),
        };
        if let Some(&id) = self.rendezvous_by_peer.get(&from) {
            return DatagramEvent::Route(id);
        }
        if self.listener.is_none() {
            return self.drop();
        }
        self.handle_request(now, from, &hs, buf)
    }

    fn handle_request(
        &mut self,
        now: Instant,
        from: SocketAddr,
        hs: &Handshake,
        buf: &mut [u8],
    ) -> DatagramEvent {
        let Some(config) = self.listener.as_ref() else { return self.drop() };
        if hs.version != 4 || hs.socket_type != config.mode.socket_type() {
            let mut reject = *hs;
            reject.request_type = RequestType::Rejected;
            self.stats.rejections += 1;
            return self.respond(reject, hs.socket_id, buf);
        }
        match hs.request_type {
            RequestType::Request => {
                let mut reply = *hs;
                reply.cookie = self.cookie(from, hs, self.bucket(now));
                self.stats.cookie_replies += 1;
                self.respond(reply, hs.socket_id, buf)
            }
            RequestType::Response => {
                let bucket = self.bucket(now);
                let valid = hs.cookie == self.cookie(from, hs, bucket)
                    || (bucket > 0 && hs.cookie == self.cookie(from, hs, bucket - 1));
                if !valid {
                    self.stats.bad_cookies += 1;
                    return self.drop();
                }
                if let Some(&id) = self.accepted_by_peer.get(&(from, hs.socket_id)) {
                    return DatagramEvent::Route(id);
                }
                if self.accepted_by_peer.len() >= self.max_accepted {
                    // As UDT4 answers a full backlog: a rejection (1002), so the client fails
                    // at once instead of after its connect timeout. Sent only to a request that
                    // proved its address with the cookie.
                    self.stats.over_limit += 1;
                    let mut reject = *hs;
                    reject.request_type = RequestType::Rejected;
                    return self.respond(reject, hs.socket_id, buf);
                }
                let config = config.clone();
                let id = self.allocate_id();
                let rng = self.connection_rng();
                match Connection::accept(config, id, from, hs, now, rng) {
                    Ok(conn) => {
                        self.routes.insert(id, Route { peer: from });
                        self.accepted_by_peer.insert((from, hs.socket_id), id);
                        self.stats.accepted += 1;
                        DatagramEvent::Accepted(Box::new(conn))
                    }
                    Err(_) => self.drop(),
                }
            }
            _ => self.drop(),
        }
    }

    fn respond(&mut self, hs: Handshake, dst: SocketId, buf: &mut [u8]) -> DatagramEvent {
        let packet = ControlPacket { timestamp: 0, dst, body: Control::Handshake(hs) };
        match packet.emit(buf) {
            Ok(n) => DatagramEvent::Respond(n),
            Err(_) => self.drop(),
        }
    }

    fn drop(&mut self) -> DatagramEvent {
        self.stats.dropped += 1;
        DatagramEvent::Dropped
    }

    fn bucket(&self, now: Instant) -> u64 {
        ((now - self.epoch).as_secs()) / COOKIE_BUCKET.as_secs()
    }

    /// SYN cookie for a request (see [`syn_cookie`]).
    fn cookie(&self, from: SocketAddr, hs: &Handshake, bucket: u64) -> u32 {
        syn_cookie(&self.cookie_key, from, hs.socket_id, hs.initial_seq.value(), bucket)
    }
}

/// The SYN cookie for a request from `from` with socket id `socket_id` and initial sequence
/// number `initial_seq` in time bucket `bucket`: SipHash-1-3 keyed with `key` over the bytes
/// `family (4 or 6) | address octets (4 or 16) | port | socket id | initial seq | bucket`
/// (integers big-endian: 2, 4, 4 and 8 bytes), the 64-bit hash folded to 32 bits (high half
/// XOR low half). Never 0, which means "no cookie" on the wire (0 becomes 1).
pub fn syn_cookie(
    key: &[u8; 16],
    from: SocketAddr,
    socket_id: SocketId,
    initial_seq: u32,
    bucket: u64,
) -> u32 {
    let mut msg = [0u8; 1 + 16 + 2 + 4 + 4 + 8];
    let mut at = 0;
    let mut put = |bytes: &[u8]| {
        msg[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    };
    match from.ip() {
        IpAddr::V4(ip) => {
            put(&[4]);
            put(&ip.octets());
        }
        IpAddr::V6(ip) => {
            put(&[6]);
            put(&ip.octets());
        }
    }
    put(&from.port().to_be_bytes());
    put(&socket_id.0.to_be_bytes());
    put(&initial_seq.to_be_bytes());
    put(&bucket.to_be_bytes());
    let v = SipHasher13::new_with_key(key).hash(&msg[..at]);
    match (v ^ (v >> 32)) as u32 {
        0 => 1,
        c => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The input of the known-answer test: 192.0.2.7:9000, socket id 0x01020304, initial
    /// sequence 0x0A0B0C0D, bucket 3.
    fn input() -> (SocketAddr, SocketId, u32, u64) {
        ("192.0.2.7:9000".parse().unwrap(), SocketId(0x0102_0304), 0x0A0B_0C0D, 3)
    }

    #[test]
    fn cookie_is_siphash_1_3_of_the_specified_bytes() {
        // Key 00 01 .. 0f; message 04 c0000207 2328 01020304 0a0b0c0d 0000000000000003.
        // SipHash-1-3 = 0x2576482d97d25692 (computed with an independent implementation,
        // checked against the SipHash paper's 2-4 vector), folded: 0x2576482d ^ 0x97d25692.
        let key: [u8; 16] = std::array::from_fn(|i| i as u8);
        let (from, id, isn, bucket) = input();
        assert_eq!(syn_cookie(&key, from, id, isn, bucket), 0xb2a4_1ebf);
        // Another key (01 .. 10) gives another cookie, also known.
        let other: [u8; 16] = std::array::from_fn(|i| i as u8 + 1);
        assert_eq!(syn_cookie(&other, from, id, isn, bucket), 0xc96e_9cf2);
    }

    #[test]
    fn ids_stay_in_the_endpoints_class() {
        let mut ep = Endpoint::new(Instant::ZERO, Box::new(SplitMix64::new(3)));
        ep.set_id_class(2, 3);
        for _ in 0..100 {
            let id = ep.allocate_id();
            assert_eq!(id.0 % 3, 2);
            assert_ne!(id.0, 0);
        }
    }

    #[test]
    fn the_endpoint_answers_with_the_cookie_of_its_key() {
        use crate::packet::{Control, ControlPacket, Handshake, Packet, RequestType, SocketType};
        let key: [u8; 16] = std::array::from_fn(|i| 0xA0 + i as u8);
        let rng = Box::new(SplitMix64::new(9));
        let mut ep = Endpoint::with_cookie_key(Instant::ZERO, rng, key);
        ep.listen(Config::default()).unwrap();
        let (from, id, isn, _) = input();
        let hs = Handshake {
            version: 4,
            socket_type: SocketType::Stream,
            initial_seq: crate::seq::SeqNo::new(isn),
            mss: 1500,
            flow_window: 8192,
            request_type: RequestType::Request,
            socket_id: id,
            cookie: 0,
            peer_ip: [0; 4],
        };
        let mut req = [0u8; 64];
        let n = ControlPacket { timestamp: 0, dst: SocketId(0), body: Control::Handshake(hs) }
            .emit(&mut req)
            .unwrap();
        let mut out = [0u8; 64];
        let DatagramEvent::Respond(len) = ep.handle_datagram(Instant::ZERO, from, &req[..n], &mut out) else {
            panic!("no cookie reply");
        };
        let Ok(Packet::Control(ControlPacket { body: Control::Handshake(reply), .. })) =
            Packet::parse(&out[..len])
        else {
            panic!("not a handshake");
        };
        assert_eq!(reply.cookie, syn_cookie(&key, from, id, isn, 0));
        // Another endpoint, another key: another cookie for the same request.
        let mut other = Endpoint::with_cookie_key(Instant::ZERO, Box::new(SplitMix64::new(9)), [7; 16]);
        other.listen(Config::default()).unwrap();
        let DatagramEvent::Respond(len) = other.handle_datagram(Instant::ZERO, from, &req[..n], &mut out)
        else {
            panic!("no cookie reply");
        };
        let Ok(Packet::Control(ControlPacket { body: Control::Handshake(reply2), .. })) =
            Packet::parse(&out[..len])
        else {
            panic!("not a handshake");
        };
        assert_ne!(reply2.cookie, reply.cookie);
    }
}
