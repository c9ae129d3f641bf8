//! The receiving end of one RBUDP transfer (seed-protocols.md, QUANTA RBUDP 1.0; He et al.
//! 2002 §3): send the request, learn the size, then take each blast's datagrams and answer
//! every end-of-blast marker with the bitmap of the packets held, until it says done.
//!
//! Scatter receive: a datagram's payload is written straight to its place in the sink, at
//! `seq x payload`, whatever order it came in (He et al. §3, the receiver's in-place receive);
//! there is no reassembly buffer, and a packet held already is counted and not written again.
//!
//! Control channel 0 is the TCP connection to the sender. Invariants: nothing is allocated
//! from the announced size beyond [`Params::max_size`] (the sink) and [`MAX_BITMAP`] (the
//! bitmap); the byte order of sequence numbers is decided once ([`super::order`]); a datagram
//! whose number fits neither order, or whose length is not its packet's, is dropped and counted
//! malformed; datagrams that come before the size (UDP can overtake TCP) wait, at most
//! [`EARLY_LIMIT`] of them; the receiver fails, with one line, on a malformed marker, a closed
//! connection, silence for [`Params::silence_limit`] (the reference spins forever), a blast
//! with malformed datagrams and no usable one (payload sizes that differ), or too many blasts
//! in a row that brought nothing new.
//!
//! The digest ([`crate::digest`]): once every byte is in the sink and the final bitmap (done
//! flag set) is written, the receiver waits for our sender's digest message
//! ([`wire::decode_digest`]) at most [`digest::wait`] of the size, and then ends [`Event::Done`]
//! whatever comes: with the digest ([`Session::peer_digest`]) when it arrives whole; without
//! one when the connection closes first (the reference `sendfile` closes right after the done
//! flag), when the wait passes, or when anything else arrives (counted malformed, as is a
//! message the close cuts short). Datagrams that come during the wait are ignored.

use std::collections::VecDeque;
use std::time::Duration;

use udt_proto::time::Instant;

use super::bitmap::Bitmap;
use super::order::{SeqRead, SeqReader};
use super::params::Params;
use super::wire::{self, Layout, HEADER_LEN, MARKER_LEN, SIZE_LEN};
use crate::digest;
use crate::error::BulkError;
use crate::session::{Counters, Event, Session};
use crate::storage::Sink;

/// The largest bitmap a receiver keeps, in bytes (2^28 packets; the wire allows 2^31).
pub const MAX_BITMAP: usize = 32 << 20;
/// Datagrams kept while the size has not arrived yet.
pub const EARLY_LIMIT: usize = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Request sent, waiting for the size.
    Size,
    /// Taking blasts.
    Receiving,
    /// Every byte in and the final bitmap written: waiting for the sender's digest until
    /// `until`.
    Digest { until: Instant },
    /// Done or failed.
    Ended,
}

/// What one blast brought.
#[derive(Debug, Default, Clone, Copy)]
struct Blast {
    new: u64,
    usable: u64,
    malformed: u64,
    ambiguous: u64,
}

/// The receiving end of one transfer.
pub struct Receiver<'a> {
    payload: usize,
    max_size: u64,
    max_stalled: u32,
    silence_limit: Duration,
    sink: Box<dyn Sink + 'a>,
    state: State,
    layout: Option<Layout>,
    bitmap: Bitmap,
    reader: SeqReader,
    round: u32,
    stalled: u32,
    blast: Blast,
    ambiguous: u64,
    early: Vec<Vec<u8>>,
    control_in: Vec<u8>,
    control_out: VecDeque<Vec<u8>>,
    events: VecDeque<Event>,
    last_heard: Instant,
    counters: Counters,
    digest: Option<[u8; digest::LEN]>,
}

/// A borrowed sink, held like an owned one.
struct Borrowed<'a>(&'a mut dyn Sink);

impl Sink for Borrowed<'_> {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        self.0.write_at(offset, data)
    }
    fn set_len(&mut self, len: u64) -> std::io::Result<()> {
        self.0.set_len(len)
    }
    fn finish(&mut self) -> std::io::Result<()> {
        self.0.finish()
    }
}

