//! The sending end of one RBUDP transfer (seed-protocols.md, QUANTA RBUDP 1.0; He et al. 2002
//! §3): read the receiver's request, announce the size, then blast rounds until the receiver's
//! bitmap says done. A blast sends every packet not yet known received, in ascending order, at
//! the set rate; then the end-of-blast marker goes on the control channel and the sender waits
//! for the bitmap.
//!
//! Once the bitmap's done flag is set (or the size announced is 0) the sender reads the whole
//! file for its BLAKE3 digest and writes our digest message ([`wire::encode_digest`]) after
//! it, then ends ([`crate::digest`]): our receiver waits for it; the reference `recvfile` has
//! closed the connection by then (it closes after its final bitmap, and after the size when
//! that is 0, since it cannot map an empty file), so the message meets a closed socket, which
//! is no failure of the transfer: the session has ended already.
//!
//! Control channel 0 is the TCP connection the receiver opened. Invariants: the sender has an
//! explicit rate (no default); packet `i` of a blast is due `i` gaps after the blast started,
//! as in the reference (a late sender catches up, keeping the blast's average rate); the
//! marker follows the blast's last packet at once; the sender's view of what arrived is the
//! receiver's last bitmap, as is; it fails, with one line, on a malformed or unsolicited
//! control byte, a closed connection, silence while it waits, or too many blasts in a row that
//! brought nothing new.

use std::collections::VecDeque;
use std::time::Duration;

use udt_proto::time::Instant;

use super::bitmap::Bitmap;
use super::params::Params;
use super::wire::{self, Layout, HEADER_LEN, REQUEST_LEN};
use crate::error::BulkError;
use crate::pace::{CatchUp, Pacer};
use crate::session::{Counters, Event, Session};
use crate::storage::Source;

/// Finds the source for a requested name, or says why not (one line).
pub type Resolver<'a> = Box<dyn FnMut(&str) -> Result<Box<dyn Source + 'a>, String> + Send + 'a>;

enum State {
    /// Waiting for the 256-byte request.
    Request,
    /// Sending `next` (the next packet not known received) when the pacer says; `None` when
    /// the blast is over and its marker is due at the pacer's time.
    Blast { next: Option<u32> },
    /// Marker sent, waiting for the bitmap.
    Bitmap,
    /// Done or failed.
    Ended,
}

/// The sending end of one transfer.
pub struct Sender<'a> {
    payload: usize,
    gap: Duration,
    pacer: Pacer,
    silence_limit: Duration,
    max_stalled: u32,
    resolve: Option<Resolver<'a>>,
    name: Option<String>,
    refusal: Option<String>,
    source: Option<Box<dyn Source + 'a>>,
    layout: Option<Layout>,
    have: Bitmap,
    state: State,
    round: u32,
    stalled: u32,
    control_in: Vec<u8>,
    control_out: VecDeque<Vec<u8>>,
    events: VecDeque<Event>,
    last_heard: Instant,
    counters: Counters,
}

