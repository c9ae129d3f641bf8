//! The receive buffer (thesis §2.3.2.3; UDT4 `CRcvBuffer`): placement by sequence offset,
//! stream reads, whole-message reads, free-space accounting for the flow window.
//!
//! Slot `i` from the read position holds sequence `base + i`. A slot is empty, holds a packet,
//! or is resolved without data (its message was dropped, it was already delivered as part of an
//! out-of-order message, or it was discarded as unusable, below). `base` advances past the
//! contiguous run of consumed/resolved slots.
//!
//! Stream reads copy bytes from the contiguous prefix, consuming packets (a partly read packet
//! keeps an offset). Message reads return one whole message: the oldest complete one whose
//! in-order flag is clear anywhere in the buffer, or, in sequence order, a complete in-order
//! message once everything before it is resolved.
//!
//! Storage: a ring of one metadata record and one [`RxDatagram`] per slot, and a stack of spare
//! datagram buffers, committed as packets need them: the ring covers the offsets from the read
//! position that have held a packet (or a resolved number) so far, at most the capacity, and
//! grows by doubling when a packet lands beyond it; every offset past the ring is empty. An
//! idle connection holds a ring of a few dozen records, a busy one about its flow window. A slot holding a packet owns the whole
//! datagram, its payload after the [`DATA_HEADER_LEN`]-byte header; any other slot holds an empty
//! datagram without storage. When a packet is consumed or discarded its buffer goes onto the
//! spare stack. [`RecvBuffer::insert_datagram`] stores an arriving datagram by taking it and
//! handing the caller the most recently freed spare in exchange (still in the CPU's caches, so
//! the next receive into it is cheap), or an empty one when there is none: no copy, no
//! allocation. [`RecvBuffer::insert`] copies a payload into a spare (allocating only when there
//! is none). Reads copy payloads out to the caller: between a driver that receives into
//! datagrams and the application, each payload byte is copied once; or
//! [`RecvBuffer::take_stream`] lends the datagrams themselves ([`RecvChunk`]), and
//! [`RecvBuffer::recycle`] takes their buffers back as spares, so that the kernel's copy is the
//! only one. Every buffer the buffer holds is in a Data slot or on the spare stack, which holds
//! at most `capacity` of them (a buffer freed beyond that is dropped).
//!
//! Message assembly: each stored packet learns the sequence number of its message's first packet
//! once every packet from that first one up to it is present (a *chain*, propagated forwards
//! when a missing packet arrives, so each slot is linked once). The first packet's slot records
//! how far its chain reaches; a message is complete when the chain reaches a Last (or Solo)
//! packet. Completed out-of-order messages are counted, and a hint remembers where the search
//! for the oldest one may start, so reads do not rescan the whole buffer. At the read position,
//! packets that can never become part of a whole message (a chain interrupted by a packet that
//! does not continue it, or by a dropped slot; a Middle or Last packet whose First was already
//! consumed) are discarded by `read_message`, as UDT4 `CRcvBuffer::scanMsg` skips bad messages.
//! `drop_range` discards, beyond the range itself, the packets of any message that overlaps it,
//! so a drop request naming only the tail of a message (as UDT4 sends it: from the lost packet)
//! leaves no orphans.

use std::fmt;

use super::{RecvChunk, RxDatagram};
use crate::packet::{Boundary, DataHeader, DATA_HEADER_LEN};
use crate::seq::{MsgNo, SeqNo};

/// What happened to an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsertOutcome {
    /// Stored.
    Stored,
    /// The slot already held it (or it was already read or dropped).
    Duplicate,
    /// Beyond the buffer's capacity from the read position: dropped.
    BeyondCapacity,
}

/// Why a message read failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecvMsgError {
    /// The next message is longer than the caller's buffer; nothing was consumed.
    #[error("message of {len} bytes does not fit a {cap}-byte buffer")]
    BufferTooSmall {
        /// Message length.
        len: usize,
        /// Caller's buffer length.
        cap: usize,
    },
}

/// Largest number of slots a buffer holds; larger requests are clamped (offsets must stay far
/// inside the 2^30 sequence comparison window).
pub const MAX_CAPACITY_PKTS: usize = 1 << 28;

/// What a slot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Nothing arrived yet.
    Empty,
    /// A packet, not yet (fully) consumed.
    Data,
    /// Consumed, dropped or discarded: counts as arrived, holds nothing.
    Resolved,
}

