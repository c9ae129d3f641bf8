//! Randomized model tests of [`SendBuffer`] and [`RecvBuffer`] together.
//!
//! A miniature connection runs over a simulated lossy, reordering, duplicating channel, built
//! from the crate's own pieces (the buffers and both loss lists): the sender writes random stream
//! chunks or messages, sends new packets within a window, retransmits what NAKs and timeouts put
//! in its loss list, and sends drop requests for expired messages; the receiver stores packets,
//! records gaps, sends ACKs (its `contiguous_end`) and periodic NAKs, and the application reads.
//! Stream runs compare the bytes read with the bytes written, byte for byte. Message runs check
//! that every read message is one that was written, read at most once, and that no message is
//! read after a later in-order message; without TTL every message must arrive exactly once.
//!
//! A second group feeds both buffers hostile but in-window inputs and checks that nothing panics
//! and the accounting stays consistent.

// Test code: helpers outside #[test] functions may panic on failure too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::time::Duration;

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use udt_proto::buffer::{InsertOutcome, Lookup, RecvBuffer, RecvMsgError, RxDatagram, SendBuffer};
use udt_proto::loss_list::{RecvLossList, Rereport, SendLossList};
use udt_proto::packet::{Boundary, DataHeader, DATA_HEADER_LEN};
use udt_proto::{Instant, MsgNo, SeqNo, SocketId};

struct Rng(Xoshiro256PlusPlus);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(Xoshiro256PlusPlus::seed_from_u64(seed))
    }
    /// Uniform in `0..n` (n > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.0.next_u64() % n
    }
    /// True with probability `per_mille / 1000`.
    fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.0.next_u64() as u8).collect()
    }
    /// Up to `max - 1` random bytes.
    fn some_bytes(&mut self, max: u64) -> Vec<u8> {
        let n = self.below(max) as usize;
        self.bytes(n)
    }
}

#[derive(Clone, Debug)]
enum Pkt {
    Data(DataHeader, Vec<u8>),
    Ack(SeqNo, usize),
    Nak(SeqNo, SeqNo),
    Drop(SeqNo, SeqNo),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Stream,
    /// Messages; `ttl` whether some get a TTL.
    Message {
        ttl: bool,
    },
}

#[derive(Clone, Copy, Debug)]
struct Params {
    seed: u64,
    mode: Mode,
    snd_cap: usize,
    rcv_cap: usize,
    payload: usize,
    loss: u64,
    dup: u64,
    max_delay: u64,
    isn: SeqNo,
    /// Stream bytes or messages to write.
    amount: usize,
}

/// A written message and its fate.
struct Written {
    data: Vec<u8>,
    in_order: bool,
    delivered: bool,
}

/// What a run exercised (summed over seeds, checked to be non-trivial).
#[derive(Clone, Copy, Debug, Default)]
struct Stats {
    steps: u64,
    new_packets: u64,
    retransmissions: u64,
    beyond_capacity: u64,
    duplicates: u64,
    drop_requests: u64,
    /// Messages read while an earlier written message was still unread.
    overtaking_reads: u64,
    too_small: u64,
    crossed_wrap: u64,
}

impl std::ops::AddAssign for Stats {
    fn add_assign(&mut self, o: Stats) {
        self.steps += o.steps;
        self.new_packets += o.new_packets;
        self.retransmissions += o.retransmissions;
        self.beyond_capacity += o.beyond_capacity;
        self.duplicates += o.duplicates;
        self.drop_requests += o.drop_requests;
        self.overtaking_reads += o.overtaking_reads;
        self.too_small += o.too_small;
        self.crossed_wrap += o.crossed_wrap;
    }
}

struct Sim {
    p: Params,
    st: Stats,
    rng: Rng,
    now_ms: u64,
    snd: SendBuffer,
    sloss: SendLossList,
    window: usize,
    last_progress_ms: u64,
    rcv: RecvBuffer,
    rloss: RecvLossList,
    largest: SeqNo,
    channel: Vec<(u64, Pkt)>,
    // Stream bookkeeping.
    written: Vec<u8>,
    received: Vec<u8>,
    /// seq -> byte offset just past the packet's payload in the stream (stream mode).
    seq_end: HashMap<u32, usize>,
    // Message bookkeeping.
    msgs: Vec<Written>,
    msg_by_no: HashMap<u32, usize>,
    max_in_order_read: Option<usize>,
    acks_beyond_sent: u64,
}

fn now(ms: u64) -> Instant {
    Instant::from_micros(ms * 1000)
}