impl<'a> Receiver<'a> {
    /// A receiver that asks for `remote` and writes it into `sink` (sized with
    /// [`Sink::set_len`] once the size is known).
    pub fn new(remote: &str, sink: &'a mut dyn Sink, params: &Params) -> Result<Receiver<'a>, BulkError> {
        Receiver::with_sink(remote, Box::new(Borrowed(sink)), params)
    }

    /// A receiver that owns its sink (a `Receiver<'static>` is `Send`, for the simulator).
    pub fn with_sink(
        remote: &str,
        sink: Box<dyn Sink + 'a>,
        params: &Params,
    ) -> Result<Receiver<'a>, BulkError> {
        params.check()?;
        let request = wire::encode_request(remote).map_err(|e| BulkError::Protocol(e.to_string()))?;
        Ok(Receiver {
            payload: params.payload,
            max_size: params.max_size,
            max_stalled: params.max_stalled_rounds,
            silence_limit: params.silence_limit,
            sink,
            state: State::Size,
            layout: None,
            bitmap: Bitmap::new(0),
            reader: SeqReader::default(),
            round: 0,
            stalled: 0,
            blast: Blast::default(),
            ambiguous: 0,
            early: Vec::new(),
            control_in: Vec::new(),
            control_out: VecDeque::from([request.to_vec()]),
            events: VecDeque::new(),
            last_heard: Instant::ZERO,
            counters: Counters::default(),
            digest: None,
        })
    }

    /// Datagrams dropped because their number read differently in each byte order before the
    /// order was decided (the sender sends them again).
    pub fn ambiguous(&self) -> u64 {
        self.ambiguous
    }

    /// The sender's byte order, once decided.
    pub fn byte_order(&self) -> Option<super::order::ByteOrder> {
        self.reader.order()
    }

    fn fail(&mut self, why: String) {
        if self.state != State::Ended {
            self.state = State::Ended;
            self.early.clear();
            self.events.push_back(Event::Failed(why));
        }
    }

    /// Every byte is in: finish the sink, then wait for the digest.
    fn complete(&mut self, now: Instant) {
        match self.sink.finish() {
            Ok(()) => {
                let size = self.layout.map_or(0, |l| l.size());
                self.control_in.clear();
                self.state = State::Digest { until: now + digest::wait(size) };
            }
            Err(e) => self.fail(format!("finishing the file: {e}")),
        }
    }

    /// The wait for the digest is over, with or without one.
    fn end_done(&mut self) {
        if self.state != State::Ended {
            self.state = State::Ended;
            self.control_in.clear();
            self.events.push_back(Event::Done);
        }
    }

    /// Bytes after the final bitmap: our sender's digest message, or the end of the wait.
    fn on_digest_bytes(&mut self, bytes: &[u8]) {
        let take = (wire::DIGEST_LEN - self.control_in.len()).min(bytes.len());
        self.control_in.extend_from_slice(&bytes[..take]);
        match wire::decode_digest(&self.control_in) {
            Ok(None) => {}
            Ok(Some(got)) => {
                self.digest = Some(got);
                self.end_done();
            }
            Err(_) => {
                self.counters.malformed += 1;
                self.end_done();
            }
        }
    }

