//! The sending half (thesis §2.2.6 Fig. 2-4; protocol notes §3-4): ACK, NAK and drop handling,
//! the EXP timer, and the choice and pacing of data packets.
//!
//! Order of sending: retransmissions from the loss list first, then new data while the packets
//! in flight stay under min(flow window, congestion window). Pacing: the next packet may leave
//! one packet-sending period after the previous one, except that the packet after one with
//! `seq & 0xF == 0` leaves at once (the packet pair for the receiver's capacity estimate). A late
//! sender catches up by at most `Config::max_pacing_debt`.

use std::time::Duration;

use super::{CloseReason, Connection, PendingControl, Sender, State, SYN};
use crate::buffer::{Lookup, OutPacket};
use crate::packet::{Ack, DataHeader, DropRequest, LossEntry, NakList, DATA_HEADER_LEN};
use crate::seq::SeqNo;
use crate::time::Instant;

/// Average interval between data packets over the current sample, if the sender had data and
/// window room throughout it, i.e. only pacing or its own speed held it back (thesis §2.3.2.4).
pub(super) fn measured_period(tx: &Sender, now: Instant) -> Option<Duration> {
    if tx.sample_idle || tx.sample_pkts < 2 {
        return None;
    }
    Some((now - tx.sample_start) / tx.sample_pkts)
}

impl Connection {
    /// ACK from the peer's receiver (full or light).
    pub(super) fn handle_ack(&mut self, now: Instant, ack: &Ack) {
        let offer_answer_time = self.rto_base();
        let Some(link) = self.link.as_mut() else { return };
        let tx = &mut link.tx;
        self.stats.total.acks_recv += 1;
        // protocol notes §4: an ACK beyond what was sent is a protocol violation: drop it.
        if ack.next_expected.is_after(tx.buf.next_seq()) {
            self.stats.total.dropped_invalid += 1;
            return;
        }
        let Some(info) = ack.info else {
            // A light ACK (UDT4 processCtrl case 2, 4-byte body): moves the acknowledged point
            // and shrinks the flow window by what it acknowledges; no RTT, no rates, no on_ack.
            if ack.next_expected.is_after(tx.last_ack) {
                let n = ack.next_expected.diff(tx.last_ack) as u32;
                tx.flow_window = tx.flow_window.saturating_sub(n).max(2);
                tx.last_ack = ack.next_expected;
                tx.buf.acknowledge(ack.next_expected);
                tx.loss.remove_before(ack.next_expected);
            }
            return;
        };
        // Confirm with ACK2 at once, but at most once per SYN unless the ACK repeats the number
        // last confirmed (UDT4 processCtrl case 2; thesis §2.2.3: "not necessary to generate an
        // ACK2 for every ACK").
        let due = match tx.last_ack2 {
            None => true,
            Some((t, no)) => now - t > SYN || no == ack.ack_no,
        };
        if due {
            tx.last_ack2 = Some((now, ack.ack_no));
            self.control.push_back(PendingControl::Ack2(ack.ack_no));
            self.exchange.repeat_offer(now, offer_answer_time, &self.own_policy, &mut self.control);
            self.stats.total.ack2_sent += 1;
        }
        if !ack.next_expected.is_before(tx.last_ack) {
            // A repeated ACK still carries a fresh window (UDT4).
            tx.flow_window = info.avail_buf_pkts.max(2);
        }
        // Repeated full ACK: no RTT, rate or congestion-control update. Compared with the last
        // *full* ACK, so a light ACK in between does not hide this one's RTT and rates (UDT4
        // compares with m_iSndLastDataAck the same way). Unless the controller asks for them:
        // one that repeats the last number is the receiver's progress report while a hole
        // holds the ACK point (receiver.rs).
        let news = ack.next_expected.is_after(tx.last_full_ack)
            || (ack.next_expected == tx.last_full_ack && self.policy.learn_from_repeated_acks);
        if !news {
            return;
        }
        tx.last_full_ack = ack.next_expected;
        // UDT4: the sender adopts the receiver's RTT with the same smoothing.
        self.rtt.update(info.rtt_us as u64);
        if let Some(rates) = info.rates {
            // protocol notes §1: smoothed as (7 old + new) / 8.
            tx.peer_recv_rate = smooth(tx.peer_recv_rate, rates.recv_rate);
            tx.peer_bandwidth = smooth(tx.peer_bandwidth, rates.capacity);
        }
        if ack.next_expected.is_after(tx.last_ack) {
            tx.last_ack = ack.next_expected;
            tx.buf.acknowledge(ack.next_expected);
            tx.loss.remove_before(ack.next_expected);
        }
        let acked = tx.last_ack;
        self.ack_report = Some(crate::cc::AckReport {
            rtt: Duration::from_micros(u64::from(info.rtt_us)),
            recv_rate: info.rates.map_or(0, |r| r.recv_rate),
            capacity: info.rates.map_or(0, |r| r.capacity),
            queue: info.queue.map(|q| crate::queue_delay::QueueReport {
                min: Duration::from_micros(u64::from(q.min_us)),
                max: Duration::from_micros(u64::from(q.max_us)),
            }),
        });
        self.with_cc(now, |cc, ctx| cc.on_ack(ctx, acked));
        self.restart_rate_sample(now);
        self.drain_cc_messages();
        if self.closing && self.is_delivered() {
            self.send_shutdown_and_finish(now, CloseReason::Local);
        }
    }