impl Sim {
    fn new(p: Params) -> Self {
        Sim {
            p,
            st: Stats::default(),
            rng: Rng::new(p.seed),
            now_ms: 1000,
            snd: SendBuffer::new(p.snd_cap, p.payload, p.isn),
            sloss: SendLossList::new(),
            window: p.rcv_cap,
            last_progress_ms: 1000,
            rcv: RecvBuffer::new(p.rcv_cap, p.payload, p.isn),
            rloss: RecvLossList::new(),
            largest: p.isn.prev(),
            channel: Vec::new(),
            written: Vec::new(),
            received: Vec::new(),
            seq_end: HashMap::new(),
            msgs: Vec::new(),
            msg_by_no: HashMap::new(),
            max_in_order_read: None,
            acks_beyond_sent: 0,
        }
    }

    fn ctx(&self) -> String {
        format!("{:?} at {} ms", self.p, self.now_ms)
    }

    /// Put a packet on the wire: maybe lost, maybe duplicated, delayed randomly.
    fn transmit(&mut self, pkt: Pkt) {
        let copies = if self.rng.chance(self.p.dup) { 2 } else { 1 };
        for _ in 0..copies {
            if self.rng.chance(self.p.loss) {
                continue;
            }
            let at = self.now_ms + 1 + self.rng.below(self.p.max_delay);
            self.channel.push((at, pkt.clone()));
        }
    }

    fn app_write(&mut self) {
        match self.p.mode {
            Mode::Stream => {
                if self.written.len() >= self.p.amount {
                    return;
                }
                let n = self.rng.below(3 * self.p.payload as u64 + 1) as usize;
                let chunk = self.rng.bytes(n);
                let taken = self.snd.write_stream(&chunk);
                self.written.extend_from_slice(&chunk[..taken]);
            }
            Mode::Message { ttl } => {
                if self.msgs.len() >= self.p.amount || self.rng.chance(300) {
                    return;
                }
                let index = self.msgs.len();
                let len = 8 + self.rng.below(3 * self.p.payload as u64) as usize;
                let mut data = (index as u64).to_be_bytes().to_vec();
                data.extend(self.rng.bytes(len - 8));
                let in_order = self.rng.chance(500);
                let ttl =
                    (ttl && self.rng.chance(300)).then(|| Duration::from_millis(5 + self.rng.below(60)));
                match self.snd.write_message(&data, ttl, in_order, now(self.now_ms)) {
                    Ok(msg) => {
                        self.msg_by_no.insert(msg.value(), index);
                        self.msgs.push(Written { data, in_order, delivered: false });
                    }
                    Err(e) => assert_eq!(e, udt_proto::buffer::WriteMsgError::Full, "{}", self.ctx()),
                }
            }
        }
    }

    fn data_header(seq: SeqNo, msg: MsgNo, boundary: Boundary, in_order: bool) -> DataHeader {
        DataHeader { seq, boundary, in_order, msg, timestamp: 0, dst: SocketId(7) }
    }

    fn sender_send(&mut self) {
        let t = now(self.now_ms);
        let mut budget = 1 + self.rng.below(8);
        while budget > 0 {
            // Retransmissions first.
            if let Some(seq) = self.sloss.pop_first() {
                let pkt = match self.snd.lookup(seq, t) {
                    Lookup::Packet(p) => {
                        Pkt::Data(Self::data_header(seq, p.msg, p.boundary, p.in_order), p.payload.to_vec())
                    }
                    Lookup::Acknowledged => continue,
                    Lookup::Expired { first, end_exclusive, msg } => {
                        assert!(matches!(self.p.mode, Mode::Message { ttl: true }), "{}", self.ctx());
                        assert!(self.msg_by_no.contains_key(&msg.value()));
                        self.sloss.remove_range(first, end_exclusive.prev());
                        Pkt::Drop(first, end_exclusive)
                    }
                    Lookup::NotSent => panic!("NAK for unsent {seq:?}: {}", self.ctx()),
                };
                match pkt {
                    Pkt::Drop(..) => self.st.drop_requests += 1,
                    _ => self.st.retransmissions += 1,
                }
                self.transmit(pkt);
                budget -= 1;
                continue;
            }
            if self.snd.unacked_packets() >= self.window.max(2) {
                break;
            }
            let Some((seq, p)) = self.snd.take_new(t) else {
                break;
            };
            let hdr = Self::data_header(seq, p.msg, p.boundary, p.in_order);
            let payload = p.payload.to_vec();
            if self.p.mode == Mode::Stream {
                assert_eq!(p.boundary, Boundary::Solo);
                let prev_end = self.seq_end.get(&seq.prev().value()).copied().unwrap_or(0);
                self.seq_end.insert(seq.value(), prev_end + payload.len());
            }
            self.st.new_packets += 1;
            self.st.crossed_wrap += u64::from(seq.value() == 0);
            self.transmit(Pkt::Data(hdr, payload));
            budget -= 1;
        }
        // Retransmission timeout: everything unacknowledged is lost.
        if self.now_ms > self.last_progress_ms + 150 && self.snd.unacked_packets() > 0 {
            self.sloss.insert(self.snd.head_seq(), self.snd.next_seq().prev());
            self.last_progress_ms = self.now_ms;
        }
    }