impl<'a> Sender<'a> {
    /// A sender that reads the request from the control channel and asks `resolve` for the
    /// source of the name in it.
    pub fn new(params: &Params, resolve: Resolver<'a>) -> Result<Sender<'a>, BulkError> {
        let rate = params.rate()?;
        params.check()?;
        Ok(Sender {
            payload: params.payload,
            gap: params.gap(rate),
            pacer: Pacer::new(Instant::ZERO, CatchUp::Unbounded),
            silence_limit: params.silence_limit,
            max_stalled: params.max_stalled_rounds,
            resolve: Some(resolve),
            name: None,
            refusal: None,
            source: None,
            layout: None,
            have: Bitmap::new(0),
            state: State::Request,
            round: 0,
            stalled: 0,
            control_in: Vec::new(),
            control_out: VecDeque::new(),
            events: VecDeque::new(),
            last_heard: Instant::ZERO,
            counters: Counters::default(),
        })
    }

    /// A sender that answers whatever the receiver asks for with `source` (a `Sender<'static>`
    /// is `Send`, for the simulator).
    pub fn serving(params: &Params, source: Box<dyn Source + 'a>) -> Result<Sender<'a>, BulkError> {
        let mut source = Some(source);
        Sender::new(params, Box::new(move |_| source.take().ok_or_else(|| "served already".to_owned())))
    }

    /// A sender whose request for `name` was read already (by the connection's setup), sending
    /// `source`: it announces the size and blasts from time zero.
    pub fn for_request(
        params: &Params,
        name: &str,
        source: Box<dyn Source + 'a>,
    ) -> Result<Sender<'a>, BulkError> {
        let mut sender = Sender::new(params, Box::new(|_| Err("request already answered".into())))?;
        sender.resolve = None;
        sender.start(Instant::ZERO, name.to_owned(), Ok(source));
        Ok(sender)
    }

    /// The name the receiver asked for, once it did.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Why the request was refused (bad request, no such file, too large), if it was.
    pub fn refusal(&self) -> Option<&str> {
        self.refusal.as_deref()
    }

    fn fail(&mut self, why: String) {
        if !matches!(self.state, State::Ended) {
            self.state = State::Ended;
            self.events.push_back(Event::Failed(why));
        }
    }

    fn refuse(&mut self, why: String) {
        self.refusal = Some(why.clone());
        self.fail(why);
    }

    /// The request is in: look at its source, announce the size and start the first blast.
    fn start(&mut self, now: Instant, name: String, source: Result<Box<dyn Source + 'a>, String>) {
        let shown = name.escape_debug().to_string();
        self.name = Some(name);
        let source = match source {
            Ok(s) => s,
            Err(why) => return self.refuse(why),
        };
        let layout = match Layout::new(source.len(), self.payload) {
            Ok(l) => l,
            Err(e) => return self.refuse(format!("{shown}: {e}")),
        };
        self.control_out.push_back(wire::encode_size(layout.size()).to_vec());
        self.counters.size = Some(layout.size());
        self.events.push_back(Event::Size(layout.size()));
        self.have = Bitmap::new(layout.packets());
        self.layout = Some(layout);
        self.source = Some(source);
        if layout.packets() == 0 {
            // Nothing to blast: the digest (of no bytes) follows the size at once.
            return self.finish();
        }
        self.begin_blast(now);
    }

    /// Everything is at the receiver: send the file's digest and end. A file that cannot be
    /// read for it fails the session (the receiver then ends without a digest).
    fn finish(&mut self) {
        let digest = match self.source.as_mut() {
            Some(source) => source.digest(),
            None => Err(std::io::Error::other("no file")),
        };
        match digest {
            Ok(digest) => {
                self.control_out.push_back(wire::encode_digest(&digest).to_vec());
                self.state = State::Ended;
                self.events.push_back(Event::Done);
            }
            Err(e) => {
                let name = self.name.as_deref().unwrap_or_default().escape_debug().to_string();
                self.fail(format!("reading {name} for its digest: {e}"));
            }
        }
    }

    fn begin_blast(&mut self, now: Instant) {
        self.counters.rounds += 1;
        if self.counters.rounds == 1 {
            // The receiver says nothing until the first blast's marker.
            let packets = self.layout.map_or(0, |l| l.packets());
            self.events.push_back(Event::QuietFor(self.gap.saturating_mul(packets)));
        }
        self.pacer.restart(now);
        self.state = State::Blast { next: self.have.next_missing(0) };
    }

    /// A whole bitmap arrived.
    fn on_bitmap(&mut self, now: Instant, bytes: &[u8]) {
        let Some(layout) = self.layout else { return };
        let map = match Bitmap::from_wire(layout.packets(), bytes) {
            Ok(m) => m,
            Err(e) => return self.fail(format!("protocol error: {e}")),
        };
        let progressed = map.received() > self.have.received();
        let has_last = layout.packets().checked_sub(1).is_some_and(|last| map.has(last));
        self.counters.delivered = layout.bytes_in(map.received(), has_last);
        self.have = map;
        // The reference stops when the flag is exactly 1 and trusts it.
        if self.have.done_flag() {
            self.counters.delivered = layout.size();
            return self.finish();
        }
        self.stalled = if progressed { 0 } else { self.stalled.saturating_add(1) };
        if self.stalled >= self.max_stalled {
            return self.fail(format!(
                "no packet got through in {} blasts in a row ({} of {} packets received): is the \
                 receiver's UDP port open to us, and the rate at most the path's capacity?",
                self.stalled,
                self.have.received(),
                layout.packets()
            ));
        }
        // The reference's round is an i32 that wraps; ours too, past any real transfer.
        self.round = self.round.wrapping_add(1);
        self.begin_blast(now);
    }
}

impl Session for Sender<'_> {
    fn handle_control(&mut self, now: Instant, channel: usize, bytes: &[u8]) {
        if channel != 0 || bytes.is_empty() {
            return;
        }
        self.last_heard = now;
        let mut bytes = bytes;
        while !bytes.is_empty() {
            let want = match self.state {
                State::Request => REQUEST_LEN,
                State::Bitmap => self.have.packets() as usize / 8 + 2,
                State::Blast { .. } => {
                    return self.fail(format!(
                        "protocol error: the receiver sent {} bytes during a blast",
                        bytes.len()
                    ))
                }
                State::Ended => return,
            };
            let take = (want - self.control_in.len()).min(bytes.len());
            self.control_in.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.control_in.len() < want {
                return;
            }
            let message = std::mem::take(&mut self.control_in);
            if matches!(self.state, State::Request) {
                let mut field = [0u8; REQUEST_LEN];
                field.copy_from_slice(&message);
                match wire::decode_request(&field) {
                    Ok(name) => {
                        let found = match self.resolve.as_mut() {
                            Some(resolve) => resolve(&name),
                            None => Err("no request expected".into()),
                        };
                        self.start(now, name, found);
                    }
                    Err(e) => self.refuse(format!("bad request: {e}")),
                }
            } else {
                self.on_bitmap(now, &message);
            }
        }
    }