    /// NAK from the peer's receiver: validate every entry, queue the retransmissions.
    pub(super) fn handle_nak(&mut self, now: Instant, list: NakList<'_>) {
        let offer_answer_time = self.rto_base();
        let Some(link) = self.link.as_mut() else { return };
        let tx = &mut link.tx;
        self.stats.total.naks_recv += 1;
        let largest_sent = tx.buf.next_seq().prev();
        let mut ranges = std::mem::take(&mut self.ranges);
        ranges.clear();
        for entry in list.iter() {
            let (start, end) = entry.bounds();
            // Inverted ranges and numbers never sent: drop the whole report (UDT4 breaks the
            // connection; we prefer to drop and count, docs/deviations.md).
            if start.is_after(end) || end.is_after(largest_sent) {
                self.stats.total.dropped_invalid += 1;
                self.ranges = ranges;
                return;
            }
            if end.is_before(tx.last_ack) {
                continue; // already acknowledged
            }
            let start = start.max_wrapping(tx.last_ack);
            ranges.push((start, end));
        }
        // Where losses are heavy, the ACK that would carry the offer again may not come for a
        // long time (it stalls behind a hole); the loss reports keep coming.
        self.exchange.repeat_offer(now, offer_answer_time, &self.own_policy, &mut self.control);
        if self.policy.one_resend_per_rtt {
            let since = now - Duration::from_micros(self.rtt.rtt_us());
            ranges = without_recent_resends(&tx.buf, &ranges, since);
        }
        if ranges.is_empty() {
            self.ranges = ranges;
            return;
        }
        for &(s, e) in &ranges {
            let added = tx.loss.insert(s, e);
            self.stats.total.snd_loss += added as u64;
        }
        self.with_cc(now, |cc, ctx| cc.on_loss(ctx, &ranges));
        self.ranges = ranges;
        self.apply_pause(now);
        self.restart_rate_sample(now);
        self.drain_cc_messages();
    }

