//! The sending end of a Tsunami transfer, sans-IO: revision and challenge, the file request,
//! the parameters and the file description, then blocks over UDP (`O` in order, `R` on
//! request, `X` for the last one, repeated until the client stops), paced by the inter-packet
//! delay that the client's error-rate reports steer (seed-protocols.md, Tsunami steps 1-7 and
//! "Server rate control").
//!
//! After a stop the server takes another file name. The name [`digest::TSUNAMI_REQUEST`] is
//! never looked up: it asks for the end-to-end digest ([`crate::digest`]) of the file last sent
//! on this connection, answered [`digest::TSUNAMI_ANSWER`] and its [`digest::LEN`] bytes
//! (computed once, by reading the whole file through [`Source::digest`]); before any file was
//! sent, or when the file cannot be read again, it is answered [`FILE_CANNOT_OPEN`] like a name
//! that is not served, and the session fails.
//!
//! Files come from a [`Catalog`], which decides what a name opens (the socket server confines
//! names to its directory, tests serve memory). Randomness (the challenge) and the clock (the
//! epoch in the file description) are passed in.
//!
//! Invariants: a datagram leaves only when due (the next one no earlier than one delay after,
//! with at most [`CATCH_UP`] of lateness made up in a burst); requests for blocks outside
//! 1..=count, unknown record types and bad parameters fail the session with a one-line reason;
//! the retransmit queue never holds more than [`MAX_QUEUED`] blocks nor one block twice (a
//! client repeats what it still misses); a client silent for 500 ms counts as a 100 % error
//! report, one silent for the heartbeat timeout fails the session.

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use udt_proto::time::Instant;

use super::auth::{check_secret, proof, same_proof};
use super::failure::Failure;
use super::inbox::Inbox;
use super::rate::{Ipd, RateControl, FULL_ERROR};
use super::wire::{
    block_count, decode_name, decode_port, decode_revision, encode_revision, fits_on_wire, BlockHeader,
    BlockKind, FileInfo, Record, RecordKind, TransferRequest, AUTH_OK, AUTH_REFUSED, CHALLENGE_LEN,
    FILE_CANNOT_OPEN, FILE_OK, HEADER_LEN, MAX_BLOCK_SIZE, PROOF_LEN, REVISION,
};
use super::Params;
use crate::digest;
use crate::pace::{CatchUp, Pacer};
use crate::session::{Counters, Event, Session};
use crate::storage::Source;

/// Most blocks waiting for retransmission; requests beyond it are dropped (the client asks
/// again for what it still misses).
pub const MAX_QUEUED: usize = 65_536;
/// Lateness a paced sender makes up in one burst.
pub const CATCH_UP: Duration = Duration::from_millis(2);
/// Silence after which the server assumes a 100 % error rate, and how often it does again.
pub const SILENCE_REPORT: Duration = Duration::from_millis(500);
/// Bounds of the pause between two repeats of the last block.
const X_GAP_MIN: Duration = Duration::from_millis(1);
const X_GAP_MAX: Duration = Duration::from_millis(100);

/// What a server may send, by the name a client asks for.
pub trait Catalog {
    /// The bytes of `name`, or a one-line reason why not (it is logged as the refusal).
    fn open(&mut self, name: &str) -> Result<Box<dyn Source>, String>;
}

impl<F: FnMut(&str) -> Result<Box<dyn Source>, String>> Catalog for F {
    fn open(&mut self, name: &str) -> Result<Box<dyn Source>, String> {
        self(name)
    }
}

/// The catalog a server borrows (socket setup) or owns (the simulator): see
/// [`crate::held`] for why two variants.
enum HeldCatalog<'a> {
    Borrowed(&'a mut (dyn Catalog + Send + 'a)),
    Owned(Box<dyn Catalog + Send>),
}

impl HeldCatalog<'_> {
    fn open(&mut self, name: &str) -> Result<Box<dyn Source>, String> {
        match self {
            HeldCatalog::Borrowed(c) => c.open(name),
            HeldCatalog::Owned(c) => c.open(name),
        }
    }
}

/// A file sent to the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedFile {
    /// The name the client asked for.
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
}

/// Where the control exchange is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Revision,
    Proof,
    Name,
    Params,
    Port,
    Sending,
    Ended,
}

