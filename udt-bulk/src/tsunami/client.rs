//! The receiving end of a Tsunami transfer, sans-IO: the control exchange (revision, proof,
//! file request, parameters, UDP port), block placement, missing-block tracking and the
//! client's records (retransmit, restart, error rate, stop) (seed-protocols.md, Tsunami steps
//! 1-7 and "Client behaviour"), then the end-to-end digest ([`crate::digest`]).
//!
//! Missing blocks: the server sends originals in order, so every block below the *horizon*
//! (one past the highest original seen; past the last block once an `X` arrived) that is not
//! held is missing. Each batch asks for at most [`MAX_REQUESTS`] of them; when more are
//! missing the client asks for a restart at the first one instead, and until an original of
//! the restarted stream arrives (one below the old horizon) or a grace time passes, originals
//! still on the wire from before do not move the horizon.
//!
//! The digest: with the stop record the client asks for the file named
//! [`digest::TSUNAMI_REQUEST`]. Our server answers [`digest::TSUNAMI_ANSWER`] and the
//! [`digest::LEN`] bytes of the BLAKE3 of the file it sent, kept for [`Session::peer_digest`]; a
//! reference server answers [`FILE_CANNOT_OPEN`] (it tried to open a file of that name). Any
//! other answer is counted as malformed. The client ends on the answer, when the server closes,
//! or after [`digest::wait`], always with [`Event::Done`] (the data is complete either way).
//!
//! Invariants: a block is written to the sink once, at (block - 1) x block size, truncated at
//! the file size; block numbers outside 1..=count and datagrams of the wrong size are dropped
//! and counted as malformed; memory grows with the gaps actually seen, never with the size the
//! server announced; [`Event::Done`] comes after the sink's `finish`, with the stop record and
//! the digest request sent before it; at most one digest answer (33 bytes) is ever buffered.

use std::collections::VecDeque;
use std::time::Duration;

use udt_proto::range_set::RangeSet;
use udt_proto::time::Instant;

use super::auth::{check_secret, proof};
use super::failure::Failure;
use super::inbox::Inbox;
use super::rate::ErrorReport;
use super::wire::{
    block_count, decode_revision, encode_name, encode_port, encode_revision, BlockHeader, BlockKind,
    FileInfo, Record, TransferRequest, AUTH_OK, CHALLENGE_LEN, FILE_CANNOT_OPEN, FILE_OK, HEADER_LEN,
    MAX_BLOCK_SIZE, REVISION,
};
use super::Params;
use crate::digest;
use crate::held::HeldSink;
use crate::session::{Counters, Event, Session};
use crate::storage::Sink;

/// Most retransmit records in one batch (the reference's `MAX_RETRANSMISSION_BUFFER`); more
/// missing blocks than this ask for a restart instead.
pub const MAX_REQUESTS: usize = 2048;

/// Where the control exchange is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Revision,
    Challenge,
    AuthResult,
    FileResult,
    FileInfo,
    Receiving,
    /// Every block is in: waiting for the answer to the digest request.
    Digest,
    Ended,
}

/// A restart asked for and not yet seen in effect.
#[derive(Debug, Clone, Copy)]
struct PendingRestart {
    /// The horizon when it was asked: originals at or above it are from before.
    mark: u64,
    /// When to stop waiting for it.
    until: Instant,
}

/// The transfer, once the server described the file.
struct Receiving {
    size: u64,
    block_size: u32,
    count: u64,
    held: RangeSet<u64>,
    horizon: u64,
    restart: Option<PendingRestart>,
    next_update: Instant,
    last_batch_at: Option<Instant>,
    received_this_interval: u64,
}

/// A Tsunami client fetching one file into a sink.
pub struct Client<'a> {
    secret: Vec<u8>,
    remote: String,
    udp_port: u16,
    request: TransferRequest,
    update_period: Duration,
    sink: HeldSink<'a>,
    phase: Phase,
    inbox: Inbox,
    outbox: VecDeque<Vec<u8>>,
    events: VecDeque<Event>,
    counters: Counters,
    failure: Option<Failure>,
    asked_at: Instant,
    rtt: Duration,
    report: ErrorReport,
    xfer: Option<Receiving>,
    /// Until when the digest answer is awaited, in [`Phase::Digest`].
    digest_until: Option<Instant>,
    /// The server's digest of the file, once it sent one.
    digest: Option<[u8; digest::LEN]>,
}