    /// The EXP timer: retransmit everything unacknowledged, or send a keep-alive; declare the
    /// peer lost after UDT4's limit (protocol notes §3).
    pub(super) fn on_exp_timer(&mut self, now: Instant) {
        if self.state != State::Connected {
            return;
        }
        let exp_rule = self.exp_count > self.config.broken_exp_count
            && now - self.last_response > self.config.broken_min_silence;
        if exp_rule || self.peer_idle_expired(now) {
            tracing::info!(peer = ?self.peer_addr, silent = ?(now - self.last_heard), "peer silent: connection lost");
            self.finish(CloseReason::ConnectionLost);
            return;
        }
        let Some(link) = self.link.as_mut() else { return };
        let tx = &mut link.tx;
        if tx.buf.unacked_packets() > 0 {
            if tx.loss.is_empty() {
                let added = tx.loss.insert(tx.last_ack, tx.buf.next_seq().prev());
                self.stats.total.snd_loss += added as u64;
            }
            self.stats.total.timeouts += 1;
            self.with_cc(now, |cc, ctx| cc.on_timeout(ctx));
            self.drain_cc_messages();
        } else {
            self.control.push_back(PendingControl::KeepAlive);
        }
        self.exp_count += 1;
        self.last_response = now;
        self.arm_exp();
    }

    fn apply_pause(&mut self, now: Instant) {
        if let Some(pause) = self.cc.take_pause() {
            if let Some(link) = self.link.as_mut() {
                link.tx.next_send = link.tx.next_send.max(now + pause);
            }
        }
    }

    fn restart_rate_sample(&mut self, now: Instant) {
        if let Some(link) = self.link.as_mut() {
            let tx = &mut link.tx;
            if now - tx.sample_start >= SYN {
                tx.sample_start = now;
                tx.sample_pkts = 0;
                tx.sample_idle = false;
            }
        }
    }

    /// Packet-sending period now: the congestion control's, bounded by max bandwidth.
    /// The time between two data packets that pacing allows now (the congestion control's
    /// period, no shorter than `Config::max_bandwidth` allows).
    pub fn send_period(&self) -> Duration {
        let period = self.cc.send_period();
        match self.config.max_bandwidth {
            Some(bw) => {
                let min = Duration::from_secs_f64((self.mss as f64) / bw as f64);
                period.max(min)
            }
            None => period,
        }
    }

    /// Packets the window allows in flight: min(flow window, congestion window).
    fn window(&self, tx: &Sender) -> usize {
        let cwnd = self.cc.congestion_window();
        let cwnd = if cwnd.is_finite() && cwnd >= 1.0 { cwnd as u64 } else { 1 };
        (tx.flow_window as u64).min(cwnd) as usize
    }

    /// Whether the sender has something it may send (ignoring pacing).
    fn has_sendable(&self, tx: &Sender) -> bool {
        !tx.loss.is_empty() || self.has_new_sendable(tx)
    }

    /// Whether new data may go: some is waiting and the window has room.
    fn has_new_sendable(&self, tx: &Sender) -> bool {
        tx.buf.unsent_packets() > 0 && tx.buf.unacked_packets() < self.window(tx)
    }

    /// How long a retransmission has to be acknowledged before the head probe sends it again:
    /// its way there, the receiver's next ACK (a SYN) and the ACK's way back, with the RTT's
    /// variation as margin.
    fn head_probe_interval(&self) -> Duration {
        self.rto_base() + SYN
    }

    /// When the head probe is due: the policy asks for it, the oldest
    /// unacknowledged packet has been retransmitted and is not waiting in the loss list to go
    /// again.
    fn head_probe_due(&self, tx: &Sender) -> Option<Instant> {
        if !self.policy.head_probe {
            return None;
        }
        let at = tx.buf.head_resent_at()?;
        if tx.loss.first() == Some(tx.buf.head_seq()) {
            return None;
        }
        Some(at + self.head_probe_interval())
    }

    /// When the next data packet may go, if any is waiting.
    pub(super) fn next_data_time(&self) -> Option<Instant> {
        let tx = &self.link.as_ref()?.tx;
        if self.has_sendable(tx) {
            return Some(tx.next_send);
        }
        self.head_probe_due(tx).map(|due| due.max(tx.next_send))
    }