/// A file accepted, waiting for its parameters and the client's port.
struct Accepted {
    name: String,
    source: Box<dyn Source>,
    info: Option<(FileInfo, Ipd)>,
}

/// The file last sent to the end, kept for its digest.
struct LastSent {
    name: String,
    source: Box<dyn Source>,
    /// Computed on the first request.
    digest: Option<[u8; digest::LEN]>,
}

/// A transfer under way.
struct Sending {
    name: String,
    source: Box<dyn Source>,
    size: u64,
    block_size: u32,
    count: u32,
    ipd: Ipd,
    /// The next original to send; past `count` once all were sent (then `X` repeats).
    next_original: u64,
    queue: VecDeque<u32>,
    queued: HashSet<u32>,
    pacer: Pacer,
    next_x: Instant,
    last_feedback: Instant,
    last_silence_report: Instant,
}

impl Sending {
    fn x_gap(&self) -> Duration {
        (self.ipd.gap() * 10).clamp(X_GAP_MIN, X_GAP_MAX)
    }

    /// When the next datagram is due, if there is one to send.
    fn send_due(&self) -> Instant {
        if !self.queue.is_empty() || self.next_original <= u64::from(self.count) {
            self.pacer.due()
        } else {
            self.pacer.due().max(self.next_x)
        }
    }

    /// The earlier of the next 100 % report for silence and the heartbeat deadline.
    fn silence_due(&self, heartbeat: Duration) -> Instant {
        let report = self.last_feedback.max(self.last_silence_report) + SILENCE_REPORT;
        report.min(self.last_feedback + heartbeat)
    }
}

/// A Tsunami server answering one control connection.
pub struct Server<'a> {
    secret: Vec<u8>,
    challenge: [u8; CHALLENGE_LEN],
    epoch: u32,
    catalog: HeldCatalog<'a>,
    heartbeat: Duration,
    next_request_wait: Duration,
    phase: Phase,
    inbox: Inbox,
    outbox: VecDeque<Vec<u8>>,
    events: VecDeque<Event>,
    counters: Counters,
    failure: Option<Failure>,
    accepted: Option<Accepted>,
    xfer: Option<Sending>,
    served: Vec<ServedFile>,
    last: Option<LastSent>,
    wait_until: Option<Instant>,
}