    fn handle_control_closed(&mut self, _now: Instant, _channel: usize) {
        let why = match (&self.state, self.layout) {
            (State::Ended, _) => return,
            (_, None) => "the receiver closed the control connection before its request".to_owned(),
            (_, Some(l)) => format!(
                "the receiver closed the control connection with {} of {} packets received",
                self.have.received(),
                l.packets()
            ),
        };
        self.fail(why);
    }

    fn handle_datagram(&mut self, _now: Instant, _datagram: &[u8]) {
        // RBUDP's receiver sends no datagrams.
        self.counters.malformed += 1;
    }

    fn handle_timeout(&mut self, now: Instant) {
        match self.state {
            State::Blast { next: None } if self.pacer.is_due(now) => {
                self.control_out.push_back(wire::encode_marker(self.round).to_vec());
                self.state = State::Bitmap;
                self.last_heard = now;
            }
            State::Request | State::Bitmap if now >= self.last_heard + self.silence_limit => {
                let what = if matches!(self.state, State::Request) { "request" } else { "bitmap" };
                self.fail(format!("no {what} from the receiver for {:?}", self.silence_limit));
            }
            _ => {}
        }
    }

    fn poll_control(&mut self) -> Option<(usize, Vec<u8>)> {
        self.control_out.pop_front().map(|b| (0, b))
    }

