//! The FOBS sender's state machine (Kannan et al. 2003 §3.2.1), sans-IO.
//!
//! Per chunk, in order: the send state walks the chunk's packets from a cursor, skipping the
//! acknowledged ones; when the cursor leaves a segment in which it sent something it writes an
//! end-of-segment message on the feedback channel (0); at the chunk's end it writes DONE and
//! cycles over the unacknowledged packets again, pass after pass, until the receiver's chunk
//! complete arrives on the high-priority channel (1); then the next chunk. After the last
//! chunk's complete it sends the BLAKE3 digest of the whole file on channel 1 and ends (our
//! addition, [`crate::digest`]; an empty file: at once). A pass whose
//! outstanding packets fit one NACK sends no end-of-segment messages and asks for a NACK in its
//! DONE (§3.3.4). Acknowledgements (segment bits, segment ACK, NACK, or chunk-map datagrams
//! with [`AckScheme::ChunkMapUdp`]) set packets in the chunk's acknowledged map; every one
//! carries the receiver's report, which drives the rate rule and the round-trip estimate
//! (`rate.rs`).
//!
//! Our additions where the paper is silent (FOBS.md): a packet already sent is not sent again
//! until [`RttEstimator::hold`] after the message that announced it (its segment's
//! end-of-segment, or the DONE of a NACK pass) — the acknowledgement it asked for is still on
//! its way before that; and sends are paced at the rate rule's rate.
//!
//! Invariants: the cursor only passes a packet by sending it or because it is acknowledged, so
//! along the cursor's cycle the packets' announce times never decrease and the packet under the
//! cursor is the next one due; the acknowledged map only grows within a chunk; after
//! [`Event::Done`] or [`Event::Failed`] nothing more is sent but queued control bytes; the
//! digest is queued before [`Event::Done`].

use std::collections::VecDeque;

use udt_proto::time::Instant;

use super::chunk::{ChunkMap, Geometry};
use super::outbox::Outbox;
use super::params::{AckScheme, Params, Transfer};
use super::rate::{RateControl, RttEstimator};
use super::stats::FobsStats;
use super::wire::{self, Datagram, FrameReader, Message, Report, DIGEST_CHANNEL, NACK_CAP};
use crate::pace::{CatchUp, Pacer};
use crate::session::{Counters, Event, Session};
use crate::storage::Source;

/// Datagrams the pacer may send back to back after an idle spell.
const BURST: u32 = 8;

/// The sending end of one FOBS transfer.
pub struct SenderSession<S: Source> {
    source: S,
    transfer: Transfer,
    g: Geometry,
    chunks: u32,
    /// The chunk being sent.
    chunk: u32,
    acked: ChunkMap,
    /// Packets of the chunk sent at least once.
    sent: ChunkMap,
    /// Per segment of the chunk: when its last sends were announced.
    announced_at: Vec<Option<Instant>>,
    /// Segments sent in the current NACK pass, announced by its DONE.
    pending: Vec<u32>,
    cursor: u32,
    pass: u32,
    open_segment: Option<u32>,
    sent_in_pass: u32,
    nack_pass: bool,
    seq: u64,
    rate: RateControl,
    rtt: RttEstimator,
    pacer: Pacer,
    readers: [FrameReader; 2],
    outbox: Outbox,
    events: VecDeque<Event>,
    counters: Counters,
    stats: FobsStats,
    completed_bytes: u64,
    ended: bool,
    closed: [bool; 2],
    closing_deadline: Option<Instant>,
}