/// Metadata of one slot.
#[derive(Clone, Copy, Debug)]
struct Slot {
    state: State,
    /// Payload bytes.
    len: usize,
    /// Bytes already consumed by stream reads.
    read_off: usize,
    msg: MsgNo,
    boundary: Boundary,
    in_order: bool,
    /// The first packet of this packet's message, once every packet from it to here is present.
    chain_first: Option<SeqNo>,
    /// On a first packet (First or Solo): the furthest packet its chain reaches.
    chain_last: SeqNo,
}

impl Slot {
    const EMPTY: Slot = Slot {
        state: State::Empty,
        len: 0,
        read_off: 0,
        msg: MsgNo::FIRST,
        boundary: Boundary::Solo,
        in_order: false,
        chain_first: None,
        chain_last: SeqNo::new(0),
    };

    const RESOLVED: Slot = Slot { state: State::Resolved, ..Slot::EMPTY };

    fn is_data(&self) -> bool {
        self.state == State::Data
    }

    fn starts_message(&self) -> bool {
        matches!(self.boundary, Boundary::First | Boundary::Solo)
    }

    fn ends_message(&self) -> bool {
        matches!(self.boundary, Boundary::Last | Boundary::Solo)
    }
}

/// How the message starting with the Data slot at some offset stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Front {
    /// Complete, its last packet at this offset.
    Complete(usize),
    /// Incomplete: a later packet is still missing.
    Waiting,
    /// Can never be completed: discard up to and including this offset.
    Garbage(usize),
}

/// Smallest ring the buffer commits once a packet arrives.
const MIN_RING: usize = 32;

/// The receive buffer.
pub struct RecvBuffer {
    /// Packets: physical slot `i`'s datagram while it holds Data (its payload at
    /// `DATA_HEADER_LEN..DATA_HEADER_LEN + len`), otherwise empty without storage.
    packets: Vec<RxDatagram>,
    /// Buffers of consumed packets, the most recently freed on top.
    spare: Vec<RxDatagram>,
    /// Ring of slots; offset 0 (sequence `base`) is at physical index `start`. Offsets from
    /// `slots.len()` up to `cap` are empty and have no record yet.
    slots: Vec<Slot>,
    /// Most slots the buffer may hold: the window of sequence numbers it accepts.
    cap: usize,
    payload_size: usize,
    /// Sequence number of the read position.
    base: SeqNo,
    /// Physical index of the read position.
    start: usize,
    /// Slots from the read position that are not empty, contiguously.
    contig: usize,
    /// Unconsumed payload bytes in the first `contig` slots.
    contig_bytes: usize,
    /// One past the furthest non-empty slot's sequence number (never before `base` in use).
    max_end: SeqNo,
    /// Complete, unconsumed messages whose in-order flag is clear.
    ooo_complete: usize,
    /// No complete out-of-order message starts between the front message and this number.
    ooo_hint: SeqNo,
}

impl fmt::Debug for RecvBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvBuffer")
            .field("capacity", &self.cap)
            .field("committed", &self.slots.len())
            .field("payload_size", &self.payload_size)
            .field("base", &self.base)
            .field("contig", &self.contig)
            .field("contig_bytes", &self.contig_bytes)
            .field("max_end", &self.max_end)
            .field("ooo_complete", &self.ooo_complete)
            .finish()
    }
}

impl RecvBuffer {
    /// A buffer of `capacity_pkts` slots of `payload_size` bytes; `first_seq` is the first
    /// sequence number the peer will send. The capacity is clamped to [`MAX_CAPACITY_PKTS`]
    /// (and so that the byte size fits `isize`). Nothing is allocated until packets arrive.
    pub fn new(capacity_pkts: usize, payload_size: usize, first_seq: SeqNo) -> Self {
        let max_by_bytes = (isize::MAX as usize).checked_div(payload_size).unwrap_or(usize::MAX);
        let cap = capacity_pkts.min(MAX_CAPACITY_PKTS).min(max_by_bytes);
        RecvBuffer {
            packets: Vec::new(),
            spare: Vec::new(),
            slots: Vec::new(),
            cap,
            payload_size,
            base: first_seq,
            start: 0,
            contig: 0,
            contig_bytes: 0,
            max_end: first_seq,
            ooo_complete: 0,
            ooo_hint: first_seq,
        }
    }

    // ---- offsets -------------------------------------------------------------------------