    fn sender_receive(&mut self, pkt: Pkt) {
        match pkt {
            Pkt::Ack(ack, free) => {
                // An ACK can name numbers not yet sent when a drop request covered the unsent
                // rest of a message: valid up to `committed_end`, releasing that rest.
                assert!(!ack.is_after(self.snd.committed_end()), "ACK {ack:?}: {}", self.ctx());
                if ack.is_after(self.snd.next_seq()) {
                    self.acks_beyond_sent += 1;
                }
                if self.snd.acknowledge(ack) > 0 {
                    self.last_progress_ms = self.now_ms;
                }
                self.sloss.remove_before(self.snd.head_seq());
                self.window = free;
            }
            Pkt::Nak(a, b) => {
                // Only numbers that were sent and are not acknowledged.
                let a = a.max_wrapping(self.snd.head_seq());
                let b = b.min_wrapping(self.snd.next_seq().prev());
                if !b.is_before(a) {
                    self.sloss.insert(a, b);
                }
            }
            Pkt::Data(..) | Pkt::Drop(..) => unreachable!(),
        }
    }

    fn receiver_receive(&mut self, pkt: Pkt) {
        let t = now(self.now_ms);
        match pkt {
            Pkt::Data(h, payload) => match self.rcv.insert(&h, &payload) {
                InsertOutcome::Stored => {
                    if h.seq.is_after(self.largest.next()) {
                        let (a, b) = (self.largest.next(), h.seq.prev());
                        self.rloss.insert(a, b, t);
                        self.transmit(Pkt::Nak(a, b));
                    } else if !h.seq.is_after(self.largest) {
                        self.rloss.remove(h.seq);
                    }
                    if h.seq.is_after(self.largest) {
                        self.largest = h.seq;
                    }
                }
                InsertOutcome::Duplicate => {
                    self.st.duplicates += 1;
                    self.rloss.remove(h.seq);
                }
                InsertOutcome::BeyondCapacity => self.st.beyond_capacity += 1,
            },
            Pkt::Drop(first, end) => {
                self.rcv.drop_range(first, end);
                self.rloss.remove_range(first, end.prev());
                if end.prev().is_after(self.largest) {
                    // Numbers between the largest received and the range are lost too.
                    if first.is_after(self.largest.next()) {
                        self.rloss.insert(self.largest.next(), first.prev(), t);
                    }
                    self.largest = end.prev();
                }
            }
            Pkt::Ack(..) | Pkt::Nak(..) => unreachable!(),
        }
        // Everything before the contiguous end has arrived or was dropped.
        self.rloss.remove_before(self.rcv.contiguous_end());
    }

    fn receiver_control(&mut self) {
        if self.now_ms % 3 == 0 {
            let pkt = Pkt::Ack(self.rcv.contiguous_end(), self.rcv.free_packets());
            self.transmit(pkt);
        }
        let mut out = Vec::new();
        self.rloss.collect_due(now(self.now_ms), Duration::from_millis(20), Rereport::Growing, 16, &mut out);
        for (a, b) in out {
            self.transmit(Pkt::Nak(a, b));
        }
    }

    fn app_read(&mut self) {
        if self.rng.chance(300) {
            return;
        }
        match self.p.mode {
            Mode::Stream => {
                let before = self.received.len();
                let mut buf = vec![0u8; 1 + self.rng.below(4 * self.p.payload as u64) as usize];
                let n = self.rcv.read_stream(&mut buf);
                self.received.extend_from_slice(&buf[..n]);
                assert_eq!(
                    self.written.get(before..self.received.len()),
                    Some(&self.received[before..]),
                    "stream bytes differ: {}",
                    self.ctx()
                );
            }
            Mode::Message { ttl } => loop {
                let expect = self.rcv.next_message_len();
                let cap = if self.rng.chance(100) { 4 } else { 8 + 3 * self.p.payload };
                let mut buf = vec![0u8; cap];
                match self.rcv.read_message(&mut buf) {
                    None => {
                        assert_eq!(expect, None, "{}", self.ctx());
                        break;
                    }
                    Some(Err(RecvMsgError::BufferTooSmall { len, cap: c })) => {
                        assert_eq!((Some(len), c), (expect, cap), "{}", self.ctx());
                        assert!(len > cap);
                        self.st.too_small += 1;
                        assert_eq!(self.rcv.next_message_len(), Some(len), "{}", self.ctx());
                    }
                    Some(Ok(n)) => {
                        assert_eq!(Some(n), expect, "{}", self.ctx());
                        let index = buf[..8].iter().fold(0usize, |acc, &b| acc << 8 | usize::from(b));
                        let ctx = self.ctx();
                        if self.msgs[..index].iter().any(|m| !m.delivered) {
                            self.st.overtaking_reads += 1;
                        }
                        let w = &mut self.msgs[index];
                        assert_eq!(&buf[..n], &w.data[..], "message {index}: {ctx}");
                        assert!(!w.delivered, "message {index} read twice: {ctx}");
                        w.delivered = true;
                        let in_order = w.in_order;
                        if let Some(m) = self.max_in_order_read {
                            assert!(
                                index > m,
                                "message {index} read after in-order message {m}: {}",
                                self.ctx()
                            );
                        }
                        if in_order {
                            self.max_in_order_read = Some(index);
                        }
                        if !ttl {
                            // Without drops, in-order messages come after every earlier one.
                            if in_order {
                                assert!(
                                    self.msgs[..index].iter().all(|m| m.delivered),
                                    "in-order message {index} overtook: {}",
                                    self.ctx()
                                );
                            }
                        }
                    }
                }
            },
        }
    }