impl<S: Source> SenderSession<S> {
    /// Send `source` as `transfer` says (its size must be the source's), with the rate fields
    /// of `params`. An empty source sends its digest and is done at once.
    pub fn new(source: S, transfer: Transfer, params: &Params) -> Self {
        let g = transfer.geometry;
        let rate = RateControl::new(params, transfer.data_datagram(), g.segment_packets.max(16));
        let mut s = SenderSession {
            source,
            transfer,
            g,
            chunks: g.chunks(),
            chunk: 0,
            acked: ChunkMap::new(0),
            sent: ChunkMap::new(0),
            announced_at: Vec::new(),
            pending: Vec::new(),
            cursor: 0,
            pass: 0,
            open_segment: None,
            sent_in_pass: 0,
            nack_pass: false,
            seq: 0,
            rate,
            rtt: RttEstimator::new(params.initial_rtt),
            pacer: Pacer::new(Instant::ZERO, CatchUp::Gaps(BURST)),
            readers: [FrameReader::default(), FrameReader::default()],
            outbox: Outbox::default(),
            events: VecDeque::new(),
            counters: Counters { size: Some(g.size), ..Counters::default() },
            stats: FobsStats::default(),
            completed_bytes: 0,
            ended: false,
            closed: [false; 2],
            closing_deadline: None,
        };
        if s.chunks == 0 {
            s.send_digest(Instant::ZERO);
        } else {
            s.start_chunk(0);
        }
        s
    }

    /// What this session counted beyond [`Counters`].
    pub fn stats(&self) -> FobsStats {
        FobsStats {
            rate_bps: self.rate.rate_bps(),
            rate_samples: self.rate.samples(),
            srtt: self.rtt.srtt(),
            control_bytes: self.outbox.bytes(),
            ..self.stats
        }
    }

    fn start_chunk(&mut self, chunk: u32) {
        self.chunk = chunk;
        let len = self.g.chunk_len(chunk);
        self.acked.reset(len);
        self.sent.reset(len);
        self.announced_at = vec![None; self.g.segments(chunk) as usize];
        self.pending.clear();
        self.cursor = 0;
        self.pass = 0;
        self.open_segment = None;
        self.sent_in_pass = 0;
        self.stats.passes += 1;
        self.nack_pass = self.wants_nack_pass();
    }

    /// A pass whose outstanding packets all fit one NACK asks for one (§3.3.4).
    fn wants_nack_pass(&self) -> bool {
        self.transfer.scheme == AckScheme::SegmentedTcp && self.acked.missing() as usize <= NACK_CAP
    }

    /// Every byte is at the receiver: send the file's digest and end; a file that cannot be
    /// read fails the transfer (the receiver is told and ends without a digest).
    fn send_digest(&mut self, now: Instant) {
        match self.source.digest() {
            Ok(blake3) => {
                self.outbox.push(now, DIGEST_CHANNEL, &Message::Digest { blake3 });
                self.stats.digests += 1;
                self.ended = true;
                self.events.push_back(Event::Done);
            }
            Err(e) => self.fail(now, format!("reading the file for its digest: {e}")),
        }
    }

    fn fail(&mut self, now: Instant, reason: String) {
        if self.ended {
            return;
        }
        self.ended = true;
        self.outbox.push(now, 0, &Message::Abort { reason: reason.clone() });
        self.events.push_back(Event::Failed(reason));
    }

    /// Move the cursor over acknowledged packets, announcing the segment it leaves and the end
    /// of the pass, and start the next pass at the chunk's end.
    fn advance(&mut self, now: Instant) {
        let len = self.acked.len();
        let mut wrapped = false;
        loop {
            let next = self.acked.next_missing(self.cursor).unwrap_or(len);
            if let Some(s) = self.open_segment {
                if next >= self.g.segment_range(self.chunk, s).end {
                    self.close_segment(now, s);
                }
            }
            self.cursor = next;
            if next < len {
                return;
            }
            if self.sent_in_pass > 0 {
                self.end_pass(now);
            }
            if self.acked.is_complete() || wrapped {
                return;
            }
            wrapped = true;
            self.cursor = 0;
        }
    }

    /// The cursor left segment `s`, in which it sent this pass.
    fn close_segment(&mut self, now: Instant, s: u32) {
        self.open_segment = None;
        match (self.transfer.scheme, self.nack_pass) {
            (AckScheme::SegmentedTcp, false) => {
                self.outbox.push(
                    now,
                    0,
                    &Message::EndOfSegment { chunk: self.chunk, segment: s, last_seq: self.seq },
                );
                self.stats.end_of_segments += 1;
                self.announce(s, now);
            }
            (AckScheme::SegmentedTcp, true) => self.pending.push(s),
            // No messages: the receiver maps the chunk every segment's worth of arrivals.
            (AckScheme::ChunkMapUdp, _) => self.announce(s, now),
        }
    }

