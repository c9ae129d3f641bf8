//! `TxBatch`: the datagrams the I/O thread is sending in a round, grouped into runs for UDP GSO.
//!
//! A run is what one GSO `sendmsg` carries: datagrams to one peer of equal size, the last
//! possibly shorter, at most [`GSO_MAX_SEGMENTS`] of them and [`GSO_MAX_BYTES`] in all.
//! [`TxBatch::add`] takes datagrams in sending order and says when a run is complete; the caller
//! sends it and calls [`TxBatch::sent`]. Each datagram is a header in the caller's header buffer
//! (`used` bytes of it are reserved by the datagrams in the batch) and, for data, a range of the
//! send storage of the connection being served ([`Payload::Storage`]), or of the batch's own
//! staging buffer ([`Payload::Staged`]).
//!
//! A run may carry datagrams of several connections to one peer (many connections from one
//! client port to one server port): when the I/O thread moves on to the next connection with a
//! run not yet full, [`TxBatch::stage`] copies that run's payloads out of the connection's
//! storage (whose lock is about to be released), and the next connection's datagrams join the
//! run. Invariant: only the connection being served has `Storage` entries; every other entry is
//! `Staged` (or control, with no payload), and its bytes stay in place until the batch empties.
//!
//! Lives in the I/O thread only and is reused across rounds: no allocation per packet.

use std::ops::Range;

/// Largest GSO send: 64 KB of UDP payload (the kernel also caps segments at 64).
pub(crate) const GSO_MAX_BYTES: usize = 65_000;
/// Most datagrams in one GSO send.
pub(crate) const GSO_MAX_SEGMENTS: usize = 64;

/// One datagram of a batch: its header's bytes in the header buffer and, for data, where its
/// payload lies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub header: Range<usize>,
    pub payload: Option<Payload>,
}

/// Where a datagram's payload lies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Payload {
    /// A range of the send storage of the connection being served.
    Storage(Range<usize>),
    /// A range of the batch's staging buffer ([`TxBatch::staged`]).
    Staged(Range<usize>),
}

impl Payload {
    /// Payload size.
    pub fn len(&self) -> usize {
        match self {
            Payload::Storage(r) | Payload::Staged(r) => r.len(),
        }
    }
}

impl Entry {
    /// Datagram size.
    pub fn size(&self) -> usize {
        self.header.len() + self.payload.as_ref().map_or(0, Payload::len)
    }
}

/// What the caller must send after [`TxBatch::add`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flush {
    /// Nothing yet: the run may grow.
    Nothing,
    /// Every entry: the one just added is shorter than the others and ends the run.
    All,
    /// Every entry but the one just added: it cannot join the run (longer, or the run is full)
    /// and starts the next one.
    AllButLast,
}

/// Datagrams gathered for one peer, as ranges: the buffers they lie in are borrowed only for
/// each send (as `IoSlice`s built then), never kept across calls.
#[derive(Debug, Default)]
pub(crate) struct TxBatch {
    pub entries: Vec<Entry>,
    /// The peer the entries go to (`None`: no entry yet).
    pub dest: Option<socket2::SockAddr>,
    /// Payloads copied out of connections already served ([`Payload::Staged`] ranges).
    pub staged: Vec<u8>,
    /// Bytes of the header buffer in use.
    pub used: usize,
    /// Datagram size of the run (the first entry's).
    pub segment: usize,
    /// Bytes in the run.
    pub bytes: usize,
}