    fn check_accounting(&self) {
        let s = &self.snd;
        assert_eq!(
            s.free_packets() + s.unacked_packets() + s.unsent_packets(),
            self.p.snd_cap,
            "{}",
            self.ctx()
        );
        assert_eq!(s.next_seq(), s.head_seq().add(s.unacked_packets() as i32));
        let r = &self.rcv;
        let contig = r.contiguous_end().diff(r.read_seq());
        assert!(contig >= 0 && contig as usize <= r.capacity(), "{}", self.ctx());
        assert_eq!(r.free_packets(), r.capacity() - contig as usize, "{}", self.ctx());
        if self.p.mode == Mode::Stream {
            // Readable bytes = stream bytes up to the contiguous end, minus what was read.
            let end = r.contiguous_end().prev();
            let upto = self.seq_end.get(&end.value()).copied().unwrap_or(0);
            let upto = if r.contiguous_end() == self.p.isn { 0 } else { upto };
            assert_eq!(r.readable_bytes(), upto - self.received.len(), "{}", self.ctx());
        }
    }

    fn done(&self) -> bool {
        let written_all = match self.p.mode {
            Mode::Stream => self.written.len() >= self.p.amount,
            Mode::Message { .. } => self.msgs.len() >= self.p.amount,
        };
        written_all
            && self.snd.is_empty()
            && self.rcv.read_seq() == self.snd.next_seq()
            && self.rcv.readable_bytes() == 0
            && self.rcv.next_message_len().is_none()
    }

    fn run(mut self) -> Self {
        for _ in 0..400_000 {
            self.now_ms += 1;
            self.st.steps += 1;
            self.app_write();
            self.sender_send();
            // Deliver what is due, in random order among the due ones.
            let mut due = Vec::new();
            let mut i = 0;
            while i < self.channel.len() {
                if self.channel[i].0 <= self.now_ms {
                    due.push(self.channel.swap_remove(i).1);
                } else {
                    i += 1;
                }
            }
            while !due.is_empty() {
                let k = self.rng.below(due.len() as u64) as usize;
                match due.swap_remove(k) {
                    p @ (Pkt::Data(..) | Pkt::Drop(..)) => self.receiver_receive(p),
                    p => self.sender_receive(p),
                }
            }
            self.receiver_control();
            self.app_read();
            self.check_accounting();
            if self.done() {
                return self;
            }
        }
        panic!("did not finish: {} snd={:?} rcv={:?}", self.ctx(), self.snd, self.rcv);
    }
}

fn params(seed: u64, mode: Mode) -> Params {
    let mut rng = Rng::new(seed ^ 0xabcdef);
    let payload: usize = [1, 7, 16, 100][rng.below(4) as usize];
    let isn = if rng.chance(700) {
        SeqNo::new(0x7FFF_FFFF - rng.below(300) as u32)
    } else {
        SeqNo::new(rng.below(1 << 31) as u32)
    };
    // Messages (8 to 7 + 3 * payload bytes) must fit both buffers to be deliverable.
    let min_cap = match mode {
        Mode::Stream => 4,
        Mode::Message { .. } => (7 + 3 * payload).div_ceil(payload),
    };
    Params {
        seed,
        mode,
        snd_cap: min_cap + rng.below(60) as usize,
        rcv_cap: min_cap + rng.below(60) as usize,
        payload,
        loss: [0, 20, 100, 250][rng.below(4) as usize],
        dup: [0, 20][rng.below(2) as usize],
        max_delay: 1 + rng.below(30),
        isn,
        amount: match mode {
            Mode::Stream => 200 * payload + rng.below(3000) as usize,
            Mode::Message { .. } => 100 + rng.below(200) as usize,
        },
    }
}