    fn announce(&mut self, s: u32, now: Instant) {
        if let Some(a) = self.announced_at.get_mut(s as usize) {
            *a = Some(now);
        }
    }

    /// The cursor reached the chunk's end after sending in this pass: DONE, and a new pass.
    fn end_pass(&mut self, now: Instant) {
        if self.transfer.scheme == AckScheme::SegmentedTcp {
            let done = Message::Done {
                chunk: self.chunk,
                pass: self.pass,
                want_nack: self.nack_pass,
                last_seq: self.seq,
            };
            self.outbox.push(now, 0, &done);
            self.stats.dones += 1;
        }
        for s in std::mem::take(&mut self.pending) {
            self.announce(s, now);
        }
        self.pass = self.pass.saturating_add(1);
        self.sent_in_pass = 0;
        self.stats.passes += 1;
        self.nack_pass = self.wants_nack_pass();
    }

    /// When the packet under the cursor may go again (`None`: it may go now).
    fn held_until(&self) -> Option<Instant> {
        let p = self.cursor;
        if !self.sent.get(p) || self.acked.get(p) {
            return None;
        }
        let announced = self.announced_at.get(self.g.segment_of(p) as usize).copied().flatten()?;
        Some(announced + self.rtt.hold())
    }

    /// The next datagram's time or the closing deadline, leaving out queued control frames.
    fn poll_timeout_without_control(&self) -> Option<Instant> {
        let mut t = self.closing_deadline;
        if !self.ended && self.cursor < self.acked.len() {
            let send_at = match self.held_until() {
                Some(h) => h.max(self.pacer.due()),
                None => self.pacer.due(),
            };
            t = udt_proto::time::earliest(t, Some(send_at));
        }
        t
    }

    fn on_report(&mut self, now: Instant, report: Report) {
        if let Some(rtt) = self.rate.on_report(now, report) {
            self.rtt.sample(rtt);
        }
    }

    /// Whether an acknowledgement for `chunk` concerns the current chunk (`Ok(false)`: a
    /// finished one, ignored).
    fn current(&mut self, chunk: u32, what: &str) -> Result<bool, String> {
        if chunk < self.chunk {
            self.stats.stale += 1;
            Ok(false)
        } else if chunk == self.chunk {
            Ok(true)
        } else {
            Err(format!("{what} for chunk {chunk} while sending chunk {}", self.chunk))
        }
    }

    fn segment(&self, segment: u32, what: &str) -> Result<std::ops::Range<u32>, String> {
        let range = self.g.segment_range(self.chunk, segment);
        if range.is_empty() {
            return Err(format!(
                "{what} for segment {segment} of a chunk of {} segments",
                self.g.segments(self.chunk)
            ));
        }
        Ok(range)
    }

