//! Flows of the seed papers' other protocols (RBUDP, Tsunami, FOBS): a [`udt_bulk::Session`]
//! at each end, run by the host like a UDT connection.
//!
//! Data datagrams travel the topology like any other. A session's control channels (TCP
//! connections in the real protocols) are modelled as reliable, ordered channels along the same
//! path: each batch of control bytes travels the links as one datagram marked as such
//! ([`Datagram::side_channel`]), queues behind the data and takes its serialization time like
//! a packet, but no link drops, loses, reorders or corrupts it (a TCP connection's bytes arrive,
//! late at worst). So an end-of-blast marker never overtakes the blast it ends. What it does
//! not model is TCP's own retransmission delay and congestion window when the control path
//! loses packets.
//!
//! Invariants: a session sees nothing and sends nothing before its flow's start, and its clock
//! reads zero there (a session is made before its flow starts, and its setup deadlines count
//! from its own zero, as over sockets); after it
//! reported its end it sends no more data (the contract of [`udt_bulk::Session`]) and its end
//! and time are kept for reports.

use std::fmt;
use std::sync::Arc;

use udt_bulk::{Counters, Event, Session};
use udt_proto::Instant;

use crate::node::Cx;
use crate::packet::{Addr, Datagram};

/// Both ends of one transfer.
pub struct BulkPair {
    /// The end that holds the data.
    pub sender: Box<dyn Session + Send>,
    /// The end that receives it.
    pub receiver: Box<dyn Session + Send>,
}

/// Builds a flow's sessions from the run's seed for that flow.
pub type BulkMaker = Arc<dyn Fn(u64) -> BulkPair + Send + Sync>;

/// What a bulk flow runs.
#[derive(Clone)]
pub struct BulkFlow {
    /// The protocol's name, for reports.
    pub protocol: String,
    /// Makes the two sessions.
    pub make: BulkMaker,
    /// Largest datagram either session sends (for the simulator's buffers).
    pub max_datagram: usize,
    /// Bytes of protocol header in a full data datagram (the rest is file data).
    pub header_bytes: usize,
}

impl fmt::Debug for BulkFlow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkFlow")
            .field("protocol", &self.protocol)
            .field("max_datagram", &self.max_datagram)
            .field("header_bytes", &self.header_bytes)
            .finish()
    }
}

/// One end of a bulk flow on a host's socket.
pub(crate) struct BulkApp {
    session: Box<dyn Session + Send>,
    start: Instant,
    end: Option<(Instant, Result<(), String>)>,
}

/// How one end of a bulk flow ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BulkEnd {
    /// When it reported its end.
    pub at: Instant,
    /// `Ok` when the transfer completed, else the session's reason.
    pub result: Result<(), String>,
}

impl BulkApp {
    pub(crate) fn new(session: Box<dyn Session + Send>, start: Instant) -> Self {
        BulkApp { session, start, end: None }
    }

    /// A datagram or control bytes arrived.
    pub(crate) fn handle(&mut self, now: Instant, d: &Datagram) {
        if now < self.start {
            return;
        }
        let local = self.local(now);
        match d.side_channel {
            Some(channel) => self.session.handle_control(local, usize::from(channel), d.payload()),
            None if self.end.is_none() => self.session.handle_datagram(local, d.payload()),
            None => {}
        }
    }

    /// Let the session act at `now`: control bytes (marked as a side channel) and datagrams go
    /// out through `transmit`. Returns the next wake-up.
    pub(crate) fn drive(
        &mut self,
        now: Instant,
        src: Addr,
        peer: Addr,
        cx: &mut Cx<'_>,
        mut transmit: impl FnMut(&mut Cx<'_>, Datagram),
    ) -> Option<Instant> {
        if now < self.start {
            return Some(self.start);
        }
        let local = self.local(now);
        if self.session.poll_timeout().is_some_and(|t| t <= local) {
            self.session.handle_timeout(local);
        }
        self.flush_control(src, peer, cx, &mut transmit);
        if self.end.is_none() {
            loop {
                let mut buf = cx.pool().take();
                match self.session.poll_datagram(local, &mut buf) {
                    Some(n) => transmit(cx, Datagram::new(src, peer, buf, n)),
                    None => {
                        cx.pool().give(buf);
                        break;
                    }
                }
            }
        }
        while let Some(event) = self.session.poll_event() {
            let result = match event {
                Event::Done => Ok(()),
                Event::Failed(why) => Err(why),
                Event::DataPeerPort(_) | Event::Size(_) | Event::QuietFor(_) => continue,
            };
            self.end.get_or_insert((now, result));
        }
        // Control bytes may follow the end (a final acknowledgement): poll once more.
        self.flush_control(src, peer, cx, &mut transmit);
        self.session.poll_timeout().map(|t| (self.start + t.saturating_since(Instant::ZERO)).max(now))
    }

    /// The session's clock at `now`: the time since the flow's start.
    fn local(&self, now: Instant) -> Instant {
        Instant::ZERO + now.saturating_since(self.start)
    }

    /// Send what the session wrote on its control channels.
    fn flush_control(
        &mut self,
        src: Addr,
        peer: Addr,
        cx: &mut Cx<'_>,
        transmit: &mut impl FnMut(&mut Cx<'_>, Datagram),
    ) {
        while let Some((channel, bytes)) = self.session.poll_control() {
            let len = bytes.len();
            let mut d = Datagram::new(src, peer, bytes, len);
            d.side_channel = Some(u8::try_from(channel).unwrap_or(u8::MAX));
            transmit(cx, d);
        }
    }

    /// What the session counted.
    pub(crate) fn counters(&self) -> Counters {
        self.session.counters()
    }

    /// How it ended, if it did.
    pub(crate) fn end(&self) -> Option<BulkEnd> {
        self.end.as_ref().map(|(at, result)| BulkEnd { at: *at, result: result.clone() })
    }
}