fn assert_exercised(st: &Stats, messages: bool) {
    assert!(st.retransmissions > 1000, "{st:?}");
    assert!(st.beyond_capacity > 10, "{st:?}");
    assert!(st.duplicates > 100, "{st:?}");
    assert!(st.crossed_wrap > 10, "{st:?}");
    if messages {
        assert!(st.overtaking_reads > 100, "{st:?}");
        assert!(st.too_small > 10, "{st:?}");
    }
}

#[test]
fn stream_over_lossy_reordering_channel() {
    let mut st = Stats::default();
    for seed in 0..200 {
        let sim = Sim::new(params(seed, Mode::Stream)).run();
        assert_eq!(sim.received, sim.written, "{}", sim.ctx());
        assert_eq!(sim.acks_beyond_sent, 0);
        st += sim.st;
    }
    assert_exercised(&st, false);
    eprintln!("{st:?}");
}

#[test]
fn messages_over_lossy_reordering_channel() {
    let mut st = Stats::default();
    for seed in 0..200 {
        let sim = Sim::new(params(seed, Mode::Message { ttl: false })).run();
        for (i, m) in sim.msgs.iter().enumerate() {
            assert!(m.delivered, "message {i} never read: {}", sim.ctx());
        }
        assert_eq!(sim.snd.expired_unsent_msgs(), 0);
        assert_eq!(sim.acks_beyond_sent, 0);
        st += sim.st;
    }
    assert_exercised(&st, true);
    eprintln!("{st:?}");
}

#[test]
fn messages_with_ttl_over_lossy_reordering_channel() {
    let mut st = Stats::default();
    let mut dropped = 0;
    let mut expired_unsent = 0;
    let mut acks_beyond_sent = 0;
    for seed in 0..200 {
        let sim = Sim::new(params(seed, Mode::Message { ttl: true })).run();
        dropped += sim.msgs.iter().filter(|m| !m.delivered).count();
        expired_unsent += sim.snd.expired_unsent_msgs();
        acks_beyond_sent += sim.acks_beyond_sent;
        st += sim.st;
    }
    // The scenarios do exercise expiry, before and after the first packet was sent.
    assert_exercised(&st, true);
    assert!(st.drop_requests > 10, "{st:?}");
    assert!(dropped > 0 && expired_unsent > 0, "{dropped} {expired_unsent}");
    // ACKs past next_seq after a drop request that named unsent packets do happen.
    assert!(acks_beyond_sent > 0);
    eprintln!(
        "{st:?} dropped {dropped} expired unsent {expired_unsent} \
         acks beyond sent {acks_beyond_sent}"
    );
}

// ---- hostile inputs ----------------------------------------------------------------------

const BOUNDARIES: [Boundary; 4] = [Boundary::First, Boundary::Middle, Boundary::Last, Boundary::Solo];

/// A naive model of the receive buffer's contract: plain scans from the read position, no
/// chains, counters or hints.
mod naive {
    use std::collections::VecDeque;
    use udt_proto::packet::Boundary;

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum St {
        Empty,
        Data,
        Resolved,
    }

    #[derive(Clone, Debug)]
    struct Slot {
        st: St,
        data: Vec<u8>,
        read_off: usize,
        msg: u32,
        boundary: Boundary,
        in_order: bool,
    }

    const EMPTY: Slot = Slot {
        st: St::Empty,
        data: Vec::new(),
        read_off: 0,
        msg: 0,
        boundary: Boundary::Solo,
        in_order: false,
    };

    #[derive(Clone, Debug)]
    pub struct Recv {
        ps: usize,
        /// Read position, counted from the first sequence number.
        pub base: u64,
        slots: VecDeque<Slot>,
    }

    enum Walk {
        Complete(usize),
        Waiting,
        Broken(usize),
    }

    fn starts(b: Boundary) -> bool {
        matches!(b, Boundary::First | Boundary::Solo)
    }
    fn ends(b: Boundary) -> bool {
        matches!(b, Boundary::Last | Boundary::Solo)
    }