impl<'a> Client<'a> {
    /// A client that will ask for `remote` and receive its blocks on `udp_port` (the port its
    /// data socket is bound to), writing them into `sink`. Refuses what [`Client::check`]
    /// refuses.
    pub fn new(
        params: &Params,
        remote: &str,
        udp_port: u16,
        sink: &'a mut dyn Sink,
    ) -> Result<Self, Failure> {
        Self::holding(params, remote, udp_port, HeldSink::Borrowed(sink))
    }

    /// [`Client::new`] owning its sink (a session that lives on its own, as in the simulator).
    pub fn owning(
        params: &Params,
        remote: &str,
        udp_port: u16,
        sink: Box<dyn Sink>,
    ) -> Result<Client<'static>, Failure> {
        Client::holding(params, remote, udp_port, HeldSink::Owned(sink))
    }

    fn holding(params: &Params, remote: &str, udp_port: u16, sink: HeldSink<'a>) -> Result<Self, Failure> {
        Self::check(params, remote)?;
        let secret = params.secret.clone().unwrap_or_default();
        let request = TransferRequest {
            block_size: params.block_size,
            target_rate: params.target_rate,
            error_threshold: params.error_threshold,
            slower: params.slower,
            faster: params.faster,
        };
        Ok(Client {
            secret,
            remote: remote.to_owned(),
            udp_port,
            request,
            update_period: params.update_period.max(Duration::from_millis(1)),
            sink,
            phase: Phase::Revision,
            inbox: Inbox::default(),
            outbox: VecDeque::from([encode_revision(REVISION).to_vec()]),
            events: VecDeque::new(),
            counters: Counters::default(),
            failure: None,
            asked_at: Instant::ZERO,
            rtt: Duration::ZERO,
            report: ErrorReport::new(params.history),
            xfer: None,
            digest_until: None,
            digest: None,
        })
    }

    /// Whether `params` and `remote` make a client: a usable secret, a block size of 1 to
    /// [`MAX_BLOCK_SIZE`], a nonzero rate and denominators, a name that can be sent.
    pub fn check(params: &Params, remote: &str) -> Result<(), Failure> {
        check_secret(params.secret.as_deref()).map_err(Failure::Local)?;
        if params.block_size == 0 || params.block_size > MAX_BLOCK_SIZE {
            return Err(Failure::Local(format!(
                "a block size of {} bytes: it must be 1 to {MAX_BLOCK_SIZE}",
                params.block_size
            )));
        }
        if params.target_rate == 0 {
            return Err(Failure::Local("a target rate of 0 bit/s".into()));
        }
        if params.slower.1 == 0 || params.faster.1 == 0 {
            return Err(Failure::Local("a slow-down or speed-up factor with a zero denominator".into()));
        }
        encode_name(remote).map(drop).map_err(|e| Failure::Local(e.to_string()))
    }

    /// Why the session failed, once it did.
    pub fn failure(&self) -> Option<&Failure> {
        self.failure.as_ref()
    }

    /// The round-trip time measured from the file request to its answer.
    pub fn rtt(&self) -> Duration {
        self.rtt
    }

    fn fail(&mut self, failure: Failure) {
        if self.phase == Phase::Ended {
            return;
        }
        self.phase = Phase::Ended;
        self.xfer = None;
        self.digest_until = None;
        self.events.push_back(Event::Failed(failure.to_string()));
        self.failure = Some(failure);
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
                            "the server speaks protocol revision {theirs:#010x}, not {REVISION:#010x}"
                        )));
                    }
                    self.phase = Phase::Challenge;
                }
                Phase::Challenge => {
                    let Some(challenge) = self.inbox.take::<CHALLENGE_LEN>() else { return };
                    self.outbox.push_back(proof(&challenge, &self.secret).to_vec());
                    self.phase = Phase::AuthResult;
                }
                Phase::AuthResult => {
                    let Some([answer]) = self.inbox.take::<1>() else { return };
                    if answer != AUTH_OK {
                        return self
                            .fail(Failure::Refused("the server did not accept the shared secret".into()));
                    }
                    match encode_name(&self.remote) {
                        Ok(line) => self.outbox.push_back(line),
                        Err(e) => return self.fail(Failure::Local(e.to_string())),
                    }
                    self.asked_at = now;
                    self.phase = Phase::FileResult;
                }
                Phase::FileResult => {
                    let Some([answer]) = self.inbox.take::<1>() else { return };
                    if answer != FILE_OK {
                        return self.fail(Failure::Refused(format!(
                            "the server cannot open {:?} (answer {answer}: no such file, unreadable, \
                             or not served)",
                            self.remote
                        )));
                    }
                    self.rtt = now.saturating_since(self.asked_at);
                    self.outbox.push_back(self.request.encode().to_vec());
                    self.phase = Phase::FileInfo;
                }
                Phase::FileInfo => {
                    let Some(bytes) = self.inbox.take::<{ FileInfo::LEN }>() else { return };
                    match FileInfo::decode(&bytes) {
                        Ok(info) => self.start(now, info),
                        Err(e) => return self.fail(Failure::Protocol(e.to_string())),
                    }
                }
                Phase::Receiving => {
                    if !self.inbox.is_empty() {
                        let n = self.inbox.buffered().len();
                        return self.fail(Failure::Protocol(format!(
                            "the server sent {n} unexpected control bytes during the transfer"
                        )));
                    }
                    return;
                }
                Phase::Digest => return self.take_digest(),
                Phase::Ended => return,
            }
        }
    }

    /// The server described the file: check it, size the sink, name our port.
    fn start(&mut self, now: Instant, info: FileInfo) {
        let block_size = self.request.block_size;
        if info.block_size != block_size {
            return self.fail(Failure::Protocol(format!(
                "the server answered blocks of {} bytes, not the {block_size} asked",
                info.block_size
            )));
        }
        let count = block_count(info.size, block_size).unwrap_or(0);
        if count > u64::from(u32::MAX) {
            return self.fail(Failure::Local(format!(
                "the file is {} bytes: more than 2^32-1 blocks of {block_size} bytes (Tsunami counts \
                 blocks in 32 bits); ask for larger blocks",
                info.size
            )));
        }
        if count != u64::from(info.block_count) {
            return self.fail(Failure::Protocol(format!(
                "the server announced {} blocks for {} bytes in blocks of {block_size}; that takes {count}",
                info.block_count, info.size
            )));
        }
        if let Err(e) = self.sink.set_len(info.size) {
            return self.fail(Failure::Local(format!("cannot size the destination: {e}")));
        }
        self.counters.size = Some(info.size);
        self.events.push_back(Event::Size(info.size));
        self.outbox.push_back(encode_port(self.udp_port).to_vec());
        self.phase = Phase::Receiving;
        self.xfer = Some(Receiving {
            size: info.size,
            block_size,
            count,
            held: RangeSet::new(),
            horizon: 1,
            restart: None,
            next_update: now + self.update_period,
            last_batch_at: None,
            received_this_interval: 0,
        });
        if count == 0 {
            self.complete(now);
        }
    }

    /// Every block is in: make it durable, tell the server to stop, ask for its digest.
    fn complete(&mut self, now: Instant) {
        if let Err(e) = self.sink.finish() {
            return self.fail(Failure::Local(format!("cannot finish the destination: {e}")));
        }
        self.outbox.push_back(Record::stop().encode().to_vec());
        self.outbox.push_back([digest::TSUNAMI_REQUEST.as_bytes(), b"\n"].concat());
        let size = self.xfer.take().map_or(0, |x| x.size);
        self.phase = Phase::Digest;
        self.digest_until = Some(now + digest::wait(size));
    }

    /// The answer to the digest request, once its first byte (and for our server's answer, the
    /// digest) arrived: our server's digest is kept, a reference server's "cannot open" means
    /// none, anything else is malformed. The session ends either way.
    fn take_digest(&mut self) {
        let Some(&answer) = self.inbox.buffered().first() else { return };
        if answer == digest::TSUNAMI_ANSWER {
            let Some(bytes) = self.inbox.take::<{ 1 + digest::LEN }>() else { return };
            self.digest = bytes[1..].try_into().ok();
        } else if answer != FILE_CANNOT_OPEN {
            self.counters.malformed += 1;
        }
        self.end();
    }

    /// The transfer is complete and the digest answered, or no longer awaited.
    fn end(&mut self) {
        self.phase = Phase::Ended;
        self.digest_until = None;
        self.events.push_back(Event::Done);
    }

    /// Ask for what is missing below the horizon, or for a restart when that is too much.
    /// Returns how many blocks the batch asked for (a restart counts as [`MAX_REQUESTS`]).
    fn request_missing(&mut self, now: Instant) -> u64 {
        let Some(x) = self.xfer.as_mut() else { return 0 };
        let below = 1..=x.horizon.saturating_sub(1);
        let missing: Vec<u64> = x.held.gaps(below).flatten().take(MAX_REQUESTS + 1).collect();
        x.last_batch_at = Some(now);
        if missing.len() > MAX_REQUESTS {
            let first = missing[0];
            let grace = self.update_period * 2 + self.rtt * 2;
            x.restart = Some(PendingRestart { mark: x.horizon, until: now + grace });
            x.horizon = first;
            self.counters.rounds += 1;
            // `first` is at most the count, which fits in 32 bits.
            self.outbox.push_back(Record::restart(first as u32).encode().to_vec());
            return MAX_REQUESTS as u64;
        }
        if !missing.is_empty() {
            let mut batch = Vec::with_capacity(missing.len() * Record::LEN);
            for &block in &missing {
                batch.extend_from_slice(&Record::retransmit(block as u32).encode());
            }
            self.outbox.push_back(batch);
        }
        missing.len() as u64
    }

    /// The periodic update: requests, then the error-rate report.
    fn update(&mut self, now: Instant) {
        let requested = self.request_missing(now);
        let Some(x) = self.xfer.as_mut() else { return };
        let received = std::mem::take(&mut x.received_this_interval);
        x.next_update = now + self.update_period;
        let rate = self.report.update(requested, received);
        self.outbox.push_back(Record::error_rate(rate).encode().to_vec());
    }
}

