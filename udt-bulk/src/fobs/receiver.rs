//! The FOBS receiver's state machine (Kannan et al. 2003 §3.2.2), sans-IO.
//!
//! The receive state takes data datagrams of the current chunk, writes each new packet at its
//! place in the sink and marks it in the chunk's map. With [`AckScheme::SegmentedTcp`] it
//! answers each end-of-segment message on the feedback channel (0) with that segment's
//! acknowledgement: an ACK when every packet arrived, else the segment's bits (§3.3.3,
//! §3.3.4); it answers a DONE that asks for one with a NACK listing the chunk's missing
//! packets. With [`AckScheme::ChunkMapUdp`] it sends the whole chunk's bit map as datagrams
//! every segment's worth of arrivals instead (§3.1.2, §3.3.2). When the chunk is complete it
//! says so on the high-priority channel (1) and moves to the next chunk; after the last one it
//! finishes the sink and waits for the sender's digest of the file on channel 1 (our addition,
//! [`crate::digest`]), at most [`crate::digest::wait`]. It is done when the digest arrives
//! ([`Session::peer_digest`] returns it) and, without one, when the sender closes channel 1 or
//! aborts, when its digest is malformed (counted in [`Counters::malformed`]) or when the wait
//! passes: the file is complete, so the check is the application's (each counted in
//! [`FobsStats::digests_missing`]).
//!
//! Every acknowledgement carries the receiver's cumulative [`Report`] of what arrived (our
//! addition, FOBS.md "Reports"), from which the sender computes loss and receive rate.
//!
//! Our addition where the paper is silent: an end-of-segment or DONE names the last data
//! datagram sent before it, and the receiver answers once that datagram's sequence number has
//! been reached — or once data has been quiet for [`QUIET_GAPS`] of its usual inter-arrival
//! times — so that data still queued behind a faster control path is not reported missing.
//!
//! Invariants: a packet is written once; datagrams of a finished chunk are counted as
//! duplicates and dropped; a datagram for a later chunk, a packet number past its chunk or a
//! payload of the wrong length is malformed and dropped; the chunk complete of the last chunk
//! is queued and the sink finished before the digest wait; while waiting no acknowledgement
//! goes out, data is a duplicate, and any input ends the session with [`Event::Done`], never
//! [`Event::Failed`].

use std::collections::VecDeque;

use udt_proto::time::Instant;

use super::chunk::{ChunkMap, Geometry};
use super::outbox::Outbox;
use super::params::{AckScheme, Transfer};
use super::stats::FobsStats;
use super::wire::{
    self, Datagram, FrameReader, MapPart, Message, Report, DIGEST_CHANNEL, MAP_HEADER, NACK_CAP,
};
use crate::digest;
use crate::session::{Counters, Event, Session};
use crate::storage::Sink;

/// Chunk-map datagrams queued beyond this are dropped (the sender resends what it does not
/// hear about).
const MAX_QUEUED_MAPS: usize = 4096;

/// Answer waiting requests when no data arrived for this many smoothed inter-arrival times.
pub const QUIET_GAPS: u32 = 4;
/// Requests waiting beyond this are answered at once.
const MAX_WAITING: usize = 4096;

/// An end-of-segment or DONE waiting for the data sent before it.
#[derive(Debug, Clone, Copy)]
struct Waiting {
    /// The segment to acknowledge, or `None` for a DONE asking for a NACK.
    segment: Option<u32>,
    /// Answer once a datagram with this sequence number or a later one arrived.
    seq: u64,
    /// When the request arrived.
    since: Instant,
}

/// The receiving end of one FOBS transfer.
pub struct ReceiverSession<K: Sink> {
    sink: K,
    transfer: Transfer,
    g: Geometry,
    chunks: u32,
    chunk: u32,
    have: ChunkMap,
    report: Report,
    since_map: u32,
    map_id: u32,
    maps: VecDeque<Vec<u8>>,
    maps_since: Option<Instant>,
    waiting: VecDeque<Waiting>,
    last_arrival: Option<Instant>,
    /// Smoothed time between two data arrivals.
    arrival_gap: Option<std::time::Duration>,
    /// Time spent receiving, silences left out (see [`Report::busy_us`]).
    busy: std::time::Duration,
    readers: [FrameReader; 2],
    outbox: Outbox,
    events: VecDeque<Event>,
    counters: Counters,
    stats: FobsStats,
    /// Every byte is in and the sink finished: the digest is awaited until then.
    digest_deadline: Option<Instant>,
    /// The sender's digest, once it arrived.
    digest: Option<[u8; 32]>,
    ended: bool,
}