    impl Recv {
        pub fn new(cap: usize, ps: usize) -> Self {
            Recv { ps, base: 0, slots: (0..cap).map(|_| EMPTY).collect() }
        }
        fn cap(&self) -> usize {
            self.slots.len()
        }
        /// Returns 0 stored, 1 duplicate, 2 beyond capacity.
        pub fn insert(&mut self, off: i64, msg: u32, b: Boundary, in_order: bool, p: &[u8]) -> u8 {
            if off < 0 {
                return 1;
            }
            if off as usize >= self.cap() {
                return 2;
            }
            let s = &mut self.slots[off as usize];
            if s.st != St::Empty {
                return 1;
            }
            *s = Slot {
                st: St::Data,
                data: p[..p.len().min(self.ps)].to_vec(),
                read_off: 0,
                msg,
                boundary: b,
                in_order,
            };
            0
        }
        pub fn contig(&self) -> usize {
            self.slots.iter().take_while(|s| s.st != St::Empty).count()
        }
        pub fn readable(&self) -> usize {
            self.slots
                .iter()
                .take(self.contig())
                .filter(|s| s.st == St::Data)
                .map(|s| s.data.len() - s.read_off)
                .sum()
        }
        fn advance(&mut self) {
            while self.slots.front().is_some_and(|s| s.st == St::Resolved) {
                self.slots.pop_front();
                self.slots.push_back(EMPTY);
                self.base += 1;
            }
        }
        fn resolve(&mut self, off: usize) {
            self.slots[off] = Slot { st: St::Resolved, ..EMPTY };
        }
        pub fn drop_range(&mut self, lo: i64, hi: i64) {
            let cap = self.cap() as i64;
            let (mut lo, mut hi) = (lo.max(0), hi.min(cap));
            if lo >= hi {
                return;
            }
            while lo > 0 {
                let s = &self.slots[lo as usize - 1];
                if s.st != St::Data || !matches!(s.boundary, Boundary::First | Boundary::Middle) {
                    break;
                }
                lo -= 1;
                if s.boundary == Boundary::First {
                    break;
                }
            }
            while hi < cap {
                let s = &self.slots[hi as usize];
                if s.st != St::Data || !matches!(s.boundary, Boundary::Middle | Boundary::Last) {
                    break;
                }
                hi += 1;
                if s.boundary == Boundary::Last {
                    break;
                }
            }
            for off in lo..hi {
                self.resolve(off as usize);
            }
            self.advance();
        }
        /// Whole packets of the contiguous prefix (a partly read one from its offset) while they
        /// add up to at most `max` bytes, at least one.
        pub fn take_stream(&mut self, max: usize) -> Vec<Vec<u8>> {
            let mut out = Vec::new();
            let mut taken = 0;
            for off in 0..self.contig() {
                let s = &mut self.slots[off];
                if s.st != St::Data {
                    continue;
                }
                let n = s.data.len() - s.read_off;
                if n == 0 {
                    self.resolve(off);
                    continue;
                }
                if taken > 0 && taken + n > max {
                    break;
                }
                out.push(s.data[s.read_off..].to_vec());
                taken += n;
                s.read_off = s.data.len();
                self.resolve(off);
                if taken >= max {
                    break;
                }
            }
            self.advance();
            out
        }

        pub fn read_stream(&mut self, n: usize) -> Vec<u8> {
            let mut out = Vec::new();
            let contig = self.contig();
            for off in 0..contig {
                if out.len() == n {
                    break;
                }
                let s = &mut self.slots[off];
                if s.st != St::Data {
                    continue;
                }
                let k = (s.data.len() - s.read_off).min(n - out.len());
                out.extend_from_slice(&s.data[s.read_off..s.read_off + k]);
                s.read_off += k;
                if s.read_off < s.data.len() {
                    break;
                }
                self.resolve(off);
            }
            self.advance();
            out
        }
        /// The message starting (First or Solo) at `q`.
        fn walk(&self, q: usize) -> Walk {
            let m = self.slots[q].msg;
            let mut j = q;
            loop {
                if ends(self.slots[j].boundary) {
                    return Walk::Complete(j);
                }
                j += 1;
                if j >= self.cap() {
                    return if q == 0 { Walk::Broken(j - 1) } else { Walk::Waiting };
                }
                let s = &self.slots[j];
                match s.st {
                    St::Empty => return Walk::Waiting,
                    St::Data if s.msg == m && !starts(s.boundary) => {}
                    _ => return Walk::Broken(j - 1),
                }
            }
        }
        /// Discard what can never be read at the front.
        fn cleanup(&mut self) {
            loop {
                self.advance();
                let s = &self.slots[0];
                if s.st != St::Data {
                    return;
                }
                if !starts(s.boundary) {
                    self.resolve(0); // orphan
                    continue;
                }
                match self.walk(0) {
                    Walk::Complete(_) | Walk::Waiting => return,
                    Walk::Broken(e) => (0..=e).for_each(|off| self.resolve(off)),
                }
            }
        }
        fn find(&self) -> Option<(usize, usize)> {
            (0..self.cap()).find_map(|q| {
                let s = &self.slots[q];
                if s.st != St::Data || !starts(s.boundary) || (s.in_order && q > 0) {
                    return None;
                }
                match self.walk(q) {
                    Walk::Complete(e) => Some((q, e)),
                    _ => None,
                }
            })
        }
        fn len(&self, (q, e): (usize, usize)) -> usize {
            (q..=e).map(|off| self.slots[off].data.len()).sum()
        }
        pub fn next_message_len(&self) -> Option<usize> {
            if self.cap() == 0 {
                return None;
            }
            let mut c = self.clone();
            c.cleanup();
            c.find().map(|m| c.len(m))
        }
        /// `None`: nothing ready; `Some(Err(len))`: too small.
        pub fn read_message(&mut self, cap: usize) -> Option<Result<Vec<u8>, usize>> {
            if self.cap() == 0 {
                return None;
            }
            self.cleanup();
            let (q, e) = self.find()?;
            let len = self.len((q, e));
            if len > cap {
                return Some(Err(len));
            }
            let mut out = Vec::new();
            for off in q..=e {
                out.extend_from_slice(&self.slots[off].data);
                self.resolve(off);
            }
            self.advance();
            Some(Ok(out))
        }
    }
}