impl Session for Client<'_> {
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
            // A server that closes instead of answering the digest request has none to give.
            Phase::Digest => return self.end(),
            Phase::Revision => "before saying its protocol revision",
            Phase::Challenge => "before sending its challenge",
            Phase::AuthResult => "before answering our proof of the secret",
            Phase::FileResult => "before answering the file request",
            Phase::FileInfo => {
                "after accepting the request, before describing the file (a server closes here \
                 when the file takes 2^32 blocks or more: ask for larger blocks)"
            }
            Phase::Receiving => "during the transfer",
        };
        self.fail(Failure::Local(format!("the server closed the connection {when}")));
    }

    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) {
        if self.phase != Phase::Receiving {
            return;
        }
        let Some(x) = self.xfer.as_mut() else { return };
        let Ok((header, body)) = BlockHeader::decode(datagram, x.block_size) else {
            self.counters.malformed += 1;
            return;
        };
        let block = u64::from(header.block);
        if block == 0 || block > x.count {
            self.counters.malformed += 1;
            return;
        }
        self.counters.datagrams_received += 1;
        x.received_this_interval += 1;
        if x.held.contains(block) {
            self.counters.duplicates += 1;
        } else {
            let offset = (block - 1) * u64::from(x.block_size);
            let len = (x.size - offset).min(u64::from(x.block_size)) as usize;
            if let Err(e) = self.sink.write_at(offset, &body[..len]) {
                return self.fail(Failure::Local(format!("cannot write at byte {offset}: {e}")));
            }
            x.held.insert(block);
            self.counters.delivered += len as u64;
        }
        match header.kind {
            BlockKind::Original => match x.restart {
                Some(r) if block >= r.mark => {}
                _ => {
                    x.restart = None;
                    x.horizon = x.horizon.max(block + 1);
                }
            },
            BlockKind::Retransmission => {}
            BlockKind::Terminate => {
                if x.restart.is_none() {
                    x.horizon = x.count + 1;
                }
            }
        }
        if x.held.len() == x.count {
            return self.complete(now);
        }
        if header.kind == BlockKind::Terminate {
            let gap = (self.rtt * 2).max(Duration::from_millis(1));
            if x.last_batch_at.is_none_or(|at| now.saturating_since(at) >= gap) {
                self.request_missing(now);
            }
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.phase == Phase::Digest && self.digest_until.is_some_and(|t| t <= now) {
            return self.end();
        }
        let Some(x) = self.xfer.as_mut() else { return };
        if x.restart.is_some_and(|r| r.until <= now) {
            x.restart = None;
        }
        if x.next_update <= now {
            self.update(now);
        }
    }

    fn poll_control(&mut self) -> Option<(usize, Vec<u8>)> {
        self.outbox.pop_front().map(|bytes| (0, bytes))
    }

    fn poll_datagram(&mut self, _now: Instant, _buf: &mut [u8]) -> Option<usize> {
        None
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.phase == Phase::Digest {
            return self.digest_until;
        }
        let x = self.xfer.as_ref()?;
        Some(x.restart.map_or(x.next_update, |r| r.until.min(x.next_update)))
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    fn counters(&self) -> Counters {
        self.counters
    }

    fn max_datagram(&self) -> usize {
        HEADER_LEN + self.request.block_size as usize
    }

    fn peer_digest(&self) -> Option<[u8; 32]> {
        self.digest
    }
}
