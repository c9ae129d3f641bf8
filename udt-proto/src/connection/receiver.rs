//! The receiving half (thesis §2.2.3, §2.2.6 Fig. 2-5; protocol notes §1, §3, §6): placement of
//! arriving data, loss detection with an immediate NAK, periodic re-reports, full ACKs every SYN
//! and light ACKs every 64 packets, ACK2 and RTT, drop requests, flow-window accounting.
//!
//! The ACK number is the first missing sequence, or the largest received + 1. A full ACK is not
//! sent when that number was already confirmed by an ACK2, or equals the last one sent less than
//! RTT + 4 RTTVar ago (UDT4), unless the application freed receive buffer space the peer does not
//! know about (a window update, so a sender blocked by a full buffer restarts at once), or, on
//! the ACK timer and when the policy asks for it
//! ([`Policy::progress_acks`](crate::connection::Policy::progress_acks)), data arrived
//! since the last full ACK (a progress report: ours, UDT4 stays silent while a hole holds the
//! ACK point; docs/deviations.md W9). So while data flows the sender hears fresh rates, RTT
//! and window once per SYN, holes or not: on a 300 ms path at 0.1% loss some hole is open
//! nearly all the time, and an increase that waits for advancing ACKs all but stops (1% a
//! second instead of 14%).
//! Data becomes readable as soon as it is contiguous (UDT4 waits for the next full ACK;
//! docs/deviations.md).

use std::time::Duration;

use super::{Connection, Incoming, PendingControl, Timer, LIGHT_ACK_EVERY, SYN};
use crate::buffer::InsertOutcome;
use crate::loss_list::Rereport;
use crate::packet::{Ack, AckInfo, AckQueue, AckRates, DataHeader, DropRequest, DATA_HEADER_LEN};
use crate::seq::{AckNo, SeqNo};
use crate::time::Instant;

/// Most NAK ranges re-reported in one NAK timer tick.
const MAX_REREPORT_RANGES: usize = 1024;

impl Connection {
    /// A data packet for us arrived: `header` parsed from `incoming`, its payload after the
    /// header.
    pub(super) fn handle_data(&mut self, now: Instant, header: &DataHeader, incoming: Incoming<'_>) {
        let payload_size = super::Config::payload_size(self.mss);
        let payload_len = incoming.bytes().len().saturating_sub(DATA_HEADER_LEN);
        if payload_len == 0 || payload_len > payload_size {
            self.stats.total.dropped_invalid += 1;
            return;
        }
        let Some(link) = self.link.as_mut() else { return };
        let rx = &mut link.rx;
        self.stats.total.pkts_recv += 1;
        rx.arrivals.on_arrival(header.seq, now);
        if self.policy.queue_delay_reports {
            rx.queue_delay.handle_arrival(now, now.wire_timestamp(self.start), header.timestamp);
        }
        let seq = header.seq;
        let outcome = match incoming {
            Incoming::Bytes(bytes) => rx.buf.insert(header, &bytes[DATA_HEADER_LEN..]),
            Incoming::Datagram(datagram) => rx.buf.insert_datagram(header, datagram),
        };
        match outcome {
            InsertOutcome::Stored => {
                self.stats.total.bytes_recv += payload_len as u64;
                // Loss detection on arrival (thesis Fig. 2-5 step 4).
                let expected = rx.largest.next();
                if seq.is_after(expected) {
                    let (first, last) = (expected, seq.prev());
                    let added = rx.loss.insert(first, last, now);
                    self.stats.total.rcv_loss += added as u64;
                    rx.largest = seq;
                    self.queue_nak(&[(first, last)]);
                    if self.config.periodic_nak && self.timers.get(Timer::Nak).is_none() {
                        self.timers.set(Timer::Nak, now + SYN);
                    }
                } else if seq.is_after(rx.largest) {
                    rx.largest = seq;
                } else {
                    rx.loss.remove(seq);
                }
            }
            InsertOutcome::Duplicate => {
                // Already stored or resolved: not missing, whatever the loss list says. A
                // duplicate also means the sender missed an ACK, so the ACK logic below runs.
                self.stats.total.dup_recv += 1;
                rx.loss.remove(seq);
            }
            InsertOutcome::BeyondCapacity => {
                self.stats.total.dropped_no_room += 1;
                return;
            }
        }
        let Some(link) = self.link.as_mut() else { return };
        let rx = &mut link.rx;
        rx.pkts_since_ack += 1;
        if payload_len < payload_size {
            rx.writes_ended += 1;
        }
        let ack_interval = self.policy.ack_interval;
        let full_now =
            ack_interval.is_some_and(|n| n > 0 && rx.pkts_since_ack >= n) || payload_len < payload_size;
        if full_now {
            self.send_full_ack(now, false);
        } else if rx.pkts_since_ack >= LIGHT_ACK_EVERY * rx.light_acks {
            self.send_light_ack();
        }
        if self.timers.get(Timer::Ack).is_none() {
            self.timers.set(Timer::Ack, now + self.ack_period());
        }
        self.with_cc(now, |cc, ctx| cc.on_packet_received(ctx, seq));
        self.drain_cc_messages();
    }