impl<K: Sink> ReceiverSession<K> {
    /// Receive `transfer` into `sink`; sizes the sink at once (an empty transfer only waits for
    /// the digest).
    pub fn new(mut sink: K, transfer: Transfer) -> Self {
        let g = transfer.geometry;
        let sized = sink.set_len(g.size);
        let mut r = ReceiverSession {
            sink,
            transfer,
            g,
            chunks: g.chunks(),
            chunk: 0,
            have: ChunkMap::new(g.chunk_len(0)),
            report: Report::default(),
            since_map: 0,
            map_id: 0,
            maps: VecDeque::new(),
            maps_since: None,
            waiting: VecDeque::new(),
            last_arrival: None,
            arrival_gap: None,
            busy: std::time::Duration::ZERO,
            readers: [FrameReader::default(), FrameReader::default()],
            outbox: Outbox::default(),
            events: VecDeque::from([Event::Size(g.size)]),
            counters: Counters { size: Some(g.size), ..Counters::default() },
            stats: FobsStats::default(),
            digest_deadline: None,
            digest: None,
            ended: false,
        };
        if let Err(e) = sized {
            r.fail(Instant::ZERO, format!("sizing the file: {e}"));
        } else if r.chunks == 0 {
            r.await_digest(Instant::ZERO);
        }
        r
    }

    /// What this session counted beyond [`Counters`].
    pub fn stats(&self) -> FobsStats {
        FobsStats { control_bytes: self.outbox.bytes(), ..self.stats }
    }

    /// The sink.
    pub fn sink(&self) -> &K {
        &self.sink
    }

    /// The sink, giving up the session.
    pub fn into_sink(self) -> K {
        self.sink
    }

    fn fail(&mut self, now: Instant, reason: String) {
        if self.ended {
            return;
        }
        self.ended = true;
        self.outbox.push(now, 0, &Message::Abort { reason: reason.clone() });
        self.events.push_back(Event::Failed(reason));
    }

    /// Every byte arrived: make the sink durable, then wait for the sender's digest.
    fn await_digest(&mut self, now: Instant) {
        match self.sink.finish() {
            Ok(()) => self.digest_deadline = Some(now + digest::wait(self.g.size)),
            Err(e) => self.fail(now, format!("finishing the file: {e}")),
        }
    }

    fn awaiting_digest(&self) -> bool {
        !self.ended && self.digest_deadline.is_some()
    }

    /// The wait is over: done, with the sender's digest or without (counted).
    fn end_with(&mut self, digest: Option<[u8; 32]>) {
        self.digest_deadline = None;
        self.digest = digest;
        if digest.is_some() {
            self.stats.digests += 1;
        } else {
            self.stats.digests_missing += 1;
        }
        self.ended = true;
        self.events.push_back(Event::Done);
    }

    /// Broken control input: fails the transfer, or once every byte is in, ends it without a
    /// digest (counted as malformed).
    fn refuse(&mut self, now: Instant, why: String) {
        if self.awaiting_digest() {
            self.counters.malformed += 1;
            self.end_with(None);
        } else {
            self.fail(now, why);
        }
    }

    fn stamped(&self) -> Report {
        Report { busy_us: u64::try_from(self.busy.as_micros()).unwrap_or(u64::MAX), ..self.report }
    }

    fn complete_chunk(&mut self, now: Instant) {
        let done = Message::Complete { chunk: self.chunk, report: self.stamped() };
        self.outbox.push(now, 1, &done);
        self.counters.rounds += 1;
        self.chunk += 1;
        self.since_map = 0;
        self.waiting.clear();
        if self.chunk >= self.chunks {
            self.await_digest(now);
        } else {
            self.have.reset(self.g.chunk_len(self.chunk));
        }
    }

    /// The acknowledgement of one segment: ACK when complete, else its bits.
    fn segment_ack(&mut self, segment: u32, range: std::ops::Range<u32>) -> Message {
        let report = self.stamped();
        if self.have.all_in(range.clone()) {
            self.stats.segment_acks += 1;
            Message::SegmentAck { chunk: self.chunk, segment, report }
        } else {
            self.stats.segment_bits += 1;
            Message::SegmentBits { chunk: self.chunk, segment, report, bits: self.have.bits(range) }
        }
    }