    /// Make the ring cover offsets `0..need` (`need` at most the capacity), doubling it.
    fn grow_ring(&mut self, need: usize) {
        let len = self.slots.len();
        if need <= len {
            return;
        }
        let new_len = need.max(2 * len).max(MIN_RING).min(self.cap);
        self.slots.rotate_left(self.start);
        self.packets.rotate_left(self.start);
        self.start = 0;
        self.slots.resize(new_len, Slot::EMPTY);
        self.packets.resize_with(new_len, RxDatagram::empty);
    }

    /// Physical index of offset `off` (< the ring's length) from the read position.
    fn phys(&self, off: usize) -> usize {
        let i = self.start + off;
        if i >= self.slots.len() {
            i - self.slots.len()
        } else {
            i
        }
    }

    /// The slot at `off` (< capacity); past the ring, an empty one.
    fn slot(&self, off: usize) -> &Slot {
        if off >= self.slots.len() {
            return &Slot::EMPTY;
        }
        &self.slots[self.phys(off)]
    }

    fn slot_mut(&mut self, off: usize) -> &mut Slot {
        let i = self.phys(off);
        &mut self.slots[i]
    }

    fn seq_at(&self, off: usize) -> SeqNo {
        self.base.add(off as i32)
    }

    /// Offset of `seq` from the read position, if inside the buffer's window.
    fn off_of(&self, seq: SeqNo) -> Option<usize> {
        let d = seq.diff(self.base);
        (d >= 0 && (d as usize) < self.cap).then_some(d as usize)
    }

    /// Offset of `seq` clamped to `0..=capacity`.
    fn clamped_off(&self, seq: SeqNo) -> usize {
        (seq.diff(self.base).max(0) as usize).min(self.cap)
    }

    // ---- bookkeeping ---------------------------------------------------------------------

    /// Extend `contig` over present slots.
    fn extend_contig(&mut self) {
        while self.contig < self.slots.len() {
            let s = *self.slot(self.contig);
            match s.state {
                State::Empty => break,
                State::Data => self.contig_bytes += s.len - s.read_off,
                State::Resolved => {}
            }
            self.contig += 1;
        }
    }

    /// Move the read position past the resolved slots at the front.
    fn advance_base(&mut self) {
        while self.contig > 0 && self.slots[self.start].state == State::Resolved {
            self.slots[self.start] = Slot::EMPTY;
            self.start += 1;
            if self.start == self.slots.len() {
                self.start = 0;
            }
            self.base = self.base.next();
            self.contig -= 1;
        }
    }

    /// If the Data slot at `off` starts a message whose chain is complete, the offset of its
    /// last packet.
    fn complete_end(&self, off: usize) -> Option<usize> {
        let s = self.slot(off);
        let me = self.seq_at(off);
        if !s.is_data() || s.chain_first != Some(me) {
            return None;
        }
        let c = self.off_of(s.chain_last)?;
        let last = self.slot(c);
        (c >= off && last.is_data() && last.chain_first == Some(me) && last.ends_message()).then_some(c)
    }

    /// Mark the slot at `off` resolved, keeping the counters right.
    fn resolve(&mut self, off: usize) {
        let s = *self.slot(off);
        match s.state {
            State::Resolved => return,
            State::Data => {
                if !s.in_order && self.complete_end(off).is_some() {
                    self.ooo_complete = self.ooo_complete.saturating_sub(1);
                }
                if off < self.contig {
                    self.contig_bytes -= s.len - s.read_off;
                }
                let i = self.phys(off);
                let buf = std::mem::take(&mut self.packets[i]);
                if buf.capacity() > 0 && self.spare.len() < self.cap {
                    self.spare.push(buf);
                }
            }
            State::Empty => {
                let seq = self.seq_at(off);
                if !seq.is_before(self.max_end) {
                    self.max_end = seq.next();
                }
            }
        }
        *self.slot_mut(off) = Slot::RESOLVED;
    }