    /// ACK2 for one of our full ACKs: an RTT sample (protocol notes §1).
    pub(super) fn handle_ack2(&mut self, now: Instant, ack_no: AckNo) {
        let Some(link) = self.link.as_mut() else { return };
        let rx = &mut link.rx;
        self.stats.total.ack2_recv += 1;
        let Some((seq, sent)) = rx.history.acknowledge(ack_no) else {
            return; // unknown or too old: ignore
        };
        // The ACK2 of a progress ACK (one that repeats a number already confirmed) gives no
        // RTT sample: UDT4 takes none while a hole holds the ACK point, and samples taken then,
        // at a congested queue, made the RTT of Fig. 4-6's flows run high and their fairness
        // fall (seeds 1-16: mean F 0.969 with them, 0.984 without).
        let repeat = seq == rx.last_ack2;
        if seq.is_after(rx.last_ack2) {
            rx.last_ack2 = seq;
        }
        if repeat {
            return;
        }
        let sample = (now - sent).as_micros() as u64;
        self.rtt.update(sample.max(1));
    }

    /// The sender dropped an expired message: resolve its numbers (protocol notes §1 type 7).
    ///
    /// The range must lie inside the receive window (a forged request cannot push the ACK point
    /// anywhere). Numbers between what arrived and the message's first are still owed to us:
    /// they become losses and are NAKed, never silently acknowledged. The ACK point may move, so
    /// an ACK is scheduled.
    pub(super) fn handle_drop_request(&mut self, now: Instant, req: &DropRequest) {
        let stream = self.config.mode == crate::connection::Mode::Stream;
        let Some(link) = self.link.as_mut() else { return };
        let rx = &mut link.rx;
        self.stats.total.drop_requests_recv += 1;
        // A stream sender never drops data (UDT4 sends drop requests for expired messages
        // only): in stream mode one can only be forged, and would lose bytes silently.
        if stream {
            self.stats.total.dropped_invalid += 1;
            return;
        }
        let (first, end) = (req.first, req.end_exclusive);
        let base = rx.buf.read_seq();
        let cap = rx.buf.capacity() as i32;
        let inside = |s: SeqNo| (0..=cap).contains(&s.diff(base));
        if end.diff(first) <= 0 || !inside(first) || !inside(end) {
            self.stats.total.dropped_invalid += 1;
            return;
        }
        let last = end.prev();
        let expected = rx.largest.next();
        let mut gap = None;
        if first.is_after(expected) {
            let added = rx.loss.insert(expected, first.prev(), now);
            self.stats.total.rcv_loss += added as u64;
            gap = Some((expected, first.prev()));
        }
        rx.buf.drop_range(first, end);
        rx.loss.remove_range(first, last);
        if last.is_after(rx.largest) {
            rx.largest = last;
        }
        if let Some(range) = gap {
            self.queue_nak(&[range]);
            if self.config.periodic_nak && self.timers.get(Timer::Nak).is_none() {
                self.timers.set(Timer::Nak, now + SYN);
            }
        }
        if self.timers.get(Timer::Ack).is_none() {
            self.timers.set(Timer::Ack, now + self.ack_period());
        }
    }

    /// The application read data: if that freed much buffer the peer does not know about, send
    /// a window update soon.
    pub(super) fn after_read(&mut self) {
        if self.state != super::State::Connected {
            return; // reading what is left after a close: nothing more goes out
        }
        let Some(link) = self.link.as_mut() else { return };
        let rx = &mut link.rx;
        let free = rx.buf.free_packets() as u32;
        let cap = rx.buf.capacity() as u32;
        if rx.advertised < cap / 2 && free >= cap / 2 {
            rx.window_update = true;
            self.timers.set(Timer::Ack, Instant::ZERO);
        }
    }

    /// ACK timer: a full ACK if something new arrived; stop when there is nothing to do.
    pub(super) fn on_ack_timer(&mut self, now: Instant) {
        let sent = self.send_full_ack(now, self.policy.progress_acks);
        let pending = self.link.as_ref().is_some_and(|l| l.rx.pkts_since_ack > 0 || !l.rx.loss.is_empty());
        if sent || pending {
            self.timers.set(Timer::Ack, now + self.ack_period());
        }
    }