    /// The whole chunk's map as datagrams of at most a payload's worth of bits each.
    fn queue_map(&mut self, now: Instant) {
        self.since_map = 0;
        let per = u32::from(self.g.payload) * 8;
        let len = self.have.len();
        let report = self.stamped();
        let mut first = 0;
        while first < len {
            let count = per.min(len - first);
            let bits = self.have.bits(first..first + count);
            let part = MapPart { chunk: self.chunk, map_id: self.map_id, first, count, report, bits: &bits };
            if self.maps.len() >= MAX_QUEUED_MAPS {
                self.maps.pop_front();
            }
            self.maps.push_back(wire::encode_map(&part));
            first += count;
        }
        self.map_id = self.map_id.wrapping_add(1);
        self.stats.maps += 1;
        self.maps_since.get_or_insert(now);
    }

    /// Time the arrival: the smoothed gap between arrivals, and the busy time of the report
    /// (gaps up to [`QUIET_GAPS`] smoothed gaps; longer ones are the sender's silences). The
    /// smoothing takes gaps clamped to that bound, so one silence does not inflate it.
    fn on_arrival(&mut self, now: Instant) {
        if let Some(last) = self.last_arrival {
            let gap = now - last;
            let bound = self.arrival_gap.map(|g| g * QUIET_GAPS);
            if bound.is_none_or(|b| b.is_zero() || gap <= b) {
                self.busy += gap;
            }
            let sample = bound.filter(|b| !b.is_zero()).map_or(gap, |b| gap.min(b));
            self.arrival_gap = Some(self.arrival_gap.map_or(sample, |g| (g * 7 + sample) / 8));
        }
        self.last_arrival = Some(now);
    }

    /// Queue a request until the data sent before it arrived, and answer what is due.
    fn wait(&mut self, now: Instant, segment: Option<u32>, seq: u64) {
        if self.waiting.len() >= MAX_WAITING {
            self.answer(now, true);
        }
        if seq > self.report.highest_seq {
            // The answer waits for data still on its way; say now what arrived.
            self.outbox.push(now, 0, &Message::Progress { report: self.stamped() });
        }
        self.waiting.push_back(Waiting { segment, seq, since: now });
        self.answer(now, false);
    }

    /// When waiting requests are answered even though their data did not all arrive: data has
    /// been quiet for [`QUIET_GAPS`] inter-arrival times since the later of the last arrival and
    /// the oldest request (`None` before any data arrived: wait for data).
    fn quiet_deadline(&self) -> Option<Instant> {
        let first = self.waiting.front()?;
        let gap = self.arrival_gap?;
        let from = self.last_arrival.map_or(first.since, |a| a.max(first.since));
        Some(from + gap * QUIET_GAPS)
    }

    /// Answer the waiting requests whose data arrived (all of them with `all`).
    fn answer(&mut self, now: Instant, all: bool) {
        while let Some(w) = self.waiting.front().copied() {
            if !all && w.seq > self.report.highest_seq {
                return;
            }
            self.waiting.pop_front();
            match w.segment {
                Some(segment) => {
                    let range = self.g.segment_range(self.chunk, segment);
                    let ack = self.segment_ack(segment, range);
                    self.outbox.push(now, 0, &ack);
                }
                None => self.answer_done(now),
            }
        }
    }

    /// A NACK listing the chunk's missing packets, or the incomplete segments' bits when they
    /// do not fit one NACK (the sender's view lagged).
    fn answer_done(&mut self, now: Instant) {
        if self.have.missing() as usize <= NACK_CAP {
            let missing = self.have.missing_list(NACK_CAP);
            self.stats.nacks += 1;
            let nack = Message::Nack { chunk: self.chunk, report: self.stamped(), missing };
            self.outbox.push(now, 0, &nack);
            return;
        }
        for segment in 0..self.g.segments(self.chunk) {
            let range = self.g.segment_range(self.chunk, segment);
            if !self.have.all_in(range.clone()) {
                let ack = self.segment_ack(segment, range);
                self.outbox.push(now, 0, &ack);
            }
        }
    }

    /// Whether a message for `chunk` concerns the current chunk (`Ok(false)`: a finished one).
    fn current(&mut self, chunk: u32, what: &str) -> Result<bool, String> {
        if chunk < self.chunk {
            self.stats.stale += 1;
            Ok(false)
        } else if chunk == self.chunk && chunk < self.chunks {
            Ok(true)
        } else {
            Err(format!("{what} for chunk {chunk} while receiving chunk {}", self.chunk))
        }
    }

