//! Transmitting: the I/O thread sends what a connection has to send now, its datagrams
//! gathered into runs for UDP GSO ([`TxBatch`]), sealed first when the connection is secured.
//!
//! Sent data is copied once, by the kernel: it reads payloads straight from the connection's
//! send storage (GSO iovecs), except the tail of a run that the next connections to the same
//! peer fill up (staged, then sent with theirs), sealed datagrams, and control packets, which
//! gather in runs of their own.
//!
//! Each datagram carries the time it was built (the core stamps it with the `now` it is asked
//! at), not the round's start: the peer's queueing-delay estimate reads the stamps.
//!
//! A full kernel send buffer (`EWOULDBLOCK`) loses nothing: the datagrams the kernel refused,
//! which the core has already counted as sent, are copied to the backlog (`MuxState::out`); no
//! connection transmits again until the backlog has left, oldest first, and meanwhile the
//! thread also waits for the socket to be writable. Only a datagram the kernel rejects with
//! another error is lost (counted), as the network may lose any.

use std::io::{self, IoSlice};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;

use udt_proto::connection::{Connection, State};
use udt_proto::Instant;

use super::state::{Deferred, Outbox};
use super::Mux;
use crate::clock;
use crate::secure::seal::Sealer;
use crate::sys;
use crate::tx_batch::{Entry, Flush, Payload, TxBatch, GSO_MAX_SEGMENTS};

/// How a connection's turn at transmitting ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Turn {
    /// It sent everything it had to send now.
    Done,
    /// It sent its quantum and may have more due.
    Quantum,
    /// The kernel's send buffer filled up (what it refused is in the backlog).
    Blocked,
}