    /// One 8-byte message (the size, then markers) from the front of `bytes`, once whole;
    /// what is left of `bytes`.
    fn take_message<'b>(&mut self, now: Instant, bytes: &'b [u8]) -> &'b [u8] {
        let take = (SIZE_LEN - self.control_in.len()).min(bytes.len());
        self.control_in.extend_from_slice(&bytes[..take]);
        if let Ok(message) = <[u8; SIZE_LEN]>::try_from(self.control_in.as_slice()) {
            self.control_in.clear();
            match self.state {
                State::Size => self.on_size(now, wire::decode_size(&message)),
                State::Receiving => self.on_marker(now, &message),
                State::Digest { .. } | State::Ended => {}
            }
        }
        &bytes[take..]
    }

    fn progress(&self) -> String {
        format!("{} of {} packets received", self.bitmap.received(), self.bitmap.packets())
    }

    fn on_size(&mut self, now: Instant, size: u64) {
        if size > self.max_size {
            return self.fail(format!(
                "the sender announced {size} bytes, more than the {} this receiver accepts",
                self.max_size
            ));
        }
        let layout = match Layout::new(size, self.payload) {
            Ok(l) => l,
            Err(e) => return self.fail(format!("protocol error: {e}")),
        };
        if layout.bitmap_len() > MAX_BITMAP {
            return self.fail(format!(
                "{size} bytes in packets of {} bytes need a bitmap of {} bytes, more than the {MAX_BITMAP} \
                 kept: use a larger payload",
                self.payload,
                layout.bitmap_len()
            ));
        }
        if let Err(e) = self.sink.set_len(size) {
            return self.fail(format!("sizing the file to {size} bytes: {e}"));
        }
        self.counters.size = Some(size);
        self.events.push_back(Event::Size(size));
        self.layout = Some(layout);
        self.bitmap = Bitmap::new(layout.packets());
        self.state = State::Receiving;
        if layout.packets() == 0 {
            return self.complete(now);
        }
        for datagram in std::mem::take(&mut self.early) {
            self.on_datagram(now, &datagram);
        }
    }

    fn on_datagram(&mut self, _now: Instant, datagram: &[u8]) {
        let Some(layout) = self.layout else { return };
        let Ok((raw, body)) = wire::split_datagram(datagram) else {
            return self.malformed();
        };
        let seq = match self.reader.read(raw, layout.packets()) {
            SeqRead::Seq(seq) => seq,
            SeqRead::Ambiguous => {
                self.blast.ambiguous += 1;
                self.ambiguous += 1;
                return;
            }
            SeqRead::OutOfRange => return self.malformed(),
        };
        if body.len() != layout.len_of(seq) {
            return self.malformed();
        }
        self.blast.usable += 1;
        self.counters.datagrams_received += 1;
        if self.bitmap.has(seq) {
            self.counters.duplicates += 1;
            return;
        }
        if let Err(e) = self.sink.write_at(layout.offset(seq), body) {
            return self.fail(format!("writing packet {seq}: {e}"));
        }
        self.bitmap.set(seq);
        self.blast.new += 1;
        self.counters.delivered += body.len() as u64;
    }

    fn malformed(&mut self) {
        self.counters.malformed += 1;
        self.blast.malformed += 1;
    }

    /// The end of a blast: answer with the bitmap.
    fn on_marker(&mut self, now: Instant, marker: &[u8; MARKER_LEN]) {
        let raw = match wire::decode_marker(marker) {
            Ok(raw) => raw,
            Err(e) => return self.fail(format!("protocol error: {e}")),
        };
        if !wire::round_matches(raw, self.round) {
            return self.fail(format!(
                "protocol error: an end-of-blast marker for round {} where {} was expected",
                u32::from_le_bytes(raw),
                self.round
            ));
        }
        let blast = std::mem::take(&mut self.blast);
        self.counters.rounds += 1;
        self.round = self.round.wrapping_add(1);
        if blast.ambiguous > 0 {
            self.reader.settle();
        }
        self.stalled = if blast.new > 0 { 0 } else { self.stalled.saturating_add(1) };
        if !self.bitmap.is_complete() {
            if blast.usable == 0 && blast.malformed > 0 {
                return self.fail(format!(
                    "no usable datagram in blast {} and {} malformed: do both sides use the same \
                     payload size (ours is {} bytes)?",
                    self.round.wrapping_sub(1),
                    blast.malformed,
                    self.payload
                ));
            }
            if self.stalled >= self.max_stalled {
                return self.fail(format!(
                    "no packet got through in {} blasts in a row ({})",
                    self.stalled,
                    self.progress()
                ));
            }
        }
        self.control_out.push_back(self.bitmap.to_wire());
        if self.bitmap.is_complete() {
            self.complete(now);
        }
    }
}