    /// Link the packet just stored at `off` into its message's chain and propagate the chain
    /// forwards over packets that were waiting for it.
    fn link(&mut self, off: usize) {
        let s = *self.slot(off);
        let first = if s.starts_message() {
            self.seq_at(off)
        } else {
            if off == 0 {
                return;
            }
            let p = self.slot(off - 1);
            let continues =
                p.is_data() && p.msg == s.msg && matches!(p.boundary, Boundary::First | Boundary::Middle);
            match p.chain_first {
                Some(f) if continues => f,
                _ => return,
            }
        };
        let Some(first_off) = self.off_of(first) else {
            return; // its first packet was consumed already: an orphan
        };
        let cap = self.slots.len();
        let mut cur = off;
        loop {
            let seq = self.seq_at(cur);
            let here = self.slot_mut(cur);
            here.chain_first = Some(first);
            let (msg, ends) = (here.msg, here.ends_message());
            let head = self.slot_mut(first_off);
            head.chain_last = seq;
            let in_order = head.in_order;
            if ends {
                if !in_order {
                    self.ooo_complete += 1;
                    if first.is_before(self.ooo_hint) {
                        self.ooo_hint = first;
                    }
                }
                return;
            }
            let next = cur + 1;
            if next >= cap {
                return;
            }
            let n = self.slot(next);
            let continues = n.is_data()
                && n.msg == msg
                && matches!(n.boundary, Boundary::Middle | Boundary::Last)
                && n.chain_first.is_none();
            if !continues {
                return;
            }
            cur = next;
        }
    }

    /// How the message starting at the Data slot at `p` stands, assuming everything before
    /// `p` is resolved or garbage (so the read position will move to `p`).
    fn classify_front(&self, p: usize) -> Front {
        let s = self.slot(p);
        if s.chain_first != Some(self.seq_at(p)) {
            return Front::Garbage(p); // a Middle or Last whose First is gone
        }
        if let Some(e) = self.complete_end(p) {
            return Front::Complete(e);
        }
        let Some(c) = self.off_of(s.chain_last).filter(|&c| c >= p) else {
            return Front::Garbage(p);
        };
        let cap = self.cap;
        if c + 1 - p >= cap {
            return Front::Garbage(c); // longer than the whole buffer
        }
        if c + 1 >= cap || self.slot(c + 1).state == State::Empty {
            Front::Waiting
        } else {
            Front::Garbage(c) // interrupted by a packet that does not continue it
        }
    }

    /// The oldest readable message without changing anything: `(first, last)` offsets, and
    /// whether it came from the out-of-order search. Garbage at the front is skipped.
    fn find_message(&self) -> Option<(usize, usize, bool)> {
        let mut p = 0;
        while p < self.contig {
            let s = self.slot(p);
            if s.state != State::Data {
                p += 1;
                continue;
            }
            match self.classify_front(p) {
                Front::Complete(e) => return Some((p, e, false)),
                Front::Waiting => break,
                Front::Garbage(e) => p = e + 1,
            }
        }
        self.find_out_of_order(p).map(|(a, b)| (a, b, true))
    }

    /// The oldest complete out-of-order message starting at or after `from`.
    fn find_out_of_order(&self, from: usize) -> Option<(usize, usize)> {
        if self.ooo_complete == 0 {
            return None;
        }
        let end = self.clamped_off(self.max_end);
        let mut q = from.max(self.clamped_off(self.ooo_hint));
        while q < end {
            let s = self.slot(q);
            if s.is_data() && s.chain_first == Some(self.seq_at(q)) {
                if let Some(e) = self.complete_end(q) {
                    if !s.in_order {
                        return Some((q, e));
                    }
                    q = e + 1;
                } else {
                    // Skip the chain known so far.
                    q = self.off_of(s.chain_last).map_or(q, |c| c.max(q)) + 1;
                }
            } else {
                q += 1;
            }
        }
        None
    }

    fn message_len(&self, first: usize, last: usize) -> usize {
        (first..=last).map(|off| self.slot(off).len).sum()
    }

    /// The payload of the Data slot at physical index `i`, from byte `from`.
    fn payload_from(&self, i: usize, from: usize) -> &[u8] {
        &self.packets[i].bytes()[DATA_HEADER_LEN + from..DATA_HEADER_LEN + self.slots[i].len]
    }

    /// The physical slot `header` goes to, or why it is not stored.
    fn claim(&mut self, header: &DataHeader) -> Result<usize, InsertOutcome> {
        let d = header.seq.diff(self.base);
        if d < 0 {
            return Err(InsertOutcome::Duplicate);
        }
        let off = d as usize;
        if off >= self.cap {
            return Err(InsertOutcome::BeyondCapacity);
        }
        self.grow_ring(off + 1);
        let i = self.phys(off);
        if self.slots[i].state != State::Empty {
            return Err(InsertOutcome::Duplicate);
        }
        Ok(i)
    }