/// Random packets (sequence numbers mostly near the read position, some anywhere within 2^29),
/// drop requests, stream and message reads, on the real buffer and on the naive model:
/// identical answers after every step, and nothing panics.
#[test]
fn recv_buffer_matches_naive_model_on_hostile_input() {
    let mut reads = [0u64; 4];
    for seed in 0..400 {
        let mut rng = Rng::new(seed);
        let cap = rng.below(24) as usize;
        let ps = rng.below(6) as usize;
        let isn = SeqNo::new(0x7FFF_FFF0 - rng.below(32) as u32);
        let mut b = RecvBuffer::new(cap, ps, isn);
        let mut m = naive::Recv::new(cap, ps);
        let msgs = 1 + rng.below(4) as u32;
        // The driver's reusable landing buffer for inserts without copying.
        let mut landing = RxDatagram::empty();
        for step in 0..2000 {
            let ctx = format!("seed {seed} step {step} cap {cap} ps {ps}");
            let off: i64 = if rng.chance(30) {
                rng.below(1 << 29) as i64 - (1 << 28)
            } else {
                rng.below(3 * cap as u64 + 4) as i64 - cap as i64
            };
            let seq = b.read_seq().add(off as i32);
            match rng.below(12) {
                0..=5 => {
                    let h = DataHeader {
                        seq,
                        boundary: BOUNDARIES[rng.below(4) as usize],
                        in_order: rng.chance(500),
                        msg: MsgNo::new(1 + rng.below(u64::from(msgs)) as u32),
                        timestamp: 0,
                        dst: SocketId(0),
                    };
                    let payload = rng.some_bytes(8);
                    let outcome = if rng.chance(500) {
                        // Receive into whatever buffer the last swap handed back.
                        let len = DATA_HEADER_LEN + payload.len();
                        if landing.capacity() < len {
                            landing = RxDatagram::with_capacity(DATA_HEADER_LEN + 8);
                        }
                        landing.storage_mut()[DATA_HEADER_LEN..len].copy_from_slice(&payload);
                        landing.set_len(len);
                        let before = landing.clone();
                        let outcome = b.insert_datagram(&h, &mut landing);
                        if outcome == InsertOutcome::Stored {
                            assert!(landing.is_empty(), "swapped datagram comes back empty: {ctx}");
                        } else {
                            assert_eq!(landing, before, "a datagram not stored is left alone: {ctx}");
                        }
                        outcome
                    } else {
                        b.insert(&h, &payload)
                    };
                    let got = match outcome {
                        InsertOutcome::Stored => 0,
                        InsertOutcome::Duplicate => 1,
                        InsertOutcome::BeyondCapacity => 2,
                    };
                    let want = m.insert(off, h.msg.value(), h.boundary, h.in_order, &payload);
                    assert_eq!(got, want, "insert {h:?}: {ctx}");
                }
                6 => {
                    let len = rng.below(2 * cap as u64 + 2) as i64 - 1;
                    b.drop_range(seq, seq.add(len as i32));
                    if len > 0 {
                        m.drop_range(off, off + len);
                    }
                }
                7 if rng.chance(500) => {
                    // Lent instead of copied: the same bytes, packet by packet; half of the
                    // buffers come back as spares, the rest are dropped.
                    let n = rng.below(20) as usize;
                    let mut chunks = Vec::new();
                    let got = b.take_stream(n, &mut chunks);
                    let want = m.take_stream(n);
                    let lent: Vec<Vec<u8>> = chunks.iter().map(|c| c.bytes().to_vec()).collect();
                    assert_eq!(lent, want, "take_stream: {ctx}");
                    assert_eq!(got, want.iter().map(Vec::len).sum::<usize>(), "take_stream: {ctx}");
                    for c in chunks {
                        if rng.chance(500) {
                            b.recycle(c);
                        }
                    }
                    reads[3] += u64::from(got > 0);
                }
                7 | 8 => {
                    let n = rng.below(20) as usize;
                    let mut out = vec![0u8; n];
                    let got = b.read_stream(&mut out);
                    assert_eq!(&out[..got], &m.read_stream(n)[..], "read_stream: {ctx}");
                    reads[0] += u64::from(got > 0);
                }
                _ => {
                    assert_eq!(b.next_message_len(), m.next_message_len(), "next len: {ctx}");
                    let n = rng.below(16) as usize;
                    let mut out = vec![0u8; n];
                    match (b.read_message(&mut out), m.read_message(n)) {
                        (None, None) => {}
                        (Some(Ok(len)), Some(Ok(want))) => {
                            assert_eq!(&out[..len], &want[..], "read_message: {ctx}");
                            reads[1] += 1;
                        }
                        (Some(Err(RecvMsgError::BufferTooSmall { len, cap: c })), Some(Err(want))) => {
                            assert_eq!((len, c), (want, n), "too small: {ctx}");
                            reads[2] += 1;
                        }
                        (got, want) => panic!("read_message {got:?} vs {want:?}: {ctx}"),
                    }
                }
            }
            assert_eq!(b.read_seq(), isn.add(m.base as i32), "read_seq: {ctx}");
            assert_eq!(b.contiguous_end(), b.read_seq().add(m.contig() as i32), "{ctx}");
            assert_eq!(b.free_packets(), cap - m.contig(), "free: {ctx}");
            assert_eq!(b.readable_bytes(), m.readable(), "readable: {ctx}");
        }
    }
    assert!(reads.iter().all(|&r| r > 1000), "{reads:?}");
}