impl<'a> Server<'a> {
    /// A server that challenges with `challenge` (64 random bytes), stamps `epoch` (its clock,
    /// seconds since 1970) in file descriptions and sends what `catalog` opens. Refuses to
    /// start without a usable secret (see [`super::auth`]).
    pub fn new(
        params: &Params,
        challenge: [u8; CHALLENGE_LEN],
        epoch: u32,
        catalog: &'a mut (dyn Catalog + Send + 'a),
    ) -> Result<Self, Failure> {
        Self::holding(params, challenge, epoch, HeldCatalog::Borrowed(catalog))
    }

    /// [`Server::new`] owning its catalog (a session that lives on its own, as in the simulator).
    pub fn owning(
        params: &Params,
        challenge: [u8; CHALLENGE_LEN],
        epoch: u32,
        catalog: Box<dyn Catalog + Send>,
    ) -> Result<Server<'static>, Failure> {
        Server::holding(params, challenge, epoch, HeldCatalog::Owned(catalog))
    }

    fn holding(
        params: &Params,
        challenge: [u8; CHALLENGE_LEN],
        epoch: u32,
        catalog: HeldCatalog<'a>,
    ) -> Result<Self, Failure> {
        let secret = check_secret(params.secret.as_deref()).map_err(Failure::Local)?.to_vec();
        Ok(Server {
            secret,
            challenge,
            epoch,
            catalog,
            heartbeat: params.heartbeat_timeout.max(SILENCE_REPORT),
            next_request_wait: params.next_request_wait,
            phase: Phase::Revision,
            inbox: Inbox::default(),
            outbox: VecDeque::from([encode_revision(REVISION).to_vec()]),
            events: VecDeque::new(),
            counters: Counters::default(),
            failure: None,
            accepted: None,
            xfer: None,
            served: Vec::new(),
            last: None,
            wait_until: None,
        })
    }

    /// Why the session failed, once it did.
    pub fn failure(&self) -> Option<&Failure> {
        self.failure.as_ref()
    }

    /// The files sent to the end so far, in order.
    pub fn served(&self) -> &[ServedFile] {
        &self.served
    }

    /// The current inter-packet delay in microseconds, during a transfer.
    pub fn ipd_us(&self) -> Option<f64> {
        self.xfer.as_ref().map(|x| x.ipd.current_us())
    }

    fn fail(&mut self, failure: Failure) {
        if self.phase == Phase::Ended {
            return;
        }
        self.phase = Phase::Ended;
        self.xfer = None;
        self.accepted = None;
        self.last = None;
        self.events.push_back(Event::Failed(failure.to_string()));
        self.failure = Some(failure);
    }

    fn end(&mut self) {
        self.phase = Phase::Ended;
        self.events.push_back(Event::Done);
    }

    /// Consume every complete message waiting.
    fn advance(&mut self, now: Instant) {
        loop {
            match self.phase {
                Phase::Revision => {
                    let Some(bytes) = self.inbox.take::<4>() else { return };
                    let theirs = decode_revision(&bytes).unwrap_or_default();
                    if theirs != REVISION {
                        return self.fail(Failure::Protocol(format!(
                            "the client speaks protocol revision {theirs:#010x}, not {REVISION:#010x}"
                        )));
                    }
                    self.outbox.push_back(self.challenge.to_vec());
                    self.phase = Phase::Proof;
                }
                Phase::Proof => {
                    let Some(theirs) = self.inbox.take::<PROOF_LEN>() else { return };
                    if !same_proof(&theirs, &proof(&self.challenge, &self.secret)) {
                        self.outbox.push_back(vec![AUTH_REFUSED]);
                        return self
                            .fail(Failure::Refused("the client did not prove the shared secret".into()));
                    }
                    self.outbox.push_back(vec![AUTH_OK]);
                    self.phase = Phase::Name;
                }
                Phase::Name => match decode_name(self.inbox.buffered()) {
                    Ok(None) => return,
                    Err(e) => return self.fail(Failure::Protocol(e.to_string())),
                    Ok(Some((name, used))) => {
                        self.inbox.consume(used);
                        self.wait_until = None;
                        if name == digest::TSUNAMI_REQUEST {
                            self.answer_digest(now);
                            continue;
                        }
                        match self.catalog.open(&name) {
                            Ok(source) => {
                                self.outbox.push_back(vec![FILE_OK]);
                                self.accepted = Some(Accepted { name, source, info: None });
                                self.phase = Phase::Params;
                            }
                            Err(why) => {
                                self.outbox.push_back(vec![FILE_CANNOT_OPEN]);
                                return self.fail(Failure::Refused(why));
                            }
                        }
                    }
                },
                Phase::Params => {
                    let Some(bytes) = self.inbox.take::<{ TransferRequest::LEN }>() else { return };
                    match TransferRequest::decode(&bytes) {
                        Ok(request) => self.describe(request),
                        Err(e) => return self.fail(Failure::Protocol(e.to_string())),
                    }
                }
                Phase::Port => {
                    let Some(bytes) = self.inbox.take::<2>() else { return };
                    match decode_port(&bytes) {
                        Ok(0) | Err(_) => {
                            return self.fail(Failure::Protocol("the client named UDP port 0".into()))
                        }
                        Ok(port) => self.start(now, port),
                    }
                }
                Phase::Sending => {
                    let Some(bytes) = self.inbox.take::<{ Record::LEN }>() else { return };
                    match Record::decode(&bytes) {
                        Ok(record) => self.handle_record(now, record),
                        Err(e) => return self.fail(Failure::Protocol(e.to_string())),
                    }
                }
                Phase::Ended => return,
            }
        }
    }

    /// The client's parameters arrived: check them and describe the file.
    fn describe(&mut self, request: TransferRequest) {
        let Some(accepted) = self.accepted.as_mut() else { return };
        let b = request.block_size;
        if b == 0 || b > MAX_BLOCK_SIZE {
            return self.fail(Failure::Protocol(format!(
                "the client asked for blocks of {b} bytes; 1 to {MAX_BLOCK_SIZE} are served"
            )));
        }
        let control = RateControl {
            threshold: request.error_threshold,
            slower: request.slower,
            faster: request.faster,
        };
        let Some(ipd) = Ipd::new(b, request.target_rate, control) else {
            return self.fail(Failure::Protocol(
                "the client asked for a rate of 0 bit/s or a factor with a zero denominator".into(),
            ));
        };
        let size = accepted.source.len();
        let Some(count) = block_count(size, b).and_then(fits_on_wire) else {
            // The request was accepted already: the wire has no refusal left, so the
            // connection closes without a file description.
            let name = accepted.name.clone();
            return self.fail(Failure::Refused(format!(
                "{name}: {size} bytes make more than 2^32-1 blocks of {b} bytes (the client must ask \
                 for larger blocks)"
            )));
        };
        let info = FileInfo { size, block_size: b, block_count: count, epoch: self.epoch };
        self.outbox.push_back(info.encode().to_vec());
        accepted.info = Some((info, ipd));
        self.phase = Phase::Port;
    }

    /// The client named its UDP port: start sending.
    fn start(&mut self, now: Instant, port: u16) {
        let Some(Accepted { name, source, info: Some((info, ipd)) }) = self.accepted.take() else { return };
        self.events.push_back(Event::DataPeerPort(port));
        self.counters.size = Some(info.size);
        self.xfer = Some(Sending {
            name,
            source,
            size: info.size,
            block_size: info.block_size,
            count: info.block_count,
            ipd,
            next_original: 1,
            queue: VecDeque::new(),
            queued: HashSet::new(),
            pacer: Pacer::new(now, CatchUp::Within(CATCH_UP)),
            next_x: now,
            last_feedback: now,
            last_silence_report: now,
        });
        self.phase = Phase::Sending;
    }

    fn handle_record(&mut self, now: Instant, record: Record) {
        let Some(x) = self.xfer.as_mut() else { return };
        x.last_feedback = now;
        x.last_silence_report = now;
        let in_range = (1..=x.count).contains(&record.block);
        match record.kind {
            RecordKind::Retransmit | RecordKind::Restart if !in_range => {
                let (block, count) = (record.block, x.count);
                self.fail(Failure::Protocol(format!("the client asked for block {block} of {count}")));
            }
            RecordKind::Retransmit => {
                if x.queue.len() < MAX_QUEUED && x.queued.insert(record.block) {
                    x.queue.push_back(record.block);
                }
            }
            RecordKind::Restart => {
                x.next_original = u64::from(record.block);
                self.counters.rounds += 1;
            }
            RecordKind::ErrorRate => x.ipd.on_error_rate(record.error_rate),
            RecordKind::Stop => self.stopped(now),
        }
    }

    /// The client has the whole file: keep it for its digest, wait for another name.
    fn stopped(&mut self, now: Instant) {
        let Some(x) = self.xfer.take() else { return };
        self.counters.delivered += x.size;
        self.served.push(ServedFile { name: x.name.clone(), size: x.size });
        self.last = Some(LastSent { name: x.name, source: x.source, digest: None });
        self.phase = Phase::Name;
        self.wait_until = Some(now + self.next_request_wait);
    }

    /// Our client asked for the digest of the file last sent: answer it (computing it the first
    /// time), or refuse like a file that cannot be opened.
    fn answer_digest(&mut self, now: Instant) {
        let Some(last) = self.last.as_mut() else {
            self.outbox.push_back(vec![FILE_CANNOT_OPEN]);
            return self.fail(Failure::Refused(
                "the client asked for the digest of a file before any file was sent".into(),
            ));
        };
        let sum = match last.digest {
            Some(sum) => sum,
            None => match last.source.digest() {
                Ok(sum) => *last.digest.insert(sum),
                Err(e) => {
                    let why = format!("cannot read {} to compute its digest: {e}", last.name);
                    self.outbox.push_back(vec![FILE_CANNOT_OPEN]);
                    return self.fail(Failure::Local(why));
                }
            },
        };
        self.outbox.push_back([&[digest::TSUNAMI_ANSWER][..], &sum].concat());
        self.wait_until = Some(now + self.next_request_wait);
    }

    /// Fill `buf` with block `block` of type `kind`; its length, or `None` after a read error.
    fn build(&mut self, block: u32, kind: BlockKind, buf: &mut [u8]) -> Option<usize> {
        let x = self.xfer.as_mut()?;
        let b = x.block_size as usize;
        let datagram = buf.get_mut(..HEADER_LEN + b)?;
        BlockHeader { block, kind }.encode_into(datagram);
        let body = &mut datagram[HEADER_LEN..];
        let mut len = 0;
        if block > 0 {
            let offset = u64::from(block - 1) * u64::from(x.block_size);
            len = x.size.saturating_sub(offset).min(b as u64) as usize;
            if let Err(e) = x.source.read_at(offset, &mut body[..len]) {
                let name = x.name.clone();
                self.fail(Failure::Local(format!("cannot read {name} at byte {offset}: {e}")));
                return None;
            }
        }
        body[len..].fill(0);
        Some(HEADER_LEN + b)
    }
}