    /// Record the packet whose `len` payload bytes are now in physical slot `i`.
    fn store(&mut self, i: usize, header: &DataHeader, len: usize) -> InsertOutcome {
        self.slots[i] = Slot {
            state: State::Data,
            len,
            read_off: 0,
            msg: header.msg,
            boundary: header.boundary,
            in_order: header.in_order,
            chain_first: None,
            chain_last: header.seq,
        };
        if !header.seq.is_before(self.max_end) {
            self.max_end = header.seq.next();
        }
        let off = header.seq.diff(self.base) as usize;
        self.link(off);
        if off == self.contig {
            self.extend_contig();
        }
        InsertOutcome::Stored
    }

    // ---- public API ----------------------------------------------------------------------

    /// Store an arriving packet by copying its payload (payload longer than the slot size is
    /// truncated to it: the connection drops such packets before calling).
    pub fn insert(&mut self, header: &DataHeader, payload: &[u8]) -> InsertOutcome {
        let i = match self.claim(header) {
            Ok(i) => i,
            Err(outcome) => return outcome,
        };
        let n = payload.len().min(self.payload_size);
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.write_at(DATA_HEADER_LEN, &payload[..n], DATA_HEADER_LEN + self.payload_size);
        self.packets[i] = buf;
        self.store(i, header, n)
    }

    /// Store an arriving packet without copying it: `datagram` is the whole packet (`header`
    /// parsed from it, the payload after [`DATA_HEADER_LEN`] bytes, truncated to the slot size
    /// like [`insert`](Self::insert)). When stored, the buffer is kept and `datagram` is
    /// replaced by the most recently freed spare buffer, empty, or by an empty datagram without
    /// storage when there is none; otherwise `datagram` is left as it was.
    pub fn insert_datagram(&mut self, header: &DataHeader, datagram: &mut RxDatagram) -> InsertOutcome {
        let i = match self.claim(header) {
            Ok(i) => i,
            Err(outcome) => return outcome,
        };
        let n = datagram.len().saturating_sub(DATA_HEADER_LEN).min(self.payload_size);
        let mut back = self.spare.pop().unwrap_or_default();
        back.set_len(0);
        self.packets[i] = std::mem::replace(datagram, back);
        self.store(i, header, n)
    }

    /// Mark `first..end_exclusive` resolved without data (message drop request); numbers
    /// outside the buffer's window are ignored. Stored packets of any message overlapping the
    /// range are discarded too, also those outside it.
    pub fn drop_range(&mut self, first: SeqNo, end_exclusive: SeqNo) {
        let cap = self.cap as i64;
        let len = end_exclusive.diff(first);
        if len <= 0 || cap == 0 {
            return;
        }
        let lo_d = i64::from(first.diff(self.base));
        let hi_d = lo_d + i64::from(len);
        let (mut lo, mut hi) = (lo_d.max(0), hi_d.min(cap));
        if lo >= hi {
            return;
        }
        // Whole messages: back over packets that continue into the range, forwards over
        // packets that continue out of it.
        while lo > 0 {
            let s = self.slot(lo as usize - 1);
            if !s.is_data() || !matches!(s.boundary, Boundary::First | Boundary::Middle) {
                break;
            }
            lo -= 1;
            if s.boundary == Boundary::First {
                break;
            }
        }
        while hi < cap {
            let s = self.slot(hi as usize);
            if !s.is_data() || !matches!(s.boundary, Boundary::Middle | Boundary::Last) {
                break;
            }
            hi += 1;
            if s.boundary == Boundary::Last {
                break;
            }
        }
        self.grow_ring(hi as usize);
        for off in lo as usize..hi as usize {
            self.resolve(off);
        }
        self.extend_contig();
        self.advance_base();
    }

    /// Copy contiguous stream bytes into `out`; returns bytes copied (0 if none ready).
    pub fn read_stream(&mut self, out: &mut [u8]) -> usize {
        let mut copied = 0;
        let mut off = 0;
        while off < self.contig && copied < out.len() {
            let i = self.phys(off);
            let s = self.slots[i];
            if s.is_data() {
                let n = (s.len - s.read_off).min(out.len() - copied);
                out[copied..copied + n].copy_from_slice(&self.payload_from(i, s.read_off)[..n]);
                copied += n;
                self.contig_bytes -= n;
                self.slots[i].read_off += n;
                if s.read_off + n < s.len {
                    break; // `out` is full
                }
                self.resolve(off);
            }
            off += 1;
        }
        self.advance_base();
        copied
    }