    /// Emit one data packet (or a drop request for an expired message) if pacing allows. With
    /// `copy`, the payload is written after the header; without, only the header is written and
    /// the payload's range in the send buffer's storage is returned.
    pub(super) fn transmit_data(
        &mut self,
        now: Instant,
        buf: &mut [u8],
        copy: bool,
    ) -> Option<super::Transmit> {
        let period = self.send_period();
        let max_debt = self.config.max_pacing_debt;
        let local_start = self.start;
        let peer_id = self.peer_id;
        let window = self.window(&self.link.as_ref()?.tx);
        let probe_due = self.head_probe_due(&self.link.as_ref()?.tx);
        let link = self.link.as_mut()?;
        let tx = &mut link.tx;
        if now < tx.next_send {
            return None;
        }
        // Head probe: the oldest unacknowledged packet was retransmitted and the retransmission
        // has had time to be acknowledged. It was most likely lost too; the receiver would report
        // it again only after its re-report interval (twice the RTT and more), and meanwhile the
        // ACK point stays put and the window fills. It goes through the loss list (an expired
        // message becomes a drop request there) but is not a loss event for the congestion
        // control (ours; UDT4 waits for the re-report).
        if probe_due.is_some_and(|due| now >= due) {
            let head = tx.buf.head_seq();
            tx.loss.insert(head, head);
            // Marked now: if its message expired, the drop request that goes instead is not
            // sent again before another interval.
            tx.buf.mark_resent(head, now);
            self.stats.total.head_probes += 1;
        }
        let has_data = !tx.loss.is_empty() || tx.buf.unsent_packets() > 0;
        if !has_data {
            tx.sample_idle = true;
            if let Some(since) = tx.busy_since.take() {
                self.stats.total.send_busy_us += (now - since).as_micros() as u64;
            }
            return None;
        }
        tx.busy_since.get_or_insert(now);
        // Retransmissions first (thesis Fig. 2-4, step 2a).
        let mut chosen: Option<(SeqNo, bool)> = None;
        while let Some(seq) = tx.loss.pop_first() {
            match tx.buf.lookup(seq, now) {
                Lookup::Packet(_) => {
                    chosen = Some((seq, true));
                    break;
                }
                Lookup::Expired { msg, first, end_exclusive } => {
                    // Drop the whole message and tell the receiver (UDT4 packData): its unsent
                    // rest is skipped so every number the request names counts as sent.
                    tx.buf.skip_unsent_before(end_exclusive);
                    tx.loss.remove_range(first, end_exclusive.prev());
                    let req = DropRequest { msg, first, end_exclusive };
                    self.stats.total.msgs_dropped_ttl += 1;
                    self.control.push_back(PendingControl::DropRequest(req));
                    // Send it now: returning None would tell the driver nothing is due.
                    return self.transmit_control(now, buf).map(|len| super::Transmit { len, payload: None });
                }
                Lookup::Acknowledged | Lookup::NotSent => continue,
            }
        }
        let timestamp = now.wire_timestamp(local_start);
        let base = tx.buf.storage().as_ptr() as usize;
        let header_and_len = if let Some((seq, _)) = chosen {
            let Lookup::Packet(p) = tx.buf.lookup(seq, now) else { return None };
            write_data(buf, seq, &p, timestamp, peer_id, copy, base)
        } else {
            // New data within the window (step 2b). A window stall is not the sender being
            // slow: it must not count in the rate-correction sample.
            if tx.buf.unacked_packets() >= window {
                tx.sample_idle = true;
                return None;
            }
            let (seq, p) = tx.buf.take_new(now)?;
            chosen = Some((seq, false));
            write_data(buf, seq, &p, timestamp, peer_id, copy, base)
        };
        let (seq, retransmission) = chosen?;
        let (len, payload) = header_and_len?;
        let payload_len = payload.len();
        // Pacing (protocol notes §4).
        if seq.value() & 0xF != 0 {
            let base = tx.next_send.max(now - max_debt);
            tx.next_send = base + period;
        }
        tx.sample_pkts += 1;
        self.stats.total.pkts_sent += 1;
        self.stats.total.bytes_sent += payload_len as u64;
        if retransmission {
            self.stats.total.retransmits += 1;
            tx.buf.mark_resent(seq, now);
        }
        self.with_cc(now, |cc, ctx| cc.on_packet_sent(ctx, seq, retransmission));
        Some(super::Transmit { len, payload: (!copy).then_some(payload) })
    }