    /// NAK timer: re-report missing packets after an increasing interval (thesis §2.2.3), or
    /// after the same interval every time when the peer's sender asked for steady reports.
    /// Checked every SYN; a range reported k times is due again k x (or 1 x) the re-report
    /// interval after its last report.
    pub(super) fn on_nak_timer(&mut self, now: Instant) {
        let interval = self.rereport_interval();
        let Some(link) = self.link.as_mut() else { return };
        if link.rx.loss.is_empty() {
            return;
        }
        let mut due = std::mem::take(&mut self.ranges);
        due.clear();
        let schedule = if self.policy.steady_loss_reports { Rereport::Steady } else { Rereport::Growing };
        link.rx.loss.collect_due(now, interval, schedule, MAX_REREPORT_RANGES, &mut due);
        if !due.is_empty() {
            self.queue_nak(&due);
        }
        self.ranges = due;
        self.timers.set(Timer::Nak, now + SYN);
    }

    fn ack_period(&self) -> Duration {
        self.policy.ack_period.map_or(SYN, |p| p.clamp(super::MIN_OVERRIDE, SYN))
    }

    /// How long a reported loss may stay unrepaired before it is reported again: the NAK's way to
    /// the sender and the retransmission's way back take one RTT, plus the RTT's variation as
    /// margin and one SYN for the timer's own granularity. The sender sends retransmissions
    /// before new data, so no queue of its own delays them; a longer interval leaves a lost
    /// retransmission holding the ACK point (and the receiver's buffer) for extra round trips.
    fn rereport_interval(&self) -> Duration {
        self.rto_base() + SYN
    }

    /// The sequence a full or light ACK would carry now.
    fn ack_point(&self) -> Option<SeqNo> {
        let rx = &self.link.as_ref()?.rx;
        Some(rx.loss.first().unwrap_or(rx.largest.next()))
    }

    /// Send a full ACK if the rules allow; true if one was queued. With `progress` (the ACK
    /// timer), data that arrived since the last full ACK is reason enough (module docs).
    pub(super) fn send_full_ack(&mut self, now: Instant, progress: bool) -> bool {
        if self.state != super::State::Connected {
            return false;
        }
        let Some(ack) = self.ack_point() else { return false };
        let rto_base = self.rto_base();
        let (rtt_us, var_us) = (self.rtt.rtt_us(), self.rtt.var_us());
        let Some(link) = self.link.as_mut() else { return false };
        let rx = &mut link.rx;
        let update = std::mem::take(&mut rx.window_update);
        let progress = progress && rx.pkts_since_ack > 0;
        if !update && !progress {
            if ack == rx.last_ack2 {
                rx.pkts_since_ack = 0;
                return false;
            }
            let recent = rx.last_ack_time.is_some_and(|t| now - t < rto_base);
            if ack == rx.last_ack_sent && recent {
                return false;
            }
        }
        if ack.is_after(rx.last_ack_sent) {
            rx.last_ack_sent = ack;
        }
        rx.last_ack_no = rx.last_ack_no.next();
        let avail = (rx.buf.free_packets() as u32).max(2);
        rx.advertised = avail;
        let counted = self.policy.counted_arrival_rate;
        let rates = if rx.last_rates_time.is_none_or(|t| now - t > SYN) {
            rx.last_rates_time = Some(now);
            let recv_rate = if counted { rx.arrivals.counted_rate(now) } else { rx.arrivals.arrival_rate() };
            Some(AckRates { recv_rate, capacity: rx.arrivals.capacity() })
        } else {
            None
        };
        // The queueing delay travels with the rates: the period it covers is theirs.
        let queue = if rates.is_some() && self.policy.queue_delay_reports {
            rx.queue_delay.take_report().map(|q| AckQueue {
                min_us: crate::time::duration_micros(q.min).min(u64::from(u32::MAX)) as u32,
                max_us: crate::time::duration_micros(q.max).min(u64::from(u32::MAX)) as u32,
            })
        } else {
            None
        };
        let info = AckInfo {
            rtt_us: rtt_us.min(u32::MAX as u64) as u32,
            rtt_var_us: var_us.min(u32::MAX as u64) as u32,
            avail_buf_pkts: avail,
            rates,
            queue,
        };
        rx.history.push(rx.last_ack_no, ack, now);
        rx.last_ack_time = Some(now);
        rx.pkts_since_ack = 0;
        rx.light_acks = 1;
        let packet = Ack { ack_no: rx.last_ack_no, next_expected: ack, info: Some(info) };
        self.control.push_back(PendingControl::Ack(packet));
        self.stats.total.acks_sent += 1;
        true
    }

    /// Light ACK: the sequence only, no ACK2 expected (protocol notes §1).
    fn send_light_ack(&mut self) {
        let Some(ack) = self.ack_point() else { return };
        let Some(link) = self.link.as_mut() else { return };
        let rx = &mut link.rx;
        rx.light_acks += 1;
        if !ack.is_after(rx.last_ack_sent) {
            return;
        }
        let packet = Ack { ack_no: AckNo::new(0), next_expected: ack, info: None };
        self.control.push_back(PendingControl::Ack(packet));
        self.stats.total.acks_sent += 1;
    }
}