    fn poll_datagram(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        let State::Blast { next: Some(seq) } = self.state else { return None };
        if !self.pacer.is_due(now) {
            return None;
        }
        let layout = self.layout?;
        let len = layout.len_of(seq);
        let total = HEADER_LEN + len;
        let (head, body) = buf.get_mut(..total)?.split_at_mut(HEADER_LEN);
        head.copy_from_slice(&wire::encode_header(seq));
        let source = self.source.as_mut()?;
        if let Err(e) = source.read_at(layout.offset(seq), body) {
            self.fail(format!("reading packet {seq}: {e}"));
            return None;
        }
        self.counters.datagrams_sent += 1;
        self.counters.retransmitted += u64::from(self.round > 0);
        self.counters.bytes_sent += total as u64;
        let next = seq.checked_add(1).and_then(|from| self.have.next_missing(from));
        // The next packet one gap later; the marker right after the last one.
        match next {
            Some(_) => self.pacer.on_send(now, self.gap),
            None => self.pacer.restart(now),
        }
        self.state = State::Blast { next };
        Some(total)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self.state {
            State::Blast { .. } => Some(self.pacer.due()),
            State::Request | State::Bitmap => Some(self.last_heard + self.silence_limit),
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Memory;

    fn params() -> Params {
        Params { rate_bps: Some(8_000_000), payload: 100, ..Params::default() }
    }

    fn serving(data: Vec<u8>) -> Resolver<'static> {
        Box::new(move |name| match name {
            "f" => Ok(Box::new(Memory(data.clone())) as Box<dyn Source>),
            _ => Err(format!("{name}: no such file")),
        })
    }

    fn request(s: &mut Sender<'_>, name: &str) {
        s.handle_control(Instant::ZERO, 0, &wire::encode_request(name).unwrap());
    }

    /// Everything the sender sends until it waits for input, from `at`.
    fn blast(s: &mut Sender<'_>, at: Instant) -> (Vec<Vec<u8>>, Vec<Vec<u8>>, Instant) {
        let mut now = at;
        let mut datagrams = vec![];
        let mut control = vec![];
        let mut buf = vec![0u8; s.max_datagram()];
        for _ in 0..10_000 {
            s.handle_timeout(now);
            while let Some((_, c)) = s.poll_control() {
                control.push(c);
            }
            if let Some(n) = s.poll_datagram(now, &mut buf) {
                datagrams.push(buf[..n].to_vec());
            }
            match s.poll_timeout() {
                Some(t) if t > now && matches!(s.state, State::Blast { .. }) => now = t,
                _ if matches!(s.state, State::Blast { .. }) => {}
                _ => break,
            }
        }
        (datagrams, control, now)
    }

    #[test]
    fn a_serving_sender_answers_any_name_and_is_send_for_the_simulator() {
        fn send<T: Send>(_: &T) {}
        let source = Box::new(crate::storage::Pattern { seed: 3, len: 150 });
        let mut s = Sender::serving(&params(), source).unwrap();
        send(&s);
        request(&mut s, "whatever");
        assert_eq!(s.poll_event(), Some(Event::Size(150)));
    }

    #[test]
    fn there_is_no_sender_without_a_rate() {
        let err = Sender::new(&Params::default(), serving(vec![])).err().unwrap();
        assert_eq!(err.to_string(), super::super::params::NO_RATE);
    }

    #[test]
    fn a_blast_sends_every_packet_in_order_at_the_rate_then_the_marker() {
        let data: Vec<u8> = (0..250u32).map(|i| i as u8).collect();
        let mut s = Sender::new(&params(), serving(data.clone())).unwrap();
        request(&mut s, "f");
        assert_eq!(s.name(), Some("f"));
        assert_eq!(s.poll_event(), Some(Event::Size(250)));
        let (d, c, end) = blast(&mut s, Instant::ZERO);
        assert_eq!(c, vec![250u64.to_be_bytes().to_vec(), wire::encode_marker(0).to_vec()]);
        assert_eq!(d.len(), 3);
        for (i, dg) in d.iter().enumerate() {
            assert_eq!(dg[..4], (i as u32).to_le_bytes());
            assert_eq!(dg[4..], data[i * 100..(i * 100 + 100).min(250)]);
        }
        // 100 bytes at 8 Mb/s: 100 us apart; the marker with the last packet.
        assert_eq!(end, Instant::ZERO + Duration::from_micros(200));
        assert_eq!(s.counters().rounds, 1);
    }

    #[test]
    fn a_bitmap_starts_a_re_blast_of_the_missing_packets_in_ascending_order() {
        let mut s = Sender::new(&params(), serving(vec![7; 1000])).unwrap();
        request(&mut s, "f");
        let (_, _, t) = blast(&mut s, Instant::ZERO);
        // 10 packets, 2, 5 and 9 missing.
        s.handle_control(t, 0, &[0, 0b1101_1011, 0b1111_1101]);
        let (d, c, _) = blast(&mut s, t);
        let seqs: Vec<u32> = d.iter().map(|d| u32::from_le_bytes(d[..4].try_into().unwrap())).collect();
        assert_eq!(seqs, vec![2, 5, 9]);
        assert_eq!(c, vec![wire::encode_marker(1).to_vec()]);
        let n = s.counters();
        assert_eq!((n.rounds, n.datagrams_sent, n.retransmitted, n.delivered), (2, 13, 3, 700));
        s.handle_control(t, 0, &[1, 0xff, 0xff]);
        assert_eq!(s.poll_event(), Some(Event::Size(1000)));
        let first_blast = params().gap(8_000_000) * 10;
        assert_eq!(s.poll_event(), Some(Event::QuietFor(first_blast)), "the first blast only");
        assert_eq!(s.poll_event(), Some(Event::Done));
        assert_eq!(s.counters().delivered, 1000);
    }

    #[test]
    fn the_done_flag_brings_the_digest_of_the_file_then_the_end() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
        let mut s = Sender::new(&params(), serving(data.clone())).unwrap();
        request(&mut s, "f");
        let (_, _, t) = blast(&mut s, Instant::ZERO);
        s.handle_control(t, 0, &[1, 0xff, 0xff]);
        let digest = *blake3::hash(&data).as_bytes();
        assert_eq!(s.poll_control(), Some((0, wire::encode_digest(&digest).to_vec())));
        assert_eq!(s.poll_control(), None);
        assert!(s.events.contains(&Event::Done));
        assert_eq!(s.poll_timeout(), None);
        // The reference receiver has closed by now: that is no failure.
        s.handle_control_closed(t, 0);
        assert!(!s.events.iter().any(|e| matches!(e, Event::Failed(_))));
    }