impl Session for Receiver<'_> {
    fn handle_control(&mut self, now: Instant, channel: usize, bytes: &[u8]) {
        if channel != 0 || bytes.is_empty() {
            return;
        }
        self.last_heard = now;
        let mut bytes = bytes;
        while !bytes.is_empty() {
            match self.state {
                State::Size | State::Receiving => bytes = self.take_message(now, bytes),
                State::Digest { .. } => return self.on_digest_bytes(bytes),
                State::Ended => return,
            }
        }
    }

    fn handle_control_closed(&mut self, _now: Instant, _channel: usize) {
        let why = match self.state {
            State::Ended => return,
            State::Digest { .. } => {
                // A reference sender closes here; a digest message cut short is malformed.
                self.counters.malformed += u64::from(!self.control_in.is_empty());
                return self.end_done();
            }
            State::Size => "the sender closed the control connection without announcing a size (refused, \
                            or no such file?)"
                .to_owned(),
            State::Receiving => format!("the sender closed the control connection with {}", self.progress()),
        };
        self.fail(why);
    }

    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) {
        match self.state {
            // Late duplicates of the last blast may still come while the digest is awaited.
            State::Ended | State::Digest { .. } => return,
            State::Size if datagram.len() <= self.max_datagram() && self.early.len() < EARLY_LIMIT => {
                self.early.push(datagram.to_vec());
            }
            State::Size => self.counters.malformed += 1,
            State::Receiving => self.on_datagram(now, datagram),
        }
        self.last_heard = now;
    }

    fn handle_timeout(&mut self, now: Instant) {
        match self.state {
            State::Digest { until } if now >= until => self.end_done(),
            State::Size | State::Receiving if now >= self.last_heard + self.silence_limit => {
                let why = format!(
                    "nothing from the sender for {:?}: it went silent ({})",
                    self.silence_limit,
                    self.progress()
                );
                self.fail(why);
            }
            _ => {}
        }
    }

    fn poll_control(&mut self) -> Option<(usize, Vec<u8>)> {
        self.control_out.pop_front().map(|b| (0, b))
    }

    fn poll_datagram(&mut self, _now: Instant, _buf: &mut [u8]) -> Option<usize> {
        // RBUDP's receiver sends no datagrams.
        None
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self.state {
            State::Size | State::Receiving => Some(self.last_heard + self.silence_limit),
            State::Digest { until } => Some(until),
            State::Ended => None,
        }
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    fn counters(&self) -> Counters {
        self.counters
    }

    fn max_datagram(&self) -> usize {
        HEADER_LEN + self.payload
    }

    fn peer_digest(&self) -> Option<[u8; 32]> {
        self.digest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Memory;

    fn params() -> Params {
        Params { payload: 100, ..Params::default() }
    }

    fn datagram(seq: [u8; 4], data: &[u8]) -> Vec<u8> {
        [&seq[..], data].concat()
    }

    /// Our sender's digest message for `data`.
    fn digest_message(data: &[u8]) -> Vec<u8> {
        wire::encode_digest(blake3::hash(data).as_bytes()).to_vec()
    }

    /// A receiver for `data` (payload 100) that has taken every packet and written its final
    /// bitmap at `at`: waiting for the digest.
    fn waiting_for_digest(data: &[u8], at: Instant, p: &Params) -> Receiver<'static> {
        let mut r = Receiver::with_sink("f", Box::new(Memory::default()), p).unwrap();
        r.handle_control(at, 0, &(data.len() as u64).to_be_bytes());
        for (seq, chunk) in data.chunks(100).enumerate() {
            r.handle_datagram(at, &datagram((seq as u32).to_le_bytes(), chunk));
        }
        r.handle_control(at, 0, &wire::encode_marker(0));
        assert_eq!(r.poll_control().map(|(_, b)| b.len()), Some(wire::REQUEST_LEN));
        assert_eq!(r.poll_control().map(|(_, b)| b[0]), Some(1), "the done flag");
        assert_eq!(r.state, State::Digest { until: at + digest::wait(data.len() as u64) });
        r
    }

    fn ended(r: &mut Receiver<'_>) -> Option<Result<(), String>> {
        while let Some(e) = r.poll_event() {
            match e {
                Event::Done => return Some(Ok(())),
                Event::Failed(why) => return Some(Err(why)),
                _ => {}
            }
        }
        None
    }

    #[test]
    fn the_request_goes_first_then_packets_land_in_place_and_the_bitmap_answers() {
        let mut sink = Memory::default();
        let mut r = Receiver::new("some/file", &mut sink, &params()).unwrap();
        let (_, req) = r.poll_control().unwrap();
        assert_eq!(req, wire::encode_request("some/file").unwrap());
        let t = Instant::ZERO;
        r.handle_control(t, 0, &250u64.to_be_bytes());
        assert_eq!(r.poll_event(), Some(Event::Size(250)));
        // Out of order: the last (short) packet first, then 0; 1 lost.
        r.handle_datagram(t, &datagram(2u32.to_le_bytes(), &[2; 50]));
        r.handle_datagram(t, &datagram(0u32.to_le_bytes(), &[0; 100]));
        r.handle_datagram(t, &datagram(0u32.to_le_bytes(), &[0; 100]));
        r.handle_control(t, 0, &wire::encode_marker(0));
        assert_eq!(r.poll_control(), Some((0, vec![0, 0b1111_1101])));
        r.handle_datagram(t, &datagram(1u32.to_le_bytes(), &[1; 100]));
        r.handle_control(t, 0, &wire::encode_marker(1));
        assert_eq!(r.poll_control(), Some((0, vec![1, 0xff])));
        assert_eq!(ended(&mut r), None, "waiting for the digest");
        let data = [vec![0; 100], vec![1; 100], vec![2; 50]].concat();
        r.handle_control(t, 0, &digest_message(&data));
        assert_eq!(ended(&mut r), Some(Ok(())));
        assert_eq!(r.peer_digest(), Some(*blake3::hash(&data).as_bytes()));
        let c = r.counters();
        assert_eq!((c.datagrams_received, c.duplicates, c.delivered, c.rounds), (4, 1, 250, 2));
        drop(r);
        assert_eq!(sink.0, [vec![0; 100], vec![1; 100], vec![2; 50]].concat());
    }

    #[test]
    fn a_big_endian_sender_is_understood() {
        let mut sink = Memory::default();
        let mut r = Receiver::new("f", &mut sink, &params()).unwrap();
        r.handle_control(Instant::ZERO, 0, &300u64.to_be_bytes());
        for seq in [0u32, 1, 2] {
            r.handle_datagram(Instant::ZERO, &datagram(seq.to_be_bytes(), &[seq as u8; 100]));
        }
        // The marker's round in the sender's order too.
        r.handle_control(Instant::ZERO, 0, &[0, 0, 0, 0, b'E', b'E', b'E', 0]);
        assert_eq!(r.byte_order(), Some(super::super::order::ByteOrder::Big));
        r.handle_control_closed(Instant::ZERO, 0);
        assert_eq!(ended(&mut r), Some(Ok(())));
        drop(r);
        assert_eq!(sink.0, [vec![0; 100], vec![1; 100], vec![2; 100]].concat());
    }

    #[test]
    fn datagrams_that_fit_no_order_or_length_are_malformed() {
        let mut sink = Memory::default();
        let mut r = Receiver::new("f", &mut sink, &params()).unwrap();
        r.handle_control(Instant::ZERO, 0, &250u64.to_be_bytes());
        r.handle_datagram(Instant::ZERO, &datagram(1u32.to_le_bytes(), &[1; 100]));
        for bad in [
            datagram(3u32.to_le_bytes(), &[0; 100]), // past the end
            datagram(1u32.to_be_bytes(), &[1; 100]), // the other order, once decided
            datagram(0u32.to_le_bytes(), &[0; 99]),  // short
            datagram(2u32.to_le_bytes(), &[0; 100]), // the last packet is 50 bytes
            vec![0, 0, 0],                           // no header
        ] {
            r.handle_datagram(Instant::ZERO, &bad);
        }
        let c = r.counters();
        assert_eq!((c.malformed, c.datagrams_received, c.delivered), (5, 1, 100));
    }

    #[test]
    fn datagrams_before_the_size_wait_for_it() {
        let mut sink = Memory::default();
        let mut r = Receiver::new("f", &mut sink, &params()).unwrap();
        r.handle_datagram(Instant::ZERO, &datagram(0u32.to_le_bytes(), &[9; 100]));
        r.handle_datagram(Instant::ZERO, &[0; 105]);
        r.handle_control(Instant::ZERO, 0, &100u64.to_be_bytes());
        r.handle_control(Instant::ZERO, 0, &wire::encode_marker(0));
        assert_eq!(r.counters().malformed, 1, "longer than any datagram");
        r.handle_control(Instant::ZERO, 0, &digest_message(&[9; 100]));
        assert_eq!(ended(&mut r), Some(Ok(())));
        drop(r);
        assert_eq!(sink.0, vec![9; 100]);
    }

    #[test]
    fn an_announced_size_beyond_the_limits_is_refused_before_allocating() {
        for (size, payload, why) in [
            (64u64 << 30 | 1, 1460, "more than the"),
            (1 << 29, 1, "bitmap"),
            (u64::MAX, 1460, "more than the"),
        ] {
            let mut sink = Memory::default();
            let p =
                Params { payload, max_size: if why == "bitmap" { u64::MAX } else { 64 << 30 }, ..params() };
            let mut r = Receiver::new("f", &mut sink, &p).unwrap();
            r.handle_control(Instant::ZERO, 0, &size.to_be_bytes());
            let out = ended(&mut r);
            assert!(matches!(&out, Some(Err(w)) if w.contains(why)), "{size}: {out:?}");
            drop(r);
            assert!(sink.0.is_empty());
        }
        let mut sink = Memory::default();
        let p = Params { payload: 1, max_size: u64::MAX, ..params() };
        let mut r = Receiver::new("f", &mut sink, &p).unwrap();
        r.handle_control(Instant::ZERO, 0, &(1u64 << 31).to_be_bytes());
        assert!(matches!(ended(&mut r), Some(Err(w)) if w.contains("32-bit")));
    }

    #[test]
    fn an_empty_file_is_complete_at_its_size_and_its_digest_may_come_with_it() {
        let mut sink = Memory(vec![1, 2, 3]);
        let mut r = Receiver::new("f", &mut sink, &params()).unwrap();
        r.handle_control(Instant::ZERO, 0, &[[0; 8].to_vec(), digest_message(&[])].concat());
        assert_eq!(ended(&mut r), Some(Ok(())));
        assert_eq!(r.peer_digest(), Some(*blake3::hash(&[]).as_bytes()));
        drop(r);
        assert!(sink.0.is_empty());
    }

    #[test]
    fn the_digest_may_arrive_in_pieces() {
        let data = vec![5u8; 250];
        let mut r = waiting_for_digest(&data, Instant::ZERO, &params());
        for byte in digest_message(&data) {
            assert_eq!(ended(&mut r), None);
            r.handle_control(Instant::ZERO, 0, &[byte]);
        }
        assert_eq!(ended(&mut r), Some(Ok(())));
        assert_eq!(r.peer_digest(), Some(*blake3::hash(&data).as_bytes()));
        assert_eq!(r.counters().malformed, 0);
    }

    #[test]
    fn a_sender_that_closes_after_the_done_flag_leaves_no_digest_and_no_failure() {
        let data = vec![5u8; 250];
        let mut r = waiting_for_digest(&data, Instant::ZERO, &params());
        r.handle_control_closed(Instant::ZERO, 0);
        assert_eq!(ended(&mut r), Some(Ok(())));
        assert_eq!((r.peer_digest(), r.counters().malformed), (None, 0));
        // A message the close cuts short is malformed.
        let mut r = waiting_for_digest(&data, Instant::ZERO, &params());
        r.handle_control(Instant::ZERO, 0, &digest_message(&data)[..20]);
        r.handle_control_closed(Instant::ZERO, 0);
        assert_eq!(ended(&mut r), Some(Ok(())));
        assert_eq!((r.peer_digest(), r.counters().malformed), (None, 1));
    }

    #[test]
    fn the_wait_for_the_digest_ends_done_without_one_and_is_not_cut_by_the_silence_limit() {
        let data = vec![5u8; 250];
        let p = Params { silence_limit: Duration::from_secs(1), ..params() };
        let t = Instant::ZERO + Duration::from_secs(3);
        let mut r = waiting_for_digest(&data, t, &p);
        let deadline = r.poll_timeout().unwrap();
        assert_eq!(deadline, t + digest::wait(250));
        r.handle_timeout(deadline - Duration::from_nanos(1));
        assert_eq!(ended(&mut r), None);
        r.handle_timeout(deadline);
        assert_eq!(ended(&mut r), Some(Ok(())));
        assert_eq!((r.peer_digest(), r.poll_timeout()), (None, None));
        // Late, the digest changes nothing.
        r.handle_control(deadline, 0, &digest_message(&data));
        assert_eq!((r.peer_digest(), r.poll_event()), (None, None));
    }

    #[test]
    fn anything_but_a_digest_ends_the_wait_at_once_as_malformed() {
        let data = vec![5u8; 250];
        for other in [wire::encode_marker(1).to_vec(), b"UDTX".to_vec(), vec![0; 100_000]] {
            let mut r = waiting_for_digest(&data, Instant::ZERO, &params());
            r.handle_control(Instant::ZERO, 0, &other);
            assert_eq!(ended(&mut r), Some(Ok(())), "{:?}", &other[..4]);
            assert_eq!((r.peer_digest(), r.counters().malformed), (None, 1));
            assert!(r.control_in.is_empty(), "nothing kept");
        }
    }

    #[test]
    fn datagrams_during_the_wait_are_ignored() {
        let data = vec![5u8; 250];
        let mut r = waiting_for_digest(&data, Instant::ZERO, &params());
        let before = r.counters();
        r.handle_datagram(Instant::ZERO, &datagram(0u32.to_le_bytes(), &[5; 100]));
        r.handle_datagram(Instant::ZERO, &[1, 2]);
        assert_eq!(r.counters(), before);
        assert_eq!(ended(&mut r), None);
    }

    #[test]
    fn a_bad_marker_fails_the_receiver() {
        for marker in [[0, 0, 0, 0, b'X', b'E', b'E', 0], wire::encode_marker(1)] {
            let mut sink = Memory::default();
            let mut r = Receiver::new("f", &mut sink, &params()).unwrap();
            r.handle_control(Instant::ZERO, 0, &100u64.to_be_bytes());
            r.handle_control(Instant::ZERO, 0, &marker);
            assert!(matches!(ended(&mut r), Some(Err(w)) if w.contains("protocol error")));
        }
    }

    #[test]
    fn a_silent_sender_fails_the_receiver_instead_of_spinning() {
        let mut sink = Memory::default();
        let mut r = Receiver::new("f", &mut sink, &params()).unwrap();
        let t = Instant::ZERO + Duration::from_secs(5);
        r.handle_control(t, 0, &1000u64.to_be_bytes());
        let deadline = r.poll_timeout().unwrap();
        assert_eq!(deadline, t + Duration::from_secs(30));
        r.handle_timeout(deadline - Duration::from_nanos(1));
        assert_eq!(ended(&mut r), None);
        r.handle_timeout(deadline);
        assert!(matches!(ended(&mut r), Some(Err(w)) if w.contains("went silent (0 of 10")));
        assert_eq!(r.poll_timeout(), None);
    }

    #[test]
    fn a_payload_size_that_differs_from_the_senders_is_named() {
        let mut sink = Memory::default();
        let mut r = Receiver::new("f", &mut sink, &params()).unwrap();
        r.handle_control(Instant::ZERO, 0, &1000u64.to_be_bytes());
        for seq in 0..5u32 {
            r.handle_datagram(Instant::ZERO, &datagram(seq.to_le_bytes(), &[0; 200]));
        }
        r.handle_control(Instant::ZERO, 0, &wire::encode_marker(0));
        assert!(matches!(ended(&mut r), Some(Err(w)) if w.contains("same payload size")));
    }

    #[test]
    fn blasts_that_bring_nothing_new_end_the_transfer() {
        let p = Params { max_stalled_rounds: 2, ..params() };
        let mut sink = Memory::default();
        let mut r = Receiver::new("f", &mut sink, &p).unwrap();
        r.handle_control(Instant::ZERO, 0, &1000u64.to_be_bytes());
        r.handle_control(Instant::ZERO, 0, &wire::encode_marker(0));
        assert_eq!(ended(&mut r), None);
        r.handle_control(Instant::ZERO, 0, &wire::encode_marker(1));
        assert!(matches!(ended(&mut r), Some(Err(w)) if w.contains("2 blasts in a row")));
    }

    #[test]
    fn a_closed_connection_fails_an_unfinished_transfer() {
        let mut sink = Memory::default();
        let mut r = Receiver::new("f", &mut sink, &params()).unwrap();
        r.handle_control_closed(Instant::ZERO, 0);
        assert!(matches!(ended(&mut r), Some(Err(w)) if w.contains("without announcing a size")));
    }

    #[test]
    fn an_owning_receiver_is_send_for_the_simulator() {
        fn send<T: Send>(_: &T) {}
        let r =
            Receiver::with_sink("f", Box::new(crate::storage::PatternCheck { seed: 1 }), &params()).unwrap();
        send(&r);
    }

    #[test]
    fn a_name_the_request_field_cannot_hold_is_refused() {
        let mut sink = Memory::default();
        assert!(Receiver::new(&"x".repeat(300), &mut sink, &params()).is_err());
        assert!(Receiver::new("", &mut sink, &params()).is_err());
    }
}