    fn on_message(&mut self, now: Instant, channel: usize, msg: Message) -> Result<(), String> {
        let segmented = self.transfer.scheme == AckScheme::SegmentedTcp;
        match (channel, msg) {
            (_, Message::Abort { reason }) => return Err(format!("the receiver aborted: {reason}")),
            (0, Message::SegmentBits { chunk, segment, report, bits }) if segmented => {
                self.stats.segment_bits += 1;
                self.on_report(now, report);
                if self.current(chunk, "segment bits")? {
                    let range = self.segment(segment, "segment bits")?;
                    let n = range.end - range.start;
                    if bits.len() != n.div_ceil(8) as usize {
                        return Err(format!("segment bits of {} bytes for {n} packets", bits.len()));
                    }
                    self.acked.apply_bits(range.start, n, &bits);
                }
            }
            (0, Message::SegmentAck { chunk, segment, report }) if segmented => {
                self.stats.segment_acks += 1;
                self.on_report(now, report);
                if self.current(chunk, "segment ACK")? {
                    let range = self.segment(segment, "segment ACK")?;
                    self.acked.set_range(range);
                }
            }
            (0, Message::Nack { chunk, report, mut missing }) if segmented => {
                self.stats.nacks += 1;
                self.on_report(now, report);
                if self.current(chunk, "NACK")? {
                    missing.sort_unstable();
                    missing.dedup();
                    let len = self.acked.len();
                    if missing.last().is_some_and(|&m| m >= len) {
                        return Err(format!("NACK names a packet past the chunk's {len}"));
                    }
                    let mut from = 0;
                    for m in missing {
                        self.acked.set_range(from..m);
                        from = m + 1;
                    }
                    self.acked.set_range(from..len);
                }
            }
            (0, Message::Progress { report }) if segmented => self.on_report(now, report),
            (1, Message::Complete { chunk, report }) => {
                self.on_report(now, report);
                if self.current(chunk, "chunk complete")? {
                    self.complete_chunk(now);
                }
            }
            (c, other) => return Err(format!("unexpected {} on control channel {c}", other.name())),
        }
        Ok(())
    }

    fn complete_chunk(&mut self, now: Instant) {
        self.completed_bytes += self.g.chunk_bytes(self.chunk);
        self.counters.rounds += 1;
        let next = self.chunk + 1;
        if next >= self.chunks {
            self.chunk = next;
            self.acked.reset(0);
            self.send_digest(now);
        } else {
            self.start_chunk(next);
        }
    }

    fn on_map(&mut self, now: Instant, part: wire::MapPart<'_>) {
        self.stats.map_parts += 1;
        self.on_report(now, part.report);
        if part.chunk < self.chunk {
            self.stats.stale += 1;
        } else if part.chunk > self.chunk || part.first >= self.acked.len() {
            self.counters.malformed += 1;
        } else {
            self.acked.apply_bits(part.first, part.count, part.bits);
        }
    }
}

impl<S: Source> Session for SenderSession<S> {
    fn handle_control(&mut self, now: Instant, channel: usize, bytes: &[u8]) {
        if self.ended {
            return;
        }
        let Some(reader) = self.readers.get_mut(channel) else {
            return self.fail(now, format!("bytes on control channel {channel}, FOBS has two"));
        };
        reader.push(bytes);
        loop {
            let Some(reader) = self.readers.get_mut(channel) else { return };
            match reader.next_message() {
                Ok(Some(msg)) => {
                    if let Err(why) = self.on_message(now, channel, msg) {
                        return self.fail(now, why);
                    }
                    if self.ended {
                        return;
                    }
                }
                Ok(None) => return,
                Err(e) => return self.fail(now, format!("control channel {channel}: {e}")),
            }
        }
    }