    /// A source whose reads fail after the first `good` ones.
    struct Flaky {
        len: u64,
        good: u32,
    }

    impl Source for Flaky {
        fn len(&self) -> u64 {
            self.len
        }
        fn read_at(&mut self, _offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
            self.good = self.good.checked_sub(1).ok_or_else(|| std::io::Error::other("disk on fire"))?;
            buf.fill(7);
            Ok(())
        }
    }

    #[test]
    fn a_file_that_cannot_be_read_for_its_digest_fails_the_sender() {
        let flaky = || Ok(Box::new(Flaky { len: 1000, good: 10 }) as Box<dyn Source>);
        let mut s = Sender::new(&params(), Box::new(move |_| flaky())).unwrap();
        request(&mut s, "f");
        let (d, _, t) = blast(&mut s, Instant::ZERO);
        assert_eq!(d.len(), 10, "every packet read");
        s.handle_control(t, 0, &[1, 0xff, 0xff]);
        assert_eq!(s.poll_control(), None, "no digest");
        let failed = s.events.iter().find_map(|e| match e {
            Event::Failed(w) => Some(w.clone()),
            _ => None,
        });
        assert_eq!(failed.as_deref(), Some("reading f for its digest: disk on fire"));
    }

    #[test]
    fn a_bitmap_may_arrive_in_pieces() {
        let mut s = Sender::new(&params(), serving(vec![7; 1000])).unwrap();
        request(&mut s, "f");
        let (_, _, t) = blast(&mut s, Instant::ZERO);
        s.handle_control(t, 0, &[1]);
        s.handle_control(t, 0, &[0xff]);
        assert!(!s.events.contains(&Event::Done));
        s.handle_control(t, 0, &[0xff]);
        assert!(s.events.contains(&Event::Done));
    }