impl TxBatch {
    /// Forget everything.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.used = 0;
        self.segment = 0;
        self.bytes = 0;
        self.staged.clear();
        self.dest = None;
    }

    /// Before the connection being served is released: copy the payloads its entries take from
    /// its send `storage` into the staging buffer, so the run can go on with the next
    /// connection's datagrams.
    pub fn stage(&mut self, storage: &[u8]) {
        for e in &mut self.entries {
            if let Some(Payload::Storage(r)) = &e.payload {
                let at = self.staged.len();
                self.staged.extend_from_slice(&storage[r.clone()]);
                e.payload = Some(Payload::Staged(at..self.staged.len()));
            }
        }
    }

    /// Add the next datagram to send; says which entries now form a complete run. The entry
    /// always joins the batch, so its header stays reserved until it is sent.
    pub fn add(&mut self, e: Entry) -> Flush {
        let size = e.size();
        let run = self.entries.len();
        let fits = self.bytes + size <= GSO_MAX_BYTES && run < GSO_MAX_SEGMENTS;
        let flush = if run == 0 || (size == self.segment && fits) {
            Flush::Nothing
        } else if size < self.segment && fits {
            Flush::All
        } else {
            Flush::AllButLast
        };
        if run == 0 {
            self.segment = size;
        }
        self.bytes += size;
        self.entries.push(e);
        flush
    }

    /// The first `n` entries were sent (or lost): drop them; the rest start the next run.
    pub fn sent(&mut self, n: usize) {
        self.entries.drain(..n);
        self.bytes = self.entries.iter().map(Entry::size).sum();
        self.segment = self.entries.first().map_or(0, Entry::size);
        if self.entries.is_empty() {
            self.used = 0;
            self.staged.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A data datagram: a 16-byte header at `at` in the header buffer and `payload` bytes.
    fn data(at: usize, payload: usize) -> Entry {
        Entry { header: at..at + 16, payload: Some(Payload::Storage(1000..1000 + payload)) }
    }

    /// A control datagram of `len` bytes at `at`.
    fn control(at: usize, len: usize) -> Entry {
        Entry { header: at..at + len, payload: None }
    }

    /// Add `e`, reserving its header as `transmit` does.
    fn add(b: &mut TxBatch, e: Entry) -> Flush {
        b.used = e.header.end;
        b.add(e)
    }

    #[test]
    fn equal_sizes_form_one_run_and_a_shorter_one_ends_it() {
        let mut b = TxBatch::default();
        for i in 0..5 {
            assert_eq!(add(&mut b, data(16 * i, 1456)), Flush::Nothing, "datagram {i}");
        }
        assert_eq!((b.entries.len(), b.segment, b.bytes), (5, 1472, 5 * 1472));
        assert_eq!(add(&mut b, data(80, 100)), Flush::All);
        assert_eq!(b.entries.len(), 6);
        b.sent(6);
        assert!(b.entries.is_empty());
        assert_eq!((b.used, b.segment, b.bytes), (0, 0, 0));
    }

    #[test]
    fn a_longer_datagram_starts_the_next_run() {
        let mut b = TxBatch::default();
        assert_eq!(add(&mut b, control(0, 44)), Flush::Nothing); // an ACK alone
        assert_eq!(add(&mut b, data(44, 1456)), Flush::AllButLast);
        b.sent(1);
        // The data packet is the next run's first; its header stays reserved.
        assert_eq!(b.entries, vec![data(44, 1456)]);
        assert_eq!((b.segment, b.bytes, b.used), (1472, 1472, 60));
        assert_eq!(add(&mut b, data(60, 1456)), Flush::Nothing);
        assert_eq!(b.entries.len(), 2);
    }

    #[test]
    fn a_run_holds_at_most_64_datagrams() {
        let mut b = TxBatch::default();
        for i in 0..GSO_MAX_SEGMENTS {
            assert_eq!(add(&mut b, data(16 * i, 84)), Flush::Nothing, "datagram {i}");
        }
        assert_eq!(add(&mut b, data(16 * 64, 84)), Flush::AllButLast);
        // Full: even a shorter datagram cannot end this run.
        let mut c = TxBatch::default();
        for i in 0..GSO_MAX_SEGMENTS {
            c.add(data(16 * i, 84));
        }
        assert_eq!(c.add(data(16 * 64, 10)), Flush::AllButLast);
        c.sent(GSO_MAX_SEGMENTS);
        assert_eq!((c.entries.len(), c.segment, c.bytes), (1, 26, 26));
    }

    #[test]
    fn a_run_holds_at_most_64_kb() {
        let mut b = TxBatch::default();
        let fit = GSO_MAX_BYTES / 1472; // 44 full-size datagrams
        for i in 0..fit {
            assert_eq!(add(&mut b, data(16 * i, 1456)), Flush::Nothing, "datagram {i}");
        }
        assert!(b.bytes <= GSO_MAX_BYTES);
        assert_eq!(add(&mut b, data(16 * fit, 1456)), Flush::AllButLast);
        // A shorter datagram that would not fit either starts the next run.
        let mut c = TxBatch::default();
        for i in 0..fit {
            c.add(data(16 * i, 1456));
        }
        let room = GSO_MAX_BYTES - c.bytes;
        assert_eq!(c.add(data(16 * fit, room + 1 - 16)), Flush::AllButLast);
        let mut d = TxBatch::default();
        for i in 0..fit {
            d.add(data(16 * i, 1456));
        }
        assert_eq!(d.add(data(16 * fit, room - 16)), Flush::All);
        assert_eq!(d.bytes, GSO_MAX_BYTES);
    }

    #[test]
    fn the_first_datagram_always_starts_a_run() {
        let mut b = TxBatch::default();
        assert_eq!(add(&mut b, data(0, GSO_MAX_BYTES)), Flush::Nothing);
        assert_eq!(b.segment, GSO_MAX_BYTES + 16);
        assert_eq!(add(&mut b, data(16, 10)), Flush::AllButLast);
    }

    #[test]
    fn sent_keeps_the_rest_and_clear_forgets_all() {
        let mut b = TxBatch::default();
        add(&mut b, data(0, 1456));
        add(&mut b, data(16, 1456));
        add(&mut b, data(32, 2000));
        b.sent(2);
        assert_eq!(b.entries, vec![data(32, 2000)]);
        assert_eq!((b.segment, b.bytes, b.used), (2016, 2016, 48));
        b.clear();
        assert!(b.entries.is_empty());
        assert_eq!((b.used, b.segment, b.bytes), (0, 0, 0));
    }

    #[test]
    fn staging_copies_the_served_connections_payloads_and_keeps_the_run() {
        let mut b = TxBatch::default();
        let storage: Vec<u8> = (0..4000u32).map(|i| i as u8).collect();
        add(&mut b, data(0, 1456));
        add(&mut b, control(16, 44));
        b.stage(&storage);
        assert_eq!(b.entries[0].payload, Some(Payload::Staged(0..1456)));
        assert_eq!(b.staged, storage[1000..2456]);
        assert_eq!(b.entries[1].payload, None);
        // Sizes and the run are unchanged; a staged entry is not copied again.
        assert_eq!((b.entries.len(), b.bytes), (2, 1472 + 44));
        b.stage(&storage);
        assert_eq!(b.staged.len(), 1456);
        b.sent(2);
        assert!(b.staged.is_empty());
    }
}