    fn handle_control_closed(&mut self, now: Instant, channel: usize) {
        if self.ended {
            return;
        }
        if let Some(c) = self.closed.get_mut(channel) {
            *c = true;
        }
        if channel == 0 && !self.closed[1] {
            // The final chunk complete may still be in channel 1: give it time to arrive.
            self.closing_deadline = Some(now + self.rtt.hold() * 2);
        } else {
            self.fail(
                now,
                format!("the receiver closed control channel {channel} before the transfer completed"),
            );
        }
    }

    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) {
        if self.ended {
            return;
        }
        match wire::decode_datagram(datagram) {
            Ok(Datagram::Map(part)) if self.transfer.scheme == AckScheme::ChunkMapUdp => {
                self.on_map(now, part)
            }
            _ => self.counters.malformed += 1,
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.closing_deadline.is_some_and(|d| d <= now) {
            self.fail(now, "the receiver closed control channel 0 before the transfer completed".into());
        }
    }

    fn poll_control(&mut self) -> Option<(usize, Vec<u8>)> {
        self.outbox.pop()
    }

    fn poll_datagram(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        if self.ended {
            return None;
        }
        self.advance(now);
        let p = self.cursor;
        if p >= self.acked.len() || !self.pacer.is_due(now) || self.held_until().is_some_and(|t| now < t) {
            return None;
        }
        let len = self.g.packet_len(self.chunk, p);
        let Some(header) = wire::encode_data_header(buf, self.chunk, p, self.seq + 1) else {
            self.fail(now, format!("datagram buffer of {} bytes is too small", buf.len()));
            return None;
        };
        let Some(payload) = buf.get_mut(header..header + len) else {
            self.fail(now, format!("datagram buffer of {} bytes is too small", buf.len()));
            return None;
        };
        if let Err(e) = self.source.read_at(self.g.offset(self.chunk, p), payload) {
            self.fail(now, format!("reading the file: {e}"));
            return None;
        }
        self.seq += 1;
        self.rate.on_send(self.seq, now);
        self.counters.datagrams_sent += 1;
        self.counters.bytes_sent += (header + len) as u64;
        if !self.sent.set(p) {
            self.counters.retransmitted += 1;
        }
        self.open_segment = Some(self.g.segment_of(p));
        self.sent_in_pass += 1;
        self.cursor = p + 1;
        let gap = self.rate.gap(header + len);
        self.pacer.on_send(now, gap);
        self.advance(now);
        Some(header + len)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        udt_proto::time::earliest(self.outbox.due(), self.poll_timeout_without_control())
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    fn counters(&self) -> Counters {
        let mut c = self.counters;
        let mut acked = 0u64;
        if let Some(last) = self.acked.len().checked_sub(1) {
            acked = u64::from(self.acked.count()) * u64::from(self.g.payload);
            if self.acked.get(last) {
                let short = usize::from(self.g.payload) - self.g.packet_len(self.chunk, last);
                acked -= short as u64;
            }
        }
        c.delivered = self.completed_bytes + acked;
        c
    }

    fn max_datagram(&self) -> usize {
        self.transfer.data_datagram().max(wire::MAP_HEADER + usize::from(self.g.payload))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Pattern;
    use std::time::Duration;

    fn transfer(size: u64, scheme: AckScheme) -> Transfer {
        Transfer::new(size, 100, 10, 4, scheme).unwrap()
    }

    fn params() -> Params {
        Params { rate_control: false, max_rate_bps: 8_000_000, min_rate_bps: 1, ..Params::default() }
    }

    fn sender(size: u64, scheme: AckScheme) -> SenderSession<Pattern> {
        SenderSession::new(Pattern { seed: 1, len: size }, transfer(size, scheme), &params())
    }

    /// Run the sender alone up to `until`: the packets it sent (chunk, packet), the control
    /// messages it wrote, and where time stopped.
    fn run_until(
        s: &mut SenderSession<Pattern>,
        from: Instant,
        until: Instant,
    ) -> (Vec<(u32, u32)>, Instant) {
        let mut buf = vec![0u8; s.max_datagram()];
        let mut sent = Vec::new();
        let mut now = from;
        for _ in 0..100_000 {
            if let Some(n) = s.poll_datagram(now, &mut buf) {
                let Ok(Datagram::Data { chunk, packet, .. }) = wire::decode_datagram(&buf[..n]) else {
                    panic!("a data datagram")
                };
                sent.push((chunk, packet));
                continue;
            }
            let pending = s.outbox.due().is_some();
            match s.poll_timeout() {
                // Control frames wait: they do not move time.
                Some(t) if pending && t <= now => match s.poll_timeout_without_control() {
                    Some(t) if t > now && t <= until => now = t,
                    _ => break,
                },
                Some(t) if t > now && t <= until => now = t,
                _ => break,
            }
        }
        (sent, now)
    }

    fn control(s: &mut SenderSession<Pattern>) -> Vec<Message> {
        let mut out = Vec::new();
        while let Some((_, frame)) = s.poll_control() {
            out.push(wire::decode_frame(&frame).unwrap().unwrap().0);
        }
        out
    }

    fn report(received: u64, highest_seq: u64) -> Report {
        Report { received, highest_seq, busy_us: highest_seq }
    }

    #[test]
    fn a_first_pass_sends_every_packet_announcing_segments_then_done() {
        // 25 packets: chunks of 10, 10, 5; segments 0..4, 4..8, 8..10. Chunk 0 has 10 missing:
        // under the NACK cap, so its first pass already asks for a NACK and sends no EOS.
        let mut s = sender(2_500, AckScheme::SegmentedTcp);
        let (sent, _) = run_until(&mut s, Instant::ZERO, Instant::from_micros(50_000));
        assert_eq!(sent, (0..10).map(|p| (0, p)).collect::<Vec<_>>());
        assert_eq!(control(&mut s), vec![Message::Done { chunk: 0, pass: 0, want_nack: true, last_seq: 10 }]);
        assert_eq!(s.counters().datagrams_sent, 10);
    }

    #[test]
    fn segments_are_announced_when_the_pass_leaves_them_and_acks_are_skipped_next_pass() {
        // A chunk larger than a NACK: 400 packets of 1 byte, segments of 100.
        let t = Transfer::new(400 * 16, 16, 400, 100, AckScheme::SegmentedTcp).unwrap();
        let mut s = SenderSession::new(Pattern { seed: 1, len: 400 * 16 }, t, &params());
        let mut buf = vec![0u8; s.max_datagram()];
        let mut now = Instant::ZERO;
        for _ in 0..100 {
            now = s.poll_timeout().unwrap().max(now);
            assert!(s.poll_datagram(now, &mut buf).is_some());
        }
        assert_eq!(control(&mut s), vec![Message::EndOfSegment { chunk: 0, segment: 0, last_seq: 100 }]);
        // Segment 0 all arrived but 5 and 7; segments 1..4 all arrived.
        let mut bits = vec![0xFFu8; 13];
        bits[0] = !0b1010_0000;
        bits[12] = 0x0F;
        s.handle_control(
            now,
            0,
            &Message::SegmentBits { chunk: 0, segment: 0, report: report(98, 100), bits }.encode(),
        );
        for seg in 1..4 {
            s.handle_control(
                now,
                0,
                &Message::SegmentAck { chunk: 0, segment: seg, report: report(98, 100) }.encode(),
            );
        }
        assert_eq!(s.counters().delivered, 398 * 16);
        // The rest of the pass is acknowledged: DONE, and a NACK pass for the two, each held
        // until its announcement plus the hold (then held again after the NACK pass's DONE).
        let hold = s.rtt.hold();
        let (sent, _) = run_until(&mut s, now, now + hold + hold / 2);
        assert_eq!(sent, vec![(0, 5), (0, 7)]);
        assert_eq!(
            control(&mut s),
            vec![
                Message::Done { chunk: 0, pass: 0, want_nack: false, last_seq: 100 },
                Message::Done { chunk: 0, pass: 1, want_nack: true, last_seq: 102 }
            ]
        );
        assert_eq!((s.counters().retransmitted, s.stats().passes), (2, 3));
    }

    #[test]
    fn unacknowledged_packets_wait_a_hold_after_their_announcement_then_cycle() {
        let mut s = sender(1_000, AckScheme::SegmentedTcp);
        let (first, t) = run_until(&mut s, Instant::ZERO, Instant::from_micros(1));
        assert!(first.is_empty() || first.len() <= BURST as usize);
        let (sent, end) = run_until(&mut s, t, Instant::from_micros(50_000));
        assert_eq!(first.len() + sent.len(), 10, "no resend before the hold (300 ms initially)");
        let hold = s.rtt.hold();
        let (again, _) = run_until(&mut s, end, end + hold + Duration::from_millis(2));
        assert_eq!(again.len(), 10, "after the hold the whole chunk goes again");
        assert_eq!(s.counters().retransmitted, 10);
    }

    #[test]
    fn a_nack_acknowledges_all_but_what_it_lists_and_completes_move_to_the_next_chunk() {
        let mut s = sender(2_500, AckScheme::SegmentedTcp);
        let (_, now) = run_until(&mut s, Instant::ZERO, Instant::from_micros(50_000));
        s.handle_control(
            now,
            0,
            &Message::Nack { chunk: 0, report: report(8, 10), missing: vec![3, 9] }.encode(),
        );
        assert_eq!(s.acked.count(), 8);
        s.handle_control(now, 1, &Message::Complete { chunk: 0, report: report(10, 12) }.encode());
        assert_eq!((s.chunk, s.counters().rounds, s.counters().delivered), (1, 1, 1_000));
        // A stale acknowledgement of chunk 0 is ignored; one for chunk 2 is a protocol error.
        s.handle_control(
            now,
            0,
            &Message::SegmentAck { chunk: 0, segment: 0, report: report(10, 12) }.encode(),
        );
        assert_eq!(s.stats().stale, 1);
        s.handle_control(now, 1, &Message::Complete { chunk: 1, report: report(20, 22) }.encode());
        s.handle_control(now, 1, &Message::Complete { chunk: 2, report: report(25, 27) }.encode());
        assert_eq!(s.poll_event(), Some(Event::Done));
        assert_eq!(s.counters().delivered, 2_500);
        assert_eq!(s.poll_datagram(now, &mut [0u8; 200]), None);
    }

    #[test]
    fn hostile_acknowledgements_fail_with_a_reason() {
        let cases = [
            (0, Message::SegmentAck { chunk: 5, segment: 0, report: report(1, 1) }, "chunk 5"),
            (0, Message::SegmentAck { chunk: 0, segment: 3, report: report(1, 1) }, "segment 3"),
            (
                0,
                Message::SegmentBits { chunk: 0, segment: 0, report: report(1, 1), bits: vec![0; 9] },
                "bytes",
            ),
            (0, Message::Nack { chunk: 0, report: report(1, 1), missing: vec![10] }, "past the chunk"),
            (1, Message::SegmentAck { chunk: 0, segment: 0, report: report(1, 1) }, "unexpected"),
            (0, Message::Abort { reason: "disk full".into() }, "disk full"),
        ];
        for (channel, msg, expect) in cases {
            let mut s = sender(2_500, AckScheme::SegmentedTcp);
            s.handle_control(Instant::ZERO, channel, &msg.encode());
            let Some(Event::Failed(why)) = s.poll_event() else { panic!("{} must fail", msg.name()) };
            assert!(why.contains(expect), "{why}");
            assert!(matches!(control(&mut s).as_slice(), [Message::Abort { .. }]), "the peer is told");
        }
        let mut s = sender(2_500, AckScheme::SegmentedTcp);
        s.handle_control(Instant::ZERO, 0, b"HTTP/1.1 200 OK");
        assert!(matches!(s.poll_event(), Some(Event::Failed(why)) if why.contains("not a FOBS peer")));
    }

    #[test]
    fn chunk_maps_are_datagrams_only_in_the_udp_scheme() {
        let bits = [0xFFu8, 0x03];
        let part =
            wire::MapPart { chunk: 0, map_id: 0, first: 0, count: 10, report: report(10, 10), bits: &bits };
        let mut s = sender(2_500, AckScheme::ChunkMapUdp);
        s.handle_datagram(Instant::ZERO, &wire::encode_map(&part));
        assert_eq!((s.acked.count(), s.stats().map_parts), (10, 1));
        s.handle_datagram(Instant::ZERO, b"garbage");
        s.handle_datagram(Instant::ZERO, &wire::encode_map(&wire::MapPart { chunk: 4, ..part.clone() }));
        assert_eq!(s.counters().malformed, 2);
        let mut t = sender(2_500, AckScheme::SegmentedTcp);
        t.handle_datagram(Instant::ZERO, &wire::encode_map(&part));
        assert_eq!((t.acked.count(), t.counters().malformed), (0, 1));
    }

    #[test]
    fn the_udp_scheme_sends_no_end_of_segment_or_done() {
        let mut s = sender(2_500, AckScheme::ChunkMapUdp);
        let (sent, _) = run_until(&mut s, Instant::ZERO, Instant::from_micros(350_000));
        assert_eq!(sent.len(), 20, "10 packets, and again after the 300 ms hold");
        assert!(control(&mut s).is_empty());
    }

    #[test]
    fn a_closed_feedback_channel_waits_for_the_last_complete_then_fails() {
        let mut s = sender(2_500, AckScheme::SegmentedTcp);
        s.handle_control_closed(Instant::ZERO, 0);
        assert_eq!(s.poll_event(), None);
        let deadline = s.closing_deadline.unwrap();
        s.handle_timeout(deadline - Duration::from_nanos(1));
        assert_eq!(s.poll_event(), None);
        s.handle_timeout(deadline);
        assert!(
            matches!(s.poll_event(), Some(Event::Failed(why)) if why.contains("closed control channel 0"))
        );
        let mut s = sender(2_500, AckScheme::SegmentedTcp);
        s.handle_control_closed(Instant::ZERO, 1);
        assert!(matches!(s.poll_event(), Some(Event::Failed(_))));
    }

    #[test]
    fn an_empty_file_sends_the_empty_digest_and_is_done_at_once() {
        let mut s = sender(0, AckScheme::SegmentedTcp);
        assert_eq!(s.poll_event(), Some(Event::Done));
        let digest = Message::Digest { blake3: *blake3::hash(b"").as_bytes() };
        assert_eq!(s.poll_control(), Some((DIGEST_CHANNEL, digest.encode())));
        assert_eq!((s.poll_timeout(), s.poll_datagram(Instant::ZERO, &mut [0u8; 200])), (None, None));
        assert_eq!(s.stats().digests, 1);
    }

    /// Completes every chunk of `s` (a file of 2 500 bytes: three chunks) at `now`.
    fn complete_all(s: &mut SenderSession<impl Source>, now: Instant) {
        for chunk in 0..3 {
            let report = report(u64::from(chunk) * 10 + 10, u64::from(chunk) * 10 + 10);
            s.handle_control(now, 1, &Message::Complete { chunk, report }.encode());
        }
    }

    #[test]
    fn the_last_chunk_complete_sends_the_file_digest_on_channel_one_then_done() {
        let mut s = sender(2_500, AckScheme::SegmentedTcp);
        let (_, now) = run_until(&mut s, Instant::ZERO, Instant::from_micros(50_000));
        control(&mut s);
        let mut file = vec![0u8; 2_500];
        Pattern { seed: 1, len: 2_500 }.read_at(0, &mut file).unwrap();
        complete_all(&mut s, now);
        assert_eq!(s.poll_event(), Some(Event::Done));
        let digest = Message::Digest { blake3: *blake3::hash(&file).as_bytes() };
        assert_eq!(s.poll_control(), Some((DIGEST_CHANNEL, digest.encode())));
        assert_eq!((s.poll_control(), s.stats().digests), (None, 1));
    }

    /// A source whose reads fail once `broken` is set.
    struct Breakable {
        inner: Pattern,
        broken: bool,
    }

    impl Source for Breakable {
        fn len(&self) -> u64 {
            self.inner.len
        }
        fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
            if self.broken {
                return Err(std::io::Error::other("the disk went away"));
            }
            self.inner.read_at(offset, buf)
        }
    }

    #[test]
    fn a_file_that_cannot_be_read_for_its_digest_fails_with_a_reason_and_tells_the_receiver() {
        let source = Breakable { inner: Pattern { seed: 1, len: 2_500 }, broken: false };
        let mut s = SenderSession::new(source, transfer(2_500, AckScheme::SegmentedTcp), &params());
        s.source.broken = true;
        complete_all(&mut s, Instant::ZERO);
        let Some(Event::Failed(why)) = s.poll_event() else { panic!("must fail") };
        assert!(why.contains("reading the file for its digest: the disk went away"), "{why}");
        let abort = s.poll_control().map(|(c, f)| (c, wire::decode_frame(&f).unwrap().unwrap().0));
        assert!(matches!(abort, Some((0, Message::Abort { .. }))), "{abort:?}");
        assert_eq!((s.poll_control(), s.stats().digests), (None, 0));
    }
}