impl Mux {
    /// Send what `conn` has to send now, up to `quantum` datagrams. Datagrams are gathered
    /// into runs for UDP GSO: equal sizes to one peer, the last possibly shorter (at most 64
    /// segments and 64 KB).
    /// Data payloads are not copied: each datagram is its header (written into `outbuf`) plus
    /// its payload's range of the connection's send storage, handed to the kernel as iovecs.
    /// Control packets (ACKs, ACK2s, NAKs, keep-alives: a few dozen bytes) gather in runs of
    /// their own (`control`, copied), so that they do not cut the data runs short.
    ///
    /// With `more` (other connections follow in this round), the runs not yet full are kept,
    /// the data run's payloads staged ([`TxBatch::stage`]), for the next connections' datagrams
    /// to the same peer to join: many connections between two ports then share GSO sends as
    /// one flow does. Runs kept for another peer are sent first.
    ///
    /// At most `quantum` datagrams leave in this turn ([`Turn::Quantum`]: the connection may
    /// have more due, and is served again next round).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn transmit(
        &self,
        conn: &mut Connection,
        mut sealer: Option<&mut Sealer>,
        now: Instant,
        outbuf: &mut [u8],
        batch: &mut TxBatch,
        control: &mut TxBatch,
        out: &mut Outbox,
        more: bool,
        quantum: usize,
    ) -> Turn {
        let dest = socket2::SockAddr::from(conn.peer_addr());
        if batch.dest.as_ref().is_some_and(|d| *d != dest)
            || control.dest.as_ref().is_some_and(|d| *d != dest)
        {
            // Another peer's runs, staged: no storage of this connection's in them.
            if !self.flush_run(&[], outbuf, batch, batch.entries.len(), out)
                || !self.flush_run(&[], outbuf, control, control.entries.len(), out)
            {
                return Turn::Blocked;
            }
            batch.clear();
            control.clear();
        }
        batch.dest = Some(dest.clone());
        control.dest = Some(dest);
        self.hooks.transmit_begins();
        let mut turn = Turn::Done;
        let mut sent = 0;
        loop {
            if sent == quantum {
                turn = Turn::Quantum;
                break;
            }
            // Room for another header (or a whole control packet) in the header buffer.
            if batch.used + 2048 > outbuf.len()
                && !self.flush_run(conn.send_storage(), outbuf, batch, batch.entries.len(), out)
            {
                return Turn::Blocked;
            }
            // Each datagram is stamped with the time it is built, not the round's start: the
            // peer reads its queueing delay from the stamp (LEDBAT's one-way delay), and a
            // stamp from before the datagrams built ahead of it in the run would add their
            // building (and sealing) time, up to a GSO run's, to what looks like queue.
            let now = self.hooks.building(|| clock::now_for(conn).max(now));
            let Some(t) = conn.poll_transmit_ref(now, &mut outbuf[batch.used..]) else { break };
            sent += 1;
            if let Some(sealer) = sealer.as_deref_mut() {
                // Sealed into the staging buffer, header, payload and all (a control run: the
                // sealed datagrams are copies, not the send storage).
                let header = &outbuf[batch.used..batch.used + t.len];
                let payload = t.payload.map_or(&[][..], |p| &conn.send_storage()[p]);
                let at = control.staged.len();
                if !sealer.seal(header, payload, &mut control.staged) {
                    continue;
                }
                let entry = Entry { header: 0..0, payload: Some(Payload::Staged(at..control.staged.len())) };
                let n = match control.add(entry) {
                    Flush::Nothing => continue,
                    Flush::All => control.entries.len(),
                    Flush::AllButLast => control.entries.len() - 1,
                };
                if !self.flush_run(&[], outbuf, control, n, out) {
                    return Turn::Blocked;
                }
                continue;
            }
            let (run, entry) = match t.payload {
                Some(p) => {
                    let header = batch.used..batch.used + t.len;
                    batch.used += t.len;
                    (&mut *batch, Entry { header, payload: Some(Payload::Storage(p)) })
                }
                None => {
                    let at = control.staged.len();
                    control.staged.extend_from_slice(&outbuf[batch.used..batch.used + t.len]);
                    (&mut *control, Entry { header: 0..0, payload: Some(Payload::Staged(at..at + t.len)) })
                }
            };
            let n = match run.add(entry) {
                Flush::Nothing => continue,
                Flush::All => run.entries.len(),
                Flush::AllButLast => run.entries.len() - 1,
            };
            if !self.flush_run(conn.send_storage(), outbuf, run, n, out) {
                return Turn::Blocked;
            }
        }
        // A closed connection's last packets leave now: `close` returns once they have been
        // handed to the kernel, and the process may exit then.
        if more && !matches!(conn.state(), State::Closed(_)) {
            batch.stage(conn.send_storage());
            return turn;
        }
        if self.flush_run(conn.send_storage(), outbuf, batch, batch.entries.len(), out)
            && self.flush_run(&[], outbuf, control, control.entries.len(), out)
        {
            turn
        } else {
            Turn::Blocked
        }
    }

    /// Send the first `n` entries of `batch` as one run (one GSO call, or one call each when
    /// GSO is off or refused), keeping any later entries; `storage` is the send storage of the
    /// connection being served (empty when none is). Returns false when the kernel's buffer is
    /// full: then the entries not sent, the run's and any later ones, are copied to the
    /// backlog (the core counted them as sent) and the batch is emptied. A datagram the kernel
    /// rejects with another error is lost like on the network (counted in `drops`).
    pub(super) fn flush_run(
        &self,
        storage: &[u8],
        outbuf: &[u8],
        batch: &mut TxBatch,
        n: usize,
        out: &mut Outbox,
    ) -> bool {
        if n == 0 {
            return true;
        }
        let Some(dest) = batch.dest.clone() else { return true };
        let payload = |p: &Payload| match p {
            Payload::Storage(r) => &storage[r.clone()],
            Payload::Staged(r) => &batch.staged[r.clone()],
        };
        // Header and payload of each datagram, borrowed for this call only.
        let mut iov = [IoSlice::new(&[]); 2 * (GSO_MAX_SEGMENTS + 1)];
        let mut k = 0;
        for e in &batch.entries[..n] {
            iov[k] = IoSlice::new(&outbuf[e.header.clone()]);
            k += 1;
            if let Some(p) = &e.payload {
                iov[k] = IoSlice::new(payload(p));
                k += 1;
            }
        }
        // The first entry the kernel refused for a full buffer (`n`: none).
        let mut refused = n;
        let mut sent_as_run = false;
        if n > 1 && self.gso.load(Ordering::Relaxed) {
            match self.send(&iov[..k], Some(batch.segment as u16), &dest) {
                Ok(_) => sent_as_run = true,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    refused = 0;
                    sent_as_run = true;
                }
                Err(e) => {
                    tracing::info!(error = %e, "UDP GSO refused; sending datagrams one by one");
                    self.gso.store(false, Ordering::Relaxed);
                }
            }
        }
        if !sent_as_run {
            let mut at = 0;
            for (i, e) in batch.entries[..n].iter().enumerate() {
                let parts = 1 + usize::from(e.payload.is_some());
                match self.send(&iov[at..at + parts], None, &dest) {
                    Ok(_) => {}
                    Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                        refused = i;
                        break;
                    }
                    Err(err) => {
                        tracing::debug!(error = %err, "sendmsg");
                        self.drops.fetch_add(1, Ordering::Relaxed);
                    }
                }
                at += parts;
            }
        }
        if refused < n {
            for e in &batch.entries[refused..] {
                let bytes = [&outbuf[e.header.clone()], e.payload.as_ref().map_or(&[][..], payload)].concat();
                out.backlog.push_back(Deferred { dest: dest.clone(), bytes });
            }
            self.deferred.fetch_add((batch.entries.len() - refused) as u64, Ordering::Relaxed);
            batch.clear();
            return false;
        }
        batch.sent(n);
        true
    }

    /// Send the backlog, oldest first; returns whether it is empty now (false: the kernel's
    /// buffer is full again).
    pub(super) fn flush_backlog(&self, out: &mut Outbox) -> bool {
        while let Some(d) = out.backlog.front() {
            match self.send(&[IoSlice::new(&d.bytes)], None, &d.dest) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e) => {
                    tracing::debug!(error = %e, "sendmsg");
                    self.drops.fetch_add(1, Ordering::Relaxed);
                }
            }
            out.backlog.pop_front();
        }
        true
    }

    /// One `sendmsg` on the socket (see [`sys::send_iov`]). The crate's unit tests may have it
    /// refuse some sends as a full buffer would ([`crate::options::TestHooks`]).
    fn send(&self, iov: &[IoSlice<'_>], segment: Option<u16>, dest: &socket2::SockAddr) -> io::Result<usize> {
        if let Some(refused) = self.hooks.refused_send() {
            return Err(refused);
        }
        sys::send_iov(self.socket.as_raw_fd(), iov, segment, dest)
    }
}