/// Random writes, sends, lookups and acknowledgements, including numbers far away (within
/// 2^29): nothing panics and the accounting is consistent.
#[test]
fn send_buffer_survives_hostile_input() {
    for seed in 0..300 {
        let mut rng = Rng::new(seed);
        let cap = rng.below(30) as usize;
        let ps = rng.below(9) as usize;
        let isn = SeqNo::new(0x7FFF_FFF0 - rng.below(32) as u32);
        let mut b = SendBuffer::new(cap, ps, isn);
        let mut t = 0u64;
        for _ in 0..3000 {
            t += rng.below(5);
            let now = Instant::from_micros(t * 1000);
            let near = |rng: &mut Rng, base: SeqNo| -> SeqNo {
                if rng.chance(50) {
                    base.add(rng.below(1 << 29) as i32 - (1 << 28))
                } else {
                    base.add(rng.below(3 * cap as u64 + 4) as i32 - cap as i32)
                }
            };
            match rng.below(8) {
                0 => {
                    let data = rng.some_bytes(3 * ps as u64 + 3);
                    let free = b.free_bytes();
                    let n = b.write_stream(&data);
                    assert_eq!(n, data.len().min(free));
                }
                1 => {
                    let data = rng.some_bytes(3 * ps as u64 + 3);
                    let ttl = rng.chance(500).then(|| Duration::from_millis(rng.below(20)));
                    let _ = b.write_message(&data, ttl, rng.chance(500), now);
                }
                2 | 3 => {
                    let next = b.next_seq();
                    if let Some((seq, p)) = b.take_new(now) {
                        assert_eq!(seq, next);
                        assert!(p.payload.len() <= ps);
                    }
                }
                4 | 5 => {
                    let seq = near(&mut rng, b.head_seq());
                    let d = seq.diff(b.head_seq());
                    match b.lookup(seq, now) {
                        Lookup::Acknowledged => assert!(d < 0),
                        Lookup::NotSent => assert!(d >= b.unacked_packets() as i32),
                        Lookup::Packet(_) => {}
                        Lookup::Expired { first, end_exclusive, .. } => {
                            assert!(!seq.is_before(first) && seq.is_before(end_exclusive));
                        }
                    }
                }
                _ => {
                    let seq = near(&mut rng, b.head_seq());
                    let committed = b.committed_end().diff(b.head_seq()) as usize;
                    let n = b.acknowledge(seq);
                    assert!(n <= committed);
                    let d = seq.diff(b.head_seq().add(-(n as i32)));
                    assert_eq!(n, (d.max(0) as usize).min(committed));
                }
            }
            assert_eq!(b.free_packets() + b.unacked_packets() + b.unsent_packets(), cap);
            assert_eq!(b.next_seq(), b.head_seq().add(b.unacked_packets() as i32));
            let extra = b.committed_end().diff(b.next_seq());
            assert!(extra >= 0 && extra as usize <= b.unsent_packets());
        }
    }
}