    fn on_message(&mut self, now: Instant, channel: usize, msg: Message) -> Result<(), String> {
        let segmented = self.transfer.scheme == AckScheme::SegmentedTcp;
        match (channel, msg) {
            (DIGEST_CHANNEL, Message::Digest { blake3 }) if self.awaiting_digest() => {
                self.end_with(Some(blake3))
            }
            // The sender failed after every byte arrived (reading the file for its digest).
            (_, Message::Abort { .. }) if self.awaiting_digest() => self.end_with(None),
            (_, Message::Abort { reason }) => return Err(format!("the sender aborted: {reason}")),
            (_, Message::Refuse { reason }) => return Err(format!("the sender refused: {reason}")),
            (0, Message::EndOfSegment { chunk, segment, last_seq }) if segmented => {
                self.stats.end_of_segments += 1;
                if self.current(chunk, "end-of-segment")? {
                    if self.g.segment_range(self.chunk, segment).is_empty() {
                        return Err(format!(
                            "end-of-segment for segment {segment} of a chunk of {} segments",
                            self.g.segments(self.chunk)
                        ));
                    }
                    self.wait(now, Some(segment), last_seq);
                }
            }
            (0, Message::Done { chunk, want_nack, last_seq, .. }) if segmented => {
                self.stats.dones += 1;
                if self.current(chunk, "DONE")? && want_nack {
                    self.wait(now, None, last_seq);
                }
            }
            (c, other) => return Err(format!("unexpected {} on control channel {c}", other.name())),
        }
        Ok(())
    }
}

impl<K: Sink> Session for ReceiverSession<K> {
    fn handle_control(&mut self, now: Instant, channel: usize, bytes: &[u8]) {
        if self.ended {
            return;
        }
        let Some(reader) = self.readers.get_mut(channel) else {
            return self.refuse(now, format!("bytes on control channel {channel}, FOBS has two"));
        };
        reader.push(bytes);
        loop {
            let Some(reader) = self.readers.get_mut(channel) else { return };
            match reader.next_message() {
                Ok(Some(msg)) => {
                    if let Err(why) = self.on_message(now, channel, msg) {
                        return self.refuse(now, why);
                    }
                    if self.ended {
                        return;
                    }
                }
                Ok(None) => return,
                Err(e) => return self.refuse(now, format!("control channel {channel}: {e}")),
            }
        }
    }