    /// Queue a NAK for `ranges`, split so each packet fits the MSS.
    pub(super) fn queue_nak(&mut self, ranges: &[(SeqNo, SeqNo)]) {
        // Sized for the negotiated MSS: the peer's buffers are no larger.
        let max_words = (self.mss as usize - crate::packet::IP_UDP_OVERHEAD - DATA_HEADER_LEN) / 4;
        let mut chunk: Vec<(SeqNo, SeqNo)> = Vec::new();
        let mut words = 0;
        for &(s, e) in ranges {
            let w = LossEntry::from_bounds(s, e).words();
            if words + w > max_words && !chunk.is_empty() {
                self.control.push_back(PendingControl::Nak(std::mem::take(&mut chunk)));
                self.stats.total.naks_sent += 1;
                words = 0;
            }
            chunk.push((s, e));
            words += w;
        }
        if !chunk.is_empty() {
            self.control.push_back(PendingControl::Nak(chunk));
            self.stats.total.naks_sent += 1;
        }
    }
}

/// (7 old + new) / 8, the new value when there is no old one, the old one when the new is 0
/// ("unknown").
fn smooth(old: u32, new: u32) -> u32 {
    if new == 0 {
        old
    } else if old == 0 {
        new
    } else {
        ((old as u64 * 7 + new as u64) / 8) as u32
    }
}

/// Write a data packet carrying `packet` as `seq`: the header, and with `copy` the payload after
/// it. Returns the bytes written and the payload's range in the send buffer's storage (whose
/// address is `base`).
fn write_data(
    buf: &mut [u8],
    seq: SeqNo,
    packet: &OutPacket<'_>,
    timestamp: u32,
    dst: crate::seq::SocketId,
    copy: bool,
    base: usize,
) -> Option<(usize, std::ops::Range<usize>)> {
    let total = DATA_HEADER_LEN + if copy { packet.payload.len() } else { 0 };
    if buf.len() < total {
        return None;
    }
    let header = DataHeader {
        seq,
        boundary: packet.boundary,
        in_order: packet.in_order,
        msg: packet.msg,
        timestamp,
        dst,
    };
    header.emit(buf).ok()?;
    if copy {
        buf[DATA_HEADER_LEN..total].copy_from_slice(packet.payload);
    }
    let start = packet.payload.as_ptr() as usize - base;
    Some((total, start..start + packet.payload.len()))
}

/// `ranges` without the packets retransmitted at or after `since` (one RTT ago): a NAK for
/// them was written before their retransmission could arrive (`Policy::one_resend_per_rtt`).
/// The ranges lie within the unacknowledged packets, so the walk is bounded by the send
/// buffer.
fn without_recent_resends(
    buf: &crate::buffer::SendBuffer,
    ranges: &[(SeqNo, SeqNo)],
    since: Instant,
) -> Vec<(SeqNo, SeqNo)> {
    let mut kept = Vec::with_capacity(ranges.len());
    for &(start, end) in ranges {
        let mut run: Option<(SeqNo, SeqNo)> = None;
        let mut seq = start;
        loop {
            if buf.resent_since(seq, since) {
                kept.extend(run.take());
            } else {
                run = Some(run.map_or((seq, seq), |(first, _)| (first, seq)));
            }
            if seq == end {
                break;
            }
            seq = seq.next();
        }
        kept.extend(run);
    }
    kept
}