impl Session for Server<'_> {
    fn handle_control(&mut self, now: Instant, _channel: usize, bytes: &[u8]) {
        if self.phase == Phase::Ended {
            return;
        }
        self.inbox.push(bytes);
        self.advance(now);
    }

    fn handle_control_closed(&mut self, _now: Instant, _channel: usize) {
        let when = match self.phase {
            Phase::Ended => return,
            Phase::Name if !self.served.is_empty() => return self.end(),
            Phase::Revision => "before saying its protocol revision",
            Phase::Proof => "before proving the shared secret",
            Phase::Name => "without asking for a file",
            Phase::Params | Phase::Port => "before the transfer started",
            Phase::Sending => "during the transfer",
        };
        self.fail(Failure::Local(format!("the client closed the connection {when}")));
    }

    fn handle_datagram(&mut self, _now: Instant, _datagram: &[u8]) {
        // A Tsunami client sends nothing over UDP.
        self.counters.malformed += 1;
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.phase == Phase::Name && self.wait_until.is_some_and(|t| t <= now) {
            return self.end();
        }
        let heartbeat = self.heartbeat;
        let Some(x) = self.xfer.as_mut() else { return };
        if now.saturating_since(x.last_feedback) >= heartbeat {
            let name = x.name.clone();
            return self.fail(Failure::Local(format!(
                "no word from the client for {heartbeat:?} while sending {name}"
            )));
        }
        if now >= x.last_feedback.max(x.last_silence_report) + SILENCE_REPORT {
            x.ipd.on_error_rate(FULL_ERROR);
            x.last_silence_report = now;
        }
    }

    fn poll_control(&mut self) -> Option<(usize, Vec<u8>)> {
        self.outbox.pop_front().map(|bytes| (0, bytes))
    }

    fn poll_datagram(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        let x = self.xfer.as_mut()?;
        if now < x.send_due() {
            return None;
        }
        let (block, kind) = if let Some(block) = x.queue.pop_front() {
            x.queued.remove(&block);
            self.counters.retransmitted += 1;
            (block, BlockKind::Retransmission)
        } else if x.next_original <= u64::from(x.count) {
            // At most `count`, which is a u32.
            let block = x.next_original as u32;
            x.next_original += 1;
            if block == x.count {
                x.next_x = now + x.x_gap();
                (block, BlockKind::Terminate)
            } else {
                (block, BlockKind::Original)
            }
        } else {
            // Repeat the last block (block 0 for an empty file) until the client stops us.
            x.next_x = now + x.x_gap();
            self.counters.retransmitted += 1;
            (x.count, BlockKind::Terminate)
        };
        let gap = x.ipd.gap();
        x.pacer.on_send(now, gap);
        let len = self.build(block, kind, buf)?;
        self.counters.datagrams_sent += 1;
        self.counters.bytes_sent += len as u64;
        Some(len)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match (&self.xfer, self.phase) {
            (Some(x), Phase::Sending) => Some(x.send_due().min(x.silence_due(self.heartbeat))),
            (_, Phase::Name) => self.wait_until,
            _ => None,
        }
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    fn counters(&self) -> Counters {
        self.counters
    }

    fn max_datagram(&self) -> usize {
        HEADER_LEN + MAX_BLOCK_SIZE as usize
    }
}