    fn handle_control_closed(&mut self, now: Instant, channel: usize) {
        if self.awaiting_digest() {
            // The digest comes before the end of its channel; the other one may end first.
            if channel == DIGEST_CHANNEL {
                self.end_with(None);
            }
            return;
        }
        self.fail(now, format!("the sender closed control channel {channel} before the transfer completed"));
    }

    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) {
        if self.ended {
            return;
        }
        let Ok(Datagram::Data { chunk, packet, seq, payload }) = wire::decode_datagram(datagram) else {
            self.counters.malformed += 1;
            return;
        };
        let fits = chunk < self.chunks
            && packet < self.g.chunk_len(chunk)
            && payload.len() == self.g.packet_len(chunk, packet);
        if !fits || chunk > self.chunk {
            self.counters.malformed += 1;
            return;
        }
        if self.awaiting_digest() {
            // A late copy after every byte arrived: counted, never acknowledged.
            self.counters.datagrams_received += 1;
            self.counters.duplicates += 1;
            self.stats.stale += 1;
            return;
        }
        self.report.received += 1;
        self.report.highest_seq = self.report.highest_seq.max(seq);
        self.on_arrival(now);
        self.counters.datagrams_received += 1;
        if self.transfer.scheme == AckScheme::ChunkMapUdp {
            self.since_map += 1;
        }
        if chunk < self.chunk || self.have.get(packet) {
            self.counters.duplicates += 1;
            self.stats.stale += u64::from(chunk < self.chunk);
        } else {
            if let Err(e) = self.sink.write_at(self.g.offset(chunk, packet), payload) {
                return self.fail(now, format!("writing the file: {e}"));
            }
            self.have.set(packet);
            self.counters.delivered += payload.len() as u64;
            if self.have.is_complete() {
                return self.complete_chunk(now);
            }
        }
        self.answer(now, false);
        if self.since_map >= self.g.segment_packets {
            self.queue_map(now);
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.awaiting_digest() && self.digest_deadline.is_some_and(|d| d <= now) {
            self.stats.digest_timeouts += 1;
            self.end_with(None);
        } else if !self.ended && self.quiet_deadline().is_some_and(|d| d <= now) {
            self.answer(now, true);
        }
    }

    fn poll_control(&mut self) -> Option<(usize, Vec<u8>)> {
        self.outbox.pop()
    }

    fn poll_datagram(&mut self, _now: Instant, buf: &mut [u8]) -> Option<usize> {
        let map = self.maps.pop_front()?;
        if self.maps.is_empty() {
            self.maps_since = None;
        }
        let out = buf.get_mut(..map.len())?;
        out.copy_from_slice(&map);
        self.stats.map_parts += 1;
        self.stats.map_bytes += map.len() as u64;
        Some(map.len())
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let t = udt_proto::time::earliest(self.outbox.due(), self.maps_since);
        if self.ended {
            return t;
        }
        let t = udt_proto::time::earliest(t, self.digest_deadline);
        udt_proto::time::earliest(t, self.quiet_deadline())
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    fn counters(&self) -> Counters {
        self.counters
    }

    fn max_datagram(&self) -> usize {
        self.transfer.data_datagram().max(MAP_HEADER + usize::from(self.g.payload))
    }

    fn peer_digest(&self) -> Option<[u8; 32]> {
        self.digest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Memory;

    fn transfer(size: u64, scheme: AckScheme) -> Transfer {
        Transfer::new(size, 100, 10, 4, scheme).unwrap()
    }

    fn data(chunk: u32, packet: u32, seq: u64, payload: &[u8]) -> Vec<u8> {
        let mut d = vec![0u8; wire::DATA_HEADER];
        wire::encode_data_header(&mut d, chunk, packet, seq).unwrap();
        d.extend_from_slice(payload);
        d
    }

    fn control(r: &mut ReceiverSession<Memory>) -> Vec<(usize, Message)> {
        let mut out = Vec::new();
        while let Some((c, frame)) = r.poll_control() {
            out.push((c, wire::decode_frame(&frame).unwrap().unwrap().0));
        }
        out
    }

    const T: Instant = Instant::ZERO;

    #[test]
    fn packets_land_in_place_and_segments_are_acknowledged_on_their_end() {
        let mut r = ReceiverSession::new(Memory::default(), transfer(1_050, AckScheme::SegmentedTcp));
        assert_eq!(r.poll_event(), Some(Event::Size(1_050)));
        r.handle_datagram(T, &data(0, 1, 1, &[1; 100]));
        r.handle_datagram(T, &data(0, 0, 2, &[0; 100]));
        r.handle_datagram(T, &data(0, 3, 4, &[3; 100]));
        r.handle_control(T, 0, &Message::EndOfSegment { chunk: 0, segment: 0, last_seq: 4 }.encode());
        let report = Report { received: 3, highest_seq: 4, busy_us: 0 };
        let bits = Message::SegmentBits { chunk: 0, segment: 0, report, bits: vec![0b1011] };
        assert_eq!(control(&mut r), vec![(0, bits)]);
        r.handle_datagram(T, &data(0, 2, 5, &[2; 100]));
        r.handle_control(T, 0, &Message::EndOfSegment { chunk: 0, segment: 0, last_seq: 5 }.encode());
        let report = Report { received: 4, highest_seq: 5, busy_us: 0 };
        assert_eq!(control(&mut r), vec![(0, Message::SegmentAck { chunk: 0, segment: 0, report })]);
        assert_eq!(&r.sink().0[..400], &[[0u8; 100], [1; 100], [2; 100], [3; 100]].concat()[..]);
        assert_eq!(r.counters().delivered, 400);
    }

    #[test]
    fn an_end_of_segment_ahead_of_its_data_waits_for_it_or_for_quiet() {
        let mut r = ReceiverSession::new(Memory::default(), transfer(1_050, AckScheme::SegmentedTcp));
        let at = Instant::from_micros;
        r.handle_datagram(at(0), &data(0, 0, 1, &[0; 100]));
        r.handle_datagram(at(100), &data(0, 1, 2, &[0; 100]));
        // The sender sent four datagrams before this end-of-segment; two are still on the way.
        r.handle_control(at(150), 0, &Message::EndOfSegment { chunk: 0, segment: 0, last_seq: 4 }.encode());
        let busy_us = 100;
        let progress = Message::Progress { report: Report { received: 2, highest_seq: 2, busy_us } };
        assert_eq!(control(&mut r), vec![(0, progress)], "waits for datagram 4, saying what arrived");
        r.handle_datagram(at(200), &data(0, 2, 3, &[0; 100]));
        assert!(control(&mut r).is_empty());
        r.handle_datagram(at(300), &data(0, 3, 4, &[0; 100]));
        assert!(matches!(control(&mut r).as_slice(), [(0, Message::SegmentAck { segment: 0, .. })]));
        // Datagram 8 was lost and nothing follows: answered after four quiet gaps of 100 us.
        r.handle_control(at(350), 0, &Message::EndOfSegment { chunk: 0, segment: 1, last_seq: 8 }.encode());
        assert!(matches!(control(&mut r).as_slice(), [(0, Message::Progress { .. })]));
        r.handle_datagram(at(400), &data(0, 4, 5, &[0; 100]));
        assert_eq!(r.poll_timeout(), Some(at(800)));
        r.handle_timeout(at(799));
        assert!(control(&mut r).is_empty());
        r.handle_timeout(at(800));
        let sent = control(&mut r);
        assert!(
            matches!(sent.as_slice(), [(0, Message::SegmentBits { segment: 1, bits, .. })] if bits == &[1]),
            "{sent:?}"
        );
    }

    #[test]
    fn a_complete_chunk_is_announced_on_channel_one_and_the_last_one_awaits_the_digest() {
        let mut r = ReceiverSession::new(Memory::default(), transfer(1_050, AckScheme::SegmentedTcp));
        r.poll_event();
        let mut seq = 0;
        for p in 0..10 {
            seq += 1;
            r.handle_datagram(T, &data(0, p, seq, &[p as u8; 100]));
        }
        let sent = control(&mut r);
        assert!(matches!(sent.as_slice(), [(1, Message::Complete { chunk: 0, .. })]), "{sent:?}");
        r.handle_datagram(T, &data(0, 4, 99, &[9; 100]));
        assert_eq!(r.counters().duplicates, 1, "a packet of a finished chunk");
        r.handle_datagram(T, &data(1, 0, 100, &[7; 50]));
        assert!(matches!(control(&mut r).as_slice(), [(1, Message::Complete { chunk: 1, .. })]));
        assert_eq!(r.poll_event(), None, "the digest is awaited");
        r.handle_control(T, 1, &Message::Digest { blake3: [3; 32] }.encode());
        assert_eq!((r.poll_event(), r.peer_digest()), (Some(Event::Done), Some([3; 32])));
        assert_eq!(r.sink().0.len(), 1_050);
        assert_eq!(r.sink().0[1_000..], [7; 50]);
        assert_eq!(r.sink().0[400..500], [4; 100], "the duplicate did not overwrite");
    }

    #[test]
    fn malformed_datagrams_are_dropped_and_counted() {
        let mut r = ReceiverSession::new(Memory::default(), transfer(1_050, AckScheme::SegmentedTcp));
        r.handle_datagram(T, b"nonsense");
        r.handle_datagram(T, &data(0, 10, 1, &[0; 100])); // past the chunk
        r.handle_datagram(T, &data(1, 0, 1, &[0; 50])); // a later chunk
        r.handle_datagram(T, &data(0, 0, 1, &[0; 99])); // wrong length
        r.handle_datagram(T, &data(5, 0, 1, &[])); // past the file
        let bits = [0u8];
        r.handle_datagram(
            T,
            &wire::encode_map(&MapPart {
                chunk: 0,
                map_id: 0,
                first: 0,
                count: 1,
                report: Report::default(),
                bits: &bits,
            }),
        );
        assert_eq!((r.counters().malformed, r.counters().datagrams_received), (6, 0));
    }

    #[test]
    fn a_done_asking_for_a_nack_gets_the_missing_list() {
        let mut r = ReceiverSession::new(Memory::default(), transfer(1_050, AckScheme::SegmentedTcp));
        for p in [0, 1, 2, 4, 5, 6, 7, 8] {
            r.handle_datagram(T, &data(0, p, u64::from(p) + 1, &[0; 100]));
        }
        r.handle_control(T, 0, &Message::Done { chunk: 0, pass: 0, want_nack: false, last_seq: 9 }.encode());
        assert!(control(&mut r).is_empty(), "a plain DONE needs no answer");
        r.handle_control(T, 0, &Message::Done { chunk: 0, pass: 1, want_nack: true, last_seq: 9 }.encode());
        let report = Report { received: 8, highest_seq: 9, busy_us: 0 };
        assert_eq!(control(&mut r), vec![(0, Message::Nack { chunk: 0, report, missing: vec![3, 9] })]);
    }

    #[test]
    fn the_udp_scheme_maps_the_chunk_every_segment_of_arrivals() {
        let t = Transfer::new(100 * 20, 16, 20, 4, AckScheme::ChunkMapUdp).unwrap();
        let mut r = ReceiverSession::new(Memory::default(), t);
        let mut buf = vec![0u8; r.max_datagram()];
        for (i, p) in [0u32, 2, 3].into_iter().enumerate() {
            r.handle_datagram(T, &data(0, p, i as u64 + 1, &[0; 16]));
        }
        assert_eq!(r.poll_datagram(T, &mut buf), None, "three arrivals: no map yet");
        r.handle_datagram(T, &data(0, 3, 4, &[0; 16]));
        assert_eq!(r.poll_timeout(), Some(T), "a map waits");
        let n = r.poll_datagram(T, &mut buf).unwrap();
        let Ok(Datagram::Map(part)) = wire::decode_datagram(&buf[..n]) else { panic!("a map") };
        assert_eq!((part.chunk, part.first, part.count, part.bits), (0, 0, 20, &[0b1101, 0, 0][..]));
        assert_eq!(part.report.received, 4);
        assert_eq!((r.poll_datagram(T, &mut buf), r.poll_timeout()), (None, None));
        r.handle_control(T, 0, &Message::EndOfSegment { chunk: 0, segment: 0, last_seq: 1 }.encode());
        assert!(matches!(r.poll_event(), Some(Event::Size(_))));
        assert!(
            matches!(r.poll_event(), Some(Event::Failed(why)) if why.contains("unexpected end-of-segment"))
        );
    }

    #[test]
    fn a_large_chunk_map_goes_in_several_datagrams() {
        let t = Transfer::new(16 * 1000, 16, 1000, 1, AckScheme::ChunkMapUdp).unwrap();
        let mut r = ReceiverSession::new(Memory::default(), t);
        r.handle_datagram(T, &data(0, 999, 1, &[0; 16]));
        let mut buf = vec![0u8; r.max_datagram()];
        let mut covered = Vec::new();
        while let Some(n) = r.poll_datagram(T, &mut buf) {
            let Ok(Datagram::Map(part)) = wire::decode_datagram(&buf[..n]) else { panic!("a map") };
            covered.push((part.first, part.count));
        }
        assert_eq!(
            covered,
            vec![
                (0, 128),
                (128, 128),
                (256, 128),
                (384, 128),
                (512, 128),
                (640, 128),
                (768, 128),
                (896, 104)
            ]
        );
    }

    #[test]
    fn protocol_errors_and_early_closes_fail_with_a_reason() {
        let cases: [(usize, Vec<u8>, &str); 6] = [
            (0, Message::EndOfSegment { chunk: 3, segment: 0, last_seq: 0 }.encode(), "chunk 3"),
            (0, Message::EndOfSegment { chunk: 0, segment: 3, last_seq: 0 }.encode(), "segment 3"),
            (1, Message::Hello { token: 1 }.encode(), "unexpected hello"),
            (0, Message::Abort { reason: "source vanished".into() }.encode(), "source vanished"),
            (
                1,
                Message::Refuse { reason: "unknown session token".into() }.encode(),
                "refused: unknown session",
            ),
            (0, b"FOB\x02".to_vec(), "version 2"),
        ];
        for (channel, bytes, expect) in cases {
            let mut r = ReceiverSession::new(Memory::default(), transfer(1_050, AckScheme::SegmentedTcp));
            r.poll_event();
            r.handle_control(T, channel, &bytes);
            let Some(Event::Failed(why)) = r.poll_event() else { panic!("{expect} must fail") };
            assert!(why.contains(expect), "{why}");
        }
        let mut r = ReceiverSession::new(Memory::default(), transfer(1_050, AckScheme::SegmentedTcp));
        r.poll_event();
        r.handle_control_closed(T, 1);
        assert!(
            matches!(r.poll_event(), Some(Event::Failed(why)) if why.contains("closed control channel 1"))
        );
    }

    #[test]
    fn an_empty_transfer_only_awaits_the_digest() {
        let mut r = ReceiverSession::new(Memory(vec![1, 2, 3]), transfer(0, AckScheme::SegmentedTcp));
        assert_eq!((r.poll_event(), r.poll_event()), (Some(Event::Size(0)), None));
        assert!(r.sink().0.is_empty(), "sized to zero");
        assert_eq!(r.poll_timeout(), Some(T + digest::wait(0)));
        let empty = *blake3::hash(b"").as_bytes();
        r.handle_control(T, 1, &Message::Digest { blake3: empty }.encode());
        assert_eq!((r.poll_event(), r.peer_digest()), (Some(Event::Done), Some(empty)));
    }

    /// A receiver of 1 050 bytes (chunks of 10 and 1 packets) that has every byte at `T`.
    fn complete() -> ReceiverSession<Memory> {
        let mut r = ReceiverSession::new(Memory::default(), transfer(1_050, AckScheme::SegmentedTcp));
        for p in 0..10 {
            r.handle_datagram(T, &data(0, p, u64::from(p) + 1, &[p as u8; 100]));
        }
        r.handle_datagram(T, &data(1, 0, 11, &[7; 50]));
        assert_eq!(control(&mut r).len(), 2, "both chunk completes");
        assert_eq!((r.poll_event(), r.poll_event()), (Some(Event::Size(1_050)), None));
        r
    }

    /// The session ended Done, without a digest, and counted it.
    fn done_without_digest(r: &mut ReceiverSession<Memory>) {
        assert_eq!((r.poll_event(), r.peer_digest()), (Some(Event::Done), None));
        assert_eq!(r.stats().digests_missing, 1);
    }

    #[test]
    fn while_the_digest_is_awaited_late_data_and_stale_feedback_get_no_answer() {
        let mut r = complete();
        r.handle_datagram(T, &data(0, 3, 12, &[3; 100]));
        r.handle_datagram(T, &data(1, 0, 13, &[7; 50]));
        r.handle_control(T, 0, &Message::EndOfSegment { chunk: 0, segment: 1, last_seq: 9 }.encode());
        r.handle_control(T, 0, &Message::Done { chunk: 1, pass: 0, want_nack: true, last_seq: 13 }.encode());
        assert_eq!((control(&mut r), r.poll_event()), (vec![], None));
        assert_eq!((r.counters().duplicates, r.counters().delivered), (2, 1_050));
        assert_eq!(r.poll_timeout(), Some(T + digest::wait(1_050)));
        r.handle_control(T, 1, &Message::Digest { blake3: [9; 32] }.encode());
        assert_eq!((r.poll_event(), r.peer_digest()), (Some(Event::Done), Some([9; 32])));
        assert_eq!((r.stats().digests, r.stats().digests_missing), (1, 0));
    }

    #[test]
    fn a_sender_that_closes_channel_one_without_the_digest_leaves_the_transfer_done() {
        let mut r = complete();
        r.handle_control_closed(T, 0);
        assert_eq!(r.poll_event(), None, "channel 0 may end before the digest on channel 1");
        r.handle_control_closed(T, 1);
        done_without_digest(&mut r);
    }

    #[test]
    fn the_digest_wait_passes_and_the_transfer_is_done_without_one() {
        let mut r = complete();
        let deadline = T + digest::wait(1_050);
        r.handle_timeout(deadline - std::time::Duration::from_nanos(1));
        assert_eq!(r.poll_event(), None);
        r.handle_timeout(deadline);
        done_without_digest(&mut r);
        assert_eq!((r.stats().digest_timeouts, r.poll_timeout()), (1, None));
    }

    #[test]
    fn a_malformed_digest_ends_the_transfer_done_without_one_and_is_counted() {
        let mut short = Message::Digest { blake3: [1; 32] }.encode();
        short.truncate(wire::FRAME_HEADER + 31);
        short[5..9].copy_from_slice(&31u32.to_be_bytes());
        let on_channel_0 = Message::Digest { blake3: [1; 32] }.encode();
        for (channel, bytes) in [(1, short), (0, on_channel_0), (1, b"garbage".to_vec())] {
            let mut r = complete();
            r.handle_control(T, channel, &bytes);
            done_without_digest(&mut r);
            assert_eq!(r.counters().malformed, 1);
            assert!(control(&mut r).is_empty(), "no abort: the transfer succeeded");
        }
    }

    #[test]
    fn an_abort_after_every_byte_arrived_leaves_the_transfer_done_without_a_digest() {
        let mut r = complete();
        r.handle_control(T, 0, &Message::Abort { reason: "reading the file for its digest".into() }.encode());
        done_without_digest(&mut r);
        assert_eq!(r.counters().malformed, 0);
    }

    #[test]
    fn a_digest_before_the_last_chunk_completes_is_a_protocol_error() {
        let mut r = ReceiverSession::new(Memory::default(), transfer(1_050, AckScheme::SegmentedTcp));
        r.poll_event();
        r.handle_control(T, 1, &Message::Digest { blake3: [1; 32] }.encode());
        assert!(matches!(r.poll_event(), Some(Event::Failed(why)) if why.contains("unexpected digest")));
        assert_eq!(r.peer_digest(), None);
    }
}