    #[test]
    fn an_empty_file_is_done_once_its_size_and_digest_are_sent() {
        let mut s = Sender::new(&params(), serving(vec![])).unwrap();
        request(&mut s, "f");
        assert_eq!(s.poll_control(), Some((0, vec![0; 8])));
        let digest = *blake3::hash(&[]).as_bytes();
        assert_eq!(s.poll_control(), Some((0, wire::encode_digest(&digest).to_vec())));
        assert_eq!((s.poll_event(), s.poll_event()), (Some(Event::Size(0)), Some(Event::Done)));
        assert_eq!(s.poll_datagram(Instant::ZERO, &mut [0; 200]), None);
    }

    #[test]
    fn a_refused_request_sends_nothing_and_says_why() {
        let mut s = Sender::new(&params(), serving(vec![1])).unwrap();
        request(&mut s, "g");
        assert_eq!(s.refusal(), Some("g: no such file"));
        assert_eq!(s.poll_control(), None);
        assert!(matches!(s.poll_event(), Some(Event::Failed(why)) if why.contains("no such file")));

        let mut s = Sender::new(&params(), serving(vec![1])).unwrap();
        s.handle_control(Instant::ZERO, 0, &[b'x'; REQUEST_LEN]);
        assert!(s.refusal().unwrap().contains("no NUL"), "{:?}", s.refusal());
    }

    #[test]
    fn a_file_too_large_for_32_bit_sequence_numbers_is_refused() {
        let huge = crate::storage::Pattern { seed: 1, len: (i32::MAX as u64 + 1) * 100 };
        let mut s = Sender::new(&params(), Box::new(move |_| Ok(Box::new(huge) as Box<dyn Source>))).unwrap();
        request(&mut s, "f");
        assert!(s.refusal().unwrap().contains("32-bit"), "{:?}", s.refusal());
        assert_eq!(s.poll_control(), None, "no size announced");
    }

    #[test]
    fn bad_or_unsolicited_control_bytes_fail_the_sender() {
        let mut s = Sender::new(&params(), serving(vec![7; 1000])).unwrap();
        request(&mut s, "f");
        assert_eq!(s.poll_event(), Some(Event::Size(1000)));
        assert!(matches!(s.poll_event(), Some(Event::QuietFor(_))));
        s.handle_control(Instant::ZERO, 0, &[0]);
        assert!(matches!(s.poll_event(), Some(Event::Failed(why)) if why.contains("during a blast")));
    }

    #[test]
    fn blasts_that_bring_nothing_new_end_the_transfer() {
        let p = Params { max_stalled_rounds: 3, ..params() };
        let mut s = Sender::new(&p, serving(vec![7; 1000])).unwrap();
        request(&mut s, "f");
        let mut t = Instant::ZERO;
        for _ in 0..3 {
            t = blast(&mut s, t).2;
            s.handle_control(t, 0, &[0, 0, 0b1111_1100]);
        }
        let failed = s.events.iter().find_map(|e| match e {
            Event::Failed(w) => Some(w.clone()),
            _ => None,
        });
        assert!(failed.unwrap().contains("no packet got through in 3 blasts"));
    }

    #[test]
    fn silence_while_waiting_for_the_bitmap_fails_the_sender() {
        let mut s = Sender::new(&params(), serving(vec![7; 1000])).unwrap();
        request(&mut s, "f");
        let (_, _, t) = blast(&mut s, Instant::ZERO);
        let deadline = s.poll_timeout().unwrap();
        assert_eq!(deadline, t + Duration::from_secs(30));
        s.handle_timeout(deadline);
        assert!(s.events.iter().any(|e| matches!(e, Event::Failed(w) if w.contains("no bitmap"))));
    }

    #[test]
    fn a_closed_connection_fails_an_unfinished_transfer() {
        let mut s = Sender::new(&params(), serving(vec![7; 1000])).unwrap();
        request(&mut s, "f");
        s.handle_control_closed(Instant::ZERO, 0);
        assert!(s.events.iter().any(|e| matches!(e, Event::Failed(w) if w.contains("0 of 10 packets"))));
    }
}