    /// Lend contiguous stream bytes without copying them: whole packets from the read
    /// position, each in the datagram it arrived in (a packet a stream read left partly read,
    /// from where that read stopped), appended to `out` while they add up to at most `max`
    /// bytes, and at least one packet when one is ready. Returns the bytes lent (0 if none
    /// ready). They count as read: the window opens as after [`read_stream`](Self::read_stream).
    pub fn take_stream(&mut self, max: usize, out: &mut Vec<RecvChunk>) -> usize {
        let mut taken = 0;
        let mut off = 0;
        while off < self.contig {
            let i = self.phys(off);
            let s = self.slots[i];
            if s.is_data() {
                let n = s.len - s.read_off;
                if n == 0 {
                    // An empty packet (a peer may send one): nothing to lend.
                    self.resolve(off);
                    off += 1;
                    continue;
                }
                if taken > 0 && taken + n > max {
                    break;
                }
                let datagram = std::mem::take(&mut self.packets[i]);
                let from = DATA_HEADER_LEN + s.read_off;
                out.push(RecvChunk::new(datagram, from..from + n));
                taken += n;
                self.contig_bytes -= n;
                self.slots[i].read_off = s.len;
                self.resolve(off);
                if taken >= max {
                    break;
                }
            }
            off += 1;
        }
        self.advance_base();
        taken
    }

    /// Take back the buffer of a chunk [`take_stream`](Self::take_stream) lent, as a spare for
    /// the next arriving packet (the most recently used on top); beyond one spare per slot of
    /// the capacity it is freed.
    pub fn recycle(&mut self, chunk: RecvChunk) {
        let buf = chunk.into_datagram();
        if buf.capacity() > 0 && self.spare.len() < self.cap {
            self.spare.push(buf);
        }
    }

    /// Bytes a stream read could return now.
    pub fn readable_bytes(&self) -> usize {
        self.contig_bytes
    }

    /// Copy one whole message into `out`; `None` when no message is ready.
    pub fn read_message(&mut self, out: &mut [u8]) -> Option<Result<usize, RecvMsgError>> {
        // Discard what can never be read at the front, as UDT4 scanMsg does.
        loop {
            self.advance_base();
            if self.contig == 0 {
                break;
            }
            match self.classify_front(0) {
                Front::Garbage(e) => {
                    for off in 0..=e {
                        self.resolve(off);
                    }
                }
                Front::Complete(_) | Front::Waiting => break,
            }
        }
        let Some((first, last, out_of_order)) = self.find_message() else {
            if self.ooo_complete > 0 {
                // Nothing complete before max_end: later completions lower the hint.
                self.ooo_hint = self.max_end;
            }
            return None;
        };
        let len = self.message_len(first, last);
        if len > out.len() {
            return Some(Err(RecvMsgError::BufferTooSmall { len, cap: out.len() }));
        }
        let mut at = 0;
        for off in first..=last {
            let i = self.phys(off);
            let n = self.slots[i].len;
            out[at..at + n].copy_from_slice(self.payload_from(i, 0));
            at += n;
            self.resolve(off);
        }
        if out_of_order {
            self.ooo_hint = self.seq_at(last + 1);
        }
        self.advance_base();
        Some(Ok(len))
    }

    /// Length of the message `read_message` would return next.
    pub fn next_message_len(&self) -> Option<usize> {
        self.find_message().map(|(first, last, _)| self.message_len(first, last))
    }

    /// The first sequence number not yet arrived or resolved counting from the read position.
    pub fn contiguous_end(&self) -> SeqNo {
        self.base.add(self.contig as i32)
    }

    /// Free slots for the flow window: capacity minus slots from the read position up to
    /// `contiguous_end` (the connection reports at least 2, like UDT4).
    pub fn free_packets(&self) -> usize {
        self.cap - self.contig
    }

    /// Slots the buffer may hold.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Slots committed so far (the ring's length).
    pub fn committed_packets(&self) -> usize {
        self.slots.len()
    }

    /// Payload bytes per slot.
    pub fn payload_size(&self) -> usize {
        self.payload_size
    }

    /// The read position: the oldest sequence number not yet consumed or resolved.
    pub fn read_seq(&self) -> SeqNo {
        self.base
    }
}

#[cfg(test)]
#[path = "recv_tests.rs"]
mod tests;
